//! Meta functions of structured indexing operators, plus [`index_support`]: the layout,
//! overlap and advanced-indexing rules that the indexing kernels of every crate share.

use crate::structured::{Meta, OutputSpec, Outs};
use index_support::{
    AdvancedIndex, assert_no_internal_overlap, assert_no_overlap, assert_no_partial_overlap,
    infer_dense_strides, is_non_overlapping_and_dense, strides_for_memory_format,
    suggest_memory_format,
};
use switchyard_core::promotion::ResultTypeState;
use switchyard_core::shape::{DimVec, fmt_dims, wrap_dim};
use switchyard_core::{
    MemoryFormat, Result, ScalarType, Tensor, bail, can_cast, torch_check, torch_check_index,
    torch_check_type,
};

pub mod index_support {
    //! Rules shared by the indexing kernels: memory overlap checks (PyTorch's `MemOverlap.h`),
    //! dense-stride inference and suggested memory formats (`TensorImpl` / `empty_like`), and
    //! the normalisation of advanced indices (`AdvancedIndex` in `TensorAdvancedIndexing.cpp`).

    use switchyard_core::shape::{self, DimVec, fmt_dims, infer_size};
    use switchyard_core::{
        Device, Error, MemoryFormat, Result, ScalarType, Tensor, bail, torch_check,
        torch_check_index,
    };

    /// Whether the elements of `(sizes, strides)` tile a memory block exactly, in some
    /// dimension order (`is_non_overlapping_and_dense`).
    pub fn is_non_overlapping_and_dense(sizes: &[i64], strides: &[i64]) -> bool {
        if sizes.len() == 1 {
            return sizes[0] < 2 || strides[0] == 1;
        }
        let mut perm: Vec<usize> = (0..sizes.len()).collect();
        // Size-0/1 dimensions go last; the rest by increasing stride.
        perm.sort_by(|&a, &b| {
            let key = |d: usize| (sizes[d] < 2, if sizes[d] < 2 { 0 } else { strides[d] });
            key(a).cmp(&key(b))
        });
        let mut required = 1i64;
        for d in perm {
            if sizes[d] < 2 {
                return true;
            }
            if strides[d] != required {
                return false;
            }
            required = required.saturating_mul(sizes[d]);
        }
        true
    }

    /// Dense strides with the dimension order of `(sizes, strides)` (PyTorch's
    /// `infer_dense_strides`, which sorts dimensions as TensorIterator does).
    pub fn infer_dense_strides(sizes: &[i64], strides: &[i64]) -> DimVec {
        let order = stride_order(sizes, &[strides]);
        let mut out = DimVec::from_elem(0, sizes.len());
        let mut current = 1i64;
        for d in order {
            out[d] = current;
            if sizes[d] > 1 {
                current = current.saturating_mul(sizes[d]);
            }
        }
        out
    }

    /// The order in which TensorIterator walks dimensions, fastest first, given the strides of
    /// its operands (output first): an insertion sort by stride where a zero stride is
    /// ambiguous, the first operand with distinct strides decides, and equal strides put the
    /// smaller size first. Kernels that draw random numbers use it to fill elements in the
    /// order PyTorch does.
    pub fn stride_order(sizes: &[i64], operand_strides: &[&[i64]]) -> Vec<usize> {
        let ndim = sizes.len();
        let mut perm: Vec<usize> = (0..ndim).rev().collect();
        let should_swap = |d0: usize, d1: usize| -> i32 {
            for strides in operand_strides {
                let (s0, s1) = (strides[d0], strides[d1]);
                if s0 == 0 || s1 == 0 {
                    continue;
                }
                if s0 < s1 {
                    return -1;
                }
                if s0 > s1 {
                    return 1;
                }
                if sizes[d0] > sizes[d1] {
                    return 1;
                }
            }
            0
        };
        for i in 1..ndim {
            let mut d1 = i;
            for j in 1..=i {
                let d0 = i - j;
                match should_swap(perm[d0], perm[d1]) {
                    c if c > 0 => {
                        perm.swap(d0, d1);
                        d1 = d0;
                    }
                    c if c < 0 => break,
                    _ => {}
                }
            }
        }
        perm
    }

    fn is_channels_last_like(sizes: &[i64], strides: &[i64], order: &[usize]) -> bool {
        let mut min = 0i64;
        if strides[1] == 0 {
            return false;
        }
        for &d in order {
            if sizes[d] == 0 || strides[d] < min {
                return false;
            }
            // N111 tensors with equal strides are ambiguous: default to contiguous.
            if d == 0 && min == strides[1] {
                return false;
            }
            min = strides[d];
            if sizes[d] > 1 {
                min = min.saturating_mul(sizes[d]);
            }
        }
        true
    }

    /// The memory format a tensor's strides suggest (`suggest_memory_format`).
    pub fn suggest_memory_format(sizes: &[i64], strides: &[i64]) -> MemoryFormat {
        match sizes.len() {
            4 if is_channels_last_like(sizes, strides, &[1, 3, 2, 0]) => MemoryFormat::ChannelsLast,
            5 if is_channels_last_like(sizes, strides, &[1, 4, 3, 2, 0]) => {
                MemoryFormat::ChannelsLast3d
            }
            _ => MemoryFormat::Contiguous,
        }
    }

