//! What the generated kernels and nodes call: `requires_grad` of arguments, gradient edges,
//! attaching history, the node of operators without a formula, and conversions of formula
//! results into gradients.

use std::any::Any;
use std::ops::Range;
use std::sync::Arc;
use switchyard_core::{Error, Result, Tensor};

pub use switchyard_core::local_dispatch::is_grad_enabled;

use crate::graph::{Edge, EdgeList, Grad, Node, NodeCore, NodeRef};
use crate::meta;
use crate::view::requires_grad;

/// Whether a tensor argument requires grad.
#[inline]
pub fn rg(t: &Tensor) -> bool {
    requires_grad(t)
}

/// Whether an optional tensor argument requires grad.
#[inline]
pub fn rg_opt(t: Option<&Tensor>) -> bool {
    t.is_some_and(requires_grad)
}

/// Whether any tensor of a list requires grad.
#[inline]
pub fn rg_list(ts: &[Tensor]) -> bool {
    ts.iter().any(requires_grad)
}

/// Whether any present tensor of a list of optional tensors requires grad.
#[inline]
pub fn rg_opt_list(ts: &[Option<Tensor>]) -> bool {
    ts.iter().flatten().any(requires_grad)
}

/// The gradient edge of a tensor argument (invalid if it does not require grad).
pub fn edge(t: &Tensor) -> Result<Edge> {
    if requires_grad(t) {
        meta::gradient_edge(t)
    } else {
        Ok(Edge::default())
    }
}

/// Appends the gradient edge of a tensor argument to a node's edges (invalid if it does not
/// require grad), written in place.
#[inline]
pub fn push_edge(edges: &mut EdgeList, t: &Tensor) -> Result<()> {
    edges.push(Edge::default());
    if requires_grad(t)
        && let Some(slot) = edges.last_mut()
    {
        meta::fill_gradient_edge(t, slot)?;
    }
    Ok(())
}

/// [`push_edge`] for an optional tensor argument.
#[inline]
pub fn push_edge_opt(edges: &mut EdgeList, t: Option<&Tensor>) -> Result<()> {
    match t {
        Some(t) => push_edge(edges, t),
        None => {
            edges.push(Edge::default());
            Ok(())
        }
    }
}

/// The gradient edge of an optional tensor argument.
pub fn edge_opt(t: Option<&Tensor>) -> Result<Edge> {
    t.map_or_else(|| Ok(Edge::default()), edge)
}

/// The gradient edges of a tensor list, one per element.
pub fn edges_list(ts: &[Tensor]) -> Result<Vec<Edge>> {
    ts.iter().map(edge).collect()
}

/// The gradient edges of a list of optional tensors, one per element.
pub fn edges_opt_list(ts: &[Option<Tensor>]) -> Result<Vec<Edge>> {
    ts.iter().map(|t| edge_opt(t.as_ref())).collect()
}

/// Makes `t` output `nr` of `node`, if its dtype can carry gradients (integer and bool
/// outputs are left without history, as PyTorch's autograd fallback leaves them).
pub fn set_output_history(t: &Tensor, node: &NodeRef, nr: u32) -> Result<()> {
    if t.dtype().is_floating_point() {
        meta::set_history(t, node.clone(), nr)?;
    }
    Ok(())
}

/// [`set_output_history`] for the last output, which takes the node instead of a new
/// reference to it.
#[inline]
pub fn set_output_history_owned(t: &Tensor, node: NodeRef, nr: u32) -> Result<()> {
    if t.dtype().is_floating_point() {
        meta::set_history(t, node, nr)?;
    }
    Ok(())
}

/// PyTorch's `set_history` in a generated Autograd kernel: makes `t` output `nr` of `node`,
/// refusing an output whose dtype cannot carry gradients ("Autograd not support dtype:
/// Long"): a differentiable operator whose output is integral while an input requires grad
/// (`bernoulli` of an integral tensor with a probability that requires grad, `sum` with an
/// integral `dtype=`). Operators whose output may be integral say when it is differentiable
/// in their derivatives.yaml entry (`_to_copy`'s `output_differentiability` condition).
pub fn set_differentiable_history(t: &Tensor, node: &NodeRef, nr: u32) -> Result<()> {
    check_differentiable_dtype(t)?;
    meta::set_history(t, node.clone(), nr)
}

/// [`set_differentiable_history`] for the last output, which takes the node.
#[inline]
pub fn set_differentiable_history_owned(t: &Tensor, node: NodeRef, nr: u32) -> Result<()> {
    check_differentiable_dtype(t)?;
    meta::set_history(t, node, nr)
}

#[inline]
fn check_differentiable_dtype(t: &Tensor) -> Result<()> {
    if t.dtype().is_floating_point() {
        Ok(())
    } else {
        Err(Error::runtime(format!(
            "Autograd not support dtype: {}",
            t.dtype()
        )))
    }
}

