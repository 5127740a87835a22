//! The `functionalize` transform (plan §5.1) on the A.11 programs: each runs eagerly on plain
//! CPU tensors and through `functionalize(f, Remove::Mutations)` and
//! `functionalize(f, Remove::MutationsAndViews)` on fresh copies of the same inputs. Outputs
//! (values, dtype, sizes) and post-call inputs (values, dtype, sizes, strides) must equal
//! eager's, outputs must be plain, and an input's version counter must move iff eager's did.
//! Factories inside the program are wrapped (the transform includes the `Functionalize` key).
//!
//! `cases.rs` maps every A.11 case to its tests. The cases of operators added for them (F3
//! `aminmax`, F6 `_fused_moving_avg_obs_fq_helper`, F8 `block_diag`, F31
//! `_native_batch_norm_legit`, F36 `instance_norm`) are in `op_cases.rs`; F35 (`set_`, which
//! eager CPU refuses across storages) is checked against hand-computed values in `manual.rs`.

use switchyard_core::{DimVec, Error, Result, ScalarType, Tensor};
use switchyard_functionalize::{Remove, freeze, functionalize, is_functional, run_functionalized};
use switchyard_ops::TensorOps;

type Program = dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>;

const MODES: [Remove; 2] = [Remove::Mutations, Remove::MutationsAndViews];

/// What a test compares of a plain tensor.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    sizes: DimVec,
    dtype: ScalarType,
    values: Vec<f64>,
}

fn seen(t: &Tensor) -> Seen {
    assert!(
        !is_functional(t),
        "a functional tensor escaped the transform"
    );
    let v =
        switchyard_ops::_to_copy_with(t, Some(ScalarType::Double), None, None, None, false, None)
            .unwrap();
    Seen {
        sizes: t.sizes(),
        dtype: t.dtype(),
        values: v.to_vec::<f64>().unwrap(),
    }
}

/// One run of a program: its outputs, the inputs afterwards, their strides, and whether each
/// input's version counter moved.
#[derive(Debug)]
struct Run {
    outs: Vec<Seen>,
    ins: Vec<Seen>,
    in_strides: Vec<DimVec>,
    bumped: Vec<bool>,
}

fn copies(inputs: &[Tensor]) -> Vec<Tensor> {
    inputs
        .iter()
        .map(|t| switchyard_ops::clone(t).unwrap())
        .collect()
}

/// Runs `p` on fresh copies of `inputs`, eagerly (`None`) or functionalized.
fn run(p: &Program, inputs: &[Tensor], mode: Option<Remove>) -> Result<Run> {
    let ins = copies(inputs);
    let before: Vec<u32> = ins.iter().map(Tensor::version).collect();
    let outs = match mode {
        None => p(&ins)?,
        Some(remove) => functionalize(p, remove)(&ins)?,
    };
    Ok(Run {
        outs: outs.iter().map(seen).collect(),
        ins: ins.iter().map(seen).collect(),
        in_strides: ins.iter().map(Tensor::strides).collect(),
        bumped: ins
            .iter()
            .zip(&before)
            .map(|(t, b)| t.version() != *b)
            .collect(),
    })
}

/// Runs `p` eagerly and functionalized in both modes and compares the runs; returns eager's.
fn check(p: &Program, inputs: &[Tensor]) -> Run {
    check_modes(p, inputs, &MODES)
}

fn check_modes(p: &Program, inputs: &[Tensor], modes: &[Remove]) -> Run {
    let eager = run(p, inputs, None).unwrap();
    for &remove in modes {
        let f = run(p, inputs, Some(remove)).unwrap();
        assert_eq!(f.outs, eager.outs, "outputs differ (remove = {remove})");
        assert_eq!(
            f.ins, eager.ins,
            "post-call inputs differ (remove = {remove})"
        );
        assert_eq!(
            f.in_strides, eager.in_strides,
            "post-call input strides differ (remove = {remove})"
        );
        assert_eq!(
            f.bumped, eager.bumped,
            "input version counters moved differently (remove = {remove})"
        );
    }
    eager
}

