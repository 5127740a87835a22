//! The reference backend against the CPU: its own kernels, the CPU fallback for everything
//! else (values, mutations, lists and optionals, views refused, one batched transfer per
//! call, counters), the typed fallback helper, the whole operator set compared with CPU
//! results in functional, in-place and out= forms, and gradients ([`gradients`]).
//!
//! The counters are process-wide, so every test holds [`serial`] while it runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

/// Gradients: the sidecar's own autograd kernel, fallback operators, a mixed chain.
mod gradients;

use std::sync::{Mutex, MutexGuard, PoisonError};

use switchyard::args::parse_call_args;
use switchyard_autograd as _;
use switchyard_core::{Device, ErrorKind, IValue, Scalar, ScalarType, Stack, Tensor};
use switchyard_dispatch::{Dispatcher, OperatorHandle};
use switchyard_ops::{TensorOps, op};
use switchyard_schema::SchemaKind;
use switchyard_sidecar::{counters, device, fallback_count, to_cpu, to_sidecar};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    switchyard_sidecar::init().unwrap();
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn f32s(values: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape).unwrap()
}

fn host_f32(t: &Tensor) -> Vec<f32> {
    to_cpu(t).unwrap().to_vec::<f32>().unwrap()
}

#[test]
fn own_kernels_run_on_the_device() {
    let _g = serial();
    let a = f32s(&[1.0, -2.0, 3.0, 4.0], &[2, 2]);
    let b = f32s(&[0.5, 0.25, -1.0, 2.0], &[2, 2]);
    let (da, db) = (to_sidecar(&a).unwrap(), to_sidecar(&b).unwrap());
    assert_eq!(da.device(), device());
    // Sidecar memory is not host memory.
    assert!(da.to_vec::<f32>().is_err());
    let before = switchyard_sidecar::fallback_counts();
    let sum = switchyard_ops::add(&da, &db).unwrap();
    let product = switchyard_ops::mul(&da, &db).unwrap();
    let relu = da.relu().unwrap();
    let mm = switchyard_ops::mm(&da, &db).unwrap();
    assert_eq!(switchyard_sidecar::fallback_counts(), before, "no fallback");
    for t in [&sum, &product, &relu, &mm] {
        assert_eq!(t.device(), device());
    }
    assert_eq!(host_f32(&sum), [1.5, -1.75, 2.0, 6.0]);
    assert_eq!(host_f32(&product), [0.5, -0.5, -3.0, 8.0]);
    assert_eq!(host_f32(&relu), [1.0, 0.0, 3.0, 4.0]);
    // [[1,-2],[3,4]] @ [[0.5,0.25],[-1,2]], by hand.
    assert_eq!(host_f32(&mm), [2.5, -3.75, -2.5, 8.75]);
}

#[test]
fn other_operators_fall_back_with_one_batched_transfer() {
    let _g = serial();
    let a = f32s(&[0.0, 1.0, -1.0], &[3]);
    let da = to_sidecar(&a).unwrap();
    let c0 = counters();
    let n0 = fallback_count("aten::exp");
    let e = da.exp().unwrap();
    let c1 = counters();
    assert_eq!(fallback_count("aten::exp"), n0 + 1);
    assert_eq!(e.device(), device());
    assert_eq!(c1.to_cpu_batches - c0.to_cpu_batches, 1);
    assert_eq!(c1.device_to_host - c0.device_to_host, 1);
    assert_eq!(c1.device_to_host_bytes - c0.device_to_host_bytes, 12);
    // The result went back to the sidecar: one upload.
    assert_eq!(c1.host_to_device - c0.host_to_device, 1);
    assert_eq!(host_f32(&e), a.exp().unwrap().to_vec::<f32>().unwrap());

    // Three tensors (a list) and a where with three operands: still one batch per call.
    let parts: Vec<Tensor> = (0..3)
        .map(|i| to_sidecar(&f32s(&[i as f32; 2], &[2])).unwrap())
        .collect();
    let c0 = counters();
    let cat = switchyard_ops::cat(&parts).unwrap();
    let c1 = counters();
    assert_eq!(c1.to_cpu_batches - c0.to_cpu_batches, 1);
    assert_eq!(c1.device_to_host - c0.device_to_host, 3);
    assert_eq!(host_f32(&cat), [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]);

    let cond = to_sidecar(&Tensor::from_slice(&[true, false, true]).unwrap()).unwrap();
    let other = to_sidecar(&f32s(&[9.0, 9.0, 9.0], &[3])).unwrap();
    let c0 = counters();
    let w = switchyard_ops::where_self(&cond, &da, &other).unwrap();
    let c1 = counters();
    assert_eq!(c1.to_cpu_batches - c0.to_cpu_batches, 1);
    assert_eq!(c1.device_to_host - c0.device_to_host, 3);
    assert_eq!(host_f32(&w), [0.0, 9.0, -1.0]);
}

