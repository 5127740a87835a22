//! The functionalization layer through its public API, on real CPU tensors (one test binary;
//! modules by topic).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_autograd as _;
use switchyard_core::Tensor;
use switchyard_cpu as _;
use switchyard_functionalize::{ViewMeta, from_functional, sync};

mod autograd;
mod cases;
mod coverage;
mod custom;
mod errors;
mod fallback;
mod generated;
mod geometry;
mod graphs;
mod inverses;
mod manual;
mod op_cases;
mod property;
mod threads;
mod transform;
mod updates;
mod wrapping;

/// `t`'s elements as `f32` after syncing it (a wrapper) or as they are (a plain tensor).
pub fn values(t: &Tensor) -> Vec<f32> {
    sync(t).unwrap();
    let v = if switchyard_functionalize::is_functional(t) {
        from_functional(t).unwrap()
    } else {
        t.clone()
    };
    v.to_vec::<f32>().unwrap()
}

/// A record of `slice(dim, start, end)` (step 1): `slice_copy` forward, `slice_scatter`
/// inverse.
pub fn slice_meta(dim: i64, start: i64, end: i64) -> ViewMeta {
    ViewMeta::new(
        "slice.Tensor",
        move |base, _| switchyard_ops::slice_copy_with(base, dim, Some(start), Some(end), 1),
        move |base, mutated, _| {
            switchyard_ops::slice_scatter_with(base, mutated, dim, Some(start), Some(end), 1)
        },
    )
}

/// A record of `select(dim, index)`: `select_copy` forward, `select_scatter` inverse.
pub fn select_meta(dim: i64, index: i64) -> ViewMeta {
    ViewMeta::new(
        "select.int",
        move |base, _| switchyard_ops::select_copy(base, dim, index),
        move |base, mutated, _| switchyard_ops::select_scatter(base, mutated, dim, index),
    )
}

/// A wrapper viewing `base` through `meta`, its value computed by replaying `meta` on `base`'s
/// (synced) value, as a view kernel would.
pub fn view_of(base: &Tensor, meta: ViewMeta) -> Tensor {
    sync(base).unwrap();
    let value = {
        let _below = switchyard_functionalize::below();
        meta.forward(&from_functional(base).unwrap()).unwrap()
    };
    switchyard_functionalize::create_view(base, value, meta, None).unwrap()
}

/// What an in-place kernel does to wrapper `w`: compute the new value below the layer with
/// `f`, then `replace_` and `commit_update`.
pub fn mutate(w: &Tensor, f: impl FnOnce(&Tensor) -> switchyard_core::Result<Tensor>) {
    sync(w).unwrap();
    let new = {
        let _below = switchyard_functionalize::below();
        f(&from_functional(w).unwrap()).unwrap()
    };
    switchyard_functionalize::replace_(w, &new, false).unwrap();
    switchyard_functionalize::commit_update(w).unwrap();
}
