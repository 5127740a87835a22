//! Thread-local dispatch state: the included / excluded key sets, grad mode, inference mode,
//! and the RAII guards that change them (PyTorch's `LocalDispatchKeySet.h`,
//! `LegacyTypeDispatch.h`, `InferenceMode.h`, `GradMode.h`).
//!
//! Every guard saves the whole previous state and restores it on drop, so guards nest in any
//! order. Guards are `!Send`: they must be dropped on the thread that created them.

use crate::keys::{DispatchKey, DispatchKeySet, sets};
use std::cell::Cell;
use std::marker::PhantomData;

/// The included and excluded key sets of one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalDispatchKeySet {
    /// Keys added to every call's key set.
    pub included: DispatchKeySet,
    /// Keys removed from every call's key set (exclusion wins over inclusion).
    pub excluded: DispatchKeySet,
}

#[derive(Clone, Copy)]
struct AutogradState {
    grad_enabled: bool,
    inference_mode: bool,
}

thread_local! {
    static LOCAL: Cell<LocalDispatchKeySet> = const {
        Cell::new(LocalDispatchKeySet {
            included: sets::DEFAULT_INCLUDED,
            excluded: sets::DEFAULT_EXCLUDED,
        })
    };
    static AUTOGRAD_STATE: Cell<AutogradState> = const {
        Cell::new(AutogradState { grad_enabled: true, inference_mode: false })
    };
}

/// This thread's included/excluded key sets.
#[inline(always)]
pub fn tls_local_dispatch_key_set() -> LocalDispatchKeySet {
    LOCAL.with(Cell::get)
}

fn set_local(v: LocalDispatchKeySet) {
    LOCAL.with(|c| c.set(v));
}

/// Includes or removes one key from this thread's included set (non-RAII).
pub fn tls_set_dispatch_key_included(k: DispatchKey, included: bool) {
    let mut l = tls_local_dispatch_key_set();
    l.included = if included {
        l.included.add(k)
    } else {
        l.included.remove(k)
    };
    set_local(l);
}

/// Excludes or un-excludes one key on this thread (non-RAII).
pub fn tls_set_dispatch_key_excluded(k: DispatchKey, excluded: bool) {
    let mut l = tls_local_dispatch_key_set();
    l.excluded = if excluded {
        l.excluded.add(k)
    } else {
        l.excluded.remove(k)
    };
    set_local(l);
}

/// Whether `k` is in this thread's included set.
pub fn tls_is_dispatch_key_included(k: DispatchKey) -> bool {
    tls_local_dispatch_key_set().included.has(k)
}

/// Whether `k` is in this thread's excluded set.
pub fn tls_is_dispatch_key_excluded(k: DispatchKey) -> bool {
    tls_local_dispatch_key_set().excluded.has(k)
}

type NotSend = PhantomData<*const ()>;

/// Adds keys to the included set while alive.
#[must_use = "the keys are included only while the guard is alive"]
pub struct IncludeDispatchKeyGuard {
    saved: LocalDispatchKeySet,
    _not_send: NotSend,
}

impl IncludeDispatchKeyGuard {
    /// Includes `ks` until the guard is dropped.
    pub fn new(ks: impl Into<DispatchKeySet>) -> Self {
        let saved = tls_local_dispatch_key_set();
        set_local(LocalDispatchKeySet {
            included: saved.included | ks.into(),
            excluded: saved.excluded,
        });
        IncludeDispatchKeyGuard {
            saved,
            _not_send: PhantomData,
        }
    }
}

impl Drop for IncludeDispatchKeyGuard {
    fn drop(&mut self) {
        set_local(self.saved);
    }
}

/// Adds keys to the excluded set while alive.
#[must_use = "the keys are excluded only while the guard is alive"]
pub struct ExcludeDispatchKeyGuard {
    saved: LocalDispatchKeySet,
    _not_send: NotSend,
}

impl ExcludeDispatchKeyGuard {
    /// Excludes `ks` until the guard is dropped.
    pub fn new(ks: impl Into<DispatchKeySet>) -> Self {
        let saved = tls_local_dispatch_key_set();
        set_local(LocalDispatchKeySet {
            included: saved.included,
            excluded: saved.excluded | ks.into(),
        });
        ExcludeDispatchKeyGuard {
            saved,
            _not_send: PhantomData,
        }
    }
}

impl Drop for ExcludeDispatchKeyGuard {
    fn drop(&mut self) {
        set_local(self.saved);
    }
}

/// Replaces both sets while alive.
#[must_use = "the sets are replaced only while the guard is alive"]
pub struct ForceDispatchKeyGuard {
    saved: LocalDispatchKeySet,
    _not_send: NotSend,
}

impl ForceDispatchKeyGuard {
    /// Sets this thread's sets to `value` until the guard is dropped.
    pub fn new(value: LocalDispatchKeySet) -> Self {
        let saved = tls_local_dispatch_key_set();
        set_local(value);
        ForceDispatchKeyGuard {
            saved,
            _not_send: PhantomData,
        }
    }
}

impl Drop for ForceDispatchKeyGuard {
    fn drop(&mut self) {
        set_local(self.saved);
    }
}

/// Skips the autograd layer for calls made while alive (`at::AutoDispatchBelowAutograd`).
pub fn auto_dispatch_below_autograd() -> ExcludeDispatchKeyGuard {
    ExcludeDispatchKeyGuard::new(sets::AUTOGRAD)
}

