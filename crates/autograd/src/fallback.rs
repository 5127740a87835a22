//! The boxed kernel at the Autograd keys for operators that have no Autograd kernel of their
//! own (PyTorch's `autogradNotImplementedFallback`): custom operators registered from outside,
//! through `Library`, and the out= overloads of `ops.yaml` without a derivatives.yaml entry
//! (autogen's `add.Scalar_out`, `clone.out`...; the generator leaves them to it as torchgen
//! does).
//!
//! It runs the operator below autograd and, when an input requires grad, gives the floating
//! outputs (and written arguments) a node that raises "derivative for <ns>::<name> is not
//! implemented" if a backward pass reaches it, so that a missing formula is an error and never
//! a silently wrong (zero) gradient.

use std::sync::Arc;
use switchyard_core::keys::sets;
use switchyard_core::local_dispatch::{auto_dispatch_below_autograd, is_grad_enabled};
use switchyard_core::{DispatchKeySet, IValue, Result, Stack, Tensor};
use switchyard_dispatch::{
    Dispatcher, Kernel, Library, LibraryKind, OperatorHandle, ReturnKindFacts,
};

use crate::graph::NodeRef;
use crate::support::{NotImplemented, edge, set_output_history};
use crate::view::{check_inplace, rebase_history, requires_grad};

fn tensors_of(v: &IValue) -> Vec<Tensor> {
    match v {
        IValue::Tensor(t) => vec![t.clone()],
        IValue::TensorList(ts) => ts.clone(),
        IValue::OptionalTensorList(ts) => ts.iter().flatten().cloned().collect(),
        _ => Vec::new(),
    }
}

fn autograd_fallback(op: &OperatorHandle, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    let facts = op.require_schema_facts()?;
    let n = facts.num_arguments;
    let start = stack.len().saturating_sub(n);
    let mut inputs = Vec::new();
    let mut written = Vec::new();
    for a in &facts.tensor_arguments {
        if let Some(v) = stack.get(start + a.index) {
            let ts = tensors_of(v);
            if a.is_write {
                written.extend(ts.iter().cloned());
            }
            inputs.extend(ts);
        }
    }
    let needs_grad = is_grad_enabled() && inputs.iter().any(requires_grad);
    for w in &written {
        check_inplace(w, needs_grad)?;
    }
    // PyTorch names the operator without its overload (`aten::add`).
    let name = op.name().split('.').next().unwrap_or_default().to_string();
    let mut node = if needs_grad {
        let edges = inputs.iter().map(edge).collect::<Result<Vec<_>>>()?;
        Some(NotImplemented::new(name.clone(), edges))
    } else {
        None
    };
    {
        let _guard = auto_dispatch_below_autograd();
        op.redispatch_boxed(ks & sets::AFTER_AUTOGRAD, stack)?;
    }
    let Some(mut node_val) = node.take() else {
        return Ok(());
    };
    let returns_start = stack.len().saturating_sub(facts.num_returns);
    let mut outputs = Vec::new();
    for (r, v) in facts.returns.iter().zip(&stack[returns_start..]) {
        if matches!(
            r.kind,
            ReturnKindFacts::Tensor | ReturnKindFacts::TensorList
        ) {
            outputs.extend(tensors_of(v));
        }
    }
    let fresh: Vec<&Tensor> = outputs
        .iter()
        .filter(|o| !written.iter().any(|w| w.is_same(o)))
        .collect();
    let written: Vec<&Tensor> = written
        .iter()
        .filter(|w| w.dtype().is_floating_point())
        .collect();
    // A single written floating output (an out= or in-place call) shares the node, as
    // PyTorch's `rebase_history(t, grad_fn)` does; with more, each gets its own node.
    if fresh.is_empty() && written.len() == 1 {
        node_val.core.add_input_metadata(written[0]);
        return rebase_history(written[0], Arc::new(node_val));
    }
    for o in &fresh {
        node_val.core.add_input_metadata(o);
    }
    let node: NodeRef = Arc::new(node_val);
    for (i, o) in fresh.iter().enumerate() {
        set_output_history(o, &node, i as u32)?;
    }
    for w in written {
        let edges = inputs.iter().map(edge).collect::<Result<Vec<_>>>()?;
        let mut n = NotImplemented::new(name.clone(), edges);
        n.core.add_input_metadata(w);
        rebase_history(w, Arc::new(n))?;
    }
    Ok(())
}

/// Registers the fallback at every Autograd key (replacing the dispatcher's placeholder
/// fallthrough).
pub(crate) fn register(d: &'static Dispatcher) -> Result<()> {
    let mut lib = Library::new_on(
        d,
        LibraryKind::Impl,
        "_",
        Some(switchyard_core::DispatchKey::Autograd),
    )?;
    lib.fallback(Kernel::boxed(autograd_fallback).debug("autograd_not_implemented_fallback"))?;
    lib.leak();
    Ok(())
}
