//! The functionalization layer's generated code (torchgen's `gen_functionalization_type`):
//! the kernels at the `Functionalize` key of `switchyard-functionalize`, from `ops.yaml`.
//!
//! * **mutating operators** (in-place, out=, other mutable-argument operators) with a functional
//!   variant of equal `signature()` (torchgen's grouping): sync and unwrap the inputs; plain
//!   mutated arguments → call the operator below the layer (a functional non-mutated argument
//!   is then PyTorch's "mutating a non-functional tensor with a functional tensor" error); else
//!   call the functional variant below, `replace_` + `commit_update` + `sync` each mutated
//!   argument with its new value (checked first as eager checks in-place `self` and out=
//!   arguments: no resize of `self`, a castable result dtype; out= may resize; then eager's
//!   memory-overlap checks on the wrappers' eager geometry, see [`OverlapCheck`]), return the
//!   mutated arguments. A CompositeImplicitAutograd functional variant (`linear`,
//!   `softmax.int`) is not called below but decomposed above, on the wrappers, and its
//!   results unwrapped: its operators are functionalized as the user's would be (PyTorch
//!   reaches the same by redispatching through the composite with the key still included).
//!   Operators without a functional
//!   variant are listed in a comment of `register.rs` and keep reaching the fallback, which
//!   refuses them by name;
//! * **view operators whose inverse is a `*_scatter` operator** (derived from ops.yaml:
//!   `<base>_scatter(Tensor self, Tensor src, <the view's other arguments>)`), and the views
//!   named in [`VIEWS_WITH_INVERSES`] (inverse `crate::inverses::<name>_inverse`): record a
//!   `ViewMeta` (forward: the view, or its `*_copy` when views are not reapplied; reverse: the
//!   inverse) and return a view wrapper; their in-place forms (`as_strided_`) mutate the
//!   wrapper's view chain instead;
//! * **CompositeImplicitAutograd views and mutating operators**, and those tagged
//!   `maybe_aliasing_or_mutating` (`batch_norm`: its schema hides the writes): their composite
//!   kernel, registered at `Functionalize` too, so that they decompose before anything is
//!   recorded also when the autograd keys are excluded (torchgen's "composite view ops in the
//!   functionalization pass"). Other composite operators use the fallback;
//! * **the functional variants of those mutation groups** that reach the layer: a typed
//!   pass-through kernel (unwrap, call below, wrap: the boxed fallback's work without boxing the
//!   arguments, plan §7.4), falling back to the boxed fallback when an input's value has another
//!   layout than its wrapper. Other functional operators use the fallback.
//!
//! Generated files: `mod.rs`, `views.rs`, `mutations_{0..3}.rs` and `pass_through_{0,1}.rs`
//! (operators dealt round-robin, so the crate's codegen units build in parallel),
//! `composite.rs`, `register.rs`.

use std::collections::HashMap;
use std::fmt::Write as _;

use switchyard_core::DispatchKey;
use switchyard_schema::{Argument, BaseType, FunctionSchema, SchemaKind, Type};

use super::input::{GenFunction, GenInput};
use super::operators::schema_text;
use super::registration::pattern;
use super::rust::{
    UnsupportedType, arg_name, args_tuple_type, default_expr, fn_name, meta_fn_name, output_type,
};
use super::writer::header;
use crate::{NativeFunctions, unambiguous_name};

/// Operators whose `Functionalize` kernel is written by hand in
/// `crates/functionalize/src/manual.rs` (plan §3.5; torchgen's
/// `MUTABLE_OPS_NOT_USING_FUNCTIONALIZATION` and the hand-written kernels of
/// `FunctionalizeFallbackKernel.cpp`), by full name: their other overloads (`lift.out`,
/// `_to_copy.out`, ...) are ordinary mutating operators and get generated kernels.
pub const MANUAL_FUNCTIONALIZE: [&str; 8] = [
    "resize_",
    "resize_as_",
    "set_.source_Tensor",
    "lift",
    "lift_fresh",
    "lift_fresh_copy",
    "_to_copy",
    "_unsafe_view",
];

/// View operators (full names, `transpose.int`) without a `*_scatter` inverse whose inverse is
/// hand-written in `crates/functionalize/src/inverses.rs` as `<unambiguous name>_inverse(base,
/// mutated, mode, [out_index,] <view arguments>)`. A view listed here gets a generated kernel
/// (and its in-place form too); one not listed keeps reaching the fallback, which refuses it.
/// Filled in as the inverses land.
pub const VIEWS_WITH_INVERSES: [&str; 16] = [
    "view",
    "view.dtype",
    "permute",
    "t",
    "transpose.int",
    "unsqueeze",
    "squeeze",
    "squeeze.dim",
    "squeeze.dims",
    "expand",
    "split.Tensor",
    "split_with_sizes",
    "unbind.int",
    "alias",
    "detach",
    "unfold",
];

/// out= operators (full names) whose eager kernel computes in `out`'s dtype when no `dtype` is
/// given (their meta functions' `infer_dtype_from_optional`: a Bool `out` of `sum` over
/// integers is `any(x != 0)`, not the Long sum cast to Bool), with the helper of
/// `crates/functionalize/src/support.rs` giving the functional variant that dtype.
pub const DTYPE_FROM_OUT: [(&str, &str); 6] = [
    ("sum.IntList_out", "dtype_or_out"),
    ("prod.int_out", "dtype_or_out"),
    ("cumsum.out", "dtype_or_out"),
    ("cumprod.out", "dtype_or_out"),
    ("mean.out", "mean_dtype_or_out"),
    ("mean.dtype_out", "mean_dtype_out_dtype"),
];

/// How many `mutations_<n>.rs` shards the mutation kernels are dealt into.
pub const MUTATION_SHARDS: usize = 4;

/// How many `pass_through_<n>.rs` shards the pass-through kernels are dealt into.
pub const PASS_THROUGH_SHARDS: usize = 2;

