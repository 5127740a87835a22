//! `op::<name>`: one marker type per operator with its typed calling convention, cached
//! handle, `call` and `redispatch` (PyTorch's `at::_ops`).

use super::input::{GenFunction, GenInput};
use super::rust::{
    UnsupportedType, arg_name, arg_type, args_tuple_type, op_type_name, output_type, tuple,
    unambiguous_name,
};
use super::writer::{header, lines};
use std::collections::HashSet;
use switchyard_schema::SchemaKind;

/// The `ReturnKind` expression for a schema.
pub(crate) fn return_kind(f: &GenFunction) -> &'static str {
    match f.kind() {
        SchemaKind::Inplace => "ReturnKind::Inplace",
        SchemaKind::Out | SchemaKind::Scratch if !f.schema.returns.is_empty() => "ReturnKind::Out",
        _ => "ReturnKind::Functional",
    }
}

/// The schema text without namespace, as `def` takes it.
pub(crate) fn schema_text(f: &GenFunction) -> String {
    let mut s = f.schema.clone();
    s.name.namespace = None;
    s.to_string()
}

/// A parameter name that cannot be read as one of the operator marker structs of the same
/// module (a parameter `min` would otherwise be a pattern matching the unit struct `min`).
fn param_name(name: &str, structs: &HashSet<String>) -> String {
    let mut n = arg_name(name);
    while structs.contains(&n) {
        n.push('_');
    }
    n
}

fn one(f: &GenFunction, structs: &HashSet<String>) -> Result<String, UnsupportedType> {
    let name = op_type_name(&f.schema);
    let args = args_tuple_type(&f.schema, "'a")?;
    let output = output_type(&f.schema)?;
    let params: Vec<String> = f
        .schema
        .arguments
        .iter()
        .map(|a| {
            Ok(format!(
                "{}: {}",
                param_name(&a.name, structs),
                arg_type(&a.ty, "")?.replace("& ", "&")
            ))
        })
        .collect::<Result<_, UnsupportedType>>()?;
    let names: Vec<String> = f
        .schema
        .arguments
        .iter()
        .map(|a| param_name(&a.name, structs))
        .collect();
    let kind = return_kind(f);
    let kind_line = match kind {
        "ReturnKind::Functional" => String::new(),
        "ReturnKind::Out" => format!(
            "    const RETURN_KIND: ReturnKind = ReturnKind::Out({});\n",
            f.schema.returns.len()
        ),
        k => format!("    const RETURN_KIND: ReturnKind = {k};\n"),
    };
    let full = format!(
        "{}::{}",
        f.schema.name.namespace.as_deref().unwrap_or("aten"),
        f.schema.name.unqualified()
    );
    let call_args = tuple(&names);
    let params = params.join(", ");
    let sep = if params.is_empty() { "" } else { ", " };
    Ok(format!(
        "/// `{full}`: `{schema}`\n\
         #[allow(non_camel_case_types)]\n\
         pub struct {name};\n\
         \n\
         impl OpSignature for {name} {{\n    type Args<'a> = {args};\n    type Output = {output};\n{kind_line}}}\n\
         \n\
         impl Operator for {name} {{\n\
         \x20   const QUALIFIED_NAME: &'static str = \"{full}\";\n\
         \x20   fn typed_handle() -> Result<TypedOperatorHandle<Self>> {{\n\
         \x20       Self::handle()\n\
         \x20   }}\n\
         }}\n\
         \n\
         impl {name} {{\n\
         \x20   /// `{full}`.\n\
         \x20   pub const NAME: &'static str = \"{full}\";\n\
         \x20   /// The schema.\n\
         \x20   pub const SCHEMA: &'static str = \"{schema_escaped}\";\n\
         \n\
         \x20   /// The typed handle (looked up once, then cached).\n\
         \x20   pub fn handle() -> Result<TypedOperatorHandle<Self>> {{\n\
         \x20       static HANDLE: OnceLock<TypedOperatorHandle<{name}>> = OnceLock::new();\n\
         \x20       cached_handle(&HANDLE, Self::NAME)\n\
         \x20   }}\n\
         \n\
         \x20   /// Calls the operator through the dispatcher.\n\
         \x20   #[inline]\n\
         \x20   pub fn call({params}) -> Result<{output}> {{\n\
         \x20       Self::handle()?.call({call_args})\n\
         \x20   }}\n\
         \n\
         \x20   /// Calls the kernel for `ks` (continuing below the caller's key).\n\
         \x20   #[inline]\n\
         \x20   pub fn redispatch(ks: DispatchKeySet{sep}{params}) -> Result<{output}> {{\n\
         \x20       Self::handle()?.redispatch(ks, {call_args})\n\
         \x20   }}\n\
         }}\n",
        schema = schema_text(f),
        schema_escaped = schema_text(f).replace('\\', "\\\\").replace('"', "\\\""),
    ))
}

/// `crates/ops/src/generated/operators.rs`.
pub fn generate(input: &GenInput) -> Result<String, UnsupportedType> {
    let mut out = header("operators");
    out.push_str(
        "//! One marker type per operator: its typed calling convention ([`OpSignature`]), its cached\n\
         //! handle, and `call` / `redispatch` through the dispatcher.\n\n\
         #![allow(clippy::too_many_arguments, clippy::type_complexity)]\n\n\
         use crate::runtime::cached_handle;\n\
         use ::std::sync::OnceLock;\n\
         use switchyard_core::{Device, DispatchKeySet, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};\n\
         use switchyard_dispatch::{OpSignature, Operator, ReturnKind, TypedOperatorHandle};\n\n",
    );
    let structs: HashSet<String> = input
        .functions
        .iter()
        .map(|f| unambiguous_name(&f.schema))
        .collect();
    let items: Vec<String> = input
        .functions
        .iter()
        .map(|f| one(f, &structs))
        .collect::<Result<_, _>>()?;
    out.push_str(&lines(items.into_iter().map(|s| s + "\n")));
    Ok(out)
}
