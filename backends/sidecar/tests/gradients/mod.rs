//! Gradients on the sidecar: its own autograd kernel (`relu` at `AutogradPrivateUse1`, with
//! its own backward node), the generated Autograd kernels over operators that run through the
//! CPU fallback, and a chain mixing its kernels with fallback operators, compared with the
//! same computation on the CPU.

use switchyard_autograd::AutogradTensor;
use switchyard_core::{ScalarType, Tensor};
use switchyard_ops::{TensorOps, op};
use switchyard_sidecar::autograd::SidecarReluBackward;
use switchyard_sidecar::{counters, device, fallback_count, fallback_counts, to_cpu, to_sidecar};

use super::{f32s, host_f32, serial};

fn grad_fn_name(t: &Tensor) -> String {
    t.grad_fn().unwrap().map(|f| f.name()).unwrap_or_default()
}

/// `x.grad` on the host, after checking that it lives on the sidecar.
fn sidecar_grad(x: &Tensor) -> Vec<f32> {
    let g = x.grad().expect("a gradient");
    assert_eq!(g.device(), device(), "the gradient lives on the sidecar");
    assert_eq!(g.sizes(), x.sizes());
    host_f32(&g)
}

fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * w.abs().max(1.0),
            "{what}[{i}]: {g} vs {w} ({got:?} vs {want:?})"
        );
    }
}

/// (a) The sidecar's autograd kernel runs for a float32 sidecar tensor: its node is the
/// output's `grad_fn`, the forward and the backward run on the device (no fallback), and the
/// gradient is the upstream gradient where `x > 0`, zero elsewhere.
#[test]
fn relu_records_the_sidecars_own_node() {
    let _g = serial();
    let xs = [1.0f32, -2.0, 3.0, -0.5, 0.0, 4.0];
    let x = to_sidecar(&f32s(&xs, &[2, 3]))
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let upstream = [0.5f32, 1.0, 1.5, 2.0, 2.5, 3.0];
    let gy = to_sidecar(&f32s(&upstream, &[2, 3])).unwrap();
    let (c0, f0) = (counters(), fallback_counts());

    let y = x.relu().unwrap();
    assert_eq!(counters().autograd_calls - c0.autograd_calls, 1);
    assert_eq!(grad_fn_name(&y), "SidecarReluBackward");
    let node = y.grad_fn().unwrap().unwrap();
    assert!(
        node.as_any()
            .downcast_ref::<SidecarReluBackward>()
            .is_some()
    );
    assert_eq!(node.core().next_edges().len(), 1);
    assert!(y.requires_grad() && !y.is_leaf());
    assert_eq!(y.device(), device());
    assert_eq!(host_f32(&y), [1.0, 0.0, 3.0, 0.0, 0.0, 4.0]);

    y.backward_with(Some(&gy), None, false, &[]).unwrap();
    assert_eq!(counters().backward_calls - c0.backward_calls, 1);
    assert_eq!(fallback_counts(), f0, "forward and backward on the device");
    // By hand: the upstream gradient where x > 0 (relu'(0) = 0, as PyTorch's).
    let want: Vec<f32> = xs
        .iter()
        .zip(upstream)
        .map(|(x, g)| if *x > 0.0 { g } else { 0.0 })
        .collect();
    assert_eq!(sidecar_grad(&x), want);

    // With create_graph the backward is recorded through the operators (not on the raw
    // device bytes), so it can be differentiated again: d/dgy sum(relu'(x) · gy) is the mask.
    let gy = to_sidecar(&f32s(&upstream, &[2, 3]))
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let y = x.relu().unwrap();
    let gx = switchyard_autograd::grad(
        &[y],
        &[Clone::clone(&x)],
        &[Some(Clone::clone(&gy))],
        None,
        true,
        false,
    )
    .unwrap()
    .remove(0)
    .unwrap();
    assert!(gx.grad_fn().unwrap().is_some());
    assert_eq!(host_f32(&gx), want);
    op::sum::call(&gx, None).unwrap().backward().unwrap();
    let mask: Vec<f32> = xs
        .iter()
        .map(|x| if *x > 0.0 { 1.0 } else { 0.0 })
        .collect();
    assert_eq!(sidecar_grad(&gy), mask);

    // Without grad mode, or for a tensor that does not require grad, the kernel still runs
    // and records nothing.
    let c1 = counters();
    let plain = to_sidecar(&f32s(&xs, &[6])).unwrap();
    let r = plain.relu().unwrap();
    assert!(r.grad_fn().unwrap().is_none() && !r.requires_grad());
    {
        let _no_grad = switchyard_autograd::no_grad();
        let r = x.relu().unwrap();
        assert!(r.grad_fn().unwrap().is_none() && !r.requires_grad());
    }
    assert_eq!(counters().autograd_calls - c1.autograd_calls, 2);
}

