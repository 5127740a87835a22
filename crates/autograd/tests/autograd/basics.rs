use switchyard_autograd::{AutogradTensor, backward, grad};
use switchyard_core::Tensor;
use switchyard_ops::op;

fn t(v: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

#[test]
fn mul_sum_backward() {
    let x = t(&[1.0, 2.0, 3.0], &[3]).requires_grad_(true).unwrap();
    let y = op::mul_Tensor::call(&x, &x).unwrap();
    assert_eq!(y.grad_fn().unwrap().unwrap().name(), "MulBackward0");
    let s = op::sum::call(&y, None).unwrap();
    s.backward().unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![2.0, 4.0, 6.0]
    );
}

#[test]
fn mm_grad() {
    let a = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2])
        .requires_grad_(true)
        .unwrap();
    let b = t(&[5.0, 6.0, 7.0, 8.0], &[2, 2])
        .requires_grad_(true)
        .unwrap();
    let c = op::mm::call(&a, &b).unwrap();
    let s = op::sum::call(&c, None).unwrap();
    let g = grad(&[s], &[a.clone(), b.clone()], &[], None, false, false).unwrap();
    // d(sum(A B))/dA = 1 Bᵀ: rows of B summed; d/dB = Aᵀ 1.
    assert_eq!(
        g[0].as_ref().unwrap().to_vec::<f32>().unwrap(),
        vec![11.0, 15.0, 11.0, 15.0]
    );
    assert_eq!(
        g[1].as_ref().unwrap().to_vec::<f32>().unwrap(),
        vec![4.0, 4.0, 6.0, 6.0]
    );
    assert!(a.grad().is_none());
    let _ = backward;
}

#[test]
fn gradcheck_mul_mm() {
    use switchyard_autograd::{GradcheckOptions, gradcheck};
    let d = |v: &[f64], s: &[i64]| {
        Tensor::from_vec(v.to_vec(), s)
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };
    let a = d(&[1.0, -2.0, 3.0, 0.5, 0.25, 2.0], &[2, 3]);
    let b = d(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], &[3, 2]);
    let f = |x: &[Tensor]| -> switchyard_core::Result<Vec<Tensor>> {
        let p = op::mm::call(&x[0], &x[1])?;
        Ok(vec![op::mul_Tensor::call(&p, &p)?])
    };
    gradcheck(&f, &[a.clone(), b.clone()], GradcheckOptions::default()).unwrap();
    // A wrong gradient is caught: a hook doubles the gradient flowing into the product.
    let wrong = |x: &[Tensor]| -> switchyard_core::Result<Vec<Tensor>> {
        let p = op::mm::call(&x[0], &x[1])?;
        if p.requires_grad() {
            p.register_hook(|g| Ok(Some(op::mul_Scalar::call(g, 2.into())?)))?;
        }
        Ok(vec![op::mul_Tensor::call(&p, &p)?])
    };
    let err = gradcheck(&wrong, &[a, b], GradcheckOptions::default()).unwrap_err();
    assert!(err.message().starts_with("Jacobian mismatch"), "{err}");
}

/// gradgradcheck differentiates a backward pass: its finite differences run that pass (which
/// needs grad mode and inputs that require grad) on perturbed inputs. A wrong second
/// derivative is caught.
#[test]
fn gradgradcheck_checks_second_derivatives() {
    use switchyard_autograd::{GradcheckOptions, gradgradcheck};
    let a = Tensor::from_vec(vec![1.0f64, -2.0, 3.0, 0.5], &[2, 2])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let f = |x: &[Tensor]| -> switchyard_core::Result<Vec<Tensor>> {
        Ok(vec![op::mul_Tensor::call(
            &x[0],
            &op::mm::call(&x[0], &x[0])?,
        )?])
    };
    gradgradcheck(&f, std::slice::from_ref(&a), GradcheckOptions::default()).unwrap();
    // A hook that detaches the incoming gradient: first-order values are right, but the
    // backward no longer depends on the gradient it was given.
    let wrong = |x: &[Tensor]| -> switchyard_core::Result<Vec<Tensor>> {
        let y = op::mul_Tensor::call(&x[0], &x[0])?;
        if y.requires_grad() {
            y.register_hook(|g| Ok(Some(op::detach::call(g)?)))?;
        }
        Ok(vec![y])
    };
    let err = gradgradcheck(&wrong, &[a], GradcheckOptions::default()).unwrap_err();
    assert!(err.message().starts_with("Jacobian mismatch"), "{err}");
}

/// An output whose elements share memory (an expand) gets contiguous one-hot gradients.
#[test]
fn gradcheck_handles_expanded_outputs() {
    use switchyard_autograd::{GradcheckOptions, gradcheck};
    let a = Tensor::from_vec(vec![1.0f64, -2.0, 3.0], &[3, 1])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let f = |x: &[Tensor]| -> switchyard_core::Result<Vec<Tensor>> {
        Ok(vec![op::expand::call(&x[0], &[3, 4], false)?])
    };
    gradcheck(&f, &[a], GradcheckOptions::default()).unwrap();
}

