//! Matching boxed values to an operator's schema (call by name), the way
//! `torch.ops.aten.<op>.<overload>(...)` matches Python arguments to a schema
//! (`createStackForSchema` in PyTorch's `torch/csrc/jit/python/pybind_utils.h`), with its
//! error messages: positional values fill the arguments in order, keywords the rest, an
//! argument without a value takes its schema default, and one without a default is an error
//! ("is missing value for argument").
//!
//! [`match_call_args`] is the matcher, generic over where the values come from
//! ([`ArgSource`]): the command line's text ([`TextSource`], used by [`parse_call_args`]) or
//! the Python module's objects. Text values are literals: tensors are JSON nested lists or
//! `{"dtype", "shape", "values"}` objects built as `torch.tensor` builds them
//! ([`crate::data`]), lists are JSON lists (a bare number is repeated for a sized list such as
//! `int[2]`, as PyTorch's parser does), and other values are written as Python writes them
//! (`True`, `2.5`, `float64`, `None`).

pub use crate::data::parse_tensor;
use crate::data::tensor_from_literal;
use crate::literal::{self, Lit};
use switchyard_core::{
    Device, Error, ErrorKind, IValue, Layout, MemoryFormat, Result, ScalarType, Stack,
};
use switchyard_schema::{BaseType, FunctionSchema, Type};

/// Where the values of a call come from: converts one value to the [`IValue`] of a schema
/// type, and describes a value that does not convert.
pub trait ArgSource {
    /// One value as the caller holds it (`str` for command-line text, a Python object).
    type Value: ?Sized;

    /// `value` as an [`IValue`] of schema type `ty`; tensors it creates go on `device`.
    fn convert(&self, ty: &Type, value: &Self::Value, device: Device) -> Result<IValue>;

    /// `value` as the error of a mismatch shows it.
    fn show(&self, value: &Self::Value) -> String;

    /// The error for argument `index` of `schema`, whose `value` failed to convert with
    /// `error`. The default is the command line's message, which shows the value's text.
    fn mismatch(
        &self,
        schema: &FunctionSchema,
        index: usize,
        value: &Self::Value,
        error: &Error,
    ) -> Error {
        argument_error(schema, index, &self.show(value), error)
    }
}

/// Command-line text as an [`ArgSource`]: each value is a literal ([`parse_value`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct TextSource;

impl ArgSource for TextSource {
    type Value = str;

    fn convert(&self, ty: &Type, value: &str, device: Device) -> Result<IValue> {
        parse_value(ty, value, device)
    }

    fn show(&self, value: &str) -> String {
        value.to_owned()
    }
}

/// PyTorch's `schema.name()`: the operator's qualified name without its overload (`aten::add`),
/// which its schema-matching messages start with.
pub fn base_name(schema: &FunctionSchema) -> String {
    match &schema.name.namespace {
        Some(ns) => format!("{ns}::{}", schema.name.name),
        None => format!("aten::{}", schema.name.name),
    }
}

/// The `aten` operators whose `Tensor` arguments take a Python number (as a wrapped scalar)
/// when called through `torch.ops`: PyTorch's `should_allow_numbers_as_tensors`
/// (`torch/csrc/utils/python_arg_parser.cpp`), by base name, every overload.
const NUMBERS_AS_TENSORS: [&str; 32] = [
    "add",
    "add_",
    "add_out",
    "div",
    "div_",
    "div_out",
    "divide",
    "divide_",
    "divide_out",
    "mul",
    "mul_",
    "mul_out",
    "multiply",
    "multiply_",
    "multiply_out",
    "sub",
    "sub_",
    "sub_out",
    "subtract",
    "subtract_",
    "subtract_out",
    "true_divide",
    "true_divide_",
    "true_divide_out",
    "to",
    "_to_copy",
    "copy_",
    "copy",
    "floor_divide",
    "floor_divide_",
    "floor_divide_out",
    "_conj",
];

