//! PyTorch's autograd behaviour (test_autograd.py's cases, re-expressed): version checks,
//! retain_graph, accumulation, hooks, grad modes, inference mode, views with in-place changes,
//! leaf and multi-output view errors, higher-order gradients, `grad` with `allow_unused`.
//! Expected messages and values are PyTorch 2.15's (checked with the reference install).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use switchyard_autograd::{
    AutogradTensor, backward, enable_grad, grad, inference_mode, no_grad, set_grad_enabled,
};
use switchyard_core::{Scalar, Tensor};
use switchyard_ops::op;

fn leaf(v: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn vals(t: &Tensor) -> Vec<f32> {
    op::contiguous::call(t, switchyard_core::MemoryFormat::Contiguous)
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
}

fn sum(t: &Tensor) -> Tensor {
    op::sum::call(t, None).unwrap()
}

fn mul_s(t: &Tensor, s: f64) -> Tensor {
    op::mul_Scalar::call(t, Scalar::Float(s)).unwrap()
}

fn err_of(r: switchyard_core::Result<impl Sized>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.message().to_string(),
    }
}

#[test]
fn saved_output_modified_in_place_is_refused() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = op::exp::call(&x).unwrap();
    op::add__Scalar::call(&y, 1.into(), 1.into()).unwrap();
    assert_eq!(
        err_of(sum(&y).backward()),
        "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3]], which is output 0 of Exp, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    );
}

#[test]
fn saved_input_modified_in_place_is_refused() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let a = mul_s(&x, 2.0);
    let b = op::mul_Tensor::call(&a, &a).unwrap();
    op::add__Scalar::call(&a, 1.into(), 1.into()).unwrap();
    let msg = err_of(sum(&b).backward());
    // The saved input's own history names the node now (the in-place add rewrote it).
    assert!(
        msg.contains("[torch.FloatTensor [3]], which is output 0 of Add, is at version 1; expected version 0 instead."),
        "{msg}"
    );
}

#[test]
fn backward_twice_needs_retain_graph_and_accumulates() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    let y = sum(&op::mul_Tensor::call(&x, &x).unwrap());
    y.backward_with(None, Some(true), false, &[]).unwrap();
    y.backward_with(None, None, false, &[]).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![4.0, 8.0, 12.0]);
    assert_eq!(
        err_of(y.backward()),
        "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward."
    );
}

#[test]
fn an_input_used_twice_gets_the_sum() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    // y = x*x + 3x: dy/dx = 2x + 3.
    let y = op::add_Tensor::call(&op::mul_Tensor::call(&x, &x).unwrap(), &x, 3.into()).unwrap();
    sum(&y).backward().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![5.0, 7.0, 9.0]);
}

#[test]
fn hooks_see_and_replace_gradients() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = mul_s(&x, 3.0);
    let seen = Arc::new(AtomicUsize::new(0));
    let s2 = seen.clone();
    let h = y
        .register_hook(move |g| {
            s2.fetch_add(1, Ordering::SeqCst);
            Ok(Some(op::mul_Scalar::call(g, 10.into())?))
        })
        .unwrap();
    sum(&y).backward_with(None, Some(true), false, &[]).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![30.0, 30.0]);
    assert!(h.remove());
    x.set_grad(None).unwrap();
    sum(&y).backward().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![3.0, 3.0]);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    // A leaf's hook runs before accumulation; the post-accumulate hook after, seeing .grad.
    let z = leaf(&[1.0], &[1]);
    z.register_hook(|g| Ok(Some(op::add_Scalar::call(g, 1.into(), 1.into())?)))
        .unwrap();
    let after = Arc::new(std::sync::Mutex::new(Vec::new()));
    let a2 = after.clone();
    z.register_post_accumulate_grad_hook(move |t| {
        a2.lock().unwrap().push(vals(&t.grad().unwrap())[0]);
        Ok(())
    })
    .unwrap();
    sum(&mul_s(&z, 2.0)).backward().unwrap();
    assert_eq!(vals(&z.grad().unwrap()), vec![3.0]);
    assert_eq!(*after.lock().unwrap(), vec![3.0]);
    assert_eq!(
        err_of(
            Tensor::from_vec(vec![1.0f32], &[1])
                .unwrap()
                .register_hook(|_| Ok(None))
        ),
        "cannot register a hook on a tensor that doesn't require gradient"
    );
    assert_eq!(
        err_of(y.register_post_accumulate_grad_hook(|_| Ok(()))),
        "post accumulate grad hooks cannot be registered on non-leaf tensors"
    );
}

