//! The autograd surface of the Python module (docs/python-plan.md §8), over
//! `switchyard-autograd`: `grad_fn` nodes ([`PyNode`]), tensor hooks and their handles
//! ([`RemovableHandle`]), `backward` / `grad` (`_C._backward`, `_C._grad`, wrapped by
//! `switchyard.autograd`), and the thread-local grad modes (`_C._set_grad_enabled`,
//! `_C.is_grad_enabled`, `_C._InferenceMode`; `switchyard/autograd/grad_mode.py` builds
//! PyTorch's context managers and decorators on them).
//!
//! A backward pass runs with the GIL released (`py.detach`): it runs on the calling thread,
//! and a Python hook re-attaches to call its function. A Python exception raised in a hook is
//! stashed on the thread and raised unchanged (type, traceback) when the pass returns its
//! error to Python, as PyTorch's `python_error` does. Nothing here holds a Rust lock while
//! Python runs: the engine clones hooks out of their lists before calling them.

use std::cell::RefCell;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use switchyard_autograd::{self as autograd, HookHandle, NodeRef};
use switchyard_core::{Error, Tensor};

use crate::errors::to_py_err;
use crate::tensor::PyTensor;

thread_local! {
    /// The Python exception a hook raised during the running pass on this thread.
    static STASHED: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// `e` as a Python exception: the stashed exception of a Python hook if `e` carries it,
/// else the switchyard error as PyTorch's exception.
pub fn restore_err(py: Python<'_>, e: &Error) -> PyErr {
    STASHED
        .with(|s| s.borrow_mut().take())
        .unwrap_or_else(|| to_py_err(py, e))
}

/// Drops a stale stashed exception (a pass that failed elsewhere after a hook raised).
fn clear_stash() {
    STASHED.with(|s| s.borrow_mut().take());
}

/// `grad_fn` and `next_functions` entries: a backward node of the graph.
#[pyclass(frozen, name = "Node", module = "switchyard._C._functions")]
pub struct PyNode {
    node: NodeRef,
    /// For a leaf's accumulator reached through `next_functions`: the leaf (`.variable`).
    leaf: Option<Tensor>,
}

impl PyNode {
    /// The node object of `node`.
    pub fn new(node: NodeRef, leaf: Option<Tensor>) -> PyNode {
        PyNode { node, leaf }
    }

    fn short_name(&self) -> String {
        let name = self.node.name();
        name.rsplit("::").next().unwrap_or(&name).to_owned()
    }
}

#[pymethods]
impl PyNode {
    /// The node's name (`MulBackward0`, `torch::autograd::AccumulateGrad`).
    fn name(&self) -> String {
        self.node.name()
    }

    /// The nodes the gradients go to: `((node, input_nr), ...)`, `(None, 0)` for inputs
    /// that do not require grad.
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self
            .node
            .core()
            .next_edges()
            .iter()
            .map(|e| {
                let node: Bound<'py, PyAny> = match &e.function {
                    Some(f) => Bound::new(py, PyNode::new(f.clone(), e.leaf.clone()))?.into_any(),
                    None => py.None().into_bound(py),
                };
                PyTuple::new(py, [node, e.input_nr.into_pyobject(py)?.into_any()])
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }

    /// The leaf an `AccumulateGrad` node accumulates into.
    #[getter]
    fn variable<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.leaf {
            Some(t) => crate::preserve::wrap(py, t.clone()),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "'{}' object has no attribute 'variable'",
                self.short_name()
            ))),
        }
    }

    /// Extra data hooks may attach (always empty here).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyDict> {
        pyo3::types::PyDict::new(py)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> String {
        format!(
            "<{} object at {:#x}>",
            slf.get().short_name(),
            slf.as_ptr() as usize
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyNode>()
            .is_ok_and(|o| autograd::node_id(&o.get().node) == autograd::node_id(&self.node))
    }

    fn __hash__(&self) -> isize {
        autograd::node_id(&self.node) as isize
    }
}

/// What `Tensor.register_hook` returns: `remove()` unregisters the hook (PyTorch's
/// `torch.utils.hooks.RemovableHandle`, also a context manager).
#[pyclass(frozen, name = "RemovableHandle", module = "switchyard.utils.hooks")]
pub struct RemovableHandle {
    handle: HookHandle,
}

#[pymethods]
impl RemovableHandle {
    /// Unregisters the hook (doing nothing if it already was).
    fn remove(&self) {
        self.handle.remove();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) {
        self.handle.remove();
    }
}

/// `tensor.register_hook(fn)`: `fn(grad)` runs when the gradient of `t` is computed; a tensor
/// it returns replaces the gradient.
pub fn register_hook(py: Python<'_>, t: &Tensor, hook: Py<PyAny>) -> PyResult<RemovableHandle> {
    let handle = autograd::register_hook(t, move |g: &Tensor| {
        Python::attach(|py| {
            let result = crate::preserve::wrap(py, g.clone())
                .and_then(|arg| hook.call1(py, (arg,)))
                .and_then(|r| hook_result(hook.bind(py), g, &r.into_bound(py)));
            result.map_err(|e| {
                let message = e.to_string();
                STASHED.with(|s| *s.borrow_mut() = Some(e));
                Error::runtime(message)
            })
        })
    })
    .map_err(|e| to_py_err(py, &e))?;
    Ok(RemovableHandle { handle })
}

