//! The lazy backend's figures of plan §8.4 (compared with PyTorch by `tools/bench/compare.py`):
//!
//! * `lazy/trace_1000op`: tracing 500 × `y = y * 1.0001 + 0.5` (1000 operators) on a synced
//!   16-element lazy tensor, then dropping it (no execution) — PyTorch LTC's `trace(500)`;
//! * `lazy/mark_step_1000op_cached`: the same plus `mark_step()` (a cached program: one fused
//!   group of 1000 operations over 16 elements) — LTC's `step()`;
//! * `lazy/chain8_16M`: PyTorch's benchmark chain (`x*2+1`, `sin`, square, `-0.5`, `exp`,
//!   `/3`, `relu`) traced on a synced 16M-element f32 tensor and run by `mark_step()` (one
//!   fused loop), the result dropped — `torch.compile(chain)(x)`;
//! * `eager/chain8_16M`: the same chain on CPU tensors, operator by operator;
//! * `lazy/softmax_expr_4096x1024`, `lazy/layer_norm_expr_4096x1024`: `softmax(a*1.5-0.25, 1)`
//!   and `layer_norm(tanh(a)+a, [1024])` traced and run — the compiled `sm_expr` / `ln_expr`;
//! * `lazy/demo_mlp_step`, `train/demo_mlp_step`: one training step of `switchyard demo`'s
//!   network (`crates/cli/src/train.rs`: MLP 11→64→64→6, batch 64 drawn by `index_select`
//!   from 1279 standardised-like examples, cross-entropy, Adam lr 5e-3) on the lazy device
//!   (warm: the step's graph is cached, `mark_step_async()` ends every step, so the device
//!   thread runs step n while step n+1 is traced; each timed batch of steps ends with
//!   `wait_device_ops()`, so every step's execution is inside the time) and eagerly on CPU.
//!   `compare.py`'s `demo_step` row gives their ratio (lazy/eager, target at most 1);
//!   `lazy/demo_mlp_step_reuse_ir` is the lazy step with `set_reuse_ir(true)`.
//!
//! Run: `cargo bench -p switchyard-lazy --bench lazy` (or one id with `-- --exact <id>`).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;
use switchyard_core::{Device, Result, Tensor};
use switchyard_ops::{TensorOps, op};

#[path = "shared/demo_step.rs"]
mod demo_step;
use demo_step::DemoTrainer;

fn values(sizes: &[i64]) -> Tensor {
    let n: i64 = sizes.iter().product();
    let v: Vec<f32> = (0..n as usize)
        .map(|i| ((i.wrapping_mul(2_654_435_761) % 1_000_003) as f32 / 1_000_003.0) * 8.0 - 4.0)
        .collect();
    Tensor::from_vec(v, sizes).unwrap()
}

fn synced_lazy(t: &Tensor) -> Tensor {
    let l = switchyard_lazy::to_lazy(t).unwrap();
    switchyard_lazy::mark_step().unwrap();
    l
}

fn trace(x: &Tensor, n: usize) -> Tensor {
    let mut y = Clone::clone(x);
    for _ in 0..n {
        y = y.mul_scalar(1.0001).unwrap().add_scalar(0.5).unwrap();
    }
    y
}

fn chain8(x: &Tensor) -> Result<Tensor> {
    let mut y = x.mul_scalar(2.0)?;
    y = y.add_scalar(1.0)?;
    y = y.sin()?;
    y = y.mul(&y)?;
    y = y.sub_scalar(0.5)?;
    y = y.exp()?;
    y = y.div_scalar(3.0)?;
    y.relu()
}

/// `iters` lazy demo steps and the wait for the last one's execution.
fn timed_steps(demo: &mut DemoTrainer, iters: u64) -> Duration {
    switchyard_lazy::wait_device_ops();
    let start = std::time::Instant::now();
    for _ in 0..iters {
        black_box(demo.step().unwrap());
    }
    switchyard_lazy::wait_device_ops();
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    switchyard_lazy::init().unwrap();
    let mut g = c.benchmark_group("lazy");
    let small = synced_lazy(&values(&[16]));
    g.bench_function("trace_1000op", |b| {
        b.iter(|| drop(black_box(trace(&small, 500))))
    });
    g.bench_function("mark_step_1000op_cached", |b| {
        b.iter(|| {
            let y = trace(&small, 500);
            switchyard_lazy::mark_step().unwrap();
            black_box(y)
        })
    });
    let mut lazy_demo = DemoTrainer::new(switchyard_lazy::device()).unwrap();
    // Warm: the first steps compile the step's graph (the first differs: Adam's state is new).
    for _ in 0..3 {
        lazy_demo.step().unwrap();
    }
    g.bench_function("demo_mlp_step", |b| {
        b.iter_custom(|iters| timed_steps(&mut lazy_demo, iters))
    });
    drop(lazy_demo);
    // The same with IR reuse across steps (off by default, as in PyTorch).
    switchyard_lazy::set_reuse_ir(true);
    let mut lazy_demo = DemoTrainer::new(switchyard_lazy::device()).unwrap();
    for _ in 0..3 {
        lazy_demo.step().unwrap();
    }
    g.bench_function("demo_mlp_step_reuse_ir", |b| {
        b.iter_custom(|iters| timed_steps(&mut lazy_demo, iters))
    });
    drop(lazy_demo);
    switchyard_lazy::set_reuse_ir(false);
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    let x = values(&[16 * 1024 * 1024]);
    let lx = synced_lazy(&x);
    g.bench_function("chain8_16M", |b| {
        b.iter(|| {
            let y = chain8(&lx).unwrap();
            switchyard_lazy::mark_step().unwrap();
            black_box(y)
        })
    });
    drop(lx);
    let a = values(&[4096, 1024]);
    let la = synced_lazy(&a);
    g.bench_function("softmax_expr_4096x1024", |b| {
        b.iter(|| {
            let y = la
                .mul_scalar(1.5)
                .unwrap()
                .sub_scalar(0.25)
                .unwrap()
                .softmax(1)
                .unwrap();
            switchyard_lazy::mark_step().unwrap();
            black_box(y)
        })
    });
    g.bench_function("layer_norm_expr_4096x1024", |b| {
        b.iter(|| {
            let e = la.tanh().unwrap().add(&la).unwrap();
            let y = op::native_layer_norm::call(&e, &[1024], None, None, 1e-5)
                .unwrap()
                .0;
            switchyard_lazy::mark_step().unwrap();
            black_box(y)
        })
    });
    g.finish();
    let mut e = c.benchmark_group("eager");
    e.sample_size(10).measurement_time(Duration::from_secs(3));
    e.bench_function("chain8_16M", |b| b.iter(|| black_box(chain8(&x).unwrap())));
    e.finish();
    // Under `train/`, beside switchyard-nn's `train/mlp_step_b64`.
    let mut t = c.benchmark_group("train");
    let mut eager_demo = DemoTrainer::new(Device::CPU).unwrap();
    t.bench_function("demo_mlp_step", |b| {
        b.iter(|| black_box(eager_demo.step().unwrap()))
    });
    t.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
