//! CPU kernels: reduce operators.