fn ones(shape: &[i64]) -> Tensor {
    switchyard_ops::ones(shape).unwrap()
}

fn arange(n: i64, shape: &[i64]) -> Tensor {
    Tensor::from_vec((0..n).map(|x| x as f32).collect(), shape).unwrap()
}

fn values(r: &Run, i: usize) -> Vec<f64> {
    r.outs[i].values.clone()
}

#[test]
fn f01_simple() {
    let r = check(
        &|x| {
            let tmp = switchyard_ops::ones(&[4, 2])?;
            let y = x[0].view(&[4, 2])?;
            y.add_(&tmp)?;
            let z = switchyard_ops::mul(&x[0], &x[0])?;
            Ok(vec![y, z])
        },
        &[ones(&[4, 2])],
    );
    assert_eq!(values(&r, 0), vec![2.0; 8]);
    assert_eq!(values(&r, 1), vec![4.0; 8]);
    assert_eq!(r.ins[0].values, vec![2.0; 8]);
}

#[test]
fn f02_simple_out() {
    // The 0-d out= tensor is made inside the program (wrapped) and resized by `add.out`.
    let r = check(
        &|x| {
            let tmp = switchyard_ops::ones(&[4, 2])?;
            let y = x[0].view(&[4, 2])?;
            let z = switchyard_ops::empty(&[])?;
            switchyard_ops::add_out(&y, &tmp, &z)?;
            Ok(vec![switchyard_ops::mul(&z, &z)?])
        },
        &[ones(&[4, 2])],
    );
    assert_eq!(values(&r, 0), vec![4.0; 8]);
    assert_eq!(r.ins[0].values, vec![1.0; 8]);
    assert_eq!(r.bumped, vec![false]);
}

#[test]
fn out_into_an_input_resizes_it() {
    // An out= input of another size: the write-back resizes the caller's tensor.
    let r = check(
        &|x| {
            switchyard_ops::add_out(&x[0], &x[0], &x[1])?;
            Ok(vec![])
        },
        &[arange(8, &[4, 2]), switchyard_ops::empty(&[0]).unwrap()],
    );
    assert_eq!(r.ins[1].sizes.as_slice(), &[4, 2]);
    assert_eq!(r.ins[1].values[3], 6.0);
}

#[test]
fn f04_tensor_ctr() {
    let r = check(
        &|_| {
            let c = Tensor::from_slice(&[1.0f32, 2.0, 3.0])?;
            let y = switchyard_ops::lift_fresh(&c)?;
            let z = y.view(&[-1])?;
            z.add_scalar_(1.0)?;
            Ok(vec![y])
        },
        &[],
    );
    assert_eq!(values(&r, 0), vec![2.0, 3.0, 4.0]);
}

#[test]
fn f05_inplace_on_non_view() {
    let r = check(
        &|x| {
            let tmp = switchyard_ops::ones(&[4, 2])?;
            let y = x[0].view(&[4, 2])?;
            x[0].add_(&tmp)?;
            Ok(vec![y])
        },
        &[ones(&[4, 2])],
    );
    assert_eq!(values(&r, 0), vec![2.0; 8]);
    assert_eq!(r.ins[0].values, vec![2.0; 8]);
    assert_eq!(r.bumped, vec![true]);
}

#[test]
fn f07_as_strided() {
    let r = check(
        &|x| {
            let y = switchyard_ops::as_strided_with(&x[0], &[2], &[2], Some(1))?;
            y.add_scalar_(1.0)?;
            Ok(vec![Clone::clone(&x[0])])
        },
        &[ones(&[9])],
    );
    let expected = vec![1.0, 2.0, 1.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0];
    assert_eq!(values(&r, 0), expected);
    assert_eq!(r.ins[0].values, expected);
}

