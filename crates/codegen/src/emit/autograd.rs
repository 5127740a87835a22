//! The autograd layer's generated code (torchgen's `gen_autograd`): from `ops.yaml` and
//! `crates/autograd/derivatives.yaml`,
//!
//! * `nodes.rs`: a backward node per formula group (PyTorch's `Functions.h/.cpp`): the saved
//!   values, and an `apply` that evaluates each formula only for the inputs whose gradient
//!   the pass needs;
//! * `kernels.rs`: the kernel of every operator at the `Autograd` key (PyTorch's
//!   `VariableType`): checks, `requires_grad`, saving, the node, the redispatch below
//!   autograd, the history of the outputs; and at the `ADInplaceOrView` key (PyTorch's
//!   `ADInplaceOrViewType`): one version bump per in-place call, view tracking for views;
//! * `register.rs`: their registration.

use std::collections::BTreeMap;

use switchyard_schema::{BaseType, FunctionSchema, SchemaKind, Type};

use super::input::{GenFunction, GenInput};
use super::operators::schema_text;
use super::registration::pattern;
use super::rust::{UnsupportedType, arg_name, args_tuple_type, output_type};
use super::writer::header;
use crate::derivatives::{
    Derivatives, DifferentiabilityInfo, SavedAttr, SavedKind, return_names, rust_name,
};
use crate::{NativeFunctions, unambiguous_name};

/// Operators whose Autograd kernel is written by hand in `crates/autograd/src/manual_kernels.rs`
/// (torchgen's `MANUAL_AUTOGRAD`).
pub const MANUAL_AUTOGRAD: [&str; 4] = ["copy_", "detach", "detach_", "resize_"];

/// Base names whose outputs never require grad (torchgen's `DONT_REQUIRE_DERIVATIVE`, the
/// names that occur in `ops.yaml`): their kernels only redispatch, out= overloads included.
pub const DONT_REQUIRE_DERIVATIVE: [&str; 20] = [
    "empty_like",
    "ones_like",
    "full_like",
    "zeros_like",
    "rand_like",
    "randn_like",
    "new_empty",
    "new_empty_strided",
    "new_full",
    "new_zeros",
    "new_ones",
    "argmax",
    "argmin",
    "argsort",
    "isnan",
    "isinf",
    "logical_and",
    "logical_xor",
    "logical_not",
    "logical_or",
];

/// Functional operators whose derivatives.yaml entry PyTorch does not have (a working formula
/// kept; the gradient oracle lists them as justified): their explicit out= overloads do not
/// take it, so that they run through the autograd fallback as PyTorch's do, instead of
/// refusing arguments that require grad (`scatter.value_reduce_out`). Their in-place variants
/// keep it.
const SWITCHYARD_ONLY_FORMULAS: [&str; 1] = ["scatter.value_reduce"];

/// Operators without a derivatives.yaml entry that torchgen still gives a VariableType kernel
/// (its `RESET_GRAD_ACCUMULATOR` and `DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE`, the names
/// that occur here), whose `NotImplemented` node names them by their C++ name (`set_`) where
/// the autograd fallback says `aten::<name>`.
const VARIABLE_TYPE_NOT_IMPLEMENTED: [&str; 2] = ["set_", "resize_"];

/// Operators with a derivatives.yaml entry in PyTorch that switchyard decomposes instead
/// (`native_batch_norm` redispatches to `_native_batch_norm_legit`, `linear` to `addmm`): their
/// explicit out= overloads keep PyTorch's Autograd kernel, which refuses inputs that require
/// grad with the operator's own name.
const OUT_OF_DECOMPOSED_DIFFERENTIABLE: [&str; 2] = ["linear", "native_batch_norm"];

/// What the Autograd kernel of an out= overload does (torchgen's `emit_body` for an out
/// function and its `AutogradNotImplemented` registration). One rule for the generated
/// Autograd kernels here and the out= wrappers `emit::backend` generates at an external
/// backend's `Autograd<backend>` key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutAutograd {
    /// No Autograd kernel: the boxed fallback (`crates/autograd/src/fallback.rs`, PyTorch's
    /// `autogradNotImplementedFallback`) runs it and gives its outputs a node that raises at
    /// backward. torchgen registers it for an out= overload without a derivatives.yaml entry
    /// (autogen's out= overloads never take their functional variant's) whose outputs could
    /// be differentiable.
    NotImplementedFallback,
    /// Only redispatch: the operator is not differentiable (its base name is in
    /// `DONT_REQUIRE_DERIVATIVE`, or it has no differentiable input or output: `eq.Tensor_out`,
    /// `argmax.out`), so the outs do not require grad.
    Redispatch,
    /// Refuse, before anything runs, a call where one of these arguments (differentiable
    /// inputs, then differentiable outs) requires grad with grad mode on ("relu(): functions
    /// with out=... arguments don't support automatic differentiation, but one of the
    /// arguments requires grad.").
    Refuse(Vec<String>),
}

/// The [`OutAutograd`] rule of the out= overload with schema `schema`, whose derivatives.yaml
/// entry (its own or its functional variant's, [`out_info`]) is `info`.
pub fn out_autograd(schema: &FunctionSchema, info: Option<&DifferentiabilityInfo>) -> OutAutograd {
    let base = schema.name.name.base.as_str();
    let undifferentiable = DONT_REQUIRE_DERIVATIVE.contains(&base);
    if info.is_none()
        && !OUT_OF_DECOMPOSED_DIFFERENTIABLE.contains(&base)
        && !undifferentiable
        && schema.returns.iter().any(|r| r.ty.is_tensor_like())
    {
        return OutAutograd::NotImplementedFallback;
    }
    let non_differentiable =
        |name: &str| info.is_some_and(|i| i.non_differentiable_arg_names.iter().any(|n| n == name));
    let inputs: Vec<String> = schema
        .arguments
        .iter()
        .filter(|a| !a.is_out && a.ty.is_tensor_like() && !non_differentiable(&a.name))
        .map(|a| a.name.clone())
        .collect();
    let od = info.and_then(|i| i.output_differentiability.clone());
    let mut outs: Vec<String> = schema
        .out_arguments()
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            a.ty.is_tensor_like()
                && od
                    .as_ref()
                    .is_none_or(|od| od.get(*i).copied().unwrap_or(false))
        })
        .map(|(_, a)| a.name.clone())
        .collect();
    if info.is_some_and(|i| i.has_derivatives() && i.uses_single_grad()) {
        outs.truncate(1);
    }
    // torchgen's differentiable outputs are the returns: an out= overload returning nothing
    // (`split_copy.Tensor_out`) is never refused.
    if schema.returns.is_empty() {
        outs.clear();
    }
    if undifferentiable || inputs.is_empty() || outs.is_empty() {
        return OutAutograd::Redispatch;
    }
    // torchgen checks the inputs, then the outs, with the same error: one check.
    OutAutograd::Refuse([inputs, outs].concat())
}

/// The derivatives.yaml entry the Autograd kernel of operator `idx` uses (torchgen's
/// `match_differentiability_info`), for [`out_autograd`].
pub fn out_info<'a>(
    nf: &NativeFunctions,
    d: &'a Derivatives,
    idx: usize,
) -> Option<&'a DifferentiabilityInfo> {
    find_info(nf, d, idx).0
}

