//! A tensor's geometry (sizes, strides, storage offset) and the cell that holds it.
//!
//! [`Geometry`] is a plain value: a consistent snapshot. [`GeometryCell`] is where a tensor
//! keeps its current geometry. Geometry changes are rare (`resize_`, `as_strided_`, out=
//! resizing) while reads happen several times in every operator call, so the cell is a
//! *sequence lock*: a reader copies the fields and retries if a writer was active meanwhile,
//! without writing to shared memory at all. An uncontended read costs a few plain loads,
//! where a reader–writer lock costs two atomic read-modify-writes (about 17 ns on the
//! development machine, several times per call).
//!
//! Every field is an atomic (or, for tensors of more than [`INLINE_DIMS`] dimensions, sits
//! behind a lock), so a racing read is never a data race; the sequence number only decides
//! whether the copy is consistent and must be retried. Writers take a mutex, so they are
//! serialised among themselves.

use crate::shape::{self, DimVec};
use crate::{Result, torch_check};
use std::ptr::addr_of_mut;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

/// Dimensions a [`Geometry`] and a [`GeometryCell`] hold in fixed arrays; tensors of higher
/// rank keep their sizes and strides on the heap (and, in a cell, behind a lock). Five keeps a
/// snapshot within 128 bytes, which the compiler copies with a few vector moves; at 136 bytes
/// every copy was a `memcpy` call, a sixth of `with_tensors` for a tiny call.
pub const INLINE_DIMS: usize = 5;

const _: () = assert!(std::mem::size_of::<Geometry>() <= 128);

/// Sizes and strides: fixed arrays up to [`INLINE_DIMS`] dimensions, so copying a snapshot is
/// a plain copy of a few words (no allocation, no length-dependent `memcpy` call).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Dims {
    /// Entries past `rank` are zero.
    Inline {
        rank: u8,
        sizes: [i64; INLINE_DIMS],
        strides: [i64; INLINE_DIMS],
    },
    /// Sizes then strides.
    Spilled(Box<[i64]>),
}

impl Dims {
    fn new(sizes: &[i64], strides: &[i64]) -> Dims {
        let rank = sizes.len();
        match u8::try_from(rank) {
            Ok(r) if rank <= INLINE_DIMS && strides.len() == rank => {
                let (mut s, mut t) = ([0; INLINE_DIMS], [0; INLINE_DIMS]);
                s[..rank].copy_from_slice(sizes);
                t[..rank].copy_from_slice(strides);
                Dims::Inline {
                    rank: r,
                    sizes: s,
                    strides: t,
                }
            }
            _ => Dims::Spilled(sizes.iter().chain(strides).copied().collect()),
        }
    }

    /// `sizes` with row-major contiguous strides, computed in place (sizes of 0 count as 1,
    /// as in [`shape::contiguous_strides`]).
    #[inline]
    fn contiguous(sizes: &[i64]) -> Dims {
        let rank = sizes.len();
        match u8::try_from(rank) {
            Ok(r) if rank <= INLINE_DIMS => {
                let (mut s, mut t) = ([0; INLINE_DIMS], [0; INLINE_DIMS]);
                s[..rank].copy_from_slice(sizes);
                let mut acc: i64 = 1;
                for i in (0..rank).rev() {
                    t[i] = acc;
                    acc = acc.saturating_mul(s[i].max(1));
                }
                Dims::Inline {
                    rank: r,
                    sizes: s,
                    strides: t,
                }
            }
            _ => Dims::new(sizes, &shape::contiguous_strides(sizes)),
        }
    }

    #[inline]
    fn sizes(&self) -> &[i64] {
        match self {
            Dims::Inline { rank, sizes, .. } => &sizes[..usize::from(*rank)],
            Dims::Spilled(all) => &all[..all.len() / 2],
        }
    }

    #[inline]
    fn strides(&self) -> &[i64] {
        match self {
            Dims::Inline { rank, strides, .. } => &strides[..usize::from(*rank)],
            Dims::Spilled(all) => &all[all.len() / 2..],
        }
    }
}

/// Sizes, strides and storage offset of a tensor, as one consistent snapshot (with the
/// element count, the storage extent and contiguity computed from them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    dims: Dims,
    storage_offset: i64,
    numel: i64,
    /// Storage elements the view reaches (offset + furthest element + 1; 0 when empty).
    required_elements: i64,
    is_contiguous: bool,
}

