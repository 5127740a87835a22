//! Buffer reuse within a run (plan §5.2 step 7): a fused instruction whose output has the
//! layout (dtype, sizes, contiguous strides) of a buffer whose last reader ran just before it
//! writes into that buffer instead of a new one. Only a buffer dying at the *previous*
//! instruction is taken, so holding it until this instruction never raises the peak (nothing
//! is allocated in between), and never one of the instruction's own inputs (the fused engine
//! does not write over its inputs). Parameters, results and views are never taken; the
//! buffer's own tensor must still be unshared at run time (a live view or a kept reference
//! keeps its storage counted), else the instruction allocates as before.

use std::collections::{HashMap, HashSet};

use switchyard_core::Tensor;

use super::Instr;
use crate::ir::Shape;

/// The slots each instruction reads (`Free` reads nothing).
fn reads(i: &Instr) -> &[usize] {
    match i {
        Instr::Call { ins, .. }
        | Instr::View { ins, .. }
        | Instr::Fused { ins, .. }
        | Instr::FusedSoftmax { ins, .. }
        | Instr::Scatter { ins, .. } => ins,
        Instr::Free(_) => &[],
    }
}

/// The last instruction reading each slot.
pub(super) fn last_reads(instrs: &[Instr]) -> HashMap<usize, usize> {
    let mut last = HashMap::new();
    for (k, i) in instrs.iter().enumerate() {
        for &s in reads(i) {
            last.insert(s, k);
        }
    }
    last
}

/// Whether the slot written by `i` holds a buffer of its own (a view shares its source's).
fn owns_buffer(i: &Instr) -> Option<usize> {
    match i {
        Instr::Call { out, shapes, .. } if shapes.len() == 1 => Some(*out),
        Instr::Fused { out, .. } | Instr::FusedSoftmax { out, .. } | Instr::Scatter { out, .. } => {
            Some(*out)
        }
        _ => None,
    }
}

/// Gives fused instructions a dying buffer of their output's layout; returns the slots so
/// taken (their value is moved into the instruction, so no `Free` is emitted for them).
pub(super) fn plan(
    instrs: &mut [Instr],
    last_read: &HashMap<usize, usize>,
    shapes: &HashMap<usize, Shape>,
    n_params: usize,
    results: &[usize],
) -> HashSet<usize> {
    let owned: HashSet<usize> = instrs.iter().filter_map(owns_buffer).collect();
    let mut fused_at = HashMap::new();
    for (k, i) in instrs.iter().enumerate() {
        if let Instr::Fused { out, .. } | Instr::FusedSoftmax { out, .. } = i {
            fused_at.insert(*out, k);
        }
    }
    let mut dying_at: HashMap<usize, Vec<usize>> = HashMap::new();
    for (&s, &k) in last_read {
        if s >= n_params && !results.contains(&s) && owned.contains(&s) {
            dying_at.entry(k).or_default().push(s);
        }
    }
    for v in dying_at.values_mut() {
        v.sort_unstable();
    }
    let mut taken = HashSet::new();
    for (k, instr) in instrs.iter_mut().enumerate().skip(1) {
        let Some(candidates) = dying_at.get(&(k - 1)) else {
            continue;
        };
        let (Instr::Fused {
            kernel, ins, reuse, ..
        }
        | Instr::FusedSoftmax {
            kernel, ins, reuse, ..
        }) = instr
        else {
            continue;
        };
        let strides = switchyard_core::shape::contiguous_strides(kernel.sizes());
        let pick = candidates.iter().copied().find(|s| {
            !taken.contains(s)
                && !ins.contains(s)
                && shapes.get(s).is_some_and(|sh| {
                    sh.dtype == kernel.dtype()
                        && sh.sizes.as_slice() == kernel.sizes()
                        && sh.strides.as_slice() == strides.as_slice()
                })
        });
        if let Some(s) = pick {
            *reuse = Some((s, fused_at.get(&s).copied()));
            taken.insert(s);
        }
    }
    taken
}

/// Whether `t`'s buffer is its own to overwrite with a result of `sizes` and `dtype`: no
/// tensor object but `t` (and `extra_handles` more holders of it: the executor's parameter
/// list for a parameter) and no storage handle but `t`'s (and the spare handle of the fused
/// instruction that produced it, when `spare_holds` says so: it never reads) hold it, it is not
/// exported, and it has exactly that dtype, sizes and size in bytes at offset 0. Callers add
/// their stride condition. Shared by the fused outputs here and the in-place scatters
/// (`scatter::writable`).
pub(super) fn owns_buffer_of(
    t: &Tensor,
    sizes: &[i64],
    dtype: switchyard_core::ScalarType,
    extra_handles: usize,
    spare_holds: impl FnOnce(&switchyard_core::Storage) -> bool,
) -> bool {
    let Some(storage) = t.storage_ref() else {
        return false;
    };
    let holders = 1 + usize::from(spare_holds(storage));
    let numel: i64 = sizes.iter().product();
    let Some(bytes) = usize::try_from(numel)
        .ok()
        .and_then(|n| n.checked_mul(dtype.element_size()))
    else {
        return false;
    };
    t.handle_count() <= 1 + extra_handles
        && storage.use_count() <= holders
        && !storage.is_exported()
        && storage.nbytes() == bytes
        && t.dtype() == dtype
        && t.sizes().as_slice() == sizes
        && t.geometry().storage_offset() == 0
}

/// The buffer of slot value `t` as the output of a fused kernel of `sizes` and `dtype`, if
/// [`owns_buffer_of`] says it may be overwritten and it is contiguous.
pub(super) fn take(
    t: Tensor,
    sizes: &[i64],
    dtype: switchyard_core::ScalarType,
    spare_holds: impl FnOnce(&switchyard_core::Storage) -> bool,
) -> Option<Tensor> {
    (owns_buffer_of(&t, sizes, dtype, 0, spare_holds) && t.is_contiguous()).then_some(t)
}