fn uses_not_implemented_fallback(op: &Op<'_>) -> bool {
    kind(op.f) == SchemaKind::Out
        && out_autograd(&op.f.schema, op.info) == OutAutograd::NotImplementedFallback
}

/// Operators whose ADInplaceOrView kernel is written by hand (torchgen's
/// `MANUAL_AUTOGRAD_AND_TRACER` part that touches views).
pub const MANUAL_INPLACE_OR_VIEW: [&str; 2] = ["detach", "detach_"];

/// What the autograd generator needs about one operator.
struct Op<'a> {
    f: &'a GenFunction,
    idx: usize,
    info: Option<&'a DifferentiabilityInfo>,
    /// The info belongs to another variant (the functional one) of this operator.
    borrowed_info: bool,
}

fn kind(f: &GenFunction) -> SchemaKind {
    f.schema.kind()
}

/// A view operator for autograd: a functional operator whose return aliases its input and
/// whose base name is a view function (torchgen's `get_view_info`). `lift_fresh`, whose schema
/// aliases, is not one: it returns its input itself and records no view.
fn is_view(f: &GenFunction) -> bool {
    f.schema.is_view_op()
        && kind(f) == SchemaKind::Functional
        && VIEW_FUNCTION_BASES.contains(&f.schema.name.name.base.as_str())
}

fn has_composite_implicit(f: &GenFunction) -> bool {
    f.kernel(switchyard_core::DispatchKey::CompositeImplicitAutograd)
        .is_some()
}

/// torchgen's `match_differentiability_info`: an exact entry, else the functional variant's
/// (matched by signature) for in-place / out / mutable variants.
fn find_info<'a>(
    nf: &NativeFunctions,
    d: &'a Derivatives,
    idx: usize,
) -> (Option<&'a DifferentiabilityInfo>, bool) {
    if let Some(info) = d.infos.iter().find(|i| i.func == idx) {
        return (Some(info), false);
    }
    let f = &nf.functions[idx];
    if f.is_generated() && f.func.kind() == SchemaKind::Out {
        return (None, false);
    }
    let sig = f.func.signature(true, false, false);
    let functional = d.infos.iter().find(|i| {
        let g = &nf.functions[i.func].func;
        g.kind() == SchemaKind::Functional
            && g.signature(true, false, false) == sig
            && !(f.func.kind() == SchemaKind::Out
                && SWITCHYARD_ONLY_FORMULAS.contains(&g.name.to_string().as_str()))
    });
    if functional.is_some() {
        return (functional, true);
    }
    // The functional variant autogen adds to a mutable operator uses the mutable operator's
    // formula (its first returns are the mutable operator's; torchgen's
    // `match_differentiability_info`, rule 3).
    if f.is_generated() && f.func.kind() == SchemaKind::Functional {
        let mutable = d.infos.iter().find(|i| {
            let g = &nf.functions[i.func].func;
            g.kind() != SchemaKind::Functional && g.signature(true, false, false) == sig
        });
        return (mutable, mutable.is_some());
    }
    (None, false)
}

/// Every generated file of the autograd crate.
pub fn generate(
    input: &GenInput,
    nf: &NativeFunctions,
    d: &Derivatives,
) -> Result<Vec<(String, String)>, UnsupportedType> {
    let mut ops = Vec::new();
    for (idx, f) in input.functions.iter().enumerate() {
        if f.manual_kernel_registration {
            continue;
        }
        let (info, borrowed_info) = find_info(nf, d, idx);
        ops.push(Op {
            f,
            idx,
            info,
            borrowed_info,
        });
    }
    let mut nodes = String::new();
    let mut kernels = String::new();
    let mut autograd_regs = Vec::new();
    let mut view_regs = Vec::new();
    for info in &d.infos {
        if info.op.is_some() {
            nodes.push_str(&node(&input.functions[info.func], info)?);
            nodes.push('\n');
        }
    }
    for op in &ops {
        let f = op.f;
        let base = f.schema.name.name.to_string();
        let implicit = has_composite_implicit(f);
        if !implicit
            && !MANUAL_AUTOGRAD.contains(&base.as_str())
            && !uses_not_implemented_fallback(op)
        {
            let name = format!("autograd_{}", unambiguous_name(&f.schema.name));
            kernels.push_str(&autograd_kernel(op, &name, input)?);
            kernels.push('\n');
            autograd_regs.push(registration(f, &name));
        }
        if !implicit
            // torchgen's `modifies_arguments` of its ADInplaceOrView kernels: in-place and
            // out= operators, not mutable ones (`_native_batch_norm_legit` leaves the version
            // of the running statistics it writes alone, which its saved inputs rely on).
            && (is_view(f) || matches!(kind(f), SchemaKind::Inplace | SchemaKind::Out))
            && !MANUAL_INPLACE_OR_VIEW.contains(&base.as_str())
        {
            let name = format!("inplace_or_view_{}", unambiguous_name(&f.schema.name));
            // A view whose entry declares no differentiable output (`view.dtype`) is a
            // non-differentiable view: it must not inherit its base's requires_grad
            // (torchgen's `is_bw_differentiable`).
            let differentiable = op.info.is_none_or(|i| {
                i.output_differentiability
                    .as_ref()
                    .is_none_or(|od| od.iter().any(|b| *b))
            });
            kernels.push_str(&inplace_or_view_kernel(f, &name, differentiable)?);
            kernels.push('\n');
            view_regs.push(registration(f, &name));
        }
        let _ = op.idx;
    }
    Ok(vec![
        (
            "crates/autograd/src/generated/mod.rs".into(),
            format!(
                "{}//! Code generated from ops.yaml and derivatives.yaml: backward nodes, the Autograd and\n//! ADInplaceOrView kernels, and their registration.\n\n#![allow(unused_imports, missing_docs)]\n\nmod kernels;\nmod nodes;\nmod register;\n\npub use nodes::*;\npub(crate) use register::register;\n",
                gen_header("mod")
            ),
        ),
        (
            "crates/autograd/src/generated/nodes.rs".into(),
            format!(
                "{}//! Backward nodes, one per derivatives.yaml entry with formulas.\n\n{}\n{nodes}",
                gen_header("nodes"),
                NODES_PRELUDE
            ),
        ),
        (
            "crates/autograd/src/generated/kernels.rs".into(),
            format!(
                "{}//! The Autograd and ADInplaceOrView kernels of every operator.\n\n{}\n{kernels}",
                gen_header("kernels"),
                KERNELS_PRELUDE
            ),
        ),
        (
            "crates/autograd/src/generated/register.rs".into(),
            format!(
                "{}//! Registration of the generated kernels.\n\n{}\n{}",
                gen_header("register"),
                REGISTER_PRELUDE,
                register_fn(&autograd_regs, &view_regs)
            ),
        ),
    ])
}

fn gen_header(part: &str) -> String {
    header(&format!("autograd {part}")).replace(
        "from crates/ops/ops.yaml.",
        "from crates/ops/ops.yaml and crates/autograd/derivatives.yaml.",
    )
}

