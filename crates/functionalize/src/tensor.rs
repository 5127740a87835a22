//! The functional wrapper ([`FunctionalTensor`], A.2.1) and the state transitions of A.3:
//! wrapping, unwrapping, syncing, replacing a wrapper's value and committing it to its alias
//! group.

use crate::storage::FunctionalStorage;
use crate::view_meta::ViewMeta;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use switchyard_core::keys::sets;
use switchyard_core::local_dispatch::{
    ExcludeDispatchKeyGuard, is_grad_enabled, is_inference_mode_enabled,
};
use switchyard_core::tensor::{Geometry, PayloadParts};
use switchyard_core::{DispatchKey, DispatchKeySet, Error, Result, Tensor};

/// Excludes this layer and the autograd layers for calls made while alive: how the layer calls
/// operators on the values it unwrapped (PyTorch's `AutoDispatchSkipFunctionalize`, plus the
/// below-autograd state autograd kernels already hold, needed when the layer is entered from
/// the transform rather than from an autograd kernel).
pub fn below() -> ExcludeDispatchKeyGuard {
    ExcludeDispatchKeyGuard::new(
        sets::AUTOGRAD_WITH_AD_INPLACE_OR_VIEW.add(DispatchKey::Functionalize),
    )
}

/// The payload of a functional wrapper tensor: its current value (a tensor below the layer,
/// replaced, never mutated in place), its alias group and the view chain deriving it from the
/// group's base.
///
/// The wrapper's sizes, strides and offset are the eager program's and live in the wrapper
/// tensor itself, not here; the value's own layout is whatever the backend produced.
pub struct FunctionalTensor {
    state: Mutex<WrapperState>,
}

struct WrapperState {
    value: Tensor,
    /// The alias group; `None` until first needed (a view, a mutation, a question about the
    /// group) for a wrapper of a fresh operator output, which most never need: the group's
    /// base is then `value`, unchanged since wrapping (everything that replaces the value or
    /// records a view makes the group first, [`WrapperState::group`]).
    storage: Option<Arc<FunctionalStorage>>,
    /// Copied on push: chains are short, and a snapshot is cheap to hand to an update.
    view_metas: ViewChain,
    generation: u64,
    has_metadata_mutation: bool,
    is_multi_output_view: bool,
    was_storage_changed: bool,
}

/// What the slow paths read of a wrapper's state at once (see [`FunctionalTensor::snapshot`]).
struct Snapshot {
    value: Tensor,
    storage: Arc<FunctionalStorage>,
    view_metas: ViewChain,
    generation: u64,
    is_multi_output_view: bool,
}

impl fmt::Debug for FunctionalTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("FunctionalTensor")
            .field("generation", &st.generation)
            .field("storage", &st.storage)
            .field("view_metas", &st.view_metas)
            .finish_non_exhaustive()
    }
}

impl WrapperState {
    /// The alias group, made now (base: the current value, generation 0) if not yet made.
    fn group(&mut self) -> &Arc<FunctionalStorage> {
        self.storage
            .get_or_insert_with(|| FunctionalStorage::of_value(self.value.clone()))
    }
}

impl FunctionalTensor {
    fn lock(&self) -> MutexGuard<'_, WrapperState> {
        // Every update of the state is a plain assignment: a panic cannot leave it half-done.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of the state, its alias group made: the wrapper lock is never held across an
    /// operator call.
    fn snapshot(&self) -> Snapshot {
        let mut st = self.lock();
        let storage = st.group().clone();
        Snapshot {
            value: st.value.clone(),
            storage,
            view_metas: st.view_metas.clone(),
            generation: st.generation,
            is_multi_output_view: st.is_multi_output_view,
        }
    }

    /// The value if no update of the group is newer, with whether its layout differs from
    /// `wrapper`'s (its eager geometry), under one lock: the boxed fallback asks this of every
    /// argument of every call.
    pub(crate) fn current_value(&self, wrapper: &Tensor) -> Option<(Tensor, bool)> {
        let st = self.lock();
        let up_to_date = st
            .storage
            .as_ref()
            .is_none_or(|s| s.generation() == st.generation);
        up_to_date.then(|| (st.value.clone(), !st.value.has_same_geometry(wrapper)))
    }

    /// The current value (not synced).
    pub fn value(&self) -> Tensor {
        self.lock().value.clone()
    }

    /// The current value's sizes, strides and offset (not synced), read without a new handle
    /// to the value.
    pub(crate) fn value_geometry(&self) -> switchyard_core::geometry::Geometry {
        self.lock().value.geometry()
    }

