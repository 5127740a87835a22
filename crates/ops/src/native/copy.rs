//! Composite and Meta kernels: copy operators.
