//! Composite and Meta kernels: nn operators.