    /// The address of the alias group, if made.
    fn group_ptr(&self) -> Option<*const FunctionalStorage> {
        self.lock().storage.as_ref().map(Arc::as_ptr)
    }

    /// The alias group.
    pub fn storage(&self) -> Arc<FunctionalStorage> {
        self.lock().group().clone()
    }

    /// The view records deriving this tensor from its group's base (empty for a base).
    pub fn view_metas(&self) -> Arc<[ViewMeta]> {
        self.lock().view_metas.to_arc()
    }

    /// The group generation this tensor was last regenerated at.
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Whether no update of the group is newer than this tensor's value.
    pub fn is_up_to_date(&self) -> bool {
        let st = self.lock();
        st.storage
            .as_ref()
            .is_none_or(|s| s.generation() == st.generation)
    }

    /// Whether the tensor's metadata was mutated (in-place view ops, storage growth).
    pub fn has_metadata_mutation(&self) -> bool {
        self.lock().has_metadata_mutation
    }

    /// Whether the tensor is one output of a multi-output view.
    pub fn is_multi_output_view(&self) -> bool {
        self.lock().is_multi_output_view
    }

    /// Whether `set_` moved the tensor to another storage.
    pub fn was_storage_changed(&self) -> bool {
        self.lock().was_storage_changed
    }
}

/// A wrapper's view records from its group's base: no allocation for a base (every fresh
/// output's wrapper is one; `Arc::from([])` allocates a header per call). Reads as a slice.
#[derive(Clone, Default)]
struct ViewChain(Option<Arc<[ViewMeta]>>);

impl ViewChain {
    /// The records as a shareable list (allocated for an empty chain: slow paths only).
    fn to_arc(&self) -> Arc<[ViewMeta]> {
        self.0.clone().unwrap_or_else(|| Arc::from([]))
    }
}

impl std::ops::Deref for ViewChain {
    type Target = [ViewMeta];
    fn deref(&self) -> &[ViewMeta] {
        self.0.as_deref().unwrap_or(&[])
    }
}

impl FromIterator<ViewMeta> for ViewChain {
    fn from_iter<I: IntoIterator<Item = ViewMeta>>(iter: I) -> ViewChain {
        let records: Arc<[ViewMeta]> = iter.into_iter().collect();
        ViewChain((!records.is_empty()).then_some(records))
    }
}

impl fmt::Debug for ViewChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The key set of a wrapper around a value with keys `value_keys` (A.2.1): the value's keys
/// plus `Functionalize`, minus the functorch transform and Python keys.
fn wrapper_key_set(value_keys: DispatchKeySet) -> DispatchKeySet {
    value_keys
        .add(DispatchKey::Functionalize)
        .minus(sets::FUNCTORCH_TRANSFORMS)
        .minus(sets::PYTHON)
}

/// The payload of `t` if it is a functional wrapper.
pub fn functional_payload(t: &Tensor) -> Option<&FunctionalTensor> {
    if t.key_set().has(DispatchKey::Functionalize) {
        t.payload_as::<FunctionalTensor>()
    } else {
        None
    }
}

fn require_functional<'t>(t: &'t Tensor, what: &str) -> Result<&'t FunctionalTensor> {
    functional_payload(t).ok_or_else(|| {
        Error::runtime(format!(
            "{what}: expected a functional tensor, but got a plain {} tensor",
            t.device()
        ))
    })
}

/// Whether `t` is a functional wrapper (the `Functionalize` key and a [`FunctionalTensor`]
/// payload).
pub fn is_functional(t: &Tensor) -> bool {
    functional_payload(t).is_some()
}

/// Whether some element of `ts` is functional.
pub fn is_functional_list(ts: &[Tensor]) -> bool {
    ts.iter().any(is_functional)
}

/// Whether some defined element of `ts` is functional.
pub fn is_functional_optional_list(ts: &[Option<Tensor>]) -> bool {
    ts.iter().flatten().any(is_functional)
}

/// Whether `a` and `b` are functional tensors of the same alias group.
pub fn are_aliased(a: &Tensor, b: &Tensor) -> bool {
    match (functional_payload(a), functional_payload(b)) {
        // A wrapper whose group is not made yet has no other member (no view was taken of it),
        // so the question needs no group: asking it of every operand of every in-place call
        // must not make one.
        (Some(x), Some(y)) => {
            std::ptr::eq(x, y)
                || matches!((x.group_ptr(), y.group_ptr()), (Some(p), Some(q)) if p == q)
        }
        _ => false,
    }
}

