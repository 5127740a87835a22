//! Turning command-line text into boxed arguments according to an operator's schema (call by
//! name), the way `torch.ops.aten.<op>.<overload>(...)` matches Python arguments to a schema
//! (`createStackForSchema` in PyTorch's `torch/csrc/jit/python/pybind_utils.h`), with its
//! error messages: positional values fill the arguments in order, `name=value` keywords the
//! rest, an argument without a value takes its schema default, and one without a default is an
//! error ("is missing value for argument").
//!
//! Values are literals: tensors are JSON nested lists or `{"dtype", "shape", "values"}` objects
//! built as `torch.tensor` builds them (dtype inference, ragged lists refused, values checked
//! against the dtype's range), lists are JSON lists (a bare number is repeated for a sized
//! list such as `int[2]`, as PyTorch's parser does), and other values are written as Python
//! writes them (`True`, `2.5`, `float64`, `None`).

use crate::literal::{self, Lit};
use switchyard_core::{
    Device, Error, ErrorKind, IValue, Layout, MemoryFormat, Result, ScalarType, Tensor,
};
use switchyard_schema::{BaseType, FunctionSchema, Type};

/// PyTorch's `schema.name()`: the operator's qualified name without its overload (`aten::add`),
/// which its schema-matching messages start with.
fn base_name(schema: &FunctionSchema) -> String {
    match &schema.name.namespace {
        Some(ns) => format!("{ns}::{}", schema.name.name),
        None => format!("aten::{}", schema.name.name),
    }
}

/// The operator's full name (`aten::add.Tensor`), for [`Error::in_operator`].
fn full_name(schema: &FunctionSchema) -> String {
    format!("{}{}", base_name(schema), overload_suffix(schema))
}

fn overload_suffix(schema: &FunctionSchema) -> String {
    if schema.name.overload_name.is_empty() {
        String::new()
    } else {
        format!(".{}", schema.name.overload_name)
    }
}

/// A schema-matching error (a `RuntimeError`, as PyTorch's `schema_match_error` surfaces).
fn schema_error(schema: &FunctionSchema, message: String) -> Error {
    Error::runtime(message).in_operator(&full_name(schema))
}

