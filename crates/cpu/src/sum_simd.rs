//! Plain `f32` / `f64` sums with explicit vector registers, bit for bit in the order of
//! [`pairwise_sum`]: the same [`BLOCK`]-element leaves merged by the same binary counter, and
//! in every leaf the same [`LANES`] accumulators (lane `i` adds elements `i, i + 32, ...`)
//! merged by the same pairwise tree.
//!
//! Why not leave it to the compiler: inlined into the multiversioned reduction engine, the
//! generic [`lane_fold`] came out as one 8-wide add and twelve 2-wide ones per 32 elements
//! (LLVM's SLP vectoriser splits the 32-lane array badly in that context), which made the sum
//! of 16M `f32` 40% slower than PyTorch's. Here the 32 lanes live in full-width registers:
//! four `ymm` (AVX2) or two `zmm` (AVX-512) of `f32`, eight `ymm` or four `zmm` of `f64`.
//! Only the register layout changes, never which values are added in which order, so every
//! instruction set gives the bits of the portable code.
//!
//! Whole leaves go two at a time ([`pairwise_block_pairs`]), each with its own registers:
//! one leaf's two AVX-512 accumulators are two chains of dependent additions, too few to keep
//! enough loads in flight, and the pair (with a prefetch a few pages ahead) took the 16M `f32`
//! sum on two threads from 1.29 to about 1.2 ms.

#[cfg(doc)]
use crate::reduce_loops::lane_fold;
use crate::reduce_loops::{
    BLOCK, LANES, RNum, merge_lanes, pairwise_block_pairs, pairwise_blocks, pairwise_sum,
};

#[cfg(target_arch = "x86_64")]
use crate::math::{has_avx2, has_avx512};

/// `Σ xs` in [`pairwise_sum`]'s order, with the widest vectors the CPU has.
#[inline]
pub(crate) fn sum_f32(xs: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has every feature `x86::sum_f32_avx512` enables.
            return unsafe { x86::sum_f32_avx512(xs) };
        }
        if has_avx2() {
            // SAFETY: the CPU has AVX2 and FMA, the features `x86::sum_f32_avx2` enables.
            return unsafe { x86::sum_f32_avx2(xs) };
        }
    }
    pairwise_sum(xs, |x| x)
}

/// `Σ xs` in [`pairwise_sum`]'s order, with the widest vectors the CPU has.
#[inline]
pub(crate) fn sum_f64(xs: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has every feature `x86::sum_f64_avx512` enables.
            return unsafe { x86::sum_f64_avx512(xs) };
        }
        if has_avx2() {
            // SAFETY: the CPU has AVX2 and FMA, the features `x86::sum_f64_avx2` enables.
            return unsafe { x86::sum_f64_avx2(xs) };
        }
    }
    pairwise_sum(xs, |x| x)
}

/// `Σ (x - mean)²` in [`pairwise_sum`]'s order (the bits of
/// `pairwise_sum(xs, |x| (x - mean) * (x - mean))`), with the widest vectors the CPU has: the
/// second pass of `var` / `std`.
#[inline]
pub(crate) fn sum_squared_deviations_f64(xs: &[f64], mean: f64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has every feature `x86::ssd_f64_avx512` enables.
            return unsafe { x86::ssd_f64_avx512(xs, mean) };
        }
        if has_avx2() {
            // SAFETY: the CPU has AVX2 and FMA, the features `x86::ssd_f64_avx2` enables.
            return unsafe { x86::ssd_f64_avx2(xs, mean) };
        }
    }
    pairwise_sum(xs, |x| (x - mean) * (x - mean))
}

