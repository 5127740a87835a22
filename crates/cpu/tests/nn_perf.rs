//! Timings of the nn kernels against the figures PyTorch reaches on the same machine (see
//! `tools/oracle/nn_perf.py`). Not run by default:
//!
//! ```text
//! cargo test --release -p switchyard-cpu --test nn_perf -- --ignored --nocapture
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;
use switchyard_core::Tensor;

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

fn uniform(sizes: &[i64], seed: u64) -> Tensor {
    let n: i64 = sizes.iter().product();
    let mut state = seed | 1;
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

#[test]
#[ignore = "timing; run with --release --ignored --nocapture"]
fn layer_norm_timings() {
    let x = uniform(&[4096, 1024], 1);
    let w = uniform(&[1024], 2);
    let b = uniform(&[1024], 3);
    let t = median_secs(50, || {
        switchyard_cpu::native::layer_norm_cpu(&x, &[1024], Some(&w), Some(&b), 1e-5).unwrap();
    });
    println!(
        "native_layer_norm [4096, 1024] f32 with weight and bias: {:.3} ms",
        t * 1e3
    );
}