const NODES_PRELUDE: &str = "#![allow(non_snake_case, non_camel_case_types, unused_variables, unused_mut, unused_braces, clippy::all)]\n\n\
use std::any::Any;\n\
use std::sync::Arc;\n\
use crate::graph::{Grad, Node, NodeCore, NodeRef};\n\
use crate::manual::*;\n\
use crate::saved::SavedVariable;\n\
use crate::support::{IntoGrad, IntoGradList, copy_range, range_needed};\n\
use switchyard_core::{Device, DimVec, Error, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};\n\
use switchyard_ops::op;\n";

const KERNELS_PRELUDE: &str = "#![allow(non_snake_case, unused_variables, unused_mut, clippy::all)]\n\n\
use std::sync::Arc;\n\
use super::nodes::*;\n\
use crate::graph::{EdgeList, InputMetadata, NodeCore, NodeRef};\n\
use crate::manual::*;\n\
use crate::saved::SavedVariable;\n\
use crate::support::*;\n\
use crate::view::{CreationMeta, as_view, as_views, check_inplace, rebase_history};\n\
use switchyard_core::keys::sets;\n\
use switchyard_core::local_dispatch::{auto_dispatch_below_ad_inplace_or_view, auto_dispatch_below_autograd};\n\
use switchyard_core::{Device, DimVec, DispatchKeySet, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};\n\
use switchyard_ops::op;\n";

const REGISTER_PRELUDE: &str = "#![allow(non_snake_case)]\n\n\
use super::kernels::*;\n\
use switchyard_core::{DispatchKey, Result};\n\
use switchyard_dispatch::{Dispatcher, Kernel, Library, LibraryKind};\n\
use switchyard_ops::op;\n";

fn registration(f: &GenFunction, name: &str) -> String {
    format!(
        "    lib.impl_({:?}, Kernel::typed::<op::{}>({name}).debug({name:?}))?;\n",
        f.schema.name.unqualified(),
        unambiguous_name(&f.schema.name)
    )
}

fn register_fn(autograd: &[String], view: &[String]) -> String {
    let mut out = String::from(
        "/// Registers the generated Autograd and ADInplaceOrView kernels.\npub(crate) fn register(d: &'static Dispatcher) -> Result<()> {\n",
    );
    out.push_str(
        "    let mut lib = Library::new_on(d, LibraryKind::Impl, \"aten\", Some(DispatchKey::Autograd))?;\n",
    );
    autograd.iter().for_each(|r| out.push_str(r));
    out.push_str("    lib.leak();\n");
    out.push_str(
        "    let mut lib = Library::new_on(d, LibraryKind::Impl, \"aten\", Some(DispatchKey::ADInplaceOrView))?;\n",
    );
    view.iter().for_each(|r| out.push_str(r));
    out.push_str("    lib.leak();\n    Ok(())\n}\n");
    out
}

// ---------------------------------------------------------------------------------------------
// Saved values

/// The Rust type of a node field holding a saved value.
fn field_type(s: &SavedAttr) -> Result<String, UnsupportedType> {
    Ok(match &s.kind {
        SavedKind::Sizes | SavedKind::Strides => "DimVec".into(),
        SavedKind::Dim => "usize".into(),
        SavedKind::Numel => "i64".into(),
        SavedKind::ScalarType => "ScalarType".into(),
        SavedKind::Device => "Device".into(),
        SavedKind::Geometry => "TensorGeometry".into(),
        SavedKind::ArgsSizes => "Vec<DimVec>".into(),
        SavedKind::ArgsScalarTypes => "Vec<ScalarType>".into(),
        SavedKind::Value(ty) => value_field_type(ty)?,
    })
}

fn value_field_type(ty: &Type) -> Result<String, UnsupportedType> {
    let unsupported = || UnsupportedType(format!("saved {ty}"));
    Ok(match ty {
        Type::Base(b) => match b {
            BaseType::Tensor => "SavedVariable".into(),
            BaseType::Int | BaseType::SymInt | BaseType::DeviceIndex => "i64".into(),
            BaseType::Float => "f64".into(),
            BaseType::Bool | BaseType::SymBool => "bool".into(),
            BaseType::Str => "String".into(),
            BaseType::Scalar => "Scalar".into(),
            BaseType::ScalarType => "ScalarType".into(),
            BaseType::Layout => "Layout".into(),
            BaseType::Device => "Device".into(),
            BaseType::MemoryFormat => "MemoryFormat".into(),
            _ => return Err(unsupported()),
        },
        Type::Optional(inner) => format!("Option<{}>", value_field_type(inner)?),
        Type::List { elem, .. } => match elem.as_ref() {
            Type::Base(BaseType::Tensor) => "Vec<SavedVariable>".into(),
            Type::Optional(t) if t.is_tensor() => "Vec<Option<SavedVariable>>".into(),
            Type::Base(BaseType::Int | BaseType::SymInt) => "Vec<i64>".into(),
            Type::Base(BaseType::Float) => "Vec<f64>".into(),
            Type::Base(BaseType::Bool) => "Vec<bool>".into(),
            _ => return Err(unsupported()),
        },
        Type::CustomClass(_) => return Err(unsupported()),
    })
}

/// The expression saving `s` in the kernel. `local` is the kernel's name for the source value;
/// `output_nr` (an expression) for saved outputs; `clone_self` for `self` of an in-place
/// operator (saved as its value before the call).
fn save_expr(s: &SavedAttr, local: &str, output_nr: Option<&str>, clone_self: bool) -> String {
    if let (Some(nr), SavedKind::Value(ty)) = (output_nr, &s.kind) {
        return if is_list(ty) {
            format!(
                "{local}.iter().enumerate().map(|(i, t)| SavedVariable::output(t, {nr} + i as u32)).collect::<Result<_>>()?"
            )
        } else {
            format!("SavedVariable::output(&{local}, {nr})?")
        };
    }
    let out = "false";
    match &s.kind {
        SavedKind::Sizes => format!("{local}.sizes()"),
        SavedKind::Strides => format!("{local}.strides()"),
        SavedKind::Dim => format!("{local}.dim()"),
        SavedKind::Numel => format!("{local}.numel()"),
        SavedKind::ScalarType => format!("{local}.dtype()"),
        SavedKind::Device => format!("{local}.device()"),
        SavedKind::Geometry => format!("TensorGeometry::of({local})"),
        SavedKind::ArgsSizes => format!("{local}.iter().map(|t| t.sizes()).collect()"),
        SavedKind::ArgsScalarTypes => format!("{local}.iter().map(|t| t.dtype()).collect()"),
        SavedKind::Value(ty) => match ty {
            Type::Base(BaseType::Tensor) if clone_self => {
                format!("SavedVariable::new(&op::clone::call({local}, None)?, false)?")
            }
            Type::Base(BaseType::Tensor) => format!("SavedVariable::new(&{local}, {out})?"),
            Type::Base(BaseType::Str) => format!("{local}.to_string()"),
            Type::Optional(inner) if inner.is_tensor() => {
                format!("{local}.map(|t| SavedVariable::new(t, {out})).transpose()?")
            }
            Type::Optional(inner) if **inner == Type::Base(BaseType::Str) => {
                format!("{local}.map(str::to_string)")
            }
            Type::Optional(inner) if matches!(**inner, Type::List { .. }) => {
                format!("{local}.map(<[_]>::to_vec)")
            }
            Type::List { elem, .. } if elem.is_tensor() => {
                format!(
                    "{local}.iter().map(|t| SavedVariable::new(t, {out})).collect::<Result<_>>()?"
                )
            }
            Type::List { elem, .. } if elem.is_optional_tensor() => format!(
                "{local}.iter().map(|t| t.as_ref().map(|t| SavedVariable::new(t, {out})).transpose()).collect::<Result<_>>()?"
            ),
            Type::List { .. } => format!("{local}.to_vec()"),
            _ => local.to_string(),
        },
    }
}

