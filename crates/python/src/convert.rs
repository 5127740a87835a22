//! Conversions between Python objects and switchyard values.
//!
//! - [`PySource`]: Python objects as arguments of a call by schema, with `torch.ops`' rules
//!   (`toIValue` in PyTorch's `torch/csrc/jit/python/pybind_utils.h`) and messages: a Tensor
//!   argument takes a `Tensor`, or a Python number (a wrapped scalar) for the operators that
//!   allow numbers as tensors ([`switchyard_call::args::allows_numbers_as_tensors`]: `add`,
//!   `mul`, `copy_`, `to`, ...), `Scalar` a number, `int` an integer, a sized list such as
//!   `int[2]` a bare number too, `T?` also `None`.
//! - [`ivalue_to_py`] / [`returns_to_py`]: results back to Python (tensors, numbers, lists,
//!   tuples of several returns).
//! - [`data_to_lit`]: the data of `switchyard.tensor(data)` (nested lists and tuples of
//!   numbers, bools and tensors) as a [`Lit`] tree for `switchyard_call::data`.

use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple};
use switchyard_call::args::{ArgSource, allows_numbers_as_tensors, type_mismatch_error};
use switchyard_call::literal::Lit;
use switchyard_core::{
    Device, Error, IValue, MemoryFormat, Result, Scalar, ScalarType, Stack, Tensor,
};
use switchyard_schema::{BaseType, FunctionSchema, Type};

use crate::errors::OrRaise;
use crate::tensor::{PyTensor, tensor_scalars};
use crate::types::{PyDType, device_from_py, device_object, dtype_object, is_sequence};

/// Python objects as the values of a call by schema (`switchyard.ops.aten.<op>.<overload>`).
pub struct PySource<'py> {
    /// The interpreter.
    pub py: Python<'py>,
    /// Whether a Python number converts to a `Tensor` argument (a wrapped scalar), as
    /// `toIValue` converts it under `ToIValueAllowNumbersAsTensors`.
    pub numbers_as_tensors: bool,
}

impl<'py> PySource<'py> {
    /// The values of a call of `schema` through `torch.ops`: numbers are tensors only for the
    /// operators PyTorch allows them for ([`allows_numbers_as_tensors`]).
    pub fn for_call(py: Python<'py>, schema: &FunctionSchema) -> Self {
        PySource {
            py,
            numbers_as_tensors: allows_numbers_as_tensors(schema),
        }
    }

    /// Values that take numbers for every `Tensor` (the results of Python kernels).
    pub fn numbers_allowed(py: Python<'py>) -> Self {
        PySource {
            py,
            numbers_as_tensors: true,
        }
    }
}

impl<'py> ArgSource for PySource<'py> {
    type Value = Bound<'py, PyAny>;

    fn convert(&self, ty: &Type, value: &Bound<'py, PyAny>, device: Device) -> Result<IValue> {
        convert(ty, value, device, self.numbers_as_tensors)
    }

    fn show(&self, value: &Bound<'py, PyAny>) -> String {
        value
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "<unprintable object>".to_owned())
    }

    fn mismatch(
        &self,
        schema: &FunctionSchema,
        index: usize,
        value: &Bound<'py, PyAny>,
        error: &Error,
    ) -> Error {
        let found = type_name(value);
        type_mismatch_error(schema, index, &found, &self.show(value), error.message())
    }
}

/// `type(obj).__name__`.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

/// `str(obj)`, for messages.
fn text(obj: &Bound<'_, PyAny>) -> String {
    obj.str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "<unprintable object>".to_owned())
}

/// pybind11's message for a value its caster refuses.
fn cannot_cast(obj: &Bound<'_, PyAny>) -> Error {
    let ty = obj
        .get_type()
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<class 'object'>".to_owned());
    Error::type_error(format!(
        "Unable to cast Python instance of type {ty} to C++ type '?' (#define PYBIND11_DETAILED_ERROR_MESSAGES or compile in debug mode for details)"
    ))
}

