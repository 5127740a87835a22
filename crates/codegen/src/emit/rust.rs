//! Rust spellings: types of schema arguments and returns, default values, identifiers.

use switchyard_schema::{Argument, BaseType, FunctionSchema, Type};

/// Rust keywords (strict, reserved and edition-2024 reserved), which argument names and
/// function names must avoid.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// An argument name usable as a Rust variable (`self` → `self_`).
pub fn arg_name(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// A function name usable in Rust (`where` → `r#where`).
pub fn fn_name(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

/// An error for a schema type the generator does not map to Rust.
#[derive(Debug)]
pub struct UnsupportedType(pub String);

/// The Rust type of an argument of type `ty` (see `docs/kernels.md`), with lifetime `'a`
/// where it borrows.
pub fn arg_type(ty: &Type, lt: &str) -> Result<String, UnsupportedType> {
    let unsupported = || UnsupportedType(ty.to_string());
    Ok(match ty {
        Type::Base(b) => match b {
            BaseType::Tensor => format!("&{lt} Tensor"),
            BaseType::Int | BaseType::SymInt | BaseType::DeviceIndex => "i64".into(),
            BaseType::Float => "f64".into(),
            BaseType::Bool | BaseType::SymBool => "bool".into(),
            BaseType::Str => format!("&{lt} str"),
            BaseType::Scalar => "Scalar".into(),
            BaseType::ScalarType => "ScalarType".into(),
            BaseType::Layout => "Layout".into(),
            BaseType::Device => "Device".into(),
            BaseType::MemoryFormat => "MemoryFormat".into(),
            BaseType::Generator => format!("&{lt} Generator"),
            _ => return Err(unsupported()),
        },
        Type::Optional(inner) => match inner.as_ref() {
            Type::Base(BaseType::Tensor) => format!("Option<&{lt} Tensor>"),
            other => format!("Option<{}>", arg_type(other, lt)?),
        },
        Type::List { elem, .. } => match elem.as_ref() {
            Type::Base(BaseType::Tensor) => format!("&{lt} [Tensor]"),
            Type::Optional(t) if t.is_tensor() => format!("&{lt} [Option<Tensor>]"),
            Type::Base(BaseType::Int | BaseType::SymInt) => format!("&{lt} [i64]"),
            Type::Base(BaseType::Float) => format!("&{lt} [f64]"),
            Type::Base(BaseType::Bool) => format!("&{lt} [bool]"),
            _ => return Err(unsupported()),
        },
        Type::CustomClass(_) => return Err(unsupported()),
    })
}

/// The Rust type of a return of type `ty`.
pub fn return_type(ty: &Type) -> Result<String, UnsupportedType> {
    Ok(match ty {
        Type::Base(BaseType::Tensor) => "Tensor".into(),
        Type::Base(BaseType::Int | BaseType::SymInt) => "i64".into(),
        Type::Base(BaseType::Float) => "f64".into(),
        Type::Base(BaseType::Bool | BaseType::SymBool) => "bool".into(),
        Type::Base(BaseType::Scalar) => "Scalar".into(),
        Type::Base(BaseType::ScalarType) => "ScalarType".into(),
        Type::List { elem, .. } if elem.is_tensor() => "Vec<Tensor>".into(),
        other => return Err(UnsupportedType(other.to_string())),
    })
}

/// The Rust output type of a schema (`()`, one type, or a tuple).
pub fn output_type(schema: &FunctionSchema) -> Result<String, UnsupportedType> {
    let types: Vec<String> = schema
        .returns
        .iter()
        .map(|r| return_type(&r.ty))
        .collect::<Result<_, _>>()?;
    Ok(match types.len() {
        0 => "()".into(),
        1 => types.into_iter().next().unwrap_or_default(),
        _ => format!("({})", types.join(", ")),
    })
}

/// The argument tuple type `(A, B,)` with lifetime `lt`.
pub fn args_tuple_type(schema: &FunctionSchema, lt: &str) -> Result<String, UnsupportedType> {
    let types: Vec<String> = schema
        .arguments
        .iter()
        .map(|a| arg_type(&a.ty, lt))
        .collect::<Result<_, _>>()?;
    Ok(tuple(&types))
}

/// A tuple expression or type from its parts (`()`, `(a,)`, `(a, b)`).
pub fn tuple(parts: &[String]) -> String {
    match parts.len() {
        0 => "()".into(),
        1 => format!("({},)", parts[0]),
        _ => format!("({})", parts.join(", ")),
    }
}

/// The Rust expression for argument `a`'s default value, or `None` if it has none.
pub fn default_expr(a: &Argument) -> Option<String> {
    let d = a.default.as_deref()?;
    Some(default_for(&a.ty, d))
}

fn int_list_literal(d: &str, size: Option<usize>) -> String {
    let inner = d.trim_start_matches('[').trim_end_matches(']');
    if d.starts_with('[') {
        let items: Vec<&str> = inner
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        format!("&[{}]", items.join(", "))
    } else {
        // A bare number on a sized list is broadcast to every entry (`int[2] stride=1`).
        let n = size.unwrap_or(1);
        format!("&[{}]", vec![d; n].join(", "))
    }
}

fn float_literal(d: &str) -> String {
    if d.contains('.') || d.contains('e') || d.contains("inf") || d.contains("nan") {
        d.to_string()
    } else {
        format!("{d}.0")
    }
}

fn string_literal(d: &str) -> String {
    let inner = d.trim_matches(|c| c == '\'' || c == '"');
    format!("{inner:?}")
}

fn default_for(ty: &Type, d: &str) -> String {
    match ty {
        Type::Optional(inner) => {
            if d == "None" {
                "None".into()
            } else {
                format!("Some({})", default_for(inner, d))
            }
        }
        Type::Base(b) => match b {
            BaseType::Int | BaseType::SymInt | BaseType::DeviceIndex => match d {
                // at::Reduction values
                "Mean" => "1".into(),
                "Sum" => "2".into(),
                "None" => "0".into(),
                _ => d.to_string(),
            },
            BaseType::Float => float_literal(d),
            BaseType::Bool | BaseType::SymBool => (d == "True").to_string(),
            BaseType::Str => string_literal(d),
            BaseType::Scalar => {
                if d == "True" || d == "False" {
                    format!("Scalar::Bool({})", d == "True")
                } else if d.contains('.') || d.contains('e') {
                    format!("Scalar::Float({d})")
                } else {
                    format!("Scalar::Int({d})")
                }
            }
            BaseType::ScalarType => match d {
                "long" => "ScalarType::Long".into(),
                "float" => "ScalarType::Float".into(),
                "int" => "ScalarType::Int".into(),
                other => format!("ScalarType::{other}"),
            },
            BaseType::MemoryFormat => match d {
                "contiguous_format" => "MemoryFormat::Contiguous".into(),
                "preserve_format" => "MemoryFormat::Preserve".into(),
                "channels_last" => "MemoryFormat::ChannelsLast".into(),
                other => format!("MemoryFormat::{other}"),
            },
            BaseType::Layout => "Layout::Strided".into(),
            _ => d.to_string(),
        },
        Type::List { elem, size } => match elem.as_ref() {
            Type::Base(BaseType::Float) => {
                let inner = d.trim_start_matches('[').trim_end_matches(']');
                let items: Vec<String> = inner
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(float_literal)
                    .collect();
                format!("&[{}]", items.join(", "))
            }
            Type::Base(BaseType::Bool) => {
                let inner = d.trim_start_matches('[').trim_end_matches(']');
                let items: Vec<String> = inner
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| (s == "True").to_string())
                    .collect();
                format!("&[{}]", items.join(", "))
            }
            _ => int_list_literal(d, *size),
        },
        Type::CustomClass(_) => d.to_string(),
    }
}

/// The Rust path segment of an operator's marker type in `op::`: its unambiguous name, a
/// raw identifier when that is a keyword (`where` → `r#where`).
pub fn op_type_name(schema: &FunctionSchema) -> String {
    fn_name(&unambiguous_name(schema))
}

/// PyTorch's unambiguous name (`add_Tensor`, `add__Tensor`, `add_out`, `mm`): the name of the
/// operator's marker type in `op::` ([`op_type_name`] spells it in Rust).
pub fn unambiguous_name(schema: &FunctionSchema) -> String {
    let base = schema.name.name.to_string();
    if schema.name.overload_name.is_empty() {
        base
    } else {
        format!("{base}_{}", schema.name.overload_name)
    }
}

/// The name of a structured group's meta function in `switchyard_ops::meta`: its functional
/// member's unambiguous name in lower case (`add_tensor`, `sum_dim_intlist`, `mm`).
pub fn meta_fn_name(functional: &FunctionSchema) -> String {
    unambiguous_name(functional).to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(schema: &str, i: usize) -> Argument {
        FunctionSchema::parse(schema).unwrap().arguments[i].clone()
    }

    #[test]
    fn types_and_defaults() {
        let s = "foo(Tensor self, Tensor? w=None, int[2] stride=1, SymInt[] size, float eps=1e-05, bool b=False, str mode=\"mean\", Scalar alpha=1, Scalar beta=0.5, ScalarType? dtype=long, int reduction=Mean, int[1]? dim=None, MemoryFormat m=contiguous_format) -> Tensor";
        let types: Vec<String> = (0..13)
            .map(|i| arg_type(&arg(s, i).ty, "'a").unwrap())
            .collect();
        assert_eq!(types[0], "&'a Tensor");
        assert_eq!(types[1], "Option<&'a Tensor>");
        assert_eq!(types[2], "&'a [i64]");
        assert_eq!(types[11], "Option<&'a [i64]>");
        let defaults: Vec<Option<String>> = (0..13).map(|i| default_expr(&arg(s, i))).collect();
        assert_eq!(defaults[1].as_deref(), Some("None"));
        assert_eq!(defaults[2].as_deref(), Some("&[1, 1]"));
        assert_eq!(defaults[3], None);
        assert_eq!(defaults[4].as_deref(), Some("1e-05"));
        assert_eq!(defaults[5].as_deref(), Some("false"));
        assert_eq!(defaults[6].as_deref(), Some("\"mean\""));
        assert_eq!(defaults[7].as_deref(), Some("Scalar::Int(1)"));
        assert_eq!(defaults[8].as_deref(), Some("Scalar::Float(0.5)"));
        assert_eq!(defaults[9].as_deref(), Some("Some(ScalarType::Long)"));
        assert_eq!(defaults[10].as_deref(), Some("1"));
        assert_eq!(defaults[12].as_deref(), Some("MemoryFormat::Contiguous"));
        assert_eq!(arg_name("self"), "self_");
        assert_eq!(fn_name("where"), "r#where");
        let op = |s: &str| op_type_name(&FunctionSchema::parse(s).unwrap());
        assert_eq!(op("where(Tensor condition) -> Tensor[]"), "r#where");
        assert_eq!(
            op("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor"),
            "where_self"
        );
    }

    #[test]
    fn unambiguous_names() {
        let n = |s: &str| unambiguous_name(&FunctionSchema::parse(s).unwrap());
        assert_eq!(
            n("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
            "add_Tensor"
        );
        assert_eq!(
            n("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"),
            "add__Tensor"
        );
        assert_eq!(n("mm(Tensor self, Tensor mat2) -> Tensor"), "mm");
    }
}
