//! IR dumps (B.13): the graph of some tensors' pending IR as LTC's text (`dump_ir(tensors,
//! "text")`), as Graphviz (`render_ir_graph`) and as the backend's program text
//! (`dump_ir(tensors, "backend")`). A tensor without pending IR appears as its device-data
//! leaf. Dumping computes nothing. With `LTC_SAVE_TENSORS_FILE` set, every sync appends its
//! graph to that file (`LTC_SAVE_TENSORS_FMT`: `text`, `dot` or `backend`), headed by the
//! Rust caller of the sync (LTC prints Python frames).

use std::collections::HashMap;
use std::io::Write as _;
use std::panic::Location;
use std::sync::Arc;

use switchyard_core::{Error, Result, Tensor};

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
    /// The program the backend compiles for the roots (compiled afresh, not cached or run):
    /// slots, instructions and fusion groups, as the cache holds it.
    Backend,
}

thread_local! {
    /// The Rust location that asked for the sync in progress on this thread (`mark_step`'s,
    /// `sync`'s or `to_cpu`'s caller), for the saved graphs.
    static SYNC_CALLER: std::cell::Cell<Option<SyncCaller>> = const { std::cell::Cell::new(None) };
}

/// An entry point that syncs (its name, file and line) and where it was called from.
type SyncCaller = (
    &'static str,
    (&'static str, u32),
    &'static Location<'static>,
);

/// Records `caller` as the origin of the syncs `f` runs (entry point `api`, defined at
/// `api_at`).
pub(crate) fn with_sync_caller<R>(
    api: &'static str,
    api_at: (&'static str, u32),
    caller: &'static Location<'static>,
    f: impl FnOnce() -> R,
) -> R {
    let previous = SYNC_CALLER.replace(Some((api, api_at, caller)));
    let r = f();
    SYNC_CALLER.set(previous);
    r
}

/// Appends the graph of a sync to `LTC_SAVE_TENSORS_FILE` when it is set (B.13):
/// `[ScheduleSyncTensorsGraph]`, the `Rust Stacktrace:` (the entry point and its caller, in
/// place of LTC's Python frames), `Hashes: (<root hashes>)`, `## BEGIN_GRAPH`, the graph in
/// `LTC_SAVE_TENSORS_FMT` (`text` by default, `dot`, `backend`), `## END_GRAPH`.
pub(crate) fn save_tensors_graph(
    roots: &[Output],
    _graph_hash: crate::ir::Hash128,
    backend_text: impl FnOnce() -> String,
) -> Result<()> {
    let Some(path) = std::env::var_os("LTC_SAVE_TENSORS_FILE").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let format = std::env::var("LTC_SAVE_TENSORS_FMT").unwrap_or_default();
    let nodes: Vec<&Arc<Node>> = roots.iter().map(|o| &o.node).collect();
    let graph = match format.as_str() {
        "" | "text" => text(&post_order(&nodes)?, roots),
        "dot" => dot(&post_order(&nodes)?, roots),
        "backend" => backend_text(),
        other => {
            return Err(Error::value(format!(
                "LTC_SAVE_TENSORS_FMT: unknown format '{other}' (text, dot or backend)"
            )));
        }
    };
    let mut record = String::from("[ScheduleSyncTensorsGraph]\nRust Stacktrace:\n");
    match SYNC_CALLER.get() {
        Some((api, (file, line), caller)) => {
            record.push_str(&format!("  {api} ({file}:{line})\n"));
            record.push_str(&format!("  caller ({}:{})\n", caller.file(), caller.line()));
        }
        None => record.push_str("  <no recorded caller>\n"),
    }
    let hashes: Vec<String> = roots
        .iter()
        .map(|r| format!("{:032x}", r.hash().0))
        .collect();
    record.push_str(&format!("Hashes: ({})\n", hashes.join(", ")));
    record.push_str("## BEGIN_GRAPH\n");
    record.push_str(&graph);
    if !graph.ends_with('\n') {
        record.push('\n');
    }
    record.push_str("## END_GRAPH\n\n");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| {
            Error::runtime(format!(
                "LTC_SAVE_TENSORS_FILE: cannot open {}: {e}",
                std::path::Path::new(&path).display()
            ))
        })?;
    file.write_all(record.as_bytes()).map_err(|e| {
        Error::runtime(format!(
            "LTC_SAVE_TENSORS_FILE: cannot write {}: {e}",
            std::path::Path::new(&path).display()
        ))
    })
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
        DumpFormat::Backend => crate::executor::backend_text(&roots)?,
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
