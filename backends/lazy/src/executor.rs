//! The graph executor (B.7): collect the tensors to sync, order their IR, hash it, look the
//! program up in an LRU cache (compile on a miss), execute it, and install the results.
//!
//! Execution is synchronous (PyTorch's default, `torch_lazy_use_thread_pool` off): results are
//! in place when a sync returns. The backend here is the *naive* one: a program is the post-order
//! as a list of lowering calls over value slots, holding no data, so one program serves every
//! graph with the same hash.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use smallvec::SmallVec;
use switchyard_core::keys::sets;
use switchyard_core::local_dispatch::ExcludeDispatchKeyGuard;
use switchyard_core::{DispatchKey, Error, Generator, Result};

use crate::compiler::{self, CompilerKind, Computation};
use crate::data::{DataValue, DeviceData};
use crate::ir::{Arg, Attr, Hash128, NodeInfo, OpKind, Output, post_order};
use crate::metrics;
use crate::tensor::{LazyTensor, live_tensors};
use crate::trace::{LowerArgs, Val};

/// Capacity of the computation cache (`torch_lazy_compilation_cache_size`).
pub const COMPILATION_CACHE_SIZE: usize = 1024;

/// One lowering call of a program.
struct Instr {
    info: &'static NodeInfo,
    args: SmallVec<[Arg; 4]>,
    ins: SmallVec<[usize; 4]>,
    /// First output slot; the node's outputs take consecutive slots.
    out: usize,
    n_out: usize,
    /// Index of the node's first explicit generator among the graph's (post-order).
    generator: usize,
}

/// A compiled program (the naive backend's): parameters in slots `0..n_params`, then one slot
/// per node output; `results` name the roots' slots in root order.
pub struct Program {
    n_params: usize,
    n_slots: usize,
    instrs: Vec<Instr>,
    results: Vec<usize>,
}

impl Program {
    /// Number of parameters.
    pub fn parameter_count(&self) -> usize {
        self.n_params
    }

    /// Number of lowering calls.
    pub fn instruction_count(&self) -> usize {
        self.instrs.len()
    }

    /// One line per call (`%3 = aten::add.Tensor(%0, %1, %2)`), then the results.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for i in &self.instrs {
            let outs: Vec<String> = (i.out..i.out + i.n_out).map(|k| format!("%{k}")).collect();
            let ins: Vec<String> = i.ins.iter().map(|k| format!("%{k}")).collect();
            s.push_str(&format!(
                "{} = {}({})\n",
                outs.join(", "),
                i.info.operator_name(),
                ins.join(", ")
            ));
        }
        let res: Vec<String> = self.results.iter().map(|k| format!("%{k}")).collect();
        s.push_str(&format!("return ({})\n", res.join(", ")));
        s
    }

    /// Runs the program on `params`. `generators` are the explicit generators of the graph
    /// being run, in post-order: a cached program was compiled from an earlier graph whose
    /// generators hashed equal (same seeds) but are other objects, so each lowering gets the
    /// current graph's generator, not the one it was compiled with.
    fn execute(&self, params: &[Val], generators: &[Generator]) -> Result<Vec<Val>> {
        if params.len() != self.n_params {
            return Err(Error::runtime(format!(
                "internal error: the program takes {} parameters, got {}",
                self.n_params,
                params.len()
            )));
        }
        // Kernels run below every layer: no wrapper, autograd record or tracer sees them.
        let _guard = ExcludeDispatchKeyGuard::new(
            sets::AUTOGRAD_WITH_AD_INPLACE_OR_VIEW.add(DispatchKey::Functionalize) | sets::PYTHON,
        );
        let mut slots: Vec<Option<Val>> = vec![None; self.n_slots];
        for (slot, p) in slots.iter_mut().zip(params) {
            *slot = Some(p.clone());
        }
        for instr in &self.instrs {
            let patched: SmallVec<[Arg; 4]>;
            let args: &[Arg] = if instr.args.iter().any(is_generator) {
                patched = crate::compiler::with_generators(
                    &instr.args,
                    generators.get(instr.generator..).unwrap_or(&[]),
                )?;
                &patched
            } else {
                &instr.args
            };
            let ins: SmallVec<[Val; 4]> = instr
                .ins
                .iter()
                .map(|&k| {
                    slots[k].clone().ok_or_else(|| {
                        Error::runtime("internal error: lazy program reads an empty slot")
                    })
                })
                .collect::<Result<_>>()?;
            let outs = (instr.info.lower)(&LowerArgs {
                info: instr.info,
                args,
                ins: &ins,
            })
            .map_err(|e| e.in_operator(&instr.info.operator_name()))?;
            if outs.len() != instr.n_out {
                return Err(Error::runtime(format!(
                    "internal error: lowering of {} returned {} outputs, expected {}",
                    instr.info.operator_name(),
                    outs.len(),
                    instr.n_out
                )));
            }
            for (k, t) in outs.into_iter().enumerate() {
                slots[instr.out + k] = Some(Val::Tensor(t));
            }
        }
        self.results
            .iter()
            .map(|&k| {
                slots[k].clone().ok_or_else(|| {
                    Error::runtime("internal error: lazy program result not computed")
                })
            })
            .collect()
    }
}

