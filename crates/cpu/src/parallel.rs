//! Parallel loops in which the calling thread takes part.
//!
//! A kernel splits its work into blocks; [`for_each_block`] runs them on the calling thread
//! and on up to `threads - 1` helpers from rayon's pool, handing out runs of block indices from
//! one atomic counter (each run a share of what is left: long contiguous runs first, short
//! ones at the end). The caller starts at once and never waits for a helper to *start*: a
//! helper that wakes after every block is taken leaves without touching the job. This is
//! what OpenMP gives PyTorch and what `par_iter` from outside the pool does not: there the
//! caller blocks until a sleeping worker wakes, which on a small (virtual) machine costs tens
//! of microseconds per call — more than a second thread saves on a training step's layers.
//!
//! The worst case is the single-threaded time plus one task spawn; the best is an even split.

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use switchyard_core::{Error, Result};

/// Threads a parallel loop may use (rayon's pool size: `RAYON_NUM_THREADS`, else one per
/// logical CPU), at most the calling thread's cap ([`cap_threads_of_this_thread`]).
pub(crate) fn num_threads() -> usize {
    let n = rayon::current_num_threads();
    THREAD_CAP
        .with(Cell::get)
        .map_or(n, |cap| n.min(cap.load(Ordering::Relaxed).max(1)))
}

/// The size of the pool parallel loops draw helpers from (`RAYON_NUM_THREADS`, else one per
/// logical CPU), whatever the calling thread's cap.
pub fn pool_threads() -> usize {
    rayon::current_num_threads()
}

thread_local! {
    /// The calling thread's cap on its parallel loops, read at each loop's start.
    static THREAD_CAP: Cell<Option<&'static AtomicUsize>> = const { Cell::new(None) };
}

/// Caps the parallel loops the calling thread starts at `cap`'s value at each loop's start
/// (at least 1): a thread running kernels beside another busy thread (the lazy device thread
/// beside the thread tracing the next step) leaves that thread its core.
pub fn cap_threads_of_this_thread(cap: &'static AtomicUsize) {
    THREAD_CAP.with(|c| c.set(Some(cap)));
}

/// The body of a parallel loop, called once per block index.
type Body<'a> = dyn Fn(usize) -> Result<()> + Sync + 'a;

/// One parallel loop shared between the caller and its helpers.
struct Job {
    /// The next block index to hand out.
    next: AtomicUsize,
    /// A claim takes `1 / share` of the blocks left (twice the number of participants).
    share: usize,
    /// Blocks finished (run, skipped after a failure, or panicked).
    done: AtomicUsize,
    blocks: usize,
    /// Set by the first failing block: later blocks are skipped.
    failed: AtomicBool,
    /// The first error or panic payload.
    outcome: Mutex<Option<Outcome>>,
    /// The body, its lifetime erased. Only dereferenced after claiming a block index below
    /// `blocks`; the caller does not return before every such block is done.
    body: *const Body<'static>,
}

enum Outcome {
    Failed(Error),
    Panicked(Box<dyn Any + Send>),
}

// SAFETY: `body` points to a `Sync` closure, so calling it from several threads is allowed;
// the pointer is only dereferenced while the caller of `for_each_block` keeps the closure
// alive (see `Job::body`). The other fields are `Send + Sync` themselves.
unsafe impl Send for Job {}
// SAFETY: as for `Send`.
unsafe impl Sync for Job {}

impl Job {
    /// Claims the next run of blocks: a share of what is left (OpenMP's "guided" schedule),
    /// so that each thread walks long contiguous runs (what the hardware prefetchers and the
    /// caches want) while the last runs stay small enough to balance a late helper.
    fn claim(&self) -> Option<std::ops::Range<usize>> {
        let mut start = self.next.load(Ordering::Relaxed);
        loop {
            if start >= self.blocks {
                return None;
            }
            let take = ((self.blocks - start) / self.share).max(1);
            match self.next.compare_exchange_weak(
                start,
                start + take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(start..start + take),
                Err(now) => start = now,
            }
        }
    }

