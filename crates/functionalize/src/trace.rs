//! The tracer (plan §5.2, PyTorch's `make_fx`): records the operators a program sends to the
//! backend as a [`Graph`].
//!
//! A boxed fallback at `DispatchKey::Python` (nothing else registers there) is reached only
//! while [`trace`] holds an include guard for that key. It records the call as a [`Node`] and
//! continues below `Python` with the key excluded, so operators called from inside kernels are
//! not recorded. `Python` sits below `Functionalize`, so under [`crate::functionalize`] the
//! tracer sees exactly what the backend sees: values, never functional wrappers.
//!
//! An operator whose backend slot holds a CompositeImplicitAutograd kernel (reached here when
//! the autograd keys are excluded) is not recorded itself: its decomposition runs with the
//! tracer on, so its parts are recorded, as `make_fx` decomposes such operators.
//!
//! Values are named as `make_fx` names them: graph inputs by the caller's names, node results
//! after their operator (`view_copy`, `view_copy_1`, ...), elements of a `Tensor[]` result
//! through a `getitem(%list, i)` node emitted where the element is first used, elements of a
//! multi-return result through `getitem` nodes emitted right after the node, and tensors the
//! graph did not produce as constants (`<constant [1,2,3]>`). A node whose results all existed
//! before (an in-place or out= operator returning its argument) has no name.
//!
//! The transform's write-back of input mutations (`resize_`, `as_strided_`, `copy_` into the
//! caller's tensors) is recorded too, tagged [`Node::write_back`], so that
//! [`Graph::mutating_nodes`] can leave it out.
//!
//! ```
//! use switchyard_core::Tensor;
//! use switchyard_cpu as _;
//! use switchyard_functionalize::{Remove, run_functionalized, trace};
//! use switchyard_ops::TensorOps;
//!
//! let program = |x: &[Tensor]| {
//!     let y = x[0].view(&[2, 2])?;
//!     y.add_scalar_(1)?;
//!     Ok(vec![y])
//! };
//! let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0])?;
//! let (_, graph) = trace(
//!     &|x| run_functionalized(&program, x, Remove::MutationsAndViews),
//!     &[x],
//!     &["x"],
//! )?;
//! assert_eq!(
//!     graph.to_string(),
//!     "graph(x):
//!     %view_copy = view_copy(x, [2,2])
//!     %add = add(%view_copy, 1)
//!     %view_copy_1 = view_copy(%add, [4])
//!     %view_copy_2 = view_copy(%view_copy_1, [2,2])
//!     copy_(x, %view_copy_1)  # write-back
//!     return %view_copy_2
//! "
//! );
//! assert!(graph.mutating_nodes().is_empty() && graph.view_nodes().is_empty());
//! # Ok::<(), switchyard_core::Error>(())
//! ```

use serde_json::{Value as Json, json};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};
use switchyard_core::local_dispatch::{ExcludeDispatchKeyGuard, IncludeDispatchKeyGuard};
use switchyard_core::{
    Device, DispatchKey, DispatchKeySet, Error, IValue, Layout, MemoryFormat, Result, ScalarType,
    Stack, Tensor,
};
use switchyard_dispatch::{Dispatcher, Kernel, Library, LibraryKind, OperatorHandle, SchemaFacts};
use switchyard_schema::{BaseType, FunctionSchema, Type};

/// The operator name of the pseudo-node that takes element `i` of a list or tuple result.
pub const GETITEM: &str = "getitem";

/// One argument of a node, or one of its results.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// `None` (an absent optional).
    None,
    /// A graph value: an input (by the caller's name) or a node result.
    Value(String),
    /// A tensor the graph did not produce (index into [`Graph::constants`]).
    Constant(usize),
    /// A bool.
    Bool(bool),
    /// An int (or integral Scalar).
    Int(i64),
    /// A float (or floating Scalar).
    Double(f64),
    /// A string.
    Str(String),
    /// A dtype.
    ScalarType(ScalarType),
    /// A layout.
    Layout(Layout),
    /// A device.
    Device(Device),
    /// A memory format.
    MemoryFormat(MemoryFormat),
    /// `int[]`.
    IntList(Vec<i64>),
    /// `float[]`.
    DoubleList(Vec<f64>),
    /// `bool[]`.
    BoolList(Vec<bool>),
    /// `Tensor[]`.
    TensorList(Vec<Arg>),
    /// `Tensor?[]` (elements are values, constants or `None`).
    OptionalTensorList(Vec<Arg>),
    /// Any other list, or a tuple.
    List(Vec<Arg>),
    /// A random generator (not recorded; replayed as `None`).
    Generator,
}

impl Arg {
    /// The graph values this argument refers to, in order.
    pub fn values(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_values(&mut out);
        out
    }

    fn collect_values<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Arg::Value(v) => out.push(v),
            Arg::TensorList(xs) | Arg::OptionalTensorList(xs) | Arg::List(xs) => {
                xs.iter().for_each(|x| x.collect_values(out));
            }
            _ => {}
        }
    }
}

/// A constant tensor of a graph: a tensor the program used that no recorded node produced.
#[derive(Clone, Debug)]
pub struct Constant {
    /// The tensor.
    pub tensor: Tensor,
}

/// One recorded operator call.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The operator's full name (`aten::view_copy`, `aten::add.Tensor`), or [`GETITEM`].
    pub op: String,
    /// The name of the node's result (`view_copy_1`), if it produced a new value.
    pub name: Option<String>,
    /// Every schema argument, defaults included, as the call passed them.
    pub args: Vec<Arg>,
    /// What the call returned, one entry per schema return (tensors as values).
    pub outputs: Vec<Arg>,
    /// Whether the transform recorded it while writing input mutations back to the caller's
    /// tensors.
    pub write_back: bool,
}

impl Node {
    /// The operator's name without namespace and overload (`view_copy`, `add`), as printed.
    pub fn target(&self) -> &str {
        base_name(&self.op)
    }

    /// The operator's schema facts (`None` for [`GETITEM`] and unknown operators).
    fn facts(&self) -> Option<std::sync::Arc<SchemaFacts>> {
        Dispatcher::singleton()
            .find_op(&self.op)
            .and_then(|op| op.require_schema_facts().ok())
    }
}

/// The dtype and layout of a graph input, as traced: what [`Graph::fresh_inputs`] makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputType {
    /// The element type.
    pub dtype: ScalarType,
    /// The sizes.
    pub sizes: Vec<i64>,
    /// The strides.
    pub strides: Vec<i64>,
}

/// A recorded program: named inputs, nodes in call order, constants and the outputs.
#[derive(Clone, Debug)]
pub struct Graph {
    /// The inputs' names, in order.
    pub inputs: Vec<String>,
    /// The inputs' dtypes and layouts when traced, in order (empty for a graph read from JSON
    /// that does not record them).
    pub input_types: Vec<InputType>,
    /// The nodes, in the order they were called.
    pub nodes: Vec<Node>,
    /// The constants the nodes and outputs refer to.
    pub constants: Vec<Constant>,
    /// What the program returned.
    pub outputs: Vec<Arg>,
}

