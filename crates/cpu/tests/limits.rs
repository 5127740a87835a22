//! Sizes at the limits, through the operators: no allocation a user's numbers size may abort
//! the process (PyTorch's out-of-memory error instead), and sizes whose element count, byte
//! count or strides overflow are refused with c10's messages, on CPU and on Meta tensors.
//! Expected messages are PyTorch 2.15's (recorded by hand from `/tmp/torchref`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_core::{Device, Result, Scalar, ScalarType, Tensor};
use switchyard_cpu as _;
use switchyard_ops::op;

#[path = "target_support/mod.rs"]
mod target_support;
use target_support::*;
// This suite runs on CPU tensors (the lazy backend's tests run its overflow test on lazy ones).
use target_support::CPU_TARGET as TARGET;

/// 2^40 four-byte elements: 4 TiB, more than any machine here can map.
const HUGE: i64 = 1 << 40;

fn oom(bytes: i64) -> String {
    format!(
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes. Error code 12 (Cannot allocate memory)"
    )
}

/// Whether `e` is the out-of-memory error (for calls where it depends on the kernel's order
/// of work which allocation fails first: a contiguous copy of an input, or the output).
fn is_oom(e: &switchyard_core::Error) -> bool {
    e.message()
        .starts_with("DefaultCPUAllocator: can't allocate memory: you tried to allocate ")
}

fn zeros(sizes: &[i64], dtype: ScalarType, device: Device) -> Result<Tensor> {
    op::zeros::call(sizes, Some(dtype), None, Some(device), None)
}

/// A 1-d float tensor of `n` elements without memory of its own (an expanded scalar).
fn virtual_f32(n: i64) -> Tensor {
    let one = Tensor::from_slice(&[1.0f32]).unwrap();
    op::expand::call(&one, &[n], false).unwrap()
}

#[test]
fn allocations_too_large_for_the_machine_are_errors() {
    if cpu_only(CpuOnly::Kernel) {
        return;
    }
    let f = ScalarType::Float;
    // Factories.
    assert_eq!(
        zeros(&[HUGE], f, Device::CPU).unwrap_err().message(),
        oom(4 * HUGE)
    );
    let e = op::full::call(&[HUGE], Scalar::Int(1), Some(f), None, None, None).unwrap_err();
    assert_eq!(e.message(), oom(4 * HUGE));
    let e = op::linspace::call(
        Scalar::Int(0),
        Scalar::Int(1),
        HUGE,
        Some(f),
        None,
        None,
        None,
    );
    assert_eq!(e.unwrap_err().message(), oom(4 * HUGE));
    // resize_ keeps the tensor as it was when the storage cannot grow.
    let t = Tensor::from_slice(&[1.0f32, 2.0]).unwrap();
    let e = op::resize_::call(&t, &[HUGE], None).unwrap_err();
    assert_eq!(e.message(), oom(4 * HUGE));
    assert_eq!(t.sizes().as_slice(), [2]);
    assert_eq!(t.to_vec::<f32>().unwrap(), [1.0, 2.0]);
    // out= resizing, functional outputs of kernels, composites.
    let out = Tensor::allocate(&[0], f, Device::CPU).unwrap();
    let e = op::add_out::call(&virtual_f32(HUGE), &virtual_f32(1), Scalar::Int(1), &out);
    assert_eq!(e.unwrap_err().message(), oom(4 * HUGE));
    assert_eq!(out.sizes().as_slice(), [0]);
    let e = op::add_Tensor::call(&virtual_f32(HUGE), &virtual_f32(1), Scalar::Int(1));
    assert_eq!(e.unwrap_err().message(), oom(4 * HUGE));
    let e = op::cat::call(&[virtual_f32(HUGE / 2), virtual_f32(HUGE / 2)], 0);
    assert_eq!(e.unwrap_err().message(), oom(4 * HUGE));
    let e = op::repeat::call(&Tensor::from_slice(&[1.0f32]).unwrap(), &[HUGE]);
    assert_eq!(e.unwrap_err().message(), oom(4 * HUGE));
    let e = op::constant_pad_nd::call(&virtual_f32(1), &[0, HUGE], Scalar::Int(0));
    assert_eq!(e.unwrap_err().message(), oom(4 * (HUGE + 1)));
    let e = op::one_hot::call(&Tensor::from_slice(&[0i64]).unwrap(), HUGE);
    assert_eq!(e.unwrap_err().message(), oom(8 * HUGE));
    let e = op::index_select::call(
        &virtual_f32(3),
        0,
        &op::expand::call(&Tensor::from_slice(&[0i64]).unwrap(), &[HUGE], false).unwrap(),
    );
    assert!(is_oom(&e.unwrap_err()));
    // A reduction over a huge virtual input into a huge output: the kernel's accumulators.
    let e = op::sum_dim_IntList::call(
        &op::expand::call(&virtual_f32(HUGE), &[2, HUGE], false).unwrap(),
        Some(&[0]),
        false,
        None,
    );
    assert!(is_oom(&e.unwrap_err()));
    // Meta tensors have no memory: the same sizes are fine there (as in PyTorch).
    assert_eq!(zeros(&[HUGE], f, Device::META).unwrap().numel(), HUGE);
    let m = Tensor::allocate(&[2], f, Device::META).unwrap();
    op::resize_::call(&m, &[HUGE], None).unwrap();
    assert_eq!(m.sizes().as_slice(), [HUGE]);
}

