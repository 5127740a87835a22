//! Composite and Meta kernels: linalg operators.
