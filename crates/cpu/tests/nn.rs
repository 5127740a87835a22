//! The nn kernels (`mse_loss`, `nll_loss_forward`, `avg_pool2d`, `max_pool2d_with_indices`,
//! `native_layer_norm`) against PyTorch's answers recorded by `tools/oracle/nn.py`, called
//! directly (meta + CPU impl); the composites (`nll_loss`, `nll_loss_nd`, `max_pool2d`,
//! `layer_norm`, `dropout`, `native_dropout`) through the dispatcher, on CPU and on `Meta`
//! tensors (shapes and dtypes only); and the random cases of dropout by their properties.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "linalg_support.rs"]
mod support;
// This suite runs on CPU tensors (the lazy backend's tests run it on lazy ones).
use support::CPU_TARGET as TARGET;

#[path = "nn_support/norm_quant.rs"]
mod norm_quant;

use serde_json::Value;
use support::{Arg, Variant, run_structured};
use switchyard_core::{Device, Result, Tensor};
use switchyard_cpu::native;
use switchyard_ops::{meta, op};

/// The operators of the fixture's kernel cases (the others are composites).
const KERNEL_OPS: &[&str] = &[
    "mse_loss",
    "nll_loss_forward",
    "avg_pool2d",
    "max_pool2d_with_indices",
    "native_layer_norm",
];

/// Whether `case` is a kernel case (its operator one of [`KERNEL_OPS`]).
fn is_kernel_case(case: &Value) -> bool {
    KERNEL_OPS.contains(&case["op"].as_str().unwrap())
}

/// Runs a kernel case of the fixture; `None` for the composite operators tested through the
/// dispatcher.
fn run(case: &Value) -> Option<Result<Vec<Tensor>>> {
    run_on(case, false)
}

/// Runs a kernel case on CPU tensors (meta function + CPU impl) or on Meta tensors (the meta
/// function alone: the Meta kernel the generator builds from it; `native_layer_norm` through
/// the dispatcher).
fn run_on(case: &Value, on_meta: bool) -> Option<Result<Vec<Tensor>>> {
    if !on_meta && !support::on_cpu() {
        return run_dispatched(case);
    }
    let op = case["op"].as_str().unwrap();
    let variant = Variant::parse(case["variant"].as_str().unwrap());
    let place = |t: &Tensor| if on_meta { to_meta(t) } else { t.clone() };
    let a: Vec<Arg> = support::args(case)
        .into_iter()
        .map(|x| match x {
            Arg::Tensor(t) => Arg::Tensor(place(&t)),
            other => other,
        })
        .collect();
    let outs: Vec<Tensor> = support::outs(case).iter().map(place).collect();
    let targets: Vec<&Tensor> = outs.iter().collect();
    Some(match op {
        "mse_loss" => {
            let (x, t, r) = (a[0].tensor(), a[1].tensor(), a[2].int());
            run_structured(
                variant,
                &targets,
                |o| meta::mse_loss(x, t, r, o),
                |m, o| on_meta_or(on_meta, || native::mse_loss_out(m, x, t, r, o[0])),
            )
        }
        "nll_loss_forward" => {
            let (x, t, w, r, ig) = (
                a[0].tensor(),
                a[1].tensor(),
                a[2].opt_tensor(),
                a[3].int(),
                a[4].int(),
            );
            run_structured(
                variant,
                &targets,
                |o| meta::nll_loss_forward(x, t, w, r, ig, o),
                |m, o| {
                    on_meta_or(on_meta, || {
                        native::nll_loss_forward_out_cpu(m, x, t, w, r, ig, o[0], o[1])
                    })
                },
            )
        }
        "avg_pool2d" => {
            let x = a[0].tensor();
            let (k, s, p, ceil, cip, div) = (
                a[1].ints(),
                a[2].ints(),
                a[3].ints(),
                a[4].boolean(),
                a[5].boolean(),
                a[6].opt_int(),
            );
            run_structured(
                variant,
                &targets,
                |o| meta::avg_pool2d(x, k, s, p, ceil, cip, div, o),
                |m, o| {
                    on_meta_or(on_meta, || {
                        native::avg_pool2d_out_cpu(m, x, k, s, p, ceil, cip, div, o[0])
                    })
                },
            )
        }
        "max_pool2d_with_indices" => {
            let x = a[0].tensor();
            let (k, s, p, d, ceil) = (
                a[1].ints(),
                a[2].ints(),
                a[3].ints(),
                a[4].ints(),
                a[5].boolean(),
            );
            run_structured(
                variant,
                &targets,
                |o| meta::max_pool2d_with_indices(x, k, s, p, d, ceil, o),
                |m, o| {
                    on_meta_or(on_meta, || {
                        native::max_pool2d_with_indices_out_cpu(m, x, k, s, p, d, ceil, o[0], o[1])
                    })
                },
            )
        }
        "native_layer_norm" if on_meta => op::native_layer_norm::call(
            a[0].tensor(),
            a[1].ints(),
            a[2].opt_tensor(),
            a[3].opt_tensor(),
            a[4].float(),
        )
        .map(|(y, m, r)| vec![y, m, r]),
        "native_layer_norm" => native::layer_norm_cpu(
            a[0].tensor(),
            a[1].ints(),
            a[2].opt_tensor(),
            a[3].opt_tensor(),
            a[4].float(),
        )
        .map(|(y, m, r)| vec![y, m, r]),
        _ => return None,
    })
}