    /// Strides of a new tensor of `sizes` in `format` (`Preserve` is the caller's business).
    pub fn strides_for_memory_format(sizes: &[i64], format: MemoryFormat) -> Result<DimVec> {
        match format {
            MemoryFormat::Contiguous | MemoryFormat::Preserve => {
                Ok(shape::contiguous_strides(sizes))
            }
            MemoryFormat::ChannelsLast => {
                torch_check!(
                    sizes.len() == 4,
                    "required rank 4 tensor to use channels_last format"
                );
                shape::channels_last_strides(sizes)
            }
            MemoryFormat::ChannelsLast3d => {
                torch_check!(
                    sizes.len() == 5,
                    "required rank 5 tensor to use channels_last_3d format"
                );
                shape::channels_last_strides(sizes)
            }
        }
    }

    /// `has_internal_overlap`: `Some(true)` when two elements share memory (a stride-0
    /// dimension of size > 1), `Some(false)` when dense, `None` when too hard to tell.
    pub fn has_internal_overlap(t: &Tensor) -> Option<bool> {
        let (sizes, strides) = (t.sizes(), t.strides());
        // The tensor's flag, as PyTorch's `TensorImpl::is_non_overlapping_and_dense()`: a
        // contiguous tensor (every empty one included, whatever its strides) never overlaps.
        if t.is_contiguous() || is_non_overlapping_and_dense(&sizes, &strides) {
            return Some(false);
        }
        if sizes.iter().zip(&strides).any(|(s, st)| *s > 1 && *st == 0) {
            return Some(true);
        }
        None
    }

    /// Fails when more than one element of a written tensor shares memory.
    pub fn assert_no_internal_overlap(t: &Tensor) -> Result<()> {
        torch_check!(
            has_internal_overlap(t) != Some(true),
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation."
        );
        Ok(())
    }