#[test]
fn mutations_reach_the_original_tensors() {
    let _g = serial();
    // In-place through the fallback: the sidecar has no sub kernel at all.
    let x = to_sidecar(&Tensor::from_slice(&[1i64, 2, 3]).unwrap()).unwrap();
    let y = to_sidecar(&Tensor::from_slice(&[10i64, 20, 30]).unwrap()).unwrap();
    let n0 = fallback_count("aten::sub_.Tensor");
    let r = x.sub_(&y).unwrap();
    assert_eq!(fallback_count("aten::sub_.Tensor"), n0 + 1);
    assert!(r.is_same(&x), "in-place returns the original device tensor");
    assert_eq!(to_cpu(&x).unwrap().to_vec::<i64>().unwrap(), [-9, -18, -27]);

    // In-place through the generated wrapper: `add_` calls the sidecar's functional `add`
    // (which defers int64 to the fallback as `add.Tensor`) and copies into `self`.
    let n_add = fallback_count("aten::add.Tensor");
    let n_add_ = fallback_count("aten::add_.Tensor");
    let r = x.add_(&y).unwrap();
    assert_eq!(fallback_count("aten::add.Tensor"), n_add + 1);
    assert_eq!(fallback_count("aten::add_.Tensor"), n_add_);
    assert!(r.is_same(&x));
    assert_eq!(to_cpu(&x).unwrap().to_vec::<i64>().unwrap(), [1, 2, 3]);

    // The generated out= wrapper on float32 stays on the device (no fallback at all).
    let a32 = to_sidecar(&f32s(&[1.0, 2.0], &[2])).unwrap();
    let out32 = to_sidecar(&f32s(&[], &[0])).unwrap();
    let before = switchyard_sidecar::fallback_counts();
    let r = switchyard_ops::add_out(&a32, &a32, &out32).unwrap();
    assert_eq!(switchyard_sidecar::fallback_counts(), before);
    assert!(r.is_same(&out32));
    assert_eq!(host_f32(&out32), [2.0, 4.0]);

    // out= with a wrong-sized out tensor: resized on the device, written, returned.
    let out = to_sidecar(&Tensor::from_slice(&[0.0f32]).unwrap()).unwrap();
    let a = to_sidecar(&f32s(&[1.0, 2.0, 3.0, 4.0], &[2, 2])).unwrap();
    let r = switchyard_ops::exp_out(&a, &out).unwrap();
    assert!(r.is_same(&out));
    assert_eq!(out.sizes().as_slice(), [2, 2]);
    assert_eq!(out.device(), device());
    let want = f32s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]).exp().unwrap();
    assert_eq!(host_f32(&out), want.to_vec::<f32>().unwrap());

    // A tuple of out= tensors (max.dim_max).
    let values = to_sidecar(&f32s(&[], &[0])).unwrap();
    let indices = to_sidecar(&Tensor::from_vec(Vec::<i64>::new(), &[0]).unwrap()).unwrap();
    let (v, i) = op::max_dim_max::call(&a, 1, false, &values, &indices).unwrap();
    assert!(v.is_same(&values) && i.is_same(&indices));
    assert_eq!(host_f32(&values), [2.0, 4.0]);
    assert_eq!(to_cpu(&indices).unwrap().to_vec::<i64>().unwrap(), [1, 1]);
}

/// One in-place or out= call bumps the version counter of the tensor it writes once, on the
/// CPU and on the sidecar, whichever way the call goes: the generated wrappers (the sidecar's
/// functional kernel, then a copy into `self` / `out`), the CPU fallback (a copy back), a
/// structured CPU kernel computing into a proxy (a copy back), a composite calling another
/// out= operator.
#[test]
fn inplace_and_out_calls_bump_the_version_once() {
    let _g = serial();
    let bumps = |t: &Tensor, call: &dyn Fn(&Tensor)| {
        let before = t.version();
        call(t);
        t.version() - before
    };
    for on_sidecar in [false, true] {
        let place = |t: Tensor| {
            if on_sidecar {
                to_sidecar(&t).unwrap()
            } else {
                t
            }
        };
        let where_ = if on_sidecar { "sidecar" } else { "cpu" };
        let a = place(f32s(&[1.0, -2.0, 3.0], &[3]));
        let long = place(Tensor::from_slice(&[1i64, 2, 3]).unwrap());
        type Call<'a> = Box<dyn Fn(&Tensor) + 'a>;
        let cases: Vec<(&str, Tensor, Call<'_>)> = vec![
            // The sidecar's generated in-place wrappers (add_ and mul_ at PrivateUse1; relu_ at
            // AutogradPrivateUse1, around its autograd kernel, copying through `copy_`).
            (
                "add_",
                place(f32s(&[0.5, 1.5, 2.5], &[3])),
                Box::new(|t| {
                    t.add_(&a).unwrap();
                }),
            ),
            (
                "mul_",
                place(f32s(&[0.5, 1.5, 2.5], &[3])),
                Box::new(|t| {
                    t.mul_(&a).unwrap();
                }),
            ),
            (
                "relu_",
                place(f32s(&[0.5, -1.5, 2.5], &[3])),
                Box::new(|t| {
                    op::relu_::call(t).unwrap();
                }),
            ),
            // Its generated out= wrappers, resizing `out`.
            (
                "add.out",
                place(f32s(&[], &[0])),
                Box::new(|t| {
                    switchyard_ops::add_out(&a, &a, t).unwrap();
                }),
            ),
            // The fallback (no sub / exp kernel on the sidecar; relu.out, autogenerated, has
            // no wrapper at the autograd key, where relu's group is listed).
            (
                "relu.out",
                place(f32s(&[], &[0])),
                Box::new(|t| {
                    op::relu_out::call(&a, t).unwrap();
                }),
            ),
            (
                "sub_",
                place(Tensor::from_slice(&[5i64, 5, 5]).unwrap()),
                Box::new(|t| {
                    t.sub_(&long).unwrap();
                }),
            ),
            (
                "exp.out",
                place(f32s(&[], &[0])),
                Box::new(|t| {
                    switchyard_ops::exp_out(&a, t).unwrap();
                }),
            ),
            // A composite (logical_and_ runs logical_and.out into self; mean.dtype_out runs
            // mean.out).
            (
                "logical_and_",
                place(Tensor::from_slice(&[true, false, true]).unwrap()),
                Box::new(|t| {
                    op::logical_and_::call(t, &a).unwrap();
                }),
            ),
            (
                "mean.dtype_out",
                place(f32s(&[], &[0])),
                Box::new(|t| {
                    op::mean_dtype_out::call(&a, None, t).unwrap();
                }),
            ),
        ];
        for (name, t, call) in &cases {
            assert_eq!(bumps(t, call.as_ref()), 1, "{name} on the {where_}");
        }
    }
    // A structured CPU kernel computing into a proxy: `cat` of channels-last inputs asks for
    // a channels-last output, `out` has the right shape but contiguous strides, so the kernel
    // writes a temporary and copies it back (through `copy_`) into `out`, which keeps its
    // strides.
    let x = f32s(&[1.0; 8], &[1, 2, 2, 2]);
    let x = op::clone::call(&x, Some(switchyard_core::MemoryFormat::ChannelsLast)).unwrap();
    let out = f32s(&[0.0; 16], &[2, 2, 2, 2]);
    let strides = out.strides();
    let before = out.version();
    op::cat_out::call(&[Clone::clone(&x), x], 0, &out).unwrap();
    assert_eq!(out.strides(), strides, "written through a proxy");
    assert_eq!(out.version() - before, 1, "cat.out through a proxy");
}

