//! Composite and Meta kernels of the view operators.
//!
//! Every view is computed here once, with PyTorch's geometry rules (sizes, strides, storage
//! offset), and made with [`Tensor::as_strided_view`], so it shares storage and version
//! counter with its base on every backend whose tensors have storage (CPU, Meta, devices with
//! an allocator). The CPU kernels of `view`, `as_strided`, `unfold` and `resize_` call the
//! Meta/composite ones here: the geometry does not depend on the device.
//!
//! In-place view operators (`transpose_`, `squeeze_`, `as_strided_`, ...) replace the
//! geometry of `self` with [`Tensor::set_geometry`], which every handle of it sees.
//!
//! Composite-implicit kernels (`reshape`, `narrow`, `movedim`, `chunk`, ...) call the
//! operators they decompose into through the `redispatch` helpers, so autograd sees the
//! constituent operators.

use switchyard_core::shape::{self, DimVec, fmt_dims};
use switchyard_core::{
    Error, MemoryFormat, Result, ScalarType, Tensor, bail, torch_check, torch_check_index,
};

// ---------------------------------------------------------------------------------------------
// Geometry helpers
// ---------------------------------------------------------------------------------------------

/// Sizes, strides and storage offset of a (future) view.
#[derive(Clone, Debug, PartialEq)]
struct ViewGeometry {
    sizes: DimVec,
    strides: DimVec,
    offset: i64,
}

impl ViewGeometry {
    /// The geometry of `t` as it is now.
    fn of(t: &Tensor) -> ViewGeometry {
        let g = t.geometry();
        ViewGeometry {
            sizes: DimVec::from_slice(g.sizes()),
            strides: DimVec::from_slice(g.strides()),
            offset: g.storage_offset(),
        }
    }

    /// A new view of `base` with this geometry.
    fn view(&self, base: &Tensor) -> Result<Tensor> {
        base.as_strided_view(&self.sizes, &self.strides, self.offset)
    }

    /// Gives `t` this geometry in place (in-place view operators); returns `t`.
    fn apply(&self, t: &Tensor) -> Result<Tensor> {
        t.set_geometry(&self.sizes, &self.strides, self.offset)?;
        Ok(t.clone())
    }

    fn ndim(&self) -> usize {
        self.sizes.len()
    }
}

/// `maybe_wrap_dim(dim, ndim, wrap_scalar=false)`: a 0-dim tensor has no dimension to name.
fn wrap_dim_no_scalar(dim: i64, ndim: usize) -> Result<usize> {
    if ndim == 0 {
        bail!(
            IndexError,
            "Dimension specified as {dim} but tensor has no dimensions"
        );
    }
    shape::wrap_dim(dim, ndim)
}

/// The size of dimension `dim` (wrapped; an error on a 0-dim tensor), as `self.size(dim)`.
fn size_at(g: &ViewGeometry, dim: i64) -> Result<(usize, i64)> {
    let d = wrap_dim_no_scalar(dim, g.ndim())?;
    Ok((d, g.sizes[d]))
}

/// PyTorch's `infer_size_dv`: resolves one `-1` in `shape` for `numel` elements.
///
/// Errors: "only one dimension can be inferred", "invalid shape dimension -2 at index 0 of
/// shape [-2, 3]", "shape '[2, 5]' is invalid for input of size 6", and the ambiguity error
/// for `-1` with zero elements.
pub(crate) fn infer_size(shape: &[i64], numel: i64) -> Result<DimVec> {
    let mut res = DimVec::from_slice(shape);
    let mut newsize: i64 = 1;
    let mut infer_dim: Option<usize> = None;
    for (i, &s) in shape.iter().enumerate() {
        if s == -1 {
            if infer_dim.is_some() {
                bail!(RuntimeError, "only one dimension can be inferred");
            }
            infer_dim = Some(i);
        } else if s >= 0 {
            newsize = newsize.wrapping_mul(s);
        } else {
            bail!(
                RuntimeError,
                "invalid shape dimension {s} at index {i} of shape {}",
                fmt_dims(shape)
            );
        }
    }
    if numel == newsize || (infer_dim.is_some() && newsize > 0 && numel % newsize == 0) {
        if let Some(d) = infer_dim {
            torch_check!(
                newsize != 0,
                "cannot reshape tensor of {numel} elements into shape {} because the unspecified dimension size -1 can be any value and is ambiguous",
                fmt_dims(shape)
            );
            res[d] = numel / newsize;
        }
        return Ok(res);
    }
    bail!(
        RuntimeError,
        "shape '{}' is invalid for input of size {numel}",
        fmt_dims(shape)
    )
}

