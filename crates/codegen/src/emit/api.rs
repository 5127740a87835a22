//! The user API: free functions (`ops::add(&a, &b)`) and `Tensor` methods (`a.add(&b)`).
//!
//! Naming, so that every overload has a predictable name (Rust has no overloading):
//! * a function is named after the operator's base name, plus `_<overload>` (lower case) unless
//!   the overload is the default one of its base name — the empty overload, else `Tensor`, else
//!   `self`, else the only non-out overload — plus a trailing `_` for in-place operators
//!   (`add.Tensor` → `add`, `add.Scalar` → `add_scalar`, `add_.Scalar` → `add_scalar_`);
//! * an out= operator is named after its functional sibling plus `_out` (`add.out` → `add_out`,
//!   `sum.IntList_out` → `sum_dim_intlist_out`);
//! * arguments with defaults are left out; `<name>_with` takes every argument.

use super::input::{GenFunction, GenInput};
use super::rust::{
    UnsupportedType, arg_name, arg_type, default_expr, fn_name, op_type_name, output_type,
};
use super::writer::{header, lines};
use std::collections::BTreeMap;
use switchyard_schema::{BaseType, Type};

/// The user-API name of every function, by index.
pub fn api_names(input: &GenInput) -> Vec<String> {
    // Non-out overloads per (base name, in-place). A `<base>_functional` operator (autogen's
    // functional variant of a mutable one) is named after its whole name, not after `<base>`,
    // which names the mutable operator.
    let base_of = |f: &GenFunction| -> String {
        let n = &f.schema.name.name;
        if n.functional_overload {
            format!("{}_functional", n.base)
        } else {
            n.base.clone()
        }
    };
    let mut overloads: BTreeMap<(String, bool), Vec<String>> = BTreeMap::new();
    for f in &input.functions {
        if !f.schema.is_out_fn() {
            overloads
                .entry((base_of(f), f.schema.name.name.inplace))
                .or_default()
                .push(f.schema.name.overload_name.clone());
        }
    }
    let default_overload = |base: &str, inplace: bool| -> Option<String> {
        let list = overloads.get(&(base.to_string(), inplace))?;
        ["", "Tensor", "self"]
            .iter()
            .find(|d| list.iter().any(|o| o == *d))
            .map(|d| d.to_string())
            .or_else(|| (list.len() == 1).then(|| list[0].clone()))
    };
    let plain_name = |f: &GenFunction| -> String {
        let n = &f.schema.name;
        let mut s = base_of(f);
        let overload = &n.overload_name;
        if default_overload(&s, n.name.inplace).as_deref() != Some(overload.as_str())
            && !overload.is_empty()
        {
            s.push('_');
            s.push_str(&overload.to_lowercase());
        }
        if n.name.inplace {
            s.push('_');
        }
        s
    };
    input
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if f.schema.is_out_fn() {
                match input.group_of(i) {
                    Some(g) if g.out == i => {
                        format!("{}_out", plain_name(&input.functions[g.functional]))
                    }
                    _ => format!(
                        "{}_{}",
                        f.schema.name.name.base,
                        f.schema.name.overload_name.to_lowercase()
                    ),
                }
            } else {
                plain_name(f)
            }
        })
        .collect()
}

/// A user-facing parameter type (Scalars accept anything convertible).
fn param_type(ty: &Type) -> Result<String, UnsupportedType> {
    Ok(match ty {
        Type::Base(BaseType::Scalar) => "impl Into<Scalar>".into(),
        other => arg_type(other, "")?.replace("& ", "&"),
    })
}

fn value_expr(a: &switchyard_schema::Argument) -> String {
    match a.ty {
        Type::Base(BaseType::Scalar) => format!("{}.into()", arg_name(&a.name)),
        _ => arg_name(&a.name),
    }
}

struct ApiFn {
    name: String,
    doc: String,
    params: Vec<String>,
    call: String,
    output: String,
}

fn build(
    f: &GenFunction,
    name: &str,
    skip: Option<usize>,
    with_all: bool,
) -> Result<ApiFn, UnsupportedType> {
    let mut params = Vec::new();
    let mut values = Vec::new();
    for (i, a) in f.schema.arguments.iter().enumerate() {
        if Some(i) == skip {
            values.push("self".to_string());
            continue;
        }
        match (with_all, default_expr(a)) {
            (false, Some(d)) => values.push(d),
            _ => {
                params.push(format!("{}: {}", arg_name(&a.name), param_type(&a.ty)?));
                values.push(value_expr(a));
            }
        }
    }
    Ok(ApiFn {
        name: fn_name(name),
        doc: format!(
            "`{}::{}`",
            f.schema.name.namespace.as_deref().unwrap_or("aten"),
            super::operators::schema_text(f)
        ),
        params,
        call: format!(
            "op::{}::call({})",
            op_type_name(&f.schema),
            values.join(", ")
        ),
        output: output_type(&f.schema)?,
    })
}

