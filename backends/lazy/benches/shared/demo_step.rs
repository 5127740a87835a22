//! `switchyard demo`'s training step (`crates/cli/src/train.rs`), shared by the bench
//! (`lazy/demo_mlp_step`, `train/demo_mlp_step`) and the lazy tests (`tests/lazy/demo.rs`,
//! which include this file; not under `benches/` directly, where cargo would take it for a bench), so both time and check the same step.

use switchyard_autograd::AutogradTensor;
use switchyard_core::{Device, Result, Tensor};
use switchyard_nn::functional::{Reduction, cross_entropy};
use switchyard_nn::optim::{Adam, AdamOptions, Optimizer};
use switchyard_nn::{Linear, Module, ReLU, Sequential};
use switchyard_ops::op;

/// The demo's network, data shapes and optimizer, stepping through fixed batches.
pub struct DemoTrainer {
    /// MLP 11 → 64 → 64 → 6 with ReLU between.
    pub net: Sequential,
    opt: Adam,
    x_train: Tensor,
    y_train: Tensor,
    /// Batches of row indices (CPU), used in turn as the demo's shuffled order is.
    batches: Vec<Tensor>,
    next: usize,
    device: Device,
}

impl DemoTrainer {
    /// Training examples (the wine data's 80%).
    pub const EXAMPLES: i64 = 1279;
    /// Features per example.
    pub const FEATURES: i64 = 11;
    /// Classes.
    pub const CLASSES: i64 = 6;
    /// Examples per step.
    pub const BATCH: i64 = 64;

    /// A fresh network (seed 0, as the demo's) and Adam (lr 5e-3) on `device`.
    pub fn new(device: Device) -> Result<DemoTrainer> {
        switchyard_core::generator::manual_seed(0)?;
        let mut net = Sequential::new(vec![
            Box::new(Linear::new(Self::FEATURES, 64, true)?),
            Box::new(ReLU),
            Box::new(Linear::new(64, 64, true)?),
            Box::new(ReLU),
            Box::new(Linear::new(64, Self::CLASSES, true)?),
        ]);
        net.to_device(device)?;
        let opt = Adam::new(net.parameters(), 5e-3, AdamOptions::adam())?;
        // Standardised-like features in [-4, 4) and classes 0..6: the wine data's shapes.
        let n = (Self::EXAMPLES * Self::FEATURES) as usize;
        let x: Vec<f32> = (0..n)
            .map(|i| ((i.wrapping_mul(2_654_435_761) % 1_000_003) as f32 / 1_000_003.0) * 8.0 - 4.0)
            .collect();
        let x = Tensor::from_vec(x, &[Self::EXAMPLES, Self::FEATURES])?;
        let y: Vec<i64> = (0..Self::EXAMPLES)
            .map(|i| (i * 7 + i / 5) % Self::CLASSES)
            .collect();
        let y = Tensor::from_vec(y, &[Self::EXAMPLES])?;
        let batches = (0..Self::EXAMPLES / Self::BATCH)
            .map(|b| {
                let idx: Vec<i64> = (0..Self::BATCH)
                    .map(|i| (b * Self::BATCH + i) * 389 % Self::EXAMPLES)
                    .collect();
                Tensor::from_vec(idx, &[Self::BATCH])
            })
            .collect::<Result<_>>()?;
        Ok(DemoTrainer {
            net,
            opt,
            x_train: to_device(&x, device)?,
            y_train: to_device(&y, device)?,
            batches,
            next: 0,
            device,
        })
    }

    /// One step as the demo times it: the batch's indices moved to the device,
    /// `index_select`, `zero_grad`, forward, loss, backward, Adam's update and, on lazy,
    /// `mark_step_async()` (the execution runs on the device thread; reading the loss waits for
    /// it). Returns the loss.
    pub fn step(&mut self) -> Result<Tensor> {
        let idx = to_device(&self.batches[self.next], self.device)?;
        self.next = (self.next + 1) % self.batches.len();
        let xb = op::index_select::call(&self.x_train, 0, &idx)?;
        let yb = op::index_select::call(&self.y_train, 0, &idx)?;
        self.opt.zero_grad()?;
        let logits = self.net.forward(&xb)?;
        let loss = cross_entropy(&logits, &yb, None, Reduction::Mean, -100, 0.0)?;
        loss.backward()?;
        self.opt.step()?;
        if self.device != Device::CPU {
            switchyard_lazy::mark_step_async()?;
        }
        Ok(loss)
    }
}

fn to_device(t: &Tensor, device: Device) -> Result<Tensor> {
    if device == Device::CPU {
        return Ok(Clone::clone(t));
    }
    op::_to_copy::call(t, None, None, Some(device), None, false, None)
}
