//! Dispatcher behaviour beyond the upstream table cases: typed/boxed crossings, the in-place
//! and out return rules, redispatch, thread-local guards, fallthrough masks, BackendSelect,
//! error messages, and registration racing with calls.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use switchyard_core::keys::{DispatchKeySet, sets, tensor_key_set};
use switchyard_core::local_dispatch::{
    ExcludeDispatchKeyGuard, IncludeDispatchKeyGuard, InferenceMode,
};
use switchyard_core::{
    BackendComponent, Device, DeviceType, DispatchKey as K, ErrorKind, IValue, Result, Scalar,
    ScalarType, Stack, Tensor,
};
use switchyard_dispatch::backend_select::backend_select_key_set;
use switchyard_dispatch::{
    Dispatcher, Kernel, Library, LibraryKind, OpSignature, ReturnKind, trace,
};

fn lib(d: &'static Dispatcher, ns: &str) -> Library {
    fragment(d, ns)
}

fn scalar_of(t: &Tensor) -> f32 {
    t.to_vec::<f32>().unwrap()[0]
}

fn tagged(v: f32) -> Tensor {
    Tensor::from_slice(&[v]).unwrap()
}

/// A tensor with the key set of a device, without needing that device's memory.
fn fake_tensor(device: DeviceType) -> Tensor {
    let ks = tensor_key_set(K::Dense, device.backend_component(), false);
    Tensor::from_payload(
        Arc::new(()),
        &[1],
        &[1],
        ScalarType::Float,
        Device::new(device, Some(0)),
        ks,
    )
    .unwrap()
}

struct AddSig;
impl OpSignature for AddSig {
    type Args<'a> = (&'a Tensor, &'a Tensor, Scalar);
    type Output = Tensor;
}

struct AddInplaceSig;
impl OpSignature for AddInplaceSig {
    type Args<'a> = (&'a Tensor, &'a Tensor, Scalar);
    type Output = Tensor;
    const RETURN_KIND: ReturnKind = ReturnKind::Inplace;
}

struct AddOutSig;
impl OpSignature for AddOutSig {
    type Args<'a> = (&'a Tensor, &'a Tensor, Scalar, &'a Tensor);
    type Output = Tensor;
    const RETURN_KIND: ReturnKind = ReturnKind::Out(1);
}

fn add_values(a: &Tensor, b: &Tensor, alpha: Scalar) -> f32 {
    scalar_of(a) + alpha.to_f64() as f32 * scalar_of(b)
}

fn typed_add(_: DispatchKeySet, (a, b, alpha): (&Tensor, &Tensor, Scalar)) -> Result<Tensor> {
    Ok(tagged(add_values(a, b, alpha)))
}

fn boxed_add(
    _: &switchyard_dispatch::OperatorHandle,
    _: DispatchKeySet,
    stack: &mut Stack,
) -> Result<()> {
    let args = switchyard_core::ivalue::stack::pop_n(stack, 3)?;
    let v = add_values(
        args[0].as_tensor()?,
        args[1].as_tensor()?,
        args[2].to_scalar()?,
    );
    stack.push(IValue::Tensor(tagged(v)));
    Ok(())
}

