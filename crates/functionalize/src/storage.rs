//! The alias group of functional tensors ([`FunctionalStorage`], A.2.2): the base every view of
//! the group is derived from, and the queue of updates made through its members.

use crate::autograd::LeafGrad;
use crate::below;
use crate::view_meta::ViewMeta;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use switchyard_core::geometry::Geometry;
use switchyard_core::{DeviceType, Error, Result, Tensor};
use switchyard_ops::meta::index_support::has_internal_overlap;
use switchyard_ops::op;

/// A pending mutation of an alias group: the new value of the mutated member and the view chain
/// that derives that member from the base.
#[derive(Clone)]
pub struct Update {
    /// The member's value after the mutation (below the layer).
    pub new_value: Tensor,
    /// The member's view records, from the base (empty when the base itself was mutated).
    pub view_metas: Arc<[ViewMeta]>,
}

impl fmt::Debug for Update {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Update")
            .field("sizes", &self.new_value.sizes())
            .field("view_metas", &self.view_metas)
            .finish()
    }
}

struct StorageState {
    base: Tensor,
    updates: Vec<Update>,
}

/// The storage shared by a functional tensor and all its views: holds no data itself, only the
/// (unwrapped) base and a FIFO queue of updates, with a generation counter bumped once per
/// queued update. Members compare their own generation with it to know whether to regenerate.
pub struct FunctionalStorage {
    /// Bumped (under the state lock) once per queued update; read without it.
    generation: AtomicU64,
    frozen: AtomicBool,
    state: Mutex<StorageState>,
    mutations: AtomicU64,
    mutations_no_grad_or_inference: AtomicU64,
    /// A [`crate::autograd::LeafGrad`], set by the transform (plan §7.3).
    leaf_requires_grad: AtomicU8,
    /// [`FunctionalStorage::nbytes`], from the base the group was made from. Only the size is
    /// kept (PyTorch's `original_storage_size_`): holding that base would keep its data alive
    /// after every update replaced it (a whole parameter's worth per mutated tensor).
    original_nbytes: usize,
}

impl fmt::Debug for FunctionalStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionalStorage")
            .field("generation", &self.generation())
            .field("frozen", &self.is_frozen())
            .field("pending_updates", &self.pending_updates())
            .finish_non_exhaustive()
    }
}

impl FunctionalStorage {
    /// A new alias group whose base is `base` (a tensor below the layer), at generation 0.
    pub fn new(base: Tensor) -> Result<Arc<FunctionalStorage>> {
        if crate::is_functional(&base) {
            return Err(Error::runtime(
                "internal error: the base of a functional storage must not be a functional tensor",
            ));
        }
        Ok(Self::of_value(base))
    }

    /// [`FunctionalStorage::new`] for a base known to be below the layer (a wrapper's value).
    pub(crate) fn of_value(base: Tensor) -> Arc<FunctionalStorage> {
        let original_nbytes = base.storage_ref().map_or_else(
            || {
                usize::try_from(base.geometry().required_elements()).unwrap_or(0)
                    * base.element_size()
            },
            |s| s.nbytes(),
        );
        Arc::new(FunctionalStorage {
            generation: AtomicU64::new(0),
            frozen: AtomicBool::new(false),
            state: Mutex::new(StorageState {
                base,
                updates: Vec::new(),
            }),
            mutations: AtomicU64::new(0),
            mutations_no_grad_or_inference: AtomicU64::new(0),
            leaf_requires_grad: AtomicU8::new(LeafGrad::No as u8),
            original_nbytes,
        })
    }

    fn lock(&self) -> MutexGuard<'_, StorageState> {
        // The state is consistent between statements (each update is applied whole before it
        // leaves the queue), so a panic elsewhere does not make it unusable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The number of updates ever queued.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current base (pending updates not applied).
    pub fn base(&self) -> Tensor {
        self.lock().base.clone()
    }