/// The generated out= and in-place wrappers make the CPU kernels' checks before they write:
/// a refused call leaves the caller's tensor as it was; a safe cast into `out` is accepted.
#[test]
fn generated_wrappers_check_before_they_write() {
    let _g = serial();
    let a_cpu = f32s(&[1.0, 2.0], &[2]);
    let a = to_sidecar(&a_cpu).unwrap();
    // An out= of a dtype the Float result cannot be cast to: the CPU's error, `out` unchanged
    // (it used to be resized to [2] before the dtype was looked at).
    let out_cpu = Tensor::from_slice(&[7i64, 8, 9]).unwrap();
    let out = to_sidecar(&out_cpu).unwrap();
    let version = out.version();
    let cpu_err = switchyard_ops::add_out(&a_cpu, &a_cpu, &out_cpu).unwrap_err();
    let err = switchyard_ops::add_out(&a, &a, &out).unwrap_err();
    assert_eq!(
        err.message(),
        "result type Float can't be cast to the desired output type Long"
    );
    assert_eq!(err.message(), cpu_err.message());
    assert_eq!(out.sizes().as_slice(), [3]);
    assert_eq!(to_cpu(&out).unwrap().to_vec::<i64>().unwrap(), [7, 8, 9]);
    assert_eq!(out.version(), version);
    assert_eq!(out_cpu.version(), 0);
    // A safe cast (float32 into float64) is accepted, as on the CPU, with resize_output's
    // warning for a non-empty out of another shape.
    let out = to_sidecar(&Tensor::from_slice(&[0.0f64]).unwrap()).unwrap();
    switchyard_dispatch::warnings::take_warnings();
    switchyard_ops::add_out(&a, &a, &out).unwrap();
    let warned = switchyard_dispatch::warnings::take_warnings();
    assert!(
        warned
            .iter()
            .any(|w| w.starts_with("An output with one or more elements was resized")),
        "{warned:?}"
    );
    assert_eq!(out.dtype(), ScalarType::Double);
    assert_eq!(to_cpu(&out).unwrap().to_vec::<f64>().unwrap(), [2.0, 4.0]);
    // An out= on another device.
    let err = switchyard_ops::add_out(&a, &a, &f32s(&[], &[0])).unwrap_err();
    assert_eq!(
        err.message(),
        format!(
            "Expected out tensor to have device {}, but got cpu instead",
            device()
        )
    );
    // In place: `self` is never resized to the broadcast shape, nor given a result it cannot
    // hold; the CPU's messages, `self` untouched.
    let s = to_sidecar(&f32s(&[1.0, 2.0], &[2])).unwrap();
    let wide = to_sidecar(&f32s(&[1.0; 6], &[3, 2])).unwrap();
    let cpu_err = f32s(&[1.0, 2.0], &[2])
        .add_(&f32s(&[1.0; 6], &[3, 2]))
        .unwrap_err();
    let err = s.add_(&wide).unwrap_err();
    assert_eq!(
        err.message(),
        "output with shape [2] doesn't match the broadcast shape [3, 2]"
    );
    assert_eq!(err.message(), cpu_err.message());
    assert_eq!(s.sizes().as_slice(), [2]);
    assert_eq!(host_f32(&s), [1.0, 2.0]);
    let ints = to_sidecar(&Tensor::from_slice(&[1i64, 2]).unwrap()).unwrap();
    let err = ints.add_(&s).unwrap_err();
    assert_eq!(
        err.message(),
        "result type Float can't be cast to the desired output type Long"
    );
    assert_eq!(to_cpu(&ints).unwrap().to_vec::<i64>().unwrap(), [1, 2]);
}

const INTERNAL: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";
const PARTIAL: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";

