//! Shape arithmetic: broadcasting, strides, contiguity, dimension wrapping, sizes checks.

use crate::{Error, Result, bail};
use smallvec::SmallVec;

/// A list of sizes or strides; up to six dimensions live inline without allocating.
pub type DimVec = SmallVec<[i64; 6]>;

/// Formats a list as PyTorch prints `IntArrayRef`s: `[2, 3]`.
pub fn fmt_dims(dims: &[i64]) -> String {
    let parts: Vec<String> = dims.iter().map(i64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// Whether `shape` broadcasts to `desired` (PyTorch's `is_expandable_to`): aligned from the
/// right, each dimension equals the desired one or is 1, and there are no more of them.
pub fn is_expandable_to(shape: &[i64], desired: &[i64]) -> bool {
    shape.len() <= desired.len()
        && shape
            .iter()
            .rev()
            .zip(desired.iter().rev())
            .all(|(&s, &d)| s == d || s == 1)
}

/// Formats a shape as a Python tuple: `(2, 3)`, `(0,)`, `()`.
pub fn fmt_tuple(dims: &[i64]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => {
            let parts: Vec<String> = dims.iter().map(i64::to_string).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// The broadcast shape of `a` and `b` (`infer_size`), with PyTorch's error for incompatible
/// sizes: "The size of tensor a (3) must match the size of tensor b (4) at non-singleton
/// dimension 1".
pub fn infer_size(a: &[i64], b: &[i64]) -> Result<DimVec> {
    let ndim = a.len().max(b.len());
    let mut out = DimVec::from_elem(0, ndim);
    for i in (0..ndim).rev() {
        let offset = ndim - 1 - i;
        let size_a = if offset < a.len() {
            a[a.len() - 1 - offset]
        } else {
            1
        };
        let size_b = if offset < b.len() {
            b[b.len() - 1 - offset]
        } else {
            1
        };
        if size_a != size_b && size_a != 1 && size_b != 1 {
            bail!(
                RuntimeError,
                "The size of tensor a ({size_a}) must match the size of tensor b ({size_b}) at non-singleton dimension {i}"
            );
        }
        out[i] = if size_a == 1 { size_b } else { size_a };
    }
    Ok(out)
}

/// Broadcasts any number of shapes.
pub fn infer_size_many<'a>(shapes: impl IntoIterator<Item = &'a [i64]>) -> Result<DimVec> {
    let mut out = DimVec::new();
    for s in shapes {
        out = infer_size(&out, s)?;
    }
    Ok(out)
}

/// Whether two shapes (or stride lists) are equal. A loop over the few dimensions: slice
/// equality compiles to a `memcmp` call, which showed in the profile of tiny operator calls.
#[inline]
pub fn same_dims(a: &[i64], b: &[i64]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut equal = true;
    for i in 0..a.len() {
        equal &= a[i] == b[i];
    }
    equal
}

/// Checks that no size is negative ("Trying to create tensor with negative dimension -1:
/// [-1, 2]").
pub fn check_nonnegative(sizes: &[i64]) -> Result<()> {
    if let Some(d) = sizes.iter().find(|s| **s < 0) {
        bail!(
            RuntimeError,
            "Trying to create tensor with negative dimension {d}: {}",
            fmt_dims(sizes)
        );
    }
    Ok(())
}

/// The product of `sizes` as c10's `safe_multiplies_u64` computes it (in `u64`, flagging an
/// overflow at any step, even one a later zero size would cancel), `None` on overflow or
/// when the product exceeds `i64::MAX`. The sizes must be non-negative.
fn checked_product(sizes: &[i64]) -> Option<u64> {
    let mut product: u64 = 1;
    let mut overflowed = false;
    for &s in sizes {
        let (p, o) = product.overflowing_mul(s as u64);
        product = p;
        overflowed |= o;
    }
    (!overflowed && product <= STORAGE_MAX).then_some(product)
}

/// The largest storage size in bytes (PyTorch's `storage_max()`: sizes must fit both
/// `int64_t` and `size_t`).
pub const STORAGE_MAX: u64 = i64::MAX as u64;

/// The number of elements of a shape, checking for negative sizes ("Trying to create tensor
/// with negative dimension -1: [-1, 2]") and overflow ("numel: integer multiplication
/// overflow", c10's `safe_compute_numel`).
pub fn numel(sizes: &[i64]) -> Result<i64> {
    check_nonnegative(sizes)?;
    match checked_product(sizes) {
        Some(n) => Ok(n as i64),
        None => bail!(RuntimeError, "numel: integer multiplication overflow"),
    }
}

/// The bytes a contiguous tensor of `sizes` needs (PyTorch's
/// `computeStorageNbytesContiguous`): "Storage size calculation overflowed with sizes=[...]"
/// when the element count or the byte count overflows or exceeds [`STORAGE_MAX`]. The sizes
/// must be non-negative ([`check_nonnegative`]).
pub fn storage_nbytes_contiguous(sizes: &[i64], itemsize: usize) -> Result<usize> {
    checked_product(sizes)
        .and_then(|n| n.checked_mul(itemsize as u64))
        .filter(|n| *n <= STORAGE_MAX)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            Error::runtime(format!(
                "Storage size calculation overflowed with sizes={}",
                fmt_dims(sizes)
            ))
        })
}

/// Row-major strides for `sizes` (dimensions of size 0 count as 1, as PyTorch does), with
/// c10's check: "Stride calculation overflowed". Only shapes with a zero size can get here
/// with an overflow: otherwise every stride is at most the element count.
pub fn checked_contiguous_strides(sizes: &[i64]) -> Result<DimVec> {
    let mut strides = DimVec::from_elem(1, sizes.len());
    let mut acc: i64 = 1;
    let mut overflowed = false;
    for i in (0..sizes.len()).rev() {
        strides[i] = acc;
        // The last product is not a stride: it may overflow freely.
        if i > 0 {
            let (p, o) = acc.overflowing_mul(sizes[i].max(1));
            acc = p;
            overflowed |= o;
        }
    }
    if overflowed {
        bail!(RuntimeError, "Stride calculation overflowed");
    }
    Ok(strides)
}

/// Row-major strides for `sizes` (dimensions of size 0 count as 1, as PyTorch does),
/// saturating instead of overflowing: for shapes already checked (an existing tensor's, or
/// through [`checked_contiguous_strides`]).
pub fn contiguous_strides(sizes: &[i64]) -> DimVec {
    let mut strides = DimVec::from_elem(1, sizes.len());
    let mut acc: i64 = 1;
    for i in (0..sizes.len()).rev() {
        strides[i] = acc;
        acc = acc.saturating_mul(sizes[i].max(1));
    }
    strides
}

/// NHWC strides for a 4-d shape (NDHWC for 5-d).
pub fn channels_last_strides(sizes: &[i64]) -> Result<DimVec> {
    let order: &[usize] = match sizes.len() {
        4 => &[1, 3, 2, 0],
        5 => &[1, 4, 3, 2, 0],
        n => bail!(
            RuntimeError,
            "required rank 4 tensor to use channels_last format (got rank {n})"
        ),
    };
    let mut strides = DimVec::from_elem(0, sizes.len());
    let mut acc: i64 = 1;
    for &d in order {
        strides[d] = acc;
        acc = acc.saturating_mul(sizes[d].max(1));
    }
    Ok(strides)
}

/// Whether `(sizes, strides)` is row-major contiguous (size-1 dimensions may have any
/// stride; empty tensors are contiguous), as PyTorch's `compute_contiguous`.
pub fn is_contiguous(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.contains(&0) {
        return true;
    }
    let mut expected: i64 = 1;
    for (size, stride) in sizes.iter().zip(strides).rev() {
        if *size == 1 {
            continue;
        }
        if *stride != expected {
            return false;
        }
        expected = expected.saturating_mul(*size);
    }
    true
}

/// Whether a 4-d `(sizes, strides)` is channels-last contiguous.
pub fn is_channels_last_contiguous(sizes: &[i64], strides: &[i64]) -> bool {
    if sizes.len() != 4 {
        return false;
    }
    if sizes.contains(&0) {
        return true;
    }
    let mut expected: i64 = 1;
    for d in [1usize, 3, 2, 0] {
        if sizes[d] == 1 {
            continue;
        }
        if strides[d] != expected {
            return false;
        }
        expected = expected.saturating_mul(sizes[d]);
    }
    true
}

/// Wraps a possibly negative dimension into `0..ndim` (`maybe_wrap_dim`). A 0-dim tensor
/// accepts dims `-1` and `0`. Error (IndexError): "Dimension out of range (expected to be in
/// range of [-2, 1], but got 3)".
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = (ndim.max(1)) as i64;
    let (min, max) = (-n, n - 1);
    if dim < min || dim > max {
        bail!(
            IndexError,
            "Dimension out of range (expected to be in range of [{min}, {max}], but got {dim})"
        );
    }
    Ok(if dim < 0 {
        (dim + n) as usize
    } else {
        dim as usize
    })
}

