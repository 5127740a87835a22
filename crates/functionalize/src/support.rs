//! Non-generic helpers of the generated kernels (`src/generated/`): every operator gets a
//! kernel, so the per-operator code stays a few calls into these.

use crate::tensor::{FunctionalTensor, functional_payload};
use crate::view_meta::ViewMeta;
use switchyard_core::{Error, Result, Tensor};

// What the generated kernels call; not every helper has a user in every ops.yaml (no mutable
// operator with fresh outputs today, no multi-output view with an inverse yet).
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

/// PyTorch's error for a plain tensor mutated with a functional argument (the body of its
/// internal assert, without file and line).
pub(crate) fn mixed_mutation_error() -> Error {
    Error::runtime(
        "mutating a non-functional tensor with a functional tensor is not allowed. Please ensure that all of your inputs are wrapped inside of a functionalize() call.",
    )
}

/// Makes `new` (the functional variant's value for mutated wrapper `w`) `w`'s value and
/// commits it to `w`'s alias group, then syncs `w` (plan §4 `propagate_mutation`: the
/// immediate sync regenerates `w` from the updated base). A new value of another dtype is
/// converted, one of other sizes resizes `w` (out=).
pub(crate) fn propagate_mutation(w: &Tensor, new: &Tensor) -> Result<()> {
    replace_(w, new, false)?;
    commit_update(w)?;
    sync(w)
}

/// [`propagate_mutation`] for `self` of an in-place operator: the functional result must have
/// `self`'s sizes (an in-place operator never resizes `self`; eager refuses a broadcast that
/// would have to).
pub(crate) fn propagate_inplace(w: &Tensor, new: &Tensor) -> Result<()> {
    let (have, want) = (w.sizes(), new.sizes());
    if have != want {
        return Err(Error::runtime(format!(
            "output with shape {have:?} doesn't match the broadcast shape {want:?}"
        )));
    }
    propagate_mutation(w, new)
}

/// [`propagate_mutation`] of every element of a mutated tensor list.
pub(crate) fn propagate_mutation_list(ws: &[Tensor], news: &[Tensor]) -> Result<()> {
    if ws.len() != news.len() {
        return Err(Error::runtime(format!(
            "internal error: a mutated list of {} tensors got {} new values",
            ws.len(),
            news.len()
        )));
    }
    ws.iter()
        .zip(news)
        .try_for_each(|(w, n)| propagate_mutation(w, n))
}

/// The view of wrapper `base` recorded by `meta`: replays `meta` on `base`'s value (not synced:
/// views defer syncing to the first non-view use) below the layer and wraps the result as a
/// view in `base`'s alias group.
pub(crate) fn view_output(base: &Tensor, meta: ViewMeta) -> Result<Tensor> {
    let value = value_of(base)?;
    let out = {
        let _below = below();
        meta.forward(&value)?
    };
    // TODO(functionalization §2.4): eager geometry by meta shadow; the wrapper reports its
    // value's geometry meanwhile.
    create_view(base, out, meta, None)
}

#[allow(dead_code)] // until a multi-output view is in `VIEWS_WITH_INVERSES`
/// The views of wrapper `base` recorded by the multi-output record `meta`: `all` computes
/// every output on `base`'s value at once (not synced), and each gets a wrapper whose record
/// is `meta` re-indexed to it.
pub(crate) fn view_outputs(
    base: &Tensor,
    meta: ViewMeta,
    all: &dyn Fn(&Tensor) -> Result<Vec<Tensor>>,
) -> Result<Vec<Tensor>> {
    let value = value_of(base)?;
    let outs = {
        let _below = below();
        all(&value)?
    };
    outs.into_iter()
        .enumerate()
        .map(|(i, out)| create_view(base, out, meta.to_out_idx(i), None))
        .collect()
}

fn value_of(t: &Tensor) -> Result<Tensor> {
    functional_payload(t)
        .map(FunctionalTensor::value)
        .ok_or_else(|| Error::runtime("internal error: a view kernel got a plain tensor"))
}

#[allow(dead_code)] // until a multi-output view is in `VIEWS_WITH_INVERSES`
/// The error of a multi-output view record replayed with an index past its outputs.
pub(crate) fn out_of_range(i: usize) -> Error {
    Error::runtime(format!("internal error: view output {i} does not exist"))
}