/// Runs a kernel case through the dispatcher, the path of a target other than the CPU (whose
/// kernels are reached only that way): the same arguments, the overload of the variant.
fn run_dispatched(case: &Value) -> Option<Result<Vec<Tensor>>> {
    let op_name = case["op"].as_str().unwrap();
    let variant = Variant::parse(case["variant"].as_str().unwrap());
    let a = support::args(case);
    let outs = support::outs(case);
    let one = |r: Result<Tensor>| r.map(|t| vec![t]);
    let two = |r: Result<(Tensor, Tensor)>| r.map(|(x, y)| vec![x, y]);
    Some(match (op_name, variant) {
        ("mse_loss", Variant::Out) => one(op::mse_loss_out::call(
            a[0].tensor(),
            a[1].tensor(),
            a[2].int(),
            &outs[0],
        )),
        ("mse_loss", _) => one(op::mse_loss::call(a[0].tensor(), a[1].tensor(), a[2].int())),
        ("nll_loss_forward", Variant::Out) => two(op::nll_loss_forward_output::call(
            a[0].tensor(),
            a[1].tensor(),
            a[2].opt_tensor(),
            a[3].int(),
            a[4].int(),
            &outs[0],
            &outs[1],
        )),
        ("nll_loss_forward", _) => two(op::nll_loss_forward::call(
            a[0].tensor(),
            a[1].tensor(),
            a[2].opt_tensor(),
            a[3].int(),
            a[4].int(),
        )),
        ("avg_pool2d", Variant::Out) => one(op::avg_pool2d_out::call(
            a[0].tensor(),
            a[1].ints(),
            a[2].ints(),
            a[3].ints(),
            a[4].boolean(),
            a[5].boolean(),
            a[6].opt_int(),
            &outs[0],
        )),
        ("avg_pool2d", _) => one(op::avg_pool2d::call(
            a[0].tensor(),
            a[1].ints(),
            a[2].ints(),
            a[3].ints(),
            a[4].boolean(),
            a[5].boolean(),
            a[6].opt_int(),
        )),
        ("max_pool2d_with_indices", Variant::Out) => two(op::max_pool2d_with_indices_out::call(
            a[0].tensor(),
            a[1].ints(),
            a[2].ints(),
            a[3].ints(),
            a[4].ints(),
            a[5].boolean(),
            &outs[0],
            &outs[1],
        )),
        ("max_pool2d_with_indices", _) => two(op::max_pool2d_with_indices::call(
            a[0].tensor(),
            a[1].ints(),
            a[2].ints(),
            a[3].ints(),
            a[4].ints(),
            a[5].boolean(),
        )),
        ("native_layer_norm", Variant::Functional) => op::native_layer_norm::call(
            a[0].tensor(),
            a[1].ints(),
            a[2].opt_tensor(),
            a[3].opt_tensor(),
            a[4].float(),
        )
        .map(|(y, m, r)| vec![y, m, r]),
        ("native_layer_norm", v) => panic!("no native_layer_norm {v:?} overload"),
        _ => return None,
    })
}

