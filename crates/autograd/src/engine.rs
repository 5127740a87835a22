//! The backward engine (PyTorch's `torch::autograd::Engine`): given root gradients, it runs
//! every node the pass needs exactly once, after all the nodes that feed it, summing the
//! gradients that reach a node along several paths.
//!
//! A pass runs on the calling thread. Nodes are ordered by dependency count, and among ready
//! nodes the most recently created runs first (its sequence number), as in PyTorch. With
//! `inputs` (`torch.autograd.grad`, or `backward(inputs=...)`) the pass runs only the nodes
//! that lead to those inputs, and a node evaluates only the gradients that are needed.

use std::cell::RefCell;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::rc::Rc;
use switchyard_core::local_dispatch::GradModeGuard;
use switchyard_core::shape::{fmt_dims, is_expandable_to};
use switchyard_core::{Error, Result, Tensor};
use switchyard_ops::op;

use crate::accumulate::AccumulateGrad;
use crate::graph::{Edge, Grad, NodeRef, node_id};
use crate::manual::sum_to;

thread_local! {
    /// The nodes the running pass needs (`None`: all of them).
    static NEEDED: RefCell<Option<Rc<HashSet<usize>>>> = const { RefCell::new(None) };
}

/// Whether the running pass needs the node `e` leads to (see
/// [`crate::NodeCore::should_compute_output`]).
pub(crate) fn edge_needed(e: &Edge) -> bool {
    let Some(f) = &e.function else {
        return false;
    };
    NEEDED.with(|n| {
        n.borrow()
            .as_ref()
            .is_none_or(|set| set.contains(&node_id(f)))
    })
}

/// Runs `f` with every edge counted as needed (a node calling another node outside the
/// pass's bookkeeping, like `CopySlices`).
pub(crate) fn without_pruning<R>(f: impl FnOnce() -> R) -> R {
    let saved = NEEDED.with(|n| n.borrow_mut().take());
    let r = f();
    NEEDED.with(|n| *n.borrow_mut() = saved);
    r
}

/// Sets the needed set for the duration of one node's `apply`, restoring the outer pass's
/// afterwards (hooks may run nested passes).
struct NeededGuard(Option<Rc<HashSet<usize>>>);

impl NeededGuard {
    fn set(needed: Option<Rc<HashSet<usize>>>) -> NeededGuard {
        NeededGuard(NEEDED.with(|n| std::mem::replace(&mut *n.borrow_mut(), needed)))
    }
}

impl Drop for NeededGuard {
    fn drop(&mut self) {
        let saved = self.0.take();
        NEEDED.with(|n| *n.borrow_mut() = saved);
    }
}

/// What a pass should do.
pub(crate) struct PassOptions {
    /// Keep saved tensors for another pass (`retain_graph`).
    pub keep_graph: bool,
    /// Record the pass itself, for higher-order gradients (`create_graph`).
    pub create_graph: bool,
    /// Accumulate into leaves' `.grad` (`backward`); `false` returns gradients (`grad`).
    pub accumulate_grad: bool,
}

