//! Counters and metrics (B.12): named counters (`lazy::<op>`, `aten::<op>` fallbacks,
//! `MarkStep`, `CachedCompile`, `UncachedCompile`, ...), valid only while non-zero, and timed
//! metrics (`CompileTime`, `ExecuteTime`) with their sample counts and totals; a text report.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

static COUNTERS: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());
static METRICS: Mutex<BTreeMap<String, (u64, Duration)>> = Mutex::new(BTreeMap::new());

/// A counter with a fixed name (the generated kernels' `lazy::<op>`).
pub struct Counter {
    name: &'static str,
}

impl Counter {
    /// A counter named `name`.
    pub const fn new(name: &'static str) -> Counter {
        Counter { name }
    }

    /// Adds one.
    pub fn inc(&self) {
        counter_add(self.name, 1);
    }
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
    COUNTERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
        .copied()
        .filter(|&v| v > 0)
}

/// The names of the counters with a non-zero value, sorted.
pub fn counter_names() -> Vec<String> {
    COUNTERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
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
    for (name, v) in COUNTERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        if *v > 0 {
            out.push_str(&format!("Counter: {name}\n  Value: {v}\n"));
        }
    }
    out
}
