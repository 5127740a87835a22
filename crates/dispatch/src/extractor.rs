//! Computing a call's dispatch key set: the arguments' keys, thread-local include/exclude,
//! and the operator's fallthrough mask.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use switchyard_core::keys::{DispatchKey, DispatchKeySet, NUM_BACKENDS};
use switchyard_core::local_dispatch::tls_local_dispatch_key_set;
use switchyard_core::{Error, IValue, Result, Stack};
use switchyard_schema::FunctionSchema;

/// Per-operator key-set extraction state (PyTorch's `DispatchKeyExtractor`).
///
/// Everything here is atomic: calls read it without a lock while registrations (serialised
/// by the dispatcher's registration lock) update it.
pub(crate) struct DispatchKeyExtractor {
    /// Bit `i` set: the argument `i` places below the top of the stack is a dispatch argument.
    dispatch_arg_bits: AtomicU64,
    num_args: AtomicUsize,
    non_fallthrough: AtomicU64,
    non_fallthrough_per_backend: [AtomicU64; NUM_BACKENDS],
    requires_per_backend: AtomicBool,
}

impl DispatchKeyExtractor {
    pub(crate) fn new() -> Self {
        DispatchKeyExtractor {
            dispatch_arg_bits: AtomicU64::new(0),
            num_args: AtomicUsize::new(0),
            non_fallthrough: AtomicU64::new(DispatchKeySet::FULL.raw()),
            non_fallthrough_per_backend: std::array::from_fn(|_| {
                AtomicU64::new(DispatchKeySet::FULL.raw())
            }),
            requires_per_backend: AtomicBool::new(false),
        }
    }

    /// Records which arguments are dispatch arguments (tensors, optional tensors, tensor lists).
    pub(crate) fn set_schema(&self, schema: Option<&FunctionSchema>) -> Result<()> {
        let (bits, n) = match schema {
            None => (0, 0),
            Some(s) => {
                let n = s.arguments.len();
                if n > 64 {
                    return Err(Error::runtime(format!(
                        "The function schema has {n} arguments but this build only supports 64"
                    )));
                }
                let mut bits = 0u64;
                for (i, a) in s.arguments.iter().enumerate() {
                    if a.ty.is_tensor_like() {
                        bits |= 1 << (n - 1 - i);
                    }
                }
                (bits, n)
            }
        };
        self.dispatch_arg_bits.store(bits, Ordering::Release);
        self.num_args.store(n, Ordering::Release);
        Ok(())
    }

    /// The union of the key sets of the dispatch arguments on top of `stack`.
    pub(crate) fn boxed_key_set(&self, stack: &Stack) -> DispatchKeySet {
        let bits = self.dispatch_arg_bits.load(Ordering::Acquire);
        let mut ks = DispatchKeySet::EMPTY;
        let len = stack.len();
        let mut remaining = bits;
        while remaining != 0 {
            let reverse = remaining.trailing_zeros() as usize;
            remaining &= remaining - 1;
            if reverse >= len {
                continue;
            }
            match &stack[len - 1 - reverse] {
                IValue::Tensor(t) => ks = ks | t.key_set(),
                IValue::TensorList(l) => ks = l.iter().fold(ks, |acc, t| acc | t.key_set()),
                IValue::OptionalTensorList(l) => {
                    ks = l.iter().flatten().fold(ks, |acc, t| acc | t.key_set())
                }
                IValue::GenericList(l) => {
                    ks = l.iter().fold(ks, |acc, v| match v {
                        IValue::Tensor(t) => acc | t.key_set(),
                        _ => acc,
                    })
                }
                _ => {}
            }
        }
        ks
    }

    /// Number of schema arguments (0 without a schema).
    pub(crate) fn num_args(&self) -> usize {
        self.num_args.load(Ordering::Acquire)
    }

    /// `((ks | tls.included) - tls.excluded) & non_fallthrough_mask`.
    #[inline(always)]
    pub(crate) fn apply_tls_and_mask(&self, ks: DispatchKeySet) -> DispatchKeySet {
        let local = tls_local_dispatch_key_set();
        let ks = (ks | local.included) - local.excluded;
        let mask = if self.requires_per_backend.load(Ordering::Relaxed) {
            self.non_fallthrough_per_backend[ks.backend_index()].load(Ordering::Relaxed)
        } else {
            self.non_fallthrough.load(Ordering::Relaxed)
        };
        ks & DispatchKeySet::from_raw(mask)
    }

    /// The current mask (for introspection).
    pub(crate) fn mask_for(&self, ks: DispatchKeySet) -> DispatchKeySet {
        DispatchKeySet::from_raw(if self.requires_per_backend.load(Ordering::Relaxed) {
            self.non_fallthrough_per_backend[ks.backend_index()].load(Ordering::Relaxed)
        } else {
            self.non_fallthrough.load(Ordering::Relaxed)
        })
    }

    /// Updates the masks after the table slot of `k` changed (PyTorch's
    /// `setOperatorHasFallthroughForKey`). Called under the registration lock only.
    pub(crate) fn set_has_fallthrough(&self, k: DispatchKey, has_fallthrough: bool) {
        let update = |atomic: &AtomicU64| {
            let ks = DispatchKeySet::from_raw(atomic.load(Ordering::Relaxed));
            let ks = if has_fallthrough {
                ks.remove(k)
            } else {
                ks.add(k)
            };
            atomic.store(ks.raw(), Ordering::Relaxed);
        };
        update(&self.non_fallthrough);
        if k.to_functionality_key().is_per_backend_functionality() {
            let backend = k.to_backend_component() as usize;
            if backend == 0 {
                return;
            }
            update(&self.non_fallthrough_per_backend[backend - 1]);
            let first = self.non_fallthrough_per_backend[0].load(Ordering::Relaxed);
            let differs = self
                .non_fallthrough_per_backend
                .iter()
                .any(|m| m.load(Ordering::Relaxed) != first);
            self.requires_per_backend.store(differs, Ordering::Relaxed);
        } else {
            self.non_fallthrough_per_backend.iter().for_each(update);
        }
    }
}