/// The field's placeholder before it is saved (outputs, and inputs guarded away).
fn empty_expr(s: &SavedAttr) -> Option<String> {
    match &s.kind {
        SavedKind::Value(Type::Base(BaseType::Tensor)) => Some("SavedVariable::empty()".into()),
        SavedKind::Value(Type::Optional(_)) => Some("None".into()),
        SavedKind::Value(Type::List { .. }) => Some("Vec::new()".into()),
        SavedKind::Sizes | SavedKind::Strides => Some("DimVec::new()".into()),
        SavedKind::ArgsSizes | SavedKind::ArgsScalarTypes => Some("Vec::new()".into()),
        _ => None,
    }
}

/// The statement binding a saved field to the name a formula uses, with the type the kernel
/// had for it (tensors as references, lists as slices).
fn bind_stmt(s: &SavedAttr) -> String {
    let n = &s.name;
    let o = format!("{}_owned", n.trim_end_matches('_'));
    match &s.kind {
        SavedKind::Sizes | SavedKind::Strides => format!("let {n}: &[i64] = &this.{n};"),
        SavedKind::Geometry => format!("let {n} = &this.{n};"),
        SavedKind::ArgsSizes => format!("let {n}: &[DimVec] = &this.{n};"),
        SavedKind::ArgsScalarTypes => format!("let {n}: &[ScalarType] = &this.{n};"),
        SavedKind::Value(ty) => match ty {
            Type::Base(BaseType::Tensor) => {
                format!("let {o} = this.{n}.unpack(&node)?; let {n} = &{o};")
            }
            Type::Base(BaseType::Str) => format!("let {n} = this.{n}.as_str();"),
            Type::Optional(inner) if inner.is_tensor() => format!(
                "let {o} = match &this.{n} {{ Some(s) => Some(s.unpack(&node)?), None => None }}; let {n} = {o}.as_ref();"
            ),
            Type::Optional(inner)
                if **inner == Type::Base(BaseType::Str) || matches!(**inner, Type::List { .. }) =>
            {
                format!("let {n} = this.{n}.as_deref();")
            }
            Type::List { elem, .. } if elem.is_tensor() => format!(
                "let {o} = this.{n}.iter().map(|s| s.unpack(&node)).collect::<Result<Vec<_>>>()?; let {n} = &{o}[..];"
            ),
            Type::List { elem, .. } if elem.is_optional_tensor() => format!(
                "let {o} = this.{n}.iter().map(|s| s.as_ref().map(|s| s.unpack(&node)).transpose()).collect::<Result<Vec<_>>>()?; let {n} = &{o}[..];"
            ),
            Type::List { .. } => format!("let {n} = &this.{n}[..];"),
            _ => format!("let {n} = this.{n};"),
        },
        _ => format!("let {n} = this.{n};"),
    }
}

