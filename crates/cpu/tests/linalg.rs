//! The linalg kernels (`mm`, `addmm`, `bmm`, `baddbmm`, `dot`) against PyTorch's answers
//! recorded by `tools/oracle/linalg.py`, called directly (meta + CPU impl) through every
//! variant, plus properties: strided views equal their contiguous copies, out= equals
//! functional, in-place equals functional.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "linalg_support.rs"]
mod support;
// This suite runs on CPU tensors (the lazy backend's tests run it on lazy ones).
use support::CPU_TARGET as TARGET;

use serde_json::Value;
use support::{Variant, is_tensor, run_structured, scalar, tensor};
use switchyard_core::{Result, Scalar, Tensor};
use switchyard_cpu::native;
use switchyard_ops::meta;

/// Runs one fixture case through meta + impl (on the CPU), or through the dispatcher on
/// another target ([`run_dispatched`]).
fn run(case: &Value) -> Result<Vec<Tensor>> {
    if !support::on_cpu() {
        return run_dispatched(case);
    }
    let op = case["op"].as_str().unwrap();
    let variant = Variant::parse(case["variant"].as_str().unwrap());
    let args = case["args"].as_array().unwrap();
    let tensors: Vec<Tensor> = args.iter().filter(|a| is_tensor(a)).map(tensor).collect();
    let scalars: Vec<Scalar> = args
        .iter()
        .filter(|a| !is_tensor(a) && a.get("none").is_none())
        .map(scalar)
        .collect();
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
        "matmul" => match variant {
            Variant::Out => {
                switchyard_ops::op::matmul_out::call(&t[0], &t[1], out.as_ref().unwrap())
            }
            _ => switchyard_ops::op::matmul::call(&t[0], &t[1]),
        }
        .map(|r| vec![r]),
        "linear" => {
            let a = support::args(case);
            let (x, w, b) = (a[0].tensor(), a[1].tensor(), a[2].opt_tensor());
            match variant {
                Variant::Out => {
                    switchyard_ops::op::linear_out::call(x, w, b, out.as_ref().unwrap())
                }
                _ => switchyard_ops::op::linear::call(x, w, b),
            }
            .map(|r| vec![r])
        }
        other => panic!("unknown op {other}"),
    }
}

/// Runs one fixture case through the dispatcher, the path of a target other than the CPU
/// (whose kernels are reached only that way): the same arguments, the overload of the
/// variant.
fn run_dispatched(case: &Value) -> Result<Vec<Tensor>> {
    use switchyard_ops::op;
    let op = case["op"].as_str().unwrap();
    let variant = Variant::parse(case["variant"].as_str().unwrap());
    let a = support::args(case);
    let args = case["args"].as_array().unwrap();
    let out = case.get("out").map(tensor);
    let o = || out.as_ref().unwrap();
    let t = |i: usize| a[i].tensor();
    let r = match (op, variant) {
        ("mm", Variant::Out) => op::mm_out::call(t(0), t(1), o()),
        ("mm", _) => op::mm::call(t(0), t(1)),
        ("bmm", Variant::Out) => op::bmm_out::call(t(0), t(1), o()),
        ("bmm", _) => op::bmm::call(t(0), t(1)),
        ("addmm", v) => {
            let (beta, alpha) = (scalar(&args[3]), scalar(&args[4]));
            match v {
                Variant::Out => op::addmm_out::call(t(0), t(1), t(2), beta, alpha, o()),
                Variant::Inplace => op::addmm_::call(t(0), t(1), t(2), beta, alpha),
                Variant::Functional => op::addmm::call(t(0), t(1), t(2), beta, alpha),
            }
        }
        ("baddbmm", v) => {
            let (beta, alpha) = (scalar(&args[3]), scalar(&args[4]));
            match v {
                Variant::Out => op::baddbmm_out::call(t(0), t(1), t(2), beta, alpha, o()),
                Variant::Inplace => op::baddbmm_::call(t(0), t(1), t(2), beta, alpha),
                Variant::Functional => op::baddbmm::call(t(0), t(1), t(2), beta, alpha),
            }
        }
        ("dot", Variant::Out) => op::dot_out::call(t(0), t(1), o()),
        ("dot", _) => op::dot::call(t(0), t(1)),
        ("matmul", Variant::Out) => op::matmul_out::call(t(0), t(1), o()),
        ("matmul", _) => op::matmul::call(t(0), t(1)),
        ("linear", Variant::Out) => op::linear_out::call(t(0), t(1), a[2].opt_tensor(), o()),
        ("linear", _) => op::linear::call(t(0), t(1), a[2].opt_tensor()),
        (other, _) => panic!("unknown op {other}"),
    };
    r.map(|r| vec![r])
}

/// Runs a case through the dispatcher by its schema name, every tensor a Meta tensor of the
/// same geometry: what the Meta kernels (or composites over them) do with it.
fn run_on_meta(case: &Value) -> Result<Vec<Tensor>> {
    use switchyard_core::{Device, IValue};
    let op = case["op"].as_str().unwrap();
    let name = match case["variant"].as_str().unwrap() {
        "out" => format!("aten::{op}.out"),
        "inplace" => format!("aten::{op}_"),
        _ => format!("aten::{op}"),
    };
    let meta = |v: &Value| {
        let t = tensor(v);
        IValue::Tensor(
            Tensor::allocate_strided(&t.sizes(), &t.strides(), t.dtype(), Device::META).unwrap(),
        )
    };
    let mut stack: Vec<IValue> = case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            if is_tensor(a) {
                meta(a)
            } else if a.get("none").is_some() {
                IValue::None
            } else {
                match scalar(a) {
                    Scalar::Int(i) => IValue::Int(i),
                    Scalar::Float(f) => IValue::Double(f),
                    Scalar::Bool(b) => IValue::Bool(b),
                }
            }
        })
        .collect();
    if let Some(o) = case.get("out") {
        stack.push(meta(o));
    }
    let handle = switchyard_dispatch::Dispatcher::singleton().find_schema_or_error(&name)?;
    handle.call_boxed(&mut stack)?;
    Ok(vec![stack.remove(0).into_tensor()?])
}

