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
use pyo3::types::{PyBool, PyList, PyTuple};
use switchyard_call::data::tensor_from_data;
use switchyard_core::{Device, Element, Result, Scalar, ScalarType, Tensor};

use switchyard_autograd::AutogradTensor;
use switchyard_ops::op;

use crate::convert::data_to_lit;
use crate::errors::{OrRaise, guard};
use crate::tensor_ops::{self as ops, Operand};
use crate::types::{device_from_py, device_object, dtype_from_py, dtype_object, size_object};
use crate::{autograd, indexing};

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
    /// Whether this object is its tensor's registered Python object (`preserve.rs`): set once,
    /// when registered, and true until the object dies (only a dying object leaves the
    /// registry), so a view's call can skip the registry for a base already there.
    pub(crate) preserved: std::sync::atomic::AtomicBool,
}

impl PyTensor {
    /// A new Python-side handle on `t` (not registered).
    pub fn new(t: Tensor) -> PyTensor {
        PyTensor {
            t,
            preserved: std::sync::atomic::AtomicBool::new(false),
        }
    }
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
    /// `Tensor.__new__(cls, data)`: a new Python object of class `cls` (a subclass such as
    /// `nn.Parameter`) around the tensor `data`. What `Tensor._make_subclass` builds on;
    /// PyTorch's legacy `torch.Tensor(sizes or data)` constructor is not supported: use
    /// `switchyard.tensor` or the factories.
    #[new]
    #[pyo3(signature = (*args, **kwargs))]
    fn py_new(
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<Self> {
        match (args.len(), kwargs.map_or(0, |k| k.len())) {
            (1, 0) => {
                let data = args.get_item(0)?;
                if let Ok(t) = data.cast::<PyTensor>() {
                    return Ok(PyTensor::new(t.get().t.clone()));
                }
                Err(PyTypeError::new_err(format!(
                    "switchyard.Tensor(data) takes a tensor (got {}); use switchyard.tensor(data) for Python data",
                    data.get_type().name()?
                )))
            }
            _ => Err(PyTypeError::new_err(
                "switchyard.Tensor(...) takes one tensor; the legacy torch.Tensor(sizes) constructor is not supported: use switchyard.empty(sizes) or switchyard.tensor(data)",
            )),
        }
    }

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
        AutogradTensor::requires_grad_now(&self.t)
    }