/// A Python `bool`, `int` or `float` as a [`Scalar`]; `None` for anything else.
pub fn py_scalar(obj: &Bound<'_, PyAny>) -> Result<Option<Scalar>> {
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Some(Scalar::Bool(b.is_true())));
    }
    if obj.is_instance_of::<PyInt>() {
        return obj
            .extract::<i64>()
            .map(|i| Some(Scalar::Int(i)))
            .map_err(|_| Error::runtime("Overflow when unpacking long"));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Some(Scalar::Float(f.value())));
    }
    Ok(None)
}

fn convert(ty: &Type, obj: &Bound<'_, PyAny>, device: Device, numbers: bool) -> Result<IValue> {
    if obj.is_none() {
        return if ty.is_optional() {
            Ok(IValue::None)
        } else if ty.is_tensor() {
            Err(Error::type_error("Unable to cast None to Tensor"))
        } else {
            Err(cannot_cast(obj))
        };
    }
    match ty {
        Type::Optional(inner) => convert(inner, obj, device, numbers),
        Type::Base(b) => convert_base(*b, obj, device, numbers),
        Type::List { elem, size } => convert_list(elem, *size, obj, device, numbers),
        Type::CustomClass(c) => Err(Error::not_implemented(format!(
            "custom class {c} values can't be passed from Python yet"
        ))),
    }
}

fn int_of(obj: &Bound<'_, PyAny>) -> Result<i64> {
    if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyString>() {
        return Err(cannot_cast(obj));
    }
    obj.extract::<i64>().map_err(|e| {
        if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(obj.py()) {
            Error::runtime("Overflow when unpacking long")
        } else {
            cannot_cast(obj)
        }
    })
}

fn float_of(obj: &Bound<'_, PyAny>) -> Result<f64> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyTensor>() {
        return Err(cannot_cast(obj));
    }
    obj.extract::<f64>().map_err(|_| cannot_cast(obj))
}

fn convert_base(
    b: BaseType,
    obj: &Bound<'_, PyAny>,
    _device: Device,
    numbers: bool,
) -> Result<IValue> {
    Ok(match b {
        BaseType::Tensor => {
            if let Ok(t) = obj.cast::<PyTensor>() {
                return Ok(IValue::Tensor(t.get().t.clone()));
            }
            // A number is refused as anything else is, unless the operator allows numbers.
            let number = if numbers { py_scalar(obj)? } else { None };
            match number {
                Some(s) => IValue::Tensor(Tensor::wrapped_scalar(s)?),
                None => {
                    return Err(Error::type_error(format!(
                        "Unable to cast {} to Tensor",
                        text(obj)
                    )));
                }
            }
        }
        BaseType::Scalar => match py_scalar(obj)? {
            Some(Scalar::Bool(b)) => IValue::Bool(b),
            Some(Scalar::Int(i)) => IValue::Int(i),
            Some(Scalar::Float(f)) => IValue::Double(f),
            None => {
                return Err(Error::type_error(format!(
                    "Cannot cast {} to number",
                    text(obj)
                )));
            }
        },
        BaseType::Int | BaseType::SymInt | BaseType::DeviceIndex => IValue::Int(int_of(obj)?),
        BaseType::Float => IValue::Double(float_of(obj)?),
        BaseType::Bool | BaseType::SymBool => match obj.cast::<PyBool>() {
            Ok(b) => IValue::Bool(b.is_true()),
            Err(_) => return Err(cannot_cast(obj)),
        },
        BaseType::Str => match obj.cast::<PyString>() {
            Ok(s) => IValue::from(s.to_str().map_err(|_| cannot_cast(obj))?),
            Err(_) => return Err(cannot_cast(obj)),
        },
        BaseType::ScalarType => {
            if let Ok(d) = obj.cast::<PyDType>() {
                IValue::ScalarType(d.get().ty)
            } else {
                let i = int_of(obj)?;
                IValue::ScalarType(ScalarType::from_i64(i).ok_or_else(|| cannot_cast(obj))?)
            }
        }
        BaseType::Device => IValue::Device(device_from_py(obj).map_err(|_| cannot_cast(obj))?),
        BaseType::Generator => match obj.cast::<crate::random::PyGenerator>() {
            Ok(g) => IValue::Generator(g.get().g.clone()),
            Err(_) => return Err(cannot_cast(obj)),
        },
        BaseType::MemoryFormat => {
            let i = int_of(obj)?;
            IValue::MemoryFormat(MemoryFormat::from_i64(i).ok_or_else(|| cannot_cast(obj))?)
        }
        other => {
            return Err(Error::not_implemented(format!(
                "{} values can't be passed from Python yet",
                other.name()
            )));
        }
    })
}

