//! Printing results: PyTorch style, or JSON (`--json`).

use serde_json::{Value, json};
use switchyard_core::{Error, IValue, Result, Tensor};

fn float_json(v: f64) -> Value {
    if v.is_nan() {
        json!("nan")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(v)
    }
}

/// A tensor as `{"dtype", "shape", "values"}` with values flattened row-major.
pub fn tensor_json(t: &Tensor) -> Result<Value> {
    let host = if t.is_cpu() {
        t.clone()
    } else if t.is_meta() {
        return Ok(
            json!({"dtype": t.dtype().python_name(), "shape": t.sizes().to_vec(), "device": t.device().to_string(), "values": null}),
        );
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
    Ok(json!({"dtype": t.dtype().python_name(), "shape": t.sizes().to_vec(), "values": values}))
}

/// One return value as JSON.
pub fn ivalue_json(v: &IValue) -> Result<Value> {
    Ok(match v {
        IValue::None => Value::Null,
        IValue::Tensor(t) => tensor_json(t)?,
        IValue::Bool(b) => json!(b),
        IValue::Int(i) => json!(i),
        IValue::Double(d) => float_json(*d),
        IValue::String(s) => json!(s.as_ref()),
        IValue::TensorList(l) => Value::Array(l.iter().map(tensor_json).collect::<Result<_>>()?),
        IValue::Tuple(l) | IValue::GenericList(l) => {
            Value::Array(l.iter().map(ivalue_json).collect::<Result<_>>()?)
        }
        IValue::IntList(l) => json!(l),
        IValue::DoubleList(l) => Value::Array(l.iter().map(|d| float_json(*d)).collect()),
        IValue::BoolList(l) => json!(l),
        other => json!(other.to_string()),
    })
}

/// An error as `{"error": kind, "message": ...}`.
pub fn error_json(e: &Error) -> Value {
    json!({"error": e.kind().name(), "message": e.message(), "operator": e.operator()})
}
