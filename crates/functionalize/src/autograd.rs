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
//! Eager refuses an in-place change of a leaf that requires grad, or of a view of one, while
//! grad mode is on; the input's wrapper is not a leaf (its history is the boundary node), so
//! autograd's own check passes it. The transform marks the alias group of such an input
//! ([`LeafGrad`]), and the mutation kernels refuse a change of the input or of a view of it
//! with autograd's message ([`check_leaf_mutation`]) before anything changes. Under `no_grad`
//! the change is allowed, as eagerly, and written back to the caller's leaf without history.
//!
//! Known limit, as in PyTorch: an input mutated inside the program gets its data written back,
//! not the mutation's history.

use std::any::Any;
use std::sync::Arc;
use switchyard_autograd::support::set_output_history_owned;
use switchyard_autograd::{Grad, InputMetadata, Node, NodeCore, NodeRef, gradient_edge};
use switchyard_core::{Result, Tensor};

use crate::tensor::{from_functional, functional_payload, is_functional, sync, to_functional};

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
    set_output_history_owned(wrapper, node, 0)?;
    mark_input(input, wrapper);
    Ok(())
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

/// What autograd makes of an in-place change of the tensor an alias group was made from: a
/// transform input that is a leaf requiring grad, a view of one, or neither (plan §7.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum LeafGrad {
    /// In-place changes are autograd's business as usual.
    No = 0,
    /// The group's tensor is a leaf that requires grad.
    Leaf = 1,
    /// The group's tensor is a view of a leaf that requires grad.
    ViewOfLeaf = 2,
}

impl LeafGrad {
    pub(crate) fn from_u8(v: u8) -> LeafGrad {
        match v {
            1 => LeafGrad::Leaf,
            2 => LeafGrad::ViewOfLeaf,
            _ => LeafGrad::No,
        }
    }

    /// What `input`, a caller's tensor, is to autograd.
    fn of(input: &Tensor) -> LeafGrad {
        use switchyard_autograd::AutogradTensor;
        if !input.requires_grad_now() {
            return LeafGrad::No;
        }
        if input.is_leaf() {
            return LeafGrad::Leaf;
        }
        match input.base() {
            Some(base) if base.is_leaf() && base.requires_grad() => LeafGrad::ViewOfLeaf,
            _ => LeafGrad::No,
        }
    }
}

/// Marks the alias group of `wrapper`, the wrapper of the caller's `input` that
/// [`connect_input`] gave a history, when `input` is a leaf that requires grad or a view of
/// one: a later in-place change of it is refused as eagerly.
fn mark_input(input: &Tensor, wrapper: &Tensor) {
    let leaf = LeafGrad::of(input);
    if leaf == LeafGrad::No {
        return;
    }
    if let Some(ft) = functional_payload(wrapper) {
        ft.storage().set_leaf_requires_grad(leaf);
    }
}

/// Whether `t` is a transform input's wrapper: its history is the boundary node.
fn is_input_wrapper(t: &Tensor) -> bool {
    switchyard_autograd::grad_fn(t)
        .ok()
        .flatten()
        .is_some_and(|f| f.as_any().is::<ToFunctionalBackward>())
}

/// Refuses an in-place change of wrapper `w` (data or metadata) of a group marked by
/// [`mark_input`] as eager autograd refuses it, while grad mode is on and `w` requires grad:
/// the input itself is "a leaf Variable that requires grad ..." (or "a view of a leaf ..." when
/// the input is a view of one), a view of the input is "a view of a leaf Variable ...".
/// Other members of the group (a `detach`ed alias, a view made under `no_grad`) require no
/// grad and pass, as eagerly.
pub(crate) fn check_leaf_mutation(w: &Tensor, leaf: LeafGrad) -> Result<()> {
    if leaf == LeafGrad::No
        || !switchyard_autograd::is_grad_enabled()
        || !switchyard_autograd::view::requires_grad(w)
    {
        return Ok(());
    }
    let from_input = if switchyard_autograd::view::is_view(w) {
        switchyard_autograd::view::base(w).is_some_and(|b| is_input_wrapper(&b))
    } else {
        is_input_wrapper(w)
    };
    match (from_input, switchyard_autograd::view::is_view(w), leaf) {
        (false, _, _) => Ok(()),
        (true, false, LeafGrad::Leaf) => Err(crate::errors::leaf_inplace()),
        (true, _, _) => Err(crate::errors::view_of_leaf_inplace()),
    }
}

/// Whether the write-back of wrapper `w` into the caller's tensor runs below autograd: its
/// group is marked by [`mark_input`], so every change that reached it was made under
/// `no_grad` (the others were refused), as eager made it: without history.
pub(crate) fn write_back_without_grad(w: &Tensor) -> bool {
    functional_payload(w).is_some_and(|ft| ft.storage().leaf_requires_grad() != LeafGrad::No)
}
