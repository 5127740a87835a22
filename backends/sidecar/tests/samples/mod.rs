//! Sample arguments for every operator and the comparison of a device's results with the
//! CPU's, shared by the sidecar's test (`backends/sidecar/tests/sidecar.rs`) and the lazy
//! backend's (`backends/lazy/tests/lazy/samples.rs`), which include this file by `#[path]`.
//!
//! [`VARIANTS`] are attempts at arguments (a tensor literal, index tensors, shapes, dims);
//! [`arguments`] turns one into a stack for an operator's schema on a device; the first
//! variant the CPU accepts is the operator's sample. [`every_operator`] runs every `aten`
//! operator on the CPU and on a [`Target`] device with equal arguments and compares returns,
//! written arguments and version bumps.

// Each including test binary uses its part of this file.
#![allow(dead_code)]

use switchyard_call::args::parse_call_args;
use switchyard_core::{Device, IValue, Result as CoreResult, ScalarType, Stack, Tensor};
use switchyard_dispatch::{Dispatcher, OperatorHandle};
use switchyard_schema::SchemaKind;

/// The device a comparison runs on and how its tensors are read.
pub struct Target {
    /// The device's name in messages (`sidecar`, `lazy`).
    pub name: &'static str,
    /// Where the run's tensors are created.
    pub device: Device,
    /// A device tensor as a CPU tensor with the same sizes and strides.
    pub to_host: fn(&Tensor) -> CoreResult<Tensor>,
    /// Run after each call on the device, before anything is compared (the lazy device's
    /// `mark_step`).
    pub after_call: fn() -> CoreResult<()>,
    /// Floating-point values must equal the CPU's bit for bit (else within 1e-5).
    pub exact: bool,
    /// Strides of returned tensors must equal the CPU's.
    pub strides: bool,
    /// Every variant the CPU accepts is compared, not only the first.
    pub all_variants: bool,
    /// Version bumps of the device's call of an operator (by name) on a variant, where they
    /// differ from the CPU's (`None`: as [`BUMPS_OTHER_THAN_ONE`] says).
    pub bumps: fn(&str, &Variant) -> Option<u32>,
}

/// Argument texts for one attempt at calling an operator; `None` leaves the argument to its
/// default (or absent optional / auto-created out tensor).
pub struct Variant {
    pub name: &'static str,
    pub tensor: &'static str,
    pub long: &'static str,
    pub shape: &'static str,
    pub dims: &'static str,
    pub dim: &'static str,
    pub optional: bool,
    pub out_dtype: &'static str,
}

pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "2x3 float",
        tensor: "[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
        long: "[[0,1,0],[1,0,1]]",
        shape: "[2,3]",
        dims: "[1]",
        dim: "1",
        optional: false,
        out_dtype: "float32",
    },
    Variant {
        name: "2x3 float, optionals given",
        tensor: "[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
        long: "[[0,1,0],[1,0,1]]",
        shape: "[2,3]",
        dims: "[0]",
        dim: "1",
        optional: true,
        out_dtype: "float32",
    },
    Variant {
        name: "3x3 float",
        tensor: "[[0.5,-1.25,2.0],[3.0,-0.75,1.5],[1.0,2.0,-3.0]]",
        long: "[[0,1,2],[2,1,0],[1,1,1]]",
        shape: "[3,3]",
        dims: "[0,1]",
        dim: "1",
        optional: false,
        out_dtype: "float32",
    },
    Variant {
        name: "1x2x4x4 float",
        tensor: "[[[[0.5,-1.0,2.0,1.5],[3.0,0.25,-2.0,1.0],[0.0,1.0,2.0,3.0],[-1.0,-2.0,0.5,0.75]],[[1.0,2.0,3.0,4.0],[0.5,0.5,0.5,0.5],[-1.0,1.0,-1.0,1.0],[2.0,0.0,2.0,0.0]]]]",
        long: "[[[[0,1,0,1],[1,0,1,0],[0,0,1,1],[1,1,0,0]],[[0,1,0,1],[1,0,1,0],[0,0,1,1],[1,1,0,0]]]]",
        shape: "[2,2]",
        dims: "[1]",
        dim: "1",
        optional: false,
        out_dtype: "float32",
    },
    Variant {
        name: "3 float",
        tensor: "[0.5,-1.25,2.0]",
        long: "[0,2,1]",
        shape: "[3]",
        dims: "[0]",
        dim: "0",
        optional: false,
        out_dtype: "float32",
    },
    Variant {
        name: "2x3 int64",
        tensor: "[[1,2,3],[4,0,2]]",
        long: "[[0,1,0],[1,0,1]]",
        shape: "[2,3]",
        dims: "[1]",
        dim: "1",
        optional: false,
        out_dtype: "int64",
    },
    Variant {
        name: "2x3 bool",
        tensor: "[[true,false,true],[false,false,true]]",
        long: "[[0,1,0],[1,0,1]]",
        shape: "[2,3]",
        dims: "[1]",
        dim: "1",
        optional: false,
        out_dtype: "bool",
    },
    Variant {
        name: "2x2x2 float",
        tensor: "[[[0.5,-1.25],[2.0,3.0]],[[-0.75,1.5],[1.0,2.0]]]",
        long: "[[[0,1],[1,0]],[[1,1],[0,0]]]",
        shape: "[2,2,2]",
        dims: "[1]",
        dim: "1",
        optional: false,
        out_dtype: "float32",
    },
    Variant {
        name: "2x3 probabilities",
        tensor: "[[0.5,0.25,1.0],[0.0,0.75,0.5]]",
        long: "[0,1]",
        shape: "[2,3]",
        dims: "[1]",
        dim: "1",
        optional: true,
        out_dtype: "float32",
    },
];

