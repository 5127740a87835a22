//! **lazy**: the `Lazy` device (issue 19; `docs/lazy-plan.md`; PyTorch's Lazy Tensor Core,
//! Part B of the reference note). Operators on lazy tensors record IR instead of computing;
//! [`mark_step`] (or reading a value) compiles the pending graph, looks it up in a cache of
//! compiled programs by its structural hash, runs it on the CPU kernels and replaces each
//! synced tensor's IR by its data.
//!
//! Built like an external backend: `backend.yaml` lists the operators, the generator writes
//! their IR node entries, trace kernels and lowerings (`src/generated/`), the hand-written
//! kernels are in `manual.rs`, and every other operator runs through the CPU fallback, counted
//! as `aten::<op>`. Every user-visible lazy tensor is a functional wrapper (B.11): views and
//! mutations are functionalized above this backend, which only sees functional operators.
//!
//! ```
//! use switchyard_ops::TensorOps;
//! # fn main() -> switchyard_core::Result<()> {
//! switchyard_lazy::init()?;
//! let x = switchyard_lazy::to_lazy(&switchyard_core::Tensor::from_slice(&[1.0f32, 2.0])?)?;
//! let y = x.exp()?.add(&x)?; // recorded, not computed
//! switchyard_lazy::mark_step()?; // compiled, cached, executed
//! let host = switchyard_lazy::to_cpu(&y)?;
//! assert_eq!(host.to_vec::<f32>()?, vec![1f32.exp() + 1.0, 2f32.exp() + 2.0]);
//! # Ok(())
//! # }
//! ```

pub mod closures;
pub mod compiler;
pub mod data;
mod device_queue;
pub mod dump;
pub mod executor;
pub mod extract;
pub mod fallback;
#[rustfmt::skip]
mod generated;
pub mod ir;
mod manual;
pub mod metrics;
pub mod tensor;
pub mod trace;
pub mod trie;

use std::sync::OnceLock;

use switchyard_backend::{
    Device, DeviceType, DispatchKey, Dispatcher, Error, Kernel, Library, LibraryKind, Result,
    Tensor,
};
use switchyard_ops::op;

// The CPU kernels the lowerings and the fallback run on, the autograd kernels and the
// functionalization layer above, registered by linking.
use switchyard_autograd as _;
use switchyard_cpu as _;

pub use closures::{StepClosure, add_step_closure, wait_async_closures};
pub use dump::{DumpFormat, dump_ir};
pub use executor::{
    clear_computation_cache, computation_cache_size, remove_from_computation_cache, wait_device_ops,
};
pub use extract::{CompiledGraph, extract_compiled_graph};
pub use fallback::{fallback, get_force_fallback, set_force_fallback};
pub use ir::Hash128;
pub use metrics::{counter_names, counter_value, metrics_report, reset_metrics};
pub use tensor::{LazyTensor, get_ltc_tensor, try_get_ltc_tensor};
pub use trie::{ir_cache, reuse_ir, set_reuse_ir};

/// The lazy device (index 0).
pub fn device() -> Device {
    Device::new(DeviceType::Lazy, Some(0))
}

/// Registers the lazy backend: its kernels at `Lazy` and the counting CPU fallback.
/// Idempotent.
pub fn init() -> Result<()> {
    static INIT: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    INIT.get_or_init(|| register().map_err(|e| e.to_string()))
        .clone()
        .map_err(Error::runtime)
}

fn register() -> Result<()> {
    switchyard_functionalize::init();
    generated::library::<manual::Lazy>(Dispatcher::singleton())?.leak();
    let mut fallback_lib = Library::new(LibraryKind::Impl, "_", Some(DispatchKey::Lazy))?;
    fallback_lib.fallback(Kernel::boxed(fallback))?;
    fallback_lib.leak();
    fallback::force_fallback_from_env()?;
    Ok(())
}

/// A copy of `t` on the lazy device (a functional wrapper around a lazy tensor holding the
/// copy).
pub fn to_lazy(t: &Tensor) -> Result<Tensor> {
    op::_to_copy::call(t, None, None, Some(device()), None, false, None)
}

