//! CPU kernels: factory operators.