    /// How the memory of two tensors overlaps (`get_overlap_status`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Overlap {
        /// The same elements in the same layout.
        Full,
        /// Some memory in common.
        Partial,
        /// Disjoint memory.
        No,
        /// Not dense: not worth deciding.
        TooHard,
    }

    /// `get_overlap_status(a, b)`.
    pub fn overlap_status(a: &Tensor, b: &Tensor) -> Overlap {
        if a.is_same(b) {
            return Overlap::Full;
        }
        if a.numel() == 0 || b.numel() == 0 {
            return Overlap::No;
        }
        let (sa, ta, sb, tb) = (a.sizes(), a.strides(), b.sizes(), b.strides());
        if !is_non_overlapping_and_dense(&sa, &ta) || !is_non_overlapping_and_dense(&sb, &tb) {
            return Overlap::TooHard;
        }
        let (Some(storage_a), Some(storage_b)) = (a.storage(), b.storage()) else {
            return Overlap::No;
        };
        if !storage_a.is_alias_of(&storage_b) {
            return Overlap::No;
        }
        let span = |t: &Tensor| {
            let size = t.element_size() as i64;
            let begin = t.storage_offset() * size;
            (begin, begin + t.numel() * size)
        };
        let ((a0, a1), (b0, b1)) = (span(a), span(b));
        if a0 == b0 && a1 == b1 {
            return if ta == tb {
                Overlap::Full
            } else {
                Overlap::Partial
            };
        }
        if a0 < b1 && b0 < a1 {
            return Overlap::Partial;
        }
        Overlap::No
    }

    const OVERLAP_MESSAGE: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";

    /// Fails when `a` and `b` share some but not all memory.
    pub fn assert_no_partial_overlap(a: &Tensor, b: &Tensor) -> Result<()> {
        torch_check!(
            overlap_status(a, b) != Overlap::Partial,
            "{OVERLAP_MESSAGE}"
        );
        Ok(())
    }

    /// Fails when `a` and `b` share memory.
    pub fn assert_no_overlap(a: &Tensor, b: &Tensor) -> Result<()> {
        let lap = overlap_status(a, b);
        torch_check!(
            lap != Overlap::Partial && lap != Overlap::Full,
            "{OVERLAP_MESSAGE}"
        );
        Ok(())
    }

    /// Advanced indexing with `Tensor?[]` indices, normalised once for a kernel (PyTorch's
    /// `make_info` + `AdvancedIndex`): boolean masks replaced by the coordinates of their
    /// `true` elements, index tensors broadcast together, the indexed dimensions moved to the
    /// front when they are not adjacent.
    ///
    /// The indexing result has shape `sizes[..before] ++ index_shape ++ sizes[after..]` of the
    /// (possibly permuted) `self`; element `r` of it is `self` at the non-indexed coordinates of
    /// `r` plus, for each indexed dimension `k`, `indices[k][r's index coordinates]`.
    #[derive(Clone, Debug)]
    pub struct AdvancedIndex {
        /// Sizes of `self` in the permuted dimension order.
        pub self_sizes: DimVec,
        /// Strides of `self` in the permuted dimension order.
        pub self_strides: DimVec,
        /// Non-indexed dimensions before the indexed ones.
        pub dims_before: usize,
        /// Non-indexed dimensions after the indexed ones.
        pub dims_after: usize,
        /// Sizes of the indexed dimensions (bounds of the index values).
        pub indexed_sizes: DimVec,
        /// Strides of `self` along the indexed dimensions.
        pub indexed_strides: DimVec,
        /// One integer (`Long` or `Int`) tensor per indexed dimension, broadcast to
        /// `index_shape` (stride-0 views where broadcast).
        pub indices: Vec<Tensor>,
        /// The broadcast shape of the index tensors.
        pub index_shape: DimVec,
        /// The shape of the indexing result.
        pub result_sizes: DimVec,
    }

    impl AdvancedIndex {
        /// Normalises `indices` for `self_` (errors as PyTorch: too many indices, bad index
        /// dtypes, mask shapes, shapes that do not broadcast, a size-0 indexed dimension).
        pub fn new(self_: &Tensor, indices: &[Option<Tensor>]) -> Result<AdvancedIndex> {
            let ndim = self_.dim();
            torch_check_index!(
                indices.len() <= ndim,
                "too many indices for tensor of dimension {ndim} (got {})",
                indices.len()
            );
            for t in indices.iter().flatten() {
                torch_check_index!(
                    matches!(
                        t.dtype(),
                        ScalarType::Long | ScalarType::Int | ScalarType::Byte | ScalarType::Bool
                    ),
                    "tensors used as indices must be long, int, byte or bool tensors"
                );
            }
            let expanded = expand_masks(self_, indices)?;
            torch_check_index!(
                expanded.iter().any(Option::is_some),
                "at least one index must be provided"
            );
            let broadcast = broadcast_indices(&expanded)?;
            let mut padded = broadcast;
            padded.resize(ndim, None);
            let (sizes, strides) = (self_.sizes(), self_.strides());
            let mut order: Vec<usize> = (0..ndim).collect();
            if !has_contiguous_subspace(&padded) {
                order = (0..ndim)
                    .filter(|d| padded[*d].is_some())
                    .chain((0..ndim).filter(|d| padded[*d].is_none()))
                    .collect();
            }
            let mut info = AdvancedIndex {
                self_sizes: order.iter().map(|d| sizes[*d]).collect(),
                self_strides: order.iter().map(|d| strides[*d]).collect(),
                dims_before: 0,
                dims_after: 0,
                indexed_sizes: DimVec::new(),
                indexed_strides: DimVec::new(),
                indices: Vec::new(),
                index_shape: DimVec::new(),
                result_sizes: DimVec::new(),
            };
            for (pos, d) in order.iter().enumerate() {
                match &padded[*d] {
                    None if info.indices.is_empty() => info.dims_before += 1,
                    None => info.dims_after += 1,
                    Some(t) => {
                        info.index_shape = t.sizes();
                        info.indexed_sizes.push(info.self_sizes[pos]);
                        info.indexed_strides.push(info.self_strides[pos]);
                        info.indices.push(t.clone());
                    }
                }
            }
            if info.indexed_sizes.contains(&0) && !info.index_shape.contains(&0) {
                bail!(
                    IndexError,
                    "index is out of bounds for dimension with size 0"
                );
            }
            let before = info.dims_before;
            let after_start = before + info.indices.len();
            info.result_sizes = info.self_sizes[..before]
                .iter()
                .chain(&info.index_shape)
                .chain(&info.self_sizes[after_start..])
                .copied()
                .collect();
            Ok(info)
        }

        /// Strides of `self` over the result shape: 0 across the index dimensions.
        pub fn self_result_strides(&self) -> DimVec {
            let before = self.dims_before;
            let after_start = before + self.indices.len();
            self.self_strides[..before]
                .iter()
                .copied()
                .chain(self.index_shape.iter().map(|_| 0))
                .chain(self.self_strides[after_start..].iter().copied())
                .collect()
        }

        /// Strides of index tensor `k` over the result shape: 0 outside the index dimensions.
        pub fn index_result_strides(&self, k: usize) -> Result<DimVec> {
            let t = self.indices.get(k).ok_or_else(|| {
                Error::runtime(format!("internal error: advanced index has no index {k}"))
            })?;
            Ok(std::iter::repeat_n(0, self.dims_before)
                .chain(t.strides().iter().copied())
                .chain(std::iter::repeat_n(0, self.dims_after))
                .collect())
        }
    }

    /// Replaces boolean / byte masks by one index tensor per mask dimension.
    fn expand_masks(self_: &Tensor, indices: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let mut out: Vec<Option<Tensor>> = Vec::with_capacity(indices.len());
        let self_sizes = self_.sizes();
        for index in indices {
            let Some(t) = index else {
                out.push(None);
                continue;
            };
            if !matches!(t.dtype(), ScalarType::Bool | ScalarType::Byte) {
                out.push(Some(t.clone()));
                continue;
            }
            if t.dtype() == ScalarType::Byte {
                switchyard_dispatch::warnings::warn(
                    "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."
                        .to_string(),
                );
            }
            let mask_sizes = t.sizes();
            for (j, m) in mask_sizes.iter().enumerate() {
                let src = out.len() + j;
                let Some(s) = self_sizes.get(src) else {
                    let n = self_sizes.len().max(1) as i64;
                    bail!(
                        IndexError,
                        "Dimension out of range (expected to be in range of [{}, {}], but got {src})",
                        -n,
                        n - 1
                    );
                };
                torch_check_index!(
                    m == s,
                    "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at index {src}",
                    fmt_dims(&mask_sizes),
                    fmt_dims(&self_sizes)
                );
            }
            out.extend(nonzero_columns(t)?.into_iter().map(Some));
        }
        Ok(out)
    }

    /// The coordinates of the non-zero elements of a mask, one `Long` tensor per dimension
    /// (the columns of `mask.nonzero()`).
    fn nonzero_columns(mask: &Tensor) -> Result<Vec<Tensor>> {
        if !mask.is_cpu() {
            bail!(
                NotImplementedError,
                "indexing with a boolean mask needs the mask's values (aten::nonzero), which a {} tensor does not have",
                mask.device()
            );
        }
        let values: Vec<bool> = match mask.dtype() {
            ScalarType::Bool => mask.to_vec::<bool>()?,
            _ => mask.to_vec::<u8>()?.into_iter().map(|v| v != 0).collect(),
        };
        let sizes = mask.sizes();
        let count = values.iter().filter(|v| **v).count();
        let mut columns: Vec<Vec<i64>> = vec![Vec::with_capacity(count); sizes.len()];
        let mut coord = DimVec::from_elem(0, sizes.len());
        for v in values {
            if v {
                for (col, c) in columns.iter_mut().zip(&coord) {
                    col.push(*c);
                }
            }
            for d in (0..sizes.len()).rev() {
                coord[d] += 1;
                if coord[d] < sizes[d] {
                    break;
                }
                coord[d] = 0;
            }
        }
        columns
            .into_iter()
            .map(|c| Tensor::from_vec(c, &[count as i64]))
            .collect()
    }

    /// Broadcasts the defined index tensors to their common shape (as views).
    fn broadcast_indices(indices: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        let defined: Vec<&Tensor> = indices.iter().flatten().collect();
        let mut shape = DimVec::new();
        for t in &defined {
            shape = infer_size(&shape, &t.sizes()).map_err(|_| {
                let shapes: Vec<String> = defined.iter().map(|t| fmt_dims(&t.sizes())).collect();
                Error::index(format!(
                    "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                    shapes.join(", ")
                ))
            })?;
        }
        indices
            .iter()
            .map(|i| i.as_ref().map(|t| expand_view(t, &shape)).transpose())
            .collect()
    }

    /// `t` broadcast to `shape` as a view (stride 0 along broadcast dimensions); `t` itself
    /// when the shape already matches.
    pub fn expand_view(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
        let sizes = t.sizes();
        if sizes.as_slice() == shape {
            return Ok(t.clone());
        }
        let strides = broadcast_strides(&sizes, &t.strides(), shape)?;
        if t.device() == Device::META || t.has_storage() {
            t.as_strided_view(shape, &strides, t.storage_offset())
        } else {
            bail!(
                RuntimeError,
                "cannot broadcast a {} tensor without storage",
                t.device()
            )
        }
    }

    /// Strides of `(sizes, strides)` broadcast to `shape` (0 along broadcast dimensions).
    pub fn broadcast_strides(sizes: &[i64], strides: &[i64], shape: &[i64]) -> Result<DimVec> {
        let ndim = shape.len();
        torch_check!(
            sizes.len() <= ndim,
            "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension 0.  Target sizes: {}.  Tensor sizes: {}",
            ndim,
            sizes.len(),
            fmt_dims(shape),
            fmt_dims(sizes)
        );
        let lead = ndim - sizes.len();
        let mut out = DimVec::from_elem(0, ndim);
        for (i, (s, st)) in sizes.iter().zip(strides).enumerate() {
            let d = lead + i;
            if *s == shape[d] {
                out[d] = if *s == 1 { 0 } else { *st };
            } else if *s == 1 {
                out[d] = 0;
            } else {
                bail!(
                    RuntimeError,
                    "The expanded size of the tensor ({}) must match the existing size ({s}) at non-singleton dimension {d}.  Target sizes: {}.  Tensor sizes: {}",
                    shape[d],
                    fmt_dims(shape),
                    fmt_dims(sizes)
                );
            }
        }
        Ok(out)
    }

    /// Whether the defined indices are adjacent (`hasContiguousSubspace`).
    fn has_contiguous_subspace(indices: &[Option<Tensor>]) -> bool {
        let first = indices.iter().position(Option::is_some);
        let last = indices.iter().rposition(Option::is_some);
        match (first, last) {
            (Some(f), Some(l)) => indices[f..=l].iter().all(Option::is_some),
            _ => true,
        }
    }
}

