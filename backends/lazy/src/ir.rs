//! The IR (B.3): nodes with an operator, operands, non-tensor arguments and output shapes; a
//! structural 128-bit hash that leaves data out; post-order.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use smallvec::SmallVec;
use switchyard_core::shape::contiguous_strides;
use switchyard_core::{
    Device, DimVec, Error, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor,
};

use crate::data::DeviceData;
use crate::trace::LowerArgs;

/// A 128-bit structural hash (LTC's `hash_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hash128(pub u128);

const FNV_OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
const FNV_PRIME: u128 = 0x0000000001000000000000000000013B;

impl Hash128 {
    /// The hash of a string (FNV-1a, 128 bits), usable in constants: operator kinds hash their
    /// qualified name (`aten::add`).
    pub const fn of_str(s: &str) -> Hash128 {
        let bytes = s.as_bytes();
        let mut h = FNV_OFFSET;
        let mut i = 0;
        while i < bytes.len() {
            h ^= bytes[i] as u128;
            h = h.wrapping_mul(FNV_PRIME);
            i += 1;
        }
        Hash128(h)
    }

    /// The hash of a 64-bit value.
    pub const fn of_u64(v: u64) -> Hash128 {
        Hash128::mix(v as u128 ^ ((v as u128) << 64) ^ 0x9e37_79b9_7f4a_7c15)
    }

    const fn mix(mut x: u128) -> Hash128 {
        x ^= x >> 67;
        x = x.wrapping_mul(0x2d35_8dcc_aa6c_78a5_8bb8_4b93_962e_acc9);
        x ^= x >> 61;
        x = x.wrapping_mul(0x4be9_8134_a5a2_5bb9_f39c_c060_5ced_c835);
        x ^= x >> 64;
        Hash128(x)
    }

    /// LTC's `HashCombine`: order-dependent.
    pub const fn combine(self, other: Hash128) -> Hash128 {
        Hash128::mix(
            self.0.rotate_left(17)
                ^ other
                    .0
                    .wrapping_add(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835),
        )
    }

    /// Folds `v` into the hash.
    pub const fn with_u64(self, v: u64) -> Hash128 {
        self.combine(Hash128::of_u64(v))
    }

    /// Folds a list of 64-bit values (its length included).
    pub fn with_i64s(self, vs: &[i64]) -> Hash128 {
        let mut h = self.with_u64(vs.len() as u64);
        for &v in vs {
            h = h.with_u64(v as u64);
        }
        h
    }
}

/// The sentinel an absent optional operand contributes (LTC's `kNullOpt`).
pub const K_NULL_OPT: Hash128 = Hash128::of_str("lazy::null_opt");

/// The seed of device-data leaves (LTC's 101): data never enters a hash.
pub const DEVICE_DATA_SEED: Hash128 = Hash128::of_u64(101);

// Tags of the argument hashes, computed at compile time (not per traced node).
const OPERAND_TAG: Hash128 = Hash128::of_str("operand");
const LIST_TAG: Hash128 = Hash128::of_str("list");

/// `OPERAND_TAG.with_u64(i)` of the first operand numbers.
const OPERAND_HASHES: [Hash128; 8] = {
    let mut t = [OPERAND_TAG; 8];
    let mut i = 0;
    while i < 8 {
        t[i] = OPERAND_TAG.with_u64(i as u64);
        i += 1;
    }
    t
};

/// `Hash128::of_u64(i)` of small counts and indices (argument counts, output indices).
const SMALL_HASHES: [Hash128; 8] = {
    let mut t = [Hash128(0); 8];
    let mut i = 0;
    while i < 8 {
        t[i] = Hash128::of_u64(i as u64);
        i += 1;
    }
    t
};

/// `Hash128::of_u64(v)`, from the table when small (same value, no mixing per traced node).
fn small_hash(v: usize) -> Hash128 {
    match SMALL_HASHES.get(v) {
        Some(h) => *h,
        None => Hash128::of_u64(v as u64),
    }
}

/// The hash of a reference to operand `i` in a node's arguments.
fn operand_hash(i: u32) -> Hash128 {
    match OPERAND_HASHES.get(i as usize) {
        Some(h) => *h,
        None => OPERAND_TAG.with_u64(u64::from(i)),
    }
}