impl Geometry {
    /// The geometry of a 0-dim tensor at offset 0: the starting value of a snapshot slot.
    pub(crate) const EMPTY: Geometry = Geometry {
        dims: Dims::Inline {
            rank: 0,
            sizes: [0; INLINE_DIMS],
            strides: [0; INLINE_DIMS],
        },
        storage_offset: 0,
        numel: 1,
        required_elements: 1,
        is_contiguous: true,
    };

    /// A checked geometry: sizes non-negative, as many strides as sizes, no overflow.
    pub fn new(sizes: &[i64], strides: &[i64], storage_offset: i64) -> Result<Geometry> {
        let numel = shape::numel(sizes)?;
        torch_check!(
            sizes.len() == strides.len(),
            "mismatch in length of strides and shape: sizes {} and strides {}",
            shape::fmt_dims(sizes),
            shape::fmt_dims(strides)
        );
        Ok(Geometry {
            is_contiguous: shape::is_contiguous(sizes, strides),
            dims: Dims::new(sizes, strides),
            storage_offset,
            numel,
            required_elements: shape::required_storage_elements(sizes, strides, storage_offset)?,
        })
    }

    /// A contiguous geometry at offset 0 whose `numel` the caller has computed (and checked).
    #[inline]
    pub(crate) fn contiguous(sizes: &[i64], numel: i64) -> Geometry {
        Geometry {
            dims: Dims::contiguous(sizes),
            storage_offset: 0,
            numel,
            required_elements: numel,
            is_contiguous: true,
        }
    }

    /// Sizes.
    #[inline]
    pub fn sizes(&self) -> &[i64] {
        self.dims.sizes()
    }

    /// Strides, in elements.
    #[inline]
    pub fn strides(&self) -> &[i64] {
        self.dims.strides()
    }

    /// Offset of element 0 in the storage, in elements.
    pub fn storage_offset(&self) -> i64 {
        self.storage_offset
    }

    /// Number of elements.
    pub fn numel(&self) -> i64 {
        self.numel
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.sizes().len()
    }

    /// Whether the elements are row-major contiguous.
    pub fn is_contiguous(&self) -> bool {
        self.is_contiguous
    }

    /// Storage elements the view reaches (0 when it is empty).
    pub fn required_elements(&self) -> i64 {
        self.required_elements
    }

    /// Storage element offsets of every element, in row-major logical order.
    pub fn offsets(&self) -> StridedOffsets<'_> {
        StridedOffsets::new(self.sizes(), self.strides(), self.storage_offset)
    }
}

/// Iterates the storage offsets of a strided view in row-major order (an odometer).
pub struct StridedOffsets<'a> {
    sizes: &'a [i64],
    strides: &'a [i64],
    index: DimVec,
    next: Option<i64>,
}

impl<'a> StridedOffsets<'a> {
    /// Offsets of the view `(sizes, strides, offset)`.
    pub fn new(sizes: &'a [i64], strides: &'a [i64], offset: i64) -> Self {
        let empty = sizes.contains(&0);
        StridedOffsets {
            sizes,
            strides,
            index: DimVec::from_elem(0, sizes.len()),
            next: (!empty).then_some(offset),
        }
    }
}

impl Iterator for StridedOffsets<'_> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        let current = self.next?;
        let mut off = current;
        let mut d = self.sizes.len();
        loop {
            if d == 0 {
                self.next = None;
                break;
            }
            d -= 1;
            self.index[d] += 1;
            off += self.strides[d];
            if self.index[d] < self.sizes[d] {
                self.next = Some(off);
                break;
            }
            off -= self.strides[d] * self.index[d];
            self.index[d] = 0;
        }
        Some(current)
    }
}

/// A row-major contiguous geometry of at most [`INLINE_DIMS`] dimensions, as
/// [`GeometryCell::load_span`] reads it. Sizes past the rank are zero, so two spans have the
/// same shape exactly when their `rank` and `sizes` are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) rank: u8,
    pub(crate) sizes: [i64; INLINE_DIMS],
    pub(crate) storage_offset: i64,
    pub(crate) numel: i64,
}