/// The wrapper tensor of `state`, reporting `geometry` and sharing the version counter
/// `version` (`None`: a counter of its own).
fn new_wrapper(
    state: WrapperState,
    geometry: &Geometry,
    version: Option<&switchyard_core::tensor::VersionCounter>,
) -> Tensor {
    let (dtype, device, key_set) = {
        let v = &state.value;
        (v.dtype(), v.device(), wrapper_key_set(v.key_set()))
    };
    Tensor::from_payload_parts(PayloadParts {
        payload: Arc::new(FunctionalTensor {
            state: Mutex::new(state),
        }),
        geometry,
        dtype,
        device,
        key_set,
        version,
    })
}

/// Wraps `t` (A.3 wrap): a new wrapper with value `t` over a new alias group whose base is
/// `t`, with no view records, at generation 0. It shares `t`'s version counter and reports
/// `t`'s geometry. A wrapped number is returned unchanged (it is never wrapped).
///
/// Errors if `t` is already functional (functionalization does not nest on one tensor).
pub fn to_functional(t: &Tensor) -> Result<Tensor> {
    if t.is_wrapped_number() {
        return Ok(t.clone());
    }
    if is_functional(t) {
        return Err(Error::runtime(
            "to_functional: the tensor is already a functional tensor (functionalization does not nest on one tensor)",
        ));
    }
    let storage = FunctionalStorage::new(t.clone())?;
    let generation = storage.generation();
    Ok(new_wrapper(
        WrapperState {
            value: t.clone(),
            storage: Some(storage),
            view_metas: ViewChain::default(),
            generation,
            has_metadata_mutation: false,
            is_multi_output_view: false,
            was_storage_changed: false,
        },
        &t.geometry(),
        Some(t.version_counter()),
    ))
}

/// Wraps `t`, a fresh output of an operator called below the layer, as [`to_functional`] does,
/// cheaper: the alias group is made when first needed, and the wrapper has a version counter
/// of its own (nothing else holds `t`, so nobody can observe its counter). A wrapped number is
/// returned unchanged.
pub(crate) fn wrap_output(t: Tensor) -> Result<Tensor> {
    if t.is_wrapped_number() {
        return Ok(t);
    }
    if is_functional(&t) {
        return Err(Error::runtime(
            "internal error: an operator called below the functionalization layer returned a functional tensor",
        ));
    }
    let geometry = t.geometry();
    Ok(new_wrapper(
        WrapperState {
            value: t,
            storage: None,
            view_metas: ViewChain::default(),
            generation: 0,
            has_metadata_mutation: false,
            is_multi_output_view: false,
            was_storage_changed: false,
        },
        &geometry,
        None,
    ))
}

/// The up-to-date value of wrapper `t` (payload `ft`; synced first if its group has newer
/// updates), and whether its layout differs from `t`'s eager geometry: one wrapper lock on the
/// common path, for the kernels that only read their inputs.
pub(crate) fn unwrap_current(t: &Tensor, ft: &FunctionalTensor) -> Result<(Tensor, bool)> {
    if let Some(current) = ft.current_value(t) {
        return Ok(current);
    }
    sync(t)?;
    ft.current_value(t).ok_or_else(|| {
        Error::runtime("internal error: a functional tensor was updated concurrently while synced")
    })
}

/// [`to_functional`] of every element.
pub fn to_functional_list(ts: &[Tensor]) -> Result<Vec<Tensor>> {
    ts.iter().map(to_functional).collect()
}

/// [`to_functional`] of every defined element.
pub fn to_functional_optional_list(ts: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
    ts.iter()
        .map(|t| t.as_ref().map(to_functional).transpose())
        .collect()
}

/// The value of wrapper `t`, without syncing it (A.3 unwrap; call [`sync`] first for an
/// up-to-date value). A wrapped number is returned unchanged.
///
/// Errors if `t` is a plain tensor.
pub fn from_functional(t: &Tensor) -> Result<Tensor> {
    if t.is_wrapped_number() {
        return Ok(t.clone());
    }
    Ok(require_functional(t, "from_functional")?.value())
}

/// The values of the functional elements of `ts`; plain elements pass through.
pub fn from_functional_list(ts: &[Tensor]) -> Vec<Tensor> {
    ts.iter()
        .map(|t| functional_payload(t).map_or_else(|| t.clone(), FunctionalTensor::value))
        .collect()
}

