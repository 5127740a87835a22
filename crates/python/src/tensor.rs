//! `switchyard.Tensor`: a Python object holding one core [`Tensor`] handle, with PyTorch's
//! attributes (`shape`, `dtype`, `device`, `requires_grad`) and its printing, and
//! `switchyard.tensor(data, ...)`. Methods are added at import: the generated ones and the
//! hand-written `size()`, `stride()`, `dim()`, `numel()`, `item()`, `tolist()`, ...
//! (`bindings.rs`, `handwritten.rs`), all through PyTorch's argument parser.
//!
//! The class is `frozen`: a core tensor is an immutable handle (its geometry sits in a
//! sequence lock and its data behind `access.rs`), so `&self` serves every method, in-place
//! operations included, and no borrow flag is needed. `subclass` lets Python derive from it
//! (`nn.Parameter`), `dict` and `weakref` give instances PyTorch's `__dict__` and weak
//! references.

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyList};
use switchyard_call::data::tensor_from_data;
use switchyard_core::{Device, Element, Result, Scalar, ScalarType, Tensor};

use crate::convert::data_to_lit;
use crate::errors::{OrRaise, guard};
use crate::types::{device_from_py, device_object, dtype_from_py, dtype_object, size_object};

/// `switchyard.Tensor`.
#[pyclass(
    frozen,
    subclass,
    weakref,
    dict,
    name = "Tensor",
    module = "switchyard"
)]
pub struct PyTensor {
    /// The tensor.
    pub t: Tensor,
}

/// The values of `t` in row-major order, each as a [`Scalar`] of its dtype's kind.
pub fn tensor_scalars(t: &Tensor) -> Result<Vec<Scalar>> {
    switchyard_core::dispatch_dtype!(t.dtype(), T => {
        Ok(t.to_vec::<T>()?.into_iter().map(Element::to_scalar).collect())
    })
}

pub(crate) fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<Bound<'_, PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any(),
    })
}

pub(crate) fn nest<'py>(
    py: Python<'py>,
    sizes: &[i64],
    values: &mut impl Iterator<Item = Scalar>,
) -> PyResult<Bound<'py, PyAny>> {
    match sizes.split_first() {
        None => match values.next() {
            Some(s) => scalar_to_py(py, s),
            None => Ok(PyList::empty(py).into_any()),
        },
        Some((&n, rest)) => {
            let items = (0..n)
                .map(|_| nest(py, rest, values))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, items)?.into_any())
        }
    }
}

#[pymethods]
impl PyTensor {
    fn __repr__(&self) -> PyResult<String> {
        guard(|| Ok(switchyard_core::format::tensor_repr(&self.t)))
    }

    fn __str__(&self) -> PyResult<String> {
        self.__repr__()
    }

    /// The shape, a `Size`.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(|| size_object(py, &self.t.sizes()))
    }

    /// The number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.t.dim()
    }

    /// The offset of the first element in the storage, in elements.
    fn storage_offset(&self) -> i64 {
        self.t.storage_offset()
    }

    /// The size of one element in bytes.
    fn element_size(&self) -> usize {
        self.t.element_size()
    }

    /// The dtype object.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(dtype_object(py, self.t.dtype())?.into_any())
    }

    /// The device object.
    #[getter]
    fn device<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(device_object(py, self.t.device())?.into_any())
    }

    /// Whether the tensor is on the meta device.
    #[getter]
    fn is_meta(&self) -> bool {
        self.t.is_meta()
    }

    /// Whether autograd records operations on this tensor.
    #[getter]
    fn requires_grad(&self) -> bool {
        self.t.requires_grad()
    }

    #[setter]
    fn set_requires_grad(&self, py: Python<'_>, requires_grad: bool) -> PyResult<()> {
        guard(|| self.t.set_requires_grad(requires_grad).or_raise(py))
    }

    fn __len__(&self) -> PyResult<usize> {
        guard(|| {
            if self.t.dim() == 0 {
                return Err(PyTypeError::new_err("len() of a 0-d tensor"));
            }
            Ok(usize::try_from(self.t.sizes()[0]).unwrap_or(0))
        })
    }
}

/// `switchyard.tensor(data, *, dtype=None, device=None, requires_grad=False)`: a new tensor
/// from nested lists and tuples of numbers (or a tensor, copied), with `torch.tensor`'s dtype
/// inference and range checks.
#[pyfunction]
#[pyo3(signature = (data, *, dtype = None, device = None, requires_grad = false))]
pub fn tensor<'py>(
    data: &Bound<'py, PyAny>,
    dtype: Option<&Bound<'py, PyAny>>,
    device: Option<&Bound<'py, PyAny>>,
    requires_grad: bool,
) -> PyResult<Bound<'py, PyTensor>> {
    let py = data.py();
    guard(|| {
        let mut dtype: Option<ScalarType> = match dtype {
            Some(d) if !d.is_none() => Some(dtype_from_py(d)?),
            _ => None,
        };
        if dtype.is_none()
            && let Ok(t) = data.cast::<PyTensor>()
        {
            dtype = Some(t.get().t.dtype());
        }
        let device: Device = match device {
            Some(d) if !d.is_none() => device_from_py(d)?,
            _ => Device::CPU,
        };
        let lit = data_to_lit(data)?;
        let t = tensor_from_data(&lit, dtype, device).or_raise(py)?;
        if requires_grad {
            // `internal_new_from_data`'s own check, worded as it words it.
            if !t.dtype().is_floating_point() {
                return Err(PyRuntimeError::new_err(
                    "Only Tensors of floating point and complex dtype can require gradients",
                ));
            }
            t.set_requires_grad(true).or_raise(py)?;
        }
        Bound::new(py, PyTensor { t })
    })
}