/// Which of eager's memory-overlap checks a mutation kernel runs before it commits (plan §6
/// `inplace_meta_check`): the layer computes on separate values, so only these checks, on the
/// wrappers' eager geometry, give eager's errors for writes into expanded views and for inputs
/// partially overlapping the written tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverlapCheck {
    /// Eager checks nothing (`fill_`, `zero_`, reductions, ...), or the kernel cannot tell.
    None,
    /// A `pointwise` operator: its in-place `self` or out= argument goes through
    /// TensorIterator's `compute_mem_overlaps`, after the shape and dtype checks.
    Elementwise,
    /// `copy_`: its own checks, before its shape checks.
    Copy,
}

impl OverlapCheck {
    /// The check eager runs for the operator of full name `name`, tagged `pointwise` or not.
    pub fn of(name: &str, pointwise: bool) -> OverlapCheck {
        if pointwise {
            OverlapCheck::Elementwise
        } else if name == "copy_" {
            OverlapCheck::Copy
        } else {
            OverlapCheck::None
        }
    }
}

/// What the generator did with each operator, for the report in `register.rs` and tests.
#[derive(Clone, Debug, Default)]
pub struct FunctionalizeReport {
    /// Mutating operators with a generated kernel.
    pub mutations: Vec<String>,
    /// View operators with a generated kernel (out-of-place and in-place forms).
    pub views: Vec<String>,
    /// CompositeImplicitAutograd views / mutating operators registered with their composite
    /// kernel.
    pub composite: Vec<String>,
    /// Mutating operators left to the fallback, with the reason.
    pub mutations_left: Vec<(String, String)>,
    /// View operators left to the fallback (no inverse yet), with the reason.
    pub views_left: Vec<(String, String)>,
    /// Functional operators with a typed pass-through kernel.
    pub pass_through: Vec<String>,
    /// Functional variants of mutation groups left to the boxed fallback, with the reason.
    pub pass_through_left: Vec<(String, String)>,
}

fn full_name(f: &GenFunction) -> String {
    f.schema.name.unqualified().to_string()
}

fn kernel_name(f: &GenFunction) -> String {
    format!("functionalize_{}", unambiguous_name(&f.schema.name))
}

fn op_path(f: &GenFunction) -> String {
    format!("op::{}", fn_name(&unambiguous_name(&f.schema.name)))
}

fn signature_fn(f: &GenFunction, name: &str, body: &str) -> Result<String, UnsupportedType> {
    let types = args_tuple_type(&f.schema, "")?.replace("& ", "&");
    Ok(format!(
        "/// `{}`\npub(crate) fn {name}(_ks: DispatchKeySet, {}: {types}) -> Result<{}> {{\n{body}}}\n",
        schema_text(f),
        pattern(f),
        output_type(&f.schema)?
    ))
}

fn is_tensor_like(ty: &Type) -> bool {
    ty.is_tensor() || ty.is_optional_tensor() || ty.is_tensor_list() || ty.is_optional_tensor_list()
}

/// The local holding the synced, unwrapped value of a tensor-like argument.
fn unwrapped(name: &str) -> String {
    format!("{}_u", arg_name(name))
}

/// The statement syncing and unwrapping a tensor-like argument.
fn unwrap_stmt(a: &Argument) -> String {
    let n = arg_name(&a.name);
    let helper = if a.ty.is_tensor() {
        "unwrap_synced"
    } else if a.ty.is_optional_tensor() {
        "unwrap_synced_opt"
    } else if a.ty.is_tensor_list() {
        "unwrap_synced_list"
    } else {
        "unwrap_synced_opt_list"
    };
    format!("    let {} = {helper}({n})?;\n", unwrapped(&a.name))
}

/// How an unwrapped (or plain) argument is passed to an `op::X::call`.
fn pass_expr(a: &Argument) -> String {
    if a.ty.is_optional_tensor() {
        format!("{}.as_ref()", unwrapped(&a.name))
    } else if is_tensor_like(&a.ty) {
        format!("&{}", unwrapped(&a.name))
    } else {
        arg_name(&a.name)
    }
}

/// The expression telling whether a tensor-like argument is (or holds) a functional tensor.
fn functional_expr(a: &Argument) -> String {
    let n = arg_name(&a.name);
    if a.ty.is_tensor() {
        format!("is_functional({n})")
    } else if a.ty.is_optional_tensor() {
        format!("{n}.is_some_and(is_functional)")
    } else if a.ty.is_tensor_list() {
        format!("is_functional_list({n})")
    } else {
        format!("is_functional_optional_list({n})")
    }
}

/// The written inputs that no return aliases, in the order `signature()` appends them as extra
/// returns of the functional variant: `self`, the out arguments, positionals after `self`.
fn unreturned_writes(s: &FunctionSchema) -> Vec<&Argument> {
    let self_arg = s.self_index().map(|i| &s.arguments[i]);
    let start = s.self_index().map_or(0, |i| i + 1);
    let post_self = s.arguments[start..]
        .iter()
        .filter(|a| !a.kwarg_only && !a.is_out);
    self_arg
        .into_iter()
        .chain(s.out_arguments())
        .chain(post_self)
        .filter(|a| a.is_write() && !s.returns.iter().any(|r| r.annotation == a.annotation))
        .collect()
}

/// Where each value the functional variant returns goes: a fresh output of the mutating
/// operator (its return index) or a mutated argument.
enum Dest<'a> {
    Fresh(usize),
    Aliased(usize, &'a Argument),
    Unreturned(&'a Argument),
}

/// The argument a return aliases.
fn aliased_arg(s: &FunctionSchema, j: usize) -> Option<&Argument> {
    let r = &s.returns[j];
    let ann = r.annotation.as_ref()?;
    ann.is_write
        .then(|| {
            s.arguments
                .iter()
                .find(|a| a.annotation.as_ref() == Some(ann))
        })
        .flatten()
}

fn destinations(s: &FunctionSchema) -> Vec<Dest<'_>> {
    let mut d: Vec<Dest<'_>> = (0..s.returns.len())
        .map(|j| match aliased_arg(s, j) {
            Some(a) => Dest::Aliased(j, a),
            None => Dest::Fresh(j),
        })
        .collect();
    d.extend(unreturned_writes(s).into_iter().map(Dest::Unreturned));
    d
}