#[test]
fn typed_and_boxed_calls_reach_typed_and_boxed_kernels() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut l = lib(d, &ns);
    l.def("add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
        .unwrap();
    l.def("add_boxed(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
        .unwrap();
    l.impl_("add", Kernel::typed::<AddSig>(typed_add).for_key(K::CPU))
        .unwrap();
    l.impl_("add_boxed", Kernel::boxed(boxed_add).for_key(K::CPU))
        .unwrap();
    let (a, b) = (tagged(1.0), tagged(10.0));

    // typed → typed kernel
    let add = d.find_schema(&format!("{ns}::add")).unwrap();
    assert_eq!(
        scalar_of(
            &add.typed::<AddSig>()
                .unwrap()
                .call((&a, &b, Scalar::Int(2)))
                .unwrap()
        ),
        21.0
    );
    // boxed → typed kernel (through its generated adaptor)
    let mut stack: Stack = vec![a.clone().into(), b.clone().into(), IValue::Int(3)];
    add.call_boxed(&mut stack).unwrap();
    assert_eq!(stack.len(), 1);
    assert_eq!(scalar_of(stack[0].as_tensor().unwrap()), 31.0);
    // typed → boxed-only kernel (arguments boxed)
    let add_boxed = d.find_schema(&format!("{ns}::add_boxed")).unwrap();
    assert_eq!(
        scalar_of(
            &add_boxed
                .typed::<AddSig>()
                .unwrap()
                .call((&a, &b, Scalar::Float(0.5)))
                .unwrap()
        ),
        6.0
    );
    // boxed → boxed
    let mut stack: Stack = vec![a.into(), b.into(), IValue::Int(1)];
    add_boxed.call_boxed(&mut stack).unwrap();
    assert_eq!(scalar_of(stack[0].as_tensor().unwrap()), 11.0);
}

/// A boxed in-place / out kernel that writes the result into the mutated argument and pushes
/// a *different* tensor: typed callers must still get their own argument back.
fn boxed_mutating(out_index: usize) -> Kernel {
    Kernel::boxed(move |_, _, stack: &mut Stack| {
        let n = if out_index == 0 { 3 } else { 4 };
        let args = switchyard_core::ivalue::stack::pop_n(stack, n)?;
        let v = add_values(
            args[0].as_tensor()?,
            args[1].as_tensor()?,
            args[2].to_scalar()?,
        );
        let target = args[out_index].as_tensor()?;
        switchyard_core::with_tensors(&[(target, switchyard_core::Access::Write)], |data| {
            switchyard_core::element::write_element(data.bytes_mut(0)?, 0, v);
            Ok(())
        })?;
        stack.push(IValue::Tensor(tagged(-1.0)));
        Ok(())
    })
}

#[test]
fn inplace_and_out_return_the_mutated_argument_itself() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut l = lib(d, &ns);
    l.def("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
        .unwrap();
    l.def("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)")
        .unwrap();
    l.impl_("add_.Tensor", boxed_mutating(0).for_key(K::CPU))
        .unwrap();
    l.impl_("add.out", boxed_mutating(3).for_key(K::CPU))
        .unwrap();
    let (a, b, out) = (tagged(1.0), tagged(2.0), tagged(0.0));
    let inplace = d
        .find_schema(&format!("{ns}::add_.Tensor"))
        .unwrap()
        .typed::<AddInplaceSig>()
        .unwrap();
    let r = inplace.call((&a, &b, Scalar::Int(1))).unwrap();
    assert!(r.is_same(&a), "in-place must return self, not a copy");
    assert_eq!(scalar_of(&a), 3.0);
    let out_op = d
        .find_schema(&format!("{ns}::add.out"))
        .unwrap()
        .typed::<AddOutSig>()
        .unwrap();
    let r = out_op.call((&a, &b, Scalar::Int(1), &out)).unwrap();
    assert!(r.is_same(&out), "out= must return the out argument");
    assert_eq!(scalar_of(&out), 5.0);
}

#[test]
fn autograd_kernel_redispatches_below_itself() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut l = lib(d, &ns);
    l.def("foo(Tensor x) -> Tensor").unwrap();
    l.impl_("foo", kt("fn_cpu").for_key(K::CPU)).unwrap();
    static HANDLE: std::sync::OnceLock<switchyard_dispatch::TypedOperatorHandle<TT>> =
        std::sync::OnceLock::new();
    fn autograd(ks: DispatchKeySet, (x,): (&Tensor,)) -> Result<Tensor> {
        let h = HANDLE.get().unwrap();
        let below = h.redispatch(ks & sets::AFTER_AUTOGRAD, (x,))?;
        Ok(tagged(scalar_of(&below) + 100.0))
    }
    l.impl_(
        "foo",
        Kernel::typed::<TT>(autograd)
            .for_key(K::AutogradCPU)
            .debug("fn_autograd"),
    )
    .unwrap();
    let op = d
        .find_schema(&format!("{ns}::foo"))
        .unwrap()
        .typed::<TT>()
        .unwrap();
    let _ = HANDLE.set(op);
    let x = tagged(1.0);
    let (r, events) = trace::capture(|| op.call((&x,)).unwrap());
    assert_eq!(scalar_of(&r), 101.0);
    let hops: Vec<(usize, &str, K, String)> = events
        .iter()
        .map(|e| (e.depth, e.hop.label(), e.key, e.kernel.clone()))
        .collect();
    assert_eq!(
        hops,
        vec![
            (0, "call", K::AutogradCPU, "fn_autograd".to_string()),
            (1, "redispatch", K::CPU, "fn_cpu".to_string())
        ]
    );
    // Excluding autograd on this thread skips the autograd kernel.
    let _g = ExcludeDispatchKeyGuard::new(sets::AUTOGRAD);
    assert_eq!(scalar_of(&op.call((&x,)).unwrap()), 1.0);
}