/// The impl of a structured kernel case: nothing on Meta (a Meta kernel is its meta function).
fn on_meta_or(on_meta: bool, imp: impl FnOnce() -> Result<()>) -> Result<()> {
    if on_meta { Ok(()) } else { imp() }
}

/// The kernels' errors on Meta tensors are the CPU's (PyTorch's), except those only a
/// computing kernel can raise (`support::cpu_only_error`).
#[test]
fn nn_kernels_fail_on_meta_as_on_cpu() {
    // Meta kernels against the CPU's errors: the lazy device's errors are
    // `nn_kernels_match_pytorch`'s there.
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let fixture = support::fixture("nn.json");
    let cases: Vec<Value> = support::cases(&fixture)
        .iter()
        .filter(|c| is_kernel_case(c))
        .cloned()
        .collect();
    let (checked, failures) = support::meta_error_parity(&cases, |c| run_on(c, true).unwrap());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 60, "{checked} error cases");
}

#[test]
fn nn_kernels_match_pytorch() {
    let fixture = support::fixture("nn.json");
    let kernel_cases: Vec<Value> = support::cases(&fixture)
        .iter()
        .filter(|c| is_kernel_case(c))
        .cloned()
        .collect();
    assert!(kernel_cases.len() > 200);
    support::check_all(&kernel_cases, true, |c| run(c).unwrap());
}

/// Runs a composite case through the dispatcher; `None` for the kernel cases.
fn run_composite(case: &Value) -> Option<Result<Vec<Tensor>>> {
    let a: Vec<Arg> = support::args(case);
    let outs = support::outs(case);
    run_composite_args(case, &a, &outs)
}

fn run_composite_args(case: &Value, a: &[Arg], outs: &[Tensor]) -> Option<Result<Vec<Tensor>>> {
    let op_name = case["op"].as_str().unwrap();
    let variant = case["variant"].as_str().unwrap();
    let one = |r: Result<Tensor>| r.map(|t| vec![t]);
    Some(match (op_name, variant) {
        ("nll_loss", "functional") => one(op::nll_loss::call(
            a[0].tensor(),
            a[1].tensor(),
            a[2].opt_tensor(),
            a[3].int(),
            a[4].int(),
        )),
        ("nll_loss", "out") => one(op::nll_loss_out::call(
            a[0].tensor(),
            a[1].tensor(),
            a[2].opt_tensor(),
            a[3].int(),
            a[4].int(),
            &outs[0],
        )),
        ("nll_loss_nd", _) => one(op::nll_loss_nd::call(
            a[0].tensor(),
            a[1].tensor(),
            a[2].opt_tensor(),
            a[3].int(),
            a[4].int(),
        )),
        ("max_pool2d", _) => one(op::max_pool2d::call(
            a[0].tensor(),
            a[1].ints(),
            a[2].ints(),
            a[3].ints(),
            a[4].ints(),
            a[5].boolean(),
        )),
        ("layer_norm", _) => one(op::layer_norm::call(
            a[0].tensor(),
            a[1].ints(),
            a[2].opt_tensor(),
            a[3].opt_tensor(),
            a[4].float(),
            a[5].boolean(),
        )),
        ("convolution", _) => one(op::convolution::call(
            a[0].tensor(),
            a[1].tensor(),
            a[2].opt_tensor(),
            a[3].ints(),
            a[4].ints(),
            a[5].ints(),
            a[6].boolean(),
            a[7].ints(),
            a[8].int(),
        )),
        ("conv2d", _) => one(op::conv2d::call(
            a[0].tensor(),
            a[1].tensor(),
            a[2].opt_tensor(),
            a[3].ints(),
            a[4].ints(),
            a[5].ints(),
            a[6].int(),
        )),
        ("dropout", _) => one(op::dropout::call(
            a[0].tensor(),
            a[1].float(),
            a[2].boolean(),
        )),
        ("native_dropout", _) => {
            let train = match &a[2] {
                Arg::None => None,
                other => Some(other.boolean()),
            };
            op::native_dropout::call(a[0].tensor(), a[1].float(), train).map(|(o, m)| vec![o, m])
        }
        _ => return None,
    })
}

