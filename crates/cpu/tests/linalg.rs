//! The linalg kernels (`mm`, `addmm`, `bmm`, `baddbmm`, `dot`) against PyTorch's answers
//! recorded by `tools/oracle/linalg.py`, called directly (meta + CPU impl) through every
//! variant, plus properties: strided views equal their contiguous copies, out= equals
//! functional, in-place equals functional.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "linalg_support.rs"]
mod support;

use serde_json::Value;
use support::{Variant, is_tensor, run_structured, scalar, tensor};
use switchyard_core::{Result, Scalar, Tensor};
use switchyard_cpu::native;
use switchyard_ops::meta;

/// Runs one fixture case through meta + impl.
fn run(case: &Value) -> Result<Vec<Tensor>> {
    let op = case["op"].as_str().unwrap();
    let variant = Variant::parse(case["variant"].as_str().unwrap());
    let args = case["args"].as_array().unwrap();
    let tensors: Vec<Tensor> = args.iter().filter(|a| is_tensor(a)).map(tensor).collect();
    let scalars: Vec<Scalar> = args.iter().filter(|a| !is_tensor(a)).map(scalar).collect();
    let out = case.get("out").map(tensor);
    // In-place ops write their first argument.
    let targets: Vec<&Tensor> = match variant {
        Variant::Inplace => vec![&tensors[0]],
        Variant::Out => vec![out.as_ref().unwrap()],
        Variant::Functional => vec![],
    };
    let t = &tensors;
    match op {
        "mm" => run_structured(
            variant,
            &targets,
            |outs| meta::mm(&t[0], &t[1], outs),
            |m, o| native::mm_out_cpu(m, &t[0], &t[1], o[0]),
        ),
        "bmm" => run_structured(
            variant,
            &targets,
            |outs| meta::bmm(&t[0], &t[1], outs),
            |m, o| native::bmm_out_cpu(m, &t[0], &t[1], o[0]),
        ),
        "addmm" => run_structured(
            variant,
            &targets,
            |outs| meta::addmm(&t[0], &t[1], &t[2], scalars[0], scalars[1], outs),
            |m, o| native::addmm_out_cpu(m, &t[0], &t[1], &t[2], scalars[0], scalars[1], o[0]),
        ),
        "baddbmm" => run_structured(
            variant,
            &targets,
            |outs| meta::baddbmm(&t[0], &t[1], &t[2], scalars[0], scalars[1], outs),
            |m, o| native::baddbmm_out_cpu(m, &t[0], &t[1], &t[2], scalars[0], scalars[1], o[0]),
        ),
        "dot" => match variant {
            Variant::Functional => native::dot(&t[0], &t[1]).map(|r| vec![r]),
            // dot.out is a composite of the ops crate (resize, dtype check, fill); here the
            // CPU dot's result is checked through the same steps by hand.
            _ => {
                let o = out.as_ref().unwrap();
                switchyard_ops::structured::resize_output(o, &[])?;
                switchyard_core::torch_check!(
                    o.dtype() == t[0].dtype(),
                    "result dtype {} does not match input dtype {}",
                    o.dtype(),
                    t[0].dtype()
                );
                let r = native::dot(&t[0], &t[1])?;
                support::copy_into(o, &r)?;
                Ok(vec![o.clone()])
            }
        },
        other => panic!("unknown op {other}"),
    }
}

#[test]
fn linalg_matches_pytorch() {
    let fixture = support::fixture("linalg.json");
    let cases = support::cases(&fixture);
    assert!(cases.len() > 200);
    support::check_all(cases, true, run);
}
