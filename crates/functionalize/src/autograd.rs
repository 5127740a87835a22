//! Where functionalization meets autograd (plan §7.3): the transform's boundary nodes.
//!
//! Autograd sits above this layer and records its nodes on the wrappers, so a functionalized
//! program builds an ordinary backward graph over wrappers. The transform joins that graph to
//! the caller's at both ends:
//!
//! * an input that requires grad gets a wrapper whose history is [`ToFunctionalBackward`],
//!   with one edge to where the input's gradient goes; the node turns a gradient that arrives
//!   as a wrapper (formulas run on saved wrappers) back into a plain tensor, so the caller's
//!   leaves accumulate plain gradients;
//! * an output wrapper that requires grad is returned as a new plain handle of its value whose
//!   history is [`FromFunctionalBackward`], with one edge to the wrapper's history; it wraps
//!   the incoming gradient, so that the backward pass over the program's nodes runs on
//!   wrappers from end to end.
//!
//! Known limit, as in PyTorch: an input mutated inside the program gets its data written back,
//! not the mutation's history.

use std::any::Any;
use std::sync::Arc;
use switchyard_autograd::support::set_output_history_owned;
use switchyard_autograd::{Grad, InputMetadata, Node, NodeCore, NodeRef, gradient_edge};
use switchyard_core::{Result, Tensor};

use crate::tensor::{from_functional, is_functional, sync, to_functional};

/// The history of an input's wrapper: passes the gradient on to the caller's tensor,
/// unwrapped.
pub struct ToFunctionalBackward {
    core: NodeCore,
}

impl Node for ToFunctionalBackward {
    fn name(&self) -> String {
        "ToFunctionalBackward".into()
    }

    fn core(&self) -> &NodeCore {
        &self.core
    }

    fn apply(self: Arc<Self>, grads: Vec<Grad>) -> Result<Vec<Grad>> {
        grads
            .into_iter()
            .map(|g| match g {
                Some(g) if is_functional(&g) => {
                    sync(&g)?;
                    Ok(Some(from_functional(&g)?))
                }
                other => Ok(other),
            })
            .collect()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The history of an unwrapped output: into the output wrapper's history, the gradient
/// wrapped.
pub struct FromFunctionalBackward {
    core: NodeCore,
}

impl Node for FromFunctionalBackward {
    fn name(&self) -> String {
        "FromFunctionalBackward".into()
    }

    fn core(&self) -> &NodeCore {
        &self.core
    }

    fn apply(self: Arc<Self>, grads: Vec<Grad>) -> Result<Vec<Grad>> {
        // The nodes above run their formulas on saved wrappers: their gradients are wrappers
        // too, so that a formula's in-place steps (CopySlices' `copy_`) never write a
        // wrapper's value into a plain tensor.
        grads
            .into_iter()
            .map(|g| match g {
                Some(g) if !is_functional(&g) => Ok(Some(to_functional(&g)?)),
                other => Ok(other),
            })
            .collect()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Gives `wrapper`, the wrapper of the caller's `input`, a history leading to `input`'s
/// gradient, when `input` requires grad and grad mode is on.
pub(crate) fn connect_input(input: &Tensor, wrapper: &Tensor) -> Result<()> {
    if !switchyard_autograd::is_grad_enabled() || !input.requires_grad() || !is_functional(wrapper)
    {
        return Ok(());
    }
    let node: NodeRef = Arc::new(ToFunctionalBackward {
        core: NodeCore::new([gradient_edge(input)?], [InputMetadata::of(wrapper)]),
    });
    set_output_history_owned(wrapper, node, 0)
}

/// The caller's handle for output `wrapper` whose synced value is `value`: `value` itself
/// when the wrapper has no history, else a new handle of it whose history leads into the
/// wrapper's.
pub(crate) fn connect_output(wrapper: &Tensor, value: Tensor) -> Result<Tensor> {
    if !switchyard_autograd::is_grad_enabled() || !wrapper.requires_grad() {
        return Ok(value);
    }
    // A new handle: `value` may be a tensor the caller holds (an input returned unchanged).
    let out = value.shallow_copy();
    let node: NodeRef = Arc::new(FromFunctionalBackward {
        core: NodeCore::new([gradient_edge(wrapper)?], [InputMetadata::of(&out)]),
    });
    set_output_history_owned(&out, node, 0)?;
    Ok(out)
}
