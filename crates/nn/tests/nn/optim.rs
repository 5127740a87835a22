//! Optimizer trajectories recorded from PyTorch (`tools/oracle/optim.py`): the same gradients
//! fed at each step must give PyTorch's parameters after each step.

use serde_json::Value;
use switchyard_autograd::AutogradTensor;
use switchyard_core::Tensor;
use switchyard_nn::clip_grad_norm_;
use switchyard_nn::optim::{Adam, AdamOptions, Optimizer, Sgd, SgdOptions};

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/optim.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn shape(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

fn f(o: &Value, k: &str, default: f64) -> f64 {
    o.get(k).and_then(Value::as_f64).unwrap_or(default)
}

fn b(o: &Value, k: &str) -> bool {
    o.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn build(name: &str, o: &Value, params: Vec<Tensor>) -> Box<dyn Optimizer> {
    let lr = f(o, "lr", 0.0);
    match name {
        "sgd" => Box::new(
            Sgd::new(
                params,
                lr,
                SgdOptions {
                    momentum: f(o, "momentum", 0.0),
                    dampening: f(o, "dampening", 0.0),
                    weight_decay: f(o, "weight_decay", 0.0),
                    nesterov: b(o, "nesterov"),
                    maximize: b(o, "maximize"),
                },
            )
            .unwrap(),
        ),
        "adam" | "adamw" => {
            let base = if name == "adam" {
                AdamOptions::adam()
            } else {
                AdamOptions::adamw()
            };
            let betas = o.get("betas").map_or(base.betas, |v| {
                let v = floats(v);
                (f64::from(v[0]), f64::from(v[1]))
            });
            let opts = AdamOptions {
                betas,
                eps: f(o, "eps", base.eps),
                weight_decay: f(o, "weight_decay", base.weight_decay),
                amsgrad: b(o, "amsgrad"),
                maximize: b(o, "maximize"),
            };
            Box::new(if name == "adam" {
                Adam::new(params, lr, opts).unwrap()
            } else {
                Adam::new_adamw(params, lr, opts).unwrap()
            })
        }
        other => panic!("unknown optimizer {other}"),
    }
}

#[test]
fn trajectories_match_pytorch() {
    let fx = fixture();
    for (ci, case) in fx["cases"].as_array().unwrap().iter().enumerate() {
        let name = case["optimizer"].as_str().unwrap();
        let shapes: Vec<Vec<i64>> = case["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .map(shape)
            .collect();
        let params: Vec<Tensor> = case["initial"]
            .as_array()
            .unwrap()
            .iter()
            .zip(&shapes)
            .map(|(v, s)| {
                Tensor::from_vec(floats(v), s)
                    .unwrap()
                    .requires_grad_(true)
                    .unwrap()
            })
            .collect();
        let mut opt = build(name, &case["options"], params.clone());
        for (step, (grads, expected)) in case["grads"]
            .as_array()
            .unwrap()
            .iter()
            .zip(case["params"].as_array().unwrap())
            .enumerate()
        {
            for ((p, g), s) in params.iter().zip(grads.as_array().unwrap()).zip(&shapes) {
                p.set_grad(Some(Tensor::from_vec(floats(g), s).unwrap()))
                    .unwrap();
            }
            opt.step().unwrap();
            for (k, (p, e)) in params.iter().zip(expected.as_array().unwrap()).enumerate() {
                let got = p.to_vec::<f32>().unwrap();
                for (a, x) in got.iter().zip(floats(e)) {
                    assert!(
                        (a - x).abs() <= 1e-6 + 1e-5 * x.abs(),
                        "case {ci} ({name} {}), step {step}, param {k}: {a} vs PyTorch {x}",
                        case["options"]
                    );
                }
            }
        }
    }
}

#[test]
fn clip_grad_norm_matches_pytorch() {
    let fx = fixture();
    for case in fx["clip"].as_array().unwrap() {
        let a = Tensor::from_vec(vec![3.0f32, -4.0], &[2])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        let bt = Tensor::from_vec(vec![1.0f32, 2.0, -2.0, 0.5], &[2, 2])
            .unwrap()
            .requires_grad_(true)
            .unwrap();
        a.set_grad(Some(Tensor::from_vec(vec![0.3f32, -0.4], &[2]).unwrap()))
            .unwrap();
        bt.set_grad(Some(
            Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 0.25], &[2, 2]).unwrap(),
        ))
        .unwrap();
        let norm_type = match &case["norm_type"] {
            Value::String(_) => f64::INFINITY,
            v => v.as_f64().unwrap(),
        };
        let total = clip_grad_norm_(
            &[a.clone(), bt.clone()],
            case["max_norm"].as_f64().unwrap(),
            norm_type,
            false,
        )
        .unwrap();
        let t = total.item::<f32>().unwrap();
        let e = case["total"].as_f64().unwrap() as f32;
        assert!((t - e).abs() < 1e-6, "norm {norm_type}: total {t} vs {e}");
        let grads = case["grads"].as_array().unwrap();
        for (p, g) in [&a, &bt].iter().zip(grads) {
            let got = p.grad().unwrap().to_vec::<f32>().unwrap();
            for (x, y) in got.iter().zip(floats(g)) {
                assert!((x - y).abs() < 1e-6, "norm {norm_type}: grad {x} vs {y}");
            }
        }
    }
}

#[test]
fn optimizer_argument_errors_are_pytorchs() {
    let p = vec![Tensor::from_vec(vec![1.0f32], &[1]).unwrap()];
    let e = Sgd::new(p.clone(), -0.1, SgdOptions::default())
        .err()
        .unwrap();
    assert_eq!(e.message(), "Invalid learning rate: -0.1");
    let e = Sgd::new(
        p.clone(),
        0.1,
        SgdOptions {
            nesterov: true,
            ..SgdOptions::default()
        },
    )
    .err()
    .unwrap();
    assert_eq!(
        e.message(),
        "Nesterov momentum requires a momentum and zero dampening"
    );
    let e = Adam::new(
        p,
        0.1,
        AdamOptions {
            betas: (1.0, 0.9),
            ..AdamOptions::adam()
        },
    )
    .err()
    .unwrap();
    assert_eq!(e.message(), "Invalid beta parameter at index 0: 1.0");
}