    /// Claims and runs blocks until none are left.
    fn work(&self) {
        while let Some(run) = self.claim() {
            let count = run.len();
            for i in run {
                if self.failed.load(Ordering::Relaxed) {
                    break;
                }
                // SAFETY: block `i < blocks` is claimed and its run is not yet counted done,
                // so the caller is still inside `for_each_block` and the closure is alive.
                let body = unsafe { &*self.body };
                let outcome = match catch_unwind(AssertUnwindSafe(|| body(i))) {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(Outcome::Failed(e)),
                    Err(payload) => Some(Outcome::Panicked(payload)),
                };
                if let Some(outcome) = outcome {
                    self.failed.store(true, Ordering::Relaxed);
                    let mut slot = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
                    slot.get_or_insert(outcome);
                }
            }
            // Release: the run's writes happen before the caller sees it done (blocks skipped
            // after a failure count as done too).
            self.done.fetch_add(count, Ordering::Release);
        }
    }
}

/// Runs `body(i)` for every `i` in `0..blocks`, in parallel when there are several blocks
/// and threads, the calling thread included. Returns the first error; a panicking block is
/// re-raised on the caller once every running block has finished.
pub(crate) fn for_each_block(blocks: usize, body: &Body<'_>) -> Result<()> {
    let helpers = num_threads()
        .saturating_sub(1)
        .min(blocks.saturating_sub(1));
    if helpers == 0 {
        return (0..blocks).try_for_each(body);
    }
    // SAFETY: only the lifetime is changed; `Job::body` documents why the pointer is never
    // used after this function returns.
    let body: *const Body<'static> = unsafe {
        std::mem::transmute::<*const Body<'_>, *const Body<'static>>(std::ptr::from_ref(body))
    };
    let job = Arc::new(Job {
        next: AtomicUsize::new(0),
        share: 2 * (helpers + 1),
        done: AtomicUsize::new(0),
        blocks,
        failed: AtomicBool::new(false),
        outcome: Mutex::new(None),
        body,
    });
    for _ in 0..helpers {
        let job = Arc::clone(&job);
        rayon::spawn(move || job.work());
    }
    job.work();
    // Every block is claimed; wait for those still running on helpers.
    let mut spins = 0u32;
    while job.done.load(Ordering::Acquire) < blocks {
        if spins < 1 << 12 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    let outcome = job.outcome.lock().unwrap_or_else(|p| p.into_inner()).take();
    match outcome {
        None => Ok(()),
        Some(Outcome::Failed(e)) => Err(e),
        Some(Outcome::Panicked(payload)) => resume_unwind(payload),
    }
}

/// Runs `body(i, chunk)` over the `chunk`-element chunks of `data` (the last one may be
/// shorter) with [`for_each_block`].
pub(crate) fn for_each_chunk_mut<T: Send>(
    data: &mut [T],
    chunk: usize,
    body: &(dyn Fn(usize, &mut [T]) -> Result<()> + Sync),
) -> Result<()> {
    let chunk = chunk.max(1);
    let len = data.len();
    let base = SendPtr(data.as_mut_ptr());
    let base = &base;
    for_each_block(len.div_ceil(chunk), &move |i| {
        let start = i * chunk;
        let n = chunk.min(len - start);
        // SAFETY: `start + n <= len`, so the chunk lies inside `data`; chunks of distinct
        // indices are disjoint and each index is run once, so no two `&mut` overlap; `data`
        // stays mutably borrowed (unused otherwise) until `for_each_block` has returned.
        let part = unsafe { std::slice::from_raw_parts_mut(base.0.add(start), n) };
        body(i, part)
    })
}

/// Runs `body(item)` for every item, in parallel with [`for_each_block`]: for work already
/// cut into pieces that borrow several outputs at once (zipped chunk iterators). Each item is
/// handed out exactly once, through an uncontended lock per item.
pub(crate) fn for_each_item<I: Send>(
    items: impl IntoIterator<Item = I>,
    body: &(dyn Fn(I) -> Result<()> + Sync),
) -> Result<()> {
    let slots: Vec<Mutex<Option<I>>> = items.into_iter().map(|i| Mutex::new(Some(i))).collect();
    for_each_block(slots.len(), &|i| {
        let item = slots[i].lock().unwrap_or_else(|p| p.into_inner()).take();
        item.map_or(Ok(()), body)
    })
}

