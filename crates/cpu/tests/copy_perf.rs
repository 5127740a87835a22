//! Timings of the copy kernels, for comparison with PyTorch on the same machine (the same
//! cases as `tools/oracle/copy_bench.py`). Not a benchmark suite: run once, by hand,
//!
//!     cargo test --release -p switchyard-cpu --test copy_perf -- --ignored --nocapture

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;
use switchyard_core::{Device, Scalar, ScalarType, Tensor};
use switchyard_cpu::native as cpu;
use switchyard_ops::native as ops;

fn bench(name: &str, reps: u32, mut f: impl FnMut()) {
    f();
    let t0 = Instant::now();
    for _ in 0..reps {
        f();
    }
    let ms = t0.elapsed().as_secs_f64() * 1e3 / f64::from(reps);
    println!("{name}: {ms:.3} ms");
}

fn filled(n: i64, dt: ScalarType) -> Tensor {
    let t = Tensor::allocate(&[n], ScalarType::Float, Device::CPU).unwrap();
    cpu::fill__scalar(&t, Scalar::Float(1.25)).unwrap();
    ops::_to_copy(&t, Some(dt), None, None, None, false, None).unwrap()
}

#[test]
#[ignore = "timing run, see the module documentation"]
fn copy_timings() {
    let n = 1 << 24;
    let a = filled(n, ScalarType::Float);
    let b = Tensor::allocate(&[n], ScalarType::Float, Device::CPU).unwrap();
    bench("f32 contiguous 16M", 20, || {
        ops::copy_(&b, &a, false).unwrap();
    });
    let h = Tensor::allocate(&[n], ScalarType::Half, Device::CPU).unwrap();
    bench("f32->f16 16M", 20, || {
        ops::copy_(&h, &a, false).unwrap();
    });
    bench("f16->f32 16M", 20, || {
        ops::copy_(&b, &h, false).unwrap();
    });
    let i = Tensor::allocate(&[n], ScalarType::Int, Device::CPU).unwrap();
    bench("f32->i32 16M", 20, || {
        ops::copy_(&i, &a, false).unwrap();
    });
    let d = Tensor::allocate(&[n], ScalarType::Double, Device::CPU).unwrap();
    bench("f32->f64 16M", 20, || {
        ops::copy_(&d, &a, false).unwrap();
    });
    let m = ops::view(&filled(4096 * 4096, ScalarType::Float), &[4096, 4096]).unwrap();
    let o = Tensor::allocate(&[4096, 4096], ScalarType::Float, Device::CPU).unwrap();
    let mt = ops::t(&m).unwrap();
    bench("transpose f32 4096^2", 20, || {
        ops::copy_(&o, &mt, false).unwrap();
    });
    let s = filled(1000, ScalarType::Float);
    let so = Tensor::allocate(&[1000], ScalarType::Float, Device::CPU).unwrap();
    bench("f32 1000", 10_000, || {
        ops::copy_(&so, &s, false).unwrap();
    });
    let x = ops::view(&filled(2048 * 8192, ScalarType::Float), &[2048, 8192]).unwrap();
    let xs = ops::slice(&x, 1, None, None, 2).unwrap();
    let xo = Tensor::allocate(&[2048, 4096], ScalarType::Float, Device::CPU).unwrap();
    bench("strided f32 2048x4096 step2", 20, || {
        ops::copy_(&xo, &xs, false).unwrap();
    });
    bench("zero_ 16M", 20, || {
        cpu::zero_(&b).unwrap();
    });
    bench("fill_ 16M", 20, || {
        cpu::fill__scalar(&b, Scalar::Float(1.5)).unwrap();
    });
    bench("clone 16M", 20, || {
        ops::clone(&a, None).unwrap();
    });
}
