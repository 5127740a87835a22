//! In-place scatters and donation (plan §5.2 step 5, Part D.2's peak-memory complaint).
//!
//! Functionalization turns every write through a view into a `*_scatter` of the whole base
//! (`x[0:2].add_(1)` → `slice_scatter(x, slice_copy(x) + 1, ..)`), and every indexed write
//! into an `index_put` (`x[i] = v` → `index_put(x, [i], v)`); the CPU kernel of a scatter
//! copies the base first: an update of a few rows of a large tensor costs a copy of
//! the tensor and twice its memory. When the base's value dies at the scatter, nothing can
//! see its buffer afterwards, so the program writes `src` into the view of the base itself and
//! the scatter's result is the base's buffer.
//!
//! Whether the buffer is really unseen is decided at run time, per execution, by reference
//! counts (the same test as the output pool's `Spare`): the base's tensor object is held only
//! by the program (plus, for a parameter, the executor's parameter list) and its storage by
//! that tensor alone (plus the producing fused instruction's spare handle, which only keeps
//! the memory for a later run of that instruction and never reads it). A live view, a result
//! the caller kept, a CPU tensor handed out by `.to("cpu")`, an exported pointer: any of them
//! makes the count higher and the scatter copies the base as before.
//!
//! A parameter base is **donated**: the executor (`executor.rs`) removes its value from the
//! device data for the run only when no IR outside this execution can read that device data
//! again ([`donatable`]); otherwise the device data keeps its handle, the count is too high,
//! and the base is copied. The program and its cache key are the same either way.

use std::sync::Arc;

use switchyard_core::{Result, Storage, Tensor};
use switchyard_ops::op;

use crate::ir::{Node, NodeInfo, OpKind, Output, Shape};
use crate::trace::{LowerArgs, cpu_only};

/// The scatters written in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ScatterKind {
    /// `slice_scatter`.
    Slice,
    /// `select_scatter`.
    Select,
    /// `diagonal_scatter`.
    Diagonal,
    /// `as_strided_scatter`.
    AsStrided,
    /// `index_put` (`self[indices] = values`, or `+=` with `accumulate`): functionalization's
    /// form of `index_put_` and of indexed assignment.
    IndexPut,
    /// `_index_put_impl` (the same, with `unsafe`).
    IndexPutImpl,
}

impl ScatterKind {
    /// Whether the kind writes a view of the base (operand 1 its `src`), rather than indexed
    /// elements (operands: base, the index list's tensors, `values`).
    pub(super) fn through_view(self) -> bool {
        !matches!(self, ScatterKind::IndexPut | ScatterKind::IndexPutImpl)
    }
}

/// The scatter kind of `info`, if it is one this pass writes in place.
pub(super) fn kind(info: &NodeInfo) -> Option<ScatterKind> {
    match info.qualified {
        "aten::slice_scatter" => Some(ScatterKind::Slice),
        "aten::select_scatter" => Some(ScatterKind::Select),
        "aten::diagonal_scatter" => Some(ScatterKind::Diagonal),
        "aten::as_strided_scatter" => Some(ScatterKind::AsStrided),
        "aten::index_put" => Some(ScatterKind::IndexPut),
        "aten::_index_put_impl" => Some(ScatterKind::IndexPutImpl),
        _ => None,
    }
}

/// Whether `base` (moved out of its slot) may be written in place as the result of a scatter
/// of `shape`: it owns its buffer (`buffers::owns_buffer_of`; `extra_handles` counts the
/// executor's parameter list for a parameter, `spare` the producing fused instruction's kept
/// handle) and the buffer is laid out exactly as the scatter's result (the Meta kernel's
/// strides at offset 0: the copy the CPU kernel makes has that layout, and
/// `as_strided_scatter`'s view is relative to the start of the storage).
pub(super) fn writable(
    base: &Tensor,
    shape: &Shape,
    extra_handles: usize,
    spare: impl FnOnce(&Storage) -> bool,
) -> bool {
    super::buffers::owns_buffer_of(base, &shape.sizes, shape.dtype, extra_handles, spare)
        && base.geometry().strides() == shape.strides.as_slice()
}

/// The scatter of `a` (its node's arguments, operand 0 the base) written into the base's own
/// buffer `base`; returns `base`. The view and the copy are the CPU kernel's own
/// (`scatter_into_view` in `switchyard-ops`), minus its clone of the base.
pub(super) fn run_in_place(
    kind: ScatterKind,
    a: &LowerArgs<'_>,
    base: Tensor,
    src: &Tensor,
) -> Result<Tensor> {
    let ks = cpu_only();
    let view = match kind {
        ScatterKind::IndexPut | ScatterKind::IndexPutImpl => {
            return Err(switchyard_core::Error::runtime(
                "internal error: an indexed scatter goes through run_indexed_in_place",
            ));
        }
        ScatterKind::Slice => op::slice_Tensor::redispatch(
            ks,
            &base,
            a.int(2)?,
            a.opt_int(3)?,
            a.opt_int(4)?,
            a.int(5)?,
        )?,
        ScatterKind::Select => op::select_int::redispatch(ks, &base, a.int(2)?, a.int(3)?)?,
        ScatterKind::Diagonal => {
            op::diagonal::redispatch(ks, &base, a.int(2)?, a.int(3)?, a.int(4)?)?
        }
        ScatterKind::AsStrided => {
            op::as_strided::redispatch(ks, &base, a.ints(2)?, a.ints(3)?, a.opt_int(4)?)?
        }
    };
    let (want, got) = (view.sizes(), src.sizes());
    if want != got {
        // The Meta kernel checked this at trace time; kept so that a wrong program cannot
        // write out of place.
        return Err(switchyard_core::Error::runtime(format!(
            "expected src to have a size equal to the slice of self. src size = {got:?}, slice size = {want:?}"
        )));
    }
    op::copy_::redispatch(ks, &view, src, false)?;
    drop(view);
    Ok(base)
}