/// The values of the functional elements of `ts`; plain and absent elements pass through.
pub fn from_functional_optional_list(ts: &[Option<Tensor>]) -> Vec<Option<Tensor>> {
    ts.iter()
        .map(|t| {
            t.as_ref()
                .map(|t| functional_payload(t).map_or_else(|| t.clone(), FunctionalTensor::value))
        })
        .collect()
}

/// A wrapper for `view_value` (a tensor below the layer) as a view of wrapper `base` through
/// `meta` (PyTorch's `create_functional_tensor_with_view_meta`): same alias group, `base`'s view
/// records plus `meta`, `base`'s generation, and `base`'s version counter (as a strided view
/// shares its base's).
///
/// `eager_geometry` is the geometry the eager program's view would have; `None` takes
/// `view_value`'s.
pub fn create_view(
    base: &Tensor,
    view_value: Tensor,
    meta: ViewMeta,
    eager_geometry: Option<&Geometry>,
) -> Result<Tensor> {
    if is_functional(&view_value) {
        return Err(Error::runtime(
            "internal error: the value of a functional view must not be a functional tensor",
        ));
    }
    let b = require_functional(base, "create_view")?.snapshot();
    let is_multi_output_view = meta.is_multi_output;
    let view_metas: ViewChain = b.view_metas.iter().cloned().chain([meta]).collect();
    let geometry = eager_geometry
        .cloned()
        .unwrap_or_else(|| view_value.geometry());
    Ok(new_wrapper(
        WrapperState {
            value: view_value,
            storage: Some(b.storage),
            view_metas,
            generation: b.generation,
            has_metadata_mutation: false,
            is_multi_output_view,
            was_storage_changed: false,
        },
        &geometry,
        Some(base.version_counter()),
    ))
}

/// Brings wrapper `t` up to date with its alias group (A.3 `sync`): applies the group's queued
/// updates to its base, then regenerates `t` from the base. Nothing for a plain tensor, a
/// wrapped number or an up-to-date wrapper.
pub fn sync(t: &Tensor) -> Result<()> {
    let Some(ft) = functional_payload(t) else {
        return Ok(());
    };
    if ft.is_up_to_date() {
        return Ok(());
    }
    ft.storage().apply_updates()?;
    regenerate_from_base(t)
}

/// [`sync`] of every element.
pub fn sync_list(ts: &[Tensor]) -> Result<()> {
    ts.iter().try_for_each(sync)
}

/// [`sync`] of every defined element.
pub fn sync_optional_list(ts: &[Option<Tensor>]) -> Result<()> {
    ts.iter().flatten().try_for_each(sync)
}

/// Applies the queued updates of `t`'s alias group to its base (A.3 `apply_updates`), without
/// regenerating `t`; returns whether there were any.
pub fn apply_updates(t: &Tensor) -> Result<bool> {
    require_functional(t, "apply_updates")?
        .storage()
        .apply_updates()
}

/// Recomputes `t`'s value by replaying its view records on its group's current base, and marks
/// it up to date (A.3 `regenerate_from_base`). Pending updates are not applied first (see
/// [`sync`]).
pub fn regenerate_from_base(t: &Tensor) -> Result<()> {
    let ft = require_functional(t, "regenerate_from_base")?;
    let st = ft.snapshot();
    let (mut value, generation) = st.storage.base_and_generation();
    {
        let _below = below();
        for m in st.view_metas.iter() {
            value = m.forward(&value)?;
        }
    }
    replace_(t, &value, true)?;
    ft.lock().generation = generation;
    Ok(())
}

/// Makes `other` (a tensor below the layer) the new value of wrapper `w` (A.3 `replace_`).
///
/// A value of another dtype is converted with `_to_copy` (so that the conversion is a visible
/// operator, e.g. `ge_` producing bool on a float tensor). The wrapper keeps its geometry when
/// the sizes are unchanged (in-place ops never restride) and otherwise takes the contiguous
/// geometry of the new sizes. Unless `lazy` (a regeneration), the mutation is counted
/// ([`mark_mutation`]).
pub fn replace_(w: &Tensor, other: &Tensor, lazy: bool) -> Result<()> {
    let ft = require_functional(w, "replace_")?;
    if is_functional(other) {
        return Err(Error::runtime(
            "internal error: replace_ expects a tensor below the functionalization layer, got a functional tensor",
        ));
    }
    let value = if other.dtype() != w.dtype() {
        let _below = below();
        switchyard_ops::_to_copy_with(
            other,
            Some(w.dtype()),
            Some(w.layout()),
            None,
            None,
            false,
            None,
        )?
    } else {
        other.clone()
    };
    let sizes = value.sizes();
    if w.sizes() != sizes {
        let strides = switchyard_core::shape::contiguous_strides(&sizes);
        w.set_geometry(&sizes, &strides, 0)?;
    }
    {
        let mut st = ft.lock();
        // The group's base is the value being replaced if the group is made only now.
        st.group();
        st.value = value;
    }
    if !lazy {
        mark_mutation(w)?;
    }
    Ok(())
}

