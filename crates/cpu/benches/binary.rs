//! Binary pointwise throughput and per-call overhead, to compare with PyTorch on the same
//! machine (`/tmp/torchref/bin/python /work/shared/bench/torch_reference.py`):
//!
//! * `add_out_16M_f32`: `add.out` over 16M contiguous f32 (bytes moved = 3 × 4 × n);
//! * `add_16M_f32`: functional `add.Tensor` (allocates the result);
//! * `add_tiny`: a 1-element `add.Tensor` through the typed API (dispatch + meta +
//!   allocation + kernel), PyTorch's `py_add_tiny_ns` minus Python overhead;
//! * `add_out_tiny`, `add_inplace_tiny`: the same 1-element call into an existing output and
//!   in place (no allocation), libtorch's `add_out_tiny_ns` and `add_inplace_tiny_ns`;
//! * `mul_scalar_16M_f32`, `div_floor_16M_f32`, `eq_16M_f32`: other kernels of the family.
//!
//! Run: `cargo bench -p switchyard-cpu --bench binary`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use switchyard_core::{Device, Scalar, ScalarType, Tensor};
use switchyard_ops::op;

// Linking the crate registers the CPU kernels with the dispatcher.
use switchyard_cpu as _;

const N: usize = 16 * 1024 * 1024;

fn big(seed: f32) -> Tensor {
    Tensor::from_vec(
        (0..N).map(|i| (i % 1000) as f32 * 0.001 + seed).collect(),
        &[N as i64],
    )
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let (x, y) = (big(0.5), big(1.5));
    let out = Tensor::allocate(&[N as i64], ScalarType::Float, Device::CPU).unwrap();
    let mut g = c.benchmark_group("binary_16M");
    g.sample_size(20);
    g.throughput(Throughput::Bytes((3 * 4 * N) as u64));
    g.bench_function("add_out_16M_f32", |b| {
        b.iter(|| op::add_out::call(&x, &y, Scalar::Int(1), &out).unwrap())
    });
    g.bench_function("add_16M_f32", |b| {
        b.iter(|| op::add_Tensor::call(&x, &y, Scalar::Int(1)).unwrap())
    });
    g.bench_function("eq_16M_f32", |b| {
        b.iter(|| op::eq_Tensor::call(&x, &y).unwrap())
    });
    g.bench_function("div_floor_16M_f32", |b| {
        b.iter(|| op::div_Tensor_mode::call(&x, &y, Some("floor")).unwrap())
    });
    g.throughput(Throughput::Bytes((2 * 4 * N) as u64));
    g.bench_function("mul_scalar_16M_f32", |b| {
        b.iter(|| op::mul_Scalar::call(&x, Scalar::Float(2.0)).unwrap())
    });
    g.finish();

    let (a, b1) = (
        Tensor::from_vec(vec![1.0f32], &[1]).unwrap(),
        Tensor::from_vec(vec![1.0f32], &[1]).unwrap(),
    );
    c.bench_function("add_tiny", |b| {
        b.iter(|| {
            black_box(op::add_Tensor::call(black_box(&a), black_box(&b1), Scalar::Int(1)).unwrap())
        })
    });
    // The same call without allocating: into an existing output, and in place (libtorch's
    // `add_out_tiny_ns` and `add_inplace_tiny_ns` in `libtorch_overhead.cpp`).
    let out = Tensor::from_vec(vec![0.0f32], &[1]).unwrap();
    c.bench_function("add_out_tiny", |b| {
        b.iter(|| {
            black_box(
                op::add_out::call(black_box(&a), black_box(&b1), Scalar::Int(1), &out).unwrap(),
            )
        })
    });
    let acc = Tensor::from_vec(vec![0.0f32], &[1]).unwrap();
    c.bench_function("add_inplace_tiny", |b| {
        b.iter(|| {
            black_box(
                op::add__Tensor::call(black_box(&acc), black_box(&b1), Scalar::Int(1)).unwrap(),
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