/// `add` for `aten::add.Tensor`.
fn base_name(op: &str) -> &str {
    let bare = op.rsplit_once("::").map_or(op, |(_, n)| n);
    bare.split_once('.').map_or(bare, |(n, _)| n)
}

// ---------------------------------------------------------------------------------------------
// Recording
// ---------------------------------------------------------------------------------------------

thread_local! {
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
    static WRITE_BACK: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calls made while alive as the transform's write-back of input mutations.
pub(crate) struct WriteBackScope {
    previous: bool,
}

/// Opens a [`WriteBackScope`].
pub(crate) fn write_back_scope() -> WriteBackScope {
    WriteBackScope {
        previous: WRITE_BACK.with(|w| w.replace(true)),
    }
}

impl Drop for WriteBackScope {
    fn drop(&mut self) {
        WRITE_BACK.with(|w| w.set(self.previous));
    }
}

/// The state of one [`trace`] call.
#[derive(Default)]
struct Recorder {
    /// Every tensor seen, so that object ids are not reused while tracing.
    held: Vec<Tensor>,
    /// Object id → value name.
    names: HashMap<usize, String>,
    /// Object id → (list value, index) of list elements not named yet.
    pending: HashMap<usize, (String, usize)>,
    /// Object id → constant index.
    constant_ids: HashMap<usize, usize>,
    constants: Vec<Constant>,
    /// Names in use.
    taken: HashSet<String>,
    inputs: Vec<String>,
    input_types: Vec<InputType>,
    nodes: Vec<Node>,
}

impl Recorder {
    /// A new name after `base`, as FX picks them: `base`, `base_1`, `base_2`, ...
    fn fresh(&mut self, base: &str) -> String {
        let mut candidate = base.to_owned();
        let mut i = 0;
        while self.taken.contains(&candidate) {
            i += 1;
            candidate = format!("{base}_{i}");
        }
        self.taken.insert(candidate.clone());
        candidate
    }

    fn tensor_arg(&mut self, t: &Tensor) -> Arg {
        let id = t.object_id();
        if let Some(n) = self.names.get(&id) {
            return Arg::Value(n.clone());
        }
        if let Some((list, i)) = self.pending.remove(&id) {
            let name = self.fresh(GETITEM);
            self.nodes.push(Node {
                op: GETITEM.into(),
                name: Some(name.clone()),
                args: vec![Arg::Value(list), Arg::Int(i as i64)],
                outputs: vec![Arg::Value(name.clone())],
                write_back: false,
            });
            self.names.insert(id, name.clone());
            return Arg::Value(name);
        }
        let index = *self.constant_ids.entry(id).or_insert_with(|| {
            self.constants.push(Constant { tensor: t.clone() });
            self.held.push(t.clone());
            self.constants.len() - 1
        });
        Arg::Constant(index)
    }

    fn arg(&mut self, v: &IValue) -> Arg {
        match v {
            IValue::None => Arg::None,
            IValue::Tensor(t) => self.tensor_arg(t),
            IValue::Bool(b) => Arg::Bool(*b),
            IValue::Int(i) => Arg::Int(*i),
            IValue::Double(d) => Arg::Double(*d),
            IValue::String(s) => Arg::Str(s.to_string()),
            IValue::Device(d) => Arg::Device(*d),
            IValue::ScalarType(t) => Arg::ScalarType(*t),
            IValue::Layout(l) => Arg::Layout(*l),
            IValue::MemoryFormat(m) => Arg::MemoryFormat(*m),
            IValue::Generator(_) => Arg::Generator,
            IValue::TensorList(ts) => {
                Arg::TensorList(ts.iter().map(|t| self.tensor_arg(t)).collect())
            }
            IValue::OptionalTensorList(ts) => Arg::OptionalTensorList(
                ts.iter()
                    .map(|t| t.as_ref().map_or(Arg::None, |t| self.tensor_arg(t)))
                    .collect(),
            ),
            IValue::IntList(xs) => Arg::IntList(xs.clone()),
            IValue::DoubleList(xs) => Arg::DoubleList(xs.clone()),
            IValue::BoolList(xs) => Arg::BoolList(xs.clone()),
            IValue::Tuple(xs) | IValue::GenericList(xs) => {
                Arg::List(xs.iter().map(|x| self.arg(x)).collect())
            }
        }
    }

    fn is_new(&self, t: &Tensor) -> bool {
        let id = t.object_id();
        !self.names.contains_key(&id) && !self.pending.contains_key(&id)
    }

    /// Appends the node of a call of `op` with `args` that returned `outs`.
    fn record(&mut self, op: &OperatorHandle, args: &[IValue], outs: &[IValue], write_back: bool) {
        let args: Vec<Arg> = args.iter().map(|a| self.arg(a)).collect();
        let base = base_name(op.name()).to_owned();
        for v in outs {
            self.held.extend(v.tensors().into_iter().cloned());
        }
        let index = self.nodes.len();
        let mut node = Node {
            op: op.name().to_owned(),
            name: None,
            args,
            outputs: Vec::new(),
            write_back,
        };
        match outs {
            [IValue::Tensor(t)] => {
                if self.is_new(t) {
                    let name = self.fresh(&base);
                    self.names.insert(t.object_id(), name.clone());
                    node.name = Some(name);
                }
                node.outputs = vec![self.tensor_arg(t)];
                self.nodes.push(node);
            }
            [IValue::TensorList(ts)] => {
                let name = self.fresh(&base);
                for (i, t) in ts.iter().enumerate() {
                    if self.is_new(t) {
                        self.pending.insert(t.object_id(), (name.clone(), i));
                    }
                }
                node.outputs = vec![Arg::Value(name.clone())];
                node.name = Some(name);
                self.nodes.push(node);
            }
            [single] => {
                // A non-tensor result (a Scalar, a bool, ...).
                node.name = Some(self.fresh(&base));
                node.outputs = vec![self.arg(single)];
                self.nodes.push(node);
            }
            _ => {
                // Several returns: a tuple, its new elements taken out right away.
                let any_new = outs.iter().any(|v| match v {
                    IValue::Tensor(t) => self.is_new(t),
                    IValue::TensorList(_) => true,
                    _ => false,
                });
                let name = any_new.then(|| self.fresh(&base));
                node.name.clone_from(&name);
                self.nodes.push(node);
                let mut outputs = Vec::with_capacity(outs.len());
                for (i, v) in outs.iter().enumerate() {
                    let out = match (v, &name) {
                        (IValue::Tensor(t), Some(tuple)) if self.is_new(t) => {
                            let item = self.getitem(tuple, i);
                            self.names.insert(t.object_id(), item.clone());
                            Arg::Value(item)
                        }
                        (IValue::TensorList(ts), Some(tuple)) => {
                            let item = self.getitem(tuple, i);
                            for (j, t) in ts.iter().enumerate() {
                                if self.is_new(t) {
                                    self.pending.insert(t.object_id(), (item.clone(), j));
                                }
                            }
                            Arg::Value(item)
                        }
                        (v, _) => self.arg(v),
                    };
                    outputs.push(out);
                }
                self.nodes[index].outputs = outputs;
            }
        }
    }

    /// Emits `%name = getitem(%tuple, i)` and returns the name.
    fn getitem(&mut self, tuple: &str, i: usize) -> String {
        let name = self.fresh(GETITEM);
        self.nodes.push(Node {
            op: GETITEM.into(),
            name: Some(name.clone()),
            args: vec![Arg::Value(tuple.to_owned()), Arg::Int(i as i64)],
            outputs: vec![Arg::Value(name.clone())],
            write_back: false,
        });
        name
    }
}

/// Whether the call continuing below `Python` with `ks` reaches a CompositeImplicitAutograd
/// kernel (which decomposes before any backend sees the operator).
fn decomposes(op: &OperatorHandle, ks: DispatchKeySet) -> bool {
    matches!(
        op.describe_slot(ks.highest_priority_type_id()),
        Some((_, "math kernel"))
    )
}

/// The fallback at `Python`: runs the call below the key and records it.
fn trace_fallback(op: &OperatorHandle, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    let below = ks.and(DispatchKeySet::full_after(DispatchKey::Python));
    let active = RECORDER.with(|r| r.borrow().is_some());
    if active && decomposes(op, below) {
        // Its parts come back to this key and are recorded.
        return op.redispatch_boxed(below, stack);
    }
    let facts = op.require_schema_facts()?;
    let start = stack
        .len()
        .checked_sub(facts.num_arguments)
        .ok_or_else(|| {
            Error::runtime(format!(
                "{} expects {} arguments on the stack but got {}",
                op.name(),
                facts.num_arguments,
                stack.len()
            ))
        })?;
    let args: Vec<IValue> = if active {
        stack[start..].to_vec()
    } else {
        Vec::new()
    };
    {
        let _untraced = ExcludeDispatchKeyGuard::new(DispatchKey::Python);
        op.redispatch_boxed(below, stack)?;
    }
    if active {
        let outs_start = stack.len().saturating_sub(facts.num_returns);
        let write_back = WRITE_BACK.with(Cell::get);
        RECORDER.with(|r| {
            if let Some(rec) = r.borrow_mut().as_mut() {
                rec.record(op, &args, &stack[outs_start..], write_back);
            }
        });
    }
    Ok(())
}

/// Registers the tracer's fallback at `Python`.
pub(crate) fn register(d: &'static Dispatcher) -> Result<()> {
    let mut lib = Library::new_on(d, LibraryKind::Impl, "_", Some(DispatchKey::Python))?;
    lib.fallback(Kernel::boxed(trace_fallback).debug("functionalize_trace_fallback"))?;
    lib.leak();
    Ok(())
}

/// Clears the thread's recorder when a trace ends, also on error.
struct RecorderGuard;

impl Drop for RecorderGuard {
    fn drop(&mut self) {
        RECORDER.with(|r| r.borrow_mut().take());
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Runs `f(inputs)` and records every operator call that reaches the backend (plan §5.2,
/// `make_fx`): returns `f`'s outputs and the graph.
///
/// `names` names the inputs in the graph (one identifier each, distinct). To trace a
/// functionalized program, trace [`crate::run_functionalized`] of it: the inputs are then the
/// very tensors the layer's calls see, so they keep their names.
///
/// Errors: a name count other than the input count, a name that is not an identifier or is
/// repeated, a trace inside a trace ("nested trace() is not supported"); an error of `f`
/// comes back as is. The thread-local state is restored on every path.
pub fn trace(
    f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    inputs: &[Tensor],
    names: &[&str],
) -> Result<(Vec<Tensor>, Graph)> {
    if names.len() != inputs.len() {
        return Err(Error::value(format!(
            "trace(): got {} input names for {} inputs",
            names.len(),
            inputs.len()
        )));
    }
    let mut rec = Recorder::default();
    for (t, &name) in inputs.iter().zip(names) {
        if !is_identifier(name) || name == GETITEM {
            return Err(Error::value(format!(
                "trace(): input name '{name}' is not an identifier"
            )));
        }
        if !rec.taken.insert(name.to_owned()) {
            return Err(Error::value(format!(
                "trace(): input name '{name}' is given twice"
            )));
        }
        rec.names
            .entry(t.object_id())
            .or_insert_with(|| name.to_owned());
        rec.inputs.push(name.to_owned());
        rec.input_types.push(InputType {
            dtype: t.dtype(),
            sizes: t.sizes().to_vec(),
            strides: t.strides().to_vec(),
        });
        rec.held.push(t.clone());
    }
    let nested = RECORDER.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_some() {
            return true;
        }
        *r = Some(rec);
        false
    });
    if nested {
        return Err(Error::runtime("nested trace() is not supported"));
    }
    // Registers the fallback (linking the crate is enough; this makes sure it ran).
    let _ = Dispatcher::singleton();
    let cleanup = RecorderGuard;
    let outputs = {
        let _include = IncludeDispatchKeyGuard::new(DispatchKey::Python);
        f(inputs)?
    };
    let mut rec = RECORDER
        .with(|r| r.borrow_mut().take())
        .ok_or_else(|| Error::runtime("internal error: the trace recorder disappeared"))?;
    drop(cleanup);
    let out_args = outputs.iter().map(|t| rec.tensor_arg(t)).collect();
    let graph = Graph {
        inputs: rec.inputs,
        input_types: rec.input_types,
        nodes: rec.nodes,
        constants: rec.constants,
        outputs: out_args,
    };
    Ok((outputs, graph))
}

// ---------------------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------------------

/// Python's `repr` of a float (`1.0`, `0.1`, `1e-05`, `inf`, `nan`).
fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let a = x.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        // Python: one mantissa, a signed two-digit exponent.
        let s = format!("{x:e}");
        if let Some((m, e)) = s.split_once('e') {
            let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
            return format!("{m}e{sign}{digits:0>2}");
        }
        return s;
    }
    let s = format!("{x}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// A short rendering of a constant: its values up to 16 elements, else dtype and shape.
fn constant_text(t: &Tensor) -> String {
    if t.is_wrapped_number()
        && let Ok(v) = t.to_f64_vec()
        && let [x] = v.as_slice()
    {
        return if t.dtype().is_floating_point() {
            float_repr(*x)
        } else if t.dtype() == ScalarType::Bool {
            py_bool(*x != 0.0).into()
        } else {
            format!("{x}")
        };
    }
    let sizes = t.sizes();
    let shape = format!(
        "[{}]",
        sizes
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    if t.numel() <= 16
        && let Ok(v) = t.to_f64_vec()
    {
        let items: Vec<String> = v.iter().map(|x| format!("{x}")).collect();
        let flat = format!("[{}]", items.join(","));
        return if sizes.len() == 1 {
            format!("<constant {flat}>")
        } else {
            format!("<constant {} {shape} {flat}>", t.dtype().python_name())
        };
    }
    format!("<constant {} {shape}>", t.dtype().python_name())
}

impl Graph {
    fn is_input(&self, name: &str) -> bool {
        self.inputs.iter().any(|i| i == name)
    }

    /// The printed form of `arg`: inputs bare, node results as `%name`, constants inline.
    pub fn arg_text(&self, arg: &Arg) -> String {
        let list = |xs: &[Arg]| {
            format!(
                "[{}]",
                xs.iter()
                    .map(|x| self.arg_text(x))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        match arg {
            Arg::None => "None".into(),
            Arg::Value(n) if self.is_input(n) => n.clone(),
            Arg::Value(n) => format!("%{n}"),
            Arg::Constant(i) => self
                .constants
                .get(*i)
                .map_or_else(|| format!("<constant #{i}>"), |c| constant_text(&c.tensor)),
            Arg::Bool(b) => py_bool(*b).into(),
            Arg::Int(i) => i.to_string(),
            Arg::Double(d) => float_repr(*d),
            Arg::Str(s) => format!("'{s}'"),
            Arg::ScalarType(t) => t.python_name().into(),
            Arg::Layout(_) => "strided".into(),
            Arg::Device(d) => d.to_string(),
            Arg::MemoryFormat(m) => m.name().into(),
            Arg::IntList(xs) => format!(
                "[{}]",
                xs.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
            ),
            Arg::DoubleList(xs) => format!(
                "[{}]",
                xs.iter()
                    .map(|x| float_repr(*x))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Arg::BoolList(xs) => format!(
                "[{}]",
                xs.iter().map(|b| py_bool(*b)).collect::<Vec<_>>().join(",")
            ),
            Arg::TensorList(xs) | Arg::OptionalTensorList(xs) | Arg::List(xs) => list(xs),
            Arg::Generator => "<generator>".into(),
        }
    }

    /// `op(args)` of `node`: positional arguments up to the last one that differs from its
    /// default, then keyword-only arguments that differ from their defaults as `name=value`.
    pub fn call_text(&self, node: &Node) -> String {
        let schema = Dispatcher::singleton()
            .find_op(&node.op)
            .and_then(|op| op.schema());
        let parts: Vec<String> = match schema {
            Some(s) if s.arguments.len() == node.args.len() => shown_arguments(&s, &node.args)
                .into_iter()
                .map(|(kw, a)| match kw {
                    Some(k) => format!("{k}={}", self.arg_text(a)),
                    None => self.arg_text(a),
                })
                .collect(),
            _ => node.args.iter().map(|a| self.arg_text(a)).collect(),
        };
        format!("{}({})", node.target(), parts.join(", "))
    }

    /// The statement of `node`: `%name = op(args)`, or `op(args)` for a node without a new
    /// result.
    pub fn node_text(&self, node: &Node) -> String {
        match &node.name {
            Some(n) => format!("%{n} = {}", self.call_text(node)),
            None => self.call_text(node),
        }
    }

    /// `return %a` or `return (%a, %b)`.
    pub fn return_text(&self) -> String {
        match self.outputs.as_slice() {
            [one] => format!("return {}", self.arg_text(one)),
            outs => format!(
                "return ({})",
                outs.iter()
                    .map(|o| self.arg_text(o))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The statements, one per node, then the return (the text of A.11 of the reference
    /// note, without the header line).
    pub fn body(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.nodes.iter().map(|n| self.node_text(n)).collect();
        lines.push(self.return_text());
        lines
    }

    /// The nodes that mutate an argument (schemas with a written argument), leaving out the
    /// transform's write-back. Empty for a functionalized program.
    pub fn mutating_nodes(&self) -> Vec<&Node> {
        self.nodes
            .iter()
            .filter(|n| !n.write_back)
            .filter(|n| {
                n.facts()
                    .is_some_and(|f| f.tensor_arguments.iter().any(|a| a.is_write))
            })
            .collect()
    }

    /// The nodes of view operators (a result aliasing an argument). Empty for a program
    /// functionalized with [`crate::Remove::MutationsAndViews`].
    pub fn view_nodes(&self) -> Vec<&Node> {
        self.nodes
            .iter()
            .filter(|n| n.facts().is_some_and(|f| f.is_view()))
            .collect()
    }

    /// The nodes tagged as the transform's write-back of input mutations.
    pub fn write_back_nodes(&self) -> Vec<&Node> {
        self.nodes.iter().filter(|n| n.write_back).collect()
    }
}

/// The arguments printed for a call of `schema` with `args`, each with its keyword if it is
/// keyword-only.
fn shown_arguments<'a>(
    schema: &'a FunctionSchema,
    args: &'a [Arg],
) -> Vec<(Option<&'a str>, &'a Arg)> {
    let is_default = |i: usize| {
        let a = &schema.arguments[i];
        a.default
            .as_deref()
            .is_some_and(|d| default_matches(&a.ty, d, &args[i]))
    };
    let positional: Vec<usize> = (0..args.len())
        .filter(|&i| !schema.arguments[i].kwarg_only)
        .collect();
    let last = positional.iter().rposition(|&i| !is_default(i));
    let mut shown: Vec<(Option<&str>, &Arg)> = positional
        .iter()
        .take(last.map_or(0, |l| l + 1))
        .map(|&i| (None, &args[i]))
        .collect();
    for (i, (a, value)) in schema.arguments.iter().zip(args).enumerate() {
        if a.kwarg_only && !is_default(i) {
            shown.push((Some(a.name.as_str()), value));
        }
    }
    shown
}

/// Whether `value` equals the schema default `d` (written as in the schema: `None`, `1`,
/// `False`, `[0,1]`, `'mean'`, `Mean`, `long`, `contiguous_format`, a bare number for a sized
/// list).
fn default_matches(ty: &Type, d: &str, value: &Arg) -> bool {
    let d = d.trim();
    let number = |x: f64| match value {
        Arg::Int(i) => *i as f64 == x,
        Arg::Double(v) => *v == x,
        Arg::IntList(xs) => {
            matches!(ty, Type::List { size: Some(n), .. } if xs.len() == *n)
                && xs.iter().all(|v| *v as f64 == x)
        }
        _ => false,
    };
    match (d, value) {
        ("None", v) => *v == Arg::None,
        ("True", v) => *v == Arg::Bool(true),
        ("False", v) => *v == Arg::Bool(false),
        ("Mean", v) => *v == Arg::Int(1),
        ("long", v) => *v == Arg::ScalarType(ScalarType::Long),
        ("strided", v) => *v == Arg::Layout(Layout::Strided),
        (d, Arg::MemoryFormat(m)) => m.name() == d.strip_prefix("torch.").unwrap_or(d),
        (d, Arg::Str(s)) => d.trim_matches(|c| c == '\'' || c == '"') == s,
        (d, v) if d.starts_with('[') => {
            let items: Vec<&str> = d
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            match v {
                Arg::IntList(xs) => {
                    xs.len() == items.len()
                        && xs
                            .iter()
                            .zip(&items)
                            .all(|(x, s)| s.parse::<i64>() == Ok(*x))
                }
                Arg::DoubleList(xs) => {
                    xs.len() == items.len()
                        && xs
                            .iter()
                            .zip(&items)
                            .all(|(x, s)| s.parse::<f64>() == Ok(*x))
                }
                Arg::BoolList(xs) => {
                    xs.len() == items.len() && xs.iter().zip(&items).all(|(x, s)| *s == py_bool(*x))
                }
                Arg::TensorList(xs) | Arg::OptionalTensorList(xs) | Arg::List(xs) => {
                    xs.is_empty() && items.is_empty()
                }
                _ => false,
            }
        }
        (d, _) => {
            if matches!(ty, Type::Base(BaseType::Bool)) {
                return false;
            }
            d.parse::<f64>().is_ok_and(number)
        }
    }
}

impl fmt::Display for Graph {
    /// `graph(x, y):`, then one indented statement per node (write-back nodes marked with a
    /// `# write-back` comment) and the return.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "graph({}):", self.inputs.join(", "))?;
        for n in &self.nodes {
            if n.write_back {
                writeln!(f, "    {}  # write-back", self.node_text(n))?;
            } else {
                writeln!(f, "    {}", self.node_text(n))?;
            }
        }
        writeln!(f, "    {}", self.return_text())
    }
}

// ---------------------------------------------------------------------------------------------
// Graphviz
// ---------------------------------------------------------------------------------------------

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

impl Graph {
    /// The graph in Graphviz's dot language: inputs and constants as ellipses, one box per
    /// node labelled with its statement (write-back nodes dashed), an edge from each value's
    /// producer to each consumer, and a `return` node.
    pub fn to_dot(&self) -> String {
        let mut out = String::from(
            "digraph graph {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n",
        );
        let mut producer: HashMap<&str, String> = HashMap::new();
        for (i, name) in self.inputs.iter().enumerate() {
            let id = format!("in{i}");
            let _ = writeln!(
                out,
                "  {id} [shape=ellipse, label=\"{}\"];",
                dot_escape(name)
            );
            producer.insert(name, id);
        }
        for (i, c) in self.constants.iter().enumerate() {
            let _ = writeln!(
                out,
                "  const{i} [shape=ellipse, style=dotted, label=\"{}\"];",
                dot_escape(&constant_text(&c.tensor))
            );
        }
        let edges = |out: &mut String, to: &str, args: &[Arg], producer: &HashMap<&str, String>| {
            let mut seen = HashSet::new();
            for a in args {
                let mut consts = Vec::new();
                collect_constants(a, &mut consts);
                for v in a.values() {
                    if let Some(p) = producer.get(v)
                        && seen.insert(p.clone())
                    {
                        let _ = writeln!(out, "  {p} -> {to};");
                    }
                }
                for c in consts {
                    if seen.insert(format!("const{c}")) {
                        let _ = writeln!(out, "  const{c} -> {to};");
                    }
                }
            }
        };
        for (i, n) in self.nodes.iter().enumerate() {
            let id = format!("n{i}");
            let style = if n.write_back { ", style=dashed" } else { "" };
            let _ = writeln!(
                out,
                "  {id} [label=\"{}\"{style}];",
                dot_escape(&self.node_text(n))
            );
            edges(&mut out, &id, &n.args, &producer);
            if let Some(name) = &n.name {
                producer.insert(name, id);
            }
        }
        out.push_str("  ret [shape=ellipse, label=\"return\"];\n");
        edges(&mut out, "ret", &self.outputs, &producer);
        out.push_str("}\n");
        out
    }
}

fn collect_constants(a: &Arg, out: &mut Vec<usize>) {
    match a {
        Arg::Constant(c) => out.push(*c),
        Arg::TensorList(xs) | Arg::OptionalTensorList(xs) | Arg::List(xs) => {
            xs.iter().for_each(|x| collect_constants(x, out));
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

/// The `format` field of a graph's JSON.
const JSON_FORMAT: &str = "switchyard-graph";
/// The `version` field of a graph's JSON.
const JSON_VERSION: u64 = 1;

fn arg_json(a: &Arg) -> Json {
    let list = |xs: &[Arg]| Json::Array(xs.iter().map(arg_json).collect());
    match a {
        Arg::None => Json::Null,
        Arg::Value(v) => json!({ "value": v }),
        Arg::Constant(c) => json!({ "constant": c }),
        Arg::Bool(b) => json!({ "bool": b }),
        Arg::Int(i) => json!({ "int": i }),
        Arg::Double(d) => json!({ "float": float_json(*d) }),
        Arg::Str(s) => json!({ "str": s }),
        Arg::ScalarType(t) => json!({ "dtype": t.python_name() }),
        Arg::Layout(_) => json!({ "layout": "strided" }),
        Arg::Device(d) => json!({ "device": d.to_string() }),
        Arg::MemoryFormat(m) => json!({ "memory_format": m.name() }),
        Arg::IntList(xs) => json!({ "ints": xs }),
        Arg::DoubleList(xs) => {
            json!({ "floats": xs.iter().map(|x| float_json(*x)).collect::<Vec<_>>() })
        }
        Arg::BoolList(xs) => json!({ "bools": xs }),
        Arg::TensorList(xs) => json!({ "tensors": list(xs) }),
        Arg::OptionalTensorList(xs) => json!({ "optional_tensors": list(xs) }),
        Arg::List(xs) => json!({ "list": list(xs) }),
        Arg::Generator => json!({ "generator": null }),
    }
}

/// A float as JSON: a number, or the strings `inf`, `-inf`, `nan` (JSON has none of them).
fn float_json(x: f64) -> Json {
    if x.is_finite() {
        json!(x)
    } else {
        Json::String(float_repr(x))
    }
}

fn bad_json(what: impl fmt::Display) -> Error {
    Error::value(format!("invalid graph JSON: {what}"))
}

fn float_from_json(v: &Json) -> Result<f64> {
    match v {
        Json::Number(n) => n.as_f64().ok_or_else(|| bad_json(format!("bad float {n}"))),
        Json::String(s) => match s.as_str() {
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            "nan" => Ok(f64::NAN),
            _ => Err(bad_json(format!("bad float '{s}'"))),
        },
        other => Err(bad_json(format!("expected a float, got {other}"))),
    }
}

fn arg_from_json(v: &Json) -> Result<Arg> {
    if v.is_null() {
        return Ok(Arg::None);
    }
    let obj = v.as_object().filter(|o| o.len() == 1).ok_or_else(|| {
        bad_json(format!(
            "expected an argument object with one field, got {v}"
        ))
    })?;
    let Some((tag, x)) = obj.iter().next() else {
        return Err(bad_json("empty argument object"));
    };
    let str_of = |x: &Json| {
        x.as_str()
            .map(str::to_owned)
            .ok_or_else(|| bad_json(format!("'{tag}' expects a string, got {x}")))
    };
    fn array_of<'j>(tag: &str, x: &'j Json) -> Result<&'j Vec<Json>> {
        x.as_array()
            .ok_or_else(|| bad_json(format!("'{tag}' expects an array, got {x}")))
    }
    let list_of =
        |x: &Json| -> Result<Vec<Arg>> { array_of(tag, x)?.iter().map(arg_from_json).collect() };
    let int_of = |x: &Json| {
        x.as_i64()
            .ok_or_else(|| bad_json(format!("'{tag}' expects an integer, got {x}")))
    };
    Ok(match tag.as_str() {
        "value" => Arg::Value(str_of(x)?),
        "constant" => Arg::Constant(
            usize::try_from(int_of(x)?).map_err(|_| bad_json("negative constant index"))?,
        ),
        "bool" => Arg::Bool(
            x.as_bool()
                .ok_or_else(|| bad_json(format!("bad bool {x}")))?,
        ),
        "int" => Arg::Int(int_of(x)?),
        "float" => Arg::Double(float_from_json(x)?),
        "str" => Arg::Str(str_of(x)?),
        "dtype" => Arg::ScalarType(ScalarType::parse(&str_of(x)?)?),
        "layout" => Arg::Layout(Layout::parse(&str_of(x)?)?),
        "device" => Arg::Device(Device::parse(&str_of(x)?)?),
        "memory_format" => Arg::MemoryFormat(MemoryFormat::parse(&str_of(x)?)?),
        "ints" => Arg::IntList(
            array_of(tag, x)?
                .iter()
                .map(int_of)
                .collect::<Result<_>>()?,
        ),
        "floats" => Arg::DoubleList(
            array_of(tag, x)?
                .iter()
                .map(float_from_json)
                .collect::<Result<_>>()?,
        ),
        "bools" => Arg::BoolList(
            array_of(tag, x)?
                .iter()
                .map(|b| b.as_bool().ok_or_else(|| bad_json(format!("bad bool {b}"))))
                .collect::<Result<_>>()?,
        ),
        "tensors" => Arg::TensorList(list_of(x)?),
        "optional_tensors" => Arg::OptionalTensorList(list_of(x)?),
        "list" => Arg::List(list_of(x)?),
        "generator" => Arg::Generator,
        other => return Err(bad_json(format!("unknown argument kind '{other}'"))),
    })
}

fn constant_json(c: &Constant) -> Result<Json> {
    let t = &c.tensor;
    let values = t.to_f64_vec().map_err(|e| {
        Error::runtime(format!(
            "Graph::to_json: a constant on {} cannot be saved ({})",
            t.device(),
            e.message()
        ))
    })?;
    Ok(json!({
        "dtype": t.dtype().python_name(),
        "sizes": t.sizes().to_vec(),
        "values": values.iter().map(|x| float_json(*x)).collect::<Vec<_>>(),
        "wrapped_number": t.is_wrapped_number(),
    }))
}

fn constant_from_json(v: &Json) -> Result<Constant> {
    let dtype = ScalarType::parse(
        v["dtype"]
            .as_str()
            .ok_or_else(|| bad_json("a constant needs a 'dtype'"))?,
    )?;
    let sizes: Vec<i64> = v["sizes"]
        .as_array()
        .ok_or_else(|| bad_json("a constant needs 'sizes'"))?
        .iter()
        .map(|s| s.as_i64().ok_or_else(|| bad_json(format!("bad size {s}"))))
        .collect::<Result<_>>()?;
    let values: Vec<f64> = v["values"]
        .as_array()
        .ok_or_else(|| bad_json("a constant needs 'values'"))?
        .iter()
        .map(float_from_json)
        .collect::<Result<_>>()?;
    let tensor = switchyard_core::dispatch_dtype!(dtype, T => {
        Tensor::from_vec(
            values.iter().map(|x| <T as switchyard_core::Element>::from_f64_lossy(*x)).collect(),
            &sizes,
        )?
    });
    if v["wrapped_number"].as_bool() == Some(true) {
        tensor.set_wrapped_number(true);
    }
    Ok(Constant { tensor })
}

fn ints_from_json(v: &Json, what: &str) -> Result<Vec<i64>> {
    v.as_array()
        .ok_or_else(|| bad_json(format!("{what} must be an array of integers, got {v}")))?
        .iter()
        .map(|s| {
            s.as_i64()
                .ok_or_else(|| bad_json(format!("bad {what} entry {s}")))
        })
        .collect()
}

fn input_type_from_json(v: &Json) -> Result<InputType> {
    let dtype = ScalarType::parse(
        v["dtype"]
            .as_str()
            .ok_or_else(|| bad_json(format!("an input type needs a 'dtype', got {v}")))?,
    )?;
    let sizes = ints_from_json(&v["sizes"], "an input type's 'sizes'")?;
    let strides = ints_from_json(&v["strides"], "an input type's 'strides'")?;
    if sizes.len() != strides.len() || sizes.iter().chain(&strides).any(|x| *x < 0) {
        return Err(bad_json(format!(
            "an input type has sizes {sizes:?} and strides {strides:?}"
        )));
    }
    Ok(InputType {
        dtype,
        sizes,
        strides,
    })
}

impl Graph {
    /// The graph as JSON: `{"format": "switchyard-graph", "version": 1, "inputs": [...],
    /// "input_types": [{"dtype", "sizes", "strides"}], "constants": [{"dtype", "sizes",
    /// "values", "wrapped_number"}], "nodes": [{"op", "name", "args", "outputs",
    /// "write_back"}], "outputs": [...]}` (`input_types` only when known). Arguments are objects with one
    /// field naming their kind (`{"value": "x"}`, `{"int": 1}`, `{"ints": [4, 2]}`,
    /// `{"dtype": "float32"}`, ...) or `null`.
    ///
    /// Errors if a constant is not on the host.
    pub fn to_json(&self) -> Result<String> {
        let nodes: Vec<Json> = self
            .nodes
            .iter()
            .map(|n| {
                json!({
                    "op": n.op,
                    "name": n.name,
                    "args": n.args.iter().map(arg_json).collect::<Vec<_>>(),
                    "outputs": n.outputs.iter().map(arg_json).collect::<Vec<_>>(),
                    "write_back": n.write_back,
                })
            })
            .collect();
        let mut doc = json!({
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "inputs": self.inputs,
            "constants": self.constants.iter().map(constant_json).collect::<Result<Vec<_>>>()?,
            "nodes": nodes,
            "outputs": self.outputs.iter().map(arg_json).collect::<Vec<_>>(),
        });
        if !self.input_types.is_empty() {
            doc["input_types"] = self
                .input_types
                .iter()
                .map(|t| {
                    json!({
                        "dtype": t.dtype.python_name(),
                        "sizes": t.sizes,
                        "strides": t.strides,
                    })
                })
                .collect();
        }
        serde_json::to_string_pretty(&doc)
            .map_err(|e| Error::runtime(format!("Graph::to_json: {e}")))
    }

    /// Reads a graph written by [`Graph::to_json`]. Checks the format and version, that every
    /// value is defined (as an input or an earlier node's result) before it is used, and that
    /// `input_types`, when present, describes each input once.
    ///
    /// Errors ("invalid graph JSON: ..."): text that is not JSON, a field missing or of the
    /// wrong kind, an unknown argument kind, dtype or device, a value used before it is
    /// defined, a constant that does not exist.
    pub fn from_json(text: &str) -> Result<Graph> {
        let doc: Json = serde_json::from_str(text).map_err(bad_json)?;
        if doc["format"] != JSON_FORMAT {
            return Err(bad_json(format!("expected \"format\": \"{JSON_FORMAT}\"")));
        }
        if doc["version"] != JSON_VERSION {
            return Err(bad_json(format!(
                "unsupported version {} (this build reads version {JSON_VERSION})",
                doc["version"]
            )));
        }
        let array = |field: &str| {
            doc[field]
                .as_array()
                .ok_or_else(|| bad_json(format!("'{field}' must be an array")))
        };
        let inputs: Vec<String> = array("inputs")?
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| bad_json(format!("bad input name {v}")))
            })
            .collect::<Result<_>>()?;
        let input_types: Vec<InputType> = match &doc["input_types"] {
            Json::Null => Vec::new(),
            Json::Array(types) => types
                .iter()
                .map(input_type_from_json)
                .collect::<Result<_>>()?,
            other => {
                return Err(bad_json(format!(
                    "'input_types' must be an array, got {other}"
                )));
            }
        };
        if !input_types.is_empty() && input_types.len() != inputs.len() {
            return Err(bad_json(format!(
                "{} input types for {} inputs",
                input_types.len(),
                inputs.len()
            )));
        }
        let constants: Vec<Constant> = array("constants")?
            .iter()
            .map(constant_from_json)
            .collect::<Result<_>>()?;
        let args_of = |v: &Json, what: &str| -> Result<Vec<Arg>> {
            v.as_array()
                .ok_or_else(|| bad_json(format!("'{what}' must be an array")))?
                .iter()
                .map(arg_from_json)
                .collect()
        };
        let nodes: Vec<Node> = array("nodes")?
            .iter()
            .map(|n| {
                Ok(Node {
                    op: n["op"]
                        .as_str()
                        .ok_or_else(|| bad_json("a node needs an 'op'"))?
                        .to_owned(),
                    name: match &n["name"] {
                        Json::Null => None,
                        Json::String(s) => Some(s.clone()),
                        other => return Err(bad_json(format!("bad node name {other}"))),
                    },
                    args: args_of(&n["args"], "args")?,
                    outputs: args_of(&n["outputs"], "outputs")?,
                    write_back: n["write_back"].as_bool().unwrap_or(false),
                })
            })
            .collect::<Result<_>>()?;
        let outputs = args_of(&doc["outputs"], "outputs")?;
        let graph = Graph {
            inputs,
            input_types,
            nodes,
            constants,
            outputs,
        };
        graph.check_definitions()?;
        Ok(graph)
    }

    /// Every value used is defined before, every constant index exists.
    fn check_definitions(&self) -> Result<()> {
        let mut defined: HashSet<&str> = self.inputs.iter().map(String::as_str).collect();
        let check = |args: &[Arg], defined: &HashSet<&str>, at: &str| -> Result<()> {
            for a in args {
                if let Some(v) = a.values().into_iter().find(|v| !defined.contains(v)) {
                    return Err(bad_json(format!("{at} uses %{v} before it is defined")));
                }
                let mut consts = Vec::new();
                collect_constants(a, &mut consts);
                if let Some(c) = consts.into_iter().find(|c| *c >= self.constants.len()) {
                    return Err(bad_json(format!(
                        "{at} uses constant {c}, which does not exist"
                    )));
                }
            }
            Ok(())
        };
        for (i, n) in self.nodes.iter().enumerate() {
            check(&n.args, &defined, &format!("node {i} ({})", n.op))?;
            if let Some(name) = &n.name {
                defined.insert(name);
            }
        }
        check(&self.outputs, &defined, "the return")
    }
}

// ---------------------------------------------------------------------------------------------
// Replay
// ---------------------------------------------------------------------------------------------

impl Graph {
    /// Runs the graph on `inputs` (one per graph input) by calling each node's operator boxed,
    /// by name, with the keys the inputs carry, and returns the outputs. Write-back nodes run
    /// too, so the inputs end as the traced program left them. Generators are passed as `None`.
    ///
    /// Errors: a wrong input count, an unknown operator, an operator's own error.
    pub fn replay(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        self.replay_on(inputs, None)
    }

    /// Fresh inputs for the graph: for each input, a tensor of its traced dtype, sizes and
    /// strides (over a storage just large enough) on `device`, filled with ones.
    ///
    /// Errors if the graph does not record its inputs' types (a JSON file without
    /// `input_types`), or a tensor cannot be made.
    pub fn fresh_inputs(&self, device: Device) -> Result<Vec<Tensor>> {
        if self.input_types.len() != self.inputs.len() {
            return Err(Error::value(
                "Graph::fresh_inputs: the graph does not record its inputs' dtypes and sizes ('input_types')",
            ));
        }
        self.input_types
            .iter()
            .map(|t| {
                let elements = switchyard_core::geometry::Geometry::new(&t.sizes, &t.strides, 0)?
                    .required_elements();
                let flat = switchyard_ops::ones_with(
                    &[elements],
                    Some(t.dtype),
                    None,
                    Some(device),
                    None,
                )?;
                switchyard_ops::as_strided_with(&flat, &t.sizes, &t.strides, Some(0))
            })
            .collect()
    }

    /// [`Graph::replay`] on `device`: factories (operators without tensor arguments) that were
    /// traced without a device are called with `device`, and constant tensors (not wrapped
    /// numbers) are copied to it first; everything else follows the inputs. `None` replays as
    /// traced.
    pub fn replay_on(&self, inputs: &[Tensor], device: Option<Device>) -> Result<Vec<Tensor>> {
        if inputs.len() != self.inputs.len() {
            return Err(Error::value(format!(
                "Graph::replay: the graph takes {} inputs but got {}",
                self.inputs.len(),
                inputs.len()
            )));
        }
        let mut env: HashMap<&str, IValue> = self
            .inputs
            .iter()
            .map(String::as_str)
            .zip(inputs.iter().map(|t| IValue::Tensor(t.clone())))
            .collect();
        let constants: Vec<Tensor> = self
            .constants
            .iter()
            .map(|c| match device {
                Some(device) if !c.tensor.is_wrapped_number() && c.tensor.device() != device => {
                    switchyard_ops::_to_copy_with(
                        &c.tensor,
                        None,
                        None,
                        Some(device),
                        None,
                        false,
                        None,
                    )
                }
                _ => Ok(c.tensor.clone()),
            })
            .collect::<Result<_>>()?;
        let d = Dispatcher::singleton();
        for n in &self.nodes {
            let args: Vec<IValue> = n
                .args
                .iter()
                .map(|a| self.ivalue(a, &env, &constants))
                .collect::<Result<_>>()?;
            let result = if n.op == GETITEM {
                let (Some(container), Some(IValue::Int(i))) = (args.first(), args.get(1)) else {
                    return Err(Error::runtime("Graph::replay: malformed getitem node"));
                };
                let i = usize::try_from(*i)
                    .map_err(|_| Error::runtime("Graph::replay: negative getitem index"))?;
                match container {
                    IValue::TensorList(ts) => ts.get(i).cloned().map(IValue::Tensor),
                    IValue::Tuple(xs) => xs.get(i).cloned(),
                    _ => None,
                }
                .ok_or_else(|| {
                    Error::runtime(format!("Graph::replay: getitem index {i} out of range"))
                })?
            } else {
                let op = d.find_op(&n.op).ok_or_else(|| {
                    Error::value(format!("Graph::replay: unknown operator '{}'", n.op))
                })?;
                let facts = op.require_schema_facts()?;
                let mut stack: Stack = args;
                if let Some(device) = device
                    && facts.tensor_arguments.is_empty()
                {
                    for &i in &facts.device_arguments {
                        if let Some(v @ IValue::None) = stack.get_mut(i) {
                            *v = IValue::Device(device);
                        }
                    }
                }
                op.call_boxed(&mut stack)?;
                let returns = stack.split_off(stack.len().saturating_sub(facts.num_returns));
                match <[IValue; 1]>::try_from(returns) {
                    Ok([one]) => one,
                    Err(many) => IValue::Tuple(many),
                }
            };
            if let Some(name) = &n.name {
                env.insert(name, result);
            }
        }
        self.outputs
            .iter()
            .map(|o| match self.ivalue(o, &env, &constants)? {
                IValue::Tensor(t) => Ok(t),
                other => Err(Error::runtime(format!(
                    "Graph::replay: an output is a {}, not a tensor",
                    other.tag_name()
                ))),
            })
            .collect()
    }

    fn ivalue(&self, a: &Arg, env: &HashMap<&str, IValue>, constants: &[Tensor]) -> Result<IValue> {
        let tensor = |a: &Arg| -> Result<Option<Tensor>> {
            match self.ivalue(a, env, constants)? {
                IValue::Tensor(t) => Ok(Some(t)),
                IValue::None => Ok(None),
                other => Err(Error::runtime(format!(
                    "Graph::replay: expected a tensor, got a {}",
                    other.tag_name()
                ))),
            }
        };
        Ok(match a {
            Arg::None | Arg::Generator => IValue::None,
            Arg::Value(v) => env
                .get(v.as_str())
                .cloned()
                .ok_or_else(|| Error::runtime(format!("Graph::replay: %{v} is not defined")))?,
            Arg::Constant(c) => IValue::Tensor(
                constants
                    .get(*c)
                    .cloned()
                    .ok_or_else(|| Error::runtime(format!("Graph::replay: no constant {c}")))?,
            ),
            Arg::Bool(b) => IValue::Bool(*b),
            Arg::Int(i) => IValue::Int(*i),
            Arg::Double(x) => IValue::Double(*x),
            Arg::Str(s) => IValue::String(s.as_str().into()),
            Arg::ScalarType(t) => IValue::ScalarType(*t),
            Arg::Layout(l) => IValue::Layout(*l),
            Arg::Device(d) => IValue::Device(*d),
            Arg::MemoryFormat(m) => IValue::MemoryFormat(*m),
            Arg::IntList(xs) => IValue::IntList(xs.clone()),
            Arg::DoubleList(xs) => IValue::DoubleList(xs.clone()),
            Arg::BoolList(xs) => IValue::BoolList(xs.clone()),
            Arg::TensorList(xs) => IValue::TensorList(
                xs.iter()
                    .map(|x| {
                        tensor(x)?
                            .ok_or_else(|| Error::runtime("Graph::replay: None in a tensor list"))
                    })
                    .collect::<Result<_>>()?,
            ),
            Arg::OptionalTensorList(xs) => {
                IValue::OptionalTensorList(xs.iter().map(tensor).collect::<Result<_>>()?)
            }
            Arg::List(xs) => IValue::GenericList(
                xs.iter()
                    .map(|x| self.ivalue(x, env, constants))
                    .collect::<Result<_>>()?,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_floats() {
        assert_eq!(base_name("aten::add.Tensor"), "add");
        assert_eq!(base_name("aten::view_copy"), "view_copy");
        assert_eq!(base_name("getitem"), "getitem");
        assert_eq!(float_repr(1.0), "1.0");
        assert_eq!(float_repr(0.1), "0.1");
        assert_eq!(float_repr(1e-5), "1e-05");
        assert_eq!(float_repr(-2.5), "-2.5");
        assert_eq!(float_repr(1e20), "1e+20");
        assert!(is_identifier("x_1") && !is_identifier("1x") && !is_identifier(""));
    }

    #[test]
    fn defaults() {
        let int = Type::Base(BaseType::Int);
        assert!(default_matches(&int, "0", &Arg::Int(0)));
        assert!(!default_matches(&int, "0", &Arg::Int(1)));
        assert!(default_matches(&int, "1", &Arg::Double(1.0)));
        assert!(default_matches(&int, "None", &Arg::None));
        assert!(default_matches(
            &Type::Base(BaseType::Bool),
            "False",
            &Arg::Bool(false)
        ));
        assert!(default_matches(&int, "[]", &Arg::IntList(vec![])));
        assert!(default_matches(&int, "[0,1]", &Arg::IntList(vec![0, 1])));
        let sized = Type::List {
            elem: Box::new(Type::Base(BaseType::Int)),
            size: Some(2),
        };
        assert!(default_matches(&sized, "1", &Arg::IntList(vec![1, 1])));
        assert!(default_matches(&int, "'mean'", &Arg::Str("mean".into())));
        assert!(default_matches(
            &int,
            "contiguous_format",
            &Arg::MemoryFormat(MemoryFormat::Contiguous)
        ));
        assert!(default_matches(&int, "1e-05", &Arg::Double(1e-5)));
    }
}