/// Runs a backward pass from `roots` (an edge and the gradient entering it). With `outputs`
/// (the gradient edges of the inputs asked for), returns the gradient that reached each of
/// them (`None` where none did) and runs only the nodes leading to them.
pub(crate) fn execute(
    roots: Vec<(Edge, Tensor)>,
    options: &PassOptions,
    outputs: &[Edge],
) -> Result<Vec<Grad>> {
    let mut graph = Graph::discover(roots.iter().map(|(e, _)| e))?;
    let needed = if outputs.is_empty() {
        None
    } else {
        Some(Rc::new(graph.needed_for(outputs, options.accumulate_grad)))
    };
    // What a node's `should_compute_output` sees: the nodes that run, and the nodes whose
    // input is captured (PyTorch's `should_execute`: needed or capturing).
    let wanted = needed.as_ref().map(|n| {
        let mut w = (**n).clone();
        w.extend(
            outputs
                .iter()
                .filter_map(|e| e.function.as_ref().map(node_id)),
        );
        Rc::new(w)
    });
    // Where captured gradients are taken: (node, input) → positions in `outputs`.
    let mut captures: HashMap<(usize, u32), Vec<usize>> = HashMap::new();
    if !options.accumulate_grad {
        for (i, e) in outputs.iter().enumerate() {
            if let Some(f) = &e.function {
                captures
                    .entry((node_id(f), e.input_nr))
                    .or_default()
                    .push(i);
            }
        }
    }
    let mut captured: Vec<Grad> = vec![None; outputs.len()];

    let mut buffers: HashMap<usize, Vec<Grad>> = HashMap::new();
    let mut ready = BinaryHeap::new();
    let mut queued = HashSet::new();
    for (edge, grad) in roots {
        let Some(f) = edge.function else { continue };
        let id = node_id(&f);
        buffer_add(&mut buffers, &f, edge.input_nr, grad, options.create_graph)?;
        if graph.deps.get(&id).copied().unwrap_or(0) == 0 && queued.insert(id) {
            ready.push((f.core().sequence_nr(), id));
        }
    }

    while let Some((_, id)) = ready.pop() {
        let Some(node) = graph.nodes.get(&id).cloned() else {
            continue;
        };
        let mut inputs = buffers
            .remove(&id)
            .unwrap_or_else(|| vec![None; node.core().num_inputs()]);
        let is_needed = needed.as_ref().is_none_or(|n| n.contains(&id));
        let has_capture = captures.keys().any(|(n, _)| *n == id);
        if !is_needed && !has_capture {
            continue;
        }
        let leaf = graph.leaves.get(&id);
        {
            // Hooks run in the pass's grad mode, as the node does (PyTorch evaluates a node's
            // pre-hooks inside `call_function`, under `GradMode(create_graph)`): what a hook
            // computes is recorded only with `create_graph`.
            let _mode = GradModeGuard::new(options.create_graph);
            run_pre_hooks(&node, leaf, &mut inputs)?;
        }
        for ((n, input_nr), positions) in &captures {
            if *n == id {
                for &p in positions {
                    captured[p] = inputs.get(*input_nr as usize).cloned().flatten();
                }
            }
        }
        if !is_needed {
            continue;
        }
        let mut grads = {
            let _mode = GradModeGuard::new(options.create_graph);
            let _needed = NeededGuard::set(wanted.clone());
            match (node.as_any().downcast_ref::<AccumulateGrad>(), leaf) {
                (Some(acc), Some(leaf)) => {
                    acc.accumulate(leaf, inputs)?;
                    Vec::new()
                }
                _ => node.clone().apply(inputs)?,
            }
        };
        if !options.keep_graph {
            node.release_variables();
        }
        validate_outputs(&node, &mut grads)?;
        for (edge, grad) in node.core().next_edges().iter().zip(grads) {
            let Some(next) = &edge.function else { continue };
            let next_id = node_id(next);
            if let Some(g) = grad {
                buffer_add(&mut buffers, next, edge.input_nr, g, options.create_graph)?;
            }
            if let Some(d) = graph.deps.get_mut(&next_id) {
                *d = d.saturating_sub(1);
                if *d == 0 && queued.insert(next_id) {
                    ready.push((next.core().sequence_nr(), next_id));
                }
            }
        }
    }
    Ok(captured)
}

/// The nodes reachable from the roots, how many edges lead into each, and the leaf of each
/// gradient accumulator (carried by the edges into it).
struct Graph {
    nodes: HashMap<usize, NodeRef>,
    deps: HashMap<usize, usize>,
    leaves: HashMap<usize, Tensor>,
}

impl Graph {
    fn discover<'a>(roots: impl Iterator<Item = &'a Edge>) -> Result<Graph> {
        let mut nodes: HashMap<usize, NodeRef> = HashMap::new();
        let mut deps: HashMap<usize, usize> = HashMap::new();
        let mut leaves: HashMap<usize, Tensor> = HashMap::new();
        let mut note_leaf = |id: usize, e: &Edge| {
            if let Some(leaf) = &e.leaf {
                leaves.entry(id).or_insert_with(|| leaf.clone());
            }
        };
        let mut stack: Vec<NodeRef> = Vec::new();
        for e in roots {
            if let Some(f) = &e.function {
                note_leaf(node_id(f), e);
                if nodes.insert(node_id(f), f.clone()).is_none() {
                    stack.push(f.clone());
                }
            }
        }
        while let Some(n) = stack.pop() {
            for e in n.core().next_edges() {
                let Some(f) = &e.function else { continue };
                let id = node_id(f);
                note_leaf(id, e);
                *deps.entry(id).or_default() += 1;
                if nodes.insert(id, f.clone()).is_none() {
                    stack.push(f.clone());
                }
            }
        }
        Ok(Graph {
            nodes,
            deps,
            leaves,
        })
    }

    /// The nodes that lead to one of `targets` (PyTorch's `exec_info` "needed"). With
    /// `accumulate`, the targets' accumulators themselves run.
    fn needed_for(&self, targets: &[Edge], accumulate: bool) -> HashSet<usize> {
        let target_ids: HashSet<usize> = targets
            .iter()
            .filter_map(|e| e.function.as_ref().map(node_id))
            .collect();
        let mut needed: HashSet<usize> = HashSet::new();
        if accumulate {
            needed.extend(target_ids.iter().copied());
        }
        // Iterate to a fixed point in reverse topological order: a node is needed when one
        // of its children is a target or needed. A post-order walk gives that order.
        let order = self.post_order();
        for id in order {
            let Some(n) = self.nodes.get(&id) else {
                continue;
            };
            let leads = n.core().next_edges().iter().any(|e| {
                e.function.as_ref().is_some_and(|f| {
                    let c = node_id(f);
                    target_ids.contains(&c) || needed.contains(&c)
                })
            });
            if leads {
                needed.insert(id);
            }
        }
        needed
    }

    /// Every node after all of its children.
    fn post_order(&self) -> Vec<usize> {
        let mut visited: HashSet<usize> = HashSet::new();
        let mut order = Vec::with_capacity(self.nodes.len());
        for (&start, node) in &self.nodes {
            if visited.contains(&start) {
                continue;
            }
            visited.insert(start);
            let mut stack: Vec<(NodeRef, usize)> = vec![(node.clone(), 0)];
            while let Some((n, i)) = stack.pop() {
                let edges = n.core().next_edges();
                if let Some(e) = edges.get(i) {
                    stack.push((n.clone(), i + 1));
                    if let Some(f) = &e.function
                        && visited.insert(node_id(f))
                    {
                        stack.push((f.clone(), 0));
                    }
                } else {
                    order.push(node_id(&n));
                }
            }
        }
        order
    }
}

