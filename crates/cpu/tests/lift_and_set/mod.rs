//! `lift`, `lift_fresh`, `lift_fresh_copy` (with their out= overloads) and
//! `set_.source_Tensor` / `set.source_Tensor` through the dispatcher, on the target's tensors
//! (CPU or lazy) and Meta tensors. Expected values, geometries and messages are PyTorch
//! 2.15's, recorded by hand from `torch`.

use super::views_support::{
    CpuOnly, cpu_only, finish_one, host, known_difference, on_cpu, serial, to_target,
};
use switchyard_core::{Device, ScalarType, Tensor};
use switchyard_ops::op;

/// `torch.arange(6.).reshape(2, 3).t()`: sizes [3, 2], strides [1, 3].
fn transposed() -> Tensor {
    let base = Tensor::from_vec((0..6).map(|v| v as f32).collect::<Vec<_>>(), &[2, 3]).unwrap();
    op::t::call(&base).unwrap()
}

/// `torch.empty(4, 5, device='meta')[1:].t()`: sizes [5, 3], strides [1, 5], offset 5.
fn meta_view() -> Tensor {
    let m = Tensor::allocate(&[4, 5], ScalarType::Float, Device::META).unwrap();
    let s = op::slice_Tensor::call(&m, 0, Some(1), None, 1).unwrap();
    op::t::call(&s).unwrap()
}

fn meta(sizes: &[i64], dtype: ScalarType) -> Tensor {
    Tensor::allocate(sizes, dtype, Device::META).unwrap()
}

fn geometry(t: &Tensor) -> (Vec<i64>, Vec<i64>, i64) {
    (t.sizes().to_vec(), t.strides().to_vec(), t.storage_offset())
}

#[test]
fn lift_and_lift_fresh_share_data_and_geometry() {
    if cpu_only(CpuOnly::Storage) {
        return;
    }
    let t = transposed();
    for (name, r) in [
        ("lift", op::lift::call(&t).unwrap()),
        ("lift_fresh", op::lift_fresh::call(&t).unwrap()),
    ] {
        // torch: same strides (1, 3), same data_ptr.
        assert_eq!(geometry(&r), (vec![3, 2], vec![1, 3], 0), "{name}");
        assert!(r.is_alias_of(&t), "{name}");
        // torch 2.15: `torch.ops.aten.lift(t) is t` and `lift_fresh(t) is t` are both True.
        assert!(r.is_same(&t), "{name}: the input itself");
        assert_eq!(r.dtype(), ScalarType::Float);
        assert_eq!(
            r.to_vec::<f32>().unwrap(),
            t.to_vec::<f32>().unwrap(),
            "{name}"
        );
        // Writes through either are seen by the other, and versions are shared.
        let before = t.version();
        op::fill__Scalar::call(&r, 7.0.into()).unwrap();
        assert!(t.version() > before, "{name}");
        assert_eq!(t.to_vec::<f32>().unwrap(), vec![7.0; 6], "{name}");
        op::zero_::call(&t).unwrap();
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![0.0; 6], "{name}");
    }
    // Other dtypes and 0-dim inputs pass through unchanged.
    let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    assert_eq!(
        op::lift::call(&b).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false]
    );
    let s = Tensor::from_vec(vec![3i64], &[]).unwrap();
    let r = op::lift_fresh::call(&s).unwrap();
    assert_eq!((r.dim(), r.item::<i64>().unwrap()), (0, 3));
}

