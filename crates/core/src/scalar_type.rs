//! Element types (`ScalarType`, PyTorch's dtypes) and the `promote_types` lattice.

use crate::{Error, Result};
use std::fmt;

/// The element type of a tensor. Discriminants are PyTorch's `c10::ScalarType` values, so a
/// dtype boxed as an integer (as PyTorch's IValue does) means the same number here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ScalarType {
    /// `torch.uint8`
    Byte = 0,
    /// `torch.int8`
    Char = 1,
    /// `torch.int16`
    Short = 2,
    /// `torch.int32`
    Int = 3,
    /// `torch.int64`
    Long = 4,
    /// `torch.float16`
    Half = 5,
    /// `torch.float32`
    Float = 6,
    /// `torch.float64`
    Double = 7,
    /// `torch.bool`
    Bool = 11,
    /// `torch.bfloat16`
    BFloat16 = 15,
}

use ScalarType::*;

impl ScalarType {
    /// Every supported dtype, in PyTorch's enum order.
    pub const ALL: [ScalarType; 10] = [
        Byte, Char, Short, Int, Long, Half, Float, Double, Bool, BFloat16,
    ];

    /// Size of one element in bytes.
    pub const fn element_size(self) -> usize {
        match self {
            Byte | Char | Bool => 1,
            Short | Half | BFloat16 => 2,
            Int | Float => 4,
            Long | Double => 8,
        }
    }

    /// The name PyTorch's C++ code and schemas use (`Float`, `Long`, `BFloat16`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Byte => "Byte",
            Char => "Char",
            Short => "Short",
            Int => "Int",
            Long => "Long",
            Half => "Half",
            Float => "Float",
            Double => "Double",
            Bool => "Bool",
            BFloat16 => "BFloat16",
        }
    }

    /// The Python name without the `torch.` prefix (`float32`, `int64`, ...).
    pub const fn python_name(self) -> &'static str {
        match self {
            Byte => "uint8",
            Char => "int8",
            Short => "int16",
            Int => "int32",
            Long => "int64",
            Half => "float16",
            Float => "float32",
            Double => "float64",
            Bool => "bool",
            BFloat16 => "bfloat16",
        }
    }

    /// The Python repr, `torch.float32`.
    pub fn torch_name(self) -> String {
        format!("torch.{}", self.python_name())
    }

    /// The name PyTorch's `caffe2::TypeMeta` prints for this dtype (`float`, `long int`,
    /// `c10::Half`), as in "Expected out tensor to have dtype float, but got long int instead".
    pub const fn type_meta_name(self) -> &'static str {
        match self {
            Byte => "unsigned char",
            Char => "signed char",
            Short => "short int",
            Int => "int",
            Long => "long int",
            Half => "c10::Half",
            Float => "float",
            Double => "double",
            Bool => "bool",
            BFloat16 => "c10::BFloat16",
        }
    }

    /// The C++ type name PyTorch uses in conversion messages (`int64_t`, `float`,
    /// `c10::Half`): "value cannot be converted to type c10::Half without overflow".
    pub const fn cpp_type_name(self) -> &'static str {
        match self {
            Byte => "uint8_t",
            Char => "int8_t",
            Short => "int16_t",
            Int => "int",
            Long => "int64_t",
            Half => "c10::Half",
            Float => "float",
            Double => "double",
            Bool => "bool",
            BFloat16 => "c10::BFloat16",
        }
    }

    /// Parses any name PyTorch accepts for a dtype: `Float`, `float32`, `torch.float32`, and
    /// the Python aliases `float`, `double`, `half`, `long`, `int`, `short`.
    pub fn parse(name: &str) -> Result<ScalarType> {
        let bare = name.strip_prefix("torch.").unwrap_or(name);
        for t in Self::ALL {
            if bare == t.name() || bare == t.python_name() {
                return Ok(t);
            }
        }
        Ok(match bare {
            "float" => Float,
            "double" => Double,
            "half" => Half,
            "long" => Long,
            "int" => Int,
            "short" => Short,
            _ => return Err(Error::value(format!("unknown dtype '{name}'"))),
        })
    }

    /// The dtype with PyTorch enum value `v` (as a dtype boxed into an int).
    pub fn from_i64(v: i64) -> Option<ScalarType> {
        Self::ALL.into_iter().find(|t| *t as i64 == v)
    }

    /// `torch.is_floating_point`: Half, BFloat16, Float, Double.
    pub const fn is_floating_point(self) -> bool {
        matches!(self, Half | BFloat16 | Float | Double)
    }

    /// Integral types; `Bool` counts only when `include_bool`.
    pub const fn is_integral(self, include_bool: bool) -> bool {
        matches!(self, Byte | Char | Short | Int | Long) || (include_bool && matches!(self, Bool))
    }

    /// Complex types (none are supported yet; kept so promotion code reads like PyTorch's).
    pub const fn is_complex(self) -> bool {
        false
    }

    /// Signed types: every floating type and the signed integers.
    pub const fn is_signed(self) -> bool {
        !matches!(self, Byte | Bool)
    }

    /// Reduced-precision floats that compute in `f32` (`Half`, `BFloat16`).
    pub const fn is_reduced_float(self) -> bool {
        matches!(self, Half | BFloat16)
    }

    /// The type arithmetic is carried out in (`opmath_type`): `Float` for the 16-bit floats.
    pub const fn opmath(self) -> ScalarType {
        match self {
            Half | BFloat16 => Float,
            t => t,
        }
    }
}

