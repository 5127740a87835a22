//! Helpers shared by the view and copy tests: rebuilding the tensors the oracle scripts
//! (`tools/oracle/views_common.py`) describe, and comparing results with PyTorch's.

#![allow(dead_code)] // each test binary uses a different subset

use serde_json::Value;
use switchyard_core::{Device, Element, Error, ScalarType, Tensor, dispatch_dtype};

#[path = "../target_support/mod.rs"]
mod target_support;
pub use target_support::*;

/// Parses a fixture file of `crates/cpu/tests/fixtures`.
pub fn fixture(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// A dtype by its Python name (`float32`).
pub fn dtype(name: &str) -> ScalarType {
    ScalarType::parse(name).unwrap()
}

/// Element `i` of a spec's storage (`base_value` in `views_common.py`).
pub fn base_value(i: i64, dt: ScalarType) -> f64 {
    if dt == ScalarType::Bool {
        return if i % 3 != 0 { 1.0 } else { 0.0 };
    }
    let k = ((i * 7) % 23) as f64;
    if dt == ScalarType::Byte {
        k
    } else if dt.is_floating_point() {
        k - 11.0 + 0.25 * (i % 4) as f64
    } else {
        k - 11.0
    }
}

/// A 1-d CPU tensor of `dt` holding `values` (each exactly representable).
pub fn tensor_of(values: &[f64], dt: ScalarType) -> Tensor {
    dispatch_dtype!(dt, T => {
        let v: Vec<T> = values.iter().map(|x| T::from_f64_lossy(*x)).collect();
        Tensor::from_vec(v, &[values.len() as i64]).unwrap()
    })
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

/// The tensor a spec describes: a fresh storage viewed with the spec's geometry.
pub fn make(spec: &Value) -> Tensor {
    let dt = dtype(spec["dtype"].as_str().unwrap());
    let n = spec["storage"].as_i64().unwrap();
    let base = match spec["device"].as_str().unwrap() {
        "meta" => Tensor::allocate(&[n], dt, Device::META).unwrap(),
        _ => {
            let vals: Vec<f64> = (0..n).map(|i| base_value(i, dt)).collect();
            tensor_of(&vals, dt)
        }
    };
    let view = base
        .as_strided_view(
            &ints(&spec["sizes"]),
            &ints(&spec["strides"]),
            spec["offset"].as_i64().unwrap(),
        )
        .unwrap();
    // A CPU spec goes to the target inside `with_target` (Meta tensors stay Meta).
    if view.is_meta() { view } else { placed(view) }
}

/// One element, compared exactly (NaN equals NaN).
#[derive(Clone, Debug)]
pub enum Val {
    /// A floating-point element.
    F(f64),
    /// An integer element.
    I(i64),
    /// A boolean element.
    B(bool),
}

impl PartialEq for Val {
    fn eq(&self, o: &Val) -> bool {
        match (self, o) {
            (Val::F(a), Val::F(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Val::I(a), Val::I(b)) => a == b,
            (Val::B(a), Val::B(b)) => a == b,
            _ => false,
        }
    }
}

/// The elements of a CPU tensor in row-major order.
pub fn values(t: &Tensor) -> Vec<Val> {
    match t.dtype() {
        ScalarType::Bool => t
            .to_vec::<bool>()
            .unwrap()
            .into_iter()
            .map(Val::B)
            .collect(),
        ScalarType::Long => t.to_vec::<i64>().unwrap().into_iter().map(Val::I).collect(),
        dt if dt.is_floating_point() => t.to_f64_vec().unwrap().into_iter().map(Val::F).collect(),
        _ => t
            .to_f64_vec()
            .unwrap()
            .into_iter()
            .map(|x| Val::I(x as i64))
            .collect(),
    }
}

/// Fixture values: repr strings for floats, numbers for integers, booleans.
pub fn expected_values(v: &Value) -> Vec<Val> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| match x {
            Value::String(s) => Val::F(s.parse::<f64>().unwrap()),
            Value::Bool(b) => Val::B(*b),
            Value::Number(n) => Val::I(n.as_i64().unwrap()),
            other => panic!("unexpected value {other}"),
        })
        .collect()
}

/// Checks `out` against a fixture description (geometry, dtype, device, aliasing with `base`,
/// values when recorded).
pub fn check_tensor(out: &Tensor, desc: &Value, base: Option<&Tensor>, ctx: &str) {
    assert_eq!(
        out.sizes().as_slice(),
        ints(&desc["sizes"]).as_slice(),
        "{ctx}: sizes"
    );
    assert_eq!(
        out.strides().as_slice(),
        ints(&desc["strides"]).as_slice(),
        "{ctx}: strides"
    );
    assert_eq!(
        out.storage_offset(),
        desc["offset"].as_i64().unwrap(),
        "{ctx}: storage offset"
    );
    assert_eq!(
        out.dtype(),
        dtype(desc["dtype"].as_str().unwrap()),
        "{ctx}: dtype"
    );
    assert_eq!(
        out.device().to_string(),
        desc["device"].as_str().unwrap(),
        "{ctx}: device"
    );
    if let Some(base) = base {
        if let Some(alias) = desc["alias"].as_bool() {
            assert_eq!(out.is_alias_of(base), alias, "{ctx}: aliasing");
        }
        if let Some(is_self) = desc["is_self"].as_bool() {
            assert_eq!(out.is_same(base), is_self, "{ctx}: returns self");
        }
    }
    if let Some(v) = desc.get("values").filter(|v| !v.is_null()) {
        assert_eq!(values(out), expected_values(v), "{ctx}: values");
    }
}

/// Checks a result on a target other than the CPU against a fixture description: sizes,
/// strides and dtype of `out` (the target's tensor), values of `host` (its copy on the CPU,
/// after the sync). Storage offsets, storage sizes, the device and aliasing are the CPU
/// storage's properties: a lazy tensor has no storage (functionalization keeps views as views
/// of values, not of memory), so they are not compared there.
pub fn check_on_target(out: &Tensor, host: &Tensor, desc: &Value, ctx: &str) {
    assert_eq!(
        out.sizes().as_slice(),
        ints(&desc["sizes"]).as_slice(),
        "{ctx}: sizes"
    );
    assert_eq!(
        out.strides().as_slice(),
        ints(&desc["strides"]).as_slice(),
        "{ctx}: strides"
    );
    assert_eq!(
        out.dtype(),
        dtype(desc["dtype"].as_str().unwrap()),
        "{ctx}: dtype"
    );
    if let Some(v) = desc.get("values").filter(|v| !v.is_null()) {
        assert!(
            host.storage().is_some(),
            "{ctx}: a result on {} without storage",
            host.device()
        );
        assert_eq!(values(host), expected_values(v), "{ctx}: values");
    }
}

/// Checks an error against a fixture error (`{kind, msg}`).
pub fn check_error(err: &Error, expected: &Value, ctx: &str) {
    assert_eq!(
        err.kind().name(),
        expected["kind"].as_str().unwrap(),
        "{ctx}: error kind of {:?}",
        err.message()
    );
    assert_eq!(
        err.message(),
        expected["msg"].as_str().unwrap(),
        "{ctx}: message"
    );
}

/// The description of a case for assertion messages.
pub fn context(case: &Value) -> String {
    format!(
        "{} on {} {:?} args {}",
        case["op"].as_str().unwrap_or("?"),
        case["self"]["device"].as_str().unwrap_or("?"),
        case["self"]["sizes"],
        case["args"]
    )
}

/// `int[]` argument.
pub fn int_list(v: &Value) -> Vec<i64> {
    ints(v)
}

/// `int?` argument.
pub fn opt_int(v: &Value) -> Option<i64> {
    v.as_i64()
}

/// `int` argument.
pub fn int(v: &Value) -> i64 {
    v.as_i64().unwrap()
}

/// Element type helper for generic tests.
pub fn element_dtype<T: Element>() -> ScalarType {
    T::DTYPE
}
