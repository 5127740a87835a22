//! Unary pointwise operators (math functions, rounding, activations, classification).