/// What the CPU `cat` needs beyond the output spec (PyTorch's precomputed `cat` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatInfo {
    /// The wrapped concatenation dimension.
    pub dim: usize,
    /// Index of the first input that is not skipped (legacy 1-d empty inputs are skipped);
    /// the number of inputs when all are skipped.
    pub valid: usize,
    /// The memory format of the output.
    pub memory_format: MemoryFormat,
}

/// Legacy rule: a 1-d tensor with 0 elements takes no part in `cat`'s shape checks.
fn cat_should_skip(t: &Tensor) -> bool {
    t.dim() == 1 && t.numel() == 0
}

fn cat_memory_format(tensors: &[Tensor]) -> MemoryFormat {
    let mut format: Option<MemoryFormat> = None;
    for t in tensors {
        let f = suggest_memory_format(&t.sizes(), &t.strides());
        if f == MemoryFormat::Contiguous {
            return f;
        }
        if format.is_some_and(|g| g != f) {
            return MemoryFormat::Contiguous;
        }
        format = Some(f);
    }
    format.unwrap_or(MemoryFormat::Contiguous)
}

/// `cat`: shape, promoted dtype and memory format of the concatenation.
pub fn cat(tensors: &[Tensor], dim: i64, outs: Outs<'_>) -> Result<Meta<CatInfo>> {
    for (i, t) in tensors.iter().enumerate() {
        torch_check!(
            t.dim() > 0,
            "zero-dimensional tensor (at position {i}) cannot be concatenated"
        );
    }
    let dim = match tensors.iter().find(|t| !cat_should_skip(t)) {
        Some(t) => wrap_dim(dim, t.dim())? as i64,
        None => dim,
    };
    let Some(first) = tensors.first() else {
        bail!(
            ValueError,
            "torch.cat(): expected a non-empty list of Tensors"
        );
    };
    let valid = tensors
        .iter()
        .position(|t| !cat_should_skip(t))
        .unwrap_or(tensors.len());
    let memory_format = cat_memory_format(tensors);
    let mut state = ResultTypeState::new();
    tensors.iter().for_each(|t| state.update_tensor(t));
    let mut out_dtype = state.result().unwrap_or(ScalarType::Float);
    let out = outs.get(0);
    if let Some(o) = out {
        torch_check_type!(
            can_cast(out_dtype, o.dtype()),
            "torch.cat(): input types can't be cast to the desired output type {}",
            o.dtype()
        );
        out_dtype = o.dtype();
    }
    for t in tensors {
        torch_check!(
            t.device() == first.device(),
            "Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
            first.device(),
            t.device()
        );
    }
    let (mut sizes, wrapped) = match tensors.get(valid) {
        None => (DimVec::from_slice(&[0]), 0usize),
        Some(reference) => {
            let ndim = reference.dim();
            torch_check!(
                dim >= 0 && (dim as usize) <= ndim,
                "torch.cat(): dimension {dim}out of range"
            );
            let d = dim as usize;
            let ref_sizes = reference.sizes();
            let mut at_dim = 0i64;
            for (i, t) in tensors.iter().enumerate() {
                if cat_should_skip(t) {
                    continue;
                }
                let s = t.sizes();
                torch_check!(
                    s.len() == ndim,
                    "Tensors must have same number of dimensions: got {} and {}",
                    ndim,
                    s.len()
                );
                for k in (0..ndim).filter(|k| *k != d) {
                    torch_check!(
                        s[k] == ref_sizes[k],
                        "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                        ref_sizes[k],
                        s[k]
                    );
                }
                // Checked: sizes of expanded inputs can sum past i64::MAX (which would wrap
                // in C++ and panic in a debug build here).
                at_dim = at_dim.checked_add(s[d]).ok_or_else(|| {
                    switchyard_core::Error::runtime(format!(
                        "cat: the size of the result in dimension {d} overflows int64"
                    ))
                })?;
            }
            let mut sizes = ref_sizes.clone();
            sizes[d] = at_dim;
            (sizes, d)
        }
    };
    if sizes.is_empty() {
        sizes.push(0);
    }
    if let Some(o) = out
        && valid < tensors.len()
    {
        assert_no_internal_overlap(o)?;
        for t in tensors {
            assert_no_overlap(o, t)?;
        }
    }
    let strides = match memory_format {
        MemoryFormat::Contiguous => None,
        f => Some(strides_for_memory_format(&sizes, f)?),
    };
    let device = tensors.get(valid).unwrap_or(first).device();
    Ok(Meta::new(
        [OutputSpec {
            sizes,
            strides: strides.map(|s| s.as_slice().into()),
            dtype: out_dtype,
            device,
            compute_dtype: None,
        }],
        CatInfo {
            dim: wrapped,
            valid,
            memory_format,
        },
    ))
}

