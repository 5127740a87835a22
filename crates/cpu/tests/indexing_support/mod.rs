//! Fixture plumbing shared by the indexing and factory tests: rebuilding tensors (with their
//! exact storage and strides) from the JSON the oracle scripts write, and comparing results.

#![allow(dead_code)]

use serde_json::Value;
use switchyard_core::element::{Element, write_element};
use switchyard_core::{Access, Result, Scalar, ScalarType, Tensor, dispatch_dtype, with_tensors};
use switchyard_ops::structured::{
    Meta, OutputSpec, check_inplace, create_out, maybe_create_proxy, resize_out,
};

#[path = "../target_support/mod.rs"]
mod target_support;
pub use target_support::*;

/// Loads a fixture file of `tests/fixtures/`.
pub fn fixture(name: &str) -> Value {
    // From this crate's tests or the lazy backend's, both two levels below the root.
    let path = format!(
        "{}/../../crates/cpu/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// Parses a recorded number: a JSON number, a bool, or a float's repr / "nan" / "inf".
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

fn element<T: Element>(v: &Value) -> T {
    match v {
        Value::Bool(b) => T::from_i64_lossy(i64::from(*b)),
        Value::Number(n) if n.is_i64() => T::from_i64_lossy(n.as_i64().unwrap()),
        other => T::from_f64_lossy(number(other)),
    }
}

/// Rebuilds an input tensor: its whole storage, then the recorded view of it (on the target
/// inside [`with_target`]).
pub fn tensor(v: &Value) -> Tensor {
    let dtype = ScalarType::parse(v["dtype"].as_str().unwrap()).unwrap();
    let storage = v["storage"].as_array().unwrap();
    let base = dispatch_dtype!(dtype, T => {
        let data: Vec<T> = storage.iter().map(element::<T>).collect();
        Tensor::from_vec(data, &[storage.len() as i64]).unwrap()
    });
    placed(
        base.as_strided_view(
            &ints(&v["sizes"]),
            &ints(&v["strides"]),
            v["offset"].as_i64().unwrap(),
        )
        .unwrap(),
    )
}

/// A list of integers.
pub fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

/// A recorded argument as a scalar (`{"int": 3}`, `{"float": "2.5"}`, `{"bool": true}`).
pub fn scalar(v: &Value) -> Scalar {
    if let Some(b) = v.get("bool") {
        Scalar::Bool(b.as_bool().unwrap())
    } else if let Some(i) = v.get("int") {
        Scalar::Int(i.as_i64().unwrap())
    } else {
        Scalar::Float(number(&v["float"]))
    }
}

/// Whether two recorded-vs-actual values agree exactly (NaN equals NaN; the sign of zero
/// counts).
pub fn same_value(expected: f64, actual: f64) -> bool {
    (expected.is_nan() && actual.is_nan())
        || (expected == actual && expected.is_sign_negative() == actual.is_sign_negative())
}

/// The elements of `t` in row-major order as `f64` (exact for every test value; `i64`
/// beyond 2^53 is compared through [`int_values`]).
pub fn values(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

/// The elements of an integer tensor as `i64`.
pub fn int_values(t: &Tensor) -> Vec<i64> {
    dispatch_dtype!(t.dtype(), T => t.to_vec::<T>().unwrap().into_iter().map(Element::to_i64_lossy).collect())
}

/// Compares `actual` with a recorded output; `tol` is a relative tolerance for floats
/// (0 for exact). Returns a description of the first difference.
pub fn compare(
    expected: &Value,
    actual: &Tensor,
    check_strides: bool,
    tol: f64,
) -> std::result::Result<(), String> {
    let dtype = expected["dtype"].as_str().unwrap();
    if ScalarType::parse(dtype).unwrap() != actual.dtype() {
        return Err(format!("dtype: expected {dtype}, got {}", actual.dtype()));
    }
    let sizes = ints(&expected["sizes"]);
    if sizes != actual.sizes().as_slice() {
        return Err(format!(
            "sizes: expected {sizes:?}, got {:?}",
            actual.sizes()
        ));
    }
    if check_strides && actual.numel() > 1 {
        let strides = ints(&expected["strides"]);
        if strides != actual.strides().as_slice() {
            return Err(format!(
                "strides: expected {strides:?}, got {:?}",
                actual.strides()
            ));
        }
    }
    // Large outputs are recorded as (index, value) samples.
    let pairs: Vec<(usize, &Value)> = match expected.get("values") {
        Some(v) => v.as_array().unwrap().iter().enumerate().collect(),
        None => expected["sample"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_u64().unwrap() as usize, &p[1]))
            .collect(),
    };
    if actual.dtype().is_floating_point() {
        let got = values(actual);
        for (i, e) in pairs {
            let a = got[i];
            let e = number(e);
            let ok = same_value(e, a) || (tol > 0.0 && (e - a).abs() <= tol * e.abs().max(1.0));
            if !ok {
                return Err(format!("element {i}: expected {e}, got {a}"));
            }
        }
    } else {
        let got = int_values(actual);
        for (i, e) in pairs {
            let a = got[i];
            let e = match e {
                Value::Bool(b) => i64::from(*b),
                other => other.as_i64().unwrap(),
            };
            if e != a {
                return Err(format!("element {i}: expected {e}, got {a}"));
            }
        }
    }
    Ok(())
}

/// Copies `src` into `dst` element by element (same shape and dtype), for emulating the
/// generated wrapper's `copy_back` without a dispatcher.
pub fn copy_values(dst: &Tensor, src: &Tensor) {
    dispatch_dtype!(dst.dtype(), T => {
        let vals = src.to_vec::<T>().unwrap();
        let offsets: Vec<i64> = dst.geometry().offsets().collect();
        with_tensors(&[(dst, Access::Write)], |data| {
            let bytes = data.bytes_mut(0)?;
            for (o, v) in offsets.iter().zip(vals) {
                assert!(write_element(bytes, *o as usize, v));
            }
            Ok(())
        })
        .unwrap();
    });
}

/// How a structured operator is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// New outputs.
    Functional,
    /// `self` is the output.
    Inplace,
    /// Caller-provided outputs.
    Out,
}

/// Runs a structured operator as the generated wrappers do: allocate / check / resize the
/// outputs, compute into proxies where strides differ, copy back.
pub fn structured<P>(
    mode: Mode,
    meta: Result<Meta<P>>,
    self_: Option<&Tensor>,
    outs: &[Tensor],
    imp: impl FnOnce(&Meta<P>, &[&Tensor]) -> Result<()>,
) -> Result<Vec<Tensor>> {
    let meta = meta?;
    let specs: Vec<&OutputSpec> = (0..meta.outputs.len())
        .map(|i| meta.output(i))
        .collect::<Result<_>>()?;
    let targets: Vec<Tensor> = match mode {
        Mode::Functional => specs.iter().map(|s| create_out(s)).collect::<Result<_>>()?,
        Mode::Inplace => {
            let s = self_.unwrap();
            check_inplace(s, specs[0])?;
            vec![s.clone()]
        }
        Mode::Out => {
            for (o, s) in outs.iter().zip(&specs) {
                resize_out(o, s)?;
            }
            outs.to_vec()
        }
    };
    let proxies: Vec<Option<Tensor>> = if mode == Mode::Functional {
        targets.iter().map(|_| None).collect()
    } else {
        targets
            .iter()
            .zip(&specs)
            .map(|(t, s)| maybe_create_proxy(t, s))
            .collect::<Result<_>>()?
    };
    let args: Vec<&Tensor> = targets
        .iter()
        .zip(&proxies)
        .map(|(t, p)| p.as_ref().unwrap_or(t))
        .collect();
    imp(&meta, &args)?;
    for (t, p) in targets.iter().zip(&proxies) {
        if let Some(p) = p {
            copy_values(t, p);
        }
    }
    Ok(targets)
}
