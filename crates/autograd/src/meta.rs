//! Per-tensor autograd state (PyTorch's `AutogradMeta` and `DifferentiableViewMeta`), kept in
//! the tensor's autograd slot, and the primitives over it: a tensor's `grad_fn` and gradient
//! edge, attaching history to outputs, leaves' gradient accumulators.
//!
//! A tensor's `requires_grad` flag (in `switchyard-core`) is PyTorch's `requires_grad()`: set
//! by the user on a leaf, or set here when an operation attaches a `grad_fn`. Most tensors
//! never get metadata: it is created when a tensor requires grad, gets a `grad_fn`, or is a
//! differentiable view.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use switchyard_core::{Error, Result, Tensor};

use crate::accumulate::AccumulateGrad;
use crate::graph::{Edge, NodeRef, PostAccumulateGradHook};
use crate::view::ViewInfo;

/// Autograd state of one tensor.
pub struct AutogradMeta {
    state: Mutex<MetaState>,
    /// Serialises accumulation into `.grad` (backward passes on several threads, possibly
    /// through different accumulator nodes, may reach the same leaf).
    pub(crate) accumulate_lock: Mutex<()>,
    /// Set for differentiable views (outputs of view operators on floating-point tensors):
    /// the base they view, and how to rebuild their history after an in-place change.
    pub(crate) view: Option<ViewInfo>,
    /// Whether `grad_fn` is set (written under the state lock with every change of it), and
    /// the leaf's first accumulator: together they let [`gradient_edge`] serve a leaf that
    /// requires grad without taking the lock (two atomic operations of a tiny call's ~15).
    has_grad_fn: AtomicBool,
    first_accumulator: OnceLock<Arc<AccumulateGrad>>,
}

#[derive(Default)]
pub(crate) struct MetaState {
    /// The node that produced this tensor (`None` for leaves). Changed only through
    /// [`AutogradMeta::set_grad_fn`], which keeps the lock-free `has_grad_fn` in step.
    pub(crate) grad_fn: Option<NodeRef>,
    /// Which output of `grad_fn` this tensor is.
    pub(crate) output_nr: u32,
    /// Whether a non-leaf keeps its gradient (`retain_grad()`).
    pub(crate) retains_grad: bool,
    /// The accumulated gradient (`.grad`).
    pub(crate) grad: Option<Tensor>,
    /// What only leaves use, made on first need: the metadata of every operation's output
    /// is made on the hot path, and stays small without it.
    leaf: Option<Box<LeafState>>,
}

/// The part of a tensor's autograd state that only leaves use.
#[derive(Default)]
pub(crate) struct LeafState {
    /// The gradient accumulator, kept for the leaf's life (it holds no tensor; the graph's
    /// edges into it carry the leaf, see [`crate::Edge::leaf`]).
    pub(crate) grad_accumulator: Option<Arc<AccumulateGrad>>,
    /// Hooks run after `.grad` was accumulated.
    pub(crate) post_accumulate_hooks: Vec<(u64, PostAccumulateGradHook)>,
    /// Tensor hooks, by id (they run before the accumulator).
    pub(crate) leaf_hooks: Vec<(u64, crate::graph::TensorHook)>,
}

impl MetaState {
    /// The leaf-only state, if any was made.
    pub(crate) fn leaf(&self) -> Option<&LeafState> {
        self.leaf.as_deref()
    }

    /// The leaf-only state, made if absent.
    pub(crate) fn leaf_mut(&mut self) -> &mut LeafState {
        self.leaf.get_or_insert_with(Box::default)
    }
}

impl AutogradMeta {
    pub(crate) fn new(view: Option<ViewInfo>) -> AutogradMeta {
        AutogradMeta {
            state: Mutex::new(MetaState::default()),
            accumulate_lock: Mutex::new(()),
            view,
            has_grad_fn: AtomicBool::new(false),
            first_accumulator: OnceLock::new(),
        }
    }

