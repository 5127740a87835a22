//! CPU kernels: indexing operators.
