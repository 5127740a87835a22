//! `Tensor` methods PyTorch writes by hand rather than generating (`python_variable_methods.cpp`):
//! `size(dim=None)`, `stride(dim=None)`, `dim()`, `numel()`, `item()`, `tolist()`,
//! `requires_grad_(requires_grad=True)`, `is_contiguous(*, memory_format=contiguous_format)`,
//! `to` (the dtype / device / other-tensor forms; a conversion to what the tensor already is
//! returns the tensor itself), `copy_` (a Python number is a source too), `nonzero(as_tuple=)`, `data_ptr()` and the `_version`
//! property. They use the same argument parser as the generated bindings.

use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use switchyard_core::{IValue, MemoryFormat, Tensor};
use switchyard_dispatch::Dispatcher;

use crate::bindings::HandFn;
use crate::convert::param_value;
use crate::errors::OrRaise;
use crate::parser::{Arg, Signature, raw_parse};
use crate::tensor::PyTensor;

/// The hand-written methods, by name.
pub const METHODS: &[(&str, HandFn)] = &[
    ("size", size),
    ("stride", stride),
    ("dim", dim),
    ("numel", numel),
    ("item", item),
    ("tolist", tolist),
    ("requires_grad_", requires_grad_),
    ("is_contiguous", is_contiguous),
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
    // The last parameter of every form is `memory_format`.
    let memory_format = match value(sig.params.len() - 1)? {
        Some(IValue::MemoryFormat(m)) => m,
        _ => MemoryFormat::Preserve,
    };
    // `to_will_alias`: nothing to change returns the tensor itself.
    if !copy
        && device == t.device()
        && dtype == t.dtype()
        && (memory_format == MemoryFormat::Preserve || suggest_memory_format(&t) == memory_format)
    {
        return Ok(receiver.clone());
    }
    let stack = vec![
        IValue::Tensor(t),
        IValue::ScalarType(dtype),
        IValue::None,
        IValue::Device(device),
        IValue::None,
        non_blocking.unwrap_or(IValue::Bool(false)),
        IValue::MemoryFormat(memory_format),
    ];
    let out = one_tensor(call_op(py, "aten::_to_copy", stack)?)?;
    Ok(Bound::new(py, PyTensor::new(out))?.into_any())
}

/// `TensorBase::suggest_memory_format`: channels-last for a 4-d (5-d) tensor laid out so and
/// not also row-major contiguous, else contiguous.
fn suggest_memory_format(t: &Tensor) -> MemoryFormat {
    let (sizes, strides) = (t.sizes(), t.strides());
    if t.is_contiguous() {
        MemoryFormat::Contiguous
    } else if switchyard_core::shape::is_channels_last_contiguous(&sizes, &strides) {
        MemoryFormat::ChannelsLast
    } else if is_channels_last_3d_contiguous(&sizes, &strides) {
        MemoryFormat::ChannelsLast3d
    } else {
        MemoryFormat::Contiguous
    }
}

/// CPython's messages for a `METH_NOARGS` method given arguments.
fn no_args(
    name: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    if kwargs.is_some_and(|k| !k.is_empty()) {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "TensorBase.{name}() takes no keyword arguments"
        )));
    }
    if !args.is_empty() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "TensorBase.{name}() takes no arguments ({} given)",
            args.len()
        )));
    }
    Ok(())
}

/// Parses `args` / `kwargs` with the one signature `text` (cached in `cell`); the values of
/// its parameters (`None` where omitted).
fn parse_one<'py>(
    cell: &'static OnceLock<Vec<Signature>>,
    text: &str,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Vec<Option<IValue>>> {
    let sigs = parsed(cell, &[text])?;
    let mut dst: Vec<Arg<'py>> = Vec::new();
    raw_parse(&sigs, args, kwargs, &mut dst)?;
    let sig = sigs[0];
    sig.params
        .iter()
        .zip(&dst)
        .map(|(p, a)| param_value(&sig.name, p, a))
        .collect()
}

static SIZE_SIGS: OnceLock<Vec<Signature>> = OnceLock::new();

/// `Tensor.size(dim=None)`: the shape as a `Size`, or one dimension's size.
fn size<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = receiver.py();
    let values = parse_one(&SIZE_SIGS, "size(int64_t? dim=None)", args, kwargs)?;
    let t = receiver_tensor(receiver)?;
    match values.first() {
        Some(Some(IValue::Int(d))) => Ok(t.size(*d).or_raise(py)?.into_pyobject(py)?.into_any()),
        _ => crate::types::size_object(py, &t.sizes()),
    }
}

static STRIDE_SIGS: OnceLock<Vec<Signature>> = OnceLock::new();