/// Writes into memory other arguments share behave as on the CPU, whichever way the call goes:
/// through the CPU fallback (`sub_`, `fill_`), whose arguments sharing memory with a written
/// one travel as one piece of storage and so are aliased on the CPU too, and through the
/// generated wrappers of `pointwise` operators (`add_`, `add.out`), which make
/// TensorIterator's overlap checks. Refused calls leave the memory as it was.
#[test]
fn writes_into_shared_memory_behave_as_on_the_cpu() {
    let _g = serial();
    let values = [1.0f32, 2.0, 3.0, 4.0];
    let x = to_sidecar(&f32s(&values, &[4])).unwrap();
    let (a, b) = (
        x.slice_with(0, Some(1), Some(3), 1).unwrap(),
        x.slice_with(0, Some(0), Some(2), 1).unwrap(),
    );
    let cpu = f32s(&values, &[4]);
    let cpu_err = cpu
        .slice_with(0, Some(1), Some(3), 1)
        .unwrap()
        .sub_(&cpu.slice_with(0, Some(0), Some(2), 1).unwrap())
        .unwrap_err();
    assert_eq!(cpu_err.message(), PARTIAL);
    // Through the fallback: the two slices travel as one piece, the three elements they reach.
    let c0 = counters();
    let err = a.sub_(&b).unwrap_err();
    let c1 = counters();
    assert_eq!(err.message(), PARTIAL);
    assert_eq!(c1.device_to_host - c0.device_to_host, 1);
    assert_eq!(c1.device_to_host_bytes - c0.device_to_host_bytes, 12);
    assert_eq!(host_f32(&x), values);
    // Through the generated wrappers.
    assert_eq!(a.add_(&b).unwrap_err().message(), PARTIAL);
    let err = switchyard_ops::add_out(&b, &b, &a).unwrap_err();
    assert_eq!(err.message(), PARTIAL);
    assert_eq!(host_f32(&x), values);
    // A full overlap (the same elements in the same layout) is allowed, and reads what it
    // writes as the CPU does: x * x, then x + x.
    let (v, w) = (x.view(&[2, 2]).unwrap(), x.view(&[2, 2]).unwrap());
    v.mul_(&w).unwrap();
    assert_eq!(host_f32(&x), [1.0, 4.0, 9.0, 16.0]);
    v.sub_(&w).unwrap();
    assert_eq!(host_f32(&x), [0.0; 4]);

    // An expanded view: pointwise writes refuse it, fill_ (which checks nothing on the CPU
    // either) writes the element.
    let y = to_sidecar(&f32s(&[5.0], &[1])).unwrap();
    let e = y.expand(&[3]).unwrap();
    let ones = to_sidecar(&f32s(&[1.0; 3], &[3])).unwrap();
    assert_eq!(e.sub_(&ones).unwrap_err().message(), INTERNAL);
    assert_eq!(e.add_(&ones).unwrap_err().message(), INTERNAL);
    let err = switchyard_ops::add_out(&ones, &ones, &e).unwrap_err();
    assert_eq!(err.message(), INTERNAL);
    assert_eq!(host_f32(&y), [5.0]);
    e.fill_scalar_(7.0).unwrap();
    assert_eq!(host_f32(&y), [7.0]);
}

/// The fallback's CPU copies have the layouts `Tensor::cpu()` gives (the sidecar's `_to_cpu`),
/// so its results have the CPU's strides: a clone of a transposed view stays transposed, one
/// of a diagonal gets dense strides in the diagonal's order, an elementwise result follows its
/// input.
#[test]
fn fallback_results_have_the_cpus_layouts() {
    let _g = serial();
    let values: Vec<f32> = (0..24).map(|v| v as f32).collect();
    let cpu = f32s(&values, &[2, 3, 4]);
    let dev = to_sidecar(&cpu).unwrap();
    let views: [&dyn Fn(&Tensor) -> Tensor; 3] = [
        &|t| t.transpose(0, 2).unwrap(),
        &|t| t.diagonal_with(0, 2, 1).unwrap(),
        &|t| t.permute(&[1, 2, 0]).unwrap(),
    ];
    for view in views {
        let (c, d) = (view(&cpu), view(&dev));
        let (cc, dc) = (
            switchyard_ops::clone(&c).unwrap(),
            switchyard_ops::clone(&d).unwrap(),
        );
        assert_eq!(dc.device(), device());
        assert_eq!(dc.strides(), cc.strides());
        assert_eq!(host_f32(&dc), cc.to_vec::<f32>().unwrap());
        let (ce, de) = (c.exp().unwrap(), d.exp().unwrap());
        assert_eq!(de.strides(), ce.strides());
        assert_eq!(host_f32(&de), ce.to_vec::<f32>().unwrap());
    }
}

#[test]
fn optional_tensors_and_tensor_lists() {
    let _g = serial();
    let logits = f32s(&[0.5, -1.0, 2.0, 0.0, 1.0, -0.5], &[2, 3]);
    let target = Tensor::from_slice(&[2i64, 0]).unwrap();
    let weight = f32s(&[1.0, 2.0, 0.5], &[3]);
    let (dl, dt, dw) = (
        to_sidecar(&logits).unwrap(),
        to_sidecar(&target).unwrap(),
        to_sidecar(&weight).unwrap(),
    );
    for w in [None, Some(&weight)] {
        let dw = w.map(|_| &dw);
        let cpu = op::nll_loss::call(&logits, &target, w, 1, -100).unwrap();
        let side = op::nll_loss::call(&dl, &dt, dw, 1, -100).unwrap();
        assert_eq!(side.device(), device());
        assert_eq!(host_f32(&side), cpu.to_vec::<f32>().unwrap());
    }
    // Advanced indexing: a Tensor?[] with an absent entry.
    let idx = Tensor::from_slice(&[1i64, 0]).unwrap();
    let didx = to_sidecar(&idx).unwrap();
    let cpu = op::index_Tensor::call(&logits, &[None, Some(Clone::clone(&idx))]).unwrap();
    let side = op::index_Tensor::call(&dl, &[None, Some(didx)]).unwrap();
    assert_eq!(host_f32(&side), cpu.to_vec::<f32>().unwrap());
    // index_put_ writes through a Tensor?[] into the original.
    let target_side = to_sidecar(&logits).unwrap();
    let vals = to_sidecar(&f32s(&[7.0, 8.0], &[2])).unwrap();
    let rows = to_sidecar(&Tensor::from_slice(&[0i64, 1]).unwrap()).unwrap();
    let cols = to_sidecar(&Tensor::from_slice(&[1i64, 2]).unwrap()).unwrap();
    op::index_put_::call(&target_side, &[Some(rows), Some(cols)], &vals, false).unwrap();
    let got = host_f32(&target_side);
    assert_eq!(got[1], 7.0);
    assert_eq!(got[5], 8.0);
    assert_eq!(got[0], 0.5);
}

