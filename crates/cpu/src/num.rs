//! Arithmetic on compute types, and dispatch from a dtype to its compute type.

use switchyard_core::Element;

/// A type kernels compute in: every dtype except the 16-bit floats, which compute in `f32`.
/// Integer arithmetic wraps like C++'s; `bool` arithmetic is logical (`add` is or, `mul` is
/// and).
pub(crate) trait Num: Element + PartialOrd {
    /// Floating-point compute type.
    const IS_FLOAT: bool;
    /// 0.
    fn zero() -> Self;
    /// 1.
    fn one() -> Self;
    /// `self + o`.
    fn add(self, o: Self) -> Self;
    /// `self - o`.
    fn sub(self, o: Self) -> Self;
    /// `self * o`.
    fn mul(self, o: Self) -> Self;
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const IS_FLOAT: bool = false;
            #[inline(always)] fn zero() -> Self { 0 }
            #[inline(always)] fn one() -> Self { 1 }
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
        }
    )*};
}
int_num!(u8, i8, i16, i32, i64);

macro_rules! float_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const IS_FLOAT: bool = true;
            #[inline(always)] fn zero() -> Self { 0.0 }
            #[inline(always)] fn one() -> Self { 1.0 }
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn sub(self, o: Self) -> Self { self - o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
        }
    )*};
}
float_num!(f32, f64);

impl Num for bool {
    const IS_FLOAT: bool = false;
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
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self & o
    }
}

/// Binds `$C` to the compute type of `$dtype` (`f32` for `Half`/`BFloat16`) and evaluates
/// `$body` (PyTorch's `AT_DISPATCH_ALL_TYPES_AND3` with `opmath_t`).
macro_rules! dispatch_compute {
    ($dtype:expr, $C:ident => $body:expr) => {
        match $dtype {
            switchyard_core::ScalarType::Byte => { type $C = u8; $body }
            switchyard_core::ScalarType::Char => { type $C = i8; $body }
            switchyard_core::ScalarType::Short => { type $C = i16; $body }
            switchyard_core::ScalarType::Int => { type $C = i32; $body }
            switchyard_core::ScalarType::Long => { type $C = i64; $body }
            switchyard_core::ScalarType::Half
            | switchyard_core::ScalarType::BFloat16
            | switchyard_core::ScalarType::Float => { type $C = f32; $body }
            switchyard_core::ScalarType::Double => { type $C = f64; $body }
            switchyard_core::ScalarType::Bool => { type $C = bool; $body }
        }
    };
}
pub(crate) use dispatch_compute;