#[test]
fn f09_cat_out() {
    let r = check(
        &|x| {
            let out = switchyard_ops::empty(&[0])?;
            switchyard_ops::cat_out(&[Clone::clone(&x[0])], &out)?;
            Ok(vec![out])
        },
        &[arange(4, &[2, 2])],
    );
    assert_eq!(values(&r, 0), vec![0.0, 1.0, 2.0, 3.0]);
    assert_eq!(r.bumped, vec![false]);
}

#[test]
fn f10_diagonal_of_clone() {
    let r = check(
        &|x| {
            let tmp = switchyard_ops::ones(&[2])?;
            let y = switchyard_ops::diagonal(&switchyard_ops::clone(&x[0])?)?;
            y.add_(&tmp)?;
            Ok(vec![switchyard_ops::mul(&x[0], &x[0])?, y])
        },
        &[ones(&[2, 2])],
    );
    assert_eq!(values(&r, 0), vec![1.0; 4]);
    assert_eq!(values(&r, 1), vec![2.0; 2]);
    assert_eq!(r.ins[0].values, vec![1.0; 4]);
    assert_eq!(r.bumped, vec![false]);
}

#[test]
fn f11_diagonal_mutated_input() {
    let r = check(
        &|x| {
            let y = switchyard_ops::diagonal(&x[0])?;
            y.add_(&switchyard_ops::ones(&[2])?)?;
            Ok(vec![Clone::clone(&x[0])])
        },
        &[ones(&[2, 2])],
    );
    assert_eq!(values(&r, 0), vec![2.0, 1.0, 1.0, 2.0]);
    assert_eq!(r.ins[0].values, vec![2.0, 1.0, 1.0, 2.0]);
    assert_eq!(r.bumped, vec![true]);
}

#[test]
fn f12_split() {
    let r = check(
        &|x| {
            let parts = x[0].split(2)?;
            let y3 = switchyard_ops::diagonal(&parts[1])?;
            y3.add_(&switchyard_ops::ones(&[2])?)?;
            let z = switchyard_ops::mul(&x[0], &x[0])?;
            Ok(vec![y3, z])
        },
        &[ones(&[4, 2])],
    );
    assert_eq!(values(&r, 0), vec![2.0, 2.0]);
    assert_eq!(
        r.ins[0].values,
        vec![1.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 2.0]
    );
}

fn f13_program(x: &[Tensor]) -> Result<Vec<Tensor>> {
    x[0].transpose_(1, 0)?;
    let y = switchyard_ops::select(&x[0], 0, 0)?;
    y.add_(&switchyard_ops::ones(&[4])?)?;
    Ok(vec![Clone::clone(&x[0])])
}

#[test]
fn f13_view_inplace() {
    // The caller's x ends (2, 4), as eagerly (a metadata mutation of an input, written back
    // with `as_strided_`), with eager's strides: the wrapper reports the eager geometry of
    // `transpose_` (plan §2.4) also when its value is a contiguous `transpose_copy`.
    let r = check(&f13_program, &[arange(8, &[4, 2])]);
    assert_eq!(r.ins[0].sizes.as_slice(), &[2, 4]);
    assert_eq!(r.in_strides[0].as_slice(), &[1, 2]);
    assert_eq!(
        r.ins[0].values,
        vec![1.0, 3.0, 5.0, 7.0, 1.0, 3.0, 5.0, 7.0]
    );
    assert_eq!(values(&r, 0), r.ins[0].values);
}

#[test]
fn f14_index_put() {
    let r = check(
        &|x| {
            let y = x[0].view(&[8])?;
            let idx = switchyard_ops::arange(4)?;
            let vals = switchyard_ops::arange_with(4.0, Some(ScalarType::Float), None, None, None)?;
            y.index_put_(&[Some(idx)], &vals)?;
            Ok(vec![y])
        },
        &[ones(&[4, 2])],
    );
    assert_eq!(values(&r, 0), vec![0.0, 1.0, 2.0, 3.0, 1.0, 1.0, 1.0, 1.0]);
    assert_eq!(r.bumped, vec![true]);
}