/// `name=value` whose `name` is an identifier (a positional value never looks like that: JSON
/// and literals have no bare identifier before an `=`).
fn keyword(text: &str) -> Option<(&str, &str)> {
    text.split_once('=').filter(|(k, _)| {
        k.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Parses the arguments of `schema` from positional texts and `name=value` keywords, filling
/// defaults, into a stack in schema order. Tensors are created on `device`.
///
/// Every error names the operator, and an error about one argument names that argument.
pub fn parse_call_args(
    schema: &FunctionSchema,
    texts: &[String],
    device: Device,
) -> Result<Vec<IValue>> {
    let name = base_name(schema);
    let n = schema.arguments.len();
    let mut positional: Vec<&str> = Vec::new();
    let mut keywords: Vec<(&str, &str)> = Vec::new();
    for text in texts {
        match keyword(text) {
            Some((k, v)) => {
                if keywords.iter().any(|(seen, _)| *seen == k) {
                    return Err(schema_error(
                        schema,
                        format!("{name}() got multiple values for keyword argument '{k}'"),
                    ));
                }
                keywords.push((k, v));
            }
            None => positional.push(text),
        }
    }
    let received = positional.len() + keywords.len();
    if received > n {
        return Err(schema_error(
            schema,
            format!(
                "{name}() expected at most {n} argument(s) but received {received} argument(s). Declaration: {schema}"
            ),
        ));
    }
    let mut stack = Vec::with_capacity(n);
    for (i, text) in positional.iter().enumerate() {
        if schema.arguments[i].kwarg_only || schema.arguments[i].is_out {
            return Err(schema_error(
                schema,
                format!(
                    "{name}() takes {i} positional argument(s) but {} was/were given.  Declaration: {schema}",
                    positional.len()
                ),
            ));
        }
        stack.push(parse_argument(schema, i, text, device)?);
    }
    let mut consumed = 0;
    for i in positional.len()..n {
        let arg = &schema.arguments[i];
        if let Some((_, text)) = keywords.iter().find(|(k, _)| *k == arg.name) {
            stack.push(parse_argument(schema, i, text, device)?);
            consumed += 1;
        } else if arg.default.is_some() {
            stack.push(default_value(schema, i, device)?);
        } else {
            return Err(schema_error(
                schema,
                format!(
                    "{name}() is missing value for argument '{}'. Declaration: {schema}",
                    arg.name
                ),
            ));
        }
    }
    if consumed != keywords.len() {
        // PyTorch's `findErrorInKwargs`: an unknown name first, else a duplicate.
        for (k, _) in &keywords {
            if !schema.arguments.iter().any(|a| a.name == *k) {
                return Err(schema_error(
                    schema,
                    format!(
                        "Unknown keyword argument '{k}' for operator '{name}'. Schema: {schema}"
                    ),
                ));
            }
        }
        for a in &schema.arguments {
            if keywords.iter().any(|(k, _)| *k == a.name) {
                return Err(schema_error(
                    schema,
                    format!(
                        "Argument '{}' specified both as positional and keyword argument. Schema: {schema}",
                        a.name
                    ),
                ));
            }
        }
    }
    Ok(stack)
}

/// The value of argument `index` of `schema` from `text`. An error names the operator and the
/// argument, as PyTorch's schema matcher does (`aten::add() Expected a value of type 'Tensor'
/// for argument 'other' ...`), and gives the reason after "Cast error details".
pub fn parse_argument(
    schema: &FunctionSchema,
    index: usize,
    text: &str,
    device: Device,
) -> Result<IValue> {
    let arg = schema.arguments.get(index).ok_or_else(|| {
        schema_error(
            schema,
            format!("{}() has no argument {index}", base_name(schema)),
        )
    })?;
    parse_value(&arg.ty, text, device).map_err(|e| argument_error(schema, index, text, &e))
}

/// The schema default of argument `index` of `schema` (an error if it has none).
pub fn default_value(schema: &FunctionSchema, index: usize, device: Device) -> Result<IValue> {
    let name = base_name(schema);
    let arg = schema
        .arguments
        .get(index)
        .ok_or_else(|| schema_error(schema, format!("{name}() has no argument {index}")))?;
    let Some(d) = &arg.default else {
        return Err(schema_error(
            schema,
            format!(
                "{name}() is missing value for argument '{}'. Declaration: {schema}",
                arg.name
            ),
        ));
    };
    parse_default(&arg.ty, d, device).map_err(|e| argument_error(schema, index, d, &e))
}

fn argument_error(schema: &FunctionSchema, index: usize, text: &str, e: &Error) -> Error {
    let arg = &schema.arguments[index];
    // A long value (a big tensor literal) is shown by its start.
    let shown: String = if text.chars().count() > 80 {
        format!("{}...", text.chars().take(77).collect::<String>())
    } else {
        text.to_owned()
    };
    Error::new(
        e.kind(),
        format!(
            "{}() Expected a value of type '{}' for argument '{}' but instead found '{shown}'.\nPosition: {index}\nDeclaration: {schema}\nCast error details: {}",
            base_name(schema),
            arg.ty,
            arg.name,
            e.message()
        ),
    )
    .in_operator(&full_name(schema))
}

/// The value of a schema default (`None`, `Mean`, `long`, `1` for `int[2]`, `'mean'`, ...).
pub fn parse_default(ty: &Type, d: &str, device: Device) -> Result<IValue> {
    match (ty, d) {
        (_, "None") => Ok(IValue::None),
        (Type::Base(BaseType::Int | BaseType::SymInt), "Mean") => Ok(IValue::Int(1)),
        (Type::Base(BaseType::ScalarType) | Type::Optional(_), "long") => {
            Ok(IValue::ScalarType(ScalarType::Long))
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
            Err(Error::type_error(format!("expected {ty}, got None")))
        };
    }
    match ty {
        Type::Optional(inner) => parse_value(inner, text, device),
        Type::Base(b) => parse_base(*b, text, device),
        Type::List { elem, size } => {
            let lit = literal::parse(text)
                // `1,2` for `[1,2]`.
                .or_else(|e| literal::parse(&format!("[{text}]")).map_err(|_| e))
                .map_err(|e| Error::value(format!("expected a JSON list: {e}")))?;
            let items = match lit {
                Lit::List(items) => items,
                // A bare number for a sized list of numbers is repeated (`int[2] stride=1`,
                // `max_pool2d(x, 2)`), as PyTorch's argument parser does.
                scalar @ (Lit::Int(_) | Lit::BigInt(_) | Lit::Float(_))
                    if size.is_some()
                        && matches!(
                            **elem,
                            Type::Base(BaseType::Int | BaseType::SymInt | BaseType::Float)
                        ) =>
                {
                    vec![scalar; size.unwrap_or(0)]
                }
                other => {
                    return Err(Error::type_error(format!(
                        "expected a list, got {} ({other})",
                        other.kind()
                    )));
                }
            };
            list_value(elem, &items, device)
        }
        Type::CustomClass(c) => Err(Error::not_implemented(format!(
            "custom class {c} values can't be given on the command line"
        ))),
    }
}

fn int_of(v: &Lit) -> Result<i64> {
    match v {
        Lit::Int(i) => Ok(*i),
        Lit::BigInt(_) => Err(Error::runtime("Overflow when unpacking long")),
        other => Err(Error::type_error(format!(
            "expected an integer, got {} ({other})",
            other.kind()
        ))),
    }
}

fn list_value(elem: &Type, items: &[Lit], device: Device) -> Result<IValue> {
    match elem {
        Type::Base(BaseType::Tensor) => Ok(IValue::TensorList(
            items
                .iter()
                .map(|v| tensor_from_literal(v, device))
                .collect::<Result<_>>()?,
        )),
        Type::Optional(t) if t.is_tensor() => Ok(IValue::OptionalTensorList(
            items
                .iter()
                .map(|v| match v {
                    Lit::Null => Ok(None),
                    v => tensor_from_literal(v, device).map(Some),
                })
                .collect::<Result<_>>()?,
        )),
        Type::Base(BaseType::Int | BaseType::SymInt) => Ok(IValue::IntList(
            items.iter().map(int_of).collect::<Result<_>>()?,
        )),
        Type::Base(BaseType::Float) => Ok(IValue::DoubleList(
            items
                .iter()
                .map(|v| {
                    v.as_f64().ok_or_else(|| {
                        Error::type_error(format!("expected a number, got {} ({v})", v.kind()))
                    })
                })
                .collect::<Result<_>>()?,
        )),
        Type::Base(BaseType::Bool) => Ok(IValue::BoolList(
            items
                .iter()
                .map(|v| match v {
                    Lit::Bool(b) => Ok(*b),
                    v => Err(Error::type_error(format!(
                        "expected a bool, got {} ({v})",
                        v.kind()
                    ))),
                })
                .collect::<Result<_>>()?,
        )),
        other => Ok(IValue::GenericList(
            items
                .iter()
                .map(|v| match v {
                    Lit::Str(s) => parse_value(other, s, device),
                    Lit::Null => parse_value(other, "None", device),
                    v => parse_value(other, &v.to_string(), device),
                })
                .collect::<Result<_>>()?,
        )),
    }
}

/// An integer written in decimal; one too large for `i64` fails as PyTorch's unpacking does.
fn parse_int(text: &str) -> Result<i64> {
    text.parse::<i64>().map_err(|_| {
        let digits = text.strip_prefix('-').unwrap_or(text);
        if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
            Error::runtime("Overflow when unpacking long")
        } else {
            Error::type_error(format!("expected an integer, got '{text}'"))
        }
    })
}

fn parse_base(b: BaseType, text: &str, device: Device) -> Result<IValue> {
    let number = || -> Result<f64> {
        text.parse::<f64>()
            .map_err(|_| Error::type_error(format!("expected a number, got '{text}'")))
    };
    Ok(match b {
        BaseType::Tensor => IValue::Tensor(parse_tensor(text, device)?),
        BaseType::Int | BaseType::SymInt | BaseType::DeviceIndex => IValue::Int(parse_int(text)?),
        BaseType::Float => IValue::Double(number()?),
        BaseType::Bool | BaseType::SymBool => IValue::Bool(parse_bool(text)?),
        BaseType::Str => IValue::from(text),
        BaseType::Scalar => match text {
            "True" | "true" | "False" | "false" => IValue::Bool(parse_bool(text)?),
            _ => match parse_int(text) {
                Ok(i) => IValue::Int(i),
                Err(e) if e.kind() == ErrorKind::RuntimeError => return Err(e),
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
        _ => Err(Error::type_error(format!(
            "expected True or False, got '{text}'"
        ))),
    }
}

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

fn tensor_from_literal(lit: &Lit, device: Device) -> Result<Tensor> {
    let t = match lit {
        Lit::Object(entries) => tensor_object(entries)?,
        data => {
            let sizes = compute_sizes(data);
            let mut leaves = Vec::new();
            recursive_collect(data, &sizes, 0, &mut leaves)?;
            let dtype = infer_dtype(&leaves)?;
            let sizes: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
            build(dtype, &sizes, &leaves)?
        }
    };
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
