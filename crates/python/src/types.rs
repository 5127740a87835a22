//! The small value objects of the Python API, printing as PyTorch's: `dtype` (one object per
//! dtype, `repr` `torch.float32`, so `t.dtype is switchyard.float32`), `device` (`repr`
//! `device(type='cpu')`, `str` `cpu`) and `Size` (a `tuple` subclass, `repr`
//! `torch.Size([2, 3])`).

use pyo3::PyTypeInfo;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use switchyard_core::{Device, ScalarType};

use crate::errors::OrRaise;

/// `switchyard.dtype`: one object per [`ScalarType`], created at import.
#[pyclass(frozen, name = "dtype", module = "switchyard")]
pub struct PyDType {
    /// The dtype.
    pub ty: ScalarType,
}

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        self.ty.torch_name()
    }

    /// Whether this is a floating-point dtype.
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.ty.is_floating_point()
    }

    /// Whether this is a complex dtype (none is supported yet).
    #[getter]
    fn is_complex(&self) -> bool {
        self.ty.is_complex()
    }

    /// Whether values of this dtype can be negative.
    #[getter]
    fn is_signed(&self) -> bool {
        !matches!(self.ty, ScalarType::Byte | ScalarType::Bool)
    }

    /// The size of one element in bytes.
    #[getter]
    fn itemsize(&self) -> usize {
        self.ty.element_size()
    }

    /// Pickles by name, as PyTorch's dtypes do (`switchyard.float32`).
    fn __reduce__(&self) -> &'static str {
        self.ty.python_name()
    }
}

static DTYPES: PyOnceLock<Vec<Py<PyDType>>> = PyOnceLock::new();

fn dtypes(py: Python<'_>) -> PyResult<&Vec<Py<PyDType>>> {
    DTYPES.get_or_try_init(py, || {
        ScalarType::ALL
            .iter()
            .map(|&ty| Py::new(py, PyDType { ty }))
            .collect()
    })
}

/// The one `dtype` object of `ty`.
pub fn dtype_object(py: Python<'_>, ty: ScalarType) -> PyResult<Bound<'_, PyDType>> {
    let all = dtypes(py)?;
    let i = ScalarType::ALL
        .iter()
        .position(|&t| t == ty)
        .ok_or_else(|| PyRuntimeError::new_err(format!("no dtype object for {ty}")))?;
    Ok(all[i].bind(py).clone())
}

/// The module attributes naming dtypes: each dtype's Python name and PyTorch's aliases.
pub fn dtype_attributes() -> Vec<(&'static str, ScalarType)> {
    let mut names: Vec<(&'static str, ScalarType)> = ScalarType::ALL
        .iter()
        .map(|&t| (t.python_name(), t))
        .collect();
    names.extend([
        ("float", ScalarType::Float),
        ("double", ScalarType::Double),
        ("half", ScalarType::Half),
        ("long", ScalarType::Long),
        ("int", ScalarType::Int),
        ("short", ScalarType::Short),
    ]);
    names
}

/// A dtype argument: a `dtype` object, or the Python types `float`, `int` and `bool`
/// (float64, int64, bool), as PyTorch's parser accepts them.
pub fn dtype_from_py(obj: &Bound<'_, PyAny>) -> PyResult<ScalarType> {
    if let Ok(d) = obj.cast::<PyDType>() {
        return Ok(d.get().ty);
    }
    if let Ok(ty) = obj.cast::<PyType>() {
        if ty.is(PyFloat::type_object(obj.py())) {
            return Ok(ScalarType::Double);
        }
        if ty.is(pyo3::types::PyBool::type_object(obj.py())) {
            return Ok(ScalarType::Bool);
        }
        if ty.is(PyInt::type_object(obj.py())) {
            return Ok(ScalarType::Long);
        }
    }
    Err(PyTypeError::new_err(format!(
        "dtype must be a switchyard.dtype, not {}",
        obj.get_type().name()?
    )))
}

/// `switchyard.device`.
#[pyclass(frozen, eq, hash, name = "device", module = "switchyard")]
#[derive(PartialEq, Eq, Hash)]
pub struct PyDevice {
    /// The device.
    pub device: Device,
}

#[pymethods]
impl PyDevice {
    /// `device("cpu")`, `device("cuda:1")`, `device("cpu", 0)`, `device(other_device)`.
    #[new]
    #[pyo3(signature = (r#type, index = None))]
    fn new(r#type: &Bound<'_, PyAny>, index: Option<i64>) -> PyResult<PyDevice> {
        crate::errors::guard(|| {
            let py = r#type.py();
            if let Ok(d) = r#type.cast::<PyDevice>() {
                return Ok(PyDevice {
                    device: d.get().device,
                });
            }
            let text: String = r#type.extract()?;
            let mut device = Device::parse(&text).or_raise(py)?;
            if let Some(i) = index {
                if device.index().is_some() {
                    return Err(PyRuntimeError::new_err(format!(
                        "type (string) must not include an index because index was passed explicitly: {text}"
                    )));
                }
                let i = u16::try_from(i).map_err(|_| {
                    PyRuntimeError::new_err(format!("Device index must not be negative, got {i}"))
                })?;
                device = Device::parse(&format!("{text}:{i}")).or_raise(py)?;
            }
            Ok(PyDevice { device })
        })
    }

    fn __repr__(&self) -> String {
        match self.device.index() {
            Some(i) => format!("device(type='{}', index={i})", self.device.kind().name()),
            None => format!("device(type='{}')", self.device.kind().name()),
        }
    }

    fn __str__(&self) -> String {
        self.device.to_string()
    }

    /// The device type, `'cpu'`.
    #[getter]
    fn r#type(&self) -> &'static str {
        self.device.kind().name()
    }

    /// The index, or `None`.
    #[getter]
    fn index(&self) -> Option<u16> {
        self.device.index()
    }
}