/// The indexed scatter (`index_put`, `_index_put_impl`) of `a` written into the base's own
/// buffer `base` (`a`'s operand 0, the same tensor): the CPU's in-place kernel, which the
/// functional one runs on a clone of the base; returns `base`.
pub(super) fn run_indexed_in_place(
    kind: ScatterKind,
    a: &LowerArgs<'_>,
    base: Tensor,
) -> Result<Tensor> {
    let ks = cpu_only();
    let (indices, values, accumulate) = (a.opt_tensor_list(1)?, a.tensor(2)?, a.bool(3)?);
    match kind {
        ScatterKind::IndexPut => {
            op::index_put_::redispatch(ks, &base, &indices, &values, accumulate)?;
        }
        ScatterKind::IndexPutImpl => {
            op::_index_put_impl_::redispatch(ks, &base, &indices, &values, accumulate, a.bool(4)?)?;
        }
        _ => {
            return Err(switchyard_core::Error::runtime(
                "internal error: a view scatter goes through run_in_place",
            ));
        }
    }
    Ok(base)
}

/// Which of the `candidates` (parameter indices of a program that would donate them) may give
/// their device data's buffer to this execution: no IR outside it can read that device data
/// again. `order` is the graph's post-order, `roots` its roots, `param_of` the parameter of
/// each device-data node; the tensors being synced no longer hold their IR (`mark_step`,
/// `sync`), so every outside holder of a node or of the device data shows in a reference
/// count above what the graph itself holds: a tensor not synced now (or synced without
/// dropping its IR), the IR reuse trie, another node, another tensor sharing the data.
pub(crate) fn donatable(
    order: &[Arc<Node>],
    roots: &[Output],
    param_of: &crate::ir::NodeMap<usize>,
    params: &[Arc<crate::data::DeviceData>],
    candidates: &[usize],
) -> Vec<bool> {
    let mut ok = vec![false; params.len()];
    if candidates.is_empty() {
        return ok;
    }
    for &c in candidates {
        if let Some(o) = ok.get_mut(c) {
            *o = true;
        }
    }
    // References the graph itself holds on each node: operands of its nodes, the roots, and
    // the post-order vector.
    let index: crate::ir::NodeMap<usize> = order
        .iter()
        .enumerate()
        .map(|(i, n)| (Arc::as_ptr(n), i))
        .collect();
    let mut inside = vec![1usize; order.len()];
    let mut count = |o: &Output| {
        if let Some(&i) = index.get(&Arc::as_ptr(&o.node)) {
            inside[i] += 1;
        }
    };
    for n in order {
        n.operands.iter().for_each(&mut count);
    }
    roots.iter().for_each(&mut count);
    // A node is reachable from outside if someone outside holds it or one of its users; users
    // come after their operands in the post-order.
    let mut outside = vec![false; order.len()];
    for i in (0..order.len()).rev() {
        if Arc::strong_count(&order[i]) > inside[i] {
            outside[i] = true;
        }
        if outside[i] {
            for o in &order[i].operands {
                if let Some(&j) = index.get(&Arc::as_ptr(&o.node)) {
                    outside[j] = true;
                }
            }
        }
    }
    // Holders of each parameter's device data inside the graph: the parameter list and each
    // device-data node of it.
    let mut data_inside = vec![1usize; params.len()];
    for (i, n) in order.iter().enumerate() {
        if let OpKind::DeviceData(_) = &n.kind
            && let Some(&p) = param_of.get(&Arc::as_ptr(n))
        {
            data_inside[p] += 1;
            if outside[i] {
                ok[p] = false;
            }
        }
    }
    for (p, d) in params.iter().enumerate() {
        if ok[p] && Arc::strong_count(d) != data_inside[p] {
            ok[p] = false;
        }
    }
    ok
}

/// Turns each `Call` of a scatter whose base slot is read last by it (not a result, not also
/// its `src`) into [`super::Instr::Scatter`]. Returns how many, and the parameters among
/// their bases (the program's donation candidates).
pub(super) fn plan(
    instrs: &mut [super::Instr],
    last_read: &std::collections::HashMap<usize, usize>,
    n_params: usize,
    results: &[usize],
) -> (usize, Vec<usize>) {
    use super::Instr;
    // The fused instruction writing each slot (its spare may hold the slot's storage).
    let mut fused_at = std::collections::HashMap::new();
    for (k, i) in instrs.iter().enumerate() {
        if let Instr::Fused { out, .. } | Instr::FusedSoftmax { out, .. } = i {
            fused_at.insert(*out, k);
        }
    }
    let mut count = 0;
    let mut params = Vec::new();
    for (k, instr) in instrs.iter_mut().enumerate() {
        let Instr::Call {
            info,
            args,
            ins,
            out,
            shapes,
            generators_at: None,
        } = instr
        else {
            continue;
        };
        let Some(kind) = kind(info) else { continue };
        let (Some(&base), 1) = (ins.first(), shapes.len()) else {
            continue;
        };
        if last_read.get(&base) != Some(&k) || results.contains(&base) || ins[1..].contains(&base) {
            continue;
        }
        if base < n_params {
            params.push(base);
        }
        count += 1;
        *instr = Instr::Scatter {
            kind,
            info,
            args: std::mem::take(args),
            ins: std::mem::take(ins),
            out: *out,
            shape: shapes[0].clone(),
            producer: fused_at.get(&base).copied(),
        };
    }
    params.sort_unstable();
    params.dedup();
    (count, params)
}
