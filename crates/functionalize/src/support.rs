//! Non-generic helpers of the generated kernels (`src/generated/`): every operator gets a
//! kernel, so the per-operator code stays a few calls into these.

use crate::geometry::{meta_shadow_pair, shadow_view, shadow_views};
use crate::tensor::{FunctionalTensor, are_aliased, functional_payload, mutate_view_meta_to};
use crate::view_meta::{ViewMeta, reapply_views};
use switchyard_core::{Error, Result, ScalarType, Tensor};
use switchyard_ops::meta::index_support::{assert_no_internal_overlap, assert_no_partial_overlap};
use switchyard_ops::native::has_copy_kernel;

// What the generated kernels call; not every helper has a user in every ops.yaml (no mutable
// operator with fresh outputs today).
#[allow(unused_imports)]
pub(crate) use crate::tensor::{
    below, commit_update, create_view, is_functional, is_functional_list,
    is_functional_optional_list, mutate_view_meta, replace_, sync, to_functional,
    to_functional_list,
};

/// `t` synced and unwrapped if it is functional, else `t` itself.
pub(crate) fn unwrap_synced(t: &Tensor) -> Result<Tensor> {
    match functional_payload(t) {
        Some(ft) => {
            sync(t)?;
            Ok(ft.value())
        }
        None => Ok(t.clone()),
    }
}

/// [`unwrap_synced`] of an optional tensor.
pub(crate) fn unwrap_synced_opt(t: Option<&Tensor>) -> Result<Option<Tensor>> {
    t.map(unwrap_synced).transpose()
}

/// [`unwrap_synced`] of every element.
pub(crate) fn unwrap_synced_list(ts: &[Tensor]) -> Result<Vec<Tensor>> {
    ts.iter().map(unwrap_synced).collect()
}

/// [`unwrap_synced`] of every defined element.
pub(crate) fn unwrap_synced_opt_list(ts: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
    ts.iter()
        .map(|t| t.as_ref().map(unwrap_synced).transpose())
        .collect()
}

// The generated kernels' name for PyTorch's error for a plain tensor mutated with a functional
// argument.
pub(crate) use crate::errors::mixed_mutation as mixed_mutation_error;

/// Makes `new` (the functional variant's value for mutated wrapper `w`) `w`'s value and
/// commits it to `w`'s alias group, then syncs `w` (plan §4 `propagate_mutation`: the
/// immediate sync regenerates `w` from the updated base), after [`check_mutable`]. A new value
/// of another dtype is converted, one of other sizes resizes `w` (out=).
// Called by the kernels of mutable operators that are neither in-place nor out= (ops.yaml may
// have none).
#[allow(dead_code)]
pub(crate) fn propagate_mutation(w: &Tensor, new: &Tensor) -> Result<()> {
    check_mutable(w)?;
    commit_mutation(w, new)
}

/// [`propagate_mutation`] after [`check_mutable`].
fn commit_mutation(w: &Tensor, new: &Tensor) -> Result<()> {
    replace_(w, new, false)?;
    if crate::tensor::commit_base_update(w)? {
        return Ok(());
    }
    commit_update(w)?;
    sync(w)
}

/// Refuses a change of wrapper `w` that must not happen, before anything changes: an input
/// that is a leaf requiring grad, or a view of one, changed in place while grad mode is on
/// (autograd's error, as eager raises it; plan §7.3), or a member of a frozen group (which
/// `commit_update` checks again). One flag of the group each; nothing for a plain tensor.
pub(crate) fn check_mutable(w: &Tensor) -> Result<()> {
    let Some(ft) = functional_payload(w) else {
        return Ok(());
    };
    let storage = ft.storage();
    crate::autograd::check_leaf_mutation(w, storage.leaf_requires_grad())?;
    if storage.is_frozen() {
        return Err(crate::errors::frozen_storage());
    }
    Ok(())
}

/// [`propagate_mutation`] for `self` of an in-place operator, checked first as the eager
/// in-place kernels check theirs: `self` is never resized ("output with shape [2] doesn't
/// match the broadcast shape [2, 2]") and the result must be castable to its dtype ("result
/// type Float can't be cast to the desired output type Long").
pub(crate) fn propagate_inplace(w: &Tensor, new: &Tensor) -> Result<()> {
    check_mutable(w)?;
    switchyard_ops::runtime::check_backend_self(w, new)?;
    commit_mutation(w, new)
}

/// [`propagate_mutation`] for an out= argument, checked first as the eager out= kernels check
/// theirs (the result's dtype castable to `out`'s, same device); a size change resizes `out`.
pub(crate) fn propagate_out(w: &Tensor, new: &Tensor) -> Result<()> {
    check_mutable(w)?;
    switchyard_ops::runtime::check_backend_out(w, new)?;
    commit_mutation(w, new)
}

