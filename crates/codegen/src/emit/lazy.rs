//! The generated code of a `Lazy` backend (torchgen's `gen_lazy_tensor.py` and
//! `dest/lazy_ir.py`): for every operator listed under `full_codegen` an IR node entry, a trace
//! kernel and a lowering; for every `ir_gen` operator a node entry and a lowering; for the
//! `non_native` entries a table of node kinds the backend builds by hand.
//!
//! Files written next to the backend's trait and registration (`emit::backend`):
//!
//! * `nodes.rs`: `NODES`, a static table of [`NodeInfo`]-shaped entries (qualified name,
//!   overload, class name as torchgen's `node_name`, operator hash, argument names and kinds,
//!   lowering function pointer), one `NODE_<op>` index constant per entry, and `NON_NATIVE`.
//! * `kernels_{0,1}.rs`: one trace kernel per `full_codegen` operator, in torchgen's order:
//!   counter `lazy::<kernel name>`; operands converted (lazy tensors to IR values, `Scalar`
//!   arguments lifted to parameters); shape inference (a structured operator, or one delegating
//!   to a structured out=, calls its meta function on the lazy tensors themselves; the others
//!   run their `Meta` kernel on meta shadows); the node built; one lazy tensor per output.
//!   The trait item of the operator gets the kernel as its default body, so the generated
//!   registration (with its in-place and out= wrappers) registers it unchanged.
//! * `lowerings_{0,1}.rs`: one function per node entry calling the operator's CPU kernel with
//!   `op::<op>::redispatch(CPU-only key set, ..)` on the node's inputs and attributes.
//!
//! Generated code calls non-generic helpers of the backend crate (`crate::trace`): `NodeBuilder`
//! for tracing and `LowerArgs` for lowering. Sharding is round-robin over `full_codegen`
//! order, as functionalization's kernels are sharded, to keep each file's compile unit small.
//! (`NodeInfo`, `NodeBuilder` and `LowerArgs` are types of `switchyard_lazy`.)

use super::backend::BackendGenError;
use super::input::{GenFunction, GenInput};
use super::operators::schema_text;
use super::rust::{
    arg_name, arg_type, fn_name, meta_fn_name, op_type_name, output_type, unambiguous_name,
};
use crate::NativeFunctions;
use crate::backend::BackendYaml;
use std::path::PathBuf;
use switchyard_core::DispatchKey;
use switchyard_schema::{Argument, BaseType, Type};

/// Number of `kernels_N.rs` / `lowerings_N.rs` shards.
pub const SHARDS: usize = 2;

/// Arguments that may come from another device (PyTorch's `copy` copies across devices; eager
/// indexing takes CPU indices for a tensor on any device): a non-lazy tensor there becomes a
/// device-data leaf holding a copy of its value instead of the "not a lazy tensor" error.
const CROSS_DEVICE_ARGS: [(&str, &str); 4] = [
    ("copy", "src"),
    ("index", "indices"),
    ("index_put", "indices"),
    ("_index_put_impl", "indices"),
];

/// torchgen's `node_name`: `name_overload` split on `_`, each part capitalised as Python's
/// `str.capitalize` does (first letter upper, the rest lower), joined (`add.Tensor` →
/// `AddTensor`, `sum.dim_IntList` → `SumDimIntlist`, `_softmax` → `Softmax`).
pub fn node_class_name(name: &str, overload: &str) -> String {
    let full = if overload.is_empty() {
        name.to_string()
    } else {
        format!("{name}_{overload}")
    };
    full.split('_')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(first) => first
                    .to_uppercase()
                    .chain(c.flat_map(char::to_lowercase))
                    .collect(),
                None => String::new(),
            }
        })
        .collect()
}

/// How one schema argument is carried by a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArgClass {
    /// A tensor operand.
    Tensor,
    /// An optional tensor operand (absent: no operand).
    OptTensor,
    /// A `Scalar`, lifted to an operand (a parameter, B.7.8).
    Scalar,
    /// A `Tensor[]`: its elements flattened into the operands, one `Arg::List` on the node.
    TensorList,
    /// A `Tensor?[]` (index lists): as `TensorList`, absent elements recorded as such.
    OptTensorList,
    /// A non-tensor argument kept on the node, read back with the named `LowerArgs` accessor.
    Attr(&'static str),
}

