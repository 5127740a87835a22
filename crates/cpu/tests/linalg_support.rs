//! Test support shared by the linalg and nn oracle tests (`#[path]`-included by them): JSON
//! fixtures written by `tools/oracle/linalg_common.py`, tensors rebuilt from their specs,
//! structured-kernel drivers, and comparisons with stated tolerances.
//!
//! Compiled on its own as well (an empty test binary), hence the `dead_code` allowance.

#![allow(dead_code, missing_docs, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use switchyard_core::element::{read_element, write_element};
use switchyard_core::{
    Access, Element, Error, Result, Scalar, ScalarType, Tensor, dispatch_dtype, with_tensors,
};
use switchyard_ops::structured::{self, Meta, OutputSpec, Outs};

#[path = "target_support/mod.rs"]
mod target_support;
pub use target_support::*;
// The hooks when this file is a test root of its own.
#[allow(unused_imports)]
use target_support::CPU_TARGET as TARGET;

/// Loads `crates/cpu/tests/fixtures/<name>` (from this crate's tests or the lazy backend's,
/// both two levels below the workspace root).
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../crates/cpu/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The cases of a fixture.
pub fn cases(fixture: &Value) -> &[Value] {
    fixture["cases"].as_array().unwrap()
}

pub fn dtype_of(name: &str) -> ScalarType {
    match name {
        "bool" => ScalarType::Bool,
        "uint8" => ScalarType::Byte,
        "int8" => ScalarType::Char,
        "int16" => ScalarType::Short,
        "int32" => ScalarType::Int,
        "int64" => ScalarType::Long,
        "float16" => ScalarType::Half,
        "bfloat16" => ScalarType::BFloat16,
        "float32" => ScalarType::Float,
        "float64" => ScalarType::Double,
        other => panic!("unknown dtype {other}"),
    }
}

/// A JSON number, bool or spelled-out float as `f64`.
pub fn number(v: &Value) -> f64 {
    match v {
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap(),
        Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            s => s.parse().unwrap(),
        },
        other => panic!("not a number: {other}"),
    }
}

fn integer(v: &Value) -> i64 {
    match v {
        Value::Bool(b) => i64::from(*b),
        Value::Number(n) => n.as_i64().unwrap(),
        other => panic!("not an integer: {other}"),
    }
}

/// A 1-d tensor of `dtype` holding `values`.
pub fn vector(values: &[Value], dtype: ScalarType) -> Tensor {
    dispatch_dtype!(dtype, T => {
        let data: Vec<T> = values
            .iter()
            .map(|v| if dtype.is_floating_point() { T::from_f64_lossy(number(v)) } else { T::from_i64_lossy(integer(v)) })
            .collect();
        let n = data.len() as i64;
        Tensor::from_vec(data, &[n]).unwrap()
    })
}

/// The storage values of a spec: a list, or `{"gen": [a, b, m, c, d], "len": n}` meaning
/// `((i*a + b) % m - c) / d` (times `d` for integer dtypes).
fn storage_values(spec: &Value, dtype: ScalarType) -> Vec<Value> {
    let storage = &spec["storage"];
    if let Some(list) = storage.as_array() {
        return list.clone();
    }
    let g: Vec<i64> = storage["gen"]
        .as_array()
        .unwrap()
        .iter()
        .map(integer)
        .collect();
    let n = integer(&storage["len"]);
    (0..n)
        .map(|i| {
            let v = ((i * g[0] + g[1]) % g[2] - g[3]) as f64 / g[4] as f64;
            if dtype.is_floating_point() {
                Value::String(format!("{v:?}"))
            } else {
                Value::from((v * g[4] as f64) as i64)
            }
        })
        .collect()
}

fn dims(v: &Value) -> Vec<i64> {
    v.as_array().unwrap().iter().map(integer).collect()
}

/// Rebuilds a tensor spec `{dtype, sizes, strides, offset, storage}` as a strided view (on
/// the target inside [`with_target`]).
pub fn tensor(spec: &Value) -> Tensor {
    let dtype = dtype_of(spec["dtype"].as_str().unwrap());
    let base = vector(&storage_values(spec, dtype), dtype);
    placed(
        base.as_strided_view(
            &dims(&spec["sizes"]),
            &dims(&spec["strides"]),
            integer(&spec["offset"]),
        )
        .unwrap(),
    )
}

/// Whether a JSON argument is a tensor spec (else a scalar or null).
pub fn is_tensor(v: &Value) -> bool {
    v.get("sizes").is_some()
}

