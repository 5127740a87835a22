//! The fusing compiler (plan §5): a graph's post-order lowered to a [`Program`] over the CPU
//! kernels, after common-subexpression elimination, dead-code elimination, view-copy elision
//! and element-wise fusion (`fuse.rs`, run by `switchyard_cpu::fused`), scheduled in creation
//! order with every intermediate dropped after its last reader; scatters write into their
//! dying base, parameters included when donated (`scatter.rs`), and fused outputs into a
//! buffer that died just before (`buffers.rs`).
//!
//! The naive backend (`executor.rs`: one lowering call per node) stays as the reference:
//! [`set_compiler`]`(CompilerKind::Naive)`.

mod buffers;
mod fuse;
pub(crate) mod scatter;
mod views;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use smallvec::SmallVec;
use switchyard_core::keys::sets;
use switchyard_core::local_dispatch::ExcludeDispatchKeyGuard;
use switchyard_core::{Device, DispatchKey, Error, Generator, Result, Storage, Tensor};
use switchyard_cpu::fused::{FusedKernel, Operand};
use switchyard_ops::op;

use crate::ir::{Arg, Attr, GeneratorAttr, Hash128, Node, NodeInfo, OpKind, Output, Shape};
use crate::trace::{LowerArgs, Val, cpu_only};

/// Which backend compiles graphs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompilerKind {
    /// One CPU kernel call per node (the reference).
    Naive,
    /// This module's compiler (the default).
    Fusing,
}

static KIND: AtomicU8 = AtomicU8::new(1);

/// Chooses the compiler of later syncs; the computation cache is emptied (its programs came
/// from the other one).
pub fn set_compiler(kind: CompilerKind) {
    KIND.store(
        match kind {
            CompilerKind::Naive => 0,
            CompilerKind::Fusing => 1,
        },
        Ordering::SeqCst,
    );
    crate::executor::clear_computation_cache();
}

/// The compiler in use.
pub fn compiler() -> CompilerKind {
    if KIND.load(Ordering::SeqCst) == 0 {
        CompilerKind::Naive
    } else {
        CompilerKind::Fusing
    }
}

/// A compiled graph, whichever backend made it: what the computation cache holds.
pub trait Computation: Send + Sync {
    /// Number of parameters.
    fn parameter_count(&self) -> usize;
    /// The backend text (dump format `backend`).
    fn text(&self) -> String;
    /// Runs the program on the parameters' values; one value per root. `generators` are the
    /// explicit generators of the graph being run, in post-order: a cached program was compiled
    /// from an earlier graph whose generators hashed equal (same seeds) but are other objects,
    /// so each random node draws from the current graph's generator.
    fn execute(&self, params: &[Val], generators: &[Generator]) -> Result<Vec<Val>>;
    /// Parameters the program writes in place when the executor donates them (their value
    /// removed from the device data for the run, `scatter.rs`); the naive program has none.
    fn donation_candidates(&self) -> &[usize] {
        &[]
    }
}

/// Whether `a` is an explicit generator argument.
pub(crate) fn is_explicit_generator(a: &Arg) -> bool {
    matches!(a, Arg::Attr(Attr::Generator(Some(_))))
}

/// `args` with each explicit generator replaced, in order, by the next of `generators` (a
/// cached program runs with the current graph's generators: [`Computation::execute`]).
pub(crate) fn with_generators(
    args: &[Arg],
    generators: &[Generator],
) -> Result<SmallVec<[Arg; 4]>> {
    let mut next = generators.iter();
    args.iter()
        .map(|a| {
            if !is_explicit_generator(a) {
                return Ok(a.clone());
            }
            next.next()
                .map(|g| Arg::Attr(Attr::Generator(Some(GeneratorAttr(g.clone())))))
                .ok_or_else(|| Error::runtime("internal error: the graph has fewer generators"))
        })
        .collect()
}

