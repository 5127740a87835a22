//! Tensors from literal data, built as `torch.tensor` builds them (`torch/csrc/utils/
//! tensor_new.cpp`): `compute_sizes` follows first elements, `recursive_store` refuses ragged
//! data with PyTorch's messages, the dtype is inferred (bool if every value is a bool, the
//! default float32 if any is a float, else int64) unless one is given, and integral dtypes
//! check each value's range with c10's `overflows`.
//!
//! The data is a [`Lit`] tree: the command line reads it from JSON ([`crate::literal::parse`]),
//! the Python module builds it from nested lists, tuples and numbers.

use crate::literal::{self, Lit};
use switchyard_core::{Device, Error, Result, ScalarType, Tensor};

/// A tensor on `device` from its literal: a JSON nested list (as `torch.tensor(data)`: dtype
/// inferred, bool if every value is a bool, the default float32 if any is a float, else int64)
/// or an object `{"dtype": "float64", "shape": [2, 2], "values": [...]}` (as
/// `torch.tensor(values, dtype=dtype).reshape(shape)`; without `"dtype"` it is inferred from
/// the values). A bare number gives a 0-dim tensor. Ragged lists, values out of the dtype's
/// range and malformed objects are refused with PyTorch's messages where it has them.
pub fn parse_tensor(text: &str, device: Device) -> Result<Tensor> {
    let lit = literal::parse(text).map_err(|e| {
        Error::value(format!(
            "expected a tensor as a JSON nested list or object: {e}"
        ))
    })?;
    tensor_from_literal(&lit, device)
}

/// A tensor on `device` from a parsed literal: an object `{"dtype", "shape", "values"}` or
/// nested lists of numbers (see [`parse_tensor`]).
pub fn tensor_from_literal(lit: &Lit, device: Device) -> Result<Tensor> {
    let t = match lit {
        Lit::Object(entries) => tensor_object(entries)?,
        data => data_tensor(data, None)?,
    };
    to_device(t, device)
}

/// `torch.tensor(data, dtype=dtype, device=device)` for `data` made of nested lists and
/// numbers (no objects): sizes from the nesting, values checked against `dtype` (or the
/// inferred dtype when it is `None`).
pub fn tensor_from_data(data: &Lit, dtype: Option<ScalarType>, device: Device) -> Result<Tensor> {
    to_device(data_tensor(data, dtype)?, device)
}

fn data_tensor(data: &Lit, dtype: Option<ScalarType>) -> Result<Tensor> {
    let sizes = compute_sizes(data);
    let mut leaves = Vec::new();
    recursive_collect(data, &sizes, 0, &mut leaves)?;
    let dtype = match dtype {
        Some(d) => d,
        None => infer_dtype(&leaves)?,
    };
    let sizes: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
    build(dtype, &sizes, &leaves)
}

fn to_device(t: Tensor, device: Device) -> Result<Tensor> {
    if device.is_cpu() {
        return Ok(t);
    }
    switchyard_ops::op::_to_copy::call(&t, None, None, Some(device), None, false, None)
}

const TENSOR_OBJECT_KEYS: &str = "\"dtype\", \"shape\" and \"values\"";

/// `{"dtype", "shape", "values"}`.
fn tensor_object(entries: &[(String, Lit)]) -> Result<Tensor> {
    let mut dtype = None;
    let mut shape = None;
    let mut values = None;
    for (k, v) in entries {
        match k.as_str() {
            "dtype" => dtype = Some(v),
            "shape" => shape = Some(v),
            "values" => values = Some(v),
            other => {
                return Err(Error::value(format!(
                    "unknown key \"{other}\" in a tensor object (its keys are {TENSOR_OBJECT_KEYS})"
                )));
            }
        }
    }
    let shape: Vec<i64> = match shape {
        Some(Lit::List(dims)) => dims
            .iter()
            .map(|d| match d {
                Lit::Int(i) if *i >= 0 => Ok(*i),
                d => Err(Error::value(format!(
                    "\"shape\" must be a list of non-negative integers, got {d}"
                ))),
            })
            .collect::<Result<_>>()?,
        Some(other) => {
            return Err(Error::type_error(format!(
                "\"shape\" must be a list of non-negative integers, got {} ({other})",
                other.kind()
            )));
        }
        None => {
            return Err(Error::value(format!(
                "a tensor object needs \"shape\" (its keys are {TENSOR_OBJECT_KEYS})"
            )));
        }
    };
    let (values, count) = match values {
        Some(v @ Lit::List(items)) => (v, items.len()),
        Some(other) => {
            return Err(Error::type_error(format!(
                "\"values\" must be a flat list of numbers, got {} ({other})",
                other.kind()
            )));
        }
        None => {
            return Err(Error::value(format!(
                "a tensor object needs \"values\" (its keys are {TENSOR_OBJECT_KEYS})"
            )));
        }
    };
    let mut leaves = Vec::new();
    recursive_collect(values, &[count], 0, &mut leaves)?;
    let dtype = match dtype {
        Some(Lit::Str(name)) => ScalarType::parse(name)?,
        Some(other) => {
            return Err(Error::type_error(format!(
                "\"dtype\" must be the name of a dtype such as \"float32\", got {} ({other})",
                other.kind()
            )));
        }
        None => infer_dtype(&leaves)?,
    };
    let numel = shape
        .iter()
        .try_fold(1i64, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n == leaves.len() as i64);
    if numel.is_none() {
        return Err(Error::runtime(format!(
            "shape '[{}]' is invalid for input of size {}",
            shape
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            leaves.len()
        )));
    }
    build(dtype, &shape, &leaves)
}