    /// `t.requires_grad = flag`: only on leaves, only for floating-point tensors.
    #[setter]
    fn set_requires_grad(slf: &Bound<'_, Self>, requires_grad: bool) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        guard(|| {
            if !switchyard_autograd::is_leaf(&this.t) {
                let mut message =
                    "you can only change requires_grad flags of leaf variables.".to_owned();
                if !requires_grad {
                    message.push_str(" If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
                }
                return Err(PyRuntimeError::new_err(message));
            }
            if requires_grad && !this.t.dtype().is_floating_point() {
                return Err(PyRuntimeError::new_err(
                    "only Tensors of floating point and complex dtype can require gradients",
                ));
            }
            this.t.set_requires_grad(requires_grad).or_raise(py)?;
            if requires_grad {
                // It comes back as `node.variable`: one object for both.
                crate::preserve::register(py, slf.as_any());
            }
            Ok(())
        })
    }

    fn __len__(&self) -> PyResult<usize> {
        guard(|| {
            if self.t.dim() == 0 {
                return Err(PyTypeError::new_err("len() of a 0-d tensor"));
            }
            Ok(usize::try_from(self.t.sizes()[0]).unwrap_or(0))
        })
    }

    // ---- operators (tensor_ops.rs) ----

    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::tensor_op(py, &self.t, other, |a, b| {
                op::add_Tensor::call(a, b, 1.into())
            })
        })
    }

    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__add__(py, other)
    }

    fn __iadd__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| {
            ops::inplace_op(py, &self.t, &other, |a, b| {
                op::add__Tensor::call(a, b, 1.into())
            })
        })
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::tensor_op(py, &self.t, other, |a, b| {
                op::sub_Tensor::call(a, b, 1.into())
            })
        })
    }

    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| ops::tensor_op(py, &self.t, other, ops::rsub))
    }

    fn __isub__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| {
            ops::inplace_op(py, &self.t, &other, |a, b| {
                op::sub__Tensor::call(a, b, 1.into())
            })
        })
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| ops::tensor_op(py, &self.t, other, op::mul_Tensor::call))
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__mul__(py, other)
    }

    fn __imul__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| ops::inplace_op(py, &self.t, &other, op::mul__Tensor::call))
    }

    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| ops::tensor_op(py, &self.t, other, op::div_Tensor::call))
    }

    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| ops::tensor_op(py, &self.t, other, ops::rtruediv))
    }

    fn __itruediv__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| ops::inplace_op(py, &self.t, &other, op::div__Tensor::call))
    }

    fn __floordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| ops::tensor_op(py, &self.t, other, ops::floordiv))
    }

    fn __rfloordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| ops::tensor_op(py, &self.t, other, |a, b| ops::floordiv(b, a)))
    }

    fn __ifloordiv__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| ops::inplace_op(py, &self.t, &other, ops::ifloordiv))
    }

    fn __mod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(
                py,
                &self.t,
                other,
                op::remainder_Tensor::call,
                op::remainder_Scalar::call,
            )
        })
    }

    fn __rmod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(
                py,
                &self.t,
                other,
                |a, b| op::remainder_Tensor::call(b, a),
                |a, s| op::remainder_Scalar_Tensor::call(s, a),
            )
        })
    }

    fn __imod__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| {
            ops::inplace_scalar_or_tensor_op(
                py,
                &self.t,
                &other,
                op::remainder__Tensor::call,
                op::remainder__Scalar::call,
            )
        })
    }

    fn __pow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Ok(py.NotImplemented());
        }
        guard(|| {
            ops::scalar_or_tensor_op(
                py,
                &self.t,
                other,
                op::pow_Tensor_Tensor::call,
                op::pow_Tensor_Scalar::call,
            )
        })
    }

    fn __rpow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Ok(py.NotImplemented());
        }
        guard(|| {
            ops::scalar_or_tensor_op(
                py,
                &self.t,
                other,
                |a, b| op::pow_Tensor_Tensor::call(b, a),
                |a, s| op::pow_Scalar::call(s, a),
            )
        })
    }

    fn __ipow__(
        &self,
        py: Python<'_>,
        other: Operand,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        guard(|| {
            ops::inplace_scalar_or_tensor_op(
                py,
                &self.t,
                &other,
                op::pow__Tensor::call,
                op::pow__Scalar::call,
            )
        })
    }

    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.cast::<PyTensor>() {
            Ok(b) => guard(|| ops::wrap(py, op::matmul::call(&self.t, &b.get().t))),
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.cast::<PyTensor>() {
            Ok(b) => guard(|| ops::wrap(py, op::matmul::call(&b.get().t, &self.t))),
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    fn __and__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(
                py,
                &self.t,
                other,
                op::bitwise_and_Tensor::call,
                op::bitwise_and_Scalar::call,
            )
        })
    }

    fn __rand__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__and__(py, other)
    }

    fn __iand__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| {
            ops::inplace_scalar_or_tensor_op(
                py,
                &self.t,
                &other,
                op::bitwise_and__Tensor::call,
                op::bitwise_and__Scalar::call,
            )
        })
    }

    fn __or__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(
                py,
                &self.t,
                other,
                op::bitwise_or_Tensor::call,
                op::bitwise_or_Scalar::call,
            )
        })
    }

    fn __ror__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__or__(py, other)
    }

    fn __ior__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| {
            ops::inplace_scalar_or_tensor_op(
                py,
                &self.t,
                &other,
                op::bitwise_or__Tensor::call,
                op::bitwise_or__Scalar::call,
            )
        })
    }

    fn __xor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(
                py,
                &self.t,
                other,
                op::bitwise_xor_Tensor::call,
                op::bitwise_xor_Scalar::call,
            )
        })
    }

    fn __rxor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.__xor__(py, other)
    }

    fn __ixor__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| {
            ops::inplace_scalar_or_tensor_op(
                py,
                &self.t,
                &other,
                op::bitwise_xor__Tensor::call,
                op::bitwise_xor__Scalar::call,
            )
        })
    }

    fn __lshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::tensor_op(py, &self.t, other, |a, b| {
                ops::shift(a, b, ops::Shift::Left)
            })
        })
    }

    fn __rlshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::tensor_op(py, &self.t, other, |a, b| {
                ops::shift_reflected(a, b, ops::Shift::Left)
            })
        })
    }

    fn __ilshift__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| {
            ops::inplace_op(py, &self.t, &other, |a, b| {
                ops::ishift(a, b, ops::Shift::Left)
            })
        })
    }

    fn __rshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::tensor_op(py, &self.t, other, |a, b| {
                ops::shift(a, b, ops::Shift::Right)
            })
        })
    }

    fn __rrshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::tensor_op(py, &self.t, other, |a, b| {
                ops::shift_reflected(a, b, ops::Shift::Right)
            })
        })
    }

    fn __irshift__(&self, py: Python<'_>, other: Operand) -> PyResult<()> {
        guard(|| {
            ops::inplace_op(py, &self.t, &other, |a, b| {
                ops::ishift(a, b, ops::Shift::Right)
            })
        })
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(py, &self.t, other, op::eq_Tensor::call, op::eq_Scalar::call)
        })
    }

    fn __ne__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(py, &self.t, other, op::ne_Tensor::call, op::ne_Scalar::call)
        })
    }

    fn __lt__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(py, &self.t, other, op::lt_Tensor::call, op::lt_Scalar::call)
        })
    }

    fn __le__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(py, &self.t, other, op::le_Tensor::call, op::le_Scalar::call)
        })
    }

    fn __gt__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(py, &self.t, other, op::gt_Tensor::call, op::gt_Scalar::call)
        })
    }

    fn __ge__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            ops::scalar_or_tensor_op(py, &self.t, other, op::ge_Tensor::call, op::ge_Scalar::call)
        })
    }

    /// Identity hash, as PyTorch's `Tensor.__hash__` (`id(self)`).
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        guard(|| ops::neg(py, &self.t))
    }

    fn __pos__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        guard(|| {
            ops::check_pos(&slf.get().t)?;
            Ok(slf.clone())
        })
    }

    fn __abs__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        guard(|| ops::wrap(py, op::abs::call(&self.t)))
    }

    fn __invert__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        guard(|| ops::invert(py, &self.t))
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        guard(|| ops::truth(py, &self.t))
    }

    fn __int__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(|| ops::to_int(py, &self.t))
    }

    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        guard(|| ops::to_float(py, &self.t))
    }

    fn __index__(&self, py: Python<'_>) -> PyResult<i64> {
        guard(|| ops::to_index(py, &self.t))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(|| ops::iterate(py, &self.t))
    }

    /// The dimensions reversed.
    #[getter(T)]
    fn numpy_t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        guard(|| ops::numpy_t(py, &self.t))
    }

    /// The last two dimensions swapped.
    #[getter(mT)]
    fn matrix_t(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        guard(|| ops::matrix_t(py, &self.t))
    }

    /// The memory layout (`switchyard.strided`).
    #[getter]
    fn layout(&self, py: Python<'_>) -> PyResult<Py<crate::types::PyLayout>> {
        ops::strided(py)
    }

    /// The version counter, bumped by every in-place change of the tensor or its views.
    #[getter]
    fn _version(&self) -> u32 {
        self.t.version()
    }

    // ---- indexing (indexing.rs) ----

    fn __getitem__(slf: &Bound<'_, Self>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        guard(|| {
            let py = slf.py();
            let (indices, single) = indexing::indices_of(index)?;
            let result = indexing::get_item(&slf.get().t, &indices, single);
            if let Ok(r) = &result {
                crate::preserve::note_view_of(py, r, [slf.as_any()]);
            }
            ops::wrap(py, result)
        })
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        guard(|| {
            let value = indexing::value_of(&self.t, value)?;
            let (indices, single) = indexing::indices_of(index)?;
            indexing::set_item(&self.t, &indices, &value, single).or_raise(py)
        })
    }

    fn __delitem__(&self, _index: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(PyTypeError::new_err(
            "Tensor does not support deleting items",
        ))
    }

    // ---- autograd (autograd.rs) ----

    /// Whether the tensor is a leaf of the autograd graph (not produced by a recorded
    /// operation).
    #[getter]
    fn is_leaf(&self) -> bool {
        switchyard_autograd::is_leaf(&self.t)
    }

    /// The node that produced this tensor, or `None` for a leaf.
    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Option<autograd::PyNode>> {
        guard(|| {
            Ok(switchyard_autograd::grad_fn(&self.t)
                .or_raise(py)?
                .map(|f| autograd::PyNode::new(f, None)))
        })
    }

    /// The accumulated gradient. Reading it on a non-leaf that does not retain its gradient
    /// warns, as PyTorch does (backward never fills it).
    #[getter]
    fn grad<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let g = AutogradTensor::grad(&self.t);
        if g.is_none()
            && !switchyard_autograd::is_leaf(&self.t)
            && !AutogradTensor::retains_grad(&self.t)
        {
            ops::warn(
                py,
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.",
            )?;
        }
        // The same Python object while the gradient lives (preserve.rs).
        g.map(|t| crate::preserve::wrap(py, t)).transpose()
    }

    #[setter]
    fn set_grad(&self, py: Python<'_>, grad: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        guard(|| {
            // `p.grad = g; p.grad is g`, as in PyTorch.
            if let Some(g) = grad
                && g.is_instance_of::<PyTensor>()
            {
                crate::preserve::register(py, g);
            }
            let g = match grad {
                None => None,
                Some(g) if g.is_none() => None,
                Some(g) => match g.cast::<PyTensor>() {
                    Ok(t) => Some(t.get().t.clone()),
                    Err(_) => {
                        return Err(PyTypeError::new_err(format!(
                            "assigned grad expected to be a Tensor or None but got grad of type {}",
                            crate::convert::type_name(g)
                        )));
                    }
                },
            };
            AutogradTensor::set_grad(&self.t, g).or_raise(py)
        })
    }

    /// The tensor this view views (`None` for a tensor that is not a view), the same Python
    /// object each time and the base's own object when it has one registered.
    #[getter]
    fn _base<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(|| {
            switchyard_autograd::view::base(&self.t)
                .map(|b| crate::preserve::wrap(py, b))
                .transpose()
        })
    }

    /// Whether this tensor is a view of another (`_base` is not `None`).
    fn _is_view(&self) -> bool {
        switchyard_autograd::view::is_view(&self.t)
    }

    /// Keeps this non-leaf's gradient in `.grad` after backward.
    fn retain_grad(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| AutogradTensor::retain_grad(&self.t).or_raise(py))
    }

    /// Whether `retain_grad()` was called on this non-leaf.
    #[getter]
    fn retains_grad(&self) -> bool {
        AutogradTensor::retains_grad(&self.t)
    }

    /// Registers `hook(grad)`, run when this tensor's gradient is computed; a tensor it
    /// returns replaces the gradient.
    fn register_hook(
        &self,
        py: Python<'_>,
        hook: Py<PyAny>,
    ) -> PyResult<autograd::RemovableHandle> {
        guard(|| autograd::register_hook(py, &self.t, hook))
    }

    /// `backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)`, as
    /// `switchyard.autograd.backward(self, gradient, ...)`.
    #[pyo3(signature = (gradient = None, retain_graph = None, create_graph = false, inputs = None))]
    fn backward(
        slf: &Bound<'_, Self>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        py.import("switchyard.autograd")?
            .getattr("backward")?
            .call1((slf, gradient, retain_graph, create_graph, py.None(), inputs))?;
        Ok(())
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
            let obj = Bound::new(py, PyTensor::new(t))?;
            crate::preserve::register(py, obj.as_any());
            return Ok(obj);
        }
        Bound::new(py, PyTensor::new(t))
    })
}
