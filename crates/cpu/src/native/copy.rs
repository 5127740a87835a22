//! CPU kernels: copy operators.
