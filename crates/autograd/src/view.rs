//! Views and in-place operations (PyTorch's `DifferentiableViewMeta`, `as_view`,
//! `check_inplace`, `rebase_history` and `CopySlices`).
//!
//! A view shares memory with its base, so an in-place change of either changes the other.
//! Autograd follows that:
//!
//! * every view of a tensor records its *base* (the root of the view chain, never itself a
//!   view) and how it was created ([`CreationMeta`]);
//! * an in-place operation on a view rewrites the base's history: the base's new `grad_fn`
//!   is a [`CopySlices`] node that routes the slice of the gradient the view covers through
//!   the in-place operation's backward, and the rest past it;
//! * every other view of that base notices (its version moved) and rebuilds its own history
//!   from the base's the next time it is used, as an `as_strided` of the base.

use std::any::Any;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use switchyard_core::local_dispatch::{is_grad_enabled, is_inference_mode_enabled};
use switchyard_core::{DimVec, Error, Result, Tensor};
use switchyard_ops::op;

use crate::graph::{Grad, InputMetadata, Node, NodeCore, NodeRef};
use crate::manual::TensorGeometry;
use crate::meta::{self, AutogradMeta};
use crate::saved::ERR_BACKWARD_TWICE;

/// How a view was created, which decides whether it may be modified in place
/// (PyTorch's `CreationMeta`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreationMeta {
    /// An ordinary view.
    Default,
    /// Returned by a custom function.
    InCustomFunction,
    /// One of several views returned by one operation (`split`, `unbind`, `chunk`).
    MultiOutputNode,
    /// Created with grad mode off.
    NoGradMode,
    /// Created in inference mode.
    InferenceMode,
}

impl CreationMeta {
    /// The creation meta of a view made now by a single-output view operation.
    pub fn current() -> CreationMeta {
        if is_inference_mode_enabled() {
            CreationMeta::InferenceMode
        } else if is_grad_enabled() {
            CreationMeta::Default
        } else {
            CreationMeta::NoGradMode
        }
    }

    /// The creation meta of the views of a multi-output view operation made now.
    pub fn current_multi_output() -> CreationMeta {
        match CreationMeta::current() {
            CreationMeta::Default => CreationMeta::MultiOutputNode,
            other => other,
        }
    }

    /// A view of a view keeps the restriction of the first (PyTorch's
    /// `propagate_creation_meta`).
    fn propagate(previous: CreationMeta, new: CreationMeta) -> CreationMeta {
        if new == CreationMeta::Default || previous == CreationMeta::InferenceMode {
            previous
        } else {
            new
        }
    }
}

/// What a differentiable view records about its base.
pub(crate) struct ViewInfo {
    /// The root of the view chain.
    pub(crate) base: Tensor,
    creation_meta: Mutex<CreationMeta>,
    /// The version at which the view's `grad_fn` was last set; a different current version
    /// means the base or another view of it changed in place since.
    attr_version: AtomicU32,
}

