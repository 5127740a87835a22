//! Composite and Meta kernels: views operators.
