//! The generated kernels (plan §3.2, step 5) on A.11-style programs: mutating operators
//! (in-place, out= with a resize and a dtype change), mutations through `select`, `slice`,
//! `diagonal` and `as_strided` views reaching the base and the other views, the in-place view
//! `as_strided_`. Each program runs eagerly on plain CPU tensors and functionalized (inputs
//! wrapped; both reapply modes); outputs and post-call inputs must agree.

use switchyard_core::{Result, ScalarType, Tensor};
use switchyard_functionalize::{
    ReapplyViewsGuard, Remove, from_functional, functional_payload, is_functional,
    run_functionalized, sync, to_functional, trace,
};
use switchyard_ops::TensorOps;

/// How a program makes tensors of its own: plain in the eager run, wrapped in the
/// functionalized one (as factories are inside `functionalize`, through the included key).
struct Env {
    functional: bool,
}

impl Env {
    fn fresh(&self, t: Tensor) -> Tensor {
        if self.functional && !is_functional(&t) {
            to_functional(&t).unwrap()
        } else {
            t
        }
    }
}

type Program = dyn Fn(&Env, &[Tensor]) -> Result<Vec<Tensor>>;

/// Sizes and values (as f64) of `t`, syncing and unwrapping a wrapper.
fn observe(t: &Tensor) -> (Vec<i64>, ScalarType, Vec<f64>) {
    let v = if is_functional(t) {
        sync(t).unwrap();
        from_functional(t).unwrap()
    } else {
        Clone::clone(t)
    };
    let f =
        switchyard_ops::_to_copy_with(&v, Some(ScalarType::Double), None, None, None, false, None)
            .unwrap();
    (t.sizes().to_vec(), t.dtype(), f.to_vec::<f64>().unwrap())
}

fn copies(inputs: &[Tensor]) -> Vec<Tensor> {
    inputs
        .iter()
        .map(|t| switchyard_ops::clone(t).unwrap())
        .collect()
}

type Observed = Vec<(Vec<i64>, ScalarType, Vec<f64>)>;

fn run(p: &Program, inputs: &[Tensor], functional: bool) -> Result<(Observed, Observed)> {
    let ins: Vec<Tensor> = copies(inputs)
        .iter()
        .map(|t| {
            if functional {
                to_functional(t).unwrap()
            } else {
                Clone::clone(t)
            }
        })
        .collect();
    let outs = p(&Env { functional }, &ins)?;
    if functional {
        assert!(outs.iter().all(is_functional), "outputs must be functional");
    }
    Ok((
        outs.iter().map(observe).collect(),
        ins.iter().map(observe).collect(),
    ))
}

