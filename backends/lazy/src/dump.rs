//! IR dumps (B.13): the graph of some tensors' pending IR as LTC's text (`dump_ir(tensors,
//! "text")`) and as Graphviz (`render_ir_graph`). A tensor without pending IR appears as its
//! device-data leaf. Dumping computes nothing.

use std::collections::HashMap;
use std::sync::Arc;

use switchyard_core::{Result, Tensor};

use crate::ir::{Arg, Node, OpKind, Output, post_order};
use crate::tensor::get_ltc_tensor;

/// The format of [`dump_ir`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpFormat {
    /// LTC's text: `IR {`, one `%<id> = [shape] op(%operands), attrs, ROOT=i, NodeType=..`
    /// line per node in post-order, `}`.
    Text,
    /// Graphviz: `digraph G {`, one labelled box per node, one edge per operand, `}`.
    Dot,
}

/// The IR roots of `tensors` (LTC's `GetIrValue` of each).
fn roots(tensors: &[Tensor]) -> Result<Vec<Output>> {
    tensors
        .iter()
        .map(|t| get_ltc_tensor(t)?.ir_value())
        .collect()
}

/// The IR behind `tensors` in `format`.
pub fn dump_ir(tensors: &[Tensor], format: DumpFormat) -> Result<String> {
    let roots = roots(tensors)?;
    let nodes: Vec<&Arc<Node>> = roots.iter().map(|o| &o.node).collect();
    let order = post_order(&nodes)?;
    Ok(match format {
        DumpFormat::Text => text(&order, &roots),
        DumpFormat::Dot => dot(&order, &roots),
    })
}

fn ids(order: &[Arc<Node>]) -> HashMap<*const Node, usize> {
    order
        .iter()
        .enumerate()
        .map(|(i, n)| (Arc::as_ptr(n), i))
        .collect()
}

/// `%<id>`, with `.<index>` when the producer has several outputs.
fn operand_ref(o: &Output, ids: &HashMap<*const Node, usize>) -> String {
    let id = ids.get(&Arc::as_ptr(&o.node)).copied().unwrap_or(0);
    if o.node.shapes.len() > 1 {
        format!("%{id}.{}", o.index)
    } else {
        format!("%{id}")
    }
}

/// The node's attributes as `(name, value)` pairs (`device` for device data).
fn attributes(n: &Node) -> Vec<(String, String)> {
    match &n.kind {
        OpKind::Aten(info) => n
            .args
            .iter()
            .zip(info.arg_names)
            .filter_map(|(a, name)| match a {
                Arg::Attr(attr) => Some(((*name).to_string(), attr.to_string())),
                Arg::Absent => Some(((*name).to_string(), "null".to_string())),
                Arg::Operand(_) | Arg::List(_) => None,
            })
            .collect(),
        OpKind::DeviceData(_) => vec![("device".to_string(), "lazy:0".to_string())],
    }
}

/// The node's class as PyTorch names its C++ type (`torch::lazy::AddTensor`).
fn node_type(n: &Node) -> String {
    match &n.kind {
        OpKind::Aten(info) => format!("torch::lazy::{}", info.class),
        OpKind::DeviceData(_) => "torch::lazy::DeviceData".to_string(),
    }
}

/// Which requested root `n` is (the first, as LTC marks it).
fn root_index(n: &Arc<Node>, roots: &[Output]) -> Option<usize> {
    roots.iter().position(|r| Arc::ptr_eq(&r.node, n))
}

fn text(order: &[Arc<Node>], roots: &[Output]) -> String {
    let ids = ids(order);
    let mut s = String::from("IR {\n");
    for (i, n) in order.iter().enumerate() {
        let shapes: Vec<String> = n.shapes.iter().map(ToString::to_string).collect();
        let operands: Vec<String> = n.operands.iter().map(|o| operand_ref(o, &ids)).collect();
        s.push_str(&format!(
            "  %{i} = [{}] {}({})",
            shapes.join(", "),
            n.op_name(),
            operands.join(", ")
        ));
        if n.shapes.len() > 1 {
            s.push_str(&format!(", num_outputs={}", n.shapes.len()));
        }
        for (name, value) in attributes(n) {
            s.push_str(&format!(", {name}={value}"));
        }
        if let Some(r) = root_index(n, roots) {
            s.push_str(&format!(", ROOT={r}"));
        }
        s.push_str(&format!(", NodeType={}\n", node_type(n)));
    }
    s.push_str("}\n");
    s
}

/// A Graphviz label: quotes and backslashes escaped, long values cut at 64 characters.
fn label_value(v: &str) -> String {
    let cut: String = if v.chars().count() > 64 {
        format!("{}...", v.chars().take(64).collect::<String>())
    } else {
        v.to_string()
    };
    cut.replace('\\', "\\\\").replace('"', "\\\"")
}

fn dot(order: &[Arc<Node>], roots: &[Output]) -> String {
    let ids = ids(order);
    let mut s = String::from("digraph G {\n");
    for (i, n) in order.iter().enumerate() {
        let shapes: Vec<String> = n.shapes.iter().map(ToString::to_string).collect();
        let mut label = vec![n.op_name().to_string(), shapes.join(", ")];
        label.extend(
            attributes(n)
                .into_iter()
                .map(|(k, v)| format!("{k}={}", label_value(&v))),
        );
        if let Some(r) = root_index(n, roots) {
            label.push(format!("ROOT={r}"));
        }
        s.push_str(&format!("  node{i} [label=\"{}\"]\n", label.join("\\n")));
    }
    // Edges consumer by consumer, from the last node back, as LTC writes them.
    for (i, n) in order.iter().enumerate().rev() {
        let several = n.operands.len() > 1;
        for (k, o) in n.operands.iter().enumerate() {
            let from = ids.get(&Arc::as_ptr(&o.node)).copied().unwrap_or(0);
            let mut attrs = Vec::new();
            if several {
                attrs.push(format!("i={k}"));
            }
            if o.node.shapes.len() > 1 {
                attrs.push(format!("o={}", o.index));
            }
            if attrs.is_empty() {
                s.push_str(&format!("  node{from} -> node{i}\n"));
            } else {
                s.push_str(&format!(
                    "  node{from} -> node{i} [label=\"{}\"]\n",
                    attrs.join(", ")
                ));
            }
        }
    }
    s.push_str("}\n");
    s
}