fn items<'py>(obj: &Bound<'py, PyAny>) -> Result<Vec<Bound<'py, PyAny>>> {
    if !is_sequence(obj) {
        return Err(cannot_cast(obj));
    }
    obj.try_iter()
        .and_then(|it| it.collect::<PyResult<Vec<_>>>())
        .map_err(|_| cannot_cast(obj))
}

fn convert_list(
    elem: &Type,
    size: Option<usize>,
    obj: &Bound<'_, PyAny>,
    device: Device,
    numbers: bool,
) -> Result<IValue> {
    // A bare number for a sized list of numbers is repeated (`int[2] stride=1`,
    // `max_pool2d(x, 2)`, `int[1]? dim=1`), as PyTorch does.
    if let Some(n) = size
        && !is_sequence(obj)
    {
        match elem {
            Type::Base(BaseType::Int | BaseType::SymInt) => {
                return Ok(IValue::IntList(vec![int_of(obj)?; n]));
            }
            Type::Base(BaseType::Float) => {
                return Ok(IValue::DoubleList(vec![float_of(obj)?; n]));
            }
            _ => {}
        }
    }
    let items = items(obj)?;
    Ok(match elem {
        Type::Base(BaseType::Tensor) => IValue::TensorList(
            items
                .iter()
                .map(|v| match v.cast::<PyTensor>() {
                    Ok(t) => Ok(t.get().t.clone()),
                    Err(_) => Err(cannot_cast(obj)),
                })
                .collect::<Result<_>>()?,
        ),
        Type::Optional(t) if t.is_tensor() => IValue::OptionalTensorList(
            items
                .iter()
                .map(|v| {
                    if v.is_none() {
                        Ok(None)
                    } else {
                        match v.cast::<PyTensor>() {
                            Ok(t) => Ok(Some(t.get().t.clone())),
                            Err(_) => Err(cannot_cast(obj)),
                        }
                    }
                })
                .collect::<Result<_>>()?,
        ),
        Type::Base(BaseType::Int | BaseType::SymInt) => {
            IValue::IntList(items.iter().map(int_of).collect::<Result<_>>()?)
        }
        Type::Base(BaseType::Float) => {
            IValue::DoubleList(items.iter().map(float_of).collect::<Result<_>>()?)
        }
        Type::Base(BaseType::Bool) => IValue::BoolList(
            items
                .iter()
                .map(|v| {
                    v.cast::<PyBool>()
                        .map(|b| b.is_true())
                        .map_err(|_| cannot_cast(obj))
                })
                .collect::<Result<_>>()?,
        ),
        other => IValue::GenericList(
            items
                .iter()
                .map(|v| convert(other, v, device, numbers))
                .collect::<Result<_>>()?,
        ),
    })
}