fn classify(a: &Argument) -> Result<ArgClass, BackendGenError> {
    let ty = arg_type(&a.ty, "")
        .map_err(|e| BackendGenError(format!("cannot generate Rust for schema type {}", e.0)))?
        .replace("& ", "&");
    Ok(match ty.as_str() {
        "&Tensor" => ArgClass::Tensor,
        "Option<&Tensor>" => ArgClass::OptTensor,
        "Scalar" => ArgClass::Scalar,
        "&[Tensor]" => ArgClass::TensorList,
        "&[Option<Tensor>]" => ArgClass::OptTensorList,
        "i64" => ArgClass::Attr("int"),
        "&[i64]" => ArgClass::Attr("ints"),
        "Option<i64>" => ArgClass::Attr("opt_int"),
        "Option<&[i64]>" => ArgClass::Attr("opt_ints"),
        "bool" => ArgClass::Attr("bool"),
        "Option<bool>" => ArgClass::Attr("opt_bool"),
        "f64" => ArgClass::Attr("float"),
        "Option<f64>" => ArgClass::Attr("opt_float"),
        "ScalarType" => ArgClass::Attr("dtype"),
        "Option<ScalarType>" => ArgClass::Attr("opt_dtype"),
        "Option<Layout>" => ArgClass::Attr("opt_layout"),
        "Option<Device>" => ArgClass::Attr("opt_device"),
        "Option<MemoryFormat>" => ArgClass::Attr("opt_memory_format"),
        "&str" => ArgClass::Attr("str"),
        "Option<&str>" => ArgClass::Attr("opt_str"),
        "Option<Scalar>" => ArgClass::Attr("opt_scalar"),
        "Option<&Generator>" => ArgClass::Attr("opt_generator"),
        other => {
            return Err(BackendGenError(format!(
                "the lazy generator cannot carry an argument of Rust type {other} ({}) on an IR node",
                a.ty
            )));
        }
    })
}

/// What an operator returns, as node outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Returns {
    /// One tensor or a tuple of `n` tensors: `n` outputs.
    Tensors(usize),
    /// One `Tensor[]`: as many outputs as shape inference gives for the call.
    List,
}

impl Returns {
    /// The node table's `num_outputs` (0: per node).
    fn count(self) -> usize {
        match self {
            Returns::Tensors(n) => n,
            Returns::List => 0,
        }
    }
}

/// What the operator returns; refuses returns a node cannot describe.
fn tensor_returns(f: &GenFunction) -> Result<Returns, BackendGenError> {
    let returns = &f.schema.returns;
    if let [r] = returns.as_slice()
        && matches!(&r.ty, Type::List { elem, .. } if elem.is_tensor())
    {
        return Ok(Returns::List);
    }
    if returns.is_empty()
        || !returns
            .iter()
            .all(|r| matches!(r.ty, Type::Base(BaseType::Tensor)))
    {
        return Err(BackendGenError(format!(
            "the lazy generator supports operators returning tensors only (one, a tuple or one Tensor[]), not {}",
            f.schema
        )));
    }
    Ok(Returns::Tensors(returns.len()))
}

