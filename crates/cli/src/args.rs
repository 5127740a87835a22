//! Turning command-line text into boxed arguments according to an operator's schema.

use serde_json::Value;
use switchyard_core::{Device, Error, IValue, Layout, MemoryFormat, Result, ScalarType, Tensor};
use switchyard_schema::{BaseType, FunctionSchema, Type};

/// Parses the arguments of `schema` from positional texts and `name=value` keywords, filling
/// defaults, into a stack in schema order. Tensors are created on `device`.
pub fn parse_call_args(
    schema: &FunctionSchema,
    texts: &[String],
    device: Device,
) -> Result<Vec<IValue>> {
    let mut given: Vec<Option<&str>> = vec![None; schema.arguments.len()];
    let mut next_positional = 0;
    for text in texts {
        let keyword = text
            .split_once('=')
            .filter(|(k, _)| schema.arguments.iter().any(|a| a.name == *k));
        match keyword {
            Some((name, value)) => {
                let i = schema
                    .arguments
                    .iter()
                    .position(|a| a.name == name)
                    .unwrap_or(0);
                if given[i].is_some() {
                    return Err(Error::type_error(format!(
                        "argument '{name}' given more than once"
                    )));
                }
                given[i] = Some(value);
            }
            None if looks_like_keyword(text) => {
                let name = text.split_once('=').map_or(text.as_str(), |(k, _)| k);
                return Err(Error::type_error(format!(
                    "{}() got an unexpected keyword argument '{name}'",
                    schema.name.name
                )));
            }
            None => {
                while next_positional < schema.arguments.len()
                    && (given[next_positional].is_some()
                        || schema.arguments[next_positional].kwarg_only)
                {
                    next_positional += 1;
                }
                let Some(slot) = given.get_mut(next_positional) else {
                    return Err(Error::type_error(format!(
                        "{}() takes {} positional arguments but more were given",
                        schema.name.unqualified(),
                        schema.arguments.iter().filter(|a| !a.kwarg_only).count()
                    )));
                };
                if schema.arguments[next_positional].kwarg_only {
                    return Err(Error::type_error(format!(
                        "too many positional arguments for {}",
                        schema.name.unqualified()
                    )));
                }
                *slot = Some(text.as_str());
                next_positional += 1;
            }
        }
    }
    schema
        .arguments
        .iter()
        .zip(given)
        .map(|(a, text)| {
            let value = match (text, &a.default) {
                (Some(t), _) => parse_value(&a.ty, t, device),
                (None, Some(d)) => parse_default(&a.ty, d, device),
                (None, None) if a.ty.is_optional() => Ok(IValue::None),
                (None, None) if a.is_out => {
                    Tensor::allocate(&[0], ScalarType::Float, device).map(IValue::Tensor)
                }
                (None, None) => Err(Error::type_error(format!(
                    "missing required argument '{}'",
                    a.name
                ))),
            };
            value.map_err(|e| {
                Error::new(
                    e.kind(),
                    format!("argument '{}' ({}): {}", a.name, a.ty, e.message()),
                )
            })
        })
        .collect()
}

