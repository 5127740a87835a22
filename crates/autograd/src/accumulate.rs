//! `AccumulateGrad`: the node at the end of every path to a leaf that requires grad. It adds
//! the incoming gradient into the leaf's `.grad`, following PyTorch's rules for when the
//! gradient is taken as is, copied, added in place or added out of place.

use std::any::Any;
use std::sync::{Arc, PoisonError};
use switchyard_core::local_dispatch::is_grad_enabled;
use switchyard_core::{Error, MemoryFormat, Result, Tensor};
use switchyard_ops::native::is_non_overlapping_and_dense;
use switchyard_ops::op;

use crate::graph::{Grad, Node, NodeCore};
use crate::meta;

/// Accumulates gradients into a leaf's `.grad`.
///
/// Unlike PyTorch's, the node does not hold its leaf: the leaf's autograd metadata keeps its
/// accumulator for the leaf's whole life (PyTorch caches it weakly and builds a new one for
/// every graph, an allocation and a teardown per operation on a parameter), and the edges into
/// the accumulator carry the leaf instead ([`crate::Edge::leaf`]); the engine passes it to
/// [`AccumulateGrad::accumulate`].
pub struct AccumulateGrad {
    core: NodeCore,
}

impl AccumulateGrad {
    pub(crate) fn new(variable: &Tensor) -> AccumulateGrad {
        // Accumulators run as soon as they are ready (PyTorch gives them the largest
        // sequence number), releasing gradient memory early.
        let mut core = NodeCore::with_sequence_nr(std::iter::empty(), std::iter::empty(), u64::MAX);
        core.add_input_metadata(variable);
        AccumulateGrad { core }
    }

    /// Whether this accumulator still describes `variable` (same shape: a leaf that was
    /// resized without autograd gets a new accumulator).
    pub(crate) fn fits(&self, variable: &Tensor) -> bool {
        self.core.input_metadata().first().is_some_and(|m| {
            variable.with_sizes(|s| switchyard_core::shape::same_dims(s, &m.shape))
        })
    }

    /// Adds the gradient in `grads` (one entry) into `variable.grad`, following PyTorch's
    /// `AccumulateGrad::accumulateGrad`, then runs the leaf's post-accumulate hooks.
    pub fn accumulate(&self, variable: &Tensor, mut grads: Vec<Grad>) -> Result<()> {
        let Some(Some(new_grad)) = grads.pop() else {
            return Ok(());
        };
        if !meta::is_leaf(variable) {
            return Err(Error::runtime(
                "leaf variable has been moved into the graph interior",
            ));
        }
        if !variable.requires_grad() {
            return Ok(());
        }
        let leaf_meta = meta::get_or_create(variable)?;
        let _serial = leaf_meta
            .accumulate_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (current, hooks): (Option<Tensor>, Vec<_>) = {
            let st = leaf_meta.lock();
            let hooks = st.leaf().map_or_else(Vec::new, |leaf| {
                leaf.post_accumulate_hooks
                    .iter()
                    .map(|(_, h)| h.clone())
                    .collect()
            });
            (st.grad.clone(), hooks)
        };
        let updated = match current {
            None => {
                // The pass's own handle is the only one: nothing the user can see refers to
                // this gradient, so it becomes `.grad` without a copy.
                if !is_grad_enabled()
                    && new_grad.handle_count() <= 1
                    && obeys_layout_contract(&new_grad, variable)
                {
                    Some(new_grad.shallow_copy())
                } else {
                    Some(clone_obey_contract(&new_grad, variable)?)
                }
            }
            Some(existing) if !is_grad_enabled() => {
                op::add__Tensor::call(&existing, &new_grad, 1.into())?;
                None
            }
            Some(existing) => Some(op::add_Tensor::call(&existing, &new_grad, 1.into())?),
        };
        if let Some(g) = updated {
            leaf_meta.lock().grad = Some(g);
        }
        for hook in hooks {
            hook(variable)?;
        }
        Ok(())
    }
}

/// Whether `grad` already has the layout PyTorch gives a leaf's gradient: the leaf's strides
/// when the leaf is dense and non-overlapping, row-major otherwise ("gradient layout contract").
fn obeys_layout_contract(grad: &Tensor, variable: &Tensor) -> bool {
    let (vs, vt) = (variable.sizes(), variable.strides());
    if is_non_overlapping_and_dense(&vs, &vt) {
        let gt = grad.strides();
        vs.iter()
            .zip(vt.iter().zip(gt.iter()))
            .all(|(&size, (&a, &b))| size == 1 || a == b)
    } else {
        grad.is_contiguous()
    }
}

/// A copy of `grad` laid out as the contract asks.
fn clone_obey_contract(grad: &Tensor, variable: &Tensor) -> Result<Tensor> {
    let (vs, vt) = (variable.sizes(), variable.strides());
    if is_non_overlapping_and_dense(&vs, &vt) {
        let out = op::empty_strided::call(
            &vs,
            &vt,
            Some(variable.dtype()),
            None,
            Some(variable.device()),
            None,
        )?;
        op::copy_::call(&out, grad, false)
    } else {
        op::clone::call(grad, Some(MemoryFormat::Contiguous))
    }
}

impl Node for AccumulateGrad {
    fn name(&self) -> String {
        "torch::autograd::AccumulateGrad".into()
    }

    fn core(&self) -> &NodeCore {
        &self.core
    }

    /// The engine calls [`AccumulateGrad::accumulate`] with the leaf its edge carries; a
    /// caller outside a backward pass has no leaf to give.
    fn apply(self: Arc<Self>, _grads: Vec<Grad>) -> Result<Vec<Grad>> {
        Err(Error::runtime(
            "internal error: AccumulateGrad runs inside a backward pass, which passes it its leaf",
        ))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
