//! The public API for backends that live outside the core (PyTorch's PrivateUse1 plugins, XLA):
//! everything a third-party device crate needs, and nothing it should not touch.
//!
//! A backend
//!
//! 1. names its device ([`register_privateuse1_backend`]) and installs an [`Allocator`] for
//!    its memory ([`set_allocator`]);
//! 2. registers the kernels it implements at its dispatch key (by hand with a [`Library`], or
//!    with the code `switchyard-codegen backend` generates from its backend YAML);
//! 3. registers [`cpu_fallback`] (or its own boxed function that logs and then calls it) as
//!    the fallback of its key, so every other operator runs on the CPU;
//! 4. may defer to the fallback from its own kernels with [`call_fallback`].

mod fallback;

pub use fallback::{FallbackOptions, call_fallback, cpu_fallback, cpu_fallback_with};

pub use switchyard_core::device::register_privateuse1_backend;
pub use switchyard_core::storage::{Allocator, DeviceMemory, StorageData, set_allocator};
pub use switchyard_core::{
    Access, Device, DeviceType, DispatchKey, DispatchKeySet, Error, IValue, Layout, MemoryFormat,
    Result, Scalar, ScalarType, Stack, Storage, Tensor, with_tensors,
};
pub use switchyard_dispatch::{
    Dispatcher, Kernel, Library, LibraryKind, OpSignature, Operator, OperatorHandle,
    RegistrationHandle,
};