/// Whether a call of `schema` through `torch.ops` may pass a Python number for a `Tensor`
/// argument (PyTorch's `opAllowsNumbersAsTensors`, which sets `toIValue`'s
/// `allow_numbers_as_tensors` for the call): every operator of the `prims` namespace, and the
/// `aten` operators of [`NUMBERS_AS_TENSORS`]. Elsewhere a number is refused ("aten::eq()
/// Expected a value of type 'Tensor' for argument 'other' but instead found type 'float'.").
pub fn allows_numbers_as_tensors(schema: &FunctionSchema) -> bool {
    match schema.name.namespace.as_deref() {
        Some("prims") => true,
        Some("aten") | None => {
            let name = schema.name.name.to_string();
            NUMBERS_AS_TENSORS.contains(&name.as_str())
        }
        Some(_) => false,
    }
}

/// The operator's full name (`aten::add.Tensor`), for [`Error::in_operator`].
pub fn full_name(schema: &FunctionSchema) -> String {
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
pub fn parse_call_args(schema: &FunctionSchema, texts: &[String], device: Device) -> Result<Stack> {
    let mut positional: Vec<&str> = Vec::new();
    let mut keywords: Vec<(&str, &str)> = Vec::new();
    for text in texts {
        match keyword(text) {
            Some((k, v)) => {
                if keywords.iter().any(|(seen, _)| *seen == k) {
                    return Err(schema_error(
                        schema,
                        format!(
                            "{}() got multiple values for keyword argument '{k}'",
                            base_name(schema)
                        ),
                    ));
                }
                keywords.push((k, v));
            }
            None => positional.push(text),
        }
    }
    match_call_args(&TextSource, schema, &positional, &keywords, device)
}

/// Matches `positional` values and `keywords` (distinct names) to the arguments of `schema`,
/// converting each with `src` and filling defaults, into a stack in schema order: PyTorch's
/// `createStackForSchema`, its checks in its order and its messages. Tensors are created on
/// `device`.
pub fn match_call_args<S: ArgSource>(
    src: &S,
    schema: &FunctionSchema,
    positional: &[&S::Value],
    keywords: &[(&str, &S::Value)],
    device: Device,
) -> Result<Stack> {
    let name = base_name(schema);
    let n = schema.arguments.len();
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
    for (i, value) in positional.iter().enumerate() {
        if schema.arguments[i].kwarg_only || schema.arguments[i].is_out {
            return Err(schema_error(
                schema,
                format!(
                    "{name}() takes {i} positional argument(s) but {} was/were given.  Declaration: {schema}",
                    positional.len()
                ),
            ));
        }
        stack.push(convert_argument(src, schema, i, value, device)?);
    }
    let mut consumed = 0;
    for i in positional.len()..n {
        let arg = &schema.arguments[i];
        if let Some((_, value)) = keywords.iter().find(|(k, _)| *k == arg.name) {
            stack.push(convert_argument(src, schema, i, value, device)?);
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
        for (k, _) in keywords {
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

fn convert_argument<S: ArgSource>(
    src: &S,
    schema: &FunctionSchema,
    index: usize,
    value: &S::Value,
    device: Device,
) -> Result<IValue> {
    let Some(arg) = schema.arguments.get(index) else {
        return Err(schema_error(
            schema,
            format!("{}() has no argument {index}", base_name(schema)),
        ));
    };
    src.convert(&arg.ty, value, device)
        .map_err(|e| src.mismatch(schema, index, value, &e))
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
    if index >= schema.arguments.len() {
        return Err(schema_error(
            schema,
            format!("{}() has no argument {index}", base_name(schema)),
        ));
    }
    convert_argument(&TextSource, schema, index, text, device)
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

/// The command line's message for argument `index` of `schema`, whose text `text` failed to
/// convert with `e`.
fn argument_error(schema: &FunctionSchema, index: usize, text: &str, e: &Error) -> Error {
    let Some(arg) = schema.arguments.get(index) else {
        return schema_error(
            schema,
            format!("{}() has no argument {index}", base_name(schema)),
        );
    };
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

/// TorchScript's name of a schema type (`annotation_str`), as `torch.ops`' messages print it:
/// `Tensor`, `number` for `Scalar`, `int` for `SymInt` and the enums passed as integers
/// (`ScalarType`, `Layout`, `MemoryFormat`), `List[int]`, `Optional[Tensor]`.
pub fn annotation_str(ty: &Type) -> String {
    match ty {
        Type::Optional(inner) => format!("Optional[{}]", annotation_str(inner)),
        Type::List { elem, .. } => format!("List[{}]", annotation_str(elem)),
        Type::CustomClass(c) => format!("__torch__.torch.classes.{c}"),
        Type::Base(b) => match b {
            BaseType::Tensor => "Tensor",
            BaseType::Int
            | BaseType::SymInt
            | BaseType::DeviceIndex
            | BaseType::ScalarType
            | BaseType::Layout
            | BaseType::MemoryFormat
            | BaseType::QScheme => "int",
            BaseType::Float => "float",
            BaseType::Bool | BaseType::SymBool => "bool",
            BaseType::Str | BaseType::Dimname => "str",
            BaseType::Scalar => "number",
            BaseType::Device => "Device",
            BaseType::Generator => "Generator",
            BaseType::Storage => "Storage",
            BaseType::Stream => "Stream",
            BaseType::DimVector => "List[int]",
            BaseType::GraphModule => "GraphModule",
        }
        .to_owned(),
    }
}

/// `schema` as PyTorch prints a parsed `FunctionSchema` in its messages: defaults are the
/// values its parser made of them (`reduction=Mean` is `reduction=1`, `dtype=long`
/// `dtype=4`, `memory_format=contiguous_format` `memory_format=0`, strings in double quotes).
pub fn declaration(schema: &FunctionSchema) -> FunctionSchema {
    let mut printed = schema.clone();
    for arg in &mut printed.arguments {
        let Some(d) = arg.default.as_mut() else {
            continue;
        };
        let value = match d.as_str() {
            "Mean" => "1".to_owned(),
            "Sum" => "2".to_owned(),
            "long" => "4".to_owned(),
            "contiguous_format" => "0".to_owned(),
            s if s.len() >= 2 && s.starts_with('\'') && s.ends_with('\'') => {
                format!("\"{}\"", &s[1..s.len() - 1])
            }
            _ => continue,
        };
        *d = value;
    }
    printed
}

/// `torch.ops`' message for argument `index` of `schema` given a value of Python type
/// `found_type` (`str`) whose `repr` is `value`, with the conversion's `details`
/// (`argumentValueMismatch` in PyTorch's `pybind_utils.h`):
///
/// ```text
/// aten::add() Expected a value of type 'Tensor' for argument 'other' but instead found type 'str'.
/// Position: 1
/// Value: 'a'
/// Declaration: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
/// Cast error details: Unable to cast a to Tensor
/// ```
pub fn type_mismatch_error(
    schema: &FunctionSchema,
    index: usize,
    found_type: &str,
    value: &str,
    details: &str,
) -> Error {
    let Some(arg) = schema.arguments.get(index) else {
        return schema_error(
            schema,
            format!("{}() has no argument {index}", base_name(schema)),
        );
    };
    schema_error(
        schema,
        format!(
            "{}() Expected a value of type '{}' for argument '{}' but instead found type '{found_type}'.\nPosition: {index}\nValue: {value}\nDeclaration: {}\nCast error details: {details}",
            base_name(schema),
            annotation_str(&arg.ty),
            arg.name,
            declaration(schema),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> FunctionSchema {
        FunctionSchema::parse(text).unwrap()
    }

    /// Values that are already `IValue`s (ints only), to check the matcher apart from any
    /// conversion.
    struct Ints;

    impl ArgSource for Ints {
        type Value = i64;

        fn convert(&self, ty: &Type, value: &i64, _device: Device) -> Result<IValue> {
            match ty {
                Type::Base(BaseType::Int) => Ok(IValue::Int(*value)),
                _ => Err(Error::type_error(format!("Unable to cast {value} to {ty}"))),
            }
        }

        fn show(&self, value: &i64) -> String {
            value.to_string()
        }
    }

    #[test]
    fn match_call_args_fills_positionals_keywords_and_defaults() {
        let s = schema("ns::f(int a, int b=5, *, int c=7) -> int");
        let stack = match_call_args(&Ints, &s, &[&1], &[("c", &3)], Device::CPU).unwrap();
        assert_eq!(stack, vec![IValue::Int(1), IValue::Int(5), IValue::Int(3)]);
        let e = match_call_args(&Ints, &s, &[&1, &2, &3], &[], Device::CPU).unwrap_err();
        assert_eq!(
            e.message(),
            "ns::f() takes 2 positional argument(s) but 3 was/were given.  Declaration: ns::f(int a, int b=5, *, int c=7) -> int"
        );
        let e = match_call_args(&Ints, &s, &[&1], &[("d", &3)], Device::CPU).unwrap_err();
        assert_eq!(
            e.message(),
            "Unknown keyword argument 'd' for operator 'ns::f'. Schema: ns::f(int a, int b=5, *, int c=7) -> int"
        );
        let e = match_call_args(&Ints, &s, &[&1], &[("a", &3)], Device::CPU).unwrap_err();
        assert!(e.message().starts_with("Argument 'a' specified both"));
        assert_eq!(e.operator(), Some("ns::f"));
    }

    #[test]
    fn declarations_print_defaults_as_pytorch_parsed_them() {
        // torch.ops.aten.mse_loss.default._schema, randint, contiguous, gelu.
        for (text, printed) in [
            (
                "aten::mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor",
                "aten::mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
            ),
            (
                "aten::randint(SymInt high, SymInt[] size, *, ScalarType? dtype=long, Layout? layout=None) -> Tensor",
                "aten::randint(SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None) -> Tensor",
            ),
            (
                "aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
                "aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)",
            ),
            (
                "aten::gelu(Tensor self, *, str approximate='none') -> Tensor",
                "aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor",
            ),
        ] {
            assert_eq!(declaration(&schema(text)).to_string(), printed);
        }
        let s = schema("aten::mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor");
        let e = type_mismatch_error(&s, 1, "float", "2.5", "Unable to cast 2.5 to Tensor");
        assert_eq!(
            e.message(),
            "aten::mse_loss() Expected a value of type 'Tensor' for argument 'target' but instead found type 'float'.\nPosition: 1\nValue: 2.5\nDeclaration: aten::mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor\nCast error details: Unable to cast 2.5 to Tensor"
        );
    }

    #[test]
    fn numbers_as_tensors_follow_pytorchs_list() {
        for (text, allowed) in [
            (
                "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                true,
            ),
            (
                "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
                true,
            ),
            (
                "aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
                true,
            ),
            (
                "aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
                true,
            ),
            (
                "aten::_to_copy(Tensor self, *, ScalarType? dtype=None) -> Tensor",
                true,
            ),
            ("prims::add(Tensor self, Tensor other) -> Tensor", true),
            (
                "aten::eq.Tensor(Tensor self, Tensor other) -> Tensor",
                false,
            ),
            (
                "aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
                false,
            ),
            (
                "aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
                false,
            ),
            (
                "aten::view_as(Tensor(a) self, Tensor other) -> Tensor(a)",
                false,
            ),
            ("mylib::add(Tensor self, Tensor other) -> Tensor", false),
        ] {
            assert_eq!(allows_numbers_as_tensors(&schema(text)), allowed, "{text}");
        }
    }

    #[test]
    fn annotation_str_is_torchscripts() {
        let ty = |t: &str| annotation_str(&Type::parse(t).unwrap());
        assert_eq!(ty("Tensor"), "Tensor");
        assert_eq!(ty("Scalar"), "number");
        assert_eq!(ty("SymInt[]"), "List[int]");
        assert_eq!(ty("int[1]?"), "Optional[List[int]]");
        assert_eq!(ty("ScalarType?"), "Optional[int]");
        assert_eq!(ty("Tensor?[]"), "List[Optional[Tensor]]");
    }

    #[test]
    fn type_mismatch_error_is_torch_ops_message() {
        let s = schema("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
        let e = type_mismatch_error(&s, 1, "str", "'a'", "Unable to cast a to Tensor");
        assert_eq!(
            e.message(),
            "aten::add() Expected a value of type 'Tensor' for argument 'other' but instead found type 'str'.\nPosition: 1\nValue: 'a'\nDeclaration: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\nCast error details: Unable to cast a to Tensor"
        );
    }
}
