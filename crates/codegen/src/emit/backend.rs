//! The Rust code generated for an external backend crate from its backend yaml
//! (`gen_backend_stubs.py`, `shared/reference/codegen.md` §4.3–4.5).
//!
//! Three files go into the output directory:
//!
//! * `native_functions.rs`: the trait the backend implements (PyTorch's
//!   `<Backend>NativeFunctions.h`), named by `class_name` (default
//!   `<backend key>NativeFunctions`), with one associated function per kernel listed under
//!   `supported`/`full_codegen`, then per kernel listed under `autograd`. Each has the operator's
//!   dispatcher signature with the Rust types of the typed handle `op::X` (no defaults, out
//!   arguments last, `&Tensor` for every tensor, `i64` for `SymInt`) and returns `Result<..>`.
//!   A kernel of the `autograd` list takes first the key set it was called with
//!   (`ks: DispatchKeySet`, as PyTorch's `VariableType` kernels take a `c10::DispatchKeySet`):
//!   it sits at `Autograd<backend>`, above the backend, and continues below the autograd keys
//!   with `op::X::redispatch(ks & sets::AFTER_AUTOGRAD, ..)`; a kernel at the backend key has
//!   nothing below it to redispatch to and does not get it.
//!   Rust has no overloading, so an item is named by the operator's unambiguous name (`abs`,
//!   `add_Tensor`, `add__Tensor`, `add_out`, `max_dim`), the name of its `op::` marker type,
//!   rather than by PyTorch's kernel name (`add` for both `add.Tensor` and `add.Scalar`); the
//!   kernel name is in the item's doc. `symint` has no effect on types (sizes are `i64`).
//! * `register.rs`: `register::<K>(&mut Library)` registers, for an implementation `K` of the
//!   trait, every kernel at the backend key (or at `Autograd<backend>` for `autograd` entries),
//!   each through a typed wrapper `wrapper_<Key>_<op>::<K>`; plus a generated in-place or out=
//!   wrapper for every group member the backend does not implement whose functional member it
//!   does (§4.5): it calls the backend's functional kernel, checks the result against the
//!   mutated arguments as the CPU's kernels check theirs (an in-place `self` keeps its shape
//!   and an out= tensor may receive only a safe cast, every one checked before any is
//!   changed; the one tensor a `pointwise` operator writes is checked for memory overlap with
//!   itself and its inputs, as TensorIterator checks it, which PyTorch's wrappers do not),
//!   then copies the result into `self` (`switchyard_ops::runtime::copy_to_backend_self`)
//!   or resizes and copies it into the out arguments (`copy_to_backend_out`), and returns the
//!   mutated argument(s). The copies run inside the call's ADInplaceOrView kernel, below
//!   its key, so the call bumps the version counter once, as PyTorch's does. At
//!   `Autograd<backend>` the wrappers pass their key set on to the functional autograd kernel,
//!   and the copy runs above `ADInplaceOrView` and the autograd keys: `copy_` records the
//!   in-place change in the graph (`self` gets the history of the result) and bumps the
//!   version once; an out= wrapper there follows the generated Autograd out= kernels' rule
//!   (`emit::autograd::out_autograd`): it first refuses, while grad mode is on, differentiable
//!   arguments that require grad with their error ("relu(): functions with out=... arguments
//!   don't support automatic differentiation, ...") when the operator is differentiable, only
//!   runs when it is not, and is not generated for an out= overload without a derivatives.yaml
//!   entry (autogen's `relu.out`), which runs through the autograd fallback. Kernels
//!   the backend gives are used as they are; ungrouped operators (every view) get no wrapper;
//!   `use_out_as_primary: true` turns the wrappers off; mutable (`foo.mutable`) members never
//!   get one.
//! * `mod.rs`: declares both and re-exports the trait, `register` and `library`.