#[test]
fn tls_include_and_inference_mode_change_the_key_set() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut l = lib(d, &ns);
    l.def("foo(Tensor x) -> Tensor").unwrap();
    fn cpu(_: DispatchKeySet, _: (&Tensor,)) -> Result<Tensor> {
        Ok(tagged(1.0))
    }
    fn functionalize(_: DispatchKeySet, _: (&Tensor,)) -> Result<Tensor> {
        Ok(tagged(2.0))
    }
    fn autograd(_: DispatchKeySet, _: (&Tensor,)) -> Result<Tensor> {
        Ok(tagged(3.0))
    }
    l.impl_("foo", Kernel::typed::<TT>(cpu).for_key(K::CPU))
        .unwrap();
    l.impl_(
        "foo",
        Kernel::typed::<TT>(functionalize).for_key(K::Functionalize),
    )
    .unwrap();
    l.impl_("foo", Kernel::typed::<TT>(autograd).for_key(K::AutogradCPU))
        .unwrap();
    let op = d
        .find_schema(&format!("{ns}::foo"))
        .unwrap()
        .typed::<TT>()
        .unwrap();
    let x = tagged(0.0);
    assert_eq!(scalar_of(&op.call((&x,)).unwrap()), 3.0);
    {
        let _g = IncludeDispatchKeyGuard::new(K::Functionalize);
        // Functionalize sits below autograd: autograd still runs first...
        assert_eq!(scalar_of(&op.call((&x,)).unwrap()), 3.0);
        // ...and below autograd, the included Functionalize key beats the backend.
        let _below = ExcludeDispatchKeyGuard::new(sets::AUTOGRAD);
        assert_eq!(scalar_of(&op.call((&x,)).unwrap()), 2.0);
    }
    {
        let _g = InferenceMode::new(true);
        let inference_tensor = tagged(0.0);
        assert!(inference_tensor.is_inference());
        assert_eq!(scalar_of(&op.call((&inference_tensor,)).unwrap()), 1.0);
        // A normal tensor still carries autograd keys, but inference mode excludes them.
        assert_eq!(scalar_of(&op.call((&x,)).unwrap()), 1.0);
    }
    assert_eq!(scalar_of(&op.call((&x,)).unwrap()), 3.0);
}

