//! Fallible host allocation: no allocation sized by a user's numbers may abort the process.
//!
//! Rust's `Vec` aborts when the allocator refuses memory (and panics when a capacity
//! overflows); PyTorch raises instead, with `DefaultCPUAllocator`'s message. Tensor storage
//! goes through [`crate::storage::HostBuffer`], which checks every allocation; kernels that
//! need scratch vectors sized by a tensor (offsets, accumulators, sort buffers) build them
//! with the helpers here, which reserve with `try_reserve_exact` and turn a refusal into
//! [`out_of_memory`].

use crate::{Error, Result};

/// PyTorch's error when host memory cannot be allocated (`alloc_cpu` on Linux, where
/// `posix_memalign` reports `ENOMEM`).
pub fn out_of_memory(nbytes: usize) -> Error {
    Error::runtime(format!(
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate {nbytes} bytes. Error code 12 (Cannot allocate memory)"
    ))
}

/// The error for `n` elements of `T` that cannot be allocated.
fn refused<T>(n: usize) -> Error {
    out_of_memory(n.saturating_mul(std::mem::size_of::<T>()))
}

/// An empty vector with room for exactly `n` elements, or [`out_of_memory`].
pub fn try_with_capacity<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| refused::<T>(n))?;
    Ok(v)
}

/// `vec![value; n]`, or [`out_of_memory`].
pub fn try_vec<T: Clone>(n: usize, value: T) -> Result<Vec<T>> {
    let mut v = try_with_capacity(n)?;
    v.resize(n, value);
    Ok(v)
}

/// Collects `iter`, reserving its lower size bound up front (the whole length for the exact
/// iterators kernels use) and every later growth fallibly.
pub fn try_collect<T>(iter: impl IntoIterator<Item = T>) -> Result<Vec<T>> {
    let iter = iter.into_iter();
    let mut v = try_with_capacity(iter.size_hint().0)?;
    for x in iter {
        try_push(&mut v, x)?;
    }
    Ok(v)
}

/// Collects an iterator of results, stopping at the first error (fallible like
/// [`try_collect`]).
pub fn try_collect_results<T>(iter: impl IntoIterator<Item = Result<T>>) -> Result<Vec<T>> {
    let iter = iter.into_iter();
    let mut v = try_with_capacity(iter.size_hint().0)?;
    for x in iter {
        try_push(&mut v, x?)?;
    }
    Ok(v)
}

/// `v.push(x)`, growing the vector fallibly (amortised doubling, as `push` does).
#[inline]
pub fn try_push<T>(v: &mut Vec<T>, x: T) -> Result<()> {
    if v.len() == v.capacity() {
        let extra = v.len().max(4);
        if v.try_reserve(extra).is_err() {
            v.try_reserve(1)
                .map_err(|_| refused::<T>(v.len().saturating_add(1)))?;
        }
    }
    v.push(x);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_sizes_are_errors_not_aborts() {
        let e = try_vec(usize::MAX / 2, 0u64).unwrap_err();
        assert_eq!(
            e.message(),
            format!(
                "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes. Error code 12 (Cannot allocate memory)",
                usize::MAX
            )
        );
        // More than the address space allows, but not an overflow of the byte count.
        let e = try_with_capacity::<u8>(1 << 62).unwrap_err();
        assert!(
            e.message()
                .contains("you tried to allocate 4611686018427387904 bytes")
        );
        assert!(try_collect(0..(1u64 << 61)).is_err());
    }

    #[test]
    fn helpers_build_what_std_builds() {
        assert_eq!(try_vec(3, 7i32).unwrap(), vec![7, 7, 7]);
        assert_eq!(
            try_collect((0..5).map(|i| i * 2)).unwrap(),
            vec![0, 2, 4, 6, 8]
        );
        assert_eq!(
            try_collect((0..20).filter(|i| i % 3 == 0)).unwrap(),
            vec![0, 3, 6, 9, 12, 15, 18]
        );
        let ok: Result<Vec<i32>> = try_collect_results([Ok(1), Ok(2)]);
        assert_eq!(ok.unwrap(), vec![1, 2]);
        let err = try_collect_results([Ok(1), Err(Error::runtime("no")), Ok(3)]);
        assert_eq!(err.unwrap_err().message(), "no");
        let mut v = Vec::new();
        for i in 0..100 {
            try_push(&mut v, i).unwrap();
        }
        assert_eq!(v, (0..100).collect::<Vec<_>>());
    }
}
