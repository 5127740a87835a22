//! What a tiny operator call pays for outside the kernel: the building blocks of the
//! `add_tiny` benchmark in `switchyard-cpu`, timed one by one so its floor can be read off.
//!
//! * `rwlock_read`: one uncontended read lock and unlock of a `std::sync::RwLock` (a storage
//!   shared between threads pays this per call; metadata reads, in a sequence lock, and
//!   storages owned by the calling thread do not);
//! * `sizes`: `Tensor::sizes` (a sequence-locked geometry read and a copy of the sizes);
//! * `geometry_snapshot`: `Tensor::geometry` (the sequence-locked copy alone);
//! * `allocate_1_f32`: `Tensor::allocate` of one element and its drop (the storage and tensor
//!   allocations, both built in place; a one-element buffer lives inside the storage);
//! * `with_tensors_3`: the general data access over three one-element tensors for an
//!   elementwise call (one written), with no work inside;
//! * `linear_operands_3`: the same through `with_linear_operands`, the path small contiguous
//!   elementwise calls take;
//! * `shared_storages_3`: `linear_operands_3` on tensors created by another thread, whose
//!   storages are locked (two atomic read-modify-writes each).
//!
//! Run: `cargo bench -p switchyard-core --bench tensor_overhead`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::RwLock;
use switchyard_core::linear::with_linear_operands;
use switchyard_core::storage::Access;
use switchyard_core::{Device, ScalarType, Tensor, tensor::with_tensors};

fn bench(c: &mut Criterion) {
    let lock = RwLock::new([0u64; 16]);
    c.bench_function("rwlock_read", |b| {
        b.iter(|| black_box(lock.read().map(|g| g[3]).unwrap_or(0)))
    });
    let a = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let x = Tensor::from_vec(vec![2.0f32], &[1]).unwrap();
    let out = Tensor::allocate(&[1], ScalarType::Float, Device::CPU).unwrap();
    c.bench_function("sizes", |b| b.iter(|| black_box(black_box(&a).sizes())));
    c.bench_function("geometry_snapshot", |b| {
        b.iter(|| black_box(black_box(&a).geometry()))
    });
    c.bench_function("allocate_1_f32", |b| {
        b.iter(|| black_box(Tensor::allocate(&[1], ScalarType::Float, Device::CPU).unwrap()))
    });
    c.bench_function("with_tensors_3", |b| {
        b.iter(|| {
            with_tensors(
                &[
                    (&out, Access::Write),
                    (&a, Access::Read),
                    (&x, Access::Read),
                ],
                |data| Ok(black_box(data.dtype(0))),
            )
            .unwrap()
        })
    });
    c.bench_function("linear_operands_3", |b| {
        b.iter(|| {
            with_linear_operands(&out, [&a, &x], 8, |ops| Ok(black_box(ops.numel)))
                .unwrap()
                .unwrap()
        })
    });
    let (sa, sx, sout) = std::thread::spawn(|| {
        let t = || Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
        (t(), t(), t())
    })
    .join()
    .unwrap();
    c.bench_function("shared_storages_3", |b| {
        b.iter(|| {
            with_linear_operands(&sout, [&sa, &sx], 8, |ops| Ok(black_box(ops.numel)))
                .unwrap()
                .unwrap()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