#[test]
fn fallthrough_masks_global_and_per_backend() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut l = lib(d, &ns);
    l.def("foo(Tensor x) -> Tensor").unwrap();
    fn backend(_: DispatchKeySet, (x,): (&Tensor,)) -> Result<Tensor> {
        Ok(x.clone())
    }
    l.impl_(
        "foo",
        Kernel::typed::<TT>(backend).for_key(K::CPU).debug("cpu"),
    )
    .unwrap();
    l.impl_(
        "foo",
        Kernel::typed::<TT>(backend).for_key(K::XLA).debug("xla"),
    )
    .unwrap();
    let h = d.find_schema(&format!("{ns}::foo")).unwrap();
    let cpu = tagged(0.0);
    let xla = fake_tensor(DeviceType::Xla);
    // Default: BackendSelect, ADInplaceOrView and (until the autograd layer registers
    // kernels) the Autograd keys are framework fallthroughs, masked out.
    let ks = h.compute_dispatch_key_set(cpu.key_set());
    assert!(!ks.has(K::ADInplaceOrView) && !ks.has(K::BackendSelect));
    assert!(!ks.has(K::AutogradCPU));
    assert_eq!(ks.highest_priority_type_id(), K::CPU);
    // An operator's own autograd kernels unmask its Autograd keys.
    l.impl_(
        "foo",
        Kernel::typed::<TT>(backend)
            .for_key(K::AutogradCPU)
            .debug("autograd_cpu"),
    )
    .unwrap();
    l.impl_(
        "foo",
        Kernel::typed::<TT>(backend)
            .for_key(K::AutogradXLA)
            .debug("autograd_xla"),
    )
    .unwrap();
    assert_eq!(
        h.compute_dispatch_key_set(cpu.key_set())
            .highest_priority_type_id(),
        K::AutogradCPU
    );
    // A per-operator fallthrough at AutogradXLA only: masks become per-backend.
    let ft = {
        let mut l2 = lib(d, &ns);
        l2.impl_("foo", Kernel::fallthrough().for_key(K::AutogradXLA))
            .unwrap();
        l2
    };
    assert_eq!(
        h.compute_dispatch_key_set(xla.key_set())
            .highest_priority_type_id(),
        K::XLA
    );
    assert_eq!(
        h.compute_dispatch_key_set(cpu.key_set())
            .highest_priority_type_id(),
        K::AutogradCPU
    );
    let (_, events) = trace::capture(|| h.typed::<TT>().unwrap().call((&xla,)).unwrap());
    assert_eq!(
        events.len(),
        1,
        "the fallthrough key is skipped without a call"
    );
    assert_eq!(events[0].key, K::XLA);
    h.check_invariants().unwrap();
    drop(ft);
    assert_eq!(
        h.compute_dispatch_key_set(xla.key_set())
            .highest_priority_type_id(),
        K::AutogradXLA
    );
    // A backend fallback that is a fallthrough applies to every operator.
    let mut fb = Library::with_location(
        d,
        LibraryKind::Impl,
        "_",
        Some(K::AutogradCPU),
        "/dev/null:0",
    );
    // AutogradCPU has the framework's placeholder fallthrough: a layer's fallback replaces it
    // (switchyard-autograd does so), a second one is refused, and removing the layer's brings
    // the placeholder back.
    let mut layer = Library::with_location(
        d,
        LibraryKind::Impl,
        "_",
        Some(K::AutogradCPU),
        "/dev/null:1",
    )
    .unwrap();
    layer
        .fallback(Kernel::fallthrough().debug("layer fallback"))
        .unwrap();
    assert_eq!(
        d.fallback_debug(K::AutogradCPU).as_deref(),
        Some("layer fallback")
    );
    assert!(
        fb.as_mut()
            .unwrap()
            .fallback(Kernel::fallthrough())
            .is_err()
    );
    drop(layer);
    assert_eq!(
        d.fallback_debug(K::AutogradCPU).as_deref(),
        Some(switchyard_dispatch::FRAMEWORK_DEBUG)
    );
    let mut fb = Library::with_location(
        d,
        LibraryKind::Impl,
        "_",
        Some(K::FuncTorchBatched),
        "/dev/null:0",
    )
    .unwrap();
    fb.fallback(Kernel::fallthrough()).unwrap();
    let _g = IncludeDispatchKeyGuard::new(K::FuncTorchBatched);
    assert_eq!(
        h.compute_dispatch_key_set(cpu.key_set())
            .highest_priority_type_id(),
        K::AutogradCPU
    );
    h.check_invariants().unwrap();
}

struct EmptySig;
impl OpSignature for EmptySig {
    type Args<'a> = (
        &'a [i64],
        Option<ScalarType>,
        Option<switchyard_core::Layout>,
        Option<Device>,
        Option<bool>,
    );
    type Output = Tensor;
}

