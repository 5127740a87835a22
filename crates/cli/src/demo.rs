//! `switchyard demo`: a tour of what the runtime can do, section by section. Every value printed
//! is computed by the runtime as the demo runs.

use std::collections::BTreeMap;
use std::io::Write;

use crate::{Outcome, train};
use switchyard_core::promotion::{PromotionArg, result_type};
use switchyard_core::{Device, DispatchKey, Result, Scalar, ScalarType, Tensor};
use switchyard_dispatch::{Dispatcher, trace};
use switchyard_ops as ops;
use switchyard_ops::TensorOps;

fn section(out: &mut dyn Write, title: &str) -> Outcome<()> {
    writeln!(out, "\n== {title} ==")?;
    Ok(())
}

/// Runs every section of the demo.
pub fn run(out: &mut dyn Write) -> Outcome<()> {
    tensors(out)?;
    promotion(out)?;
    dispatch(out)?;
    mlp(out, Device::CPU)?;
    mlp(out, Device::META)?;
    // The reference external backend: a few kernels of its own, the CPU fallback for the rest.
    switchyard_sidecar::init()?;
    mlp(out, switchyard_sidecar::device())?;
    training(out)?;
    operators(out)
}

/// Training with autograd: the MLP learns the wine-quality classes on the CPU, then the same
/// training (same seed, so the same first losses) runs on the reference external backend.
fn training(out: &mut dyn Write) -> Outcome<()> {
    section(
        out,
        "Training: an MLP on the red-wine quality data set (linfa-datasets), cross-entropy, Adam",
    )?;
    let data = train::wine_quality(0)?;
    writeln!(
        out,
        "{} training and {} test wines, {} features, {} quality classes; 11 -> 64 -> 64 -> {} MLP",
        data.x_train.size(0)?,
        data.x_test.size(0)?,
        data.x_train.size(1)?,
        data.classes,
        data.classes
    )?;
    let cpu = train::TrainOptions {
        epochs: 15,
        ..train::TrainOptions::default()
    };
    let h = train::train(out, &data, &cpu, 5)?;
    writeln!(
        out,
        "  {} steps, {:.0} µs per step (forward, backward, Adam update)",
        h.steps,
        h.train_time.as_secs_f64() * 1e6 / h.steps.max(1) as f64
    )?;

    section(out, "The same training on the reference backend (sidecar)")?;
    let before = switchyard_sidecar::fallback_counts();
    let side = train::TrainOptions {
        epochs: 2,
        device: switchyard_sidecar::device(),
        ..train::TrainOptions::default()
    };
    let hs = train::train(out, &data, &side, 1)?;
    let first = |h: &train::History| h.step_losses.first().copied().unwrap_or(f64::NAN);
    writeln!(
        out,
        "  first step's loss: {:.6} on sidecar, {:.6} on the CPU",
        first(&hs),
        first(&h)
    )?;
    let after = switchyard_sidecar::fallback_counts();
    let mut fell_back: Vec<(String, u64)> = after
        .iter()
        .filter_map(|(op, n)| {
            let new = n - before.get(op).copied().unwrap_or(0);
            (new > 0).then(|| (op.clone(), new))
        })
        .collect();
    fell_back.sort_by_key(|f| std::cmp::Reverse(f.1));
    let list: Vec<String> = fell_back
        .iter()
        .take(8)
        .map(|(op, n)| format!("{op} x{n}"))
        .collect();
    writeln!(
        out,
        "  operators the backend does not implement ran on the CPU through the fallback (most used): {}",
        list.join(", ")
    )?;
    lazy_training(out, &data, &h)?;
    Ok(())
}

/// The demo's training on the lazy device: operators record IR, `mark_step()` after each step
/// runs the whole step (forward, backward, Adam) as one cached program.
fn lazy_training(out: &mut dyn Write, data: &train::Dataset, cpu: &train::History) -> Outcome<()> {
    section(out, "The same training lazily (one traced graph per step)")?;
    switchyard_lazy::init()?;
    switchyard_lazy::reset_metrics();
    let lazy = train::TrainOptions {
        epochs: 1,
        device: switchyard_lazy::device(),
        ..train::TrainOptions::default()
    };
    let hl = train::train(out, data, &lazy, 1)?;
    let first = |h: &train::History| h.step_losses.first().copied().unwrap_or(f64::NAN);
    writeln!(
        out,
        "  first step's loss: {:.6} lazily, {:.6} on the CPU; {:.0} µs per step lazily",
        first(&hl),
        first(cpu),
        hl.train_time.as_secs_f64() * 1e6 / hl.steps.max(1) as f64
    )?;
    let count = |name: &str| switchyard_lazy::counter_value(name).unwrap_or(0);
    writeln!(
        out,
        "  MarkStep {}, UncachedCompile {}, CachedCompile {}",
        count("MarkStep"),
        count("UncachedCompile"),
        count("CachedCompile")
    )?;
    let mut traced: Vec<(String, u64)> = switchyard_lazy::counter_names()
        .into_iter()
        .filter(|n| n.starts_with("lazy::"))
        .map(|n| {
            let v = count(&n);
            (n, v)
        })
        .collect();
    traced.sort_by_key(|t| std::cmp::Reverse(t.1));
    let top: Vec<String> = traced
        .iter()
        .take(8)
        .map(|(n, v)| format!("{n} x{v}"))
        .collect();
    writeln!(out, "  traced operators (most used): {}", top.join(", "))?;
    let fell_back: Vec<String> = switchyard_lazy::counter_names()
        .into_iter()
        .filter(|n| n.starts_with("aten::"))
        .map(|n| {
            let v = count(&n);
            format!("{n} x{v}")
        })
        .collect();
    writeln!(
        out,
        "  operators without a lazy kernel (run through the fallback): {}",
        if fell_back.is_empty() {
            "none".to_string()
        } else {
            fell_back.join(", ")
        }
    )?;
    // Hook: once the fusing compiler exists, print the fusion groups of the cached step's
    // program here.
    Ok(())
}