fn has_defaults(f: &GenFunction) -> bool {
    f.schema.arguments.iter().any(|a| a.default.is_some())
}

fn function_items(f: &GenFunction, name: &str) -> Result<Vec<String>, UnsupportedType> {
    let mut out = Vec::new();
    let variants = if has_defaults(f) {
        vec![false, true]
    } else {
        vec![false]
    };
    for with_all in variants {
        let api = build(
            f,
            &if with_all {
                format!("{name}_with")
            } else {
                name.to_string()
            },
            None,
            with_all,
        )?;
        let defaults_note = if with_all {
            "\n///\n/// Takes every argument, including those with defaults."
        } else if has_defaults(f) {
            "\n///\n/// Arguments with defaults take them; see the `_with` variant to pass them."
        } else {
            ""
        };
        out.push(format!(
            "/// {}{defaults_note}\n#[inline]\npub fn {}({}) -> Result<{}> {{\n    {}\n}}\n",
            api.doc,
            api.name,
            api.params.join(", "),
            api.output,
            api.call
        ));
    }
    Ok(out)
}

fn method_items(
    f: &GenFunction,
    name: &str,
) -> Result<(Vec<String>, Vec<String>), UnsupportedType> {
    let Some(self_index) = f.schema.self_index() else {
        return Ok((vec![], vec![]));
    };
    let mut decls = Vec::new();
    let mut impls = Vec::new();
    let variants = if has_defaults(f) {
        vec![false, true]
    } else {
        vec![false]
    };
    for with_all in variants {
        let api = build(
            f,
            &if with_all {
                format!("{name}_with")
            } else {
                name.to_string()
            },
            Some(self_index),
            with_all,
        )?;
        let params: Vec<String> = std::iter::once("&self".to_string())
            .chain(api.params)
            .collect();
        let sig = format!(
            "fn {}({}) -> Result<{}>",
            api.name,
            params.join(", "),
            api.output
        );
        decls.push(format!("    /// {}\n    {sig};\n", api.doc));
        impls.push(format!(
            "    #[inline]\n    {sig} {{\n        {}\n    }}\n",
            api.call
        ));
    }
    Ok((decls, impls))
}

/// `crates/ops/src/generated/functions.rs`.
pub fn generate_functions(input: &GenInput) -> Result<String, UnsupportedType> {
    let names = api_names(input);
    let mut out = header("functions");
    out.push_str(
        "//! The user API as free functions: `add(&a, &b)`; see `switchyard_codegen::emit::api` for the\n\
         //! naming rules.\n\n\
         #![allow(non_snake_case, clippy::too_many_arguments, clippy::type_complexity)]\n\n\
         use crate::op;\n\
         use switchyard_core::{Device, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};\n\n",
    );
    let mut items = Vec::new();
    for (f, name) in input.functions.iter().zip(&names) {
        if f.function_variant {
            items.extend(function_items(f, name)?);
        }
    }
    out.push_str(&lines(items.into_iter().map(|s| s + "\n")));
    Ok(out)
}

/// `crates/ops/src/generated/tensor_methods.rs`.
pub fn generate_methods(input: &GenInput) -> Result<String, UnsupportedType> {
    let names = api_names(input);
    let mut decls = Vec::new();
    let mut impls = Vec::new();
    for (f, name) in input.functions.iter().zip(&names) {
        if f.method_variant {
            let (d, i) = method_items(f, name)?;
            decls.extend(d);
            impls.extend(i);
        }
    }
    let mut out = header("tensor_methods");
    out.push_str(
        "//! The user API as `Tensor` methods: `a.add(&b)`, `a.add_(&b)` (bring [`TensorOps`] into\n\
         //! scope).\n\n\
         #![allow(non_snake_case, clippy::too_many_arguments, clippy::type_complexity, clippy::wrong_self_convention)]\n\n\
         use crate::op;\n\
         use switchyard_core::{Device, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};\n\n\
         /// Operators with a method variant, as methods of [`Tensor`].\n\
         pub trait TensorOps {\n",
    );
    out.push_str(&lines(decls));
    out.push_str("}\n\nimpl TensorOps for Tensor {\n");
    out.push_str(&lines(impls));
    out.push_str("}\n");
    Ok(out)
}
