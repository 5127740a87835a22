//! CPU kernels: nn operators.