/// One instruction of a [`Program`].
enum Instr {
    /// A node's lowering (its CPU kernel).
    Call {
        info: &'static NodeInfo,
        args: SmallVec<[Arg; 4]>,
        ins: SmallVec<[usize; 4]>,
        out: usize,
        shapes: SmallVec<[Shape; 1]>,
        /// For a node with explicit generators: the index of its first one among the graph's
        /// generators in post-order (see [`Computation::execute`]).
        generators_at: Option<usize>,
    },
    /// An elided `*_copy`: the view itself, on the source's buffer (the copy if the view
    /// cannot be taken).
    View {
        info: &'static NodeInfo,
        args: SmallVec<[Arg; 4]>,
        ins: SmallVec<[usize; 4]>,
        out: usize,
    },
    /// A fusion group: one loop over its inputs.
    Fused {
        kernel: Box<FusedKernel>,
        tail: &'static NodeInfo,
        ins: SmallVec<[usize; 4]>,
        out: usize,
        spare: Spare,
        /// A slot whose buffer dies just before this instruction and has the output's
        /// layout (`buffers.rs`), with the fused instruction that produced it: the output is
        /// written into it when nothing else holds it.
        reuse: Option<(usize, Option<usize>)>,
    },
    /// A fusion group as the prologue of softmax / log_softmax over the last dimension.
    FusedSoftmax {
        kernel: Box<FusedKernel>,
        log: bool,
        tail: &'static NodeInfo,
        ins: SmallVec<[usize; 4]>,
        out: usize,
        spare: Spare,
        /// As [`Instr::Fused`]'s.
        reuse: Option<(usize, Option<usize>)>,
    },
    /// A `*_scatter` whose base dies here (`scatter.rs`): written into the base's buffer when
    /// nothing else sees it at run time, else the CPU kernel (which copies the base).
    Scatter {
        kind: scatter::ScatterKind,
        info: &'static NodeInfo,
        args: SmallVec<[Arg; 4]>,
        ins: SmallVec<[usize; 4]>,
        out: usize,
        shape: Shape,
        /// The fused instruction producing the base, if any: its spare handle on the base's
        /// storage does not count as a reader.
        producer: Option<usize>,
    },
    /// The slot's last reader has run.
    Free(usize),
}

/// Bytes held by every program's [`Spare`]s together.
static SPARE_BYTES: AtomicUsize = AtomicUsize::new(0);
/// Outputs below this size are not kept: the allocator recycles them cheaply itself.
const SPARE_MIN_BYTES: usize = 256 << 10;
/// At most this many bytes are kept by all spares together.
const SPARE_BUDGET_BYTES: usize = 512 << 20;

/// The output buffer of a fused instruction's last run, kept to be written again by the next
/// run if by then nobody else holds it (plan §5.4's output pool): a large output is otherwise
/// mapped afresh and page-faulted on every step (a quarter of `chain8_16M`'s time). The buffer
/// is reused only when this handle is the storage's only one — no tensor, view or exported
/// pointer sees it — so a result the user kept is never overwritten; while the user holds it,
/// keeping the handle costs no memory of its own.
struct Spare(Mutex<Option<Storage>>);

impl Spare {
    fn new() -> Spare {
        Spare(Mutex::new(None))
    }

    /// The kept buffer as a new contiguous tensor of `sizes` and `dtype`, if nobody else
    /// holds it and it has the right size.
    fn take(&self, sizes: &[i64], dtype: switchyard_core::ScalarType) -> Option<Tensor> {
        let storage = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        SPARE_BYTES.fetch_sub(storage.nbytes(), Ordering::Relaxed);
        let numel: i64 = sizes.iter().product();
        let nbytes = usize::try_from(numel).ok()? * dtype.element_size();
        if storage.use_count() != 1 || storage.is_exported() || storage.nbytes() != nbytes {
            return None;
        }
        let strides = switchyard_core::shape::contiguous_strides(sizes);
        let t = Tensor::from_storage(storage, sizes, &strides, 0, dtype).ok()?;
        crate::metrics::counter_add("FusedOutputReused", 1);
        Some(t)
    }

