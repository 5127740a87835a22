//! Warnings (PyTorch's `TORCH_WARN`): printed to stderr and recorded for tests.

use std::sync::{Mutex, PoisonError};

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Emits a warning.
pub fn warn(message: String) {
    if std::env::var_os("SWITCHYARD_QUIET_WARNINGS").is_none() {
        eprintln!("Warning: {message}");
    }
    LOG.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(message);
}

/// Takes every warning emitted so far.
pub fn take_warnings() -> Vec<String> {
    std::mem::take(&mut *LOG.lock().unwrap_or_else(PoisonError::into_inner))
}