/// PyTorch's `computeStride`: the strides under which `(old_sizes, old_strides)` can be viewed
/// as `new_sizes` without copying, or `None` when some new dimension would span two
/// non-contiguous chunks of the old layout.
pub(crate) fn compute_stride(
    old_sizes: &[i64],
    old_strides: &[i64],
    new_sizes: &[i64],
) -> Option<DimVec> {
    if old_sizes.is_empty() {
        return Some(DimVec::from_elem(1, new_sizes.len()));
    }
    let numel: i64 = old_sizes.iter().product();
    if numel == 0 && old_sizes == new_sizes {
        return Some(DimVec::from_slice(old_strides));
    }
    let mut new_strides = DimVec::from_elem(0, new_sizes.len());
    if numel == 0 {
        let mut acc: i64 = 1;
        for d in (0..new_sizes.len()).rev() {
            new_strides[d] = acc;
            acc = acc.wrapping_mul(new_sizes[d].max(1));
        }
        return Some(new_strides);
    }
    let mut view_d = new_sizes.len() as i64 - 1;
    let mut chunk_base_stride = *old_strides.last()?;
    let mut tensor_numel: i64 = 1;
    let mut view_numel: i64 = 1;
    for tensor_d in (0..old_sizes.len()).rev() {
        tensor_numel = tensor_numel.wrapping_mul(old_sizes[tensor_d]);
        // A chunk ends where the next-outer dimension does not continue it.
        let chunk_ends = tensor_d == 0
            || (old_sizes[tensor_d - 1] != 1
                && old_strides[tensor_d - 1] != tensor_numel.wrapping_mul(chunk_base_stride));
        if chunk_ends {
            while view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel.wrapping_mul(chunk_base_stride);
                view_numel = view_numel.wrapping_mul(new_sizes[view_d as usize]);
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == -1).then_some(new_strides)
}

/// `computeStorageNbytes` in unsigned arithmetic, as PyTorch computes it for `as_strided`.
fn compute_storage_nbytes(sizes: &[i64], strides: &[i64], itemsize: usize) -> Result<u64> {
    let overflow = || {
        Error::runtime(format!(
            "Storage size calculation overflowed with sizes={} and strides={}",
            fmt_dims(sizes),
            fmt_dims(strides)
        ))
    };
    let mut size: u64 = 1;
    for (&n, &st) in sizes.iter().zip(strides) {
        if n == 0 {
            return Ok(0);
        }
        // Negative sizes become huge unsigned values and overflow, as in PyTorch.
        let strided = (st as u64)
            .checked_mul(n.wrapping_sub(1) as u64)
            .ok_or_else(overflow)?;
        size = size.checked_add(strided).ok_or_else(overflow)?;
    }
    let bytes = size.checked_mul(itemsize as u64).ok_or_else(overflow)?;
    if bytes > i64::MAX as u64 {
        return Err(overflow());
    }
    Ok(bytes)
}

/// The storage bytes a view needs as PyTorch's symbolic-size `computeStorageNbytes` computes
/// them (the `as_strided_` and Meta paths): plain arithmetic, no overflow check, 0 when the
/// view is empty.
fn symbolic_storage_nbytes(sizes: &[i64], strides: &[i64], itemsize: usize, offset: i64) -> i64 {
    let numel = sizes.iter().fold(1i64, |acc, n| acc.wrapping_mul(*n));
    if numel == 0 {
        return 0;
    }
    let span = sizes.iter().zip(strides).fold(1i64, |acc, (n, s)| {
        acc.wrapping_add(s.wrapping_mul(n.wrapping_sub(1)))
    });
    (itemsize as i64).wrapping_mul(offset.wrapping_add(span))
}

/// PyTorch's `setStrided` checks, in its order and with its messages. `symbolic` selects the
/// symbolic-size flavour of the storage computation (`as_strided_` and Meta), whose messages
/// differ for negative or overflowing sizes.
fn check_strided(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    offset: i64,
    symbolic: bool,
) -> Result<()> {
    torch_check!(
        size.len() == stride.len(),
        "mismatch in length of strides and shape"
    );
    torch_check!(
        stride.iter().all(|s| *s >= 0),
        "as_strided: Negative strides are not supported at the moment, got strides: {}",
        fmt_dims(stride)
    );
    let itemsize = self_.element_size();
    let (empty, total) = if symbolic {
        let without_offset = symbolic_storage_nbytes(size, stride, itemsize, 0);
        (
            without_offset == 0,
            symbolic_storage_nbytes(size, stride, itemsize, offset),
        )
    } else {
        let needed = compute_storage_nbytes(size, stride, itemsize)? as i64;
        (
            needed == 0,
            needed.wrapping_add(offset.wrapping_mul(itemsize as i64)),
        )
    };
    if !empty {
        let available = self_.storage().map_or(0, |s| s.nbytes()) as i64;
        torch_check!(
            total <= available,
            "setStorage: sizes {}, strides {}, storage offset {offset}, and itemsize {itemsize} requiring a storage size of {total} are out of bounds for storage of size {available}",
            fmt_dims(size),
            fmt_dims(stride)
        );
    }
    torch_check!(offset >= 0, "Tensor: invalid storage offset {offset}");
    if shape::numel(size).is_err() {
        bail!(RuntimeError, "numel: integer multiplication overflow");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// as_strided, view, alias, detach
// ---------------------------------------------------------------------------------------------

/// `as_strided` (Meta; the CPU kernel calls it): a view with explicit geometry, checked
/// against the storage. CPU tensors get the checks of PyTorch's CPU kernel (concrete sizes),
/// others those of its Meta kernel (symbolic sizes); they differ only in messages.
pub fn as_strided_tensorimpl_meta(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let offset = storage_offset.unwrap_or_else(|| self_.storage_offset());
    check_strided(self_, size, stride, offset, !self_.is_cpu())?;
    self_.as_strided_view(size, stride, offset)
}

/// `as_strided_`: gives `self` an explicit geometry over its storage.
pub fn as_strided_(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let offset = storage_offset.unwrap_or_else(|| self_.storage_offset());
    check_strided(self_, size, stride, offset, true)?;
    self_.set_geometry(size, stride, offset)?;
    Ok(self_.clone())
}

/// `view` (Meta; the CPU kernel calls it): the same elements under a new shape, when
/// `computeStride` finds strides for it.
pub fn view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    let g = self_.geometry();
    let sizes = infer_size(size, g.numel())?;
    let strides = compute_stride(g.sizes(), g.strides(), &sizes).ok_or_else(|| {
        Error::runtime(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
        )
    })?;
    self_.as_strided_view(&sizes, &strides, g.storage_offset())
}

/// `_unsafe_view`: `view` whose result autograd does not treat as a view; like PyTorch's, it
/// gets a version counter of its own.
pub fn _unsafe_view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    let v = view(self_, size)?;
    let g = v.geometry();
    let storage = v.storage().ok_or_else(|| {
        Error::runtime("Cannot create a strided view of a tensor that has no storage")
    })?;
    Tensor::from_storage(
        storage,
        g.sizes(),
        g.strides(),
        g.storage_offset(),
        v.dtype(),
    )
}

/// `view.dtype`: the same bytes read as another dtype; the last dimension scales by the ratio
/// of element sizes.
pub fn view_dtype(self_: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    let from = self_.dtype();
    if from == dtype {
        return alias(self_);
    }
    let g = ViewGeometry::of(self_);
    let (old, new) = (from.element_size() as i64, dtype.element_size() as i64);
    let what = format!(
        "to view {} as {} (different element sizes)",
        from.name(),
        dtype.name()
    );
    let mut out = g.clone();
    if old != new {
        let n = g.ndim();
        torch_check!(n != 0, "self.dim() cannot be 0 {what}");
        let last_stride = g.strides[n - 1];
        if old > new {
            let ratio = old / new;
            torch_check!(
                last_stride == 1,
                "self.stride(-1) must be 1 {what}, but got {last_stride}"
            );
            out.sizes[n - 1] = g.sizes[n - 1] * ratio;
            out.offset = g.offset * ratio;
            for s in out.strides.iter_mut().take(n - 1) {
                *s *= ratio;
            }
        } else {
            let ratio = new / old;
            torch_check!(
                g.sizes[n - 1] % ratio == 0,
                "self.size(-1) must be divisible by {ratio} {what}, but got {}",
                g.sizes[n - 1]
            );
            torch_check!(
                g.offset % ratio == 0,
                "self.storage_offset() must be divisible by {ratio} {what}, but got {}",
                g.offset
            );
            torch_check!(
                last_stride == 1,
                "self.stride(-1) must be 1 {what}, but got {last_stride}"
            );
            for (i, s) in g.strides.iter().enumerate().take(n - 1) {
                torch_check!(
                    s % ratio == 0,
                    "self.stride({i}) must be divisible by {ratio} {what}, but got {s}"
                );
            }
            out.sizes[n - 1] = g.sizes[n - 1] / ratio;
            out.offset = g.offset / ratio;
            for s in out.strides.iter_mut().take(n - 1) {
                *s /= ratio;
            }
        }
    }
    let storage = self_.storage().ok_or_else(|| {
        Error::runtime("Cannot create a strided view of a tensor that has no storage")
    })?;
    // A view with another dtype: `as_strided_view` keeps the dtype, so this view gets its own
    // version counter (see the crate report: core needs a dtype-changing view constructor).
    Tensor::from_storage(storage, &out.sizes, &out.strides, out.offset, dtype)
}

/// `alias`: a new view with the same geometry.
pub fn alias(self_: &Tensor) -> Result<Tensor> {
    ViewGeometry::of(self_).view(self_)
}

/// `detach`: an alias (the autograd layer is what cuts it from the graph).
pub fn detach(self_: &Tensor) -> Result<Tensor> {
    alias(self_)
}

/// `lift`: `self` itself, as PyTorch's kernel returns it (the same tensor object, so Python
/// gets the same object back). Under autograd the output's history is set on `self`, as in
/// PyTorch; functionalization's kernel for `lift` wraps the value instead.
pub fn lift(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

/// `lift_fresh`: `self` itself, as PyTorch's kernel returns it (not recorded as a view: its
/// base name is not a view function for autograd). Its copy is `lift_fresh_copy` (generated:
/// a contiguous clone).
pub fn lift_fresh(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

/// `detach_`: nothing to do below autograd.
pub fn detach_(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

// ---------------------------------------------------------------------------------------------
// expand, permute, transpose, t
// ---------------------------------------------------------------------------------------------

/// The legacy type string PyTorch prints in `expand`'s error (`torch.FloatTensor` for CPU
/// tensors, as Python shows it; `MetaFloatType` otherwise).
fn type_string(t: &Tensor) -> String {
    let scalar = t.dtype().name();
    if t.is_cpu() {
        format!("torch.{scalar}Tensor")
    } else {
        let device = t.device().kind().name();
        let mut backend: String = device
            .chars()
            .take(1)
            .flat_map(char::to_uppercase)
            .collect();
        backend.push_str(device.get(1..).unwrap_or(""));
        format!("{backend}{scalar}Type")
    }
}

/// `inferExpandGeometry`: expanded dimensions get stride 0, new leading ones too.
fn expand_geometry(g: &ViewGeometry, size: &[i64]) -> Result<ViewGeometry> {
    let ndim = size.len();
    let tensor_dim = g.ndim();
    if tensor_dim == 0 {
        return Ok(ViewGeometry {
            sizes: DimVec::from_slice(size),
            strides: DimVec::from_elem(0, ndim),
            offset: g.offset,
        });
    }
    let mut sizes = DimVec::from_elem(0, ndim);
    let mut strides = DimVec::from_elem(0, ndim);
    for i in (0..ndim).rev() {
        let offset = ndim - 1 - i;
        let dim = tensor_dim as i64 - 1 - offset as i64;
        let (mut sz, mut st) = if dim >= 0 {
            (g.sizes[dim as usize], g.strides[dim as usize])
        } else {
            let outer = sizes
                .get(i + 1)
                .zip(strides.get(i + 1))
                .map_or(1, |(s, t)| s * t);
            (1, outer)
        };
        let mut target = size[i];
        if target == -1 {
            torch_check!(
                dim >= 0,
                "The expanded size of the tensor ({target}) isn't allowed in a leading, non-existing dimension {i}"
            );
            target = sz;
        }
        if sz != target {
            torch_check!(
                sz == 1,
                "The expanded size of the tensor ({target}) must match the existing size ({sz}) at non-singleton dimension {i}.  Target sizes: {}.  Tensor sizes: {}",
                fmt_dims(size),
                fmt_dims(&g.sizes)
            );
            sz = target;
            st = 0;
        }
        sizes[i] = sz;
        strides[i] = st;
    }
    Ok(ViewGeometry {
        sizes,
        strides,
        offset: g.offset,
    })
}

/// `expand`: broadcasts size-1 dimensions (stride 0) and adds leading ones.
pub fn expand(self_: &Tensor, size: &[i64], implicit: bool) -> Result<Tensor> {
    let _ = implicit;
    let g = ViewGeometry::of(self_);
    torch_check!(
        size.len() >= g.ndim(),
        "expand({}{{{}}}, size={}): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
        type_string(self_),
        fmt_dims(&g.sizes),
        fmt_dims(size),
        size.len(),
        g.ndim()
    );
    let e = expand_geometry(&g, size)?;
    if shape::numel(&e.sizes).is_err() {
        bail!(RuntimeError, "numel: integer multiplication overflow");
    }
    e.view(self_)
}

/// `permute`'s geometry, with its checks.
fn permute_geometry(g: &ViewGeometry, dims: &[i64]) -> Result<ViewGeometry> {
    let ndim = g.ndim();
    torch_check!(
        ndim == dims.len(),
        "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {ndim} is not equal to len(dims) = {}",
        dims.len()
    );
    let mut seen = vec![false; ndim];
    let mut out = ViewGeometry {
        sizes: DimVec::from_elem(0, ndim),
        strides: DimVec::from_elem(0, ndim),
        offset: g.offset,
    };
    for (i, &d) in dims.iter().enumerate() {
        let d = shape::wrap_dim(d, ndim)?;
        torch_check!(!seen[d], "permute(): duplicate dims are not allowed.");
        seen[d] = true;
        out.sizes[i] = g.sizes[d];
        out.strides[i] = g.strides[d];
    }
    Ok(out)
}

/// `permute`: reorders dimensions.
pub fn permute(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    permute_geometry(&ViewGeometry::of(self_), dims)?.view(self_)
}

/// The wrapped pair of `transpose`, and the swapped geometry when the dims differ.
fn transpose_geometry(g: &ViewGeometry, dim0: i64, dim1: i64) -> Result<Option<ViewGeometry>> {
    let d0 = shape::wrap_dim(dim0, g.ndim())?;
    let d1 = shape::wrap_dim(dim1, g.ndim())?;
    if d0 == d1 {
        return Ok(None);
    }
    let mut out = g.clone();
    out.sizes.swap(d0, d1);
    out.strides.swap(d0, d1);
    Ok(Some(out))
}

/// `transpose.int`: swaps two dimensions (an alias when they are the same).
pub fn transpose(self_: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    match transpose_geometry(&ViewGeometry::of(self_), dim0, dim1)? {
        Some(g) => g.view(self_),
        None => alias(self_),
    }
}

/// `transpose_`: swaps two dimensions of `self` in place.
pub fn transpose_(self_: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    match transpose_geometry(&ViewGeometry::of(self_), dim0, dim1)? {
        Some(g) => g.apply(self_),
        None => Ok(self_.clone()),
    }
}

/// `t`'s check and its second dimension.
fn t_dims(self_: &Tensor, name: &str) -> Result<i64> {
    let n = self_.dim();
    torch_check!(
        n <= 2,
        "{name}() expects a tensor with <= 2 dimensions, but self is {n}D"
    );
    Ok(if n < 2 { 0 } else { 1 })
}

/// `t`: transposes a matrix (0-d and 1-d tensors are returned as aliases).
pub fn t(self_: &Tensor) -> Result<Tensor> {
    transpose(self_, 0, t_dims(self_, "t")?)
}

/// `t_`: in-place `t`.
pub fn t_(self_: &Tensor) -> Result<Tensor> {
    transpose_(self_, 0, t_dims(self_, "t_")?)
}

// ---------------------------------------------------------------------------------------------
// squeeze, unsqueeze
// ---------------------------------------------------------------------------------------------

/// Drops the size-1 dimensions selected by `mask` (all when `None`).
fn squeeze_geometry(g: &ViewGeometry, mask: Option<&[bool]>) -> ViewGeometry {
    let mut out = ViewGeometry {
        sizes: DimVec::new(),
        strides: DimVec::new(),
        offset: g.offset,
    };
    for d in 0..g.ndim() {
        let selected = mask.is_none_or(|m| m.get(d).copied().unwrap_or(false));
        if !selected || g.sizes[d] != 1 {
            out.sizes.push(g.sizes[d]);
            out.strides.push(g.strides[d]);
        }
    }
    out
}

/// `dim_list_to_bitset`: wraps `dims`, rejecting repeats.
fn dims_mask(dims: &[i64], ndim: usize) -> Result<Vec<bool>> {
    const MAX_DIMS: usize = 64;
    torch_check!(
        ndim <= MAX_DIMS,
        "only tensors with up to {MAX_DIMS} dims are supported"
    );
    let mut seen = vec![false; ndim.max(1)];
    for &d in dims {
        let w = shape::wrap_dim(d, ndim)?;
        torch_check!(
            !seen[w],
            "dim {w} appears multiple times in the list of dims"
        );
        seen[w] = true;
    }
    Ok(seen)
}

/// The geometry `squeeze.dim` produces (unchanged unless that dimension has size 1).
fn squeeze_dim_geometry(g: &ViewGeometry, dim: i64) -> Result<ViewGeometry> {
    let d = shape::wrap_dim(dim, g.ndim())?;
    if g.ndim() == 0 || g.sizes[d] != 1 {
        return Ok(g.clone());
    }
    let mut mask = vec![false; g.ndim()];
    mask[d] = true;
    Ok(squeeze_geometry(g, Some(&mask)))
}

/// `squeeze`: drops every size-1 dimension.
pub fn squeeze(self_: &Tensor) -> Result<Tensor> {
    squeeze_geometry(&ViewGeometry::of(self_), None).view(self_)
}

/// `squeeze.dim`: drops `dim` if it has size 1.
pub fn squeeze_dim(self_: &Tensor, dim: i64) -> Result<Tensor> {
    squeeze_dim_geometry(&ViewGeometry::of(self_), dim)?.view(self_)
}

/// `squeeze.dims`: drops those of `dim` that have size 1.
pub fn squeeze_dims(self_: &Tensor, dim: &[i64]) -> Result<Tensor> {
    let g = ViewGeometry::of(self_);
    let mask = dims_mask(dim, g.ndim())?;
    squeeze_geometry(&g, Some(&mask)).view(self_)
}

/// `squeeze_`: in-place `squeeze`.
pub fn squeeze_(self_: &Tensor) -> Result<Tensor> {
    squeeze_geometry(&ViewGeometry::of(self_), None).apply(self_)
}

/// `squeeze_.dim`: in-place `squeeze.dim`.
#[allow(non_snake_case)] // the kernel name ops.yaml gives
pub fn squeeze__dim(self_: &Tensor, dim: i64) -> Result<Tensor> {
    squeeze_dim_geometry(&ViewGeometry::of(self_), dim)?.apply(self_)
}

/// `squeeze_.dims`: in-place `squeeze.dims`.
#[allow(non_snake_case)] // the kernel name ops.yaml gives
pub fn squeeze__dims(self_: &Tensor, dim: &[i64]) -> Result<Tensor> {
    let g = ViewGeometry::of(self_);
    let mask = dims_mask(dim, g.ndim())?;
    squeeze_geometry(&g, Some(&mask)).apply(self_)
}

/// `inferUnsqueezeGeometry`: a size-1 dimension at `dim` whose stride continues the next one.
fn unsqueeze_geometry(g: &ViewGeometry, dim: i64) -> Result<ViewGeometry> {
    let d = shape::wrap_dim(dim, g.ndim() + 1)?;
    let stride = if d >= g.ndim() {
        1
    } else {
        g.sizes[d] * g.strides[d]
    };
    let mut out = g.clone();
    out.sizes.insert(d, 1);
    out.strides.insert(d, stride);
    Ok(out)
}

/// `unsqueeze`: inserts a size-1 dimension.
pub fn unsqueeze(self_: &Tensor, dim: i64) -> Result<Tensor> {
    unsqueeze_geometry(&ViewGeometry::of(self_), dim)?.view(self_)
}

/// `unsqueeze_`: in-place `unsqueeze`.
pub fn unsqueeze_(self_: &Tensor, dim: i64) -> Result<Tensor> {
    unsqueeze_geometry(&ViewGeometry::of(self_), dim)?.apply(self_)
}

// ---------------------------------------------------------------------------------------------
// slice, select, unfold, diagonal
// ---------------------------------------------------------------------------------------------

/// `slice`'s geometry: Python slicing with clamped bounds and a positive step.
fn slice_geometry(
    g: &ViewGeometry,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<ViewGeometry> {
    torch_check_index!(
        g.ndim() != 0,
        "slice() cannot be applied to a 0-dim tensor."
    );
    let d = shape::wrap_dim(dim, g.ndim())?;
    torch_check!(step > 0, "slice step must be positive");
    let size = g.sizes[d];
    let mut start = start.unwrap_or(0);
    let mut end = end.unwrap_or(i64::MAX);
    if start < 0 {
        start += size;
    }
    if end < 0 {
        end += size;
    }
    start = start.clamp(0, size);
    end = end.clamp(start, size.max(start));
    let len = end - start;
    let mut out = g.clone();
    out.offset = g.offset.wrapping_add(start.wrapping_mul(g.strides[d]));
    out.sizes[d] = len / step + i64::from(len % step != 0);
    out.strides[d] = g.strides[d].wrapping_mul(step);
    Ok(out)
}

/// `slice.Tensor`: `self[start:end:step]` along `dim`.
pub fn slice(
    self_: &Tensor,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    slice_geometry(&ViewGeometry::of(self_), dim, start, end, step)?.view(self_)
}

/// `select`'s geometry: drops `dim`, moving the offset to `index`.
fn select_geometry(g: &ViewGeometry, dim: i64, index: i64) -> Result<ViewGeometry> {
    torch_check_index!(
        g.ndim() != 0,
        "select() cannot be applied to a 0-dim tensor."
    );
    let d = shape::wrap_dim(dim, g.ndim())?;
    let size = g.sizes[d];
    torch_check_index!(
        !(size <= (-1i64).wrapping_sub(index) || size <= index),
        "select(): index {index} out of range for tensor of size {} at dimension {d}",
        fmt_dims(&g.sizes)
    );
    let index = if index < 0 { index + size } else { index };
    let mut out = g.clone();
    out.offset = g.offset + index * g.strides[d];
    out.sizes.remove(d);
    out.strides.remove(d);
    Ok(out)
}

/// `select.int`: the sub-tensor at `index` along `dim`.
pub fn select(self_: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    select_geometry(&ViewGeometry::of(self_), dim, index)?.view(self_)
}

/// `unfold` (Meta; the CPU kernel calls it): windows of `size` elements every `step` along
/// `dimension`, as a new last dimension.
pub fn unfold(self_: &Tensor, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    let g = ViewGeometry::of(self_);
    let ndim = g.ndim();
    let d = shape::wrap_dim(dimension, ndim)?;
    let max_size = if ndim == 0 { 1 } else { g.sizes[d] };
    torch_check!(
        size <= max_size,
        "maximum size for tensor at dimension {d} is {max_size} but size is {size}"
    );
    torch_check!(size >= 0, "size is {size} but must be >= 0");
    torch_check!(step > 0, "step is {step} but must be > 0");
    let mut out = g.clone();
    out.sizes.push(size);
    out.strides.push(if ndim == 0 { 1 } else { g.strides[d] });
    if d < ndim {
        out.sizes[d] = (g.sizes[d] - size) / step + 1;
        // Wrapping, as C++'s multiplication does in PyTorch: a huge step gives a dimension of
        // size 1, whose stride is never used (or a negative stride, refused by the view).
        out.strides[d] = g.strides[d].wrapping_mul(step);
    }
    out.view(self_)
}

/// `diagonal`'s geometry: drops `dim1` and `dim2`, appending the diagonal as the last
/// dimension (stride = sum of their strides).
fn diagonal_geometry(g: &ViewGeometry, offset: i64, dim1: i64, dim2: i64) -> Result<ViewGeometry> {
    let d1 = shape::wrap_dim(dim1, g.ndim())?;
    let d2 = shape::wrap_dim(dim2, g.ndim())?;
    torch_check!(
        d1 != d2,
        "diagonal dimensions cannot be identical {dim1}, {dim2}"
    );
    let (s1, s2) = (g.sizes[d1], g.sizes[d2]);
    let diag_size = if offset >= 0 {
        s1.min(s2.saturating_sub(offset)).max(0)
    } else {
        s1.saturating_add(offset).min(s2).max(0)
    };
    let mut out = g.clone();
    if diag_size != 0 {
        out.offset = if offset >= 0 {
            g.offset + offset * g.strides[d2]
        } else {
            g.offset - offset * g.strides[d1]
        };
    }
    let (hi, lo) = (d1.max(d2), d1.min(d2));
    out.sizes.remove(hi);
    out.strides.remove(hi);
    out.sizes.remove(lo);
    out.strides.remove(lo);
    out.sizes.push(diag_size);
    out.strides.push(g.strides[d1] + g.strides[d2]);
    Ok(out)
}

/// `diagonal`: the `offset`-th diagonal of the `(dim1, dim2)` planes.
pub fn diagonal(self_: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    diagonal_geometry(&ViewGeometry::of(self_), offset, dim1, dim2)?.view(self_)
}

// ---------------------------------------------------------------------------------------------
// split, split_with_sizes, unbind
// ---------------------------------------------------------------------------------------------

/// `split.Tensor`: pieces of `split_size` along `dim` (the last one may be smaller).
pub fn split_tensor(self_: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    let g = ViewGeometry::of(self_);
    torch_check!(
        g.ndim() != 0,
        "split expects at least a 1-dimensional tensor"
    );
    torch_check!(
        split_size >= 0,
        "split expects split_size be non-negative, but got split_size={split_size}"
    );
    let (d, dim_size) = size_at(&g, dim)?;
    torch_check!(
        split_size > 0 || dim_size == 0,
        "split_size can only be 0 if dimension size is 0, but got dimension size of {dim_size}"
    );
    let num_splits = if split_size == 0 {
        1
    } else {
        (dim_size / split_size + i64::from(dim_size % split_size != 0)).max(1)
    };
    let last = split_size - (split_size * num_splits - dim_size);
    (0..num_splits)
        .map(|i| {
            let length = if i < num_splits - 1 { split_size } else { last };
            narrow_geometry(&g, d, i * split_size, length)?.view(self_)
        })
        .collect()
}

/// `narrow`'s geometry without its argument checks (callers guarantee the range).
fn narrow_geometry(g: &ViewGeometry, d: usize, start: i64, length: i64) -> Result<ViewGeometry> {
    // Saturating: the slice clamps its end to the dimension's size anyway.
    slice_geometry(
        g,
        d as i64,
        Some(start),
        Some(start.saturating_add(length)),
        1,
    )
}

/// `split_with_sizes`: consecutive pieces of the given sizes along `dim`.
pub fn split_with_sizes(self_: &Tensor, split_sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    let g = ViewGeometry::of(self_);
    torch_check!(
        g.ndim() != 0,
        "split expects at least a 1-dimensional tensor"
    );
    let (d, dim_size) = size_at(&g, dim)?;
    let mut start: Option<i64> = Some(0);
    let mut pieces = Vec::with_capacity(split_sizes.len());
    for &length in split_sizes {
        torch_check!(
            length >= 0,
            "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={}",
            fmt_dims(split_sizes)
        );
        let from = start.unwrap_or(i64::MAX);
        pieces.push(narrow_geometry(&g, d, from, length)?.view(self_)?);
        // A sum past i64::MAX cannot be the dimension's size.
        start = start.and_then(|s| s.checked_add(length));
    }
    torch_check!(
        start == Some(dim_size),
        "split_with_sizes expects split_sizes to sum exactly to {dim_size} (input tensor's size at dimension {d}), but got split_sizes={}",
        fmt_dims(split_sizes)
    );
    Ok(pieces)
}

/// `unbind.int`: every sub-tensor along `dim`.
pub fn unbind(self_: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    let g = ViewGeometry::of(self_);
    let (d, size) = size_at(&g, dim)?;
    (0..size)
        .map(|i| select_geometry(&g, d as i64, i)?.view(self_))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// resize_
// ---------------------------------------------------------------------------------------------

/// Strides of a new tensor of `sizes` in `format` (`empty_tensor_restride`).
pub(crate) fn strides_for_format(sizes: &[i64], format: MemoryFormat) -> Result<DimVec> {
    let order: &[usize] = match format {
        MemoryFormat::Contiguous => return Ok(shape::contiguous_strides(sizes)),
        MemoryFormat::Preserve => bail!(RuntimeError, "unsupported memory format option Preserve"),
        MemoryFormat::ChannelsLast => {
            torch_check!(
                sizes.len() == 4,
                "required rank 4 tensor to use channels_last format"
            );
            &[1, 3, 2, 0]
        }
        MemoryFormat::ChannelsLast3d => {
            torch_check!(
                sizes.len() == 5,
                "required rank 5 tensor to use channels_last_3d format"
            );
            &[1, 4, 3, 2, 0]
        }
    };
    // Unlike contiguous strides, PyTorch does not treat size-0 dimensions as 1 here.
    let mut strides = DimVec::from_elem(0, sizes.len());
    let mut acc: i64 = 1;
    for &d in order {
        strides[d] = acc;
        acc = acc.saturating_mul(sizes[d]);
    }
    Ok(strides)
}

/// `resize_` (Meta and CPU): new sizes, contiguous (or in `memory_format`), growing the
/// storage when it is too small; a tensor that already has the sizes keeps its strides.
pub fn resize_(
    self_: &Tensor,
    size: &[i64],
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    if shape::numel(size).is_err() {
        bail!(RuntimeError, "numel: integer multiplication overflow");
    }
    if self_.sizes().as_slice() != size {
        self_.resize_contiguous(size)?;
    }
    if let Some(format) = memory_format {
        torch_check!(
            format != MemoryFormat::Preserve,
            "Unsupported memory formatPreserve"
        );
        let strides = strides_for_format(size, format)?;
        self_.set_geometry(size, &strides, self_.storage_offset())?;
    }
    Ok(self_.clone())
}

/// `set_.source_Tensor` on Meta tensors: `self` takes `source`'s sizes, strides and storage
/// offset, after PyTorch's checks (`switchyard_ops::meta::set_tensor_checks`).
///
/// A tensor's storage is fixed at creation in this runtime, so `self` keeps its own Meta
/// storage, grown to `source`'s byte size if smaller (as PyTorch's `self` would then hold
/// `source`'s storage): sizes, strides, offset and `nbytes` are PyTorch's, but unless they
/// already shared it, `self` does not become an alias of `source`.
pub fn set_tensor_meta(self_: &Tensor, source: &Tensor) -> Result<Tensor> {
    crate::meta::set_tensor_checks(self_, source)?;
    if self_.is_same(source) {
        return Ok(self_.clone());
    }
    if !self_.is_alias_of(source)
        && let (Some(mine), Some(theirs)) = (self_.storage_ref(), source.storage_ref())
        && mine.nbytes() < theirs.nbytes()
    {
        mine.resize(theirs.nbytes())?;
    }
    let g = source.geometry();
    self_.set_geometry(g.sizes(), g.strides(), g.storage_offset())?;
    Ok(self_.clone())
}

// ---------------------------------------------------------------------------------------------
// Composite-implicit views (they call other operators)
// ---------------------------------------------------------------------------------------------

/// Calls to the operators the composite-implicit kernels decompose into, through the
/// dispatcher, so that autograd (and functionalization, and backend overrides) see the
/// constituent operators: a `reshape` of a tensor that requires grad records a
/// `ViewBackward0`, as in PyTorch.
mod redispatch {
    use crate::op;
    use switchyard_core::{MemoryFormat, Result, Tensor};

    pub(super) fn view(t: &Tensor, size: &[i64]) -> Result<Tensor> {
        op::view::call(t, size)
    }

    pub(super) fn unsafe_view(t: &Tensor, size: &[i64]) -> Result<Tensor> {
        op::_unsafe_view::call(t, size)
    }

    pub(super) fn reshape(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
        op::reshape::call(t, shape)
    }

    pub(super) fn expand(t: &Tensor, size: &[i64]) -> Result<Tensor> {
        op::expand::call(t, size, false)
    }

    pub(super) fn slice(t: &Tensor, dim: i64, start: i64, end: i64) -> Result<Tensor> {
        op::slice_Tensor::call(t, dim, Some(start), Some(end), 1)
    }

    pub(super) fn permute(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
        op::permute::call(t, dims)
    }

    pub(super) fn alias(t: &Tensor) -> Result<Tensor> {
        op::alias::call(t)
    }

    pub(super) fn split(t: &Tensor, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
        op::split_Tensor::call(t, split_size, dim)
    }

    pub(super) fn split_with_sizes(t: &Tensor, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        op::split_with_sizes::call(t, sizes, dim)
    }

    pub(super) fn clone_contiguous(t: &Tensor) -> Result<Tensor> {
        op::clone::call(t, Some(MemoryFormat::Contiguous))
    }

    pub(super) fn copy_(dst: &Tensor, src: &Tensor) -> Result<Tensor> {
        op::copy_::call(dst, src, false)
    }
}

/// `reshape`: a view when `computeStride` allows one, else a contiguous copy.
pub fn reshape(self_: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let g = self_.geometry();
    if g.is_contiguous() {
        return redispatch::view(self_, shape);
    }
    let sizes = infer_size(shape, g.numel())?;
    if compute_stride(g.sizes(), g.strides(), &sizes).is_some() {
        return redispatch::view(self_, &sizes);
    }
    let copy = redispatch::clone_contiguous(self_)?;
    redispatch::unsafe_view(&copy, &sizes)
}

/// `reshape_as`: `reshape` to `other`'s sizes.
pub fn reshape_as(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    redispatch::reshape(self_, &other.sizes())
}

/// `view_as`: `view` to `other`'s sizes.
pub fn view_as(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    redispatch::view(self_, &other.sizes())
}

/// `expand_as`: `expand` to `other`'s sizes.
pub fn expand_as(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    redispatch::expand(self_, &other.sizes())
}

/// `flatten.using_ints`: merges dimensions `start_dim..=end_dim` (a reshape).
pub fn flatten(self_: &Tensor, start_dim: i64, end_dim: i64) -> Result<Tensor> {
    let sizes = self_.sizes();
    let start = shape::wrap_dim(start_dim, sizes.len())?;
    let end = shape::wrap_dim(end_dim, sizes.len())?;
    torch_check!(
        start <= end,
        "flatten() has invalid args: start_dim cannot come after end_dim"
    );
    if sizes.is_empty() {
        return redispatch::reshape(self_, &[1]);
    }
    if start == end {
        return Ok(self_.clone());
    }
    let merged: i64 = sizes[start..=end].iter().product();
    let mut shape = DimVec::from_slice(&sizes[..start]);
    shape.push(merged);
    shape.extend_from_slice(&sizes[end + 1..]);
    reshape(self_, &shape)
}

/// `narrow`: `length` elements from `start` along `dim` (a slice).
pub fn narrow(self_: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    let g = ViewGeometry::of(self_);
    torch_check!(
        g.ndim() > 0,
        "narrow() cannot be applied to a 0-dim tensor."
    );
    torch_check!(length >= 0, "narrow(): length must be non-negative.");
    let (d, cur) = size_at(&g, dim)?;
    torch_check_index!(
        -cur <= start && start <= cur,
        "start out of range (expected to be in range of [{}, {cur}], but got {start})",
        -cur
    );
    let start = if start < 0 { start + cur } else { start };
    torch_check!(
        start <= cur - length,
        "start ({start}) + length ({length}) exceeds dimension size ({cur})."
    );
    redispatch::slice(self_, d as i64, start, start + length)
}

/// `narrow_copy` on Meta: the checks of PyTorch's CPU kernel, a contiguous result.
pub fn narrow_copy_meta(self_: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    let n = crate::meta::narrow_copy_checks(self_, dim, start, length, self_.dtype())?;
    Tensor::allocate(&n.sizes, self_.dtype(), self_.device())
}

/// `narrow_copy.out` on Meta: the CPU kernel's checks and resize.
pub fn narrow_copy_meta_out(
    self_: &Tensor,
    dim: i64,
    start: i64,
    length: i64,
    out: &Tensor,
) -> Result<Tensor> {
    let n = crate::meta::narrow_copy_checks(self_, dim, start, length, out.dtype())?;
    crate::meta::narrow_copy_resize_out(out, &n.sizes)?;
    Ok(out.clone())
}

/// `movedim.intlist`: moves dimensions `source` to positions `destination`, keeping the
/// others in order (a permute).
pub fn movedim_intlist(self_: &Tensor, source: &[i64], destination: &[i64]) -> Result<Tensor> {
    torch_check!(
        source.len() == destination.len(),
        "movedim: Invalid source or destination dims: source ({} dims) should contain the same number of dims as destination ({} dims)",
        fmt_dims(source),
        fmt_dims(destination)
    );
    let ndim = self_.dim();
    let wrap =
        |v: &[i64]| -> Result<Vec<usize>> { v.iter().map(|d| shape::wrap_dim(*d, ndim)).collect() };
    let (src, dst) = (wrap(source)?, wrap(destination)?);
    let unique = |v: &[usize]| {
        let mut c = v.to_vec();
        c.sort_unstable();
        c.windows(2).all(|w| w[0] != w[1])
    };
    torch_check!(
        unique(&src),
        "movedim: repeated dim in `source` ({})",
        fmt_dims(source)
    );
    torch_check!(
        unique(&dst),
        "movedim: repeated dim in `destination` ({})",
        fmt_dims(destination)
    );
    if ndim == 0 {
        return redispatch::alias(self_);
    }
    let mut order: Vec<Option<i64>> = vec![None; ndim];
    for (s, d) in src.iter().zip(&dst) {
        order[*d] = Some(*s as i64);
    }
    let mut rest_src = (0..ndim).filter(|d| !src.contains(d));
    for slot in order.iter_mut().filter(|o| o.is_none()) {
        *slot = rest_src.next().map(|d| d as i64);
    }
    let order: Vec<i64> = order.into_iter().map(|o| o.unwrap_or(0)).collect();
    redispatch::permute(self_, &order)
}

/// `movedim.int`: moves one dimension.
pub fn movedim_int(self_: &Tensor, source: i64, destination: i64) -> Result<Tensor> {
    movedim_intlist(self_, &[source], &[destination])
}

/// `chunk`: `chunks` nearly equal pieces along `dim` (fewer when the size does not allow).
pub fn chunk(self_: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    torch_check!(
        self_.dim() > 0,
        "chunk expects at least a 1-dimensional tensor"
    );
    torch_check!(
        chunks > 0,
        "chunk expects `chunks` to be greater than 0, got: {chunks}"
    );
    let dim_size = self_.size(dim)?;
    let split_size = dim_size / chunks + i64::from(dim_size % chunks != 0);
    if split_size == 0 && dim_size == 0 {
        // Every piece is empty: split_with_sizes keeps the requested number of chunks.
        let n = usize::try_from(chunks).unwrap_or(0);
        let mut sizes: Vec<i64> = Vec::new();
        sizes
            .try_reserve_exact(n)
            .map_err(|_| Error::runtime(format!("chunk: cannot make {chunks} chunks")))?;
        sizes.resize(n, 0);
        return redispatch::split_with_sizes(self_, &sizes, dim);
    }
    redispatch::split(self_, split_size, dim)
}

/// `split.sizes`: `split_with_sizes`.
pub fn split(self_: &Tensor, split_size: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    redispatch::split_with_sizes(self_, split_size, dim)
}

// ---------------------------------------------------------------------------------------------
// *_copy out= kernels with non-standard bodies
// ---------------------------------------------------------------------------------------------

/// Resizes and type-checks `out[i]` against `result`, then copies (the loop of PyTorch's
/// hand-written list out= view-copy kernels).
fn copy_pieces_to_out(name: &str, out: &[Tensor], pieces: &[Tensor], resize: bool) -> Result<()> {
    torch_check!(
        out.len() == pieces.len(),
        "{name} expected an out= argument of size {}, got size {}",
        pieces.len(),
        out.len()
    );
    for (o, p) in out.iter().zip(pieces) {
        if resize {
            crate::structured::resize_output(o, &p.sizes())?;
            torch_check!(
                o.dtype() == p.dtype(),
                "Expected out tensor to have dtype {}, but got {} instead",
                p.dtype().type_meta_name(),
                o.dtype().type_meta_name()
            );
            torch_check!(
                o.device() == p.device(),
                "Expected out tensor to have device {}, but got {} instead",
                p.device(),
                o.device()
            );
        }
        redispatch::copy_(o, p)?;
    }
    Ok(())
}

/// `unbind_copy.int_out`: each sub-tensor along `dim` into its (resized) output.
pub fn unbind_copy_int_out(self_: &Tensor, dim: i64, out: &[Tensor]) -> Result<()> {
    copy_pieces_to_out("unbind_copy_int_out", out, &unbind(self_, dim)?, true)
}

/// `split_copy.Tensor_out`: each piece of `split` copied into its output (no resizing:
/// outputs must be broadcast-compatible, as PyTorch's generated kernel requires).
#[allow(non_snake_case)]
pub fn split_copy_Tensor_out(
    self_: &Tensor,
    split_size: i64,
    dim: i64,
    out: &[Tensor],
) -> Result<()> {
    let pieces = split_tensor(self_, split_size, dim)?;
    copy_pieces_to_out("split_copy_Tensor_out()", out, &pieces, false)
}

/// `split_with_sizes_copy.out`: each piece into its (resized) output.
pub fn split_with_sizes_copy_out(
    self_: &Tensor,
    split_sizes: &[i64],
    dim: i64,
    out: &[Tensor],
) -> Result<()> {
    let pieces = split_with_sizes(self_, split_sizes, dim)?;
    copy_pieces_to_out("split_with_sizes_copy_out", out, &pieces, true)
}