#[test]
fn f15_scalars() {
    let r = check(
        &|x| {
            let y = x[0].view(&[4, 2])?;
            y.add_scalar_(1.0)?;
            let z = y.mul_scalar(2.0)?;
            z.div_scalar_(1.0)?;
            Ok(vec![z])
        },
        &[ones(&[4, 2])],
    );
    assert_eq!(values(&r, 0), vec![4.0; 8]);
    assert_eq!(r.ins[0].values, vec![2.0; 8]);
}

#[test]
fn f16_ge_inplace() {
    let r = check(
        &|x| {
            let y = switchyard_ops::clone(&x[0])?;
            Ok(vec![y.ge_scalar_(0.0)?])
        },
        &[arange(4, &[4])],
    );
    assert_eq!(r.outs[0].dtype, ScalarType::Float);
    assert_eq!(values(&r, 0), vec![1.0; 4]);
}

#[test]
fn f17_only_one_view() {
    let r = check(&|x| Ok(vec![x[0].view(&[4, 2])?]), &[arange(8, &[8])]);
    assert_eq!(r.outs[0].sizes.as_slice(), &[4, 2]);
    assert_eq!(r.bumped, vec![false]);
}

#[test]
fn f18_everything() {
    let r = check(
        &|x| {
            let tmp = switchyard_ops::ones(&[2, 2])?;
            let x2 = switchyard_ops::add(&x[0], &x[0])?;
            let y = x2.view(&[8])?;
            let z0 = y.reshape(&[2, 4])?;
            let z1 = z0.transpose(1, 0)?;
            z1.unsqueeze_(0)?;
            z1.squeeze_()?;
            let parts = z1.split(2)?;
            parts[0].add_(&tmp)?;
            let z4 = switchyard_ops::add(
                &switchyard_ops::select(&z0, 0, 0)?,
                &parts[0].reshape(&[4])?,
            )?;
            Ok(vec![Clone::clone(&parts[0]), z4, x2])
        },
        &[arange(8, &[4, 2])],
    );
    assert_eq!(r.bumped, vec![false]);
}

#[test]
fn f20_aliases_after_pass() {
    // With views reapplied, two views of one input come back sharing storage.
    let p = |x: &[Tensor]| {
        let y = x[0].view(&[4, 2])?;
        let z = x[0].view(&[4, 2])?;
        y.add_(&switchyard_ops::ones(&[4, 2])?)?;
        Ok(vec![y, z])
    };
    check(&p, &[ones(&[8])]);
    let outs = run_functionalized(&p, &[ones(&[8])], Remove::Mutations).unwrap();
    assert!(outs[0].is_alias_of(&outs[1]));
    outs[0].fill_scalar_(7.0).unwrap();
    assert_eq!(outs[1].to_vec::<f32>().unwrap(), vec![7.0; 8]);
}

#[test]
fn f21_copy_four_variants() {
    let long =
        |n: i64| switchyard_ops::ones_with(&[n], Some(ScalarType::Long), None, None, None).unwrap();
    for x in [ones(&[2]), ones(&[1]), long(2), long(1)] {
        let r = check(
            &|x| {
                let tmp = switchyard_ops::zeros(&[2, 2])?;
                let s = switchyard_ops::diagonal(&tmp)?;
                let y = s.copy_(&x[0])?;
                let z = y.add_(&x[0])?;
                Ok(vec![z, tmp])
            },
            &[x],
        );
        assert_eq!(r.outs[0].dtype, ScalarType::Float);
        assert_eq!(values(&r, 0), vec![2.0, 2.0]);
        assert_eq!(values(&r, 1), vec![2.0, 0.0, 0.0, 2.0]);
        assert_eq!(r.bumped, vec![false]);
    }
}

