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

/// A leaf that requires grad, `[1, 2]`.
fn leaf() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 2.0], &[2])
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

const LEAF: &str = "a leaf Variable that requires grad is being used in an in-place operation.";
const VIEW_OF_LEAF: &str =
    "a view of a leaf Variable that requires grad is being used in an in-place operation.";

/// Runs `change` (an in-place change of its argument or of a view of it) eagerly and inside a
/// functionalized program in both modes, on `input()`: eager's error must be `expected`, and
/// the functionalized program must get the same error from the in-place call itself (it
/// catches it and goes on, so the error is not the write-back's), with the caller's tensor
/// left as it was.
fn refused_at_the_op(
    input: &dyn Fn() -> Tensor,
    change: fn(&Tensor) -> Result<()>,
    expected: &str,
) {
    let eager = change(&input()).unwrap_err();
    assert_eq!(eager.message(), expected);
    for r in [Remove::Mutations, Remove::MutationsAndViews] {
        let x = input();
        let before = x.to_vec::<f32>().unwrap();
        let version = x.version();
        let outs = run_functionalized(
            &|x: &[Tensor]| {
                let e = change(&x[0]).unwrap_err();
                assert_eq!(e.message(), expected, "{r}");
                // Nothing changed: the program goes on with the input's old values.
                Ok(vec![switchyard_ops::mul_scalar(&x[0], 2.0)?])
            },
            &[Clone::clone(&x)],
            r,
        )
        .unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), before, "{r}");
        assert_eq!(x.version(), version, "{r}");
        let doubled: Vec<f32> = before.iter().map(|v| v * 2.0).collect();
        assert_eq!(outs[0].to_vec::<f32>().unwrap(), doubled, "{r}");
    }
}

/// In-place on a leaf that requires grad is refused at the in-place call, as eagerly, with
/// autograd's message: data changes (`add_`, out=, `copy_`) and metadata changes
/// (`transpose_`).
#[test]
fn inplace_on_a_leaf_that_requires_grad_is_refused_at_the_op() {
    refused_at_the_op(
        &leaf,
        |x| x.add_(&switchyard_ops::ones(&[2])?).map(drop),
        LEAF,
    );
    refused_at_the_op(&leaf, |x| x.mul_scalar_(3.0).map(drop), LEAF);
    refused_at_the_op(
        &leaf,
        |x| x.copy_(&switchyard_ops::zeros(&[2])?).map(drop),
        LEAF,
    );
    // out= into it: autograd refuses out= calls whose arguments require grad, before the leaf
    // check, in both (the wrapper requires grad too).
    refused_at_the_op(
        &leaf,
        |x| {
            let one = switchyard_ops::ones(&[2])?;
            switchyard_ops::add_out(&one, &one, x).map(drop)
        },
        "add(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.",
    );
    refused_at_the_op(
        &|| {
            Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])
                .unwrap()
                .requires_grad_(true)
                .unwrap()
        },
        |x| x.transpose_(0, 1).map(drop),
        LEAF,
    );
}

/// In-place on a view of such a leaf is refused with the view's message, as eagerly; so is
/// in-place on an input that is itself a view of a leaf.
#[test]
fn inplace_on_a_view_of_a_leaf_is_refused_at_the_op() {
    refused_at_the_op(
        &leaf,
        |x| x.select(0, 1)?.fill_scalar_(7.0).map(drop),
        VIEW_OF_LEAF,
    );
    refused_at_the_op(
        &leaf,
        |x| x.view(&[1, 2])?.view(&[2])?.zero_().map(drop),
        VIEW_OF_LEAF,
    );
    let view_of_leaf = || {
        let l = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        l.select(0, 1).unwrap()
    };
    refused_at_the_op(
        &view_of_leaf,
        |x| x.add_scalar_(1.0).map(drop),
        VIEW_OF_LEAF,
    );
    refused_at_the_op(
        &view_of_leaf,
        |x| x.select(0, 0)?.add_scalar_(1.0).map(drop),
        VIEW_OF_LEAF,
    );
}

/// Under `no_grad` the change is allowed, as eagerly: the leaf's data change (written back
/// without history), it stays a leaf, and its version counter moves. A detached alias
/// requires no grad and may be changed with grad mode on, as eagerly.
#[test]
fn a_leaf_may_be_changed_under_no_grad_or_through_a_detached_alias() {
    fn under_no_grad(x: &[Tensor]) -> Result<Vec<Tensor>> {
        {
            let _g = switchyard_autograd::no_grad();
            x[0].mul_scalar_(10.0)?;
            x[0].select(0, 0)?.add_scalar_(1.0)?;
        }
        Ok(vec![switchyard_ops::mul(&x[0], &x[0])?])
    }
    fn through_detach(x: &[Tensor]) -> Result<Vec<Tensor>> {
        x[0].detach()?.add_scalar_(5.0)?;
        Ok(vec![switchyard_ops::mul(&x[0], &x[0])?])
    }
    for program in [under_no_grad as Program, through_detach] {
        let eager_leaf = leaf();
        let v0 = eager_leaf.version();
        let eager_out = program(&[Clone::clone(&eager_leaf)]).unwrap();
        for r in [Remove::Mutations, Remove::MutationsAndViews] {
            let x = leaf();
            let outs = run_functionalized(&program, &[Clone::clone(&x)], r).unwrap();
            assert_eq!(
                x.to_vec::<f32>().unwrap(),
                eager_leaf.to_vec::<f32>().unwrap(),
                "{r}"
            );
            assert!(x.is_leaf() && x.requires_grad(), "{r}");
            assert_eq!(x.version() > v0, eager_leaf.version() > v0, "{r}");
            assert_eq!(
                outs[0].to_vec::<f32>().unwrap(),
                eager_out[0].to_vec::<f32>().unwrap(),
                "{r}"
            );
            // The output still leads to the leaf's gradient, as eagerly (d(x*x)/dx = 2x).
            let g = switchyard_autograd::grad(
                &[switchyard_ops::sum(&outs[0]).unwrap()],
                &[Clone::clone(&x)],
                &[],
                None,
                false,
                false,
            )
            .unwrap();
            let expected: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| 2.0 * v).collect();
            assert_eq!(
                g[0].as_ref().unwrap().to_vec::<f32>().unwrap(),
                expected,
                "{r}"
            );
        }
    }
}
