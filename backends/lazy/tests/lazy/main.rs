//! The lazy backend's tests: lazy results against the same program run eagerly on the CPU,
//! cache counts across steps, the reference note's LTC cases (B.17) that fit this slice, and
//! errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

// The CPU kernel suites run here on lazy tensors (`cpu_suites.rs`); their fixture tests
// read this target.
mod cpu_suites;
use cpu_suites::LAZY_TARGET as TARGET;

mod asynchronous;
mod autograd;
mod cases;
mod compiler;
mod coverage;
mod demo;
mod dump;
mod executor;
mod ir;
mod lists;
mod memory;
mod property;
mod random_order;
mod reuse;
mod samples;
mod shape_cache;
mod trace_cost;
mod values;