/// A `Meta` tensor with the sizes, strides and dtype of `t`.
fn to_meta(t: &Tensor) -> Tensor {
    Tensor::allocate_strided(&t.sizes(), &t.strides(), t.dtype(), Device::META).unwrap()
}

#[test]
fn nn_composites_match_pytorch() {
    let fixture = support::fixture("nn.json");
    let cases: Vec<Value> = support::cases(&fixture)
        .iter()
        .filter(|c| run_composite(c).is_some())
        .cloned()
        .collect();
    assert!(cases.len() > 40);
    support::check_all(&cases, false, |c| run_composite(c).unwrap());
}

/// The composites on `Meta` tensors give PyTorch's shapes and dtypes (no values), or an error
/// where PyTorch errors (value-dependent errors such as out-of-range targets aside).
#[test]
fn nn_composites_on_meta() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let fixture = support::fixture("nn.json");
    for case in support::cases(&fixture) {
        let a: Vec<Arg> = support::args(case)
            .into_iter()
            .map(|x| match x {
                Arg::Tensor(t) => Arg::Tensor(to_meta(&t)),
                other => other,
            })
            .collect();
        let outs: Vec<Tensor> = support::outs(case).iter().map(to_meta).collect();
        let name = case["name"].as_str().unwrap();
        let Some(got) = run_composite_args(case, &a, &outs) else {
            continue;
        };
        match (got, case["expect"].get("results")) {
            (Ok(ts), Some(results)) => {
                for (t, r) in ts.iter().zip(results.as_array().unwrap()) {
                    assert_eq!(
                        t.dtype(),
                        support::dtype_of(r["dtype"].as_str().unwrap()),
                        "{name}"
                    );
                    let sizes: Vec<i64> = r["sizes"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_i64().unwrap())
                        .collect();
                    assert_eq!(t.sizes().as_slice(), sizes.as_slice(), "{name}");
                    assert!(t.is_meta(), "{name}");
                }
            }
            (Err(e), Some(_)) => panic!("{name}: unexpected error on Meta: {e}"),
            (got, None) => {
                // The CPU's error, unless only a computing kernel can raise it.
                let err = &case["expect"]["error"];
                let message = err["message"].as_str().unwrap_or_default();
                if support::cpu_only_error(message) {
                    continue;
                }
                match got {
                    Err(e) => support::check_error(&e, err)
                        .unwrap_or_else(|d| panic!("{name}: on Meta {d}")),
                    Ok(_) => panic!("{name}: Meta accepts what the CPU refuses: {message}"),
                }
            }
        }
    }
}

