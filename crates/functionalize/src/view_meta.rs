//! View records ([`ViewMeta`]): how a view is replayed from its base and how a mutated view is
//! pushed back into it (A.2.3), and the thread-local reapply-views flag (A.7).

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use switchyard_core::{Result, Tensor};

/// Replays a view: `(base, out_index) -> view`.
pub type ForwardFn = dyn Fn(&Tensor, usize) -> Result<Tensor> + Send + Sync;

/// A view inverse: `(base, mutated_view, out_index) -> new_base`, where `base` is the tensor the
/// view was taken from before the mutation.
pub type ReverseFn = dyn Fn(&Tensor, &Tensor, usize) -> Result<Tensor> + Send + Sync;

/// One application of a view operator, as a pair of closures over the view's own arguments
/// (PyTorch's closure-based `ViewMeta`).
///
/// Both closures receive and return tensors *below* the functionalization layer (never
/// functional wrappers); they are called with the `Functionalize` key excluded.
#[derive(Clone)]
pub struct ViewMeta {
    /// The view operator, for diagnostics (`"slice.Tensor"`, `"transpose.int"`, ...).
    pub op: &'static str,
    forward: Arc<ForwardFn>,
    reverse: Arc<ReverseFn>,
    /// For a multi-output view (`split`, `unbind`, ...), which output this record selects.
    pub out_index: usize,
    /// Whether the view operator returns several views.
    pub is_multi_output: bool,
    /// Whether the view is an `as_strided` (non-compositional: a later one in a chain cannot
    /// be mutated, see [`crate::FunctionalStorage::add_update`]).
    pub is_as_strided: bool,
}

impl ViewMeta {
    /// A single-output, non-`as_strided` record.
    pub fn new(
        op: &'static str,
        forward: impl Fn(&Tensor, usize) -> Result<Tensor> + Send + Sync + 'static,
        reverse: impl Fn(&Tensor, &Tensor, usize) -> Result<Tensor> + Send + Sync + 'static,
    ) -> ViewMeta {
        ViewMeta {
            op,
            forward: Arc::new(forward),
            reverse: Arc::new(reverse),
            out_index: 0,
            is_multi_output: false,
            is_as_strided: false,
        }
    }

    /// Marks the record as selecting output `out_index` of a multi-output view.
    pub fn multi_output(mut self, out_index: usize) -> ViewMeta {
        self.is_multi_output = true;
        self.out_index = out_index;
        self
    }

    /// Marks the record as an `as_strided` view.
    pub fn as_strided(mut self) -> ViewMeta {
        self.is_as_strided = true;
        self
    }

    /// The same record selecting output `out_index` instead (PyTorch's `to_out_idx`); the
    /// closures are shared, not copied.
    pub fn to_out_idx(&self, out_index: usize) -> ViewMeta {
        ViewMeta {
            out_index,
            ..self.clone()
        }
    }

    /// Replays the view on `base`.
    pub fn forward(&self, base: &Tensor) -> Result<Tensor> {
        (self.forward)(base, self.out_index)
    }

    /// The new base after the view of `base` was replaced by `mutated`.
    pub fn reverse(&self, base: &Tensor, mutated: &Tensor) -> Result<Tensor> {
        (self.reverse)(base, mutated, self.out_index)
    }
}

impl fmt::Debug for ViewMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ViewMeta")
            .field("op", &self.op)
            .field("out_index", &self.out_index)
            .field("is_multi_output", &self.is_multi_output)
            .field("is_as_strided", &self.is_as_strided)
            .finish_non_exhaustive()
    }
}

/// How a view inverse builds the new base (PyTorch's three-valued `InverseReturnMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InverseMode {
    /// Never return a view: inverses use `*_scatter` / `*_copy` operators (views removed).
    NeverView,
    /// Return a view where the inverse is itself a view (`transpose`'s inverse is a
    /// `transpose`), a scatter otherwise (views reapplied).
    ViewOrScatterInverse,
    /// Always return a view (not used by this layer; kept for parity with PyTorch).
    AlwaysView,
}

impl InverseMode {
    /// The mode a view record is created with: views stay views when they are reapplied.
    pub fn for_reapply(reapply_views: bool) -> InverseMode {
        if reapply_views {
            InverseMode::ViewOrScatterInverse
        } else {
            InverseMode::NeverView
        }
    }
}

thread_local! {
    static REAPPLY_VIEWS: Cell<bool> = const { Cell::new(false) };
}

/// Whether view kernels on this thread keep views as views (`remove = Mutations`) rather than
/// replacing them with `*_copy` operators (`remove = MutationsAndViews`). Off by default.
pub fn reapply_views() -> bool {
    REAPPLY_VIEWS.with(Cell::get)
}

/// Sets the reapply-views flag of this thread while alive, restoring the previous value on
/// drop (PyTorch's `FunctionalizationReapplyViewsGuard`).
#[must_use = "the flag is set only while the guard is alive"]
pub struct ReapplyViewsGuard {
    previous: bool,
    // The flag is thread-local: the guard must be dropped on the thread that made it.
    _not_send: PhantomData<*const ()>,
}

impl ReapplyViewsGuard {
    /// Sets the flag to `reapply` until the guard is dropped.
    pub fn new(reapply: bool) -> ReapplyViewsGuard {
        let previous = REAPPLY_VIEWS.with(|f| f.replace(reapply));
        ReapplyViewsGuard {
            previous,
            _not_send: PhantomData,
        }
    }
}

impl Drop for ReapplyViewsGuard {
    fn drop(&mut self) {
        REAPPLY_VIEWS.with(|f| f.set(self.previous));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reapply_guard_nests_and_restores() {
        assert!(!reapply_views());
        {
            let _on = ReapplyViewsGuard::new(true);
            assert!(reapply_views());
            assert_eq!(
                InverseMode::for_reapply(reapply_views()),
                InverseMode::ViewOrScatterInverse
            );
            {
                let _off = ReapplyViewsGuard::new(false);
                assert!(!reapply_views());
            }
            assert!(reapply_views());
        }
        assert!(!reapply_views());
        // Other threads have their own flag.
        let _on = ReapplyViewsGuard::new(true);
        assert!(!std::thread::spawn(reapply_views).join().unwrap());
    }

    #[test]
    fn to_out_idx_keeps_the_closures() {
        let m = ViewMeta::new(
            "split.Tensor",
            |_, i| Err(switchyard_core::Error::runtime(format!("forward {i}"))),
            |_, _, i| Err(switchyard_core::Error::runtime(format!("reverse {i}"))),
        )
        .multi_output(0);
        let m2 = m.to_out_idx(2);
        assert!(m2.is_multi_output && !m2.is_as_strided);
        let t = Tensor::from_slice(&[1.0f32]).unwrap();
        assert_eq!(m2.forward(&t).unwrap_err().message(), "forward 2");
        assert_eq!(m.reverse(&t, &t).unwrap_err().message(), "reverse 0");
        assert!(format!("{m2:?}").contains("split.Tensor"));
    }
}
