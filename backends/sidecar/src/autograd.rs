//! The sidecar's own autograd kernel: `relu`, listed under `autograd:` in `backend.yaml` and
//! so registered at `AutogradPrivateUse1`, where it takes the place of the generated
//! `Autograd` kernel (and its `ReluBackward0`) for sidecar tensors.
//!
//! A fused forward-and-backward-node kernel, as pytorch/xla's `max_pool2d`: it records the
//! sidecar's own backward node, [`SidecarReluBackward`], and computes the forward itself —
//! on the device for what the sidecar's compute kernels take (contiguous `float32`), and for
//! anything else by redispatching below the autograd keys with the key set it was called with
//! (`op::relu::redispatch(ks & sets::AFTER_AUTOGRAD, ..)`, which reaches the CPU fallback: the
//! `relu` group is registered at the autograd key only, as torchgen's rules require). It is
//! written only against `switchyard-autograd`'s public API: [`Node`], [`NodeCore`],
//! [`SavedVariable`] and the helpers of [`switchyard_autograd::support`].

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use switchyard_autograd::support::{edge, rg, set_output_history};
use switchyard_autograd::{Grad, Node, NodeCore, NodeRef, SavedVariable};
use switchyard_backend::{DispatchKeySet, Result, Tensor};
use switchyard_core::keys::sets;
use switchyard_core::local_dispatch::{auto_dispatch_below_ad_inplace_or_view, is_grad_enabled};
use switchyard_ops::op;

use crate::kernels::{native_f32, relu_f32, threshold_backward_f32};

/// Calls of the sidecar's autograd kernels (with or without recording a node).
pub(crate) static AUTOGRAD_CALLS: AtomicU64 = AtomicU64::new(0);
/// Runs of the sidecar's backward nodes.
pub(crate) static BACKWARD_CALLS: AtomicU64 = AtomicU64::new(0);

/// The backward node of the sidecar's `relu`: the incoming gradient where the forward output
/// is positive, zero elsewhere. It saves the output (not the input), as PyTorch's
/// `ReluBackward0` does, so an in-place change of the output before the backward pass is the
/// usual "modified by an inplace operation" error.
pub struct SidecarReluBackward {
    core: NodeCore,
    result: SavedVariable,
}

impl Node for SidecarReluBackward {
    fn name(&self) -> String {
        "SidecarReluBackward".into()
    }

    fn core(&self) -> &NodeCore {
        &self.core
    }

    fn release_variables(&self) {
        self.result.reset();
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    /// On the device for `float32` gradients of the output's shape; through the operators
    /// (differentiable, so recorded) when the pass itself is recorded (`create_graph`) or the
    /// gradient is anything else.
    fn apply(self: Arc<Self>, grads: Vec<Grad>) -> Result<Vec<Grad>> {
        BACKWARD_CALLS.fetch_add(1, Ordering::Relaxed);
        let mut grad_inputs: Vec<Grad> = vec![None; self.core.num_outputs()];
        let Some(Some(grad)) = grads.first() else {
            return Ok(grad_inputs);
        };
        if !self.core.should_compute_output(0) {
            return Ok(grad_inputs);
        }
        let node: NodeRef = self.clone();
        let result = self.result.unpack(&node)?;
        let grad_input = if !is_grad_enabled() && native_f32(&[grad, &result]) {
            threshold_backward_f32(grad, &result)?
        } else {
            switchyard_autograd::manual::threshold_backward(grad, &result, 0.0)?
        };
        if let Some(slot) = grad_inputs.first_mut() {
            *slot = Some(grad_input);
        }
        Ok(grad_inputs)
    }
}

/// `relu` at `AutogradPrivateUse1` (the trait's `relu`, called with the call's key set `ks`).
///
/// When grad mode is on and `self_` requires grad, a [`SidecarReluBackward`] is made before
/// the forward runs (so its sequence number orders it as the generated kernels order theirs)
/// with the edge to `self_`'s gradient, and becomes the output's `grad_fn`. The forward runs
/// with the autograd and `ADInplaceOrView` keys excluded, as PyTorch's
/// `AutoDispatchBelowADInplaceOrView`, so nothing it calls is recorded twice.
pub(crate) fn relu(ks: DispatchKeySet, self_: &Tensor) -> Result<Tensor> {
    AUTOGRAD_CALLS.fetch_add(1, Ordering::Relaxed);
    let grad_fn = if is_grad_enabled() && rg(self_) {
        Some(SidecarReluBackward {
            core: NodeCore::new([edge(self_)?], []),
            result: SavedVariable::empty(),
        })
    } else {
        None
    };
    let result = {
        let _guard = auto_dispatch_below_ad_inplace_or_view();
        if native_f32(&[self_]) {
            relu_f32(self_)?
        } else {
            op::relu::redispatch(ks & sets::AFTER_AUTOGRAD, self_)?
        }
    };
    if let Some(mut node) = grad_fn {
        node.core.add_input_metadata(&result);
        node.result = SavedVariable::output(&result, 0)?;
        let node: NodeRef = Arc::new(node);
        set_output_history(&result, &node, 0)?;
    }
    Ok(result)
}