/// Training-mode dropout: every element is either dropped (0, mask false) or scaled by
/// `1 / (1 - p)` (mask true), and about `1 - p` of them are kept.
#[test]
fn dropout_masks_and_scales() {
    let _serial = support::serial();
    let n = 20_000usize;
    let host_x = Tensor::from_vec(
        (0..n).map(|i| (i % 17) as f32 + 1.0).collect::<Vec<_>>(),
        &[n as i64],
    )
    .unwrap();
    let x = support::to_target(host_x.clone());
    let read = |t: &Tensor| support::host(t).to_f64_vec().unwrap();
    for dtype in [
        switchyard_core::ScalarType::Float,
        switchyard_core::ScalarType::Double,
    ] {
        let x = op::_to_copy::call(&x, Some(dtype), None, None, None, false, None).unwrap();
        let (out, mask) = op::native_dropout::call(&x, 0.3, Some(true)).unwrap();
        assert_eq!(out.dtype(), dtype);
        assert_eq!(mask.dtype(), switchyard_core::ScalarType::Bool);
        let (xv, ov, mv) = (host_x.to_f64_vec().unwrap(), read(&out), read(&mask));
        let kept = mv.iter().filter(|m| **m != 0.0).count() as f64 / n as f64;
        assert!((kept - 0.7).abs() < 0.02, "kept fraction {kept}");
        for ((x, o), m) in xv.iter().zip(&ov).zip(&mv) {
            let want = if *m != 0.0 { x / 0.7 } else { 0.0 };
            assert!((o - want).abs() <= 1e-6 * want.abs(), "{o} vs {want}");
        }
        let y = op::dropout::call(&x, 0.3, true).unwrap();
        let zeros = read(&y).iter().filter(|v| **v == 0.0).count() as f64 / n as f64;
        assert!((zeros - 0.3).abs() < 0.02);
    }
    // dropout_ writes into self; eval mode leaves it alone.
    // (A copy of its own: a CPU tensor's clone() is a handle to the same memory.)
    let t = support::to_target(op::clone::call(&host_x, None).unwrap());
    let before = host_x.to_f64_vec().unwrap();
    op::dropout_::call(&t, 0.5, false).unwrap();
    assert!(read(&t) == before, "eval-mode dropout_ changed its input");
    op::dropout_::call(&t, 0.5, true).unwrap();
    let after = read(&t);
    assert!(
        after
            .iter()
            .zip(&before)
            .all(|(a, b)| *a == 0.0 || *a == b * 2.0)
    );
    assert!(after.contains(&0.0));
    assert!(after.iter().any(|a| *a != 0.0));
    // Eval-mode dropout returns its input itself (on the CPU, the same memory).
    let same = op::dropout::call(&x, 0.5, false).unwrap();
    assert!(read(&same) == before, "eval-mode dropout changed its input");
    if support::on_cpu() {
        assert!(same.is_alias_of(&x));
    }
}