/// Chunk `i` of `data` cut as [`for_each_chunk_mut`] cuts (for inputs zipped with an output).
pub(crate) fn chunk_of<T>(data: &[T], chunk: usize, i: usize) -> &[T] {
    let start = (i * chunk).min(data.len());
    &data[start..(start + chunk).min(data.len())]
}

/// A pointer shared by the blocks of one loop.
pub(crate) struct SendPtr<T>(pub(crate) *mut T);

// SAFETY: users hand out disjoint parts of the pointee to different threads (each use states
// why); the pointer value itself may be shared.
unsafe impl<T: Send> Send for SendPtr<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Send> Sync for SendPtr<T> {}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn every_chunk_is_written_once_from_outside_and_inside_the_pool() {
        let run = || {
            let mut data = vec![0u32; 100_003];
            for_each_chunk_mut(&mut data, 1000, &|i, part| {
                for (k, x) in part.iter_mut().enumerate() {
                    *x += (i * 1000 + k) as u32;
                }
                Ok(())
            })
            .unwrap();
            assert!(data.iter().enumerate().all(|(k, &x)| x == k as u32));
        };
        run();
        pool(3).install(run);
    }

    #[test]
    fn blocks_run_on_several_threads_and_the_caller() {
        let caller = std::thread::current().id();
        let ids = Mutex::new(Vec::new());
        pool(4).install(|| {
            for_each_block(64, &|_| {
                std::thread::sleep(std::time::Duration::from_millis(1));
                ids.lock().unwrap().push(std::thread::current().id());
                Ok(())
            })
            .unwrap();
        });
        let mut ids = ids.into_inner().unwrap();
        assert_eq!(ids.len(), 64);
        ids.sort_by_key(|id| format!("{id:?}"));
        ids.dedup();
        assert!(ids.len() > 1, "64 blocks of 1 ms ran on one thread");
        // Inside `install` the caller is a pool thread; outside it must take part too.
        let outside = Mutex::new(Vec::new());
        for_each_block(16, &|_| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            outside.lock().unwrap().push(std::thread::current().id());
            Ok(())
        })
        .unwrap();
        let outside = outside.into_inner().unwrap();
        assert_eq!(outside.len(), 16);
        assert!(outside.contains(&caller), "the calling thread ran no block");
    }

    #[test]
    fn items_borrowing_two_outputs_are_each_run_once() {
        let (mut a, mut b) = (vec![0u64; 10_000], vec![0u64; 100]);
        let items = a.chunks_mut(100).zip(b.iter_mut()).enumerate();
        for_each_item(items, &|(i, (chunk, total))| {
            for (k, x) in chunk.iter_mut().enumerate() {
                *x = (i * 100 + k) as u64;
            }
            *total = chunk.iter().sum();
            Ok(())
        })
        .unwrap();
        assert!(a.iter().enumerate().all(|(k, &x)| x == k as u64));
        assert_eq!(b.iter().sum::<u64>(), (0..10_000u64).sum::<u64>());
    }

    #[test]
    fn the_first_error_is_returned_and_later_blocks_are_skipped() {
        let ran = AtomicUsize::new(0);
        let err = for_each_block(10_000, &|i| {
            ran.fetch_add(1, Ordering::Relaxed);
            if i == 3 {
                Err(Error::runtime("block 3 failed"))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("block 3 failed"));
        assert!(ran.load(Ordering::Relaxed) < 10_000);
    }

    #[test]
    fn a_panicking_block_reaches_the_caller_after_the_others_finish() {
        let finished = AtomicUsize::new(0);
        let caught = catch_unwind(AssertUnwindSafe(|| {
            pool(2).install(|| {
                for_each_block(8, &|i| {
                    if i == 5 {
                        panic!("block five");
                    }
                    finished.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
            })
        }));
        let payload = caught.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"block five"));
    }
}
