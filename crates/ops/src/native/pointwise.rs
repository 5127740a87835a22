//! Composite and Meta kernels: pointwise operators.