#[test]
fn backend_select_routes_factories_by_device() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut l = lib(d, &ns);
    l.def("my_empty(int[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor").unwrap();
    static OP: std::sync::OnceLock<switchyard_dispatch::TypedOperatorHandle<EmptySig>> =
        std::sync::OnceLock::new();
    type EmptyArgs<'a> = (
        &'a [i64],
        Option<ScalarType>,
        Option<switchyard_core::Layout>,
        Option<Device>,
        Option<bool>,
    );
    fn select(_: DispatchKeySet, args: EmptyArgs<'_>) -> Result<Tensor> {
        let ks = backend_select_key_set(args.1, args.2, args.3, None)?;
        OP.get().unwrap().redispatch(ks, args)
    }
    fn on_device(_: DispatchKeySet, (size, dtype, _, device, _): EmptyArgs<'_>) -> Result<Tensor> {
        Tensor::allocate(
            size,
            dtype.unwrap_or(ScalarType::Float),
            device.unwrap_or(Device::CPU),
        )
    }
    l.impl_(
        "my_empty",
        Kernel::typed::<EmptySig>(select).for_key(K::BackendSelect),
    )
    .unwrap();
    l.impl_(
        "my_empty",
        Kernel::typed::<EmptySig>(on_device).for_key(K::CPU),
    )
    .unwrap();
    l.impl_(
        "my_empty",
        Kernel::typed::<EmptySig>(on_device).for_key(K::Meta),
    )
    .unwrap();
    let op = d
        .find_schema(&format!("{ns}::my_empty"))
        .unwrap()
        .typed::<EmptySig>()
        .unwrap();
    let _ = OP.set(op);
    let cpu = op.call((&[2, 3], None, None, None, None)).unwrap();
    assert!(cpu.is_cpu());
    let meta = op
        .call((
            &[2, 3],
            Some(ScalarType::Long),
            None,
            Some(Device::META),
            None,
        ))
        .unwrap();
    assert!(meta.is_meta());
    assert_eq!(meta.dtype(), ScalarType::Long);
    let e = op
        .call((
            &[1],
            None,
            None,
            Some(Device::new(DeviceType::Cuda, Some(0))),
            None,
        ))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplementedError);
    assert!(e.message().starts_with(&format!(
        "Could not run '{ns}::my_empty' with arguments from the 'CUDA' backend."
    )));
}

#[test]
fn missing_kernel_errors_name_the_operator_and_available_keys() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut l = lib(d, &ns);
    l.def("foo(Tensor x) -> Tensor").unwrap();
    l.def("bar(Tensor[] xs) -> Tensor").unwrap();
    l.impl_("foo", kt("fn_cpu").for_key(K::CPU)).unwrap();
    let foo = d.find_schema(&format!("{ns}::foo")).unwrap();
    let meta = Tensor::allocate(&[1], ScalarType::Float, Device::META).unwrap();
    let e = foo.typed::<TT>().unwrap().call((&meta,)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplementedError);
    assert_eq!(e.operator(), Some(format!("{ns}::foo").as_str()));
    let msg = e.message();
    assert!(msg.starts_with(&format!(
        "Could not run '{ns}::foo' with arguments from the 'Meta' backend. This could be because the operator doesn't exist for this backend"
    )));
    assert!(msg.contains(&format!("'{ns}::foo' is only available for these backends: [CPU, BackendSelect, ADInplaceOrView, AutogradOther, AutogradCPU,")));
    assert!(msg.contains("\n\nCPU: fn_cpu [kernel]\n"));
    // No tensor arguments at all (an empty list).
    let bar = d.find_schema(&format!("{ns}::bar")).unwrap();
    let mut stack: Stack = vec![IValue::TensorList(vec![])];
    let e = bar.call_boxed(&mut stack).unwrap_err();
    assert!(e.message().starts_with(&format!(
        "There were no tensor arguments to this function (e.g., you passed an empty list of Tensors), but no fallback function is registered for schema {ns}::bar."
    )));
}

struct TwoTensors;
impl OpSignature for TwoTensors {
    type Args<'a> = (&'a Tensor, &'a Tensor);
    type Output = Tensor;
}

