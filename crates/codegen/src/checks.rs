//! The per-entry checks torchgen makes once a function is assembled (§2.5): out ops have only
//! the function variant, `structured`/`structured_delegate` fit the schema kind, defaults named
//! in `cpp_no_default_args` exist, foreach ops skip the device check, and random ops are tagged.
//!
//! The checks are independent of each other, so all failing ones are reported; a check whose
//! input could not be parsed is skipped.

use std::collections::BTreeSet;

use switchyard_schema::{BaseType, FunctionSchema, OperatorName, SchemaKind, Type};

use crate::model::{DeviceCheckType, Variants};
use crate::yaml::Node;

/// The fields the checks read; `None` marks a field whose value was rejected.
pub(crate) struct Fields<'a> {
    pub(crate) func: Option<&'a FunctionSchema>,
    pub(crate) variants: Option<Variants>,
    pub(crate) structured: Option<bool>,
    pub(crate) structured_delegate: Option<&'a Option<OperatorName>>,
    pub(crate) structured_inherits: Option<&'a Option<String>>,
    pub(crate) device_guard: Option<bool>,
    pub(crate) device_check: Option<DeviceCheckType>,
    pub(crate) cpp_no_default_args: Option<&'a [Node]>,
    pub(crate) tags: Option<&'a BTreeSet<String>>,
}

/// The failing checks' messages, in torchgen's order.
pub(crate) fn post_init(f: &Fields<'_>) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(func) = f.func else {
        return errors;
    };
    let kind = func.kind();
    if func.is_out_fn()
        && let Some(v) = f.variants
        && v != Variants::FUNCTION
    {
        errors.push(
            "Native functions with out arguments MUST be declared with only function variant; e.g., variants: function; otherwise you will tickle a Python argument binding bug (which usually manifests itself as the result variable being undefined.)"
                .to_owned(),
        );
    }
    let guard_message = "device_guard: False is not respected by structured kernels";
    let mut structured_ok = true;
    if f.structured == Some(true) {
        if kind != SchemaKind::Out {
            errors.push(
                "Put structured field on the out= variant of a function; did you mean structured_delegate?"
                    .to_owned(),
            );
            structured_ok = false;
        } else if f.device_guard == Some(false) {
            errors.push(guard_message.to_owned());
            structured_ok = false;
        }
    }
    if let Some(Some(_)) = f.structured_delegate {
        if kind == SchemaKind::Out {
            errors.push(
                "structured_delegate field not allowed on out= functions; did you mean structured?"
                    .to_owned(),
            );
            structured_ok = false;
        } else if f.device_guard == Some(false) {
            errors.push(guard_message.to_owned());
            structured_ok = false;
        }
        if structured_ok && f.structured == Some(true) {
            errors
                .push("Cannot have both structured and structured_delegate on function".to_owned());
        }
    }
    if let Some(names) = f.cpp_no_default_args {
        let mut invalid: Vec<String> = Vec::new();
        for n in names {
            let defaulted = n.as_str().is_some_and(|name| {
                func.arguments
                    .iter()
                    .any(|a| a.name == name && a.default.is_some())
            });
            let repr = n.py_repr();
            if !defaulted && !invalid.contains(&repr) {
                invalid.push(repr);
            }
        }
        if !invalid.is_empty() {
            errors.push(format!(
                "Invalid cpp_no_default_args: {{{}}}",
                invalid.join(", ")
            ));
        }
    }
    if let Some(Some(_)) = f.structured_inherits
        && f.structured == Some(false)
    {
        errors.push("structured_inherits must also imply structured: True".to_owned());
    }
    if func.name.to_string().starts_with("_foreach")
        && f.device_check == Some(DeviceCheckType::ExactSame)
    {
        errors.push(
            "foreach kernels fall back to slow path when tensor are on different devices, device_check not allowed to be enabled"
                .to_owned(),
        );
    }
    if let Some(tags) = f.tags
        && is_random(func)
        && !tags.contains("nondeterministic_seeded")
    {
        errors.push(format!(
            "nondeterministic_seeded tag missing for {}",
            func.name
        ));
    }
    errors
}

/// torchgen's guess that an operator draws random numbers: `rand` in its name (the stateless
/// `_philox_` ops excepted), `dropout` in its name or an argument name (backwards and
/// `_cudnn_init_dropout_state` excepted), or a `Generator` argument.
fn is_random(func: &FunctionSchema) -> bool {
    let full = func.name.to_string();
    let rand = full.contains("rand") && !full.contains("_philox_");
    let dropout = (full.contains("dropout")
        || func.arguments.iter().any(|a| a.name.contains("dropout")))
        && !full.contains("backward")
        && func.name.name.to_string() != "_cudnn_init_dropout_state";
    let generator = func
        .arguments
        .iter()
        .any(|a| !a.is_out && is_generator_like(&a.ty));
    rand || dropout || generator
}

fn is_generator_like(ty: &Type) -> bool {
    match ty {
        Type::Base(b) => *b == BaseType::Generator,
        Type::Optional(t) => is_generator_like(t),
        Type::List { elem, .. } => is_generator_like(elem),
        Type::CustomClass(_) => false,
    }
}