/// Every error case fails on Meta tensors with the CPU's (PyTorch's) error, except those only
/// a computing kernel can raise (`support::cpu_only_error`).
#[test]
fn linalg_errors_on_meta_are_the_cpu_errors() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let fixture = support::fixture("linalg.json");
    let (checked, failures) = support::meta_error_parity(support::cases(&fixture), run_on_meta);
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 40, "{checked} error cases");
}

#[test]
fn linalg_matches_pytorch() {
    let fixture = support::fixture("linalg.json");
    let cases = support::cases(&fixture);
    assert!(cases.len() > 200);
    // The composites' strides follow their decomposition (checked for the kernels only).
    let (composite, kernels): (Vec<Value>, Vec<Value>) = cases
        .iter()
        .cloned()
        .partition(|c| matches!(c["op"].as_str(), Some("matmul" | "linear")));
    assert!(composite.len() > 50);
    support::check_all(&kernels, true, run);
    support::check_all(&composite, false, run);
}

/// `matmul` and `linear` on `Meta` tensors: PyTorch's shapes and dtypes, and its shape errors.
#[test]
fn composites_on_meta() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let fixture = support::fixture("linalg.json");
    let mut checked = 0;
    for case in support::cases(&fixture) {
        let op = case["op"].as_str().unwrap();
        if !matches!(op, "matmul" | "linear") || case["variant"] != "functional" {
            continue;
        }
        let meta = |t: &Tensor| {
            Tensor::allocate_strided(
                &t.sizes(),
                &t.strides(),
                t.dtype(),
                switchyard_core::Device::META,
            )
            .unwrap()
        };
        let a: Vec<Option<Tensor>> = case["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| is_tensor(v).then(|| meta(&tensor(v))))
            .collect();
        let got = if op == "matmul" {
            switchyard_ops::op::matmul::call(a[0].as_ref().unwrap(), a[1].as_ref().unwrap())
        } else {
            switchyard_ops::op::linear::call(
                a[0].as_ref().unwrap(),
                a[1].as_ref().unwrap(),
                a[2].as_ref(),
            )
        };
        let name = case["name"].as_str().unwrap();
        match (got, case["expect"].get("results")) {
            (Ok(t), Some(r)) => {
                let r = &r[0];
                assert!(t.is_meta(), "{name}");
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
                checked += 1;
            }
            (Err(e), Some(_)) => panic!("{name}: unexpected error on Meta: {e}"),
            (Ok(_), None) if case["expect"]["error"]["kind"] == "NotImplementedError" => {}
            (Ok(_), None) => panic!("{name}: expected an error on Meta"),
            (Err(_), None) => {}
        }
    }
    assert!(checked > 40);
}

/// Which path a biased `linear` takes decides its errors: PyTorch 2.15 fuses a vector bias
/// into `addmm` over a contiguous input, and otherwise multiplies with `matmul` and adds the
/// bias after. Expectations are PyTorch's answers to the quoted `F.linear` calls.
#[test]
fn linear_picks_pytorchs_path_for_a_bias() {
    let _serial = support::serial();
    // Built on the host (views included), then moved to the target.
    let host_rand = |sizes: &[i64]| {
        let n: i64 = sizes.iter().product();
        Tensor::from_vec((0..n).map(|i| (i % 7) as f32 * 0.5).collect(), sizes).unwrap()
    };
    let rand = |sizes: &[i64]| support::to_target(host_rand(sizes));
    // The result's sizes, after the target ran it (its errors are the call's).
    let linear = |x: &Tensor, w: &Tensor, b: &Tensor| {
        support::finish_one(switchyard_ops::op::linear::call(x, w, Some(b)))
            .map(|t| t.sizes().to_vec())
    };
    // F.linear(rand(2, 3, 4), rand(4), rand(())): a 0-dim bias is not fused.
    assert_eq!(
        linear(&rand(&[2, 3, 4]), &rand(&[4]), &rand(&[])).unwrap(),
        vec![2, 3]
    );
    // F.linear(rand(2, 2, 3, 4), rand(4), rand(1)): fused, and addmm refuses a vector.
    let e = linear(&rand(&[2, 2, 3, 4]), &rand(&[4]), &rand(&[1])).unwrap_err();
    assert_eq!(e.message(), "addmm: mat2 must be a matrix, got 1-D tensor");
    // F.linear(rand(2, 2, 3, 4), rand(5, 4), rand(3, 5)): a matrix bias is added after.
    let r = linear(&rand(&[2, 2, 3, 4]), &rand(&[5, 4]), &rand(&[3, 5])).unwrap();
    assert_eq!(r, vec![2, 2, 3, 5]);
    // F.linear(rand(4, 3, 2).permute(2, 1, 0), rand(5, 3), rand(5)): not contiguous, so
    // matmul's bmm reports the mismatch.
    let x = support::to_target(
        host_rand(&[4, 3, 2])
            .as_strided_view(&[2, 3, 4], &[1, 2, 6], 0)
            .unwrap(),
    );
    let e = linear(&x, &rand(&[5, 3]), &rand(&[5])).unwrap_err();
    assert_eq!(
        e.message(),
        "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3]."
    );
}
