//! Per-call cost of the functionalization layer (plan §7.4), on 1-element f32 CPU tensors:
//!
//! * `plain_add_tiny`: `add.Tensor` on plain tensors (the baseline);
//! * `functional_add_tiny`: the same call on functional wrappers (the boxed fallback: unwrap
//!   and sync the arguments, call below the layer, wrap the result);
//! * `functional_add_inplace_tiny`: `add_.Tensor` on a wrapper (the mutation path: the
//!   out-of-place call, `replace_`, `commit_update`, the immediate sync);
//! * `functional_view_tiny`: `view` of a wrapper (the view path: the eager metadata by meta
//!   shadow, the value by `view_copy`, the view record, the new wrapper), views not reapplied.
//!
//! Run: `cargo bench -p switchyard-functionalize --bench overhead -- _tiny`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use switchyard_core::{Scalar, Tensor};
use switchyard_functionalize::to_functional;
use switchyard_ops::op;

use switchyard_autograd as _;
use switchyard_cpu as _;

fn bench(c: &mut Criterion) {
    let a = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let b = Tensor::from_vec(vec![2.0f32], &[1]).unwrap();
    let fa = to_functional(&a).unwrap();
    let fb = to_functional(&b).unwrap();
    let mut g = c.benchmark_group("functionalize");
    g.bench_function("plain_add_tiny", |bch| {
        bch.iter(|| {
            black_box(op::add_Tensor::call(black_box(&a), black_box(&b), Scalar::Int(1)).unwrap())
        })
    });
    g.bench_function("functional_add_tiny", |bch| {
        bch.iter(|| {
            black_box(op::add_Tensor::call(black_box(&fa), black_box(&fb), Scalar::Int(1)).unwrap())
        })
    });
    let acc = to_functional(&Tensor::from_vec(vec![0.0f32], &[1]).unwrap()).unwrap();
    g.bench_function("functional_add_inplace_tiny", |bch| {
        bch.iter(|| {
            black_box(
                op::add__Tensor::call(black_box(&acc), black_box(&fb), Scalar::Int(0)).unwrap(),
            )
        })
    });
    g.bench_function("functional_view_tiny", |bch| {
        bch.iter(|| black_box(op::view::call(black_box(&fa), &[1]).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