/// The operator hash of device-data leaves.
pub const DEVICE_DATA_OP: Hash128 = Hash128::of_str("lazy_tensors::device_data");

/// The shape of one output: dtype, sizes and strides (ours carry the Meta kernel's strides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Element type.
    pub dtype: ScalarType,
    /// Sizes.
    pub sizes: DimVec,
    /// Strides.
    pub strides: DimVec,
}

impl Shape {
    /// A contiguous shape.
    pub fn contiguous(dtype: ScalarType, sizes: &[i64]) -> Shape {
        Shape {
            dtype,
            sizes: DimVec::from_slice(sizes),
            strides: contiguous_strides(sizes),
        }
    }

    /// The shape of tensor `t` (its sizes and strides, offset ignored).
    pub fn of(t: &Tensor) -> Shape {
        let g = t.geometry();
        Shape {
            dtype: t.dtype(),
            sizes: DimVec::from_slice(g.sizes()),
            strides: DimVec::from_slice(g.strides()),
        }
    }

    /// The hash of dtype, sizes and strides (programs specialise on layouts).
    pub fn hash(&self) -> Hash128 {
        Hash128::of_u64(self.dtype as u64)
            .with_i64s(&self.sizes)
            .with_i64s(&self.strides)
    }
}

impl fmt::Display for Shape {
    /// `Float[2,3]`, as LTC prints shapes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sizes: Vec<String> = self.sizes.iter().map(i64::to_string).collect();
        write!(f, "{:?}[{}]", self.dtype, sizes.join(","))
    }
}

/// A non-tensor argument kept on a node, hashed by value.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub enum Attr {
    Int(i64),
    /// Boxed, as `OptInts`: an inline list would make every argument (and so every node)
    /// several times larger, and nodes are moved and allocated per traced operator.
    Ints(Box<[i64]>),
    OptInt(Option<i64>),
    OptInts(Option<Box<[i64]>>),
    Bool(bool),
    OptBool(Option<bool>),
    Float(f64),
    OptFloat(Option<f64>),
    Dtype(ScalarType),
    OptDtype(Option<ScalarType>),
    OptLayout(Option<Layout>),
    OptDevice(Option<Device>),
    OptMemoryFormat(Option<MemoryFormat>),
    /// Owned (PyTorch PR #75527 fixed a use-after-free of a borrowed string here).
    Str(Box<str>),
    OptStr(Option<Box<str>>),
    /// A `Scalar?` (hashed by value: `clamp`'s bounds, `var`'s correction).
    OptScalar(Option<Scalar>),
    /// A `Generator?`: `None` draws from the default generator at execution; an explicit
    /// generator is part of the graph, hashed by its initial seed (L12).
    Generator(Option<GeneratorAttr>),
}

/// An explicit generator on a node (compared by identity, printed and hashed by its seed).
#[derive(Clone)]
pub struct GeneratorAttr(pub Generator);

impl fmt::Debug for GeneratorAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "torch.Generator(device=\"{}\", seed={})",
            self.0.device(),
            self.0.initial_seed()
        )
    }
}

impl PartialEq for GeneratorAttr {
    fn eq(&self, other: &GeneratorAttr) -> bool {
        self.0.is_same(&other.0)
    }
}

macro_rules! attr_from {
    ($t:ty, $v:ident, $e:expr) => {
        impl From<$t> for Attr {
            fn from($v: $t) -> Attr {
                $e
            }
        }
    };
}
attr_from!(i64, v, Attr::Int(v));
attr_from!(&[i64], v, Attr::Ints(v.into()));
attr_from!(Option<i64>, v, Attr::OptInt(v));
attr_from!(Option<&[i64]>, v, Attr::OptInts(v.map(Into::into)));
attr_from!(bool, v, Attr::Bool(v));
attr_from!(Option<bool>, v, Attr::OptBool(v));
attr_from!(f64, v, Attr::Float(v));
attr_from!(Option<f64>, v, Attr::OptFloat(v));
attr_from!(ScalarType, v, Attr::Dtype(v));
attr_from!(Option<ScalarType>, v, Attr::OptDtype(v));
attr_from!(Option<Layout>, v, Attr::OptLayout(v));
attr_from!(Option<Device>, v, Attr::OptDevice(v));
attr_from!(Option<MemoryFormat>, v, Attr::OptMemoryFormat(v));
attr_from!(&str, v, Attr::Str(v.into()));
attr_from!(Option<&str>, v, Attr::OptStr(v.map(Into::into)));
attr_from!(Option<Scalar>, v, Attr::OptScalar(v));
attr_from!(
    Option<&Generator>,
    v,
    Attr::Generator(v.map(|g| GeneratorAttr(g.clone())))
);