fn release_stmt(s: &SavedAttr) -> Option<String> {
    let n = &s.name;
    match &s.kind {
        SavedKind::Value(Type::Base(BaseType::Tensor)) => Some(format!("self.{n}.reset();")),
        SavedKind::Value(Type::Optional(inner)) if inner.is_tensor() => {
            Some(format!("if let Some(s) = &self.{n} {{ s.reset(); }}"))
        }
        SavedKind::Value(Type::List { elem, .. }) if elem.is_tensor() => {
            Some(format!("self.{n}.iter().for_each(SavedVariable::reset);"))
        }
        SavedKind::Value(Type::List { elem, .. }) if elem.is_optional_tensor() => Some(format!(
            "self.{n}.iter().flatten().for_each(SavedVariable::reset);"
        )),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Nodes

/// The differentiable inputs of an entry in schema order, with their types.
fn diff_inputs<'a>(f: &'a GenFunction, info: &DifferentiabilityInfo) -> Vec<(&'a str, &'a Type)> {
    f.schema
        .arguments
        .iter()
        .filter(|a| info.args_with_derivatives.contains(&a.name))
        .map(|a| (a.name.as_str(), &a.ty))
        .collect()
}

fn is_list(ty: &Type) -> bool {
    matches!(ty, Type::List { .. })
}

/// The node type of one entry.
fn node(f: &GenFunction, info: &DifferentiabilityInfo) -> Result<String, UnsupportedType> {
    let Some(name) = &info.op else {
        return Ok(String::new());
    };
    let inputs = diff_inputs(f, info);
    let has_list = inputs.iter().any(|(_, t)| is_list(t));
    let mut out = format!(
        "/// The backward of `{}`.\npub struct {name} {{\n    pub(crate) core: NodeCore,\n",
        schema_text(f)
    );
    let mut fields: Vec<&SavedAttr> = info.all_saved_inputs.iter().collect();
    fields.extend(info.all_saved_outputs.iter());
    for s in &fields {
        out.push_str(&format!("    pub(crate) {}: {},\n", s.name, field_type(s)?));
    }
    if has_list {
        for (n, t) in &inputs {
            if is_list(t) {
                out.push_str(&format!("    pub(crate) {}_size_: usize,\n", rust_name(n)));
            }
        }
    }
    out.push_str("}\n\n");
    out.push_str(&format!(
        "impl Node for {name} {{\n    fn name(&self) -> String {{\n        {name:?}.into()\n    }}\n\n    fn core(&self) -> &NodeCore {{\n        &self.core\n    }}\n\n    fn as_any(&self) -> &dyn Any {{\n        self\n    }}\n\n"
    ));
    let releases: Vec<String> = fields.iter().filter_map(|s| release_stmt(s)).collect();
    if !releases.is_empty() {
        out.push_str("    fn release_variables(&self) {\n");
        for r in releases {
            out.push_str(&format!("        {r}\n"));
        }
        out.push_str("    }\n\n");
    }
    out.push_str("    fn apply(self: Arc<Self>, grads: Vec<Grad>) -> Result<Vec<Grad>> {\n");
    out.push_str("        let node: NodeRef = self.clone();\n        let this = &*self;\n");
    out.push_str("        let mut grad_inputs: Vec<Grad> = vec![None; this.core.num_outputs()];\n");
    if info.uses_single_grad() {
        out.push_str("        let grad: &Tensor = match grads.first() {\n            Some(Some(g)) => g,\n            _ => return Ok(grad_inputs),\n        };\n");
    } else {
        out.push_str("        if grads.iter().all(Option::is_none) {\n            return Ok(grad_inputs);\n        }\n        let grads: &[Grad] = &grads;\n");
    }
    // Input slots.
    if has_list {
        out.push_str("        let mut offset = 0usize;\n");
        for (i, (n, t)) in inputs.iter().enumerate() {
            let r = rust_name(n);
            let len = if is_list(t) {
                format!("this.{r}_size_")
            } else {
                "1".into()
            };
            out.push_str(&format!("        let {n}_ix = offset..offset + {len};\n"));
            // The last range is not followed by another: no dead store.
            if i + 1 < inputs.len() {
                out.push_str(&format!("        offset += {len};\n"));
            }
        }
    } else {
        for (i, (n, _)) in inputs.iter().enumerate() {
            out.push_str(&format!("        let {n}_ix = {i}..{};\n", i + 1));
        }
    }
    for d in &info.derivatives {
        let needed: Vec<String> = d
            .var_names
            .iter()
            .map(|v| format!("range_needed(&this.core, &{v}_ix)"))
            .collect();
        out.push_str(&format!(
            "        // {}: {}\n",
            d.var_names.join(", "),
            d.original_formula.replace('\n', " ")
        ));
        if d.var_names.len() > 1 {
            out.push_str(&format!(
                "        let grad_input_mask = [{}];\n        if grad_input_mask.iter().any(|b| *b) {{\n",
                needed.join(", ")
            ));
        } else {
            out.push_str(&format!("        if {} {{\n", needed[0]));
        }
        let mut used: Vec<&SavedAttr> = d.saved_inputs.iter().collect();
        used.extend(d.saved_outputs.iter());
        for s in used {
            out.push_str(&format!("            {}\n", bind_stmt(s)));
        }
        let single_ty = inputs
            .iter()
            .find(|(n, _)| *n == d.var_names[0])
            .map(|(_, t)| *t);
        if d.var_names.len() == 1 {
            let r = &d.var_names[0];
            if single_ty.is_some_and(is_list) {
                out.push_str(&format!(
                    "            let r = {{ {} }};\n            copy_range(&mut grad_inputs, &{r}_ix, IntoGradList::into_grads(r))?;\n",
                    d.formula
                ));
            } else {
                out.push_str(&format!(
                    "            grad_inputs[{r}_ix.start] = IntoGrad::into_grad({{ {} }});\n",
                    d.formula
                ));
            }
        } else {
            let parts: Vec<String> = (0..d.var_names.len()).map(|i| format!("g{i}")).collect();
            out.push_str(&format!(
                "            let ({}) = {{ {} }};\n",
                parts.join(", "),
                d.formula
            ));
            for (i, r) in d.var_names.iter().enumerate() {
                out.push_str(&format!(
                    "            if grad_input_mask[{i}] {{\n                grad_inputs[{r}_ix.start] = IntoGrad::into_grad(g{i});\n            }}\n"
                ));
            }
        }
        out.push_str("        }\n");
    }
    out.push_str("        Ok(grad_inputs)\n    }\n}\n");
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Kernels

fn redispatch(f: &GenFunction) -> String {
    let args: Vec<String> = f
        .schema
        .arguments
        .iter()
        .map(|a| arg_name(&a.name))
        .collect();
    format!(
        "op::{}::redispatch(ks & sets::AFTER_AUTOGRAD, {})",
        unambiguous_name(&f.schema.name),
        args.join(", ")
    )
}

/// `requires_grad` of one argument, by type (as a Rust expression).
fn requires_grad_expr(name: &str, ty: &Type) -> Option<String> {
    let n = arg_name(name);
    if ty.is_tensor() {
        Some(format!("rg({n})"))
    } else if ty.is_optional_tensor() {
        Some(format!("rg_opt({n})"))
    } else if ty.is_tensor_list() {
        Some(format!("rg_list({n})"))
    } else if ty.is_optional_tensor_list() {
        Some(format!("rg_opt_list({n})"))
    } else {
        None
    }
}

fn edges_expr(name: &str, ty: &Type) -> String {
    let n = arg_name(name);
    if ty.is_tensor() {
        format!("push_edge(&mut next_edges, {n})?;")
    } else if ty.is_optional_tensor() {
        format!("push_edge_opt(&mut next_edges, {n})?;")
    } else if ty.is_tensor_list() {
        format!("next_edges.extend(edges_list({n})?);")
    } else {
        format!("next_edges.extend(edges_opt_list({n})?);")
    }
}

/// The outputs of a schema: (kernel local name, type, formula name).
fn outputs(f: &GenFunction) -> Vec<(String, Type, String)> {
    let names = return_names(&f.schema);
    let n = f.schema.returns.len();
    f.schema
        .returns
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let local = if n == 1 {
                "result".to_string()
            } else {
                format!("result{i}")
            };
            (local, r.ty.clone(), names[i].clone())
        })
        .collect()
}

/// The outputs that get history: tensor-like, marked differentiable, and only the first with
/// formulas that use `grad`.
fn differentiable_outputs(
    f: &GenFunction,
    info: Option<&DifferentiabilityInfo>,
) -> Vec<(String, Type, String)> {
    let od = info.and_then(|i| i.output_differentiability.clone());
    let mut outs: Vec<(String, Type, String)> = outputs(f)
        .into_iter()
        .enumerate()
        .filter(|(i, (_, ty, _))| {
            ty.is_tensor_like()
                && od
                    .as_ref()
                    .is_none_or(|od| od.get(*i).copied().unwrap_or(false))
        })
        .map(|(_, o)| o)
        .collect();
    if info.is_some_and(|i| i.has_derivatives() && i.uses_single_grad()) {
        outs.truncate(1);
    }
    outs
}

