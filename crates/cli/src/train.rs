//! Training a small network on a real data set, as `switchyard demo` and `switchyard train`
//! show it: the red-wine quality data of `linfa-datasets` (1599 wines, 11 physico-chemical
//! features, quality scores 3–8 taken as six classes; shipped inside the crate, nothing is
//! downloaded), an MLP from `switchyard-nn`, Adam, cross-entropy, mini-batches.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use switchyard_autograd::{AutogradTensor, no_grad};
use switchyard_core::{Device, Error, Result, Scalar, ScalarType, Tensor};
use switchyard_nn::functional::{Reduction, cross_entropy};
use switchyard_nn::optim::{Adam, AdamOptions, Optimizer};
use switchyard_nn::{Linear, Module, ReLU, Sequential};
use switchyard_ops::op;

use crate::Outcome;

/// A classification data set split into training and test parts.
pub struct Dataset {
    /// Training features `[n, features]`, standardised with the training statistics.
    pub x_train: Tensor,
    /// Training classes `[n]` (int64).
    pub y_train: Tensor,
    /// Test features.
    pub x_test: Tensor,
    /// Test classes.
    pub y_test: Tensor,
    /// Number of classes.
    pub classes: i64,
}

/// A small deterministic generator for shuffling (the data order must not depend on the
/// platform or on other random draws).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn shuffle(&mut self, v: &mut [i64]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// The red-wine quality data, shuffled with `seed` and split 80/20.
pub fn wine_quality(seed: u64) -> Result<Dataset> {
    let ds = linfa_datasets::winequality();
    let records = ds.records();
    let targets = ds.targets();
    let (n, f) = (records.nrows(), records.ncols());
    let min = targets.iter().copied().min().unwrap_or(0);
    let max = targets.iter().copied().max().unwrap_or(0);
    let mut order: Vec<i64> = (0..n as i64).collect();
    SplitMix(seed).shuffle(&mut order);
    let n_train = n * 4 / 5;
    let take = |idx: &[i64]| -> (Vec<f32>, Vec<i64>) {
        let mut x = Vec::with_capacity(idx.len() * f);
        let mut y = Vec::with_capacity(idx.len());
        for &i in idx {
            let row = records.row(i as usize);
            x.extend(row.iter().map(|&v| v as f32));
            y.push((targets[i as usize] - min) as i64);
        }
        (x, y)
    };
    let (xt, yt) = take(&order[..n_train]);
    let (xs, ys) = take(&order[n_train..]);
    let x_train = Tensor::from_vec(xt, &[n_train as i64, f as i64])?;
    let x_test = Tensor::from_vec(xs, &[(n - n_train) as i64, f as i64])?;
    // Standardise with the training statistics.
    let mean = op::mean_dim::call(&x_train, Some(&[0]), true, None)?;
    let std = op::std_dim::call(&x_train, Some(&[0]), true, true)?;
    let norm = |x: &Tensor| -> Result<Tensor> {
        op::div_Tensor::call(&op::sub_Tensor::call(x, &mean, Scalar::Int(1))?, &std)
    };
    Ok(Dataset {
        x_train: norm(&x_train)?,
        y_train: Tensor::from_vec(yt, &[n_train as i64])?,
        x_test: norm(&x_test)?,
        y_test: Tensor::from_vec(ys, &[(n - n_train) as i64])?,
        classes: (max - min + 1) as i64,
    })
}

/// How to train.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Passes over the training data.
    pub epochs: usize,
    /// Examples per step.
    pub batch_size: i64,
    /// Adam's learning rate.
    pub lr: f64,
    /// Hidden units of each of the two hidden layers.
    pub hidden: i64,
    /// Seed of the initial weights and of the batch order.
    pub seed: u64,
    /// Where the network runs.
    pub device: Device,
    /// Draw a progress bar on the terminal (stderr).
    pub progress: bool,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            epochs: 20,
            batch_size: 64,
            lr: 5e-3,
            hidden: 64,
            seed: 0,
            device: Device::CPU,
            progress: true,
        }
    }
}

/// What one epoch gave.
#[derive(Clone, Debug)]
pub struct EpochStats {
    /// Mean training loss over the epoch's steps.
    pub loss: f64,
    /// Accuracy on the training data after the epoch.
    pub train_accuracy: f64,
    /// Accuracy on the test data after the epoch.
    pub test_accuracy: f64,
}

/// The training history.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Per epoch.
    pub epochs: Vec<EpochStats>,
    /// The loss of every step.
    pub step_losses: Vec<f64>,
    /// Time spent in training steps (forward, backward, update).
    pub train_time: Duration,
    /// Steps taken.
    pub steps: usize,
}

fn on(t: &Tensor, device: Device) -> Result<Tensor> {
    if t.device() == device {
        return Ok(t.clone());
    }
    op::_to_copy::call(t, None, None, Some(device), None, false, None)
}

fn scalar(t: &Tensor) -> Result<f64> {
    let t = on(t, Device::CPU)?;
    Ok(f64::from(
        op::_to_copy::call(&t, Some(ScalarType::Float), None, None, None, false, None)?
            .item::<f32>()?,
    ))
}

/// The MLP: features → hidden → hidden → classes, ReLU between.
pub fn model(features: i64, hidden: i64, classes: i64) -> Result<Sequential> {
    Ok(Sequential::new(vec![
        Box::new(Linear::new(features, hidden, true)?),
        Box::new(ReLU),
        Box::new(Linear::new(hidden, hidden, true)?),
        Box::new(ReLU),
        Box::new(Linear::new(hidden, classes, true)?),
    ]))
}