#[test]
fn view_operators_are_refused() {
    let _g = serial();
    let a = to_sidecar(&f32s(&[1.0, 2.0, 3.0, 4.0], &[4])).unwrap();
    let err = op::unfold::call(&a, 0, 2, 1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotImplementedError);
    assert!(
        err.message().contains(
            "The operator aten::unfold appears to be a view operator, but it has no implementation for the backend \"sidecar:0\". View operators don't support falling back to run on the CPU, since the tensor's storage cannot be shared across devices."
        ),
        "{}",
        err.message()
    );
    // Views the sidecar implements (view, as_strided) and composites over them work.
    let v = a.view(&[2, 2]).unwrap();
    assert!(v.is_alias_of(&a));
    let t = v.t().unwrap();
    assert!(t.is_alias_of(&a));
    assert_eq!(host_f32(&t.contiguous().unwrap()), [1.0, 3.0, 2.0, 4.0]);
}

#[test]
fn backend_kernels_defer_to_the_fallback_by_type() {
    let _g = serial();
    // int64 add: the sidecar kernel calls `call_fallback::<op::add_Tensor>`.
    let x = to_sidecar(&Tensor::from_slice(&[1i64, 2]).unwrap()).unwrap();
    let n0 = fallback_count("aten::add.Tensor");
    let r = switchyard_ops::add_with(&x, &x, Scalar::Int(3)).unwrap();
    assert_eq!(fallback_count("aten::add.Tensor"), n0 + 1);
    assert_eq!(r.device(), device());
    assert_eq!(to_cpu(&r).unwrap().to_vec::<i64>().unwrap(), [4, 8]);
    // A typed in-place call through the helper returns the original tensor.
    let r = switchyard_backend::call_fallback::<op::mul__Tensor>(
        switchyard_sidecar::fallback,
        (&x, &x),
    )
    .unwrap();
    assert!(r.is_same(&x));
    assert_eq!(to_cpu(&x).unwrap().to_vec::<i64>().unwrap(), [1, 4]);
}

