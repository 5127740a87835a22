//! IR reuse across steps (B.4, PyTorch's `TrieCache`): a training loop builds the same nodes
//! every step, so with [`set_reuse_ir`] on, a trace kernel first looks for an equal node the
//! previous steps built at the same place in the sequence and returns it, skipping shape
//! inference and the node's construction.
//!
//! One trie per thread: a root, a `current` position, and per entry an IR node, a hit count and
//! its successors (most recently used first). A lookup scans `current`'s successors front to
//! back; the first with the same operator, equal attributes and the same operands (the very
//! nodes, by identity, and output indices) is a hit: counter `IrNodeReused_torch::lazy::<Class>`,
//! moved to the front, `current` advances to it. After a miss the new node is cached as a new
//! successor (`TrieForked` when `current` already had one). `mark_step` resets `current` to the
//! root; [`ir_cache::reset`] empties the trie.
//!
//! Device-data leaves go through it too. A leaf holding the same data is reused as it is. A
//! leaf of another step's data with the same shape gets the new data swapped in (as LTC's
//! `DeviceData::Create` does) only when nothing outside the trie can read it: it and every trie
//! node built on it are held by the trie alone (checked at the last reset, and the leaf's own
//! reference count again at the lookup). LTC swaps unconditionally; the guard keeps a tensor that
//! still holds an older graph (a `.to("cpu")` keeps the IR) from seeing its input change.
//! Random operators are reused under the same guard only, so a reused random node is never part
//! of a graph some live tensor still reads: each execution draws for it once, as for a new one.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use smallvec::SmallVec;
use switchyard_core::{Error, Result};

use crate::data::{DataValue, DeviceData};
use crate::ir::{Node, OpKind};
use crate::metrics;

static REUSE_IR: AtomicBool = AtomicBool::new(false);

/// Turns IR reuse on or off (PyTorch's `torch._lazy.config.set_reuse_ir`, flag
/// `torch_lazy_reuse_ir`; off by default).
pub fn set_reuse_ir(on: bool) {
    REUSE_IR.store(on, Ordering::Relaxed);
}

/// Whether IR reuse is on.
pub fn reuse_ir() -> bool {
    REUSE_IR.load(Ordering::Relaxed)
}

/// Above this many cached nodes the trie is emptied (at the next `mark_step`, or at the next
/// insertion when tracing goes on without one): a bound of ours, as a program whose steps never
/// repeat would otherwise keep every node, and its data, alive.
pub const TRIE_CAPACITY: usize = 1 << 17;

const ROOT: u32 = 0;

struct Entry {
    /// `None` for the root.
    ir: Option<Arc<Node>>,
    hits: u64,
    /// Most recently used first.
    successors: SmallVec<[u32; 2]>,
    /// Entries whose node reads this one's (one element per operand slot).
    consumers: SmallVec<[u32; 2]>,
    /// References to this entry's node held by the trie: the entry itself and the operand
    /// slots of the nodes of `consumers`.
    trie_refs: usize,
    /// At the last reset, nothing outside the trie could read the node.
    exclusive: bool,
}

impl Entry {
    fn new(ir: Option<Arc<Node>>) -> Entry {
        Entry {
            ir,
            hits: 0,
            successors: SmallVec::new(),
            consumers: SmallVec::new(),
            trie_refs: 1,
            exclusive: false,
        }
    }

    /// Whether nothing outside the trie can read the node now.
    fn exclusive_now(&self) -> bool {
        self.exclusive
            && self
                .ir
                .as_ref()
                .is_some_and(|n| Arc::strong_count(n) == self.trie_refs)
    }
}

struct Trie {
    entries: Vec<Entry>,
    current: u32,
    index: HashMap<*const Node, u32>,
    /// The exclusivity flags are recomputed at the first lookup after a reset (not at the
    /// reset itself: the step's own tensors, still alive in `mark_step`, are usually dropped
    /// by then).
    stale: bool,
}

impl Trie {
    fn new() -> Trie {
        Trie {
            entries: vec![Entry::new(None)],
            current: ROOT,
            index: HashMap::new(),
            stale: false,
        }
    }

