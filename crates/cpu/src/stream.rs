//! Writing large outputs with non-temporal (streaming) stores.
//!
//! A kernel that writes an output much larger than the caches with ordinary stores makes the
//! processor read every output line before overwriting it (the read-for-ownership), so a
//! kernel reading `n` bytes and writing `n` moves `3n` bytes through memory. Streaming stores
//! write whole lines without reading them first: `2n`. For memory-bound row kernels
//! (`native_layer_norm` over [4096, 1024] `f32`) that is the difference between trailing and
//! beating PyTorch, which uses ordinary stores.
//!
//! Streaming stores need explicit vector code (the compiler never emits them), so the few row
//! operations that use them are written here with intrinsics, for AVX-512 and AVX, with the
//! exact operations (and so the exact bits) of their portable versions. A [`Streamer`] owns
//! the fence they need: streaming stores are weakly ordered and may become visible to other
//! threads after later ordinary stores, such as the one that reports a parallel block done, so a
//! `Streamer` issues a store fence (`sfence`) when dropped, before the task that owns it can
//! report completion; every store it made is then visible to whoever synchronises with that
//! report.

use std::mem::MaybeUninit;

/// Outputs of at least this many bytes are written with streaming stores: well past the L2
/// caches and a good part of a shared L3, where the written lines would be evicted before
/// anyone reads them again.
pub(crate) const STREAM_BYTES: usize = 8 << 20;

/// Row writers with streaming stores; fences on drop (see the module documentation).
pub(crate) struct Streamer {
    /// Whether a streaming store was issued since the last fence.
    pending: bool,
}

impl Streamer {
    /// A new streamer (no fence owed yet).
    pub(crate) fn new() -> Streamer {
        Streamer { pending: false }
    }

    /// `y[i] = ((x[i] * rstd + shift) * gamma[i]) + beta[i]`, rounding after every operation
    /// (no fused multiply-add), with streaming stores: `false`, with nothing written, when the
    /// CPU has neither AVX-512 nor AVX. Every element of `y` is written when all four slices
    /// have its length.
    pub(crate) fn normalized_row_f32(
        &mut self,
        x: &[f32],
        y: &mut [MaybeUninit<f32>],
        rstd: f32,
        shift: f32,
        gamma: &[f32],
        beta: &[f32],
    ) -> bool {
        let row = Row {
            x,
            y,
            rstd,
            shift,
            gamma,
            beta,
        };
        #[cfg(target_arch = "x86_64")]
        return self.run(row, x86::normalized_f32_avx512, x86::normalized_f32_avx);
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = row;
            false
        }
    }

    /// [`Streamer::normalized_row_f32`] for `f64`.
    pub(crate) fn normalized_row_f64(
        &mut self,
        x: &[f64],
        y: &mut [MaybeUninit<f64>],
        rstd: f64,
        shift: f64,
        gamma: &[f64],
        beta: &[f64],
    ) -> bool {
        let row = Row {
            x,
            y,
            rstd,
            shift,
            gamma,
            beta,
        };
        #[cfg(target_arch = "x86_64")]
        return self.run(row, x86::normalized_f64_avx512, x86::normalized_f64_avx);
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = row;
            false
        }
    }

    /// Copies `src` into `dst` (the shorter length of the two) with streaming stores for every
    /// whole vector-aligned part of `dst` and ordinary stores for the ends: `false`, with
    /// nothing written, when the CPU has neither AVX-512 nor AVX. Kernels compute a block into
    /// a small cache-resident buffer and stream it out with this.
    pub(crate) fn copy(&mut self, src: &[u8], dst: &mut [u8]) -> bool {
        #[cfg(target_arch = "x86_64")]
        return self.run((src, dst), x86::copy_avx512, x86::copy_avx);
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (src, dst);
            false
        }
    }

    /// Runs `avx512(args)` on a CPU with AVX-512 F, else `avx(args)` on one with AVX, and
    /// owes a fence afterwards; `false`, running neither, on other CPUs. `avx512` must need no
    /// CPU feature beyond AVX-512 F, `avx` none beyond AVX (every caller passes the loops of
    /// module `x86` generated for exactly those features).
    #[cfg(target_arch = "x86_64")]
    fn run<A>(&mut self, args: A, avx512: unsafe fn(A), avx: unsafe fn(A)) -> bool {
        if crate::math::has_avx512() {
            // SAFETY: the CPU has AVX-512 F (checked just above), all `avx512` needs.
            unsafe { avx512(args) };
        } else if crate::math::has_avx2() {
            // SAFETY: the CPU has AVX (implied by AVX2, checked just above), all `avx` needs.
            unsafe { avx(args) };
        } else {
            return false;
        }
        self.pending = true;
        true
    }
}