#[test]
fn fallback_from_many_threads() {
    let _g = serial();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let base = f32s(&[i as f32, 1.0, 2.0, 3.0], &[2, 2]);
                let d = to_sidecar(&base).unwrap();
                let mut results = Vec::new();
                for _ in 0..20 {
                    let s = d.exp().unwrap().sum().unwrap();
                    results.push(host_f32(&s)[0]);
                }
                let want = base.exp().unwrap().sum().unwrap().item::<f32>().unwrap();
                assert!(results.iter().all(|r| *r == want), "{results:?} vs {want}");
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// The whole operator set against the CPU
// ---------------------------------------------------------------------------------------------

/// Argument texts for one attempt at calling an operator; `None` leaves the argument to its
/// default (or absent optional / auto-created out tensor).
struct Variant {
    name: &'static str,
    tensor: &'static str,
    long: &'static str,
    shape: &'static str,
    dims: &'static str,
    dim: &'static str,
    optional: bool,
    out_dtype: &'static str,
}

const VARIANTS: &[Variant] = &[
    Variant {
        name: "2x3 float",
        tensor: "[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
        long: "[[0,1,0],[1,0,1]]",
        shape: "[2,3]",
        dims: "[1]",
        dim: "1",
        optional: false,
        out_dtype: "float32",
    },
    Variant {
        name: "2x3 float, optionals given",
        tensor: "[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
        long: "[[0,1,0],[1,0,1]]",
        shape: "[2,3]",
        dims: "[0]",
        dim: "1",
        optional: true,
        out_dtype: "float32",
    },
    Variant {
        name: "3x3 float",
        tensor: "[[0.5,-1.25,2.0],[3.0,-0.75,1.5],[1.0,2.0,-3.0]]",
        long: "[[0,1,2],[2,1,0],[1,1,1]]",
        shape: "[3,3]",
        dims: "[0,1]",
        dim: "1",
        optional: false,
        out_dtype: "float32",
    },
    Variant {
        name: "1x2x4x4 float",
        tensor: "[[[[0.5,-1.0,2.0,1.5],[3.0,0.25,-2.0,1.0],[0.0,1.0,2.0,3.0],[-1.0,-2.0,0.5,0.75]],[[1.0,2.0,3.0,4.0],[0.5,0.5,0.5,0.5],[-1.0,1.0,-1.0,1.0],[2.0,0.0,2.0,0.0]]]]",
        long: "[[[[0,1,0,1],[1,0,1,0],[0,0,1,1],[1,1,0,0]],[[0,1,0,1],[1,0,1,0],[0,0,1,1],[1,1,0,0]]]]",
        shape: "[2,2]",
        dims: "[1]",
        dim: "1",
        optional: false,
        out_dtype: "float32",
    },
    Variant {
        name: "3 float",
        tensor: "[0.5,-1.25,2.0]",
        long: "[0,2,1]",
        shape: "[3]",
        dims: "[0]",
        dim: "0",
        optional: false,
        out_dtype: "float32",
    },
    Variant {
        name: "2x3 int64",
        tensor: "[[1,2,3],[4,0,2]]",
        long: "[[0,1,0],[1,0,1]]",
        shape: "[2,3]",
        dims: "[1]",
        dim: "1",
        optional: false,
        out_dtype: "int64",
    },
    Variant {
        name: "2x3 bool",
        tensor: "[[true,false,true],[false,false,true]]",
        long: "[[0,1,0],[1,0,1]]",
        shape: "[2,3]",
        dims: "[1]",
        dim: "1",
        optional: false,
        out_dtype: "bool",
    },
    Variant {
        name: "2x2x2 float",
        tensor: "[[[0.5,-1.25],[2.0,3.0]],[[-0.75,1.5],[1.0,2.0]]]",
        long: "[[[0,1],[1,0]],[[1,1],[0,0]]]",
        shape: "[2,2,2]",
        dims: "[1]",
        dim: "1",
        optional: false,
        out_dtype: "float32",
    },
    Variant {
        name: "2x3 probabilities",
        tensor: "[[0.5,0.25,1.0],[0.0,0.75,0.5]]",
        long: "[0,1]",
        shape: "[2,3]",
        dims: "[1]",
        dim: "1",
        optional: true,
        out_dtype: "float32",
    },
];

/// The text of argument `name` of type `ty` under `v`, or `None` for its default.
fn argument_text(
    arg: &switchyard_schema::Argument,
    position: usize,
    v: &Variant,
) -> Option<String> {
    use switchyard_schema::{BaseType, Type};
    let name = arg.name.as_str();
    let base = |t: &Type| match t {
        Type::Optional(inner) => (**inner).clone(),
        other => other.clone(),
    };
    let ty = base(&arg.ty);
    if arg.is_out && ty.is_tensor() {
        return Some(format!(
            "{{\"dtype\": \"{}\", \"shape\": [0], \"values\": []}}",
            if name == "indices" {
                "int64"
            } else {
                v.out_dtype
            }
        ));
    }
    if arg.ty.is_optional() && !v.optional && arg.default.is_some() {
        return None;
    }
    // With `optional`, optional arguments get a value even where they have a default.
    let give_optional = v.optional && arg.ty.is_optional();
    match name {
        "rounding_mode" => return Some("floor".to_owned()),
        "value" if ty.is_tensor() => return Some("2.5".to_owned()),
        "high" => return Some("5".to_owned()),
        "groups" => return Some("1".to_owned()),
        "padding" | "output_padding" if arg.default.is_none() => return Some("[0,0]".to_owned()),
        "dilation" if arg.default.is_none() => return Some("[1,1]".to_owned()),
        "index" if v.shape == "[3]" || v.name.contains("probabilities") => {
            return Some("[0,1]".to_owned());
        }
        _ => {}
    }
    match &ty {
        Type::Base(BaseType::Tensor) => Some(match name {
            "target" if v.shape == "[2,3]" => "[2,0]".to_owned(),
            "index" | "indices" => v.long.to_owned(),
            "mask" | "condition" => v.long.replace('0', "false").replace(['1', '2'], "true"),
            "weight" | "bias" if v.shape == "[2,3]" && arg.ty.is_optional() => {
                "[1.0,2.0,0.5]".to_owned()
            }
            // A second tensor operand differs from the first.
            _ if position > 0 && !v.tensor.contains("true") && !v.tensor.contains('.') => {
                v.tensor.replace('-', "")
            }
            _ if position > 0 => v.tensor.replace("0.5", "0.25"),
            _ => v.tensor.to_owned(),
        }),
        Type::List { elem, .. } if elem.is_tensor() => Some(format!("[{},{}]", v.tensor, v.tensor)),
        Type::List { elem, .. } if elem.is_optional_tensor() => Some(format!("[{}]", v.long)),
        _ if arg.default.is_some() && !give_optional => None,
        Type::Base(BaseType::Int | BaseType::SymInt) => Some(
            match name {
                "dim" | "dim0" => v.dim,
                "dim1" => "0",
                "n" | "m" | "num_classes" | "steps" => "3",
                "k" | "size" | "step" | "length" | "split_size" | "sections" | "chunks" => "1",
                _ => "0",
            }
            .to_owned(),
        ),
        Type::List { elem, .. }
            if matches!(**elem, Type::Base(BaseType::Int | BaseType::SymInt)) =>
        {
            Some(
                match name {
                    "size" | "sizes" => v.shape,
                    "dims" | "dim" => v.dims,
                    "stride" => "[1,1]",
                    "pad" => "[1,1]",
                    "repeats" => "[1,2]",
                    "shifts" => "[1]",
                    "normalized_shape" => "[3]",
                    "kernel_size" => "[2,2]",
                    "split_sizes" | "split_size" => "[1,1]",
                    _ => "[1]",
                }
                .to_owned(),
            )
        }
        Type::Base(BaseType::Float) => Some("0.5".to_owned()),
        Type::Base(BaseType::Bool) => Some("false".to_owned()),
        Type::Base(BaseType::Scalar) => Some(if name == "min" { "0" } else { "2" }.to_owned()),
        Type::Base(BaseType::ScalarType) => Some("float32".to_owned()),
        Type::Base(BaseType::Str) => Some(if name == "reduce" { "add" } else { "none" }.to_owned()),
        // An optional argument without a default must still be given (`Generator? generator`).
        _ if arg.ty.is_optional() && arg.default.is_none() => Some("None".to_owned()),
        _ => None,
    }
}

/// Fresh arguments for one run on `device` (tensors created there).
fn arguments(op: &OperatorHandle, v: &Variant, device: Device) -> Option<Stack> {
    let schema = op.schema()?;
    let mut texts = Vec::new();
    let mut tensors_seen = 0;
    for a in &schema.arguments {
        let text = argument_text(a, tensors_seen, v);
        if a.ty.is_tensor_like() {
            tensors_seen += 1;
        }
        if let Some(t) = text {
            texts.push(format!("{}={t}", a.name));
        }
    }
    let mut stack = parse_call_args(&schema, &texts, device).ok()?;
    // Device arguments name the device of the run (factories create there).
    for (a, value) in schema.arguments.iter().zip(stack.iter_mut()) {
        if a.name == "device" {
            *value = IValue::Device(device);
        }
    }
    Some(stack)
}

/// Row-major values of a tensor (any device) as f64 plus dtype and shape.
fn contents(t: &Tensor) -> (ScalarType, Vec<i64>, Vec<f64>) {
    let host = if t.is_cpu() {
        Clone::clone(t)
    } else {
        to_cpu(t).unwrap()
    };
    (t.dtype(), host.sizes().to_vec(), host.to_f64_vec().unwrap())
}

fn same_values(a: &[f64], b: &[f64], exact: bool) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            (x.is_nan() && y.is_nan())
                || x == y
                || (!exact && (x - y).abs() <= 1e-5 * (1.0 + x.abs().max(y.abs())))
        })
}

