//! The boxed kernel at `Functionalize` for operators that neither mutate nor alias (A.4.1,
//! PyTorch's `functionalizeFallback`): sync and unwrap the functional inputs, run the operator
//! below the layer, wrap the outputs.
//!
//! Mutating and view operators need kernels of their own (they record updates and views);
//! one reaching this fallback is an error naming it, worded as PyTorch's.

use crate::geometry::{meta_shadow, shadow_guard};
use crate::storage::same_layout;
use crate::tensor::{
    below, from_functional_list, from_functional_optional_list, functional_payload,
    is_functional_list, is_functional_optional_list, sync_list, sync_optional_list, unwrap_current,
    wrap_output,
};
use smallvec::SmallVec;
use switchyard_core::{DispatchKey, DispatchKeySet, Error, IValue, Result, Stack, Tensor};
use switchyard_dispatch::{Dispatcher, Kernel, Library, LibraryKind, OperatorHandle, ReturnAlias};
use switchyard_ops::meta::index_support::has_internal_overlap;
use switchyard_ops::op;

/// The unwrapped form of one tensor argument (synced values of its functional tensors), or
/// `None` if it holds none; also whether some value's layout differs from its wrapper's.
fn unwrap_argument(v: &IValue) -> Result<Option<(IValue, bool)>> {
    Ok(match v {
        IValue::Tensor(t) => match functional_payload(t) {
            Some(ft) => {
                let (value, differs) = unwrap_current(t, ft)?;
                Some((IValue::Tensor(value), differs))
            }
            None => None,
        },
        IValue::TensorList(ts) if is_functional_list(ts) => {
            sync_list(ts)?;
            let differs = ts.iter().any(value_layout_differs);
            Some((IValue::TensorList(from_functional_list(ts)), differs))
        }
        IValue::OptionalTensorList(ts) if is_functional_optional_list(ts) => {
            sync_optional_list(ts)?;
            let differs = ts.iter().flatten().any(value_layout_differs);
            Some((
                IValue::OptionalTensorList(from_functional_optional_list(ts)),
                differs,
            ))
        }
        _ => None,
    })
}

/// Wraps the tensors of one return in place.
fn wrap_return(v: &mut IValue) -> Result<()> {
    match std::mem::replace(v, IValue::None) {
        IValue::Tensor(t) => *v = IValue::Tensor(wrap_output(t)?),
        IValue::TensorList(ts) => {
            *v = IValue::TensorList(ts.into_iter().map(wrap_output).collect::<Result<_>>()?);
        }
        IValue::OptionalTensorList(ts) => {
            *v = IValue::OptionalTensorList(
                ts.into_iter()
                    .map(|t| t.map(wrap_output).transpose())
                    .collect::<Result<_>>()?,
            );
        }
        other => *v = other,
    }
    Ok(())
}

/// The fallback body (A.4.1).
pub(crate) fn functionalize_fallback(
    op: &OperatorHandle,
    _ks: DispatchKeySet,
    stack: &mut Stack,
) -> Result<()> {
    let facts = op.require_schema_facts()?;
    if facts.tensor_arguments.iter().any(|a| a.is_write)
        || facts.returns.iter().any(|r| r.alias != ReturnAlias::Fresh)
    {
        return Err(crate::errors::alias_annotated_operator(op));
    }
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
    // Unwrapped arguments are collected first and stored after the shadow run, which needs
    // the wrappers' eager geometry.
    let mut unwrapped: SmallVec<[(usize, IValue); 4]> = SmallVec::new();
    let mut any_tensor_input = false;
    let mut layout_differs = false;
    for a in &facts.tensor_arguments {
        let index = start + a.index;
        // An absent `Tensor?` is `IValue::None`, which holds no tensor.
        let Some(v) = stack.get(index) else { continue };
        any_tensor_input |= matches!(
            v,
            IValue::Tensor(_) | IValue::TensorList(_) | IValue::OptionalTensorList(_)
        );
        if let Some((value, differs)) = unwrap_argument(v)? {
            layout_differs |= differs;
            unwrapped.push((index, value));
        }
    }
    let any_functional_input = !unwrapped.is_empty();
    let shadow_returns = if layout_differs {
        shadow_run(op, stack, start)
    } else {
        None
    };
    for (index, value) in unwrapped {
        if let Some(slot) = stack.get_mut(index) {
            *slot = value;
        }
    }
    {
        let _below = below();
        op.call_boxed(stack)?;
    }
    // Factories (no tensor input) are wrapped too: they reach the layer only through the
    // thread's included key set, inside a functionalized region.
    if any_functional_input || !any_tensor_input {
        let returns_start = stack.len().saturating_sub(facts.num_returns);
        if let Some(shadows) = &shadow_returns {
            lay_out_as_eager(stack, returns_start, shadows)?;
        }
        for v in stack.iter_mut().skip(returns_start) {
            wrap_return(v)?;
        }
        if let Some(shadows) = shadow_returns {
            for (v, s) in stack.iter().skip(returns_start).zip(&shadows) {
                take_eager_geometry(v, s);
            }
        }
    }
    Ok(())
}

