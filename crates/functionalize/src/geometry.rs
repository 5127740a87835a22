//! Eager metadata by meta shadow (plan §2.4): a wrapper reports the sizes, strides and storage
//! offset the eager program would see, whatever layout its value has (a `*_copy` operator's
//! output is contiguous where eager's view is not).
//!
//! A *meta shadow* of a wrapper is a `Meta` tensor with the wrapper's eager geometry. Running
//! the real view operator on it (never its `*_copy`) gives the eager geometry of the view's
//! output, and eager's errors for views that are invalid on the eager layout.

use crate::tensor::functional_payload;
use switchyard_core::keys::sets;
use switchyard_core::local_dispatch::ExcludeDispatchKeyGuard;
use switchyard_core::storage::Storage;
use switchyard_core::tensor::Geometry;
use switchyard_core::{Device, DispatchKey, Result, Tensor};

/// Excludes this layer, the autograd layers and the Python (tracer) keys: how operators run on
/// meta shadows, which are bookkeeping, not part of the program.
pub(crate) fn shadow_guard() -> ExcludeDispatchKeyGuard {
    ExcludeDispatchKeyGuard::new(
        sets::AUTOGRAD_WITH_AD_INPLACE_OR_VIEW.add(DispatchKey::Functionalize) | sets::PYTHON,
    )
}

/// A `Meta` tensor with `t`'s sizes, strides, storage offset and dtype: the eager layout of a
/// wrapper, without data.
///
/// Its storage holds at least what the geometry reaches and, for a wrapper, at least what its
/// alias group's storage held when the group was made (eager's storage, which views such as
/// `as_strided` may reach past the wrapper's own elements).
pub fn meta_shadow(t: &Tensor) -> Result<Tensor> {
    shadow_on(Storage::new(shadow_nbytes(t), Device::META)?, t)
}

/// Meta shadows of wrappers `a` and `b` of one alias group on one storage, as eager's two
/// tensors share one: memory-overlap checks then see what they would see eagerly.
pub(crate) fn meta_shadow_pair(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let storage = Storage::new(shadow_nbytes(a).max(shadow_nbytes(b)), Device::META)?;
    Ok((shadow_on(storage.clone(), a)?, shadow_on(storage, b)?))
}

/// The bytes a meta shadow of `t` holds (see [`meta_shadow`]).
fn shadow_nbytes(t: &Tensor) -> usize {
    let own = usize::try_from(t.geometry().required_elements()).unwrap_or(0) * t.element_size();
    let group = functional_payload(t).map_or(0, |ft| ft.storage().nbytes());
    own.max(group)
}

/// A tensor on `storage` with `t`'s eager geometry and dtype.
fn shadow_on(storage: Storage, t: &Tensor) -> Result<Tensor> {
    let g = t.geometry();
    Tensor::from_storage(
        storage,
        g.sizes(),
        g.strides(),
        g.storage_offset(),
        t.dtype(),
    )
}

/// The eager geometry of the output of `view` (the real view operator) applied to wrapper
/// `base`.
pub(crate) fn shadow_view(
    base: &Tensor,
    view: &dyn Fn(&Tensor) -> Result<Tensor>,
) -> Result<Geometry> {
    let shadow = meta_shadow(base)?;
    let _g = shadow_guard();
    Ok(view(&shadow)?.geometry())
}

/// The eager geometries of the outputs of multi-output view `views` applied to wrapper `base`.
pub(crate) fn shadow_views(
    base: &Tensor,
    views: &dyn Fn(&Tensor) -> Result<Vec<Tensor>>,
) -> Result<Vec<Geometry>> {
    let shadow = meta_shadow(base)?;
    let _g = shadow_guard();
    Ok(views(&shadow)?.iter().map(Tensor::geometry).collect())
}