/// The text of argument `name` of type `ty` under `v`, or `None` for its default.
pub fn argument_text(
    arg: &switchyard_schema::Argument,
    position: usize,
    v: &Variant,
) -> Option<String> {
    use switchyard_schema::{BaseType, Type};
    let name = arg.name.as_str();
    let base = |t: &Type| match t {
        Type::Optional(inner) => (**inner).clone(),
        other => other.clone(),
    };
    let ty = base(&arg.ty);
    if arg.is_out && ty.is_tensor() {
        return Some(format!(
            "{{\"dtype\": \"{}\", \"shape\": [0], \"values\": []}}",
            if name == "indices" {
                "int64"
            } else {
                v.out_dtype
            }
        ));
    }
    if arg.ty.is_optional() && !v.optional && arg.default.is_some() {
        return None;
    }
    // With `optional`, optional arguments get a value even where they have a default.
    let give_optional = v.optional && arg.ty.is_optional();
    match name {
        "rounding_mode" => return Some("floor".to_owned()),
        "value" if ty.is_tensor() => return Some("2.5".to_owned()),
        "high" => return Some("5".to_owned()),
        "groups" => return Some("1".to_owned()),
        "padding" | "output_padding" if arg.default.is_none() => return Some("[0,0]".to_owned()),
        "dilation" if arg.default.is_none() => return Some("[1,1]".to_owned()),
        "index" if v.shape == "[3]" || v.name.contains("probabilities") => {
            return Some("[0,1]".to_owned());
        }
        _ => {}
    }
    match &ty {
        Type::Base(BaseType::Tensor) => Some(match name {
            "target" if v.shape == "[2,3]" => "[2,0]".to_owned(),
            "index" | "indices" => v.long.to_owned(),
            "mask" | "condition" => v.long.replace('0', "false").replace(['1', '2'], "true"),
            "weight" | "bias" if v.shape == "[2,3]" && arg.ty.is_optional() => {
                "[1.0,2.0,0.5]".to_owned()
            }
            // A second tensor operand differs from the first.
            _ if position > 0 && !v.tensor.contains("true") && !v.tensor.contains('.') => {
                v.tensor.replace('-', "")
            }
            _ if position > 0 => v.tensor.replace("0.5", "0.25"),
            _ => v.tensor.to_owned(),
        }),
        Type::List { elem, .. } if elem.is_tensor() => Some(format!("[{},{}]", v.tensor, v.tensor)),
        Type::List { elem, .. } if elem.is_optional_tensor() => Some(format!("[{}]", v.long)),
        _ if arg.default.is_some() && !give_optional => None,
        Type::Base(BaseType::Int | BaseType::SymInt) => Some(
            match name {
                "dim" | "dim0" => v.dim,
                "dim1" => "0",
                "n" | "m" | "num_classes" | "steps" => "3",
                "k" | "size" | "step" | "length" | "split_size" | "sections" | "chunks" => "1",
                _ => "0",
            }
            .to_owned(),
        ),
        Type::List { elem, .. }
            if matches!(**elem, Type::Base(BaseType::Int | BaseType::SymInt)) =>
        {
            Some(
                match name {
                    "size" | "sizes" => v.shape,
                    "dims" | "dim" => v.dims,
                    "stride" => "[1,1]",
                    "pad" => "[1,1]",
                    "repeats" => "[1,2]",
                    "shifts" => "[1]",
                    "normalized_shape" => "[3]",
                    "kernel_size" => "[2,2]",
                    "split_sizes" | "split_size" => "[1,1]",
                    _ => "[1]",
                }
                .to_owned(),
            )
        }
        Type::Base(BaseType::Float) => Some("0.5".to_owned()),
        Type::Base(BaseType::Bool) => Some("false".to_owned()),
        Type::Base(BaseType::Scalar) => Some(if name == "min" { "0" } else { "2" }.to_owned()),
        Type::Base(BaseType::ScalarType) => Some("float32".to_owned()),
        Type::Base(BaseType::Str) => Some(if name == "reduce" { "add" } else { "none" }.to_owned()),
        // An optional argument without a default must still be given (`Generator? generator`).
        _ if arg.ty.is_optional() && arg.default.is_none() => Some("None".to_owned()),
        _ => None,
    }
}