impl Attr {
    /// The value's hash (f64 by its bits; enums by their printed form).
    pub fn hash(&self) -> Hash128 {
        let opt = |present: bool| Hash128::of_u64(u64::from(present));
        // The tags are hashed at compile time.
        let tag = match self {
            Attr::Int(_) => const { Hash128::of_str("int") },
            Attr::Ints(_) => const { Hash128::of_str("ints") },
            Attr::OptInt(_) => const { Hash128::of_str("int?") },
            Attr::OptInts(_) => const { Hash128::of_str("ints?") },
            Attr::Bool(_) => const { Hash128::of_str("bool") },
            Attr::OptBool(_) => const { Hash128::of_str("bool?") },
            Attr::Float(_) => const { Hash128::of_str("float") },
            Attr::OptFloat(_) => const { Hash128::of_str("float?") },
            Attr::Dtype(_) => const { Hash128::of_str("dtype") },
            Attr::OptDtype(_) => const { Hash128::of_str("dtype?") },
            Attr::OptLayout(_) => const { Hash128::of_str("layout?") },
            Attr::OptDevice(_) => const { Hash128::of_str("device?") },
            Attr::OptMemoryFormat(_) => const { Hash128::of_str("memory_format?") },
            Attr::Str(_) => const { Hash128::of_str("str") },
            Attr::OptStr(_) => const { Hash128::of_str("str?") },
            Attr::OptScalar(_) => const { Hash128::of_str("Scalar?") },
            Attr::Generator(_) => const { Hash128::of_str("Generator?") },
        };
        let body = match self {
            Attr::Int(v) => Hash128::of_u64(*v as u64),
            Attr::Ints(v) => Hash128::of_u64(0).with_i64s(v),
            Attr::OptInt(v) => opt(v.is_some()).with_u64(v.unwrap_or(0) as u64),
            Attr::OptInts(v) => opt(v.is_some()).with_i64s(v.as_deref().unwrap_or(&[])),
            Attr::Bool(v) => Hash128::of_u64(u64::from(*v)),
            Attr::OptBool(v) => opt(v.is_some()).with_u64(u64::from(v.unwrap_or(false))),
            Attr::Float(v) => Hash128::of_u64(v.to_bits()),
            Attr::OptFloat(v) => opt(v.is_some()).with_u64(v.unwrap_or(0.0).to_bits()),
            Attr::Dtype(v) => Hash128::of_u64(*v as u64),
            Attr::OptDtype(v) => opt(v.is_some()).with_u64(v.map_or(0, |d| d as u64)),
            Attr::OptLayout(v) => Hash128::of_str(&format!("{v:?}")),
            Attr::OptDevice(v) => Hash128::of_str(&format!("{v:?}")),
            Attr::OptMemoryFormat(v) => Hash128::of_str(&format!("{v:?}")),
            Attr::Str(v) => Hash128::of_str(v),
            Attr::OptStr(v) => {
                opt(v.is_some()).combine(Hash128::of_str(v.as_deref().unwrap_or("")))
            }
            Attr::OptScalar(v) => opt(v.is_some()).combine(Hash128::of_str(&format!("{v:?}"))),
            Attr::Generator(v) => {
                opt(v.is_some()).with_u64(v.as_ref().map_or(0, |g| g.0.initial_seed()))
            }
        };
        tag.combine(body)
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn opt<T: fmt::Debug>(v: &Option<T>) -> String {
            v.as_ref()
                .map_or_else(|| "null".to_owned(), |x| format!("{x:?}"))
        }
        match self {
            Attr::Int(v) => write!(f, "{v}"),
            Attr::Ints(v) => write!(f, "{:?}", &v[..]),
            Attr::OptInt(v) => f.write_str(&opt(v)),
            Attr::OptInts(v) => f.write_str(&opt(&v.as_ref().map(|d| d.to_vec()))),
            Attr::Bool(v) => write!(f, "{}", u8::from(*v)),
            Attr::OptBool(v) => f.write_str(&opt(v)),
            Attr::Float(v) => write!(f, "{v}"),
            Attr::OptFloat(v) => f.write_str(&opt(v)),
            Attr::Dtype(v) => write!(f, "{v:?}"),
            Attr::OptDtype(v) => f.write_str(&opt(v)),
            Attr::OptLayout(v) => f.write_str(&opt(v)),
            Attr::OptDevice(v) => f.write_str(&opt(v)),
            Attr::OptMemoryFormat(v) => f.write_str(&opt(v)),
            Attr::Str(v) => f.write_str(v),
            Attr::OptStr(v) => f.write_str(v.as_deref().unwrap_or("null")),
            Attr::OptScalar(v) => f.write_str(&opt(v)),
            Attr::Generator(v) => f.write_str(&opt(v)),
        }
    }
}

