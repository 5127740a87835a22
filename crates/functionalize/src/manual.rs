//! The hand-written kernels at `Functionalize` (plan §3.5; PyTorch's
//! `FunctionalizeFallbackKernel.cpp`): the operators the generator leaves out
//! (`MANUAL_FUNCTIONALIZE` in `crates/codegen/src/emit/functionalize.rs`) because they are
//! neither an ordinary mutation nor an ordinary view:
//!
//! * `resize_` is a view when it shrinks (an `as_strided` record) and a new storage when it
//!   grows;
//! * `set_.source_Tensor` moves a wrapper into another alias group;
//! * `lift`, `lift_fresh`, `lift_fresh_copy` bring a plain tensor (a constant made inside the
//!   program) into the layer;
//! * `_to_copy` (and `_to_cpu`, a batch of them) ends functionalization when it leaves a
//!   functionalized device outside a `functionalize()` region;
//! * `_unsafe_view` aliases its input although its schema says it does not.
//!
//! And [`functionalize_aten_op`]: a composite kernel run functionalized on plain inputs
//! (A.4.5).

// Kernel names follow the operators' unambiguous names (`set__source_Tensor`, `_to_copy`), as
// the generated ones do.
#![allow(non_snake_case)]

use crate::geometry::{meta_shadow, shadow_guard, shadow_view};
use crate::tensor::{
    FunctionalTensor, below, create_view, from_functional, functional_payload, is_functional,
    maybe_replace_storage, mutate_view_meta_to, replace_last_view_meta, set__impl, sync,
    to_functional,
};
use crate::view_meta::{ViewMeta, reapply_views};
use switchyard_core::local_dispatch::{
    ForceDispatchKeyGuard, tls_is_dispatch_key_included, tls_local_dispatch_key_set,
};
use switchyard_core::{
    Device, DeviceType, DispatchKey, DispatchKeySet, Error, IValue, Layout, MemoryFormat, Result,
    ScalarType, Stack, Tensor,
};
use switchyard_dispatch::{Dispatcher, Kernel, Library, LibraryKind, OperatorHandle};
use switchyard_ops::op;

/// `t` synced and unwrapped if functional, else `t`.
fn synced_value(t: &Tensor) -> Result<Tensor> {
    match functional_payload(t) {
        Some(ft) => {
            sync(t)?;
            Ok(ft.value())
        }
        None => Ok(t.clone()),
    }
}

/// The name of `resize_`'s view records.
const RESIZE: &str = "resize_";

/// The kernel of `resize_(self, size, memory_format)` (A.4.4, PyTorch's
/// `resize__functionalization`).
///
/// A plain `self` is resized below the layer. For a wrapper, the eager result is computed
/// first on a meta shadow (eager's errors, and the geometry `self` ends with: contiguous, or
/// in `memory_format`; unchanged when the sizes are). Then:
///
/// * the bytes the new geometry reaches exceed the alias group's storage → growth:
///   `resize(value, size)` below becomes the value of a new group
///   ([`maybe_replace_storage`]; an error for a view or a tensor with live aliases);
/// * otherwise (shrinking, or a size that still fits) → an in-place view: a record
///   `as_strided(base, sizes, strides)` (`as_strided_copy` when views are removed) with the
///   inverse `as_strided_scatter`, as eager's smaller tensor is a window on the same storage.
fn functionalize_resize_(
    _ks: DispatchKeySet,
    (self_, size, memory_format): (&Tensor, &[i64], Option<MemoryFormat>),
) -> Result<Tensor> {
    let Some(ft) = functional_payload(self_) else {
        let _below = below();
        return op::resize_::call(self_, size, memory_format);
    };
    sync(self_)?;
    let before = self_.geometry();
    let eager = {
        let shadow = meta_shadow(self_)?;
        let _g = shadow_guard();
        op::resize_::call(&shadow, size, memory_format)?.geometry()
    };
    if eager == before {
        // Same sizes and no new memory format: eager changes nothing either.
        return Ok(self_.clone());
    }
    let needed = usize::try_from(eager.required_elements()).unwrap_or(0) * self_.element_size();
    if needed > ft.storage().nbytes() {
        let bigger = {
            let _below = below();
            op::resize::call(&ft.value(), size, memory_format)?
        };
        maybe_replace_storage(self_, &bigger, &eager)?;
        return Ok(self_.clone());
    }
    let reapply = reapply_views();
    let (sizes, strides) = (eager.sizes().to_vec(), eager.strides().to_vec());
    let (fsizes, fstrides) = (sizes.clone(), strides.clone());
    let meta = ViewMeta::new(
        RESIZE,
        move |b: &Tensor, _: usize| {
            if reapply {
                op::as_strided::call(b, &fsizes, &fstrides, None)
            } else {
                op::as_strided_copy::call(b, &fsizes, &fstrides, None)
            }
        },
        move |b: &Tensor, m: &Tensor, _: usize| {
            op::as_strided_scatter::call(b, m, &sizes, &strides, None)
        },
    );
    // Not marked `as_strided` (as in PyTorch): the record is a window from the start of the
    // tensor's own elements, which composes with the views before it. A resize of a resized
    // tensor replaces the earlier window (PyTorch appends a second one, which cannot reach
    // past the first: shrinking to 0 then growing back within the storage fails there).
    if ft.view_metas().last().is_some_and(|m| m.op == RESIZE) {
        replace_last_view_meta(self_, meta, &eager)?;
    } else {
        mutate_view_meta_to(self_, meta, Some(&eager))?;
    }
    Ok(self_.clone())
}

