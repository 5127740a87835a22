//! Shared test support: one test at a time (the registry, the metrics and the caches are
//! process-wide), and comparisons.

use std::sync::{Mutex, MutexGuard, PoisonError};

use switchyard_core::Tensor;

static LOCK: Mutex<()> = Mutex::new(());

/// Serialises a test, initialises the backend, syncs what earlier tests left pending and
/// resets the metrics.
pub fn setup() -> MutexGuard<'static, ()> {
    let g = LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    switchyard_lazy::init().unwrap();
    switchyard_lazy::mark_step().unwrap();
    switchyard_lazy::reset_metrics();
    g
}

/// A counter's value, 0 when unset.
pub fn counter(name: &str) -> u64 {
    switchyard_lazy::counter_value(name).unwrap_or(0)
}

/// `t` (lazy or not) as f32 values on the CPU, with its sizes.
pub fn values(t: &Tensor) -> (Vec<i64>, Vec<f32>) {
    let cpu = if switchyard_lazy::is_lazy(t) {
        switchyard_lazy::to_cpu(t).unwrap()
    } else {
        t.clone()
    };
    let f = switchyard_ops::op::_to_copy::call(
        &cpu,
        Some(switchyard_core::ScalarType::Float),
        None,
        None,
        None,
        false,
        None,
    )
    .unwrap();
    (f.sizes().to_vec(), f.contiguous_values())
}

trait ContiguousValues {
    fn contiguous_values(&self) -> Vec<f32>;
}

impl ContiguousValues for Tensor {
    fn contiguous_values(&self) -> Vec<f32> {
        let c =
            switchyard_ops::op::clone::call(self, Some(switchyard_core::MemoryFormat::Contiguous))
                .unwrap();
        c.to_vec::<f32>().unwrap()
    }
}

/// Asserts `lazy` and `eager` hold the same sizes and values (within `tol`).
pub fn assert_close(lazy: &Tensor, eager: &Tensor, tol: f32) {
    let (ls, lv) = values(lazy);
    let (es, ev) = values(eager);
    assert_eq!(ls, es, "sizes differ");
    for (i, (a, b)) in lv.iter().zip(&ev).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()) || (a.is_nan() && b.is_nan()),
            "element {i}: lazy {a} vs eager {b}"
        );
    }
}

/// A deterministic CPU tensor of `sizes` with values in [-2, 2).
pub fn sample(sizes: &[i64], seed: u64) -> Tensor {
    let n: i64 = sizes.iter().product();
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let data: Vec<f32> = (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect();
    Tensor::from_vec(data, sizes).unwrap()
}
