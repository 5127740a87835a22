//! The sidecar's memory: byte buffers the host cannot address through a tensor (storages hold
//! them as [`StorageData::Device`](switchyard_backend::StorageData)), and the
//! counted transfers between them and host memory.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};

use switchyard_backend::{Allocator, DeviceMemory, Result};

/// One allocation on the sidecar.
pub(crate) struct SidecarMemory {
    pub(crate) bytes: Vec<u8>,
}

impl DeviceMemory for SidecarMemory {
    fn nbytes(&self) -> usize {
        self.bytes.len()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The sidecar's allocator.
pub(crate) struct SidecarAllocator;

impl Allocator for SidecarAllocator {
    fn allocate(&self, nbytes: usize) -> Result<Box<dyn DeviceMemory>> {
        COUNTERS.allocations.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(SidecarMemory {
            bytes: vec![0; nbytes],
        }))
    }

    fn copy_bytes(
        &self,
        dst: &mut dyn DeviceMemory,
        src: &dyn DeviceMemory,
        nbytes: usize,
    ) -> Result<()> {
        let (Some(dst), Some(src)) = (
            dst.as_any_mut().downcast_mut::<SidecarMemory>(),
            src.as_any().downcast_ref::<SidecarMemory>(),
        ) else {
            return Err(switchyard_backend::Error::runtime(
                "sidecar: copy_bytes between memory of another device",
            ));
        };
        let n = nbytes.min(dst.bytes.len()).min(src.bytes.len());
        dst.bytes[..n].copy_from_slice(&src.bytes[..n]);
        Ok(())
    }
}

/// Process-wide counters of the sidecar device.
pub(crate) struct Counters {
    pub(crate) allocations: AtomicU64,
    pub(crate) host_to_device: AtomicU64,
    pub(crate) host_to_device_bytes: AtomicU64,
    pub(crate) device_to_host: AtomicU64,
    pub(crate) device_to_host_bytes: AtomicU64,
    pub(crate) to_cpu_batches: AtomicU64,
}

pub(crate) static COUNTERS: Counters = Counters {
    allocations: AtomicU64::new(0),
    host_to_device: AtomicU64::new(0),
    host_to_device_bytes: AtomicU64::new(0),
    device_to_host: AtomicU64::new(0),
    device_to_host_bytes: AtomicU64::new(0),
    to_cpu_batches: AtomicU64::new(0),
};
