//! Binary pointwise operators (arithmetic, comparison, logical, bitwise), where and clamp.