impl Span {
    /// Whether both spans have the same sizes. Compared word by word: array equality compiles
    /// to a `memcmp` call, a tenth of a one-element `add`.
    #[inline]
    pub(crate) fn same_shape(&self, other: &Span) -> bool {
        let mut differ = i64::from(self.rank ^ other.rank);
        for (a, b) in self.sizes.iter().zip(&other.sizes) {
            differ |= a ^ b;
        }
        differ == 0
    }
}

/// The geometry a new [`GeometryCell`] starts with.
#[derive(Clone, Copy, Debug)]
pub(crate) enum NewGeometry<'a> {
    /// A snapshot's.
    Of(&'a Geometry),
    /// Row-major contiguous `sizes` at offset 0, of `numel` elements (checked by the caller).
    Contiguous {
        /// The sizes.
        sizes: &'a [i64],
        /// Their product.
        numel: i64,
    },
}

/// A tensor's current geometry: lock-free reads, mutex-serialised writes (see the module
/// documentation).
pub(crate) struct GeometryCell {
    /// Even when the fields are consistent; odd while a writer is changing them.
    seq: AtomicU64,
    rank: AtomicUsize,
    storage_offset: AtomicI64,
    numel: AtomicI64,
    required_elements: AtomicI64,
    is_contiguous: AtomicBool,
    /// Sizes in `[0, INLINE_DIMS)`, strides in `[INLINE_DIMS, 2 * INLINE_DIMS)`, for ranks up to
    /// [`INLINE_DIMS`].
    dims: [AtomicI64; 2 * INLINE_DIMS],
    /// Sizes then strides, for ranks above [`INLINE_DIMS`] (empty otherwise).
    spilled: RwLock<Vec<i64>>,
    /// Held by writers for the whole of an update.
    writer: Mutex<()>,
}

/// Exclusive right to change a [`GeometryCell`], with the geometry as of the lock.
pub(crate) struct GeometryWriter<'a> {
    cell: &'a GeometryCell,
    _guard: MutexGuard<'a, ()>,
}

impl GeometryCell {
    /// A cell holding `g`, built by value (for tests; tensors build theirs in place with
    /// [`GeometryCell::init`]).
    #[inline]
    #[cfg(test)]
    pub(crate) fn new(g: &Geometry) -> GeometryCell {
        let cell = GeometryCell {
            seq: AtomicU64::new(0),
            rank: AtomicUsize::new(0),
            storage_offset: AtomicI64::new(0),
            numel: AtomicI64::new(0),
            required_elements: AtomicI64::new(0),
            is_contiguous: AtomicBool::new(true),
            dims: Default::default(),
            spilled: RwLock::new(Vec::new()),
            writer: Mutex::new(()),
        };
        cell.write_fields(g);
        cell
    }

    /// Writes a cell holding `g` to `dst` in place, without building it on the stack first
    /// (a cell is ~170 bytes; see [`crate::tensor::Tensor`]'s in-place construction).
    ///
    /// # Safety
    ///
    /// `dst` must be valid for writes and aligned for a `GeometryCell`; its old contents are
    /// overwritten without being dropped.
    #[inline]
    pub(crate) unsafe fn init(dst: *mut GeometryCell, g: NewGeometry<'_>) {
        // Lists every field without `..`: a new field fails to compile here until it is
        // also written below.
        let _every_field_is_written = |c: &GeometryCell| {
            let GeometryCell {
                seq: _,
                rank: _,
                storage_offset: _,
                numel: _,
                required_elements: _,
                is_contiguous: _,
                dims: _,
                spilled: _,
                writer: _,
            } = c;
        };
        // SAFETY: the caller guarantees `dst` is writable and aligned, so every field pointer
        // derived from it is too; each field is written once, without reading the old value.
        unsafe {
            addr_of_mut!((*dst).seq).write(AtomicU64::new(0));
            addr_of_mut!((*dst).rank).write(AtomicUsize::new(0));
            addr_of_mut!((*dst).storage_offset).write(AtomicI64::new(0));
            addr_of_mut!((*dst).numel).write(AtomicI64::new(0));
            addr_of_mut!((*dst).required_elements).write(AtomicI64::new(0));
            addr_of_mut!((*dst).is_contiguous).write(AtomicBool::new(true));
            addr_of_mut!((*dst).dims).write(Default::default());
            addr_of_mut!((*dst).spilled).write(RwLock::new(Vec::new()));
            addr_of_mut!((*dst).writer).write(Mutex::new(()));
            // Every field is initialised now (see the pattern above).
            match g {
                NewGeometry::Of(g) => (*dst).write_fields(g),
                NewGeometry::Contiguous { sizes, numel } => (*dst).write_contiguous(sizes, numel),
            }
        }
    }