#[test]
fn signature_mismatches_are_refused() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut l = lib(d, &ns);
    l.def("foo(Tensor x) -> Tensor").unwrap();
    l.impl_("foo", kt("fn_cpu").for_key(K::CPU)).unwrap();
    let h = d.find_schema(&format!("{ns}::foo")).unwrap();
    let e = h.typed::<TwoTensors>().map(|_| ()).unwrap_err();
    assert!(e.message().starts_with(
        "\nTried to access or call an operator with a wrong signature.\n  operator: "
    ));
    fn two(_: DispatchKeySet, (a, _): (&Tensor, &Tensor)) -> Result<Tensor> {
        Ok(a.clone())
    }
    // Another typed signature for the same operator is refused at registration.
    let ns2 = fresh_namespace();
    let mut l2 = lib(d, &ns2);
    l2.impl_("foo", kt("k1").for_key(K::CPU)).unwrap();
    let e = l2
        .impl_("foo", Kernel::typed::<TwoTensors>(two).for_key(K::XLA))
        .unwrap_err();
    assert!(
        e.message()
            .starts_with("\nMismatch in kernel C++ signatures\n"),
        "{}",
        e.message()
    );
    // A def disagreeing with an already registered kernel.
    let e = l2.def("foo(Tensor x, Tensor y) -> Tensor").unwrap_err();
    assert!(
        e.message()
            .contains("reason: The number of arguments is different. 2 vs 1.")
    );
}

#[test]
fn library_misuse_errors() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let _owner = Library::with_location(d, LibraryKind::Def, &ns, None, "/dev/null:0").unwrap();
    let e = Library::with_location(d, LibraryKind::Def, &ns, None, "/dev/null:0").unwrap_err();
    assert!(e.message().starts_with(&format!(
        "Only a single TORCH_LIBRARY can be used to register the namespace {ns};"
    )));
    let mut imp_lib =
        Library::with_location(d, LibraryKind::Impl, &ns, Some(K::CPU), "/dev/null:0").unwrap();
    let e = imp_lib
        .def("foo(Tensor x) -> Tensor")
        .map(|_| ())
        .unwrap_err();
    assert!(e.message().starts_with(
        "def(\"foo\"): Cannot define an operator inside of a TORCH_LIBRARY_IMPL block."
    ));
    let e = imp_lib
        .impl_("foo", kt("k").for_key(K::XLA))
        .map(|_| ())
        .unwrap_err();
    assert!(e.message().starts_with("impl(\"foo\", ...): Explicitly provided dispatch key (XLA) is inconsistent with the dispatch key of the enclosing TORCH_LIBRARY_IMPL block (CPU)."));
    let e = imp_lib
        .fallback(Kernel::fallthrough())
        .map(|_| ())
        .unwrap_err();
    assert!(e.message().starts_with(&format!("fallback(...): Fallback functions which apply to only a single namespace (you specified {ns}) are not supported.")));
    let mut frag = fragment(d, &ns);
    let e = frag
        .fallback(Kernel::fallthrough())
        .map(|_| ())
        .unwrap_err();
    assert!(e.message().starts_with(
        "fallback(...): Cannot define an operator inside of a TORCH_LIBRARY_FRAGMENT block."
    ));
    let e = frag
        .def("other::foo(Tensor x) -> Tensor")
        .map(|_| ())
        .unwrap_err();
    assert!(e.message().starts_with("Explicitly provided namespace (other) in schema string does not match namespace of enclosing TORCH_LIBRARY_FRAGMENT block"));
}

