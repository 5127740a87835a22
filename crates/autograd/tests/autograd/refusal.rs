//! Which calls autograd refuses and which operators have no derivative, as PyTorch 2.15 decides
//! (messages and values checked with the reference install):
//!
//! * torchgen's `check_no_requires_grad`: a tensor argument that an operator's derivatives.yaml
//!   entry gives no formula is refused at the call when it requires grad;
//! * operators without a derivative (`resize`, scatter with `reduce=`) run, and backward
//!   through their `torch::autograd::NotImplemented` node raises the autograd fallback's
//!   RuntimeError "derivative for aten::<name> is not implemented";
//! * `set_history`: a differentiable operator whose output has an integral dtype while an
//!   input requires grad is refused ("Autograd not support dtype: Long"), unless its entry says
//!   the output is not differentiable then (`_to_copy` to an integral dtype); an in-place call
//!   keeps its integral `self`, which takes the history.

use switchyard_autograd::{AutogradTensor, no_grad};
use switchyard_core::{ErrorKind, Scalar, ScalarType, Tensor};
use switchyard_ops::op;

fn leaf(v: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn plain(v: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn longs(v: &[i64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn err_of(r: switchyard_core::Result<impl Sized>) -> (ErrorKind, String) {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => (e.kind(), e.message().to_string()),
    }
}

fn grad_fn_name(t: &Tensor) -> String {
    t.grad_fn().unwrap().unwrap().name()
}

fn not_differentiable(function: &str, argument: &str) -> (ErrorKind, String) {
    (
        ErrorKind::RuntimeError,
        format!(
            "The function '{function}' is not differentiable with respect to argument '{argument}'. This input cannot have requires_grad True."
        ),
    )
}

/// Running statistics that require grad are refused by every member of the batch-norm family,
/// named as PyTorch names them (batch_norm and instance_norm reach native_batch_norm), before
/// anything is written; without grad mode the call runs and updates them.
#[test]
fn batch_norm_refuses_running_statistics_that_require_grad() {
    let x = leaf(&[1.0, 2.0, 3.0, 5.0], &[2, 2]);
    let rm = leaf(&[0.0, 0.0], &[2]);
    let rv = plain(&[1.0, 1.0], &[2]);
    let native = not_differentiable("native_batch_norm", "running_mean");
    assert_eq!(
        err_of(op::native_batch_norm::call(
            &x,
            None,
            None,
            Some(&rm),
            Some(&rv),
            true,
            0.1,
            1e-5
        )),
        native
    );
    assert_eq!(
        err_of(op::batch_norm::call(
            &x,
            None,
            None,
            Some(&rm),
            Some(&rv),
            true,
            0.1,
            1e-5,
            false
        )),
        native
    );
    let x3 = op::reshape::call(&x, &[1, 2, 2]).unwrap();
    assert_eq!(
        err_of(op::instance_norm::call(
            &x3,
            None,
            None,
            Some(&rm),
            Some(&rv),
            true,
            0.1,
            1e-5,
            false
        )),
        native
    );
    assert_eq!(
        err_of(op::_native_batch_norm_legit::call(
            &x, None, None, &rm, &rv, true, 0.1, 1e-5
        )),
        not_differentiable("_native_batch_norm_legit", "running_mean")
    );
    assert_eq!(
        err_of(op::_native_batch_norm_legit_no_training::call(
            &x, None, None, &rm, &rv, 0.1, 1e-5
        )),
        not_differentiable("_native_batch_norm_legit_no_training", "running_mean")
    );
    // The running variance is checked too, and refused alone.
    let rm_plain = plain(&[0.0, 0.0], &[2]);
    let rv_leaf = leaf(&[1.0, 1.0], &[2]);
    assert_eq!(
        err_of(op::_native_batch_norm_legit::call(
            &x, None, None, &rm_plain, &rv_leaf, true, 0.1, 1e-5
        )),
        not_differentiable("_native_batch_norm_legit", "running_var")
    );
    // Refused before anything ran: the statistics are untouched.
    assert_eq!(rm.to_vec::<f32>().unwrap(), [0.0, 0.0]);
    assert_eq!(rm_plain.to_vec::<f32>().unwrap(), [0.0, 0.0]);
    // Without grad mode the call runs: momentum 0.5 of the batch means (2, 3.5).
    {
        let _g = no_grad();
        op::native_batch_norm::call(&x, None, None, Some(&rm), Some(&rv), true, 0.5, 1e-5).unwrap();
    }
    assert_eq!(rm.to_vec::<f32>().unwrap(), [1.0, 1.75]);
}

/// nll_loss's class weight has no formula: a weight that requires grad is refused even when
/// the input does not; a plain weight with an input that requires grad differentiates.
#[test]
fn nll_loss_refuses_a_weight_that_requires_grad() {
    let x = plain(&[1.0, 2.0, 3.0, 5.0], &[2, 2]);
    let t = longs(&[0, 1], &[2]);
    let w = leaf(&[1.0, 2.0], &[2]);
    assert_eq!(
        err_of(op::nll_loss_forward::call(&x, &t, Some(&w), 1, -100)),
        not_differentiable("nll_loss_forward", "weight")
    );
    assert_eq!(
        err_of(op::nll_loss::call(&x, &t, Some(&w), 1, -100)),
        not_differentiable("nll_loss_forward", "weight")
    );
    let xl = leaf(&[1.0, 2.0, 3.0, 5.0], &[2, 2]);
    let wp = plain(&[1.0, 2.0], &[2]);
    let (out, _) = op::nll_loss_forward::call(&xl, &t, Some(&wp), 1, -100).unwrap();
    // -(1·1 + 2·5) / (1 + 2)
    let v = out.to_vec::<f32>().unwrap()[0];
    assert!((v - (-11.0 / 3.0)).abs() < 1e-6, "{v}");
    assert_eq!(grad_fn_name(&out), "NllLossBackward0");
}

/// Operators without a derivative in PyTorch run and record the fallback's node; backward
/// through it raises its RuntimeError, named without the overload.
#[test]
fn operators_without_a_derivative_raise_at_backward() {
    let idx = longs(&[0, 1, 1, 0], &[2, 2]);
    let check = |r: Tensor, name: &str| {
        assert_eq!(grad_fn_name(&r), "torch::autograd::NotImplemented");
        let loss = op::sum::call(&r, None).unwrap();
        assert_eq!(
            err_of(loss.backward()),
            (
                ErrorKind::RuntimeError,
                format!("derivative for {name} is not implemented")
            )
        );
    };
    let x = leaf(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let src = leaf(&[10.0, 20.0, 30.0, 40.0], &[2, 2]);
    let r = op::scatter_reduce::call(&x, 1, &idx, &src, "add").unwrap();
    // [[1+10, 2+20, 3], [4+40, 5+30, 6]]
    assert_eq!(
        r.to_vec::<f32>().unwrap(),
        [11.0, 22.0, 3.0, 44.0, 35.0, 6.0]
    );
    check(r, "aten::scatter");
    let y = op::clone::call(&x, None).unwrap();
    let r = op::scatter__reduce::call(&y, 1, &idx, &src, "multiply").unwrap();
    assert_eq!(
        r.to_vec::<f32>().unwrap(),
        [10.0, 40.0, 3.0, 160.0, 150.0, 6.0]
    );
    check(r, "aten::scatter_");
    // The out= overload runs (no formula to refuse with) and fails at backward too.
    let out = plain(&[], &[0]);
    let r = op::scatter_reduce_out::call(&x, 1, &idx, &src, "add", &out).unwrap();
    check(r, "aten::scatter");
    let r =
        op::scatter_value_reduce_out::call(&x, 1, &idx, Scalar::Float(1.0), "add", &out).unwrap();
    check(r, "aten::scatter");
    let r = op::resize::call(&x, &[3, 2], None).unwrap();
    check(r, "aten::resize");
}

/// An integral output of a differentiable operator with an input that requires grad is
/// refused; an entry's condition (`_to_copy`'s dtype, functional `copy`'s self) leaves it
/// without history instead; an in-place call gives its integral `self` the history.
#[test]
fn integral_outputs_of_differentiable_operators() {
    let p = leaf(&[0.0, 1.0, 1.0, 0.0], &[2, 2]);
    let int_self = longs(&[0, 0, 0, 0], &[2, 2]);
    assert_eq!(
        err_of(op::bernoulli_Tensor::call(&int_self, &p, None)),
        (
            ErrorKind::RuntimeError,
            "Autograd not support dtype: Long".to_string()
        )
    );
    let x = leaf(&[1.5, 2.5], &[2]);
    assert_eq!(
        err_of(op::sum::call(&x, Some(ScalarType::Long))),
        (
            ErrorKind::RuntimeError,
            "Autograd not support dtype: Long".to_string()
        )
    );
    let y = op::_to_copy::call(&x, Some(ScalarType::Int), None, None, None, false, None).unwrap();
    assert_eq!(y.to_vec::<i32>().unwrap(), [1, 2]);
    assert!(!y.requires_grad());
    let c = op::copy::call(&longs(&[7, 8], &[2]), &x, false).unwrap();
    assert_eq!(c.to_vec::<i64>().unwrap(), [1, 2]);
    assert!(!c.requires_grad());
    // In place: probabilities 0 and 1 give a known draw; `self` stays Long and takes the node.
    let s = longs(&[5, 5, 5, 5], &[2, 2]);
    let r = op::bernoulli__Tensor::call(&s, &p, None).unwrap();
    assert_eq!(s.to_vec::<i64>().unwrap(), [0, 1, 1, 0]);
    assert!(r.requires_grad() && s.requires_grad());
    assert_eq!(grad_fn_name(&s), "BernoulliBackward1");
    // Using it in a differentiable operator is then refused, as in PyTorch.
    assert_eq!(
        err_of(op::mul_Scalar::call(&s, Scalar::Int(2))),
        (
            ErrorKind::RuntimeError,
            "Autograd not support dtype: Long".to_string()
        )
    );
}
