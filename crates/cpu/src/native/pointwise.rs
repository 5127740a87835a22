//! CPU kernels: pointwise operators.
