//! `Element`: the Rust types that tensor elements are stored as.

use crate::{Result, Scalar, ScalarType};
use bytemuck::Pod;
use half::{bf16, f16};

/// A Rust type that is the element type of some [`ScalarType`].
///
/// Elements are stored in storage bytes as their [`Element::Repr`], a plain-old-data type
/// (`bool` is stored as a `u8` holding 0 or 1, so that any byte pattern read back is valid).
pub trait Element: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    /// The dtype of this element type.
    const DTYPE: ScalarType;
    /// The in-memory representation.
    type Repr: Pod;
    /// Converts to the stored representation.
    fn to_repr(self) -> Self::Repr;
    /// Converts from the stored representation (any bit pattern is accepted).
    fn from_repr(r: Self::Repr) -> Self;
    /// The value as a [`Scalar`] (exact).
    fn to_scalar(self) -> Scalar;
    /// The value as `f64` (exact except for `i64`/`u64` beyond 2^53).
    fn to_f64(self) -> f64;
    /// The value as `i64` (exact for integers and bools; floats truncate toward zero and
    /// saturate).
    fn to_i64_lossy(self) -> i64;
    /// Converts `v` like C++'s `static_cast` (truncation toward zero, saturation for
    /// out-of-range floats to integers, rounding to nearest for narrower floats).
    fn from_f64_lossy(v: f64) -> Self;
    /// Converts an integer like C++'s `static_cast` (wrapping for narrower integers).
    fn from_i64_lossy(v: i64) -> Self;
    /// `Scalar::to<T>()`: converts with PyTorch's overflow check.
    fn from_scalar_checked(s: Scalar) -> Result<Self> {
        s.check_fits(Self::DTYPE)?;
        Ok(match s {
            Scalar::Bool(b) => Self::from_i64_lossy(i64::from(b)),
            Scalar::Int(i) => Self::from_i64_lossy(i),
            Scalar::Float(f) => Self::from_f64_lossy(f),
        })
    }
}

macro_rules! int_element {
    ($t:ty, $dtype:ident) => {
        impl Element for $t {
            const DTYPE: ScalarType = ScalarType::$dtype;
            type Repr = $t;
            #[inline]
            fn to_repr(self) -> $t {
                self
            }
            #[inline]
            fn from_repr(r: $t) -> Self {
                r
            }
            fn to_scalar(self) -> Scalar {
                Scalar::Int(i64::from(self))
            }
            #[inline]
            fn to_i64_lossy(self) -> i64 {
                i64::from(self)
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn from_f64_lossy(v: f64) -> Self {
                v as $t
            }
            #[inline]
            fn from_i64_lossy(v: i64) -> Self {
                v as $t
            }
        }
    };
}
int_element!(u8, Byte);
int_element!(i8, Char);
int_element!(i16, Short);
int_element!(i32, Int);
int_element!(i64, Long);

macro_rules! float_element {
    ($t:ty, $dtype:ident) => {
        impl Element for $t {
            const DTYPE: ScalarType = ScalarType::$dtype;
            type Repr = $t;
            #[inline]
            fn to_repr(self) -> $t {
                self
            }
            #[inline]
            fn from_repr(r: $t) -> Self {
                r
            }
            fn to_scalar(self) -> Scalar {
                Scalar::Float(f64::from(self))
            }
            #[inline]
            fn to_i64_lossy(self) -> i64 {
                self as i64
            }
            #[inline]
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            #[inline]
            fn from_f64_lossy(v: f64) -> Self {
                v as $t
            }
            #[inline]
            fn from_i64_lossy(v: i64) -> Self {
                v as $t
            }
        }
    };
}
float_element!(f32, Float);
float_element!(f64, Double);

macro_rules! half_element {
    ($t:ty, $dtype:ident) => {
        impl Element for $t {
            const DTYPE: ScalarType = ScalarType::$dtype;
            type Repr = $t;
            #[inline]
            fn to_repr(self) -> $t {
                self
            }
            #[inline]
            fn from_repr(r: $t) -> Self {
                r
            }
            fn to_scalar(self) -> Scalar {
                Scalar::Float(self.to_f64())
            }
            #[inline]
            fn to_i64_lossy(self) -> i64 {
                self.to_f64() as i64
            }
            #[inline]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            // Through `f32`, as C++'s `static_cast<c10::Half>(double)` goes (its constructors
            // take a float). `half`'s own `from_f64` truncates the low 32 bits of the double
            // first, which turns a value just above a rounding tie into the tie itself.
            #[inline]
            fn from_f64_lossy(v: f64) -> Self {
                <$t>::from_f32(v as f32)
            }
            #[inline]
            fn from_i64_lossy(v: i64) -> Self {
                <$t>::from_f32(v as f32)
            }
        }
    };
}
half_element!(f16, Half);
half_element!(bf16, BFloat16);

impl Element for bool {
    const DTYPE: ScalarType = ScalarType::Bool;
    type Repr = u8;
    #[inline]
    fn to_repr(self) -> u8 {
        u8::from(self)
    }
    #[inline]
    fn from_repr(r: u8) -> Self {
        r != 0
    }
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
    #[inline]
    fn to_i64_lossy(self) -> i64 {
        i64::from(self)
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    #[inline]
    fn from_f64_lossy(v: f64) -> Self {
        v != 0.0
    }
    #[inline]
    fn from_i64_lossy(v: i64) -> Self {
        v != 0
    }
}

/// Converts between element types as C++'s `static_cast` does (PyTorch's `copy_` and type
/// promotion semantics): floats go through `f64` (exact for every source float), everything
/// else through `i64` (exact for every source integer).
#[inline(always)]
pub fn convert<S: Element, D: Element>(s: S) -> D {
    if S::DTYPE.is_floating_point() {
        D::from_f64_lossy(s.to_f64())
    } else {
        D::from_i64_lossy(s.to_i64_lossy())
    }
}

/// Calls `$body` with `$T` bound to the Rust element type of `$dtype` (like
/// `AT_DISPATCH_ALL_TYPES_AND3(Half, BFloat16, Bool, ...)`).
#[macro_export]
macro_rules! dispatch_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::ScalarType::Byte => {
                type $T = u8;
                $body
            }
            $crate::ScalarType::Char => {
                type $T = i8;
                $body
            }
            $crate::ScalarType::Short => {
                type $T = i16;
                $body
            }
            $crate::ScalarType::Int => {
                type $T = i32;
                $body
            }
            $crate::ScalarType::Long => {
                type $T = i64;
                $body
            }
            $crate::ScalarType::Half => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::ScalarType::Float => {
                type $T = f32;
                $body
            }
            $crate::ScalarType::Double => {
                type $T = f64;
                $body
            }
            $crate::ScalarType::Bool => {
                type $T = bool;
                $body
            }
            $crate::ScalarType::BFloat16 => {
                type $T = $crate::half::bf16;
                $body
            }
        }
    };
}

