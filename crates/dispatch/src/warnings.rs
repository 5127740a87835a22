//! Warnings (PyTorch's `TORCH_WARN`): printed to stderr and recorded for tests, or, once a
//! caller such as the Python module asks for it ([`defer_to_caller`]), queued on the thread
//! that raised them for that caller to re-emit after the call returns (PyTorch's
//! `PyWarningHandler`, which turns them into Python `UserWarning`s). Kernels may run with the
//! GIL released, so they never emit Python warnings themselves.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Whether warnings are queued per thread instead of printed.
static DEFERRED: AtomicBool = AtomicBool::new(false);

/// How many warnings sit in the queues of all threads: callers check it with one relaxed load
/// after each call and look at their thread's queue only when it is not zero.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// A thread's queue keeps at most this many warnings (a thread nobody drains, such as a pool
/// worker, must not grow without bound); later ones are dropped.
const QUEUE_LIMIT: usize = 1024;

thread_local! {
    static QUEUE: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Emits a warning.
pub fn warn(message: String) {
    if DEFERRED.load(Ordering::Relaxed) {
        QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            if q.len() < QUEUE_LIMIT {
                q.push(message);
                PENDING.fetch_add(1, Ordering::Relaxed);
            }
        });
        return;
    }
    if std::env::var_os("SWITCHYARD_QUIET_WARNINGS").is_none() {
        eprintln!("Warning: {message}");
    }
    LOG.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(message);
}

/// Takes every warning emitted so far (those printed, not those queued for a caller).
pub fn take_warnings() -> Vec<String> {
    std::mem::take(&mut *LOG.lock().unwrap_or_else(PoisonError::into_inner))
}

/// From now on (`true`), warnings are queued on the emitting thread for the caller to take
/// with [`take_pending`] instead of being printed; `false` restores printing.
pub fn defer_to_caller(on: bool) {
    DEFERRED.store(on, Ordering::Relaxed);
}

/// Whether any thread may have queued warnings (one relaxed load; exact for the calling
/// thread's own queue, whose pushes it made itself).
#[inline]
pub fn has_pending() -> bool {
    PENDING.load(Ordering::Relaxed) != 0
}

/// Takes the warnings queued on this thread, oldest first.
pub fn take_pending() -> Vec<String> {
    let taken = QUEUE.with(|q| std::mem::take(&mut *q.borrow_mut()));
    if !taken.is_empty() {
        PENDING.fetch_sub(taken.len(), Ordering::Relaxed);
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deferred_warnings_queue_per_thread() {
        defer_to_caller(true);
        warn("first".to_owned());
        warn("second".to_owned());
        assert!(has_pending());
        // Another thread's queue is its own.
        let other = std::thread::spawn(take_pending).join().unwrap();
        assert!(other.is_empty());
        assert_eq!(take_pending(), ["first", "second"]);
        assert!(take_pending().is_empty());
        defer_to_caller(false);
    }
}
