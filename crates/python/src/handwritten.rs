//! `Tensor` methods PyTorch writes by hand rather than generating (`python_variable_methods.cpp`):
//! `to` (the dtype / device / other-tensor forms; a conversion to what the tensor already is
//! returns the tensor itself), `copy_` (a Python number is a source too), `nonzero(as_tuple=)`, `data_ptr()` and the `_version`
//! property. They use the same argument parser as the generated bindings.

use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use switchyard_core::{IValue, Tensor};
use switchyard_dispatch::Dispatcher;

use crate::bindings::HandFn;
use crate::convert::param_value;
use crate::errors::OrRaise;
use crate::parser::{Arg, Signature, raw_parse};
use crate::tensor::PyTensor;

/// The hand-written methods, by name.
pub const METHODS: &[(&str, HandFn)] = &[
    ("to", to),
    ("copy_", copy_),
    ("nonzero", nonzero),
    ("data_ptr", data_ptr),
];

/// Adds the hand-written properties to the `Tensor` class.
pub fn register(tensor: &Bound<'_, PyType>) -> PyResult<()> {
    let py = tensor.py();
    let property = py.import("builtins")?.getattr("property")?;
    let getter = wrap_pyfunction!(version, py)?;
    tensor.setattr("_version", property.call1((getter,))?)?;
    Ok(())
}

/// `Tensor._version`: the version counter (bumped by every in-place change).
#[pyfunction]
fn version(t: &Bound<'_, PyTensor>) -> u32 {
    t.get().t.version()
}

fn parsed(
    cell: &'static OnceLock<Vec<Signature>>,
    texts: &[&str],
) -> PyResult<Vec<&'static Signature>> {
    let sigs = cell.get_or_init(|| {
        texts
            .iter()
            .filter_map(|t| Signature::parse(t).ok())
            .collect()
    });
    if sigs.len() != texts.len() {
        return Err(PyRuntimeError::new_err(
            "switchyard: a hand-written signature does not parse",
        ));
    }
    Ok(sigs.iter().collect())
}

fn receiver_tensor(receiver: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    Ok(receiver.cast::<PyTensor>()?.get().t.clone())
}

fn call_op(py: Python<'_>, name: &str, mut stack: Vec<IValue>) -> PyResult<Vec<IValue>> {
    let handle = Dispatcher::singleton()
        .find_schema_or_error(name)
        .or_raise(py)?;
    handle.call_boxed(&mut stack).or_raise(py)?;
    Ok(stack)
}

fn one_tensor(stack: Vec<IValue>) -> PyResult<Tensor> {
    match stack.into_iter().next() {
        Some(IValue::Tensor(t)) => Ok(t),
        _ => Err(PyRuntimeError::new_err("expected a tensor result")),
    }
}

static TO_SIGS: OnceLock<Vec<Signature>> = OnceLock::new();

/// `Tensor.to(...)`, PyTorch's `parse_to_conversion` forms.
fn to<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = receiver.py();
    let sigs = parsed(
        &TO_SIGS,
        &[
            "to(Device device=None, ScalarType dtype=None, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
            "to(ScalarType dtype, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
            "to(Tensor tensor, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
        ],
    )?;
    let mut dst: Vec<Arg<'py>> = Vec::new();
    let index = raw_parse(&sigs, args, kwargs, &mut dst)?;
    let sig = sigs[index];
    let value = |i: usize| param_value(&sig.name, &sig.params[i], &dst[i]);
    let t = receiver_tensor(receiver)?;
    let (mut device, mut dtype) = (t.device(), t.dtype());
    let (non_blocking, copy) = match index {
        0 => {
            if let Some(IValue::Device(d)) = value(0)? {
                device = d;
            }
            if let Some(IValue::ScalarType(s)) = value(1)? {
                dtype = s;
            }
            (value(2)?, value(3)?)
        }
        1 => {
            if let Some(IValue::ScalarType(s)) = value(0)? {
                dtype = s;
            }
            (value(1)?, value(2)?)
        }
        _ => {
            if let Some(IValue::Tensor(other)) = value(0)? {
                device = other.device();
                dtype = other.dtype();
            }
            (value(1)?, value(2)?)
        }
    };
    let copy = matches!(copy, Some(IValue::Bool(true)));
    if !copy && device == t.device() && dtype == t.dtype() {
        return Ok(receiver.clone());
    }
    let stack = vec![
        IValue::Tensor(t),
        IValue::ScalarType(dtype),
        IValue::None,
        IValue::Device(device),
        IValue::None,
        non_blocking.unwrap_or(IValue::Bool(false)),
        IValue::None,
    ];
    let out = one_tensor(call_op(py, "aten::_to_copy", stack)?)?;
    Ok(Bound::new(py, PyTensor { t: out })?.into_any())
}

