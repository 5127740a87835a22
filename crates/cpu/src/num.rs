//! Arithmetic on compute types, and dispatch from a dtype to its compute type.
//!
//! * [`Num`]: every compute type (`bool`, the integers, `f32`, `f64`);
//! * [`Arith`]: the numeric ones (no `bool`): negation, division, powers, rounding, ...;
//! * [`Bits`]: the integers and `bool`: bitwise operations;
//! * `math::Float`: `f32` and `f64`, with the transcendental functions.
//!
//! Integer arithmetic wraps like C++'s does in practice (PyTorch's results for overflowing
//! integer operations are the wrapped ones).

use switchyard_core::Element;

/// A type kernels compute in: every dtype except the 16-bit floats, which compute in `f32`.
/// Integer arithmetic wraps like C++'s; `bool` arithmetic is logical (`add` is or, `mul` is
/// and).
pub(crate) trait Num: Element + PartialOrd {
    /// 0.
    fn zero() -> Self;
    /// 1.
    fn one() -> Self;
    /// `self + o`.
    fn add(self, o: Self) -> Self;
    /// `self * o`.
    fn mul(self, o: Self) -> Self;
    /// The larger value; NaN if either is NaN (`torch.maximum`).
    fn maximum(self, o: Self) -> Self;
    /// The smaller value; NaN if either is NaN (`torch.minimum`).
    fn minimum(self, o: Self) -> Self;
    /// Whether the value is NaN (never for integers and bools).
    #[inline(always)]
    fn is_nan_(self) -> bool {
        false
    }
    /// `self != 0` (C++'s conversion to bool; NaN is true).
    #[inline(always)]
    fn truthy(self) -> bool {
        self != Self::zero()
    }
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline(always)] fn zero() -> Self { 0 }
            #[inline(always)] fn one() -> Self { 1 }
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn maximum(self, o: Self) -> Self { if self < o { o } else { self } }
            #[inline(always)] fn minimum(self, o: Self) -> Self { if o < self { o } else { self } }
        }
    )*};
}
int_num!(u8, i8, i16, i32, i64);

macro_rules! float_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline(always)] fn zero() -> Self { 0.0 }
            #[inline(always)] fn one() -> Self { 1.0 }
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                let m = if self < o { o } else { self };
                if self.is_nan() || o.is_nan() { <$t>::NAN } else { m }
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                let m = if o < self { o } else { self };
                if self.is_nan() || o.is_nan() { <$t>::NAN } else { m }
            }
            #[inline(always)] fn is_nan_(self) -> bool { self.is_nan() }
        }
    )*};
}
float_num!(f32, f64);

impl Num for bool {
    #[inline(always)]
    fn zero() -> Self {
        false
    }
    #[inline(always)]
    fn one() -> Self {
        true
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn maximum(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn minimum(self, o: Self) -> Self {
        self & o
    }
}

/// Numeric compute types (integers and floats, not `bool`). Integer division and remainder
/// by zero are the caller's to rule out (PyTorch raises `ZeroDivisionError`); here they return
/// 0.
pub(crate) trait Arith: Num {
    /// `-self` (wrapping).
    fn neg(self) -> Self;
    /// `|self|` (wrapping for the minimum integer; identity for unsigned).
    fn abs(self) -> Self;
    /// Division rounding toward zero.
    fn div_trunc(self, o: Self) -> Self;
    /// Division rounding toward negative infinity (Python's `//`).
    fn div_floor(self, o: Self) -> Self;
    /// Remainder with the sign of the divisor (Python's `%`).
    fn rem_floor(self, o: Self) -> Self;
    /// Remainder with the sign of the dividend (C's `fmod`).
    fn rem_trunc(self, o: Self) -> Self;
    /// `self ^ o` (integers: exponentiation by squaring, PyTorch's `powi`).
    fn pow(self, o: Self) -> Self;
    /// Rounding toward negative infinity (identity for integers).
    fn floor(self) -> Self;
    /// Rounding toward positive infinity (identity for integers).
    fn ceil(self) -> Self;
    /// Rounding half to even (identity for integers).
    fn round(self) -> Self;
    /// Rounding toward zero (identity for integers).
    fn trunc(self) -> Self;
}

macro_rules! int_arith {
    ($signed:expr; $($t:ty),*) => {$(
        // `x < 0` is always false for `u8`; the signed and unsigned types share this code.
        #[allow(unused_comparisons)]
        impl Arith for $t {
            #[inline(always)] fn neg(self) -> Self { self.wrapping_neg() }
            #[inline(always)]
            fn abs(self) -> Self {
                if $signed && self < 0 { self.wrapping_neg() } else { self }
            }
            #[inline(always)]
            fn div_trunc(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_div(o) } }
            #[inline(always)]
            fn div_floor(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let q = self.wrapping_div(o);
                let r = self.wrapping_rem(o);
                let signs_differ = (self < 0) != (o < 0);
                if signs_differ && r != 0 { q.wrapping_sub(1) } else { q }
            }
            #[inline(always)]
            fn rem_floor(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(o);
                let fix = r != 0 && ((r < 0) != (o < 0));
                if fix { r.wrapping_add(o) } else { r }
            }
            #[inline(always)]
            fn rem_trunc(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_rem(o) } }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                if o < 0 {
                    // PyTorch's powi for negative exponents: only ±1 survive.
                    return if self == 1 {
                        1
                    } else if $signed && self == (0 as $t).wrapping_sub(1) {
                        if o & 1 == 0 { 1 } else { self }
                    } else {
                        0
                    };
                }
                let (mut base, mut exp, mut acc) = (self, o, 1 as $t);
                while exp != 0 {
                    if exp & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    exp >>= 1;
                }
                acc
            }
            #[inline(always)] fn floor(self) -> Self { self }
            #[inline(always)] fn ceil(self) -> Self { self }
            #[inline(always)] fn round(self) -> Self { self }
            #[inline(always)] fn trunc(self) -> Self { self }
        }
    )*};
}
int_arith!(false; u8);
int_arith!(true; i8, i16, i32, i64);

