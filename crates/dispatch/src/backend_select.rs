//! BackendSelect: choosing the backend of factory operators from their dtype / layout /
//! device arguments (PyTorch's generated `RegisterBackendSelect.cpp`).

use switchyard_core::keys::{DispatchKey, DispatchKeySet};
use switchyard_core::local_dispatch::tls_local_dispatch_key_set;
use switchyard_core::{Device, Error, Layout, Result, ScalarType};

/// The dense backend key for tensor options (`computeDispatchKey`): layout defaults to
/// strided and device to the CPU.
pub fn compute_dispatch_key(
    _dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
) -> Result<DispatchKey> {
    let device = device.unwrap_or(Device::CPU);
    match layout.unwrap_or(Layout::Strided) {
        Layout::Strided => {
            DispatchKey::runtime_key(DispatchKey::Dense, device.kind().backend_component())
                .ok_or_else(|| {
                    Error::runtime(format!(
                        "Unsupported device type for dense layout: {}",
                        device.kind().name()
                    ))
                })
        }
    }
}

/// The key set a BackendSelect kernel redispatches with: just the backend key when the
/// factory has no tensor arguments; otherwise the backend key joined with the tensor
/// arguments' keys, with thread-local state applied and everything from BackendSelect up
/// removed.
pub fn backend_select_key_set(
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    tensor_args: Option<DispatchKeySet>,
) -> Result<DispatchKeySet> {
    let key = DispatchKeySet::from_key(compute_dispatch_key(dtype, layout, device)?);
    Ok(match tensor_args {
        None => key,
        Some(ks) => {
            let local = tls_local_dispatch_key_set();
            ((key | ks | local.included) - local.excluded)
                & DispatchKeySet::full_after(DispatchKey::BackendSelect)
        }
    })
}