fn accuracy(model: &dyn Module, x: &Tensor, y: &Tensor) -> Result<f64> {
    let _guard = no_grad();
    let logits = model.forward(x)?;
    let pred = op::argmax::call(&logits, Some(1), false)?;
    let correct = op::sum::call(&op::eq_Tensor::call(&pred, y)?, Some(ScalarType::Long))?;
    let correct = on(&correct, Device::CPU)?.item::<i64>()?;
    Ok(correct as f64 / y.numel() as f64)
}

/// Trains a fresh MLP on `data`, writing one line per epoch (every `report_every` epochs and
/// the last) to `out`.
pub fn train(
    out: &mut dyn Write,
    data: &Dataset,
    o: &TrainOptions,
    report_every: usize,
) -> Outcome<History> {
    switchyard_core::generator::manual_seed(o.seed)?;
    let features = data.x_train.size(1)?;
    let mut net = model(features, o.hidden, data.classes)?;
    net.to_device(o.device)?;
    let mut opt = Adam::new(net.parameters(), o.lr, AdamOptions::adam())?;
    let (x_train, y_train) = (on(&data.x_train, o.device)?, on(&data.y_train, o.device)?);
    let (x_test, y_test) = (on(&data.x_test, o.device)?, on(&data.y_test, o.device)?);
    let n = data.x_train.size(0)?;
    let steps_per_epoch = ((n + o.batch_size - 1) / o.batch_size) as u64;
    let bar = ProgressBar::with_draw_target(
        Some(steps_per_epoch * o.epochs as u64),
        if o.progress {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {msg}")
            .map_err(|e| Error::runtime(e.to_string()))?,
    );
    let mut rng = SplitMix(o.seed ^ 0x5EED);
    let mut history = History::default();
    let mut order: Vec<i64> = (0..n).collect();
    for epoch in 1..=o.epochs {
        rng.shuffle(&mut order);
        let mut epoch_loss = 0.0;
        let mut batches = 0;
        let lazy = o.device.kind() == switchyard_core::DeviceType::Lazy;
        let mut losses = Vec::new();
        for chunk in order.chunks(o.batch_size as usize) {
            let idx = on(
                &Tensor::from_vec(chunk.to_vec(), &[chunk.len() as i64])?,
                o.device,
            )?;
            let start = Instant::now();
            let xb = op::index_select::call(&x_train, 0, &idx)?;
            let yb = op::index_select::call(&y_train, 0, &idx)?;
            opt.zero_grad()?;
            let loss = cross_entropy(&net.forward(&xb)?, &yb, None, Reduction::Mean, -100, 0.0)?;
            loss.backward()?;
            opt.step()?;
            if lazy {
                // One graph per step: forward, backward and the update, compiled once and
                // taken from the cache afterwards. Not waited for: the device thread runs
                // it while the next step is traced (the losses are read after the epoch).
                switchyard_lazy::mark_step_async()?;
            }
            history.train_time += start.elapsed();
            history.steps += 1;
            losses.push(loss);
            bar.inc(1);
        }
        if lazy {
            let start = Instant::now();
            switchyard_lazy::wait_device_ops();
            history.train_time += start.elapsed();
        }
        for loss in losses {
            let l = scalar(&loss)?;
            history.step_losses.push(l);
            epoch_loss += l;
            batches += 1;
        }
        let stats = EpochStats {
            loss: epoch_loss / f64::from(batches),
            train_accuracy: accuracy(&net, &x_train, &y_train)?,
            test_accuracy: accuracy(&net, &x_test, &y_test)?,
        };
        bar.set_message(format!(
            "epoch {epoch}: loss {:.4}, test accuracy {:.1}%",
            stats.loss,
            stats.test_accuracy * 100.0
        ));
        if epoch % report_every.max(1) == 0 || epoch == o.epochs || epoch == 1 {
            bar.suspend(|| {
                writeln!(
                    out,
                    "  epoch {epoch:>3}  loss {:.4}  train accuracy {:>5.1}%  test accuracy {:>5.1}%",
                    stats.loss,
                    stats.train_accuracy * 100.0,
                    stats.test_accuracy * 100.0
                )
                .and_then(|()| out.flush())
            })?;
        }
        history.epochs.push(stats);
    }
    bar.finish_and_clear();
    Ok(history)
}

/// Draws the loss curve (per step, and the per-epoch mean) into a PNG file.
pub fn plot_loss(history: &History, title: &str, path: &Path) -> Result<()> {
    draw(history, title, path)
        .map_err(|e| Error::runtime(format!("cannot draw {}: {e}", path.display())))
}

fn draw(
    history: &History,
    title: &str,
    path: &Path,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    // Text needs a font; the DejaVu family ships inside the `dejavu` crate.
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| Error::runtime("cannot load the plot font"))?;
    let root = BitMapBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let steps = history.step_losses.len().max(1);
    let max = history.step_losses.iter().copied().fold(0.0f64, f64::max) * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..steps as f64, 0f64..max.max(1e-6))?;
    chart
        .configure_mesh()
        .x_desc("step")
        .y_desc("cross-entropy loss")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(("sans-serif", 14))
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            history
                .step_losses
                .iter()
                .enumerate()
                .map(|(i, &l)| (i as f64, l)),
            RGBColor(160, 190, 230).stroke_width(1),
        ))?
        .label("loss per step")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RGBColor(160, 190, 230)));
    let per_epoch = steps as f64 / history.epochs.len().max(1) as f64;
    chart
        .draw_series(LineSeries::new(
            history
                .epochs
                .iter()
                .enumerate()
                .map(|(e, s)| ((e as f64 + 0.5) * per_epoch, s.loss)),
            BLUE.stroke_width(3),
        ))?
        .label("mean loss per epoch")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(3)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    Ok(())
}
