//! Counters and metrics (B.12): named counters (`lazy::<op>`, `aten::<op>` fallbacks,
//! `MarkStep`, `CachedCompile`, `UncachedCompile`, ...), valid only while non-zero, and timed
//! metrics (`CompileTime`, `ExecuteTime`) with their sample counts and totals; a text report.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

static COUNTERS: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());
static METRICS: Mutex<BTreeMap<String, (u64, Duration)>> = Mutex::new(BTreeMap::new());
/// The static [`Counter`]s incremented at least once (they register themselves then).
static STATIC_COUNTERS: Mutex<Vec<&'static Counter>> = Mutex::new(Vec::new());

/// A counter with a fixed name (the generated kernels' `lazy::<op>`, the tensor registry's):
/// an atomic of its own, so that the per-operator increments of tracing take no lock and
/// look nothing up (a locked map lookup per increment was a tenth of the tracing time).
pub struct Counter {
    name: &'static str,
    value: AtomicU64,
    registered: AtomicBool,
}

impl Counter {
    /// A counter named `name`.
    pub const fn new(name: &'static str) -> Counter {
        Counter {
            name,
            value: AtomicU64::new(0),
            registered: AtomicBool::new(false),
        }
    }

    /// Adds one.
    #[inline]
    pub fn inc(&'static self) {
        self.value.fetch_add(1, Ordering::Relaxed);
        if !self.registered.load(Ordering::Relaxed) {
            self.register();
        }
    }

    #[cold]
    fn register(&'static self) {
        let mut all = STATIC_COUNTERS
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !self.registered.swap(true, Ordering::Relaxed) {
            all.push(self);
        }
    }
}

/// Every counter's value: the named ones of [`counter_add`] and the static [`Counter`]s (a
/// name used by both adds up).
fn all_counters() -> BTreeMap<String, u64> {
    let mut all = COUNTERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for c in STATIC_COUNTERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        *all.entry(c.name.to_owned()).or_insert(0) += c.value.load(Ordering::Relaxed);
    }
    all
}

/// Adds `n` to counter `name`.
pub fn counter_add(name: &str, n: u64) {
    let mut c = COUNTERS.lock().unwrap_or_else(PoisonError::into_inner);
    match c.get_mut(name) {
        Some(v) => *v += n,
        None => {
            c.insert(name.to_owned(), n);
        }
    }
}

/// The value of counter `name`, `None` when unknown or zero (PyTorch's `counter_value`).
pub fn counter_value(name: &str) -> Option<u64> {
    all_counters().get(name).copied().filter(|&v| v > 0)
}

/// The names of the counters with a non-zero value, sorted.
pub fn counter_names() -> Vec<String> {
    all_counters()
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, _)| k.clone())
        .collect()
}

/// Records one timed sample of metric `name`.
pub fn record_time(name: &str, d: Duration) {
    let mut m = METRICS.lock().unwrap_or_else(PoisonError::into_inner);
    let e = m.entry(name.to_owned()).or_insert((0, Duration::ZERO));
    e.0 += 1;
    e.1 += d;
}

/// The number of samples and the total of metric `name`.
pub fn metric(name: &str) -> Option<(u64, Duration)> {
    METRICS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
        .copied()
}

/// Resets every counter and metric (PyTorch's `torch._lazy.metrics.reset()`).
pub fn reset_metrics() {
    COUNTERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
    for c in STATIC_COUNTERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        c.value.store(0, Ordering::Relaxed);
    }
    METRICS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
}

/// The metrics report: `Metric: <name>` with `TotalSamples` and `Accumulator` per metric, then
/// `Counter: <name>` / `Value: <v>` per valid counter (B.12's layout, without percentiles).
pub fn metrics_report() -> String {
    let mut out = String::new();
    for (name, (n, total)) in METRICS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        out.push_str(&format!(
            "Metric: {name}\n  TotalSamples: {n}\n  Accumulator: {total:?}\n"
        ));
    }
    for (name, v) in all_counters().iter() {
        if *v > 0 {
            out.push_str(&format!("Counter: {name}\n  Value: {v}\n"));
        }
    }
    out
}