/// Composite views (`reshape`, `flatten`, `movedim`, `narrow`) are differentiated through
/// the operators they call: their results have history.
#[test]
fn composite_views_record_their_constituent_operators() {
    let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])
        .requires_grad_(true)
        .unwrap();
    let r = op::reshape::call(&a, &[3, 2]).unwrap();
    assert_eq!(r.grad_fn().unwrap().unwrap().name(), "ViewBackward0");
    let m = op::movedim_int::call(&a, 0, 1).unwrap();
    assert_eq!(m.grad_fn().unwrap().unwrap().name(), "PermuteBackward0");
    let n = op::narrow::call(&a, 1, 1, 2).unwrap();
    assert_eq!(n.grad_fn().unwrap().unwrap().name(), "SliceBackward0");
    let loss = op::sum::call(
        &op::mul_Tensor::call(
            &op::flatten_using_ints::call(&n, 0, -1).unwrap(),
            &op::reshape::call(&n, &[-1]).unwrap(),
        )
        .unwrap(),
        None,
    )
    .unwrap();
    loss.backward().unwrap();
    assert_eq!(
        a.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![0.0, 4.0, 6.0, 0.0, 10.0, 12.0]
    );
}

/// A leaf keeps one accumulator across graphs (no allocation per operation on a parameter),
/// and the accumulator does not keep the leaf alive: only the graph's edges do.
#[test]
fn leaf_accumulator_is_kept_without_holding_the_leaf() {
    use switchyard_autograd::node_id;
    let x = t(&[1.0, 2.0], &[2]).requires_grad_(true).unwrap();
    let b = t(&[10.0, 20.0], &[2]);
    assert_eq!(x.handle_count(), 1);
    let y1 = op::add_Tensor::call(&x, &b, 1.into()).unwrap();
    // The user's handle and the edge from `y1`'s node.
    assert_eq!(x.handle_count(), 2);
    let acc1 = y1.grad_fn().unwrap().unwrap().core().next_edges()[0]
        .function
        .clone()
        .unwrap();
    assert_eq!(acc1.name(), "torch::autograd::AccumulateGrad");
    drop(y1);
    assert_eq!(
        x.handle_count(),
        1,
        "the accumulator must not hold its leaf"
    );
    let y2 = op::mul_Tensor::call(&x, &b).unwrap();
    let acc2 = y2.grad_fn().unwrap().unwrap().core().next_edges()[0]
        .function
        .clone()
        .unwrap();
    assert_eq!(node_id(&acc1), node_id(&acc2));
    // Accumulation through the kept accumulator still reaches the leaf: d(sum(x*b))/dx = b.
    op::sum::call(&y2, None).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![10.0, 20.0]);
    drop((y2, acc1, acc2));
    assert_eq!(x.handle_count(), 1);
}

/// A leaf resized without autograd gets an accumulator of its new shape, so a gradient of
/// the new shape is accepted.
#[test]
fn resized_leaf_gets_a_fitting_accumulator() {
    let x = t(&[1.0, 2.0], &[2]).requires_grad_(true).unwrap();
    let y = op::mul_Tensor::call(&x, &x).unwrap();
    op::sum::call(&y, None).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    {
        let _no_grad = switchyard_autograd::no_grad();
        op::unsqueeze_::call(&x, 0).unwrap();
    }
    x.set_grad(None).unwrap();
    assert_eq!(x.sizes().to_vec(), vec![1, 2]);
    let y = op::mul_Tensor::call(&x, &x).unwrap();
    op::sum::call(&y, None).unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().sizes().to_vec(), vec![1, 2]);
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
}

/// A former leaf that gets a history (in-place op after `requires_grad_(false)`) sends its
/// gradient to that history, not to the accumulator it had as a leaf.
#[test]
fn former_leaf_with_history_uses_its_grad_fn() {
    let x = t(&[1.0, 2.0], &[2]).requires_grad_(true).unwrap();
    let _first_graph = op::mul_Tensor::call(&x, &x).unwrap();
    x.set_requires_grad(false).unwrap();
    let w = t(&[3.0, 4.0], &[2]).requires_grad_(true).unwrap();
    op::mul__Tensor::call(&x, &w).unwrap();
    assert_eq!(x.grad_fn().unwrap().unwrap().name(), "MulBackward0");
    // y = x * 5 with x = x0 * w: dy/dw = 5 * x0.
    let y = op::mul_Tensor::call(&x, &t(&[5.0, 5.0], &[2])).unwrap();
    op::sum::call(&y, None).unwrap().backward().unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f32>().unwrap(), vec![5.0, 10.0]);
    assert!(x.grad().is_none());
}