/// Adds the tail (`rest`, fewer than [`LANES`] elements) to the first lanes and merges the
/// lanes, as [`lane_fold`] finishes.
#[inline(always)]
fn finish<A: RNum>(mut lanes: [A; LANES], rest: &[A]) -> A {
    for (l, x) in lanes.iter_mut().zip(rest) {
        *l = l.add(*x);
    }
    merge_lanes(&mut lanes, A::add)
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    //! The AVX2 and AVX-512 leaves: `W`-wide registers hold lanes `W k .. W k + W`.

    use super::{BLOCK, LANES, finish, pairwise_block_pairs, pairwise_blocks};
    use std::arch::x86_64::*;

    /// One leaf: `N` registers of `W` lanes (`N * W == LANES`), loaded, added and stored with
    /// the given intrinsics; and two whole leaves at once, each with its own `N` registers.
    macro_rules! leaf {
        ($name:ident, $two:ident, $features:literal, $t:ty, $v:ty, $n:literal, $w:literal,
         $zero:ident, $load:ident, $add:ident, $store:ident) => {
            #[inline]
            #[target_feature(enable = $features)]
            fn $name(xs: &[$t]) -> $t {
                const _: () = assert!($n * $w == LANES);
                let (chunks, rest) = xs.as_chunks::<LANES>();
                let mut acc: [$v; $n] = [$zero(); $n];
                for c in chunks {
                    for (k, a) in acc.iter_mut().enumerate() {
                        // SAFETY: `c` holds `LANES = N * W` elements and `k < N`, so the `W`
                        // elements from `W * k` are in bounds; the load has no alignment
                        // requirement.
                        *a = $add(*a, unsafe { $load(c.as_ptr().add($w * k)) });
                    }
                }
                let mut lanes = [0.0; LANES];
                for (k, a) in acc.iter().enumerate() {
                    // SAFETY: `lanes` holds `N * W` elements and `k < N`, so the `W` from
                    // `W * k` are in bounds; the store has no alignment requirement.
                    unsafe { $store(lanes.as_mut_ptr().add($w * k), *a) };
                }
                finish(lanes, rest)
            }

            /// `($name(a), $name(b))` for two whole leaves, read side by side: two independent
            /// chains of additions keep twice as many loads in flight. The page past the
            /// next pair is touched first, because the hardware prefetcher does not follow a
            /// stream across a page boundary by itself.
            #[inline]
            #[target_feature(enable = $features)]
            fn $two(a: &[$t], b: &[$t]) -> ($t, $t) {
                if a.len() != BLOCK || b.len() != BLOCK {
                    return ($name(a), $name(b));
                }
                touch_ahead(b);
                let (ca, _) = a.as_chunks::<LANES>();
                let (cb, _) = b.as_chunks::<LANES>();
                let mut acc_a: [$v; $n] = [$zero(); $n];
                let mut acc_b: [$v; $n] = [$zero(); $n];
                for (x, y) in ca.iter().zip(cb) {
                    for k in 0..$n {
                        // SAFETY: `x` and `y` hold `LANES = N * W` elements and `k < N`, so
                        // the `W` elements from `W * k` are in bounds; the loads have no
                        // alignment requirement.
                        unsafe {
                            acc_a[k] = $add(acc_a[k], $load(x.as_ptr().add($w * k)));
                            acc_b[k] = $add(acc_b[k], $load(y.as_ptr().add($w * k)));
                        }
                    }
                }
                let (mut la, mut lb) = ([0.0; LANES], [0.0; LANES]);
                for k in 0..$n {
                    // SAFETY: `la` and `lb` hold `N * W` elements and `k < N`, so the `W`
                    // from `W * k` are in bounds; the stores have no alignment requirement.
                    unsafe {
                        $store(la.as_mut_ptr().add($w * k), acc_a[k]);
                        $store(lb.as_mut_ptr().add($w * k), acc_b[k]);
                    }
                }
                // Whole leaves are a multiple of `LANES` long: no tail.
                (finish(la, &[]), finish(lb, &[]))
            }
        };
    }

    /// How far past the end of a pair of leaves [`touch_ahead`] reaches: 16 KiB, four pages.
    /// Measured on 16M `f32` over two threads: 2 KiB did not help, 16 and 32 KiB gained
    /// about 4%.
    const TOUCH_AHEAD_BYTES: usize = 16 << 10;

    /// Prefetches one line in each of the two pages [`TOUCH_AHEAD_BYTES`] past `leaf`, so the
    /// hardware prefetcher is streaming those pages before the loads reach them.
    #[inline(always)]
    fn touch_ahead<T>(leaf: &[T]) {
        let end = leaf.as_ptr_range().end.cast::<i8>();
        for page in [0, 4096] {
            // `wrapping_add` keeps the pointer arithmetic defined wherever it lands, and a
            // prefetch never faults or changes memory, so an address past the slice (or
            // past the allocation) is harmless.
            let p = end.wrapping_add(TOUCH_AHEAD_BYTES + page);
            // SAFETY: `_mm_prefetch` needs only SSE, part of every x86-64 CPU; a prefetch
            // neither faults nor reads into the program.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
        }
    }

    leaf!(
        leaf_f32_avx2,
        two_leaves_f32_avx2,
        "avx2,fma",
        f32,
        __m256,
        4,
        8,
        _mm256_setzero_ps,
        _mm256_loadu_ps,
        _mm256_add_ps,
        _mm256_storeu_ps
    );
    leaf!(
        leaf_f64_avx2,
        two_leaves_f64_avx2,
        "avx2,fma",
        f64,
        __m256d,
        8,
        4,
        _mm256_setzero_pd,
        _mm256_loadu_pd,
        _mm256_add_pd,
        _mm256_storeu_pd
    );
    leaf!(
        leaf_f32_avx512,
        two_leaves_f32_avx512,
        "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma",
        f32,
        __m512,
        2,
        16,
        _mm512_setzero_ps,
        _mm512_loadu_ps,
        _mm512_add_ps,
        _mm512_storeu_ps
    );
    leaf!(
        leaf_f64_avx512,
        two_leaves_f64_avx512,
        "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma",
        f64,
        __m512d,
        4,
        8,
        _mm512_setzero_pd,
        _mm512_loadu_pd,
        _mm512_add_pd,
        _mm512_storeu_pd
    );

    /// One leaf of squared deviations: like `leaf!`, with `(x - mean)²` added instead of `x`
    /// (a separate subtraction, multiplication and addition, never fused, as in the portable
    /// code).
    macro_rules! squared_deviations_leaf {
        ($name:ident, $features:literal, $v:ty, $n:literal, $w:literal, $zero:ident,
         $set1:ident, $load:ident, $sub:ident, $mul:ident, $add:ident, $store:ident) => {
            #[inline]
            #[target_feature(enable = $features)]
            fn $name(xs: &[f64], mean: f64) -> f64 {
                const _: () = assert!($n * $w == LANES);
                let m = $set1(mean);
                let (chunks, rest) = xs.as_chunks::<LANES>();
                let mut acc: [$v; $n] = [$zero(); $n];
                for c in chunks {
                    for (k, a) in acc.iter_mut().enumerate() {
                        // SAFETY: `c` holds `LANES = N * W` elements and `k < N`, so the `W`
                        // elements from `W * k` are in bounds; the load has no alignment
                        // requirement.
                        let d = $sub(unsafe { $load(c.as_ptr().add($w * k)) }, m);
                        *a = $add(*a, $mul(d, d));
                    }
                }
                let mut lanes = [0.0; LANES];
                for (k, a) in acc.iter().enumerate() {
                    // SAFETY: `lanes` holds `N * W` elements and `k < N`, so the `W` from
                    // `W * k` are in bounds; the store has no alignment requirement.
                    unsafe { $store(lanes.as_mut_ptr().add($w * k), *a) };
                }
                let mut tail = [0.0; LANES];
                for (t, x) in tail.iter_mut().zip(rest) {
                    *t = (x - mean) * (x - mean);
                }
                finish(lanes, &tail[..rest.len()])
            }
        };
    }

    squared_deviations_leaf!(
        ssd_leaf_f64_avx2,
        "avx2,fma",
        __m256d,
        8,
        4,
        _mm256_setzero_pd,
        _mm256_set1_pd,
        _mm256_loadu_pd,
        _mm256_sub_pd,
        _mm256_mul_pd,
        _mm256_add_pd,
        _mm256_storeu_pd
    );
    squared_deviations_leaf!(
        ssd_leaf_f64_avx512,
        "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma",
        __m512d,
        4,
        8,
        _mm512_setzero_pd,
        _mm512_set1_pd,
        _mm512_loadu_pd,
        _mm512_sub_pd,
        _mm512_mul_pd,
        _mm512_add_pd,
        _mm512_storeu_pd
    );

    /// [`super::sum_squared_deviations_f64`] with AVX2 registers.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn ssd_f64_avx2(xs: &[f64], mean: f64) -> f64 {
        pairwise_blocks(xs, |b| ssd_leaf_f64_avx2(b, mean))
    }

    /// [`super::sum_squared_deviations_f64`] with AVX-512 registers.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
    pub(crate) fn ssd_f64_avx512(xs: &[f64], mean: f64) -> f64 {
        pairwise_blocks(xs, |b| ssd_leaf_f64_avx512(b, mean))
    }

    /// [`super::sum_f32`] with AVX2 registers.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn sum_f32_avx2(xs: &[f32]) -> f32 {
        pairwise_block_pairs(xs, |b| leaf_f32_avx2(b), |a, b| two_leaves_f32_avx2(a, b))
    }

    /// [`super::sum_f64`] with AVX2 registers.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn sum_f64_avx2(xs: &[f64]) -> f64 {
        pairwise_block_pairs(xs, |b| leaf_f64_avx2(b), |a, b| two_leaves_f64_avx2(a, b))
    }

    /// [`super::sum_f32`] with AVX-512 registers.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
    pub(crate) fn sum_f32_avx512(xs: &[f32]) -> f32 {
        pairwise_block_pairs(
            xs,
            |b| leaf_f32_avx512(b),
            |a, b| two_leaves_f32_avx512(a, b),
        )
    }

    /// [`super::sum_f64`] with AVX-512 registers.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
    pub(crate) fn sum_f64_avx512(xs: &[f64]) -> f64 {
        pairwise_block_pairs(
            xs,
            |b| leaf_f64_avx512(b),
            |a, b| two_leaves_f64_avx512(a, b),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values that make the order visible: wide magnitudes (every reordering changes the
    /// rounding), signed zeros, and optionally a NaN or infinities.
    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut state = seed | 1;
        (0..n)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let u = (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                match i % 97 {
                    0 => -0.0,
                    1 => 0.0,
                    _ => u * 10f64.powi((i % 13) as i32 - 6),
                }
            })
            .collect()
    }

    fn lengths() -> Vec<usize> {
        let mut v: Vec<usize> = (0..70).collect();
        v.extend([1023, 1024, 1025, 2047, 2048, 3000, 4096 + 31, 100_003]);
        v
    }

    /// Every vector variant gives the portable [`pairwise_sum`]'s bits, for every length
    /// (tails, one leaf, several leaves and an odd number of them), with `-0.0` sums, NaN and
    /// infinities.
    #[test]
    fn vector_sums_match_the_portable_order_bit_for_bit() {
        let mut cases: Vec<Vec<f64>> = Vec::new();
        for n in lengths() {
            cases.push(values(n, n as u64 + 1));
        }
        cases.push(vec![-0.0; 40]);
        let mut nan = values(2000, 7);
        nan[1500] = f64::NAN;
        cases.push(nan);
        let mut inf = values(2000, 9);
        inf[3] = f64::INFINITY;
        inf[1900] = f64::NEG_INFINITY;
        cases.push(inf);
        let mut checked = 0;
        for xs in &cases {
            let want = pairwise_sum(xs, |x| x);
            let f: Vec<f32> = xs.iter().map(|v| *v as f32).collect();
            let want_f = pairwise_sum(&f, |x| x);
            let mut got64 = vec![sum_f64(xs)];
            let mut got32 = vec![sum_f32(&f)];
            #[cfg(target_arch = "x86_64")]
            {
                if has_avx2() {
                    // SAFETY: the CPU has AVX2 and FMA.
                    got64.push(unsafe { x86::sum_f64_avx2(xs) });
                    // SAFETY: as above.
                    got32.push(unsafe { x86::sum_f32_avx2(&f) });
                }
                if has_avx512() {
                    // SAFETY: the CPU has the AVX-512 features.
                    got64.push(unsafe { x86::sum_f64_avx512(xs) });
                    // SAFETY: as above.
                    got32.push(unsafe { x86::sum_f32_avx512(&f) });
                }
            }
            for g in got64 {
                assert_eq!(g.to_bits(), want.to_bits(), "f64, n = {}", xs.len());
                checked += 1;
            }
            for g in got32 {
                assert_eq!(g.to_bits(), want_f.to_bits(), "f32, n = {}", xs.len());
            }
        }
        assert!(checked >= cases.len());
    }

    /// The squared deviations of `var`'s second pass give the portable order's bits on every
    /// instruction set, for every length and around several means.
    #[test]
    fn squared_deviations_match_the_portable_order_bit_for_bit() {
        for n in lengths() {
            let xs = values(n, n as u64 + 3);
            for mean in [0.0, 0.37, -1.5e3, xs.first().copied().unwrap_or(2.0)] {
                let want = pairwise_sum(&xs, |x| (x - mean) * (x - mean)).to_bits();
                let mut got = vec![sum_squared_deviations_f64(&xs, mean)];
                #[cfg(target_arch = "x86_64")]
                {
                    if has_avx2() {
                        // SAFETY: the CPU has AVX2 and FMA.
                        got.push(unsafe { x86::ssd_f64_avx2(&xs, mean) });
                    }
                    if has_avx512() {
                        // SAFETY: the CPU has the AVX-512 features.
                        got.push(unsafe { x86::ssd_f64_avx512(&xs, mean) });
                    }
                }
                for g in got {
                    assert_eq!(g.to_bits(), want, "n = {n}, mean = {mean}");
                }
            }
        }
    }

    /// The all-`-0.0` sum is `+0.0` (the lanes start at `+0.0`), as in the portable code.
    #[test]
    fn negative_zeros_sum_to_positive_zero() {
        assert_eq!(sum_f32(&[-0.0; 5]).to_bits(), 0.0f32.to_bits());
        assert_eq!(sum_f64(&[-0.0; 3000]).to_bits(), 0.0f64.to_bits());
    }
}
