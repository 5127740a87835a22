//! A training step of the MLP that `../shared/bench/torch_reference.py` times
//! (`mlp_step_b64_us`): Linear(784, 256) → ReLU → Linear(256, 10), batch 64, cross-entropy,
//! backward, SGD(lr=0.01) — `zero_grad`, forward, loss, backward, step.
//!
//! Run: `cargo bench -p switchyard-nn --bench train`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use switchyard_autograd::AutogradTensor;
use switchyard_nn::functional::{Reduction, cross_entropy};
use switchyard_nn::optim::{Optimizer, Sgd, SgdOptions};
use switchyard_nn::{Linear, Module, ReLU, Sequential};
use switchyard_ops::op;

use switchyard_cpu as _;

fn bench(c: &mut Criterion) {
    switchyard_core::generator::manual_seed(0).unwrap();
    let model = Sequential::new(vec![
        Box::new(Linear::new(784, 256, true).unwrap()),
        Box::new(ReLU),
        Box::new(Linear::new(256, 10, true).unwrap()),
    ]);
    let mut opt = Sgd::new(model.parameters(), 0.01, SgdOptions::default()).unwrap();
    let x = op::rand::call(&[64, 784], None, None, None, None).unwrap();
    let y = op::randint::call(10, &[64], None, None, None, None).unwrap();
    let mut g = c.benchmark_group("train");
    g.sample_size(50);
    g.bench_function("mlp_step_b64", |b| {
        b.iter(|| {
            opt.zero_grad().unwrap();
            let loss = cross_entropy(
                &model.forward(&x).unwrap(),
                &y,
                None,
                Reduction::Mean,
                -100,
                0.0,
            )
            .unwrap();
            loss.backward().unwrap();
            opt.step().unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
