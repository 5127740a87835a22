//! Reduce kernels through the dispatcher: `sum` over 16M `f32` (reported as GB/s of input
//! read), `sum(0)` / `sum(1)` of a [4096, 4096] matrix, `max.dim`, `var`, and `softmax` /
//! `log_softmax` of a [4096, 1024] `f32` matrix along the last dimension.
//!
//! Run: `cargo bench -p switchyard-cpu --bench reduce`. Compare with PyTorch on the same
//! machine: `/tmp/torchref/bin/python /work/shared/bench/torch_reference.py` (`sum_16M_GBps`)
//! and, for softmax, `torch.softmax(x, -1)` on `torch.rand(4096, 1024)`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use switchyard_core::Tensor;
use switchyard_cpu as _;
use switchyard_ops::op;

fn values(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % 1000) as f32 * 1e-3).collect()
}

fn bench(c: &mut Criterion) {
    let n = 16 * 1024 * 1024;
    let x = Tensor::from_vec(values(n), &[n as i64]).unwrap();
    let mut g = c.benchmark_group("reduce");
    g.sample_size(20);
    g.throughput(Throughput::Bytes((4 * n) as u64));
    g.bench_function("sum_16M_f32", |b| {
        b.iter(|| op::sum::call(black_box(&x), None).unwrap())
    });
    let m = x.as_strided_view(&[4096, 4096], &[4096, 1], 0).unwrap();
    g.bench_function("sum_dim0_4096x4096_f32", |b| {
        b.iter(|| op::sum_dim_IntList::call(black_box(&m), Some(&[0]), false, None).unwrap())
    });
    g.bench_function("sum_dim1_4096x4096_f32", |b| {
        b.iter(|| op::sum_dim_IntList::call(black_box(&m), Some(&[1]), false, None).unwrap())
    });
    g.bench_function("max_dim1_4096x4096_f32", |b| {
        b.iter(|| op::max_dim::call(black_box(&m), 1, false).unwrap())
    });
    g.bench_function("var_16M_f32", |b| {
        b.iter(|| op::var::call(black_box(&x), true).unwrap())
    });
    let s = x.as_strided_view(&[4096, 1024], &[1024, 1], 0).unwrap();
    g.throughput(Throughput::Bytes((4 * 4096 * 1024) as u64));
    g.bench_function("softmax_4096x1024_f32", |b| {
        b.iter(|| op::softmax_int::call(black_box(&s), -1, None).unwrap())
    });
    g.bench_function("log_softmax_4096x1024_f32", |b| {
        b.iter(|| op::log_softmax_int::call(black_box(&s), -1, None).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
