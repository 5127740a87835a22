//! The graph of gradients that PyTorch computes with one backward operator.
//!
//! Some of PyTorch's formulas call an operator that has a derivative of its own
//! (`threshold_backward`, `convolution_backward`, `native_layer_norm_backward`, `sgn`). Like
//! every operator's, all of its floating outputs require grad under `create_graph=True` as soon
//! as one of its differentiable inputs does, and its double-backward formula gives each input
//! a gradient (zero, or none, where the output does not depend on it). switchyard composes
//! those formulas from differentiable operators, whose graph reaches only the inputs a value
//! depends on: `relu`'s gradient would not require grad through the result it masks with, nor
//! a convolution's bias gradient through the input and weight. [`join`] gives such a value
//! PyTorch's graph: a node whose first edge passes the gradient on to the value's own graph
//! and whose other edges give the remaining inputs PyTorch's gradient for them.

use std::any::Any;
use std::sync::Arc;
use switchyard_core::local_dispatch::is_grad_enabled;
use switchyard_core::{DimVec, Result, Tensor};
use switchyard_ops::op;

use crate::graph::{EdgeList, Grad, InputMetadata, Node, NodeCore, NodeRef};
use crate::support::{push_edge, rg, set_output_history_owned};

/// The gradient a joined input gets from PyTorch's double-backward formula.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinedGrad {
    /// None (an undefined gradient): `convolution_backward`'s and
    /// `native_layer_norm_backward`'s formulas give an input no gradient from an output that
    /// does not depend on it.
    Undefined,
    /// `zeros_like(grad)`, in the layout of the incoming gradient (`threshold_backward`'s
    /// `self: zeros_like(grad)`).
    ZerosLikeGrad,
    /// Fresh contiguous zeros of the input's shape (the zero tensor of `sgn_backward` for a
    /// real input).
    Zeros,
}

/// The node [`join`] records.
struct JoinedBackward {
    core: NodeCore,
    name: &'static str,
    grad: JoinedGrad,
    /// The joined inputs' shapes, for [`JoinedGrad::Zeros`].
    sizes: Vec<DimVec>,
}

impl Node for JoinedBackward {
    fn name(&self) -> String {
        self.name.into()
    }

    fn core(&self) -> &NodeCore {
        &self.core
    }

    fn apply(self: Arc<Self>, mut grads: Vec<Grad>) -> Result<Vec<Grad>> {
        let n = self.core.num_outputs();
        let mut out: Vec<Grad> = vec![None; n];
        let Some(grad) = grads.pop().flatten() else {
            return Ok(out);
        };
        for (i, slot) in out.iter_mut().enumerate().skip(1) {
            if !self.core.should_compute_output(i) {
                continue;
            }
            *slot = match self.grad {
                JoinedGrad::Undefined => None,
                JoinedGrad::ZerosLikeGrad => {
                    Some(op::zeros_like::call(&grad, None, None, None, None, None)?)
                }
                JoinedGrad::Zeros => Some(op::zeros::call(
                    &self.sizes[i - 1],
                    Some(grad.dtype()),
                    None,
                    Some(grad.device()),
                    None,
                )?),
            };
        }
        out[0] = Some(grad);
        Ok(out)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `value`, an output of PyTorch's backward operator `name` (the node's name,
/// `ConvolutionBackwardBackward0`...) computed from `inputs`, with that operator's graph:
/// under grad mode, when an input that requires grad is not already reached through
/// `value`'s own graph, a new handle of `value` whose node passes the gradient to `value`'s
/// graph and gives the `inputs` that require grad `grad`. `value` itself otherwise.
pub fn join(
    value: Tensor,
    inputs: &[Option<&Tensor>],
    grad: JoinedGrad,
    name: &'static str,
) -> Result<Tensor> {
    if !is_grad_enabled() || !value.dtype().is_floating_point() {
        return Ok(value);
    }
    let joined: Vec<&Tensor> = inputs.iter().flatten().copied().filter(|t| rg(t)).collect();
    // An undefined gradient adds nothing to a value that requires grad already.
    if joined.is_empty() || (grad == JoinedGrad::Undefined && rg(&value)) {
        return Ok(value);
    }
    let mut edges = EdgeList::new();
    push_edge(&mut edges, &value)?;
    for t in &joined {
        push_edge(&mut edges, t)?;
    }
    let sizes = if grad == JoinedGrad::Zeros {
        joined.iter().map(|t| t.sizes()).collect()
    } else {
        Vec::new()
    };
    // A new handle: `value`'s own history stays on `value`, the first edge's target.
    let out = value.shallow_copy();
    let node: NodeRef = Arc::new(JoinedBackward {
        core: NodeCore::new(edges, [InputMetadata::of(&out)]),
        name,
        grad,
        sizes,
    });
    set_output_history_owned(&out, node, 0)?;
    Ok(out)
}