    /// The base together with the generation it reflects once no update is pending: read under
    /// one lock so that a concurrent update cannot slip in between.
    pub(crate) fn base_and_generation(&self) -> (Tensor, u64) {
        let st = self.lock();
        (st.base.clone(), self.generation())
    }

    /// The bytes of eager storage the group stands for (PyTorch's `FunctionalStorageImpl`
    /// size): the storage of the tensor the group was made from, or, for a tensor without
    /// storage, what its geometry reaches. `resize_` compares with it to tell growth (a new
    /// storage) from shrinking (a view).
    pub fn nbytes(&self) -> usize {
        self.original_nbytes
    }

    /// How many updates are queued.
    pub fn pending_updates(&self) -> usize {
        self.lock().updates.len()
    }

    /// Whether updates are refused ([`FunctionalStorage::freeze`]).
    pub fn is_frozen(&self) -> bool {
        self.frozen.load(Ordering::Acquire)
    }

    /// Refuses every later update of the group (`torch._freeze_functional_tensor`); cannot be
    /// undone.
    pub fn freeze(&self) {
        self.frozen.store(true, Ordering::Release);
    }

    /// Queues an update (PyTorch's `add_update`) and bumps the generation.
    ///
    /// Errors: "cannot mutate tensors with frozen storage"; a mutation through a view chain
    /// longer than one whose later records include an `as_strided` (PyTorch issue #104505),
    /// except on XLA as in PyTorch.
    pub fn add_update(&self, new_value: Tensor, view_metas: Arc<[ViewMeta]>) -> Result<()> {
        if self.is_frozen() {
            return Err(crate::errors::frozen_storage());
        }
        // Record 0 may be an `as_strided` (its inverse sees the whole base); a later one may not.
        if new_value.device().kind() != DeviceType::Xla
            && let Some(i) = view_metas
                .iter()
                .enumerate()
                .skip(1)
                .find_map(|(i, m)| m.is_as_strided.then_some(i))
        {
            return Err(crate::errors::as_strided_in_view_chain(view_metas.len(), i));
        }
        let mut st = self.lock();
        st.updates.push(Update {
            new_value,
            view_metas,
        });
        // Bumped under the lock, so that `base_and_generation` never pairs an old base with a
        // generation counting an update it does not contain.
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Makes `value` (a new value of the base member) the base, if the group is at
    /// `generation` with no queued update: what queuing it and applying the queue would do, in
    /// one step (the base's layout kept, as [`FunctionalStorage::apply_updates`] keeps it).
    /// Returns the new base and generation, or `None` (nothing changed) if the group has moved
    /// on. Errors as [`FunctionalStorage::add_update`] for a frozen group.
    pub(crate) fn set_base(
        &self,
        generation: u64,
        value: &Tensor,
    ) -> Result<Option<(Tensor, u64)>> {
        if self.is_frozen() {
            return Err(crate::errors::frozen_storage());
        }
        let mut st = self.lock();
        if !st.updates.is_empty() || self.generation() != generation {
            return Ok(None);
        }
        let base = {
            let _below = below();
            keep_layout(&st.base, value.clone())?
        };
        st.base = base.clone();
        // Bumped under the lock, as in `add_update`.
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        Ok(Some((base, generation)))
    }

    /// Applies the queued updates to the base, in order, with the layer excluded; returns
    /// whether there were any. An update that fails stays queued (the ones before it are
    /// applied), so the error comes back on the next sync instead of being lost.
    pub fn apply_updates(&self) -> Result<bool> {
        let _below = below();
        // Held across the replays: the calls below the layer cannot re-enter this storage
        // (their arguments are plain tensors and `Functionalize` is excluded).
        let mut st = self.lock();
        if st.updates.is_empty() {
            return Ok(false);
        }
        while let Some(update) = st.updates.first() {
            let new_base = apply_update(update, &st.base)?;
            st.base = keep_layout(&st.base, new_base)?;
            st.updates.remove(0);
        }
        Ok(true)
    }

    /// Counts a data mutation of the group (the no-grad / inference-mode ones separately, as
    /// AOTAutograd needs).
    pub(crate) fn mark_mutation(&self, no_grad_or_inference: bool) {
        self.mutations.fetch_add(1, Ordering::AcqRel);
        if no_grad_or_inference {
            self.mutations_no_grad_or_inference
                .fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Data mutations counted by [`crate::mark_mutation`].
    pub fn mutation_count(&self) -> u64 {
        self.mutations.load(Ordering::Acquire)
    }

    /// Of [`FunctionalStorage::mutation_count`], those made under no-grad or inference mode.
    pub fn mutation_count_no_grad_or_inference(&self) -> u64 {
        self.mutations_no_grad_or_inference.load(Ordering::Acquire)
    }

    /// Whether the group was made from a leaf that requires grad, or from a view of one.
    pub(crate) fn leaf_requires_grad(&self) -> LeafGrad {
        LeafGrad::from_u8(self.leaf_requires_grad.load(Ordering::Relaxed))
    }

    /// Records what the tensor the group was made from is to autograd (the transform's inputs).
    pub(crate) fn set_leaf_requires_grad(&self, leaf: LeafGrad) {
        self.leaf_requires_grad.store(leaf as u8, Ordering::Relaxed);
    }
}

/// `new_base` in `old_base`'s layout (sizes, strides, storage offset and the rest of its
/// storage), when the two have the same sizes and dtype but another geometry: the functional
/// `copy(old_base, new_base)` (PyTorch issue #133512: "preserve the old layout when replacing a
/// strided tensor").
///
/// Eager writes into the base's memory and never changes its layout, while the functional
/// operators and view inverses return tensors in the layouts their kernels chose (an update
/// through a transposed view on a backend whose kernels return contiguous results gives a
/// transposed base). The layer's view records replay on the base's value: `as_strided`
/// addresses its storage, and a reapplied `view` needs a layout that can be viewed, as eager's
/// can. So a group's base keeps the eager base's layout: that of the tensor the group was made
/// from (an input, or a fresh output laid out as eager's by the fallback). An old base with
/// internal overlap (an expanded input) cannot be laid out again; it is left as it is.
fn keep_layout(old_base: &Tensor, new_base: Tensor) -> Result<Tensor> {
    if new_base.dtype() != old_base.dtype() || new_base.sizes() != old_base.sizes() {
        return Ok(new_base);
    }
    if same_layout(&old_base.geometry(), &new_base.geometry())
        || has_internal_overlap(old_base) == Some(true)
    {
        return Ok(new_base);
    }
    op::copy::call(old_base, &new_base, false)
}

/// Whether two geometries of the same sizes put every element at the same storage position
/// (strides of dimensions of size 1 do not matter, nor anything when there is no element).
pub(crate) fn same_layout(a: &Geometry, b: &Geometry) -> bool {
    if a.numel() == 0 {
        return true;
    }
    a.storage_offset() == b.storage_offset()
        && a.sizes()
            .iter()
            .zip(a.strides().iter().zip(b.strides()))
            .all(|(&size, (x, y))| size == 1 || x == y)
}

/// The new base after `update` (A.3 `apply_update`): replays all but the last view record to
/// get the tensors each record was taken from, then pushes the new value back through the
/// inverses from the innermost view out.
fn apply_update(update: &Update, base: &Tensor) -> Result<Tensor> {
    let metas = &update.view_metas;
    let Some((_, outer)) = metas.split_last() else {
        return Ok(update.new_value.clone());
    };
    let mut intermediates = Vec::with_capacity(metas.len());
    intermediates.push(base.clone());
    for m in outer {
        let next = match intermediates.last() {
            Some(t) => m.forward(t)?,
            None => break,
        };
        intermediates.push(next);
    }
    let mut t = update.new_value.clone();
    for (m, taken_from) in metas.iter().zip(&intermediates).rev() {
        t = m.reverse(taken_from, &t)?;
    }
    Ok(t)
}