/// Fresh arguments for one run on `device` (tensors created there).
pub fn arguments(op: &OperatorHandle, v: &Variant, device: Device) -> Option<Stack> {
    let schema = op.schema()?;
    let mut texts = Vec::new();
    let mut tensors_seen = 0;
    for a in &schema.arguments {
        let text = argument_text(a, tensors_seen, v);
        if a.ty.is_tensor_like() {
            tensors_seen += 1;
        }
        if let Some(t) = text {
            texts.push(format!("{}={t}", a.name));
        }
    }
    let mut stack = parse_call_args(&schema, &texts, device).ok()?;
    // Device arguments name the device of the run (factories create there).
    for (a, value) in schema.arguments.iter().zip(stack.iter_mut()) {
        if a.name == "device" {
            *value = IValue::Device(device);
        }
    }
    Some(stack)
}

/// A tensor's dtype, sizes, strides and row-major values as f64.
type Contents = (ScalarType, Vec<i64>, Vec<i64>, Vec<f64>);

/// Row-major values of a tensor (any device) as f64 plus dtype, shape and strides (the
/// tensor's own, not its host copy's).
fn contents(t: &Tensor, target: &Target) -> Result<Contents, String> {
    let host = if t.is_cpu() {
        Clone::clone(t)
    } else {
        (target.to_host)(t).map_err(|e| format!("reading back failed: {e}"))?
    };
    let values = host.to_f64_vec().map_err(|e| e.to_string())?;
    Ok((
        t.dtype(),
        host.sizes().to_vec(),
        t.strides().to_vec(),
        values,
    ))
}

/// Whether two value sequences are equal: NaN equals NaN, and unless `exact` a relative
/// difference up to 1e-5 is accepted.
pub fn same_values(a: &[f64], b: &[f64], exact: bool) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            (x.is_nan() && y.is_nan())
                || x == y
                || (!exact && (x - y).abs() <= 1e-5 * (1.0 + x.abs().max(y.abs())))
        })
}

/// Compares one returned value (or written argument) of the device run with the CPU run:
/// every tensor of the device run must be on the device (a result left on the CPU, or a
/// written argument replaced by a CPU tensor, is a fallback bug), with the CPU run's dtype,
/// shape and values (and strides, if the target promises them).
pub fn compare(
    cpu: &IValue,
    side: &IValue,
    what: &str,
    exact: bool,
    target: &Target,
) -> Result<(), String> {
    let name = target.name;
    match (cpu, side) {
        (IValue::Tensor(c), IValue::Tensor(s)) => {
            if s.device() != target.device {
                return Err(format!("{what}: on {}", s.device()));
            }
            let (cd, cs, cst, cv) = contents(c, target)?;
            let (sd, ss, sst, sv) = contents(s, target).map_err(|e| format!("{what}: {e}"))?;
            if cd != sd || cs != ss || !same_values(&cv, &sv, exact || !cd.is_floating_point()) {
                return Err(format!(
                    "{what}: cpu {cd:?}{cs:?} {cv:?} vs {name} {sd:?}{ss:?} {sv:?}"
                ));
            }
            if target.strides && cs.iter().product::<i64>() > 1 && cst != sst {
                return Err(format!(
                    "{what}: cpu strides {cst:?} vs {name} strides {sst:?} (sizes {cs:?})"
                ));
            }
            Ok(())
        }
        (IValue::TensorList(c), IValue::TensorList(s)) if c.len() == s.len() => {
            for (i, (c, s)) in c.iter().zip(s).enumerate() {
                compare(
                    &IValue::Tensor(Clone::clone(c)),
                    &IValue::Tensor(Clone::clone(s)),
                    &format!("{what}[{i}]"),
                    exact,
                    target,
                )?;
            }
            Ok(())
        }
        (IValue::Tuple(c), IValue::Tuple(s)) if c.len() == s.len() => {
            for (i, (c, s)) in c.iter().zip(s).enumerate() {
                compare(c, s, &format!("{what}.{i}"), exact, target)?;
            }
            Ok(())
        }
        (c, s) if format!("{c:?}") == format!("{s:?}") => Ok(()),
        (c, s) => Err(format!("{what}: cpu {c:?} vs {name} {s:?}")),
    }
}