/// PyTorch's `compute_sizes`: the length of each nesting level, following first elements.
fn compute_sizes(data: &Lit) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut v = data;
    while let Lit::List(items) = v {
        sizes.push(items.len());
        match items.first() {
            Some(first) => v = first,
            None => break,
        }
    }
    sizes
}

/// PyTorch's `recursive_store` without the store: checks that `v` has `sizes` from `dim` on
/// (with its messages) and collects the scalars in row-major order.
fn recursive_collect<'a>(
    v: &'a Lit,
    sizes: &[usize],
    dim: usize,
    leaves: &mut Vec<&'a Lit>,
) -> Result<()> {
    if dim == sizes.len() {
        if let Lit::List(items) = v {
            return Err(Error::value(format!(
                "expected a number at dim {dim} (got a sequence of length {})",
                items.len()
            )));
        }
        leaves.push(v);
        return Ok(());
    }
    let Lit::List(items) = v else {
        return Err(Error::type_error(format!(
            "not a sequence: expected sequence of length {} at dim {dim} (got {v})",
            sizes[dim]
        )));
    };
    if items.len() != sizes[dim] {
        return Err(Error::value(format!(
            "expected sequence of length {} at dim {dim} (got {})",
            sizes[dim],
            items.len()
        )));
    }
    items
        .iter()
        .try_for_each(|item| recursive_collect(item, sizes, dim + 1, leaves))
}

