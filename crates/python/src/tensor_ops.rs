//! The operators of `switchyard.Tensor` (`+`, `-=`, `<`, `~`, `@`, `int(t)`, `iter(t)`, ...)
//! and the attributes computed from the tensor (`T`, `mT`, `layout`), with PyTorch's results,
//! type promotion and messages (docs/python-plan.md §4.2).
//!
//! The binary operators take a typed fast path: the other operand is a tensor, or a Python
//! `bool` / `int` / `float` made a *wrapped number* ([`Tensor::wrapped_scalar`]), which is what
//! PyTorch's argument parser makes of a number, so type promotion treats it as PyTorch does
//! (`int_tensor + 2.5` is float32, `float16_tensor * 2` stays float16). For any other operand
//! a binary operator returns `NotImplemented` (an in-place one fails [`Operand`]'s extraction,
//! which pyo3 turns into `NotImplemented`): Python then tries the reflected method and finally
//! raises its own `unsupported operand type(s)` TypeError, and `t == None` is `False`, as in
//! PyTorch.
//!
//! Where PyTorch's parser picks a `Scalar` overload for a number (`pow`, `remainder`, the
//! comparisons, the bitwise operators) the same overload is called, so the recorded
//! `grad_fn` is PyTorch's (`PowBackward0`, not `PowBackward1`).

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use switchyard_core::{Result, Scalar, Tensor};
use switchyard_ops::op;

use crate::convert::py_scalar;
use crate::errors::OrRaise;
use crate::tensor::PyTensor;

/// The other operand of a binary operator: a tensor or a Python number.
pub enum Operand {
    /// A tensor.
    Tensor(Tensor),
    /// A `bool`, `int` or `float`.
    Number(Scalar),
    /// An `int` in [2^63, 2^64): PyTorch's parser makes it a uint64 scalar.
    Unsigned(u64),
    /// An `int` beyond uint64 (or below int64).
    Overflow,
}

impl<'a, 'py> FromPyObject<'a, 'py> for Operand {
    type Error = PyErr;

    /// For the in-place operators: a failed extraction is `NotImplemented` to pyo3.
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Operand::of(&obj)?.ok_or_else(|| PyTypeError::new_err("not a tensor or a number"))
    }
}

impl Operand {
    /// `obj` as an operand; `None` for anything but a tensor or a Python number (the caller
    /// returns `NotImplemented` without building an exception).
    pub fn of(obj: &Bound<'_, PyAny>) -> PyResult<Option<Operand>> {
        if let Ok(t) = obj.cast::<PyTensor>() {
            return Ok(Some(Operand::Tensor(t.get().t.clone())));
        }
        Ok(match py_scalar(obj) {
            Ok(Some(s)) => Some(Operand::Number(s)),
            Ok(None) => None,
            Err(_) => Some(
                obj.extract::<u64>()
                    .map_or(Operand::Overflow, Operand::Unsigned),
            ),
        })
    }

    /// The operand as a tensor (a number as a wrapped number), `a` being the tensor operand.
    fn tensor(&self, a: &Tensor) -> PyResult<Tensor> {
        match self {
            Operand::Tensor(t) => Ok(t.clone()),
            _ => Tensor::wrapped_scalar(self.scalar(a)?)
                .map_err(|e| PyRuntimeError::new_err(e.message().to_owned())),
        }
    }

    /// The number as a [`Scalar`], `a` being the tensor operand. A uint64 number (we have no
    /// uint64 scalar) is what PyTorch computes with it: its int64 bits with an integral tensor,
    /// its value with a floating-point one.
    fn scalar(&self, a: &Tensor) -> PyResult<Scalar> {
        match self {
            Operand::Number(s) => Ok(*s),
            Operand::Unsigned(u) if a.dtype().is_floating_point() => Ok(Scalar::Float(*u as f64)),
            Operand::Unsigned(u) => Ok(Scalar::Int(*u as i64)),
            Operand::Tensor(_) | Operand::Overflow => Err(overflow()),
        }
    }
}

/// PyTorch's error for an integer beyond uint64 (`PyLong_AsUnsignedLongLong`'s).
fn overflow() -> PyErr {
    pyo3::exceptions::PyOverflowError::new_err("int too big to convert")
}

/// A new Python tensor for the result of `r`.
pub fn wrap(py: Python<'_>, r: Result<Tensor>) -> PyResult<Py<PyAny>> {
    let t = r.or_raise(py)?;
    Ok(Bound::new(py, PyTensor::new(t))?.into_any().unbind())
}