/// Runs `p` eagerly and functionalized in both modes and compares outputs and post-call
/// inputs (sizes, dtypes, values).
fn check(p: &Program, inputs: &[Tensor]) -> (Observed, Observed) {
    let eager = run(p, inputs, false).unwrap();
    for reapply in [false, true] {
        let _mode = ReapplyViewsGuard::new(reapply);
        let f = run(p, inputs, true).unwrap();
        assert_eq!(f.0, eager.0, "outputs differ (reapply_views = {reapply})");
        assert_eq!(
            f.1, eager.1,
            "post-call inputs differ (reapply_views = {reapply})"
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

#[test]
fn inplace_add_on_a_wrapper() {
    // F5-like: a view taken before the mutation of its base, then the base used again.
    let (outs, ins) = check(
        &|_, x| {
            let tmp = ones(&[4, 2]);
            x[0].add_(&tmp)?;
            let z = switchyard_ops::mul(&x[0], &x[0])?;
            Ok(vec![Clone::clone(&x[0]), z])
        },
        &[ones(&[4, 2])],
    );
    assert_eq!(outs[1].2, vec![4.0; 8]);
    assert_eq!(ins[0].2, vec![2.0; 8]);
}

#[test]
fn inplace_broadcast_into_self_is_refused() {
    // An in-place broadcast that would resize `self` is refused, as eagerly.
    let p: &Program = &|_, x| {
        x[0].add_(&ones(&[2, 2]))?;
        Ok(vec![])
    };
    let eager = run(p, &[ones(&[2])], false).unwrap_err();
    let f = run(p, &[ones(&[2])], true).unwrap_err();
    assert!(
        eager
            .message()
            .contains("doesn't match the broadcast shape"),
        "{eager}"
    );
    assert!(
        f.message().contains("doesn't match the broadcast shape"),
        "{f}"
    );
}

/// The dtype rules of eager in-place and out= kernels: a result that cannot be cast to the
/// mutated tensor's dtype is refused with eager's message, before anything changes.
#[test]
fn uncastable_results_are_refused_as_eagerly() {
    let long = |v: &[i64]| Tensor::from_slice(v).unwrap();
    let p: &Program = &|_, x| {
        x[0].add_(&x[1])?;
        Ok(vec![])
    };
    let inputs = [long(&[1, 2]), arange(2, &[2])];
    let eager = run(p, &inputs, false).unwrap_err();
    let f = run(p, &inputs, true).unwrap_err();
    assert_eq!(f.message(), eager.message());
    assert!(
        eager
            .message()
            .contains("can't be cast to the desired output type"),
        "{eager}"
    );
    let p: &Program = &|_, x| Ok(vec![switchyard_ops::add_out(&x[1], &x[1], &x[0])?]);
    let eager = run(p, &inputs, false).unwrap_err();
    let f = run(p, &inputs, true).unwrap_err();
    assert_eq!(f.message(), eager.message());
    // Casting the other way is fine: a long `other` added into a float `self`.
    check(
        &|_, x| {
            x[1].add_(&x[0])?;
            Ok(vec![Clone::clone(&x[1])])
        },
        &inputs,
    );
}

#[test]
fn out_into_a_wrapper_resizes_and_casts() {
    // F2-like: an empty out= tensor takes the result's sizes.
    let (outs, ins) = check(
        &|_, x| {
            let r = switchyard_ops::add_out(&x[0], &ones(&[4, 2]), &x[1])?;
            let w = switchyard_ops::mul(&r, &r)?;
            Ok(vec![r, w])
        },
        &[ones(&[4, 2]), switchyard_ops::empty(&[0]).unwrap()],
    );
    assert_eq!(outs[1].2, vec![4.0; 8]);
    assert_eq!(ins[1].0, vec![4, 2]);
    // An out= tensor of another dtype keeps it (the value is converted).
    let (_, ins) = check(
        &|_, x| Ok(vec![switchyard_ops::add_out(&x[0], &x[0], &x[1])?]),
        &[
            arange(3, &[3]),
            switchyard_ops::zeros_with(&[3], Some(ScalarType::Double), None, None, None).unwrap(),
        ],
    );
    assert_eq!(ins[1].1, ScalarType::Double);
    assert_eq!(ins[1].2, vec![0.0, 2.0, 4.0]);
}

#[test]
fn mixed_plain_and_functional_arguments() {
    // F28: a functional argument of a non-mutating op makes a functional result; a plain
    // tensor mutated with a functional argument is refused.
    let x = to_functional(&ones(&[2])).unwrap();
    let plain = ones(&[2]);
    let z = switchyard_ops::add(&x, &plain).unwrap();
    assert!(is_functional(&z));
    z.add_(&plain).unwrap();
    assert_eq!(observe(&z).2, vec![3.0, 3.0]);
    // (`plain.add_(&x)` is refused: `errors.rs`.)
    // Nothing functional: the kernel calls the in-place op below and mutates the plain tensor.
    let p = ones(&[2]);
    p.add_(&ones(&[2])).unwrap();
    assert_eq!(p.to_vec::<f32>().unwrap(), vec![2.0, 2.0]);
}

#[test]
fn select_mutation_reaches_the_base_and_other_views() {
    // F29-like, plus a view taken before the mutation: after sync, the base and every other
    // view see it.
    let (outs, ins) = check(
        &|_, x| {
            let other = switchyard_ops::slice_with(&x[0], 0, Some(1), Some(3), 1)?;
            let y = switchyard_ops::select(&x[0], 0, 1)?;
            y.add_(&ones(&[2]))?;
            let z = switchyard_ops::mul(&x[0], &x[0])?;
            Ok(vec![y, other, z])
        },
        &[arange(8, &[4, 2])],
    );
    assert_eq!(outs[0].2, vec![3.0, 4.0]);
    assert_eq!(outs[1].2, vec![3.0, 4.0, 4.0, 5.0]);
    assert_eq!(ins[0].2, vec![0.0, 1.0, 3.0, 4.0, 4.0, 5.0, 6.0, 7.0]);
}

#[test]
fn slice_mutation_and_a_chain_of_two_views() {
    check(
        &|_, x| {
            let y = switchyard_ops::slice_with(&x[0], 0, Some(2), Some(4), 1)?;
            y.mul_scalar_(2.0)?;
            // Chain slice → select, mutated with fill_: reaches `y` and the base.
            let s = switchyard_ops::slice_with(&x[0], 1, Some(0), Some(1), 1)?;
            let w = switchyard_ops::select(&s, 0, 3)?;
            w.fill_scalar_(-1.0)?;
            Ok(vec![y, s, w])
        },
        &[arange(8, &[4, 2])],
    );
    // Stepped slice and an index_put-free scatter of its view.
    check(
        &|_, x| {
            let y = switchyard_ops::slice_with(&x[0], 0, Some(0), None, 2)?;
            y.zero_()?;
            Ok(vec![Clone::clone(&x[0])])
        },
        &[arange(6, &[6])],
    );
}

#[test]
fn diagonal_mutations() {
    // F11: the mutation of an input's diagonal reaches the input.
    let (outs, ins) = check(
        &|_, x| {
            let y = switchyard_ops::diagonal(&x[0])?;
            y.add_(&ones(&[2]))?;
            Ok(vec![Clone::clone(&x[0])])
        },
        &[ones(&[2, 2])],
    );
    assert_eq!(outs[0].2, vec![2.0, 1.0, 1.0, 2.0]);
    assert_eq!(ins[0].2, vec![2.0, 1.0, 1.0, 2.0]);
    // F10: a view of a clone leaves the input alone.
    let (outs, ins) = check(
        &|env, x| {
            let c = env.fresh(switchyard_ops::clone(&x[0])?);
            let y = switchyard_ops::diagonal(&c)?;
            y.add_(&ones(&[2]))?;
            Ok(vec![switchyard_ops::mul(&x[0], &x[0])?, c])
        },
        &[ones(&[2, 2])],
    );
    assert_eq!(outs[0].2, vec![1.0; 4]);
    assert_eq!(outs[1].2, vec![2.0, 1.0, 1.0, 2.0]);
    assert_eq!(ins[0].2, vec![1.0; 4]);
    // F21 (two of its variants): `copy_` into a diagonal view, broadcasting and casting.
    for src in [
        ones(&[2]),
        switchyard_ops::ones_with(&[1], Some(ScalarType::Long), None, None, None).unwrap(),
    ] {
        let (outs, _) = check(
            &|env, x| {
                let tmp = env.fresh(switchyard_ops::zeros(&[2, 2])?);
                let s = switchyard_ops::diagonal(&tmp)?;
                let y = s.copy_(&x[0])?;
                let z = y.add_(&x[0])?;
                Ok(vec![z, tmp])
            },
            &[src],
        );
        assert_eq!(outs[0].2, vec![2.0, 2.0]);
        assert_eq!(outs[1].2, vec![2.0, 0.0, 0.0, 2.0]);
    }
}

#[test]
fn as_strided_view_mutation() {
    // F7.
    let (outs, ins) = check(
        &|_, x| {
            let y = switchyard_ops::as_strided_with(&x[0], &[2], &[2], Some(1))?;
            y.add_scalar_(1.0)?;
            Ok(vec![Clone::clone(&x[0]), y])
        },
        &[ones(&[9])],
    );
    let expected = vec![1.0, 2.0, 1.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0];
    assert_eq!(outs[0].2, expected);
    assert_eq!(ins[0].2, expected);
}

#[test]
fn as_strided_inplace_view() {
    // `as_strided_` turns the wrapper into a view of its old base; mutating it afterwards
    // goes through the recorded `as_strided_scatter`.
    let (outs, ins) = check(
        &|_, x| {
            let keep = switchyard_ops::slice_with(&x[1], 0, None, None, 1)?;
            x[1].as_strided_(&[2, 2], &[3, 1])?;
            x[1].mul_scalar_(10.0)?;
            Ok(vec![Clone::clone(&x[1]), keep])
        },
        &[ones(&[1]), arange(6, &[6])],
    );
    assert_eq!(outs[0].2, vec![0.0, 10.0, 30.0, 40.0]);
    assert_eq!(outs[1].2, vec![0.0, 10.0, 2.0, 30.0, 40.0, 5.0]);
    assert_eq!(ins[1].0, vec![2, 2]);
    let x = to_functional(&arange(4, &[4])).unwrap();
    x.as_strided_(&[2], &[2]).unwrap();
    let ft = functional_payload(&x).unwrap();
    assert!(ft.has_metadata_mutation());
    assert_eq!(ft.view_metas().len(), 1);
    assert!(ft.view_metas()[0].is_as_strided);
}

#[test]
fn unfold_view_mutation() {
    // Windows with gaps (step 3 > size 2) and a tail no window covers: the mutation of the
    // windows reaches the base, the other elements keep their values (PyTorch's inverse,
    // `unfold_backward` alone, would zero them).
    for (size, step) in [(2, 3), (3, 3), (1, 2)] {
        let (outs, ins) = check(
            &move |_, x| {
                let y = x[0].unfold(1, size, step)?;
                y.mul_scalar_(10.0)?;
                Ok(vec![y, Clone::clone(&x[0])])
            },
            &[arange(16, &[2, 8])],
        );
        assert_eq!(outs[1], ins[0]);
        // Some elements (past 0) changed, some were left as they were.
        let at = |f: f64| (1..16).any(|i| ins[0].2[i] == f * i as f64);
        assert!(at(1.0) && at(10.0), "{ins:?}");
    }
    // A chain through unfold: select of a window, mutated in place.
    let (_, ins) = check(
        &|_, x| {
            let w = x[0].unfold(0, 2, 2)?.select(0, 1)?;
            w.fill_scalar_(-1.0)?;
            Ok(vec![w])
        },
        &[arange(5, &[5])],
    );
    assert_eq!(ins[0].2, vec![0.0, 1.0, -1.0, -1.0, 4.0]);
}

#[test]
fn out_list_into_wrappers() {
    // A `Tensor(a!)[]` out= argument: each element takes the matching functional output.
    let (_, ins) = check(
        &|_, x| {
            switchyard_ops::split_copy_out_with(&x[0], 2, 0, &x[1..])?;
            Ok(vec![])
        },
        &[
            arange(8, &[4, 2]),
            switchyard_ops::zeros(&[2, 2]).unwrap(),
            switchyard_ops::zeros(&[2, 2]).unwrap(),
        ],
    );
    assert_eq!(
        (ins[1].0.clone(), ins[2].0.clone()),
        (vec![2, 2], vec![2, 2])
    );
    assert_eq!(ins[2].2, vec![4.0, 5.0, 6.0, 7.0]);
}

#[test]
fn composite_views_decompose_at_the_layer() {
    // `narrow` is CompositeImplicitAutograd: its composite kernel is registered at
    // `Functionalize`, so it decomposes into `slice` (which records the view) instead of
    // reaching the fallback, which would refuse an aliasing operator.
    let (outs, ins) = check(
        &|_, x| {
            let y = switchyard_ops::narrow(&x[0], 0, 1, 2)?;
            y.add_scalar_(10.0)?;
            Ok(vec![y])
        },
        &[arange(4, &[4])],
    );
    assert_eq!(outs[0].2, vec![11.0, 12.0]);
    assert_eq!(ins[0].2, vec![0.0, 11.0, 12.0, 3.0]);
}

/// An out= operator whose functional variant is CompositeImplicitAutograd (`linear.out`:
/// `linear`; `softmax.int_out`: `softmax.int`) runs that decomposition on the wrappers, so the
/// backend sees the decomposition's own operators (below the layer a composite's views of a
/// storage-less value fail, as `linear.out` on lazy did); its result is unwrapped and written
/// into `out`, which is resized as eagerly.
#[test]
fn out_of_a_composite_functional_decomposes_on_the_wrappers() {
    let t = |v: &[f32], shape: &[i64]| Tensor::from_vec(v.to_vec(), shape).unwrap();
    let linear_plain = &|x: &[Tensor]| {
        Ok(vec![switchyard_ops::linear_out_with(
            &x[0],
            &x[1],
            Some(&x[2]),
            &x[3],
        )?])
    };
    let linear: &Program = &|_, x| linear_plain(x);
    let inputs = [
        t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]),
        t(&[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2]),
        t(&[10.0, 20.0, 30.0], &[3]),
        switchyard_ops::empty(&[0]).unwrap(),
    ];
    let (outs, ins) = check(linear, &inputs);
    // x @ w^T + b, by hand.
    let want = vec![11.0, 22.0, 33.0, 13.0, 24.0, 37.0];
    assert_eq!(outs[0].2, want);
    assert_eq!((ins[3].0.clone(), ins[3].2.clone()), (vec![2, 3], want));
    // The decomposition runs at the layer: removing views there turns its `t` into `t_copy`
    // (run below the layer, the backend would see the view `t`), and `linear` never shows.
    let f = |x: &[Tensor]| run_functionalized(linear_plain, x, Remove::MutationsAndViews);
    let g = trace(&f, &copies(&inputs), &["x", "w", "b", "out"])
        .unwrap()
        .1;
    let text = g.to_string();
    assert!(g.view_nodes().is_empty(), "{text}");
    assert!(
        text.contains("t_copy(w)") && text.contains("addmm(b, x, ") && !text.contains("linear"),
        "{text}"
    );
    // `softmax.int` with a dtype: computed in Double, written into a Double `out`.
    let softmax: &Program = &|_, x| {
        Ok(vec![switchyard_ops::softmax_out_with(
            &x[0],
            1,
            Some(ScalarType::Double),
            &x[1],
        )?])
    };
    let (outs, ins) = check(
        softmax,
        &[
            t(&[0.0; 4], &[1, 4]),
            switchyard_ops::zeros_with(&[1, 4], Some(ScalarType::Double), None, None, None)
                .unwrap(),
        ],
    );
    assert_eq!(outs[0].2, vec![0.25; 4]);
    assert_eq!(ins[1].1, ScalarType::Double);
    assert_eq!(ins[1].2, vec![0.25; 4]);
}

/// out= reductions and scans that eager computes in `out`'s dtype when no dtype is given
/// (`sum`, `prod`, `cumsum`, `cumprod`, `mean`: their meta functions'
/// `infer_dtype_from_optional`) compute in it functionalized too, rather than casting the
/// functional variant's result (a Long sum, a Float mean) into `out`.
#[test]
fn out_reductions_compute_in_the_dtype_of_out() {
    let long = |v: &[i64]| Tensor::from_slice(v).unwrap();
    let bools = |shape: &[i64]| {
        switchyard_ops::zeros_with(shape, Some(ScalarType::Bool), None, None, None).unwrap()
    };
    let one = |p: &Program, inputs: &[Tensor]| check(p, inputs).0[0].2.clone();
    // Bool `out`: `any(x != 0)` and `all(x != 0)`; the Long sum [1, -1] is 0 and the Long
    // product 2^32 * 2^32 wraps to 0, which cast to Bool would read false.
    let sum: &Program = &|_, x| {
        Ok(vec![switchyard_ops::sum_dim_intlist_out_with(
            &x[0],
            Some(&[0]),
            false,
            None,
            &x[1],
        )?])
    };
    assert_eq!(one(sum, &[long(&[1, -1]), bools(&[])]), vec![1.0]);
    let prod: &Program = &|_, x| {
        Ok(vec![switchyard_ops::prod_dim_int_out_with(
            &x[0], 0, false, None, &x[1],
        )?])
    };
    assert_eq!(
        one(prod, &[long(&[1 << 32, 1 << 32]), bools(&[])]),
        vec![1.0]
    );
    // Float `out` of a Long scan: the inputs are converted first ([2^24 + 1, 1] to
    // [2^24, 1]), so the sums are [2^24, 2^24] (2^24 + 1 rounds to even) where the Long sums
    // [2^24 + 1, 2^24 + 2] cast to Float read [2^24, 2^24 + 2]; the products of [3, 2^24 + 1]
    // are [3, 3 * 2^24], not 3 * (2^24 + 1) rounded (3 * 2^24 + 4).
    let floats = |n: i64| switchyard_ops::zeros(&[n]).unwrap();
    let cumsum: &Program = &|_, x| Ok(vec![switchyard_ops::cumsum_out(&x[0], 0, &x[1])?]);
    assert_eq!(
        one(cumsum, &[long(&[(1 << 24) + 1, 1]), floats(2)]),
        vec![16_777_216.0, 16_777_216.0]
    );
    let cumprod: &Program = &|_, x| Ok(vec![switchyard_ops::cumprod_out(&x[0], 0, &x[1])?]);
    assert_eq!(
        one(cumprod, &[long(&[3, (1 << 24) + 1]), floats(2)]),
        vec![3.0, 50_331_648.0]
    );
    // Bool scans have no CPU kernel, eagerly or functionalized.
    let eager = run(cumsum, &[long(&[1, -1]), bools(&[2])], false).unwrap_err();
    let f = run(cumsum, &[long(&[1, -1]), bools(&[2])], true).unwrap_err();
    assert_eq!(f.message(), eager.message());
    assert_eq!(
        eager.message(),
        "\"cumsum_out_cpu\" not implemented for 'Bool'"
    );
    // A Double `out` of a Float mean: (2^24 + 1) / 2 in Double; in Float 2^24 + 1 rounds to
    // 2^24 first.
    let doubles =
        switchyard_ops::zeros_with(&[], Some(ScalarType::Double), None, None, None).unwrap();
    let float = Tensor::from_slice(&[16_777_216.0f32, 1.0]).unwrap();
    let mean_dim: &Program = &|_, x| {
        Ok(vec![switchyard_ops::mean_dim_out_with(
            &x[0],
            Some(&[0]),
            false,
            None,
            &x[1],
        )?])
    };
    assert_eq!(
        one(mean_dim, &[Clone::clone(&float), Clone::clone(&doubles)]),
        vec![8_388_608.5]
    );
    let mean: &Program = &|_, x| Ok(vec![switchyard_ops::mean_out(&x[0], &x[1])?]);
    assert_eq!(
        one(mean, &[Clone::clone(&float), Clone::clone(&doubles)]),
        vec![8_388_608.5]
    );
    // Eager's errors: a Long `out` of a Float mean, an integral input without a dtype.
    let long_out = long(&[0]);
    for (p, inputs, want) in [
        (
            mean_dim,
            [Clone::clone(&float), Clone::clone(&long_out)],
            "result type Float can't be cast to the desired output type Long",
        ),
        (
            mean,
            [Clone::clone(&float), Clone::clone(&long_out)],
            "mean.dtype_out(): input types can't be cast to the desired output type Long",
        ),
        (
            mean_dim,
            [long(&[1, 2]), Clone::clone(&doubles)],
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long",
        ),
    ] {
        let eager = run(p, &inputs, false).unwrap_err();
        let f = run(p, &inputs, true).unwrap_err();
        assert_eq!(eager.message(), want);
        assert_eq!(f.message(), want);
    }
}