/// Hooks run in the pass's grad mode (PyTorch 2.15: a hook computing `a * 2` on a leaf that
/// requires grad gets a result without history, unless the pass has `create_graph`).
#[test]
fn hooks_run_in_the_pass_grad_mode() {
    for create_graph in [false, true] {
        let a = leaf(&[1.0, 2.0], &[2]);
        let b = mul_s(&a, 2.0);
        let recorded = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (r2, a2) = (recorded.clone(), a.clone());
        b.register_hook(move |_| {
            r2.lock().unwrap().push(mul_s(&a2, 2.0).requires_grad_now());
            Ok(None)
        })
        .unwrap();
        sum(&b)
            .backward_with(None, None, create_graph, &[])
            .unwrap();
        assert_eq!(*recorded.lock().unwrap(), vec![create_graph]);
    }
}

#[test]
fn retain_grad_keeps_a_non_leaf_gradient() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = mul_s(&x, 2.0);
    y.retain_grad().unwrap();
    assert!(y.retains_grad());
    sum(&op::mul_Tensor::call(&y, &y).unwrap())
        .backward()
        .unwrap();
    assert_eq!(vals(&y.grad().unwrap()), vec![4.0, 8.0]);
    assert_eq!(vals(&x.grad().unwrap()), vec![8.0, 16.0]);
    assert_eq!(
        err_of(Tensor::from_vec(vec![1.0f32], &[1]).unwrap().retain_grad()),
        "can't retain_grad on Tensor that has requires_grad=False"
    );
}

#[test]
fn grad_modes() {
    let x = leaf(&[1.0, 2.0], &[2]);
    {
        let _g = no_grad();
        let y = mul_s(&x, 2.0);
        assert!(!y.requires_grad() && y.grad_fn().unwrap().is_none());
        {
            let _e = enable_grad();
            assert!(mul_s(&x, 2.0).requires_grad());
        }
        let _s = set_grad_enabled(true);
        assert!(mul_s(&x, 2.0).requires_grad());
    }
    assert!(mul_s(&x, 2.0).requires_grad());
    // Integer and bool outputs never require grad.
    assert!(!op::argmax::call(&x, None, false).unwrap().requires_grad());
    assert!(!op::gt_Scalar::call(&x, 1.into()).unwrap().requires_grad());
}

#[test]
fn inference_mode_tensors() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let t = {
        let _i = inference_mode(true);
        let t = Tensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap();
        let u = mul_s(&t, 2.0);
        assert!(u.is_inference() && !u.requires_grad());
        // Inside inference mode, recording is off even for tensors that require grad.
        assert!(!mul_s(&x, 2.0).requires_grad());
        u
    };
    assert_eq!(
        err_of(op::add__Scalar::call(&t, 1.into(), 1.into())),
        "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details."
    );
    assert_eq!(
        err_of(op::mul_Tensor::call(&x, &t)),
        "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`."
    );
    assert_eq!(
        err_of(t.requires_grad_(true)),
        "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
    );
}

#[test]
fn in_place_on_a_view_rewrites_the_base_history() {
    let l = leaf(&[0.0; 6], &[2, 3]);
    let c = op::clone::call(&l, None).unwrap();
    let v = op::select_int::call(&c, 0, 0).unwrap();
    assert!(v.is_view() && v.base().unwrap().is_same(&c));
    op::mul__Scalar::call(&v, 2.into()).unwrap();
    assert_eq!(
        c.grad_fn().unwrap().unwrap().name(),
        "torch::autograd::CopySlices"
    );
    assert_eq!(v.grad_fn().unwrap().unwrap().name(), "AsStridedBackward0");
    let next = c.grad_fn().unwrap().unwrap();
    let names: Vec<String> = next
        .core()
        .next_edges()
        .iter()
        .map(|e| e.function.as_ref().map_or("None".into(), |f| f.name()))
        .collect();
    // `mul_.Scalar` has one differentiable input (Python's `v.mul_(2)` calls `mul_.Tensor`
    // with a wrapped number instead, which adds a `None` edge).
    assert_eq!(names, ["CloneBackward0"]);
    sum(&c).backward().unwrap();
    assert_eq!(vals(&l.grad().unwrap()), vec![2.0, 2.0, 2.0, 1.0, 1.0, 1.0]);
}