/// The node entries: `full_codegen` then `ir_gen`, each once, in listing order.
fn node_functions(yaml: &BackendYaml) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &f in yaml.full_codegen.iter().chain(&yaml.ir_gen) {
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// The shard (`kernels_N.rs`, `lowerings_N.rs`) of node entry `i`.
fn shard(i: usize) -> usize {
    i % SHARDS
}

fn node_const(f: &GenFunction) -> String {
    format!("NODE_{}", unambiguous_name(&f.schema))
}

fn kernel_fn(f: &GenFunction) -> String {
    format!("lazy_{}", unambiguous_name(&f.schema))
}

fn lower_fn(f: &GenFunction) -> String {
    format!("lower_{}", unambiguous_name(&f.schema))
}

/// `name: type` parameters with the trait item's types.
fn params(f: &GenFunction) -> Result<String, BackendGenError> {
    Ok(f.schema
        .arguments
        .iter()
        .map(|a| {
            Ok(format!(
                "{}: {}",
                arg_name(&a.name),
                arg_type(&a.ty, "")
                    .map_err(|e| BackendGenError(format!(
                        "cannot generate Rust for schema type {}",
                        e.0
                    )))?
                    .replace("& ", "&")
            ))
        })
        .collect::<Result<Vec<_>, BackendGenError>>()?
        .join(", "))
}

/// The default body of the trait item of `full_codegen` operator `f` (the generated trace
/// kernel), or `None` when `f` is not generated.
pub fn trait_default_body(yaml: &BackendYaml, input: &GenInput, function: usize) -> Option<String> {
    if !yaml.is_lazy() || !yaml.is_full_codegen(function) {
        return None;
    }
    let i = node_functions(yaml).iter().position(|&f| f == function)?;
    let f = &input.functions[function];
    let args: Vec<String> = f
        .schema
        .arguments
        .iter()
        .map(|a| arg_name(&a.name))
        .collect();
    Some(format!(
        "super::kernels_{}::{}({})",
        shard(i),
        kernel_fn(f),
        args.join(", ")
    ))
}

/// Whether `f`'s shape comes from a structured meta function, and its name and argument list.
fn structured_meta(input: &GenInput, function: usize) -> Option<String> {
    let g = input.group_of(function)?;
    if !g.structured || g.functional != function {
        return None;
    }
    let f = &input.functions[function];
    // An index list's meta function broadcasts the indices as views, which a lazy tensor
    // (no storage) cannot give: those operators take the meta-shadow path.
    if f.schema
        .arguments
        .iter()
        .any(|a| classify(a).ok() == Some(ArgClass::OptTensorList))
    {
        return None;
    }
    Some(meta_fn_name(&f.schema))
}

/// A `Scalar` overload whose `Tensor` counterpart is structured (`mul.Scalar` → `mul.Tensor`,
/// `div.Scalar_mode` → `div.Tensor_mode`; same arguments but `other`): its shape comes from the
/// counterpart's meta function with `other` as a wrapped number, exactly what the
/// CompositeExplicitAutograd kernel (`mul(self, wrapped_scalar_tensor(other))`) would trace,
/// checks and messages included. Returns the counterpart's meta name and the position of
/// `other`.
fn scalar_overload_meta(input: &GenInput, function: usize) -> Option<(String, usize)> {
    let f = &input.functions[function];
    let tensor_overload = f.schema.name.overload_name.replacen("Scalar", "Tensor", 1);
    if !f.schema.name.overload_name.starts_with("Scalar") || tensor_overload == "Tensor_Tensor" {
        return None;
    }
    let (g, _) = input.functions.iter().enumerate().find(|(_, g)| {
        g.schema.name.name == f.schema.name.name && g.schema.name.overload_name == tensor_overload
    })?;
    let (fa, ga) = (
        &input.functions[function].schema.arguments,
        &input.functions[g].schema.arguments,
    );
    if fa.len() != ga.len() {
        return None;
    }
    let mut other = None;
    for (i, (x, y)) in fa.iter().zip(ga).enumerate() {
        if x.name != y.name {
            return None;
        }
        match (classify(x).ok()?, classify(y).ok()?) {
            (ArgClass::Scalar, ArgClass::Tensor) if other.is_none() => other = Some(i),
            (a, b) if a == b => {}
            _ => return None,
        }
    }
    Some((structured_meta(input, g)?, other?))
}

fn kernel_name(yaml: &BackendYaml, function: usize, f: &GenFunction) -> String {
    yaml.supported
        .iter()
        .find(|k| k.function == function)
        .map(|k| k.kernel.clone())
        .unwrap_or_else(|| f.schema.name.name.to_string())
}

fn trace_kernel(
    yaml: &BackendYaml,
    input: &GenInput,
    function: usize,
) -> Result<String, BackendGenError> {
    let f = &input.functions[function];
    let returns = tensor_returns(f)?;
    let op = f.schema.name.name.to_string();
    // An index list holding a boolean mask makes the result's shape (or `index_put`'s checks)
    // depend on the mask's values: such a call runs eagerly, counted as the fallback counts.
    let mut body = String::new();
    let masks: Vec<String> = f
        .schema
        .arguments
        .iter()
        .filter(|a| classify(a).ok() == Some(ArgClass::OptTensorList))
        .map(|a| format!("has_mask({})", arg_name(&a.name)))
        .collect();
    if !masks.is_empty() {
        let all: Vec<String> = f
            .schema
            .arguments
            .iter()
            .map(|a| arg_name(&a.name))
            .collect();
        body.push_str(&format!(
            "    if {} {{
        return switchyard_backend::call_fallback::<op::{}>(crate::fallback::fallback, {});
    }}
",
            masks.join(" || "),
            op_type_name(&f.schema),
            super::rust::tuple(&all)
        ));
    }
    body.push_str(&format!(
        "    static COUNTER: Counter = Counter::new({:?});\n    COUNTER.inc();\n    let mut b = NodeBuilder::new(super::nodes::{})?;\n",
        format!("lazy::{}", kernel_name(yaml, function, f)),
        node_const(f)
    ));
    // Operands first (PyTorch converts inputs before shape inference, so a CPU operand raises
    // "not a lazy tensor" before any meta check), in schema order.
    for a in &f.schema.arguments {
        let n = arg_name(&a.name);
        let line = match classify(a)? {
            ArgClass::Tensor if CROSS_DEVICE_ARGS.contains(&(op.as_str(), a.name.as_str())) => {
                format!("    b.tensor_any_device({n})?;\n")
            }
            ArgClass::Tensor => format!("    b.tensor({n})?;\n"),
            ArgClass::OptTensor => format!("    b.opt_tensor({n})?;\n"),
            ArgClass::TensorList => format!("    b.tensor_list({n})?;\n"),
            ArgClass::OptTensorList
                if CROSS_DEVICE_ARGS.contains(&(op.as_str(), a.name.as_str())) =>
            {
                format!("    b.opt_tensor_list_any_device({n})?;\n")
            }
            ArgClass::OptTensorList => format!("    b.opt_tensor_list({n})?;\n"),
            ArgClass::Scalar => format!("    b.scalar(&{n})?;\n"),
            ArgClass::Attr(_) => format!("    b.attr(Attr::from({n}));\n"),
        };
        body.push_str(&line);
    }
    // IR reuse (B.4): the node the previous steps built here, before any shape inference.
    let reused = match returns {
        Returns::Tensors(1) => "output(&outs, 0)".to_string(),
        Returns::List => "Ok(outs)".to_string(),
        Returns::Tensors(n) => format!(
            "Ok(({}))",
            (0..n)
                .map(|i| format!("output(&outs, {i})?"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    body.push_str(&format!(
        "    if let Some(outs) = b.reuse()? {{\n        return {reused};\n    }}\n"
    ));
    // Shape inference, skipped when the thread's shape cache knows this operator on operands
    // of the same metadata with the same arguments (LTC's shape cache).
    let outer = std::mem::take(&mut body);
    if let Some(meta) = structured_meta(input, function) {
        let args: Vec<String> = f
            .schema
            .arguments
            .iter()
            .map(|a| {
                let n = arg_name(&a.name);
                if classify(a).ok() == Some(ArgClass::Scalar) {
                    format!("{n}.clone()")
                } else {
                    n
                }
            })
            .collect();
        body.push_str(&format!(
            "    // Structured: the meta function on the lazy tensors themselves.\n    let meta = switchyard_ops::meta::{meta}({}, Outs::Functional);\n    let meta = switchyard_ops::structured::meta_ok(&meta)?;\n    let shapes = shapes_of_specs(&meta.outputs);\n",
            args.join(", ")
        ));
    } else if let Some((meta, other)) = scalar_overload_meta(input, function) {
        let args: Vec<String> = f
            .schema
            .arguments
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let n = arg_name(&a.name);
                if i == other {
                    format!("&wrapped_scalar({n})?")
                } else if classify(a).ok() == Some(ArgClass::Scalar) {
                    format!("{n}.clone()")
                } else {
                    n
                }
            })
            .collect();
        body.push_str(&format!(
            "    // A Scalar overload: the Tensor overload's meta function with a wrapped number.\n    let meta = switchyard_ops::meta::{meta}({}, Outs::Functional);\n    let meta = switchyard_ops::structured::meta_ok(&meta)?;\n    let shapes = shapes_of_specs(&meta.outputs);\n",
            args.join(", ")
        ));
    } else {
        let args: Vec<String> = f
            .schema
            .arguments
            .iter()
            .map(|a| {
                let n = arg_name(&a.name);
                match classify(a) {
                    Ok(ArgClass::Tensor) => format!("&b.shadow({n})?"),
                    Ok(ArgClass::OptTensor) => format!("b.shadow_opt({n})?.as_ref()"),
                    Ok(ArgClass::TensorList) => format!("&b.shadow_list({n})?"),
                    Ok(ArgClass::OptTensorList) => format!("&b.shadow_opt_list({n})?"),
                    Ok(ArgClass::Scalar) => format!("{n}.clone()"),
                    _ => n,
                }
            })
            .collect();
        let n_out = match returns {
            Returns::Tensors(n) => n,
            Returns::List => 1,
        };
        let outs: Vec<String> = (0..n_out).map(|i| format!("o{i}")).collect();
        let pattern = if n_out == 1 {
            "o0".to_string()
        } else {
            format!("({})", outs.join(", "))
        };
        // A `<view>_copy` is its view cloned contiguous: the view alone on the meta shadows
        // gives its sizes, checks and messages, without the clone's meta allocation.
        // (Only where that body is its Meta and CPU kernel: `narrow_copy` has its own.)
        let generated_body =
            f.kernel(DispatchKey::Meta).is_none() && f.kernel(DispatchKey::CPU).is_none();
        let (comment, callee, contiguous) = match f.view_copy_of.filter(|_| generated_body) {
            // `view_copy` reshapes where the view fails (the kernel's fallback, same sizes).
            Some(view)
                if input.functions[view].schema.name.name.base == "view"
                    && input.functions[view].schema.name.overload_name.is_empty() =>
            {
                (
                    "A view copy: reshape (the kernel's view, or its fallback) on meta shadows of the operands, made contiguous.",
                    "reshape".to_string(),
                    "contiguous_",
                )
            }
            Some(view) => (
                "A view copy: the view on meta shadows of the operands, made contiguous.",
                op_type_name(&input.functions[view].schema),
                "contiguous_",
            ),
            None => (
                "Not structured: the Meta kernel on meta shadows of the operands.",
                op_type_name(&f.schema),
                "",
            ),
        };
        let shapes = match returns {
            Returns::List => format!("{contiguous}shapes_of_list(&o0)"),
            Returns::Tensors(_) => format!(
                "{contiguous}shapes_of_tensors(&[{}])",
                outs.iter()
                    .map(|o| format!("&{o}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        body.push_str(&format!(
            "    // {comment}\n    let {pattern} = {{\n        let _guard = meta_guard();\n        op::{callee}::call({})?\n    }};\n    let shapes = {shapes};\n",
            args.join(", "),
        ));
    }
    let infer: String = body.lines().map(|l| format!("        {l}\n")).collect();
    body = outer;
    body.push_str(&format!(
        "    let shapes = match b.known_shapes() {{\n        Some(shapes) => shapes,\n        None => {{\n{infer}            b.remember_shapes(shapes)\n        }}\n    }};\n"
    ));
    match returns {
        Returns::Tensors(1) => body.push_str("    b.build_one(shapes)\n"),
        Returns::List => body.push_str("    b.build(shapes)\n"),
        Returns::Tensors(n_out) => {
            let outs: Vec<String> = (0..n_out).map(|i| format!("output(&outs, {i})?")).collect();
            body.push_str(&format!(
                "    let outs = b.build(shapes)?;\n    Ok(({}))\n",
                outs.join(", ")
            ));
        }
    }
    Ok(format!(
        "/// `{}`: records an IR node of class `{}`.\npub(crate) fn {}({}) -> Result<{}> {{\n{body}}}\n",
        schema_text(f),
        node_class_name(
            &f.schema.name.name.to_string(),
            &f.schema.name.overload_name
        ),
        kernel_fn(f),
        params(f)?,
        output_type(&f.schema).map_err(|e| BackendGenError(format!(
            "cannot generate Rust for schema type {}",
            e.0
        )))?
    ))
}

fn lowering(input: &GenInput, function: usize) -> Result<String, BackendGenError> {
    let f = &input.functions[function];
    let returns = tensor_returns(f)?;
    let args: Vec<String> = f
        .schema
        .arguments
        .iter()
        .enumerate()
        .map(|(i, a)| {
            Ok(match classify(a)? {
                ArgClass::Tensor => format!("&ins.tensor({i})?"),
                ArgClass::OptTensor => format!("ins.opt_tensor({i})?.as_ref()"),
                ArgClass::TensorList => format!("&ins.tensor_list({i})?"),
                ArgClass::OptTensorList => format!("&ins.opt_tensor_list({i})?"),
                ArgClass::Scalar => format!("ins.scalar({i})?"),
                ArgClass::Attr(acc) => format!("ins.{acc}({i})?"),
            })
        })
        .collect::<Result<_, BackendGenError>>()?;
    let call = format!(
        "op::{}::redispatch(cpu_only(), {})?",
        op_type_name(&f.schema),
        args.join(", ")
    );
    let body = match returns {
        Returns::List => format!("    {}\n", call.trim_end_matches('?')),
        Returns::Tensors(1) => format!("    Ok(vec![{call}])\n"),
        Returns::Tensors(n_out) => {
            let outs: Vec<String> = (0..n_out).map(|i| format!("o{i}")).collect();
            format!(
                "    let ({}) = {call};\n    Ok(vec![{}])\n",
                outs.join(", "),
                outs.join(", ")
            )
        }
    };
    Ok(format!(
        "/// Lowers a `{}` node: its CPU kernel on the node's inputs.\npub(crate) fn {}(ins: &LowerArgs<'_>) -> Result<Vec<Tensor>> {{\n{body}}}\n",
        f.schema.name.unqualified(),
        lower_fn(f)
    ))
}

use super::backend::header;

const ALLOWS: &str = "#![allow(non_snake_case, non_upper_case_globals, dead_code, unused_imports, clippy::too_many_arguments, clippy::type_complexity, clippy::clone_on_copy, clippy::needless_borrow)]\n\n";

fn nodes_file(
    yaml: &BackendYaml,
    input: &GenInput,
    source: &str,
) -> Result<String, BackendGenError> {
    let nodes = node_functions(yaml);
    let mut out = header(source);
    out.push_str(
        "//! The IR node kinds of the lazy backend's generated operators (`full_codegen` and `ir_gen`)\n\
         //! and of its `non_native` nodes.\n\n",
    );
    out.push_str(ALLOWS);
    out.push_str("use crate::ir::{ArgKind, Hash128, NodeInfo, NonNativeInfo};\n\n");
    for (i, &function) in nodes.iter().enumerate() {
        let f = &input.functions[function];
        out.push_str(&format!(
            "/// Index of `{}` in [`NODES`].\npub(crate) const {}: usize = {i};\n",
            f.schema.name.unqualified(),
            node_const(f)
        ));
    }
    out.push_str(&format!(
        "\n/// One entry per generated node kind.\npub(crate) static NODES: [NodeInfo; {}] = [\n",
        nodes.len()
    ));
    for (i, &function) in nodes.iter().enumerate() {
        let f = &input.functions[function];
        let qualified = format!("aten::{}", f.schema.name.name);
        let names: Vec<String> = f
            .schema
            .arguments
            .iter()
            .map(|a| format!("{:?}", a.name))
            .collect();
        let kinds: Vec<String> = f
            .schema
            .arguments
            .iter()
            .map(|a| {
                Ok(match classify(a)? {
                    ArgClass::Tensor => "ArgKind::Tensor".to_string(),
                    ArgClass::OptTensor => "ArgKind::OptTensor".to_string(),
                    ArgClass::Scalar => "ArgKind::Scalar".to_string(),
                    ArgClass::TensorList => "ArgKind::TensorList".to_string(),
                    ArgClass::OptTensorList => "ArgKind::OptTensorList".to_string(),
                    ArgClass::Attr(_) => "ArgKind::Attr".to_string(),
                })
            })
            .collect::<Result<_, BackendGenError>>()?;
        out.push_str(&format!(
            "    NodeInfo {{\n        qualified: {qualified:?},\n        overload: {:?},\n        class: {:?},\n        op_hash: Hash128::of_str({qualified:?}),\n        arg_names: &[{}],\n        arg_kinds: &[{}],\n        num_outputs: {},\n        random: {},\n        lower: super::lowerings_{}::{},\n    }},\n",
            f.schema.name.overload_name,
            node_class_name(&f.schema.name.name.to_string(), &f.schema.name.overload_name),
            names.join(", "),
            kinds.join(", "),
            tensor_returns(f)?.count(),
            f.random,
            shard(i),
            lower_fn(f)
        ));
    }
    out.push_str("];\n\n");
    out.push_str(&format!(
        "/// The `non_native` nodes of the yaml (built by the backend's own constructors).\npub(crate) static NON_NATIVE: [NonNativeInfo; {}] = [\n",
        yaml.non_native.len()
    ));
    for n in &yaml.non_native {
        let name = n.func.split('(').next().unwrap_or_default().trim();
        let props: Vec<String> = n.properties.iter().map(|p| format!("{p:?}")).collect();
        out.push_str(&format!(
            "    NonNativeInfo {{ name: {name:?}, op_kind: {:?}, schema: {:?}, properties: &[{}] }},\n",
            n.op_kind(),
            n.func,
            props.join(", ")
        ));
    }
    out.push_str("];\n");
    Ok(out)
}

fn kernels_file(
    yaml: &BackendYaml,
    input: &GenInput,
    source: &str,
    n: usize,
) -> Result<String, BackendGenError> {
    let mut out = header(source);
    out.push_str(&format!(
        "//! Trace kernels of the `full_codegen` operators, shard {n}: each records an IR node and\n\
         //! returns lazy tensors; nothing is computed.\n\n"
    ));
    out.push_str(ALLOWS);
    out.push_str(
        "use crate::ir::Attr;\n\
         use crate::metrics::Counter;\n\
         use crate::trace::{NodeBuilder, contiguous_shapes_of_list, contiguous_shapes_of_tensors, has_mask, meta_guard, output, shapes_of_list, shapes_of_specs, shapes_of_tensors, wrapped_scalar};\n\
         use switchyard_core::{Device, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};\n\
         use switchyard_ops::op;\n\
         use switchyard_ops::structured::Outs;\n\n",
    );
    let nodes = node_functions(yaml);
    let mut first = true;
    for (i, &function) in nodes.iter().enumerate() {
        if shard(i) != n || !yaml.is_full_codegen(function) {
            continue;
        }
        if !first {
            out.push('\n');
        }
        first = false;
        out.push_str(&trace_kernel(yaml, input, function)?);
    }
    Ok(out)
}

fn lowerings_file(
    yaml: &BackendYaml,
    input: &GenInput,
    source: &str,
    n: usize,
) -> Result<String, BackendGenError> {
    let mut out = header(source);
    out.push_str(&format!(
        "//! Lowerings of the generated node kinds, shard {n}: the CPU kernel of each node's\n\
         //! operator, called below every layer.\n\n"
    ));
    out.push_str(ALLOWS);
    out.push_str(
        "use crate::trace::{LowerArgs, cpu_only};\n\
         use switchyard_core::{Result, Tensor};\n\
         use switchyard_ops::op;\n\n",
    );
    let nodes = node_functions(yaml);
    let mut first = true;
    for (i, &function) in nodes.iter().enumerate() {
        if shard(i) != n {
            continue;
        }
        if !first {
            out.push('\n');
        }
        first = false;
        out.push_str(&lowering(input, function)?);
    }
    Ok(out)
}

/// The lazy files of `yaml` (empty unless the backend is `Lazy`), paths relative to the
/// output directory, and the lines `mod.rs` needs to declare them.
pub fn generate_lazy_files(
    yaml: &BackendYaml,
    _nf: &NativeFunctions,
    input: &GenInput,
    source: &str,
) -> Result<(Vec<(PathBuf, String)>, String), BackendGenError> {
    if !yaml.is_lazy() {
        return Ok((Vec::new(), String::new()));
    }
    let mut files = vec![("nodes.rs".into(), nodes_file(yaml, input, source)?)];
    let mut decls = String::from("pub mod nodes;\n");
    for n in 0..SHARDS {
        files.push((
            format!("kernels_{n}.rs").into(),
            kernels_file(yaml, input, source, n)?,
        ));
        files.push((
            format!("lowerings_{n}.rs").into(),
            lowerings_file(yaml, input, source, n)?,
        ));
        decls.push_str(&format!("pub mod kernels_{n};\npub mod lowerings_{n};\n"));
    }
    Ok((files, decls))
}

/// The function name of a generated trace kernel (for tests and docs).
pub fn trace_kernel_name(f: &GenFunction) -> String {
    fn_name(&kernel_fn(f))
}
