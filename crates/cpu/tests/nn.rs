//! The nn kernels (`mse_loss`, `nll_loss_forward`, `avg_pool2d`, `max_pool2d_with_indices`,
//! `native_layer_norm`) against PyTorch's answers recorded by `tools/oracle/nn.py`, called
//! directly (meta + CPU impl).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "linalg_support.rs"]
mod support;

use serde_json::Value;
use support::{Arg, Variant, run_structured};
use switchyard_core::{Result, Tensor};
use switchyard_cpu::native;
use switchyard_ops::meta;

/// Runs a kernel case of the fixture; `None` for the composite operators tested through the
/// dispatcher.
fn run(case: &Value) -> Option<Result<Vec<Tensor>>> {
    let op = case["op"].as_str().unwrap();
    let variant = Variant::parse(case["variant"].as_str().unwrap());
    let a: Vec<Arg> = support::args(case);
    let outs = support::outs(case);
    let targets: Vec<&Tensor> = outs.iter().collect();
    Some(match op {
        "mse_loss" => {
            let (x, t, r) = (a[0].tensor(), a[1].tensor(), a[2].int());
            run_structured(
                variant,
                &targets,
                |o| meta::mse_loss(x, t, r, o),
                |m, o| native::mse_loss_out(m, x, t, r, o[0]),
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
                |m, o| native::nll_loss_forward_out_cpu(m, x, t, w, r, ig, o[0], o[1]),
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
                |m, o| native::avg_pool2d_out_cpu(m, x, k, s, p, ceil, cip, div, o[0]),
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
                |m, o| native::max_pool2d_with_indices_out_cpu(m, x, k, s, p, d, ceil, o[0], o[1]),
            )
        }
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

#[test]
fn nn_kernels_match_pytorch() {
    let fixture = support::fixture("nn.json");
    let kernel_cases: Vec<Value> = support::cases(&fixture)
        .iter()
        .filter(|c| run(c).is_some())
        .cloned()
        .collect();
    assert!(kernel_cases.len() > 200);
    support::check_all(&kernel_cases, true, |c| run(c).unwrap());
}