    /// Whether the kept buffer is `s` (this handle only keeps memory, it never reads it).
    fn holds(&self, s: &Storage) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|k| k.is_alias_of(s))
    }

    /// Keeps `t`'s buffer for the next run (if large enough and within the budget).
    fn keep(&self, t: &Tensor) {
        let Some(storage) = t.storage() else { return };
        let n = storage.nbytes();
        if n < SPARE_MIN_BYTES
            || SPARE_BYTES.fetch_add(n, Ordering::Relaxed) + n > SPARE_BUDGET_BYTES
        {
            if n >= SPARE_MIN_BYTES {
                SPARE_BYTES.fetch_sub(n, Ordering::Relaxed);
            }
            return;
        }
        let old = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(storage);
        if let Some(old) = old {
            SPARE_BYTES.fetch_sub(old.nbytes(), Ordering::Relaxed);
        }
    }
}

impl Drop for Spare {
    fn drop(&mut self) {
        if let Some(s) = self
            .0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            SPARE_BYTES.fetch_sub(s.nbytes(), Ordering::Relaxed);
        }
    }
}

/// A compiled program: parameters in slots `0..n_params`, then one slot per node output.
pub struct Program {
    n_params: usize,
    n_slots: usize,
    instrs: Vec<Instr>,
    results: Vec<usize>,
    stats: Stats,
    /// Parameters whose buffer a scatter writes in place when the executor donates it.
    donations: Vec<usize>,
}

/// What the passes did (shown in the text, checked by the tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Nodes replaced by an equal earlier one.
    pub cse: usize,
    /// Nodes no root needs after CSE.
    pub dead: usize,
    /// `*_copy` nodes run as views.
    pub views: usize,
    /// Fusion groups.
    pub groups: usize,
    /// Nodes inside fusion groups.
    pub fused_nodes: usize,
    /// Scatters written into their dying base's buffer (when unshared at run time).
    pub in_place_scatters: usize,
    /// Parameters those scatters write in place when donated.
    pub donations: usize,
    /// Fused outputs written into a buffer that died just before.
    pub reused_buffers: usize,
}

impl Program {
    /// What the passes did.
    pub fn stats(&self) -> Stats {
        self.stats
    }
}

