//! CPU kernels of switchyard.
//!
//! Kernels are plain functions named as in `ops.yaml` ([`native`]); the generated
//! registration (`src/generated/`) installs them at the `CPU` key. Elementwise kernels run on
//! the engine in `loops` (broadcasting, dtype conversion, aliasing, threading above a size
//! threshold), reductions on `reduce_loops`; see `docs/kernels.md` for the conventions.

// Generated code keeps the generator's layout; `cargo fmt` must not make it stale.
#[rustfmt::skip]
mod generated;
pub(crate) mod loops;
pub(crate) mod math;
pub mod native;
pub(crate) mod num;
pub(crate) mod random;
pub(crate) mod reduce_loops;