/// `index.Tensor`: the shape of an advanced-indexing result; the normalised indices are kept
/// for the kernel.
pub fn index_tensor(
    self_: &Tensor,
    indices: &[Option<Tensor>],
    outs: Outs<'_>,
) -> Result<Meta<AdvancedIndex>> {
    torch_check_index!(
        indices.len() <= self_.dim(),
        "too many indices for tensor of dimension {} (got {})",
        self_.dim(),
        indices.len()
    );
    if let Some(out) = outs.get(0) {
        torch_check!(
            self_.dtype() == out.dtype(),
            "index_out: self ({}) and result ({}) must have the same scalar type",
            self_.dtype(),
            out.dtype()
        );
        assert_no_internal_overlap(out)?;
        assert_no_overlap(out, self_)?;
        for t in indices.iter().flatten() {
            assert_no_overlap(out, t)?;
        }
    }
    let info = AdvancedIndex::new(self_, indices)?;
    let spec = OutputSpec::contiguous(&info.result_sizes, self_.dtype(), self_.device());
    Ok(Meta::new([spec], info))
}

/// A `scatter` reduction (the `reduce=` argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterReduce {
    /// `"add"`.
    Add,
    /// `"multiply"`.
    Multiply,
}

impl ScatterReduce {
    /// Parses the `reduce` argument ("reduce argument must be either add or multiply." otherwise).
    pub fn parse(reduce: &str) -> Result<ScatterReduce> {
        match reduce {
            "add" => Ok(ScatterReduce::Add),
            "multiply" => Ok(ScatterReduce::Multiply),
            _ => bail!(
                RuntimeError,
                "reduce argument must be either add or multiply."
            ),
        }
    }
}

