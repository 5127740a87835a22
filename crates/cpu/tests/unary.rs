//! The unary pointwise operators against PyTorch 2.15 (`tools/oracle/unary.py` wrote
//! `fixtures/unary.json`): every overload (functional, in-place, out=) on every dtype, strided,
//! sliced, expanded, 0-dim and empty inputs, out= resizing (and its warning) and dtype errors,
//! and accuracy sweeps of the floating-point functions. Operators are called through the
//! dispatcher (boxed, by name; typed in the hand-written tests below); the structured ones
//! also on `Device::Meta` tensors.
//!
//! Tolerances, in units in the last place of the result dtype: 0 (bit-exact, including the
//! sign of zero) for the operators with exactly specified results (negation, rounding, sign,
//! relu, sqrt, reciprocal, rsqrt, classification, ...); for the transcendental functions
//! [`ULPS_F32`] / [`ULPS_F64`] (our functions are within 1-3 ulp of the correctly rounded
//! result, PyTorch's SLEEF-based ones within 1), and 1 ulp for `f16`/`bf16` (both compute in
//! `f32` and round once, so they differ only when the `f32` results straddle a rounding
//! boundary).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "linalg_support.rs"]
mod support;
// This suite runs on CPU tensors (the lazy backend's tests run it on lazy ones).
use support::CPU_TARGET as TARGET;

use serde_json::Value;
use std::sync::Arc;
use switchyard_core::{Device, Element, IValue, Result, ScalarType, Tensor, dispatch_dtype};
use switchyard_dispatch::Dispatcher;
use switchyard_dispatch::warnings::take_warnings;

// Linking switchyard-cpu registers its kernels.
use switchyard_cpu as _;

/// Transcendental functions, `f32` results.
const ULPS_F32: f64 = 3.0;
/// Transcendental functions, `f64` results.
const ULPS_F64: f64 = 3.0;

/// Operators whose results are exactly specified (compared bit for bit).
const EXACT: &[&str] = &[
    "neg",
    "abs",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sign",
    "bitwise_not",
    "relu",
    "nan_to_num",
    "logical_not",
    "isnan",
    "isinf",
    "isfinite",
    "reciprocal",
];

/// Operators computed exactly here (IEEE square root) that PyTorch's vectorised kernels get
/// within 1 ulp: compared with 1 ulp of slack.
const ONE_ULP: &[&str] = &["sqrt", "rsqrt"];

/// Cases where PyTorch 2.15 is wrong and we deliberately differ: `gelu.out` (exact form,
/// float32) leaves a non-contiguous out= tensor unwritten (`torch.ops.aten.gelu.out(x,
/// out=torch.empty_strided((2, 3), (1, 2)))` returns the out tensor with its old contents;
/// the tanh form and other dtypes write it). These cases are checked against the functional
/// operator's result instead.
const PYTORCH_BUGS: &[&str] = &["gelu[0].out transposed-out float32"];

/// Every operator of the fixture: structured ones run their meta function on Meta tensors,
/// the others (`abs`, `relu`, `nan_to_num`, `logical_not`, `isnan`, `isinf`, `isfinite`)
/// their Meta kernel or composite.
const ON_META: &[&str] = &[
    "exp",
    "log",
    "log2",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "erf",
    "reciprocal",
    "neg",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sign",
    "bitwise_not",
    "silu",
    "gelu",
    "abs",
    "relu",
    "nan_to_num",
    "logical_not",
    "isnan",
    "isinf",
    "isfinite",
];

/// `aten::exp_.decimals` → `exp`.
fn base_name(op: &str) -> &str {
    let name = op.trim_start_matches("aten::");
    let name = name.split('.').next().unwrap();
    name.strip_suffix('_').unwrap_or(name)
}

/// Rebuilds a tensor argument (a storage spec or a linspace).
fn tensor(spec: &Value) -> Tensor {
    let Some(ls) = spec.get("linspace") else {
        return support::tensor(spec);
    };
    let dtype = support::dtype_of(spec["dtype"].as_str().unwrap());
    let (lo, hi) = (support::number(&ls[0]), support::number(&ls[1]));
    let n = ls[2].as_i64().unwrap();
    let values: Vec<f64> = (0..n)
        .map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64)
        .collect();
    support::placed(dispatch_dtype!(dtype, T => {
        let data: Vec<T> = values.into_iter().map(T::from_f64_lossy).collect();
        Tensor::from_vec(data, &[n]).unwrap()
    }))
}