    /// Stores the row-major contiguous geometry of `sizes` at offset 0, computing the strides
    /// in place: a new output's geometry, without building a [`Geometry`] first (its arrays,
    /// built on the stack and copied, stalled on store forwarding). Construction only.
    fn write_contiguous(&self, sizes: &[i64], numel: i64) {
        let rank = sizes.len();
        if rank > INLINE_DIMS {
            self.write_fields(&Geometry::contiguous(sizes, numel));
            return;
        }
        self.rank.store(rank, Ordering::Relaxed);
        // Strides as in `shape::contiguous_strides` (sizes of 0 count as 1); entries past the
        // rank stay zero.
        let mut stride: i64 = 1;
        for (i, size) in sizes.iter().enumerate().rev() {
            self.dims[i].store(*size, Ordering::Relaxed);
            self.dims[INLINE_DIMS + i].store(stride, Ordering::Relaxed);
            stride = stride.saturating_mul((*size).max(1));
        }
        self.storage_offset.store(0, Ordering::Relaxed);
        self.numel.store(numel, Ordering::Relaxed);
        self.required_elements.store(numel, Ordering::Relaxed);
        self.is_contiguous.store(true, Ordering::Relaxed);
    }

    /// Stores `g` field by field (callers make this invisible to readers: at construction, or
    /// between the odd and even sequence numbers of [`GeometryWriter::store`]).
    fn write_fields(&self, g: &Geometry) {
        match &g.dims {
            Dims::Inline {
                rank,
                sizes,
                strides,
            } => {
                self.rank.store(usize::from(*rank), Ordering::Relaxed);
                for (i, (size, stride)) in sizes.iter().zip(strides).enumerate() {
                    self.dims[i].store(*size, Ordering::Relaxed);
                    self.dims[INLINE_DIMS + i].store(*stride, Ordering::Relaxed);
                }
            }
            Dims::Spilled(all) => {
                self.rank.store(all.len() / 2, Ordering::Relaxed);
                let mut spilled = self.spilled.write().unwrap_or_else(PoisonError::into_inner);
                spilled.clear();
                spilled.extend_from_slice(all);
            }
        }
        self.storage_offset
            .store(g.storage_offset, Ordering::Relaxed);
        self.numel.store(g.numel, Ordering::Relaxed);
        self.required_elements
            .store(g.required_elements, Ordering::Relaxed);
        self.is_contiguous.store(g.is_contiguous, Ordering::Relaxed);
    }