/// The functional variant's argument list for a call from the mutating operator `m`, or why
/// there is none: the synced, unwrapped values (a call below the layer), or with `wrapped` the
/// kernel's own arguments (a composite run above it, on the wrappers).
fn functional_args(
    m: &GenFunction,
    func: &GenFunction,
    wrapped: bool,
) -> Result<Vec<String>, String> {
    let source = m
        .schema
        .out_arguments()
        .first()
        .or_else(|| m.schema.arguments.iter().find(|a| a.is_write()))
        .map(|a| {
            if wrapped {
                arg_name(&a.name)
            } else {
                unwrapped(&a.name)
            }
        });
    let mut out = Vec::new();
    for a in &func.schema.arguments {
        if let Some(ma) = m.schema.arguments.iter().find(|x| x.name == a.name) {
            if ma.ty != a.ty {
                return Err(format!("argument `{}` has another type", a.name));
            }
            let expr = if wrapped {
                arg_name(&ma.name)
            } else {
                pass_expr(ma)
            };
            let from_out = DTYPE_FROM_OUT
                .iter()
                .find(|(n, _)| *n == full_name(m))
                .filter(|_| a.name == "dtype");
            out.push(match (from_out, &source, m.schema.self_index()) {
                (Some((_, helper)), Some(src), Some(i)) => {
                    let self_name = if wrapped {
                        arg_name(&m.schema.arguments[i].name)
                    } else {
                        unwrapped(&m.schema.arguments[i].name)
                    };
                    format!("{helper}(&{self_name}, {expr}, &{src})?")
                }
                (Some(_), ..) => return Err("a dtype from `out` without `self`".into()),
                (None, ..) => expr,
            });
            continue;
        }
        let optional = matches!(a.ty, Type::Optional(_));
        let wrap = |e: String| if optional { format!("Some({e})") } else { e };
        let expr = match (a.name.as_str(), &source) {
            ("dtype", Some(src)) => wrap(format!("{src}.dtype()")),
            ("layout", Some(src)) => wrap(format!("{src}.layout()")),
            ("device", Some(src)) => wrap(format!("{src}.device()")),
            ("pin_memory", _) if optional => "None".into(),
            _ => match default_expr(a) {
                Some(d) => d,
                None => return Err(format!("no value for argument `{}`", a.name)),
            },
        };
        out.push(expr);
    }
    Ok(out)
}

/// The body of a mutating operator's kernel, or why it cannot be generated.
fn mutation_kernel(
    m: &GenFunction,
    func: &GenFunction,
    overlap: OverlapCheck,
) -> Result<String, String> {
    let s = &m.schema;
    let dests = destinations(s);
    if dests.len() != func.schema.returns.len() {
        return Err(format!(
            "the functional variant `{}` returns {} values, expected {}",
            full_name(func),
            func.schema.returns.len(),
            dests.len()
        ));
    }
    let writes: Vec<&Argument> = s.arguments.iter().filter(|a| a.is_write()).collect();
    for w in &writes {
        if !(w.ty.is_tensor() || w.ty.is_tensor_list()) {
            return Err(format!("mutated argument `{}` of type {}", w.name, w.ty));
        }
        let covered = dests.iter().any(|d| match d {
            Dest::Aliased(_, a) | Dest::Unreturned(a) => a.name == w.name,
            Dest::Fresh(_) => false,
        });
        if !covered {
            return Err(format!(
                "mutated argument `{}` gets no value from the functional variant",
                w.name
            ));
        }
    }
    for (d, r) in dests.iter().zip(&func.schema.returns) {
        let arg_ty = match d {
            Dest::Aliased(_, a) | Dest::Unreturned(a) => &a.ty,
            Dest::Fresh(j) => &s.returns[*j].ty,
        };
        if arg_ty.is_tensor_list() != r.ty.is_tensor_list() {
            return Err("return types do not match the mutated arguments".into());
        }
    }
    let composite = func.kernel(DispatchKey::CompositeImplicitAutograd);
    let func_args = functional_args(m, func, composite.is_some())?;
    let tensors: Vec<&Argument> = s
        .arguments
        .iter()
        .filter(|a| is_tensor_like(&a.ty))
        .collect();
    let mut b = String::new();
    for a in &tensors {
        b.push_str(&unwrap_stmt(a));
    }
    let mutated_functional: Vec<String> = writes.iter().map(|a| functional_expr(a)).collect();
    let others_functional: Vec<String> = tensors
        .iter()
        .filter(|a| !a.is_write())
        .map(|a| functional_expr(a))
        .collect();
    let _ = writeln!(b, "    if !({}) {{", mutated_functional.join(" && "));
    if !others_functional.is_empty() {
        let _ = writeln!(
            b,
            "        if {} {{\n            return Err(mixed_mutation_error());\n        }}",
            others_functional.join(" || ")
        );
    }
    let own_args: Vec<String> = s.arguments.iter().map(pass_expr).collect();
    let nret = s.returns.len();
    let plain_ret = |j: usize| -> String {
        if nret == 1 {
            "r".into()
        } else {
            format!("r.{j}")
        }
    };
    let mut plain_returns = Vec::new();
    for j in 0..nret {
        plain_returns.push(match aliased_arg(s, j) {
            Some(a) if a.ty.is_tensor_list() => format!("{}.to_vec()", arg_name(&a.name)),
            Some(a) => format!("{}.clone()", arg_name(&a.name)),
            None => plain_ret(j),
        });
    }
    let _ = writeln!(
        b,
        "        let r = {{\n            let _below = below();\n            {}::call({})?\n        }};",
        op_path(m),
        own_args.join(", ")
    );
    let _ = writeln!(
        b,
        "        return Ok({});\n    }}",
        tuple_expr(&plain_returns)
    );
    // The tensors eager's overlap checks compare a single written tensor with.
    let single_write = match writes.as_slice() {
        [w] if w.ty.is_tensor() => Some(arg_name(&w.name)),
        _ => None,
    };
    let read_tensors: Vec<String> = tensors
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
    let overlap = if single_write.is_some() {
        overlap
    } else {
        OverlapCheck::None
    };
    if let (OverlapCheck::Copy, Some(w)) = (overlap, &single_write) {
        let src = tensors
            .iter()
            .find(|a| !a.is_write() && a.ty.is_tensor())
            .ok_or("`copy_` without a source tensor")?;
        let _ = writeln!(b, "    check_copy_overlaps({w}, {})?;", arg_name(&src.name));
    }
    let nf = func.schema.returns.len();
    if let Some(kernel) = composite {
        // A CompositeImplicitAutograd functional variant (`linear`, `softmax.int`) decomposes
        // here, on the wrappers, so that its own operators are functionalized (below the layer
        // its views of a backend's storage-less values fail); its results are then unwrapped
        // as a call below would give them.
        let unwrap = |ty: &Type, e: &str| -> Result<String, String> {
            if ty.is_tensor() {
                Ok(format!("unwrap_synced(&{e})?"))
            } else if ty.is_tensor_list() {
                Ok(format!("unwrap_synced_list(&{e})?"))
            } else {
                Err(format!("a composite functional variant returning {ty}"))
            }
        };
        let call = format!(
            "switchyard_ops::native::{}({})?",
            fn_name(kernel),
            func_args.join(", ")
        );
        if nf == 1 {
            let _ = writeln!(
                b,
                "    let tmp = {{\n        let r = {call};\n        {}\n    }};",
                unwrap(&func.schema.returns[0].ty, "r")?
            );
        } else {
            let parts = func
                .schema
                .returns
                .iter()
                .enumerate()
                .map(|(k, r)| unwrap(&r.ty, &format!("r.{k}")))
                .collect::<Result<Vec<_>, _>>()?;
            let _ = writeln!(
                b,
                "    let tmp = {{\n        let r = {call};\n        ({})\n    }};",
                parts.join(", ")
            );
        }
    } else {
        let _ = writeln!(
            b,
            "    let tmp = {{\n        let _below = below();\n        {}::call({})?\n    }};",
            op_path(func),
            func_args.join(", ")
        );
    }
    let tmp = |k: usize| -> String {
        if nf == 1 {
            "tmp".into()
        } else {
            format!("tmp.{k}")
        }
    };
    let inplace_self = s.kind() == SchemaKind::Inplace;
    let mut returns: Vec<String> = vec![String::new(); nret];
    for (k, d) in dests.iter().enumerate() {
        match d {
            Dest::Fresh(j) => {
                let ty = &s.returns[*j].ty;
                returns[*j] = if ty.is_tensor_list() {
                    format!("to_functional_list(&{})?", tmp(k))
                } else if ty.is_tensor() {
                    format!("to_functional(&{})?", tmp(k))
                } else {
                    tmp(k)
                };
            }
            Dest::Aliased(_, a) | Dest::Unreturned(a) => {
                let n = arg_name(&a.name);
                if a.ty.is_tensor_list() {
                    let _ = writeln!(
                        b,
                        "    propagate_mutation_list({n}, &{}, {})?;",
                        tmp(k),
                        a.is_out
                    );
                } else {
                    let helper = if inplace_self && a.name == "self" {
                        "propagate_inplace"
                    } else if a.is_out {
                        "propagate_out"
                    } else {
                        "propagate_mutation"
                    };
                    if overlap == OverlapCheck::Elementwise && helper != "propagate_mutation" {
                        let _ = writeln!(
                            b,
                            "    {helper}_checked({n}, &{}, &[{}])?;",
                            tmp(k),
                            read_tensors.join(", ")
                        );
                    } else {
                        let _ = writeln!(b, "    {helper}({n}, &{})?;", tmp(k));
                    }
                }
                if let Dest::Aliased(j, _) = d {
                    returns[*j] = if a.ty.is_tensor_list() {
                        format!("{n}.to_vec()")
                    } else {
                        format!("{n}.clone()")
                    };
                }
            }
        }
    }
    let _ = writeln!(b, "    Ok({})", tuple_expr(&returns));
    signature_fn(m, &kernel_name(m), &b).map_err(|e| format!("unsupported type {}", e.0))
}