/// A least-recently-used cache (LTC's `util::Cache`): lookups refresh an entry, an insert
/// beyond the capacity evicts the least recently used one.
pub struct LruCache<K, V> {
    capacity: usize,
    /// Most recently used last.
    entries: Vec<(K, V)>,
    index: HashMap<K, ()>,
}

impl<K: Copy + Eq + std::hash::Hash, V: Clone> LruCache<K, V> {
    /// An empty cache holding at most `capacity` entries.
    pub fn new(capacity: usize) -> LruCache<K, V> {
        LruCache {
            capacity,
            entries: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// The value of `k`, refreshed as most recently used.
    pub fn get(&mut self, k: K) -> Option<V> {
        self.index.get(&k)?;
        let i = self.entries.iter().rposition(|(key, _)| *key == k)?;
        let e = self.entries.remove(i);
        let v = e.1.clone();
        self.entries.push(e);
        Some(v)
    }

    /// Inserts (or replaces) `k`, evicting the least recently used entry when full.
    pub fn insert(&mut self, k: K, v: V) {
        if self.index.insert(k, ()).is_some() {
            self.entries.retain(|(key, _)| *key != k);
        }
        self.entries.push((k, v));
        while self.entries.len() > self.capacity {
            let (old, _) = self.entries.remove(0);
            self.index.remove(&old);
        }
    }

    /// Removes `k` (idempotent).
    pub fn erase(&mut self, k: K) {
        if self.index.remove(&k).is_some() {
            self.entries.retain(|(key, _)| *key != k);
        }
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.index.clear();
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl crate::compiler::Computation for Program {
    fn parameter_count(&self) -> usize {
        Program::parameter_count(self)
    }

    fn text(&self) -> String {
        Program::text(self)
    }

    fn execute(&self, params: &[Val], generators: &[Generator]) -> Result<Vec<Val>> {
        Program::execute(self, params, generators)
    }
}

type ComputationCache = LruCache<Hash128, Arc<dyn Computation>>;

static CACHE: Mutex<Option<ComputationCache>> = Mutex::new(None);

/// The device lock: one execution at a time (`wait_device_ops` is a barrier on it).
static DEVICE_LOCK: Mutex<()> = Mutex::new(());

fn with_cache<R>(f: impl FnOnce(&mut ComputationCache) -> R) -> R {
    let mut g = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    f(g.get_or_insert_with(|| ComputationCache::new(COMPILATION_CACHE_SIZE)))
}

/// Number of cached programs.
pub fn computation_cache_size() -> usize {
    with_cache(|c| c.len())
}

/// Empties the computation cache.
pub fn clear_computation_cache() {
    with_cache(ComputationCache::clear);
}

/// Removes one program (idempotent).
pub fn remove_from_computation_cache(hash: Hash128) {
    with_cache(|c| c.erase(hash));
}

/// The text of the cached program of `hash`, if cached.
pub fn program_text(hash: Hash128) -> Option<String> {
    with_cache(|c| c.get(hash)).map(|p| p.text())
}

/// Runs the cached program `hash` on `inputs`, CPU tensors given in its parameter order
/// (PyTorch's `torch._lazy.computation.run_cached_graph`), and returns its results on the CPU.
/// Errors when the program is not cached (any more), when the input count differs from its
/// parameter count, and for programs with explicit generators (which need a graph's).
pub fn run_cached_graph(
    hash: Hash128,
    inputs: &[switchyard_core::Tensor],
) -> Result<Vec<switchyard_core::Tensor>> {
    run_cached_values(
        hash,
        inputs.iter().map(|t| Val::Tensor(t.clone())).collect(),
    )
}

/// [`run_cached_graph`] with its parameters as values (scalar parameters as scalars).
pub(crate) fn run_cached_values(
    hash: Hash128,
    params: Vec<Val>,
) -> Result<Vec<switchyard_core::Tensor>> {
    let program = with_cache(|c| c.get(hash)).ok_or_else(|| {
        Error::runtime(
            "Failed to get computation by hash. Maybe the entry get kicked out of the LRU cache",
        )
    })?;
    let values = {
        let _lock = DEVICE_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
        program.execute(&params, &[])?
    };
    values
        .into_iter()
        .map(|v| match v {
            Val::Tensor(t) => Ok(t),
            Val::Scalar(s) => switchyard_core::Tensor::wrapped_scalar(s),
        })
        .collect()
}

/// The graph of the roots: post-order, parameters (device data deduplicated by handle) and
/// the graph hash (structure, leaf shapes, parameter aliasing pattern; never data).
struct Graph {
    order: Vec<Arc<crate::ir::Node>>,
    params: Vec<Arc<DeviceData>>,
    /// Parameter index of each device-data node of `order` (by position in `order`).
    param_of: crate::ir::NodeMap<usize>,
    hash: Hash128,
    /// Whether a node draws random numbers.
    random: bool,
}

/// Whether `a` is an explicit generator.
fn is_generator(a: &Arg) -> bool {
    crate::compiler::is_explicit_generator(a)
}

/// The explicit generators of `graph`'s nodes, in post-order.
fn graph_generators(graph: &Graph) -> Vec<Generator> {
    graph
        .order
        .iter()
        .flat_map(|n| {
            n.args.iter().filter_map(|a| match a {
                Arg::Attr(Attr::Generator(Some(g))) => Some(g.0.clone()),
                _ => None,
            })
        })
        .collect()
}

fn build_graph(roots: &[Output], force_data: bool) -> Result<Graph> {
    let mut hash = Hash128::of_u64(u64::from(force_data));
    for r in roots {
        hash = hash.combine(r.hash());
    }
    let root_nodes: Vec<&Arc<crate::ir::Node>> = roots.iter().map(|r| &r.node).collect();
    let order = post_order(&root_nodes)?;
    // Sized once: grown entry by entry, the maps' rehashing showed in a step's profile.
    let leaves = order
        .iter()
        .filter(|n| matches!(n.kind, OpKind::DeviceData(_)))
        .count();
    let mut params: Vec<Arc<DeviceData>> = Vec::with_capacity(leaves);
    let mut by_handle: HashMap<u64, usize, crate::ir::FastHash> =
        HashMap::with_capacity_and_hasher(leaves, Default::default());
    let mut param_of = crate::ir::NodeMap::with_capacity_and_hasher(leaves, Default::default());
    let mut sequence = Hash128::of_str("parameter_sequence");
    // Random nodes (post-order position, creation number): programs run them in creation
    // order, so two graphs equal but for the order of their draws are different programs.
    let mut draws: SmallVec<[(usize, u64); 4]> = SmallVec::new();
    for (i, n) in order.iter().enumerate() {
        if let OpKind::Aten(info) = &n.kind
            && info.random
        {
            draws.push((i, n.seq));
        }
        if let OpKind::DeviceData(cell) = &n.kind {
            let d = &cell.get();
            let next = params.len();
            let idx = *by_handle.entry(d.handle).or_insert(next);
            if idx == next {
                params.push(Arc::clone(d));
            }
            param_of.insert(Arc::as_ptr(n), idx);
            sequence = sequence.with_u64(idx as u64);
        }
    }
    let random = !draws.is_empty();
    if draws.len() > 1 {
        draws.sort_unstable_by_key(|&(_, seq)| seq);
        let mut h = Hash128::of_str("draw_order");
        for (i, _) in draws {
            h = h.with_u64(i as u64);
        }
        sequence = sequence.combine(h);
    }
    Ok(Graph {
        order,
        params,
        param_of,
        hash: hash.combine(sequence),
        random,
    })
}

fn compile(graph: &Graph, roots: &[Output]) -> Result<Program> {
    let n_params = graph.params.len();
    let mut slot_of: HashMap<*const crate::ir::Node, usize> = HashMap::new();
    let mut next = n_params;
    let mut instrs = Vec::new();
    // Creation order (a topological order, and eager's program order, which random operators
    // drawing from the default generator must follow; plan §4.3); explicit generators are
    // handed over in post-order, so each instruction keeps its first one's index.
    let mut generators_before = Vec::with_capacity(graph.order.len());
    let mut seen = 0;
    for n in &graph.order {
        generators_before.push(seen);
        seen += n.args.iter().filter(|a| is_generator(a)).count();
    }
    let mut schedule: Vec<usize> = (0..graph.order.len()).collect();
    // Parameters first: a leaf reused from an earlier step keeps that step's number.
    schedule.sort_by_key(|&i| {
        let n = &graph.order[i];
        (matches!(n.kind, OpKind::Aten(_)), n.seq)
    });
    for i in schedule {
        let n = &graph.order[i];
        match &n.kind {
            OpKind::DeviceData(_) => {
                let p = graph
                    .param_of
                    .get(&Arc::as_ptr(n))
                    .copied()
                    .ok_or_else(|| {
                        Error::runtime("internal error: device data without a parameter")
                    })?;
                slot_of.insert(Arc::as_ptr(n), p);
            }
            OpKind::Aten(info) => {
                let ins = n
                    .operands
                    .iter()
                    .map(|o| {
                        slot_of
                            .get(&Arc::as_ptr(&o.node))
                            .map(|s| s + o.index)
                            .ok_or_else(|| {
                                Error::runtime("internal error: operand not yet lowered")
                            })
                    })
                    .collect::<Result<_>>()?;
                let n_out = n.shapes.len();
                instrs.push(Instr {
                    info,
                    args: n.args.clone(),
                    ins,
                    out: next,
                    n_out,
                    generator: generators_before[i],
                });
                slot_of.insert(Arc::as_ptr(n), next);
                next += n_out;
            }
        }
    }
    let results = roots
        .iter()
        .map(|r| {
            slot_of
                .get(&Arc::as_ptr(&r.node))
                .map(|s| s + r.index)
                .ok_or_else(|| Error::runtime("internal error: root not lowered"))
        })
        .collect::<Result<_>>()?;
    Ok(Program {
        n_params,
        n_slots: next,
        instrs,
        results,
    })
}

/// A pending graph: its hash, its parameters, the tensors it computes (see [`pending_graph`]).
pub(crate) type PendingGraph = (Hash128, Vec<Arc<DeviceData>>, Vec<Arc<LazyTensor>>);

/// What syncing `tensors` would run: its graph hash, its parameters (device data in the
/// program's order) and the tensors it computes, in result order. `None` when nothing is
/// pending. (`extract_compiled_graph`, B.15.)
pub(crate) fn pending_graph(tensors: &[Arc<LazyTensor>]) -> Result<Option<PendingGraph>> {
    let (synced, roots) = collect(tensors);
    if roots.is_empty() {
        return Ok(None);
    }
    let graph = build_graph(&roots, true)?;
    Ok(Some((graph.hash, graph.params, synced)))
}

/// Compiles the graph of `roots` with the selected compiler.
fn compile_graph(graph: &Graph, roots: &[Output]) -> Result<Arc<dyn Computation>> {
    Ok(match compiler::compiler() {
        CompilerKind::Naive => Arc::new(compile(graph, roots)?),
        CompilerKind::Fusing => Arc::new(compiler::compile(
            &graph.order,
            &graph.param_of,
            graph.params.len(),
            roots,
        )?),
    })
}

/// The backend text of the program computing `roots` (`dump_ir(.., Backend)`): compiled
/// afresh, neither cached nor run.
pub(crate) fn backend_text(roots: &[Output]) -> Result<String> {
    let graph = build_graph(roots, true)?;
    Ok(compile_graph(&graph, roots)?.text())
}

/// The graph hash of what syncing `tensors` would run (PyTorch's `GetGraphHash`), `None` when
/// nothing is pending.
pub fn graph_hash(tensors: &[Arc<LazyTensor>]) -> Result<Option<Hash128>> {
    let (_, roots) = collect(tensors);
    if roots.is_empty() {
        return Ok(None);
    }
    Ok(Some(build_graph(&roots, true)?.hash))
}

/// The tensors to sync (sorted by id, each once, those without data and with pending IR) and
/// their IR values; a tensor whose IR is a bare device-data leaf takes the leaf's data.
fn collect(tensors: &[Arc<LazyTensor>]) -> (Vec<Arc<LazyTensor>>, Vec<Output>) {
    let mut sorted: Vec<&Arc<LazyTensor>> = tensors.iter().collect();
    sorted.sort_by_key(|t| t.id());
    sorted.dedup_by_key(|t| t.id());
    let mut synced = Vec::new();
    let mut roots = Vec::new();
    for t in sorted {
        let mut st = t.state();
        if st.handle.is_some() {
            continue;
        }
        let Some(ir) = st.ir.clone() else { continue };
        // A tensor whose IR is only a leaf (a clone of synced data) needs no execution: its
        // data is the leaf's.
        if let OpKind::DeviceData(d) = &ir.node.kind {
            st.handle = Some(d.get());
            continue;
        }
        roots.push(ir);
        synced.push(Arc::clone(t));
    }
    (synced, roots)
}

/// Syncs `tensors` (B.7, `force_ltc_data` on): executes the graph of those with pending IR
/// and gives each its data. With `sync_ltc_data` (`mark_step`, `sync`) their IR is replaced by
/// the data; without (`.to("cpu")`, LTC's `ApplyPendingGraph`) the IR stays and the data is
/// kept beside it, so later operators still build on the IR.
pub fn sync_tensors(tensors: &[Arc<LazyTensor>], sync_ltc_data: bool) -> Result<()> {
    sync_tensors_with(tensors, sync_ltc_data, true)
}

/// [`sync_tensors`]; without `wait` (and with `sync_ltc_data`), the execution is scheduled on
/// the device thread (`device_queue.rs`) and this returns once the tensors hold their
/// placeholders, as LTC's `SyncTensorsGraph` with `wait=false`. A graph that draws random
/// numbers or donates a parameter's buffer runs here all the same: its draws must keep their
/// order against the caller's, and donation decides on the parameters' current holders.
pub(crate) fn sync_tensors_with(
    tensors: &[Arc<LazyTensor>],
    sync_ltc_data: bool,
    wait: bool,
) -> Result<()> {
    let (synced, roots) = collect(tensors);
    if roots.is_empty() {
        return Ok(());
    }
    metrics::counter_add("SyncedTensorsWithIR", synced.len() as u64);
    let graph = build_graph(&roots, true)?;
    let program = match with_cache(|c| c.get(graph.hash)) {
        Some(p) => {
            metrics::counter_add("CachedCompile", 1);
            p
        }
        None => {
            metrics::counter_add("UncachedCompile", 1);
            let start = Instant::now();
            let p = compile_graph(&graph, &roots)?;
            metrics::record_time("CompileTime", start.elapsed());
            with_cache(|c| c.insert(graph.hash, Arc::clone(&p)));
            p
        }
    };
    if program.parameter_count() != graph.params.len() {
        return Err(Error::runtime(
            "internal error: the cached program's parameter count differs from the graph's",
        ));
    }
    // `LTC_SAVE_TENSORS_FILE` (B.13): the graph of this sync, appended before it runs.
    crate::dump::save_tensors_graph(&roots, graph.hash, || program.text())?;
    let asynchronous =
        !wait && sync_ltc_data && program.donation_candidates().is_empty() && !graph.random;
    if asynchronous {
        schedule(graph, program, &synced, &roots);
        return Ok(());
    }
    // A scheduled run may still have to fill some of this graph's parameters.
    crate::device_queue::wait();
    free_retired();
    let params = param_values(&graph.params)?;
    // Placeholders installed before execution (LTC's order); on failure the IR comes back.
    let placeholders = install_placeholders(&synced, &roots, sync_ltc_data);
    // Donation (`compiler/scatter.rs`): a parameter the program would write in place gives
    // its buffer to this run when no IR outside it can read the device data again; its value
    // leaves the device data, so the program's run-time count sees the buffer unshared. (After
    // a failed execution such data stays empty, marked lost: the run may have written it.)
    let mut donated: Vec<&Arc<DeviceData>> = Vec::new();
    if sync_ltc_data && !program.donation_candidates().is_empty() {
        let ok = compiler::scatter::donatable(
            &graph.order,
            &roots,
            &graph.param_of,
            &graph.params,
            program.donation_candidates(),
        );
        for (d, _) in graph.params.iter().zip(ok).filter(|(_, ok)| *ok) {
            d.clear();
            donated.push(d);
        }
    }
    match execute(&*program, &params, &graph_generators(&graph)) {
        Ok(values) => assign(&placeholders, values),
        Err(e) => {
            for d in donated {
                d.mark_lost();
            }
            for ((t, p), ir) in synced.iter().zip(&placeholders).zip(roots) {
                p.clear();
                let mut st = t.state();
                st.handle = None;
                st.ir = Some(ir);
            }
            Err(e)
        }
    }
}

/// The asynchronous half of [`sync_tensors_with`]: placeholders installed (IR replaced by
/// them) and the run scheduled, which fills them or records its error in them.
fn schedule(
    graph: Graph,
    program: Arc<dyn Computation>,
    synced: &[Arc<LazyTensor>],
    roots: &[Output],
) {
    let placeholders = install_placeholders(synced, roots, true);
    free_retired();
    // What the run needs: the parameters. The step's IR is freed here, by the thread that
    // made it (freed on the device thread, its memory went back to this thread's allocator
    // arena under that arena's lock, which tracing then waited for).
    let Graph { params, .. } = graph;
    let run = move || {
        // Runs are in order on one thread: an earlier run's placeholders are filled now.
        let result = param_values(&params)
            .and_then(|params| execute(&*program, &params, &[]))
            .and_then(|values| assign(&placeholders, values));
        if let Err(e) = result {
            placeholders.iter().for_each(|p| p.fail(e.clone()));
        }
        retire(params);
        retire(placeholders);
    };
    if let Err(run) = crate::device_queue::schedule(Box::new(run)) {
        run();
    }
}

/// Handles a scheduled run held, left for the tracing thread to free ([`retire`]).
static RETIRED: Mutex<Vec<Vec<Arc<DeviceData>>>> = Mutex::new(Vec::new());

/// Called by a scheduled run when done with its handles: values nobody else holds are freed
/// here (the device thread made most of them), the handles themselves by the tracing thread
/// ([`free_retired`]). The handles were allocated there: freed on the device thread, each went
/// back to the tracing thread's allocator arena under that arena's lock, and the two threads
/// contended for it (6% of the device thread's samples waiting, 5% of the tracing thread's
/// waking it, in a profile of the demo step).
fn retire(mut handles: Vec<Arc<DeviceData>>) {
    handles
        .iter_mut()
        .for_each(DeviceData::free_value_if_unshared);
    RETIRED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(handles);
}

/// Frees the handles finished runs retired (on the thread that allocated them).
fn free_retired() {
    let retired = std::mem::take(&mut *RETIRED.lock().unwrap_or_else(PoisonError::into_inner));
    drop(retired);
}

/// The values of a graph's parameters, in order (an error for data that has none).
fn param_values(params: &[Arc<DeviceData>]) -> Result<Vec<Val>> {
    params
        .iter()
        .map(|d| d.value().map(Val::from).ok_or_else(|| d.missing()))
        .collect()
}

/// A placeholder for each root, installed as its synced tensor's data (LTC's order: before
/// execution); with `drop_ir`, the tensor's IR goes (`mark_step`), else it stays beside it.
fn install_placeholders(
    synced: &[Arc<LazyTensor>],
    roots: &[Output],
    drop_ir: bool,
) -> Vec<Arc<DeviceData>> {
    let placeholders: Vec<Arc<DeviceData>> = roots
        .iter()
        .map(|r| DeviceData::placeholder(r.shape().clone()))
        .collect();
    for (t, p) in synced.iter().zip(&placeholders) {
        let mut st = t.state();
        st.handle = Some(Arc::clone(p));
        st.tensor_data = None;
        if drop_ir {
            st.ir = None;
        }
    }
    placeholders
}

/// Runs `program` under the device lock, timed (`ExecuteTime`).
fn execute(
    program: &dyn Computation,
    params: &[Val],
    generators: &[Generator],
) -> Result<Vec<Val>> {
    let _lock = DEVICE_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
    let start = Instant::now();
    let r = program.execute(params, generators);
    metrics::record_time("ExecuteTime", start.elapsed());
    r
}

/// Fills the placeholders with a run's results, one each.
fn assign(placeholders: &[Arc<DeviceData>], values: Vec<Val>) -> Result<()> {
    if values.len() != placeholders.len() {
        return Err(Error::runtime(
            "Expected number of outputs does not match the program's results",
        ));
    }
    for (p, v) in placeholders.iter().zip(values) {
        p.assign(DataValue::from(v));
    }
    Ok(())
}

/// Syncs every live lazy tensor (LTC's `SyncLiveTensorsGraph`), IR replaced by data; without
/// `wait`, the execution is scheduled on the device thread (see [`sync_tensors_with`]).
pub fn sync_live_tensors(wait: bool) -> Result<()> {
    let live = live_tensors();
    sync_tensors_with(&live, true, wait)
}

/// Waits for scheduled executions to finish (`torch._lazy.wait_device_ops`), then for a
/// running synchronous one (a barrier on the device lock).
pub fn wait_device_ops() {
    crate::device_queue::wait();
    drop(DEVICE_LOCK.lock().unwrap_or_else(PoisonError::into_inner));
    free_retired();
}