/// What the scatter kernels need: the wrapped dimension and the reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScatterInfo {
    /// The wrapped scatter dimension.
    pub dim: usize,
    /// The reduction, if any.
    pub reduce: Option<ScatterReduce>,
}

/// `max(dim, 1)`: scatter/gather treat a 0-dim tensor as 1-d.
fn nonempty_dim(t: &Tensor) -> usize {
    t.dim().max(1)
}

/// Size `d`, or 1 for a 0-dim tensor (`ensure_nonempty_size`).
fn nonempty_size(sizes: &[i64], d: usize) -> i64 {
    if sizes.is_empty() {
        1
    } else {
        sizes.get(d).copied().unwrap_or(1)
    }
}

fn check_index_dtype(method: &str, index: &Tensor) -> Result<()> {
    if index.numel() != 0 {
        torch_check!(
            matches!(index.dtype(), ScalarType::Long | ScalarType::Int),
            "{method}(): Expected dtype int32/int64 for index"
        );
    }
    Ok(())
}

fn scatter_meta(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: Option<&Tensor>,
    reduce: Option<&str>,
    outs: Outs<'_>,
) -> Result<Meta<ScatterInfo>> {
    let wrapped = wrap_dim(dim, self_.dim())?;
    check_index_dtype("scatter", index)?;
    if let Some(src) = src {
        torch_check!(
            self_.dtype() == src.dtype(),
            "scatter(): Expected self.dtype to be equal to src.dtype"
        );
    }
    if index.numel() != 0 {
        torch_check!(
            nonempty_dim(self_) == nonempty_dim(index),
            "Index tensor must have the same number of dimensions as self tensor"
        );
        let (ss, is) = (self_.sizes(), index.sizes());
        let ndim = nonempty_dim(self_);
        let mut wrong =
            (0..ndim).any(|d| d != wrapped && nonempty_size(&is, d) > nonempty_size(&ss, d));
        match src {
            Some(src) => {
                let srcs = src.sizes();
                wrong = wrong || (0..ndim).any(|d| nonempty_size(&is, d) > nonempty_size(&srcs, d));
                torch_check!(
                    !wrong,
                    "Expected index {} to be no larger than self {} apart from dimension {wrapped} and to be no larger size than src {}",
                    fmt_dims(&is),
                    fmt_dims(&ss),
                    fmt_dims(&srcs)
                );
            }
            None => torch_check!(
                !wrong,
                "Expected index {} to be no larger than self {} apart from dimension {wrapped}",
                fmt_dims(&is),
                fmt_dims(&ss)
            ),
        }
    }
    if let Some(out) = outs.get(0) {
        assert_no_internal_overlap(out)?;
        assert_no_overlap(out, index)?;
        if let Some(src) = src {
            assert_no_overlap(out, src)?;
        }
    }
    let reduce = reduce.map(ScatterReduce::parse).transpose()?;
    let spec = OutputSpec::contiguous(&self_.sizes(), self_.dtype(), self_.device());
    Ok(Meta::new(
        [spec],
        ScatterInfo {
            dim: wrapped,
            reduce,
        },
    ))
}

/// `scatter.src`.
pub fn scatter_src(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    outs: Outs<'_>,
) -> Result<Meta<ScatterInfo>> {
    scatter_meta(self_, dim, index, Some(src), None, outs)
}

/// `scatter.value`.
pub fn scatter_value(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    _value: switchyard_core::Scalar,
    outs: Outs<'_>,
) -> Result<Meta<ScatterInfo>> {
    scatter_meta(self_, dim, index, None, None, outs)
}

/// `scatter.reduce` (`reduce` is `"add"` or `"multiply"`).
pub fn scatter_reduce(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    outs: Outs<'_>,
) -> Result<Meta<ScatterInfo>> {
    scatter_meta(self_, dim, index, Some(src), Some(reduce), outs)
}

/// `scatter.value_reduce`.
pub fn scatter_value_reduce(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    _value: switchyard_core::Scalar,
    reduce: &str,
    outs: Outs<'_>,
) -> Result<Meta<ScatterInfo>> {
    scatter_meta(self_, dim, index, None, Some(reduce), outs)
}