/// Compiles the post-order `order` (device-data nodes are parameters, `param_of` maps them)
/// computing `roots`.
pub(crate) fn compile(
    order: &[Arc<Node>],
    param_of: &crate::ir::NodeMap<usize>,
    n_params: usize,
    roots: &[Output],
) -> Result<Program> {
    let mut stats = Stats::default();
    let n = order.len();
    // How many explicit generators the nodes before each one in post-order carry.
    let mut generators_before = Vec::with_capacity(n);
    let mut seen_generators = 0;
    for nd in order {
        generators_before.push(seen_generators);
        seen_generators += nd.args.iter().filter(|a| is_explicit_generator(a)).count();
    }
    let id_of: crate::ir::NodeMap<usize> = order
        .iter()
        .enumerate()
        .map(|(i, nd)| (Arc::as_ptr(nd), i))
        .collect();
    let node_id = |o: &Output| -> Result<usize> {
        id_of
            .get(&Arc::as_ptr(&o.node))
            .copied()
            .ok_or_else(|| Error::runtime("internal error: operand outside the post-order"))
    };
    // 1. Graph: operands as (node id, output index).
    let mut operands: Vec<SmallVec<[(usize, usize); 3]>> = Vec::with_capacity(n);
    for nd in order {
        operands.push(
            nd.operands
                .iter()
                .map(|o| Ok((node_id(o)?, o.index)))
                .collect::<Result<_>>()?,
        );
    }
    // 2. CSE: each node is replaced by its representative; parameters by the first node of
    //    their parameter, operator nodes by an earlier-created node with the same operator,
    //    arguments and (representative) operands.
    let mut rep: Vec<usize> = (0..n).collect();
    let mut first_of_param: HashMap<usize, usize> = HashMap::new();
    let mut table: HashMap<Hash128, SmallVec<[usize; 1]>> = HashMap::new();
    // In creation order, so that a representative was created before every user of the
    // nodes it replaces (the schedule is creation order too).
    let mut by_seq: Vec<usize> = (0..n).collect();
    by_seq.sort_by_key(|&i| order[i].seq);
    for &i in &by_seq {
        for op in &mut operands[i] {
            op.0 = rep[op.0];
        }
        match &order[i].kind {
            OpKind::DeviceData(_) => {
                let p = param_of
                    .get(&Arc::as_ptr(&order[i]))
                    .copied()
                    .ok_or_else(|| {
                        Error::runtime("internal error: device data without a parameter")
                    })?;
                let r = *first_of_param.entry(p).or_insert(i);
                if r != i {
                    rep[i] = r;
                }
            }
            // Random operators are never merged: two draws differ.
            OpKind::Aten(info) if !info.random => {
                let mut key = info.op_hash.combine(order[i].hash);
                for (id, idx) in &operands[i] {
                    key = key.with_u64(*id as u64).with_u64(*idx as u64);
                }
                let same = table.get(&key).and_then(|cands| {
                    cands.iter().copied().find(|&j| {
                        let (a, b) = (&order[i], &order[j]);
                        matches!((&a.kind, &b.kind), (OpKind::Aten(x), OpKind::Aten(y)) if std::ptr::eq(*x, *y))
                            && a.args == b.args
                            && operands[i] == operands[j]
                            && a.shapes == b.shapes
                    })
                });
                match same {
                    Some(j) => {
                        rep[i] = j;
                        stats.cse += 1;
                    }
                    None => table.entry(key).or_default().push(i),
                }
            }
            OpKind::Aten(_) => {}
        }
    }
    let root_vals: Vec<(usize, usize)> = roots
        .iter()
        .map(|r| Ok((rep[node_id(r)?], r.index)))
        .collect::<Result<_>>()?;
    // 3. DCE: what the roots need, through representatives.
    let mut live = vec![false; n];
    let mut work: Vec<usize> = root_vals.iter().map(|r| r.0).collect();
    while let Some(i) = work.pop() {
        if live[i] {
            continue;
        }
        live[i] = true;
        work.extend(operands[i].iter().map(|o| o.0));
    }
    stats.dead = (0..n)
        .filter(|&i| !live[i] && rep[i] == i && matches!(order[i].kind, OpKind::Aten(_)))
        .count();
    // Uses of each live node's value by live nodes (an operand used twice counts twice).
    let mut uses: Vec<SmallVec<[usize; 2]>> = vec![SmallVec::new(); n];
    for i in (0..n).filter(|&i| live[i] && rep[i] == i) {
        for o in &operands[i] {
            uses[o.0].push(i);
        }
    }
    let is_root: Vec<bool> = {
        let mut v = vec![false; n];
        for r in &root_vals {
            v[r.0] = true;
        }
        v
    };
    // 4. Fusion groups (trees of element-wise nodes; see fuse.rs).
    let groups = fuse::plan(order, &operands, &live, &rep, &uses, &is_root);
    // 5. Slots: parameters first, then node outputs.
    let mut slot_of: Vec<usize> = vec![usize::MAX; n];
    let mut next = n_params;
    for i in 0..n {
        if rep[i] != i {
            continue;
        }
        match &order[i].kind {
            OpKind::DeviceData(_) => {
                slot_of[i] = param_of
                    .get(&Arc::as_ptr(&order[i]))
                    .copied()
                    .ok_or_else(|| {
                        Error::runtime("internal error: device data without a parameter")
                    })?;
            }
            OpKind::Aten(_) => {
                slot_of[i] = next;
                next += order[i].shapes.len();
            }
        }
    }
    let slot = |(id, idx): (usize, usize)| slot_of[id] + idx;
    // 6. Schedule by creation order (a topological order, and eager's program order).
    let mut scheduled: Vec<usize> = (0..n)
        .filter(|&i| live[i] && rep[i] == i && matches!(order[i].kind, OpKind::Aten(_)))
        .filter(|&i| groups.member_of[i].is_none())
        .collect();
    scheduled.sort_by_key(|&i| order[i].seq);
    let mut instrs: Vec<Instr> = Vec::with_capacity(scheduled.len());
    for &i in &scheduled {
        let nd = &order[i];
        let OpKind::Aten(info) = &nd.kind else {
            continue;
        };
        let ins: SmallVec<[usize; 4]> = operands[i].iter().map(|o| slot(*o)).collect();
        if let Some((t, log)) = groups.rows.get(&i) {
            let g = groups
                .tail_of
                .get(t)
                .ok_or_else(|| Error::runtime("internal error: softmax prologue without group"))?;
            let (kernel, inputs) = fuse::build(order, &operands, g)?;
            stats.groups += 1;
            stats.fused_nodes += g.members.len() + 1;
            instrs.push(Instr::FusedSoftmax {
                kernel: Box::new(kernel),
                log: *log,
                tail: info,
                ins: inputs.iter().map(|o| slot(*o)).collect(),
                out: slot_of[i],
                spare: Spare::new(),
                reuse: None,
            });
        } else if let Some(g) = groups.tail_of.get(&i) {
            let (kernel, inputs) = fuse::build(order, &operands, g)?;
            stats.groups += 1;
            stats.fused_nodes += g.members.len();
            instrs.push(Instr::Fused {
                kernel: Box::new(kernel),
                tail: info,
                ins: inputs.iter().map(|o| slot(*o)).collect(),
                out: slot_of[i],
                spare: Spare::new(),
                reuse: None,
            });
        } else if !is_root[i] && views::is_view_copy(info) {
            stats.views += 1;
            instrs.push(Instr::View {
                info,
                args: nd.args.clone(),
                ins,
                out: slot_of[i],
            });
        } else {
            instrs.push(Instr::Call {
                info,
                args: nd.args.clone(),
                ins,
                out: slot_of[i],
                shapes: nd.shapes.clone(),
                generators_at: nd
                    .args
                    .iter()
                    .any(is_explicit_generator)
                    .then_some(generators_before[i]),
            });
        }
    }
    let results: Vec<usize> = root_vals.iter().map(|r| slot(*r)).collect();
    // 7. Memory: scatters whose base dies write into it (scatter.rs); fused outputs take a
    //    buffer that died just before (buffers.rs); every other slot is dropped after its last
    //    reader (parameters and results are kept).
    let last_read = buffers::last_reads(&instrs);
    let (scatters, donations) = scatter::plan(&mut instrs, &last_read, n_params, &results);
    stats.in_place_scatters = scatters;
    stats.donations = donations.len();
    let deferred = buffers::plan(
        &mut instrs,
        &last_read,
        &slot_shapes(order, &slot_of),
        n_params,
        &results,
    );
    stats.reused_buffers = deferred.len();
    let mut frees: Vec<Vec<usize>> = vec![Vec::new(); instrs.len()];
    for (&s, &k) in &last_read {
        if s >= n_params && !results.contains(&s) && !deferred.contains(&s) {
            frees[k].push(s);
        }
    }
    let mut with_frees = Vec::with_capacity(instrs.len() * 2);
    for (ins, mut fr) in instrs.into_iter().zip(frees) {
        with_frees.push(ins);
        fr.sort_unstable();
        with_frees.extend(fr.into_iter().map(Instr::Free));
    }
    // Indices moved by the frees: a scatter names its base's producer by index.
    let mut moved = vec![0usize; with_frees.len()];
    let mut old = 0;
    for (k, ins) in with_frees.iter().enumerate() {
        if !matches!(ins, Instr::Free(_)) {
            moved[old] = k;
            old += 1;
        }
    }
    for ins in &mut with_frees {
        match ins {
            Instr::Scatter {
                producer: Some(p), ..
            }
            | Instr::Fused {
                reuse: Some((_, Some(p))),
                ..
            }
            | Instr::FusedSoftmax {
                reuse: Some((_, Some(p))),
                ..
            } => *p = moved[*p],
            _ => {}
        }
    }
    Ok(Program {
        n_params,
        n_slots: next,
        instrs: with_frees,
        results,
        stats,
        donations,
    })
}