macro_rules! float_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn neg(self) -> Self { -self }
            #[inline(always)] fn abs(self) -> Self { <$t>::abs(self) }
            #[inline(always)] fn div_trunc(self, o: Self) -> Self { (self / o).trunc() }
            #[inline(always)]
            fn div_floor(self, o: Self) -> Self {
                // PyTorch's div_floor_floating (Python's float floor division).
                if o == 0.0 {
                    return self / o;
                }
                let m = self % o;
                let mut div = (self - m) / o;
                if m != 0.0 && ((o < 0.0) != (m < 0.0)) {
                    div -= 1.0;
                }
                if div != 0.0 {
                    let fl = div.floor();
                    if div - fl > 0.5 { fl + 1.0 } else { fl }
                } else {
                    (0.0 as $t).copysign(self / o)
                }
            }
            #[inline(always)]
            fn rem_floor(self, o: Self) -> Self {
                let m = self % o;
                if m != 0.0 && ((o < 0.0) != (m < 0.0)) { m + o } else { m }
            }
            #[inline(always)] fn rem_trunc(self, o: Self) -> Self { self % o }
            #[inline(always)] fn pow(self, o: Self) -> Self { self.powf(o) }
            #[inline(always)] fn floor(self) -> Self { <$t>::floor(self) }
            #[inline(always)] fn ceil(self) -> Self { <$t>::ceil(self) }
            #[inline(always)] fn round(self) -> Self { self.round_ties_even() }
            #[inline(always)] fn trunc(self) -> Self { <$t>::trunc(self) }
        }
    )*};
}
float_arith!(f32, f64);

/// Integer and `bool` compute types: bitwise operations.
pub(crate) trait Bits: Num {
    /// `self & o`.
    fn and(self, o: Self) -> Self;
    /// `self | o`.
    fn or(self, o: Self) -> Self;
    /// `self ^ o`.
    fn xor(self, o: Self) -> Self;
    /// `!self` (logical not for `bool`).
    fn not(self) -> Self;
}

macro_rules! bits {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            #[inline(always)] fn and(self, o: Self) -> Self { self & o }
            #[inline(always)] fn or(self, o: Self) -> Self { self | o }
            #[inline(always)] fn xor(self, o: Self) -> Self { self ^ o }
            #[inline(always)] fn not(self) -> Self { !self }
        }
    )*};
}
bits!(bool, u8, i8, i16, i32, i64);

/// Binds `$C` to the compute type of `$dtype` (`f32` for `Half`/`BFloat16`) and evaluates
/// `$body` (PyTorch's `AT_DISPATCH_ALL_TYPES_AND3` with `opmath_t`).
macro_rules! dispatch_compute {
    ($dtype:expr, $C:ident => $body:expr) => {
        match $dtype {
            switchyard_core::ScalarType::Byte => {
                type $C = u8;
                $body
            }
            switchyard_core::ScalarType::Char => {
                type $C = i8;
                $body
            }
            switchyard_core::ScalarType::Short => {
                type $C = i16;
                $body
            }
            switchyard_core::ScalarType::Int => {
                type $C = i32;
                $body
            }
            switchyard_core::ScalarType::Long => {
                type $C = i64;
                $body
            }
            switchyard_core::ScalarType::Half
            | switchyard_core::ScalarType::BFloat16
            | switchyard_core::ScalarType::Float => {
                type $C = f32;
                $body
            }
            switchyard_core::ScalarType::Double => {
                type $C = f64;
                $body
            }
            switchyard_core::ScalarType::Bool => {
                type $C = bool;
                $body
            }
        }
    };
}
pub(crate) use dispatch_compute;