/// Skips autograd and ADInplaceOrView (`at::AutoDispatchBelowADInplaceOrView`); what
/// autograd kernels hold while they run the op below them.
pub fn auto_dispatch_below_ad_inplace_or_view() -> ExcludeDispatchKeyGuard {
    ExcludeDispatchKeyGuard::new(sets::AUTOGRAD_WITH_AD_INPLACE_OR_VIEW)
}

/// Skips functionalization (`at::AutoDispatchSkipFunctionalize`).
pub fn auto_dispatch_skip_functionalize() -> ExcludeDispatchKeyGuard {
    ExcludeDispatchKeyGuard::new(DispatchKey::Functionalize)
}

/// Whether gradients are recorded on this thread (`torch.is_grad_enabled()`).
pub fn is_grad_enabled() -> bool {
    AUTOGRAD_STATE.with(|s| s.get().grad_enabled)
}

/// Whether inference mode is on for this thread.
pub fn is_inference_mode_enabled() -> bool {
    AUTOGRAD_STATE.with(|s| s.get().inference_mode)
}

/// Sets grad mode while alive (`torch.no_grad()` is `GradModeGuard::new(false)`).
#[must_use = "grad mode is set only while the guard is alive"]
pub struct GradModeGuard {
    saved: bool,
    _not_send: NotSend,
}

impl GradModeGuard {
    /// Sets grad mode to `enabled` until the guard is dropped.
    pub fn new(enabled: bool) -> Self {
        let saved = is_grad_enabled();
        AUTOGRAD_STATE.with(|s| {
            let mut v = s.get();
            v.grad_enabled = enabled;
            s.set(v);
        });
        GradModeGuard {
            saved,
            _not_send: PhantomData,
        }
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        let saved = self.saved;
        AUTOGRAD_STATE.with(|s| {
            let mut v = s.get();
            v.grad_enabled = saved;
            s.set(v);
        });
    }
}

/// Inference mode (`c10::InferenceMode`): no autograd recording, no version-counter or view
/// tracking, and tensors created inside are inference tensors (no autograd keys).
#[must_use = "inference mode is on only while the guard is alive"]
pub struct InferenceMode {
    saved_local: LocalDispatchKeySet,
    saved_state: AutogradState,
    _not_send: NotSend,
}

impl InferenceMode {
    /// Enters (`enabled = true`) or explicitly leaves (`false`) inference mode.
    pub fn new(enabled: bool) -> Self {
        let saved_local = tls_local_dispatch_key_set();
        let saved_state = AUTOGRAD_STATE.with(Cell::get);
        let local = if enabled {
            LocalDispatchKeySet {
                included: saved_local.included.remove(DispatchKey::ADInplaceOrView),
                excluded: saved_local.excluded | sets::AUTOGRAD,
            }
        } else {
            LocalDispatchKeySet {
                included: saved_local.included.add(DispatchKey::ADInplaceOrView),
                excluded: saved_local.excluded - sets::AUTOGRAD,
            }
        };
        set_local(local);
        AUTOGRAD_STATE.with(|s| {
            s.set(AutogradState {
                // Like PyTorch: entering disables grad mode, leaving enables it.
                grad_enabled: !enabled,
                inference_mode: enabled,
            })
        });
        InferenceMode {
            saved_local,
            saved_state,
            _not_send: PhantomData,
        }
    }
}

impl Drop for InferenceMode {
    fn drop(&mut self) {
        set_local(self.saved_local);
        AUTOGRAD_STATE.with(|s| s.set(self.saved_state));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_nest_and_restore() {
        let before = tls_local_dispatch_key_set();
        assert!(before.included.has(DispatchKey::BackendSelect));
        assert!(before.excluded.has(DispatchKey::AutocastCPU));
        {
            let _a = auto_dispatch_below_autograd();
            assert!(tls_is_dispatch_key_excluded(
                DispatchKey::AutogradFunctionality
            ));
            {
                let _b = IncludeDispatchKeyGuard::new(DispatchKey::Functionalize);
                assert!(tls_is_dispatch_key_included(DispatchKey::Functionalize));
            }
            assert!(!tls_is_dispatch_key_included(DispatchKey::Functionalize));
        }
        assert_eq!(tls_local_dispatch_key_set(), before);
    }

    #[test]
    fn inference_mode_and_grad_mode() {
        assert!(is_grad_enabled());
        {
            let _g = InferenceMode::new(true);
            assert!(is_inference_mode_enabled());
            assert!(!is_grad_enabled());
            assert!(!tls_is_dispatch_key_included(DispatchKey::ADInplaceOrView));
            {
                let _off = InferenceMode::new(false);
                assert!(!is_inference_mode_enabled());
            }
            assert!(is_inference_mode_enabled());
        }
        assert!(!is_inference_mode_enabled());
        assert!(is_grad_enabled());
        {
            let _ng = GradModeGuard::new(false);
            assert!(!is_grad_enabled());
        }
        assert!(is_grad_enabled());
    }

    #[test]
    fn state_is_per_thread() {
        let _g = ExcludeDispatchKeyGuard::new(DispatchKey::Functionalize);
        let other = std::thread::spawn(|| tls_is_dispatch_key_excluded(DispatchKey::Functionalize))
            .join()
            .unwrap();
        assert!(!other);
        assert!(tls_is_dispatch_key_excluded(DispatchKey::Functionalize));
    }
}
