//! `aminmax`, `block_diag`, the batch-norm family (`_native_batch_norm_legit` and its forms,
//! `native_batch_norm`, `batch_norm`, `instance_norm`) and `_fused_moving_avg_obs_fq_helper`
//! through the dispatcher, against PyTorch's answers recorded by
//! `tools/oracle/norm_quant.py`: returned tensors, and the arguments the call writes (running
//! statistics, observer state, out= tensors) as they are afterwards. On `Meta` tensors: the
//! same sizes and dtypes, and the same errors except those that need data.

use super::support::{self, Arg};
use serde_json::Value;
use switchyard_core::{Device, Result, Tensor};
use switchyard_ops::op;

/// An argument: a typed value or a list of tensors (`{"tensors": [...]}`).
enum A {
    One(Arg),
    List(Vec<Tensor>),
}

impl A {
    fn one(&self) -> &Arg {
        match self {
            A::One(a) => a,
            A::List(_) => panic!("expected one argument, got a list"),
        }
    }
    fn t(&self) -> &Tensor {
        self.one().tensor()
    }
    fn ot(&self) -> Option<&Tensor> {
        self.one().opt_tensor()
    }
    fn b(&self) -> bool {
        self.one().boolean()
    }
    fn f(&self) -> f64 {
        self.one().float()
    }
    fn i(&self) -> i64 {
        self.one().int()
    }
    fn oi(&self) -> Option<i64> {
        self.one().opt_int()
    }
}

fn parse(case: &Value, place: &dyn Fn(&Tensor) -> Tensor) -> Vec<A> {
    case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| match v.get("tensors") {
            Some(list) => A::List(
                list.as_array()
                    .unwrap()
                    .iter()
                    .map(|s| place(&support::tensor(s)))
                    .collect(),
            ),
            None => match Arg::parse(v) {
                Arg::Tensor(t) => A::One(Arg::Tensor(place(&t))),
                other => A::One(other),
            },
        })
        .collect()
}

/// The number of arguments whose post-call values a case records after its returns.
fn written(case: &Value) -> Vec<usize> {
    case["written"]
        .as_array()
        .map(|w| w.iter().map(|i| i.as_u64().unwrap() as usize).collect())
        .unwrap_or_default()
}

fn v3((a, b, c): (Tensor, Tensor, Tensor)) -> Vec<Tensor> {
    vec![a, b, c]
}

/// Runs a case on tensors made by `place` (CPU as recorded, or their Meta twins): the
/// returns, then the written arguments.
fn run(case: &Value, place: &dyn Fn(&Tensor) -> Tensor) -> Result<Vec<Tensor>> {
    let a = parse(case, place);
    let outs: Vec<Tensor> = support::outs(case).iter().map(place).collect();
    let op_name = case["op"].as_str().unwrap();
    let out_variant = case["variant"].as_str() == Some("out");
    let mut results = match op_name {
        "aminmax" if out_variant => {
            let (mn, mx) =
                op::aminmax_out::call(a[0].t(), a[1].oi(), a[2].b(), &outs[0], &outs[1])?;
            vec![mn, mx]
        }
        "aminmax" => {
            let (mn, mx) = op::aminmax::call(a[0].t(), a[1].oi(), a[2].b())?;
            vec![mn, mx]
        }
        "block_diag" => {
            let A::List(ts) = &a[0] else {
                panic!("block_diag takes a list")
            };
            vec![op::block_diag::call(ts)?]
        }
        "_native_batch_norm_legit" => v3(op::_native_batch_norm_legit::call(
            a[0].t(),
            a[1].ot(),
            a[2].ot(),
            a[3].t(),
            a[4].t(),
            a[5].b(),
            a[6].f(),
            a[7].f(),
        )?),
        "_native_batch_norm_legit.no_stats" => v3(op::_native_batch_norm_legit_no_stats::call(
            a[0].t(),
            a[1].ot(),
            a[2].ot(),
            a[3].b(),
            a[4].f(),
            a[5].f(),
        )?),
        "_native_batch_norm_legit_functional" => {
            let (o, m, v, rm, rv) = op::_native_batch_norm_legit_functional::call(
                a[0].t(),
                a[1].ot(),
                a[2].ot(),
                a[3].t(),
                a[4].t(),
                a[5].b(),
                a[6].f(),
                a[7].f(),
            )?;
            vec![o, m, v, rm, rv]
        }
        "_native_batch_norm_legit_no_training" => {
            v3(op::_native_batch_norm_legit_no_training::call(
                a[0].t(),
                a[1].ot(),
                a[2].ot(),
                a[3].t(),
                a[4].t(),
                a[5].f(),
                a[6].f(),
            )?)
        }
        "native_batch_norm" => v3(op::native_batch_norm::call(
            a[0].t(),
            a[1].ot(),
            a[2].ot(),
            a[3].ot(),
            a[4].ot(),
            a[5].b(),
            a[6].f(),
            a[7].f(),
        )?),
        "_native_batch_norm_legit.out" => v3(op::_native_batch_norm_legit_out::call(
            a[0].t(),
            a[1].ot(),
            a[2].ot(),
            a[3].t(),
            a[4].t(),
            a[5].b(),
            a[6].f(),
            a[7].f(),
            &outs[0],
            &outs[1],
            &outs[2],
        )?),
        "native_batch_norm.out" => v3(op::native_batch_norm_out::call(
            a[0].t(),
            a[1].ot(),
            a[2].ot(),
            a[3].ot(),
            a[4].ot(),
            a[5].b(),
            a[6].f(),
            a[7].f(),
            &outs[0],
            &outs[1],
            &outs[2],
        )?),
        "batch_norm" => vec![op::batch_norm::call(
            a[0].t(),
            a[1].ot(),
            a[2].ot(),
            a[3].ot(),
            a[4].ot(),
            a[5].b(),
            a[6].f(),
            a[7].f(),
            a[8].b(),
        )?],
        "instance_norm" => vec![op::instance_norm::call(
            a[0].t(),
            a[1].ot(),
            a[2].ot(),
            a[3].ot(),
            a[4].ot(),
            a[5].b(),
            a[6].f(),
            a[7].f(),
            a[8].b(),
        )?],
        // A.11's F6: one tensor for every tensor argument.
        "_fused_moving_avg_obs_fq_helper" if a.len() == 1 => {
            let x = a[0].t();
            let (o, m) = op::_fused_moving_avg_obs_fq_helper::call(
                x, x, x, x, x, x, x, 1.0, 0, 1, 0, false, false,
            )?;
            vec![o, m]
        }
        "_fused_moving_avg_obs_fq_helper_functional" => {
            let x = a[0].t();
            let (o, m, r0, r1, s, z) = op::_fused_moving_avg_obs_fq_helper_functional::call(
                x, x, x, x, x, x, x, 1.0, 0, 1, 0, false, false,
            )?;
            vec![o, m, r0, r1, s, z]
        }
        "_fused_moving_avg_obs_fq_helper" => {
            let (o, m) = op::_fused_moving_avg_obs_fq_helper::call(
                a[0].t(),
                a[1].t(),
                a[2].t(),
                a[3].t(),
                a[4].t(),
                a[5].t(),
                a[6].t(),
                a[7].f(),
                a[8].i(),
                a[9].i(),
                a[10].i(),
                a[11].b(),
                a[12].b(),
            )?;
            vec![o, m]
        }
        other => panic!("unknown operator {other}"),
    };
    results.extend(written(case).into_iter().map(|i| a[i].t().clone()));
    Ok(results)
}

