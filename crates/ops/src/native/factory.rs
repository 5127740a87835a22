//! Composite and Meta kernels: factory operators.