#[test]
fn registration_races_with_calls_from_other_threads() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut base = lib(d, &ns);
    base.def("foo(Tensor x) -> Tensor").unwrap();
    fn one(_: DispatchKeySet, _: (&Tensor,)) -> Result<Tensor> {
        Ok(tagged(1.0))
    }
    fn two(_: DispatchKeySet, _: (&Tensor,)) -> Result<Tensor> {
        Ok(tagged(2.0))
    }
    base.impl_(
        "foo",
        Kernel::typed::<TT>(one).for_key(K::CompositeExplicitAutograd),
    )
    .unwrap();
    let op = d
        .find_schema(&format!("{ns}::foo"))
        .unwrap()
        .typed::<TT>()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let seen_two = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..3)
        .map(|_| {
            let (stop, seen_two) = (stop.clone(), seen_two.clone());
            std::thread::spawn(move || {
                let x = tagged(0.0);
                let mut calls = 0u64;
                while !stop.load(Ordering::Relaxed) || calls < 1000 {
                    let v = scalar_of(&op.call((&x,)).unwrap());
                    assert!(v == 1.0 || v == 2.0);
                    if v == 2.0 {
                        seen_two.fetch_add(1, Ordering::Relaxed);
                    }
                    calls += 1;
                }
            })
        })
        .collect();
    for i in 0..300 {
        let mut l = lib(d, &ns);
        l.impl_("foo", Kernel::typed::<TT>(two).for_key(K::CPU))
            .unwrap();
        if i % 3 == 0 {
            // A concurrently registered backend fallback and a new operator.
            let mut f = Library::with_location(
                d,
                LibraryKind::Impl,
                "_",
                Some(K::FuncTorchBatched),
                "/dev/null:0",
            )
            .unwrap();
            f.fallback(Kernel::fallthrough()).unwrap();
            let mut extra = lib(d, &ns);
            extra.def(&format!("extra{i}(Tensor x) -> Tensor")).unwrap();
        }
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Relaxed);
    for c in callers {
        c.join().unwrap();
    }
    d.check_all_invariants().unwrap();
    let _ = seen_two.load(Ordering::Relaxed);
}

#[test]
fn static_registration_slice_runs_once_on_the_singleton() {
    let d = Dispatcher::singleton();
    assert!(std::ptr::eq(d, Dispatcher::singleton()));
    assert!(std::ptr::eq(d, Dispatcher::global()));
    // The framework fallbacks are installed.
    assert!(d.fallback_debug(K::BackendSelect).is_some());
    assert!(d.fallback_debug(K::AutogradCPU).is_some());
    assert!(d.fallback_debug(K::CPU).is_none());
    let _ = BackendComponent::CPU;
}

#[test]
fn errors_from_inside_a_composite_name_the_operator_called() {
    // As `remainder.Scalar` calls `remainder.Tensor`: the error the user sees is the error of
    // the operator they called, with the inner one kept as context.
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut l = lib(d, &ns);
    l.def("inner(Tensor x) -> Tensor").unwrap();
    l.def("outer(Tensor x) -> Tensor").unwrap();
    l.impl_(
        "inner",
        Kernel::boxed(|_, _, _| Err(switchyard_core::Error::runtime("inner failed")))
            .for_key(K::CPU),
    )
    .unwrap();
    let inner_name = format!("{ns}::inner");
    l.impl_(
        "outer",
        Kernel::boxed(move |op, _, stack| {
            op.dispatcher()
                .find_schema_or_error(&inner_name)?
                .call_boxed(stack)
        })
        .for_key(K::CompositeImplicitAutograd),
    )
    .unwrap();
    let call = |name: &str| {
        let mut stack = vec![IValue::Tensor(tagged(1.0))];
        d.find_schema(&format!("{ns}::{name}"))
            .unwrap()
            .call_boxed(&mut stack)
            .unwrap_err()
    };
    let e = call("outer");
    assert_eq!(e.message(), "inner failed");
    assert_eq!(e.operator(), Some(format!("{ns}::outer").as_str()));
    assert_eq!(e.raised_in(), Some(format!("{ns}::inner").as_str()));
    assert_eq!(
        e.to_string(),
        format!("RuntimeError: inner failed (in operator {ns}::outer, raised in {ns}::inner)")
    );
    // Called directly, the inner operator is the one named, with no further context.
    let e = call("inner");
    assert_eq!(e.operator(), Some(format!("{ns}::inner").as_str()));
    assert_eq!(e.raised_in(), None);
}