/// Operators no device run compares, with the reason.
pub const SKIPPED: &[(&str, &str)] = &[
    ("aten::_to_cpu", "returns CPU tensors by definition"),
    (
        "aten::_copy_from",
        "a backend primitive, tested through copy_",
    ),
    (
        "aten::_copy_from_and_resize",
        "a backend primitive, tested through out= ops",
    ),
    ("aten::_copy_from.out", "a backend primitive"),
    ("aten::_copy_from_and_resize.out", "a backend primitive"),
];

/// The version counters of the tensors a call writes (list elements one by one).
pub fn written_versions(facts: &switchyard_dispatch::SchemaFacts, args: &Stack) -> Vec<u32> {
    facts
        .tensor_arguments
        .iter()
        .filter(|a| a.is_write)
        .flat_map(|a| match &args[a.index] {
            IValue::Tensor(t) => vec![t.version()],
            IValue::TensorList(l) => l.iter().map(Tensor::version).collect(),
            IValue::OptionalTensorList(l) => l.iter().flatten().map(Tensor::version).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The operators whose calls (with this file's arguments) do not bump once in PyTorch 2.15
/// either (recorded from `/tmp/torchref`), with the number of bumps.
pub const BUMPS_OTHER_THAN_ONE: &[(&str, u32, &str)] = &[
    (
        "aten::dropout_",
        0,
        "called with train=False: a composite returning `self` untouched",
    ),
    (
        "aten::randn.out",
        2,
        "a CompositeImplicitAutograd composite: resize_, then normal_, each bumping",
    ),
    ("aten::randn.generator_out", 2, "as randn.out"),
    (
        "aten::detach_",
        0,
        "changes autograd state, not data (PyTorch's manual ADInplaceOrView kernel does not bump)",
    ),
    (
        "aten::rand.generator_out",
        2,
        "a CompositeImplicitAutograd composite: resize_, then uniform_",
    ),
];

/// Every tensor a call writes had its version bumped exactly once (PyTorch bumps once per
/// in-place or out= call, whatever the kernel does inside: copies into `self`, proxies,
/// composites calling other out= operators, the fallback's copy-back), except for the
/// composites PyTorch runs above its ADInplaceOrView layer ([`BUMPS_OTHER_THAN_ONE`]).
pub fn bumped_once(op: &str, before: &[u32], after: &[u32]) -> Result<(), String> {
    bumped(op, before, after, None)
}

/// [`bumped_once`], with `own` (a device's own count) first.
pub fn bumped(op: &str, before: &[u32], after: &[u32], own: Option<u32>) -> Result<(), String> {
    let bumps = own.unwrap_or_else(|| bumps_of(op));
    let want: Vec<u32> = before.iter().map(|v| v + bumps).collect();
    if after != want.as_slice() {
        return Err(format!(
            "versions of the written tensors went from {before:?} to {after:?}, not up by {bumps}"
        ));
    }
    Ok(())
}

/// The bumps of one call of `op` in PyTorch: 1, or as [`BUMPS_OTHER_THAN_ONE`] says.
fn bumps_of(op: &str) -> u32 {
    BUMPS_OTHER_THAN_ONE
        .iter()
        .find(|(name, _, _)| *name == op)
        .map_or(1, |(_, n, _)| *n)
}

/// Every `aten` operator with a schema, sorted by name.
pub fn aten_operators() -> Vec<OperatorHandle> {
    let mut ops: Vec<OperatorHandle> = Dispatcher::singleton()
        .all_operators()
        .into_iter()
        .filter(|o| o.name().starts_with("aten::") && o.schema().is_some())
        .collect();
    ops.sort_by(|a, b| a.name().cmp(b.name()));
    ops
}

/// The first variant whose arguments the CPU accepts for `op` (its call succeeds, with the
/// default generator seeded 7), with the CPU's stack after the call.
pub fn cpu_sample(op: &OperatorHandle) -> Option<(&'static Variant, Stack)> {
    VARIANTS.iter().find_map(|v| {
        let mut stack = arguments(op, v, Device::CPU)?;
        switchyard_core::generator::manual_seed(7).ok()?;
        op.call_boxed(&mut stack).ok()?;
        Some((v, stack))
    })
}

/// One operator the device run did not match, on the variant it was sampled with.
pub struct Failure {
    /// The operator (`aten::add.Tensor`).
    pub op: String,
    /// The variant's name.
    pub variant: &'static str,
    /// What differed.
    pub error: String,
}

/// What [`every_operator`] found.
#[derive(Default)]
pub struct Report {
    /// The operators whose run matched the CPU's, with their schema kind.
    pub compared: Vec<(String, SchemaKind)>,
    /// The operators that did not.
    pub failures: Vec<Failure>,
    /// The operators for which no variant gave arguments the CPU accepts.
    pub never_ran: Vec<String>,
    /// View operators left out (a device's views are its own business).
    pub views: usize,
    /// The number of (operator, variant) runs that matched.
    pub variants: usize,
}

impl Report {
    /// The number of compared operators of schema kind `kind`.
    pub fn forms(&self, kind: SchemaKind) -> usize {
        self.compared.iter().filter(|(_, k)| *k == kind).count()
    }
}

/// Runs every `aten` operator but views and `skipped` on the CPU and on `target`, each with
/// the arguments of its first variant the CPU accepts (or of every one, with
/// [`Target::all_variants`]), and compares: the calls bump each
/// written tensor's version once (or as [`BUMPS_OTHER_THAN_ONE`] says, on both), the device
/// call succeeds, returns and written arguments equal the CPU's. Every device tensor of one
/// operator's run is dropped before the next operator runs.
pub fn every_operator(target: &Target, skipped: &[(&str, &str)]) -> Report {
    let mut report = Report::default();
    let name_of = target.name;
    for op in &aten_operators() {
        let name = op.name();
        if SKIPPED.iter().chain(skipped).any(|(n, _)| *n == name) {
            continue;
        }
        let facts = op.require_schema_facts().unwrap();
        if facts.is_view() {
            report.views += 1;
            continue;
        }
        let mut ran = false;
        let (mut passed, mut failed) = (0, false);
        for v in VARIANTS {
            let Some(mut cpu_stack) = arguments(op, v, Device::CPU) else {
                continue;
            };
            let cpu_args = cpu_stack.clone();
            let cpu_versions = written_versions(&facts, &cpu_args);
            switchyard_core::generator::manual_seed(7).unwrap();
            if op.call_boxed(&mut cpu_stack).is_err() {
                continue;
            }
            ran = true;
            let Some(mut side_stack) = arguments(op, v, target.device) else {
                report.failures.push(Failure {
                    op: name.to_owned(),
                    variant: v.name,
                    error: format!("could not create the arguments on the {name_of}"),
                });
                failed = true;
                break;
            };
            let side_args = side_stack.clone();
            let side_versions = written_versions(&facts, &side_args);
            switchyard_core::generator::manual_seed(7).unwrap();
            let exact = target.exact;
            let outcome = bumped_once(name, &cpu_versions, &written_versions(&facts, &cpu_args))
                .map_err(|e| format!("on the CPU: {e}"))
                .and_then(|()| {
                    op.call_boxed(&mut side_stack)
                        .map_err(|e| format!("failed on the {name_of}: {e}"))
                })
                .and_then(|()| {
                    (target.after_call)()
                        .map_err(|e| format!("failed on the {name_of} after the call: {e}"))
                })
                .and_then(|()| {
                    bumped(
                        name,
                        &side_versions,
                        &written_versions(&facts, &side_args),
                        (target.bumps)(name, v),
                    )
                    .map_err(|e| format!("on the {name_of}: {e}"))?;
                    if cpu_stack.len() != side_stack.len() {
                        return Err("different number of returns".to_owned());
                    }
                    for (i, (c, s)) in cpu_stack.iter().zip(&side_stack).enumerate() {
                        compare(c, s, &format!("return {i}"), exact, target)?;
                    }
                    // Written arguments end up equal too (the mutation reached the original).
                    for a in facts.tensor_arguments.iter().filter(|a| a.is_write) {
                        compare(
                            &cpu_args[a.index],
                            &side_args[a.index],
                            &format!("argument {}", a.index),
                            exact,
                            target,
                        )?;
                    }
                    Ok(())
                });
            match outcome {
                Ok(()) => passed += 1,
                Err(error) => {
                    failed = true;
                    report.failures.push(Failure {
                        op: name.to_owned(),
                        variant: v.name,
                        error,
                    });
                }
            }
            if !target.all_variants {
                break;
            }
        }
        if !ran {
            report.never_ran.push(name.to_owned());
        } else if !failed {
            report
                .compared
                .push((name.to_owned(), op.schema().unwrap().kind()));
            report.variants += passed;
        }
    }
    report
}