/// Whether `t` is a wrapper whose value's layout differs from its eager geometry (a
/// `*_copy`-produced value of a transposed view, for example).
fn value_layout_differs(t: &Tensor) -> bool {
    functional_payload(t).is_some_and(|ft| ft.value_geometry() != t.geometry())
}

/// The operator's returns when run on meta shadows of its tensor arguments (plan §2.4), called
/// when some functional argument's value has another layout than its wrapper (otherwise the
/// backend's output strides are eager's already). `None` when the shadow run fails (an
/// operator without a Meta kernel, such as `nonzero`): the outputs then keep their value's
/// geometry.
fn shadow_run(op: &OperatorHandle, stack: &Stack, start: usize) -> Option<Vec<IValue>> {
    let shadow = |t: &Tensor| {
        if t.is_wrapped_number() {
            Ok(t.clone())
        } else {
            meta_shadow(t)
        }
    };
    let mut shadow_stack: Stack = stack.get(start..)?.to_vec();
    for v in &mut shadow_stack {
        let replaced = match v {
            IValue::Tensor(t) => shadow(t).map(IValue::Tensor),
            IValue::TensorList(ts) => ts
                .iter()
                .map(shadow)
                .collect::<Result<Vec<_>>>()
                .map(IValue::TensorList),
            IValue::OptionalTensorList(ts) => ts
                .iter()
                .map(|t| t.as_ref().map(shadow).transpose())
                .collect::<Result<Vec<_>>>()
                .map(IValue::OptionalTensorList),
            _ => continue,
        };
        *v = replaced.ok()?;
    }
    let _g = shadow_guard();
    op.call_boxed(&mut shadow_stack).ok()?;
    Some(shadow_stack)
}

/// Gives each tensor return (below the layer, not yet wrapped) whose layout differs from its
/// shadow's the shadow's strides: the functional `copy(new_empty_strided(value, ..), value)`.
/// Only called when the operator ran on shadows (some input's value has another layout than
/// its wrapper, e.g. a `*_copy` value of a transposed view under `Remove::MutationsAndViews`).
///
/// A fresh output is the base of a new alias group, and the group's view records replay on
/// that value: `as_strided` addresses its storage, so it must be laid out as eager's output
/// (eager's `clone` of a non-dense view gets dense strides in the view's stride order, the
/// clone of the contiguous `diagonal_copy` does not; PyTorch issue #133512). Shadows with
/// internal overlap (an expanding operator) are left alone.
fn lay_out_as_eager(stack: &mut Stack, returns_start: usize, shadows: &[IValue]) -> Result<()> {
    let lay_out = |t: &mut Tensor, s: &Tensor| -> Result<()> {
        let g = s.geometry();
        if t.sizes().as_slice() != g.sizes()
            || same_layout(&t.geometry(), &g)
            || has_internal_overlap(s) == Some(true)
        {
            return Ok(());
        }
        let _below = below();
        let empty = op::new_empty_strided::call(t, g.sizes(), g.strides(), None, None, None, None)?;
        *t = op::copy::call(&empty, t, false)?;
        Ok(())
    };
    for (v, s) in stack.iter_mut().skip(returns_start).zip(shadows) {
        match (v, s) {
            (IValue::Tensor(t), IValue::Tensor(s)) => lay_out(t, s)?,
            (IValue::TensorList(ts), IValue::TensorList(ss)) => {
                for (t, s) in ts.iter_mut().zip(ss) {
                    lay_out(t, s)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Gives the wrappers of return `v` the geometry of the matching shadow return `s`, where the
/// sizes agree.
fn take_eager_geometry(v: &IValue, s: &IValue) {
    let take = |w: &Tensor, s: &Tensor| {
        if w.sizes() == s.sizes() {
            let g = s.geometry();
            // Wrappers have no storage, so no bounds to break: this cannot fail.
            let _ = w.set_geometry(g.sizes(), g.strides(), g.storage_offset());
        }
    };
    match (v, s) {
        (IValue::Tensor(w), IValue::Tensor(s)) => take(w, s),
        (IValue::TensorList(ws), IValue::TensorList(ss)) => {
            ws.iter().zip(ss).for_each(|(w, s)| take(w, s));
        }
        _ => {}
    }
}

/// Registers the fallback at `Functionalize`.
pub(crate) fn register(d: &'static Dispatcher) -> Result<()> {
    let mut lib = Library::new_on(d, LibraryKind::Impl, "_", Some(DispatchKey::Functionalize))?;
    lib.fallback(Kernel::boxed(functionalize_fallback).debug("functionalize_fallback"))?;
    lib.leak();
    Ok(())
}
