//! Kernel wrappers and their registration at the dispatcher.
//!
//! Every kernel is registered as a typed wrapper `fn(DispatchKeySet, (args..)) -> Result<..>`
//! named `wrapper_<Key>_<operator>` that calls the hand-written kernel (or, for structured
//! operators, meta + impl; for generated operators, a generated body). The ops crate's file
//! defines every schema and registers the Meta, composite and BackendSelect kernels; each
//! backend crate's file registers that backend's kernels (the Autograd and ADInplaceOrView
//! kernels are switchyard-autograd's, written by `emit::autograd`).

use super::input::{GenFunction, GenGroup, GenInput};
use super::operators::schema_text;
use super::rust::{
    UnsupportedType, arg_name, args_tuple_type, fn_name, meta_fn_name, op_type_name, output_type,
    tuple, unambiguous_name,
};
use super::writer::{header, lines};
use switchyard_core::DispatchKey;
use switchyard_schema::{Argument, SchemaKind};

/// Where generated code finds things, from the crate it is generated into.
#[derive(Clone, Copy, Debug)]
pub struct Paths {
    /// The `op` module.
    pub op: &'static str,
    /// The kernels of this crate.
    pub native: &'static str,
    /// Meta functions.
    pub meta: &'static str,
    /// Structured runtime helpers.
    pub structured: &'static str,
    /// Runtime helpers of generated kernels.
    pub runtime: &'static str,
}

/// Paths from inside `switchyard-ops`.
pub const OPS_PATHS: Paths = Paths {
    op: "crate::op",
    native: "crate::native",
    meta: "crate::meta",
    structured: "crate::structured",
    runtime: "crate::runtime",
};

/// Paths from a backend crate.
pub const BACKEND_PATHS: Paths = Paths {
    op: "switchyard_ops::op",
    native: "crate::native",
    meta: "switchyard_ops::meta",
    structured: "switchyard_ops::structured",
    runtime: "switchyard_ops::runtime",
};

struct Wrapper {
    key: DispatchKey,
    /// `name.overload` as registered.
    operator: String,
    /// The marker type in `op::`.
    op_type: String,
    name: String,
    code: String,
}

impl Wrapper {
    fn new(key: DispatchKey, f: &GenFunction, name: String, code: String) -> Wrapper {
        Wrapper {
            key,
            operator: f.schema.name.unqualified(),
            op_type: op_type_name(&f.schema),
            name,
            code,
        }
    }
}

pub(super) fn wrapper_name(key: DispatchKey, f: &GenFunction) -> String {
    format!("wrapper_{}_{}", key.name(), unambiguous_name(&f.schema))
}

pub(super) fn pattern(f: &GenFunction) -> String {
    tuple(
        &f.schema
            .arguments
            .iter()
            .map(|a| arg_name(&a.name))
            .collect::<Vec<_>>(),
    )
}

/// `fn <name>(ks, <pattern>: <types>) -> Result<<out>> {\n<body>}` with `ks` named `ks` when
/// the body uses it.
pub(super) fn wrapper_fn(
    name: &str,
    f: &GenFunction,
    uses_ks: bool,
    body: &str,
) -> Result<String, UnsupportedType> {
    let types = args_tuple_type(&f.schema, "")?.replace("& ", "&");
    let ks = if uses_ks { "ks" } else { "_ks" };
    Ok(format!(
        "/// `{}`\nfn {name}({ks}: DispatchKeySet, {}: {types}) -> Result<{}> {{\n{body}}}\n",
        schema_text(f),
        pattern(f),
        output_type(&f.schema)?
    ))
}

fn arg_by_name<'a>(f: &'a GenFunction, name: &str) -> Option<&'a Argument> {
    f.schema.arguments.iter().find(|a| a.name == name)
}