impl Drop for Streamer {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if self.pending {
            // SAFETY: `sfence` has no preconditions (SSE, part of the x86-64 baseline).
            unsafe { std::arch::x86_64::_mm_sfence() };
        }
    }
}

/// The operands of one normalized row.
struct Row<'a, T> {
    x: &'a [T],
    y: &'a mut [MaybeUninit<T>],
    rstd: T,
    shift: T,
    gamma: &'a [T],
    beta: &'a [T],
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The intrinsic loops. Each writes the elements before the first vector-aligned one of
    //! `y` and after the last whole vector with scalar code, the rest with aligned streaming
    //! stores (which require the alignment); inputs are loaded unaligned.

    use super::Row;
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;

    /// Defines one loop: vector type, lanes, set1 / loadu / mul / add / stream intrinsics.
    macro_rules! normalized_loop {
        ($(#[$attr:meta])* $name:ident, $t:ty, $lanes:expr, $set1:ident, $loadu:ident,
         $mul:ident, $add:ident, $stream:ident) => {
            $(#[$attr])*
            pub(super) unsafe fn $name(row: Row<'_, $t>) {
                let Row { x, y, rstd, shift, gamma, beta } = row;
                let n = x.len().min(y.len()).min(gamma.len()).min(beta.len());
                let scalar = |i: usize, y: &mut [MaybeUninit<$t>]| {
                    y[i] = MaybeUninit::new((x[i] * rstd + shift) * gamma[i] + beta[i]);
                };
                // Elements up to the first address of `y` aligned to a whole vector.
                let head = y
                    .as_ptr()
                    .align_offset($lanes * std::mem::size_of::<$t>())
                    .min(n);
                for i in 0..head {
                    scalar(i, y);
                }
                let body_end = head + (n - head) / $lanes * $lanes;
                // SAFETY: the caller guarantees the target feature. In the loop,
                // `i + $lanes <= body_end <= n`, within every slice, so the unaligned loads
                // read inside `x`, `gamma` and `beta`; `y + i` is vector-aligned (`head`
                // aligns it and `i - head` is a multiple of the vector width), as the
                // streaming store requires, and writes inside `y`. Writing initialised values
                // into `MaybeUninit` slots is always allowed.
                unsafe {
                    let (r, s) = ($set1(rstd), $set1(shift));
                    let mut i = head;
                    while i < body_end {
                        let v = $loadu(x.as_ptr().add(i));
                        let t = $add($mul(v, r), s);
                        let out = $add(
                            $mul(t, $loadu(gamma.as_ptr().add(i))),
                            $loadu(beta.as_ptr().add(i)),
                        );
                        $stream(y.as_mut_ptr().add(i).cast::<$t>(), out);
                        i += $lanes;
                    }
                }
                for i in body_end..n {
                    scalar(i, y);
                }
            }
        };
    }

    /// Defines a streaming byte copy: vector type, width in bytes, load / stream intrinsics.
    macro_rules! copy_loop {
        ($(#[$attr:meta])* $name:ident, $v:ty, $width:expr, $loadu:ident, $stream:ident) => {
            $(#[$attr])*
            pub(super) unsafe fn $name((src, dst): (&[u8], &mut [u8])) {
                let n = src.len().min(dst.len());
                let head = dst.as_ptr().align_offset($width).min(n);
                dst[..head].copy_from_slice(&src[..head]);
                let body_end = head + (n - head) / $width * $width;
                // SAFETY: the caller guarantees the target feature. In the loop,
                // `i + $width <= body_end <= n`, within both slices, so the unaligned load
                // reads inside `src` and the store writes inside `dst`; `dst + i` is aligned
                // to `$width` (`head` aligns it and `i - head` is a multiple of `$width`), as
                // the streaming store requires.
                unsafe {
                    let mut i = head;
                    while i < body_end {
                        let v = $loadu(src.as_ptr().add(i).cast::<$v>());
                        $stream(dst.as_mut_ptr().add(i).cast::<$v>(), v);
                        i += $width;
                    }
                }
                dst[body_end..n].copy_from_slice(&src[body_end..n]);
            }
        };
    }

    copy_loop!(
        /// # Safety
        /// The CPU must have AVX-512 F.
        #[target_feature(enable = "avx512f")]
        copy_avx512, __m512i, 64, _mm512_loadu_si512, _mm512_stream_si512
    );
    copy_loop!(
        /// # Safety
        /// The CPU must have AVX.
        #[target_feature(enable = "avx")]
        copy_avx, __m256i, 32, _mm256_loadu_si256, _mm256_stream_si256
    );

    normalized_loop!(
        /// # Safety
        /// The CPU must have AVX-512 F.
        #[target_feature(enable = "avx512f")]
        normalized_f32_avx512, f32, 16, _mm512_set1_ps, _mm512_loadu_ps, _mm512_mul_ps,
        _mm512_add_ps, _mm512_stream_ps
    );
    normalized_loop!(
        /// # Safety
        /// The CPU must have AVX.
        #[target_feature(enable = "avx")]
        normalized_f32_avx, f32, 8, _mm256_set1_ps, _mm256_loadu_ps, _mm256_mul_ps,
        _mm256_add_ps, _mm256_stream_ps
    );
    normalized_loop!(
        /// # Safety
        /// The CPU must have AVX-512 F.
        #[target_feature(enable = "avx512f")]
        normalized_f64_avx512, f64, 8, _mm512_set1_pd, _mm512_loadu_pd, _mm512_mul_pd,
        _mm512_add_pd, _mm512_stream_pd
    );
    normalized_loop!(
        /// # Safety
        /// The CPU must have AVX.
        #[target_feature(enable = "avx")]
        normalized_f64_avx, f64, 4, _mm256_set1_pd, _mm256_loadu_pd, _mm256_mul_pd,
        _mm256_add_pd, _mm256_stream_pd
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streamed copies equal the source at every alignment and length around the widths.
    #[test]
    fn streamed_copies_equal_their_source() {
        let src: Vec<u8> = (0..400u32).map(|i| (i * 7 + 3) as u8).collect();
        for start in 0..70 {
            for len in [0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 200, 300] {
                let mut dst = vec![0u8; 400];
                let mut s = Streamer::new();
                if !s.copy(&src[5..5 + len], &mut dst[start..start + len]) {
                    return; // no AVX on this machine: nothing to test
                }
                drop(s);
                assert_eq!(&dst[start..start + len], &src[5..5 + len], "{start} {len}");
                assert!(dst[..start].iter().all(|&b| b == 0), "{start} {len}");
                assert!(dst[start + len..].iter().all(|&b| b == 0), "{start} {len}");
            }
        }
    }

    /// The streamed rows hold the bits of the scalar formula, at every alignment of the output
    /// and every length around the vector widths, with NaN and signed zeros among the inputs.
    #[test]
    fn streamed_rows_match_the_scalar_formula() {
        let xs: Vec<f64> = (0..300)
            .map(|i| match i % 41 {
                7 => f64::NAN,
                11 => -0.0,
                _ => (i as f64 * 0.37).sin() * 1e3,
            })
            .collect();
        let gamma: Vec<f64> = (0..300).map(|i| 0.5 + (i % 9) as f64 * 0.25).collect();
        let beta: Vec<f64> = (0..300)
            .map(|i| if i % 5 == 0 { -0.0 } else { i as f64 })
            .collect();
        let f32s = |v: &[f64]| v.iter().map(|x| *x as f32).collect::<Vec<f32>>();
        let (x32, g32, b32) = (f32s(&xs), f32s(&gamma), f32s(&beta));
        for start in 0..17 {
            for len in [0, 1, 3, 7, 8, 15, 16, 17, 31, 64, 200] {
                let mut out = vec![MaybeUninit::new(0.0f32); 300];
                let mut s = Streamer::new();
                let (x, g, b) = (&x32[..len], &g32[..len], &b32[..len]);
                if !s.normalized_row_f32(x, &mut out[start..start + len], 0.75, -3.5, g, b) {
                    return; // no AVX on this machine: nothing to test
                }
                drop(s);
                for i in 0..len {
                    // SAFETY: initialised at creation, and only written with values since.
                    let got = unsafe { out[start + i].assume_init() };
                    let want = (x[i] * 0.75 + -3.5) * g[i] + b[i];
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "f32 start {start} len {len} i {i}"
                    );
                }
                let mut out = vec![MaybeUninit::new(0.0f64); 300];
                let mut s = Streamer::new();
                let (x, g, b) = (&xs[..len], &gamma[..len], &beta[..len]);
                assert!(s.normalized_row_f64(x, &mut out[start..start + len], 0.75, -3.5, g, b));
                for i in 0..len {
                    // SAFETY: as above.
                    let got = unsafe { out[start + i].assume_init() };
                    let want = (x[i] * 0.75 + -3.5) * g[i] + b[i];
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "f64 start {start} len {len} i {i}"
                    );
                }
            }
        }
    }
}
