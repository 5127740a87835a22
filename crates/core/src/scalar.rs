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

    /// Whether converting to `dtype` would overflow, per PyTorch's `overflows<To, From>`
    /// (c10's `overflows.h`):
    ///
    /// * bools never overflow, and converting to bool never overflows;
    /// * integer → integer compares exactly; integer → unsigned also accepts negatives down
    ///   to `-max` (two's-complement wrap: `-1` into `uint8` is 255);
    /// * float → integral fails for NaN, infinities and values outside
    ///   `[lowest, 2^digits)`: the upper bound is `max + 1`, exactly representable, so a
    ///   value that truncates to `max` fits (`127.5` into `int8`) and `2^63` does not fit
    ///   `int64` (comparing with `max` as a double, which rounds up to `2^63`, let it
    ///   through);
    /// * float → float accepts infinities and NaN and checks the finite range.
    pub fn overflows(self, dtype: ScalarType) -> bool {
        if dtype == ScalarType::Bool {
            return false;
        }
        // The common case (`alpha=1`, small constants) fits every dtype: an int in int8's
        // range (uint8 wraps negative ints down to -255), a float in [0, 127] (uint8 refuses
        // negative floats). NaN fails the comparison.
        match self {
            Scalar::Int(i) if (-128..=127).contains(&i) => return false,
            Scalar::Float(f) if (0.0..=127.0).contains(&f) => return false,
            _ => {}
        }
        match self {
            Scalar::Bool(_) => false,
            Scalar::Int(i) => match integral_range(dtype) {
                Some((lowest, max)) => {
                    let i = i128::from(i);
                    if lowest == 0 {
                        // Unsigned: negatives wrap while |i| <= max.
                        i > max || i < -max
                    } else {
                        i < lowest || i > max
                    }
                }
                None => {
                    let (lowest, max) = float_range(dtype);
                    let v = i as f64;
                    v < lowest || v > max
                }
            },
            Scalar::Float(f) => match integral_range(dtype) {
                Some((lowest, max)) => {
                    // NaN fails both comparisons below, so it is checked first; infinities
                    // are out of range. Both bounds are exact doubles (0 or -2^k, 2^k).
                    let upper = (max + 1) as f64;
                    f.is_nan() || f < lowest as f64 || f >= upper
                }
                None => {
                    if f.is_infinite() || f.is_nan() {
                        return false;
                    }
                    let (lowest, max) = float_range(dtype);
                    f < lowest || f > max
                }
            },
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

/// `[lowest, max]` of an integral dtype (other than `Bool`), exactly; `None` for floating
/// dtypes.
fn integral_range(dtype: ScalarType) -> Option<(i128, i128)> {
    let (lowest, max): (i128, i128) = match dtype {
        ScalarType::Byte => (0, u8::MAX.into()),
        ScalarType::Char => (i8::MIN.into(), i8::MAX.into()),
        ScalarType::Short => (i16::MIN.into(), i16::MAX.into()),
        ScalarType::Int => (i32::MIN.into(), i32::MAX.into()),
        ScalarType::Long => (i64::MIN.into(), i64::MAX.into()),
        ScalarType::Bool => (0, 1),
        ScalarType::Half | ScalarType::BFloat16 | ScalarType::Float | ScalarType::Double => {
            return None;
        }
    };
    Some((lowest, max))
}

/// `[lowest, max]` of a floating dtype as `f64` (exact); `(0, 1)` for integral dtypes, which
/// [`integral_range`] serves instead.
fn float_range(dtype: ScalarType) -> (f64, f64) {
    match dtype {
        ScalarType::Half => (f64::from(f16::MIN), f64::from(f16::MAX)),
        ScalarType::BFloat16 => (f64::from(bf16::MIN), f64::from(bf16::MAX)),
        ScalarType::Float => (f64::from(f32::MIN), f64::from(f32::MAX)),
        ScalarType::Double => (f64::MIN, f64::MAX),
        _ => (0.0, 1.0),
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

    /// The bounds of float → integral conversions: `[lowest, max + 1)`, so a value that
    /// truncates to `max` fits and `max + 1` (`2^63` for `int64`, which `i64::MAX as f64`
    /// rounds up to) does not (c10's `overflows` compares with `2^digits`).
    #[test]
    fn float_to_integral_bounds_are_exact() {
        let two63 = 9_223_372_036_854_775_808.0;
        assert!(Scalar::Float(two63).overflows(ScalarType::Long));
        assert_eq!(
            Scalar::Float(two63).to::<i64>().unwrap_err().message(),
            "value cannot be converted to type int64_t without overflow"
        );
        assert!(Scalar::Float(-two63 * 1.0000001).overflows(ScalarType::Long));
        assert!(!Scalar::Float(-two63).overflows(ScalarType::Long));
        assert_eq!(Scalar::Float(-two63).to::<i64>().unwrap(), i64::MIN);
        // The largest double below 2^63 fits.
        let below = f64::from_bits(two63.to_bits() - 1);
        assert_eq!(Scalar::Float(below).to::<i64>().unwrap(), below as i64);
        assert!(Scalar::Float(2_147_483_648.0).overflows(ScalarType::Int));
        assert!(!Scalar::Float(2_147_483_647.5).overflows(ScalarType::Int));
        assert!(!Scalar::Float(127.5).overflows(ScalarType::Char));
        assert_eq!(Scalar::Float(127.5).to::<i8>().unwrap(), 127);
        assert!(Scalar::Float(128.0).overflows(ScalarType::Char));
        assert!(Scalar::Float(-128.5).overflows(ScalarType::Char));
        assert!(!Scalar::Float(255.9).overflows(ScalarType::Byte));
        assert!(Scalar::Float(256.0).overflows(ScalarType::Byte));
        assert!(Scalar::Float(f64::NEG_INFINITY).overflows(ScalarType::Short));
        assert!(Scalar::Float(f64::INFINITY).overflows(ScalarType::Long));
        // Integers compare exactly, at both ends of int64.
        assert!(!Scalar::Int(i64::MAX).overflows(ScalarType::Long));
        assert!(!Scalar::Int(i64::MIN).overflows(ScalarType::Long));
        assert!(Scalar::Int(i64::MIN).overflows(ScalarType::Int));
        assert!(Scalar::Int(300).overflows(ScalarType::Char));
        assert!(Scalar::Int(65_505).overflows(ScalarType::Half));
        assert!(!Scalar::Int(65_504).overflows(ScalarType::Half));
        assert_eq!(
            Scalar::Float(1e300)
                .to::<half::f16>()
                .unwrap_err()
                .message(),
            "value cannot be converted to type c10::Half without overflow"
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