/// The shape of each node-output slot (parameters and unused slots absent).
fn slot_shapes(order: &[Arc<Node>], slot_of: &[usize]) -> HashMap<usize, Shape> {
    let mut m = HashMap::new();
    for (i, nd) in order.iter().enumerate() {
        if slot_of[i] == usize::MAX || !matches!(nd.kind, OpKind::Aten(_)) {
            continue;
        }
        for (k, sh) in nd.shapes.iter().enumerate() {
            m.insert(slot_of[i] + k, sh.clone());
        }
    }
    m
}

fn read(slots: &[Option<Val>], k: usize) -> Result<Val> {
    slots
        .get(k)
        .cloned()
        .flatten()
        .ok_or_else(|| Error::runtime("internal error: lazy program reads an empty slot"))
}

/// Runs a fused kernel on the values of slots `ins` (`softmax`: as a softmax prologue), into
/// the spare buffer of its last run when nobody holds that any more.
fn run_fused(
    slots: &[Option<Val>],
    kernel: &FusedKernel,
    ins: &[usize],
    softmax: Option<bool>,
    spare: &Spare,
    reused: Option<Tensor>,
) -> Result<Tensor> {
    let vals: SmallVec<[Val; 4]> = ins.iter().map(|&k| read(slots, k)).collect::<Result<_>>()?;
    let operands: SmallVec<[Operand<'_>; 4]> = vals
        .iter()
        .map(|v| match v {
            Val::Tensor(t) => Operand::Tensor(t),
            Val::Scalar(s) => Operand::Scalar(*s),
        })
        .collect();
    let t = match reused.or_else(|| spare.take(kernel.sizes(), kernel.dtype())) {
        Some(out) => {
            match softmax {
                None => kernel.run_into(&operands, &out)?,
                Some(log) => kernel.run_softmax_into(&operands, log, &out)?,
            }
            out
        }
        None => match softmax {
            None => kernel.run(&operands)?,
            Some(log) => kernel.run_softmax(&operands, log)?,
        },
    };
    spare.keep(&t);
    Ok(t)
}

/// `t` laid out as `shape` says (a kernel given a strided view may return an output that
/// follows the view's layout; the lazy tensor promises the Meta kernel's strides).
fn restride(t: Tensor, shape: &Shape) -> Result<Tensor> {
    if t.geometry().strides() == shape.strides.as_slice() || t.sizes() != shape.sizes {
        return Ok(t);
    }
    let out = Tensor::allocate_strided(&shape.sizes, &shape.strides, t.dtype(), Device::CPU)?;
    op::copy_::redispatch(cpu_only(), &out, &t, false)?;
    Ok(out)
}

impl Program {
    /// Whether the spare of fused instruction `k` keeps storage `s`.
    fn spare_holds(&self, k: usize, s: &Storage) -> bool {
        matches!(
            self.instrs.get(k),
            Some(Instr::Fused { spare, .. } | Instr::FusedSoftmax { spare, .. }) if spare.holds(s)
        )
    }

    /// The dying buffer a fused instruction reuses (`buffers.rs`), moved out of its slot, if
    /// nothing else holds it; otherwise it is dropped here (its last reader has run).
    fn take_reused(
        &self,
        slots: &mut [Option<Val>],
        reuse: Option<(usize, Option<usize>)>,
        kernel: &FusedKernel,
    ) -> Option<Tensor> {
        let (k, producer) = reuse?;
        let Some(Val::Tensor(t)) = slots.get_mut(k)?.take() else {
            return None;
        };
        let t = buffers::take(t, kernel.sizes(), kernel.dtype(), |s| {
            producer.is_some_and(|p| self.spare_holds(p, s))
        })?;
        crate::metrics::counter_add("BufferReused", 1);
        Some(t)
    }

    /// A scatter whose base dies here: in place when nothing else sees the base's buffer (a
    /// parameter's only when the executor donated it), else the CPU kernel.
    #[allow(clippy::too_many_arguments)]
    fn run_scatter(
        &self,
        slots: &mut [Option<Val>],
        kind: scatter::ScatterKind,
        info: &'static NodeInfo,
        args: &[Arg],
        ins: &[usize],
        shape: &Shape,
        producer: Option<usize>,
    ) -> Result<Tensor> {
        let base_slot = *ins
            .first()
            .ok_or_else(|| Error::runtime("internal error: a scatter without base"))?;
        let param = base_slot < self.n_params;
        let base = slots.get_mut(base_slot).and_then(Option::take);
        match base {
            Some(Val::Tensor(b))
                if scatter::writable(&b, shape, usize::from(param), |s| {
                    producer.is_some_and(|p| self.spare_holds(p, s))
                }) =>
            {
                crate::metrics::counter_add("InPlaceScatter", 1);
                if param {
                    crate::metrics::counter_add("DonatedParameter", 1);
                }
                if !kind.through_view() {
                    // Operand 0 is the base itself (its slot is empty now); the index
                    // list's tensors and `values` are read from their slots.
                    let mut vals: SmallVec<[Val; 4]> = SmallVec::with_capacity(ins.len());
                    vals.push(Val::Tensor(b.clone()));
                    for &k in &ins[1..] {
                        vals.push(read(slots, k)?);
                    }
                    let la = LowerArgs {
                        info,
                        args,
                        ins: &vals,
                    };
                    return scatter::run_indexed_in_place(kind, &la, b)
                        .map_err(|e| e.in_operator(&info.operator_name()));
                }
                let src = match read(slots, *ins.get(1).unwrap_or(&usize::MAX))? {
                    Val::Tensor(t) => t,
                    Val::Scalar(s) => Tensor::wrapped_scalar(s)?,
                };
                let la = LowerArgs {
                    info,
                    args,
                    ins: &[],
                };
                scatter::run_in_place(kind, &la, b, &src)
                    .map_err(|e| e.in_operator(&info.operator_name()))
            }
            b => {
                // Back in its slot: the copy reads it, and a following `Free` drops it.
                if let Some(s) = slots.get_mut(base_slot) {
                    *s = b;
                }
                crate::metrics::counter_add("ScatterCopiedBase", 1);
                let vals: SmallVec<[Val; 4]> =
                    ins.iter().map(|&k| read(slots, k)).collect::<Result<_>>()?;
                let t = (info.lower)(&LowerArgs {
                    info,
                    args,
                    ins: &vals,
                })
                .map_err(|e| e.in_operator(&info.operator_name()))?
                .into_iter()
                .next()
                .ok_or_else(|| Error::runtime("internal error: a scatter without output"))?;
                restride(t, shape)
            }
        }
    }
}

impl Computation for Program {
    fn parameter_count(&self) -> usize {
        self.n_params
    }

    fn donation_candidates(&self) -> &[usize] {
        &self.donations
    }

    fn text(&self) -> String {
        let mut s = String::new();
        let into = |r: &Option<(usize, Option<usize>)>| match r {
            Some((k, _)) => format!(" into %{k}"),
            None => String::new(),
        };
        let list = |v: &[usize]| -> String {
            v.iter()
                .map(|k| format!("%{k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for i in &self.instrs {
            let _ = match i {
                Instr::Call {
                    info,
                    ins,
                    out,
                    shapes,
                    ..
                } => {
                    let outs: Vec<usize> = (*out..*out + shapes.len()).collect();
                    writeln!(
                        s,
                        "{} = {}({})",
                        list(&outs),
                        info.operator_name(),
                        list(ins)
                    )
                }
                Instr::View { info, ins, out, .. } => {
                    writeln!(s, "%{out} = view {}({})", info.operator_name(), list(ins))
                }
                Instr::Fused {
                    kernel,
                    ins,
                    out,
                    reuse,
                    ..
                } => writeln!(
                    s,
                    "%{out} = fused[{}]({}){}",
                    kernel.op_names().join(", "),
                    list(ins),
                    into(reuse)
                ),
                Instr::FusedSoftmax {
                    kernel,
                    log,
                    ins,
                    out,
                    reuse,
                    ..
                } => writeln!(
                    s,
                    "%{out} = fused[{}] -> {}(dim=-1)({}){}",
                    kernel.op_names().join(", "),
                    if *log { "log_softmax" } else { "softmax" },
                    list(ins),
                    into(reuse)
                ),
                Instr::Scatter { info, ins, out, .. } => writeln!(
                    s,
                    "%{out} = in-place {}({}){}",
                    info.operator_name(),
                    list(ins),
                    match ins.first() {
                        Some(b) if *b < self.n_params => format!(" donating %{b}"),
                        _ => String::new(),
                    }
                ),
                Instr::Free(k) => writeln!(s, "free %{k}"),
            };
        }
        let st = self.stats;
        let _ = writeln!(s, "return ({})", list(&self.results));
        let _ = writeln!(
            s,
            "# cse {}, dead {}, views {}, fusion groups {} ({} nodes), in-place scatters {} (donating {}), reused buffers {}",
            st.cse,
            st.dead,
            st.views,
            st.groups,
            st.fused_nodes,
            st.in_place_scatters,
            st.donations,
            st.reused_buffers
        );
        s
    }

    fn execute(&self, params: &[Val], generators: &[Generator]) -> Result<Vec<Val>> {
        if params.len() != self.n_params {
            return Err(Error::runtime(format!(
                "internal error: the program takes {} parameters, got {}",
                self.n_params,
                params.len()
            )));
        }
        let _guard = ExcludeDispatchKeyGuard::new(
            sets::AUTOGRAD_WITH_AD_INPLACE_OR_VIEW.add(DispatchKey::Functionalize) | sets::PYTHON,
        );
        let mut slots: Vec<Option<Val>> = vec![None; self.n_slots];
        for (slot, p) in slots.iter_mut().zip(params) {
            *slot = Some(p.clone());
        }
        for instr in &self.instrs {
            match instr {
                Instr::Call {
                    info,
                    args,
                    ins,
                    out,
                    shapes,
                    generators_at,
                } => {
                    let vals: SmallVec<[Val; 4]> = ins
                        .iter()
                        .map(|&k| read(&slots, k))
                        .collect::<Result<_>>()?;
                    let patched: SmallVec<[Arg; 4]>;
                    let args: &[Arg] = match generators_at {
                        Some(at) => {
                            patched = with_generators(args, generators.get(*at..).unwrap_or(&[]))?;
                            &patched
                        }
                        None => args,
                    };
                    let outs = (info.lower)(&LowerArgs {
                        info,
                        args,
                        ins: &vals,
                    })
                    .map_err(|e| e.in_operator(&info.operator_name()))?;
                    if outs.len() != shapes.len() {
                        return Err(Error::runtime(format!(
                            "internal error: lowering of {} returned {} outputs, expected {}",
                            info.operator_name(),
                            outs.len(),
                            shapes.len()
                        )));
                    }
                    for (k, (t, shape)) in outs.into_iter().zip(shapes).enumerate() {
                        slots[out + k] = Some(Val::Tensor(restride(t, shape)?));
                    }
                }
                Instr::View {
                    info,
                    args,
                    ins,
                    out,
                } => {
                    let vals: SmallVec<[Val; 4]> = ins
                        .iter()
                        .map(|&k| read(&slots, k))
                        .collect::<Result<_>>()?;
                    let la = LowerArgs {
                        info,
                        args,
                        ins: &vals,
                    };
                    let t = match views::view(&la) {
                        Ok(t) => t,
                        // A view the source's layout does not allow (`view` of a
                        // non-contiguous buffer): the copy, as the naive program makes it.
                        Err(_) => (info.lower)(&la)
                            .map_err(|e| e.in_operator(&info.operator_name()))?
                            .into_iter()
                            .next()
                            .ok_or_else(|| Error::runtime("internal error: view without output"))?,
                    };
                    slots[*out] = Some(Val::Tensor(t));
                }
                Instr::Fused {
                    kernel,
                    tail,
                    ins,
                    out,
                    spare,
                    reuse,
                } => {
                    let reused = self.take_reused(&mut slots, *reuse, kernel);
                    let t = run_fused(&slots, kernel, ins, None, spare, reused)
                        .map_err(|e| e.in_operator(&tail.operator_name()))?;
                    slots[*out] = Some(Val::Tensor(t));
                }
                Instr::FusedSoftmax {
                    kernel,
                    log,
                    tail,
                    ins,
                    out,
                    spare,
                    reuse,
                } => {
                    let reused = self.take_reused(&mut slots, *reuse, kernel);
                    let t = run_fused(&slots, kernel, ins, Some(*log), spare, reused)
                        .map_err(|e| e.in_operator(&tail.operator_name()))?;
                    slots[*out] = Some(Val::Tensor(t));
                }
                Instr::Scatter {
                    kind,
                    info,
                    args,
                    ins,
                    out,
                    shape,
                    producer,
                } => {
                    let t =
                        self.run_scatter(&mut slots, *kind, info, args, ins, shape, *producer)?;
                    slots[*out] = Some(Val::Tensor(t));
                }
                Instr::Free(k) => {
                    if let Some(s) = slots.get_mut(*k) {
                        *s = None;
                    }
                }
            }
        }
        self.results.iter().map(|&k| read(&slots, k)).collect()
    }
}