/// The kernel of `set_.source_Tensor(self, source)` (PyTorch's `set__functionalize`): two
/// plain tensors → `set_` below; two wrappers → [`set__impl`] (`self` joins `source`'s alias
/// group; its old group is frozen). Eager's checks (dtype, device) come first.
fn functionalize_set__source_Tensor(
    _ks: DispatchKeySet,
    (self_, source): (&Tensor, &Tensor),
) -> Result<Tensor> {
    match (is_functional(self_), is_functional(source)) {
        (false, false) => {
            let _below = below();
            op::set__source_Tensor::call(self_, source)
        }
        (false, true) => Err(crate::errors::set_plain_to_functional()),
        (true, false) => Err(crate::errors::set_functional_to_plain()),
        (true, true) => {
            switchyard_ops::meta::set_tensor_checks(self_, source)?;
            set__impl(self_, source)?;
            Ok(self_.clone())
        }
    }
}

/// The error for a functional tensor given to `lift` (an internal assert in PyTorch's
/// `lift_functionalize`; `lift_fresh` and `lift_fresh_copy` accept one).
fn lift_of_functional(op_name: &str) -> Error {
    Error::runtime(format!(
        "{op_name}: expected a tensor that is not functional (lifting brings a plain tensor into functionalization), but got a functional tensor"
    ))
}

