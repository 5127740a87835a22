//! When a call releases the GIL (docs/python-plan.md §9): around the dispatcher call of an
//! operator whose tensor arguments hold at least [`RELEASE_NUMEL`] elements in all, or of a
//! heavy operator (matrix products, convolutions) whatever its size, so that other Python
//! threads run meanwhile. Never for small calls: releasing and re-taking the GIL costs about
//! 0.1 µs, as much as a 1-element `add`. Kernels that call Python (a Python kernel from
//! `switchyard.library`, a hook) take the GIL again themselves.

use pyo3::prelude::*;
use switchyard_core::{IValue, Tensor};

/// The total element count of the tensor arguments from which a call releases the GIL.
pub const RELEASE_NUMEL: i64 = 32_768;

/// Operators that release the GIL whatever their sizes (their cost grows faster than their
/// inputs).
const HEAVY: &[&str] = &[
    "aten::mm",
    "aten::bmm",
    "aten::addmm",
    "aten::baddbmm",
    "aten::matmul",
    "aten::linear",
    "aten::conv2d",
    "aten::convolution",
];

/// Whether the operator named `qualified` (`aten::mm.out`) is on the heavy list.
pub fn is_heavy(qualified: &str) -> bool {
    let base = qualified.split('.').next().unwrap_or(qualified);
    HEAVY.contains(&base)
}

/// The elements of the tensors among `values`.
pub fn stack_numel(values: &[IValue]) -> i64 {
    values
        .iter()
        .map(|v| match v {
            IValue::Tensor(t) => t.numel(),
            IValue::TensorList(ts) => ts.iter().map(Tensor::numel).sum(),
            IValue::OptionalTensorList(ts) => ts.iter().flatten().map(Tensor::numel).sum(),
            _ => 0,
        })
        .sum()
}

/// Runs `f` with the GIL released when `release`, else holding it.
pub fn run<T: Send>(py: Python<'_>, release: bool, f: impl FnOnce() -> T + Send) -> T {
    if release { py.detach(f) } else { f() }
}

/// Whether a call on tensors `ts` releases the GIL.
pub fn worth_releasing(ts: &[&Tensor]) -> bool {
    ts.iter().map(|t| t.numel()).sum::<i64>() >= RELEASE_NUMEL
}
