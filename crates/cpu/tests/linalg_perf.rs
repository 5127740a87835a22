//! Timings of the linalg and nn kernels against the figures PyTorch reaches on the same
//! machine (see `tools/oracle/linalg_perf.py`). Not run by default:
//!
//! ```text
//! cargo test --release -p switchyard-cpu --test linalg_perf -- --ignored --nocapture
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;
use switchyard_core::{Device, ScalarType, Tensor};
use switchyard_ops::structured::{Outs, create_out};

/// Median wall time of `reps` runs of `f`, after two warm-up runs.
fn median_secs(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    f();
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn randn(sizes: &[i64]) -> Tensor {
    let n: i64 = sizes.iter().product();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<f32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    Tensor::from_vec(data, sizes).unwrap()
}

fn mm(a: &Tensor, b: &Tensor) -> Tensor {
    let m = switchyard_ops::meta::mm(a, b, Outs::Functional).unwrap();
    let out = create_out(m.output(0).unwrap()).unwrap();
    switchyard_cpu::native::mm_out_cpu(&m, a, b, &out).unwrap();
    out
}

#[test]
#[ignore = "timing; run with --release --ignored --nocapture"]
fn matmul_timings() {
    let a = randn(&[1024, 1024]);
    let b = randn(&[1024, 1024]);
    let t = median_secs(20, || {
        mm(&a, &b);
    });
    println!(
        "mm 1024x1024x1024 f32: {:.3} ms, {:.1} GFLOP/s",
        t * 1e3,
        2.0 * 1024f64.powi(3) / t / 1e9
    );
    let x = randn(&[64, 784]);
    let w = randn(&[784, 256]);
    let t = median_secs(200, || {
        mm(&x, &w);
    });
    println!("mm 64x784 @ 784x256 f32: {:.1} us", t * 1e6);
    let _ = (Device::CPU, ScalarType::Float);
}
