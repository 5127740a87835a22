//! The cost of the boxed CPU fallback against the same work written by hand, unboxed: for a
//! `[4]` float32 `exp` on the sidecar (an operator the sidecar has no kernel for),
//!
//! * `boxed`: `exp` through the dispatcher, which reaches the sidecar's fallback
//!   (`cpu_fallback`: schema facts, one batched `_to_cpu`, the CPU kernel by boxed
//!   redispatch, the result moved back);
//! * `unboxed`: the same transfers and CPU kernel called directly with typed arguments
//!   (`_to_cpu`, `exp` at the CPU key, `_to_copy` back).
//!
//! Run under callgrind to count instructions (repeatable whatever the machine is doing):
//!
//!     cargo build --release -p switchyard-sidecar --example fallback_cost
//!     valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!         target/release/examples/fallback_cost boxed 20000
//!
//! and compare the totals of `boxed`, `unboxed` and `none` (setup only) runs. Without
//! valgrind it prints the wall time per call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use switchyard_core::{DispatchKey, DispatchKeySet, Tensor};
use switchyard_ops::op;

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "boxed".to_owned());
    let n: u32 = args.next().map_or(10_000, |s| s.parse().unwrap());
    switchyard_sidecar::init().unwrap();
    let x =
        switchyard_sidecar::to_sidecar(&Tensor::from_slice(&[0.5f32, -1.0, 2.0, 0.25]).unwrap())
            .unwrap();
    let device = switchyard_sidecar::device();
    let cpu = DispatchKeySet::from_key(DispatchKey::CPU);
    let run_boxed = || op::exp::call(&x).unwrap();
    let run_unboxed = || {
        let on_cpu = op::_to_cpu::call(std::slice::from_ref(&x)).unwrap();
        let y = op::exp::redispatch(cpu, &on_cpu[0]).unwrap();
        op::_to_copy::call(&y, None, None, Some(device), None, false, None).unwrap()
    };
    // Warm up both paths (handle caches, allocator) before measuring.
    black_box(run_boxed());
    black_box(run_unboxed());
    let t0 = Instant::now();
    for _ in 0..n {
        match mode.as_str() {
            "boxed" => {
                black_box(run_boxed());
            }
            "unboxed" => {
                black_box(run_unboxed());
            }
            _ => {}
        }
    }
    let per_call = t0.elapsed().as_secs_f64() * 1e9 / f64::from(n.max(1));
    println!("{mode}: {n} calls, {per_call:.0} ns per call");
}