impl fmt::Display for ScalarType {
    /// Prints the C++/schema name (`Float`), which is what PyTorch's error messages show.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Rank of a dtype within its category, used by [`promote_types`].
const fn float_rank(t: ScalarType) -> u8 {
    match t {
        Half | BFloat16 => 1,
        Float => 2,
        _ => 3,
    }
}

/// `torch.promote_types(a, b)`: the smallest dtype both `a` and `b` convert to without losing
/// their category (bool < integral < floating). Symmetric; `promote_types(a, a) == a`.
pub const fn promote_types(a: ScalarType, b: ScalarType) -> ScalarType {
    if a as u8 == b as u8 {
        return a;
    }
    match (a, b) {
        (Bool, other) | (other, Bool) => other,
        // The two 16-bit floats have no common 16-bit supertype.
        (Half, BFloat16) | (BFloat16, Half) => Float,
        _ if a.is_floating_point() && b.is_floating_point() => {
            if float_rank(a) >= float_rank(b) {
                a
            } else {
                b
            }
        }
        _ if a.is_floating_point() => a,
        _ if b.is_floating_point() => b,
        // Both integral from here on. uint8 and int8 meet at int16; uint8 with a wider
        // signed type gives the signed type.
        (Byte, Char) | (Char, Byte) => Short,
        (Byte, other) | (other, Byte) => other,
        _ => {
            if a.element_size() >= b.element_size() {
                a
            } else {
                b
            }
        }
    }
}

/// `torch.can_cast(from, to)`: PyTorch refuses float → integral and non-bool → bool casts
/// where a result is written into an existing tensor (in-place and `out=`).
pub const fn can_cast(from: ScalarType, to: ScalarType) -> bool {
    if from.is_floating_point() && to.is_integral(false) {
        return false;
    }
    if !matches!(from, Bool) && matches!(to, Bool) {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in ScalarType::ALL {
            assert_eq!(ScalarType::parse(t.name()).unwrap(), t);
            assert_eq!(ScalarType::parse(t.python_name()).unwrap(), t);
            assert_eq!(ScalarType::parse(&t.torch_name()).unwrap(), t);
            assert_eq!(ScalarType::from_i64(t as i64), Some(t));
        }
        assert_eq!(ScalarType::parse("double").unwrap(), Double);
        assert!(ScalarType::parse("complex64").is_err());
        assert_eq!(Float.to_string(), "Float");
    }

    #[test]
    fn promote_is_symmetric_and_idempotent() {
        for a in ScalarType::ALL {
            assert_eq!(promote_types(a, a), a);
            for b in ScalarType::ALL {
                assert_eq!(promote_types(a, b), promote_types(b, a));
            }
        }
    }

    #[test]
    fn can_cast_matches_pytorch() {
        assert!(!can_cast(Float, Long));
        assert!(can_cast(Long, Float));
        assert!(!can_cast(Long, Bool));
        assert!(can_cast(Bool, Long));
        assert!(can_cast(Double, Half));
    }
}
