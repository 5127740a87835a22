//! Printing results as JSON (`--json`); the text form is PyTorch's `repr`.
//!
//! JSON lists every element, so it is bounded: a result whose tensors hold more than
//! [`JSON_MAX_ELEMENTS`] elements in all is refused with an error before anything is copied or
//! materialised (a broadcast view such as `expand` of one element to 2^32 has 2^32 logical
//! elements over one stored value). The text output summarises large tensors instead.

use serde_json::{Value, json};
use switchyard_core::{Error, IValue, Result, Tensor};

/// The most tensor elements one `--json` call prints, over all its returns.
pub const JSON_MAX_ELEMENTS: usize = 1 << 20;

fn float_json(v: f64) -> Value {
    if v.is_nan() {
        json!("nan")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(v)
    }
}

/// A tensor as `{"dtype", "shape", "values"}` with values flattened row-major, taking its
/// element count from `budget` (an error when it would go below zero).
fn tensor_json(t: &Tensor, budget: &mut usize) -> Result<Value> {
    let sizes = t.sizes().to_vec();
    if t.is_meta() {
        return Ok(
            json!({"dtype": t.dtype().python_name(), "shape": sizes, "device": t.device().to_string(), "values": null}),
        );
    }
    let numel = usize::try_from(t.numel()).unwrap_or(usize::MAX);
    if numel > *budget {
        return Err(Error::runtime(format!(
            "--json prints at most {JSON_MAX_ELEMENTS} tensor elements per call, and a result of shape {sizes:?} has {numel} (of which {} fit); print it without --json for a summary",
            *budget
        )));
    }
    *budget -= numel;
    let host = if t.is_cpu() {
        t.clone()
    } else {
        switchyard_ops::op::_to_copy::call(
            t,
            None,
            None,
            Some(switchyard_core::Device::CPU),
            None,
            false,
            None,
        )?
    };
    let values: Vec<Value> = switchyard_core::dispatch_dtype!(host.dtype(), T => {
        use switchyard_core::Element;
        host.to_vec::<T>()?
            .into_iter()
            .map(|x| {
                if T::DTYPE == switchyard_core::ScalarType::Bool {
                    json!(x.to_f64() != 0.0)
                } else if T::DTYPE.is_floating_point() {
                    float_json(x.to_f64())
                } else {
                    json!(x.to_i64_lossy())
                }
            })
            .collect()
    });
    Ok(json!({"dtype": t.dtype().python_name(), "shape": sizes, "values": values}))
}

/// Copies a tensor whose memory the host cannot address (an external device's) to the CPU so
/// that the text output can print its values, as PyTorch's `repr` does. Only tensors of at most
/// [`JSON_MAX_ELEMENTS`] elements are copied: a larger one (a broadcast view of 2^32 elements
/// over one stored value) is refused, and prints as `tensor(..., size=...)`.
pub fn host_copy_for_printing(t: &Tensor) -> Result<Tensor> {
    if usize::try_from(t.numel()).map_or(true, |n| n > JSON_MAX_ELEMENTS) {
        return Err(Error::runtime("too large to copy for printing"));
    }
    switchyard_ops::op::_to_copy::call(
        t,
        None,
        None,
        Some(switchyard_core::Device::CPU),
        None,
        false,
        None,
    )
}

/// One return value as JSON, its tensors' elements taken from `budget`.
fn ivalue_json(v: &IValue, budget: &mut usize) -> Result<Value> {
    Ok(match v {
        IValue::None => Value::Null,
        IValue::Tensor(t) => tensor_json(t, budget)?,
        IValue::Bool(b) => json!(b),
        IValue::Int(i) => json!(i),
        IValue::Double(d) => float_json(*d),
        IValue::String(s) => json!(s.as_ref()),
        IValue::TensorList(l) => Value::Array(
            l.iter()
                .map(|t| tensor_json(t, budget))
                .collect::<Result<_>>()?,
        ),
        IValue::Tuple(l) | IValue::GenericList(l) => Value::Array(
            l.iter()
                .map(|v| ivalue_json(v, budget))
                .collect::<Result<_>>()?,
        ),
        IValue::IntList(l) => json!(l),
        IValue::DoubleList(l) => Value::Array(l.iter().map(|d| float_json(*d)).collect()),
        IValue::BoolList(l) => json!(l),
        other => json!(other.to_string()),
    })
}

/// The returns of a call as JSON, one line per return; an error (and nothing printed) when
/// their tensors hold more than [`JSON_MAX_ELEMENTS`] elements.
pub fn json_lines(values: &[IValue]) -> Result<String> {
    let mut budget = JSON_MAX_ELEMENTS;
    let mut text = String::new();
    for v in values {
        text.push_str(&ivalue_json(v, &mut budget)?.to_string());
        text.push('\n');
    }
    Ok(text)
}

/// An error as `{"error": kind, "message", "operator"}` (the operator called), with
/// `"raised_in"` when an inner operator raised it.
pub fn error_json(e: &Error) -> Value {
    let mut v = json!({"error": e.kind().name(), "message": e.message(), "operator": e.operator()});
    if let Some(inner) = e.raised_in() {
        v["raised_in"] = json!(inner);
    }
    v
}