/// (a) What the sidecar cannot compute (float64) its autograd kernel redispatches below the
/// autograd keys with the key set it was given: the CPU fallback runs `relu`, the node is
/// still the sidecar's, and its backward goes through the operators.
#[test]
fn relu_redispatches_what_the_device_does_not_take() {
    let _g = serial();
    let xs = [1.5f64, -2.0, 0.25, -0.0];
    let x = to_sidecar(&Tensor::from_slice(&xs).unwrap())
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let (c0, n0) = (counters(), fallback_count("aten::relu"));
    let y = x.relu().unwrap();
    assert_eq!(counters().autograd_calls - c0.autograd_calls, 1);
    assert_eq!(
        fallback_count("aten::relu"),
        n0 + 1,
        "redispatched to the fallback"
    );
    assert_eq!(grad_fn_name(&y), "SidecarReluBackward");
    assert_eq!((y.dtype(), y.device()), (ScalarType::Double, device()));
    let loss = op::sum::call(&y, None).unwrap();
    loss.backward().unwrap();
    assert_eq!(counters().backward_calls - c0.backward_calls, 1);
    let g = x.grad().unwrap();
    assert_eq!((g.dtype(), g.device()), (ScalarType::Double, device()));
    assert_eq!(
        to_cpu(&g).unwrap().to_vec::<f64>().unwrap(),
        [1.0, 0.0, 1.0, 0.0]
    );
}

/// (a) The in-place form of an autograd-listed operator is a generated wrapper at
/// `AutogradPrivateUse1`: `relu_` runs the sidecar's kernel and copies into `self`, which takes
/// the history of the result (the gradient is right, a leaf is refused as on the CPU). Its
/// out= form follows the generated Autograd out= kernels' rule: `relu.out` is an autogenerated
/// out= overload without a formula, so on both devices it runs (on the sidecar through the
/// autograd fallback and the CPU fallback), and backward through it raises, as in PyTorch 2.15.
#[test]
fn relu_inplace_and_out_at_the_autograd_key() {
    let _g = serial();
    let xs = [2.0f32, -1.0, 0.5, -3.0];
    for on_sidecar in [false, true] {
        let place = |t: Tensor| {
            if on_sidecar {
                to_sidecar(&t).unwrap()
            } else {
                t
            }
        };
        let x = place(f32s(&xs, &[4])).requires_grad_(true).unwrap();
        let c0 = counters();
        let y = x.mul(&place(f32s(&[3.0; 4], &[4]))).unwrap();
        let r = y.relu_().unwrap();
        assert!(r.is_same(&y));
        if on_sidecar {
            assert_eq!(counters().autograd_calls - c0.autograd_calls, 1);
        }
        op::sum::call(&y, None).unwrap().backward().unwrap();
        let g = to_cpu(&x.grad().unwrap()).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(g, [3.0, 0.0, 3.0, 0.0], "relu_ on sidecar: {on_sidecar}");

        let leaf = place(f32s(&xs, &[4])).requires_grad_(true).unwrap();
        let e = leaf.relu_().unwrap_err().to_string();
        assert!(
            e.contains(
                "a leaf Variable that requires grad is being used in an in-place operation."
            ),
            "{e}"
        );
        let out = place(f32s(&[], &[0]));
        let r = op::relu_out::call(&leaf, &out).unwrap();
        assert!(r.is_same(&out));
        assert_eq!(
            to_cpu(&r).unwrap().to_vec::<f32>().unwrap(),
            [2.0, 0.0, 0.5, 0.0]
        );
        let e = op::sum::call(&r, None)
            .unwrap()
            .backward()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("derivative for aten::relu is not implemented"),
            "relu.out on sidecar: {on_sidecar}: {e}"
        );
    }
}