/// The number of storage elements a view needs: `offset + Σ (size-1)·stride + 1`, or 0 for
/// an empty view. Errors on negative strides or offsets and on overflow (PyTorch's
/// `computeStorageNbytes`: "Storage size calculation overflowed with sizes=[..] and
/// strides=[..]").
pub fn required_storage_elements(sizes: &[i64], strides: &[i64], offset: i64) -> Result<i64> {
    if sizes.len() != strides.len() {
        bail!(
            RuntimeError,
            "mismatch in length of strides and shape: sizes {} and strides {}",
            fmt_dims(sizes),
            fmt_dims(strides)
        );
    }
    check_nonnegative(sizes)?;
    if offset < 0 {
        bail!(RuntimeError, "Tensor: invalid storage offset {offset}");
    }
    if let Some(s) = strides.iter().find(|s| **s < 0) {
        let _ = s;
        bail!(
            RuntimeError,
            "as_strided: Negative strides are not supported at the moment, got strides: {}",
            fmt_dims(strides)
        );
    }
    if sizes.contains(&0) {
        return Ok(0);
    }
    let overflow = || {
        Error::runtime(format!(
            "Storage size calculation overflowed with sizes={} and strides={}",
            fmt_dims(sizes),
            fmt_dims(strides)
        ))
    };
    let mut last: i64 = offset;
    for (size, stride) in sizes.iter().zip(strides) {
        let span = (size - 1).checked_mul(*stride).ok_or_else(overflow)?;
        last = last.checked_add(span).ok_or_else(overflow)?;
    }
    last.checked_add(1).ok_or_else(overflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_dims_agrees_with_slice_equality() {
        let shapes: [&[i64]; 7] = [&[], &[0], &[3], &[3, 4], &[4, 3], &[3, 4, 1], &[3, 4, 5]];
        for a in shapes {
            for b in shapes {
                assert_eq!(same_dims(a, b), a == b, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn broadcasting() {
        assert_eq!(infer_size(&[1, 3], &[4, 1]).unwrap().as_slice(), &[4, 3]);
        assert_eq!(
            infer_size(&[5, 1, 3], &[4, 3]).unwrap().as_slice(),
            &[5, 4, 3]
        );
        assert_eq!(infer_size(&[], &[2, 3]).unwrap().as_slice(), &[2, 3]);
        assert_eq!(infer_size(&[0], &[1]).unwrap().as_slice(), &[0]);
        let e = infer_size(&[2, 3], &[2, 4]).unwrap_err();
        assert_eq!(
            e.message(),
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
        );
    }

    #[test]
    fn strides_and_contiguity() {
        assert_eq!(contiguous_strides(&[2, 3, 4]).as_slice(), &[12, 4, 1]);
        assert_eq!(contiguous_strides(&[2, 0, 4]).as_slice(), &[4, 4, 1]);
        assert!(is_contiguous(&[2, 3], &[3, 1]));
        assert!(!is_contiguous(&[2, 3], &[1, 2]));
        assert!(is_contiguous(&[2, 1, 3], &[3, 99, 1]));
        assert!(is_contiguous(&[0, 3], &[7, 7]));
        assert_eq!(
            channels_last_strides(&[2, 3, 4, 5]).unwrap().as_slice(),
            &[60, 1, 15, 3]
        );
        assert!(is_channels_last_contiguous(&[2, 3, 4, 5], &[60, 1, 15, 3]));
    }

    /// c10's overflow rules: products in `u64` flag an overflow at any step (even when a later
    /// zero cancels it), results above `i64::MAX` overflow, and contiguous strides of an empty
    /// shape can overflow although its element count is zero.
    #[test]
    fn size_products_and_strides_overflow_like_c10() {
        let storage = |sizes: &[i64], item| storage_nbytes_contiguous(sizes, item);
        assert_eq!(storage(&[2, 3], 4).unwrap(), 24);
        assert_eq!(storage(&[], 8).unwrap(), 8);
        // 2^62 * 4 overflows u64 before the zero: an error, as in PyTorch.
        assert_eq!(
            storage(&[1 << 62, 4, 0], 4).unwrap_err().message(),
            "Storage size calculation overflowed with sizes=[4611686018427387904, 4, 0]"
        );
        // 2^62 * 2 = 2^63 fits u64, and the zero makes it 0: fine.
        assert_eq!(storage(&[1 << 62, 2, 0], 4).unwrap(), 0);
        // Elements fit, bytes exceed i64::MAX.
        assert!(storage(&[1 << 61], 4).is_err());
        assert_eq!(storage(&[(1 << 61) - 1], 4).unwrap(), (1usize << 63) - 4);
        assert_eq!(numel(&[1 << 62, 2, 0]).unwrap(), 0);
        assert_eq!(numel(&[i64::MAX]).unwrap(), i64::MAX);
        assert!(numel(&[1 << 62, 2]).is_err());
        assert_eq!(
            checked_contiguous_strides(&[0, 1 << 62, 4])
                .unwrap_err()
                .message(),
            "Stride calculation overflowed"
        );
        assert_eq!(
            checked_contiguous_strides(&[1 << 62, 4, 0])
                .unwrap()
                .as_slice(),
            &[4, 1, 1]
        );
        assert_eq!(
            checked_contiguous_strides(&[i64::MAX, 1])
                .unwrap()
                .as_slice(),
            &[1, 1]
        );
        assert_eq!(
            required_storage_elements(&[2, 2], &[1 << 62, 1 << 62], 0)
                .unwrap_err()
                .message(),
            "Storage size calculation overflowed with sizes=[2, 2] and strides=[4611686018427387904, 4611686018427387904]"
        );
    }

    #[test]
    fn dims_and_sizes() {
        assert_eq!(wrap_dim(-1, 3).unwrap(), 2);
        assert_eq!(wrap_dim(0, 0).unwrap(), 0);
        assert_eq!(wrap_dim(-1, 0).unwrap(), 0);
        let e = wrap_dim(3, 2).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::IndexError);
        assert_eq!(
            e.message(),
            "Dimension out of range (expected to be in range of [-2, 1], but got 3)"
        );
        assert_eq!(
            numel(&[-1, 2]).unwrap_err().message(),
            "Trying to create tensor with negative dimension -1: [-1, 2]"
        );
        assert_eq!(
            numel(&[1 << 40, 1 << 40]).unwrap_err().message(),
            "numel: integer multiplication overflow"
        );
        assert_eq!(required_storage_elements(&[2, 3], &[3, 1], 2).unwrap(), 8);
        assert_eq!(required_storage_elements(&[2, 0], &[3, 1], 2).unwrap(), 0);
        assert_eq!(fmt_tuple(&[0]), "(0,)");
        assert_eq!(fmt_tuple(&[2, 3]), "(2, 3)");
    }
}