/// What a hook returned: `None` (keep the gradient) or a replacement of the same shape and
/// dtype, checked with PyTorch's messages (`check_single_result`).
fn hook_result(
    hook: &Bound<'_, PyAny>,
    grad: &Tensor,
    r: &Bound<'_, PyAny>,
) -> PyResult<Option<Tensor>> {
    if r.is_none() {
        return Ok(None);
    }
    let Ok(t) = r.cast::<PyTensor>() else {
        return Err(PyTypeError::new_err(format!(
            "expected Variable, but hook returned '{}'",
            crate::convert::type_name(r)
        )));
    };
    let t = t.get().t.clone();
    let name = || {
        hook.getattr("__name__")
            .map(|n| n.to_string())
            .unwrap_or_else(|_| hook.to_string())
    };
    if t.dtype() != grad.dtype() {
        return Err(PyRuntimeError::new_err(format!(
            "hook '{}' has changed the type of value (was {} got {})",
            name(),
            autograd::legacy_type_name(grad.dtype(), grad.device()),
            autograd::legacy_type_name(t.dtype(), t.device())
        )));
    }
    if t.sizes() != grad.sizes() {
        return Err(PyRuntimeError::new_err(format!(
            "hook '{}' has changed the size of value",
            name()
        )));
    }
    Ok(Some(t))
}

fn tensors_of(items: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<Tensor>> {
    items
        .try_iter()?
        .map(|item| {
            let item = item?;
            item.cast::<PyTensor>()
                .map(|t| t.get().t.clone())
                .map_err(|_| {
                    PyTypeError::new_err(format!(
                        "{what} must be Tensors, not {}",
                        crate::convert::type_name(&item)
                    ))
                })
        })
        .collect()
}

fn optional_tensors_of(items: &Bound<'_, PyAny>) -> PyResult<Vec<Option<Tensor>>> {
    items
        .try_iter()?
        .map(|item| {
            let item = item?;
            if item.is_none() {
                return Ok(None);
            }
            item.cast::<PyTensor>()
                .map(|t| Some(t.get().t.clone()))
                .map_err(|_| {
                    PyTypeError::new_err(format!(
                        "gradients must be Tensors or None, not {}",
                        crate::convert::type_name(&item)
                    ))
                })
        })
        .collect()
}

/// `_C._backward(tensors, grad_tensors, retain_graph, create_graph, inputs)`: the sequences
/// already normalised by `switchyard.autograd.backward`.
#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors, retain_graph, create_graph, inputs))]
pub fn _backward(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    grad_tensors: &Bound<'_, PyAny>,
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: &Bound<'_, PyAny>,
) -> PyResult<()> {
    crate::errors::guard(|| {
        let tensors = tensors_of(tensors, "tensors")?;
        let grads = optional_tensors_of(grad_tensors)?;
        let inputs = tensors_of(inputs, "inputs")?;
        clear_stash();
        py.detach(|| autograd::backward(&tensors, &grads, retain_graph, create_graph, &inputs))
            .map_err(|e| restore_err(py, &e))
    })
}

/// `_C._grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)`: the
/// gradients as a tuple (`None` for unused inputs when allowed).
#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused))]
pub fn _grad<'py>(
    py: Python<'py>,
    outputs: &Bound<'py, PyAny>,
    inputs: &Bound<'py, PyAny>,
    grad_outputs: &Bound<'py, PyAny>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    crate::errors::guard(|| {
        let outputs = tensors_of(outputs, "outputs")?;
        let inputs = tensors_of(inputs, "inputs")?;
        let grads = optional_tensors_of(grad_outputs)?;
        clear_stash();
        let result = py
            .detach(|| {
                autograd::grad(
                    &outputs,
                    &inputs,
                    &grads,
                    retain_graph,
                    create_graph,
                    allow_unused,
                )
            })
            .map_err(|e| restore_err(py, &e))?;
        let items = result
            .into_iter()
            .map(|g| match g {
                Some(t) => crate::preserve::wrap(py, t),
                None => Ok(py.None().into_bound(py)),
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    })
}

/// `torch.is_grad_enabled()`.
#[pyfunction]
pub fn is_grad_enabled() -> bool {
    autograd::is_grad_enabled()
}

/// `_C._set_grad_enabled(mode)`: sets this thread's grad mode (the context managers of
/// `grad_mode.py` save and restore it around their block).
#[pyfunction]
pub fn _set_grad_enabled(mode: bool) {
    // The guard sets the thread-local mode and would restore the old one when dropped;
    // forgetting it leaves the new mode set, which is what a plain setter does (it owns no
    // memory, so nothing leaks).
    std::mem::forget(autograd::set_grad_enabled(mode));
}

/// `torch.is_inference_mode_enabled()`.
#[pyfunction]
pub fn is_inference_mode_enabled() -> bool {
    switchyard_core::local_dispatch::is_inference_mode_enabled()
}

/// `_C._InferenceMode(mode)`: inference mode (or, with `False`, its explicit absence) while
/// the object lives between `__enter__` and `__exit__`, on the thread that created it.
#[pyclass(unsendable, name = "_InferenceMode", module = "switchyard._C")]
pub struct InferenceModeGuard {
    mode: bool,
    guard: Option<switchyard_core::local_dispatch::InferenceMode>,
}

#[pymethods]
impl InferenceModeGuard {
    #[new]
    fn new(mode: bool) -> Self {
        InferenceModeGuard { mode, guard: None }
    }

    fn __enter__(&mut self) -> PyResult<()> {
        if self.guard.is_some() {
            return Err(PyRuntimeError::new_err("inference mode entered twice"));
        }
        self.guard = Some(autograd::inference_mode(self.mode));
        Ok(())
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, PyTuple>) {
        self.guard = None;
    }
}
