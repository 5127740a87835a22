//! Autograd over lazy tensors (plan §7.2): the generated autograd kernels serve `AutogradLazy`,
//! so `backward()` traces the gradient formulas, the accumulation into `.grad` and the
//! optimizer's in-place updates into the same IR as the forward pass: one `mark_step` runs a
//! whole training step, and every later step hits the cache.

use switchyard_autograd::{AutogradTensor, no_grad};
use switchyard_core::Tensor;
use switchyard_ops::TensorOps;

use crate::support::{assert_close, counter, sample, setup};

/// Parameters and data of a small MLP (8 → 16 → 4, tanh, MSE), on the CPU.
fn problem() -> (Vec<Tensor>, Tensor, Tensor) {
    let params = vec![
        sample(&[8, 16], 201).mul_scalar(0.3).unwrap(),
        sample(&[16], 202).mul_scalar(0.1).unwrap(),
        sample(&[16, 4], 203).mul_scalar(0.3).unwrap(),
        sample(&[4], 204).mul_scalar(0.1).unwrap(),
    ];
    (params, sample(&[5, 8], 205), sample(&[5, 4], 206))
}

/// One SGD step (forward, backward, update under `no_grad`, gradients cleared); returns the
/// loss and the gradients.
fn step(params: &[Tensor], x: &Tensor, target: &Tensor, lr: f64) -> (Tensor, Vec<Tensor>) {
    let h = x
        .mm(&params[0])
        .unwrap()
        .add(&params[1])
        .unwrap()
        .tanh()
        .unwrap();
    let y = h.mm(&params[2]).unwrap().add(&params[3]).unwrap();
    let d = y.sub(target).unwrap();
    let loss = d.mul(&d).unwrap().mean().unwrap();
    loss.backward().unwrap();
    let grads: Vec<Tensor> = params.iter().map(|p| p.grad().unwrap()).collect();
    {
        let _ng = no_grad();
        for (p, g) in params.iter().zip(&grads) {
            p.sub_(&g.mul_scalar(lr).unwrap()).unwrap();
        }
    }
    for p in params {
        p.set_grad(None).unwrap();
    }
    (loss, grads)
}

#[test]
fn a_training_step_is_one_graph_and_matches_eager_gradients() {
    let _g = setup();
    let (cpu_params, x, target) = problem();
    let lazy_params: Vec<Tensor> = cpu_params
        .iter()
        .map(|p| {
            switchyard_lazy::to_lazy(p)
                .unwrap()
                .requires_grad_(true)
                .unwrap()
        })
        .collect();
    let cpu_params: Vec<Tensor> = cpu_params
        .into_iter()
        .map(|p| p.requires_grad_(true).unwrap())
        .collect();
    let (lx, lt) = (
        switchyard_lazy::to_lazy(&x).unwrap(),
        switchyard_lazy::to_lazy(&target).unwrap(),
    );
    switchyard_lazy::mark_step().unwrap();
    switchyard_lazy::reset_metrics();
    for i in 0..5 {
        let (eager_loss, eager_grads) = step(&cpu_params, &x, &target, 0.1);
        let (lazy_loss, lazy_grads) = step(&lazy_params, &lx, &lt, 0.1);
        switchyard_lazy::mark_step().unwrap();
        assert_close(&lazy_loss, &eager_loss, 1e-6);
        for (l, e) in lazy_grads.iter().zip(&eager_grads) {
            assert!(switchyard_lazy::is_lazy(l));
            assert_close(l, e, 1e-6);
        }
        for (l, e) in lazy_params.iter().zip(&cpu_params) {
            assert_close(l, e, 1e-6);
        }
        // The whole step (forward, backward, update) is one program: compiled once, then
        // taken from the cache.
        assert_eq!(counter("UncachedCompile"), 1, "step {i}");
        assert_eq!(counter("CachedCompile"), i, "step {i}");
    }
    let fallbacks: Vec<String> = switchyard_lazy::counter_names()
        .into_iter()
        .filter(|n| n.starts_with("aten::"))
        .collect();
    assert!(fallbacks.is_empty(), "{fallbacks:?}");
    assert!(counter("lazy::mm") > 0 && counter("lazy::tanh") > 0);
}