use super::autograd::{OutAutograd, out_autograd, out_info};
use super::input::{GenFunction, GenInput};
use super::operators::schema_text;
use super::registration::{
    OutCopy, copy_into_outs_body, functional_args, outs_names, wrapper_fn,
    wrapper_name as registration_wrapper_name,
};
use super::rust::{
    UnsupportedType, arg_name, arg_type, fn_name, op_type_name, output_type, tuple,
    unambiguous_name,
};
use super::writer::lines;
use crate::backend::{BackendKey, BackendYaml};
use crate::derivatives::Derivatives;
use crate::{GroupedItem, NativeFunctions};
use std::path::PathBuf;
use switchyard_core::DispatchKey;
use switchyard_schema::{Argument, SchemaKind};

/// A problem generating a backend's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendGenError(pub String);

impl std::fmt::Display for BackendGenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<UnsupportedType> for BackendGenError {
    fn from(e: UnsupportedType) -> Self {
        BackendGenError(format!("cannot generate Rust for schema type {}", e.0))
    }
}

/// What a registration does for one operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKernelKind {
    /// The backend's own kernel (a trait item).
    Explicit,
    /// A generated in-place wrapper around the functional kernel.
    GeneratedInplace,
    /// A generated out= wrapper around the functional kernel.
    GeneratedOut,
}

/// One registration of the generated `register` function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendRegistration {
    /// Index of the operator in the model.
    pub function: usize,
    /// `name.overload` as registered.
    pub operator: String,
    /// The dispatch key.
    pub key: DispatchKey,
    /// What is registered.
    pub kind: BackendKernelKind,
}

fn known(key: BackendKey) -> Result<DispatchKey, BackendGenError> {
    match key {
        BackendKey::Known(k) => Ok(k),
        BackendKey::TorchgenOnly(n) => Err(BackendGenError(format!(
            "the dispatch key {n} is known to torchgen but not to switchyard's dispatcher: no code can register kernels there"
        ))),
    }
}

