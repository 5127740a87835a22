//! TensorIterator's rules for the outputs of elementwise operators: memory-overlap errors (an
//! output repeating elements, an input sharing part of an output's memory; on CPU tensors, as
//! PyTorch checks nothing on Meta ones) and the layout of the outputs it allocates (on CPU and
//! Meta). Expectations are PyTorch 2.15's answers
//! to the same calls (recorded by hand from `torch` on the development machine; the calls are
//! quoted next to each case).

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Linked for its kernel registrations.
use switchyard_core::{Device, Result, Scalar, ScalarType, Tensor};
use switchyard_cpu as _;
use switchyard_ops::op;

#[path = "target_support/mod.rs"]
mod target_support;
use target_support::*;
// This suite runs on CPU tensors (the lazy backend's tests run its layout tests on lazy ones).
use target_support::CPU_TARGET as TARGET;

/// The devices a layout test runs on: the CPU and Meta, or the target's alone.
fn devices() -> Vec<Device> {
    if on_cpu() {
        vec![Device::CPU, Device::META]
    } else {
        vec![target_device()]
    }
}

/// A view of a fresh storage of `extent` floats on `device` with `sizes` and `strides` (on the
/// target: made on the CPU and moved there with its geometry).
fn view_on(device: Device, extent: i64, sizes: &[i64], strides: &[i64]) -> Tensor {
    let host = if device.is_meta() {
        device
    } else {
        Device::CPU
    };
    let t = Tensor::allocate(&[extent], ScalarType::Float, host)
        .unwrap()
        .as_strided_view(sizes, strides, 0)
        .unwrap();
    if device == host {
        t
    } else {
        with_target(|| placed(t))
    }
}

const PARTIAL: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";
const INTERNAL: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";

fn seq(n: i64, device: Device) -> Tensor {
    let t = Tensor::from_vec((0..n).map(|i| i as f32).collect(), &[n]).unwrap();
    if device.is_meta() {
        return Tensor::allocate(&[n], ScalarType::Float, device).unwrap();
    }
    t
}

fn slice(t: &Tensor, start: i64, end: i64) -> Tensor {
    op::slice_Tensor::call(t, 0, Some(start), Some(end), 1).unwrap()
}

fn message<T>(r: Result<T>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => e.message().to_string(),
    }
}

#[test]
fn outputs_sharing_part_of_an_input_are_refused() {
    if cpu_only(CpuOnly::Storage) {
        return;
    }
    {
        let device = Device::CPU;
        let x = seq(5, device);
        let (lo, hi) = (slice(&x, 0, 4), slice(&x, 1, 5));
        // torch.add(x[:4], 1, out=x[1:])
        let one = Tensor::wrapped_scalar(Scalar::Int(1)).unwrap();
        assert_eq!(
            message(op::add_out::call(&lo, &one, Scalar::Int(1), &hi)),
            PARTIAL
        );
        // x[1:].add_(x[:-1])
        assert_eq!(
            message(op::add__Tensor::call(&hi, &lo, Scalar::Int(1))),
            PARTIAL
        );
        // torch.abs(x[:4], out=x[1:]), torch.exp(..), torch.neg(..)
        assert_eq!(message(op::abs_out::call(&lo, &hi)), PARTIAL);
        assert_eq!(message(op::exp_out::call(&lo, &hi)), PARTIAL);
        assert_eq!(message(op::neg_out::call(&lo, &hi)), PARTIAL);
        // torch.clamp(x[:4], min=x[1:], out=x[:4])
        assert_eq!(
            message(op::clamp_Tensor_out::call(&lo, Some(&hi), None, &lo)),
            PARTIAL
        );
        // torch.where(x > 0.5, x[:4], x[1:], out=x[:4])
        let cond = Tensor::allocate(&[4], ScalarType::Bool, device).unwrap();
        assert_eq!(
            message(op::where_self_out::call(&cond, &lo, &hi, &lo)),
            PARTIAL
        );
        // z = torch.zeros(4, dtype=torch.bool); torch.logical_not(z[:3], out=z[1:])
        let z = Tensor::allocate(&[4], ScalarType::Bool, device).unwrap();
        assert_eq!(
            message(op::logical_not_out::call(
                &slice(&z, 0, 3),
                &slice(&z, 1, 4)
            )),
            PARTIAL
        );
        // y.t().add_(y) and y.add_(y.t()): the same memory in another layout.
        let y = Tensor::allocate(&[3, 3], ScalarType::Float, device).unwrap();
        let yt = op::t::call(&y).unwrap();
        // On Meta the same calls succeed (PyTorch 2.15 checks no overlap on meta tensors).
        let (m, my) = (
            seq(5, Device::META),
            Tensor::allocate(&[3, 3], ScalarType::Float, Device::META).unwrap(),
        );
        let (mlo, mhi) = (slice(&m, 0, 4), slice(&m, 1, 5));
        assert_eq!(
            message(op::add__Tensor::call(&mhi, &mlo, Scalar::Int(1))),
            "ok"
        );
        assert_eq!(
            message(op::add__Tensor::call(
                &op::t::call(&my).unwrap(),
                &my,
                Scalar::Int(1)
            )),
            "ok"
        );
        assert_eq!(
            message(op::add__Tensor::call(&yt, &y, Scalar::Int(1))),
            PARTIAL
        );
        assert_eq!(
            message(op::add__Tensor::call(&y, &yt, Scalar::Int(1))),
            PARTIAL
        );
    }
}