#[test]
fn lift_fresh_copy_is_a_contiguous_copy() {
    let _serial = serial();
    let t = to_target(transposed());
    let r = op::lift_fresh_copy::call(&t).unwrap();
    // torch: strides (2, 1), a new data_ptr.
    assert_eq!(r.sizes().as_slice(), &[3, 2]);
    if known_difference(
        "lift_fresh_copy of a functional tensor",
        &serde_json::Value::Null,
    )
    .is_none()
    {
        assert_eq!(r.strides().as_slice(), &[2, 1]);
    }
    if on_cpu() {
        // Memory and its version counter: a lazy tensor has neither to share.
        assert_eq!(r.storage_offset(), 0);
        assert!(!r.is_alias_of(&t));
        assert!(!r.version_counter().is_shared_with(t.version_counter()));
    }
    assert_eq!(
        host(&r).to_vec::<f32>().unwrap(),
        vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
    // A write to the copy leaves the input as it was.
    op::fill__Scalar::call(&r, 1.0.into()).unwrap();
    assert_eq!(host(&r).to_vec::<f32>().unwrap(), vec![1.0; 6]);
    assert_eq!(
        host(&t).to_vec::<f32>().unwrap(),
        vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
    // torch.ops.aten.lift_fresh_copy(torch.tensor(3)) / of a bool tensor.
    let s = to_target(Tensor::from_vec(vec![3i64], &[]).unwrap());
    let r = op::lift_fresh_copy::call(&s).unwrap();
    assert_eq!((r.dim(), host(&r).item::<i64>().unwrap()), (0, 3));
    let b = to_target(Tensor::from_vec(vec![true, false], &[2]).unwrap());
    let r = op::lift_fresh_copy::call(&b).unwrap();
    assert_eq!(host(&r).to_vec::<bool>().unwrap(), vec![true, false]);
}

#[test]
fn lift_out_and_lift_fresh_copy_out() {
    let _serial = serial();
    let t = to_target(transposed());
    let expected = vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0];
    // An out of the wrong size is resized (torch warns): strides (2, 1).
    for (name, out) in [
        (
            "lift.out",
            Tensor::allocate(&[7], ScalarType::Float, Device::CPU).unwrap(),
        ),
        (
            "lift_fresh_copy.out",
            Tensor::allocate(&[3, 2], ScalarType::Float, Device::CPU).unwrap(),
        ),
    ] {
        let out = to_target(out);
        let r = if name == "lift.out" {
            op::lift_out::call(&t, &out).unwrap()
        } else {
            op::lift_fresh_copy_out::call(&t, &out).unwrap()
        };
        assert!(r.is_same(&out), "{name}");
        assert_eq!(
            (out.sizes().to_vec(), out.strides().to_vec()),
            (vec![3, 2], vec![2, 1]),
            "{name}"
        );
        assert_eq!(host(&out).to_vec::<f32>().unwrap(), expected, "{name}");
        if on_cpu() {
            // Memory: a lazy tensor has none.
            assert_eq!(out.storage_offset(), 0, "{name}");
            assert!(!out.is_alias_of(&t), "{name}");
        }
    }
    // An out of another dtype: torch's message (the out= overload's own check, which a
    // functionalizing target does not make: its `known_difference`).
    for name in ["lift.out wrong dtype", "lift_fresh_copy.out wrong dtype"] {
        if known_difference(name, &serde_json::Value::Null).is_some() {
            continue;
        }
        let long = to_target(Tensor::allocate(&[0], ScalarType::Long, Device::CPU).unwrap());
        let e = finish_one(if name.starts_with("lift.out") {
            op::lift_out::call(&t, &long)
        } else {
            op::lift_fresh_copy_out::call(&t, &long)
        })
        .unwrap_err();
        assert_eq!(e.kind().name(), "RuntimeError", "{name}");
        assert_eq!(
            e.message(),
            "Expected out tensor to have dtype float, but got long int instead",
            "{name}"
        );
    }
}

#[test]
fn lift_ops_on_meta_tensors() {
    if cpu_only(CpuOnly::Meta) {
        return;
    }
    let m = meta_view();
    // torch: lift / lift_fresh keep ([5, 3], (1, 5), 5); lift_fresh_copy gives (3, 1), 0.
    for r in [
        op::lift::call(&m).unwrap(),
        op::lift_fresh::call(&m).unwrap(),
    ] {
        assert!(r.is_meta());
        assert_eq!(geometry(&r), (vec![5, 3], vec![1, 5], 5));
        assert!(r.is_alias_of(&m));
    }
    let r = op::lift_fresh_copy::call(&m).unwrap();
    assert!(r.is_meta());
    assert_eq!(geometry(&r), (vec![5, 3], vec![3, 1], 0));
    let out = meta(&[0], ScalarType::Float);
    op::lift_fresh_copy_out::call(&m, &out).unwrap();
    assert_eq!(geometry(&out), (vec![5, 3], vec![3, 1], 0));
}

#[test]
fn set_on_meta_takes_the_sources_geometry() {
    if cpu_only(CpuOnly::Meta) {
        return;
    }
    // torch: m(3).set_(m(4, 5).t()[1:]) -> [4, 4], (1, 5), offset 1.
    let s = meta(&[4, 5], ScalarType::Float);
    let src = op::slice_Tensor::call(&op::t::call(&s).unwrap(), 0, Some(1), None, 1).unwrap();
    let m = meta(&[3], ScalarType::Float);
    let r = op::set__source_Tensor::call(&m, &src).unwrap();
    assert!(r.is_same(&m));
    assert_eq!(geometry(&m), (vec![4, 4], vec![1, 5], 1));
    // torch: self's storage is then the source's, 80 bytes.
    assert_eq!(m.storage().unwrap().nbytes(), 80);
    // torch: m(3).set_(m(0)) -> [0], (1,), 0.
    let m = meta(&[3], ScalarType::Float);
    op::set__source_Tensor::call(&m, &meta(&[0], ScalarType::Float)).unwrap();
    assert_eq!(geometry(&m), (vec![0], vec![1], 0));
    // x.set_(x) changes nothing.
    let m = meta(&[3], ScalarType::Float);
    op::set__source_Tensor::call(&m, &m).unwrap();
    assert_eq!(geometry(&m), (vec![3], vec![1], 0));
    // The functional variant: torch.ops.aten.set.source_Tensor(m(3), m(4, 5)[1]) -> [5], (1,),
    // offset 5; self is unchanged. Its out=: [5], (1,), 0.
    let m = meta(&[3], ScalarType::Float);
    let row = op::select_int::call(&s, 0, 1).unwrap();
    let r = op::set_source_Tensor::call(&m, &row).unwrap();
    assert_eq!(geometry(&r), (vec![5], vec![1], 5));
    assert_eq!(geometry(&m), (vec![3], vec![1], 0));
    let out = meta(&[0], ScalarType::Float);
    op::set_source_Tensor_out::call(&m, &row, &out).unwrap();
    assert_eq!(geometry(&out), (vec![5], vec![1], 0));
}

#[test]
fn set_errors_are_pytorchs() {
    // Each case has a Meta tensor (the Meta kernel's checks, and set_ between a Meta and a
    // CPU tensor); `set_refuses_another_dtype_on_the_target` runs on every target.
    if cpu_only(CpuOnly::Meta) {
        return;
    }
    let cases = [
        // m(3).set_(m(2, 3, dtype=torch.int64))
        (
            meta(&[3], ScalarType::Float),
            meta(&[2, 3], ScalarType::Long),
            "Could not set tensor of type long int to a tensor of type float",
        ),
        // m(3).set_(torch.zeros(2))
        (
            meta(&[3], ScalarType::Float),
            Tensor::allocate(&[2], ScalarType::Float, Device::CPU).unwrap(),
            "Attempted to set the storage of a tensor on device \"meta\" to a storage on different device \"cpu\".  This is no longer allowed; the devices must match.",
        ),
        // torch.zeros(3).set_(m(2))
        (
            Tensor::allocate(&[3], ScalarType::Float, Device::CPU).unwrap(),
            meta(&[2], ScalarType::Float),
            "Attempted to set the storage of a tensor on device \"cpu\" to a storage on different device \"meta\".  This is no longer allowed; the devices must match.",
        ),
        // torch.zeros(3).set_(torch.zeros(2, dtype=torch.int64)): the dtype is checked first.
        (
            Tensor::allocate(&[3], ScalarType::Float, Device::CPU).unwrap(),
            meta(&[2], ScalarType::Long),
            "Could not set tensor of type long int to a tensor of type float",
        ),
    ];
    for (self_, source, message) in cases {
        let before = geometry(&self_);
        let e = op::set__source_Tensor::call(&self_, &source).unwrap_err();
        assert_eq!(e.kind().name(), "RuntimeError");
        assert_eq!(e.message(), message);
        assert_eq!(geometry(&self_), before, "nothing changes on an error");
    }
}

/// `set_` with a source of another dtype, both on the target: the dtype is checked first.
#[test]
fn set_refuses_another_dtype_on_the_target() {
    let _serial = serial();
    // torch.zeros(3).set_(torch.zeros(2, dtype=torch.int64))
    let self_ = to_target(Tensor::from_vec(vec![0.0f32; 3], &[3]).unwrap());
    let source = to_target(Tensor::from_vec(vec![0i64; 2], &[2]).unwrap());
    let e = finish_one(op::set__source_Tensor::call(&self_, &source)).unwrap_err();
    assert_eq!(e.kind().name(), "RuntimeError");
    assert_eq!(
        e.message(),
        "Could not set tensor of type long int to a tensor of type float"
    );
    assert_eq!(
        self_.sizes().as_slice(),
        &[3],
        "nothing changes on an error"
    );
    assert_eq!(host(&self_).to_vec::<f32>().unwrap(), vec![0.0; 3]);
}

#[test]
fn set_on_cpu_works_within_one_storage_and_refuses_another() {
    if cpu_only(CpuOnly::Storage) {
        return;
    }
    // torch: y.set_(y.t()) on a (2, 3) tensor -> [3, 2], (1, 3), same values.
    let y = Tensor::from_vec((0..6).map(|v| v as f32).collect::<Vec<_>>(), &[2, 3]).unwrap();
    let yt = op::t::call(&y).unwrap();
    op::set__source_Tensor::call(&y, &yt).unwrap();
    assert_eq!(geometry(&y), (vec![3, 2], vec![1, 3], 0));
    assert_eq!(
        y.to_vec::<f32>().unwrap(),
        vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
    // Another storage: this runtime's storage is fixed at creation (PyTorch would share it).
    let x = Tensor::allocate(&[3], ScalarType::Float, Device::CPU).unwrap();
    let e = op::set__source_Tensor::call(&x, &transposed()).unwrap_err();
    assert_eq!(e.kind().name(), "NotImplementedError");
    assert!(
        e.message().starts_with(
            "set_: making a CPU tensor view another tensor's storage is not supported"
        )
    );
    assert_eq!(geometry(&x), (vec![3], vec![1], 0));
    // The functional variant clones self first, so it always needs another storage.
    let e = op::set_source_Tensor::call(&x, &x).unwrap_err();
    assert_eq!(e.kind().name(), "NotImplementedError");
}