#[test]
fn f22_expand() {
    let r = check(
        &|x| {
            let s = x[0].sizes();
            Ok(vec![x[0].expand(&[s[0], s[1]])?])
        },
        &[arange(4, &[2, 2])],
    );
    assert_eq!(values(&r, 0), vec![0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn f23_fill() {
    let r = check(
        &|x| {
            let y = switchyard_ops::add(&x[0], &x[0])?;
            let z = switchyard_ops::diagonal(&y)?;
            z.fill_scalar_(0.0)?;
            Ok(vec![y])
        },
        &[ones(&[2, 2])],
    );
    assert_eq!(values(&r, 0), vec![0.0, 2.0, 2.0, 0.0]);
}

#[test]
fn f24_resize_smaller() {
    let r = check(
        &|w| {
            let x = w[0].add_scalar(1.0)?;
            let y = x.view(&[4, 4])?;
            y.resize_(&[3, 3])?;
            let y2 = y.view(&[-1])?;
            y2.add_scalar_(1.0)?;
            Ok(vec![y.add_scalar(1.0)?])
        },
        &[ones(&[8, 2])],
    );
    assert_eq!(values(&r, 0), vec![4.0; 9]);
}

#[test]
fn f25_resize_larger() {
    let r = check(
        &|x| {
            let y = x[0].add_scalar(1.0)?;
            y.resize_(&[5, 5])?;
            let y2 = y.view(&[25])?;
            y2.fill_scalar_(1.0)?;
            let out = y.add_scalar(1.0)?;
            Ok(vec![y, out])
        },
        &[ones(&[8, 2])],
    );
    assert_eq!(values(&r, 0), vec![1.0; 25]);
    assert_eq!(values(&r, 1), vec![2.0; 25]);
}

#[test]
fn f26_resize_view_larger() {
    let err = run_functionalized(
        &|x| {
            let y = x[0].add_scalar(1.0)?;
            let z = y.view(&[4, 4])?;
            z.resize_(&[5, 5])?;
            Ok(vec![z])
        },
        &[ones(&[8, 2])],
        Remove::MutationsAndViews,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        "Attempted to resize a view tensor to a larger size. This is not allowed in the functionalization pass"
    );
}

#[test]
fn resize_smaller_keeps_the_rest_of_the_storage() {
    // A shrunk tensor is a window on its old storage: an alias taken before sees the mutation
    // of the window and keeps the other elements; the caller's tensor ends resized.
    let r = check(
        &|x| {
            let keep = x[0].view(&[-1])?;
            x[0].resize_(&[2, 3])?;
            x[0].add_scalar_(100.0)?;
            Ok(vec![keep, Clone::clone(&x[0])])
        },
        &[arange(16, &[4, 4])],
    );
    assert_eq!(r.ins[0].sizes.as_slice(), &[2, 3]);
    assert_eq!(values(&r, 0)[5..7], [105.0, 6.0]);
}

#[test]
fn resize_to_the_same_sizes_keeps_strides() {
    let r = check(
        &|x| {
            x[0].resize_(&[3, 2])?;
            x[0].mul_scalar_(2.0)?;
            Ok(vec![x[0].add_scalar(1.0)?])
        },
        &[arange(6, &[2, 3]).t().unwrap()],
    );
    assert_eq!(r.in_strides[0].as_slice(), &[1, 3]);
}

#[test]
fn f27_update_survives_view_death() {
    fn g(x: &Tensor) -> Result<()> {
        let y = switchyard_ops::select(x, 0, 0)?;
        y.add_scalar_(1.0)?;
        Ok(())
    }
    let r = check(
        &|x| {
            g(&x[0])?;
            Ok(vec![switchyard_ops::add(&x[0], &x[0])?])
        },
        &[ones(&[2, 2])],
    );
    assert_eq!(values(&r, 0), vec![4.0, 4.0, 2.0, 2.0]);
    assert_eq!(r.bumped, vec![true]);
}

#[test]
fn f28_mixed_valid() {
    // A plain tensor from outside the program, added to a functional one: the result is
    // functional, and mutating it is functionalized.
    let plain = arange(2, &[2]);
    let q = Clone::clone(&plain);
    let r = check(
        &move |x| {
            let z = switchyard_ops::add(&x[0], &q)?;
            z.add_scalar_(1.0)?;
            Ok(vec![z])
        },
        &[ones(&[2])],
    );
    assert_eq!(values(&r, 0), vec![2.0, 3.0]);
    assert_eq!(plain.to_vec::<f32>().unwrap(), vec![0.0, 1.0]);
}

#[test]
fn f28_mixed_invalid() {
    // Mutating a plain tensor with a functional one runs eagerly but is refused inside the
    // transform.
    let plain = arange(2, &[2]);
    let p = move |x: &[Tensor]| {
        plain.add_(&x[0])?;
        Ok(vec![])
    };
    assert!(run(&p, &[ones(&[2])], None).is_ok());
    for remove in MODES {
        let err = run(&p, &[ones(&[2])], Some(remove)).unwrap_err();
        assert_eq!(
            err.message(),
            "mutating a non-functional tensor with a functional tensor is not allowed. Please ensure that all of your inputs are wrapped inside of a functionalize() call."
        );
    }
}

#[test]
fn f29_select_fill() {
    let r = check(
        &|_| {
            let tmp = switchyard_ops::zeros(&[10])?;
            switchyard_ops::select(&tmp, 0, 5)?.fill_scalar_(1.0)?;
            Ok(vec![tmp])
        },
        &[],
    );
    let mut expected = vec![0.0; 10];
    expected[5] = 1.0;
    assert_eq!(values(&r, 0), expected);
}

#[test]
fn f30_freeze() {
    // Not a comparison with eager (freezing is functional-only): after `freeze(y)`, mutating
    // `y` or a view of it fails, mutating another group works.
    for remove in MODES {
        let x = ones(&[2, 2]);
        let outs = run_functionalized(
            &|x| {
                let y = switchyard_ops::clone(&x[0])?;
                let z = switchyard_ops::select(&y, 0, 0)?;
                freeze(&y)?;
                x[0].add_scalar_(1.0)?;
                let e1 = y.add_scalar_(1.0).unwrap_err();
                let e2 = z.add_scalar_(1.0).unwrap_err();
                for e in [e1, e2] {
                    assert_eq!(e.message(), "cannot mutate tensors with frozen storage");
                }
                Ok(vec![y])
            },
            &[Clone::clone(&x)],
            remove,
        )
        .unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.0; 4]);
        assert_eq!(outs[0].to_vec::<f32>().unwrap(), vec![1.0; 4]);
    }
}

#[test]
fn f32_unfold_overlap() {
    let p = |x: &[Tensor]| {
        let t2 = switchyard_ops::add(&x[0], &x[0])?.unfold(1, 3, 2)?;
        t2.abs_()?;
        Ok(vec![t2])
    };
    let err = run_functionalized(&p, &[ones(&[1, 5])], Remove::Mutations).unwrap_err();
    assert!(err.message().contains("internal overlap"), "{err}");
    run_functionalized(&p, &[ones(&[1, 5])], Remove::MutationsAndViews).unwrap();
}

#[test]
fn f33_multiple_views_of_same_base() {
    let r = check(
        &|x| {
            let y = x[0].view(&[-1])?;
            let z = x[0].view(&[-1])?;
            x[0].add_scalar_(1.0)?;
            Ok(vec![z.add_scalar(1.0)?, y.add_scalar(1.0)?])
        },
        &[ones(&[4])],
    );
    assert_eq!(values(&r, 0), vec![3.0; 4]);
    assert_eq!(values(&r, 1), vec![3.0; 4]);
    assert_eq!(r.bumped, vec![true]);
}

#[test]
fn f34_copy_keeps_strides() {
    // Inside the program the copied-into tensor keeps its (5, 1) strides, as eagerly.
    let r = check(
        &|x| {
            let y = switchyard_ops::empty_strided(&[2, 2], &[5, 1])?;
            y.copy_(&x[0])?;
            if y.strides().as_slice() != [5, 1] {
                return Err(Error::runtime(format!(
                    "copy_ restrided its destination to {:?}",
                    y.strides()
                )));
            }
            Ok(vec![y])
        },
        &[arange(4, &[2, 2])],
    );
    assert_eq!(values(&r, 0), vec![0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn a_strided_input_keeps_its_layout() {
    // A mutated non-contiguous input is written back into its own layout, as eagerly.
    let x = arange(6, &[2, 3]).t().unwrap();
    let r = check(
        &|x| {
            x[0].mul_scalar_(2.0)?;
            Ok(vec![x[0].add_scalar(1.0)?])
        },
        &[x],
    );
    assert_eq!(r.ins[0].sizes.as_slice(), &[3, 2]);
    assert_eq!(r.in_strides[0].as_slice(), &[1, 3]);
    assert_eq!(r.bumped, vec![true]);
}

#[test]
fn the_write_back_reaches_the_callers_base() {
    // The caller's input is a view: writing back into it mutates its base, as eagerly.
    for remove in MODES {
        let base = arange(6, &[6]);
        let v = switchyard_ops::slice_with(&base, 0, Some(2), Some(5), 1).unwrap();
        let outs = run_functionalized(
            &|x| {
                x[0].add_scalar_(10.0)?;
                Ok(vec![])
            },
            &[v],
            remove,
        )
        .unwrap();
        assert!(outs.is_empty());
        assert_eq!(
            base.to_vec::<f32>().unwrap(),
            vec![0.0, 1.0, 12.0, 13.0, 14.0, 5.0]
        );
    }
}

#[test]
fn factory_inside_returns_a_plain_tensor() {
    for remove in MODES {
        let outs = run_functionalized(
            &|_| {
                let z = switchyard_ops::zeros(&[3])?;
                // Wrapped inside the program: the transform includes the key.
                assert!(is_functional(&z));
                z.add_scalar_(2.0)?;
                Ok(vec![z])
            },
            &[],
            remove,
        )
        .unwrap();
        assert!(!is_functional(&outs[0]));
        assert_eq!(outs[0].to_vec::<f32>().unwrap(), vec![2.0; 3]);
    }
}

#[test]
fn an_unmutated_input_comes_back_as_itself() {
    let x = ones(&[2]);
    let version = x.version();
    let outs = run_functionalized(
        &|x| Ok(x.to_vec()),
        &[Clone::clone(&x)],
        Remove::MutationsAndViews,
    )
    .unwrap();
    assert!(outs[0].is_same(&x));
    assert_eq!(x.version(), version);
}

#[test]
fn an_error_inside_propagates_and_leaks_no_state() {
    use switchyard_core::DispatchKey;
    use switchyard_core::local_dispatch::tls_local_dispatch_key_set;
    let before = tls_local_dispatch_key_set();
    for remove in MODES {
        let x = ones(&[2]);
        let err = run_functionalized(
            &|x| {
                x[0].add_scalar_(1.0)?;
                Err(Error::runtime("boom"))
            },
            &[Clone::clone(&x)],
            remove,
        )
        .unwrap_err();
        assert_eq!(err.message(), "boom");
        // An operator error inside also propagates.
        let err = run_functionalized(&|x| Ok(vec![x[0].view(&[3])?]), &[Clone::clone(&x)], remove)
            .unwrap_err();
        assert!(err.message().contains("invalid"), "{err}");
        assert_eq!(tls_local_dispatch_key_set(), before);
        assert!(!switchyard_functionalize::reapply_views());
        assert!(
            !switchyard_core::local_dispatch::tls_is_dispatch_key_included(
                DispatchKey::Functionalize
            )
        );
        // No write-back happened, and plain eager calls are unaffected.
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0; 2]);
        let z = switchyard_ops::zeros(&[2]).unwrap();
        assert!(!is_functional(&z));
        x.add_(&z).unwrap();
        assert!(!is_functional(&x.view(&[2, 1]).unwrap()));
    }
}