#[test]
fn full_overlaps_and_empty_tensors_are_allowed() {
    if cpu_only(CpuOnly::Storage) {
        return;
    }
    for device in [Device::CPU, Device::META] {
        let y = Tensor::allocate(&[3, 3], ScalarType::Float, device).unwrap();
        // torch.mul(y, 2, out=y); torch.mul(y[0], y[1], out=y[0]); x[:0].add_(x[:0])
        let two = Tensor::wrapped_scalar(Scalar::Int(2)).unwrap();
        assert_eq!(message(op::mul_out::call(&y, &two, &y)), "ok");
        let (r0, r1) = (
            op::select_int::call(&y, 0, 0).unwrap(),
            op::select_int::call(&y, 0, 1).unwrap(),
        );
        assert_eq!(message(op::mul_out::call(&r0, &r1, &r0)), "ok");
        let x = seq(5, device);
        let empty = slice(&x, 0, 0);
        assert_eq!(
            message(op::add__Tensor::call(&empty, &empty, Scalar::Int(1))),
            "ok"
        );
        // A view of the output with the same elements in the same layout is the output.
        let same = op::alias::call(&y).unwrap();
        assert_eq!(
            message(op::add__Tensor::call(&y, &same, Scalar::Int(1))),
            "ok"
        );
    }
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    op::add__Tensor::call(&x, &x, Scalar::Int(1)).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
}

#[test]
fn outputs_repeating_elements_are_refused() {
    if cpu_only(CpuOnly::Storage) {
        return;
    }
    {
        let device = Device::CPU;
        let one = Tensor::allocate(&[1], ScalarType::Float, device).unwrap();
        let expanded = op::expand::call(&one, &[3], false).unwrap();
        let unit = Tensor::wrapped_scalar(Scalar::Int(1)).unwrap();
        // torch.rand(1).expand(3).add_(1)
        assert_eq!(
            message(op::add__Tensor::call(&expanded, &unit, Scalar::Int(1))),
            INTERNAL
        );
        // torch.add(torch.rand(3), 1, out=torch.rand(1).expand(3))
        let three = Tensor::allocate(&[3], ScalarType::Float, device).unwrap();
        assert_eq!(
            message(op::add_out::call(&three, &unit, Scalar::Int(1), &expanded)),
            INTERNAL
        );
    }
}