/// Adds a gradient into input `input_nr` of `node`'s buffer (summing with what is there).
fn buffer_add(
    buffers: &mut HashMap<usize, Vec<Grad>>,
    node: &NodeRef,
    input_nr: u32,
    grad: Tensor,
    create_graph: bool,
) -> Result<()> {
    let n = node.core().num_inputs();
    let buf = buffers
        .entry(node_id(node))
        .or_insert_with(|| vec![None; n]);
    let Some(slot) = buf.get_mut(input_nr as usize) else {
        return Err(Error::runtime(format!(
            "internal error: gradient for input {input_nr} of {}, which has {n} inputs",
            node.name()
        )));
    };
    *slot = Some(match slot.take() {
        None => grad,
        Some(old) => {
            let _mode = GradModeGuard::new(create_graph);
            op::add_Tensor::call(&old, &grad, 1.into())?
        }
    });
    Ok(())
}

/// Runs the hooks registered on the gradients entering `node`; for a leaf's accumulator,
/// also the hooks registered on the leaf.
fn run_pre_hooks(node: &NodeRef, leaf: Option<&Tensor>, grads: &mut [Grad]) -> Result<()> {
    node.core().run_pre_hooks(grads)?;
    if let Some(leaf) = leaf {
        crate::hooks::run_leaf_hooks(leaf, grads)?;
    }
    Ok(())
}

/// Checks the gradients a node returned against the metadata of the inputs they flow into
/// (PyTorch's `validate_outputs`): a gradient that broadcasts to the expected shape is
/// summed down to it, one of another floating dtype is converted, anything else is an error.
fn validate_outputs(node: &NodeRef, grads: &mut [Grad]) -> Result<()> {
    let edges = node.core().next_edges();
    let fail = |m: String| Error::runtime(format!("Function {} returned an {m}", node.name()));
    if grads.len() != edges.len() {
        return Err(fail(format!(
            "invalid number of gradients - expected {}, but got {}",
            edges.len(),
            grads.len()
        )));
    }
    for (i, (edge, grad)) in edges.iter().zip(grads.iter_mut()).enumerate() {
        let (Some(next), Some(g)) = (&edge.function, grad.as_mut()) else {
            continue;
        };
        let Some(meta) = next.core().input_metadata().get(edge.input_nr as usize) else {
            continue;
        };
        let sizes = g.sizes();
        if sizes[..] != meta.shape[..] {
            if !is_expandable_to(&meta.shape, &sizes) {
                return Err(fail(format!(
                    "invalid gradient at index {i} - got {} but expected shape compatible with {}",
                    fmt_dims(&sizes),
                    fmt_dims(&meta.shape)
                )));
            }
            *g = sum_to(g, &meta.shape)?;
        }
        if g.device() != meta.device {
            return Err(fail(format!(
                "invalid gradient at index {i} - expected device {} but got {}",
                meta.device,
                g.device()
            )));
        }
        if g.dtype() != meta.dtype {
            *g = op::to_dtype::call(g, meta.dtype, false, false, None)?;
        }
    }
    Ok(())
}