/// Refuses an in-place change of an inference tensor outside inference mode (an inference
/// tensor has no version counter to bump).
pub fn check_version_bump(t: &Tensor) -> Result<()> {
    if t.is_inference() && !switchyard_core::local_dispatch::is_inference_mode_enabled() {
        return Err(Error::runtime(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.",
        ));
    }
    Ok(())
}

/// PyTorch's error for an out= call whose arguments require grad (one message with the
/// out= wrappers generated for external backends' autograd kernels).
pub use switchyard_ops::runtime::out_requires_grad_error;

/// PyTorch's error for an argument without a formula that requires grad.
pub use switchyard_ops::runtime::not_differentiable_error;

/// torchgen's `check_no_requires_grad`: with grad mode on, refuses a tensor argument that
/// requires grad when the operator's derivatives.yaml entry gives it no formula (`argument`
/// is its schema name, `function` the operator's C++ name).
#[inline]
pub fn check_no_requires_grad(t: &Tensor, argument: &str, function: &str) -> Result<()> {
    if requires_grad(t) && is_grad_enabled() {
        return Err(not_differentiable_error(function, argument));
    }
    Ok(())
}

/// [`check_no_requires_grad`] for an optional tensor argument.
#[inline]
pub fn check_no_requires_grad_opt(
    t: Option<&Tensor>,
    argument: &str,
    function: &str,
) -> Result<()> {
    t.map_or(Ok(()), |t| check_no_requires_grad(t, argument, function))
}

/// [`check_no_requires_grad`] for every tensor of a list.
pub fn check_no_requires_grad_list(ts: &[Tensor], argument: &str, function: &str) -> Result<()> {
    ts.iter()
        .try_for_each(|t| check_no_requires_grad(t, argument, function))
}

/// [`check_no_requires_grad`] for every present tensor of a list of optional tensors.
pub fn check_no_requires_grad_opt_list(
    ts: &[Option<Tensor>],
    argument: &str,
    function: &str,
) -> Result<()> {
    ts.iter()
        .flatten()
        .try_for_each(|t| check_no_requires_grad(t, argument, function))
}

/// Whether any of the node's outputs in `range` is needed by the running pass.
pub fn range_needed(core: &NodeCore, range: &Range<usize>) -> bool {
    range.clone().any(|i| core.should_compute_output(i))
}

/// A formula's result for one input: a gradient, or none.
pub trait IntoGrad {
    /// The gradient.
    fn into_grad(self) -> Grad;
}

impl IntoGrad for Tensor {
    fn into_grad(self) -> Grad {
        Some(self)
    }
}

impl IntoGrad for Option<Tensor> {
    fn into_grad(self) -> Grad {
        self
    }
}

/// A formula's result for a list input: one gradient per element.
pub trait IntoGradList {
    /// The gradients.
    fn into_grads(self) -> Vec<Grad>;
}

impl IntoGradList for Vec<Tensor> {
    fn into_grads(self) -> Vec<Grad> {
        self.into_iter().map(Some).collect()
    }
}

impl IntoGradList for Vec<Grad> {
    fn into_grads(self) -> Vec<Grad> {
        self
    }
}

/// Stores a list input's gradients in the node's outputs.
pub fn copy_range(out: &mut [Grad], range: &Range<usize>, grads: Vec<Grad>) -> Result<()> {
    if grads.len() != range.len() {
        return Err(Error::runtime(format!(
            "internal error: a formula returned {} gradients for a list of {} tensors",
            grads.len(),
            range.len()
        )));
    }
    for (slot, g) in out[range.clone()].iter_mut().zip(grads) {
        *slot = g;
    }
    Ok(())
}

/// The node of an operator without a derivative formula: building the graph works, but a
/// gradient reaching it is an error (PyTorch's `NotImplemented`).
pub struct NotImplemented {
    /// The node's fields (public to the generated kernels, which add input metadata).
    pub core: NodeCore,
    operator: String,
}

impl NotImplemented {
    /// A node for `operator` with the given edges.
    pub fn new(operator: impl Into<String>, next_edges: impl Into<EdgeList>) -> NotImplemented {
        NotImplemented {
            core: NodeCore::with_edges(next_edges.into()),
            operator: operator.into(),
        }
    }
}

impl Node for NotImplemented {
    fn name(&self) -> String {
        "torch::autograd::NotImplemented".into()
    }

    fn core(&self) -> &NodeCore {
        &self.core
    }

    fn apply(self: Arc<Self>, _grads: Vec<Grad>) -> Result<Vec<Grad>> {
        // PyTorch's `NotImplemented` node is an `Error` node: a RuntimeError, worded unlike the
        // NotImplementedError of a `not_implemented(...)` formula.
        Err(Error::runtime(format!(
            "derivative for {} is not implemented",
            self.operator
        )))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