/// The layouts of allocated outputs: `(expression, input sizes, input strides, result strides)`
/// as PyTorch 2.15 gives them.
#[test]
fn allocated_outputs_take_the_inputs_layout() {
    let _serial = serial();
    for device in devices() {
        let strided = |sizes: &[i64], strides: &[i64]| {
            let extent: i64 = sizes
                .iter()
                .zip(strides)
                .map(|(s, t)| (s - 1) * t)
                .sum::<i64>()
                + 1;
            view_on(device, extent, sizes, strides)
        };
        let unit = Tensor::wrapped_scalar(Scalar::Float(1.0)).unwrap();
        let add = |a: &Tensor, b: &Tensor| op::add_Tensor::call(a, b, Scalar::Int(1)).unwrap();
        // a = torch.rand(2,3,4,5).contiguous(memory_format=torch.channels_last)
        let a = strided(&[2, 3, 4, 5], &[60, 1, 15, 3]);
        assert_eq!(add(&a, &a).strides().as_slice(), &[60, 1, 15, 3]); // a + a
        assert_eq!(add(&a, &unit).strides().as_slice(), &[60, 1, 15, 3]); // a + 1
        // b = torch.rand(4, 3).t()
        let b = strided(&[3, 4], &[1, 3]);
        let c = strided(&[3, 4], &[4, 1]);
        let row = strided(&[4], &[1]);
        assert_eq!(add(&b, &b).strides().as_slice(), &[1, 3]); // b + b
        assert_eq!(add(&b, &c).strides().as_slice(), &[1, 3]); // b + torch.rand(3, 4)
        assert_eq!(add(&c, &b).strides().as_slice(), &[4, 1]); // torch.rand(3, 4) + b
        assert_eq!(add(&b, &row).strides().as_slice(), &[1, 3]); // b + torch.rand(4)
        assert_eq!(add(&b, &unit).strides().as_slice(), &[1, 3]); // b + 1
        // p = torch.rand(2, 3, 4).permute(2, 0, 1)
        let p = strided(&[4, 2, 3], &[1, 12, 4]);
        assert_eq!(add(&p, &unit).strides().as_slice(), &[1, 12, 4]); // p + 1
        let r3 = strided(&[3], &[1]);
        assert_eq!(add(&p, &r3).strides().as_slice(), &[1, 12, 4]); // p + torch.rand(3)
        // p[:, :, :1] + torch.rand(4, 2, 3)
        let p1 = strided(&[4, 2, 1], &[1, 12, 4]);
        let q = strided(&[4, 2, 3], &[6, 3, 1]);
        assert_eq!(add(&p1, &q).strides().as_slice(), &[3, 12, 1]);
        // e = torch.rand(3, 4)[:, ::2]: not dense, so the result is contiguous.
        let e = strided(&[3, 2], &[4, 2]);
        assert_eq!(add(&e, &unit).strides().as_slice(), &[2, 1]);
        // z = torch.rand(0, 3).t(); z + 1: an empty dimension zeroes the outer stride.
        let z = view_on(device, 0, &[3, 0], &[1, 3]);
        assert_eq!(add(&z, &unit).strides().as_slice(), &[1, 3]);
        // e0 = torch.empty(2, 0, 3, 4, memory_format=torch.channels_last): empty, hence
        // contiguous too, so e0 + e0 and e0 + 1 are contiguous.
        let e0 = view_on(device, 0, &[2, 0, 3, 4], &[0, 1, 0, 0]);
        assert_eq!(add(&e0, &e0).strides().as_slice(), &[12, 12, 4, 1]);
        assert_eq!(add(&e0, &unit).strides().as_slice(), &[12, 12, 4, 1]);
        // What was traced runs (off the CPU).
        finish(Ok(vec![])).unwrap();
    }
}

#[test]
fn permuted_results_hold_the_right_values() {
    let _serial = serial();
    // b = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]] stored transposed; b + 100 laid out like b.
    let storage: Vec<f32> = vec![0., 4., 8., 1., 5., 9., 2., 6., 10., 3., 7., 11.];
    let b = Tensor::from_vec(storage, &[12])
        .unwrap()
        .as_strided_view(&[3, 4], &[1, 3], 0)
        .unwrap();
    let b = with_target(|| placed(b));
    let hundred = Tensor::wrapped_scalar(Scalar::Float(100.0)).unwrap();
    let r = op::add_Tensor::call(&b, &hundred, Scalar::Int(1)).unwrap();
    assert_eq!(r.strides().as_slice(), &[1, 3]);
    let expected: Vec<f32> = (0..12).map(|i| 100.0 + i as f32).collect();
    assert_eq!(
        finish_one(Ok(r)).unwrap().to_vec::<f32>().unwrap(),
        expected
    );
    // Large enough to split across threads: the permuted output is written in memory order.
    let n = 300i64;
    let big = Tensor::from_vec((0..n * n).map(|i| i as f32).collect(), &[n * n])
        .unwrap()
        .as_strided_view(&[n, n], &[1, n], 0)
        .unwrap();
    let big = with_target(|| placed(big));
    let r = op::add_Tensor::call(&big, &big, Scalar::Int(1)).unwrap();
    assert_eq!(r.strides().as_slice(), &[1, n]);
    let got = finish_one(Ok(r)).unwrap().to_vec::<f32>().unwrap();
    let want: Vec<f32> = (0..n)
        .flat_map(|i| (0..n).map(move |j| 2.0 * (j * n + i) as f32))
        .collect();
    assert_eq!(got, want);
}