#[test]
fn in_place_on_a_view_of_a_tensor_that_does_not_require_grad() {
    // The base starts requiring grad through the view; another view made before sees it.
    let base = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let first = op::slice_Tensor::call(&base, 0, Some(0), Some(2), 1).unwrap();
    let other = op::slice_Tensor::call(&base, 0, Some(1), Some(4), 1).unwrap();
    let w = leaf(&[10.0, 20.0], &[2]);
    op::mul__Tensor::call(&first, &w).unwrap();
    assert!(base.requires_grad() && !base.is_leaf());
    assert!(other.requires_grad_now());
    sum(&other).backward().unwrap();
    // other = base[1:4]; only base[1] = 2 * w[1] depends on w.
    assert_eq!(vals(&w.grad().unwrap()), vec![0.0, 2.0]);
}

#[test]
fn in_place_errors() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    assert_eq!(
        err_of(op::add__Scalar::call(&x, 1.into(), 1.into())),
        "a leaf Variable that requires grad is being used in an in-place operation."
    );
    let parts = op::split_Tensor::call(&op::clone::call(&x, None).unwrap(), 2, 0).unwrap();
    assert_eq!(
        err_of(op::mul__Scalar::call(&parts[0], 2.into())),
        "Output 0 of Split is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one."
    );
    let w = leaf(&[1.0, 1.0, 1.0], &[3]);
    let v = {
        let _g = no_grad();
        op::slice_Tensor::call(&w, 0, Some(0), Some(2), 1).unwrap()
    };
    assert!(v.requires_grad_now() && v.grad_fn().unwrap().is_none());
    assert_eq!(
        err_of(op::mul__Scalar::call(&v, 2.into())),
        "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked)."
    );
    assert_eq!(
        err_of(op::detach_::call(
            &op::slice_Tensor::call(&x, 0, Some(0), Some(2), 1).unwrap()
        )),
        "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
    );
    let out = Tensor::from_vec(vec![0.0f32; 3], &[3]).unwrap();
    assert_eq!(
        err_of(op::add_out::call(&x, &x, 1.into(), &out)),
        "add(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
    );
    assert_eq!(
        err_of(op::resize_::call(&x, &[4], None)),
        "cannot resize variables that require grad"
    );
}

#[test]
fn higher_order_gradients() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = op::mul_Tensor::call(&op::mul_Tensor::call(&x, &x).unwrap(), &x).unwrap();
    let g = grad(&[sum(&y)], &[x.clone()], &[], None, true, false).unwrap();
    let g = g[0].clone().unwrap();
    assert_eq!(vals(&g), vec![3.0, 12.0]);
    assert!(g.requires_grad());
    let gg = grad(&[sum(&g)], &[x.clone()], &[], None, false, false).unwrap();
    assert_eq!(vals(gg[0].as_ref().unwrap()), vec![6.0, 12.0]);
}

#[test]
fn grad_and_allow_unused() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let z = leaf(&[5.0], &[1]);
    let y = sum(&op::mul_Tensor::call(&x, &x).unwrap());
    assert_eq!(
        err_of(grad(
            &[y.clone()],
            &[x.clone(), z.clone()],
            &[],
            Some(true),
            false,
            false
        )),
        "The differentiated Tensor at index 1 appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
    );
    let g = grad(
        &[y.clone()],
        &[x.clone(), z.clone()],
        &[],
        Some(true),
        false,
        true,
    )
    .unwrap();
    assert_eq!(vals(g[0].as_ref().unwrap()), vec![2.0, 4.0]);
    assert!(g[1].is_none());
    assert!(x.grad().is_none(), "grad() does not accumulate");
    assert_eq!(
        err_of(grad(
            &[y],
            &[Tensor::from_vec(vec![1.0f32], &[1]).unwrap()],
            &[],
            None,
            false,
            true
        )),
        "One of the differentiated Tensors does not require grad"
    );
}