/// The registrations, in torchgen's order: grouped order (functional, out, in-place, mutable
/// within a group); backend key first, then the autograd key.
///
/// `d`, the autograd layer's derivatives.yaml parsed against `nf`, decides the out= wrappers
/// at the autograd key by the generated Autograd kernels' rule
/// ([`out_autograd`](super::autograd::out_autograd)): an out= overload that the autograd
/// fallback handles on the CPU (autogen's `relu.out`) gets no wrapper there either, so it runs
/// through that fallback (and the backend's CPU fallback) and fails at backward. Without `d`
/// every out= wrapper is generated and refuses arguments that require grad.
pub fn registrations(
    yaml: &BackendYaml,
    nf: &NativeFunctions,
    d: Option<&Derivatives>,
) -> Result<Vec<BackendRegistration>, BackendGenError> {
    let backend = known(yaml.backend_key)?;
    let autograd = yaml.autograd_key.map(known).transpose()?;
    let mut out = Vec::new();
    let indices: Vec<(DispatchKey, bool)> = std::iter::once((backend, false))
        .chain(autograd.map(|k| (k, true)))
        .collect();
    for (key, is_autograd) in indices {
        let has = |f: usize| {
            if is_autograd {
                yaml.has_autograd_kernel(f)
            } else {
                yaml.has_kernel(f)
            }
        };
        for item in &nf.grouped {
            let (members, group): (Vec<usize>, _) = match item {
                GroupedItem::Group(g) => (g.functions().collect(), Some(g)),
                GroupedItem::Function(f) => (vec![*f], None),
            };
            for f in members {
                // As torchgen's RegisterDispatchKey: declared, never registered.
                if nf.functions[f].manual_kernel_registration {
                    continue;
                }
                // A lazy backend keeps a member's own CompositeExplicitAutograd kernel
                // (`copy_` → `_copy_from`): the generated wrapper would end in `copy_` itself.
                let composite_member = yaml.is_lazy()
                    && nf.functions[f]
                        .dispatch
                        .iter()
                        .any(|(k, _)| *k == DispatchKey::CompositeExplicitAutograd);
                let kind = if has(f) {
                    Some(BackendKernelKind::Explicit)
                } else if !composite_member
                    && group.is_some_and(|g| !yaml.use_out_as_primary && has(g.functional))
                {
                    match nf.functions[f].kind() {
                        SchemaKind::Inplace => Some(BackendKernelKind::GeneratedInplace),
                        SchemaKind::Out => Some(BackendKernelKind::GeneratedOut),
                        _ => None,
                    }
                } else {
                    None
                };
                let fallback = kind == Some(BackendKernelKind::GeneratedOut)
                    && is_autograd
                    && out_rule(nf, d, f) == Some(OutAutograd::NotImplementedFallback);
                if let (Some(kind), false) = (kind, fallback) {
                    out.push(BackendRegistration {
                        function: f,
                        operator: nf.functions[f].func.name.unqualified(),
                        key,
                        kind,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// The autograd rule of out= overload `f` (`None` without derivatives).
fn out_rule(nf: &NativeFunctions, d: Option<&Derivatives>, f: usize) -> Option<OutAutograd> {
    d.map(|d| out_autograd(&nf.functions[f].func, out_info(nf, d, f)))
}

/// The header of every generated backend file.
pub(super) fn header(source: &str) -> String {
    format!(
        "// @generated by `cargo run -p switchyard-codegen -- backend --source-yaml {source}` from {source} and crates/ops/ops.yaml.\n\
         // Do not edit: change the backend yaml and regenerate; `backend --check` fails when this file is stale.\n\n"
    )
}

fn item_name(f: &GenFunction) -> String {
    fn_name(&unambiguous_name(&f.schema))
}

/// `name: type` parameters of a trait item; an autograd kernel's start with the key set.
fn params(f: &GenFunction, autograd: bool) -> Result<String, UnsupportedType> {
    let ks = autograd.then(|| Ok("ks: DispatchKeySet".to_string()));
    Ok(ks
        .into_iter()
        .chain(f.schema.arguments.iter().map(|a| {
            Ok(format!(
                "{}: {}",
                arg_name(&a.name),
                arg_type(&a.ty, "")?.replace("& ", "&")
            ))
        }))
        .collect::<Result<Vec<_>, UnsupportedType>>()?
        .join(", "))
}

/// The arguments of a call of trait item `K::<f>` from a wrapper: the wrapper's key set first
/// for an autograd kernel, then `args`.
fn call_args(autograd: bool, args: Vec<String>) -> String {
    let ks = autograd.then(|| "ks".to_string());
    ks.into_iter().chain(args).collect::<Vec<_>>().join(", ")
}

/// The trait's items: the backend index then the autograd index, each in grouped order.
fn trait_items(yaml: &BackendYaml, nf: &NativeFunctions) -> Vec<(usize, BackendKey)> {
    let order: Vec<usize> = nf
        .grouped
        .iter()
        .flat_map(|item| match item {
            GroupedItem::Group(g) => g.functions().collect::<Vec<_>>(),
            GroupedItem::Function(f) => vec![*f],
        })
        .collect();
    let mut items: Vec<(usize, BackendKey)> = order
        .iter()
        .filter(|&&f| yaml.has_kernel(f))
        .map(|&f| (f, yaml.backend_key))
        .collect();
    if let Some(key) = yaml.autograd_key {
        items.extend(
            order
                .iter()
                .filter(|&&f| yaml.has_autograd_kernel(f))
                .map(|&f| (f, key)),
        );
    }
    items
}

fn trait_file(
    yaml: &BackendYaml,
    nf: &NativeFunctions,
    input: &GenInput,
    source: &str,
) -> Result<String, BackendGenError> {
    let mut out = header(source);
    out.push_str(&format!(
        "//! The kernels the `{}` backend implements, as the trait [`{}`].\n\n\
         #![allow(non_snake_case, unused_imports, clippy::too_many_arguments, clippy::type_complexity)]\n\n\
         use switchyard_core::{{Device, DispatchKeySet, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor}};\n\n",
        yaml.backend, yaml.class_name
    ));
    out.push_str(&format!(
        "/// The kernels of the `{}` backend listed in its yaml, one associated function per operator\n\
         /// with the operator's dispatcher signature (the argument and output types of `op::<name>`).\n\
         /// Items are named by the operator's unambiguous name (`add_Tensor`; Rust has no overloading);\n\
         /// each doc gives the schema and PyTorch's kernel name. A kernel registered at an `Autograd`\n\
         /// key takes first the key set it was called with, to continue below the autograd keys with\n\
         /// `op::<name>::redispatch(ks & sets::AFTER_AUTOGRAD, ..)`. Register an implementation with\n\
         /// [`register`](super::register::register).\n",
        yaml.backend
    ));
    out.push_str(&format!("pub trait {} {{\n", yaml.class_name));
    let mut first = true;
    for (function, key) in trait_items(yaml, nf) {
        let f = &input.functions[function];
        let kernel = yaml
            .supported
            .iter()
            .chain(&yaml.autograd)
            .find(|k| k.function == function)
            .map(|k| k.kernel.as_str())
            .unwrap_or_default();
        if !first {
            out.push('\n');
        }
        first = false;
        let autograd = Some(key) == yaml.autograd_key;
        let redispatch = if autograd {
            format!(
                "\n    ///\n    /// `ks` is the key set the call reached this kernel with; continue below the autograd\n    /// keys with `op::{}::redispatch(ks & sets::AFTER_AUTOGRAD, ..)`.\n",
                op_type_name(&f.schema)
            )
        } else {
            "\n".to_string()
        };
        let (generated, end) = match super::lazy::trait_default_body(yaml, input, function) {
            Some(call) => (
                "\n    ///\n    /// Generated (`full_codegen`): the default body is the lazy trace kernel.\n",
                format!(" {{\n        {call}\n    }}\n"),
            ),
            None => ("", ";\n".to_string()),
        };
        let redispatch = if generated.is_empty() {
            redispatch
        } else {
            format!("{}{generated}", redispatch.trim_end_matches('\n'))
        };
        out.push_str(&format!(
            "    /// `{}`\n    ///\n    /// Kernel `{kernel}`, registered at `{}`.{redispatch}    fn {}({}) -> Result<{}>{end}",
            schema_text(f),
            key.name(),
            item_name(f),
            params(f, autograd)?,
            output_type(&f.schema)?
        ));
    }
    out.push_str("}\n");
    Ok(out)
}

fn wrapper_name(key: DispatchKey, f: &GenFunction) -> String {
    registration_wrapper_name(key, f)
}

/// `requires_grad` of one argument, by type (as a Rust expression on core's flag).
fn requires_grad_expr(a: &Argument) -> Option<String> {
    let n = arg_name(&a.name);
    if a.ty.is_tensor() {
        Some(format!("{n}.requires_grad()"))
    } else if a.ty.is_optional_tensor() {
        Some(format!("{n}.is_some_and(Tensor::requires_grad)"))
    } else if a.ty.is_tensor_list() {
        Some(format!("{n}.iter().any(Tensor::requires_grad)"))
    } else if a.ty.is_optional_tensor_list() {
        Some(format!("{n}.iter().flatten().any(Tensor::requires_grad)"))
    } else {
        None
    }
}

/// The body of a generated in-place / out= wrapper (§4.5); `autograd` for a wrapper at
/// `Autograd<backend>`, which passes its key set on and, for out=, first refuses arguments
/// that require grad.
fn generated_body(
    f: &GenFunction,
    functional: &GenFunction,
    kind: BackendKernelKind,
    autograd: bool,
    pointwise: bool,
    rule: Option<OutAutograd>,
) -> Result<String, UnsupportedType> {
    let call = format!(
        "K::{}({})?",
        item_name(functional),
        call_args(autograd, functional_args(f, functional)?)
    );
    let rt = "switchyard_ops::runtime";
    let overlap_inputs = if pointwise { overlap_inputs(f) } else { None };
    if kind == BackendKernelKind::GeneratedInplace {
        let selfs: Vec<String> = f
            .schema
            .arguments
            .iter()
            .filter(|a| a.is_write())
            .map(|a| arg_name(&a.name))
            .collect();
        return Ok(if selfs.len() == 1 {
            let s = &selfs[0];
            let copy = match &overlap_inputs {
                Some(inputs) => format!(
                    "{rt}::copy_to_backend_self_checked({s}, &functional_result, &[{inputs}])"
                ),
                None => format!("{rt}::copy_to_backend_self({s}, &functional_result)"),
            };
            format!("    let functional_result = {call};\n    {copy}?;\n    Ok({s}.clone())\n")
        } else {
            let results: Vec<String> = (0..selfs.len())
                .map(|i| format!("functional_result{i}"))
                .collect();
            let mut b = format!("    let {} = {call};\n", tuple(&results));
            // Every argument is checked before any is written.
            for (s, r) in selfs.iter().zip(&results) {
                b.push_str(&format!("    {rt}::check_backend_self({s}, &{r})?;\n"));
            }
            for (s, r) in selfs.iter().zip(&results) {
                b.push_str(&format!("    {rt}::copy_to_backend_self({s}, &{r})?;\n"));
            }
            b.push_str(&format!(
                "    Ok({})\n",
                tuple(
                    &selfs
                        .iter()
                        .map(|s| format!("{s}.clone()"))
                        .collect::<Vec<_>>()
                )
            ));
            b
        });
    }
    let mut body = String::new();
    if autograd {
        // The generated Autograd out= kernels' rule (`out_autograd`); without derivatives,
        // every argument is checked.
        let checked: Option<Vec<String>> = match rule {
            Some(OutAutograd::Refuse(names)) => Some(names),
            Some(_) => None,
            None => Some(f.schema.arguments.iter().map(|a| a.name.clone()).collect()),
        };
        if let Some(names) = checked {
            let checks: Vec<String> = f
                .schema
                .arguments
                .iter()
                .filter(|a| names.contains(&a.name))
                .filter_map(requires_grad_expr)
                .collect();
            let requires_grad = if checks.is_empty() {
                "false".to_string()
            } else {
                checks.join(" || ")
            };
            body.push_str(&format!(
                "    {rt}::check_backend_autograd_out({:?}, {requires_grad})?;\n",
                f.schema.name.name.base,
            ));
        }
    }
    if let Some(b) = outs_and_mutated_args_body(f, functional, &call, rt) {
        body.push_str(&b);
        return Ok(body);
    }
    match overlap_inputs {
        Some(inputs) if !f.schema.returns.is_empty() => {
            let o = &outs_names(f)[0];
            body.push_str(&format!(
                "    let functional_result = {call};\n    {rt}::copy_to_backend_out_checked({o}, &functional_result, &[{inputs}])?;\n    Ok({o}.clone())\n"
            ));
        }
        _ => body.push_str(&copy_into_outs_body(f, &call, rt, &BACKEND_OUT_COPY)),
    }
    Ok(body)
}

/// The out= wrapper of a group whose functional member is the `_functional` variant of a
/// mutable operator (`_native_batch_norm_legit.out` around `_native_batch_norm_legit_functional`):
/// that variant returns the out= results followed by the new value of each argument the
/// operator mutates besides its outs (`running_mean_out`, `running_var_out`, in argument order,
/// as torchgen's functional signature names them). Every out and every mutated argument is
/// checked against its result before any is written; then the outs are resized and written and
/// the mutated arguments written in place, as the CPU's out= kernel leaves them. (PyTorch's
/// generated wrapper copies the outs only, losing the running statistics' update.) `None` for
/// other operators.
fn outs_and_mutated_args_body(
    f: &GenFunction,
    functional: &GenFunction,
    call: &str,
    rt: &str,
) -> Option<String> {
    let outs = outs_names(f);
    let mutated: Vec<String> = f
        .schema
        .arguments
        .iter()
        .filter(|a| a.is_write() && !a.is_out)
        .map(|a| arg_name(&a.name))
        .collect();
    let all_tensors = f
        .schema
        .arguments
        .iter()
        .filter(|a| a.is_write())
        .all(|a| a.ty.is_tensor());
    if mutated.is_empty()
        || !all_tensors
        || outs.is_empty()
        || functional.schema.returns.len() != outs.len() + mutated.len()
    {
        return None;
    }
    let results: Vec<String> = (0..functional.schema.returns.len())
        .map(|i| format!("functional_result{i}"))
        .collect();
    let (out_results, mutated_results) = results.split_at(outs.len());
    let mut b = format!("    let {} = {call};\n", tuple(&results));
    for (o, r) in outs.iter().zip(out_results) {
        b.push_str(&format!("    {rt}::check_backend_out({o}, &{r})?;\n"));
    }
    for (m, r) in mutated.iter().zip(mutated_results) {
        b.push_str(&format!("    {rt}::check_backend_self({m}, &{r})?;\n"));
    }
    for (o, r) in outs.iter().zip(out_results) {
        b.push_str(&format!("    {rt}::copy_to_backend_out({o}, &{r})?;\n"));
    }
    for (m, r) in mutated.iter().zip(mutated_results) {
        b.push_str(&format!("    {rt}::copy_to_backend_self({m}, &{r})?;\n"));
    }
    let ret: Vec<String> = outs.iter().map(|o| format!("{o}.clone()")).collect();
    b.push_str(&format!(
        "    Ok({})\n",
        if f.schema.returns.is_empty() {
            "()".to_string()
        } else if ret.len() == 1 {
            ret[0].clone()
        } else {
            tuple(&ret)
        }
    ));
    Some(b)
}

/// For a `pointwise` operator writing one tensor (an in-place `self` or one out= tensor): the
/// tensors it reads, as the elements of a `&[Option<&Tensor>]` (`Some(other)`, an optional
/// as it is). Its generated wrapper checks memory overlap with them as TensorIterator's
/// `compute_mem_overlaps` does on the CPU: the written tensor may not be expanded ("more than
/// one element of the written-to tensor refers to a single memory location") nor share part of
/// its memory with an input. The functional kernel and the copy alone would accept both (the
/// copy goes to a device's `_copy_from`, which checks nothing), and give values no eager
/// kernel gives. `None` for other operators.
fn overlap_inputs(f: &GenFunction) -> Option<String> {
    let args = &f.schema.arguments;
    let writes: Vec<&Argument> = args.iter().filter(|a| a.is_write()).collect();
    if !matches!(writes.as_slice(), [w] if w.ty.is_tensor()) {
        return None;
    }
    let inputs: Vec<String> = args
        .iter()
        .filter(|a| !a.is_write())
        .filter_map(|a| {
            let n = arg_name(&a.name);
            if a.ty.is_tensor() {
                Some(format!("Some({n})"))
            } else if a.ty.is_optional_tensor() {
                Some(n)
            } else {
                None
            }
        })
        .collect();
    Some(inputs.join(", "))
}

/// The helpers of an external backend's out= wrappers: every out argument is checked against
/// its result before any is resized and written.
const BACKEND_OUT_COPY: OutCopy = OutCopy {
    one: "copy_to_backend_out",
    list: "copy_list_to_backend_out",
    check: Some("check_backend_out"),
};

fn register_file(
    yaml: &BackendYaml,
    nf: &NativeFunctions,
    input: &GenInput,
    regs: &[BackendRegistration],
    source: &str,
    d: Option<&Derivatives>,
) -> Result<String, BackendGenError> {
    let tr = &yaml.class_name;
    let bound = format!("K: {tr}");
    let autograd_key = yaml.autograd_key.map(known).transpose()?;
    let mut wrappers = Vec::new();
    let mut calls = Vec::new();
    for r in regs {
        let f = &input.functions[r.function];
        let name = wrapper_name(r.key, f);
        let autograd = Some(r.key) == autograd_key;
        let body = match r.kind {
            BackendKernelKind::Explicit => format!(
                "    K::{}({})\n",
                item_name(f),
                call_args(
                    autograd,
                    f.schema
                        .arguments
                        .iter()
                        .map(|a| arg_name(&a.name))
                        .collect()
                )
            ),
            kind => {
                let g = nf
                    .group_of(r.function)
                    .ok_or_else(|| BackendGenError(format!("{} has no group", f.schema)))?;
                let pointwise = nf.functions[r.function].has_tag("pointwise");
                let rule = out_rule(nf, d, r.function);
                generated_body(
                    f,
                    &input.functions[g.functional],
                    kind,
                    autograd,
                    pointwise,
                    rule,
                )?
            }
        };
        let what = match r.kind {
            BackendKernelKind::Explicit => "the backend's kernel",
            BackendKernelKind::GeneratedInplace => {
                "generated: the functional kernel, then a copy into `self`"
            }
            BackendKernelKind::GeneratedOut => {
                "generated: the functional kernel, then a resize and copy into the out arguments"
            }
        };
        let code = wrapper_fn(&format!("{name}<{bound}>"), f, autograd, &body)?.replacen(
            "`\nfn ",
            &format!("` ({what})\nfn "),
            1,
        );
        wrappers.push(code);
        calls.push(format!(
            "    lib.impl_({:?}, Kernel::typed::<op::{}>({name}::<K>).debug({:?}).for_key(DispatchKey::{}))?;\n",
            r.operator,
            op_type_name(&f.schema),
            name,
            r.key.name()
        ));
    }
    let keys = match yaml.autograd_key {
        Some(a) => format!("`{}` and `{}`", yaml.backend_key.name(), a.name()),
        None => format!("`{}`", yaml.backend_key.name()),
    };
    let mut out = header(source);
    out.push_str(&format!(
        "//! The registration of the `{}` backend's kernels (implemented by a [`{tr}`]) at {keys},\n\
         //! with generated in-place and out= wrappers where it gives only the functional kernel.\n\n\
         #![allow(non_snake_case, unused_imports, clippy::too_many_arguments, clippy::type_complexity, clippy::let_unit_value)]\n\n\
         use super::native_functions::{tr};\n\
         use switchyard_core::{{Device, DispatchKey, DispatchKeySet, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor}};\n\
         use switchyard_dispatch::{{Dispatcher, Kernel, Library, LibraryKind}};\n\
         use switchyard_ops::op;\n\n",
        yaml.backend
    ));
    out.push_str(&format!(
        "/// Registers `K`'s kernels into `lib`, each at its own key ({keys}; every kernel carries\n\
         /// its key, so `lib` must be an `Impl` library of namespace `aten` with no key or with the\n\
         /// backend's key when there are no autograd kernels). They stay registered while `lib` lives.\n\
         pub fn register<{bound}>(lib: &mut Library) -> Result<()> {{\n"
    ));
    out.push_str(&calls.concat());
    out.push_str("    Ok(())\n}\n\n");
    out.push_str(&format!(
        "/// A library on `dispatcher` holding `K`'s kernels ([`register`]); dropping it deregisters\n\
         /// them, [`Library::leak`] keeps them for the rest of the process.\n\
         pub fn library<{bound}>(dispatcher: &'static Dispatcher) -> Result<Library> {{\n\
         \x20   let mut lib = Library::new_on(dispatcher, LibraryKind::Impl, \"aten\", None)?;\n\
         \x20   register::<K>(&mut lib)?;\n\
         \x20   Ok(lib)\n\
         }}\n\n"
    ));
    out.push_str(&lines(wrappers.into_iter().map(|w| w + "\n")));
    Ok(out)
}

/// The files generated for a backend (paths relative to the output directory, contents).
/// `source` names the backend yaml in the headers.
/// `d` as for [`registrations`].
pub fn generate_backend_files(
    yaml: &BackendYaml,
    nf: &NativeFunctions,
    input: &GenInput,
    source: &str,
    d: Option<&Derivatives>,
) -> Result<Vec<(PathBuf, String)>, BackendGenError> {
    let regs = registrations(yaml, nf, d)?;
    let tr = &yaml.class_name;
    let (lazy_files, lazy_decls) = super::lazy::generate_lazy_files(yaml, nf, input, source)?;
    let module = format!(
        "{}//! Code generated from the `{}` backend yaml: the kernel trait [`{tr}`] and its registration.\n\n\
         pub mod native_functions;\n\
         pub mod register;\n{lazy_decls}\n\
         pub use native_functions::{tr};\n\
         // A backend uses one of the two (a library of its own, or registration into one).\n\
         #[allow(unused_imports)]\n\
         pub use register::{{library, register}};\n",
        header(source),
        yaml.backend
    );
    let mut files = vec![
        ("mod.rs".into(), module),
        (
            "native_functions.rs".into(),
            trait_file(yaml, nf, input, source)?,
        ),
        (
            "register.rs".into(),
            register_file(yaml, nf, input, &regs, source, d)?,
        ),
    ];
    files.extend(lazy_files);
    Ok(files)
}