fn ivalue(arg: &Value, device: Device) -> IValue {
    if arg.get("sizes").is_some() || arg.get("linspace").is_some() {
        let t = tensor(arg);
        if device == Device::META {
            return IValue::Tensor(
                Tensor::allocate_strided(&t.sizes(), &t.strides(), t.dtype(), Device::META)
                    .unwrap(),
            );
        }
        return IValue::Tensor(t);
    }
    if let Some(f) = arg.get("f") {
        return IValue::Double(support::number(f));
    }
    if let Some(i) = arg.get("i") {
        return IValue::Int(i.as_i64().unwrap());
    }
    if let Some(s) = arg.get("s") {
        return IValue::String(Arc::from(s.as_str().unwrap()));
    }
    IValue::None
}

/// Calls a case's operator by name through the dispatcher; returns the result and the
/// arguments (to check that in-place / out= return the mutated argument).
fn call(case: &Value, device: Device) -> (Result<Tensor>, Vec<IValue>) {
    let op = case["op"].as_str().unwrap();
    let args: Vec<IValue> = case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| ivalue(a, device))
        .collect();
    let handle = Dispatcher::singleton().find_schema_or_error(op).unwrap();
    let mut stack = args.clone();
    let r = handle
        .call_boxed(&mut stack)
        .and_then(|()| stack.remove(0).into_tensor());
    (r, args)
}

/// The distance between `got` and `want` in units in the last place of `dtype` at `want`;
/// infinite when exactly one is NaN, an infinity differs, or zeros differ in sign.
fn ulps(got: f64, want: f64, dtype: ScalarType) -> f64 {
    if got.is_nan() && want.is_nan() {
        return 0.0;
    }
    if got == want {
        return if got == 0.0 && got.is_sign_negative() != want.is_sign_negative() {
            f64::INFINITY
        } else {
            0.0
        };
    }
    if !got.is_finite() || !want.is_finite() {
        return f64::INFINITY;
    }
    (got - want).abs() / ulp(want, dtype)
}

/// The spacing of `dtype`'s values at `v` (finite).
fn ulp(v: f64, dtype: ScalarType) -> f64 {
    let (mantissa, min_exp) = match dtype {
        ScalarType::Half => (10, -14),
        ScalarType::BFloat16 => (7, -126),
        ScalarType::Float => (23, -126),
        _ => (52, -1022),
    };
    let exp = (((v.abs().to_bits() >> 52) & 0x7ff) as i32 - 1023).max(min_exp);
    2f64.powi(exp - mantissa)
}

fn tolerance(op: &str, dtype: ScalarType) -> f64 {
    if EXACT.contains(&op) || !dtype.is_floating_point() {
        return 0.0;
    }
    if ONE_ULP.contains(&op) {
        return 1.0;
    }
    match dtype {
        ScalarType::Float => ULPS_F32,
        ScalarType::Double => ULPS_F64,
        _ => 1.0,
    }
}

