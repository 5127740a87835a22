//! Per-call cost of the autograd layer, to compare with libtorch on the same machine
//! (`../shared/bench/libtorch_overhead.cpp`, `add_requires_grad_tiny_ns`):
//!
//! * `add_requires_grad_tiny`: a 1-element `add.Tensor` whose first input requires grad,
//!   through the typed API: the Autograd kernel (requires-grad check, edges, the node), the
//!   redispatch, the CPU kernel, the output's history; dropping the result frees the node;
//! * `add_no_grad_input_tiny`: the same call when no input requires grad (the Autograd
//!   kernel only checks and redispatches), against the plain `add_tiny` of switchyard-cpu;
//! * `backward_tiny`: `(a * b).sum().backward()` on 1-element tensors (graph build + engine).
//!
//! Run: `cargo bench -p switchyard-autograd --bench autograd`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use switchyard_autograd::AutogradTensor;
use switchyard_core::{Scalar, Tensor};
use switchyard_ops::op;

use switchyard_cpu as _;

fn bench(c: &mut Criterion) {
    let a = Tensor::from_vec(vec![1.0f32], &[1])
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let b = Tensor::from_vec(vec![2.0f32], &[1]).unwrap();
    let mut g = c.benchmark_group("autograd");
    g.bench_function("add_requires_grad_tiny", |bch| {
        bch.iter(|| {
            black_box(op::add_Tensor::call(black_box(&a), black_box(&b), Scalar::Int(1)).unwrap())
        })
    });
    let plain = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    g.bench_function("add_no_grad_input_tiny", |bch| {
        bch.iter(|| {
            black_box(
                op::add_Tensor::call(black_box(&plain), black_box(&b), Scalar::Int(1)).unwrap(),
            )
        })
    });
    g.bench_function("backward_tiny", |bch| {
        bch.iter(|| {
            let y = op::sum::call(&op::mul_Tensor::call(&a, &b).unwrap(), None).unwrap();
            y.backward().unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
