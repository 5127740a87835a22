//! The backward graph: nodes, the edges between them, the metadata of each node's inputs, and
//! the hooks that run before a node.
//!
//! A [`Node`] is a backward function: it receives the gradients of a forward operation's
//! outputs (its *inputs*, in the backward direction) and returns the gradients of the forward
//! operation's inputs (its *outputs*), which flow along its [`Edge`]s to the nodes that
//! produced those inputs. Leaves end in an [`crate::AccumulateGrad`] node that writes `.grad`.
//!
//! Nodes are shared (`Arc`): a tensor's autograd metadata holds its `grad_fn`, and each node
//! holds the nodes below it through its edges. Nothing points back up, so the graph frees
//! itself when the last output tensor goes (saved outputs are stored without their
//! `grad_fn`; see [`crate::SavedVariable`]).

use smallvec::SmallVec;
use std::any::Any;
use std::cell::Cell;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use switchyard_core::{Device, DimVec, Result, ScalarType, Tensor};

use crate::meta::AutogradMeta;

/// A shared backward node.
pub type NodeRef = Arc<dyn Node>;

/// One gradient flowing into or out of the backward pass: a tensor, or `None` where a
/// gradient is undefined (PyTorch's undefined tensor: "no gradient", treated as zeros).
pub type Grad = Option<Tensor>;

/// A backward function of the autograd graph (PyTorch's `torch::autograd::Node`).
pub trait Node: Send + Sync + 'static {
    /// The name printed for `grad_fn` (`AddBackward0`, `AccumulateGrad`, ...).
    fn name(&self) -> String;

    /// The fields every node has: edges, input metadata, sequence number, hooks.
    fn core(&self) -> &NodeCore;

    /// Computes the gradients of the forward inputs (one per next edge) from the gradients of
    /// the forward outputs (one per input metadata entry).
    fn apply(self: Arc<Self>, grads: Vec<Grad>) -> Result<Vec<Grad>>;

    /// Frees the saved tensors once the pass is done with them (unless `retain_graph`).
    fn release_variables(&self) {}

    /// The node as `Any`, for downcasting (the engine recognises [`crate::AccumulateGrad`]).
    fn as_any(&self) -> &dyn Any;
}

impl fmt::Debug for dyn Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.name())
    }
}

/// Where a gradient goes: input `input_nr` of `function`, or nowhere (`function` is `None`)
/// for a forward input that does not require grad.
#[derive(Clone, Default)]
pub struct Edge {
    /// The receiving node.
    pub function: Option<NodeRef>,
    /// Which of its inputs.
    pub input_nr: u32,
    /// For an edge into a leaf's [`crate::AccumulateGrad`]: the leaf. The accumulator does
    /// not hold its leaf (the leaf keeps its accumulator for its whole life, and a tensor
    /// inside it would make a cycle), so the edges of the graph keep the leaf alive and the
    /// engine hands it to the accumulator.
    pub leaf: Option<Tensor>,
}

impl Edge {
    /// An edge into input `input_nr` of `function`.
    pub fn new(function: NodeRef, input_nr: u32) -> Edge {
        Edge {
            function: Some(function),
            input_nr,
            leaf: None,
        }
    }

    /// The edge into `leaf`'s gradient accumulator.
    pub fn to_leaf(accumulator: NodeRef, leaf: Tensor) -> Edge {
        Edge {
            function: Some(accumulator),
            input_nr: 0,
            leaf: Some(leaf),
        }
    }

    /// Whether the edge leads anywhere.
    pub fn is_valid(&self) -> bool {
        self.function.is_some()
    }

    /// Whether two edges lead to the same input of the same node.
    pub fn same_target(&self, other: &Edge) -> bool {
        match (&self.function, &other.function) {
            (Some(a), Some(b)) => node_id(a) == node_id(b) && self.input_nr == other.input_nr,
            _ => false,
        }
    }
}

impl fmt::Debug for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.function {
            Some(n) => write!(f, "({}, {})", n.name(), self.input_nr),
            None => f.write_str("(None)"),
        }
    }
}

/// The forward operation a node name belongs to, as PyTorch's messages name it
/// (`forward_op_name`): `ExpBackward0` → `Exp`, `SplitBackward1` → `Split`.
pub fn forward_op_name(node_name: &str) -> String {
    let trimmed = node_name.trim_end_matches(|c: char| c.is_ascii_digit());
    trimmed
        .strip_suffix("Backward")
        .unwrap_or(node_name)
        .to_string()
}