fn bind_outputs(f: &GenFunction) -> String {
    let outs = outputs(f);
    match outs.len() {
        0 => "let result = ".into(),
        1 => "let result = ".into(),
        _ => format!(
            "let ({}) = ",
            outs.iter()
                .map(|o| o.0.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn return_outputs(f: &GenFunction) -> String {
    let outs = outputs(f);
    match outs.len() {
        0 | 1 => "Ok(result)".into(),
        _ => format!(
            "Ok(({}))",
            outs.iter()
                .map(|o| o.0.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Base names of the operators whose outputs are views of an input (torchgen's
/// `VIEW_FUNCTIONS` and `RETURNS_VIEWS_OF_INPUT`, `gen_inplace_or_view_type.py`).
const VIEW_FUNCTION_BASES: [&str; 46] = [
    "numpy_T",
    "alias",
    "as_strided",
    "diagonal",
    "expand",
    "permute",
    "select",
    "slice",
    "slice_inverse",
    "split",
    "split_with_sizes",
    "squeeze",
    "t",
    "transpose",
    "unfold",
    "unsqueeze",
    "flatten",
    "view",
    "unbind",
    "_indices",
    "_values",
    "indices",
    "values",
    "_reshape_alias",
    "view_as_complex",
    "view_as_real",
    "_conj",
    "_neg_view",
    "chunk",
    "detach",
    "contiguous",
    "reshape",
    "reshape_as",
    "expand_as",
    "view_as",
    "real",
    "imag",
    "narrow",
    "movedim",
    "tensor_split",
    "swapdims",
    "swapaxes",
    "mT",
    "mH",
    "adjoint",
    "matrix_H",
];

/// Whether an in-place operator sets the history of `self` rather than rebasing it: an
/// in-place view operator (`t_`, `transpose_`, `squeeze_`, `unsqueeze_`, `as_strided_`),
/// whose base name is a view function (torchgen's `emit_history`: "rebase" only when
/// `get_view_info` is none). Such an operator changes the metadata of `self`, not its
/// values: a view stays a view of the same base, and its new `grad_fn` is the operator's own
/// node chained to its previous history. Rebasing would put a `CopySlices` on the base that
/// cuts the base's gradient with the view's new geometry, which the node does not take.
fn sets_history_in_place(f: &GenFunction) -> bool {
    kind(f) == SchemaKind::Inplace
        && VIEW_FUNCTION_BASES.contains(&f.schema.name.name.base.as_str())
}

/// Statements adding the input metadata of the differentiable outputs and setting their
/// history. `inplace`: the history of `self` is rebased (an in-place operator), or set
/// (an in-place view operator, [`sets_history_in_place`]). `checked`: an output whose dtype
/// cannot carry gradients is an error (PyTorch's `set_history` in a kernel with formulas);
/// otherwise it is left without history (the `NotImplemented` node of an operator without an
/// entry, as the autograd fallback does).
fn history(
    f: &GenFunction,
    outs: &[(String, Type, String)],
    inplace: bool,
    checked: bool,
) -> (String, String) {
    let (set, set_owned) = if checked {
        (
            "set_differentiable_history",
            "set_differentiable_history_owned",
        )
    } else {
        ("set_output_history", "set_output_history_owned")
    };
    let mut meta = String::new();
    let mut hist = String::new();
    if inplace {
        meta.push_str("        node.core.add_input_metadata(self_);\n");
        hist.push_str(if sets_history_in_place(f) {
            "        set_output_history_owned(self_, node, 0u32)?;\n"
        } else {
            "        rebase_history(self_, node)?;\n"
        });
        return (meta, hist);
    }
    let mut nr = String::from("0u32");
    for (i, (local, ty, _)) in outs.iter().enumerate() {
        let last = i + 1 == outs.len();
        if is_list(ty) {
            meta.push_str(&format!(
                "        {local}.iter().for_each(|t| node.core.add_input_metadata(t));\n"
            ));
            hist.push_str(&format!(
                "        for (i, t) in {local}.iter().enumerate() {{\n            {set}(t, &node, {nr} + i as u32)?;\n        }}\n"
            ));
            nr = format!("{nr} + {local}.len() as u32");
        } else {
            meta.push_str(&format!(
                "        node.core.add_input_metadata(&{local});\n"
            ));
            // The last output takes the node itself: one reference-count round trip less.
            hist.push_str(&if last {
                format!("        {set_owned}(&{local}, node, {nr})?;\n")
            } else {
                format!("        {set}(&{local}, &node, {nr})?;\n")
            });
            nr = format!("{nr} + 1");
        }
    }
    (meta, hist)
}

fn autograd_kernel(op: &Op<'_>, name: &str, input: &GenInput) -> Result<String, UnsupportedType> {
    let f = op.f;
    let k = kind(f);
    let base = f.schema.name.name.base.clone();
    let mut body = String::new();
    let wrap = |body: String| -> Result<String, UnsupportedType> {
        let types = args_tuple_type(&f.schema, "")?.replace("& ", "&");
        Ok(format!(
            "/// `{}`\npub(crate) fn {name}(ks: DispatchKeySet, {}: {types}) -> Result<{}> {{\n{body}}}\n",
            schema_text(f),
            pattern(f),
            output_type(&f.schema)?
        ))
    };
    // Out= overloads: torchgen's rule (`out_autograd`).
    if k == SchemaKind::Out {
        if let OutAutograd::Refuse(names) = out_autograd(&f.schema, op.info) {
            let checks: Vec<String> = names
                .iter()
                .filter_map(|n| {
                    let a = f.schema.arguments.iter().find(|a| &a.name == n)?;
                    requires_grad_expr(&a.name, &a.ty)
                })
                .collect();
            body.push_str(&format!(
                "    if is_grad_enabled() && ({}) {{\n        return Err(out_requires_grad_error({base:?}));\n    }}\n",
                checks.join(" || ")
            ));
        }
        body.push_str(&format!(
            "    let _guard = auto_dispatch_below_autograd();\n    {}\n",
            redispatch(f)
        ));
        return wrap(body);
    }
    // Other mutating non-in-place variants: no gradients through them, except mutable
    // operators with a formula (their returns are fresh, as a functional operator's).
    if k == SchemaKind::Scratch || (k == SchemaKind::Mutable && op.info.is_none()) {
        let checks: Vec<String> = f
            .schema
            .arguments
            .iter()
            .filter_map(|a| requires_grad_expr(&a.name, &a.ty))
            .collect();
        if !checks.is_empty() {
            body.push_str(&format!(
                "    if is_grad_enabled() && ({}) {{\n        return Err(out_requires_grad_error({base:?}));\n    }}\n",
                checks.join(" || ")
            ));
        }
        body.push_str(&format!(
            "    let _guard = auto_dispatch_below_autograd();\n    {}\n",
            redispatch(f)
        ));
        return wrap(body);
    }
    let inplace = k == SchemaKind::Inplace;
    let view = is_view(f);
    let guard = if inplace || view {
        "auto_dispatch_below_autograd"
    } else {
        "auto_dispatch_below_ad_inplace_or_view"
    };
    let info = op.info;
    let outs = differentiable_outputs(f, info);
    let call = format!(
        "    {}{{\n        let _guard = {guard}();\n        {}?\n    }};\n",
        bind_outputs(f),
        redispatch(f)
    );
    match info {
        // An entry without formulas: outputs never require grad.
        Some(i) if !i.has_derivatives() => {
            body.push_str(&call);
            body.push_str(&format!("    {}\n", return_outputs(f)));
        }
        Some(i) => {
            body.push_str(&with_node(f, i, op.borrowed_info, &outs, &call, inplace)?);
            body.push_str(&format!("    {}\n", return_outputs(f)));
        }
        None if outs.is_empty() && !inplace => {
            body.push_str(&call);
            body.push_str(&format!("    {}\n", return_outputs(f)));
        }
        None => {
            // No formula: a node that raises if a gradient ever reaches it.
            let tensors: Vec<(&str, &Type)> = f
                .schema
                .arguments
                .iter()
                .filter(|a| a.ty.is_tensor_like())
                .map(|a| (a.name.as_str(), &a.ty))
                .collect();
            let rg: Vec<String> = tensors
                .iter()
                .filter_map(|(n, t)| requires_grad_expr(n, t))
                .collect();
            body.push_str(&format!(
                "    let requires_grad = is_grad_enabled() && ({});\n",
                if rg.is_empty() {
                    "false".into()
                } else {
                    rg.join(" || ")
                }
            ));
            if inplace {
                body.push_str("    check_inplace(self_, requires_grad)?;\n");
            }
            body.push_str("    let grad_fn = if requires_grad {\n        let mut next_edges = EdgeList::new();\n");
            for (n, t) in &tensors {
                body.push_str(&format!("        {}\n", edges_expr(n, t)));
            }
            // PyTorch's words: torchgen leaves an operator without an entry to the boxed
            // autograd fallback, which names it by namespace and name without the overload
            // (`aten::scatter_`, `aten::set`, `aten::detach_copy`), except the operators that
            // change a tensor's storage (`set_`), whose VariableType kernel records a
            // `NotImplemented` node named by the C++ name.
            let cpp = crate::model::cpp_name(&f.schema);
            let operator = if VARIABLE_TYPE_NOT_IMPLEMENTED.contains(&cpp.as_str()) {
                cpp
            } else {
                let ns = f.schema.name.namespace.as_deref().unwrap_or("aten");
                format!("{ns}::{}", f.schema.name.name)
            };
            body.push_str(&format!(
                "        Some(NotImplemented::new({operator:?}, next_edges))\n    }} else {{\n        None\n    }};\n"
            ));
            body.push_str(&call);
            let (meta, hist) = history(f, &outs, inplace, false);
            // The node is built before the call (its saved inputs are taken then) and shared only
            // once complete: completing it inside an `Arc` would take `Arc::get_mut`, an atomic
            // compare-exchange that costs more than moving the node.
            body.push_str("    if let Some(mut node) = grad_fn {\n");
            body.push_str(&meta);
            body.push_str("        let node: NodeRef = Arc::new(node);\n");
            body.push_str(&hist);
            body.push_str("    }\n");
            body.push_str(&format!("    {}\n", return_outputs(f)));
        }
    }
    let _ = input;
    wrap(body)
}

/// The body of a kernel with a backward node: requires-grad, saves, the call, history.
fn with_node(
    f: &GenFunction,
    info: &DifferentiabilityInfo,
    _borrowed: bool,
    outs: &[(String, Type, String)],
    call: &str,
    inplace: bool,
) -> Result<String, UnsupportedType> {
    let Some(node_name) = &info.op else {
        return Ok(String::new());
    };
    let mut body = String::new();
    let inputs: Vec<(&str, &Type)> = f
        .schema
        .arguments
        .iter()
        .filter(|a| info.args_with_derivatives.contains(&a.name))
        .map(|a| (a.name.as_str(), &a.ty))
        .collect();
    let rg: Vec<String> = inputs
        .iter()
        .filter_map(|(n, t)| requires_grad_expr(n, t))
        .collect();
    // torchgen's `output_differentiability_conditions`: `_any_requires_grad &= (cond)`.
    let condition = info
        .output_differentiability_conditions
        .as_ref()
        .and_then(|c| c.first())
        .map(|c| format!(" && ({c})"))
        .unwrap_or_default();
    body.push_str(&format!(
        "    let requires_grad = is_grad_enabled() && ({}){condition};\n",
        rg.join(" || ")
    ));
    if inplace {
        body.push_str("    check_inplace(self_, requires_grad)?;\n");
    }
    body.push_str(&no_requires_grad_checks(f, info));
    let has_list = inputs.iter().any(|(_, t)| is_list(t));
    body.push_str(
        "    let grad_fn = if requires_grad {\n        let mut next_edges = EdgeList::new();\n",
    );
    for (n, t) in &inputs {
        body.push_str(&format!("        {}\n", edges_expr(n, t)));
    }
    // Edge positions of the single-tensor inputs (for guarding saves).
    let slot: BTreeMap<&str, usize> = if has_list {
        BTreeMap::new()
    } else {
        inputs
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (*n, i))
            .collect()
    };
    body.push_str(&format!("        Some({node_name} {{\n"));
    for s in &info.all_saved_inputs {
        let local = arg_name(&s.source);
        let clone_self = inplace && s.source == "self";
        let expr = save_expr(s, &local, None, clone_self);
        // A tensor used by one single-input formula is saved only if that input needs a
        // gradient (torchgen's `guard_for`).
        let users: Vec<_> = info
            .derivatives
            .iter()
            .filter(|d| d.saved_inputs.iter().any(|x| x.name == s.name))
            .collect();
        let guard = match (users.as_slice(), &s.kind, empty_expr(s)) {
            ([d], SavedKind::Value(_), Some(empty)) if d.var_names.len() == 1 => slot
                .get(d.var_names[0].as_str())
                .map(|i| (format!("next_edges[{i}].is_valid()"), empty)),
            _ => None,
        };
        match guard {
            Some((cond, empty)) => body.push_str(&format!(
                "            {}: if {cond} {{ {expr} }} else {{ {empty} }},\n",
                s.name
            )),
            None => body.push_str(&format!("            {}: {expr},\n", s.name)),
        }
    }
    for s in &info.all_saved_outputs {
        let empty = empty_expr(s).unwrap_or_else(|| "Default::default()".into());
        body.push_str(&format!("            {}: {empty},\n", s.name));
    }
    if has_list {
        for (n, t) in &inputs {
            if is_list(t) {
                body.push_str(&format!(
                    "            {}_size_: {}.len(),\n",
                    rust_name(n),
                    arg_name(n)
                ));
            }
        }
    }
    body.push_str("            core: NodeCore::with_edges(next_edges),\n        })\n    } else {\n        None\n    };\n");
    body.push_str(call);
    let (meta, hist) = history(f, outs, inplace, true);
    // The node is built before the call (its saved inputs are taken then) and shared only
    // once complete: completing it inside an `Arc` would take `Arc::get_mut`, an atomic
    // compare-exchange that costs more than moving the node.
    body.push_str("    if let Some(mut node) = grad_fn {\n");
    body.push_str(&meta);
    // Saved outputs: the output's local name in the kernel.
    let all_outs = outputs(f);
    for s in &info.all_saved_outputs {
        let local = if inplace {
            "self_".to_string()
        } else {
            all_outs
                .iter()
                .find(|(_, _, name)| *name == s.source)
                .map(|(l, _, _)| l.clone())
                .unwrap_or_else(|| "result".into())
        };
        // The output's number among the node's inputs (where its gradient arrives).
        // An output that gets no history (not differentiable) is saved like an input.
        let mut nr = Some(String::from("0u32"));
        for (l, ty, name) in outs {
            if *name == s.source {
                break;
            }
            nr = nr.map(|nr| {
                if is_list(ty) {
                    format!("{nr} + {l}.len() as u32")
                } else {
                    format!("{nr} + 1")
                }
            });
        }
        if !outs.iter().any(|(_, _, name)| *name == s.source) {
            nr = None;
        }
        let expr = save_expr(s, &local, nr.as_deref(), false);
        body.push_str(&format!("        node.{} = {expr};\n", s.name));
    }
    body.push_str("        let node: NodeRef = Arc::new(node);\n");
    body.push_str(&hist);
    body.push_str("    }\n");
    Ok(body)
}

/// torchgen's `emit_check_no_requires_grad`: in the kernel of an entry with formulas, every
/// tensor input the entry gives neither a formula nor `non_differentiable` (nor named
/// `output`, which double-backward entries take without differentiating) is refused at the
/// call when it requires grad with grad mode on ("The function 'native_batch_norm' is not
/// differentiable with respect to argument 'running_mean'. ..."), whether or not another
/// input requires grad. `non_differentiable` inputs are let through, as in torchgen.
fn no_requires_grad_checks(f: &GenFunction, info: &DifferentiabilityInfo) -> String {
    let name = crate::model::cpp_name(&f.schema);
    let mut out = String::new();
    for a in f.schema.arguments.iter().filter(|a| !a.is_out) {
        if !a.ty.is_tensor_like()
            || info.args_with_derivatives.contains(&a.name)
            || info.non_differentiable_arg_names.contains(&a.name)
            || a.name == "output"
        {
            continue;
        }
        let check = if a.ty.is_tensor() {
            "check_no_requires_grad"
        } else if a.ty.is_optional_tensor() {
            "check_no_requires_grad_opt"
        } else if a.ty.is_tensor_list() {
            "check_no_requires_grad_list"
        } else {
            "check_no_requires_grad_opt_list"
        };
        out.push_str(&format!(
            "    {check}({}, {:?}, {name:?})?;\n",
            arg_name(&a.name),
            a.name
        ));
    }
    out
}

fn inplace_or_view_kernel(
    f: &GenFunction,
    name: &str,
    differentiable: bool,
) -> Result<String, UnsupportedType> {
    let args: Vec<String> = f
        .schema
        .arguments
        .iter()
        .map(|a| arg_name(&a.name))
        .collect();
    let call = format!(
        "{{\n        let _guard = auto_dispatch_below_ad_inplace_or_view();\n        op::{}::redispatch(ks & sets::AFTER_AD_INPLACE_OR_VIEW, {})?\n    }}",
        unambiguous_name(&f.schema.name),
        args.join(", ")
    );
    let mut body = String::new();
    if is_view(f) {
        let base = f
            .schema
            .arguments
            .iter()
            .find(|a| a.annotation.as_ref().is_some_and(|an| !an.is_write))
            .map(|a| arg_name(&a.name))
            .unwrap_or_else(|| "self_".into());
        let multi = f.schema.returns.first().is_some_and(|r| is_list(&r.ty));
        body.push_str(&format!("    let out = {call};\n"));
        if multi {
            body.push_str(&format!(
                "    as_views({base}, out, CreationMeta::current_multi_output())\n"
            ));
        } else {
            body.push_str(&format!(
                "    as_view({base}, out, {differentiable}, CreationMeta::current())\n"
            ));
        }
    } else {
        for a in f.schema.arguments.iter().filter(|a| a.is_write()) {
            let n = arg_name(&a.name);
            body.push_str(&if a.ty.is_tensor() {
                format!("    check_version_bump({n})?;\n")
            } else if a.ty.is_optional_tensor() {
                format!("    if let Some(t) = {n} {{\n        check_version_bump(t)?;\n    }}\n")
            } else {
                format!("    for t in {n} {{\n        check_version_bump(t)?;\n    }}\n")
            });
        }
        body.push_str(&format!("    let result = {call};\n"));
        for a in f.schema.arguments.iter().filter(|a| a.is_write()) {
            let n = arg_name(&a.name);
            body.push_str(&if a.ty.is_tensor() {
                format!("    {n}.bump_version();\n")
            } else if a.ty.is_optional_tensor() {
                format!("    if let Some(t) = {n} {{\n        t.bump_version();\n    }}\n")
            } else {
                format!("    {n}.iter().for_each(Tensor::bump_version);\n")
            });
        }
        body.push_str("    Ok(result)\n");
    }
    let types = args_tuple_type(&f.schema, "")?.replace("& ", "&");
    Ok(format!(
        "/// `{}`\npub(crate) fn {name}(ks: DispatchKeySet, {}: {types}) -> Result<{}> {{\n{body}}}\n",
        schema_text(f),
        pattern(f),
        output_type(&f.schema)?
    ))
}

#[cfg(test)]
mod mutable_op_tests {
    use super::*;
    use crate::derivatives::parse_derivatives;
    use crate::emit::api::api_names;
    use crate::emit::from_model::from_model;
    use crate::emit::registration::generate_ops;
    use crate::{ParseOptions, parse_native_functions};

    /// A mutable operator (fresh returns, a written positional argument) with autogen's
    /// functional and out= variants, and a formula.
    const YAML: &str = "\
- func: thing(Tensor self, Tensor(a!) running, float m) -> (Tensor, Tensor)
  dispatch:
    CPU: thing
  autogen: thing_functional, thing.out
";
    const DERIVATIVES: &str = "\
- name: thing(Tensor self, Tensor(a!) running, float m) -> (Tensor, Tensor)
  self: grad.clone()
  running: non_differentiable
";

    fn kernel<'a>(code: &'a str, name: &str) -> &'a str {
        let start = code.find(&format!("fn {name}(")).unwrap();
        let end = code[start..].find("\n}\n").unwrap();
        &code[start..start + end]
    }

    #[test]
    fn mutable_operators_with_a_formula_record_a_node_and_bump_nothing() {
        let nf = parse_native_functions(YAML, "t.yaml", &ParseOptions::default()).unwrap();
        let d = parse_derivatives(DERIVATIVES, "d.yaml", &nf).unwrap();
        let input = from_model(&nf);
        let files = generate(&input, &nf, &d).unwrap();
        let kernels = &files
            .iter()
            .find(|(p, _)| p.ends_with("kernels.rs"))
            .unwrap()
            .1;
        // The mutable operator differentiates like a functional one: a node, no refusal.
        let thing = kernel(kernels, "autograd_thing");
        assert!(thing.contains("Some(ThingBackward0 {"), "{thing}");
        assert!(!thing.contains("out_requires_grad_error"), "{thing}");
        // Autogen's functional variant borrows the mutable operator's formula (torchgen's
        // rule 3); its out= variant has no entry, so no kernel: it runs through the autograd
        // fallback (torchgen's AutogradNotImplemented registration).
        let functional = kernel(kernels, "autograd_thing_functional");
        assert!(functional.contains("Some(ThingBackward0 {"), "{functional}");
        assert!(!kernels.contains("fn autograd_thing_out("));
        // No ADInplaceOrView kernel for the mutable operator (torchgen bumps the versions
        // written by in-place and out= operators only); the out= variant has one.
        assert!(!kernels.contains("fn inplace_or_view_thing("));
        assert!(kernels.contains("fn inplace_or_view_thing_out("));
    }

    #[test]
    fn autogen_out_of_a_mutable_operator_copies_only_its_outs() {
        let nf = parse_native_functions(YAML, "t.yaml", &ParseOptions::default()).unwrap();
        let input = from_model(&nf);
        let code = generate_ops(&input).unwrap();
        let out = kernel(&code, "wrapper_CompositeExplicitAutograd_thing_out");
        // The functional variant returns the two results and the new `running`; the out=
        // kernel copies the two results and leaves `running` alone (as torchgen's does).
        assert!(
            out.contains("let r = crate::op::thing_functional::call(self_, running, m)?;"),
            "{out}"
        );
        assert!(out.contains("(r.0, r.1)"), "{out}");
        assert!(!out.contains("copy_to_out(running"), "{out}");
        // The user API names `thing_functional` after its whole name.
        let names = api_names(&input);
        let i = input
            .functions
            .iter()
            .position(|f| f.schema.name.name.functional_overload)
            .unwrap();
        assert_eq!(names[i], "thing_functional");
    }
}
