//! switchyard's operators.
//!
//! * `ops.yaml` (in this crate's directory) declares every operator in PyTorch's
//!   `native_functions.yaml` format;
//! * [`meta`] holds the meta functions of structured operators (shapes, dtypes, checks);
//! * [`native`] holds the kernels this crate implements: composites and Meta kernels;
//! * [`structured`] and [`iter_meta`] are the runtime helpers of structured kernels.
//!
//! See `docs/kernels.md` for how kernels are named and typed.

pub mod iter_meta;
pub mod meta;
pub mod native;
pub mod runtime;
pub mod structured;

// Generated code keeps the generator's layout; `cargo fmt` must not make it stale.
#[rustfmt::skip]
mod generated;

/// Typed handles of every operator overload (`op::add_Tensor::call(...)`), generated from `ops.yaml`.
pub mod op {
    pub use crate::generated::operators::*;
}
pub use generated::functions::*;
pub use generated::tensor_methods::TensorOps;