/// The dtype the functional variant of an out= reduction or scan computes in (`sum`, `prod`,
/// `cumsum`, `cumprod`): the one given, else `out`'s, as eager's meta functions infer it
/// (`infer_dtype_from_optional`). Eager computes in that dtype, so a Bool `out` of a sum over
/// integers is `any(x != 0)`, where the functional variant's Long sum cast to Bool is not.
pub(crate) fn dtype_or_out(
    _self: &Tensor,
    dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<Option<ScalarType>> {
    Ok(dtype.or(Some(out.dtype())))
}

/// [`dtype_or_out`] for `mean`, whose meta function first needs a floating or complex input
/// dtype (an integral input without a dtype: the functional variant, called without one,
/// raises eager's error) and then, with no dtype given, a Float result castable to `out`
/// (eager's "result type Float can't be cast to the desired output type Long", raised here).
pub(crate) fn mean_dtype_or_out(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<Option<ScalarType>> {
    if dtype.is_some() || !(self_.dtype().is_floating_point() || self_.dtype().is_complex()) {
        return Ok(dtype);
    }
    switchyard_ops::meta::check_result_cast(ScalarType::Float, out.dtype())?;
    Ok(Some(out.dtype()))
}

/// [`mean_dtype_or_out`] for `mean.dtype_out`, after that kernel's own first check (the
/// input's dtype castable to `out`'s).
pub(crate) fn mean_dtype_out_dtype(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<Option<ScalarType>> {
    switchyard_ops::native::check_mean_dtype_out(self_, out)?;
    mean_dtype_or_out(self_, dtype, out)
}

/// Eager's memory-overlap checks of an elementwise write into wrapper `w` (TensorIterator's
/// `compute_mem_overlaps`; plan §6 `inplace_meta_check`), on eager geometry: `w` may not have
/// elements sharing memory (an expanded view: "more than one element of the written-to tensor
/// refers to a single memory location"), nor share only part of its memory with an input of
/// its alias group ("some elements of the input tensor and the written-to tensor refer to a
/// single memory location"). A wrapper reports its eager geometry, and wrappers of one alias
/// group are views of one storage in eager; partial overlaps are decided on meta shadows of
/// the two on one storage, so the checks and their messages are eager's own. Plain and meta
/// tensors are not checked (eager checks no meta tensor; a plain tensor shares no storage with
/// a wrapper).
pub(crate) fn check_overlaps(w: &Tensor, inputs: &[Option<&Tensor>]) -> Result<()> {
    if !is_functional(w) || w.is_meta() {
        return Ok(());
    }
    assert_no_internal_overlap(w)?;
    for input in inputs.iter().flatten() {
        if input.is_same(w) || !are_aliased(w, input) {
            continue;
        }
        let (w_shadow, input_shadow) = meta_shadow_pair(w, input)?;
        assert_no_partial_overlap(&w_shadow, &input_shadow)?;
    }
    Ok(())
}

/// `copy_`'s overlap checks on wrappers, in eager's order: nothing when `src` is `self_` or
/// the same elements of its alias group in the same layout and dtype, nor when a device has no
/// copy kernel of its own (eager then hands the copy to the backend's `_copy_from`); else
/// [`check_overlaps`]. Runs before the functional `copy`, whose shape errors eager raises
/// after these.
pub(crate) fn check_copy_overlaps(self_: &Tensor, src: &Tensor) -> Result<()> {
    // First, as eager's autograd check comes before the copy kernel's.
    check_mutable(self_)?;
    if self_.is_same(src) || !has_copy_kernel(self_.device()) || !has_copy_kernel(src.device()) {
        return Ok(());
    }
    let same_data = are_aliased(self_, src)
        && self_.geometry() == src.geometry()
        && self_.dtype() == src.dtype();
    if same_data {
        return Ok(());
    }
    check_overlaps(self_, &[Some(src)])
}

/// [`propagate_inplace`] of an elementwise in-place operator: eager's checks of `self`, then
/// its memory-overlap checks against `inputs` ([`check_overlaps`]), in TensorIterator's order.
pub(crate) fn propagate_inplace_checked(
    w: &Tensor,
    new: &Tensor,
    inputs: &[Option<&Tensor>],
) -> Result<()> {
    check_mutable(w)?;
    switchyard_ops::runtime::check_backend_self(w, new)?;
    check_overlaps(w, inputs)?;
    commit_mutation(w, new)
}

/// [`propagate_out`] of an elementwise out= operator: eager's checks of `out`, then its
/// memory-overlap checks against `inputs` ([`check_overlaps`]), in TensorIterator's order.
pub(crate) fn propagate_out_checked(
    w: &Tensor,
    new: &Tensor,
    inputs: &[Option<&Tensor>],
) -> Result<()> {
    check_mutable(w)?;
    switchyard_ops::runtime::check_backend_out(w, new)?;
    check_overlaps(w, inputs)?;
    commit_mutation(w, new)
}

/// [`propagate_mutation`] of every element of a mutated tensor list (`out` lists are checked
/// as [`propagate_out`] checks, all before any is changed).
pub(crate) fn propagate_mutation_list(ws: &[Tensor], news: &[Tensor], out: bool) -> Result<()> {
    if ws.len() != news.len() {
        return Err(Error::runtime(format!(
            "Expected {} output tensors but got {}",
            news.len(),
            ws.len()
        )));
    }
    for w in ws {
        check_mutable(w)?;
    }
    if out {
        for (w, n) in ws.iter().zip(news) {
            switchyard_ops::runtime::check_backend_out(w, n)?;
        }
    }
    ws.iter()
        .zip(news)
        .try_for_each(|(w, n)| commit_mutation(w, n))
}

/// The view of wrapper `base` recorded by `meta`: replays `meta` on `base`'s value (not synced:
/// views defer syncing to the first non-view use) below the layer and wraps the result as a
/// view in `base`'s alias group. `view` is the real view operator (never its `*_copy`): run on
/// a meta shadow of `base`, it gives the output's eager geometry (plan §2.4) and eager's
/// errors.
pub(crate) fn view_output(
    base: &Tensor,
    meta: ViewMeta,
    view: &dyn Fn(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let value = value_of(base)?;
    let eager = if value_has_eager_geometry(base, &value) {
        None
    } else {
        Some(shadow_view(base, view)?)
    };
    let out = {
        let _below = below();
        meta.forward(&value)?
    };
    create_view(base, out, meta, eager.as_ref())
}

/// The views of wrapper `base` recorded by the multi-output record `meta`: `all` computes
/// every output on `base`'s value at once (not synced), and each gets a wrapper whose record
/// is `meta` re-indexed to it. `views` is the real view operator, for the eager geometries.
pub(crate) fn view_outputs(
    base: &Tensor,
    meta: ViewMeta,
    all: &dyn Fn(&Tensor) -> Result<Vec<Tensor>>,
    views: &dyn Fn(&Tensor) -> Result<Vec<Tensor>>,
) -> Result<Vec<Tensor>> {
    let value = value_of(base)?;
    let eager = if value_has_eager_geometry(base, &value) {
        None
    } else {
        Some(shadow_views(base, views)?)
    };
    let outs = {
        let _below = below();
        all(&value)?
    };
    outs.into_iter()
        .enumerate()
        .map(|(i, out)| {
            let g = eager.as_ref().and_then(|g| g.get(i));
            create_view(base, out, meta.to_out_idx(i), g)
        })
        .collect()
}

/// The in-place view `meta` applied to wrapper `w` (`transpose_`, `as_strided_`, ...):
/// [`mutate_view_meta`] with the eager geometry `view` (the out-of-place view operator) gives
/// on a meta shadow of `w`, computed first so that eager's errors leave `w` unchanged.
pub(crate) fn inplace_view(
    w: &Tensor,
    meta: ViewMeta,
    view: &dyn Fn(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    // `transpose_` of a leaf that requires grad is autograd's error too (a frozen group takes
    // metadata changes, as in PyTorch).
    if let Some(ft) = functional_payload(w) {
        crate::autograd::check_leaf_mutation(w, ft.storage().leaf_requires_grad())?;
    }
    let eager = shadow_view(w, view)?;
    mutate_view_meta_to(w, meta, Some(&eager))
}

/// Whether a view of `value` (the value of wrapper `base`) computed by the view's forward
/// already has the eager geometry: views are reapplied as real views and `value` has
/// `base`'s eager geometry. Otherwise the view kernels compute it on a meta shadow.
fn value_has_eager_geometry(base: &Tensor, value: &Tensor) -> bool {
    reapply_views() && value.geometry() == base.geometry()
}

fn value_of(t: &Tensor) -> Result<Tensor> {
    functional_payload(t)
        .map(FunctionalTensor::value)
        .ok_or_else(|| Error::runtime("internal error: a view kernel got a plain tensor"))
}

/// The error of a multi-output view record replayed with an index past its outputs.
pub(crate) fn out_of_range(i: usize) -> Error {
    Error::runtime(format!("internal error: view output {i} does not exist"))
}
