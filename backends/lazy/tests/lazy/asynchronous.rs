//! `mark_step_async` (PyTorch's `torch._lazy.mark_step()`, `wait=False`): the execution runs
//! on the device thread while the caller goes on tracing; reads of the results wait for it,
//! its errors surface where its data is read, and graphs that draw random numbers still run
//! before the call returns.

use switchyard_core::{Device, Tensor};
use switchyard_ops::{TensorOps, op};

use crate::support::{counter, sample, setup, values};

fn lazy(t: &Tensor) -> Tensor {
    switchyard_lazy::to_lazy(t).unwrap()
}

/// Hand-computed: a chain over `x`, stepped three times with the next step traced on the
/// previous step's placeholders before its execution is known to have finished.
#[test]
fn steps_traced_on_pending_results_give_the_synchronous_values() {
    let _g = setup();
    let x0 = Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 4.0], &[4]).unwrap();
    // A large second operand, so each execution takes a while behind the tracing thread.
    let big = sample(&[1 << 20], 5);
    let (mut x, lbig) = (lazy(&x0), lazy(&big));
    let mut sums = Vec::new();
    for _ in 0..3 {
        x = x.mul_scalar(2.0).unwrap().add_scalar(1.0).unwrap();
        sums.push(lbig.mul(&lbig).unwrap().sum().unwrap());
        switchyard_lazy::mark_step_async().unwrap();
    }
    // x -> 2x + 1, three times: 8x + 7.
    let (_, got) = values(&x);
    assert_eq!(got, vec![15.0, -9.0, 11.0, 39.0]);
    let eager = big.mul(&big).unwrap().sum().unwrap();
    for s in &sums {
        assert_eq!(values(s), values(&eager));
    }
    assert_eq!(counter("MarkStep"), 3);
    assert_eq!(counter("UncachedCompile"), 1);
    assert_eq!(counter("CachedCompile"), 2);
}

/// The caller's reads and the device thread race for real: many threads read results of one
/// scheduled execution at once, each waiting for it.
#[test]
fn reads_from_other_threads_wait_for_the_scheduled_execution() {
    let _g = setup();
    let a = sample(&[512, 512], 11);
    let la = lazy(&a);
    let y = la.mm(&la).unwrap().tanh().unwrap();
    switchyard_lazy::mark_step_async().unwrap();
    let expect = values(&a.mm(&a).unwrap().tanh().unwrap());
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..4).map(|_| s.spawn(|| values(&y))).collect();
        for r in readers {
            let (sizes, got) = r.join().unwrap();
            assert_eq!(sizes, expect.0);
            for (g, e) in got.iter().zip(&expect.1) {
                assert!((g - e).abs() <= 1e-5 * (1.0 + e.abs()), "{g} vs {e}");
            }
        }
    });
    switchyard_lazy::wait_device_ops();
}

/// An index out of range is found only when the program runs (it is data): the asynchronous
/// step returns Ok, and reading the result (or anything computed from it) returns the
/// kernel's error, as the synchronous step would have.
#[test]
fn an_execution_error_surfaces_where_the_data_is_read() {
    let _g = setup();
    let x = lazy(&sample(&[5, 3], 2));
    let bad = lazy(&Tensor::from_vec(vec![0i64, 7], &[2]).unwrap());
    let picked = op::index_select::call(&x, 0, &bad).unwrap();
    switchyard_lazy::mark_step_async().unwrap();
    let err = switchyard_lazy::to_cpu(&picked).unwrap_err().to_string();
    assert!(err.contains("index out of range"), "{err}");
    // A later step reading the failed result fails the same way, and nothing hangs.
    let next = picked.add_scalar(1.0).unwrap();
    switchyard_lazy::mark_step_async().unwrap();
    let err2 = switchyard_lazy::to_cpu(&next).unwrap_err().to_string();
    assert!(err2.contains("index out of range"), "{err2}");
    switchyard_lazy::wait_device_ops();
    // The device is usable after the failure.
    let ok = x.add_scalar(1.0).unwrap();
    switchyard_lazy::mark_step_async().unwrap();
    assert_eq!(
        values(&ok),
        values(&sample(&[5, 3], 2).add_scalar(1.0).unwrap())
    );
}

/// A graph with a random operator runs before `mark_step_async` returns, so the CPU
/// generator's later draws come after its own, as in program order.
#[test]
fn a_random_graph_draws_before_the_call_returns() {
    let _g = setup();
    let draw = |device: Device| op::rand::call(&[6], None, None, Some(device), None).unwrap();
    switchyard_core::generator::manual_seed(3).unwrap();
    let (e1, e2) = (draw(Device::CPU), draw(Device::CPU));
    switchyard_core::generator::manual_seed(3).unwrap();
    let l1 = draw(switchyard_lazy::device());
    switchyard_lazy::mark_step_async().unwrap();
    let c2 = draw(Device::CPU);
    assert_eq!(values(&l1), values(&e1));
    assert_eq!(values(&c2), values(&e2));
}