/// Queues `w`'s current value as an update of its alias group (A.3 `commit_update`). `w` is
/// not marked up to date: the next [`sync`] regenerates it from the updated base.
pub fn commit_update(w: &Tensor) -> Result<()> {
    let st = require_functional(w, "commit_update")?.snapshot();
    st.storage.add_update(st.value, st.view_metas.to_arc())
}

/// [`commit_update`] then [`sync`] of wrapper `w` just given a new value by [`replace_`], done
/// at once when `w` is its group's base (no view records), up to date, and the group has no
/// queued update: the new value becomes the base directly, as applying the one-update queue
/// would make it (the base's layout kept, `FunctionalStorage::set_base`), and `w` takes the
/// base as its value at the new generation, as regenerating would. Returns `false`, changing
/// nothing, when `w` is not such a base: the caller takes the general path.
pub(crate) fn commit_base_update(w: &Tensor) -> Result<bool> {
    let ft = require_functional(w, "commit_update")?;
    let (storage, generation, value) = {
        let mut st = ft.lock();
        if !st.view_metas.is_empty() {
            return Ok(false);
        }
        (st.group().clone(), st.generation, st.value.clone())
    };
    // Outside the wrapper lock: keeping the base's layout may call an operator.
    let Some((base, generation)) = storage.set_base(generation, &value)? else {
        return Ok(false);
    };
    let mut st = ft.lock();
    st.value = base;
    st.generation = generation;
    Ok(true)
}

/// Counts a data mutation of `w`'s alias group (separately when made under no-grad or
/// inference mode).
pub fn mark_mutation(w: &Tensor) -> Result<()> {
    require_functional(w, "mark_mutation")?
        .storage()
        .mark_mutation(!is_grad_enabled() || is_inference_mode_enabled());
    Ok(())
}

/// Applies an in-place view operation to `w` (A.3 `mutate_view_meta`; `transpose_`,
/// `unsqueeze_`, ...): appends `meta` to its records, replays it on its value and sets its
/// metadata-mutation flag. `w` keeps its group: it is now a view of its old base.
///
/// `w` then reports the new value's geometry; the layer's own kernels give the eager one
/// (plan §2.4).
pub fn mutate_view_meta(w: &Tensor, meta: ViewMeta) -> Result<()> {
    mutate_view_meta_to(w, meta, None)
}

/// [`mutate_view_meta`], `w` then reporting `eager_geometry` (`None`: the new value's).
pub(crate) fn mutate_view_meta_to(
    w: &Tensor,
    meta: ViewMeta,
    eager_geometry: Option<&Geometry>,
) -> Result<()> {
    let ft = require_functional(w, "mutate_view_meta")?;
    let value = {
        let _below = below();
        meta.forward(&ft.value())?
    };
    let g = eager_geometry.cloned().unwrap_or_else(|| value.geometry());
    w.set_geometry(g.sizes(), g.strides(), g.storage_offset())?;
    let mut st = ft.lock();
    // The group's base is the value the view was taken of if the group is made only now.
    st.group();
    st.is_multi_output_view |= meta.is_multi_output;
    st.view_metas = st.view_metas.iter().cloned().chain([meta]).collect();
    st.value = value;
    st.has_metadata_mutation = true;
    Ok(())
}

/// [`mutate_view_meta_to`] replacing `w`'s last view record instead of appending to it:
/// `meta`'s forward is replayed on what the last record was applied to (regenerated from the
/// group's base, which must have no pending update for `w`: call after [`sync`]). For records
/// that compose by replacement (`resize_` windows: a resize of a resize is a resize of the
/// original tensor).
pub(crate) fn replace_last_view_meta(
    w: &Tensor,
    meta: ViewMeta,
    eager_geometry: &Geometry,
) -> Result<()> {
    let ft = require_functional(w, "replace_last_view_meta")?;
    let st = ft.snapshot();
    let Some((_, kept)) = st.view_metas.split_last() else {
        return mutate_view_meta_to(w, meta, Some(eager_geometry));
    };
    let (mut value, generation) = st.storage.base_and_generation();
    {
        let _below = below();
        for m in kept {
            value = m.forward(&value)?;
        }
        value = meta.forward(&value)?;
    }
    w.set_geometry(
        eager_geometry.sizes(),
        eager_geometry.strides(),
        eager_geometry.storage_offset(),
    )?;
    let mut st = ft.lock();
    st.view_metas = kept.iter().cloned().chain([meta]).collect();
    st.value = value;
    st.generation = generation;
    st.has_metadata_mutation = true;
    Ok(())
}

