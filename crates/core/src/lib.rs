//! The tensor model shared by every switchyard crate.
//!
//! * [`ScalarType`], [`Scalar`], [`promote_types`] and [`promotion::result_type`]: dtypes and
//!   PyTorch's type promotion;
//! * [`Device`], [`Layout`], [`MemoryFormat`];
//! * [`keys`]: dispatch keys and key sets, [`local_dispatch`]: thread-local dispatch state;
//! * [`Storage`] and [`Tensor`]: refcounted storage and the tensor handle, with views sharing
//!   storage and version counters and safe concurrent access ([`storage`] explains how);
//! * [`IValue`] and [`Stack`]: boxed values for calls by name;
//! * [`Error`] and [`Result`]: PyTorch's error kinds and messages;
//! * [`alloc`]: fallible host allocation (PyTorch's out-of-memory error, never an abort).
//!
//! Nothing here runs an operator: operators and kernels live in the crates above this one.

pub mod access;
pub mod alloc;
pub mod device;
pub mod element;
pub mod error;
pub mod format;
pub mod generator;
pub mod geometry;
pub mod ivalue;
pub mod keys;
pub mod linear;
pub mod local_dispatch;
pub mod promotion;
pub mod scalar;
pub mod scalar_type;
mod set_once;
pub mod shape;
mod shared;
pub mod storage;
pub mod tensor;

pub use device::{Device, DeviceType, Layout, MemoryFormat};
pub use element::Element;
pub use error::{Error, ErrorKind, Result};
pub use generator::Generator;
pub use half;
pub use ivalue::{IValue, Stack};
pub use keys::{BackendComponent, DispatchKey, DispatchKeySet};
pub use scalar::Scalar;
pub use scalar_type::{ScalarType, can_cast, promote_types};
pub use shape::DimVec;
pub use storage::{Access, Storage};
pub use tensor::{Tensor, with_tensors};
