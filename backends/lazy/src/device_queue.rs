//! The device thread (LTC's asynchronous `SyncTensorsGraph`, `mark_step(wait=False)`): an
//! execution scheduled by [`crate::mark_step_async`] runs here, in scheduling order, while the
//! caller goes on tracing the next step. The step's tensors already hold placeholders
//! (`DeviceData` without a value); the run fills them, or records its error in them.
//!
//! Anything that needs a value waits for it: reading a placeholder ([`DeviceData::tensor`]
//! and the other value reads) waits for the scheduled runs, as does a synchronous sync (its
//! parameters may be placeholders) and [`wait`] (`wait_device_ops`). Runs are FIFO on one
//! thread, so a run's parameters that are an earlier run's placeholders are filled when it
//! starts. At most [`MAX_PENDING`] runs are in flight: scheduling another waits for the oldest.
//!
//! [`DeviceData::tensor`]: crate::data::DeviceData::tensor

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Work for the device thread.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// Runs scheduled and not finished.
static PENDING: Mutex<usize> = Mutex::new(0);
/// Signalled whenever a run finishes.
static FINISHED: Condvar = Condvar::new();
/// Whether the device thread was started (`false`: it could not be; runs are synchronous).
static STARTED: OnceLock<bool> = OnceLock::new();

/// Runs scheduled and not yet taken by the device thread.
struct Queue {
    jobs: VecDeque<Job>,
    /// The device thread is blocked on [`READY`]: a new job must wake it.
    sleeping: bool,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    jobs: VecDeque::new(),
    sleeping: false,
});
/// Signalled when a job arrives for a sleeping device thread.
static READY: Condvar = Condvar::new();
/// Jobs in [`QUEUE`], readable without its lock (the device thread spins on it).
static QUEUED: AtomicUsize = AtomicUsize::new(0);

/// How long the idle device thread polls for the next run before it sleeps. A training loop
/// schedules a run per step: waking a sleeping thread cost the scheduling thread about 8 µs
/// of a 250 µs step (a futex wake in a profile of the demo step), while a polling thread
/// takes the run at once. The poll uses the device thread's own core, idle otherwise.
const SPIN: Duration = Duration::from_micros(500);

/// How many threads the device thread's kernels may use: one fewer than the pool (at least
/// one) while nobody waits for it, since the scheduling thread is then tracing the next step
/// on a core of its own; the whole pool while someone waits (that thread is idle).
static DEVICE_THREADS: AtomicUsize = AtomicUsize::new(1);
/// Threads blocked in [`wait_while`] (waiting for runs to finish, or for room to schedule one).
static WAITERS: AtomicUsize = AtomicUsize::new(0);

fn set_device_threads() {
    let pool = switchyard_cpu::parallel::pool_threads();
    let n = if WAITERS.load(Ordering::SeqCst) > 0 {
        pool
    } else {
        pool.saturating_sub(1).max(1)
    };
    DEVICE_THREADS.store(n, Ordering::Relaxed);
}

thread_local! {
    /// Set on the device thread: it never waits for itself.
    static ON_DEVICE_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Starts the device thread once; whether it runs.
fn started() -> bool {
    *STARTED.get_or_init(|| {
        set_device_threads();
        std::thread::Builder::new()
            .name("lazy-device".into())
            .spawn(|| {
                ON_DEVICE_THREAD.with(|f| f.set(true));
                switchyard_cpu::parallel::cap_threads_of_this_thread(&DEVICE_THREADS);
                loop {
                    let job = next_job();
                    // A panicking run is a bug; the count must still come down, or every
                    // later wait would hang. Its placeholders stay empty and say so.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    finish_one();
                }
            })
            .is_ok()
    })
}

/// The next scheduled run, in order: polled for up to [`SPIN`], then waited for asleep.
fn next_job() -> Job {
    let start = Instant::now();
    while QUEUED.load(Ordering::Acquire) == 0 && start.elapsed() < SPIN {
        std::hint::spin_loop();
    }
    let mut queue = QUEUE.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if let Some(job) = queue.jobs.pop_front() {
            QUEUED.fetch_sub(1, Ordering::Release);
            return job;
        }
        queue.sleeping = true;
        queue = READY.wait(queue).unwrap_or_else(PoisonError::into_inner);
        queue.sleeping = false;
    }
}

fn finish_one() {
    let mut pending = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
    *pending = pending.saturating_sub(1);
    FINISHED.notify_all();
}

/// At most this many runs are scheduled and not finished: scheduling one more first waits
/// for the oldest, so a caller that traces faster than the device executes holds at most
/// this many steps' data in flight (one running, one queued).
const MAX_PENDING: usize = 2;

/// Schedules `job` on the device thread (first waiting while [`MAX_PENDING`] runs are
/// pending); gives it back when there is no device thread (the caller then runs it itself).
pub(crate) fn schedule(job: Job) -> std::result::Result<(), Job> {
    if !started() {
        return Err(job);
    }
    {
        let pending = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
        let mut pending = wait_while(pending, MAX_PENDING - 1);
        *pending += 1;
    }
    let mut queue = QUEUE.lock().unwrap_or_else(PoisonError::into_inner);
    if queue.jobs.try_reserve(1).is_err() {
        drop(queue);
        finish_one();
        return Err(job);
    }
    queue.jobs.push_back(job);
    QUEUED.fetch_add(1, Ordering::Release);
    // Woken only when asleep: a polling device thread sees the count.
    if queue.sleeping {
        READY.notify_one();
    }
    Ok(())
}

/// Waits until every scheduled run has finished (at once on the device thread itself).
pub(crate) fn wait() {
    if ON_DEVICE_THREAD.with(Cell::get) {
        return;
    }
    let pending = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
    drop(wait_while(pending, 0));
}

/// Blocks while more than `limit` runs are pending (the caller is idle meanwhile: the device
/// thread may use every core).
fn wait_while(mut pending: MutexGuard<'static, usize>, limit: usize) -> MutexGuard<'static, usize> {
    if *pending <= limit {
        return pending;
    }
    WAITERS.fetch_add(1, Ordering::SeqCst);
    set_device_threads();
    while *pending > limit {
        pending = FINISHED
            .wait(pending)
            .unwrap_or_else(PoisonError::into_inner);
    }
    WAITERS.fetch_sub(1, Ordering::SeqCst);
    set_device_threads();
    pending
}
