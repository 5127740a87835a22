//! [`SetOnce`]: a cell written at most once and read without locks, cheaper to fill than
//! `std::sync::OnceLock`.
//!
//! Every operation that records autograd history fills one of these (the output's autograd
//! slot). `OnceLock` pays two atomic read-modify-writes for that (claiming the cell, then a
//! swap that reports waiters to wake); here the claim is the only one, and publishing the
//! value is a plain release store. A thread that finds the cell being filled spins until it is
//! published: filling runs a short constructor, never user code that could block.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, Ordering};

const EMPTY: u8 = 0;
const WRITING: u8 = 1;
const READY: u8 = 2;

/// A value set at most once, then read lock-free.
pub(crate) struct SetOnce<T> {
    state: AtomicU8,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written once, by the thread that moved `state` from EMPTY to WRITING
// (no other thread touches it then), and read only after `state` is READY, published with
// release/acquire ordering; after that it is only shared (`&T`), so `T: Sync` makes sharing
// the cell sound, and `T: Send` is needed because the value may be dropped on another thread.
unsafe impl<T: Send + Sync> Sync for SetOnce<T> {}
// SAFETY: moving the cell moves the value (if any) with it.
unsafe impl<T: Send> Send for SetOnce<T> {}

impl<T> SetOnce<T> {
    /// An empty cell.
    pub(crate) const fn new() -> SetOnce<T> {
        SetOnce {
            state: AtomicU8::new(EMPTY),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// A cell already holding `value`: no atomic operation, unlike filling an empty one.
    #[inline]
    pub(crate) const fn with_value(value: T) -> SetOnce<T> {
        SetOnce {
            state: AtomicU8::new(READY),
            value: UnsafeCell::new(MaybeUninit::new(value)),
        }
    }

    /// The value, if set.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        if self.state.load(Ordering::Acquire) == READY {
            // SAFETY: READY is stored (release) only after the value was written, and the
            // value is never written again; the acquire load orders this read after it.
            Some(unsafe { (*self.value.get()).assume_init_ref() })
        } else {
            None
        }
    }

    /// Sets the value if the cell is empty; otherwise gives `value` back (the cell is set, or
    /// being set by another thread).
    pub(crate) fn set(&self, value: T) -> Result<&T, T> {
        if self
            .state
            .compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Acquire)
            .is_err()
        {
            return Err(value);
        }
        Ok(self.publish(value))
    }

    /// The value, made by `init` if the cell is empty (`init` runs at most once; a thread that
    /// finds another one running it waits for its value). If `init` panics the cell stays
    /// empty.
    #[inline]
    pub(crate) fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
        if let Some(v) = self.get() {
            return v;
        }
        self.init_slow(init)
    }

    fn init_slow(&self, init: impl FnOnce() -> T) -> &T {
        loop {
            match self.state.compare_exchange_weak(
                EMPTY,
                WRITING,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // Reopens the cell if `init` unwinds, so that it is not left WRITING.
                    struct Reopen<'a>(&'a AtomicU8);
                    impl Drop for Reopen<'_> {
                        fn drop(&mut self) {
                            self.0.store(EMPTY, Ordering::Release);
                        }
                    }
                    let reopen = Reopen(&self.state);
                    let value = init();
                    std::mem::forget(reopen);
                    return self.publish(value);
                }
                Err(READY) => {
                    if let Some(v) = self.get() {
                        return v;
                    }
                }
                // Another thread is writing, or a spurious failure: try again.
                Err(_) => std::hint::spin_loop(),
            }
        }
    }

    /// Writes the value of a cell this thread moved to WRITING, and publishes it.
    fn publish(&self, value: T) -> &T {
        // SAFETY: this thread moved `state` from EMPTY to WRITING, so no other thread reads or
        // writes the value until READY is stored below, and the slot holds no value (EMPTY
        // is only ever restored when nothing was written).
        let stored = unsafe { (*self.value.get()).write(value) } as *const T;
        self.state.store(READY, Ordering::Release);
        // SAFETY: the value was just written and is never moved or written again while the
        // cell lives; the returned borrow is tied to `&self`.
        unsafe { &*stored }
    }
}

impl<T> Drop for SetOnce<T> {
    fn drop(&mut self) {
        if *self.state.get_mut() == READY {
            // SAFETY: READY means the value was written; `&mut self` means nobody else can
            // observe it, and it is dropped exactly once, here.
            unsafe { self.value.get_mut().assume_init_drop() }
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SetOnce<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.get() {
            Some(v) => f.debug_tuple("SetOnce").field(v).finish(),
            None => f.write_str("SetOnce(<unset>)"),
        }
    }
}

impl<T> Default for SetOnce<T> {
    fn default() -> SetOnce<T> {
        SetOnce::new()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::SetOnce;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn born_set_cell_reads_and_refuses_and_drops() {
        let v = Arc::new(7);
        let c = SetOnce::with_value(Arc::clone(&v));
        assert_eq!(**c.get().unwrap(), 7);
        assert_eq!(**c.get_or_init(|| Arc::new(8)), 7);
        assert!(c.set(Arc::new(9)).is_err());
        assert_eq!(Arc::strong_count(&v), 2);
        drop(c);
        assert_eq!(Arc::strong_count(&v), 1);
    }

    #[test]
    fn set_once_then_refuse() {
        let c = SetOnce::new();
        assert!(c.get().is_none());
        assert_eq!(*c.set(5).unwrap(), 5);
        assert_eq!(c.set(6), Err(6));
        assert_eq!(*c.get_or_init(|| 7), 5);
        assert_eq!(c.get(), Some(&5));
    }

    #[test]
    fn racing_threads_see_one_value_made_once() {
        for _ in 0..50 {
            let cell = Arc::new(SetOnce::new());
            let calls = Arc::new(AtomicUsize::new(0));
            let seen: Vec<usize> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|i| {
                        let (cell, calls) = (cell.clone(), calls.clone());
                        s.spawn(move || {
                            *cell.get_or_init(|| {
                                calls.fetch_add(1, Ordering::SeqCst);
                                i
                            })
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert_eq!(calls.load(Ordering::SeqCst), 1);
            assert!(seen.iter().all(|v| *v == seen[0]));
        }
    }

    #[test]
    fn a_panicking_init_leaves_the_cell_empty() {
        let c: SetOnce<String> = SetOnce::new();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            c.get_or_init(|| panic!("no value"));
        }));
        assert!(r.is_err());
        assert!(c.get().is_none());
        assert_eq!(c.get_or_init(|| "later".into()), "later");
    }

    #[test]
    fn the_value_is_dropped_once() {
        let token = Arc::new(());
        {
            let c = SetOnce::new();
            c.set(token.clone()).unwrap();
            assert_eq!(Arc::strong_count(&token), 2);
        }
        assert_eq!(Arc::strong_count(&token), 1);
        let empty: SetOnce<Arc<()>> = SetOnce::new();
        drop(empty);
    }
}
