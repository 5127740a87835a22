//! Tensor hooks: functions run on a tensor's gradient when the backward pass computes it
//! (`register_hook`), and on a leaf after its `.grad` was accumulated
//! (`register_post_accumulate_grad_hook`).
//!
//! A hook registered on a non-leaf lives on the node that produces it (so a hook registered
//! before an in-place change sees the gradient of the value it was registered on); a leaf's
//! hooks live on the leaf and run before its accumulator.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use switchyard_core::{Error, Result, Tensor};

use crate::graph::{Grad, Node, PostAccumulateGradHook, TensorHook};
use crate::meta::{self, AutogradMeta};
use crate::view::requires_grad;

static NEXT_HOOK_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) fn next_hook_id() -> u64 {
    NEXT_HOOK_ID.fetch_add(1, Ordering::Relaxed)
}

enum Target {
    Node(Weak<dyn Node>),
    Leaf(Weak<AutogradMeta>),
    PostAccumulate(Weak<AutogradMeta>),
}

/// A registered hook (PyTorch's `RemovableHandle`).
pub struct HookHandle {
    target: Target,
    id: u64,
}

impl HookHandle {
    /// Unregisters the hook; returns whether it was still registered.
    pub fn remove(&self) -> bool {
        match &self.target {
            Target::Node(n) => n
                .upgrade()
                .is_some_and(|n| n.core().remove_pre_hook(self.id)),
            Target::Leaf(m) => m.upgrade().is_some_and(|m| {
                let mut st = m.lock();
                let hooks = &mut st.leaf_mut().leaf_hooks;
                let before = hooks.len();
                hooks.retain(|(id, _)| *id != self.id);
                hooks.len() != before
            }),
            Target::PostAccumulate(m) => m.upgrade().is_some_and(|m| {
                let mut st = m.lock();
                let hooks = &mut st.leaf_mut().post_accumulate_hooks;
                let before = hooks.len();
                hooks.retain(|(id, _)| *id != self.id);
                hooks.len() != before
            }),
        }
    }
}

/// Registers `hook` on `t`'s gradient: it runs when the gradient is computed and may return a
/// replacement (`Tensor.register_hook`).
pub fn register_hook(
    t: &Tensor,
    hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
) -> Result<HookHandle> {
    if !requires_grad(t) {
        return Err(Error::runtime(
            "cannot register a hook on a tensor that doesn't require gradient",
        ));
    }
    let hook: TensorHook = Arc::new(hook);
    match meta::grad_fn(t)? {
        Some(f) => {
            let id = f.core().add_pre_hook(meta::output_nr(t), hook);
            Ok(HookHandle {
                target: Target::Node(Arc::downgrade(&f)),
                id,
            })
        }
        None => {
            let m = meta::get_or_create_shared(t)?;
            let id = next_hook_id();
            m.lock().leaf_mut().leaf_hooks.push((id, hook));
            Ok(HookHandle {
                target: Target::Leaf(Arc::downgrade(&m)),
                id,
            })
        }
    }
}

/// Registers `hook` to run on leaf `t` after its `.grad` was updated
/// (`Tensor.register_post_accumulate_grad_hook`).
pub fn register_post_accumulate_grad_hook(
    t: &Tensor,
    hook: impl Fn(&Tensor) -> Result<()> + Send + Sync + 'static,
) -> Result<HookHandle> {
    if !requires_grad(t) {
        return Err(Error::runtime(
            "cannot register a hook on a tensor that doesn't require gradient",
        ));
    }
    if !meta::is_leaf(t) {
        return Err(Error::runtime(
            "post accumulate grad hooks cannot be registered on non-leaf tensors",
        ));
    }
    let hook: PostAccumulateGradHook = Arc::new(hook);
    let m = meta::get_or_create_shared(t)?;
    let id = next_hook_id();
    m.lock().leaf_mut().post_accumulate_hooks.push((id, hook));
    Ok(HookHandle {
        target: Target::PostAccumulate(Arc::downgrade(&m)),
        id,
    })
}

/// Runs a leaf's tensor hooks on the gradient entering its accumulator.
pub(crate) fn run_leaf_hooks(var: &Tensor, grads: &mut [Grad]) -> Result<()> {
    let Some(m) = meta::get(var) else {
        return Ok(());
    };
    let hooks: Vec<TensorHook> = match m.lock().leaf() {
        Some(leaf) => leaf.leaf_hooks.iter().map(|(_, h)| h.clone()).collect(),
        None => return Ok(()),
    };
    for hook in hooks {
        if let Some(Some(g)) = grads.first()
            && let Some(replacement) = hook(g)?
        {
            grads[0] = Some(replacement);
        }
    }
    Ok(())
}
