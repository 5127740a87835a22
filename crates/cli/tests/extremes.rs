//! Every operator, called with extreme integer arguments (sizes, dims, counts at the ends of
//! `int64`), answers with an error or a result and never panics: sizes and strides computed
//! from user numbers are checked for overflow (a debug build panics on an unchecked overflow,
//! a release build wraps into a wrong answer), and allocations sized by them are fallible. Run
//! on CPU and on Meta tensors, through the dispatcher by name, with the arguments built as
//! `switchyard call` builds them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use switchyard::args::parse_call_args;
use switchyard_core::Device;
use switchyard_dispatch::{Dispatcher, OperatorHandle};
use switchyard_schema::{Argument, BaseType, FunctionSchema, Type};

/// The integers tried: none of them is a size the machine could allocate (a "large but
/// possible" size would make a kernel really allocate and compute).
const EXTREMES: [i64; 5] = [i64::MAX, i64::MIN, 1 << 62, -(1 << 62), -1];

fn base(ty: &Type) -> &Type {
    match ty {
        Type::Optional(inner) => inner,
        other => other,
    }
}

fn is_int(ty: &Type) -> bool {
    matches!(base(ty), Type::Base(BaseType::Int | BaseType::SymInt))
}

/// `Some(size)` for `int[]` / `int[N]` (and their optionals).
fn int_list_size(ty: &Type) -> Option<Option<usize>> {
    match base(ty) {
        Type::List { elem, size } if is_int(elem) => Some(*size),
        _ => None,
    }
}

/// A plain value for an argument that is not under test; `None` leaves it to its default.
fn plain_text(a: &Argument, tensors_seen: usize) -> Option<String> {
    let name = a.name.as_str();
    let ty = base(&a.ty);
    if a.is_out && ty.is_tensor() {
        return Some("{\"dtype\": \"float32\", \"shape\": [0], \"values\": []}".to_owned());
    }
    if a.default.is_some() || a.ty.is_optional() {
        return None;
    }
    Some(match ty {
        Type::Base(BaseType::Tensor) => match name {
            "index" | "indices" | "target" => "[0,1]".to_owned(),
            "mask" | "condition" => "[true,false]".to_owned(),
            _ if tensors_seen > 0 => "[[0.25,-1.0,2.0],[3.0,0.5,1.5]]".to_owned(),
            _ => "[[0.5,-1.0,2.0],[3.0,0.25,1.5]]".to_owned(),
        },
        Type::List { elem, .. } if elem.is_tensor() => "[[1.0,2.0],[3.0,4.0]]".to_owned(),
        Type::List { elem, .. } if elem.is_optional_tensor() => "[[0,1]]".to_owned(),
        Type::Base(BaseType::Int | BaseType::SymInt) => {
            if name.starts_with("dim") { "0" } else { "1" }.to_owned()
        }
        Type::List { size, .. } if int_list_size(ty).is_some() => match size {
            Some(n) => format!("[{}]", vec!["1"; *n].join(",")),
            None => "[1]".to_owned(),
        },
        Type::Base(BaseType::Float) => "0.5".to_owned(),
        Type::Base(BaseType::Bool) => "false".to_owned(),
        Type::Base(BaseType::Scalar) => "2".to_owned(),
        Type::Base(BaseType::ScalarType) => "float32".to_owned(),
        Type::Base(BaseType::Str) => "none".to_owned(),
        _ => return None,
    })
}

/// The texts of one call with argument `target` set to `value`.
fn call_texts(schema: &FunctionSchema, target: usize, value: &str) -> Vec<String> {
    let mut tensors_seen = 0;
    let mut texts = Vec::new();
    for (i, a) in schema.arguments.iter().enumerate() {
        let text = if i == target {
            Some(value.to_owned())
        } else {
            plain_text(a, tensors_seen)
        };
        if a.ty.is_tensor_like() {
            tensors_seen += 1;
        }
        if let Some(t) = text {
            texts.push(format!("{}={t}", a.name));
        }
    }
    texts
}

/// The values tried for an integer (or integer list) argument.
fn extreme_texts(ty: &Type) -> Vec<String> {
    if is_int(ty) {
        return EXTREMES.iter().map(i64::to_string).collect();
    }
    match int_list_size(ty) {
        Some(Some(n)) => EXTREMES
            .iter()
            .flat_map(|e| [vec![e.to_string(); n].join(","), format!("1,{e}")])
            .map(|t| format!("[{t}]"))
            .collect(),
        Some(None) => EXTREMES
            .iter()
            .flat_map(|e| [format!("[{e}]"), format!("[2,{e}]"), format!("[{e},{e}]")])
            .collect(),
        None => Vec::new(),
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

#[test]
fn no_operator_panics_on_extreme_integers() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut ops: Vec<OperatorHandle> = Dispatcher::singleton()
        .all_operators()
        .into_iter()
        .filter(|o| o.name().starts_with("aten::") && o.schema().is_some())
        .collect();
    ops.sort_by(|a, b| a.name().cmp(b.name()));
    let mut panics = Vec::new();
    let mut calls = 0;
    let mut reached = std::collections::BTreeSet::new();
    for op in &ops {
        let schema = op.schema().unwrap();
        for (i, a) in schema.arguments.iter().enumerate() {
            for value in extreme_texts(&a.ty) {
                for device in [Device::CPU, Device::META] {
                    let texts = call_texts(&schema, i, &value);
                    let Ok(mut stack) = parse_call_args(&schema, &texts, device) else {
                        continue;
                    };
                    calls += 1;
                    reached.insert(op.name().to_owned());
                    let outcome = catch_unwind(AssertUnwindSafe(|| op.call_boxed(&mut stack)));
                    if let Err(p) = outcome {
                        panics.push(format!(
                            "{} {}={value} on {device}: {}",
                            op.name(),
                            a.name,
                            panic_text(p.as_ref())
                        ));
                    }
                }
            }
        }
    }
    std::panic::set_hook(previous);
    assert!(
        panics.is_empty(),
        "{} panics:\n{}",
        panics.len(),
        panics.join("\n")
    );
    // Operators with integer arguments that the arguments above reach.
    assert!(
        calls > 2000 && reached.len() > 150,
        "only {calls} calls of {} operators",
        reached.len()
    );
}