/// Compares a result with its spec; returns the largest ulp error seen. `input` is the
/// operator's tensor argument. Errors are measured in ulps of the dtype the computation ran
/// in (an `f64` out= of an `f32` computation holds `f32` values), and, for GELU, at the
/// magnitude of `max(|result|, |x|)`: `1 + erf(x/√2)` and `1 + tanh(..)` cancel for negative
/// `x`, so a 1-ulp difference in erf/tanh (PyTorch's GELU uses its own erf polynomial, with
/// ~1e-7 absolute error) is amplified in the result. GELU of ±inf is skipped: PyTorch's answer
/// depends on its code path (NaN when vectorised, ±inf when strided).
fn compare(
    op: &str,
    input: &Tensor,
    got: &Tensor,
    expected: &Value,
) -> std::result::Result<f64, String> {
    let dtype = support::dtype_of(expected["dtype"].as_str().unwrap());
    if got.dtype() != dtype {
        return Err(format!("dtype {} != {dtype}", got.dtype()));
    }
    let sizes: Vec<i64> = expected["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    if got.sizes().as_slice() != sizes.as_slice() {
        return Err(format!("sizes {:?} != {sizes:?}", got.sizes()));
    }
    // The layout TensorIterator gives its outputs (a transposed input, a transposed result).
    if let Some(strides) = expected.get("strides").and_then(Value::as_array) {
        let strides: Vec<i64> = strides.iter().map(|v| v.as_i64().unwrap()).collect();
        if got.strides().as_slice() != strides.as_slice() {
            return Err(format!("strides {:?} != {strides:?}", got.strides()));
        }
    }
    let values = got.to_f64_vec().map_err(|e| e.to_string())?;
    let want: Vec<f64> = expected["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(support::number)
        .collect();
    let compute = if dtype == ScalarType::Double && input.dtype() != ScalarType::Double {
        ScalarType::Float
    } else {
        dtype
    };
    let tol = tolerance(op, compute);
    let xs = input.to_f64_vec().map_err(|e| e.to_string())?;
    let gelu = op == "gelu";
    let mut worst = 0.0f64;
    for (i, (g, w)) in values.iter().zip(&want).enumerate() {
        let x = xs.get(i).copied().unwrap_or(0.0);
        if gelu && x.is_infinite() {
            continue;
        }
        let mut e = ulps(*g, *w, compute);
        if gelu && e.is_finite() && x.abs() > w.abs() {
            // The error at the input's magnitude (see above).
            e = (g - w).abs() / ulp(x.abs(), compute);
        }
        if op == "erf"
            && matches!(compute, ScalarType::Half | ScalarType::BFloat16)
            && (g - w).abs() <= 3e-7
        {
            // PyTorch's reduced-precision erf: ~1e-7 absolute error (visible on subnormals).
            e = 0.0;
        }
        if e > tol {
            return Err(format!(
                "element {i}: got {g:e}, expected {w:e} ({e} ulps > {tol})"
            ));
        }
        worst = worst.max(e);
    }
    Ok(worst)
}

fn check_case(case: &Value) -> std::result::Result<f64, String> {
    let op = case["op"].as_str().unwrap();
    let base = base_name(op);
    take_warnings();
    // On the suite's target device; synced there, so errors of the computation count too.
    let (got, args) = support::with_target(|| call(case, Device::CPU));
    // In-place and out= return the tensor they wrote.
    let mutated = if op.contains("_.") || op.ends_with('_') {
        args.first()
    } else if op.contains(".out") || op.ends_with("_out") {
        args.last()
    } else {
        None
    };
    let returned_mutated = match (&got, mutated) {
        (Ok(t), Some(IValue::Tensor(m))) => m.is_same(t),
        _ => true,
    };
    let got = support::finish_one(got);
    let warned = take_warnings().iter().any(|w| w.contains("resized"));
    let expect = &case["expect"];
    match (got, expect.get("error")) {
        (Err(e), Some(err)) => support::check_error(&e, err).map(|()| 0.0),
        (Err(e), None) => Err(format!("unexpected error {e}")),
        (Ok(_), Some(err)) => Err(format!("expected error {err}")),
        (Ok(t), None) => {
            if !returned_mutated {
                return Err("the mutated argument was not returned".into());
            }
            if warned != expect["warned"].as_bool().unwrap() {
                return Err(format!("resize warning: {warned}, expected the opposite"));
            }
            // A fresh copy: in-place cases have overwritten their argument.
            let input = tensor(&case["args"][0]);
            compare(base, &input, &t, &expect["results"][0])
        }
    }
}

#[test]
fn every_case_matches_pytorch() {
    let _serial = support::serial();
    let fixture = support::fixture("unary.json");
    let cases = support::cases(&fixture);
    let mut failures = Vec::new();
    let mut worst: std::collections::BTreeMap<String, f64> = Default::default();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        if support::known_difference(name, case).is_some() {
            continue;
        }
        if PYTORCH_BUGS.contains(&name) {
            let x = tensor(&case["args"][0]);
            let out = tensor(&case["args"][2]);
            let approximate = case["args"][1]["s"].as_str().unwrap();
            let r = switchyard_ops::op::gelu_out::call(&x, approximate, &out).unwrap();
            let want = switchyard_ops::op::gelu::call(&x, approximate).unwrap();
            assert!(r.is_same(&out));
            let (got, want) = (out.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{name}: out= {got:?} differs from the functional result {want:?}"
            );
            continue;
        }
        match check_case(case) {
            Ok(e) => {
                if name.starts_with("sweep") {
                    let key = name.trim_start_matches("sweep ").to_string();
                    worst.insert(key, e);
                }
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    for (k, v) in &worst {
        println!("max error {k}: {v:.2} ulp");
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from PyTorch:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn operators_work_on_meta_tensors() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let fixture = support::fixture("unary.json");
    let mut checked = 0;
    for case in support::cases(&fixture) {
        let op = case["op"].as_str().unwrap();
        let expect = &case["expect"];
        // The kernel-level dtype errors (`"floor_vml_cpu" not implemented for 'Bool'`) are
        // not Meta's (PyTorch's meta functions do not raise them).
        if !ON_META.contains(&base_name(op)) || expect.get("error").is_some() {
            continue;
        }
        let (got, _) = call(case, Device::META);
        let got = got.unwrap_or_else(|e| panic!("{}: {e}", case["name"]));
        let want = &expect["results"][0];
        assert_eq!(got.device(), Device::META);
        assert_eq!(
            got.dtype(),
            support::dtype_of(want["dtype"].as_str().unwrap()),
            "{}",
            case["name"]
        );
        let sizes: Vec<i64> = want["sizes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        assert_eq!(got.sizes().as_slice(), sizes.as_slice(), "{}", case["name"]);
        if let Some(strides) = want.get("strides")
            && got.numel() > 1
        {
            let strides: Vec<i64> = strides
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            assert_eq!(
                got.strides().as_slice(),
                strides.as_slice(),
                "{}",
                case["name"]
            );
        }
        checked += 1;
    }
    assert!(checked > 1000, "{checked}");
    // Meta functions raise the errors PyTorch's do.
    let b = Tensor::allocate(&[2], ScalarType::Bool, Device::META).unwrap();
    let e = switchyard_ops::op::neg::call(&b).unwrap_err();
    assert!(e.message().starts_with("Negation, the `-` operator"));
    let i = Tensor::allocate(&[2], ScalarType::Long, Device::META).unwrap();
    let e = switchyard_ops::op::exp_::call(&i).unwrap_err();
    assert_eq!(
        e.message(),
        "result type Float can't be cast to the desired output type Long"
    );
}

/// Every error case fails on Meta tensors with the CPU's (PyTorch's) error: Meta kernels make
/// the checks of their CPU twins (`support::cpu_only_error` lists what only a computing kernel
/// can refuse: here the dtype coverage of the kernels, `"round_cpu" not implemented for
/// 'Long'`).
#[test]
fn errors_on_meta_tensors_are_the_cpu_errors() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let fixture = support::fixture("unary.json");
    let cases: Vec<Value> = support::cases(&fixture)
        .iter()
        .filter(|c| ON_META.contains(&base_name(c["op"].as_str().unwrap())))
        .cloned()
        .collect();
    let (checked, failures) =
        support::meta_error_parity(&cases, |c| call(c, Device::META).0.map(|t| vec![t]));
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 300, "{checked} error cases");
}

/// Values from a seeded linear congruential generator in `[-8, 8)`.
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 16.0 - 8.0
        })
        .collect()
}