/// A device argument: a `device` object or a device string (`None` is the caller's).
pub fn device_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(d) = obj.cast::<PyDevice>() {
        return Ok(d.get().device);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Device::parse(s.to_str()?).or_raise(obj.py());
    }
    Err(PyTypeError::new_err(format!(
        "expected a device or a device string, not {}",
        obj.get_type().name()?
    )))
}

/// A device object, for a tensor's `device`.
pub fn device_object(py: Python<'_>, device: Device) -> PyResult<Bound<'_, PyDevice>> {
    Bound::new(py, PyDevice { device })
}

/// `switchyard.Size`, a `tuple` subclass defined in Python (CPython's tuples are variable-sized
/// objects, which a `#[pyclass]` cannot extend): `repr` `torch.Size([2, 3])`, slices and
/// concatenations stay `Size`, `numel()`.
const SIZE_SOURCE: &std::ffi::CStr = cr#"
class Size(tuple):
    """The shape of a tensor: a tuple of ints that prints as `torch.Size([2, 3])`."""

    __slots__ = ()

    def __repr__(self):
        return "torch.Size([" + ", ".join(repr(d) for d in self) + "])"

    __str__ = __repr__

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def numel(self):
        """The number of elements of a tensor of this shape."""
        n = 1
        for d in self:
            n *= d
        return n

    def __reduce__(self):
        return (Size, (tuple(self),))

Size.__module__ = "switchyard"
"#;

static SIZE_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The `Size` class.
pub fn size_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    SIZE_TYPE
        .get_or_try_init(py, || -> PyResult<Py<PyType>> {
            let module =
                PyModule::from_code(py, SIZE_SOURCE, c"switchyard/_size.py", c"switchyard._size")?;
            Ok(module.getattr("Size")?.cast_into::<PyType>()?.unbind())
        })
        .map(|t| t.bind(py))
}

/// `sizes` as a `Size`.
pub fn size_object<'py>(py: Python<'py>, sizes: &[i64]) -> PyResult<Bound<'py, PyAny>> {
    let tuple = PyTuple::new(py, sizes)?;
    size_type(py)?.call1((tuple,))
}

/// Whether `obj` is a `Size`, a `tuple` or a `list` (a shape given as one argument).
pub fn is_sequence(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>()
}

/// `switchyard.layout`: `switchyard.strided` (the only layout).
#[pyclass(frozen, eq, hash, name = "layout", module = "switchyard")]
#[derive(PartialEq, Eq, Hash)]
pub struct PyLayout {
    /// The layout.
    pub layout: switchyard_core::Layout,
}

#[pymethods]
impl PyLayout {
    fn __repr__(&self) -> &'static str {
        match self.layout {
            switchyard_core::Layout::Strided => "torch.strided",
        }
    }

    /// Pickles by name, as PyTorch's layouts do.
    fn __reduce__(&self) -> &'static str {
        "strided"
    }
}

/// `switchyard.memory_format`: `contiguous_format`, `preserve_format`, `channels_last`,
/// `channels_last_3d`.
#[pyclass(frozen, eq, hash, name = "memory_format", module = "switchyard")]
#[derive(PartialEq, Eq, Hash)]
pub struct PyMemoryFormat {
    /// The memory format.
    pub format: switchyard_core::MemoryFormat,
}

#[pymethods]
impl PyMemoryFormat {
    fn __repr__(&self) -> String {
        format!("torch.{}", self.format.name())
    }

    /// Pickles by name, as PyTorch's memory formats do.
    fn __reduce__(&self) -> &'static str {
        self.format.name()
    }
}

/// The module attributes of the layout and memory-format objects (`strided`,
/// `contiguous_format`, ...).
pub fn layout_and_format_objects(py: Python<'_>) -> PyResult<Vec<(&'static str, Py<PyAny>)>> {
    use switchyard_core::MemoryFormat as M;
    let mut out = vec![("strided", crate::tensor_ops::strided(py)?.into_any())];
    for format in [
        M::Contiguous,
        M::Preserve,
        M::ChannelsLast,
        M::ChannelsLast3d,
    ] {
        out.push((
            format.name(),
            Py::new(py, PyMemoryFormat { format })?.into_any(),
        ));
    }
    Ok(out)
}
