//! `switchyard.func.functionalize` (docs/python-plan.md §8): a Python function run on functional
//! wrappers of its tensor arguments through `switchyard_functionalize::run_functionalized`,
//! its outputs unwrapped and its inputs' mutations written back, as `torch.func.functionalize`.
//! The Python half (`python/switchyard/func.py`) flattens arguments and results; this part runs
//! the call.

use pyo3::prelude::*;
use pyo3::types::PyList;
use switchyard_core::Tensor;
use switchyard_functionalize::{Remove, run_functionalized};

use crate::errors::{OrRaise, error_from_py, guard};
use crate::tensor::PyTensor;

/// `_C._functionalize(inner, tensors, remove)`: calls `inner(wrapped)` with the functional
/// wrappers of `tensors` (a list, in order); `inner` returns the list of output tensors, which
/// come back unwrapped.
#[pyfunction]
pub fn _functionalize<'py>(
    py: Python<'py>,
    inner: &Bound<'py, PyAny>,
    tensors: Vec<PyRef<'py, PyTensor>>,
    remove: &str,
) -> PyResult<Vec<PyTensor>> {
    guard(|| {
        let remove: Remove = remove.parse().or_raise(py)?;
        let inputs: Vec<Tensor> = tensors.iter().map(|t| t.t.clone()).collect();
        let f = |wrapped: &[Tensor]| -> switchyard_core::Result<Vec<Tensor>> {
            let call = || -> PyResult<Vec<Tensor>> {
                let objects = wrapped
                    .iter()
                    .map(|t| Bound::new(py, PyTensor::new(t.clone())))
                    .collect::<PyResult<Vec<_>>>()?;
                let result = inner.call1((PyList::new(py, objects)?,))?;
                result
                    .try_iter()?
                    .map(|o| Ok(o?.cast::<PyTensor>()?.get().t.clone()))
                    .collect()
            };
            call().map_err(|e| error_from_py(py, e))
        };
        let outputs = run_functionalized(&f, &inputs, remove).or_raise(py)?;
        Ok(outputs.into_iter().map(PyTensor::new).collect())
    })
}