/// Plain kernel call: `native::k(args...)`.
fn native_wrapper(
    key: DispatchKey,
    f: &GenFunction,
    kernel: &str,
    paths: Paths,
) -> Result<Wrapper, UnsupportedType> {
    let name = wrapper_name(key, f);
    let args: Vec<String> = f
        .schema
        .arguments
        .iter()
        .map(|a| arg_name(&a.name))
        .collect();
    let body = format!(
        "    {}::{}({})\n",
        paths.native,
        fn_name(kernel),
        args.join(", ")
    );
    Ok(Wrapper::new(
        key,
        f,
        name.clone(),
        wrapper_fn(&name, f, false, &body)?,
    ))
}

pub(super) fn outs_names(f: &GenFunction) -> Vec<String> {
    f.schema
        .arguments
        .iter()
        .filter(|a| a.is_out)
        .map(|a| arg_name(&a.name))
        .collect()
}

/// Structured `CPU` impls whose functional variant allocates its own output: (impl kernel,
/// functional kernel). The functional wrapper runs the meta function and then
/// `native::<functional kernel>(meta, <functional arguments>) -> Result<Tensor>` instead of
/// `create_out` + the impl. For kernels that write every element of a large output: they can
/// write it into new memory with `Tensor::new_with` and skip the zero-fill of `create_out`
/// (PyTorch's functional wrappers allocate with `empty`, uninitialised). The kernel must give
/// the output the meta function describes; the in-place and out= variants are unchanged.
pub const CPU_FUNCTIONAL_OUTPUT_KERNELS: [(&str, &str); 2] = [
    ("softmax_cpu_out", "softmax_cpu"),
    ("log_softmax_cpu_out", "log_softmax_cpu"),
];

/// The functional kernel that allocates its own output for structured impl `kernel` at `key`
/// ([`CPU_FUNCTIONAL_OUTPUT_KERNELS`]).
fn functional_output_kernel(key: DispatchKey, kernel: &str) -> Option<&'static str> {
    CPU_FUNCTIONAL_OUTPUT_KERNELS
        .iter()
        .find(|(k, _)| key == DispatchKey::CPU && *k == kernel)
        .map(|(_, f)| *f)
}