fn tensors(out: &mut dyn Write) -> Outcome<()> {
    section(out, "Tensors: strided views over shared, versioned storage")?;
    let a = Tensor::from_data([[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]])?;
    writeln!(out, "a = {a}")?;
    let t = a.t()?;
    writeln!(out, "a.t() = {t}")?;
    writeln!(
        out,
        "a.t(): sizes {:?}, strides {:?}, contiguous {}, shares a's storage {}",
        t.sizes().as_slice(),
        t.strides().as_slice(),
        t.is_contiguous(),
        t.is_alias_of(&a)
    )?;
    let row = a.select(0, 1)?;
    row.fill_scalar_(0.5)?;
    writeln!(
        out,
        "after a.select(0, 1).fill_(0.5): a = {a}  (version {})",
        a.version()
    )?;
    let big = Tensor::from_vec((0..2000).map(|i| i as i64).collect(), &[2000])?;
    writeln!(out, "a large tensor is summarised: {big}")?;
    Ok(())
}

fn promotion(out: &mut dyn Write) -> Outcome<()> {
    section(out, "Type promotion (PyTorch's result_type)")?;
    let i = Tensor::from_slice(&[1i32, 2])?;
    let h = Tensor::from_slice(&[switchyard_core::half::f16::from_f32(1.0)])?;
    let zero_dim_f64 = Tensor::scalar_tensor(Scalar::from(2.5))?;
    let b = Tensor::from_slice(&[true])?;
    let (ti, th, tz) = (
        PromotionArg::Tensor(&i),
        PromotionArg::Tensor(&h),
        PromotionArg::Tensor(&zero_dim_f64),
    );
    let cases = [
        ("int32 tensor + float16 tensor", vec![ti, th]),
        ("int32 tensor + 0-dim float64 tensor", vec![ti, tz]),
        ("float16 tensor + 0-dim float64 tensor", vec![th, tz]),
        (
            "int32 tensor + Python float 2.5",
            vec![ti, PromotionArg::Scalar(Scalar::from(2.5))],
        ),
        (
            "bool tensor + Python int 1",
            vec![
                PromotionArg::Tensor(&b),
                PromotionArg::Scalar(Scalar::from(1i64)),
            ],
        ),
    ];
    for (what, args) in cases {
        let dtype = result_type(&args).map_or_else(|| "-".to_string(), |d| d.torch_name());
        writeln!(out, "{what:<40} -> {dtype}")?;
    }
    Ok(())
}

fn dispatch(out: &mut dyn Write) -> Outcome<()> {
    section(
        out,
        "Dispatch: key sets, the operator table, the hops of a call",
    )?;
    let a = Tensor::from_data([[1.0f32, 2.0], [3.0, 4.0]])?;
    writeln!(out, "key set of a CPU tensor: {}", a.key_set())?;
    let b = Tensor::allocate(&[2, 2], ScalarType::Float, Device::META)?;
    writeln!(out, "key set of a meta tensor: {}", b.key_set())?;
    let handle = Dispatcher::singleton().find_schema_or_error("aten::add.Tensor")?;
    writeln!(
        out,
        "\ndispatch table of aten::add.Tensor (runtime keys with a kernel):"
    )?;
    for line in handle
        .dump_table()
        .lines()
        .filter(|l| !l.contains("[missing]"))
    {
        writeln!(out, "  {line}")?;
    }
    let (result, hops) = trace::capture(|| ops::add(&a, &a));
    writeln!(out, "\nhops of add(a, a):")?;
    for hop in &hops {
        writeln!(
            out,
            "  {}{} {} at {} -> {} [{}]",
            "  ".repeat(hop.depth),
            hop.hop.label(),
            hop.operator,
            hop.key.display_name(),
            hop.kernel,
            hop.provenance
        )?;
    }
    writeln!(out, "add(a, a) = {}", result?)?;
    Ok(())
}