fn tuple_expr(parts: &[String]) -> String {
    match parts.len() {
        0 => "()".into(),
        1 => parts[0].clone(),
        _ => format!("({})", parts.join(", ")),
    }
}

/// How a view's reverse is computed.
enum Inverse {
    /// `op::<scatter>::call(base, mutated, <view args>)`.
    Scatter(usize),
    /// `crate::inverses::<name>_inverse(base, mutated, mode, [out_index,] <view args>)`.
    HandWritten,
}

/// The `*_scatter` operator inverting view `v`, if ops.yaml has one with the right arguments.
fn scatter_of(input: &GenInput, v: &GenFunction) -> Option<usize> {
    let want = format!("{}_scatter", v.schema.name.name.base);
    let rest = v.schema.arguments.get(1..)?;
    input.functions.iter().position(|f| {
        let a = &f.schema.arguments;
        f.schema.name.name.base == want
            && f.kind() == SchemaKind::Functional
            && a.len() == rest.len() + 2
            && a[0].ty.is_tensor()
            && a[1].ty.is_tensor()
            && a[1].name == "src"
            && a[2..]
                .iter()
                .zip(rest)
                .all(|(x, y)| x.name == y.name && x.ty == y.ty)
    })
}

/// Statements making owned copies of a view's non-tensor arguments for the record's closures.
fn owned_args(v: &GenFunction) -> Result<(String, Vec<String>), String> {
    let mut stmts = String::new();
    let mut uses = Vec::new();
    for a in v.schema.arguments.iter().skip(1) {
        let n = arg_name(&a.name);
        match &a.ty {
            Type::List { .. } if !is_tensor_like(&a.ty) => {
                let _ = writeln!(stmts, "            let {n}: Vec<_> = {n}.to_vec();");
                uses.push(format!("&{n}"));
            }
            Type::Optional(inner) if matches!(**inner, Type::List { .. }) => {
                let _ = writeln!(
                    stmts,
                    "            let {n}: Option<Vec<_>> = {n}.map(<[_]>::to_vec);"
                );
                uses.push(format!("{n}.as_deref()"));
            }
            ty if is_tensor_like(ty) => {
                return Err(format!("tensor argument `{}` of a view", a.name));
            }
            _ => uses.push(n),
        }
    }
    Ok((stmts, uses))
}

