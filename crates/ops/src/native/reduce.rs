//! Composite and Meta kernels: reduce operators.
