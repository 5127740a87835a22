//! The call trace: every dispatch hop, printed (`SWITCHYARD_SHOW_DISPATCH_TRACE=1`, like
//! PyTorch's `TORCH_SHOW_DISPATCH_TRACE`) or captured for `switchyard explain`.
//!
//! When neither is active the hot path pays one relaxed atomic load per call.

use crate::operator::OperatorHandle;
use std::cell::{Cell, RefCell};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use switchyard_core::{DispatchKey, DispatchKeySet};

static PRINT: AtomicBool = AtomicBool::new(false);
static CAPTURES: AtomicUsize = AtomicUsize::new(0);
static FROM_ENV: Once = Once::new();

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    static CAPTURED: RefCell<Option<Vec<TraceEvent>>> = const { RefCell::new(None) };
}

/// The kind of a dispatch hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// A typed call (key set computed from arguments and TLS).
    Call,
    /// A typed redispatch (key set given by the caller).
    Redispatch,
    /// A boxed call.
    CallBoxed,
    /// A boxed redispatch.
    RedispatchBoxed,
}

impl Hop {
    /// PyTorch's label (`call`, `redispatch`, `callBoxed`, `redispatchBoxed`).
    pub fn label(self) -> &'static str {
        match self {
            Hop::Call => "call",
            Hop::Redispatch => "redispatch",
            Hop::CallBoxed => "callBoxed",
            Hop::RedispatchBoxed => "redispatchBoxed",
        }
    }
}

/// One recorded hop.
#[derive(Clone, Debug)]
pub struct TraceEvent {
    /// Nesting depth (0 for the outermost call).
    pub depth: usize,
    /// The kind of hop.
    pub hop: Hop,
    /// The operator.
    pub operator: String,
    /// The key set dispatched on.
    pub key_set: DispatchKeySet,
    /// The key whose slot was used.
    pub key: DispatchKey,
    /// Debug string of the kernel in that slot.
    pub kernel: String,
    /// Why the slot holds it (`kernel`, `math kernel`, `backend fallback`, ...).
    pub provenance: &'static str,
}

/// Whether any trace is active (one relaxed load).
#[inline(always)]
pub fn enabled() -> bool {
    FROM_ENV.call_once(|| {
        if std::env::var_os("SWITCHYARD_SHOW_DISPATCH_TRACE").is_some_and(|v| v != "0") {
            PRINT.store(true, Ordering::Relaxed);
        }
    });
    PRINT.load(Ordering::Relaxed) || CAPTURES.load(Ordering::Relaxed) > 0
}

/// Turns printing of every hop to stderr on or off.
pub fn set_print(on: bool) {
    PRINT.store(on, Ordering::Relaxed);
}

/// Restores the nesting depth when a hop returns.
pub(crate) struct DepthGuard;

impl Drop for DepthGuard {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

pub(crate) fn enter(hop: Hop, op: &OperatorHandle, ks: DispatchKeySet) -> DepthGuard {
    let depth = DEPTH.with(|d| {
        let v = d.get();
        d.set(v + 1);
        v
    });
    let key = ks.highest_priority_type_id();
    if PRINT.load(Ordering::Relaxed) {
        eprintln!(
            "{}[{}] op=[{}], key=[{}]",
            "  ".repeat(depth),
            hop.label(),
            op.name(),
            key.display_name()
        );
    }
    let capturing = CAPTURED.with(|c| c.borrow().is_some());
    if capturing {
        let (kernel, provenance) = op
            .describe_slot(key)
            .unwrap_or_else(|| (String::new(), "missing"));
        let event = TraceEvent {
            depth,
            hop,
            operator: op.name().to_owned(),
            key_set: ks,
            key,
            kernel,
            provenance,
        };
        CAPTURED.with(|c| {
            if let Some(events) = c.borrow_mut().as_mut() {
                events.push(event);
            }
        });
    }
    DepthGuard
}

/// Runs `f` and returns the hops it made on this thread.
pub fn capture<R>(f: impl FnOnce() -> R) -> (R, Vec<TraceEvent>) {
    struct Stop;
    impl Drop for Stop {
        fn drop(&mut self) {
            CAPTURES.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let previous = CAPTURED.with(|c| c.replace(Some(Vec::new())));
    CAPTURES.fetch_add(1, Ordering::Relaxed);
    let stop = Stop;
    let result = f();
    drop(stop);
    let events = CAPTURED.with(|c| c.replace(previous)).unwrap_or_default();
    (result, events)
}