    /// Sets (or clears) `grad_fn` in the locked state `st` of this metadata.
    pub(crate) fn set_grad_fn(&self, st: &mut MetaState, grad_fn: Option<NodeRef>, output_nr: u32) {
        self.has_grad_fn.store(grad_fn.is_some(), Ordering::Release);
        st.grad_fn = grad_fn;
        st.output_nr = output_nr;
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, MetaState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores an incoming gradient in `.grad` for `retain_grad()`: a contiguous copy the
    /// first time, the sum after.
    pub(crate) fn retain_incoming_grad(&self, g: &Tensor) -> Result<()> {
        let _no_grad = switchyard_core::local_dispatch::GradModeGuard::new(false);
        let previous = self.lock().grad.clone();
        let new = match previous {
            None => {
                switchyard_ops::op::clone::call(g, Some(switchyard_core::MemoryFormat::Contiguous))?
            }
            Some(prev) => switchyard_ops::op::add_Tensor::call(&prev, g, 1.into())?,
        };
        self.lock().grad = Some(new);
        Ok(())
    }
}

/// The autograd metadata of `t`, if it has any (borrowed: no reference count is touched).
#[inline]
pub(crate) fn get(t: &Tensor) -> Option<&AutogradMeta> {
    t.autograd_meta()?.downcast_ref::<AutogradMeta>()
}

/// `t`'s autograd slot, filled with a leaf's metadata if empty.
#[inline]
fn slot_or_leaf(t: &Tensor) -> &switchyard_core::tensor::Extension {
    t.autograd_meta_or_init(|| Arc::new(AutogradMeta::new(None)))
}

/// The autograd metadata of `t`, created (as a leaf's) if it has none.
#[inline]
pub(crate) fn get_or_create(t: &Tensor) -> Result<&AutogradMeta> {
    slot_or_leaf(t)
        .downcast_ref::<AutogradMeta>()
        .ok_or_else(foreign_data)
}

/// [`get_or_create`] as a shared handle.
pub(crate) fn get_or_create_shared(t: &Tensor) -> Result<Arc<AutogradMeta>> {
    slot_or_leaf(t)
        .clone()
        .downcast::<AutogradMeta>()
        .map_err(|_| foreign_data())
}

#[cold]
fn foreign_data() -> Error {
    Error::runtime("internal error: a tensor's autograd slot holds foreign data")
}

/// The node that produced `t` (`t.grad_fn`), `None` for leaves. A view whose base was
/// modified in place gets its history rebuilt first (see [`crate::view`]).
pub fn grad_fn(t: &Tensor) -> Result<Option<NodeRef>> {
    let Some(meta) = get(t) else {
        return Ok(None);
    };
    if meta.view.is_some() {
        return crate::view::view_grad_fn(t, meta);
    }
    Ok(meta.lock().grad_fn.clone())
}

/// Which output of its `grad_fn` `t` is.
pub fn output_nr(t: &Tensor) -> u32 {
    get(t).map_or(0, |m| m.lock().output_nr)
}

/// Whether `t` is a leaf: it has no `grad_fn` (user-created, or produced where nothing
/// required grad).
pub fn is_leaf(t: &Tensor) -> bool {
    // A view's history may need rebuilding first; if that fails the view is not a leaf
    // (only views of tensors that require grad get a history).
    grad_fn(t).is_ok_and(|f| f.is_none())
}

/// The gradient accumulator of a leaf that requires grad (created on first need and kept by
/// the leaf).
pub fn grad_accumulator(t: &Tensor) -> Result<Option<NodeRef>> {
    if !t.requires_grad() {
        return Ok(None);
    }
    let meta = get_or_create(t)?;
    let mut st = meta.lock();
    if st.grad_fn.is_some() {
        return Ok(None);
    }
    Ok(Some(leaf_accumulator(t, &mut st)))
}

/// The accumulator of leaf `t` whose state is locked in `st`, made on first need.
fn leaf_accumulator(t: &Tensor, st: &mut MetaState) -> Arc<AccumulateGrad> {
    let leaf = st.leaf_mut();
    if let Some(existing) = &leaf.grad_accumulator
        && existing.fits(t)
    {
        return existing.clone();
    }
    let acc = Arc::new(AccumulateGrad::new(t));
    leaf.grad_accumulator = Some(acc.clone());
    acc
}

/// A leaf's gradient accumulator if one was made (a leaf no graph ever used has none; one
/// that the running graph does not use is never reached by the pass either).
pub(crate) fn existing_grad_accumulator(t: &Tensor) -> Option<NodeRef> {
    let m = get(t)?;
    let st = m.lock();
    let acc: NodeRef = st.leaf()?.grad_accumulator.clone()?;
    Some(acc)
}

/// Where gradients for `t` go: its `grad_fn` (and output number), the accumulator of a leaf
/// that requires grad, or nowhere.
pub fn gradient_edge(t: &Tensor) -> Result<Edge> {
    let mut edge = Edge::default();
    fill_gradient_edge(t, &mut edge)?;
    Ok(edge)
}

/// [`gradient_edge`] written into `edge` (an invalid edge on entry), field by field: the
/// hot path of every Autograd kernel, where returning the edge by value and moving it into
/// the node's list cost more than the lookup (store-forwarding stalls on the copies).
pub(crate) fn fill_gradient_edge(t: &Tensor, edge: &mut Edge) -> Result<()> {
    // One borrow of the metadata, one lock.
    let meta = match get(t) {
        Some(meta) if meta.view.is_some() => {
            // A view's history may need rebuilding first.
            *edge = match crate::view::view_grad_fn(t, meta)? {
                Some(f) => Edge::new(f, meta.lock().output_nr),
                None => leaf_edge(t)?,
            };
            return Ok(());
        }
        Some(meta) => meta,
        None => {
            *edge = leaf_edge(t)?;
            return Ok(());
        }
    };
    if !meta.has_grad_fn.load(Ordering::Acquire)
        && t.requires_grad()
        && let Some(acc) = meta.first_accumulator.get()
        && acc.fits(t)
    {
        edge.function = Some(acc.clone());
        edge.leaf = Some(t.clone());
        return Ok(());
    }
    let mut st = meta.lock();
    if let Some(f) = &st.grad_fn {
        edge.function = Some(f.clone());
        edge.input_nr = st.output_nr;
    } else if t.requires_grad() {
        let acc = leaf_accumulator(t, &mut st);
        if meta.first_accumulator.get().is_none() {
            // Taken only if empty: a later accumulator (the leaf was resized) is served by
            // this locked path, after the fast path's shape check fails.
            let _ = meta.first_accumulator.set(acc.clone());
        }
        edge.function = Some(acc);
        edge.leaf = Some(t.clone());
    }
    Ok(())
}

/// The edge of a tensor without history: its accumulator if it requires grad.
fn leaf_edge(t: &Tensor) -> Result<Edge> {
    Ok(match grad_accumulator(t)? {
        Some(acc) => Edge::to_leaf(acc, t.clone()),
        None => Edge::default(),
    })
}

/// The gradient edges of `tensors`, in order (PyTorch's `collect_next_edges`). `None`
/// entries (absent optional tensors) get an invalid edge.
pub fn collect_next_edges<'a>(
    tensors: impl IntoIterator<Item = Option<&'a Tensor>>,
) -> Result<Vec<Edge>> {
    tensors
        .into_iter()
        .map(|t| match t {
            Some(t) if t.requires_grad() => gradient_edge(t),
            _ => Ok(Edge::default()),
        })
        .collect()
}

