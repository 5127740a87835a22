//! Eager geometry of wrappers (plan §2.4): inside a functionalized program, in both modes, a
//! view reports the sizes, strides and storage offset it has eagerly, also when its value is a
//! contiguous `*_copy`, and a view that is invalid on the eager layout fails as eagerly.

use std::cell::RefCell;
use switchyard_core::{Result, Tensor};
use switchyard_functionalize::{Remove, meta_shadow, run_functionalized, to_functional};
use switchyard_ops::TensorOps;

type Geometry = (Vec<i64>, Vec<i64>, i64);

/// A program that notes the geometry of tensors it makes through its second argument.
type Program = dyn Fn(&[Tensor], &dyn Fn(&Tensor)) -> Result<()>;

fn geometry(t: &Tensor) -> Geometry {
    (t.sizes().to_vec(), t.strides().to_vec(), t.storage_offset())
}

fn arange(n: i64, shape: &[i64]) -> Tensor {
    Tensor::from_vec((0..n).map(|x| x as f32).collect(), shape).unwrap()
}

/// The geometries `p` records (through its second argument) when run eagerly on `input`, and
/// when run functionalized in each mode; asserts they agree and returns eager's.
fn check(p: &Program, input: &Tensor) -> Vec<Geometry> {
    let record = |mode: Option<Remove>| {
        let seen = RefCell::new(Vec::new());
        let note = |t: &Tensor| seen.borrow_mut().push(geometry(t));
        let x = switchyard_ops::clone(input).unwrap();
        match mode {
            None => p(&[x], &note).unwrap(),
            Some(remove) => {
                run_functionalized(&|x| p(x, &note).map(|()| vec![]), &[x], remove).unwrap();
            }
        }
        seen.into_inner()
    };
    let eager = record(None);
    for remove in [Remove::Mutations, Remove::MutationsAndViews] {
        assert_eq!(
            record(Some(remove)),
            eager,
            "geometries differ (remove = {remove})"
        );
    }
    eager
}

#[test]
fn views_report_eager_geometry() {
    let g = check(
        &|x, note| {
            let t = x[0].transpose(0, 1)?;
            note(&t);
            note(&t.select(0, 1)?);
            note(&t.unsqueeze(1)?);
            note(&x[0].slice_with(1, Some(1), None, 2)?);
            note(&x[0].diagonal()?);
            note(&x[0].select(1, 0)?.unsqueeze(0)?.expand(&[3, 3])?);
            note(&x[0].permute(&[1, 0])?.t()?);
            for part in x[0].split(1)? {
                note(&part);
            }
            note(&x[0].unfold(1, 2, 2)?);
            note(&x[0].as_strided_with(&[2, 2], &[1, 3], Some(1))?);
            // A chain of views on a non-contiguous view.
            note(&t.slice_with(0, Some(1), Some(3), 1)?.select(1, 2)?);
            Ok(())
        },
        &arange(12, &[3, 4]),
    );
    assert_eq!(g[0], (vec![4, 3], vec![1, 4], 0));
    assert_eq!(g[1], (vec![3], vec![4], 1));
    assert_eq!(g[5].1, vec![0, 4]);
}

#[test]
fn inplace_views_and_resize_set_eager_geometry() {
    let g = check(
        &|x, note| {
            x[0].transpose_(0, 1)?;
            note(&x[0]);
            let y = switchyard_ops::add_scalar(&x[0], 1.0)?.t()?;
            note(&y);
            y.unsqueeze_(0)?;
            note(&y);
            y.squeeze_()?;
            note(&y);
            y.as_strided_(&[2, 2], &[1, 2])?;
            note(&y);
            // A mutation keeps the geometry of what it mutates.
            x[0].mul_scalar_(2.0)?;
            note(&x[0]);
            let z = switchyard_ops::clone(&x[0])?;
            z.resize_(&[2, 2])?;
            note(&z);
            Ok(())
        },
        &arange(6, &[2, 3]),
    );
    assert_eq!(g[0], (vec![3, 2], vec![1, 3], 0));
}