/// The kernel of view `v` (out-of-place) or of its in-place form `inplace`.
fn view_kernel(
    input: &GenInput,
    v: &GenFunction,
    copy: &GenFunction,
    inverse: &Inverse,
    inplace: Option<&GenFunction>,
) -> Result<String, String> {
    let f = inplace.unwrap_or(v);
    let (owned, uses) = owned_args(v)?;
    let args = uses.join(", ");
    let sep = if args.is_empty() { "" } else { ", " };
    let name = full_name(v);
    let multi = v
        .schema
        .returns
        .first()
        .is_some_and(|r| r.ty.is_tensor_list());
    let own: Vec<String> = f
        .schema
        .arguments
        .iter()
        .map(|a| arg_name(&a.name))
        .collect();
    let mut b = format!(
        "    if !is_functional(self_) {{\n        let _below = below();\n        return {}::call({});\n    }}\n",
        op_path(f),
        own.join(", ")
    );
    b.push_str("    let reapply = reapply_views();\n");
    let idx = if multi { "i" } else { "_" };
    let pick = if multi {
        "?.into_iter().nth(i).ok_or_else(|| out_of_range(i))"
    } else {
        ""
    };
    // Each closure owns its copy of the view's arguments.
    let forward = format!(
        "{{\n{owned}            move |b: &Tensor, {idx}: usize| if reapply {{ {}::call(b{sep}{args}){pick} }} else {{ {}::call(b{sep}{args}){pick} }}\n        }}",
        op_path(v),
        op_path(copy)
    );
    let reverse = match inverse {
        Inverse::Scatter(s) => format!(
            "{{\n{owned}            move |b: &Tensor, m: &Tensor, _: usize| {}::call(b, m{sep}{args})\n        }}",
            op_path(&input.functions[*s])
        ),
        Inverse::HandWritten => {
            let out_index = if multi { "i, " } else { "" };
            format!(
                "{{\n{owned}            move |b: &Tensor, m: &Tensor, {idx}: usize| crate::inverses::{}_inverse(b, m, InverseMode::for_reapply(reapply), {out_index}{args})\n        }}",
                unambiguous_name(&v.schema.name)
            )
        }
    };
    let mut meta =
        format!("ViewMeta::new(\n        {name:?},\n        {forward},\n        {reverse},\n    )");
    if matches!(inverse, Inverse::Scatter(s) if input.functions[*s].schema.name.name.base == "as_strided_scatter")
    {
        meta.push_str(".as_strided()");
    }
    let _ = writeln!(b, "    let meta = {meta};");
    // The view itself (never its copy), run on a meta shadow of the input for the eager
    // geometry of the output (plan §2.4). An in-place view runs itself on the shadow, so its
    // own checks and words are eager's ("t_() expects a tensor with <= 2 dimensions").
    let shadow = format!(
        "&|s: &Tensor| {}::call(s{sep}{args})",
        op_path(inplace.unwrap_or(v))
    );
    if inplace.is_some() {
        if multi {
            return Err("in-place multi-output view".into());
        }
        let _ = writeln!(
            b,
            "    inplace_view(self_, meta, {shadow})?;\n    Ok(self_.clone())"
        );
    } else if multi {
        let _ = writeln!(
            b,
            "    view_outputs(self_, meta.multi_output(0), &|v: &Tensor| if reapply {{ {}::call(v{sep}{args}) }} else {{ {}::call(v{sep}{args}) }}, {shadow})",
            op_path(v),
            op_path(copy)
        );
    } else {
        let _ = writeln!(b, "    view_output(self_, meta, {shadow})");
    }
    signature_fn(f, &kernel_name(f), &b).map_err(|e| format!("unsupported type {}", e.0))
}