#[test]
fn size_overflows_are_refused_on_cpu_and_meta() {
    let _serial = serial();
    let f = ScalarType::Float;
    let devices = if on_cpu() {
        vec![Device::CPU, Device::META]
    } else {
        vec![target_device()]
    };
    for d in devices {
        // A tensor of `sizes` on `d` (on the target: moved there from the CPU).
        let alloc = |sizes: &[i64]| {
            let host = if d.is_meta() { d } else { Device::CPU };
            let t = Tensor::allocate(sizes, f, host).unwrap();
            if host == d {
                t
            } else {
                with_target(|| placed(t))
            }
        };
        // The error of a call (off the CPU, made when the call is traced or run).
        let err = |r: Result<Tensor>| finish_one(r).unwrap_err().message().to_owned();
        // Strides of an empty shape overflow although it has no element.
        assert_eq!(
            err(zeros(&[0, 1 << 62, 4], f, d)),
            "Stride calculation overflowed",
            "{d}"
        );
        // The element count overflows before the zero size: c10 flags it.
        assert_eq!(
            err(zeros(&[1 << 62, 4, 0], f, d)),
            "Storage size calculation overflowed with sizes=[4611686018427387904, 4, 0]"
        );
        // 2^62 * 2 fits u64 and the zero makes it empty: allowed, as in PyTorch.
        let t = zeros(&[1 << 62, 2, 0], f, d).unwrap();
        assert_eq!(t.strides().as_slice(), [2, 1, 1], "{d}");
        // Bytes beyond i64::MAX (2^61 floats), for factories and resize_.
        let msg = "Storage size calculation overflowed with sizes=[2305843009213693952]";
        assert_eq!(err(zeros(&[1 << 61], f, d)), msg);
        let t = alloc(&[2]);
        assert_eq!(err(op::resize_::call(&t, &[1 << 61], None)), msg);
        assert_eq!(t.sizes().as_slice(), [2]);
        assert_eq!(
            err(op::resize_::call(&t, &[0, 1 << 62, 4], None)),
            "Stride calculation overflowed"
        );
        assert_eq!(
            err(op::empty_strided::call(
                &[2, 2],
                &[1 << 62, 1 << 62],
                Some(f),
                None,
                Some(d),
                None
            )),
            "Storage size calculation overflowed with sizes=[2, 2] and strides=[4611686018427387904, 4611686018427387904]"
        );
        // A view whose element count overflows.
        let one = alloc(&[1, 1]);
        assert_eq!(
            err(op::expand::call(&one, &[1 << 62, 4], false)),
            "numel: integer multiplication overflow"
        );
        // The sizes of cat's inputs summing past i64::MAX. (Not on lazy: its expanded
        // value is materialized as `expand_copy`, whose result of i64::MAX elements overflows
        // already, as PyTorch 2.15's LTC raises at the `expand` too, checked live.)
        if !on_cpu() {
            continue;
        }
        let big = op::expand::call(&alloc(&[1]), &[i64::MAX], false);
        let big = big.unwrap();
        assert_eq!(
            err(op::cat::call(&[big.clone(), big], 0)),
            "cat: the size of the result in dimension 0 overflows int64"
        );
    }
}