/// `self (op) other` through the Tensor overload (numbers as wrapped numbers).
pub fn tensor_op(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    f: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor> + Send,
) -> PyResult<Py<PyAny>> {
    let Some(other) = Operand::of(other)? else {
        return Ok(py.NotImplemented());
    };
    let b = other.tensor(a)?;
    let release = crate::gil::worth_releasing(&[a, &b]);
    wrap(py, crate::gil::run(py, release, || f(a, &b)))
}

/// `self (op) other` through the Tensor overload for a tensor and the Scalar overload for a
/// number, as PyTorch's parser chooses between them.
pub fn scalar_or_tensor_op(
    py: Python<'_>,
    a: &Tensor,
    other: &Bound<'_, PyAny>,
    with_tensor: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor> + Send,
    with_scalar: impl FnOnce(&Tensor, Scalar) -> Result<Tensor> + Send,
) -> PyResult<Py<PyAny>> {
    match Operand::of(other)? {
        None => Ok(py.NotImplemented()),
        Some(Operand::Tensor(b)) => {
            let release = crate::gil::worth_releasing(&[a, &b]);
            wrap(py, crate::gil::run(py, release, || with_tensor(a, &b)))
        }
        Some(other) => {
            let s = other.scalar(a)?;
            let release = crate::gil::worth_releasing(&[a]);
            wrap(py, crate::gil::run(py, release, || with_scalar(a, s)))
        }
    }
}

/// An in-place operator (`+=`): the operator's in-place overload; Python keeps `self`.
pub fn inplace_op(
    py: Python<'_>,
    a: &Tensor,
    other: &Operand,
    with_tensor: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor> + Send,
) -> PyResult<()> {
    let b = other.tensor(a)?;
    let release = crate::gil::worth_releasing(&[a, &b]);
    crate::gil::run(py, release, || with_tensor(a, &b))
        .or_raise(py)
        .map(|_| ())
}

/// An in-place operator with a Scalar overload for numbers (`**=`, `%=`, `&=`, ...).
pub fn inplace_scalar_or_tensor_op(
    py: Python<'_>,
    a: &Tensor,
    other: &Operand,
    with_tensor: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor> + Send,
    with_scalar: impl FnOnce(&Tensor, Scalar) -> Result<Tensor> + Send,
) -> PyResult<()> {
    let r = match other {
        Operand::Tensor(b) => {
            let release = crate::gil::worth_releasing(&[a, b]);
            crate::gil::run(py, release, || with_tensor(a, b))
        }
        _ => {
            let s = other.scalar(a)?;
            crate::gil::run(py, crate::gil::worth_releasing(&[a]), || with_scalar(a, s))
        }
    };
    r.or_raise(py).map(|_| ())
}

/// `other - self` (`Tensor.__rsub__`; PyTorch calls `rsub(self, other)`, which computes the
/// same with the same promotion and checks).
pub fn rsub(a: &Tensor, other: &Tensor) -> Result<Tensor> {
    op::sub_Tensor::call(other, a, Scalar::Int(1))
}

/// `other / self` as `torch/_tensor.py` computes it: `self.reciprocal() * other`.
pub fn rtruediv(a: &Tensor, other: &Tensor) -> Result<Tensor> {
    let r = op::reciprocal::call(a)?;
    op::mul_Tensor::call(&r, other)
}

/// `self // other` (`floor_divide`: division rounded toward negative infinity).
pub fn floordiv(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    op::div_Tensor_mode::call(a, b, Some("floor"))
}

/// `self //= other`.
pub fn ifloordiv(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    op::div__Tensor_mode::call(a, b, Some("floor"))
}

/// `-self`.
pub fn neg(py: Python<'_>, a: &Tensor) -> PyResult<Py<PyAny>> {
    wrap(py, op::neg::call(a))
}

/// `+self`: `self` itself, refused for bool tensors as PyTorch's `positive` refuses them.
pub fn check_pos(a: &Tensor) -> PyResult<()> {
    if a.dtype() == switchyard_core::ScalarType::Bool {
        return Err(pyo3::exceptions::PyNotImplementedError::new_err(
            "The `+` operator, on a bool tensor is not supported.",
        ));
    }
    Ok(())
}

/// `~self`: bitwise not, only for integral and bool tensors.
pub fn invert(py: Python<'_>, a: &Tensor) -> PyResult<Py<PyAny>> {
    if !a.dtype().is_integral(true) {
        return Err(PyTypeError::new_err(
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors",
        ));
    }
    wrap(py, op::bitwise_not::call(a))
}