/// A node's identity (its address) for maps and comparisons.
pub fn node_id(node: &NodeRef) -> usize {
    Arc::as_ptr(node).cast::<()>().addr()
}

/// What a gradient flowing into a node must look like: the forward output's dtype, device
/// and shape. A gradient of another shape that broadcasts to it is summed down to it; one of
/// another dtype is converted; anything else is an error naming the node.
#[derive(Clone, Debug, PartialEq)]
pub struct InputMetadata {
    /// The element type.
    pub dtype: ScalarType,
    /// The device.
    pub device: Device,
    /// The shape.
    pub shape: DimVec,
}

impl InputMetadata {
    /// The metadata of `t`.
    pub fn of(t: &Tensor) -> InputMetadata {
        InputMetadata {
            dtype: t.dtype(),
            device: t.device(),
            shape: t.sizes(),
        }
    }

    /// Appends the metadata of `t` to `list` (a hot path: the shape is copied once, from
    /// the tensor's consistent read of its sizes, straight into the entry).
    fn push_of(list: &mut SmallVec<[InputMetadata; 1]>, t: &Tensor) {
        let (dtype, device) = (t.dtype(), t.device());
        t.with_sizes(|s| {
            list.push(InputMetadata {
                dtype,
                device,
                shape: DimVec::from_slice(s),
            });
        });
    }
}

/// A hook run on a gradient before the node that receives it: it may return a replacement.
pub type TensorHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// A hook run on a leaf after its `.grad` was accumulated.
pub type PostAccumulateGradHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// A node's edges to the nodes of its forward inputs; inline for up to two inputs, the
/// common case, so that recording a node allocates only the node.
pub type EdgeList = SmallVec<[Edge; 2]>;

/// The fields every [`Node`] has.
pub struct NodeCore {
    next_edges: EdgeList,
    input_metadata: SmallVec<[InputMetadata; 1]>,
    sequence_nr: u64,
    /// Made on first registration: most nodes never get a hook, and an empty cell costs
    /// nothing to create, to drop, or to check in the backward pass.
    hooks: OnceLock<Mutex<NodeHooks>>,
}

#[derive(Default)]
struct NodeHooks {
    /// Tensor hooks by input number, in registration order, with their handle ids.
    pre: Vec<(u64, u32, TensorHook)>,
    /// `retain_grad()` of the tensors this node produced, by input number (weak: a tensor
    /// holds its `grad_fn`, not the other way round).
    retains_grad: Vec<(u32, Weak<AutogradMeta>)>,
}

thread_local! {
    static SEQUENCE_NR: Cell<u64> = const { Cell::new(0) };
}

/// The next sequence number of this thread: nodes created later run earlier in a backward
/// pass (PyTorch's `at::sequence_number`).
fn next_sequence_nr() -> u64 {
    SEQUENCE_NR.with(|c| {
        let n = c.get();
        c.set(n + 1);
        n
    })
}

impl NodeCore {
    /// A node's core with its edges to the forward inputs and the metadata of the forward
    /// outputs it receives gradients for.
    pub fn new(
        next_edges: impl IntoIterator<Item = Edge>,
        input_metadata: impl IntoIterator<Item = InputMetadata>,
    ) -> NodeCore {
        NodeCore::with_sequence_nr(next_edges, input_metadata, next_sequence_nr())
    }

    /// A core with the given edges; the metadata of the forward outputs is added after the
    /// forward call ([`NodeCore::add_input_metadata`]). The generated kernels' constructor.
    pub fn with_edges(next_edges: EdgeList) -> NodeCore {
        NodeCore {
            next_edges,
            input_metadata: SmallVec::new(),
            sequence_nr: next_sequence_nr(),
            hooks: OnceLock::new(),
        }
    }

    /// A core with an explicit sequence number (`AccumulateGrad` runs as early as possible).
    pub(crate) fn with_sequence_nr(
        next_edges: impl IntoIterator<Item = Edge>,
        input_metadata: impl IntoIterator<Item = InputMetadata>,
        sequence_nr: u64,
    ) -> NodeCore {
        NodeCore {
            next_edges: next_edges.into_iter().collect(),
            input_metadata: input_metadata.into_iter().collect(),
            sequence_nr,
            hooks: OnceLock::new(),
        }
    }