/// The structured expansion of one group member at `key` (CPU: meta + impl; Meta: meta only).
fn structured_wrapper(
    key: DispatchKey,
    input: &GenInput,
    g: &GenGroup,
    member: usize,
    paths: Paths,
) -> Result<Wrapper, UnsupportedType> {
    let f = &input.functions[member];
    let functional = &input.functions[g.functional];
    let out_op = &input.functions[g.out];
    let name = wrapper_name(key, f);
    let meta_name = meta_fn_name(&functional.schema);
    let meta_args = args_named_as_in(functional, f)?;
    let n_out = out_op.schema.returns.len().max(1);
    let kind = f.kind();
    let outs_expr = match kind {
        SchemaKind::Functional => "Outs::Functional".to_string(),
        SchemaKind::Inplace => "Outs::Inplace(self_)".to_string(),
        _ => format!("Outs::Out(&[{}])", outs_names(f).join(", ")),
    };
    let s = paths.structured;
    let mut body = meta_call(paths, &meta_name, &meta_args, &outs_expr);
    let impl_kernel = out_op.kernel(key).filter(|_| key != DispatchKey::Meta);
    if kind == SchemaKind::Functional
        && let Some(own) = impl_kernel.and_then(|k| functional_output_kernel(key, k))
    {
        body.push_str(&format!(
            "    {}::{}(meta, {})\n",
            paths.native,
            fn_name(own),
            meta_args.join(", ")
        ));
        return Ok(Wrapper::new(
            key,
            f,
            name.clone(),
            wrapper_fn(&name, f, false, &body)?,
        ));
    }
    // The tensors the impl writes, and what the wrapper returns.
    let targets: Vec<String> = match kind {
        SchemaKind::Functional => create_outs(paths, n_out, &mut body),
        SchemaKind::Inplace => {
            body.push_str(&format!(
                "    {s}::check_inplace(self_, meta.output(0)?)?;\n"
            ));
            vec!["self_".to_string()]
        }
        _ => {
            let outs = outs_names(f);
            for (i, o) in outs.iter().enumerate() {
                body.push_str(&format!("    {s}::resize_out({o}, meta.output({i})?)?;\n"));
            }
            outs
        }
    };
    if let Some(kernel) = impl_kernel {
        let mutating = kind != SchemaKind::Functional;
        let mut impl_outputs = Vec::new();
        for (i, t) in targets.iter().enumerate() {
            if mutating {
                body.push_str(&format!(
                    "    let proxy{i} = {s}::maybe_create_proxy({t}, meta.output({i})?)?;\n"
                ));
                impl_outputs.push(format!("proxy{i}.as_ref().unwrap_or({t})"));
            } else {
                impl_outputs.push(format!("&{t}"));
            }
        }
        let impl_args = args_named_as_in(out_op, f)?;
        body.push_str(&format!(
            "    {}::{}(meta, {}{}{})?;\n",
            paths.native,
            fn_name(kernel),
            impl_args.join(", "),
            if impl_args.is_empty() { "" } else { ", " },
            impl_outputs.join(", ")
        ));
        if mutating {
            for (i, t) in targets.iter().enumerate() {
                body.push_str(&format!(
                    "    if let Some(p) = &proxy{i} {{\n        {s}::copy_back({t}, p)?;\n    }}\n"
                ));
            }
        }
    } else {
        body.push_str("    let _ = meta;\n");
    }
    let ret = match kind {
        SchemaKind::Functional => targets.join(", "),
        _ => targets
            .iter()
            .map(|t| format!("{t}.clone()"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    body.push_str(&format!(
        "    Ok({})\n",
        if targets.len() == 1 {
            ret
        } else {
            format!("({ret})")
        }
    ));
    Ok(Wrapper::new(
        key,
        f,
        name.clone(),
        wrapper_fn(&name, f, false, &body)?,
    ))
}

/// The non-out arguments of `target`, each named as the argument of `f` with its name (a
/// structured group's members share their argument names).
fn args_named_as_in(target: &GenFunction, f: &GenFunction) -> Result<Vec<String>, UnsupportedType> {
    target
        .schema
        .arguments
        .iter()
        .filter(|a| !a.is_out)
        .map(|a| {
            arg_by_name(f, &a.name)
                .map(|m| arg_name(&m.name))
                .ok_or_else(|| UnsupportedType(format!("{} lacks argument {}", f.schema, a.name)))
        })
        .collect()
}

/// A structured kernel's first lines: the meta function `meta_name` on `args` and `outs_expr`.
/// The result is borrowed, not moved out with `?`: moving a `Meta` out of its `Result` copied
/// it through the stack, a store-forwarding stall on every call.
fn meta_call(paths: Paths, meta_name: &str, args: &[String], outs_expr: &str) -> String {
    format!(
        "    let meta = {}::{meta_name}({}{}{outs_expr});\n    let meta = {}::meta_ok(&meta)?;\n",
        paths.meta,
        args.join(", "),
        if args.is_empty() { "" } else { ", " },
        paths.structured
    )
}

/// Appends the creation of a functional kernel's `n_out` outputs from the meta result to
/// `body`; returns their names.
fn create_outs(paths: Paths, n_out: usize, body: &mut String) -> Vec<String> {
    (0..n_out)
        .map(|i| {
            body.push_str(&format!(
                "    let out{i} = {}::create_out(meta.output({i})?)?;\n",
                paths.structured
            ));
            format!("out{i}")
        })
        .collect()
}

/// Whether structured functional operator `f` takes its tensors only in lists (`cat`): called
/// with empty lists it has no dispatch key, and PyTorch's dispatcher then runs the operator's
/// slot for `Undefined`.
fn tensors_only_in_lists(f: &GenFunction) -> bool {
    let args = &f.schema.arguments;
    args.iter()
        .any(|a| a.ty.is_tensor_list() || a.ty.is_optional_tensor_list())
        && !args
            .iter()
            .any(|a| a.ty.is_tensor() || a.ty.is_optional_tensor())
}

/// torchgen's CompositeExplicitAutogradNonFunctional expansion of the functional member of
/// structured group `g` (its `structured_<meta>_default_backend_functional`): the meta
/// function, the outputs it describes, then the out= operator through the dispatcher. Made
/// only for operators whose tensors all come in lists ([`tensors_only_in_lists`]): their
/// `Undefined` slot takes it, so `cat([])` raises the meta function's "torch.cat(): expected a
/// non-empty list of Tensors" as PyTorch's does, rather than the dispatcher's "There were no
/// tensor arguments". (Every other structured operator has a tensor argument, so its
/// `Undefined` slot is never reached; they get none, and backends without their own kernel
/// keep their fallback.)
fn default_backend_wrapper(
    input: &GenInput,
    g: &GenGroup,
    paths: Paths,
) -> Result<Wrapper, UnsupportedType> {
    let key = DispatchKey::CompositeExplicitAutogradNonFunctional;
    let f = &input.functions[g.functional];
    let out_op = &input.functions[g.out];
    let name = wrapper_name(key, f);
    let meta_name = meta_fn_name(&f.schema);
    let args = args_named_as_in(f, f)?;
    let mut body = meta_call(paths, &meta_name, &args, "Outs::Functional");
    let outs = create_outs(paths, out_op.schema.returns.len().max(1), &mut body);
    // The out= operator's own arguments, then its outputs (last in every out= schema).
    let mut call_args = args_named_as_in(out_op, f)?;
    call_args.extend(outs.iter().map(|o| format!("&{o}")));
    body.push_str(&format!(
        "    {}::{}::call({})?;\n    Ok({})\n",
        paths.op,
        op_type_name(&out_op.schema),
        call_args.join(", "),
        if outs.len() == 1 {
            outs[0].clone()
        } else {
            format!("({})", outs.join(", "))
        }
    ));
    Ok(Wrapper::new(
        key,
        f,
        name.clone(),
        wrapper_fn(&name, f, false, &body)?,
    ))
}

/// The arguments of a call to `functional` from its group member `f` (an out= or in-place
/// operator): matched by name; a factory out= variant's tensor options come from its out tensor.
pub(super) fn functional_args(
    f: &GenFunction,
    functional: &GenFunction,
) -> Result<Vec<String>, UnsupportedType> {
    let outs = outs_names(f);
    let first_out = outs.first().cloned().unwrap_or_default();
    functional
        .schema
        .arguments
        .iter()
        .map(|a| match arg_by_name(f, &a.name) {
            Some(m) => Ok(arg_name(&m.name)),
            // Factory out= variants take their tensor options from the out tensor.
            None => match a.name.as_str() {
                "dtype" => Ok(format!("Some({first_out}.dtype())")),
                "layout" => Ok(format!("Some({first_out}.layout())")),
                "device" => Ok(format!("Some({first_out}.device())")),
                "pin_memory" => Ok("None".to_string()),
                other => Err(UnsupportedType(format!(
                    "{}: no value for {other}",
                    f.schema
                ))),
            },
        })
        .collect()
}

/// The body of an out= operator generated by autogen: run the functional operator, resize the
/// outputs and copy into them.
fn generated_out_body(
    f: &GenFunction,
    functional: &GenFunction,
    paths: Paths,
) -> Result<String, UnsupportedType> {
    let args = functional_args(f, functional)?;
    let mut call = format!(
        "{}::{}::call({})?",
        paths.op,
        op_type_name(&functional.schema),
        args.join(", ")
    );
    // The functional variant of a mutable operator also returns the new values of the
    // arguments it mutates; torchgen's out= kernel copies only the results its out arguments
    // name, and leaves those arguments as they were (`_fused_moving_avg_obs_fq_helper.out`).
    let n_outs = outs_names(f).len();
    let n_results = functional.schema.returns.len();
    if n_results > n_outs {
        let kept: Vec<String> = (0..n_outs).map(|i| format!("r.{i}")).collect();
        call = format!(
            "{{\n        let r = {call};\n        {}\n    }}",
            if kept.len() == 1 {
                kept[0].clone()
            } else {
                format!("({})", kept.join(", "))
            }
        );
    }
    Ok(copy_into_outs_body(f, &call, paths.runtime, &OUT_COPY))
}

/// The runtime helpers an out= wrapper body calls: the CPU-side ones (`copy_to_out`, ...) or
/// an external backend's (`copy_to_backend_out`, ..., which check every out before writing any).
pub(super) struct OutCopy {
    /// Copies one result into its out tensor (resizing it).
    pub(super) one: &'static str,
    /// Copies a list result into its out list.
    pub(super) list: &'static str,
    /// Checks one out against its result before anything is written, for several outs.
    pub(super) check: Option<&'static str>,
}

/// CPU-side out= wrappers.
pub(super) const OUT_COPY: OutCopy = OutCopy {
    one: "copy_to_out",
    list: "copy_list_to_out",
    check: None,
};

/// The body shared by every generated out= wrapper (here and in backend registrations): bind
/// the functional `call`'s results, copy each into its out argument (resizing it), return the
/// outs. The results are named `functional_result*` so they cannot shadow an argument.
pub(super) fn copy_into_outs_body(f: &GenFunction, call: &str, rt: &str, copy: &OutCopy) -> String {
    let outs = outs_names(f);
    let list_out = f
        .schema
        .arguments
        .iter()
        .any(|a| a.is_out && a.ty.is_tensor_list());
    let returns_nothing = f.schema.returns.is_empty();
    if outs.len() == 1 {
        let o = &outs[0];
        let one = if list_out { copy.list } else { copy.one };
        let ret = if list_out || returns_nothing {
            "()".to_string()
        } else {
            format!("{o}.clone()")
        };
        return format!(
            "    let functional_result = {call};\n    {rt}::{one}({o}, &functional_result)?;\n    Ok({ret})\n"
        );
    }
    let results: Vec<String> = (0..outs.len())
        .map(|i| format!("functional_result{i}"))
        .collect();
    let mut b = format!("    let {} = {call};\n", tuple(&results));
    if let Some(check) = copy.check {
        for (o, r) in outs.iter().zip(&results) {
            b.push_str(&format!("    {rt}::{check}({o}, &{r})?;\n"));
        }
    }
    for (o, r) in outs.iter().zip(&results) {
        b.push_str(&format!("    {rt}::{}({o}, &{r})?;\n", copy.one));
    }
    b.push_str(&format!(
        "    Ok({})\n",
        tuple(
            &outs
                .iter()
                .map(|o| format!("{o}.clone()"))
                .collect::<Vec<_>>()
        )
    ));
    b
}

/// The body of a functional operator generated from its in-place or mutable sibling: clone
/// what it mutates, run it on the clones, return them.
fn generated_functional_body(
    f: &GenFunction,
    target: &GenFunction,
    paths: Paths,
) -> Result<String, UnsupportedType> {
    let rt = paths.runtime;
    let mut body = String::new();
    let mut args = Vec::new();
    let mut clones = Vec::new();
    for a in &target.schema.arguments {
        let src = arg_by_name(f, &a.name)
            .map(|m| arg_name(&m.name))
            .ok_or_else(|| UnsupportedType(format!("{}: no value for {}", f.schema, a.name)))?;
        if a.is_write() {
            let c = format!("{src}_clone");
            body.push_str(&format!("    let {c} = {rt}::clone_arg({src})?;\n"));
            args.push(format!("&{c}"));
            clones.push(c);
        } else {
            args.push(src);
        }
    }
    let call = format!(
        "{}::{}::call({})?",
        paths.op,
        op_type_name(&target.schema),
        args.join(", ")
    );
    let kept: Vec<String> = target
        .schema
        .returns
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.is_write())
        .map(|(i, _)| format!("r{i}"))
        .collect();
    if target.schema.returns.is_empty() || kept.is_empty() {
        body.push_str(&format!("    {call};\n"));
    } else {
        let all: Vec<String> = (0..target.schema.returns.len())
            .map(|i| format!("r{i}"))
            .collect();
        body.push_str(&format!(
            "    let {} = {call};\n",
            if all.len() == 1 {
                all[0].clone()
            } else {
                tuple(&all)
            }
        ));
    }
    let results: Vec<String> = kept.into_iter().chain(clones).collect();
    body.push_str(&format!(
        "    Ok({})\n",
        if results.len() == 1 {
            results[0].clone()
        } else {
            tuple(&results)
        }
    ));
    Ok(body)
}

/// The body of a standard `<view>_copy` operator: the view, then a contiguous copy.
fn view_copy_body(
    f: &GenFunction,
    view: &GenFunction,
    paths: Paths,
) -> Result<String, UnsupportedType> {
    let rt = paths.runtime;
    let args: Vec<String> = view
        .schema
        .arguments
        .iter()
        .map(|a| {
            arg_by_name(f, &a.name)
                .map(|m| arg_name(&m.name))
                .ok_or_else(|| UnsupportedType(format!("{}: no value for {}", f.schema, a.name)))
        })
        .collect::<Result<_, _>>()?;
    let call = format!(
        "{}::{}::call({})",
        paths.op,
        op_type_name(&view.schema),
        args.join(", ")
    );
    let returns_list = view
        .schema
        .returns
        .first()
        .is_some_and(|r| r.ty.is_tensor_list());
    Ok(
        if view.schema.name.name.base == "view" && view.schema.name.overload_name.is_empty() {
            // view_copy works even where the view would not (PyTorch uses reshape then).
            format!(
                "    let viewed = match {call} {{\n        Ok(v) => v,\n        Err(_) => {}::reshape::call({})?,\n    }};\n    {rt}::clone_contiguous(&viewed)\n",
                paths.op,
                args.join(", ")
            )
        } else if returns_list {
            format!("    {call}?.iter().map({rt}::clone_contiguous).collect()\n")
        } else {
            format!("    {rt}::clone_contiguous(&{call}?)\n")
        },
    )
}

fn generated_wrapper(
    key: DispatchKey,
    input: &GenInput,
    idx: usize,
    paths: Paths,
) -> Result<Wrapper, UnsupportedType> {
    let f = &input.functions[idx];
    let name = wrapper_name(key, f);
    let body = if let Some(view) = f.view_copy_of {
        view_copy_body(f, &input.functions[view], paths)?
    } else {
        let g = input
            .group_of(idx)
            .ok_or_else(|| UnsupportedType(format!("generated {} has no group", f.schema)))?;
        match f.kind() {
            SchemaKind::Out => generated_out_body(f, &input.functions[g.functional], paths)?,
            SchemaKind::Functional => {
                let target = g
                    .inplace
                    .filter(|i| !input.functions[*i].generated)
                    .or(g.mutable)
                    .ok_or_else(|| {
                        UnsupportedType(format!(
                            "generated {} has no in-place or mutable sibling",
                            f.schema
                        ))
                    })?;
                generated_functional_body(f, &input.functions[target], paths)?
            }
            other => {
                return Err(UnsupportedType(format!(
                    "cannot generate a {other:?} kernel for {}",
                    f.schema
                )));
            }
        }
    };
    Ok(Wrapper::new(
        key,
        f,
        name.clone(),
        wrapper_fn(&name, f, false, &body)?,
    ))
}

fn backend_select_wrapper(f: &GenFunction, paths: Paths) -> Result<Wrapper, UnsupportedType> {
    let key = DispatchKey::BackendSelect;
    let name = wrapper_name(key, f);
    let arg = |n: &str| {
        arg_by_name(f, n)
            .map(|a| arg_name(&a.name))
            .unwrap_or_else(|| "None".into())
    };
    let tensors: Vec<String> = f
        .schema
        .arguments
        .iter()
        .filter(|a| a.ty.is_tensor_like())
        .map(|a| {
            let n = arg_name(&a.name);
            if a.ty.is_tensor() {
                format!("{n}.key_set()")
            } else if a.ty.is_optional_tensor() {
                format!("{n}.map_or(DispatchKeySet::EMPTY, |t| t.key_set())")
            } else {
                format!("{n}.iter().flatten().fold(DispatchKeySet::EMPTY, |k, t| k | t.key_set())")
            }
        })
        .collect();
    let tensor_ks = if tensors.is_empty() {
        "None".to_string()
    } else {
        format!("Some({})", tensors.join(" | "))
    };
    let args: Vec<String> = f
        .schema
        .arguments
        .iter()
        .map(|a| arg_name(&a.name))
        .collect();
    let body = format!(
        "    let ks = backend_select_key_set({}, {}, {}, {tensor_ks})?;\n    {}::{}::redispatch(ks, {})\n",
        arg("dtype"),
        arg("layout"),
        arg("device"),
        paths.op,
        op_type_name(&f.schema),
        args.join(", ")
    );
    Ok(Wrapper::new(
        key,
        f,
        name.clone(),
        wrapper_fn(&name, f, false, &body)?,
    ))
}

fn structured_group(input: &GenInput, idx: usize) -> Option<&GenGroup> {
    input.group_of(idx).filter(|g| g.structured)
}

fn registration_fn(crate_name: &str, defs: &[String], wrappers: &[Wrapper]) -> String {
    let mut keys: Vec<DispatchKey> = wrappers.iter().map(|w| w.key).collect();
    keys.sort();
    keys.dedup();
    let mut out = String::from(
        "/// Registers every definition and kernel of this file.\nfn register(d: &'static Dispatcher) -> Result<()> {\n",
    );
    if !defs.is_empty() {
        out.push_str("    let mut defs = Library::new_on(d, LibraryKind::Def, \"aten\", None)?;\n");
        for s in defs {
            out.push_str(&format!("    defs.def({s:?})?;\n"));
        }
        out.push_str("    defs.leak();\n");
    }
    for key in keys {
        out.push_str(&format!(
            "    let mut lib = Library::new_on(d, LibraryKind::Impl, \"aten\", Some(DispatchKey::{}))?;\n",
            key.name()
        ));
        for w in wrappers.iter().filter(|w| w.key == key) {
            out.push_str(&format!(
                "    lib.impl_({:?}, Kernel::typed::<op::{}>({}).debug({:?}))?;\n",
                w.operator, w.op_type, w.name, w.name
            ));
        }
        out.push_str("    lib.leak();\n");
    }
    out.push_str("    Ok(())\n}\n\n");
    out.push_str(&format!(
        "// A failure is recorded: every operator lookup and boxed call then fails naming it.\n\
         #[linkme::distributed_slice(STATIC_REGISTRATIONS)]\n\
         static REGISTER: StaticRegistration = StaticRegistration {{ name: {crate_name:?}, register }};\n"
    ));
    out
}

const OPS_KEYS: [DispatchKey; 4] = [
    DispatchKey::CompositeImplicitAutograd,
    DispatchKey::CompositeExplicitAutograd,
    DispatchKey::CompositeExplicitAutogradNonFunctional,
    DispatchKey::Meta,
];

/// `crates/ops/src/generated/register.rs`: schemas and the Meta / composite / BackendSelect
/// kernels.
pub fn generate_ops(input: &GenInput) -> Result<String, UnsupportedType> {
    let paths = OPS_PATHS;
    let mut wrappers = Vec::new();
    let mut defs = Vec::new();
    for (i, f) in input.functions.iter().enumerate() {
        defs.push(schema_text(f));
        if f.manual_kernel_registration {
            continue;
        }
        if let Some(g) = structured_group(input, i) {
            wrappers.push(structured_wrapper(DispatchKey::Meta, input, g, i, paths)?);
            if i == g.functional && tensors_only_in_lists(f) {
                wrappers.push(default_backend_wrapper(input, g, paths)?);
            }
        } else {
            for key in OPS_KEYS {
                if let Some(kernel) = f.kernel(key) {
                    // A standard `<view>_copy` gets its body generated at
                    // CompositeExplicitAutogradNonFunctional only (torchgen's
                    // `GenCompositeViewCopyKernel`); its kernels at other keys (`narrow_copy`'s
                    // Meta kernel) are written by hand.
                    let generated_view_copy = f.view_copy_of.is_some()
                        && key == DispatchKey::CompositeExplicitAutogradNonFunctional;
                    wrappers.push(if f.generated || generated_view_copy {
                        generated_wrapper(key, input, i, paths)?
                    } else {
                        native_wrapper(key, f, kernel, paths)?
                    });
                }
            }
        }
        if f.schema.tensor_options().is_some()
            && f.kernel(DispatchKey::CompositeImplicitAutograd).is_none()
        {
            wrappers.push(backend_select_wrapper(f, paths)?);
        }
    }
    let mut out = header("register");
    out.push_str(
        "//! Operator definitions and the kernels of switchyard-ops: composite and Meta kernels, structured\n\
         //! Meta kernels and BackendSelect kernels of factories (the ADInplaceOrView kernels that bump\n\
         //! version counters and track views are switchyard-autograd's).\n\n\
         #![allow(non_snake_case, clippy::too_many_arguments, clippy::type_complexity, clippy::let_unit_value)]\n\n\
         use crate::op;\n\
         use crate::structured::Outs;\n\
         use switchyard_core::keys::sets;\n\
         use switchyard_core::{Device, DispatchKey, DispatchKeySet, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};\n\
         use switchyard_dispatch::backend_select::backend_select_key_set;\n\
         use switchyard_dispatch::{Dispatcher, Kernel, Library, LibraryKind, STATIC_REGISTRATIONS, StaticRegistration};\n\n",
    );
    out.push_str(&registration_fn("switchyard-ops", &defs, &wrappers));
    out.push('\n');
    out.push_str(&lines(wrappers.into_iter().map(|w| w.code + "\n")));
    Ok(out)
}

/// `crates/<backend>/src/generated/register.rs`: the kernels at `key` (structured ones expanded).
pub fn generate_backend(
    input: &GenInput,
    key: DispatchKey,
    crate_name: &str,
) -> Result<String, UnsupportedType> {
    let paths = BACKEND_PATHS;
    let mut wrappers = Vec::new();
    for (i, f) in input.functions.iter().enumerate() {
        if f.manual_kernel_registration {
            continue;
        }
        match structured_group(input, i) {
            Some(g) if input.functions[g.out].kernel(key).is_some() => {
                wrappers.push(structured_wrapper(key, input, g, i, paths)?);
            }
            Some(_) => {}
            None => {
                if let Some(kernel) = f.kernel(key) {
                    wrappers.push(native_wrapper(key, f, kernel, paths)?);
                }
            }
        }
    }
    let mut out = header("register_backend");
    out.push_str(&format!(
        "//! The `{}` kernels of {crate_name}, registered at the dispatcher.\n\n\
         #![allow(non_snake_case, clippy::too_many_arguments, clippy::type_complexity, clippy::let_unit_value)]\n\n\
         use switchyard_core::{{Device, DispatchKey, DispatchKeySet, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor}};\n\
         use switchyard_dispatch::{{Dispatcher, Kernel, Library, LibraryKind, STATIC_REGISTRATIONS, StaticRegistration}};\n\
         use switchyard_ops::op;\n\
         use switchyard_ops::structured::Outs;\n\n",
        key.name()
    ));
    out.push_str(&registration_fn(crate_name, &[], &wrappers));
    out.push('\n');
    out.push_str(&lines(wrappers.into_iter().map(|w| w.code + "\n")));
    Ok(out)
}