/// A scalar argument `{"int": 3}` / `{"float": "0.5"}` / `{"bool": true}`.
pub fn scalar(v: &Value) -> Scalar {
    if let Some(i) = v.get("int") {
        Scalar::Int(integer(i))
    } else if let Some(f) = v.get("float") {
        Scalar::Float(number(f))
    } else if let Some(b) = v.get("bool") {
        Scalar::Bool(b.as_bool().unwrap())
    } else {
        panic!("not a scalar: {v}")
    }
}

/// Relative and absolute tolerance for comparing results of `dtype` with PyTorch's (whose
/// vectorised code rounds differently in the last bits).
pub fn tolerance(dtype: ScalarType) -> (f64, f64) {
    match dtype {
        ScalarType::Half => (2e-3, 2e-3),
        ScalarType::BFloat16 => (1.6e-2, 1.6e-2),
        ScalarType::Float => (2e-5, 2e-5),
        ScalarType::Double => (1e-12, 1e-12),
        _ => (0.0, 0.0),
    }
}

/// Compares `got` with an expected result spec: dtype, sizes, strides (when `strides`) and
/// values (exact for integers and bools, within `tolerance` for floats, NaN equals NaN).
pub fn check_tensor(
    got: &Tensor,
    expected: &Value,
    strides: bool,
) -> std::result::Result<(), String> {
    let dtype = dtype_of(expected["dtype"].as_str().unwrap());
    if got.dtype() != dtype {
        return Err(format!("dtype {} != {dtype}", got.dtype()));
    }
    let want_sizes = dims(&expected["sizes"]);
    if got.sizes().as_slice() != want_sizes.as_slice() {
        return Err(format!("sizes {:?} != {want_sizes:?}", got.sizes()));
    }
    let want_strides = dims(&expected["strides"]);
    if strides && got.numel() > 1 && got.strides().as_slice() != want_strides.as_slice() {
        return Err(format!("strides {:?} != {want_strides:?}", got.strides()));
    }
    let values = got.to_f64_vec().map_err(|e| e.to_string())?;
    let want: Vec<f64> = expected["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(number)
        .collect();
    if values.len() != want.len() {
        return Err(format!(
            "{} elements, expected {}",
            values.len(),
            want.len()
        ));
    }
    let (rtol, atol) = tolerance(dtype);
    for (i, (g, w)) in values.iter().zip(&want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= atol + rtol * w.abs();
        if !ok {
            return Err(format!("element {i}: got {g}, expected {w}"));
        }
    }
    Ok(())
}

/// Compares an error with `{kind, message}`.
pub fn check_error(got: &Error, expected: &Value) -> std::result::Result<(), String> {
    let kind = expected["kind"].as_str().unwrap();
    let message = expected["message"].as_str().unwrap();
    if got.kind().name() != kind || got.message() != message {
        return Err(format!(
            "error {}: {:?}, expected {kind}: {message:?}",
            got.kind().name(),
            got.message()
        ));
    }
    Ok(())
}

/// Checks a case's outcome against its `expect` entry; `Err` describes the mismatch.
pub fn check_outcome(
    case: &Value,
    got: Result<Vec<Tensor>>,
    strides: bool,
) -> std::result::Result<(), String> {
    let expect = &case["expect"];
    match (got, expect.get("error")) {
        (Err(e), Some(err)) => check_error(&e, err),
        (Err(e), None) => Err(format!("unexpected error {e}")),
        (Ok(_), Some(err)) => Err(format!("expected error {err}")),
        (Ok(ts), None) => {
            let results = expect["results"].as_array().unwrap();
            if ts.len() != results.len() {
                return Err(format!("{} results, expected {}", ts.len(), results.len()));
            }
            ts.iter()
                .zip(results)
                .enumerate()
                .try_for_each(|(i, (t, r))| {
                    check_tensor(t, r, strides).map_err(|e| format!("result {i}: {e}"))
                })
        }
    }
}

/// Runs every case of a fixture through `run` on the target (`run_on_target`: its tensors
/// built there, synced, results brought to the host) and panics listing all mismatches.
pub fn check_all(cases: &[Value], strides: bool, run: impl Fn(&Value) -> Result<Vec<Tensor>>) {
    let _serial = serial();
    let failures: Vec<String> = cases
        .iter()
        .filter(|case| known_difference(case["name"].as_str().unwrap(), case).is_none())
        .filter_map(|case| {
            let name = case["name"].as_str().unwrap();
            check_outcome(case, run_on_target(|| run(case)), strides)
                .err()
                .map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from PyTorch on {}:\n{}",
        failures.len(),
        cases.len(),
        target_name(),
        failures.join("\n")
    );
}

/// Errors only a kernel that computes can raise, which Meta kernels do not (PyTorch's do not
/// either): the coverage of a kernel's dtype dispatch (`"round_cpu" not implemented for
/// 'Long'`) and checks of element values (a target out of range, an integer division by
/// zero, a negative integer exponent held in a tensor).
pub fn cpu_only_error(message: &str) -> bool {
    const VALUE_CHECKS: &[&str] = &[
        "ZeroDivisionError",
        "Integers to negative integer powers are not allowed.",
        "Target ",
        "index out of range",
        "bernoulli_ expects p to be in",
        // Memory overlap: Meta tensors have no memory to overlap (PyTorch skips these checks
        // on Meta tensors too).
        "unsupported operation: more than one element of the written-to tensor refers to a single memory location.",
        "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location.",
        // A limit of the CPU kernels (CUDA's support it), not a property of the arguments.
        "softmax with half to float conversion is not supported on CPU",
    ];
    message.contains("\" not implemented for '")
        || VALUE_CHECKS.iter().any(|m| message.starts_with(m))
}

/// `message` with the legacy type strings of Meta tensors (`MetaFloatType`, which `expand`
/// prints) spelled as those of CPU tensors (`torch.FloatTensor`), as PyTorch prints each.
fn as_on_cpu(message: &str) -> String {
    let mut out = message.to_owned();
    for dtype in switchyard_core::ScalarType::ALL {
        out = out.replace(
            &format!("Meta{}Type", dtype.name()),
            &format!("torch.{}Tensor", dtype.name()),
        );
    }
    out
}

/// Every error case of `cases` run again through `run_meta` (the same call on Meta tensors)
/// must fail with the CPU's (PyTorch's) error, except the [`cpu_only_error`]s: Meta kernels
/// make the checks of their CPU twins. Returns the number of cases checked and the
/// differences.
pub fn meta_error_parity(
    cases: &[Value],
    run_meta: impl Fn(&Value) -> Result<Vec<Tensor>>,
) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut failures = Vec::new();
    for case in cases {
        let Some(err) = case["expect"].get("error") else {
            continue;
        };
        let message = err
            .get("message")
            .or_else(|| err.get("msg"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if cpu_only_error(message) {
            continue;
        }
        checked += 1;
        let name = case["name"].as_str().unwrap_or("?");
        match run_meta(case) {
            Err(e) => {
                let e = Error::new(e.kind(), as_on_cpu(e.message()));
                if let Err(d) = check_error(&e, err) {
                    failures.push(format!("{name}: on Meta {d}"));
                }
            }
            Ok(_) => failures.push(format!(
                "{name}: Meta accepts what the CPU refuses: {message}"
            )),
        }
    }
    (checked, failures)
}

/// Copies `src` into `dst` element by element (same shape and dtype); stands in for the
/// `copy_` the generated wrappers use when a proxy output was needed.
pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    dispatch_dtype!(dst.dtype(), T => {
        let values = src.to_vec::<T>()?;
        with_tensors(&[(dst, Access::Write)], |data| {
            let offsets: Vec<i64> = data.geometry(0).offsets().collect();
            let bytes = data.bytes_mut(0)?;
            for (off, v) in offsets.into_iter().zip(values) {
                assert!(write_element(bytes, off as usize, v));
            }
            Ok(())
        })
    })
}

/// Reads element `i` (row-major) of a tensor as `f64`.
pub fn element(t: &Tensor, i: usize) -> f64 {
    dispatch_dtype!(t.dtype(), T => {
        with_tensors(&[(t, Access::Read)], |data| {
            let off = data.geometry(0).offsets().nth(i).unwrap();
            Ok(read_element::<T>(data.bytes(0)?, off as usize).unwrap().to_f64())
        })
        .unwrap()
    })
}

/// How a structured operator is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Functional,
    Inplace,
    Out,
}

impl Variant {
    pub fn parse(s: &str) -> Variant {
        match s {
            "functional" => Variant::Functional,
            "inplace" => Variant::Inplace,
            "out" => Variant::Out,
            other => panic!("unknown variant {other}"),
        }
    }
}

/// Runs a structured kernel the way the generated wrappers do: meta, then allocate
/// (functional), check (in-place) or resize (out=) the outputs, compute into proxies when
/// the layout differs, and copy back. Returns the outputs.
pub fn run_structured<P>(
    variant: Variant,
    targets: &[&Tensor],
    meta: impl FnOnce(Outs<'_>) -> Result<Meta<P>>,
    imp: impl FnOnce(&Meta<P>, &[&Tensor]) -> Result<()>,
) -> Result<Vec<Tensor>> {
    match variant {
        Variant::Functional => {
            let m = meta(Outs::Functional)?;
            let outs: Vec<Tensor> = m
                .outputs
                .iter()
                .map(structured::create_out)
                .collect::<Result<_>>()?;
            let refs: Vec<&Tensor> = outs.iter().collect();
            imp(&m, &refs)?;
            Ok(outs)
        }
        Variant::Inplace | Variant::Out => {
            let m = if variant == Variant::Inplace {
                meta(Outs::Inplace(targets[0]))?
            } else {
                meta(Outs::Out(targets))?
            };
            for (t, spec) in targets.iter().zip(&m.outputs) {
                if variant == Variant::Inplace {
                    structured::check_inplace(t, spec)?;
                } else {
                    structured::resize_out(t, spec)?;
                }
            }
            let proxies: Vec<Option<Tensor>> = targets
                .iter()
                .zip(&m.outputs)
                .map(|(t, spec): (&&Tensor, &OutputSpec)| structured::maybe_create_proxy(t, spec))
                .collect::<Result<_>>()?;
            let refs: Vec<&Tensor> = targets
                .iter()
                .zip(&proxies)
                .map(|(t, p)| p.as_ref().unwrap_or(t))
                .collect();
            imp(&m, &refs)?;
            for (t, p) in targets.iter().zip(&proxies) {
                if let Some(p) = p {
                    copy_into(t, p)?;
                }
            }
            Ok(targets.iter().map(|t| (*t).clone()).collect())
        }
    }
}

/// A typed argument of the nn fixture: tensor specs are rebuilt, `{"i": 3}` → `Int`, ...
#[derive(Clone, Debug)]
pub enum Arg {
    Tensor(Tensor),
    None,
    Int(i64),
    Ints(Vec<i64>),
    Float(f64),
    Bool(bool),
    Scalar(Scalar),
}

impl Arg {
    pub fn parse(v: &Value) -> Arg {
        if is_tensor(v) {
            Arg::Tensor(tensor(v))
        } else if let Some(i) = v.get("i") {
            Arg::Int(integer(i))
        } else if let Some(l) = v.get("ints") {
            Arg::Ints(dims(l))
        } else if let Some(f) = v.get("f") {
            Arg::Float(number(f))
        } else if let Some(b) = v.get("b") {
            Arg::Bool(b.as_bool().unwrap())
        } else if v.get("none").is_some() {
            Arg::None
        } else {
            Arg::Scalar(scalar(v))
        }
    }

    pub fn tensor(&self) -> &Tensor {
        match self {
            Arg::Tensor(t) => t,
            other => panic!("expected a tensor, got {other:?}"),
        }
    }

    pub fn opt_tensor(&self) -> Option<&Tensor> {
        match self {
            Arg::Tensor(t) => Some(t),
            Arg::None => None,
            other => panic!("expected an optional tensor, got {other:?}"),
        }
    }

    pub fn int(&self) -> i64 {
        match self {
            Arg::Int(i) => *i,
            other => panic!("expected an int, got {other:?}"),
        }
    }

    pub fn opt_int(&self) -> Option<i64> {
        match self {
            Arg::Int(i) => Some(*i),
            Arg::None => None,
            other => panic!("expected an optional int, got {other:?}"),
        }
    }

    pub fn ints(&self) -> &[i64] {
        match self {
            Arg::Ints(v) => v,
            other => panic!("expected ints, got {other:?}"),
        }
    }

    pub fn float(&self) -> f64 {
        match self {
            Arg::Float(f) => *f,
            other => panic!("expected a float, got {other:?}"),
        }
    }

    pub fn boolean(&self) -> bool {
        match self {
            Arg::Bool(b) => *b,
            other => panic!("expected a bool, got {other:?}"),
        }
    }

    pub fn scalar(&self) -> Scalar {
        match self {
            Arg::Scalar(s) => *s,
            other => panic!("expected a scalar, got {other:?}"),
        }
    }
}

/// The arguments of a case.
pub fn args(case: &Value) -> Vec<Arg> {
    case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(Arg::parse)
        .collect()
}

/// The out= tensors of a case (a list for multi-output operators, else one spec).
pub fn outs(case: &Value) -> Vec<Tensor> {
    match case.get("out") {
        None => vec![],
        Some(Value::Array(list)) => list.iter().map(tensor).collect(),
        Some(spec) => vec![tensor(spec)],
    }
}
