//! Autograd behaviour through the public API (one test binary; modules by topic).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::redundant_closure,
    clippy::cloned_ref_to_slice_refs
)]

use switchyard_cpu as _;

mod basics;
mod behaviour;
mod coverage;
mod formulas;
mod graphs;
mod refusal;
mod semantics;