/// Reads element `index` (in elements, not bytes) of type `T` from `bytes`.
///
/// Returns `None` when the element lies outside `bytes`.
#[inline]
pub fn read_element<T: Element>(bytes: &[u8], index: usize) -> Option<T> {
    let size = std::mem::size_of::<T::Repr>();
    let start = index.checked_mul(size)?;
    let raw = bytes.get(start..start.checked_add(size)?)?;
    Some(T::from_repr(bytemuck::pod_read_unaligned(raw)))
}

/// Writes element `index` of type `T` into `bytes`; returns `false` when out of bounds.
#[inline]
pub fn write_element<T: Element>(bytes: &mut [u8], index: usize, value: T) -> bool {
    let size = std::mem::size_of::<T::Repr>();
    let Some(start) = index.checked_mul(size) else {
        return false;
    };
    let Some(end) = start.checked_add(size) else {
        return false;
    };
    match bytes.get_mut(start..end) {
        Some(raw) => {
            raw.copy_from_slice(bytemuck::bytes_of(&value.to_repr()));
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_sizes_match_dtype_sizes() {
        fn check<T: Element>() {
            assert_eq!(std::mem::size_of::<T::Repr>(), T::DTYPE.element_size());
        }
        check::<u8>();
        check::<i8>();
        check::<i16>();
        check::<i32>();
        check::<i64>();
        check::<f16>();
        check::<bf16>();
        check::<f32>();
        check::<f64>();
        check::<bool>();
    }

    #[test]
    fn read_write_round_trip() {
        let mut buf = vec![0u8; 16];
        assert!(write_element(&mut buf, 1, 2.5f32));
        assert_eq!(read_element::<f32>(&buf, 1), Some(2.5));
        assert!(!write_element(&mut buf, 4, 1.0f32));
        assert_eq!(read_element::<f64>(&buf, 2), None);
        buf[0] = 7;
        assert_eq!(read_element::<bool>(&buf, 0), Some(true));
    }

    #[test]
    fn conversions_are_static_casts() {
        assert_eq!(convert::<f32, i32>(-2.7), -2);
        assert_eq!(convert::<i64, f32>(16_777_217), 16_777_216.0);
        assert_eq!(convert::<i64, i8>(300), 44);
        assert!(convert::<f64, bool>(0.1));
        assert!(!convert::<i32, bool>(0));
        assert_eq!(convert::<bool, f64>(true), 1.0);
        assert_eq!(convert::<f32, f16>(1.0).to_f64(), 1.0);
        // Just above a tie rounds up (the last f32 bit decides), exactly at it to even.
        let above_tie = |ulp_bits: i32| 1.0 + 2f32.powi(-ulp_bits - 1) + f32::EPSILON;
        assert_eq!(
            convert::<f32, bf16>(above_tie(7)).to_f64(),
            1.0 + 2f64.powi(-7)
        );
        assert_eq!(
            convert::<f32, f16>(above_tie(10)).to_f64(),
            1.0 + 2f64.powi(-10)
        );
        assert_eq!(convert::<f32, bf16>(1.0 + 2f32.powi(-8)).to_f64(), 1.0);
        assert_eq!(convert::<i64, bf16>(257).to_f64(), 256.0);
        assert_eq!(convert::<i64, bf16>(259).to_f64(), 260.0);
        assert_eq!(convert::<i64, i64>(i64::MAX), i64::MAX);
    }

    #[test]
    fn dispatch_macro_binds_types() {
        for dt in ScalarType::ALL {
            let size = dispatch_dtype!(dt, T => std::mem::size_of::<<T as Element>::Repr>());
            assert_eq!(size, dt.element_size());
        }
    }
}
