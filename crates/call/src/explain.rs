//! A call explained: the key-set computation and every dispatch hop, as in the walk-through of
//! `torch.add` in PyTorch's "Codegen + Structured Kernels" wiki page. `switchyard explain` runs
//! it on sample arguments ([`sample_stack`]); the Python module on the caller's own
//! ([`explain_stack`]).

use crate::args::{default_value, parse_argument};
use switchyard_core::local_dispatch::tls_local_dispatch_key_set;
use switchyard_core::{Device, DispatchKeySet, IValue, Result, ScalarType, Stack, Tensor};
use switchyard_dispatch::{OperatorHandle, trace};
use switchyard_schema::{BaseType, FunctionSchema, Type};

/// A 2×2 float sample tensor of zeros on `device`, made through the dispatcher (`zeros`), so
/// a device without storage (the lazy device) makes its own tensor.
fn sample_tensor(device: Device) -> Result<Tensor> {
    switchyard_ops::op::zeros::call(&[2, 2], Some(ScalarType::Float), None, Some(device), None)
}

/// A sample value for argument `index` of `schema`: its default, small tensors on `device`, or
/// simple values. Errors name the operator and the argument.
fn sample(
    schema: &FunctionSchema,
    index: usize,
    device: Device,
    requires_grad: bool,
) -> Result<IValue> {
    let arg = &schema.arguments[index];
    if arg.default.is_some() {
        return default_value(schema, index, device);
    }
    let ty = &arg.ty;
    let text = match ty {
        _ if ty.is_tensor() || ty.is_optional_tensor() => {
            let t = sample_tensor(device)?;
            if requires_grad {
                t.set_requires_grad(true)?;
            }
            return Ok(IValue::Tensor(t));
        }
        Type::Optional(_) => "None",
        Type::List { elem, .. } if elem.is_tensor() => {
            return Ok(IValue::TensorList(vec![sample_tensor(device)?]));
        }
        // A sized list (`int[2] kernel_size`) takes a bare number for all its entries.
        Type::List { size: Some(_), .. } => "1",
        Type::List { .. } => "[1]",
        Type::Base(BaseType::Str) => "none",
        Type::Base(BaseType::ScalarType) => "float32",
        Type::Base(BaseType::Device) => return Ok(IValue::Device(device)),
        _ => "1",
    };
    parse_argument(schema, index, text, device)
}

/// Sample arguments for a call of `op`: defaults where the schema has them, 2×2 float tensors
/// on `device` (requiring grad if `requires_grad`), and simple values otherwise.
pub fn sample_stack(op: &OperatorHandle, device: Device, requires_grad: bool) -> Result<Stack> {
    let schema = op.require_schema()?;
    schema
        .arguments
        .iter()
        .enumerate()
        .map(|(i, _)| sample(&schema, i, device, requires_grad))
        .collect()
}

/// Explains a call of `op` with sample arguments on `device`.
pub fn explain(op: OperatorHandle, device: Device, requires_grad: bool) -> Result<String> {
    let stack = sample_stack(&op, device, requires_grad)?;
    explain_stack(&op, stack)
}

/// Explains a call of `op` with the arguments in `stack` (in schema order): the dispatch keys
/// of each tensor argument, their union, the thread-local include/exclude sets, the
/// fallthrough mask, the key that wins, then the call itself, traced hop by hop, what autograd
/// recorded and the result (or the error the call failed with).
pub fn explain_stack(op: &OperatorHandle, mut stack: Stack) -> Result<String> {
    let schema = op.require_schema()?;
    let mut out = format!(
        "operator: {}\nschema:   {schema}\n\n1. Dispatch keys of the tensor arguments\n",
        op.name()
    );
    let mut union = DispatchKeySet::EMPTY;
    for (a, v) in schema.arguments.iter().zip(&stack) {
        for t in v.tensors() {
            out.push_str(&format!("   {:<12} {}\n", a.name, t.key_set()));
            union = union | t.key_set();
        }
    }
    if union.is_empty() {
        out.push_str("   (no tensor arguments)\n");
    }
    let local = tls_local_dispatch_key_set();
    let with_tls = (union | local.included) - local.excluded;
    let mask = op.fallthrough_mask(with_tls);
    let final_ks = op.compute_dispatch_key_set(union);
    out.push_str(&format!(
        "\n2. Union of the arguments' keys\n   {union}\n\n3. Thread-local state: include {}, exclude {}\n   {with_tls}\n\n4. Minus keys whose kernel for this operator is a fallthrough\n   mask {mask}\n   {final_ks}\n\n5. Highest-priority key: {}\n\n6. Hops\n",
        local.included,
        local.excluded,
        final_ks.highest_priority_type_id()
    ));
    let (result, events) = trace::capture(|| op.call_boxed(&mut stack));
    for e in &events {
        out.push_str(&format!(
            "   {}[{}] {} at {} -> {} [{}]\n",
            "  ".repeat(e.depth),
            e.hop.label(),
            e.operator,
            e.key,
            e.kernel,
            e.provenance
        ));
    }
    if result.is_ok() {
        out.push_str(&autograd_section(&stack)?);
    }
    match result {
        Ok(()) => out.push_str(&format!(
            "\nresult: {}\n",
            stack
                .iter()
                .map(|v| format!("{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Err(e) => out.push_str(&format!("\nthe call failed: {e}\n")),
    }
    Ok(out)
}

/// What the Autograd kernel recorded: each result's `grad_fn` and where its edges lead (the
/// graph the backward pass will walk), or why nothing was recorded.
fn autograd_section(results: &[IValue]) -> Result<String> {
    let mut lines = Vec::new();
    for (i, v) in results.iter().enumerate() {
        for t in v.tensors() {
            let Some(f) = switchyard_autograd::grad_fn(t)? else {
                continue;
            };
            let next: Vec<String> = f
                .core()
                .next_edges()
                .iter()
                .map(|e| match &e.function {
                    Some(n) => format!("({}, {})", n.name(), e.input_nr),
                    None => "(None, 0)".to_string(),
                })
                .collect();
            lines.push(format!(
                "   result {i}: grad_fn=<{}>, next_functions [{}]\n",
                f.name(),
                next.join(", ")
            ));
        }
    }
    if lines.is_empty() {
        return Ok(String::new());
    }
    Ok(format!(
        "\n7. Autograd: the Autograd kernel recorded a backward node, then redispatched below the Autograd keys\n{}",
        lines.concat()
    ))
}