    /// Records the metadata of the next forward output this node receives a gradient for
    /// (outputs are known only after the forward call; the node is shared only after that).
    pub fn add_input_metadata(&mut self, t: &Tensor) {
        InputMetadata::push_of(&mut self.input_metadata, t);
    }

    /// The edges to the nodes of the forward inputs, one per gradient `apply` returns.
    pub fn next_edges(&self) -> &[Edge] {
        &self.next_edges
    }

    /// The metadata of each gradient `apply` receives.
    pub fn input_metadata(&self) -> &[InputMetadata] {
        &self.input_metadata
    }

    /// How many gradients `apply` receives.
    pub fn num_inputs(&self) -> usize {
        self.input_metadata.len()
    }

    /// How many gradients `apply` returns.
    pub fn num_outputs(&self) -> usize {
        self.next_edges.len()
    }

    /// The creation order on its thread (later nodes run first).
    pub fn sequence_nr(&self) -> u64 {
        self.sequence_nr
    }

    /// Whether output `i`'s gradient is needed by the running backward pass: its edge leads
    /// somewhere and the pass needs that node (`torch.autograd.grad` prunes what it does
    /// not need). A formula is only evaluated for the outputs that are needed.
    pub fn should_compute_output(&self, i: usize) -> bool {
        self.next_edges
            .get(i)
            .is_some_and(crate::engine::edge_needed)
    }

    fn hooks(&self) -> std::sync::MutexGuard<'_, NodeHooks> {
        self.hooks
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a hook on the gradient of input `input_nr`; returns its id.
    pub(crate) fn add_pre_hook(&self, input_nr: u32, hook: TensorHook) -> u64 {
        let id = crate::hooks::next_hook_id();
        self.hooks().pre.push((id, input_nr, hook));
        id
    }

    /// Removes a hook by id; returns whether it was there.
    pub(crate) fn remove_pre_hook(&self, id: u64) -> bool {
        let mut hooks = self.hooks();
        let before = hooks.pre.len();
        hooks.pre.retain(|(h, _, _)| *h != id);
        hooks.pre.len() != before
    }

    /// Makes the gradient of input `input_nr` be stored in the `.grad` of the tensor whose
    /// metadata is `meta` (`retain_grad()`).
    pub(crate) fn add_retains_grad(&self, input_nr: u32, meta: Weak<AutogradMeta>) {
        let mut hooks = self.hooks();
        hooks
            .retains_grad
            .retain(|(nr, m)| !(*nr == input_nr && m.ptr_eq(&meta)));
        hooks.retains_grad.push((input_nr, meta));
    }

    /// Drops the `retain_grad()` entry of input `input_nr` (its tensor's history moved).
    pub(crate) fn remove_retains_grad(&self, input_nr: u32) -> Option<Weak<AutogradMeta>> {
        let mut hooks = self.hooks();
        let pos = hooks
            .retains_grad
            .iter()
            .position(|(nr, _)| *nr == input_nr)?;
        Some(hooks.retains_grad.remove(pos).1)
    }

    /// Runs the tensor hooks, then the `retain_grad()` captures, on the gradients about to
    /// enter this node (PyTorch's `call_tensor_pre_hooks`).
    pub(crate) fn run_pre_hooks(&self, grads: &mut [Grad]) -> Result<()> {
        let Some(hooks) = self.hooks.get() else {
            return Ok(());
        };
        let (pre, retains): (Vec<_>, Vec<_>) = {
            let hooks = hooks.lock().unwrap_or_else(PoisonError::into_inner);
            if hooks.pre.is_empty() && hooks.retains_grad.is_empty() {
                return Ok(());
            }
            (
                hooks
                    .pre
                    .iter()
                    .map(|(_, nr, h)| (*nr, h.clone()))
                    .collect(),
                hooks.retains_grad.clone(),
            )
        };
        for (nr, hook) in pre {
            if let Some(Some(g)) = grads.get(nr as usize)
                && let Some(replacement) = hook(g)?
            {
                grads[nr as usize] = Some(replacement);
            }
        }
        for (nr, meta) in retains {
            if let (Some(Some(g)), Some(meta)) = (grads.get(nr as usize), meta.upgrade()) {
                meta.retain_incoming_grad(g)?;
            }
        }
        Ok(())
    }
}