/// A copy of `t` on the CPU: executes what `t` needs (and only that; its IR is kept).
#[track_caller]
pub fn to_cpu(t: &Tensor) -> Result<Tensor> {
    let caller = std::panic::Location::caller();
    dump::with_sync_caller("to_cpu", (file!(), line!()), caller, || {
        op::_to_copy::call(t, None, None, Some(Device::CPU), None, false, None)
    })
}

/// Syncs every live lazy tensor (PyTorch's `torch._lazy.mark_step(wait=True)`): one graph,
/// compiled or taken from the cache, executed; each tensor's IR replaced by its data. Counter
/// `MarkStep`. Then the step closures queued with [`add_step_closure`] run (a synchronous
/// closure's error is returned; asynchronous ones run on a worker thread). An execution error
/// is returned here, and the tensors keep their IR.
#[track_caller]
pub fn mark_step() -> Result<()> {
    mark_step_at(std::panic::Location::caller(), true)
}

/// [`mark_step`] without waiting for the device (PyTorch's `torch._lazy.mark_step()`, whose
/// `wait` is false by default): the graph is built, hashed and compiled or found here, each
/// tensor's IR is replaced by a placeholder, and the execution runs on the device thread
/// while the caller goes on (tracing the next step overlaps executing this one). Reading a
/// tensor's value, a synchronous sync and [`wait_device_ops`] wait for it. An execution error
/// is not returned here: reading an affected tensor returns it. A graph that draws random
/// numbers or donates a parameter's buffer runs before this returns, as [`mark_step`]'s.
#[track_caller]
pub fn mark_step_async() -> Result<()> {
    mark_step_at(std::panic::Location::caller(), false)
}

fn mark_step_at(caller: &'static std::panic::Location<'static>, wait: bool) -> Result<()> {
    // Where the step was asked for, for the saved graphs (`LTC_SAVE_TENSORS_FILE`).
    dump::with_sync_caller("mark_step", (file!(), line!()), caller, || {
        executor::sync_live_tensors(wait)
    })?;
    metrics::counter_add("MarkStep", 1);
    trie::reset_current();
    closures::run_step_closures()
}

/// The lazy payloads of `tensors` (functional wrappers synced and unwrapped first).
fn payloads(tensors: &[Tensor]) -> Result<Vec<std::sync::Arc<LazyTensor>>> {
    tensors.iter().map(get_ltc_tensor).collect()
}

/// Syncs `tensors` only (PyTorch's `torch._lazy.sync_multi`): their IR replaced by data.
#[track_caller]
pub fn sync(tensors: &[Tensor]) -> Result<()> {
    let caller = std::panic::Location::caller();
    dump::with_sync_caller("sync", (file!(), line!()), caller, || {
        executor::sync_tensors(&payloads(tensors)?, true)
    })
}

/// The hash of the graph syncing `tensors` would run (`None` if nothing is pending).
pub fn get_graph_hash(tensors: &[Tensor]) -> Result<Option<Hash128>> {
    executor::graph_hash(&payloads(tensors)?)
}

/// Runs the cached program of graph `hash` (from [`get_graph_hash`]) on `inputs`, one per
/// parameter of the graph in its order (lifted scalars included; lazy inputs are read, CPU
/// ones taken as they are), and returns its results as lazy tensors (PyTorch's
/// `run_cached_graph`).
pub fn run_cached_graph(hash: Hash128, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let host: Vec<Tensor> = inputs
        .iter()
        .map(|t| if is_lazy(t) { to_cpu(t) } else { Ok(t.clone()) })
        .collect::<Result<_>>()?;
    executor::run_cached_graph(hash, &host)?
        .iter()
        .map(to_lazy)
        .collect()
}

/// Whether `t` is a lazy tensor (a functional wrapper around one, or the inner tensor).
pub fn is_lazy(t: &Tensor) -> bool {
    t.device().kind() == DeviceType::Lazy
}
