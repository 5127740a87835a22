//! **sidecar**: a reference external backend for switchyard, written only against the public
//! backend API (`switchyard-backend`) and the operator API (`switchyard-ops`), as a third
//! party would write one. See this crate's README for the walk-through.
//!
//! The sidecar is a device whose memory is separate from host memory: its storages hold
//! [`DeviceMemory`](switchyard_backend::DeviceMemory) that host code cannot address, created
//! by its own allocator, and every transfer between it and the host is counted. It implements
//! a handful of operators itself (`add.Tensor`, `mul.Tensor`, `mm`, the batched `_to_cpu`,
//! `_copy_from`, the factories and the strided views), has its own autograd kernel for `relu`
//! ([`autograd`]: a backward node of its own, registered at `AutogradPrivateUse1`), and sends
//! every other operator through the CPU fallback, counting fallback calls per operator.
//! Gradients work through all three: the generated Autograd kernels record the nodes of its
//! own kernels and of fallback operators, and the backward pass runs on the device.
//!
//! ```
//! use switchyard_ops::TensorOps;
//! # fn main() -> switchyard_core::Result<()> {
//! switchyard_sidecar::init()?;
//! let x = switchyard_core::Tensor::from_slice(&[1.0f32, -2.0, 3.0])?;
//! let on_sidecar = switchyard_sidecar::to_sidecar(&x)?;
//! let y = on_sidecar.relu()?; // the sidecar's autograd kernel, computing on the device
//! let z = y.exp()?; // no sidecar kernel: runs on the CPU through the fallback
//! assert_eq!(z.device(), switchyard_sidecar::device());
//! assert!(switchyard_sidecar::fallback_count("aten::exp") >= 1);
//! # Ok(())
//! # }
//! ```

pub mod autograd;
#[rustfmt::skip]
mod generated;
mod kernels;
mod memory;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock, PoisonError};

use switchyard_backend::{
    Device, DeviceType, DispatchKey, DispatchKeySet, Dispatcher, Error, Kernel, Library,
    LibraryKind, OperatorHandle, Result, Stack, Tensor, cpu_fallback, register_privateuse1_backend,
    set_allocator,
};
use switchyard_ops::op;

// The CPU kernels the fallback runs on are registered by linking switchyard-cpu.
use switchyard_cpu as _;

/// The sidecar's device name (it takes PyTorch's PrivateUse1 slot).
pub const DEVICE_NAME: &str = "sidecar";

/// The sidecar device (index 0).
pub fn device() -> Device {
    Device::new(DeviceType::PrivateUse1, Some(0))
}

/// Registers the sidecar: device name, allocator, kernels and the CPU fallback. Idempotent;
/// fails if another backend already took the PrivateUse1 slot.
pub fn init() -> Result<()> {
    static INIT: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    INIT.get_or_init(|| register().map_err(|e| e.to_string()))
        .clone()
        .map_err(Error::runtime)
}

fn register() -> Result<()> {
    register_privateuse1_backend(DEVICE_NAME)?;
    set_allocator(
        DeviceType::PrivateUse1,
        std::sync::Arc::new(memory::SidecarAllocator),
    )?;
    generated::library::<kernels::Sidecar>(Dispatcher::singleton())?.leak();
    let mut fallback_lib = Library::new(LibraryKind::Impl, "_", Some(DispatchKey::PrivateUse1))?;
    fallback_lib.fallback(Kernel::boxed(fallback))?;
    fallback_lib.leak();
    Ok(())
}

static FALLBACKS: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// The sidecar's fallback: counts the call per operator, then runs the CPU fallback.
pub fn fallback(op: &OperatorHandle, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    {
        let mut counts = FALLBACKS.lock().unwrap_or_else(PoisonError::into_inner);
        match counts.get_mut(op.name()) {
            Some(n) => *n += 1,
            None => {
                counts.insert(op.name().to_owned(), 1);
            }
        }
    }
    cpu_fallback(op, ks, stack)
}

/// How many times operator `name` (`aten::exp`, `aten::add.out`) went through the fallback.
pub fn fallback_count(name: &str) -> u64 {
    FALLBACKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
        .copied()
        .unwrap_or(0)
}

/// Every operator that went through the fallback, with its count.
pub fn fallback_counts() -> BTreeMap<String, u64> {
    FALLBACKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// A snapshot of the sidecar's transfer, allocation and autograd counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Allocations made by the sidecar allocator.
    pub allocations: u64,
    /// Host-to-device transfers (one per tensor).
    pub host_to_device: u64,
    /// Bytes moved host-to-device.
    pub host_to_device_bytes: u64,
    /// Device-to-host transfers (one per tensor).
    pub device_to_host: u64,
    /// Bytes moved device-to-host.
    pub device_to_host_bytes: u64,
    /// Calls of the batched `_to_cpu` (one per fallback call that had tensor arguments).
    pub to_cpu_batches: u64,
    /// Calls of the sidecar's own autograd kernels (`relu` at `AutogradPrivateUse1`).
    pub autograd_calls: u64,
    /// Runs of the sidecar's own backward nodes ([`autograd::SidecarReluBackward`]).
    pub backward_calls: u64,
}

/// The counters now. They are process-wide: tests that compare them run one at a time or
/// look at differences on their own thread's work only.
pub fn counters() -> Counters {
    let c = &memory::COUNTERS;
    Counters {
        allocations: c.allocations.load(Ordering::Relaxed),
        host_to_device: c.host_to_device.load(Ordering::Relaxed),
        host_to_device_bytes: c.host_to_device_bytes.load(Ordering::Relaxed),
        device_to_host: c.device_to_host.load(Ordering::Relaxed),
        device_to_host_bytes: c.device_to_host_bytes.load(Ordering::Relaxed),
        to_cpu_batches: c.to_cpu_batches.load(Ordering::Relaxed),
        autograd_calls: autograd::AUTOGRAD_CALLS.load(Ordering::Relaxed),
        backward_calls: autograd::BACKWARD_CALLS.load(Ordering::Relaxed),
    }
}

/// A copy of `t` on the sidecar.
pub fn to_sidecar(t: &Tensor) -> Result<Tensor> {
    op::_to_copy::call(t, None, None, Some(device()), None, false, None)
}

/// A copy of `t` on the CPU.
pub fn to_cpu(t: &Tensor) -> Result<Tensor> {
    op::_to_copy::call(t, None, None, Some(Device::CPU), None, false, None)
}