impl ViewInfo {
    pub(crate) fn creation_meta(&self) -> CreationMeta {
        *self
            .creation_meta
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_attr_version(&self, v: u32) {
        self.attr_version.store(v, Ordering::Release);
    }

    fn attr_version(&self) -> u32 {
        self.attr_version.load(Ordering::Acquire)
    }
}

/// Makes `output` (a fresh tensor sharing `base`'s memory, made by a view operation) a view
/// of `base` for autograd. `differentiable` is false for views that cut the graph
/// (`detach`): those get no view record.
pub fn as_view(
    base: &Tensor,
    output: Tensor,
    differentiable: bool,
    creation_meta: CreationMeta,
) -> Result<Tensor> {
    if base.is_inference() || !differentiable {
        return Ok(output);
    }
    // A kernel may hand back one of its inputs; the view record must go on a new object.
    let output = if output.is_same(base) || output.has_autograd_meta() {
        output.shallow_copy()
    } else {
        output
    };
    let (root, creation_meta) = match meta::get(base).as_ref().and_then(|m| m.view.as_ref()) {
        Some(info) => (
            info.base.clone(),
            CreationMeta::propagate(info.creation_meta(), creation_meta),
        ),
        None => (base.clone(), creation_meta),
    };
    let root_requires_grad = requires_grad(&root);
    let info = ViewInfo {
        base: root,
        creation_meta: Mutex::new(creation_meta),
        attr_version: AtomicU32::new(output.version()),
    };
    output.set_autograd_meta(Arc::new(AutogradMeta::new(Some(info))))?;
    if root_requires_grad && output.dtype().is_floating_point() {
        output.set_requires_grad(true)?;
    }
    Ok(output)
}

/// Applies [`as_view`] to each output of a multi-output view operation.
pub fn as_views(
    base: &Tensor,
    outputs: Vec<Tensor>,
    creation_meta: CreationMeta,
) -> Result<Vec<Tensor>> {
    outputs
        .into_iter()
        .map(|o| as_view(base, o, true, creation_meta))
        .collect()
}

/// Whether gradients will flow into `t` (PyTorch's `requires_grad()`): its own flag, or for
/// a view, its base's (a base may start requiring grad after the view was made).
#[inline]
pub fn requires_grad(t: &Tensor) -> bool {
    t.requires_grad() || (t.has_autograd_meta() && view_base_requires_grad(t))
}

#[cold]
fn view_base_requires_grad(t: &Tensor) -> bool {
    meta::get(t)
        .as_ref()
        .and_then(|m| m.view.as_ref())
        .is_some_and(|v| v.base.requires_grad())
}

/// `t._base`: the tensor a differentiable view views.
pub fn base(t: &Tensor) -> Option<Tensor> {
    meta::get(t)?.view.as_ref().map(|v| v.base.clone())
}

/// `t._is_view()`.
pub fn is_view(t: &Tensor) -> bool {
    meta::get(t).is_some_and(|m| m.view.is_some())
}

/// The message PyTorch gives when a view may not be modified in place (its
/// `handle_view_on_rebase`); `None` when it may. `indirect`: the base or another view was
/// modified, not this view.
fn view_rebase_error(meta: &AutogradMeta, info: &ViewInfo, indirect: bool) -> Option<String> {
    let cm = info.creation_meta();
    if cm == CreationMeta::Default {
        return None;
    }
    let (grad_fn, output_nr) = {
        let st = meta.lock();
        (st.grad_fn.clone(), st.output_nr)
    };
    let modified = if indirect {
        "its base or another view of its base has been"
    } else {
        "is being"
    };
    let mut msg = if matches!(cm, CreationMeta::InferenceMode | CreationMeta::NoGradMode)
        || grad_fn.is_none()
    {
        let prefix = match &grad_fn {
            Some(f) => format!(
                "Output {output_nr} of {} is a view of a view which was created in",
                crate::graph::forward_op_name(&f.name())
            ),
            None => "A view was created in".to_string(),
        };
        if cm == CreationMeta::InferenceMode {
            format!("{prefix} inference mode and {modified} modified inplace in normal mode.")
        } else {
            format!("{prefix} no_grad mode and {modified} modified inplace with grad mode enabled.")
        }
    } else {
        let name = grad_fn
            .as_ref()
            .map(|f| crate::graph::forward_op_name(&f.name()))
            .unwrap_or_default();
        format!("Output {output_nr} of {name} is a view and {modified} modified inplace.")
    };
    msg.push_str(match cm {
        CreationMeta::MultiOutputNode => " This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.",
        CreationMeta::NoGradMode => " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
        CreationMeta::InferenceMode => " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the inference_mode block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
        CreationMeta::InCustomFunction => " This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.",
        CreationMeta::Default => "",
    });
    Some(msg)
}

/// The checks before an in-place operation whose result requires grad (PyTorch's
/// `check_inplace`): no in-place change of a leaf that requires grad, of a view of one, or
/// of a view that may not be modified in place.
pub fn check_inplace(t: &Tensor, result_requires_grad: bool) -> Result<()> {
    if !result_requires_grad || !is_grad_enabled() {
        return Ok(());
    }
    if let Some(m) = meta::get(t)
        && let Some(info) = &m.view
    {
        if let Some(msg) = view_rebase_error(m, info, false) {
            return Err(Error::runtime(msg));
        }
        if requires_grad(t) && meta::is_leaf(&info.base) && info.base.requires_grad() {
            return Err(Error::runtime(
                "a view of a leaf Variable that requires grad is being used in an in-place operation.",
            ));
        }
    }
    if requires_grad(t) && meta::is_leaf(t) {
        return Err(Error::runtime(
            "a leaf Variable that requires grad is being used in an in-place operation.",
        ));
    }
    Ok(())
}

/// Gives `t` the new history `grad_fn` after an in-place operation (PyTorch's
/// `rebase_history`). For a view, the base's history is rewritten through [`CopySlices`] and
/// the view's own is rebuilt from it.
pub fn rebase_history(t: &Tensor, grad_fn: NodeRef) -> Result<()> {
    let m = meta::get_or_create(t)?;
    let Some(info) = &m.view else {
        let old = m.lock().grad_fn.clone();
        meta::set_history(t, grad_fn.clone(), 0)?;
        move_retains_grad(&old, 0, &grad_fn);
        return Ok(());
    };
    if grad_fn.core().num_inputs() != 1 {
        return Err(Error::runtime(
            "Functions which modify views in-place must return a single Variable",
        ));
    }
    let base = info.base.clone();
    m.lock().output_nr = 0;
    let base_old_fn = meta::grad_fn(&base)?;
    let copy_slices: NodeRef = Arc::new(CopySlices::new(&base, t, grad_fn)?);
    meta::set_history(&base, copy_slices.clone(), 0)?;
    if let Some(old) = &base_old_fn {
        move_retains_grad(&Some(old.clone()), meta::output_nr(&base), &copy_slices);
    }
    // The view's own history is rebuilt from the base's new one.
    let old = m.lock().grad_fn.clone();
    regenerate_view_grad_fn(t, m, info, old)?;
    Ok(())
}

/// Moves a `retain_grad()` registration from the old node of a tensor to its new one.
fn move_retains_grad(old: &Option<NodeRef>, old_output_nr: u32, new: &NodeRef) {
    if let Some(old) = old
        && let Some(weak) = old.core().remove_retains_grad(old_output_nr)
    {
        new.core().add_retains_grad(0, weak);
    }
}

/// A view's `grad_fn`, rebuilt when the base or another view changed in place since it was
/// set (PyTorch's `VariableHooks::grad_fn` for views).
pub(crate) fn view_grad_fn(t: &Tensor, m: &AutogradMeta) -> Result<Option<NodeRef>> {
    let Some(info) = &m.view else {
        return Ok(m.lock().grad_fn.clone());
    };
    let current_fn = m.lock().grad_fn.clone();
    if current_fn.is_none() && !requires_grad(&info.base) {
        return Ok(None);
    }
    if info.attr_version() == t.version() {
        return Ok(current_fn);
    }
    if let Some(msg) = view_rebase_error(m, info, true) {
        return Err(Error::runtime(msg));
    }
    regenerate_view_grad_fn(t, m, info, current_fn).map(Some)
}

/// Makes a view's history an `as_strided` of its base's current history.
fn regenerate_view_grad_fn(
    t: &Tensor,
    m: &AutogradMeta,
    info: &ViewInfo,
    old_fn: Option<NodeRef>,
) -> Result<NodeRef> {
    let base = &info.base;
    let geometry = t.geometry();
    let node = crate::generated::AsStridedBackward0 {
        core: NodeCore::new(
            meta::collect_next_edges([Some(base)])?,
            [InputMetadata {
                dtype: base.dtype(),
                device: base.device(),
                shape: geometry.sizes().iter().copied().collect(),
            }],
        ),
        self_geometry: TensorGeometry::of(base),
        size: geometry.sizes().to_vec(),
        stride: geometry.strides().to_vec(),
        storage_offset: Some(geometry.storage_offset()),
    };
    let fn_: NodeRef = Arc::new(node);
    {
        let mut st = m.lock();
        m.set_grad_fn(&mut st, Some(fn_.clone()), 0);
    }
    info.set_attr_version(t.version());
    move_retains_grad(&old_fn, 0, &fn_);
    t.set_requires_grad(true)?;
    Ok(fn_)
}

/// The node an in-place operation on a view leaves on the view's base: it routes the part
/// of the base's gradient the view covers through the operation's backward (`fn`) and the
/// rest past it (PyTorch's `CopySlices`).
pub struct CopySlices {
    core: NodeCore,
    base_sizes: DimVec,
    base_strides: DimVec,
    base_offset: i64,
    view_sizes: DimVec,
    view_strides: DimVec,
    view_offset: i64,
    fn_: Mutex<Option<NodeRef>>,
}

impl CopySlices {
    fn new(base: &Tensor, view: &Tensor, fn_: NodeRef) -> Result<CopySlices> {
        let mut edges = vec![meta::gradient_edge(base)?];
        edges.extend(fn_.core().next_edges().iter().skip(1).cloned());
        let (bg, vg) = (base.geometry(), view.geometry());
        Ok(CopySlices {
            core: NodeCore::new(edges, [InputMetadata::of(base)]),
            base_sizes: bg.sizes().iter().copied().collect(),
            base_strides: bg.strides().iter().copied().collect(),
            base_offset: bg.storage_offset(),
            view_sizes: vg.sizes().iter().copied().collect(),
            view_strides: vg.strides().iter().copied().collect(),
            view_offset: vg.storage_offset(),
            fn_: Mutex::new(Some(fn_)),
        })
    }
}

impl Node for CopySlices {
    fn name(&self) -> String {
        "torch::autograd::CopySlices".into()
    }