/// `name=value` with an identifier for `name` (a positional value never looks like that: JSON
/// and literals have no bare identifier before an `=`).
fn looks_like_keyword(text: &str) -> bool {
    text.split_once('=').is_some_and(|(k, _)| {
        k.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The value of a schema default (`None`, `Mean`, `long`, `1` for `int[2]`, `'mean'`, ...).
pub fn parse_default(ty: &Type, d: &str, device: Device) -> Result<IValue> {
    match (ty, d) {
        (_, "None") => Ok(IValue::None),
        (Type::Base(BaseType::Int | BaseType::SymInt), "Mean") => Ok(IValue::Int(1)),
        (Type::Base(BaseType::ScalarType), "long") | (Type::Optional(_), "long") => {
            Ok(IValue::ScalarType(ScalarType::Long))
        }
        (Type::List { size: Some(n), .. }, v) if !v.starts_with('[') => {
            let n = *n;
            parse_value(ty, &format!("[{}]", vec![v; n].join(",")), device)
        }
        (_, v) => parse_value(ty, v.trim_matches(|c| c == '\'' || c == '"'), device),
    }
}

/// Parses one value of schema type `ty`.
pub fn parse_value(ty: &Type, text: &str, device: Device) -> Result<IValue> {
    if text == "None" {
        return if ty.is_optional() {
            Ok(IValue::None)
        } else {
            Err(Error::type_error("None is not allowed here"))
        };
    }
    match ty {
        Type::Optional(inner) => parse_value(inner, text, device),
        Type::Base(b) => parse_base(*b, text, device),
        Type::List { elem, size } => {
            let json: Value = serde_json::from_str(text)
                .or_else(|_| {
                    // A bare number for a sized list is repeated (`int[2] stride=1`).
                    match size {
                        Some(n) => serde_json::from_str(&format!("[{}]", vec![text; *n].join(","))),
                        None => serde_json::from_str(&format!("[{text}]")),
                    }
                })
                .map_err(|e| Error::value(format!("expected a JSON list: {e}")))?;
            let items = json
                .as_array()
                .ok_or_else(|| Error::value("expected a list"))?;
            list_value(elem, items, device)
        }
        Type::CustomClass(c) => Err(Error::not_implemented(format!(
            "custom class {c} values can't be given on the command line"
        ))),
    }
}

fn list_value(elem: &Type, items: &[Value], device: Device) -> Result<IValue> {
    match elem {
        Type::Base(BaseType::Tensor) => Ok(IValue::TensorList(
            items
                .iter()
                .map(|v| tensor_from_json(v, device))
                .collect::<Result<_>>()?,
        )),
        Type::Optional(t) if t.is_tensor() => Ok(IValue::OptionalTensorList(
            items
                .iter()
                .map(|v| {
                    if v.is_null() {
                        Ok(None)
                    } else {
                        tensor_from_json(v, device).map(Some)
                    }
                })
                .collect::<Result<_>>()?,
        )),
        Type::Base(BaseType::Int | BaseType::SymInt) => Ok(IValue::IntList(
            items
                .iter()
                .map(|v| {
                    v.as_i64()
                        .ok_or_else(|| Error::value(format!("expected an integer, got {v}")))
                })
                .collect::<Result<_>>()?,
        )),
        Type::Base(BaseType::Float) => Ok(IValue::DoubleList(
            items
                .iter()
                .map(|v| {
                    v.as_f64()
                        .ok_or_else(|| Error::value(format!("expected a number, got {v}")))
                })
                .collect::<Result<_>>()?,
        )),
        Type::Base(BaseType::Bool) => Ok(IValue::BoolList(
            items
                .iter()
                .map(|v| {
                    v.as_bool()
                        .ok_or_else(|| Error::value(format!("expected a bool, got {v}")))
                })
                .collect::<Result<_>>()?,
        )),
        other => Ok(IValue::GenericList(
            items
                .iter()
                .map(|v| parse_value(other, &v.to_string(), device))
                .collect::<Result<_>>()?,
        )),
    }
}

fn parse_base(b: BaseType, text: &str, device: Device) -> Result<IValue> {
    let number = || -> Result<f64> {
        text.parse::<f64>()
            .map_err(|_| Error::value(format!("expected a number, got '{text}'")))
    };
    Ok(match b {
        BaseType::Tensor => {
            let json: Value = serde_json::from_str(text).map_err(|e| {
                Error::value(format!(
                    "expected a tensor as a JSON nested list or object: {e}"
                ))
            })?;
            IValue::Tensor(tensor_from_json(&json, device)?)
        }
        BaseType::Int | BaseType::SymInt | BaseType::DeviceIndex => IValue::Int(
            text.parse()
                .map_err(|_| Error::value(format!("expected an integer, got '{text}'")))?,
        ),
        BaseType::Float => IValue::Double(number()?),
        BaseType::Bool | BaseType::SymBool => IValue::Bool(parse_bool(text)?),
        BaseType::Str => IValue::from(text),
        BaseType::Scalar => match text {
            "True" | "true" | "False" | "false" => IValue::Bool(parse_bool(text)?),
            _ => match text.parse::<i64>() {
                Ok(i) => IValue::Int(i),
                Err(_) => IValue::Double(number()?),
            },
        },
        BaseType::ScalarType => IValue::ScalarType(ScalarType::parse(text)?),
        BaseType::Layout => IValue::Layout(Layout::parse(text)?),
        BaseType::Device => IValue::Device(Device::parse(text)?),
        BaseType::MemoryFormat => IValue::MemoryFormat(MemoryFormat::parse(text)?),
        other => {
            return Err(Error::not_implemented(format!(
                "{} values can't be given on the command line",
                other.name()
            )));
        }
    })
}

fn parse_bool(text: &str) -> Result<bool> {
    match text {
        "True" | "true" | "1" => Ok(true),
        "False" | "false" | "0" => Ok(false),
        _ => Err(Error::value(format!(
            "expected true or false, got '{text}'"
        ))),
    }
}

/// A tensor from JSON: a nested list (dtype inferred as `torch.tensor` does: bool if every
/// leaf is a bool, float32 if any is a float, else int64) or `{"dtype", "shape", "values"}`.
pub fn tensor_from_json(v: &Value, device: Device) -> Result<Tensor> {
    let t = match v {
        Value::Object(map) => {
            let dtype = ScalarType::parse(
                map.get("dtype")
                    .and_then(Value::as_str)
                    .unwrap_or("float32"),
            )?;
            let shape: Vec<i64> = map
                .get("shape")
                .and_then(Value::as_array)
                .ok_or_else(|| Error::value("a tensor object needs a \"shape\" list"))?
                .iter()
                .map(|d| {
                    d.as_i64()
                        .ok_or_else(|| Error::value("shape entries must be integers"))
                })
                .collect::<Result<_>>()?;
            let values = map
                .get("values")
                .and_then(Value::as_array)
                .ok_or_else(|| Error::value("a tensor object needs a \"values\" list"))?;
            build(dtype, &shape, values)?
        }
        other => {
            let mut shape = Vec::new();
            let mut leaves = Vec::new();
            flatten(other, 0, &mut shape, &mut leaves)?;
            let dtype = if !leaves.is_empty() && leaves.iter().all(Value::is_boolean) {
                ScalarType::Bool
            } else if leaves.iter().any(|l| l.is_f64() || l.is_string()) || leaves.is_empty() {
                ScalarType::Float
            } else {
                ScalarType::Long
            };
            build(dtype, &shape, &leaves)?
        }
    };
    if device.is_cpu() {
        return Ok(t);
    }
    switchyard_ops::op::_to_copy::call(&t, None, None, Some(device), None, false, None)
}

fn flatten(v: &Value, depth: usize, shape: &mut Vec<i64>, leaves: &mut Vec<Value>) -> Result<()> {
    match v {
        Value::Array(items) => {
            if shape.len() == depth {
                shape.push(items.len() as i64);
            } else if shape[depth] != items.len() as i64 {
                return Err(Error::value(format!(
                    "expected sequence of length {} at dim {depth} (got {})",
                    shape[depth],
                    items.len()
                )));
            }
            items
                .iter()
                .try_for_each(|i| flatten(i, depth + 1, shape, leaves))
        }
        leaf => {
            if depth != shape.len() {
                return Err(Error::value("ragged nested list"));
            }
            leaves.push(leaf.clone());
            Ok(())
        }
    }
}

fn leaf_f64(v: &Value) -> Result<f64> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| Error::value("bad number")),
        Value::Bool(b) => Ok(f64::from(u8::from(*b))),
        Value::String(s) => match s.as_str() {
            "nan" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            other => Err(Error::value(format!(
                "unexpected string '{other}' in tensor values"
            ))),
        },
        other => Err(Error::value(format!("unexpected {other} in tensor values"))),
    }
}

fn build(dtype: ScalarType, shape: &[i64], values: &[Value]) -> Result<Tensor> {
    switchyard_core::dispatch_dtype!(dtype, T => {
        use switchyard_core::Element;
        let data: Vec<T> = values
            .iter()
            .map(|v| match v {
                Value::Number(n) if !dtype.is_floating_point() && n.is_i64() => Ok(T::from_i64_lossy(n.as_i64().unwrap_or(0))),
                other => leaf_f64(other).map(T::from_f64_lossy),
            })
            .collect::<Result<_>>()?;
        Tensor::from_vec(data, shape)
    })
}