    /// Runs `read` until it sees a state no writer touched meanwhile, and returns its result.
    /// `read` may see torn values on a discarded attempt, so it must not fail or panic on them.
    #[inline]
    fn read_consistent<R>(&self, mut read: impl FnMut(&GeometryCell) -> R) -> R {
        let mut spins = 0u32;
        loop {
            let before = self.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                let value = read(self);
                // Orders the field loads above before the re-check of the sequence number
                // (the reader half of the seqlock protocol; see crossbeam's `SeqLock`).
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == before {
                    return value;
                }
            }
            // A writer is active: it holds the mutex for a few stores only.
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// A consistent copy of the geometry.
    #[inline]
    pub(crate) fn load(&self) -> Geometry {
        // Built by value rather than through `load_into`, whose in-place overwrite (checking
        // what the slot held) costs a third more for a fresh value.
        self.read_consistent(|c| {
            let rank = c.rank.load(Ordering::Relaxed);
            let dims = match u8::try_from(rank) {
                Ok(r) if rank <= INLINE_DIMS => {
                    let (mut sizes, mut strides) = ([0; INLINE_DIMS], [0; INLINE_DIMS]);
                    for i in 0..INLINE_DIMS {
                        sizes[i] = c.dims[i].load(Ordering::Relaxed);
                        strides[i] = c.dims[INLINE_DIMS + i].load(Ordering::Relaxed);
                    }
                    Dims::Inline {
                        rank: r,
                        sizes,
                        strides,
                    }
                }
                _ => Dims::Spilled(c.load_spilled()),
            };
            Geometry {
                dims,
                storage_offset: c.storage_offset.load(Ordering::Relaxed),
                numel: c.numel.load(Ordering::Relaxed),
                required_elements: c.required_elements.load(Ordering::Relaxed),
                is_contiguous: c.is_contiguous.load(Ordering::Relaxed),
            }
        })
    }

    /// Whether `self` and `other` hold the same sizes, strides and offset, compared in place
    /// (no [`Geometry`] is built: a layer asking this of every argument of every call would pay
    /// two full copies and a byte comparison for it).
    pub(crate) fn same_as(&self, other: &GeometryCell) -> bool {
        if std::ptr::eq(self, other) {
            return true;
        }
        self.read_consistent(|a| {
            other.read_consistent(|b| {
                let rank = a.rank.load(Ordering::Relaxed);
                if rank != b.rank.load(Ordering::Relaxed)
                    || a.storage_offset.load(Ordering::Relaxed)
                        != b.storage_offset.load(Ordering::Relaxed)
                {
                    return false;
                }
                if rank > INLINE_DIMS {
                    return a.load_spilled() == b.load_spilled();
                }
                (0..rank).all(|i| {
                    a.dims[i].load(Ordering::Relaxed) == b.dims[i].load(Ordering::Relaxed)
                        && a.dims[INLINE_DIMS + i].load(Ordering::Relaxed)
                            == b.dims[INLINE_DIMS + i].load(Ordering::Relaxed)
                })
            })
        })
    }

    /// Sizes then strides of a rank above [`INLINE_DIMS`].
    fn load_spilled(&self) -> Box<[i64]> {
        self.spilled
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_slice()
            .into()
    }

    /// Overwrites `dst` with a consistent copy of the geometry, field by field. Callers that
    /// keep snapshots in place use this rather than [`GeometryCell::load`]: a snapshot built
    /// on the stack and then copied to its slot stalled on store forwarding (half of
    /// `with_tensors`' own time in a tiny call).
    #[inline]
    pub(crate) fn load_into(&self, dst: &mut Geometry) {
        self.read_consistent(|c| {
            let rank = c.rank.load(Ordering::Relaxed);
            match u8::try_from(rank) {
                Ok(r) if rank <= INLINE_DIMS => {
                    if !matches!(dst.dims, Dims::Inline { .. }) {
                        dst.dims = Geometry::EMPTY.dims;
                    }
                    if let Dims::Inline {
                        rank,
                        sizes,
                        strides,
                    } = &mut dst.dims
                    {
                        *rank = r;
                        // All entries, whatever the rank: a fixed loop of plain loads
                        // (entries past the rank are kept zero by `write_fields`).
                        for i in 0..INLINE_DIMS {
                            sizes[i] = c.dims[i].load(Ordering::Relaxed);
                            strides[i] = c.dims[INLINE_DIMS + i].load(Ordering::Relaxed);
                        }
                    }
                }
                _ => dst.dims = Dims::Spilled(c.load_spilled()),
            }
            dst.storage_offset = c.storage_offset.load(Ordering::Relaxed);
            dst.numel = c.numel.load(Ordering::Relaxed);
            dst.required_elements = c.required_elements.load(Ordering::Relaxed);
            dst.is_contiguous = c.is_contiguous.load(Ordering::Relaxed);
        })
    }

    /// Runs `f` on a consistent copy of the sizes, kept on the stack (returning them by value
    /// stalled on store forwarding in every tiny call's meta function).
    #[inline]
    pub(crate) fn with_sizes<R>(&self, f: impl FnOnce(&[i64]) -> R) -> R {
        let mut sizes = [0i64; INLINE_DIMS];
        let rank = self.read_consistent(|c| {
            let rank = c.rank.load(Ordering::Relaxed);
            for (i, s) in sizes.iter_mut().enumerate() {
                *s = c.dims[i].load(Ordering::Relaxed);
            }
            rank
        });
        match sizes.get(..rank) {
            Some(inline) => f(inline),
            None => f(self.load().sizes()),
        }
    }

    /// The sizes, offset and element count, if the tensor is row-major contiguous with at most
    /// [`INLINE_DIMS`] dimensions (`None` otherwise): what a call over contiguous operands
    /// needs, read in one consistent pass without copying strides.
    #[inline]
    pub(crate) fn load_span(&self) -> Option<Span> {
        self.read_consistent(|c| {
            let rank = c.rank.load(Ordering::Relaxed);
            if rank > INLINE_DIMS || !c.is_contiguous.load(Ordering::Relaxed) {
                return None;
            }
            let mut sizes = [0; INLINE_DIMS];
            for (i, s) in sizes.iter_mut().enumerate() {
                *s = c.dims[i].load(Ordering::Relaxed);
            }
            Some(Span {
                rank: rank as u8,
                sizes,
                storage_offset: c.storage_offset.load(Ordering::Relaxed),
                numel: c.numel.load(Ordering::Relaxed),
            })
        })
    }

    /// The number of dimensions.
    #[inline]
    pub(crate) fn rank(&self) -> usize {
        // One field on its own is always consistent.
        self.rank.load(Ordering::Acquire)
    }

    /// The number of elements.
    #[inline]
    pub(crate) fn numel(&self) -> i64 {
        self.numel.load(Ordering::Acquire)
    }

    /// The storage offset.
    #[inline]
    pub(crate) fn storage_offset(&self) -> i64 {
        self.storage_offset.load(Ordering::Acquire)
    }

    /// Whether the elements are row-major contiguous.
    #[inline]
    pub(crate) fn is_contiguous(&self) -> bool {
        self.is_contiguous.load(Ordering::Acquire)
    }

    /// Locks out other writers; readers go on seeing the current geometry until
    /// [`GeometryWriter::store`].
    pub(crate) fn writer(&self) -> GeometryWriter<'_> {
        GeometryWriter {
            cell: self,
            _guard: self.writer.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }
}

impl GeometryWriter<'_> {
    /// The geometry as of now (no other writer can change it while this writer lives).
    pub(crate) fn current(&self) -> Geometry {
        self.cell.load()
    }

