//! Grad modes as RAII guards over thread-local state (PyTorch's `torch.no_grad()`,
//! `torch.enable_grad()`, `torch.set_grad_enabled()`, `torch.inference_mode()`).
//!
//! With grad mode off, operators record no history (their outputs do not require grad).
//! Inference mode also skips version counting and view tracking, and the tensors it creates
//! are inference tensors: they carry no autograd keys, cannot require grad, cannot be saved for
//! backward and cannot be modified in place outside inference mode.

pub use switchyard_core::local_dispatch::{GradModeGuard, InferenceMode, is_grad_enabled};

/// Turns gradient recording off until the guard drops (`with torch.no_grad():`).
pub fn no_grad() -> GradModeGuard {
    GradModeGuard::new(false)
}

/// Turns gradient recording on until the guard drops (`with torch.enable_grad():`).
pub fn enable_grad() -> GradModeGuard {
    GradModeGuard::new(true)
}

/// Sets gradient recording until the guard drops (`with torch.set_grad_enabled(mode):`).
pub fn set_grad_enabled(enabled: bool) -> GradModeGuard {
    GradModeGuard::new(enabled)
}

/// Enters (or, with `false`, leaves) inference mode until the guard drops
/// (`with torch.inference_mode(mode):`).
pub fn inference_mode(enabled: bool) -> InferenceMode {
    InferenceMode::new(enabled)
}