/// (b) Operators the sidecar does not implement run through the CPU fallback; the generated
/// Autograd kernels record their nodes over sidecar tensors, and the backward pass gives the
/// hand-computed gradients, on the sidecar.
#[test]
fn gradients_through_fallback_operators() {
    let _g = serial();
    let xs = [0.5f32, -1.0, 2.0, 0.0, -0.25, 1.5];
    let fresh = || {
        to_sidecar(&f32s(&xs, &[2, 3]))
            .unwrap()
            .requires_grad_(true)
            .unwrap()
    };

    // d/dx sum(exp(x)) = exp(x).
    let x = fresh();
    // `sum` is a composite (CompositeExplicitAutograd) over `sum.dim_IntList`, which the
    // fallback runs.
    let (n_exp, n_sum) = (
        fallback_count("aten::exp"),
        fallback_count("aten::sum.dim_IntList"),
    );
    let e = x.exp().unwrap();
    assert_eq!(grad_fn_name(&e), "ExpBackward0");
    let loss = op::sum::call(&e, None).unwrap();
    assert_eq!(grad_fn_name(&loss), "SumBackward0");
    assert_eq!(loss.device(), device());
    assert_eq!(fallback_count("aten::exp"), n_exp + 1);
    assert_eq!(fallback_count("aten::sum.dim_IntList"), n_sum + 1);
    loss.backward().unwrap();
    let want: Vec<f32> = xs.iter().map(|v| v.exp()).collect();
    assert_close(&sidecar_grad(&x), &want, "exp/sum");

    // d/dx mean(tanh(x)) = (1 - tanh(x)^2) / n.
    let x = fresh();
    let loss = op::mean::call(&x.tanh().unwrap(), None).unwrap();
    assert_eq!(grad_fn_name(&loss), "MeanBackward0");
    loss.backward().unwrap();
    let n = xs.len() as f32;
    let want: Vec<f32> = xs.iter().map(|v| (1.0 - v.tanh().powi(2)) / n).collect();
    assert_close(&sidecar_grad(&x), &want, "tanh/mean");

    // An explicit upstream gradient through a fallback operator: d/dx (x^3) · g = 3x^2 · g.
    let x = fresh();
    let y = op::pow_Tensor_Scalar::call(&x, 3.into()).unwrap();
    let gy = to_sidecar(&f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])).unwrap();
    y.backward_with(Some(&gy), None, false, &[]).unwrap();
    let want: Vec<f32> = xs
        .iter()
        .zip(1..)
        .map(|(v, g)| 3.0 * v * v * g as f32)
        .collect();
    assert_close(&sidecar_grad(&x), &want, "pow");
}

/// The chain `sum(tanh(relu(a @ w + b) * c))` with the leaves placed by `place`: `mm`, `add`
/// and `mul` are the sidecar's kernels, `relu` its autograd kernel, `tanh` and `sum` fallback
/// operators. Returns the loss and the leaves (which hold their gradients after backward).
fn chain(place: &dyn Fn(Tensor) -> Tensor) -> (Tensor, [Tensor; 4]) {
    let leaf =
        |values: &[f32], shape: &[i64]| place(f32s(values, shape)).requires_grad_(true).unwrap();
    let a = leaf(&[0.5, -1.0, 2.0, 0.25, 1.5, -0.75], &[2, 3]);
    let w = leaf(&[0.1, -0.2, 0.3, 0.4, -0.5, 0.6], &[3, 2]);
    let b = leaf(&[0.05, -0.3, 0.2, 0.1], &[2, 2]);
    let c = leaf(&[1.5, -0.5, 2.0, 0.75], &[2, 2]);
    let h = op::mm::call(&a, &w).unwrap();
    let h = h.add(&b).unwrap();
    let h = h.relu().unwrap();
    let h = h.mul(&c).unwrap();
    let loss = op::sum::call(&h.tanh().unwrap(), None).unwrap();
    (loss, [a, w, b, c])
}

/// (c) The chain on the sidecar gives the CPU's gradients, each on the sidecar.
#[test]
fn a_mixed_chain_matches_the_cpu() {
    let _g = serial();
    let (cpu_loss, cpu_leaves) = chain(&|t| t);
    cpu_loss.backward().unwrap();

    let (c0, f0) = (counters(), fallback_counts());
    let (loss, leaves) = chain(&|t| to_sidecar(&t).unwrap());
    let forward_fallbacks = fallback_counts();
    // The forward: the sidecar's own kernels, no fallback for them.
    for own in [
        "aten::mm",
        "aten::add.Tensor",
        "aten::mul.Tensor",
        "aten::relu",
    ] {
        assert_eq!(
            forward_fallbacks.get(own),
            f0.get(own),
            "{own} ran on the device"
        );
    }
    assert_eq!(counters().autograd_calls - c0.autograd_calls, 1);
    assert_eq!(loss.device(), device());
    assert_close(&host_f32(&loss), &cpu_loss.to_vec::<f32>().unwrap(), "loss");

    loss.backward().unwrap();
    assert_eq!(counters().backward_calls - c0.backward_calls, 1);
    for (name, (s, c)) in ["a", "w", "b", "c"]
        .iter()
        .zip(leaves.iter().zip(&cpu_leaves))
    {
        let want = c.grad().unwrap().to_vec::<f32>().unwrap();
        assert_close(&sidecar_grad(s), &want, name);
    }
}