/// `bool(self)`: the value of a one-element tensor, refused for others with PyTorch's words.
pub fn truth(py: Python<'_>, a: &Tensor) -> PyResult<bool> {
    match a.numel() {
        0 => Err(PyRuntimeError::new_err(
            "Boolean value of Tensor with no values is ambiguous",
        )),
        1 => Ok(match a.item_scalar().or_raise(py)? {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }),
        _ => Err(PyRuntimeError::new_err(
            "Boolean value of Tensor with more than one value is ambiguous",
        )),
    }
}

fn single_value(py: Python<'_>, a: &Tensor) -> PyResult<Scalar> {
    if a.numel() != 1 {
        return Err(PyValueError::new_err(
            "only one element tensors can be converted to Python scalars",
        ));
    }
    a.item_scalar().or_raise(py)
}

/// `int(self)`: a one-element tensor's value, truncated toward zero.
pub fn to_int<'py>(py: Python<'py>, a: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    Ok(match single_value(py, a)? {
        Scalar::Bool(b) => i64::from(b).into_pyobject(py)?.into_any(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any(),
        // Python's own `int(float)`: exact for any finite value, its errors for nan and inf.
        Scalar::Float(f) => py.get_type::<pyo3::types::PyInt>().call1((f,))?.into_any(),
    })
}

/// `float(self)`.
pub fn to_float(py: Python<'_>, a: &Tensor) -> PyResult<f64> {
    Ok(match single_value(py, a)? {
        Scalar::Bool(b) => f64::from(u8::from(b)),
        // `float(int)` as Python rounds it.
        Scalar::Int(i) => i as f64,
        Scalar::Float(f) => f,
    })
}

/// `operator.index(self)`: only one-element integral (or bool) tensors are indices.
pub fn to_index(py: Python<'_>, a: &Tensor) -> PyResult<i64> {
    if a.numel() != 1 || !a.dtype().is_integral(true) {
        return Err(PyTypeError::new_err(
            "only integer tensors of a single element can be converted to an index",
        ));
    }
    Ok(match a.item_scalar().or_raise(py)? {
        Scalar::Bool(b) => i64::from(b),
        Scalar::Int(i) => i,
        Scalar::Float(f) => f as i64,
    })
}

/// `iter(self)`: the sub-tensors along dimension 0 (`iter(self.unbind(0))`).
pub fn iterate<'py>(py: Python<'py>, a: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    if a.dim() == 0 {
        return Err(PyTypeError::new_err("iteration over a 0-d tensor"));
    }
    let parts = op::unbind_int::call(a, 0).or_raise(py)?;
    let items = parts
        .into_iter()
        .map(|t| Bound::new(py, PyTensor::new(t)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, items)?.as_any().try_iter()?.into_any())
}

/// `self.T`: the dimensions reversed (the identity on 0-d and 1-d tensors, where PyTorch
/// also warns that this use is deprecated).
pub fn numpy_t(py: Python<'_>, a: &Tensor) -> PyResult<Py<PyAny>> {
    let n = a.dim();
    if n != 2 && n != 0 {
        warn(
            py,
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it will throw an error in a future release. Consider `x.mT` to transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
        )?;
    } else if n == 0 {
        warn(
            py,
            "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
        )?;
    }
    let dims: Vec<i64> = (0..n as i64).rev().collect();
    wrap(py, op::permute::call(a, &dims))
}

/// `self.mT`: the last two dimensions swapped.
pub fn matrix_t(py: Python<'_>, a: &Tensor) -> PyResult<Py<PyAny>> {
    match a.dim() {
        0 => {
            warn(
                py,
                "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.",
            )?;
            wrap(py, op::alias::call(a))
        }
        1 => Err(PyRuntimeError::new_err(
            "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.",
        )),
        _ => wrap(py, op::transpose_int::call(a, -2, -1)),
    }
}

/// Emits a `UserWarning`.
pub fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    let text = std::ffi::CString::new(message)
        .map_err(|_| PyRuntimeError::new_err("warning text holds a NUL byte"))?;
    PyErr::warn(py, &category, &text, 1)
}

static STRIDED: pyo3::sync::PyOnceLock<Py<crate::types::PyLayout>> = pyo3::sync::PyOnceLock::new();

