//! What a tiny operator call pays for outside the kernel: the building blocks of the
//! `add_tiny` benchmark in `switchyard-cpu`, timed one by one so its floor can be read off.
//!
//! * `rwlock_read`: one uncontended read lock and unlock of a `std::sync::RwLock` (every
//!   storage lock pays this; metadata reads, in a sequence lock, do not);
//! * `sizes`: `Tensor::sizes` (a sequence-locked geometry read and a copy of the sizes);
//! * `geometry_snapshot`: `Tensor::geometry` (the sequence-locked copy alone);
//! * `allocate_1_f32`: `Tensor::allocate` of one element and its drop (the storage and tensor
//!   allocations, both built in place; a one-element buffer lives inside the storage);
//! * `with_tensors_3`: locking three one-element tensors for an elementwise call (one written)
//!   and unlocking them, with no work inside.
//!
//! Run: `cargo bench -p switchyard-core --bench tensor_overhead`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::RwLock;
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
}

criterion_group!(benches, bench);
criterion_main!(benches);