/// Like [`dispatch_compute!`] over a subset of dtypes, returning PyTorch's
/// `"<name>" not implemented for '<dtype>'` error for the others. The subset is one of
/// `float` (the four floating dtypes), `int` (the five integer dtypes), `int_bool`,
/// `numeric` (all but `Bool`) and `all`.
macro_rules! dispatch_subset {
    (float, $dtype:expr, $name:expr, $C:ident => $body:expr) => {
        match $dtype {
            switchyard_core::ScalarType::Half
            | switchyard_core::ScalarType::BFloat16
            | switchyard_core::ScalarType::Float => { type $C = f32; $body }
            switchyard_core::ScalarType::Double => { type $C = f64; $body }
            other => Err($crate::num::not_implemented($name, other)),
        }
    };
    (int, $dtype:expr, $name:expr, $C:ident => $body:expr) => {
        match $dtype {
            switchyard_core::ScalarType::Byte => { type $C = u8; $body }
            switchyard_core::ScalarType::Char => { type $C = i8; $body }
            switchyard_core::ScalarType::Short => { type $C = i16; $body }
            switchyard_core::ScalarType::Int => { type $C = i32; $body }
            switchyard_core::ScalarType::Long => { type $C = i64; $body }
            other => Err($crate::num::not_implemented($name, other)),
        }
    };
    (int_bool, $dtype:expr, $name:expr, $C:ident => $body:expr) => {
        match $dtype {
            switchyard_core::ScalarType::Bool => { type $C = bool; $body }
            other => $crate::num::dispatch_subset!(int, other, $name, $C => $body),
        }
    };
    (numeric, $dtype:expr, $name:expr, $C:ident => $body:expr) => {
        match $dtype {
            switchyard_core::ScalarType::Half
            | switchyard_core::ScalarType::BFloat16
            | switchyard_core::ScalarType::Float => { type $C = f32; $body }
            switchyard_core::ScalarType::Double => { type $C = f64; $body }
            other => $crate::num::dispatch_subset!(int, other, $name, $C => $body),
        }
    };
    (all, $dtype:expr, $name:expr, $C:ident => $body:expr) => {
        $crate::num::dispatch_compute!($dtype, $C => $body)
    };
}
pub(crate) use dispatch_subset;

/// PyTorch's error for a dtype a kernel does not support (`AT_DISPATCH`'s message).
pub(crate) fn not_implemented(
    name: &str,
    dtype: switchyard_core::ScalarType,
) -> switchyard_core::Error {
    switchyard_core::Error::not_implemented(format!(
        "\"{name}\" not implemented for '{}'",
        dtype.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_rounds_like_python() {
        assert_eq!(Arith::div_floor(7i32, -2), -4);
        assert_eq!(Arith::div_floor(-7i32, 2), -4);
        assert_eq!(Arith::div_trunc(-7i32, 2), -3);
        assert_eq!(Arith::rem_floor(-7i32, 3), 2);
        assert_eq!(Arith::rem_floor(7i32, -3), -2);
        assert_eq!(Arith::rem_trunc(-7i32, 3), -1);
        assert_eq!(Arith::div_trunc(i64::MIN, -1), i64::MIN);
    }

    #[test]
    fn float_division_rounds_like_python() {
        assert_eq!(Arith::div_floor(7.5f64, -2.0), -4.0);
        assert_eq!(
            Arith::div_floor(-0.0f64, 3.0).to_bits(),
            (-0.0f64).to_bits()
        );
        assert_eq!(Arith::rem_floor(5.0f32, -3.0), -1.0);
        assert!(Arith::rem_floor(1.0f32, 0.0).is_nan());
        assert_eq!(Arith::div_floor(1.0f32, 0.0), f32::INFINITY);
    }

    #[test]
    fn powers_and_extrema() {
        assert_eq!(Arith::pow(3i32, 4), 81);
        assert_eq!(Arith::pow(-1i32, -3), -1);
        assert_eq!(Arith::pow(-1i32, -2), 1);
        assert_eq!(Arith::pow(2i32, -1), 0);
        assert_eq!(Arith::pow(200u8, 2), 64);
        // Called through the traits: the inherent `i8::abs` panics on overflow in debug
        // builds, and `f32::maximum` is an unstable inherent method that would shadow ours.
        assert!(Num::maximum(f32::NAN, 1.0).is_nan());
        assert!(Num::minimum(1.0f64, f64::NAN).is_nan());
        assert!(Num::maximum(true, false));
        assert_eq!(Arith::abs(-128i8), -128);
    }
}