    /// The first successor of `current` whose node `accept` takes (given whether it is
    /// exclusively the trie's now): a hit, moved to the front and made current.
    fn lookup(&mut self, accept: impl Fn(&Arc<Node>, bool) -> bool) -> Option<Arc<Node>> {
        if self.stale {
            self.stale = false;
            self.compute_exclusive();
        }
        let cur = self.current as usize;
        let pos = self.entries[cur].successors.iter().position(|&s| {
            let e = &self.entries[s as usize];
            e.ir.as_ref().is_some_and(|n| accept(n, e.exclusive_now()))
        })?;
        let id = self.entries[cur].successors.remove(pos);
        self.entries[cur].successors.insert(0, id);
        let e = &mut self.entries[id as usize];
        e.hits += 1;
        // Once handed out the node is read outside the trie.
        e.exclusive = false;
        self.current = id;
        let node = e.ir.clone()?;
        metrics::counter_add(reuse_counter(class_of(&node)), 1);
        Some(node)
    }

    /// Caches `node` (just built after a miss) as a successor of `current`.
    fn insert(&mut self, node: &Arc<Node>) {
        // Tracing without `mark_step` never returns to the root: bound the trie here too.
        if self.entries.len() > TRIE_CAPACITY {
            *self = Trie::new();
        }
        let cur = self.current as usize;
        if !self.entries[cur].successors.is_empty() {
            metrics::counter_add("TrieForked", 1);
        }
        let id = self.entries.len() as u32;
        for o in &node.operands {
            if let Some(&p) = self.index.get(&Arc::as_ptr(&o.node)) {
                let producer = &mut self.entries[p as usize];
                producer.trie_refs += 1;
                producer.consumers.push(id);
            }
        }
        self.entries.push(Entry::new(Some(Arc::clone(node))));
        self.index.insert(Arc::as_ptr(node), id);
        self.entries[cur].successors.insert(0, id);
        self.current = id;
    }

    /// Back to the root; the trie is emptied above [`TRIE_CAPACITY`].
    fn reset_current(&mut self) {
        self.current = ROOT;
        if self.entries.len() > TRIE_CAPACITY {
            *self = Trie::new();
            return;
        }
        self.stale = true;
    }

    /// Whether nothing outside the trie can read each node: the trie holds every reference to
    /// it and every node built on it is exclusive too (consumers were cached after their
    /// operands, so in reverse order each consumer is decided before its producers).
    fn compute_exclusive(&mut self) {
        for i in (1..self.entries.len()).rev() {
            let e = &self.entries[i];
            let own =
                e.ir.as_ref()
                    .is_some_and(|n| Arc::strong_count(n) == e.trie_refs);
            let exclusive = own
                && e.consumers
                    .iter()
                    .all(|&c| self.entries[c as usize].exclusive);
            self.entries[i].exclusive = exclusive;
        }
    }

    fn dot(&self) -> String {
        let mut s = String::from("digraph G {\n");
        for (id, e) in self.entries.iter().enumerate() {
            let label = e.ir.as_ref().map_or("root", |n| n.op_name());
            let _ = writeln!(s, "  {id}[label=\"{label}, {} hits\"]", e.hits);
        }
        for (id, e) in self.entries.iter().enumerate() {
            for c in &e.successors {
                let _ = writeln!(s, "  {id} -> {c}");
            }
        }
        s.push_str("}\n");
        s
    }
}

thread_local! {
    static TRIE: RefCell<Trie> = RefCell::new(Trie::new());
}

fn with_trie<R>(f: impl FnOnce(&mut Trie) -> R) -> R {
    TRIE.with(|t| f(&mut t.borrow_mut()))
}