static COPY_SIGS: OnceLock<Vec<Signature>> = OnceLock::new();

/// `Tensor.copy_(src, non_blocking=False)`: copies `src` (a tensor or a number) into the
/// tensor, broadcasting, and returns the tensor itself.
fn copy_<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = receiver.py();
    let sigs = parsed(
        &COPY_SIGS,
        &["copy_(Tensor other, bool non_blocking=False)"],
    )?;
    let mut dst: Vec<Arg<'py>> = Vec::new();
    raw_parse(&sigs, args, kwargs, &mut dst)?;
    let sig = sigs[0];
    let src = param_value(&sig.name, &sig.params[0], &dst[0])?.unwrap_or(IValue::None);
    let non_blocking =
        param_value(&sig.name, &sig.params[1], &dst[1])?.unwrap_or(IValue::Bool(false));
    let t = receiver_tensor(receiver)?;
    call_op(
        py,
        "aten::copy_",
        vec![IValue::Tensor(t), src, non_blocking],
    )?;
    Ok(receiver.clone())
}

static NONZERO_SIGS: OnceLock<Vec<Signature>> = OnceLock::new();

/// `Tensor.nonzero(*, as_tuple=False)`: the indices of the non-zero elements, one row each,
/// or with `as_tuple=True` one index tensor per dimension.
fn nonzero<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = receiver.py();
    let sigs = parsed(&NONZERO_SIGS, &["nonzero(*, bool as_tuple=False)"])?;
    let mut dst: Vec<Arg<'py>> = Vec::new();
    raw_parse(&sigs, args, kwargs, &mut dst)?;
    let as_tuple = matches!(
        param_value(&sigs[0].name, &sigs[0].params[0], &dst[0])?,
        Some(IValue::Bool(true))
    );
    let mut t = receiver_tensor(receiver)?;
    if as_tuple && t.dim() == 0 {
        // PyTorch treats a 0-dim tensor as a one-element 1-dim one here.
        t = one_tensor(call_op(
            py,
            "aten::unsqueeze",
            vec![IValue::Tensor(t), IValue::Int(0)],
        )?)?;
    }
    let indices = one_tensor(call_op(py, "aten::nonzero", vec![IValue::Tensor(t)])?)?;
    if !as_tuple {
        return Ok(Bound::new(py, PyTensor { t: indices })?.into_any());
    }
    let parts = call_op(
        py,
        "aten::unbind.int",
        vec![IValue::Tensor(indices), IValue::Int(1)],
    )?;
    let items: Vec<Bound<'py, PyAny>> = match parts.into_iter().next() {
        Some(IValue::TensorList(ts)) => ts
            .into_iter()
            .map(|t| Ok(Bound::new(py, PyTensor { t })?.into_any()))
            .collect::<PyResult<_>>()?,
        _ => return Err(PyRuntimeError::new_err("unbind returned no tensor list")),
    };
    Ok(PyTuple::new(py, items)?.into_any())
}

/// `Tensor.data_ptr()`: the address of the first element (0 for tensors without host data).
fn data_ptr<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = receiver.py();
    if !args.is_empty() || kwargs.is_some_and(|k| !k.is_empty()) {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "data_ptr() takes no arguments",
        ));
    }
    let t = receiver_tensor(receiver)?;
    let mut address = 0usize;
    if let Some(storage) = t.storage() {
        let guard = storage.read().or_raise(py)?;
        if let Ok(bytes) = guard.data().host_bytes() {
            let offset = usize::try_from(t.storage_offset()).unwrap_or(0) * t.element_size();
            address = (bytes.as_ptr() as usize).wrapping_add(offset);
        }
    }
    Ok(address.into_pyobject(py)?.into_any())
}
