//! CPU kernels: linalg operators.
