//! Checks of the view-copy operators with their own CPU kernels, shared by those kernels and
//! their Meta kernels so that both refuse the same calls with the same words.

use switchyard_core::shape::wrap_dim;
use switchyard_core::{Result, ScalarType, Tensor, torch_check, torch_check_index};

/// `set_.source_Tensor`'s checks, shared by its CPU and Meta kernels, in PyTorch's order and
/// words: the dtypes must match (the check of PyTorch's Python `Tensor.set_`; its ATen kernel
/// would reinterpret the bytes), then the devices (`checkSetStorage`).
pub fn set_tensor_checks(self_: &Tensor, source: &Tensor) -> Result<()> {
    torch_check!(
        self_.dtype() == source.dtype(),
        "Could not set tensor of type {} to a tensor of type {}",
        source.dtype().type_meta_name(),
        self_.dtype().type_meta_name()
    );
    torch_check!(
        self_.device() == source.device(),
        "Attempted to set the storage of a tensor on device \"{}\" to a storage on different device \"{}\".  This is no longer allowed; the devices must match.",
        self_.device(),
        source.device()
    );
    Ok(())
}

/// What `narrow_copy` copies: `self[.., start..start + length, ..]` along `dim`, into an output
/// of `sizes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NarrowCopy {
    /// The wrapped dimension.
    pub dim: usize,
    /// The wrapped (non-negative) start.
    pub start: i64,
    /// The output's sizes: `self`'s, with `length` at `dim`.
    pub sizes: Vec<i64>,
}

/// `narrow_copy`'s checks, in the order and words of PyTorch's CPU kernel
/// (`narrow_copy_dense_cpu_out`): a 0-dim `self`, an output of another dtype, a dimension out
/// of range (a negative one wraps as usual; a positive one fails PyTorch's bare check), a
/// start outside `[-size, size]`, a length that does not fit. PyTorch's Meta kernel (its
/// composite, `narrow` then `clone`) words some of these differently; here the Meta kernel
/// gives the CPU kernel's answers.
pub fn narrow_copy_checks(
    self_: &Tensor,
    dim: i64,
    start: i64,
    length: i64,
    out_dtype: ScalarType,
) -> Result<NarrowCopy> {
    let ndim = self_.dim();
    torch_check!(ndim > 0, "narrow() cannot be applied to a 0-dim tensor.");
    torch_check!(
        self_.dtype() == out_dtype,
        "Expected self.dtype() == output.dtype() to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)"
    );
    let dim = if dim < 0 {
        wrap_dim(dim, ndim)?
    } else {
        torch_check!(
            dim < ndim as i64,
            "Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)"
        );
        dim as usize
    };
    let mut sizes = self_.sizes().to_vec();
    let cur = sizes[dim];
    torch_check_index!(
        -cur <= start && start <= cur,
        "start out of range (expected to be in range of [{}, {cur}], but got {start})",
        -cur
    );
    let start = if start < 0 { start + cur } else { start };
    // `cur - length` cannot overflow once `length >= 0` (both are non-negative).
    torch_check!(
        length >= 0 && start <= cur - length,
        "start ({start}) + length ({length}) exceeds dimension size ({cur})."
    );
    sizes[dim] = length;
    Ok(NarrowCopy { dim, start, sizes })
}

/// Resizes `narrow_copy.out`'s output as PyTorch's kernel does (`resize_`: nothing changes
/// when the sizes already match, else contiguous; no deprecation warning).
pub fn narrow_copy_resize_out(out: &Tensor, sizes: &[i64]) -> Result<()> {
    if out.with_sizes(|current| current != sizes) {
        out.resize_contiguous(sizes)?;
    }
    Ok(())
}