#[test]
fn backward_argument_errors() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    assert_eq!(
        err_of(mul_s(&x, 2.0).backward()),
        "grad can be implicitly created only for scalar outputs"
    );
    assert_eq!(
        err_of(mul_s(&x, 2.0).backward_with(
            Some(&Tensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap()),
            None,
            false,
            &[]
        )),
        "Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and output[0] has a shape of torch.Size([3])."
    );
    assert_eq!(
        err_of(Tensor::from_vec(vec![1.0f32], &[1]).unwrap().backward()),
        "element 0 of tensors does not require grad and does not have a grad_fn"
    );
    assert_eq!(
        err_of(mul_s(&x, 2.0).requires_grad_(false)),
        "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
    );
    assert_eq!(
        err_of(
            Tensor::from_vec(vec![1i64], &[1])
                .unwrap()
                .requires_grad_(true)
        ),
        "only Tensors of floating point dtype can require gradients"
    );
    assert_eq!(
        err_of(x.set_grad(Some(Tensor::from_vec(vec![1.0f32; 2], &[2]).unwrap()))),
        "attempting to assign a gradient of size '[2]' to a tensor of size '[3]'. Please ensure that the gradient and the tensor are the same size"
    );
    // backward(inputs=...) accumulates only into the inputs named.
    let a = leaf(&[1.0], &[1]);
    let b = leaf(&[2.0], &[1]);
    let y = sum(&op::mul_Tensor::call(&a, &b).unwrap());
    backward(&[y], &[], None, false, &[a.clone()]).unwrap();
    assert_eq!(vals(&a.grad().unwrap()), vec![2.0]);
    assert!(b.grad().is_none());
}

#[test]
fn detach_shares_data_and_cuts_the_graph() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let y = mul_s(&x, 2.0);
    let d = op::detach::call(&y).unwrap();
    assert!(!d.requires_grad() && d.grad_fn().unwrap().is_none() && !d.is_view());
    assert!(d.is_alias_of(&y));
    op::add__Scalar::call(&d, 1.into(), 1.into()).unwrap();
    assert_eq!(y.version(), 1, "detach shares the version counter");
    let z = mul_s(&x, 3.0);
    op::detach_::call(&z).unwrap();
    assert!(!z.requires_grad() && z.is_leaf());
}

#[test]
fn repr_shows_grad_fn() {
    let x = leaf(&[1.0, 2.0, 3.0], &[3]);
    // `aten::mul.Scalar`'s node (Python's `x * 2` calls `mul.Tensor`: MulBackward0).
    assert_eq!(
        format!("{}", mul_s(&x, 2.0)),
        "tensor([2., 4., 6.], grad_fn=<MulBackward1>)"
    );
    assert_eq!(
        format!("{}", op::mul_Tensor::call(&x, &x).unwrap()),
        "tensor([1., 4., 9.], grad_fn=<MulBackward0>)"
    );
    assert_eq!(format!("{x}"), "tensor([1., 2., 3.], requires_grad=True)");
}

#[test]
fn separate_graphs_on_several_threads() {
    let handles: Vec<_> = (0..4)
        .map(|k| {
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let x = leaf(&[k as f32, 1.0], &[2]);
                    let y = sum(&op::mul_Tensor::call(&x, &x).unwrap());
                    y.backward().unwrap();
                    assert_eq!(vals(&x.grad().unwrap()), vec![2.0 * k as f32, 2.0]);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn shared_leaf_accumulates_from_several_threads() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let x = x.clone();
            std::thread::spawn(move || {
                for _ in 0..25 {
                    sum(&mul_s(&x, 1.0)).backward().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(vals(&x.grad().unwrap()), vec![100.0, 100.0]);
}
