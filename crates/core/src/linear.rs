//! The data of a small elementwise call whose operands are all contiguous with one shape: the
//! common case of operator calls on small tensors, served without the general machinery of
//! [`crate::tensor::with_tensors`] (full geometry snapshots, per-call lock sets), whose
//! bookkeeping dominates calls on a handful of elements.
//!
//! [`with_linear_operands`] reads each operand's shape, offset and contiguity once, takes the
//! storages (without a lock or an atomic read-modify-write when the calling thread owns them
//! all, see [`crate::access`]) and hands out each operand's elements as one byte run. When the
//! call does not qualify it returns `None` before touching any data, and the caller takes its
//! general path.

use crate::access::{Access, OwnedHold, StorageLocks};
use crate::storage::{Storage, StorageData, StorageImpl};
use crate::{Error, Result, Tensor};
use smallvec::SmallVec;

/// Operands per call this path serves (the written one included).
pub const MAX_LINEAR_OPERANDS: usize = 8;

/// The elements of a call's operands, each as one run of bytes in row-major order.
pub struct LinearOperands<'a, const N: usize> {
    /// The written operand's elements (`numel` times its element size).
    pub out: &'a mut [u8],
    /// Each read operand's elements, or `None` for an operand that is the written one itself
    /// (same storage and offset, as in `x.add_(y)`): read it through `out`, each element
    /// before it is overwritten.
    pub inputs: [Option<&'a [u8]>; N],
    /// The number of elements of every operand.
    pub numel: usize,
}

