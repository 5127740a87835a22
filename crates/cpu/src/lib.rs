//! CPU kernels of switchyard.
//!
//! Kernels are plain functions named as in `ops.yaml` ([`native`]); the generated
//! registration (`src/generated/`) installs them at the `CPU` key. Elementwise kernels run on
//! the engine in `loops` (broadcasting, dtype conversion, aliasing, threading above a size
//! threshold), reductions on `reduce_loops`; see `docs/kernels.md` for the conventions.

// The unit tests of this crate cover the engine (loops, reductions, vector math, random);
// the kernels are tested from `tests/` through the dispatcher. Leaving the kernels and their
// registration out of the unit-test build saves compiling them twice, once per target: most
// of this crate's share of `cargo test` build time. Engine items that only kernels use are
// then unused in that build.
#![cfg_attr(test, allow(dead_code, unused_imports, unused_macros))]

// Generated code keeps the generator's layout; `cargo fmt` must not make it stale.
#[cfg(not(test))]
#[rustfmt::skip]
mod generated;
pub mod fused;
pub(crate) mod loops;
pub(crate) mod math;
#[cfg(not(test))]
pub mod native;
pub(crate) mod num;
pub mod parallel;
pub(crate) mod random;
pub(crate) mod reduce_loops;
pub(crate) mod stream;
pub(crate) mod sum_simd;