/// A two-layer MLP classifier forward pass, counting the operator calls per dispatch key.
fn mlp(out: &mut dyn Write, device: Device) -> Outcome<()> {
    section(
        out,
        &format!("MLP forward on {device}: linear -> relu -> linear -> log_softmax -> nll_loss"),
    )?;
    let (batch, features, hidden, classes) = (8i64, 16i64, 32i64, 4i64);
    // Deterministic inputs, so that the printed loss is reproducible.
    // Meta tensors have shapes and dtypes but no data.
    let param = |shape: &[i64], scale: f32| -> Result<Tensor> {
        if device.is_meta() {
            return Tensor::allocate(shape, ScalarType::Float, device);
        }
        let n: i64 = shape.iter().product();
        let host = Tensor::from_vec(
            (0..n)
                .map(|i| ((i * 37 % 101) as f32 / 101.0 - 0.5) * scale)
                .collect(),
            shape,
        )?;
        to_device(&host, device)
    };
    let x = param(&[batch, features], 2.0)?;
    let w1 = param(&[hidden, features], 0.5)?;
    let b1 = param(&[hidden], 0.1)?;
    let w2 = param(&[classes, hidden], 0.5)?;
    let b2 = param(&[classes], 0.1)?;
    let target = if device.is_meta() {
        Tensor::allocate(&[batch], ScalarType::Long, device)?
    } else {
        to_device(
            &Tensor::from_vec((0..batch).map(|i| i % classes).collect(), &[batch])?,
            device,
        )?
    };
    let fallbacks_before = switchyard_sidecar::fallback_counts();

    let (loss, hops) = trace::capture(|| -> Result<(Tensor, Tensor)> {
        let h = ops::linear_with(&x, &w1, Some(&b1))?.relu()?;
        let logits = ops::linear_with(&h, &w2, Some(&b2))?;
        let log_probs = ops::log_softmax(&logits, 1)?;
        Ok((ops::nll_loss(&log_probs, &target)?, log_probs))
    });
    let (loss, log_probs) = loss?;
    writeln!(
        out,
        "log_probs: sizes {:?}, dtype {}",
        log_probs.sizes().as_slice(),
        log_probs.dtype().torch_name()
    )?;
    if device.is_cpu() || device.is_meta() {
        writeln!(out, "loss = {loss}")?;
    } else {
        // Device memory is not host memory: bring the value over to print it.
        writeln!(
            out,
            "loss = {} (computed on {device})",
            to_device(&loss, Device::CPU)?
        )?;
    }
    let mut per_key: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for hop in &hops {
        *per_key
            .entry(hop.key.display_name().to_string())
            .or_default()
            .entry(hop.operator.clone())
            .or_default() += 1;
    }
    writeln!(out, "operator calls per dispatch key:")?;
    for (key, operators) in &per_key {
        let list: Vec<String> = operators
            .iter()
            .map(|(op, n)| format!("{op} x{n}"))
            .collect();
        writeln!(out, "  {key:<28} {}", list.join(", "))?;
    }
    if !(device.is_cpu() || device.is_meta()) {
        let after = switchyard_sidecar::fallback_counts();
        let fell_back: Vec<String> = after
            .iter()
            .filter_map(|(op, n)| {
                let new = n - fallbacks_before.get(op).copied().unwrap_or(0);
                (new > 0).then(|| format!("{op} x{new}"))
            })
            .collect();
        writeln!(
            out,
            "ran on the CPU through the fallback: {}",
            fell_back.join(", ")
        )?;
    }
    Ok(())
}

/// `t` on `device` (the same tensor if it is there already).
fn to_device(t: &Tensor, device: Device) -> Result<Tensor> {
    if t.device() == device {
        return Ok(Clone::clone(t));
    }
    switchyard_ops::op::_to_copy::call(t, None, None, Some(device), None, false, None)
}

fn operators(out: &mut dyn Write) -> Outcome<()> {
    section(out, "Operators")?;
    let d = Dispatcher::singleton();
    let all = d.all_operators();
    let count = |key: DispatchKey| {
        all.iter()
            .filter(|op| matches!(op.describe_slot(key), Some((_, "kernel"))))
            .count()
    };
    writeln!(
        out,
        "{} operators from ops.yaml; CPU kernels for {}, Meta kernels for {}; the rest are composites.",
        all.len(),
        count(DispatchKey::CPU),
        count(DispatchKey::Meta)
    )?;
    writeln!(
        out,
        "Try: switchyard table add.Tensor | switchyard explain add.Tensor --requires-grad"
    )?;
    writeln!(
        out,
        "     switchyard call 'aten::add.Tensor' '[[1,2],[3,4]]' '[10,20]' alpha=2"
    )?;
    Ok(())
}