    /// Publishes `g`: readers see the old geometry or the new one, never a mix.
    pub(crate) fn store(&self, g: &Geometry) {
        let cell = self.cell;
        let seq = cell.seq.load(Ordering::Relaxed);
        cell.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        // The odd number must be visible before any field changes (the writer half of the
        // seqlock protocol).
        fence(Ordering::Release);
        cell.write_fields(g);
        cell.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn contiguous_dims_match_the_shape_helper() {
        for sizes in [
            &[][..],
            &[7],
            &[2, 3, 4],
            &[2, 0, 5],
            &[1, 1, 3, 1, 2, 4],
            &[2, 1, 3, 1, 2, 4, 5],
        ] {
            let expected = Dims::new(sizes, &shape::contiguous_strides(sizes));
            assert_eq!(Dims::contiguous(sizes), expected, "{sizes:?}");
        }
    }

    #[test]
    fn cell_round_trips_low_and_high_rank_geometries() {
        let low = Geometry::new(&[2, 3], &[3, 1], 4).unwrap();
        let high = Geometry::new(&[1, 2, 1, 2, 1, 2, 1, 2], &[16, 8, 8, 4, 4, 2, 2, 1], 0).unwrap();
        let cell = GeometryCell::new(&low);
        assert_eq!(cell.load(), low);
        assert_eq!(
            (cell.rank(), cell.numel(), cell.storage_offset()),
            (2, 6, 4)
        );
        cell.writer().store(&high);
        assert_eq!(cell.load(), high);
        assert_eq!(cell.rank(), 8);
        cell.writer().store(&low);
        assert_eq!(cell.load(), low);
    }

    #[test]
    fn loading_in_place_overwrites_any_previous_snapshot() {
        let low = Geometry::new(&[2, 3], &[1, 2], 5).unwrap();
        let high = Geometry::new(&[1, 2, 1, 2, 1, 2, 1, 2], &[16, 8, 8, 4, 4, 2, 2, 1], 7).unwrap();
        let (low_cell, high_cell) = (GeometryCell::new(&low), GeometryCell::new(&high));
        // Inline over the empty placeholder, spilled over inline, inline over spilled.
        let mut slot = Geometry::EMPTY;
        low_cell.load_into(&mut slot);
        assert_eq!(slot, low);
        high_cell.load_into(&mut slot);
        assert_eq!(slot, high);
        low_cell.load_into(&mut slot);
        assert_eq!(slot, low);
        assert_eq!(
            (slot.numel(), slot.required_elements()),
            (6, 5 + 1 + 2 * 2 + 1)
        );
    }

    #[test]
    fn a_cell_built_in_place_equals_one_built_by_value() {
        for g in [
            Geometry::EMPTY,
            Geometry::new(&[4, 0, 3], &[3, 3, 1], 2).unwrap(),
            Geometry::new(&[2, 1, 2, 1, 2, 1], &[4, 4, 2, 2, 1, 1], 0).unwrap(),
        ] {
            let mut place = std::mem::MaybeUninit::<GeometryCell>::uninit();
            // SAFETY: `place` is writable and aligned for a cell; `init` writes every field.
            let cell = unsafe {
                GeometryCell::init(place.as_mut_ptr(), NewGeometry::Of(&g));
                place.assume_init()
            };
            assert_eq!(cell.load(), GeometryCell::new(&g).load());
            assert_eq!(cell.load(), g);
        }
    }

    #[test]
    fn contiguous_cells_match_contiguous_geometries() {
        for sizes in [
            &[][..],
            &[1],
            &[7],
            &[2, 0, 5],
            &[3, 1, 4, 1, 5],
            &[2, 1, 3, 1, 2, 4],
        ] {
            let numel = shape::numel(sizes).unwrap();
            let mut place = std::mem::MaybeUninit::<GeometryCell>::uninit();
            // SAFETY: `place` is writable and aligned for a cell; `init` writes every field.
            let cell = unsafe {
                GeometryCell::init(place.as_mut_ptr(), NewGeometry::Contiguous { sizes, numel });
                place.assume_init()
            };
            let expected = Geometry::new(sizes, &shape::contiguous_strides(sizes), 0).unwrap();
            assert_eq!(cell.load(), expected, "{sizes:?}");
        }
    }

    /// Writers alternate between geometries whose every field differs (including a rank above
    /// the inline limit); readers must only ever see one of them whole.
    #[test]
    fn readers_never_see_a_mix_of_two_geometries() {
        let shapes: [Geometry; 3] = [
            Geometry::new(&[5, 7], &[7, 1], 3).unwrap(),
            Geometry::new(&[2, 3, 4], &[1, 2, 6], 11).unwrap(),
            Geometry::new(&[1, 2, 3, 1, 2, 3, 1, 2], &[72, 36, 12, 12, 6, 2, 2, 1], 0).unwrap(),
        ];
        let cell = Arc::new(GeometryCell::new(&shapes[0]));
        let shapes = Arc::new(shapes);
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let (cell, shapes, stop) = (cell.clone(), shapes.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut i = w;
                    while !stop.load(Ordering::Relaxed) {
                        cell.writer().store(&shapes[i % 3]);
                        i += 1;
                    }
                })
            })
            .collect();
        let mut seen = [0usize; 3];
        // At least 200 000 reads, and on until the writers have been seen at work (they may
        // not be scheduled at first on a loaded machine), within a time bound.
        let start = std::time::Instant::now();
        let mut reads = 0;
        let mut slot = Geometry::EMPTY;
        while reads < 200_000
            || (seen.iter().filter(|n| **n > 0).count() < 2
                && start.elapsed() < std::time::Duration::from_secs(30))
        {
            reads += 1;
            // Both ways of reading: by value, and in place over the previous snapshot
            // (whatever rank that had).
            if reads % 2 == 0 {
                slot = cell.load();
            } else {
                cell.load_into(&mut slot);
            }
            let g = &slot;
            let k = shapes.iter().position(|s| s == g);
            assert!(k.is_some(), "torn geometry read: {g:?}");
            seen[k.unwrap_or(0)] += 1;
        }
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        assert!(seen.iter().filter(|n| **n > 0).count() >= 2, "{seen:?}");
    }
}