/// Makes `t` output `output_nr` of `grad_fn`: it now requires grad and is not a leaf.
pub fn set_history(t: &Tensor, grad_fn: NodeRef, output_nr: u32) -> Result<()> {
    // A fresh output (the common case) gets its metadata made with the history in it, so
    // nothing is locked; a tensor that already has metadata is updated under its lock.
    let mut pending = Some(grad_fn);
    let ext = t.autograd_meta_or_init(|| {
        let mut meta = AutogradMeta::new(None);
        {
            let st = meta.state.get_mut().unwrap_or_else(PoisonError::into_inner);
            st.grad_fn = pending.take();
            st.output_nr = output_nr;
        }
        *meta.has_grad_fn.get_mut() = true;
        Arc::new(meta)
    });
    let meta = ext
        .downcast_ref::<AutogradMeta>()
        .ok_or_else(foreign_data)?;
    if let Some(grad_fn) = pending {
        let mut st = meta.lock();
        meta.set_grad_fn(&mut st, Some(grad_fn), output_nr);
    }
    if let Some(view) = &meta.view {
        view.set_attr_version(t.version());
    }
    // Any dtype: the generated kernels refuse fresh integral outputs before they get here
    // (`set_differentiable_history`); an in-place call keeps its integral `self`.
    t.set_requires_grad_by_history()
}

/// `t.grad`.
pub fn grad(t: &Tensor) -> Option<Tensor> {
    get(t).and_then(|m| m.lock().grad.clone())
}

/// Sets (or clears) `t.grad`, checking it fits `t` as PyTorch does.
pub fn set_grad(t: &Tensor, g: Option<Tensor>) -> Result<()> {
    if let Some(g) = &g {
        if g.sizes() != t.sizes() {
            return Err(Error::runtime(format!(
                "attempting to assign a gradient of size '{}' to a tensor of size '{}'. Please ensure that the gradient and the tensor are the same size",
                switchyard_core::shape::fmt_dims(&g.sizes()),
                switchyard_core::shape::fmt_dims(&t.sizes())
            )));
        }
        if g.dtype() != t.dtype() {
            return Err(Error::runtime(format!(
                "attempting to assign a gradient with dtype '{}' to a tensor with grad_dtype '{}'. The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break downstream systems that assume they match.",
                g.dtype().type_meta_name(),
                t.dtype().name()
            )));
        }
        if g.device() != t.device() {
            return Err(Error::runtime(
                "assigned grad has data located on a different device".to_string(),
            ));
        }
    }
    get_or_create(t)?.lock().grad = g;
    Ok(())
}