/// The one `switchyard.strided` object (`switchyard.layout`, in `types.rs`).
pub fn strided(py: Python<'_>) -> PyResult<Py<crate::types::PyLayout>> {
    STRIDED
        .get_or_try_init(py, || {
            Py::new(
                py,
                crate::types::PyLayout {
                    layout: switchyard_core::Layout::Strided,
                },
            )
        })
        .map(|l| l.clone_ref(py))
}

/// Which shift: `<<` or `>>`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shift {
    /// `<<` (`__lshift__`).
    Left,
    /// `>>` (`__rshift__`).
    Right,
}

/// `a << b` / `a >> b` for integral tensors, as PyTorch's `lshift` / `rshift` kernels compute
/// them (ops.yaml has no shift operator, so this composes existing ones): the result has the
/// promoted dtype; `<<` is `a * 2^b` wrapping (the bits shifted out are lost), 0 for a shift
/// below 0 or of the width or more; `>>` is `floor(a / 2^b)` (an arithmetic shift), with a
/// shift below 0 or beyond the width taken as the width (less one for signed types).
/// Powers of two are taken at most `2^(width - 2)` (signed) or `2^(width - 1)` at a time,
/// so no intermediate value overflows.
pub fn shift(a: &Tensor, b: &Tensor, which: Shift) -> Result<Tensor> {
    use switchyard_core::promotion::{PromotionArg, result_type};
    let dtype =
        result_type(&[PromotionArg::Tensor(a), PromotionArg::Tensor(b)]).unwrap_or(a.dtype());
    if !dtype.is_integral(false) {
        let kernel = match which {
            Shift::Left => "lshift_cpu",
            Shift::Right => "rshift_cpu",
        };
        return Err(switchyard_core::Error::not_implemented(format!(
            "\"{kernel}\" not implemented for '{}'",
            dtype.name()
        )));
    }
    let to = |t: &Tensor| op::_to_copy::call(t, Some(dtype), None, None, None, false, None);
    let (a, b) = (to(a)?, to(b)?);
    let bits = 8 * dtype.element_size() as i64;
    let signed = !matches!(dtype, switchyard_core::ScalarType::Byte);
    let cap = if signed { bits - 2 } else { bits - 1 };
    let negative = op::lt_Scalar::call(&b, Scalar::Int(0))?;
    // The shift, with out-of-range amounts mapped to what the kernels do with them.
    let limit = match which {
        Shift::Left => bits - 1,
        Shift::Right => bits - i64::from(signed),
    };
    let amount = op::masked_fill_Scalar::call(&b, &negative, Scalar::Int(limit))?;
    let amount = op::clamp_max::call(&amount, Scalar::Int(limit))?;
    let first = op::clamp_max::call(&amount, Scalar::Int(cap))?;
    let rest = op::sub_Tensor::call(&amount, &first, Scalar::Int(1))?;
    let two = Scalar::Int(2);
    let (p1, p2) = (
        op::pow_Scalar::call(two, &first)?,
        op::pow_Scalar::call(two, &rest)?,
    );
    match which {
        Shift::Left => {
            let r = op::mul_Tensor::call(&op::mul_Tensor::call(&a, &p1)?, &p2)?;
            let too_far = op::ge_Scalar::call(&b, Scalar::Int(bits))?;
            let out_of_range = op::logical_or::call(&negative, &too_far)?;
            op::masked_fill_Scalar::call(&r, &out_of_range, Scalar::Int(0))
        }
        Shift::Right => {
            let q = op::div_Tensor_mode::call(&a, &p1, Some("floor"))?;
            op::div_Tensor_mode::call(&q, &p2, Some("floor"))
        }
    }
}

/// `other << self` / `other >> self` (the reflected operators).
pub fn shift_reflected(a: &Tensor, b: &Tensor, which: Shift) -> Result<Tensor> {
    shift(b, a, which)
}

/// `self <<= other` / `self >>= other`: the shift written back into `self` (`copy_`, which
/// refuses a result dtype `self` cannot hold as PyTorch's in-place kernels do).
pub fn ishift(a: &Tensor, b: &Tensor, which: Shift) -> Result<Tensor> {
    use switchyard_core::promotion::{PromotionArg, result_type};
    // The in-place kernels check the cast before the dtype of the computation.
    let dtype =
        result_type(&[PromotionArg::Tensor(a), PromotionArg::Tensor(b)]).unwrap_or(a.dtype());
    if !switchyard_core::can_cast(dtype, a.dtype()) {
        return Err(switchyard_core::Error::runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            dtype.name(),
            a.dtype().name()
        )));
    }
    let r = shift(a, b, which)?;
    op::copy_::call(a, &r, false)
}