/// `scatter_add`.
pub fn scatter_add(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    outs: Outs<'_>,
) -> Result<Meta<ScatterInfo>> {
    scatter_meta(self_, dim, index, Some(src), Some("add"), outs)
}

fn tril_triu_meta(name: &str, self_: &Tensor) -> Result<Meta<()>> {
    torch_check!(
        self_.dim() >= 2,
        "{name}: input tensor must have at least 2 dimensions"
    );
    Ok(Meta::new(
        [OutputSpec::contiguous(
            &self_.sizes(),
            self_.dtype(),
            self_.device(),
        )],
        (),
    ))
}

/// `tril`.
pub fn tril(self_: &Tensor, _diagonal: i64, _outs: Outs<'_>) -> Result<Meta<()>> {
    tril_triu_meta("tril", self_)
}

/// `triu`.
pub fn triu(self_: &Tensor, _diagonal: i64, _outs: Outs<'_>) -> Result<Meta<()>> {
    tril_triu_meta("triu", self_)
}

/// `gather`: the output has the index's shape; the extra value is the wrapped dimension.
pub fn gather(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    _sparse_grad: bool,
    outs: Outs<'_>,
) -> Result<Meta<usize>> {
    let wrapped = wrap_dim(dim, self_.dim())?;
    if let Some(out) = outs.get(0) {
        assert_no_internal_overlap(out)?;
        assert_no_overlap(out, self_)?;
        assert_no_partial_overlap(out, index)?;
    }
    check_index_dtype("gather", index)?;
    if index.numel() != 0 {
        torch_check!(
            nonempty_dim(self_) == nonempty_dim(index),
            "Index tensor must have the same number of dimensions as input tensor"
        );
        let (ss, is) = (self_.sizes(), index.sizes());
        for d in (0..nonempty_dim(self_)).filter(|d| *d != wrapped) {
            torch_check!(
                nonempty_size(&is, d) <= nonempty_size(&ss, d),
                "Size does not match at dimension {d} expected index {} to be no larger than self {} apart from dimension {wrapped}",
                fmt_dims(&is),
                fmt_dims(&ss)
            );
        }
    }
    let spec = OutputSpec::contiguous(&index.sizes(), self_.dtype(), self_.device());
    Ok(Meta::new([spec], wrapped))
}

/// `sort.stable`: values and `Long` indices laid out like `self` (dense strides).
pub fn sort_stable(
    self_: &Tensor,
    _stable: Option<bool>,
    dim: i64,
    _descending: bool,
    _outs: Outs<'_>,
) -> Result<Meta<usize>> {
    let wrapped = wrap_dim(dim, self_.dim())?;
    let (sizes, strides) = (self_.sizes(), self_.strides());
    let dense = if is_non_overlapping_and_dense(&sizes, &strides) {
        strides
    } else {
        infer_dense_strides(&sizes, &strides)
    };
    let spec = |dtype| OutputSpec {
        sizes: sizes.clone(),
        strides: Some(dense.as_slice().into()),
        dtype,
        device: self_.device(),
        compute_dtype: None,
    };
    Ok(Meta::new(
        [spec(self_.dtype()), spec(ScalarType::Long)],
        wrapped,
    ))
}

/// `topk`: values and `Long` indices with `k` elements along `dim`.
pub fn topk(
    self_: &Tensor,
    k: i64,
    dim: i64,
    _largest: bool,
    _sorted: bool,
    _outs: Outs<'_>,
) -> Result<Meta<usize>> {
    let wrapped = wrap_dim(dim, self_.dim())?;
    let mut sizes = self_.sizes();
    let slice = sizes.get(wrapped).copied().unwrap_or(1);
    torch_check!(k >= 0 && k <= slice, "selected index k out of range");
    if let Some(s) = sizes.get_mut(wrapped) {
        *s = k;
    }
    let device = self_.device();
    Ok(Meta::new(
        [
            OutputSpec::contiguous(&sizes, self_.dtype(), device),
            OutputSpec::contiguous(&sizes, ScalarType::Long, device),
        ],
        wrapped,
    ))
}

// ---------------------------------------------------------------------------------------------
// Checks of the unstructured indexing kernels, shared by their CPU and Meta kernels.
// ---------------------------------------------------------------------------------------------

/// `index_select.out`'s checks (PyTorch's `index_select_out_cpu_`): a 0/1-d integer index,
/// one value for a 0-dim `self`, `out` of `self`'s dtype not overlapping the inputs, a
/// non-empty indexed dimension when `self` is empty and `index` is not. Returns the wrapped
/// dimension and the result's sizes.
pub fn index_select_checks(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    out: &Tensor,
) -> Result<(usize, DimVec)> {
    let d = wrap_dim(dim, self_.dim())?;
    let numel = index.numel();
    torch_check_index!(
        index.dim() <= 1,
        "index_select(): Index is supposed to be a vector"
    );
    torch_check!(
        !(self_.dim() == 0 && numel != 1),
        "index_select(): Index to scalar can have only 1 value, got {numel} value(s)"
    );
    torch_check!(
        matches!(index.dtype(), ScalarType::Long | ScalarType::Int),
        "index_select(): Expected dtype int32 or int64 for index"
    );
    torch_check!(
        self_.dtype() == out.dtype(),
        "index_select(): self and result must have the same scalar type"
    );
    assert_no_internal_overlap(out)?;
    assert_no_overlap(out, self_)?;
    assert_no_overlap(out, index)?;
    let mut result_sizes = self_.sizes();
    if self_.dim() > 1 && numel > 0 && self_.numel() == 0 {
        torch_check!(
            result_sizes.get(d).is_some_and(|&s| s > 0),
            "index_select(): self indexing axis dim should be positive"
        );
    }
    if self_.dim() > 0 {
        result_sizes[d] = numel;
    }
    Ok((d, result_sizes))
}