/// A `Meta` tensor with the sizes, strides and dtype of `t`.
fn to_meta(t: &Tensor) -> Tensor {
    Tensor::allocate_strided(&t.sizes(), &t.strides(), t.dtype(), Device::META).unwrap()
}

#[test]
fn norm_and_quant_ops_match_pytorch() {
    let fixture = support::fixture("norm_quant.json");
    let cases = support::cases(&fixture);
    assert!(cases.len() > 150, "{} cases", cases.len());
    support::check_all(cases, true, |c| run(c, &|t| t.clone()));
}

/// Errors of the observer that depend on its flags' values (what it reads as `float` and
/// how it indexes), which a Meta kernel cannot know.
fn observer_data_error(case: &Value) -> bool {
    let name = case["name"].as_str().unwrap_or_default();
    name.starts_with("fq error") && !name.ends_with("ch_axis") && !name.ends_with("flag elements")
}

/// On Meta tensors every case gives PyTorch's sizes and dtypes of the returns, or its error
/// (data-dependent ones aside).
#[test]
fn norm_and_quant_ops_on_meta() {
    let fixture = support::fixture("norm_quant.json");
    let mut errors_checked = 0;
    for case in support::cases(&fixture) {
        let name = case["name"].as_str().unwrap();
        let got = run(case, &to_meta);
        match (got, case["expect"].get("results")) {
            (Ok(ts), Some(results)) => {
                let returns = results.as_array().unwrap().len() - written(case).len();
                for (t, r) in ts.iter().zip(results.as_array().unwrap()).take(returns) {
                    // Without tensor arguments `block_diag` makes its empty result on the CPU,
                    // as PyTorch does.
                    assert!(t.is_meta() || name == "block_diag none", "{name}");
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
                }
            }
            (Err(e), Some(_)) => panic!("{name}: unexpected error on Meta: {e}"),
            (got, None) => {
                let err = &case["expect"]["error"];
                let message = err["message"].as_str().unwrap_or_default();
                if support::cpu_only_error(message) || observer_data_error(case) {
                    continue;
                }
                errors_checked += 1;
                match got {
                    Err(e) => support::check_error(&e, err)
                        .unwrap_or_else(|d| panic!("{name}: on Meta {d}")),
                    Ok(_) => panic!("{name}: Meta accepts what the CPU refuses: {message}"),
                }
            }
        }
    }
    assert!(errors_checked >= 25, "{errors_checked} error cases");
}