/// One schema argument of a node, in schema order.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// Operand number `i` (a tensor, or a lifted scalar).
    Operand(u32),
    /// An absent optional tensor.
    Absent,
    /// A `Tensor[]` or `Tensor?[]` argument, flattened into the node's operands: the operand
    /// number of each element in order (`None`: an absent element of a `Tensor?[]`). Its
    /// length is part of the node's hash, so lists of different lengths never share a program.
    List(SmallVec<[Option<u32>; 4]>),
    /// A non-tensor argument.
    Attr(Attr),
}

/// How a schema argument is carried (in the generated node table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// A tensor operand.
    Tensor,
    /// An optional tensor operand.
    OptTensor,
    /// A `Scalar` lifted to an operand.
    Scalar,
    /// A `Tensor[]`: one operand per element.
    TensorList,
    /// A `Tensor?[]`: one operand per present element.
    OptTensorList,
    /// A non-tensor attribute.
    Attr,
}

/// A lowering: the CPU computation of a node from its inputs.
pub type LowerFn = fn(&LowerArgs<'_>) -> Result<Vec<Tensor>>;

/// A generated node kind (one per `full_codegen` / `ir_gen` operator).
pub struct NodeInfo {
    /// `aten::add`.
    pub qualified: &'static str,
    /// `Tensor` (empty when none).
    pub overload: &'static str,
    /// torchgen's `node_name` (`AddTensor`).
    pub class: &'static str,
    /// The hash of `qualified`.
    pub op_hash: Hash128,
    /// Argument names in schema order.
    pub arg_names: &'static [&'static str],
    /// Argument kinds in schema order.
    pub arg_kinds: &'static [ArgKind],
    /// Number of outputs (0 for a `Tensor[]` return: each node has as many as its shape
    /// inference gave).
    pub num_outputs: usize,
    /// Draws random numbers (tagged `nondeterministic_seeded`): never merged by CSE or
    /// reused, and programs keep the draws' order.
    pub random: bool,
    /// The lowering.
    pub lower: LowerFn,
}

impl NodeInfo {
    /// `aten::add.Tensor`.
    pub fn operator_name(&self) -> String {
        if self.overload.is_empty() {
            self.qualified.to_owned()
        } else {
            format!("{}.{}", self.qualified, self.overload)
        }
    }
}

/// A `non_native` node kind of the backend yaml.
pub struct NonNativeInfo {
    /// Its name (`scalar`).
    pub name: &'static str,
    /// Its operator kind (`prim::Constant`).
    pub op_kind: &'static str,
    /// The schema as written in the yaml.
    pub schema: &'static str,
    /// torchgen's lazy IR properties.
    pub properties: &'static [&'static str],
}

/// What a node computes.
#[derive(Clone)]
pub enum OpKind {
    /// A generated operator node (index into the generated `NODES`).
    Aten(&'static NodeInfo),
    /// A device-data leaf: a parameter of the graph.
    DeviceData(DataCell),
}

/// The data of a device-data leaf. IR reuse (B.4, `trie.rs`) may give a leaf the data of a
/// later step, of the same shape, when nothing outside the trie can see the leaf any more.
pub struct DataCell(Mutex<Arc<DeviceData>>);

impl DataCell {
    /// A cell holding `d`.
    pub fn new(d: Arc<DeviceData>) -> DataCell {
        DataCell(Mutex::new(d))
    }