/// Runs `f` on the elements of `out` (written) and `inputs` (read) if every one of them is a
/// host tensor, row-major contiguous with `out`'s sizes (at most
/// [`crate::geometry::INLINE_DIMS`] dimensions) and between 1 and `max_numel` elements, and
/// every input either lives in another storage than `out` or is `out`'s very elements (same
/// storage and offset). Otherwise returns `None` without touching any data.
///
/// The caller checks dtypes: an input that is `out` itself is handed over as `None`, to be read
/// through `out`'s bytes, which only makes sense if both have the same dtype.
#[inline]
pub fn with_linear_operands<const N: usize, R>(
    out: &Tensor,
    inputs: [&Tensor; N],
    max_numel: usize,
    f: impl FnOnce(LinearOperands<'_, N>) -> Result<R>,
) -> Option<Result<R>> {
    if N + 1 > MAX_LINEAR_OPERANDS {
        return None;
    }
    let out_span = out.geometry_cell().load_span()?;
    let numel = usize::try_from(out_span.numel).ok()?;
    if numel == 0 || numel > max_numel {
        return None;
    }
    let out_storage = host_storage(out)?;
    let mut offsets = [0usize; N];
    let mut storages: [&StorageImpl; N] = [out_storage.inner(); N];
    let mut aliased = [false; N];
    for (k, t) in inputs.iter().enumerate() {
        let span = t.geometry_cell().load_span()?;
        if !span.same_shape(&out_span) {
            return None;
        }
        let storage = host_storage(t)?;
        if storage.is_alias_of(out_storage) {
            // Only `out`'s very elements may be read while `out` is written.
            if span.storage_offset != out_span.storage_offset {
                return None;
            }
            aliased[k] = true;
        }
        storages[k] = storage.inner();
        offsets[k] = usize::try_from(span.storage_offset).ok()?;
    }
    let out_offset = usize::try_from(out_span.storage_offset).ok()?;
    let run = |out_data: &mut StorageData, input_data: [Option<&StorageData>; N]| {
        let out_bytes = element_run(
            out_data.host_bytes_mut()?,
            out_offset,
            numel,
            out.element_size(),
        )?;
        let mut input_bytes: [Option<&[u8]>; N] = [None; N];
        for (k, (bytes, data)) in input_bytes.iter_mut().zip(input_data).enumerate() {
            if let Some(data) = data {
                let size = inputs[k].element_size();
                *bytes = Some(element_run_ref(
                    data.host_bytes()?,
                    offsets[k],
                    numel,
                    size,
                )?);
            }
        }
        f(LinearOperands {
            out: out_bytes,
            inputs: input_bytes,
            numel,
        })
    };
    Some(hold_and_run(out_storage, &storages, &aliased, inputs, run))
}

/// Takes the storages (owned: without locks; otherwise through [`StorageLocks`]) and runs
/// `run` on their data; `aliased[k]` marks inputs on `out`'s storage, which get `None`.
fn hold_and_run<const N: usize, R>(
    out_storage: &Storage,
    storages: &[&StorageImpl; N],
    aliased: &[bool; N],
    inputs: [&Tensor; N],
    run: impl FnOnce(&mut StorageData, [Option<&StorageData>; N]) -> Result<R>,
) -> Result<R> {
    if let Some(hold) = OwnedHold::try_acquire(out_storage.inner(), storages)? {
        // SAFETY: `out`'s storage is held exclusively by `hold`, and no reference to it is made
        // from `read` (inputs on it are `aliased` and skipped); both live only within this
        // block, inside the hold.
        let out_data = unsafe { hold.write_first() };
        let mut input_data: [Option<&StorageData>; N] = [None; N];
        for (k, d) in input_data.iter_mut().enumerate() {
            if !aliased[k] {
                // SAFETY: see above; input `k` is not on `out`'s storage.
                *d = unsafe { hold.read(k) };
            }
        }
        return run(out_data, input_data);
    }
    // Some storage is shared with other threads: take the locks the general way.
    let mut requests: SmallVec<[(&Storage, Access); MAX_LINEAR_OPERANDS]> = SmallVec::new();
    requests.push((out_storage, Access::Write));
    for t in inputs {
        let storage = t.storage_ref().ok_or_else(no_storage)?;
        requests.push((storage, Access::Read));
    }
    let mut locks = StorageLocks::lock(&requests)?;
    let mut rest = SmallVec::new();
    let out_bytes = locks.split_first_data_mut(&mut rest)?;
    let mut input_data: [Option<&StorageData>; N] = [None; N];
    for (d, r) in input_data.iter_mut().zip(rest) {
        *d = r;
    }
    run(out_bytes, input_data)
}

/// The storage of `t` if it is on the host.
#[inline]
fn host_storage(t: &Tensor) -> Option<&Storage> {
    t.storage_ref().filter(|s| s.device().is_cpu())
}

/// Elements `[offset, offset + numel)` of `size` bytes each, of `bytes`.
#[inline]
fn element_run(bytes: &mut [u8], offset: usize, numel: usize, size: usize) -> Result<&mut [u8]> {
    let (start, len) = (offset.checked_mul(size), numel.checked_mul(size));
    start
        .zip(len)
        .and_then(|(s, l)| bytes.get_mut(s..s.checked_add(l)?))
        .ok_or_else(resized)
}

/// [`element_run`] for shared bytes.
#[inline]
fn element_run_ref(bytes: &[u8], offset: usize, numel: usize, size: usize) -> Result<&[u8]> {
    let (start, len) = (offset.checked_mul(size), numel.checked_mul(size));
    start
        .zip(len)
        .and_then(|(s, l)| bytes.get(s..s.checked_add(l)?))
        .ok_or_else(resized)
}

fn resized() -> Error {
    Error::runtime("a tensor's storage was resized by another thread while it was being accessed")
}

fn no_storage() -> Error {
    Error::runtime("internal error: a linear operand lost its storage")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Device, ScalarType};

    fn f32s(v: &[f32], shape: &[i64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape).unwrap()
    }

    fn add_into(out: &Tensor, a: &Tensor, b: &Tensor) -> Option<Result<()>> {
        with_linear_operands(out, [a, b], 1 << 20, |ops| {
            let read = |k: usize, i: usize, out: &[u8]| {
                let bytes = ops.inputs[k].unwrap_or(out);
                f32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap())
            };
            let mut result = vec![0.0f32; ops.numel];
            for (i, r) in result.iter_mut().enumerate() {
                *r = read(0, i, ops.out) + read(1, i, ops.out);
            }
            for (i, r) in result.iter().enumerate() {
                ops.out[4 * i..4 * i + 4].copy_from_slice(&r.to_le_bytes());
            }
            Ok(())
        })
    }

    #[test]
    fn contiguous_operands_are_handed_over_as_runs_at_their_offsets() {
        let base = f32s(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[6]);
        let a = base.as_strided_view(&[2, 2], &[2, 1], 2).unwrap(); // 2 3 4 5
        let b = f32s(&[10.0, 20.0, 30.0, 40.0], &[2, 2]);
        let out = Tensor::allocate(&[2, 2], ScalarType::Float, Device::CPU).unwrap();
        add_into(&out, &a, &b).unwrap().unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![12.0, 23.0, 34.0, 45.0]);
        // In place: `out` is also an input, read through `out`'s bytes.
        add_into(&b, &b, &a).unwrap().unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![12.0, 23.0, 34.0, 45.0]);
    }

    #[test]
    fn calls_that_do_not_qualify_are_declined_untouched() {
        let a = f32s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let out = Tensor::allocate(&[2, 2], ScalarType::Float, Device::CPU).unwrap();
        // Transposed (not contiguous), broadcast (other sizes), too many elements, empty.
        let t = a.as_strided_view(&[2, 2], &[1, 2], 0).unwrap();
        assert!(add_into(&out, &t, &a).is_none());
        let row = f32s(&[1.0, 2.0], &[2]);
        assert!(add_into(&out, &a, &row).is_none());
        assert!(with_linear_operands(&out, [&a], 3, |_| Ok(())).is_none());
        let empty = Tensor::allocate(&[0], ScalarType::Float, Device::CPU).unwrap();
        assert!(with_linear_operands(&empty, [&empty], 8, |_| Ok(())).is_none());
        // An input overlapping `out` at another offset.
        let base = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
        let (lo, hi) = (
            base.as_strided_view(&[4], &[1], 0).unwrap(),
            base.as_strided_view(&[4], &[1], 1).unwrap(),
        );
        assert!(with_linear_operands(&hi, [&lo], 8, |_| Ok(())).is_none());
        // Meta tensors have no bytes.
        let m = Tensor::allocate(&[2], ScalarType::Float, Device::META).unwrap();
        assert!(with_linear_operands(&m, [&m], 8, |_| Ok(())).is_none());
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.0; 4]);
    }

    /// Operands created on another thread are shared, and taken through the locks.
    #[test]
    fn storages_of_other_threads_are_taken_through_the_locks() {
        let (a, b) = std::thread::spawn(|| (f32s(&[1.0, 2.0], &[2]), f32s(&[3.0, 4.0], &[2])))
            .join()
            .unwrap();
        let out = Tensor::allocate(&[2], ScalarType::Float, Device::CPU).unwrap();
        add_into(&out, &a, &b).unwrap().unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
        assert!(!crate::access::is_owned(a.storage_ref().unwrap()));
        // Nested access is refused, on both paths.
        let nested = with_linear_operands(&out, [&a], 8, |_| {
            add_into(&out, &a, &b).unwrap().map(|_| ())
        });
        assert!(
            nested
                .unwrap()
                .unwrap_err()
                .message()
                .contains("would deadlock")
        );
    }
}