/// Gives `w` a new alias group whose base is `bigger` (A.3 `maybe_replace_storage`, for
/// `resize_` growing past its storage): `bigger` becomes `w`'s value, at generation 0, and `w`
/// reports `eager_geometry`. Sets the metadata-mutation flag.
///
/// Errors ("Attempted to resize a view tensor to a larger size. This is not allowed in the
/// functionalization pass") if `w` is a view or another tensor shares its group: growing one
/// member of a group cannot be expressed by the group's base.
pub fn maybe_replace_storage(w: &Tensor, bigger: &Tensor, eager_geometry: &Geometry) -> Result<()> {
    let ft = require_functional(w, "maybe_replace_storage")?;
    let storage = FunctionalStorage::new(bigger.clone())?;
    {
        let mut st = ft.lock();
        // This wrapper's reference is the only one when no other member is alive.
        let shared = st
            .storage
            .as_ref()
            .is_some_and(|s| Arc::strong_count(s) != 1);
        if shared || !st.view_metas.is_empty() {
            return Err(crate::errors::resize_view_larger());
        }
        st.generation = storage.generation();
        st.storage = Some(storage);
        st.value = bigger.clone();
        st.has_metadata_mutation = true;
    }
    w.set_geometry(
        eager_geometry.sizes(),
        eager_geometry.strides(),
        eager_geometry.storage_offset(),
    )
}

/// Makes wrapper `w` an alias of wrapper `source` (A.3 `set__impl`, the kernel of
/// `set_.source_Tensor`): `w` takes `source`'s value, generation, view records and geometry,
/// and joins its alias group; its old group is frozen (a later mutation of a tensor left in it
/// fails), unless it is `source`'s group already. Sets the storage-changed flag.
#[allow(non_snake_case)] // PyTorch's name (`set_` + `_impl`).
pub fn set__impl(w: &Tensor, source: &Tensor) -> Result<()> {
    let ft = require_functional(w, "set_")?;
    let src = require_functional(source, "set_")?.snapshot();
    let geometry = source.geometry();
    {
        let mut st = ft.lock();
        // A group never made has no other member to freeze.
        if let Some(old) = &st.storage
            && !Arc::ptr_eq(old, &src.storage)
        {
            old.freeze();
        }
        st.value = src.value;
        st.generation = src.generation;
        st.view_metas = src.view_metas;
        st.is_multi_output_view = src.is_multi_output_view;
        st.storage = Some(src.storage);
        st.was_storage_changed = true;
    }
    w.set_geometry(
        geometry.sizes(),
        geometry.strides(),
        geometry.storage_offset(),
    )
}

/// Whether `w`'s alias group has ever been updated (A.3 `has_data_mutation`).
pub fn has_data_mutation(w: &Tensor) -> Result<bool> {
    Ok(require_functional(w, "has_data_mutation")?
        .storage()
        .generation()
        > 0)
}

/// Whether `w`'s metadata was mutated.
pub fn has_metadata_mutation(w: &Tensor) -> Result<bool> {
    Ok(require_functional(w, "has_metadata_mutation")?.has_metadata_mutation())
}

/// Freezes `w`'s alias group (`torch._freeze_functional_tensor`): every later mutation of `w`
/// or of an alias fails.
pub fn freeze(w: &Tensor) -> Result<()> {
    require_functional(w, "freeze")?.storage().freeze();
    Ok(())
}

/// Detaches `w` from its alias group (`torch._C._unsafe_reset_storage`): a new group whose base
/// is `w`'s current value, generation 0, no view records.
pub fn unsafe_reset_storage(w: &Tensor) -> Result<()> {
    let ft = require_functional(w, "unsafe_reset_storage")?;
    let storage = FunctionalStorage::new(ft.value())?;
    let mut st = ft.lock();
    st.generation = storage.generation();
    st.storage = Some(storage);
    st.view_metas = ViewChain::default();
    Ok(())
}