    /// The current data.
    pub fn get(&self) -> Arc<DeviceData> {
        Arc::clone(&self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Replaces the data (the caller has checked that the shape is the same and that no IR
    /// outside the trie reads this leaf).
    pub(crate) fn swap(&self, d: Arc<DeviceData>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = d;
    }
}

impl Clone for DataCell {
    fn clone(&self) -> DataCell {
        DataCell::new(self.get())
    }
}

/// A node output (LTC's `Value`: a strong reference and an output index).
#[derive(Clone)]
pub struct Output {
    /// The node.
    pub node: Arc<Node>,
    /// The output index.
    pub index: usize,
}

impl Output {
    /// The output's shape.
    pub fn shape(&self) -> &Shape {
        // A node has one shape per output and outputs are made for valid indices only.
        &self.node.shapes[self.index.min(self.node.shapes.len().saturating_sub(1))]
    }

    /// The hash of the output: its node's hash and the index.
    pub fn hash(&self) -> Hash128 {
        // `with_u64(index)`, the index's own hash from the table.
        self.node.hash.combine(small_hash(self.index))
    }
}

static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

/// An IR node.
pub struct Node {
    /// The operator.
    pub kind: OpKind,
    /// Operands (absent optional operands are skipped; see `args`).
    pub operands: SmallVec<[Output; 3]>,
    /// Every schema argument, in order.
    pub args: SmallVec<[Arg; 4]>,
    /// One shape per output.
    pub shapes: SmallVec<[Shape; 1]>,
    /// The structural hash (LTC's `dag_hash`).
    pub hash: Hash128,
    /// Creation order.
    pub seq: u64,
}

impl Node {
    /// An operator node; the hash folds the operator, the attributes and the operands' hashes
    /// (not the node's own shapes, which the operands imply).
    pub fn new(
        info: &'static NodeInfo,
        operands: SmallVec<[Output; 3]>,
        args: SmallVec<[Arg; 4]>,
        shapes: SmallVec<[Shape; 1]>,
    ) -> Node {
        let mut seed = small_hash(args.len());
        for a in &args {
            seed = seed.combine(match a {
                Arg::Operand(i) => operand_hash(*i),
                Arg::Absent => K_NULL_OPT,
                Arg::List(items) => {
                    let mut h = LIST_TAG.with_u64(items.len() as u64);
                    for item in items {
                        h = h.combine(match item {
                            Some(i) => operand_hash(*i),
                            None => K_NULL_OPT,
                        });
                    }
                    h
                }
                Arg::Attr(attr) => attr.hash(),
            });
        }
        let mut hash = info.op_hash.combine(seed);
        for o in &operands {
            hash = hash.combine(o.hash());
        }
        Node {
            kind: OpKind::Aten(info),
            operands,
            args,
            shapes,
            hash,
            seq: NEXT_SEQ.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// A device-data leaf: hashed by shape and seed 101, never by its data.
    pub fn device_data(data: Arc<DeviceData>) -> Node {
        let shape = data.shape.clone();
        let hash = DEVICE_DATA_OP
            .combine(shape.hash())
            .combine(DEVICE_DATA_SEED);
        Node {
            kind: OpKind::DeviceData(DataCell::new(data)),
            operands: SmallVec::new(),
            args: SmallVec::new(),
            shapes: smallvec::smallvec![shape],
            hash,
            seq: NEXT_SEQ.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The operator kind's qualified name (`aten::add`, `lazy_tensors::device_data`).
    pub fn op_name(&self) -> &'static str {
        match &self.kind {
            OpKind::Aten(info) => info.qualified,
            OpKind::DeviceData(_) => "lazy_tensors::device_data",
        }
    }

    /// LTC's `ToString`: `[Float[2,3]] aten::add` plus `, num_outputs=N` and `, name=value`
    /// per attribute (`device=` for device data).
    pub fn text(&self) -> String {
        let shapes: Vec<String> = self.shapes.iter().map(ToString::to_string).collect();
        let mut s = format!("[{}] {}", shapes.join(", "), self.op_name());
        if self.shapes.len() > 1 {
            s.push_str(&format!(", num_outputs={}", self.shapes.len()));
        }
        match &self.kind {
            OpKind::Aten(info) => {
                for (a, name) in self.args.iter().zip(info.arg_names) {
                    match a {
                        Arg::Attr(attr) => s.push_str(&format!(", {name}={attr}")),
                        Arg::Absent => s.push_str(&format!(", {name}=null")),
                        Arg::Operand(_) | Arg::List(_) => {}
                    }
                }
            }
            OpKind::DeviceData(_) => s.push_str(", device=lazy:0"),
        }
        s
    }
}

impl Drop for Node {
    /// Iterative: dropping the root of a 100000-node chain must not overflow the stack.
    /// The common case (the last handle of a node) empties it in place: moving each node out
    /// of its `Arc` (`into_inner`) copied the whole node, 1.6% of the tracing thread's samples
    /// in a profile of the demo's training step. The work list stays on the stack for small
    /// graphs.
    fn drop(&mut self) {
        let mut work: SmallVec<[Arc<Node>; 16]> = self.operands.drain(..).map(|o| o.node).collect();
        while let Some(mut n) = work.pop() {
            if let Some(inner) = Arc::get_mut(&mut n) {
                // The only handle: its operands are taken, then it is freed empty.
                work.extend(inner.operands.drain(..).map(|o| o.node));
            } else if let Some(mut inner) = Arc::into_inner(n) {
                // Weakly referenced (IR reuse), or another thread dropped its handle meanwhile.
                work.extend(inner.operands.drain(..).map(|o| o.node));
            }
        }
    }
}

/// The hasher of the IR's maps keyed by node address or handle: `foldhash`'s fast variant
/// (the keys are addresses and counters, not attacker-chosen, so SipHash's cost buys nothing).
pub type FastHash = foldhash::fast::FixedState;

/// A map keyed by node address.
pub type NodeMap<V> = std::collections::HashMap<*const Node, V, FastHash>;

/// The nodes reachable from `roots`, each after its operands, each once (LTC's
/// `ComputePostOrder`: iterative, operands in order, shared subgraphs emitted once).
///
/// Errors with "Graph loop found at ..." on a cycle (which `Arc` operands cannot build, but the
/// check keeps the contract of the reference).
pub fn post_order(roots: &[&Arc<Node>]) -> Result<Vec<Arc<Node>>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Emitting,
        Emitted,
    }
    // Sized after the previous graph (a step usually repeats the last one): no rehashing
    // while a 1000-node graph is walked.
    static LAST_SIZE: AtomicUsize = AtomicUsize::new(0);
    let hint = LAST_SIZE.load(Ordering::Relaxed);
    let mut marks: NodeMap<Mark> = NodeMap::with_capacity_and_hasher(hint, FastHash::default());
    let mut order = Vec::with_capacity(hint);
    for root in roots {
        let mut stack: Vec<(Arc<Node>, usize)> = vec![(Arc::clone(root), 0)];
        if marks.contains_key(&Arc::as_ptr(root)) {
            continue;
        }
        marks.insert(Arc::as_ptr(root), Mark::Emitting);
        while let Some((node, next)) = stack.pop() {
            if next < node.operands.len() {
                let child = Arc::clone(&node.operands[next].node);
                stack.push((node, next + 1));
                match marks.get(&Arc::as_ptr(&child)) {
                    Some(Mark::Emitted) => {}
                    Some(Mark::Emitting) => {
                        return Err(Error::runtime(format!(
                            "Graph loop found at {}",
                            child.text()
                        )));
                    }
                    None => {
                        marks.insert(Arc::as_ptr(&child), Mark::Emitting);
                        stack.push((child, 0));
                    }
                }
            } else {
                marks.insert(Arc::as_ptr(&node), Mark::Emitted);
                order.push(node);
            }
        }
    }
    LAST_SIZE.store(order.len(), Ordering::Relaxed);
    Ok(order)
}

/// A scalar as a 0-dim tensor's dtype would hold it (what a lifted scalar parameter's shape
/// says).
pub fn scalar_dtype(s: &Scalar) -> ScalarType {
    match s {
        Scalar::Bool(_) => ScalarType::Bool,
        Scalar::Int(_) => ScalarType::Long,
        Scalar::Float(_) => ScalarType::Double,
    }
}