/// The typed kernel of a functional operator (`crate::pass_through`): unwrap the inputs, call
/// below the layer, wrap the outputs, as the boxed fallback does, without boxing; the fallback
/// itself when an input's value has another layout than its wrapper. (`passthrough`: no
/// schema argument has that name.) `Err` (the operator keeps
/// the fallback) for tensor-list arguments and returns other than tensors.
fn pass_through_kernel(f: &GenFunction) -> Result<String, String> {
    let s = &f.schema;
    if s.returns.is_empty() || !s.returns.iter().all(|r| r.ty.is_tensor()) {
        return Err("returns other than tensors".into());
    }
    if s.arguments
        .iter()
        .any(|a| a.ty.is_tensor_list() || a.ty.is_optional_tensor_list())
    {
        return Err("a tensor-list argument".into());
    }
    // With only absent `Tensor?` arguments the fallback wraps the outputs as a factory's.
    if !s.arguments.iter().any(|a| a.ty.is_tensor()) {
        return Err("no `Tensor` argument".into());
    }
    let unsupported = |e: UnsupportedType| format!("unsupported type {}", e.0);
    let types = args_tuple_type(s, "")
        .map_err(unsupported)?
        .replace("& ", "&");
    let out_ty = output_type(s).map_err(unsupported)?;
    let mut body = String::from("    let mut passthrough = PassThrough::default();\n");
    for (k, a) in s.arguments.iter().enumerate() {
        let helper = if a.ty.is_tensor() {
            "arg"
        } else if a.ty.is_optional_tensor() {
            "opt_arg"
        } else {
            continue;
        };
        let _ = writeln!(
            body,
            "    let {} = passthrough.{helper}(args.{k})?;",
            unwrapped(&a.name)
        );
    }
    let op = op_path(f);
    // A structured operator learns eager's output layout from its meta function on the
    // wrappers (they carry eager's geometry): contiguous outputs (`mm`, `addmm` of a
    // transposed weight) need none of the fallback's shadow run.
    let contiguous_check = if f.structured_delegate.is_some() && f.kind() == SchemaKind::Functional
    {
        let meta_args: Vec<String> = s
            .arguments
            .iter()
            .enumerate()
            .map(|(k, a)| {
                if matches!(&a.ty, Type::Base(BaseType::Scalar))
                    || matches!(&a.ty, Type::Optional(t) if matches!(**t, Type::Base(BaseType::Scalar)))
                {
                    format!("args.{k}.clone()")
                } else {
                    format!("args.{k}")
                }
            })
            .collect();
        format!(
            "\n        && !PassThrough::eager_outputs_contiguous(&switchyard_ops::meta::{}({}, switchyard_ops::structured::Outs::Functional))",
            meta_fn_name(&f.schema),
            meta_args.join(", ")
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        body,
        "    if passthrough.needs_fallback(){contiguous_check} {{\n        return PassThrough::boxed::<{op}>(ks, args);\n    }}"
    );
    let _ = writeln!(body, "    let {} = args;", pattern(f));
    let call_args: Vec<String> = s.arguments.iter().map(pass_expr).collect();
    let _ = writeln!(
        body,
        "    let out = {{\n        let _below = below();\n        {op}::call({})?\n    }};",
        call_args.join(", ")
    );
    if s.returns.len() == 1 {
        body.push_str("    passthrough.wrap(out)\n");
    } else {
        let parts: Vec<String> = (0..s.returns.len())
            .map(|j| format!("passthrough.wrap(out.{j})?"))
            .collect();
        let _ = writeln!(body, "    Ok(({}))", parts.join(", "));
    }
    Ok(format!(
        "/// `{}`\npub(crate) fn {}(ks: DispatchKeySet, args: {types}) -> Result<{out_ty}> {{\n{body}}}\n",
        schema_text(f),
        kernel_name(f)
    ))
}

fn registration(f: &GenFunction) -> String {
    let name = kernel_name(f);
    format!(
        "    lib.impl_({:?}, Kernel::typed::<{}>({name}).debug({name:?}))?;\n",
        full_name(f),
        op_path(f)
    )
}

fn composite_kernel(f: &GenFunction, kernel: &str) -> Result<String, UnsupportedType> {
    let args: Vec<String> = f
        .schema
        .arguments
        .iter()
        .map(|a| arg_name(&a.name))
        .collect();
    signature_fn(
        f,
        &kernel_name(f),
        &format!(
            "    switchyard_ops::native::{}({})\n",
            fn_name(kernel),
            args.join(", ")
        ),
    )
}

const PRELUDE: &str = "#![allow(non_snake_case, unused_variables, clippy::all)]\n\n\
use crate::support::*;\n\
use switchyard_core::{Device, DispatchKeySet, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};\n\
use switchyard_ops::op;\n";

const PASS_THROUGH_PRELUDE: &str = "#![allow(non_snake_case, unused_variables, clippy::all)]\n\n\
use crate::pass_through::PassThrough;\n\
use crate::tensor::below;\n\
use switchyard_core::{Device, DispatchKeySet, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};\n\
use switchyard_ops::op;\n";

const VIEWS_PRELUDE: &str = "#![allow(non_snake_case, unused_variables, clippy::all)]\n\n\
use crate::support::*;\n\
use crate::{InverseMode, ViewMeta, reapply_views};\n\
use switchyard_core::{Device, DispatchKeySet, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};\n\
use switchyard_ops::op;\n";

/// Every generated file of the functionalize crate (path relative to the workspace root,
/// contents), and what was generated.
pub fn generate(
    input: &GenInput,
    nf: &NativeFunctions,
) -> Result<(Vec<(String, String)>, FunctionalizeReport), UnsupportedType> {
    let mut report = FunctionalizeReport::default();
    let functions = &input.functions;
    // Functional operators by grouping signature (defaults stripped).
    let mut functional: HashMap<FunctionSchema, usize> = HashMap::new();
    for (i, f) in functions.iter().enumerate() {
        if f.kind() == SchemaKind::Functional && !f.schema.is_view_op() {
            functional
                .entry(f.schema.signature(true, false, false))
                .or_insert(i);
        }
    }
    let mut shards = vec![String::new(); MUTATION_SHARDS];
    let mut views = String::new();
    let mut composite = String::new();
    let (mut mut_regs, mut view_regs, mut comp_regs) = (Vec::new(), Vec::new(), Vec::new());
    let inplace_view_of: HashMap<usize, usize> = nf
        .view_groups
        .iter()
        .filter_map(|g| g.view_inplace.map(|i| (i, g.view)))
        .collect();
    let mut n_mut = 0usize;
    // The functional variants of the generated mutation kernels, in ops.yaml order.
    let mut pass_through_candidates = std::collections::BTreeSet::new();
    for (i, f) in functions.iter().enumerate() {
        if f.manual_kernel_registration {
            continue;
        }
        if MANUAL_FUNCTIONALIZE.contains(&full_name(f).as_str()) {
            continue;
        }
        let is_view = f.schema.is_view_op() && f.kind() == SchemaKind::Functional;
        let inplace_view = inplace_view_of.get(&i).copied().or_else(|| {
            nf.functions[i]
                .has_tag("inplace_view")
                .then_some(usize::MAX)
        });
        let mutates = f.schema.modifies_arguments();
        // A composite whose schema hides that it aliases or writes its inputs
        // (`batch_norm` writes the running statistics through `_native_batch_norm_legit`)
        // decomposes here too, rather than running below the layer on unwrapped values
        // when the autograd keys are excluded (PyTorch's `maybe_aliasing_or_mutating`
        // tag, which its Python functionalization decomposes). That includes an explicit
        // composite (`native_batch_norm`: its own derivative at Autograd, as PyTorch's
        // eager kernel has, and the decomposition PyTorch's Python dispatcher registers
        // below it).
        let hidden_effects = nf.functions[i].has_tag("maybe_aliasing_or_mutating");
        let composite_kernel_of = f
            .kernel(DispatchKey::CompositeImplicitAutograd)
            .or_else(|| {
                hidden_effects
                    .then(|| f.kernel(DispatchKey::CompositeExplicitAutograd))
                    .flatten()
            });
        if let Some(kernel) = composite_kernel_of {
            if is_view || mutates || inplace_view.is_some() || hidden_effects {
                composite.push_str(&composite_kernel(f, kernel)?);
                composite.push('\n');
                comp_regs.push(registration(f));
                report.composite.push(full_name(f));
            }
            continue;
        }
        if is_view || inplace_view.is_some() {
            let v_idx = match inplace_view {
                Some(v) if v != usize::MAX => v,
                Some(_) => {
                    report
                        .views_left
                        .push((full_name(f), "in-place view without a view group".into()));
                    continue;
                }
                None => i,
            };
            let v = &functions[v_idx];
            let Some(g) = nf.view_group_of(v_idx) else {
                report
                    .views_left
                    .push((full_name(f), "no view group".into()));
                continue;
            };
            let Some(copy) = g.view_copy else {
                report
                    .views_left
                    .push((full_name(f), "no `*_copy` operator".into()));
                continue;
            };
            let inverse = if VIEWS_WITH_INVERSES.contains(&full_name(v).as_str()) {
                Inverse::HandWritten
            } else if let Some(s) = scatter_of(input, v) {
                Inverse::Scatter(s)
            } else {
                report.views_left.push((
                    full_name(f),
                    "no `*_scatter` inverse and not in VIEWS_WITH_INVERSES".into(),
                ));
                continue;
            };
            let inplace = (v_idx != i).then_some(f);
            match view_kernel(input, v, &functions[copy], &inverse, inplace) {
                Ok(code) => {
                    views.push_str(&code);
                    views.push('\n');
                    view_regs.push(registration(f));
                    report.views.push(full_name(f));
                }
                Err(why) => report.views_left.push((full_name(f), why)),
            }
            continue;
        }
        if !mutates {
            continue;
        }
        let sig = f.schema.signature(true, false, false);
        let Some(&func) = functional.get(&sig) else {
            report
                .mutations_left
                .push((full_name(f), "no functional variant".into()));
            continue;
        };
        let overlap = OverlapCheck::of(&full_name(f), nf.functions[i].has_tag("pointwise"));
        match mutation_kernel(f, &functions[func], overlap) {
            Ok(code) => {
                pass_through_candidates.insert(func);
                let shard = &mut shards[n_mut % MUTATION_SHARDS];
                shard.push_str(&code);
                shard.push('\n');
                mut_regs.push((n_mut % MUTATION_SHARDS, registration(f)));
                report.mutations.push(full_name(f));
                n_mut += 1;
            }
            Err(why) => report.mutations_left.push((full_name(f), why)),
        }
    }
    // Functional operators reaching the layer (not CompositeImplicitAutograd, which decompose
    // first, nor those with a composite kernel here, and not hand-written) get a typed
    // pass-through kernel.
    let mut pass_shards = vec![String::new(); PASS_THROUGH_SHARDS];
    let mut pass_regs = Vec::new();
    for &k in &pass_through_candidates {
        let f = &functions[k];
        if f.manual_kernel_registration
            || MANUAL_FUNCTIONALIZE.contains(&full_name(f).as_str())
            || f.kernel(DispatchKey::CompositeImplicitAutograd).is_some()
            || report.composite.contains(&full_name(f))
        {
            continue;
        }
        match pass_through_kernel(f) {
            Ok(code) => {
                let shard = &mut pass_shards[pass_regs.len() % PASS_THROUGH_SHARDS];
                shard.push_str(&code);
                shard.push('\n');
                pass_regs.push(registration(f));
                report.pass_through.push(full_name(f));
            }
            Err(why) => report.pass_through_left.push((full_name(f), why)),
        }
    }
    let dir = "crates/functionalize/src/generated";
    let h = |part: &str| header(&format!("functionalize {part}"));
    let mut files = vec![(
        format!("{dir}/mod.rs"),
        format!(
            "{}//! Code generated from ops.yaml: the kernels at the Functionalize key and their\n//! registration.\n\n#![allow(unused_imports, missing_docs)]\n\nmod composite;\n{}{}mod register;\nmod views;\n\npub(crate) use register::register;\n",
            h("mod"),
            (0..MUTATION_SHARDS)
                .map(|n| format!("mod mutations_{n};\n"))
                .collect::<String>(),
            (0..PASS_THROUGH_SHARDS)
                .map(|n| format!("mod pass_through_{n};\n"))
                .collect::<String>()
        ),
    )];
    for (n, code) in pass_shards.iter().enumerate() {
        files.push((
            format!("{dir}/pass_through_{n}.rs"),
            format!(
                "{}//! Typed kernels of functional operators (shard {n} of {PASS_THROUGH_SHARDS}): unwrap the inputs,\n//! call below the layer, wrap the outputs (the boxed fallback's work, unboxed).\n\n{PASS_THROUGH_PRELUDE}\n{code}",
                h(&format!("pass_through_{n}"))
            ),
        ));
    }
    files.push((
        format!("{dir}/views.rs"),
        format!(
            "{}//! The kernels of view operators: record the view, return a view wrapper.\n\n{VIEWS_PRELUDE}\n{views}",
            h("views")
        ),
    ));
    for (n, code) in shards.iter().enumerate() {
        files.push((
            format!("{dir}/mutations_{n}.rs"),
            format!(
                "{}//! Kernels of mutating operators (shard {n} of {MUTATION_SHARDS}): call the functional\n//! variant below the layer and commit the new values to the mutated wrappers.\n\n{PRELUDE}\n{code}",
                h(&format!("mutations_{n}"))
            ),
        ));
    }
    files.push((
        format!("{dir}/composite.rs"),
        format!(
            "{}//! CompositeImplicitAutograd views and mutating operators: their composite kernel, so that\n//! they decompose before the layer records anything.\n\n{PRELUDE}\n{composite}",
            h("composite")
        ),
    ));
    let mut reg = h("register");
    reg.push_str("//! Registration of the generated kernels at `Functionalize`.\n//!\n");
    let _ = writeln!(
        reg,
        "//! Generated: {} mutation kernels, {} view kernels, {} composite kernels, {} pass-through\n//! kernels.",
        report.mutations.len(),
        report.views.len(),
        report.composite.len(),
        report.pass_through.len()
    );
    let _ = writeln!(
        reg,
        "//!\n//! Mutating operators left to the fallback (which refuses them by name) ({}):",
        report.mutations_left.len()
    );
    for (n, why) in &report.mutations_left {
        let _ = writeln!(reg, "//! * `{n}`: {why}");
    }
    let _ = writeln!(
        reg,
        "//!\n//! View operators left to the fallback (which refuses them by name) ({}):",
        report.views_left.len()
    );
    for (n, why) in &report.views_left {
        let _ = writeln!(reg, "//! * `{n}`: {why}");
    }
    let _ = writeln!(
        reg,
        "//!\n//! Functional variants left to the boxed fallback ({}):",
        report.pass_through_left.len()
    );
    for (n, why) in &report.pass_through_left {
        let _ = writeln!(reg, "//! * `{n}`: {why}");
    }
    reg.push_str("\n#![allow(non_snake_case)]\n\nuse switchyard_core::{DispatchKey, Result};\nuse switchyard_dispatch::{Dispatcher, Kernel, Library, LibraryKind};\nuse switchyard_ops::op;\n");
    reg.push_str("use super::composite::*;\n");
    for n in 0..MUTATION_SHARDS {
        let _ = writeln!(reg, "use super::mutations_{n}::*;");
    }
    for n in 0..PASS_THROUGH_SHARDS {
        let _ = writeln!(reg, "use super::pass_through_{n}::*;");
    }
    reg.push_str("use super::views::*;\n\n");
    reg.push_str("/// Registers the generated kernels at `Functionalize`.\npub(crate) fn register(d: &'static Dispatcher) -> Result<()> {\n    let mut lib = Library::new_on(d, LibraryKind::Impl, \"aten\", Some(DispatchKey::Functionalize))?;\n");
    for (_, r) in &mut_regs {
        reg.push_str(r);
    }
    for r in view_regs.iter().chain(&comp_regs).chain(&pass_regs) {
        reg.push_str(r);
    }
    reg.push_str("    lib.leak();\n    Ok(())\n}\n");
    files.push((format!("{dir}/register.rs"), reg));
    Ok((files, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::from_model::from_model;
    use crate::emit::workspace::parse_bundled_ops_yaml;

    #[test]
    fn classifies_the_operators_of_ops_yaml() {
        let nf = parse_bundled_ops_yaml().unwrap();
        let input = from_model(&nf);
        let (files, report) = generate(&input, &nf).unwrap();
        let has = |v: &[String], n: &str| v.iter().any(|x| x == n);
        for m in [
            "add_.Tensor",
            "add.out",
            "copy_",
            "zero_",
            "fill_.Scalar",
            // Mutable operators writing arguments other than `self` (A.11's F6, F31).
            "_fused_moving_avg_obs_fq_helper",
            "_native_batch_norm_legit",
            "aminmax.out",
        ] {
            assert!(has(&report.mutations, m), "{m} not generated");
        }
        for v in [
            "slice.Tensor",
            "select.int",
            "diagonal",
            "as_strided",
            "as_strided_",
        ] {
            assert!(has(&report.views, v), "{v} not generated");
        }
        assert!(has(&report.composite, "reshape"));
        assert!(has(&report.composite, "batch_norm"));
        // Every view of ops.yaml has an inverse (scatter or hand-written).
        assert!(has(&report.views, "unfold"), "{:?}", report.views_left);
        assert!(report.views_left.is_empty(), "{:?}", report.views_left);
        // Hand-written kernels are not generated, but their other overloads are.
        for manual in [
            "resize_",
            "set_.source_Tensor",
            "lift",
            "_to_copy",
            "_unsafe_view",
        ] {
            assert!(!has(&report.mutations, manual) && !has(&report.views, manual));
        }
        for out in [
            "lift.out",
            "_to_copy.out",
            "lift_fresh_copy.out",
            "set.source_Tensor_out",
        ] {
            assert!(has(&report.mutations, out), "{out} not generated");
        }
        let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        assert!(names.contains(&"crates/functionalize/src/generated/mutations_3.rs"));
        // A CompositeImplicitAutograd functional variant decomposes on the wrappers.
        let mutations: String = files
            .iter()
            .filter(|(p, _)| p.contains("/mutations_"))
            .map(|(_, c)| c.as_str())
            .collect();
        assert!(mutations.contains(
            "let r = switchyard_ops::native::linear(input, weight, bias)?;\n        unwrap_synced(&r)?"
        ));
        assert!(!mutations.contains("op::linear::call("));
        let views = &files
            .iter()
            .find(|(p, _)| p.ends_with("views.rs"))
            .unwrap()
            .1;
        assert!(views.contains("op::slice_scatter::call(b, m, dim, start, end, step)"));
        assert!(views.contains("op::slice_copy_Tensor::call(b, dim, start, end, step)"));
        assert!(views.contains(".as_strided()"));
        // Eager geometry from the view itself on a meta shadow, in both modes.
        assert!(views.contains("view_output(self_, meta, &|s: &Tensor| op::slice_Tensor::call(s, dim, start, end, step))"));
        assert!(views.contains(
            "inplace_view(self_, meta, &|s: &Tensor| op::transpose_::call(s, dim0, dim1))?;"
        ));
    }
}

#[cfg(test)]
mod fixture_tests {
    use super::*;
    use crate::emit::from_model::from_model;
    use crate::{ParseOptions, parse_native_functions};

    /// A mutable operator with a fresh output and a mutated positional argument, its
    /// `_functional` variant, and an operator mutating a kwarg-only argument that no functional
    /// variant returns.
    const YAML: &str = "\
- func: thing(Tensor self, Tensor(a!) running, float m) -> Tensor
  dispatch:
    CPU: thing
- func: thing_functional(Tensor self, Tensor running, float m) -> (Tensor, Tensor running_out)
  dispatch:
    CPU: thing_functional
- func: lonely_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: lonely_
";

    #[test]
    fn mutable_ops_wrap_fresh_outputs_and_commit_mutated_arguments() {
        let nf = parse_native_functions(YAML, "t.yaml", &ParseOptions::default()).unwrap();
        let input = from_model(&nf);
        let (files, report) = generate(&input, &nf).unwrap();
        assert_eq!(report.mutations, vec!["thing".to_string()]);
        assert_eq!(
            report.mutations_left,
            vec![("lonely_".to_string(), "no functional variant".to_string())]
        );
        let code: String = files
            .iter()
            .filter(|(p, _)| p.contains("mutations_"))
            .map(|(_, c)| c.as_str())
            .collect();
        assert!(code.contains("op::thing_functional::call(&self__u, &running_u, m)?"));
        assert!(code.contains("propagate_mutation(running, &tmp.1)?;"));
        assert!(code.contains("Ok(to_functional(&tmp.0)?)"));
        // Plain `running` with a functional `self`: PyTorch's error.
        assert!(code.contains("if !(is_functional(running)) {\n        if is_functional(self_) {"));
        let register = &files
            .iter()
            .find(|(p, _)| p.ends_with("register.rs"))
            .unwrap()
            .1;
        assert!(register.contains("//! * `lonely_`: no functional variant"));
    }
}