/// Compares one returned value (or written argument) of the sidecar run with the CPU run:
/// every tensor of the sidecar run must be on the sidecar (a result left on the CPU, or a
/// written argument replaced by a CPU tensor, is a fallback bug), with the CPU run's dtype,
/// shape and values.
fn compare(cpu: &IValue, side: &IValue, what: &str, exact: bool) -> Result<(), String> {
    match (cpu, side) {
        (IValue::Tensor(c), IValue::Tensor(s)) => {
            if s.device() != device() {
                return Err(format!("{what}: on {}", s.device()));
            }
            let (cd, cs, cv) = contents(c);
            let (sd, ss, sv) = contents(s);
            if cd != sd || cs != ss || !same_values(&cv, &sv, exact || !cd.is_floating_point()) {
                return Err(format!(
                    "{what}: cpu {cd:?}{cs:?} {cv:?} vs sidecar {sd:?}{ss:?} {sv:?}"
                ));
            }
            Ok(())
        }
        (IValue::TensorList(c), IValue::TensorList(s)) if c.len() == s.len() => {
            for (i, (c, s)) in c.iter().zip(s).enumerate() {
                compare(
                    &IValue::Tensor(Clone::clone(c)),
                    &IValue::Tensor(Clone::clone(s)),
                    &format!("{what}[{i}]"),
                    exact,
                )?;
            }
            Ok(())
        }
        (IValue::Tuple(c), IValue::Tuple(s)) if c.len() == s.len() => {
            for (i, (c, s)) in c.iter().zip(s).enumerate() {
                compare(c, s, &format!("{what}.{i}"), exact)?;
            }
            Ok(())
        }
        (c, s) if format!("{c:?}") == format!("{s:?}") => Ok(()),
        (c, s) => Err(format!("{what}: cpu {c:?} vs sidecar {s:?}")),
    }
}

/// The device check of [`compare`] looks at the sidecar run's tensor: a result that stayed on
/// the CPU is reported even when its values are right. (It used to test the CPU run's tensor,
/// which is always on the CPU, so it could never fire.)
#[test]
fn the_comparison_refuses_results_left_on_the_cpu() {
    let _g = serial();
    let cpu = IValue::Tensor(f32s(&[1.0, 2.0], &[2]));
    let on_cpu = IValue::Tensor(f32s(&[1.0, 2.0], &[2]));
    let err = compare(&cpu, &on_cpu, "return 0", true).unwrap_err();
    assert_eq!(err, "return 0: on cpu");
    // Inside lists and tuples too.
    let list = |t: &IValue| IValue::TensorList(vec![Clone::clone(t.as_tensor().unwrap())]);
    let err = compare(&list(&cpu), &list(&on_cpu), "return 0", true).unwrap_err();
    assert_eq!(err, "return 0[0]: on cpu");
    // The same values on the sidecar pass.
    let side = IValue::Tensor(to_sidecar(&f32s(&[1.0, 2.0], &[2])).unwrap());
    compare(&cpu, &side, "return 0", true).unwrap();
    let other = IValue::Tensor(to_sidecar(&f32s(&[1.0, 3.0], &[2])).unwrap());
    assert!(compare(&cpu, &other, "return 0", true).is_err());
}

/// Operators left out of the comparison, with the reason.
const SKIPPED: &[(&str, &str)] = &[
    ("aten::_to_cpu", "returns CPU tensors by definition"),
    (
        "aten::_copy_from",
        "a backend primitive, tested through copy_",
    ),
    (
        "aten::_copy_from_and_resize",
        "a backend primitive, tested through out= ops",
    ),
    ("aten::_copy_from.out", "a backend primitive"),
    (
        "aten::unfold_copy",
        "a composite over `unfold`, a view the sidecar does not implement (refused, as tested above)",
    ),
    ("aten::unfold_copy.out", "as unfold_copy"),
    ("aten::_copy_from_and_resize.out", "a backend primitive"),
];

