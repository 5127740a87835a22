//! Autograd composition (plan §7.3): gradients through `functionalize(f)` equal eager's.

use switchyard_autograd::AutogradTensor;
use switchyard_core::{Result, Tensor};
use switchyard_functionalize::{Remove, run_functionalized};
use switchyard_ops::TensorOps;

type Program = fn(&[Tensor]) -> Result<Vec<Tensor>>;

/// F10-style: an in-place add on the diagonal of a clone (CopySlices), then a product.
fn diagonal_of_clone(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let c = switchyard_ops::clone(&x[0])?;
    let d = switchyard_ops::diagonal(&c)?;
    d.add_(&switchyard_ops::ones(&[2])?)?;
    Ok(vec![switchyard_ops::mul(&c, &c)?])
}

/// In-place on a non-view (history rebased), views read, two inputs, two outputs.
fn inplace_and_views(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let c = switchyard_ops::mul(&x[0], &x[1])?;
    c.mul_(&switchyard_ops::full(&[2, 2], 3.0)?)?;
    let t = c.transpose(0, 1)?;
    let v = t.reshape(&[4])?;
    let e = switchyard_ops::exp(&v)?;
    Ok(vec![switchyard_ops::mul(&e, &v)?, switchyard_ops::sum(&t)?])
}

/// F12/F18-style: in-place on a slice of a transposed view of a product, then reads
/// through other views of the same base.
fn slice_of_view_chain(x: &[Tensor]) -> Result<Vec<Tensor>> {
    let c = switchyard_ops::mul(&x[0], &x[1])?;
    let t = c.view(&[4])?.view(&[2, 2])?.transpose(1, 0)?;
    // Slices, not `split`: autograd refuses in-place on outputs of multi-view functions.
    let first = switchyard_ops::narrow(&t, 0, 0, 1)?;
    first.mul_(&switchyard_ops::full(&[1, 2], 2.0)?)?;
    let s = switchyard_ops::sin(&switchyard_ops::narrow(&t, 0, 1, 1)?)?;
    Ok(vec![switchyard_ops::mul(&c, &c)?, s, c.select(0, 1)?])
}

/// The gradients of the sum of `program`'s outputs with respect to its inputs, eagerly or
/// functionalized with `mode`.
fn grads(program: Program, mode: Option<Remove>) -> Result<Vec<Vec<f32>>> {
    let a = Tensor::from_vec(vec![0.1f32, 0.2, 0.3, 0.4], &[2, 2])?.requires_grad_(true)?;
    let b = Tensor::from_vec(vec![1.0f32, -1.0, 0.5, 2.0], &[2, 2])?.requires_grad_(true)?;
    let inputs = [a, b];
    let outs = match mode {
        None => program(&inputs)?,
        Some(r) => run_functionalized(&program, &inputs, r)?,
    };
    let mut loss = switchyard_ops::sum(&outs[0])?;
    for o in &outs[1..] {
        loss = switchyard_ops::add(&loss, &switchyard_ops::sum(o)?)?;
    }
    let g = switchyard_autograd::grad(&[loss], &inputs, &[], None, false, true)?;
    g.iter()
        .map(|g| g.as_ref().map_or(Ok(vec![]), |g| g.to_vec::<f32>()))
        .collect()
}

fn check(program: Program) {
    let eager = grads(program, None).unwrap();
    for r in [Remove::Mutations, Remove::MutationsAndViews] {
        assert_eq!(
            grads(program, Some(r)).map_err(|e| e.to_string()),
            Ok(eager.clone()),
            "{r}"
        );
    }
}

#[test]
fn gradients_through_inplace_on_non_views_and_views_match_eager() {
    check(inplace_and_views);
}

#[test]
fn gradients_through_inplace_on_a_view_match_eager() {
    check(diagonal_of_clone);
}

#[test]
fn gradients_through_a_mutated_slice_of_a_view_chain_match_eager() {
    check(slice_of_view_chain);
}

/// In-place on a leaf that requires grad is refused as eagerly, with autograd's message (the
/// wrapper has a history, so the refusal comes when the mutation is written back to the leaf).
#[test]
fn inplace_on_a_leaf_that_requires_grad_is_refused_as_eagerly() {
    fn add_one_in_place(x: &[Tensor]) -> Result<Vec<Tensor>> {
        x[0].add_(&switchyard_ops::ones(&[2])?)?;
        Ok(vec![])
    }
    let leaf = || {
        Tensor::from_vec(vec![1.0f32, 2.0], &[2])
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    let eager = add_one_in_place(&[leaf()]).unwrap_err().to_string();
    assert!(
        eager
            .contains("a leaf Variable that requires grad is being used in an in-place operation."),
        "{eager}"
    );
    for r in [Remove::Mutations, Remove::MutationsAndViews] {
        let x = leaf();
        let err = run_functionalized(&add_one_in_place, &[Clone::clone(&x)], r)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "a leaf Variable that requires grad is being used in an in-place operation."
            ),
            "{r}: {err}"
        );
        // Nothing was written to the leaf.
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    }
}
