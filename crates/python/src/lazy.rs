//! The lazy device from Python (docs/python-plan.md §8, issue 19): `switchyard._lazy` as
//! `torch._lazy` — `mark_step`, `wait_device_ops`, `sync_multi`, `to_cpu`, the metrics
//! (`switchyard._lazy.metrics`) and the computation cache — over `switchyard-lazy`. Tensors
//! reach the device with `device="lazy"` or `.to("lazy")` once the backend is initialised
//! (`switchyard._lazy.ts_backend.init()`, as PyTorch's TorchScript backend is).

use pyo3::prelude::*;
use switchyard_core::Tensor;

use crate::errors::{OrRaise, guard};
use crate::tensor::PyTensor;

fn tensors(ts: &[PyRef<'_, PyTensor>]) -> Vec<Tensor> {
    ts.iter().map(|t| t.t.clone()).collect()
}

/// Registers the lazy backend's kernels (idempotent).
#[pyfunction]
pub fn _lazy_init(py: Python<'_>) -> PyResult<()> {
    guard(|| switchyard_lazy::init().or_raise(py))
}

/// Syncs every live lazy tensor: one graph, compiled or taken from the cache, executed.
/// Runs with the GIL released (a Python kernel or hook inside takes it back).
#[pyfunction]
pub fn _mark_step(py: Python<'_>) -> PyResult<()> {
    guard(|| py.detach(switchyard_lazy::mark_step).or_raise(py))
}

/// Waits for pending device work (execution is synchronous: returns at once).
#[pyfunction]
pub fn _wait_device_ops() {
    switchyard_lazy::wait_device_ops();
}

/// Syncs `tensors` only.
#[pyfunction]
pub fn _sync_multi(py: Python<'_>, tensors_: Vec<PyRef<'_, PyTensor>>) -> PyResult<()> {
    let ts = tensors(&tensors_);
    guard(|| py.detach(|| switchyard_lazy::sync(&ts)).or_raise(py))
}

/// The hash of the graph syncing `tensors` would run, as 32 hex digits (`None` when nothing is
/// pending).
#[pyfunction]
pub fn _graph_hash(py: Python<'_>, tensors_: Vec<PyRef<'_, PyTensor>>) -> PyResult<Option<String>> {
    let ts = tensors(&tensors_);
    guard(|| {
        Ok(switchyard_lazy::get_graph_hash(&ts)
            .or_raise(py)?
            .map(|h| format!("{:032x}", h.0)))
    })
}

/// The names of the counters that have counted something.
#[pyfunction]
pub fn _counter_names() -> Vec<String> {
    switchyard_lazy::counter_names()
}

/// A counter's value (`None` if it never counted).
#[pyfunction]
pub fn _counter_value(name: &str) -> Option<u64> {
    switchyard_lazy::counter_value(name)
}

/// The metrics report (counters and timings) as text.
#[pyfunction]
pub fn _metrics_report() -> String {
    switchyard_lazy::metrics_report()
}

/// Resets every counter and timing.
#[pyfunction]
pub fn _reset_metrics() {
    switchyard_lazy::reset_metrics();
}

/// The number of compiled programs in the computation cache.
#[pyfunction]
pub fn _computation_cache_size() -> usize {
    switchyard_lazy::computation_cache_size()
}

/// Empties the computation cache.
#[pyfunction]
pub fn _clear_computation_cache() {
    switchyard_lazy::clear_computation_cache();
}

/// The pending IR of `tensors`: `"text"` (LTC's IR text), `"dot"` (Graphviz) or `"backend"`
/// (the program the active backend would compile for them, compiled afresh, neither cached
/// nor run; PyTorch's `_get_tensors_backend`).
#[pyfunction]
pub fn _dump_ir(
    py: Python<'_>,
    tensors_: Vec<PyRef<'_, PyTensor>>,
    ir_format: &str,
) -> PyResult<String> {
    let ts = tensors(&tensors_);
    guard(|| {
        let format = match ir_format {
            "text" => switchyard_lazy::DumpFormat::Text,
            "dot" => switchyard_lazy::DumpFormat::Dot,
            "backend" => switchyard_lazy::DumpFormat::Backend,
            other => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "Unrecognized IR format: {other}"
                )));
            }
        };
        switchyard_lazy::dump_ir(&ts, format).or_raise(py)
    })
}

/// Registers the functions above in `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_lazy_init, m)?)?;
    m.add_function(wrap_pyfunction!(_mark_step, m)?)?;
    m.add_function(wrap_pyfunction!(_wait_device_ops, m)?)?;
    m.add_function(wrap_pyfunction!(_sync_multi, m)?)?;
    m.add_function(wrap_pyfunction!(_graph_hash, m)?)?;
    m.add_function(wrap_pyfunction!(_counter_names, m)?)?;
    m.add_function(wrap_pyfunction!(_counter_value, m)?)?;
    m.add_function(wrap_pyfunction!(_metrics_report, m)?)?;
    m.add_function(wrap_pyfunction!(_reset_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(_computation_cache_size, m)?)?;
    m.add_function(wrap_pyfunction!(_clear_computation_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_dump_ir, m)?)?;
    Ok(())
}