/// `lift`, `lift_fresh`, `lift_fresh_copy`: `compute` below the layer on the (plain) input,
/// result wrapped as a new alias group.
fn lift_with(
    op_name: &str,
    self_: &Tensor,
    compute: &dyn Fn(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    if is_functional(self_) {
        return Err(lift_of_functional(op_name));
    }
    let out = {
        let _below = below();
        compute(self_)?
    };
    to_functional(&out)
}

/// The kernel of `lift(self)`.
fn functionalize_lift(_ks: DispatchKeySet, (self_,): (&Tensor,)) -> Result<Tensor> {
    lift_with("lift", self_, &|t| op::lift::call(t))
}

/// The kernel of `lift_fresh(self)` (how `torch.tensor(...)` enters a functionalized
/// program): `lift_fresh` below when views are kept, `lift_fresh_copy` when they are removed
/// (so the backend never sees the alias), wrapped. A tensor already functional (a lazy
/// tensor, or a nested call) is not wrapped twice: its `view_as` itself, an alias, as
/// PyTorch's `lift_fresh_functionalize` returns.
fn functionalize_lift_fresh(_ks: DispatchKeySet, (self_,): (&Tensor,)) -> Result<Tensor> {
    if is_functional(self_) {
        return op::view::call(self_, &self_.sizes());
    }
    let reapply = reapply_views();
    lift_with("lift_fresh", self_, &|t| {
        if reapply {
            op::lift_fresh::call(t)
        } else {
            op::lift_fresh_copy::call(t)
        }
    })
}

/// The kernel of `lift_fresh_copy(self)`. A tensor already functional is cloned in the layer
/// (a new alias group), as PyTorch's `lift_fresh_functionalize_copy` does.
fn functionalize_lift_fresh_copy(_ks: DispatchKeySet, (self_,): (&Tensor,)) -> Result<Tensor> {
    if is_functional(self_) {
        return op::clone::call(self_, None);
    }
    lift_with("lift_fresh_copy", self_, &|t| op::lift_fresh_copy::call(t))
}

/// Whether a device keeps functionalization on when data moves to it without a
/// `functionalize()` region: the lazy backends (XLA, Lazy), which take functional programs.
fn device_opted_into_functionalization(self_device: Device, target: Option<Device>) -> bool {
    matches!(
        target.unwrap_or(self_device).kind(),
        DeviceType::Xla | DeviceType::Lazy
    )
}

/// The kernel of `_to_copy` (A.4.4, A.8): syncs and unwraps `self`, copies below the layer,
/// and wraps the result, except outside a `functionalize()` region (the `Functionalize` key
/// not included on the thread) when the target device (explicit, else `self`'s) is not XLA or
/// Lazy: moving data off a functionalized device ends functionalization, so the result is a
/// plain tensor (how printing a wrapper gets its data).
#[allow(clippy::type_complexity)]
fn functionalize__to_copy(
    _ks: DispatchKeySet,
    (self_, dtype, layout, device, pin_memory, non_blocking, memory_format): (
        &Tensor,
        Option<ScalarType>,
        Option<Layout>,
        Option<Device>,
        Option<bool>,
        bool,
        Option<MemoryFormat>,
    ),
) -> Result<Tensor> {
    let value = synced_value(self_)?;
    let out = {
        let _below = below();
        op::_to_copy::call(
            &value,
            dtype,
            layout,
            device,
            pin_memory,
            non_blocking,
            memory_format,
        )?
    };
    if !tls_is_dispatch_key_included(DispatchKey::Functionalize)
        && !device_opted_into_functionalization(self_.device(), device)
    {
        return Ok(out);
    }
    to_functional(&out)
}

/// The kernel of `_to_cpu(tensors)` (lazy's batched transfer): syncs and unwraps each tensor,
/// transfers them below the layer in one call and, as [`functionalize__to_copy`] does for a
/// copy to the CPU, returns plain CPU tensors outside a `functionalize()` region (PyTorch's
/// `_to_cpu` is `Tensor.cpu()` of each, hence its `_to_copy`; through the fallback the results
/// were CPU wrappers without storage).
fn functionalize__to_cpu(_ks: DispatchKeySet, (tensors,): (&[Tensor],)) -> Result<Vec<Tensor>> {
    let values = tensors
        .iter()
        .map(synced_value)
        .collect::<Result<Vec<_>>>()?;
    let out = {
        let _below = below();
        op::_to_cpu::call(&values)?
    };
    let keep = tls_is_dispatch_key_included(DispatchKey::Functionalize)
        || tensors
            .iter()
            .any(|t| device_opted_into_functionalization(t.device(), Some(Device::CPU)));
    if !keep {
        return Ok(out);
    }
    out.iter().map(to_functional).collect()
}

/// The kernel of `_unsafe_view(self, size)`: an aliasing view, although the schema does not
/// say so (PyTorch's `_unsafe_view_functionalize`; the composite `reshape` of a tensor that
/// cannot be viewed ends in it, on a fresh clone). Forward `_unsafe_view(base, size)` in both
/// modes, reverse `_unsafe_view(mutated, base.sizes)`; eager geometry from `view` of a meta
/// shadow (eager's `_unsafe_view` is a `view`).
fn functionalize__unsafe_view(
    _ks: DispatchKeySet,
    (self_, size): (&Tensor, &[i64]),
) -> Result<Tensor> {
    let Some(ft) = functional_payload(self_) else {
        let _below = below();
        return op::_unsafe_view::call(self_, size);
    };
    let eager = shadow_view(self_, &|s: &Tensor| op::view::call(s, size))?;
    let size = size.to_vec();
    let meta = ViewMeta::new(
        "_unsafe_view",
        move |b: &Tensor, _: usize| op::_unsafe_view::call(b, &size),
        |b: &Tensor, m: &Tensor, _: usize| op::_unsafe_view::call(m, &b.sizes()),
    );
    let out = {
        let _below = below();
        meta.forward(&FunctionalTensor::value(ft))?
    };
    create_view(self_, out, meta, Some(&eager))
}

/// Runs the CompositeExplicitAutograd kernel of `op` functionalized on the plain arguments on
/// `stack` (A.4.5, PyTorch's `functionalize_aten_op`): for backends that reuse a composite
/// kernel which views or mutates inside, but can take neither.
///
/// Every tensor argument (`Tensor`, `Tensor?`, `Tensor[]`, `Tensor?[]`) must be plain; each
/// is wrapped, the composite kernel runs with the `Functionalize` key included and not
/// excluded on this thread (so the operators inside go through this layer), and every tensor
/// output is synced and unwrapped. The other keys the thread excludes stay excluded (callers
/// are backend kernels, below autograd).
///
/// Errors: a functional argument; an operator without a CompositeExplicitAutograd kernel.
pub fn functionalize_aten_op(op: &OperatorHandle, stack: &mut Stack) -> Result<()> {
    let facts = op.require_schema_facts()?;
    let start = stack
        .len()
        .checked_sub(facts.num_arguments)
        .ok_or_else(|| {
            Error::runtime(format!(
                "{} expects {} arguments on the stack but got {}",
                op.name(),
                facts.num_arguments,
                stack.len()
            ))
        })?;
    for v in stack.iter_mut().skip(start) {
        wrap_argument(op, v)?;
    }
    {
        let local = tls_local_dispatch_key_set();
        let _functionalize =
            ForceDispatchKeyGuard::new(switchyard_core::local_dispatch::LocalDispatchKeySet {
                included: local.included.add(DispatchKey::Functionalize),
                excluded: local.excluded.remove(DispatchKey::Functionalize),
            });
        op.call_boxed_for_key(DispatchKey::CompositeExplicitAutograd, stack)?;
    }
    let returns_start = stack.len().saturating_sub(facts.num_returns);
    for v in stack.iter_mut().skip(returns_start) {
        unwrap_return(v)?;
    }
    Ok(())
}

/// Wraps the tensors of one argument of [`functionalize_aten_op`] in place.
fn wrap_argument(op: &OperatorHandle, v: &mut IValue) -> Result<()> {
    let refuse = || {
        Error::runtime(format!(
            "functionalize_aten_op: {} expects plain tensor arguments, but got a functional tensor",
            op.name()
        ))
    };
    let wrap = |t: &Tensor| {
        if is_functional(t) {
            Err(refuse())
        } else {
            to_functional(t)
        }
    };
    match v {
        IValue::Tensor(t) => *v = IValue::Tensor(wrap(t)?),
        IValue::TensorList(ts) => {
            *v = IValue::TensorList(ts.iter().map(wrap).collect::<Result<_>>()?);
        }
        IValue::OptionalTensorList(ts) => {
            *v = IValue::OptionalTensorList(
                ts.iter()
                    .map(|t| t.as_ref().map(wrap).transpose())
                    .collect::<Result<_>>()?,
            );
        }
        _ => {}
    }
    Ok(())
}

/// Syncs and unwraps the functional tensors of one return in place.
fn unwrap_return(v: &mut IValue) -> Result<()> {
    let unwrap = |t: &Tensor| {
        if is_functional(t) {
            sync(t)?;
            from_functional(t)
        } else {
            Ok(t.clone())
        }
    };
    match v {
        IValue::Tensor(t) => *v = IValue::Tensor(unwrap(t)?),
        IValue::TensorList(ts) => {
            *v = IValue::TensorList(ts.iter().map(unwrap).collect::<Result<_>>()?);
        }
        IValue::OptionalTensorList(ts) => {
            *v = IValue::OptionalTensorList(
                ts.iter()
                    .map(|t| t.as_ref().map(unwrap).transpose())
                    .collect::<Result<_>>()?,
            );
        }
        _ => {}
    }
    Ok(())
}

/// Registers the hand-written kernels at `Functionalize`.
pub(crate) fn register(d: &'static Dispatcher) -> Result<()> {
    let mut lib = Library::new_on(
        d,
        LibraryKind::Impl,
        "aten",
        Some(DispatchKey::Functionalize),
    )?;
    lib.impl_(
        "resize_",
        Kernel::typed::<op::resize_>(functionalize_resize_).debug("functionalize_resize_"),
    )?;
    lib.impl_(
        "set_.source_Tensor",
        Kernel::typed::<op::set__source_Tensor>(functionalize_set__source_Tensor)
            .debug("functionalize_set__source_Tensor"),
    )?;
    lib.impl_(
        "lift",
        Kernel::typed::<op::lift>(functionalize_lift).debug("functionalize_lift"),
    )?;
    lib.impl_(
        "lift_fresh",
        Kernel::typed::<op::lift_fresh>(functionalize_lift_fresh).debug("functionalize_lift_fresh"),
    )?;
    lib.impl_(
        "lift_fresh_copy",
        Kernel::typed::<op::lift_fresh_copy>(functionalize_lift_fresh_copy)
            .debug("functionalize_lift_fresh_copy"),
    )?;
    lib.impl_(
        "_to_copy",
        Kernel::typed::<op::_to_copy>(functionalize__to_copy).debug("functionalize__to_copy"),
    )?;
    lib.impl_(
        "_to_cpu",
        Kernel::typed::<op::_to_cpu>(functionalize__to_cpu).debug("functionalize__to_cpu"),
    )?;
    lib.impl_(
        "_unsafe_view",
        Kernel::typed::<op::_unsafe_view>(functionalize__unsafe_view)
            .debug("functionalize__unsafe_view"),
    )?;
    lib.leak();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lazy_devices_keep_functionalization() {
        let lazy = Device::parse("lazy").unwrap();
        assert!(device_opted_into_functionalization(lazy, None));
        assert!(!device_opted_into_functionalization(
            lazy,
            Some(Device::CPU)
        ));
        assert!(device_opted_into_functionalization(Device::CPU, Some(lazy)));
        assert!(!device_opted_into_functionalization(Device::CPU, None));
    }
}
