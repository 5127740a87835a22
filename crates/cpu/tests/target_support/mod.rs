//! The device a suite's fixture cases run on (plan §8.2). The CPU suites run them on CPU
//! tensors; the lazy backend's test binary includes the same suite files and runs them on
//! lazy tensors, synced by `mark_step`, against the same expected values and errors.
//!
//! The including test root declares the hooks as `crate::TARGET` (a CPU suite:
//! `use support::CPU_TARGET as TARGET;`). They are a tuple of function pointers rather than a
//! struct so that every copy of this module (each suite includes its own) names one type.

#![allow(dead_code)]

use std::any::Any;
use std::cell::Cell;

use switchyard_core::{Result, Tensor};

/// `(name, to_device, sync, to_host, serial, known_difference)`: the target's name; a copy of
/// a host tensor on the target (same sizes, strides, offset and overlap); what makes pending
/// work run (lazy: `mark_step`, whose errors are the call's errors); a result back on the host
/// with its sizes and strides; a guard serialising the test (process-wide device state); for
/// a case (its name or label, and its fixture entry), why the target may not give PyTorch's
/// eager answer (`None`: it must).
pub type TargetHooks = (
    &'static str,
    fn(&Tensor) -> Result<Tensor>,
    fn() -> Result<()>,
    fn(&Tensor) -> Result<Tensor>,
    fn() -> Box<dyn Any>,
    fn(&str, &serde_json::Value) -> Option<&'static str>,
);

/// The CPU: fixture tensors as they are, nothing to sync, nothing to serialise.
pub const CPU_TARGET: TargetHooks = (
    "cpu",
    |t| Ok(t.clone()),
    || Ok(()),
    |t| Ok(t.clone()),
    || Box::new(()),
    |_, _| None,
);

thread_local! {
    /// Whether fixture tensors built now go to the target (inside [`with_target`]).
    static PLACING: Cell<bool> = const { Cell::new(false) };
}

/// The target's name (`"cpu"`, `"lazy"`).
pub fn target_name() -> &'static str {
    crate::TARGET.0
}

/// The target's device (where [`placed`] moves tensors): factories name it.
pub fn target_device() -> switchyard_core::Device {
    let probe = Tensor::from_vec(Vec::<f32>::new(), &[0]).expect("an empty tensor");
    (crate::TARGET.1)(&probe)
        .unwrap_or_else(|e| panic!("moving a tensor to {}: {e}", target_name()))
        .device()
}

/// Whether the suite runs on the CPU (tests that need host memory or call kernels directly
/// run only there).
pub fn on_cpu() -> bool {
    target_name() == "cpu"
}

/// `t`, moved to the target when called inside [`with_target`].
pub fn placed(t: Tensor) -> Tensor {
    if PLACING.get() {
        (crate::TARGET.1)(&t)
            .unwrap_or_else(|e| panic!("moving a fixture tensor to {}: {e}", target_name()))
    } else {
        t
    }
}

/// Runs `f` with the fixture tensors it builds placed on the target.
pub fn with_target<R>(f: impl FnOnce() -> R) -> R {
    let previous = PLACING.replace(true);
    let r = f();
    PLACING.set(previous);
    r
}

/// Syncs the target (its errors are the call's) and brings `results` to the host. Off the CPU,
/// an error's legacy type strings of Meta tensors (`MetaFloatType`: shape inference runs the
/// Meta kernels) are spelled as the CPU's (`torch.FloatTensor`).
pub fn finish(results: Result<Vec<Tensor>>) -> Result<Vec<Tensor>> {
    let synced = results.and_then(|results| {
        (crate::TARGET.2)()?;
        results.iter().map(|t| (crate::TARGET.3)(t)).collect()
    });
    if on_cpu() {
        return synced;
    }
    synced.map_err(|e| {
        let mut message = e.message().to_owned();
        for dtype in switchyard_core::ScalarType::ALL {
            message = message.replace(
                &format!("Meta{}Type", dtype.name()),
                &format!("torch.{}Tensor", dtype.name()),
            );
        }
        switchyard_core::Error::new(e.kind(), message)
    })
}

/// Why the target may differ from PyTorch's eager answer for `case` (named `name`; the
/// including root's list; `None` on the CPU). Suites skip such cases on that target.
pub fn known_difference(name: &str, case: &serde_json::Value) -> Option<&'static str> {
    (crate::TARGET.5)(name, case)
}

/// [`finish`] for one result.
pub fn finish_one(result: Result<Tensor>) -> Result<Tensor> {
    Ok(finish(result.map(|t| vec![t]))?.remove(0))
}

/// One fixture case run on the target: built there, called, synced, results on the host.
pub fn run_on_target(f: impl FnOnce() -> Result<Vec<Tensor>>) -> Result<Vec<Tensor>> {
    finish(with_target(f))
}

/// A host tensor built by hand, on the target (as it is on the CPU): what [`placed`] gives
/// inside [`with_target`], for tests that build their tensors one by one.
pub fn to_target(t: Tensor) -> Tensor {
    with_target(|| placed(t))
}

/// `t` after a sync of the target, on the host with its sizes and strides (a CPU tensor as it
/// is), for reading a result's values; panics, naming the target, if the sync fails (an
/// expected error is [`finish_one`]'s to return).
pub fn host(t: &Tensor) -> Tensor {
    finish_one(Ok(t.clone()))
        .unwrap_or_else(|e| panic!("syncing {} and reading a result: {e}", target_name()))
}

/// Serialises a test on the target (a no-op on the CPU).
pub fn serial() -> Box<dyn Any> {
    (crate::TARGET.4)()
}

/// Why a test of a suite runs only on the CPU: each such test starts with
/// `if cpu_only(CpuOnly::...) { return; }`, so the reasons are stated here once.
#[derive(Clone, Copy, Debug)]
pub enum CpuOnly {
    /// It reads or compares CPU storage: aliasing of views, storage offsets and sizes, shared
    /// version counters, memory overlap between arguments, host pointers. A lazy tensor has
    /// no storage (functionalization keeps views as views of values, as PyTorch's LTC does).
    Storage,
    /// It checks Meta tensors or the Meta kernels themselves.
    Meta,
    /// It calls CPU kernels directly to check their own choices (a parallel path above a
    /// grain size, a fast path within one storage, the statistics of a random stream, an
    /// allocation limit of the machine) rather than an operator's answer.
    Kernel,
    /// It runs no operator on tensors (a dtype rule, a schema string).
    NoTensor,
}

/// Whether a test of reason `_why` is skipped here (true off the CPU).
pub fn cpu_only(_why: CpuOnly) -> bool {
    !on_cpu()
}