/// The in-place and out= kernels whose PyTorch counterpart writes through a TensorIterator
/// without being a structured elementwise operator here (`pow.Tensor_Scalar` and the clamps
/// describe their output as functional, `relu_` is `clamp_min_(self, 0)`, `cumsum` /
/// `cumprod` run one in their kernel, `uniform_` / `normal_` fill through a nullary one)
/// refuse an expanded output as PyTorch does; on Meta tensors nothing is checked.
#[test]
fn other_kernels_writing_repeated_elements_are_refused() {
    if cpu_only(CpuOnly::Storage) {
        return;
    }
    let expanded = |dtype: ScalarType, device: Device| {
        let one = Tensor::allocate(&[1, 3], dtype, device).unwrap();
        op::expand::call(&one, &[2, 3], false).unwrap()
    };
    let cpu = Device::CPU;
    let x = Tensor::allocate(&[2, 3], ScalarType::Float, cpu).unwrap();
    let f = || expanded(ScalarType::Float, cpu);
    let (half, zero, two) = (Scalar::Float(0.5), Scalar::Int(0), Scalar::Float(2.0));
    let cases: Vec<(&str, Result<Tensor>)> = vec![
        // torch.ones(1, 3).expand(2, 3).cumsum_(1), .cumprod_(1)
        ("cumsum_", op::cumsum_::call(&f(), 1, None)),
        ("cumprod_", op::cumprod_::call(&f(), 1, None)),
        // an int64 one, and torch.cumsum(x, 1, out=<expanded>)
        (
            "cumsum_ long",
            op::cumsum_::call(&expanded(ScalarType::Long, cpu), 1, None),
        ),
        ("cumsum.out", op::cumsum_out::call(&x, 1, None, &f())),
        ("cumprod.out", op::cumprod_out::call(&x, 1, None, &f())),
        // .pow_(2.), .pow_(0), .pow_(1), torch.pow(x, 2., out=<expanded>)
        ("pow_", op::pow__Scalar::call(&f(), two)),
        ("pow_ 0", op::pow__Scalar::call(&f(), zero)),
        ("pow_ 1", op::pow__Scalar::call(&f(), Scalar::Int(1))),
        ("pow.out", op::pow_Tensor_Scalar_out::call(&x, two, &f())),
        // .clamp_(0, 0.5), .clamp_min_(0), .clamp_max_(0.5), torch.clamp(x, 0, 0.5, out=..)
        ("clamp_", op::clamp_::call(&f(), Some(zero), Some(half))),
        ("clamp_min_", op::clamp_min_::call(&f(), zero)),
        ("clamp_max_", op::clamp_max_::call(&f(), half)),
        (
            "clamp.out",
            op::clamp_out::call(&x, Some(zero), Some(half), &f()),
        ),
        // .relu_() of float and int64 tensors
        ("relu_", op::relu_::call(&f())),
        (
            "relu_ long",
            op::relu_::call(&expanded(ScalarType::Long, cpu)),
        ),
        // .uniform_(), .normal_()
        ("uniform_", op::uniform_::call(&f(), 0.0, 1.0, None)),
        ("normal_", op::normal_::call(&f(), 0.0, 1.0, None)),
    ];
    for (name, r) in cases {
        assert_eq!(message(r), INTERNAL, "{name}");
    }
    // The kernels' own refusals come first: torch's "cumsum_out_cpu" for a bool tensor,
    // "Boolean inputs not supported for relu", "normal_kernel_cpu" for int64, the argument
    // checks of uniform_ and normal_.
    assert_eq!(
        message(op::cumsum_::call(&expanded(ScalarType::Bool, cpu), 1, None)),
        "\"cumsum_out_cpu\" not implemented for 'Bool'"
    );
    assert_eq!(
        message(op::relu_::call(&expanded(ScalarType::Bool, cpu))),
        "Boolean inputs not supported for relu"
    );
    assert_eq!(
        message(op::normal_::call(
            &expanded(ScalarType::Long, cpu),
            0.0,
            1.0,
            None
        )),
        "\"normal_kernel_cpu\" not implemented for 'Long'"
    );
    assert_eq!(
        message(op::normal_::call(&f(), 0.0, -1.0, None)),
        "normal expects std >= 0.0, but found std -1"
    );
    // A 0-dim cumsum_ and an empty expanded cumprod_ write nothing that overlaps.
    let scalar = Tensor::from_vec(vec![1.0f32], &[]).unwrap();
    assert_eq!(message(op::cumsum_::call(&scalar, 0, None)), "ok");
    let empty = Tensor::allocate(&[1, 0], ScalarType::Float, cpu).unwrap();
    let empty = op::expand::call(&empty, &[2, 0], false).unwrap();
    assert_eq!(message(op::cumprod_::call(&empty, 1, None)), "ok");
    // Meta tensors: no memory, no check.
    let m = || expanded(ScalarType::Float, Device::META);
    assert_eq!(message(op::cumsum_::call(&m(), 1, None)), "ok");
    assert_eq!(message(op::pow__Scalar::call(&m(), two)), "ok");
    assert_eq!(message(op::relu_::call(&m())), "ok");
    assert_eq!(message(op::clamp_::call(&m(), Some(zero), None)), "ok");
}
