//! Timings of unary kernels over 16M `f32` elements, for comparison with PyTorch on the same
//! machine (`torch.exp(x, out=o)` etc.; the snippet is printed at the end). Plain `main` (no
//! benchmark framework dependency); run once, by hand:
//!
//!     cargo bench -p switchyard-cpu --bench unary
//!
//! Prints, per operator, the best of several runs in milliseconds and in GB/s of memory
//! traffic (4 bytes read + 4 written per element).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;
use switchyard_core::{Device, ScalarType, Tensor};
use switchyard_ops::op;

// Linking the crate registers the CPU kernels with the dispatcher.
use switchyard_cpu as _;

const N: usize = 16 * 1024 * 1024;

fn best(reps: u32, mut f: impl FnMut()) -> f64 {
    f();
    (0..reps)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    // Values in [-4, 4) (like `torch.rand(n) * 8 - 4`), deterministic.
    let values: Vec<f32> = (0..N)
        .map(|i| ((i.wrapping_mul(2_654_435_761) % 1_000_003) as f32 / 1_000_003.0) * 8.0 - 4.0)
        .collect();
    let x = Tensor::from_vec(values, &[N as i64]).unwrap();
    let out = Tensor::allocate(&[N as i64], ScalarType::Float, Device::CPU).unwrap();
    type OutOp = fn(&Tensor, &Tensor) -> switchyard_core::Result<Tensor>;
    let ops: [(&str, OutOp); 8] = [
        ("exp", op::exp_out::call),
        ("tanh", op::tanh_out::call),
        ("sigmoid", op::sigmoid_out::call),
        ("log", op::log_out::call),
        ("sin", op::sin_out::call),
        ("sqrt", op::sqrt_out::call),
        ("neg", op::neg_out::call),
        ("relu", op::relu_out::call),
    ];
    println!("threads {}", rayon::current_num_threads());
    for (name, f) in ops {
        let t = best(7, || {
            f(&x, &out).unwrap();
        });
        println!(
            "{name}_16M_out_ms {:.2}  ({:.2} GB/s)",
            t * 1e3,
            8.0 * N as f64 / t / 1e9
        );
    }
    println!(
        "PyTorch: x = torch.rand(16 << 20) * 8 - 4; o = torch.empty_like(x); time torch.<op>(x, out=o)"
    );
}