/// `Tensor.stride(dim=None)`: the strides as a tuple, or one dimension's stride.
fn stride<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = receiver.py();
    let values = parse_one(&STRIDE_SIGS, "stride(int64_t? dim=None)", args, kwargs)?;
    let t = receiver_tensor(receiver)?;
    match values.first() {
        Some(Some(IValue::Int(d))) => Ok(t.stride(*d).or_raise(py)?.into_pyobject(py)?.into_any()),
        _ => Ok(PyTuple::new(py, t.strides().iter())?.into_any()),
    }
}

/// `Tensor.dim()`: the number of dimensions.
fn dim<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    no_args("dim", args, kwargs)?;
    let t = receiver_tensor(receiver)?;
    Ok(t.dim().into_pyobject(receiver.py())?.into_any())
}

/// `Tensor.numel()`: the number of elements.
fn numel<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    no_args("numel", args, kwargs)?;
    let t = receiver_tensor(receiver)?;
    Ok(t.numel().into_pyobject(receiver.py())?.into_any())
}

/// `Tensor.item()`: the value of a one-element tensor as a Python number.
fn item<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    no_args("item", args, kwargs)?;
    let py = receiver.py();
    let t = receiver_tensor(receiver)?;
    crate::tensor::scalar_to_py(py, t.item_scalar().or_raise(py)?)
}

/// `Tensor.tolist()`: the values as nested lists of Python numbers (a number for 0-dim).
fn tolist<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    no_args("tolist", args, kwargs)?;
    let py = receiver.py();
    let t = receiver_tensor(receiver)?;
    let values = crate::tensor::tensor_scalars(&t).or_raise(py)?;
    crate::tensor::nest(py, &t.sizes(), &mut values.into_iter())
}

static REQUIRES_GRAD_SIGS: OnceLock<Vec<Signature>> = OnceLock::new();

/// `Tensor.requires_grad_(requires_grad=True)`: sets the flag, returns the tensor itself.
fn requires_grad_<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let values = parse_one(
        &REQUIRES_GRAD_SIGS,
        "requires_grad_(bool requires_grad=True)",
        args,
        kwargs,
    )?;
    let flag = !matches!(values.first(), Some(Some(IValue::Bool(false))));
    // The autograd layer's rules and messages (leaves only, floating point only).
    switchyard_autograd::AutogradTensor::requires_grad_(&receiver_tensor(receiver)?, flag)
        .or_raise(receiver.py())?;
    // A leaf that requires grad comes back as `node.variable`: one object for both.
    if flag {
        crate::preserve::register(receiver.py(), receiver);
    }
    Ok(receiver.clone())
}

static IS_CONTIGUOUS_SIGS: OnceLock<Vec<Signature>> = OnceLock::new();

/// `Tensor.is_contiguous(*, memory_format=torch.contiguous_format)`.
fn is_contiguous<'py>(
    receiver: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let values = parse_one(
        &IS_CONTIGUOUS_SIGS,
        "is_contiguous(*, MemoryFormat memory_format=contiguous_format)",
        args,
        kwargs,
    )?;
    let t = receiver_tensor(receiver)?;
    let (sizes, strides) = (t.sizes(), t.strides());
    let answer = match values.first() {
        Some(Some(IValue::MemoryFormat(MemoryFormat::ChannelsLast))) => {
            switchyard_core::shape::is_channels_last_contiguous(&sizes, &strides)
        }
        Some(Some(IValue::MemoryFormat(MemoryFormat::ChannelsLast3d))) => {
            is_channels_last_3d_contiguous(&sizes, &strides)
        }
        // `TensorImpl::is_contiguous`: any other format asks for the default contiguity.
        _ => t.is_contiguous(),
    };
    Ok(pyo3::types::PyBool::new(receiver.py(), answer)
        .to_owned()
        .into_any())
}

/// `compute_channels_last_contiguous_3d`: strides of an NDHWC layout (size-1 dims ignored).
fn is_channels_last_3d_contiguous(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.len() != 5 {
        return false;
    }
    if sizes.contains(&0) {
        return true;
    }
    let mut expected: i64 = 1;
    for d in [1usize, 4, 3, 2, 0] {
        if sizes[d] == 1 {
            continue;
        }
        if strides[d] != expected {
            return false;
        }
        expected = expected.saturating_mul(sizes[d]);
    }
    true
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
        return Ok(Bound::new(py, PyTensor::new(indices))?.into_any());
    }
    let parts = call_op(
        py,
        "aten::unbind.int",
        vec![IValue::Tensor(indices), IValue::Int(1)],
    )?;
    let items: Vec<Bound<'py, PyAny>> = match parts.into_iter().next() {
        Some(IValue::TensorList(ts)) => ts
            .into_iter()
            .map(|t| Ok(Bound::new(py, PyTensor::new(t))?.into_any()))
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