/// Strided views give the same values as their contiguous copies; in-place equals functional;
/// out= equals functional; large inputs (threaded fast path) equal small ones elementwise.
#[test]
fn layouts_and_variants_agree() {
    let _serial = support::serial();
    use switchyard_ops::op;
    let n = 3 * 32_768 + 17;
    let host_x = Tensor::from_vec(values(n, 7), &[n as i64]).unwrap();
    let x = support::to_target(host_x.clone());
    // A result's elements, read on the host after the target's sync.
    let f32s = |t: &Tensor| support::host(t).to_vec::<f32>().unwrap();
    type Unary = fn(&Tensor) -> Result<Tensor>;
    let ops: [(&str, Unary, Unary); 6] = [
        ("exp", op::exp::call, op::exp_::call),
        ("tanh", op::tanh::call, op::tanh_::call),
        ("relu", op::relu::call, op::relu_::call),
        ("sigmoid", op::sigmoid::call, op::sigmoid_::call),
        ("neg", op::neg::call, op::neg_::call),
        ("abs", op::abs::call, op::abs_::call),
    ];
    for (name, functional, inplace) in ops {
        let full = f32s(&functional(&x).unwrap());
        // Elementwise on small pieces (the single-threaded path) gives the same bits.
        let head = support::to_target(host_x.as_strided_view(&[100], &[1], 5).unwrap());
        let small = f32s(&functional(&head).unwrap());
        assert_eq!(small.as_slice(), &full[5..105], "{name}");
        // A strided view (general engine) gives the same bits as the contiguous path.
        let strided = support::to_target(host_x.as_strided_view(&[1000], &[3], 1).unwrap());
        let got = f32s(&functional(&strided).unwrap());
        let want: Vec<f32> = (0..1000).map(|i| full[1 + 3 * i]).collect();
        assert_eq!(got, want, "{name} strided");
        // In place on a copy, and on a transposed view.
        let copy = functional(&x).unwrap(); // any tensor of the right shape
        op::copy_::call(&copy, &x, false).unwrap();
        let r = inplace(&copy).unwrap();
        assert!(r.is_same(&copy));
        assert_eq!(f32s(&copy), full, "{name}_");
        let m = Tensor::from_vec(values(12, 3), &[3, 4]).unwrap();
        let mt = support::to_target(m.as_strided_view(&[4, 3], &[1, 4], 0).unwrap());
        let want = f32s(&functional(&mt).unwrap());
        inplace(&mt).unwrap();
        assert_eq!(f32s(&mt), want, "{name}_ transposed");
    }
    // out= of a wider dtype: computed in f32, stored as f64.
    let out = support::to_target(Tensor::allocate(&[0], ScalarType::Double, Device::CPU).unwrap());
    op::exp_out::call(&x, &out).unwrap();
    let want: Vec<f64> = f32s(&op::exp::call(&x).unwrap())
        .into_iter()
        .map(f64::from)
        .collect();
    assert_eq!(support::host(&out).to_vec::<f64>().unwrap(), want);
}