/// `IrNodeReused_torch::lazy::<class>`, made once per class (a hit is on the trace path).
fn reuse_counter(class: &'static str) -> &'static str {
    static NAMES: Mutex<BTreeMap<&'static str, &'static str>> = Mutex::new(BTreeMap::new());
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    names.entry(class).or_insert_with(|| {
        // Leaked once per node class (a bounded set: the generated node kinds).
        Box::leak(format!("IrNodeReused_torch::lazy::{class}").into_boxed_str())
    })
}

/// The class name a node's reuse counter carries (`AddTensor`, `DeviceData`).
fn class_of(n: &Node) -> &'static str {
    match &n.kind {
        OpKind::Aten(info) => info.class,
        OpKind::DeviceData(_) => "DeviceData",
    }
}

/// Looks up an operator node in the trie (reuse on): `accept` is given each candidate and
/// whether it is exclusively the trie's.
pub(crate) fn lookup(accept: impl Fn(&Arc<Node>, bool) -> bool) -> Option<Arc<Node>> {
    with_trie(|t| t.lookup(accept))
}

/// Caches a node built after a miss (reuse on).
pub(crate) fn insert(node: &Arc<Node>) {
    with_trie(|t| t.insert(node));
}

/// Whether two data values are of one kind (both tensors or both lifted scalars): a scalar
/// parameter and a 0-dim tensor lower differently, so one never takes the other's leaf.
fn same_kind(a: &DeviceData, b: &DeviceData) -> bool {
    matches!(
        (a.value(), b.value()),
        (
            Some(DataValue::Tensor(_)) | None,
            Some(DataValue::Tensor(_)) | None
        ) | (Some(DataValue::Scalar(_)), Some(DataValue::Scalar(_)))
    )
}

/// The device-data leaf of `data`: with reuse on, the trie's leaf at this place if it holds
/// the same data, or (guarded, see the module doc) one of the same shape given this data;
/// otherwise a new leaf, cached.
pub(crate) fn leaf(data: Arc<DeviceData>) -> Arc<Node> {
    if !reuse_ir() {
        return Arc::new(Node::device_data(data));
    }
    let found = lookup(|n, exclusive| match &n.kind {
        OpKind::DeviceData(cell) => {
            let old = cell.get();
            old.handle == data.handle
                || (exclusive && old.shape == data.shape && same_kind(&old, &data))
        }
        OpKind::Aten(_) => false,
    });
    if let Some(n) = found {
        if let OpKind::DeviceData(cell) = &n.kind
            && cell.get().handle != data.handle
        {
            cell.swap(data);
        }
        return n;
    }
    let n = Arc::new(Node::device_data(data));
    insert(&n);
    n
}

/// A leaf a tensor kept from an earlier step (its data was not replaced, so it is not built
/// again): with reuse on, the trie advances over it when it is the leaf found at this place,
/// so the path of a step matches the previous step's (LTC rebuilds such a leaf every step and
/// reuses it).
pub(crate) fn revisit(node: &Arc<Node>) {
    if reuse_ir() && matches!(node.kind, OpKind::DeviceData(_)) {
        lookup(|n, _| Arc::ptr_eq(n, node));
    }
}

/// Back to the trie's root (called by `mark_step`).
pub(crate) fn reset_current() {
    if reuse_ir() {
        with_trie(Trie::reset_current);
    }
}

/// Number of nodes the calling thread's trie holds.
pub fn trie_size() -> usize {
    with_trie(|t| t.entries.len() - 1)
}

/// PyTorch's `torch._lazy.ir_cache`: the calling thread's trie.
pub mod ir_cache {
    use super::*;

    /// The trie as Graphviz (`<id>[label="<op>, <n> hits"]`, edges parent → child), as
    /// `DumpToDotFile` writes it.
    pub fn dump_dot() -> String {
        with_trie(|t| t.dot())
    }

    /// Writes [`dump_dot`] to `path` (`torch._lazy.ir_cache.dump`).
    pub fn dump(path: &std::path::Path) -> Result<()> {
        std::fs::write(path, dump_dot())
            .map_err(|e| Error::runtime(format!("ir_cache.dump: {}: {e}", path.display())))
    }

    /// Empties the trie (`torch._lazy.ir_cache.reset`).
    pub fn reset() {
        with_trie(|t| *t = Trie::new());
    }
}