/// The non-finite floats that tensor literals (and `--json` output) write as strings.
fn special_float(s: &str) -> Option<f64> {
    match s {
        "nan" => Some(f64::NAN),
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// `torch.tensor`'s dtype inference over the scalars: bool if all are bools, the default
/// float32 if any is a float (or there are none), else int64. Other values are refused.
fn infer_dtype(leaves: &[&Lit]) -> Result<ScalarType> {
    let (mut float, mut int) = (false, false);
    for leaf in leaves {
        match leaf {
            Lit::Bool(_) => {}
            Lit::Int(_) | Lit::BigInt(_) => int = true,
            Lit::Float(_) => float = true,
            Lit::Str(s) if special_float(s).is_some() => float = true,
            other => return Err(invalid_data(other)),
        }
    }
    Ok(if float || leaves.is_empty() {
        ScalarType::Float
    } else if int {
        ScalarType::Long
    } else {
        ScalarType::Bool
    })
}

fn invalid_data(v: &Lit) -> Error {
    let kind = match v {
        Lit::Str(_) => "str",
        Lit::Null => "NoneType",
        Lit::Object(_) => "dict",
        _ => "list",
    };
    Error::type_error(format!(
        "invalid data type '{kind}' ({v}) in tensor values: numbers, bools and the strings \"nan\", \"inf\", \"-inf\" are allowed"
    ))
}

/// One scalar of a tensor literal, as a Python number would be.
enum Num {
    Bool(bool),
    Int(i64),
    Float(f64),
}

fn number(v: &Lit) -> Result<Num> {
    Ok(match v {
        Lit::Bool(b) => Num::Bool(*b),
        Lit::Int(i) => Num::Int(*i),
        Lit::Float(f) => Num::Float(*f),
        Lit::Str(s) => Num::Float(special_float(s).ok_or_else(|| invalid_data(v))?),
        Lit::BigInt(_) => return Err(Error::runtime("Overflow when unpacking long")),
        other => return Err(invalid_data(other)),
    })
}

/// `2^digits` and the lowest value of an integer dtype (`digits` as C++'s
/// `numeric_limits<T>::digits`: value bits without the sign).
fn int_limits(dtype: ScalarType) -> (u32, i64) {
    match dtype {
        ScalarType::Byte => (8, 0),
        ScalarType::Char => (7, i64::from(i8::MIN)),
        ScalarType::Short => (15, i64::from(i16::MIN)),
        ScalarType::Int => (31, i64::from(i32::MIN)),
        _ => (63, i64::MIN),
    }
}

/// c10's `overflows<To, From>` for an integral `dtype`: an integer must lie in the dtype's
/// range, except that a negative one may wrap into an unsigned dtype if its magnitude fits; a
/// float must be finite and in `[lowest, 2^digits)`.
fn overflows_integral(dtype: ScalarType, n: &Num) -> bool {
    let (digits, lowest) = int_limits(dtype);
    let max = (1i128 << digits) - 1;
    match *n {
        Num::Bool(_) => false,
        Num::Int(i) => {
            let i = i128::from(i);
            if lowest == 0 {
                i > max || (i < 0 && -i > max)
            } else {
                i < i128::from(lowest) || i > max
            }
        }
        Num::Float(f) => {
            let upper = 2f64.powi(digits as i32);
            f.is_nan() || f.is_infinite() || f < lowest as f64 || f >= upper
        }
    }
}

/// PyTorch's `store_scalar`: integral dtypes check the value's range (`checked_convert`),
/// float dtypes convert, bool takes truthiness.
fn build(dtype: ScalarType, shape: &[i64], values: &[&Lit]) -> Result<Tensor> {
    switchyard_core::dispatch_dtype!(dtype, T => {
        use switchyard_core::Element;
        let mut data: Vec<T> = Vec::new();
        data.try_reserve_exact(values.len())
            .map_err(|_| Error::runtime(format!("cannot allocate {} tensor values", values.len())))?;
        for v in values {
            let n = number(v)?;
            let x = if dtype == ScalarType::Bool {
                let truthy = match n {
                    Num::Bool(b) => b,
                    Num::Int(i) => i != 0,
                    Num::Float(f) => f != 0.0,
                };
                T::from_i64_lossy(i64::from(truthy))
            } else if dtype.is_floating_point() {
                match n {
                    Num::Bool(b) => T::from_i64_lossy(i64::from(b)),
                    Num::Int(i) => T::from_f64_lossy(i as f64),
                    Num::Float(f) => T::from_f64_lossy(f),
                }
            } else {
                if overflows_integral(dtype, &n) {
                    return Err(Error::runtime(format!(
                        "value cannot be converted to type {} without overflow",
                        dtype.python_name()
                    )));
                }
                match n {
                    Num::Bool(b) => T::from_i64_lossy(i64::from(b)),
                    Num::Int(i) => T::from_i64_lossy(i),
                    Num::Float(f) => T::from_i64_lossy(f.trunc() as i64),
                }
            };
            data.push(x);
        }
        Tensor::from_vec(data, shape)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values_i64(text: &str) -> Result<(ScalarType, Vec<i64>, Vec<i64>)> {
        let t = parse_tensor(text, Device::CPU)?;
        Ok((
            t.dtype(),
            t.sizes().to_vec(),
            t.to_f64_vec()?.iter().map(|&v| v as i64).collect(),
        ))
    }

    #[test]
    fn integral_ranges_follow_c10_overflows() {
        // torch.tensor([-255, 255], dtype=torch.uint8) wraps the negative value (c10 allows a
        // negative integer whose magnitude fits); -256 and 256 overflow.
        let obj = |dtype: &str, v: &str| {
            format!(r#"{{"dtype": "{dtype}", "shape": [1], "values": [{v}]}}"#)
        };
        assert_eq!(values_i64(&obj("uint8", "-255")).unwrap().2, vec![1]);
        assert_eq!(values_i64(&obj("uint8", "255")).unwrap().2, vec![255]);
        for (dtype, v) in [
            ("uint8", "256"),
            ("uint8", "-256"),
            ("uint8", "-0.5"),
            ("uint8", "256.0"),
            ("int8", "128"),
            ("int8", "-129"),
            ("int64", "1e20"),
            ("int64", "9.223372036854775807e18"),
            ("int32", "\"inf\""),
            ("int16", "\"nan\""),
        ] {
            let e = values_i64(&obj(dtype, v)).unwrap_err();
            assert_eq!(
                e.message(),
                format!("value cannot be converted to type {dtype} without overflow"),
                "{dtype} {v}"
            );
        }
        // The float range is [lowest, 2^digits): -128.9 overflows int8, 127.9 does not; floats
        // in range truncate toward zero, as static_cast does.
        assert!(values_i64(&obj("int8", "-128.9")).is_err());
        assert_eq!(values_i64(&obj("int8", "-128.0")).unwrap().2, vec![-128]);
        assert_eq!(values_i64(&obj("int8", "-0.9")).unwrap().2, vec![0]);
        assert_eq!(values_i64(&obj("int8", "127.9")).unwrap().2, vec![127]);
        // Float dtypes take any number; bool takes truthiness.
        let t = parse_tensor(&obj("float16", "1e6"), Device::CPU).unwrap();
        assert_eq!(t.to_f64_vec().unwrap(), vec![f64::INFINITY]);
        assert_eq!(values_i64(&obj("bool", "2")).unwrap().2, vec![1]);
    }
}
