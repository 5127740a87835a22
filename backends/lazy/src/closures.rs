//! Step closures (B.14, `torch._lazy.add_step_closure`): work queued for the end of the next
//! `mark_step`. Synchronous closures run in order on the thread calling `mark_step`, which
//! returns the first error; asynchronous ones run in order on a worker thread, which stops at
//! the first error and keeps it: the next asynchronous submission then fails with
//! `Cannot run asynchronous closure due to previously raised exception` and that closure never
//! runs. The worker's queue is bounded (`LTC_MAX_ASYNC_QUEUE`, default 100): a full queue
//! blocks the submitting `mark_step`.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use switchyard_core::{Error, Result};

/// A step closure.
pub type StepClosure = Box<dyn FnOnce() -> Result<()> + Send + 'static>;

static PENDING: Mutex<Vec<(StepClosure, bool)>> = Mutex::new(Vec::new());

/// Queues `closure` for the end of the next `mark_step` (`run_async`: on the worker thread).
pub fn add_step_closure(closure: StepClosure, run_async: bool) {
    PENDING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((closure, run_async));
}

struct Worker {
    sender: SyncSender<StepClosure>,
    handle: JoinHandle<()>,
}

struct AsyncState {
    worker: Option<Worker>,
}

static ASYNC: Mutex<AsyncState> = Mutex::new(AsyncState { worker: None });

/// The error that stopped the worker, until the next asynchronous submission reports it.
static ASYNC_ERROR: Mutex<Option<Error>> = Mutex::new(None);

fn queue_size() -> usize {
    std::env::var("LTC_MAX_ASYNC_QUEUE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(100)
}

fn event_loop(rx: Receiver<StepClosure>) {
    loop {
        match rx.recv_timeout(Duration::from_secs(3)) {
            Ok(closure) => {
                if let Err(e) = closure() {
                    *ASYNC_ERROR.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn run_async(closure: StepClosure) -> Result<()> {
    let mut st = ASYNC.lock().unwrap_or_else(PoisonError::into_inner);
    let sent = match st.worker.as_ref().filter(|w| !w.handle.is_finished()) {
        Some(w) => w.sender.send(closure).map_err(|e| e.0),
        None => Err(closure),
    };
    let closure = match sent {
        Ok(()) => return Ok(()),
        Err(closure) => closure,
    };
    let previous = ASYNC_ERROR
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(e) = previous {
        return Err(Error::runtime(format!(
            "Cannot run asynchronous closure due to previously raised exception: {e}"
        )));
    }
    start_and_send(&mut st, closure)
}

fn start_and_send(st: &mut AsyncState, closure: StepClosure) -> Result<()> {
    let (tx, rx) = sync_channel::<StepClosure>(queue_size());
    let handle = std::thread::Builder::new()
        .name("lazy-step-closures".into())
        .spawn(move || event_loop(rx))
        .map_err(|e| Error::runtime(format!("cannot start the step closure thread: {e}")))?;
    tx.send(closure)
        .map_err(|_| Error::runtime("the step closure thread ended before its first closure"))?;
    st.worker = Some(Worker { sender: tx, handle });
    Ok(())
}

/// Runs the queued closures (called by `mark_step` after the sync): synchronous ones now, in
/// order, stopping at the first error; asynchronous ones handed to the worker.
pub(crate) fn run_step_closures() -> Result<()> {
    let closures = std::mem::take(&mut *PENDING.lock().unwrap_or_else(PoisonError::into_inner));
    for (closure, is_async) in closures {
        if is_async {
            run_async(closure)?;
        } else {
            closure()?;
        }
    }
    Ok(())
}

/// Waits until the asynchronous closures queued so far have run (the worker is idle or gone).
pub fn wait_async_closures() {
    let handle = {
        let mut st = ASYNC.lock().unwrap_or_else(PoisonError::into_inner);
        st.worker.take().map(|w| {
            drop(w.sender);
            w.handle
        })
    };
    if let Some(h) = handle {
        // A closure that panicked is already gone; nothing to report here.
        let _ = h.join();
    }
}