/// `flip`'s dimension list as one flag per dimension of `self` (at least one), with
/// PyTorch's error for a repeated dimension.
pub fn flip_flags(self_: &Tensor, dims: &[i64]) -> Result<Vec<bool>> {
    let ndim = self_.dim();
    let mut flipped = vec![false; ndim.max(1)];
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        torch_check!(
            !flipped[w],
            "dim {w} appears multiple times in the list of dims"
        );
        flipped[w] = true;
    }
    Ok(flipped)
}

/// A new tensor shaped like `t` with `empty_like(t, preserve_format)`'s strides: `t`'s own
/// when they are dense, else the dense strides in `t`'s dimension order.
pub fn empty_like_preserve(t: &Tensor) -> Result<Tensor> {
    let (sizes, strides) = (t.sizes(), t.strides());
    let strides = if is_non_overlapping_and_dense(&sizes, &strides) {
        strides
    } else {
        infer_dense_strides(&sizes, &strides)
    };
    Tensor::allocate_strided(&sizes, &strides, t.dtype(), t.device())
}

/// `roll`'s argument checks: shifts given, as many shifts as dimensions (unless one shift
/// rolls the flattened tensor), every dimension valid for `self`.
pub fn check_roll(self_: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<()> {
    if dims.len() != 1 || shifts.len() != 1 {
        torch_check!(!shifts.is_empty(), "`shifts` required");
        if dims.is_empty() && shifts.len() == 1 {
            return Ok(());
        }
        torch_check!(
            shifts.len() == dims.len(),
            "shifts and dimensions must align. shifts: {}, dims:{}",
            shifts.len(),
            dims.len()
        );
    }
    let ndim = self_.dim();
    for &d in dims {
        torch_check_index!(
            ndim > 0,
            "Dimension specified as {d} but tensor has no dimensions"
        );
        wrap_dim(d, ndim)?;
    }
    Ok(())
}

/// `masked_fill_`'s checks: a `Bool` mask, not partially overlapping `self`, that broadcasts
/// to `self`'s shape (an in-place result cannot grow).
pub fn check_masked_fill(self_: &Tensor, mask: &Tensor) -> Result<()> {
    torch_check!(
        mask.dtype() == ScalarType::Bool,
        "masked_fill_ only supports boolean masks, but got mask with dtype {}",
        mask.dtype().type_meta_name()
    );
    assert_no_partial_overlap(self_, mask)?;
    let shape = switchyard_core::shape::infer_size(&self_.sizes(), &mask.sizes())?;
    torch_check!(
        shape == self_.sizes(),
        "output with shape {} doesn't match the broadcast shape {}",
        fmt_dims(&self_.sizes()),
        fmt_dims(&shape)
    );
    Ok(())
}

/// `masked_fill_.Tensor`'s check on its value: a 0-dim tensor.
pub fn check_masked_fill_value(value: &Tensor) -> Result<()> {
    torch_check!(
        value.dim() == 0,
        "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
        value.dim()
    );
    Ok(())
}

/// `index_put_`'s check that at most one index per dimension of `self` is given.
pub fn check_index_put_count(self_: &Tensor, indices: &[Option<Tensor>]) -> Result<()> {
    torch_check_index!(
        indices.len() <= self_.dim(),
        "too many indices for tensor of dimension {} (got {})",
        self_.dim(),
        indices.len()
    );
    Ok(())
}

/// `index_put_`'s checks once the indices are normalised: `values` broadcasts to the indexing
/// result and has `self`'s dtype. Returns `values`' strides broadcast to the result.
pub fn check_index_put_values(
    self_: &Tensor,
    info: &AdvancedIndex,
    values: &Tensor,
) -> Result<DimVec> {
    let value_strides = index_support::broadcast_strides(
        &values.sizes(),
        &values.strides(),
        &info.result_sizes,
    )
    .map_err(|_| {
        switchyard_core::Error::runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_dims(&values.sizes()),
            fmt_dims(&info.result_sizes)
        ))
    })?;
    check_index_put_dtype(self_, values)?;
    Ok(value_strides)
}

/// `index_put_`'s check that `values` has `self`'s dtype.
pub fn check_index_put_dtype(self_: &Tensor, values: &Tensor) -> Result<()> {
    torch_check!(
        values.dtype() == self_.dtype(),
        "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
        self_.dtype(),
        values.dtype()
    );
    Ok(())
}