#[test]
fn free_functions_and_methods_reach_the_kernels() {
    let _serial = support::serial();
    let x = support::to_target(Tensor::from_vec(vec![-1.0f32, 0.0, 2.0], &[3]).unwrap());
    let host = |r: Result<Tensor>| support::host(&r.unwrap());
    assert_eq!(
        host(switchyard_ops::relu(&x)).to_vec::<f32>().unwrap(),
        vec![0.0, 0.0, 2.0]
    );
    assert_eq!(
        switchyard_ops::gelu_with(&x, "tanh").unwrap().dtype(),
        ScalarType::Float
    );
    let nan =
        support::to_target(Tensor::from_vec(vec![f64::NAN, f64::INFINITY, -1.0], &[3]).unwrap());
    assert_eq!(
        host(switchyard_ops::nan_to_num_with(
            &nan,
            None,
            None,
            Some(-5.0)
        ))
        .to_vec::<f64>()
        .unwrap(),
        vec![0.0, f64::MAX, -1.0]
    );
    assert_eq!(
        host(switchyard_ops::isfinite(&nan))
            .to_vec::<bool>()
            .unwrap(),
        vec![false, false, true]
    );
}

/// An empty view whose offset lies past its storage (`x[1::2]` of one row with a row stride
/// of 2, as `.to()` of a strided row keeps it): PyTorch gives empty results (found by the lazy
/// property test).
#[test]
fn empty_views_past_their_storage() {
    use switchyard_ops::op;
    let x = op::empty_strided::call(
        &[1, 1],
        &[2, 1],
        Some(ScalarType::Float),
        None,
        Some(Device::CPU),
        None,
    )
    .unwrap();
    let y = op::slice_Tensor::call(&x, 0, Some(1), None, 2).unwrap();
    assert_eq!(y.sizes().to_vec(), [0, 1]);
    for r in [
        op::neg::call(&y),
        op::exp::call(&y),
        op::relu::call(&y),
        op::add_Tensor::call(&y, &y, 1.into()),
    ] {
        assert_eq!(r.unwrap().sizes().to_vec(), [0, 1]);
    }
}