#[test]
fn views_invalid_on_the_eager_layout_fail_as_eagerly() {
    // `view` of a transposed tensor cannot be expressed with strides; removing views, the
    // value is a contiguous `transpose_copy`, but the view is refused as eagerly.
    let p = |x: &[Tensor]| Ok(vec![x[0].t()?.view(&[-1])?]);
    let eager = p(&[arange(6, &[2, 3])]).unwrap_err();
    for remove in [Remove::Mutations, Remove::MutationsAndViews] {
        let e = run_functionalized(&p, &[arange(6, &[2, 3])], remove).unwrap_err();
        assert_eq!(e.message(), eager.message());
    }
}

#[test]
fn meta_shadows_have_the_wrappers_geometry() {
    let base = arange(12, &[3, 4]);
    let v = base.slice_with(1, Some(1), None, 2).unwrap();
    let s = meta_shadow(&to_functional(&v).unwrap()).unwrap();
    assert!(s.is_meta());
    assert_eq!(geometry(&s), geometry(&v));
    assert_eq!(s.dtype(), v.dtype());
}

/// Structured operators on transposed views, whose values are contiguous `*_copy`s under
/// `Remove::MutationsAndViews`: `mm` / `addmm` (a linear layer's `x @ w.t()`) have contiguous
/// outputs eagerly and take the typed path (their meta function on the wrappers says so); an
/// element-wise operator follows its operands' layout eagerly (transposed) and takes the
/// fallback's shadow run. Geometries, and values read through the raw layout, are eager's in
/// both modes.
#[test]
fn structured_outputs_after_transposed_inputs_have_eager_geometry() {
    fn results(x: &Tensor) -> Result<Vec<Tensor>> {
        let w = x.t()?;
        let mm = x.mm(&w)?;
        let b = x.select(1, 0)?;
        let lin = switchyard_ops::op::addmm::call(
            &b,
            x,
            &w,
            switchyard_core::Scalar::Float(0.5),
            switchyard_core::Scalar::Int(2),
        )?;
        let sum = switchyard_ops::op::add_Tensor::call(&w, &w, switchyard_core::Scalar::Int(1))?;
        Ok(vec![
            mm.as_strided_with(&[3], &[1], Some(2))?,
            lin.as_strided_with(&[2], &[4], Some(1))?,
            sum.as_strided_with(&[3], &[1], Some(0))?,
            mm,
            lin,
            sum,
        ])
    }
    let g = check(
        &|x, note| {
            for t in results(&x[0])? {
                note(&t);
            }
            Ok(())
        },
        &arange(12, &[3, 4]),
    );
    assert_eq!(g[3], (vec![3, 3], vec![3, 1], 0));
    assert_eq!(g[4], (vec![3, 3], vec![3, 1], 0));
    // `w + w` of the transposed view is transposed eagerly.
    assert_eq!(g[5], (vec![4, 3], vec![1, 4], 0));
    let read = |ts: Vec<Tensor>| -> Vec<Vec<f32>> {
        ts.iter()
            .map(|t| switchyard_ops::clone(t).unwrap().to_vec::<f32>().unwrap())
            .collect()
    };
    let eager = read(results(&arange(12, &[3, 4])).unwrap());
    // Row 0 of x @ x.t() for x = arange(12).view(3, 4): [14, 38, 62]; the raw read of its
    // storage from offset 2 gives [62, 38, 126].
    assert_eq!(eager[0], [62.0, 38.0, 126.0]);
    for remove in [Remove::Mutations, Remove::MutationsAndViews] {
        let got = run_functionalized(&|x| results(&x[0]), &[arange(12, &[3, 4])], remove).unwrap();
        assert_eq!(read(got), eager, "remove = {remove}");
    }
}