/// `native_layer_norm` on `Float` (the multiversioned row kernel, rows split among threads
/// above the grain size) through the dispatcher, for row lengths around the vector widths, on
/// rows with large offsets, tiny values and constant rows:
/// - every row of the large (parallel) call equals, bit for bit, that row normalized alone
///   (serial), and a transposed input equals its contiguous copy;
/// - mean, rstd and output are within the bounds derived in `reduce_loops`' unit test of a
///   two-pass `f64` computation on the same values (a one-pass `E[x^2] - E[x]^2` in `f32`
///   misses the rstd bound by orders of magnitude on the offset rows).
#[test]
fn layer_norm_float_rows_match_double() {
    // The row kernel's own choices (rows split among threads above the grain size, its
    // vector widths) against a serial f64 computation; the lazy device runs this kernel.
    if support::cpu_only(support::CpuOnly::Kernel) {
        return;
    }
    let u = f64::from(f32::EPSILON) / 2.0;
    for n in [1usize, 7, 17, 33, 1023] {
        let rows = 32_768 / n + 3;
        let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ n as u64;
        let mut data: Vec<f32> = (0..rows * n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect();
        for (r, row) in data.chunks_mut(n).enumerate() {
            match r % 5 {
                1 => row.iter_mut().for_each(|v| *v += 1000.0),
                2 => row.iter_mut().for_each(|v| *v = *v * 3.0 - 3e4),
                3 => row.iter_mut().for_each(|v| *v *= 1e-20),
                4 => row.fill(0.1),
                _ => {}
            }
        }
        let t = Tensor::from_vec(data.clone(), &[rows as i64, n as i64]).unwrap();
        let gamma: Vec<f32> = (0..n).map(|i| 0.5 + (i % 13) as f32 * 0.1).collect();
        let beta: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
        let (w, b) = (
            Tensor::from_vec(gamma.clone(), &[n as i64]).unwrap(),
            Tensor::from_vec(beta.clone(), &[n as i64]).unwrap(),
        );
        for (wo, bo) in [(Some(&w), Some(&b)), (None, None), (Some(&w), None)] {
            let norm = |x: &Tensor| {
                let (y, m, r) = op::native_layer_norm::call(x, &[n as i64], wo, bo, 1e-5).unwrap();
                (
                    y.to_vec::<f32>().unwrap(),
                    m.to_vec::<f32>().unwrap(),
                    r.to_vec::<f32>().unwrap(),
                )
            };
            let (y, m, r) = norm(&t);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for i in (0..rows).step_by(89).chain([rows - 1]) {
                let one = Tensor::from_vec(data[i * n..(i + 1) * n].to_vec(), &[1, n as i64]);
                let (y1, m1, r1) = norm(&one.unwrap());
                assert_eq!(bits(&y1), bits(&y[i * n..(i + 1) * n]), "n={n} row {i}");
                assert_eq!(
                    (m1[0].to_bits(), r1[0].to_bits()),
                    (m[i].to_bits(), r[i].to_bits())
                );
            }
            let tr: Vec<f32> = (0..n)
                .flat_map(|c| data.iter().skip(c).step_by(n).copied().collect::<Vec<_>>())
                .collect();
            let store = Tensor::from_vec(tr, &[n as i64, rows as i64]).unwrap();
            let view = store
                .as_strided_view(&[rows as i64, n as i64], &[1, rows as i64], 0)
                .unwrap();
            let (yv, mv, rv) = norm(&view);
            assert_eq!(
                (bits(&yv), bits(&mv), bits(&rv)),
                (bits(&y), bits(&m), bits(&r))
            );
            let k = (n / 32) as f64;
            for (i, xs) in data.chunks(n).enumerate() {
                let xs: Vec<f64> = xs.iter().map(|v| f64::from(*v)).collect();
                let mean = xs.iter().sum::<f64>() / n as f64;
                let var = xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
                let rstd = 1.0 / (var + 1e-5).sqrt();
                let dm = (k + 7.0) * u * xs.iter().map(|v| v.abs()).sum::<f64>() / n as f64;
                let dr = ((k + 10.0) * u * var + dm * dm) / (2.0 * (var + 1e-5)) + 3.0 * u;
                let what = format!(
                    "n={n} row {i} weight={} bias={}",
                    wo.is_some(),
                    bo.is_some()
                );
                assert!(
                    (f64::from(m[i]) - mean).abs() <= dm,
                    "{what}: mean {} vs {mean}",
                    m[i]
                );
                assert!(
                    (f64::from(r[i]) - rstd).abs() <= dr * rstd,
                    "{what}: rstd {} vs {rstd}",
                    r[i]
                );
                for (j, x) in xs.iter().enumerate() {
                    let g = wo.map_or(1.0, |_| f64::from(gamma[j]));
                    let c = bo.map_or(0.0, |_| f64::from(beta[j]));
                    let t = (x - mean) * rstd;
                    let want = t * g + c;
                    let tol = g.abs()
                        * rstd
                        * (dr * (x - mean).abs() + dm + 2.0 * u * (x.abs() + mean.abs()))
                        + 2.0 * u * ((g * t).abs() + want.abs());
                    let got = f64::from(y[i * n + j]);
                    assert!(
                        (got - want).abs() <= tol,
                        "{what} col {j}: {got:e} vs {want:e}"
                    );
                }
            }
        }
    }
}

/// An output past `STREAM_BYTES` (8 MiB) is written with streaming stores, split across
/// threads, with rows starting off cache-line boundaries (1025 columns): every row must hold
/// the bits the same row gets on its own (a small output, stored the ordinary way).
#[test]
fn large_layer_norm_outputs_match_small_ones() {
    // The kernel's streaming stores above 8 MiB, a choice of the CPU kernel.
    if support::cpu_only(support::CpuOnly::Kernel) {
        return;
    }
    let (rows, n) = (2050usize, 1025usize);
    assert!(rows * n * 4 >= 8 << 20);
    let data: Vec<f32> = (0..rows * n)
        .map(|i| ((i * 7919) % 1013) as f32 * 0.01 - 5.0 + (i / n) as f32)
        .collect();
    let t = Tensor::from_vec(data.clone(), &[rows as i64, n as i64]).unwrap();
    let w = Tensor::from_vec((0..n).map(|i| 1.0 + i as f32 * 1e-3).collect(), &[n as i64]);
    let b = Tensor::from_vec((0..n).map(|i| i as f32 * 1e-2).collect(), &[n as i64]);
    let (w, b) = (w.unwrap(), b.unwrap());
    let (y, m, r) = op::native_layer_norm::call(&t, &[n as i64], Some(&w), Some(&b), 1e-5).unwrap();
    let (y, m, r) = (
        y.to_vec::<f32>().unwrap(),
        m.to_vec::<f32>().unwrap(),
        r.to_vec::<f32>().unwrap(),
    );
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for i in (0..rows).step_by(97).chain([rows - 1]) {
        let one = Tensor::from_vec(data[i * n..(i + 1) * n].to_vec(), &[1, n as i64]).unwrap();
        let (y1, m1, r1) =
            op::native_layer_norm::call(&one, &[n as i64], Some(&w), Some(&b), 1e-5).unwrap();
        assert_eq!(
            bits(&y1.to_vec::<f32>().unwrap()),
            bits(&y[i * n..(i + 1) * n]),
            "row {i}"
        );
        assert_eq!(
            (
                bits(&m1.to_vec::<f32>().unwrap()),
                bits(&r1.to_vec::<f32>().unwrap())
            ),
            (bits(&m[i..=i]), bits(&r[i..=i])),
            "row {i}"
        );
    }
}

/// `native_layer_norm` of empty views whose storage offset lies past the end of their storage
/// (nothing of the input is read): PyTorch 2.15 gives, for `zeros(4).as_strided((1, 0), (0,
/// 1), 9)` over `[0]`, an empty output, mean 0 and rstd NaN; for `(0, 3)` with weight and
/// bias, all three empty.
#[test]
fn layer_norm_of_empty_views_past_their_storage() {
    // A view whose offset lies past its storage: CPU storage's geometry.
    if support::cpu_only(support::CpuOnly::Storage) {
        return;
    }
    let base = Tensor::from_vec(vec![0.0f32; 4], &[4]).unwrap();
    let v = base.as_strided_view(&[1, 0], &[0, 1], 9).unwrap();
    let (y, m, r) = op::native_layer_norm::call(&v, &[0], None, None, 1e-5).unwrap();
    assert_eq!(y.sizes().as_slice(), &[1, 0]);
    assert_eq!(m.to_vec::<f32>().unwrap(), vec![0.0]);
    assert!(r.to_vec::<f32>().unwrap()[0].is_nan());
    let v = base.as_strided_view(&[0, 3], &[3, 1], 9).unwrap();
    let (w, b) = (
        Tensor::from_vec(vec![1.0f32; 3], &[3]).unwrap(),
        Tensor::from_vec(vec![0.0f32; 3], &[3]).unwrap(),
    );
    let (y, m, r) = op::native_layer_norm::call(&v, &[3], Some(&w), Some(&b), 1e-5).unwrap();
    assert_eq!(
        (y.sizes().to_vec(), m.sizes().to_vec(), r.sizes().to_vec()),
        (vec![0, 3], vec![0, 1], vec![0, 1])
    );
}

/// `torch.ops.aten.convolution` on inputs of a dtype the CPU backend PyTorch picks lacks: its
/// refusal names that backend (`slow_conv2d_cpu` for 1-d and 2-d, `compute_columns3d` for 3-d,
/// `slow_conv_dilated<>` when dilated, `slow_conv_transpose2d_out_cpu` /
/// `slow_conv_transpose3d_out_cpu` when transposed), on CPU and Meta tensors; an empty batch
/// takes no backend and is computed. Messages as PyTorch 2.15 prints them.
#[test]
fn convolution_dtype_refusals_name_pytorchs_backend() {
    use switchyard_core::{ErrorKind, ScalarType};
    let _serial = support::serial();
    // A zero tensor on `device` (the CPU's moved to the target).
    let zeros_on = |sizes: &[i64], dtype: ScalarType, device: Device| {
        let t = Tensor::allocate(sizes, dtype, Device::CPU).unwrap();
        op::zero_::call(&t).unwrap();
        if device == Device::META {
            Tensor::allocate(sizes, dtype, device).unwrap()
        } else {
            support::to_target(t)
        }
    };
    // The call, synced (its errors, at the call or the sync, are the call's).
    let conv = |dtype: ScalarType, d: usize, transposed: bool, dilation: i64, n: i64, device| {
        let mut xs = vec![n, 2];
        xs.extend(std::iter::repeat_n(5, d));
        let mut ws = vec![2, 2];
        ws.extend(std::iter::repeat_n(2, d));
        let x = zeros_on(&xs, dtype, device);
        let w = zeros_on(&ws, dtype, device);
        let (ones, zeros) = (vec![1; d], vec![0; d]);
        let r = op::convolution::call(
            &x,
            &w,
            None,
            &ones,
            &zeros,
            &vec![dilation; d],
            transposed,
            &zeros,
            1,
        );
        if device == Device::META {
            r
        } else {
            support::finish_one(r)
        }
    };
    use ScalarType::*;
    let refused = [
        (
            Bool,
            2,
            false,
            1,
            "\"slow_conv2d_cpu\" not implemented for 'Bool'",
        ),
        (
            Bool,
            1,
            false,
            1,
            "\"slow_conv2d_cpu\" not implemented for 'Bool'",
        ),
        (
            Bool,
            3,
            false,
            1,
            "\"compute_columns3d\" not implemented for 'Bool'",
        ),
        (
            Int,
            2,
            false,
            2,
            "\"slow_conv_dilated<>\" not implemented for 'Int'",
        ),
        (
            Byte,
            3,
            false,
            2,
            "\"slow_conv_dilated<>\" not implemented for 'Byte'",
        ),
        (
            Int,
            1,
            true,
            1,
            "\"slow_conv_transpose2d_out_cpu\" not implemented for 'Int'",
        ),
        (
            Short,
            2,
            true,
            2,
            "\"slow_conv_transpose2d_out_cpu\" not implemented for 'Short'",
        ),
        (
            Char,
            3,
            true,
            1,
            "\"slow_conv_transpose3d_out_cpu\" not implemented for 'Char'",
        ),
    ];
    // The CPU device stands for the target's (`zeros_on`).
    for device in [Device::CPU, Device::META] {
        for (dtype, d, transposed, dilation, message) in refused {
            let e = conv(dtype, d, transposed, dilation, 1, device).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotImplementedError, "{e}");
            assert_eq!(e.message(), message, "{device:?}");
            // An empty batch is computed.
            let r = conv(dtype, d, transposed, dilation, 0, device).unwrap();
            assert_eq!((r.dtype(), r.size(0).unwrap()), (dtype, 0));
        }
        // What those backends take.
        for (dtype, d, transposed, dilation) in [
            (Int, 2, false, 1),
            (Byte, 3, false, 1),
            (Long, 2, false, 2),
            (Long, 3, true, 1),
            (Half, 2, true, 2),
        ] {
            let r = conv(dtype, d, transposed, dilation, 1, device).unwrap();
            assert_eq!(r.dtype(), dtype);
        }
    }
    // `conv2d`, the composite over it: the same refusal.
    let x = zeros_on(&[1, 2, 4, 4], Bool, Device::CPU);
    let w = zeros_on(&[3, 2, 2, 2], Bool, Device::CPU);
    let b = zeros_on(&[3], Bool, Device::CPU);
    let e = support::finish_one(op::conv2d::call(
        &x,
        &w,
        Some(&b),
        &[1, 1],
        &[0, 0],
        &[1, 1],
        1,
    ))
    .unwrap_err();
    assert_eq!(
        e.message(),
        "\"slow_conv2d_cpu\" not implemented for 'Bool'"
    );
}
