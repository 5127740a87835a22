//! `Scalar`: a number that is not a tensor (PyTorch's `c10::Scalar`).

use crate::element::Element;
use crate::{Error, Result, ScalarType};
use half::{bf16, f16};
use std::fmt;

/// A bool, an integer or a floating-point number, as passed for schema type `Scalar`.
///
/// Integers are kept exactly as `i64`; conversions to a dtype follow PyTorch's
/// `checked_convert`, failing with "value cannot be converted to type int8_t without
/// overflow" when the value does not fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
}

impl Scalar {
    /// The dtype a 0-dim tensor made from this scalar gets (`Bool`, `Long` or `Double`).
    pub fn dtype(self) -> ScalarType {
        match self {
            Scalar::Bool(_) => ScalarType::Bool,
            Scalar::Int(_) => ScalarType::Long,
            Scalar::Float(_) => ScalarType::Double,
        }
    }

    /// True for `Scalar::Float`.
    pub fn is_floating_point(self) -> bool {
        matches!(self, Scalar::Float(_))
    }

    /// True for `Scalar::Int` (PyTorch's `isIntegral(includeBool=false)`).
    pub fn is_integral(self) -> bool {
        matches!(self, Scalar::Int(_))
    }

    /// True for `Scalar::Bool`.
    pub fn is_boolean(self) -> bool {
        matches!(self, Scalar::Bool(_))
    }

    /// The value as `f64` (exact for bools and for integers up to 2^53).
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// The value as `i64`, truncating floats toward zero and saturating out-of-range ones.
    pub fn to_i64_lossy(self) -> i64 {
        match self {
            Scalar::Bool(b) => i64::from(b),
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }

    /// `value != 0` (NaN counts as true, like C++'s conversion to bool).
    pub fn to_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }

    /// Converts to element type `T`, failing when the value overflows it
    /// (PyTorch's `Scalar::to<T>()`).
    pub fn to<T: Element>(self) -> Result<T> {
        T::from_scalar_checked(self)
    }

    /// Whether converting to `dtype` would overflow, per PyTorch's `overflows<To, From>`.
    ///
    /// * bools never overflow, and converting to bool never overflows;
    /// * integer → unsigned also accepts negatives down to `-max` (two's-complement wrap);
    /// * float → integral fails for NaN, infinities and values outside `[lowest, max]`;
    /// * float → float accepts infinities and NaN and checks the finite range.
    pub fn overflows(self, dtype: ScalarType) -> bool {
        if dtype == ScalarType::Bool {
            return false;
        }
        let (lowest, max) = dtype_range(dtype);
        match self {
            Scalar::Bool(_) => false,
            Scalar::Int(i) => {
                if dtype.is_floating_point() {
                    let v = i as f64;
                    v < lowest || v > max
                } else if !dtype.is_signed() {
                    // i < 0 wraps: allowed while |i| <= max.
                    let max = max as i128;
                    let i = i128::from(i);
                    i > max || i < -max
                } else {
                    let i = i as f64;
                    i < lowest || i > max
                }
            }
            Scalar::Float(f) => {
                if dtype.is_floating_point() && f.is_infinite() {
                    return false;
                }
                if f.is_nan() {
                    return !dtype.is_floating_point();
                }
                f < lowest || f > max
            }
        }
    }

    /// Checks [`Scalar::overflows`] and returns PyTorch's error when it does.
    pub fn check_fits(self, dtype: ScalarType) -> Result<()> {
        if self.overflows(dtype) {
            return Err(Error::runtime(format!(
                "value cannot be converted to type {} without overflow",
                dtype.cpp_type_name()
            )));
        }
        Ok(())
    }

    /// `-self`, as PyTorch negates a Scalar (bools cannot be negated).
    pub fn checked_neg(self) -> Result<Scalar> {
        match self {
            Scalar::Bool(_) => Err(Error::runtime(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
            )),
            Scalar::Int(i) => Ok(Scalar::Int(i.wrapping_neg())),
            Scalar::Float(f) => Ok(Scalar::Float(-f)),
        }
    }
}

/// `[lowest, max]` of a dtype as `f64` (exact for every dtype except int64's max, which rounds
/// up to 2^63, the same comparison C++ makes after converting to double).
fn dtype_range(dtype: ScalarType) -> (f64, f64) {
    match dtype {
        ScalarType::Bool => (0.0, 1.0),
        ScalarType::Byte => (0.0, f64::from(u8::MAX)),
        ScalarType::Char => (f64::from(i8::MIN), f64::from(i8::MAX)),
        ScalarType::Short => (f64::from(i16::MIN), f64::from(i16::MAX)),
        ScalarType::Int => (f64::from(i32::MIN), f64::from(i32::MAX)),
        ScalarType::Long => (i64::MIN as f64, i64::MAX as f64),
        ScalarType::Half => (f64::from(f16::MIN), f64::from(f16::MAX)),
        ScalarType::BFloat16 => (f64::from(bf16::MIN), f64::from(bf16::MAX)),
        ScalarType::Float => (f64::from(f32::MIN), f64::from(f32::MAX)),
        ScalarType::Double => (f64::MIN, f64::MAX),
    }
}

impl fmt::Display for Scalar {
    /// Prints like Python prints the number (`True`, `3`, `2.5`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(true) => f.write_str("True"),
            Scalar::Bool(false) => f.write_str("False"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(v) => f.write_str(&crate::format::python_float_repr(*v)),
        }
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

macro_rules! scalar_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Scalar {
            fn from(v: $t) -> Self { Scalar::Int(i64::from(v)) }
        }
    )*};
}
scalar_from_int!(u8, i8, i16, i32, i64, u16, u32);

impl From<f32> for Scalar {
    fn from(v: f32) -> Self {
        Scalar::Float(f64::from(v))
    }
}
impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<f16> for Scalar {
    fn from(v: f16) -> Self {
        Scalar::Float(f64::from(v))
    }
}
impl From<bf16> for Scalar {
    fn from(v: bf16) -> Self {
        Scalar::Float(f64::from(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_accepts_negative_wrap() {
        assert!(!Scalar::Int(-255).overflows(ScalarType::Byte));
        assert!(Scalar::Int(-256).overflows(ScalarType::Byte));
        assert_eq!(Scalar::Int(-1).to::<u8>().unwrap(), 255);
        assert!(Scalar::Float(-0.5).overflows(ScalarType::Byte));
    }

    #[test]
    fn float_targets_accept_inf_and_nan() {
        assert!(!Scalar::Float(f64::INFINITY).overflows(ScalarType::Float));
        assert!(!Scalar::Float(f64::NAN).overflows(ScalarType::Float));
        assert!(Scalar::Float(3.5e38).overflows(ScalarType::Float));
        assert!(Scalar::Float(f64::NAN).overflows(ScalarType::Long));
        assert_eq!(
            Scalar::Int(128).to::<i8>().unwrap_err().message(),
            "value cannot be converted to type int8_t without overflow"
        );
    }

    #[test]
    fn display_like_python() {
        assert_eq!(Scalar::Bool(true).to_string(), "True");
        assert_eq!(Scalar::Int(-3).to_string(), "-3");
        assert_eq!(Scalar::Float(2.0).to_string(), "2.0");
        assert_eq!(Scalar::Float(1e-5).to_string(), "1e-05");
    }
}