    fn core(&self) -> &NodeCore {
        &self.core
    }

    fn apply(self: Arc<Self>, mut grads: Vec<Grad>) -> Result<Vec<Grad>> {
        let n = self.core.num_outputs();
        let Some(Some(grad)) = grads.pop() else {
            return Ok(vec![None; n]);
        };
        let fn_ = self
            .fn_
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| Error::runtime(ERR_BACKWARD_TWICE))?;
        // Dispatched on `grad` (PyTorch's `grad.new_empty_strided`), so a layer above the
        // backend makes the result its own kind of tensor (a functional wrapper when the
        // gradient is one) before the gradient is copied in.
        let result = op::new_empty_strided::call(
            &grad,
            &self.base_sizes,
            &self.base_strides,
            None,
            None,
            None,
            None,
        )?;
        op::copy_::call(&result, &grad, false)?;
        let grad_slice = op::as_strided::call(
            &result,
            &self.view_sizes,
            &self.view_strides,
            Some(self.view_offset - self.base_offset),
        )?;
        let slice_copy =
            op::clone::call(&grad_slice, Some(switchyard_core::MemoryFormat::Contiguous))?;
        // The inner node's first edge led to the view's old history, which the running pass
        // may have pruned; let it compute every gradient it can.
        let res = crate::engine::without_pruning(|| fn_.clone().apply(vec![Some(slice_copy)]))?;
        let mut out: Vec<Grad> = vec![None; n];
        for (i, r) in res.into_iter().enumerate().take(n) {
            let Some(r) = r else { continue };
            if !self.core.should_compute_output(i) {
                continue;
            }
            if i == 0 {
                op::copy_::call(&grad_slice, &r, false)?;
                out[0] = Some(result.clone());
            } else {
                out[i] = Some(r);
            }
        }
        Ok(out)
    }

    fn release_variables(&self) {
        let fn_ = self
            .fn_
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(f) = fn_ {
            f.release_variables();
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