/// One result as a Python object.
pub fn ivalue_to_py(py: Python<'_>, v: IValue) -> PyResult<Bound<'_, PyAny>> {
    Ok(match v {
        IValue::None => py.None().into_bound(py),
        IValue::Tensor(t) => Bound::new(py, PyTensor::new(t))?.into_any(),
        IValue::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        IValue::Int(i) => i.into_pyobject(py)?.into_any(),
        IValue::Double(f) => f.into_pyobject(py)?.into_any(),
        IValue::String(s) => PyString::new(py, &s).into_any(),
        IValue::Device(d) => device_object(py, d)?.into_any(),
        IValue::ScalarType(t) => dtype_object(py, t)?.into_any(),
        // TorchScript passes layouts and memory formats as integers.
        IValue::Layout(l) => (l as i64).into_pyobject(py)?.into_any(),
        IValue::MemoryFormat(m) => (m as i64).into_pyobject(py)?.into_any(),
        IValue::Generator(g) => Bound::new(py, crate::random::PyGenerator { g })?.into_any(),
        IValue::TensorList(ts) => PyList::new(
            py,
            ts.into_iter()
                .map(|t| Bound::new(py, PyTensor::new(t)))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        IValue::OptionalTensorList(ts) => PyList::new(
            py,
            ts.into_iter()
                .map(|t| ivalue_to_py(py, t.map_or(IValue::None, IValue::Tensor)))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        IValue::IntList(v) => PyList::new(py, v)?.into_any(),
        IValue::DoubleList(v) => PyList::new(py, v)?.into_any(),
        IValue::BoolList(v) => PyList::new(py, v)?.into_any(),
        IValue::Tuple(items) => PyTuple::new(
            py,
            items
                .into_iter()
                .map(|v| ivalue_to_py(py, v))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        IValue::GenericList(items) => PyList::new(
            py,
            items
                .into_iter()
                .map(|v| ivalue_to_py(py, v))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
    })
}

/// The returns left on `stack` by a boxed call: `None` for none, the value for one, a tuple
/// for several (as `torch.ops` returns them).
pub fn returns_to_py(py: Python<'_>, stack: Stack) -> PyResult<Bound<'_, PyAny>> {
    match stack.len() {
        0 => Ok(py.None().into_bound(py)),
        1 => {
            let v = stack.into_iter().next().unwrap_or(IValue::None);
            ivalue_to_py(py, v)
        }
        _ => ivalue_to_py(py, IValue::Tuple(stack)),
    }
}

/// How deeply `switchyard.tensor`'s data may nest (PyTorch's tensors have at most 64
/// dimensions); bounds the recursion on hostile data.
const MAX_DATA_DEPTH: usize = 64;

/// The data of `switchyard.tensor(data)` as a literal tree: bools, integers (an integer
/// beyond int64 is PyTorch's `ValueError`), floats, lists and tuples, and tensors (their
/// values, nested as their shape).
pub fn data_to_lit(obj: &Bound<'_, PyAny>) -> PyResult<Lit> {
    data_to_lit_at(obj, 0)
}

fn data_to_lit_at(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Lit> {
    let py = obj.py();
    if depth > MAX_DATA_DEPTH {
        return Err(PyValueError::new_err(format!(
            "too many dimensions '{}'",
            type_name(obj)
        )));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Lit::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return obj
            .extract::<i64>()
            .map(Lit::Int)
            .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Lit::Float(f.value()));
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        let values = tensor_scalars(t).or_raise(py)?;
        let sizes = t.sizes();
        let mut it = values.into_iter();
        return Ok(nest_lit(&sizes, &mut it));
    }
    if is_sequence(obj) {
        let items = obj
            .try_iter()?
            .map(|item| data_to_lit_at(&item?, depth + 1))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Lit::List(items));
    }
    if obj.is_none() {
        return Err(PyRuntimeError::new_err("Could not infer dtype of NoneType"));
    }
    // NumPy scalars and other numbers: integers by `__index__`, reals by `__float__`.
    if obj.hasattr("__index__")? && !obj.is_instance_of::<PyString>() {
        return Ok(Lit::Int(obj.extract::<i64>().map_err(|_| {
            PyValueError::new_err("Overflow when unpacking long long")
        })?));
    }
    if obj.hasattr("__float__")? && !obj.is_instance_of::<PyString>() {
        return Ok(Lit::Float(obj.extract::<f64>()?));
    }
    Err(PyTypeError::new_err(format!(
        "new(): invalid data type '{}'",
        type_name(obj)
    )))
}

fn nest_lit(sizes: &[i64], values: &mut impl Iterator<Item = Scalar>) -> Lit {
    match sizes.split_first() {
        None => match values.next() {
            Some(Scalar::Bool(b)) => Lit::Bool(b),
            Some(Scalar::Int(i)) => Lit::Int(i),
            Some(Scalar::Float(f)) => Lit::Float(f),
            None => Lit::List(Vec::new()),
        },
        Some((&n, rest)) => Lit::List((0..n).map(|_| nest_lit(rest, values)).collect()),
    }
}

// ---- values of the argument parser's parameters (`PythonArgs` accessors) ---------------

use crate::parser::{Arg, Param, ParamType, is_long, sequence_items, tp_name};

/// The value of parameter `param` of function `fname` as the schema argument of type `ty`
/// takes it, once the parser's check accepted it (`PythonArgs::tensor`, `scalar`, `toInt64`,
/// `intlist`, ...). An omitted parameter (or `None` where allowed) is `None` here; the caller
/// puts the schema default in its place.
pub fn param_value(fname: &str, param: &Param, arg: &Arg<'_>) -> PyResult<Option<IValue>> {
    let Some(obj) = arg.obj() else {
        return Ok(None);
    };
    let py = obj.py();
    let runtime = |e: Error| crate::errors::to_py_err(py, &e);
    Ok(Some(match param.ty {
        ParamType::Tensor => match obj.cast::<PyTensor>() {
            Ok(t) => IValue::Tensor(t.get().t.clone()),
            Err(_) => match python_number(obj)? {
                Some(s) => IValue::Tensor(Tensor::wrapped_scalar(s).map_err(runtime)?),
                None => {
                    return Err(PyTypeError::new_err(format!(
                        "expected Tensor as argument {}, but got {}",
                        0,
                        tp_name(obj)
                    )));
                }
            },
        },
        ParamType::Scalar => match scalar_of(obj)? {
            Scalar::Bool(b) => IValue::Bool(b),
            Scalar::Int(i) => IValue::Int(i),
            Scalar::Float(f) => IValue::Double(f),
        },
        ParamType::Int64 | ParamType::SymInt => IValue::Int(index_of(obj)?),
        ParamType::Double => IValue::Double(match obj.cast::<PyTensor>() {
            Ok(t) => t.get().t.item_scalar().map_err(runtime)?.to_f64(),
            Err(_) => obj.extract::<f64>()?,
        }),
        ParamType::Bool => IValue::Bool(obj.is_truthy()?),
        ParamType::TensorList | ParamType::OptionalTensorList => {
            let items = sequence_items(obj).unwrap_or_default();
            if param.ty == ParamType::TensorList {
                IValue::TensorList(
                    items
                        .iter()
                        .map(|i| Ok(i.cast::<PyTensor>()?.get().t.clone()))
                        .collect::<PyResult<_>>()?,
                )
            } else {
                IValue::OptionalTensorList(
                    items
                        .iter()
                        .map(|i| {
                            if i.is_none() {
                                Ok(None)
                            } else {
                                Ok(Some(i.cast::<PyTensor>()?.get().t.clone()))
                            }
                        })
                        .collect::<PyResult<_>>()?,
                )
            }
        }
        ParamType::IntList | ParamType::SymIntList => {
            IValue::IntList(int_list_of(fname, param, obj)?)
        }
        ParamType::FloatList => IValue::DoubleList(
            sequence_items(obj)
                .unwrap_or_default()
                .iter()
                .map(|i| i.extract::<f64>())
                .collect::<PyResult<_>>()?,
        ),
        ParamType::ScalarType => IValue::ScalarType(crate::types::dtype_from_py(obj)?),
        ParamType::Device => {
            if is_long(obj) {
                // PyTorch reads a bare index as a CUDA device.
                let i: i64 = obj.extract()?;
                IValue::Device(Device::parse(&format!("cuda:{i}")).map_err(runtime)?)
            } else {
                IValue::Device(device_from_py(obj)?)
            }
        }
        ParamType::String => IValue::from(obj.cast::<PyString>()?.to_str()?),
        ParamType::Layout => IValue::Layout(obj.cast::<crate::types::PyLayout>()?.get().layout),
        ParamType::MemoryFormat => {
            IValue::MemoryFormat(obj.cast::<crate::types::PyMemoryFormat>()?.get().format)
        }
        ParamType::Generator => {
            IValue::Generator(obj.cast::<crate::random::PyGenerator>()?.get().g.clone())
        }
        ParamType::ScalarList => {
            return Err(PyNotImplementedError::new_err(format!(
                "{fname}(): {} arguments can't be passed from Python yet",
                param.ty.type_name()
            )));
        }
    }))
}

/// A Python `bool`, `int` or `float` as a [`Scalar`], with PyTorch 2.15's errors for ints
/// beyond int64: it reads them as uint64 (which switchyard's scalars do not have: refused
/// with the error PyTorch gives where a uint64 meets int64), and Python's own
/// `OverflowError`s beyond that.
fn python_number(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<PyInt>()
        && !obj.is_instance_of::<PyBool>()
        && obj.extract::<i64>().is_err()
    {
        if obj.lt(0)? {
            return Err(pyo3::exceptions::PyOverflowError::new_err(
                "can't convert negative int to unsigned",
            ));
        }
        if obj.extract::<u64>().is_err() {
            return Err(pyo3::exceptions::PyOverflowError::new_err(
                "int too big to convert",
            ));
        }
        return Err(PyRuntimeError::new_err(
            "value cannot be converted to type int64_t without overflow",
        ));
    }
    py_scalar(obj).or_raise(obj.py())
}

/// A number (or a 0-dim tensor's value) as a [`Scalar`] (`PythonArgs::scalar_slow`).
fn scalar_of(obj: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    let py = obj.py();
    if let Ok(t) = obj.cast::<PyTensor>() {
        return t.get().t.item_scalar().or_raise(py);
    }
    if let Some(s) = python_number(obj)? {
        return Ok(s);
    }
    if is_long(obj) {
        return Ok(Scalar::Int(obj.extract()?));
    }
    Ok(Scalar::Float(obj.extract()?))
}

/// An index: an int, a one-element integral tensor's value, or `__index__`'s result.
fn index_of(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return match t.get().t.item_scalar().or_raise(obj.py())? {
            Scalar::Int(i) => Ok(i),
            Scalar::Bool(b) => Ok(i64::from(b)),
            Scalar::Float(f) => Ok(f as i64),
        };
    }
    obj.extract::<i64>().map_err(|e| {
        if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(obj.py()) {
            // `THPUtils_unpackLong`'s error.
            PyValueError::new_err("Overflow when unpacking long long")
        } else {
            e
        }
    })
}

/// `PythonArgs::intlist`: a sequence of ints (or one int for `IntArrayRef[N]`, repeated).
fn int_list_of(fname: &str, param: &Param, obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    let Some(items) = sequence_items(obj) else {
        let v = index_of(obj)?;
        return Ok(vec![v; param.size.max(1)]);
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ok = !item.is_instance_of::<PyBool>()
            && (item.is_instance_of::<PyInt>()
                || item.cast::<PyTensor>().is_ok_and(|t| {
                    let t = &t.get().t;
                    t.numel() == 1 && t.dtype().is_integral(true)
                })
                || (!item.is_instance_of::<PyFloat>() && item.hasattr("__index__")?));
        if !ok {
            return Err(PyTypeError::new_err(format!(
                "{fname}(): argument '{}' failed to unpack the object at pos {} with error \"type must be tuple of ints,but got {}\"",
                param.name,
                i + 1,
                tp_name(item)
            )));
        }
        match index_of(item) {
            Ok(v) => out.push(v),
            Err(e) if e.is_instance_of::<PyValueError>(item.py()) => {
                // PyTorch appends the C++ backtrace of the unpacking error here.
                return Err(PyTypeError::new_err(format!(
                    "{fname}(): argument '{}' failed to unpack the object at pos {} with error \"{}\"",
                    param.name,
                    i + 1,
                    e.value(item.py())
                )));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}
