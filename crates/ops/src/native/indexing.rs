//! Composite and Meta kernels: indexing operators.