/// The version counters of the tensors a call writes (list elements one by one).
fn written_versions(facts: &switchyard_dispatch::SchemaFacts, args: &Stack) -> Vec<u32> {
    facts
        .tensor_arguments
        .iter()
        .filter(|a| a.is_write)
        .flat_map(|a| match &args[a.index] {
            IValue::Tensor(t) => vec![t.version()],
            IValue::TensorList(l) => l.iter().map(Tensor::version).collect(),
            IValue::OptionalTensorList(l) => l.iter().flatten().map(Tensor::version).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The operators whose calls (with this file's arguments) do not bump once in PyTorch 2.15
/// either (recorded from `/tmp/torchref`), with the number of bumps.
const BUMPS_OTHER_THAN_ONE: &[(&str, u32, &str)] = &[
    (
        "aten::dropout_",
        0,
        "called with train=False: a composite returning `self` untouched",
    ),
    (
        "aten::randn.out",
        2,
        "a CompositeImplicitAutograd composite: resize_, then normal_, each bumping",
    ),
    ("aten::randn.generator_out", 2, "as randn.out"),
    (
        "aten::detach_",
        0,
        "changes autograd state, not data (PyTorch's manual ADInplaceOrView kernel does not bump)",
    ),
    (
        "aten::rand.generator_out",
        2,
        "a CompositeImplicitAutograd composite: resize_, then uniform_",
    ),
];

/// Every tensor a call writes had its version bumped exactly once (PyTorch bumps once per
/// in-place or out= call, whatever the kernel does inside: copies into `self`, proxies,
/// composites calling other out= operators, the fallback's copy-back), except for the
/// composites PyTorch runs above its ADInplaceOrView layer ([`BUMPS_OTHER_THAN_ONE`]).
fn bumped_once(op: &str, before: &[u32], after: &[u32]) -> Result<(), String> {
    let bumps = BUMPS_OTHER_THAN_ONE
        .iter()
        .find(|(name, _, _)| *name == op)
        .map_or(1, |(_, n, _)| *n);
    let want: Vec<u32> = before.iter().map(|v| v + bumps).collect();
    if after != want.as_slice() {
        return Err(format!(
            "versions of the written tensors went from {before:?} to {after:?}, not up by {bumps}"
        ));
    }
    Ok(())
}

#[test]
fn every_operator_gives_the_cpu_result() {
    let _g = serial();
    let mut compared = Vec::new();
    let mut failures = Vec::new();
    let mut never_ran = Vec::new();
    let mut views = 0;
    let mut ops: Vec<OperatorHandle> = Dispatcher::singleton()
        .all_operators()
        .into_iter()
        .filter(|o| o.name().starts_with("aten::") && o.schema().is_some())
        .collect();
    ops.sort_by(|a, b| a.name().cmp(b.name()));
    for op in &ops {
        let name = op.name();
        if SKIPPED.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let facts = op.require_schema_facts().unwrap();
        if facts.is_view() {
            views += 1;
            continue;
        }
        let mut ran = false;
        for v in VARIANTS {
            let Some(mut cpu_stack) = arguments(op, v, Device::CPU) else {
                continue;
            };
            let cpu_args = cpu_stack.clone();
            let cpu_versions = written_versions(&facts, &cpu_args);
            switchyard_core::generator::manual_seed(7).unwrap();
            if op.call_boxed(&mut cpu_stack).is_err() {
                continue;
            }
            ran = true;
            let mut side_stack = arguments(op, v, device()).unwrap();
            let side_args = side_stack.clone();
            let side_versions = written_versions(&facts, &side_args);
            switchyard_core::generator::manual_seed(7).unwrap();
            // Composites over the sidecar's own float kernels round differently from the CPU.
            let exact = false;
            let outcome = bumped_once(name, &cpu_versions, &written_versions(&facts, &cpu_args))
                .map_err(|e| format!("on the CPU: {e}"))
                .and_then(|()| {
                    op.call_boxed(&mut side_stack)
                        .map_err(|e| format!("failed on the sidecar: {e}"))
                })
                .and_then(|()| {
                    bumped_once(name, &side_versions, &written_versions(&facts, &side_args))
                        .map_err(|e| format!("on the sidecar: {e}"))?;
                    if cpu_stack.len() != side_stack.len() {
                        return Err("different number of returns".to_owned());
                    }
                    for (i, (c, s)) in cpu_stack.iter().zip(&side_stack).enumerate() {
                        compare(c, s, &format!("return {i}"), exact)?;
                    }
                    // Written arguments end up equal too (the mutation reached the original).
                    for a in facts.tensor_arguments.iter().filter(|a| a.is_write) {
                        compare(
                            &cpu_args[a.index],
                            &side_args[a.index],
                            &format!("argument {}", a.index),
                            exact,
                        )?;
                    }
                    Ok(())
                });
            match outcome {
                Ok(()) => compared.push((name.to_owned(), op.schema().unwrap().kind())),
                Err(e) => failures.push(format!("{name} ({}): {e}", v.name)),
            }
            break;
        }
        if !ran {
            never_ran.push(name.to_owned());
        }
    }
    println!(
        "compared {} operators with the CPU; {} views skipped; {} found no arguments the CPU accepts:\n{}",
        compared.len(),
        views,
        never_ran.len(),
        never_ran.join(", ")
    );
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let forms = |kind: SchemaKind| compared.iter().filter(|(_, k)| *k == kind).count();
    println!(
        "of which functional: {}, in-place: {}, out=: {}",
        forms(SchemaKind::Functional),
        forms(SchemaKind::Inplace),
        forms(SchemaKind::Out)
    );
    // A floor, so that the comparison cannot silently cover nothing.
    assert!(
        compared.len() >= 500,
        "only {} operators compared",
        compared.len()
    );
}
