//! Linalg / nn kernels against PyTorch's figures on the same machine
//! (`/work/shared/bench/torch_reference.py`, and `torch.native_layer_norm` timed the same way):
//! `matmul` of two 1024×1024 `f32` matrices (GFLOP/s = 2·1024³ / time) and
//! `native_layer_norm` over `[4096, 1024]` `f32` with weight and bias, and `softmax` /
//! `log_softmax` over the last dimension of `[4096, 1024]` `f32`, all through the dispatcher.
//! PyTorch's figures, and the ratios: `tools/bench/compare.py`.
//!
//! Run: `cargo bench -p switchyard-cpu --bench nn` (add `-- softmax` to run only those).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

// Linking the crate registers the CPU kernels with the dispatcher.
use switchyard_cpu as _;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use switchyard_core::{Scalar, ScalarType, Tensor};
use switchyard_cpu::fused::{BinaryOp, FusedBuilder, Operand};
use switchyard_ops::op;

/// Uniform values in [-0.5, 0.5) from a xorshift stream (no dependence on the RNG operators).
fn uniform(sizes: &[i64], seed: u64) -> Tensor {
    let n: i64 = sizes.iter().product();
    let mut state = seed | 1;
    let data: Vec<f32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    Tensor::from_vec(data, sizes).unwrap()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("nn");
    group.sample_size(20);

    let a = uniform(&[1024, 1024], 1);
    let b = uniform(&[1024, 1024], 2);
    group.throughput(Throughput::Elements(2 * 1024 * 1024 * 1024));
    group.bench_function("matmul_1024_f32", |bench| {
        bench.iter(|| black_box(op::matmul::call(&a, &b).unwrap()));
    });

    // The two large products of the MLP training step (784-256-10, batch 64): the forward
    // `x @ w.t()` and the weight gradient `grad.t() @ x`.
    let (x, w, g) = (
        uniform(&[64, 784], 6),
        uniform(&[256, 784], 7),
        uniform(&[64, 256], 8),
    );
    group.throughput(Throughput::Elements(2 * 64 * 784 * 256));
    group.bench_function("mm_64x784_by_784x256_f32", |bench| {
        let wt = op::t::call(&w).unwrap();
        bench.iter(|| black_box(op::mm::call(&x, &wt).unwrap()));
    });
    group.bench_function("mm_256x64_by_64x784_f32", |bench| {
        let gt = op::t::call(&g).unwrap();
        bench.iter(|| black_box(op::mm::call(&gt, &x).unwrap()));
    });

    let x = uniform(&[4096, 1024], 3);
    let w = uniform(&[1024], 4);
    let bias = uniform(&[1024], 5);
    group.throughput(Throughput::Bytes(4 * 4096 * 1024 * 2));
    group.bench_function("native_layer_norm_4096x1024_f32", |bench| {
        bench.iter(|| {
            black_box(
                op::native_layer_norm::call(&x, &[1024], Some(&w), Some(&bias), 1e-5).unwrap(),
            )
        });
    });

    group.throughput(Throughput::Bytes(4 * 4096 * 1024 * 2));
    group.bench_function("softmax_4096x1024_f32", |bench| {
        bench.iter(|| black_box(op::_softmax::call(&x, -1, false).unwrap()));
    });
    group.bench_function("log_softmax_4096x1024_f32", |bench| {
        bench.iter(|| black_box(op::_log_softmax::call(&x, -1, false).unwrap()));
    });

    // The lazy compiler's `softmax(a * 1.5 - 0.25, 1)` kernel (the `softmax_expr` row of
    // `backends/lazy/benches/lazy.rs`) without the executor: the fused prologue feeding the
    // row kernel, into one output reused across iterations (as the lazy output pool does).
    let kernel = {
        let mut k = FusedBuilder::new(ScalarType::Float, &[4096, 1024]).unwrap();
        let (input, scale, shift, alpha) = (
            k.input().unwrap(),
            k.input().unwrap(),
            k.input().unwrap(),
            k.input().unwrap(),
        );
        let scaled = k.binary(BinaryOp::Mul, input, scale).unwrap();
        let shifted = k.add(scaled, shift, alpha, true).unwrap();
        k.finish(shifted).unwrap()
    };
    let out = uniform(&[4096, 1024], 9);
    let operands = [
        Operand::Tensor(&x),
        Operand::Scalar(Scalar::Float(1.5)),
        Operand::Scalar(Scalar::Float(0.25)),
        Operand::Scalar(Scalar::Int(1)),
    ];
    group.bench_function("fused_softmax_expr_4096x1024_f32", |bench| {
        bench.iter(|| {
            kernel.run_softmax_into(&operands, false, &out).unwrap();
            black_box(&out);
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
