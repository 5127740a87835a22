//! The reduction engine (PyTorch's TensorIterator reductions on CPU), plus the row kernels of
//! softmax / log_softmax, of layer_norm and of cumulative scans.
//!
//! [`reduce`] folds every output element's slice of the input with a [`Reducer`] and returns
//! the accumulators in the output's logical (row-major) order; the caller finishes them and
//! writes them with [`store`]. Reading everything before writing makes in-place and aliased
//! `out=` calls safe without special cases.
//!
//! 1. A `Plan` splits the input's dimensions into *kept* and *reduced* ones, drops size-1
//!    dimensions, orders both lists by input stride (outermost first) and coalesces
//!    dimensions that step through memory as one.
//! 2. When the innermost kept dimension is more inner than the innermost reduced one (an
//!    "outer" reduction such as `sum(0)` of a row-major matrix), outputs are processed in tiles
//!    of consecutive kept positions and every reduced row is folded into the tile with
//!    [`Reducer::fold_rows`], a unit-stride loop the compiler vectorises. Rows are combined in
//!    a three-level cascade (groups of [`GROUP`] rows) so long float sums stay accurate.
//! 3. Otherwise (an "inner" reduction such as `sum(-1)`), each output folds its runs along the
//!    innermost reduced dimension with [`Reducer::fold`]; the sum reducers fold a run pairwise
//!    over blocks of [`BLOCK`] elements with [`LANES`] independent accumulators.
//! 4. Inputs whose dtype is not the compute type (or runs that are not unit-stride) are
//!    converted through a small buffer; matching ones are read in place.
//! 5. Above [`GRAIN_SIZE`] elements of work the outputs (when there are enough of them) or the
//!    outermost splittable reduced dimension are divided among threads (`parallel`); partial
//!    accumulators are combined in order, so index reductions keep the first occurrence.
//!
//! The hot loops are compiled twice, for the baseline target and with AVX2 + FMA (the
//! compute-bound row kernels also with AVX-512), and the variant is picked at run time.

use crate::loops::{GRAIN_SIZE, typed, typed_mut};
use crate::parallel;
use crate::stream::Streamer;
use smallvec::SmallVec;
use std::mem::MaybeUninit;
use switchyard_core::element::{Element, convert};
use switchyard_core::{Access, Error, Result, ScalarType, Tensor, dispatch_dtype, with_tensors};

/// Independent accumulators per fold (enough to fill the vector units and hide latency).
pub(crate) const LANES: usize = 32;

/// Elements summed per leaf of the pairwise sum.
pub(crate) const BLOCK: usize = 1024;

/// Rows per cascade level in outer reductions.
const GROUP: usize = 64;

/// Kept positions processed together in an outer reduction.
const TILE: usize = 1024;

/// Elements converted per gather in the converting path.
const GATHER: usize = 1024;

#[cfg(target_arch = "x86_64")]
use crate::math::{has_avx2, has_avx512};

/// Defines `$name` (dispatching at run time) over `$body` (an `#[inline(always)]` function
/// holding the loops), with an AVX2 + FMA copy of `$body` on x86-64, and an AVX-512 copy when a
/// third name is given (`fn name / avx2 / avx512 / body`; only for the few row kernels that are
/// compute-bound, since every copy costs build time).
macro_rules! multiversion {
    (
        $(#[$doc:meta])*
        fn $name:ident / $avx2:ident / $avx512:ident / $body:ident
        < $($g:ident : $bound:path),* > ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty
    ) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $name<$($g: $bound),*>($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            if has_avx512() {
                // SAFETY: the CPU supports every feature `$avx512` enables.
                return unsafe { $avx512::<$($g),*>($($arg),*) };
            }
            #[cfg(target_arch = "x86_64")]
            if has_avx2() {
                // SAFETY: the CPU supports AVX2 and FMA, the only features `$avx2` enables.
                return unsafe { $avx2::<$($g),*>($($arg),*) };
            }
            $body::<$($g),*>($($arg),*)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        fn $avx2<$($g: $bound),*>($($arg: $ty),*) -> $ret {
            $body::<$($g),*>($($arg),*)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        fn $avx512<$($g: $bound),*>($($arg: $ty),*) -> $ret {
            $body::<$($g),*>($($arg),*)
        }
    };
    (
        $(#[$doc:meta])*
        fn $name:ident / $avx2:ident / $body:ident
        < $($g:ident : $bound:path),* > ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty
    ) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $name<$($g: $bound),*>($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            if has_avx2() {
                // SAFETY: the CPU supports AVX2 and FMA, the only features `$avx2` enables.
                return unsafe { $avx2::<$($g),*>($($arg),*) };
            }
            $body::<$($g),*>($($arg),*)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        fn $avx2<$($g: $bound),*>($($arg: $ty),*) -> $ret {
            $body::<$($g),*>($($arg),*)
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Compute types
// ---------------------------------------------------------------------------------------------

/// A type reductions compute in: `f32`, `f64` and the integers (`u8` also carries truth values
/// for `all` / `any`). Integer arithmetic wraps like C++'s.
pub(crate) trait RNum: Element<Repr = Self> + bytemuck::Pod + PartialOrd {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// The smallest value (`-inf` for floats).
    const LOWEST: Self;
    /// The largest value (`inf` for floats).
    const HIGHEST: Self;
    /// `self + o`.
    fn add(self, o: Self) -> Self;
    /// `self - o`.
    fn sub(self, o: Self) -> Self;
    /// `self * o`.
    fn mul(self, o: Self) -> Self;
    /// `self / o` (integer division by zero gives 0).
    fn div(self, o: Self) -> Self;
    /// NaN test (always false for integers).
    fn is_nan(self) -> bool;
    /// Absolute value.
    fn abs(self) -> Self;
    /// `|self|^p` (floats; integers return `self`).
    fn pow_abs(self, p: f64) -> Self;
    /// `pairwise_sum(xs, |x| x)`, bit for bit; floats use explicit vector registers
    /// (`sum_simd`).
    #[inline(always)]
    fn plain_sum(xs: &[Self]) -> Self {
        pairwise_sum(xs, |x| x)
    }
}

macro_rules! int_rnum {
    ($($t:ty),*) => {$(
        impl RNum for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn div(self, o: Self) -> Self { self.checked_div(o).unwrap_or(0) }
            #[inline(always)] fn is_nan(self) -> bool { false }
            #[inline(always)] fn abs(self) -> Self { self }
            #[inline(always)] fn pow_abs(self, _p: f64) -> Self { self }
        }
    )*};
}
int_rnum!(u8, i8, i16, i32, i64);

macro_rules! float_rnum {
    ($($t:ty => $sum:path),*) => {$(
        impl RNum for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn sub(self, o: Self) -> Self { self - o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn div(self, o: Self) -> Self { self / o }
            #[inline(always)] fn is_nan(self) -> bool { self != self }
            #[inline(always)] fn abs(self) -> Self { <$t>::abs(self) }
            #[inline(always)] fn pow_abs(self, p: f64) -> Self { <$t>::abs(self).powf(p as $t) }
            #[inline(always)] fn plain_sum(xs: &[Self]) -> Self { $sum(xs) }
        }
    )*};
}
float_rnum!(f32 => crate::sum_simd::sum_f32, f64 => crate::sum_simd::sum_f64);

/// An element type whose stored representation can be shared across threads (every
/// [`Element`]; the bound makes that visible to rayon).
pub(crate) trait Elem: Element<Repr: Send + Sync> {}

impl<T: Element<Repr: Send + Sync>> Elem for T {}

/// `max` that propagates NaN (PyTorch's `max_impl`).
#[inline(always)]
pub(crate) fn max_nan<T: RNum>(a: T, b: T) -> T {
    if a.is_nan() || a > b { a } else { b }
}

/// `min` that propagates NaN.
#[inline(always)]
pub(crate) fn min_nan<T: RNum>(a: T, b: T) -> T {
    if a.is_nan() || a < b { a } else { b }
}

/// Folds `xs` into [`LANES`] independent accumulators with `f`, then merges them pairwise
/// with `merge`. The fixed-width inner loop is what the compiler vectorises.
#[inline(always)]
pub(crate) fn lane_fold<T: Copy, A: Copy>(
    xs: &[T],
    init: A,
    f: impl Fn(A, T) -> A,
    merge: impl Fn(A, A) -> A,
) -> A {
    let mut acc = [init; LANES];
    let (chunks, rest) = xs.as_chunks::<LANES>();
    for c in chunks {
        for i in 0..LANES {
            acc[i] = f(acc[i], c[i]);
        }
    }
    for (a, x) in acc.iter_mut().zip(rest) {
        *a = f(*a, *x);
    }
    merge_lanes(&mut acc, merge)
}

/// Merges [`LANES`] accumulators pairwise (lane `i` with lane `i + width`, halving `width`),
/// the last step of [`lane_fold`].
#[inline(always)]
pub(crate) fn merge_lanes<A: Copy>(acc: &mut [A; LANES], merge: impl Fn(A, A) -> A) -> A {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] = merge(acc[i], acc[i + width]);
        }
    }
    acc[0]
}

/// `Σ map(x)` summed pairwise: blocks of [`BLOCK`] elements are lane-folded, and block sums
/// are merged as a binary tree (a binary counter over a stack of partial sums), so the error
/// grows with `log(n)` rather than `n`.
#[inline(always)]
pub(crate) fn pairwise_sum<T: Copy, A: RNum>(xs: &[T], map: impl Fn(T) -> A) -> A {
    pairwise_blocks(xs, |b| lane_fold(b, A::ZERO, |a, x| a.add(map(x)), A::add))
}

/// The tree of [`pairwise_sum`] over leaves of [`BLOCK`] elements summed by `leaf` (which
/// must lane-fold as [`pairwise_sum`] does for the two to agree; `sum_simd` gives it
/// vector-register leaves).
#[inline(always)]
pub(crate) fn pairwise_blocks<T, A: RNum>(xs: &[T], leaf: impl Fn(&[T]) -> A) -> A {
    pairwise_block_pairs(xs, &leaf, |a, b| (leaf(a), leaf(b)))
}

/// [`pairwise_blocks`] with the leaves taken two at a time where it can: `two_leaves(a, b)`
/// must return `(leaf(a), leaf(b))` for two whole leaves, and may interleave them (two
/// independent chains of additions instead of one).
#[inline(always)]
pub(crate) fn pairwise_block_pairs<T, A: RNum>(
    xs: &[T],
    leaf: impl Fn(&[T]) -> A,
    two_leaves: impl Fn(&[T], &[T]) -> (A, A),
) -> A {
    if xs.len() <= BLOCK {
        return leaf(xs);
    }
    let mut tree = PairwiseTree::new();
    let mut pairs = xs.chunks_exact(2 * BLOCK);
    for pair in &mut pairs {
        let (a, b) = pair.split_at(BLOCK);
        let (sa, sb) = two_leaves(a, b);
        tree.push(sa);
        tree.push(sb);
    }
    for block in pairs.remainder().chunks(BLOCK) {
        tree.push(leaf(block));
    }
    tree.total()
}

/// The binary counter over a stack of partial sums that merges leaf sums pairwise, in order.
struct PairwiseTree<A> {
    stack: [A; 64],
    count: u64,
}

impl<A: RNum> PairwiseTree<A> {
    #[inline(always)]
    fn new() -> Self {
        PairwiseTree {
            stack: [A::ZERO; 64],
            count: 0,
        }
    }

    /// Adds the next leaf's sum, merging each completed pair of equal subtrees.
    #[inline(always)]
    fn push(&mut self, mut s: A) {
        let mut level = 0;
        while (self.count >> level) & 1 == 1 {
            s = self.stack[level].add(s);
            level += 1;
        }
        self.stack[level] = s;
        self.count += 1;
    }

    /// The sum of every leaf pushed.
    #[inline(always)]
    fn total(&self) -> A {
        let mut total = A::ZERO;
        for (level, s) in self.stack.iter().enumerate() {
            if (self.count >> level) & 1 == 1 {
                total = s.add(total);
            }
        }
        total
    }
}

// ---------------------------------------------------------------------------------------------
// Reducers
// ---------------------------------------------------------------------------------------------

/// A reduction: an accumulator, how runs and rows of compute values fold into it, and how
/// two accumulators combine (the earlier one first).
pub(crate) trait Reducer<C>: Sync {
    /// The accumulator.
    type Acc: Copy + Send + Sync;
    /// The accumulator of an empty reduction.
    fn identity(&self) -> Self::Acc;
    /// Folds a run of consecutive reduced elements; `first` is the reduced index of `xs[0]`
    /// (meaningful when one dimension is reduced).
    fn fold(&self, acc: Self::Acc, xs: &[C], first: i64) -> Self::Acc;
    /// Folds one reduced row into the accumulators of consecutive outputs; `row` is its reduced
    /// index.
    fn fold_rows(&self, accs: &mut [Self::Acc], xs: &[C], row: i64);
    /// Combines `a` (earlier reduced elements) with `b` (later ones).
    fn combine(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

/// What a sum adds up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum SumKind {
    /// `x` (sum, mean).
    Plain,
    /// `|x|` (1-norm).
    Abs,
    /// `x²` (2-norm).
    Square,
    /// `x != 0` (0-norm).
    NonZero,
    /// `|x|^p` (p-norm).
    Pow(f64),
}

/// Sums (pairwise for runs, cascaded for rows).
pub(crate) struct Sum(pub(crate) SumKind);

impl<C: RNum> Reducer<C> for Sum {
    type Acc = C;
    #[inline(always)]
    fn identity(&self) -> C {
        C::ZERO
    }
    #[inline(always)]
    fn fold(&self, acc: C, xs: &[C], _first: i64) -> C {
        let s = match self.0 {
            SumKind::Plain => C::plain_sum(xs),
            SumKind::Abs => pairwise_sum(xs, RNum::abs),
            SumKind::Square => pairwise_sum(xs, |x: C| x.mul(x)),
            SumKind::NonZero => {
                pairwise_sum(xs, |x: C| if x == C::ZERO { C::ZERO } else { C::ONE })
            }
            SumKind::Pow(p) => pairwise_sum(xs, |x: C| x.pow_abs(p)),
        };
        acc.add(s)
    }
    #[inline(always)]
    fn fold_rows(&self, accs: &mut [C], xs: &[C], _row: i64) {
        let it = accs.iter_mut().zip(xs);
        match self.0 {
            SumKind::Plain => it.for_each(|(a, x)| *a = a.add(*x)),
            SumKind::Abs => it.for_each(|(a, x)| *a = a.add(x.abs())),
            SumKind::Square => it.for_each(|(a, x)| *a = a.add(x.mul(*x))),
            SumKind::NonZero => {
                it.for_each(|(a, x)| *a = a.add(if *x == C::ZERO { C::ZERO } else { C::ONE }))
            }
            SumKind::Pow(p) => it.for_each(|(a, x)| *a = a.add(x.pow_abs(p))),
        }
    }
    #[inline(always)]
    fn combine(&self, a: C, b: C) -> C {
        a.add(b)
    }
}

/// Products.
pub(crate) struct Prod;

impl<C: RNum> Reducer<C> for Prod {
    type Acc = C;
    #[inline(always)]
    fn identity(&self) -> C {
        C::ONE
    }
    #[inline(always)]
    fn fold(&self, acc: C, xs: &[C], _first: i64) -> C {
        acc.mul(lane_fold(xs, C::ONE, C::mul, C::mul))
    }
    #[inline(always)]
    fn fold_rows(&self, accs: &mut [C], xs: &[C], _row: i64) {
        accs.iter_mut().zip(xs).for_each(|(a, x)| *a = a.mul(*x));
    }
    #[inline(always)]
    fn combine(&self, a: C, b: C) -> C {
        a.mul(b)
    }
}

/// NaN-propagating maximum (`MAX`) or minimum of `x` or of `|x|` (`abs`, for the ∞-norms).
/// Also `all` / `any` over truth values (minimum / maximum of 0/1 bytes).
pub(crate) struct Extreme<const MAX: bool> {
    /// Compare absolute values.
    pub(crate) abs: bool,
    /// The accumulator of an empty reduction.
    pub(crate) init: f64,
}

impl<const MAX: bool> Extreme<MAX> {
    /// The plain maximum / minimum, starting from the lowest / highest value.
    pub(crate) fn plain() -> Self {
        Extreme {
            abs: false,
            init: if MAX {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            },
        }
    }

    #[inline(always)]
    fn pick<C: RNum>(a: C, b: C) -> C {
        if MAX { max_nan(a, b) } else { min_nan(a, b) }
    }
}

impl<C: RNum, const MAX: bool> Reducer<C> for Extreme<MAX> {
    type Acc = C;
    #[inline(always)]
    fn identity(&self) -> C {
        if self.init == f64::NEG_INFINITY {
            C::LOWEST
        } else if self.init == f64::INFINITY {
            C::HIGHEST
        } else {
            C::from_f64_lossy(self.init)
        }
    }
    #[inline(always)]
    fn fold(&self, acc: C, xs: &[C], _first: i64) -> C {
        let init = <Self as Reducer<C>>::identity(self);
        let r = if self.abs {
            lane_fold(xs, init, |a, x: C| Self::pick(a, x.abs()), Self::pick)
        } else {
            lane_fold(xs, init, Self::pick, Self::pick)
        };
        Self::pick(acc, r)
    }
    #[inline(always)]
    fn fold_rows(&self, accs: &mut [C], xs: &[C], _row: i64) {
        if self.abs {
            accs.iter_mut()
                .zip(xs)
                .for_each(|(a, x)| *a = Self::pick(*a, x.abs()));
        } else {
            accs.iter_mut()
                .zip(xs)
                .for_each(|(a, x)| *a = Self::pick(*a, *x));
        }
    }
    #[inline(always)]
    fn combine(&self, a: C, b: C) -> C {
        Self::pick(a, b)
    }
}

/// Value and index of the maximum (`MAX`) or minimum: the first NaN wins, then the first of
/// equal extremes. The index is -1 for an empty reduction.
pub(crate) struct ArgBest<const MAX: bool>;

impl<const MAX: bool> ArgBest<MAX> {
    #[inline(always)]
    fn better<C: RNum>(x: C, cur: C) -> bool {
        (if MAX { x > cur } else { x < cur }) || (x.is_nan() && !cur.is_nan())
    }
}

impl<C: RNum, const MAX: bool> Reducer<C> for ArgBest<MAX> {
    type Acc = (C, i64);
    #[inline(always)]
    fn identity(&self) -> (C, i64) {
        (C::ZERO, -1)
    }
    /// Two passes over the run instead of one compare-and-branch per element: the extreme
    /// value, lane-folded (a vector compare and blend), then the first element that matches
    /// it (the first NaN when the extreme is NaN), found in a run the first pass just brought
    /// into cache. The element found is the one a sequential scan would keep (`better` is
    /// strict, so a scan keeps the first of equal extremes, `-0.0` and `0.0` included).
    #[inline(always)]
    fn fold(&self, acc: (C, i64), xs: &[C], first: i64) -> (C, i64) {
        let Some(&x0) = xs.first() else {
            return acc;
        };
        let pick = |a: C, x: C| if Self::better(x, a) { x } else { a };
        let best = lane_fold(xs, x0, pick, pick);
        let at = if best.is_nan() {
            xs.iter().position(|x| x.is_nan())
        } else {
            xs.iter().position(|&x| x == best)
        };
        // `best` is one of the elements, so a match exists; the fallback is never taken.
        let k = at.unwrap_or(0);
        let found = (xs[k], first + k as i64);
        self.combine(acc, found)
    }
    #[inline(always)]
    fn fold_rows(&self, accs: &mut [(C, i64)], xs: &[C], row: i64) {
        for (a, &x) in accs.iter_mut().zip(xs) {
            if a.1 < 0 || Self::better(x, a.0) {
                *a = (x, row);
            }
        }
    }
    #[inline(always)]
    fn combine(&self, a: (C, i64), b: (C, i64)) -> (C, i64) {
        if a.1 < 0 || (b.1 >= 0 && Self::better(b.0, a.0)) {
            b
        } else {
            a
        }
    }
}

/// Count, mean and sum of squared deviations (for `var`, `std`, `var_mean`), in `f64`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Moments {
    /// Number of elements.
    pub(crate) n: f64,
    /// Their mean.
    pub(crate) mean: f64,
    /// Σ (x - mean)².
    pub(crate) m2: f64,
}

impl Moments {
    /// `m2 / max(n - correction, 0)`, as PyTorch's Welford projection.
    pub(crate) fn var(&self, correction: f64) -> f64 {
        let divisor = if self.n > correction {
            self.n - correction
        } else {
            0.0
        };
        self.m2 / divisor
    }
}

/// Moments: runs are folded two-pass (mean, then squared deviations) and merged with Chan's
/// formula; rows with Welford's update.
pub(crate) struct Welford;

impl Reducer<f64> for Welford {
    type Acc = Moments;
    #[inline(always)]
    fn identity(&self) -> Moments {
        Moments::default()
    }
    #[inline(always)]
    fn fold(&self, acc: Moments, xs: &[f64], _first: i64) -> Moments {
        if xs.is_empty() {
            return acc;
        }
        let n = xs.len() as f64;
        let mean = f64::plain_sum(xs) / n;
        let m2 = crate::sum_simd::sum_squared_deviations_f64(xs, mean);
        self.combine(acc, Moments { n, mean, m2 })
    }
    #[inline(always)]
    fn fold_rows(&self, accs: &mut [Moments], xs: &[f64], _row: i64) {
        for (a, &x) in accs.iter_mut().zip(xs) {
            let n = a.n + 1.0;
            let delta = x - a.mean;
            let mean = a.mean + delta / n;
            *a = Moments {
                n,
                mean,
                m2: a.m2 + delta * (x - mean),
            };
        }
    }
    #[inline(always)]
    fn combine(&self, a: Moments, b: Moments) -> Moments {
        if a.n == 0.0 {
            return b;
        }
        if b.n == 0.0 {
            return a;
        }
        let n = a.n + b.n;
        let delta = b.mean - a.mean;
        let nb_over_n = b.n / n;
        Moments {
            n,
            mean: a.mean + delta * nb_over_n,
            m2: a.m2 + b.m2 + delta * delta * a.n * nb_over_n,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Plans
// ---------------------------------------------------------------------------------------------

/// One dimension of a plan.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Dim {
    size: usize,
    /// Input stride, in elements.
    stride: i64,
    /// Stride in the logical (row-major) output order; 0 for reduced dimensions.
    ostride: usize,
}

/// A reduction over one input (see the module documentation).
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Kept dimensions, outermost first.
    kept: SmallVec<[Dim; 6]>,
    /// Reduced dimensions, outermost first; never empty (a size-1 dimension stands in when
    /// nothing is reduced, see `trivial`).
    reduced: SmallVec<[Dim; 6]>,
    /// Nothing is actually reduced (each output reads one element).
    trivial: bool,
    /// Input storage offset of the first element.
    offset: i64,
    n_out: usize,
    n_red: usize,
    /// Reduced index of the plan's first reduced element (non-zero for split parts).
    index_base: i64,
    /// Plan order of the outputs is their logical order.
    logical: bool,
}

fn sizes_to_usize(sizes: &[i64]) -> Result<SmallVec<[usize; 6]>> {
    sizes
        .iter()
        .map(|s| {
            usize::try_from(*s)
                .map_err(|_| Error::runtime("reduction over a tensor with a negative size"))
        })
        .collect()
}

/// Merges adjacent dimensions (outermost first) that step through input and output as one.
fn coalesce(dims: &[Dim]) -> SmallVec<[Dim; 6]> {
    let mut out: SmallVec<[Dim; 6]> = SmallVec::new();
    for d in dims.iter().rev() {
        match out.last_mut() {
            Some(inner)
                if d.stride == inner.stride * inner.size as i64
                    && d.ostride == inner.ostride * inner.size =>
            {
                inner.size *= d.size;
            }
            _ => out.push(*d),
        }
    }
    out.reverse();
    out
}

impl Plan {
    fn new(sizes: &[i64], strides: &[i64], offset: i64, mask: u64) -> Result<Plan> {
        let sizes = sizes_to_usize(sizes)?;
        let ndim = sizes.len();
        let reduced_dim = |d: usize| d < 64 && (mask >> d) & 1 == 1;
        let mut ostrides = SmallVec::<[usize; 6]>::from_elem(0, ndim);
        let mut acc = 1usize;
        for d in (0..ndim).rev() {
            if !reduced_dim(d) {
                ostrides[d] = acc;
                acc = acc.saturating_mul(sizes[d]);
            }
        }
        let n_out = (0..ndim)
            .filter(|d| !reduced_dim(*d))
            .map(|d| sizes[d])
            .product();
        let n_red = (0..ndim)
            .filter(|d| reduced_dim(*d))
            .map(|d| sizes[d])
            .product();
        let mut kept: SmallVec<[Dim; 6]> = SmallVec::new();
        let mut reduced: SmallVec<[Dim; 6]> = SmallVec::new();
        for d in 0..ndim {
            if sizes[d] == 1 {
                continue;
            }
            let dim = Dim {
                size: sizes[d],
                stride: strides[d],
                ostride: ostrides[d],
            };
            if reduced_dim(d) {
                reduced.push(dim)
            } else {
                kept.push(dim)
            }
        }
        kept.sort_by(|a, b| b.stride.cmp(&a.stride).then(b.ostride.cmp(&a.ostride)));
        reduced.sort_by_key(|d| std::cmp::Reverse(d.stride));
        let kept = coalesce(&kept);
        let mut reduced = coalesce(&reduced);
        let trivial = reduced.is_empty();
        if trivial {
            reduced.push(Dim {
                size: 1,
                stride: 1,
                ostride: 0,
            });
        }
        let mut expected = 1usize;
        let mut logical = true;
        for d in kept.iter().rev() {
            logical &= d.ostride == expected;
            expected = expected.saturating_mul(d.size);
        }
        Ok(Plan {
            kept,
            reduced,
            trivial,
            offset,
            n_out,
            n_red,
            index_base: 0,
            logical,
        })
    }

    /// Whether rows of the reduction are folded into tiles of outputs (outer reduction).
    fn vertical(&self) -> bool {
        match (self.kept.last(), self.reduced.last()) {
            (Some(k), Some(r)) => self.trivial || k.stride < r.stride,
            _ => false,
        }
    }

    /// Splits the outermost reduced dimension with at least `parts` positions into `parts`
    /// ranges, or `None` when no dimension is that large.
    fn split_reduction(&self, parts: usize) -> Option<Vec<Plan>> {
        if self.trivial {
            return None;
        }
        let k = self.reduced.iter().position(|d| d.size >= parts)?;
        let dim = self.reduced[k];
        let inner: usize = self.reduced[k + 1..].iter().map(|d| d.size).product();
        let step = dim.size.div_ceil(parts);
        Some(
            (0..dim.size)
                .step_by(step)
                .map(|start| {
                    let len = step.min(dim.size - start);
                    let mut p = self.clone();
                    p.reduced[k].size = len;
                    p.offset += dim.stride * start as i64;
                    p.index_base += (start * inner) as i64;
                    p.n_red = self.n_red / dim.size * len;
                    p
                })
                .collect(),
        )
    }

    /// Reorders plan-ordered values into logical output order.
    fn to_logical<A: Copy>(&self, values: Vec<A>) -> Vec<A> {
        if self.logical {
            return values;
        }
        let logical_dims: SmallVec<[Dim; 6]> = self
            .kept
            .iter()
            .map(|d| Dim {
                size: d.size,
                stride: d.ostride as i64,
                ostride: 0,
            })
            .collect();
        let mut out = values.clone();
        let mut k = 0usize;
        for (off, len, _) in Runs::new(&logical_dims, 0, 0, self.n_out) {
            let step = logical_dims.last().map_or(0, |d| d.stride);
            for j in 0..len {
                if let (Some(slot), Some(v)) = (
                    usize::try_from(off + step * j as i64)
                        .ok()
                        .and_then(|i| out.get_mut(i)),
                    values.get(k),
                ) {
                    *slot = *v;
                }
                k += 1;
            }
        }
        out
    }
}

/// The row-major iteration over `dims` (outermost first) from linear index `start` to `end`,
/// as runs along the innermost dimension: `(offset of the run's first element, length, linear
/// index of the run's first element)`. No dimensions means a single position.
struct Runs<'a> {
    dims: &'a [Dim],
    index: SmallVec<[usize; 6]>,
    offset: i64,
    pos: usize,
    end: usize,
}

impl<'a> Runs<'a> {
    #[inline(always)]
    fn new(dims: &'a [Dim], base: i64, start: usize, end: usize) -> Runs<'a> {
        let mut index = SmallVec::from_elem(0usize, dims.len());
        let mut offset = base;
        let mut rem = start;
        for (d, dim) in dims.iter().enumerate().rev() {
            let i = rem % dim.size.max(1);
            rem /= dim.size.max(1);
            index[d] = i;
            offset += dim.stride * i as i64;
        }
        let end = if dims.is_empty() { end.min(1) } else { end };
        Runs {
            dims,
            index,
            offset,
            pos: start,
            end,
        }
    }
}

impl Iterator for Runs<'_> {
    type Item = (i64, usize, usize);

    #[inline(always)]
    fn next(&mut self) -> Option<(i64, usize, usize)> {
        if self.pos >= self.end {
            return None;
        }
        let Some(last) = self.dims.len().checked_sub(1) else {
            self.pos = self.end;
            return Some((self.offset, 1, 0));
        };
        let inner = self.dims[last];
        let len = (inner.size - self.index[last]).min(self.end - self.pos);
        let item = (self.offset, len, self.pos);
        self.pos += len;
        if self.pos < self.end {
            self.index[last] += len;
            self.offset += inner.stride * len as i64;
            let mut d = last;
            while self.index[d] == self.dims[d].size && d > 0 {
                self.offset -= self.dims[d].stride * self.dims[d].size as i64;
                self.index[d] = 0;
                d -= 1;
                self.index[d] += 1;
                self.offset += self.dims[d].stride;
            }
        }
        Some(item)
    }
}

// ---------------------------------------------------------------------------------------------
// Input access
// ---------------------------------------------------------------------------------------------

/// The input's elements: in place when they already are compute values, else converted.
pub(crate) enum Source<'a, S: Elem, C> {
    Direct(&'a [C]),
    Convert(&'a [S::Repr]),
}

fn out_of_range() -> Error {
    Error::runtime("internal error: reduction access outside the tensor's storage")
}

impl<S: Elem, C: RNum> Source<'_, S, C> {
    /// `len` elements from `offset` as a slice, when they are stored as compute values.
    #[inline(always)]
    fn slice(&self, offset: i64, len: usize) -> Option<&[C]> {
        match self {
            Source::Direct(d) => {
                let o = usize::try_from(offset).ok()?;
                d.get(o..o.checked_add(len)?)
            }
            Source::Convert(_) => None,
        }
    }

    /// Reads `dst.len()` elements from `offset` with `stride` into `dst`.
    #[inline(always)]
    fn gather(&self, offset: i64, stride: i64, dst: &mut [C]) -> Result<()> {
        let n = dst.len();
        if n == 0 {
            return Ok(());
        }
        let last = offset + stride * (n as i64 - 1);
        let (lo, hi) = (offset.min(last), offset.max(last));
        let len = match self {
            Source::Direct(d) => d.len(),
            Source::Convert(data) => data.len(),
        };
        if lo < 0 || hi as usize >= len {
            return Err(out_of_range());
        }
        if stride == 1 {
            // A contiguous run (checked in bounds above): a plain loop the compiler vectorises.
            let lo = lo as usize;
            match self {
                Source::Direct(d) => dst.copy_from_slice(&d[lo..lo + n]),
                Source::Convert(data) => {
                    for (v, x) in dst.iter_mut().zip(&data[lo..lo + n]) {
                        *v = convert::<S, C>(S::from_repr(*x));
                    }
                }
            }
            return Ok(());
        }
        let at = |i: usize| (offset + stride * i as i64) as usize;
        match self {
            Source::Direct(d) => dst.iter_mut().enumerate().for_each(|(i, v)| *v = d[at(i)]),
            Source::Convert(data) => dst
                .iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v = convert::<S, C>(S::from_repr(data[at(i)]))),
        }
        Ok(())
    }

    /// `n` elements from `offset` with `stride`: in place if possible, else through `buf`.
    #[inline(always)]
    fn row<'b>(&'b self, offset: i64, stride: i64, n: usize, buf: &'b mut [C]) -> Result<&'b [C]> {
        if stride == 1
            && let Some(s) = self.slice(offset, n)
        {
            return Ok(s);
        }
        let dst = buf.get_mut(..n).ok_or_else(out_of_range)?;
        self.gather(offset, stride, dst)?;
        Ok(dst)
    }
}

// ---------------------------------------------------------------------------------------------
// Execution
// ---------------------------------------------------------------------------------------------

/// Folds a run of `len` reduced elements at `offset` with `stride`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn fold_run<S: Elem, C: RNum, R: Reducer<C>>(
    src: &Source<'_, S, C>,
    op: &R,
    mut acc: R::Acc,
    offset: i64,
    len: usize,
    stride: i64,
    first: i64,
    buf: &mut [C],
) -> Result<R::Acc> {
    if stride == 1
        && let Some(s) = src.slice(offset, len)
    {
        return Ok(op.fold(acc, s, first));
    }
    let mut done = 0usize;
    while done < len {
        let n = GATHER.min(len - done).min(buf.len());
        let dst = buf.get_mut(..n).ok_or_else(out_of_range)?;
        src.gather(offset + stride * done as i64, stride, dst)?;
        acc = op.fold(acc, dst, first + done as i64);
        done += n;
    }
    Ok(acc)
}

/// Folds every reduced row into the outputs of one tile (`accs`, starting at input `base`
/// with kept stride `kstride`), cascading groups of rows.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn fold_tile<S: Elem, C: RNum, R: Reducer<C>>(
    plan: &Plan,
    src: &Source<'_, S, C>,
    op: &R,
    base: i64,
    kstride: i64,
    accs: &mut [R::Acc],
    levels: &mut [Vec<R::Acc>; 2],
    buf: &mut [C],
) -> Result<()> {
    let w = accs.len();
    let id = op.identity();
    let [l0, l1] = levels;
    let (l0, l1) = (&mut l0[..w], &mut l1[..w]);
    l0.fill(id);
    l1.fill(id);
    let (mut c0, mut c1) = (0usize, 0usize);
    let rstride = plan.reduced.last().map_or(0, |d| d.stride);
    for (roff, rlen, rpos) in Runs::new(&plan.reduced, base, 0, plan.n_red) {
        for i in 0..rlen {
            let xs = src.row(roff + rstride * i as i64, kstride, w, buf)?;
            op.fold_rows(l0, xs, plan.index_base + (rpos + i) as i64);
            c0 += 1;
            if c0 == GROUP {
                l1.iter_mut().zip(l0.iter_mut()).for_each(|(a, b)| {
                    *a = op.combine(*a, *b);
                    *b = id;
                });
                c0 = 0;
                c1 += 1;
                if c1 == GROUP {
                    accs.iter_mut().zip(l1.iter_mut()).for_each(|(a, b)| {
                        *a = op.combine(*a, *b);
                        *b = id;
                    });
                    c1 = 0;
                }
            }
        }
    }
    for ((a, b), c) in accs.iter_mut().zip(l1.iter()).zip(l0.iter()) {
        *a = op.combine(*a, op.combine(*b, *c));
    }
    Ok(())
}

/// Computes the accumulators of plan outputs `start .. start + accs.len()`.
#[inline(always)]
fn run_outputs_body<S: Elem, C: RNum, R: Reducer<C>>(
    plan: &Plan,
    src: &Source<'_, S, C>,
    op: &R,
    start: usize,
    accs: &mut [R::Acc],
) -> Result<()> {
    let end = start + accs.len();
    let kstride = plan.kept.last().map_or(0, |d| d.stride);
    if plan.vertical() {
        let tile = TILE.min(plan.kept.last().map_or(1, |d| d.size));
        let mut levels = [vec![op.identity(); tile], vec![op.identity(); tile]];
        let mut buf = vec![C::ZERO; tile];
        for (off, len, pos) in Runs::new(&plan.kept, plan.offset, start, end) {
            let mut j = 0;
            while j < len {
                let w = tile.min(len - j);
                let first = pos - start + j;
                let a = accs.get_mut(first..first + w).ok_or_else(out_of_range)?;
                fold_tile(
                    plan,
                    src,
                    op,
                    off + kstride * j as i64,
                    kstride,
                    a,
                    &mut levels,
                    &mut buf,
                )?;
                j += w;
            }
        }
        return Ok(());
    }
    let (rstride, rsize) = plan.reduced.last().map_or((1, 1), |d| (d.stride, d.size));
    let mut buf = vec![C::ZERO; GATHER.min(rsize.max(1))];
    for (off, len, pos) in Runs::new(&plan.kept, plan.offset, start, end) {
        for j in 0..len {
            let mut acc = op.identity();
            for (roff, rlen, rpos) in
                Runs::new(&plan.reduced, off + kstride * j as i64, 0, plan.n_red)
            {
                acc = fold_run(
                    src,
                    op,
                    acc,
                    roff,
                    rlen,
                    rstride,
                    plan.index_base + rpos as i64,
                    &mut buf,
                )?;
            }
            *accs.get_mut(pos - start + j).ok_or_else(out_of_range)? = acc;
        }
    }
    Ok(())
}

multiversion! {
    /// [`run_outputs_body`] in the best instruction set available.
    fn run_outputs / run_outputs_avx2 / run_outputs_body<S: Elem, C: RNum, R: Reducer<C>>(
        plan: &Plan,
        src: &Source<'_, S, C>,
        op: &R,
        start: usize,
        accs: &mut [R::Acc],
    ) -> Result<()>
}

/// Runs a plan, in parallel above [`GRAIN_SIZE`]; returns accumulators in logical order.
fn run_plan<S: Elem, C: RNum, R: Reducer<C>>(
    plan: &Plan,
    src: &Source<'_, S, C>,
    op: &R,
) -> Result<Vec<R::Acc>> {
    let id = op.identity();
    let mut accs = switchyard_core::alloc::try_vec(plan.n_out, id)?;
    if plan.n_out == 0 || plan.n_red == 0 {
        return Ok(accs);
    }
    let threads = parallel::num_threads();
    let work = plan.n_out.saturating_mul(plan.n_red);
    if work < GRAIN_SIZE || threads < 2 {
        run_outputs(plan, src, op, 0, &mut accs)?;
    } else if plan.n_out >= 4 * threads {
        let chunk = plan.n_out.div_ceil(4 * threads);
        parallel::for_each_chunk_mut(&mut accs, chunk, &|i, part| {
            run_outputs(plan, src, op, i * chunk, part)
        })?;
    } else if let Some(parts) = plan.split_reduction(threads) {
        // One partial per thread: a handful of vectors.
        let mut partials = Vec::with_capacity(parts.len());
        for _ in &parts {
            partials.push(switchyard_core::alloc::try_vec(plan.n_out, id)?);
        }
        let items = parts.iter().zip(partials.iter_mut());
        parallel::for_each_item(items, &|(p, a)| run_outputs(p, src, op, 0, a))?;
        for part in partials {
            accs.iter_mut()
                .zip(part)
                .for_each(|(a, b)| *a = op.combine(*a, b));
        }
    } else {
        run_outputs(plan, src, op, 0, &mut accs)?;
    }
    Ok(plan.to_logical(accs))
}

/// Folds the dimensions of `input` set in `mask` with `op`, reading elements of Rust type `S`
/// (the input's dtype) as compute values `C` (converted unless they are the same type; callers
/// keep the number of `(S, C)` pairs small, each compiles the whole engine); returns one accumulator per output element in
/// row-major order of the kept dimensions.
pub(crate) fn reduce<S: Elem, C: RNum, R: Reducer<C>>(
    input: &Tensor,
    mask: u64,
    op: &R,
) -> Result<Vec<R::Acc>> {
    if input.dtype() != S::DTYPE {
        return Err(Error::runtime(format!(
            "internal error: reduction expected a {} input, got {}",
            S::DTYPE,
            input.dtype()
        )));
    }
    with_tensors(&[(input, Access::Read)], |data| {
        let g = data.geometry(0);
        let plan = Plan::new(g.sizes(), g.strides(), g.storage_offset(), mask)?;
        let bytes = data.bytes(0)?;
        if S::DTYPE == C::DTYPE {
            run_plan(&plan, &Source::<'_, S, C>::Direct(typed::<C>(bytes)?), op)
        } else {
            run_plan(&plan, &Source::<'_, S, C>::Convert(typed::<S>(bytes)?), op)
        }
    })
}

/// Writes `f(values[i])` to the `i`-th element (row-major) of `out`, converting to its dtype.
pub(crate) fn store<A: Sync, T: Element>(
    out: &Tensor,
    values: &[A],
    f: impl Fn(&A) -> T + Sync,
) -> Result<()> {
    with_tensors(&[(out, Access::Write)], |data| {
        let g = data.geometry(0).clone();
        let n = usize::try_from(g.numel()).map_err(|_| out_of_range())?;
        if n != values.len() {
            return Err(Error::runtime(format!(
                "internal error: reduction produced {} values for an output of {n} elements",
                values.len()
            )));
        }
        let dtype = data.dtype(0);
        let bytes = data.bytes_mut(0)?;
        dispatch_dtype!(dtype, D => {
            let dst = typed_mut::<D>(bytes)?;
            let put = |v: &A| D::to_repr(convert::<T, D>(f(v)));
            if g.is_contiguous() {
                let o = usize::try_from(g.storage_offset()).map_err(|_| out_of_range())?;
                let dst = dst.get_mut(o..o + n).ok_or_else(out_of_range)?;
                if n >= GRAIN_SIZE {
                    let chunk = GRAIN_SIZE / 4;
                    parallel::for_each_chunk_mut(dst, chunk, &|i, d| {
                        let v = parallel::chunk_of(values, chunk, i);
                        d.iter_mut().zip(v).for_each(|(d, v)| *d = put(v));
                        Ok(())
                    })?;
                } else {
                    dst.iter_mut().zip(values).for_each(|(d, v)| *d = put(v));
                }
            } else {
                for (off, v) in g.offsets().zip(values) {
                    let slot = usize::try_from(off).ok().and_then(|o| dst.get_mut(o)).ok_or_else(out_of_range)?;
                    *slot = put(v);
                }
            }
            Ok(())
        })
    })
}

/// A contiguous copy of `t` with dtype `dtype` (`t.to(dtype).contiguous()`, PyTorch's
/// conversion semantics).
pub(crate) fn contiguous_as(t: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    let out = Tensor::allocate(&t.sizes(), dtype, t.device())?;
    dispatch_dtype!(dtype, E => crate::loops::map::<E, E, 1>(&out, [t], |[v]| v))?;
    Ok(out)
}

/// `t` itself when it is contiguous with dtype `dtype`, else a converted contiguous copy.
pub(crate) fn contiguous_with(t: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    if t.dtype() == dtype && t.is_contiguous() {
        Ok(t.clone())
    } else {
        contiguous_as(t, dtype)
    }
}

// ---------------------------------------------------------------------------------------------
// exp, softmax and log_softmax
// ---------------------------------------------------------------------------------------------

/// Floats softmax and layer_norm compute in.
pub(crate) trait SoftFloat: RNum {
    /// `e^x` for `x <= 0` or NaN, the only arguments softmax takes the exponential of
    /// (`x - max`); vectorisable and within 1 ulp for `f32` (`math::exp_nonpos_f32`, whose
    /// fused multiply-adds are correctly rounded everywhere), libm's for `f64`.
    fn exp_(self) -> Self;
    /// Natural logarithm.
    fn ln_(self) -> Self;
    /// Square root.
    fn sqrt_(self) -> Self;
    /// Writes the layer-norm row `(x * rstd + shift) * gamma + beta` (the bits of
    /// [`normalized`]) into `y` with streaming stores, if this type and the CPU have them;
    /// `false` (nothing written) otherwise.
    fn stream_normalized(
        streamer: &mut Streamer,
        x: &[Self],
        y: &mut [MaybeUninit<Self>],
        rstd: Self,
        shift: Self,
        gamma: &[Self],
        beta: &[Self],
    ) -> bool;
}

impl SoftFloat for f32 {
    #[inline(always)]
    fn exp_(self) -> f32 {
        crate::math::exp_nonpos_f32(self)
    }
    #[inline(always)]
    fn ln_(self) -> f32 {
        self.ln()
    }
    #[inline(always)]
    fn sqrt_(self) -> f32 {
        self.sqrt()
    }
    #[inline(always)]
    fn stream_normalized(
        streamer: &mut Streamer,
        x: &[f32],
        y: &mut [MaybeUninit<f32>],
        rstd: f32,
        shift: f32,
        gamma: &[f32],
        beta: &[f32],
    ) -> bool {
        streamer.normalized_row_f32(x, y, rstd, shift, gamma, beta)
    }
}

impl SoftFloat for f64 {
    #[inline(always)]
    fn exp_(self) -> f64 {
        self.exp()
    }
    #[inline(always)]
    fn ln_(self) -> f64 {
        self.ln()
    }
    #[inline(always)]
    fn sqrt_(self) -> f64 {
        self.sqrt()
    }
    #[inline(always)]
    fn stream_normalized(
        streamer: &mut Streamer,
        x: &[f64],
        y: &mut [MaybeUninit<f64>],
        rstd: f64,
        shift: f64,
        gamma: &[f64],
        beta: &[f64],
    ) -> bool {
        streamer.normalized_row_f64(x, y, rstd, shift, gamma, beta)
    }
}

/// Independent accumulators of [`row_max`]: `max` has a latency of several cycles, and 32
/// lanes (two AVX-512 registers of `f32`) would leave the row's first pass latency-bound.
const MAX_LANES: usize = 64;

/// The largest element of a row, ignoring NaN: `v > a ? v : a` is one `max` instruction per
/// vector, where a NaN-propagating maximum needs a compare and a blend more. Ignoring NaN is
/// harmless here: a NaN element makes the sum of exponentials NaN, so every output of its row
/// is NaN anyway (as with PyTorch, whose maximum propagates it).
#[inline(always)]
fn row_max<F: SoftFloat>(x: &[F]) -> F {
    let bigger = |a: F, v: F| if v > a { v } else { a };
    let mut acc = [F::LOWEST; MAX_LANES];
    let (chunks, rest) = x.as_chunks::<MAX_LANES>();
    for c in chunks {
        for i in 0..MAX_LANES {
            acc[i] = bigger(acc[i], c[i]);
        }
    }
    let m = rest.iter().fold(F::LOWEST, |a, v| bigger(a, *v));
    acc.iter().fold(m, |a, v| bigger(a, *v))
}

/// Softmax (or log-softmax) of contiguous rows of length `dim`: the row's maximum, then
/// `e^(x - max)` summed and stored (for log-softmax `x - max` is stored), then the scaling by
/// `1 / sum` (or the subtraction of `ln(sum)`). A row of 1024 `f32` is 4 KB, so the passes after the
/// first read it from L1. The sums use [`LANES`] accumulators whatever the instruction set, so
/// every variant gives the same bits. The first pass over a row writes every element of its
/// output row, so `out` may be uninitialised memory.
///
/// `ahead` is memory the caller touches next (see [`Ahead`]).
#[inline(always)]
fn softmax_rows_body<F: SoftFloat>(
    x: &[F],
    out: &mut [MaybeUninit<F>],
    dim: usize,
    log: bool,
    mut ahead: Ahead,
) {
    let chunk_bytes = LANES * std::mem::size_of::<F>();
    for (xr, or) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
        let max = row_max(xr);
        let mut acc = [F::ZERO; LANES];
        let (oc, orest) = or.as_chunks_mut::<LANES>();
        let (xc, xrest) = xr.as_chunks::<LANES>();
        if log {
            // `x - max` is stored during the exponentials, whose arithmetic hides the output's
            // cache misses; the last pass then subtracts `ln(sum)` in L1. A separate store pass
            // `x - max - ln(sum)` (same values) was 15% slower on [4096, 1024].
            for (o, v) in oc.iter_mut().zip(xc) {
                ahead.next(chunk_bytes);
                for i in 0..LANES {
                    let d = v[i].sub(max);
                    o[i] = MaybeUninit::new(d);
                    acc[i] = acc[i].add(d.exp_());
                }
            }
            for ((o, v), a) in orest.iter_mut().zip(xrest).zip(acc.iter_mut()) {
                let d = v.sub(max);
                *o = MaybeUninit::new(d);
                *a = a.add(d.exp_());
            }
            // SAFETY: `xr` and `or` both have `dim` elements (`chunks_exact`), so the loops
            // above (the `LANES`-chunks, then the shorter rest) wrote every element of `or`.
            let or = unsafe { or.assume_init_mut() };
            let lse = lane_fold(&acc, F::ZERO, F::add, F::add).ln_();
            or.iter_mut().for_each(|o| *o = o.sub(lse));
        } else {
            for (o, v) in oc.iter_mut().zip(xc) {
                ahead.next(chunk_bytes);
                for i in 0..LANES {
                    let e = v[i].sub(max).exp_();
                    o[i] = MaybeUninit::new(e);
                    acc[i] = acc[i].add(e);
                }
            }
            for ((o, v), a) in orest.iter_mut().zip(xrest).zip(acc.iter_mut()) {
                let e = v.sub(max).exp_();
                *o = MaybeUninit::new(e);
                *a = a.add(e);
            }
            // SAFETY: `xr` and `or` both have `dim` elements (`chunks_exact`), so the loops
            // above (the `LANES`-chunks, then the shorter rest) wrote every element of `or`.
            let or = unsafe { or.assume_init_mut() };
            let sum = lane_fold(&acc, F::ZERO, F::add, F::add);
            let inv = F::ONE.div(sum);
            or.iter_mut().for_each(|o| *o = o.mul(inv));
        }
    }
}

multiversion! {
    /// [`softmax_rows_body`] in the best instruction set available (AVX-512 included: the
    /// exponential makes these rows compute-bound).
    fn softmax_rows / softmax_rows_avx2 / softmax_rows_avx512 / softmax_rows_body<F: SoftFloat>(x: &[F], out: &mut [MaybeUninit<F>], dim: usize, log: bool, ahead: Ahead) -> ()
}

/// Memory a caller touches after a [`softmax_rows`] call (its next rows of input and of
/// output), which the call's compute-bound exponential passes prefetch at the pace they walk
/// their own rows, so that those reads (and the output's reads for ownership) overlap
/// arithmetic instead of following it. Only addresses: nothing is read through them.
#[derive(Clone, Copy)]
pub(crate) struct Ahead {
    streams: [(*const u8, usize); 2],
}

impl Ahead {
    /// Nothing to prefetch.
    #[cfg(test)]
    pub(crate) const NONE: Ahead = Ahead {
        streams: [(std::ptr::null(), 0); 2],
    };

    /// The elements of `input` and of `output` (each may be empty).
    pub(crate) fn of<T, U>(input: &[T], output: &[U]) -> Ahead {
        Ahead {
            streams: [
                (input.as_ptr().cast(), std::mem::size_of_val(input)),
                (output.as_ptr().cast(), std::mem::size_of_val(output)),
            ],
        }
    }

    /// The elements of `input`, and `len` elements from `output` on (an address only: the
    /// caller may hold them mutably elsewhere, nothing is read through it).
    pub(crate) fn of_raw<T, U>(input: &[T], output: *const U, len: usize) -> Ahead {
        Ahead {
            streams: [
                (input.as_ptr().cast(), std::mem::size_of_val(input)),
                (output.cast(), len.saturating_mul(std::mem::size_of::<U>())),
            ],
        }
    }

    /// Prefetches the next `bytes` of each stream into the first-level cache.
    #[inline(always)]
    fn next(&mut self, bytes: usize) {
        for (at, left) in &mut self.streams {
            if *left == 0 {
                continue;
            }
            let n = bytes.min(*left);
            let mut b = 0;
            while b < n {
                prefetch_line(at.wrapping_add(b));
                b += 64;
            }
            *at = at.wrapping_add(n);
            *left -= n;
        }
    }
}

/// Asks the processor to bring the cache line holding `p` into the first-level cache.
#[inline(always)]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, whatever the address, and changes no
    // memory, so any pointer value is fine.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Per-column statistics of softmax over the middle dimension of `[outer, dim, inner]`:
/// columns `c0 .. c0 + maxs.len()` (flattened over `outer × inner`) get their maximum and
/// `1 / Σ exp(x - max)` (or `ln Σ exp(x - max)` for log-softmax).
#[inline(always)]
fn softmax_stats_body<F: SoftFloat>(
    x: &[F],
    maxs: &mut [F],
    sums: &mut [F],
    c0: usize,
    dim: usize,
    inner: usize,
    log: bool,
) {
    let mut done = 0usize;
    while done < maxs.len() {
        let c = c0 + done;
        let (o, j) = (c / inner, c % inner);
        let len = (inner - j).min(maxs.len() - done);
        let m = &mut maxs[done..done + len];
        let s = &mut sums[done..done + len];
        let base = o * dim * inner + j;
        m.fill(F::LOWEST);
        for d in 0..dim {
            let row = &x[base + d * inner..base + d * inner + len];
            m.iter_mut()
                .zip(row)
                .for_each(|(a, v)| *a = max_nan(*a, *v));
        }
        s.fill(F::ZERO);
        for d in 0..dim {
            let row = &x[base + d * inner..base + d * inner + len];
            s.iter_mut()
                .zip(row)
                .zip(m.iter())
                .for_each(|((a, v), mx)| *a = a.add(v.sub(*mx).exp_()));
        }
        if log {
            s.iter_mut().for_each(|v| *v = v.ln_());
        } else {
            s.iter_mut().for_each(|v| *v = F::ONE.div(*v));
        }
        done += len;
    }
}

multiversion! {
    /// [`softmax_stats_body`] in the best instruction set available.
    fn softmax_stats / softmax_stats_avx2 / softmax_stats_body<F: SoftFloat>(
        x: &[F], maxs: &mut [F], sums: &mut [F], c0: usize, dim: usize, inner: usize, log: bool,
    ) -> ()
}

/// Applies the statistics to rows `r0 ..` (each of `inner` elements) of `[outer, dim, inner]`,
/// writing every element of `out` (which may be uninitialised).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn softmax_apply_body<F: SoftFloat>(
    x: &[F],
    out: &mut [MaybeUninit<F>],
    maxs: &[F],
    sums: &[F],
    r0: usize,
    dim: usize,
    inner: usize,
    log: bool,
) {
    for (k, or) in out.chunks_exact_mut(inner).enumerate() {
        let r = r0 + k;
        let o = r / dim;
        let xr = &x[r * inner..(r + 1) * inner];
        let m = &maxs[o * inner..(o + 1) * inner];
        let s = &sums[o * inner..(o + 1) * inner];
        if log {
            for (((y, v), mx), l) in or.iter_mut().zip(xr).zip(m).zip(s) {
                *y = MaybeUninit::new(v.sub(*mx).sub(*l));
            }
        } else {
            for (((y, v), mx), inv) in or.iter_mut().zip(xr).zip(m).zip(s) {
                *y = MaybeUninit::new(v.sub(*mx).exp_().mul(*inv));
            }
        }
    }
}

multiversion! {
    /// [`softmax_apply_body`] in the best instruction set available.
    fn softmax_apply / softmax_apply_avx2 / softmax_apply_body<F: SoftFloat>(
        x: &[F], out: &mut [MaybeUninit<F>], maxs: &[F], sums: &[F], r0: usize, dim: usize, inner: usize, log: bool,
    ) -> ()
}

/// Softmax (`log`: log-softmax) of contiguous `x` viewed as `[outer, dim, inner]` along the
/// middle dimension, into contiguous `out` of the same shape. Rows (or row groups) run in
/// parallel above [`GRAIN_SIZE`] elements. On success every one of the first
/// `outer * dim * inner` elements of `out` is written, so `out` may be uninitialised memory.
pub(crate) fn softmax<F: SoftFloat>(
    x: &[F],
    out: &mut [MaybeUninit<F>],
    outer: usize,
    dim: usize,
    inner: usize,
    log: bool,
) -> Result<()> {
    let n = outer * dim * inner;
    if n == 0 {
        return Ok(());
    }
    let (x, out) = match (x.get(..n), out.get_mut(..n)) {
        (Some(x), Some(o)) => (x, o),
        _ => return Err(out_of_range()),
    };
    let split = n >= GRAIN_SIZE && parallel::num_threads() > 1;
    // Whole rows per task, about GRAIN_SIZE / 4 elements each.
    let rows_per_task = |row: usize| (GRAIN_SIZE / 4 / row.max(1)).max(1);
    if inner == 1 {
        let chunk = rows_per_task(dim) * dim;
        if split {
            parallel::for_each_chunk_mut(out, chunk, &|i, o| {
                // Each row's exponentials prefetch the next row (of input and of output).
                let ahead = Ahead::of(
                    parallel::chunk_of(x.get(dim..).unwrap_or_default(), chunk, i),
                    o.get(dim..).unwrap_or_default(),
                );
                softmax_rows(parallel::chunk_of(x, chunk, i), o, dim, log, ahead);
                Ok(())
            })?;
        } else {
            let ahead = Ahead::of(
                x.get(dim..).unwrap_or_default(),
                out.get(dim..).unwrap_or_default(),
            );
            softmax_rows(x, out, dim, log, ahead);
        }
        return Ok(());
    }
    let cols = outer * inner;
    let mut maxs = switchyard_core::alloc::try_vec(cols, F::ZERO)?;
    let mut sums = switchyard_core::alloc::try_vec(cols, F::ZERO)?;
    let col_chunk = 256usize;
    let rows = outer * dim;
    let row_chunk = rows_per_task(inner);
    if split {
        let items = maxs
            .chunks_mut(col_chunk)
            .zip(sums.chunks_mut(col_chunk))
            .enumerate();
        parallel::for_each_item(items, &|(i, (m, s))| {
            softmax_stats(x, m, s, i * col_chunk, dim, inner, log);
            Ok(())
        })?;
        parallel::for_each_chunk_mut(out, row_chunk * inner, &|i, o| {
            softmax_apply(x, o, &maxs, &sums, i * row_chunk, dim, inner, log);
            Ok(())
        })?;
    } else {
        softmax_stats(x, &mut maxs, &mut sums, 0, dim, inner, log);
        softmax_apply(x, out, &maxs, &sums, 0, dim, inner, log);
    }
    debug_assert_eq!(rows * inner, n);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// layer_norm rows
// ---------------------------------------------------------------------------------------------

/// `native_layer_norm` of contiguous rows of length `cols = params.cols()` into `y`, with each
/// row's mean and `1 / sqrt(var + eps)` written to `mean` / `rstd` (one per row). When `x` and
/// `y` have `cols * mean.len()` elements, every element of `y` is written (`y` may be
/// uninitialised memory).
///
/// Each row takes three passes: the mean, the biased variance as the mean of `(x - mean)^2`
/// (each folded into [`LANES`] accumulators: unlike `E[x^2] - E[x]^2` this loses nothing when
/// the values share a large offset), and the output. Only the first pass reads memory; the
/// row is in L1 for the other two.
///
/// With `stream`, the output passes write with streaming stores ([`crate::stream`]), which
/// saves reading every output line before it is overwritten: for outputs far larger than the
/// caches, a third of the memory traffic.
#[inline(always)]
fn layer_norm_rows_body<F: SoftFloat>(
    x: &[F],
    y: &mut [MaybeUninit<F>],
    mean: &mut [F],
    rstd: &mut [F],
    params: &RowParams<F>,
    eps: F,
    stream: bool,
) {
    let cols = params.cols();
    if cols == 0 {
        return;
    }
    let rows = mean
        .len()
        .min(rstd.len())
        .min(x.len() / cols)
        .min(y.len() / cols);
    let n = F::from_f64_lossy(cols as f64);
    let mut streamer = stream.then(Streamer::new);
    for r in 0..rows {
        let xr = &x[r * cols..(r + 1) * cols];
        let mu = lane_fold(xr, F::ZERO, F::add, F::add).div(n);
        let rs = F::ONE.div(row_ssd(xr, mu).div(n).add(eps).sqrt_());
        (mean[r], rstd[r]) = (mu, rs);
        let shift = F::ZERO.sub(rs.mul(mu));
        let yr = &mut y[r * cols..(r + 1) * cols];
        let streamed = streamer.as_mut().is_some_and(|s| {
            F::stream_normalized(s, xr, yr, rs, shift, &params.gamma, &params.beta)
        });
        if !streamed {
            let rows = xr.iter().zip(yr.iter_mut());
            for ((v, o), (g, b)) in rows.zip(params.gamma.iter().zip(&params.beta)) {
                *o = MaybeUninit::new(normalized(*v, rs, shift, *g, *b));
            }
        }
    }
}

/// `Σ (x - mu)^2` over a row in the lane order of [`lane_fold`].
#[inline(always)]
fn row_ssd<F: SoftFloat>(x: &[F], mu: F) -> F {
    lane_fold(
        x,
        F::ZERO,
        |a, v: F| a.add(squared_deviation(v, mu)),
        F::add,
    )
}

#[inline(always)]
fn squared_deviation<F: SoftFloat>(v: F, mu: F) -> F {
    let d = v.sub(mu);
    d.mul(d)
}

/// The affine parameters of a layer norm over rows of one length, an absent one replaced by
/// its identity: `t * 1` and `t + (-0)` are exactly `t` for every float `t` (signed zeros and
/// NaN included), so one formula serves all four cases with the bits of leaving the step out.
pub(crate) struct RowParams<F> {
    /// `cols` values.
    gamma: Vec<F>,
    /// `cols` values.
    beta: Vec<F>,
}

impl<F: SoftFloat> RowParams<F> {
    /// Parameters for rows of `cols`; `None` when a given parameter does not hold `cols`
    /// values.
    pub(crate) fn new(
        gamma: Option<Vec<F>>,
        beta: Option<Vec<F>>,
        cols: usize,
    ) -> Result<Option<Self>> {
        let take = |p: Option<Vec<F>>, identity: F| -> Result<Option<Vec<F>>> {
            Ok(match p {
                Some(p) => (p.len() == cols).then_some(p),
                None => Some(switchyard_core::alloc::try_vec(cols, identity)?),
            })
        };
        let (Some(gamma), Some(beta)) =
            (take(gamma, F::ONE)?, take(beta, F::from_f64_lossy(-0.0))?)
        else {
            return Ok(None);
        };
        Ok(Some(RowParams { gamma, beta }))
    }

    /// The row length.
    pub(crate) fn cols(&self) -> usize {
        self.gamma.len()
    }
}

/// PyTorch's `(x * rstd + shift) * gamma + beta`.
#[inline(always)]
fn normalized<F: SoftFloat>(x: F, rstd: F, shift: F, gamma: F, beta: F) -> F {
    x.mul(rstd).add(shift).mul(gamma).add(beta)
}

multiversion! {
    /// [`layer_norm_rows_body`] in the best instruction set available.
    fn layer_norm_rows / layer_norm_rows_avx2 / layer_norm_rows_avx512 / layer_norm_rows_body<F: SoftFloat>(
        x: &[F], y: &mut [MaybeUninit<F>], mean: &mut [F], rstd: &mut [F],
        params: &RowParams<F>, eps: F, stream: bool,
    ) -> ()
}

// ---------------------------------------------------------------------------------------------
// Cumulative sums and products
// ---------------------------------------------------------------------------------------------

/// Scans slabs `[dim, inner]` of contiguous `x` into `out`, accumulating in `A` (PyTorch's
/// `acc_type`: `f64` for `f32`) and storing each running value as `T`.
#[inline(always)]
fn scan_body<T: Elem, A: RNum>(
    x: &[T::Repr],
    out: &mut [T::Repr],
    dim: usize,
    inner: usize,
    prod: bool,
) {
    let slab = dim * inner;
    let id = if prod { A::ONE } else { A::ZERO };
    let step = |a: A, v: T::Repr| {
        let v = convert::<T, A>(T::from_repr(v));
        if prod { a.mul(v) } else { a.add(v) }
    };
    if inner == 1 {
        for (xr, or) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
            let mut acc = id;
            for (o, v) in or.iter_mut().zip(xr) {
                acc = step(acc, *v);
                *o = T::to_repr(convert::<A, T>(acc));
            }
        }
        return;
    }
    let mut accs = vec![id; inner];
    for (xs, os) in x.chunks_exact(slab).zip(out.chunks_exact_mut(slab)) {
        accs.fill(id);
        for (xr, or) in xs.chunks_exact(inner).zip(os.chunks_exact_mut(inner)) {
            for ((a, v), o) in accs.iter_mut().zip(xr).zip(or.iter_mut()) {
                *a = step(*a, *v);
                *o = T::to_repr(convert::<A, T>(*a));
            }
        }
    }
}

multiversion! {
    /// [`scan_body`] in the best instruction set available.
    fn scan_slabs / scan_slabs_avx2 / scan_body<T: Elem, A: RNum>(
        x: &[T::Repr], out: &mut [T::Repr], dim: usize, inner: usize, prod: bool,
    ) -> ()
}

/// Cumulative sum (`prod`: product) of contiguous `x` viewed as `[outer, dim, inner]` along the
/// middle dimension, into contiguous `out`; slabs run in parallel above [`GRAIN_SIZE`].
pub(crate) fn scan<T: Elem, A: RNum>(
    x: &[T::Repr],
    out: &mut [T::Repr],
    outer: usize,
    dim: usize,
    inner: usize,
    prod: bool,
) -> Result<()> {
    let slab = dim * inner;
    let n = outer * slab;
    if n == 0 {
        return Ok(());
    }
    let (x, out) = match (x.get(..n), out.get_mut(..n)) {
        (Some(x), Some(o)) => (x, o),
        _ => return Err(out_of_range()),
    };
    if n >= GRAIN_SIZE && outer > 1 && parallel::num_threads() > 1 {
        let chunk = (GRAIN_SIZE / 4 / slab).max(1) * slab;
        parallel::for_each_chunk_mut(out, chunk, &|i, o| {
            scan_slabs::<T, A>(parallel::chunk_of(x, chunk, i), o, dim, inner, prod);
            Ok(())
        })?;
    } else {
        scan_slabs::<T, A>(x, out, dim, inner, prod);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_core::Device;

    /// Rows of `n` values exercising the row kernels: uniform, a large common offset (exposes
    /// cancellation), huge and tiny magnitudes, `-inf` entries, a NaN, and constant rows.
    fn test_rows(n: usize) -> Vec<(&'static str, Vec<f32>)> {
        let mut state = 0x2545_f491_4f6c_dd1d_u64 ^ n as u64;
        let mut uniform = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let u: Vec<f32> = (0..n).map(|_| uniform()).collect();
        let mut with_inf = u.iter().map(|v| v * 8.0).collect::<Vec<_>>();
        for v in with_inf.iter_mut().step_by(3) {
            *v = f32::NEG_INFINITY;
        }
        let mut with_nan = u.clone();
        with_nan[n / 2] = f32::NAN;
        vec![
            ("uniform", u.clone()),
            ("wide", u.iter().map(|v| v * 40.0).collect()),
            ("offset 1000", u.iter().map(|v| v + 1000.0).collect()),
            ("offset -3e4", u.iter().map(|v| v * 3.0 - 3e4).collect()),
            ("huge", u.iter().map(|v| v * 1e30).collect()),
            ("tiny", u.iter().map(|v| v * 1e-30).collect()),
            ("near max", u.iter().map(|v| f32::MAX * (0.5 + v)).collect()),
            ("-inf entries", with_inf),
            ("all -inf", vec![f32::NEG_INFINITY; n]),
            ("nan", with_nan),
            ("constant", vec![0.1; n]),
        ]
    }

    /// `f(body)`, `f(avx2)` and `f(avx512)` where the CPU has them.
    fn variants<T>(f: impl Fn(u8) -> T) -> Vec<T> {
        let mut out = vec![f(0)];
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx2() {
                out.push(f(1));
            }
            if has_avx512() {
                out.push(f(2));
            }
        }
        out
    }

    fn same_bits(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    fn softmax_variant(level: u8, x: &[f32], out: &mut [f32], dim: usize, log: bool) {
        let mut slots = vec![MaybeUninit::uninit(); out.len()];
        let ys = &mut slots[..];
        match level {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` asks for level 1 only when the CPU has AVX2 and FMA.
            1 => unsafe { softmax_rows_avx2(x, ys, dim, log, Ahead::NONE) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` asks for level 2 only when the CPU has the AVX-512 features.
            2 => unsafe { softmax_rows_avx512(x, ys, dim, log, Ahead::NONE) },
            _ => softmax_rows_body(x, ys, dim, log, Ahead::NONE),
        }
        assert!(dim > 0 && x.len() == out.len() && x.len().is_multiple_of(dim));
        // SAFETY: the kernel writes every element of whole rows of `dim` elements; as just
        // checked, the input and output are the same whole number of rows.
        out.copy_from_slice(unsafe { slots.assume_init_ref() });
    }

    /// Softmax rows against an `f64` reference, and every instruction-set variant against the
    /// baseline bit for bit (they share one summation order, and the exponential's fused
    /// multiply-adds are correctly rounded in every variant).
    ///
    /// Error bound of the `f32` results, with `u = eps/2` the unit roundoff, `d = x - max` and
    /// `S = sum e^d`: `fl(x - max)` errs by `u|d|` relatively, which `e^d` turns into a relative
    /// error of `u|d|`; the exponential adds at most 1 ulp (`2u`); so the sum's terms err by
    /// `u(|d_j| + 2) e^d_j`, that is `A = u sum (|d_j| + 2) e^d_j / S` relative to `S` (computed
    /// below), and summing `n` terms through 32 lanes and a 5-level merge adds `(n/32 + 5) u`
    /// (Higham's bound for a summation tree of that height). Softmax `e^d * (1 / S)` adds two
    /// roundings: `|p - p*| <= p* (u (|d| + n/32 + 9) + A) + 2^-148`, the last term for denormal
    /// results. Log-softmax `(x - max) - ln(S)` with a libm `ln` within 1 ulp:
    /// `|l - l*| <= u (|d| + 2 |ln S| + |l*| + n/32 + 5) + A`.
    #[test]
    fn softmax_rows_match_f64_and_agree_across_instruction_sets() {
        let u = f64::from(f32::EPSILON) / 2.0;
        for n in [
            1usize, 2, 7, 17, 31, 32, 33, 63, 64, 65, 100, 1023, 1024, 1025,
        ] {
            for (name, row) in test_rows(n) {
                // Two copies of the row check that consecutive rows stay independent.
                let x: Vec<f32> = row.iter().chain(&row).copied().collect();
                let max64 = row
                    .iter()
                    .copied()
                    .filter(|v| !v.is_nan())
                    .fold(f64::NEG_INFINITY, |a, v| a.max(f64::from(v)));
                let undefined = row.iter().any(|v| v.is_nan()) || max64 == f64::NEG_INFINITY;
                let ds: Vec<f64> = row.iter().map(|v| f64::from(*v) - max64).collect();
                let sum: f64 = ds.iter().map(|d| d.exp()).sum();
                let a = u * ds
                    .iter()
                    .filter(|d| d.is_finite())
                    .map(|d| (d.abs() + 2.0) * d.exp())
                    .sum::<f64>()
                    / sum;
                let k = (n / 32) as f64;
                for log in [false, true] {
                    let outs = variants(|level| {
                        let mut out = vec![0.0f32; 2 * n];
                        softmax_variant(level, &x, &mut out, n, log);
                        out
                    });
                    for o in &outs[1..] {
                        assert!(
                            same_bits(&outs[0], o),
                            "{name} n={n} log={log}: variants differ"
                        );
                    }
                    let out = &outs[0];
                    assert!(same_bits(&out[..n], &out[n..]), "{name} n={n}: rows differ");
                    for (i, (&d, &y)) in ds.iter().zip(out).enumerate() {
                        let what =
                            format!("{name} n={n} log={log} i={i}: x={:e} got {y:e}", row[i]);
                        let got = f64::from(y);
                        if undefined {
                            assert!(y.is_nan(), "{what}");
                        } else if log {
                            let want = d - sum.ln();
                            if (want as f32).is_infinite() {
                                // -inf entries, or `x - max` beyond the f32 range.
                                assert_eq!(y, want as f32, "{what}");
                                continue;
                            }
                            let tol =
                                u * (d.abs() + 2.0 * sum.ln().abs() + want.abs() + k + 5.0) + a;
                            assert!((got - want).abs() <= tol, "{what}, want {want:e}");
                        } else if d == f64::NEG_INFINITY {
                            assert_eq!(y, 0.0, "{what}");
                        } else {
                            let want = d.exp() / sum;
                            let tol = want * (u * (d.abs() + k + 9.0) + a) + 2f64.powi(-148);
                            assert!((got - want).abs() <= tol, "{what}, want {want:e}");
                        }
                    }
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn layer_norm_variant(
        level: u8,
        x: &[f32],
        y: &mut [f32],
        m: &mut [f32],
        r: &mut [f32],
        g: Option<&[f32]>,
        b: Option<&[f32]>,
        cols: usize,
        stream: bool,
    ) {
        let eps = 1e-5;
        let mut slots = vec![MaybeUninit::uninit(); y.len()];
        let ys = &mut slots[..];
        let p = &RowParams::new(g.map(<[f32]>::to_vec), b.map(<[f32]>::to_vec), cols)
            .unwrap()
            .unwrap();
        match level {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` asks for level 1 only when the CPU has AVX2 and FMA.
            1 => unsafe { layer_norm_rows_avx2(x, ys, m, r, p, eps, stream) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `variants` asks for level 2 only when the CPU has the AVX-512 features.
            2 => unsafe { layer_norm_rows_avx512(x, ys, m, r, p, eps, stream) },
            _ => layer_norm_rows_body(x, ys, m, r, p, eps, stream),
        }
        assert_eq!((x.len(), y.len()), (cols * m.len(), cols * m.len()));
        // SAFETY: the kernel writes every element of its output when, as just checked, the
        // input, the output and the number of rows agree.
        y.copy_from_slice(unsafe { slots.assume_init_ref() });
    }

    /// Layer-norm rows against an `f64` reference (two-pass statistics of the same `f32`
    /// inputs), and every instruction-set variant against the baseline bit for bit.
    ///
    /// Error bounds, with `u = eps/2` the unit roundoff: a lane sum of `n` values through 32
    /// lanes and a 5-level merge rounds at most `n/32 + 5` times along any path, so the mean
    /// errs by `dm = (n/32 + 7) u mean|x|` (Higham's bound for summation trees, plus the
    /// division). The variance is the mean of `(x - mean')^2`: the shifted sum of squares gains
    /// `n dm^2` (the cross term vanishes around the exact mean) and each term errs by `3u`, so
    /// `var` errs by `(n/32 + 9) u var + dm^2`, and `rstd = 1 / sqrt(var + 1e-5)` relatively by
    /// `dr = ((n/32 + 10) u var + dm^2) / (2 (var + 1e-5)) + 3u`. The output
    /// `(x r' - r' m') g + b` then errs by at most
    /// `|g| r (dr |x - m| + dm + 2u (|x| + |m|)) + 2u (|g r (x - m)| + |y|)`.
    /// A one-pass `E[x^2] - E[x]^2` in `f32` misses these by orders of magnitude on the offset
    /// rows, where `u E[x^2]` dwarfs the variance.
    #[test]
    fn layer_norm_rows_match_f64_and_agree_across_instruction_sets() {
        let u = f64::from(f32::EPSILON) / 2.0;
        for n in [1usize, 2, 7, 17, 31, 32, 33, 64, 100, 1023, 1024, 1025] {
            let gamma: Vec<f32> = (0..n).map(|i| 0.5 + (i % 13) as f32 * 0.1).collect();
            let beta: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
            for (name, row) in test_rows(n) {
                if row.iter().any(|v| !v.is_finite()) || name == "near max" || name == "huge" {
                    continue; // `x^2` overflows f32 here; PyTorch's answer is inf/NaN too.
                }
                let x: Vec<f32> = row.iter().chain(&row).copied().collect();
                let xs: Vec<f64> = row.iter().map(|v| f64::from(*v)).collect();
                let nf = n as f64;
                let k = (n / 32) as f64;
                let mean = xs.iter().sum::<f64>() / nf;
                let var = xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / nf;
                let rstd = 1.0 / (var + f64::from(1e-5f32)).sqrt();
                let dm = (k + 7.0) * u * xs.iter().map(|v| v.abs()).sum::<f64>() / nf;
                let dr = ((k + 10.0) * u * var + dm * dm) / (2.0 * (var + 1e-5)) + 3.0 * u;
                for (g, b) in [
                    (Some(&gamma[..]), Some(&beta[..])),
                    (Some(&gamma[..]), None),
                    (None, Some(&beta[..])),
                    (None, None),
                ] {
                    let outs = variants(|level| {
                        let (mut y, mut m, mut r) = (vec![0.0f32; 2 * n], [0.0f32; 2], [0.0f32; 2]);
                        layer_norm_variant(level, &x, &mut y, &mut m, &mut r, g, b, n, false);
                        // Streaming the rows out (large outputs) gives the same bits.
                        let mut streamed = vec![0.0f32; 2 * n];
                        layer_norm_variant(level, &x, &mut streamed, &mut m, &mut r, g, b, n, true);
                        assert!(same_bits(&y, &streamed), "n={n}: streamed rows differ");
                        (y, m, r)
                    });
                    for o in &outs[1..] {
                        let same = same_bits(&outs[0].0, &o.0)
                            && same_bits(&outs[0].1, &o.1)
                            && same_bits(&outs[0].2, &o.2);
                        assert!(same, "{name} n={n}: variants differ");
                    }
                    let (y, m, r) = &outs[0];
                    assert!(same_bits(&y[..n], &y[n..]) && same_bits(&m[..1], &m[1..]));
                    assert!(same_bits(&r[..1], &r[1..]), "{name} n={n}: rows differ");
                    let what = format!("{name} n={n} gamma={} beta={}", g.is_some(), b.is_some());
                    let (m0, r0) = (f64::from(m[0]), f64::from(r[0]));
                    assert!((m0 - mean).abs() <= dm, "{what}: mean {m0:e} vs {mean:e}");
                    assert!(
                        (r0 - rstd).abs() <= dr * rstd,
                        "{what}: rstd {r0:e} vs {rstd:e} (relative error {:e}, bound {dr:e})",
                        (r0 - rstd).abs() / rstd
                    );
                    for i in 0..n {
                        let gi = g.map_or(1.0, |g| f64::from(g[i]));
                        let bi = b.map_or(0.0, |b| f64::from(b[i]));
                        let t = (xs[i] - mean) * rstd;
                        let want = t * gi + bi;
                        let tol = gi.abs()
                            * rstd
                            * (dr * (xs[i] - mean).abs()
                                + dm
                                + 2.0 * u * (xs[i].abs() + mean.abs()))
                            + 2.0 * u * ((gi * t).abs() + want.abs());
                        let got = f64::from(y[i]);
                        assert!(
                            (got - want).abs() <= tol,
                            "{what} i={i}: {got:e} vs {want:e} (tolerance {tol:e})"
                        );
                    }
                }
            }
        }
    }

    /// The three passes of a layer norm written plainly (scalar code, absent parameters
    /// skipped): the reference the kernel must match bit for bit.
    fn layer_norm_rows_reference(
        x: &[f32],
        m: &mut [f32],
        r: &mut [f32],
        g: Option<&[f32]>,
        b: Option<&[f32]>,
        cols: usize,
        eps: f32,
    ) -> Vec<f32> {
        let n = cols as f32;
        let mut y = vec![0.0f32; x.len()];
        for (row, ((yr, mean), rstd)) in x.chunks(cols).zip(y.chunks_mut(cols).zip(m).zip(r)) {
            let mu = lane_fold(row, 0.0f32, |a, v| a + v, |a, c| a + c) / n;
            let ssd = lane_fold(row, 0.0f32, |a, v| a + (v - mu) * (v - mu), |a, c| a + c);
            let rs = 1.0 / (ssd / n + eps).sqrt();
            let shift = 0.0 - rs * mu;
            for (i, (o, v)) in yr.iter_mut().zip(row).enumerate() {
                let mut t = v * rs + shift;
                if let Some(g) = g {
                    t *= g[i];
                }
                if let Some(b) = b {
                    t += b[i];
                }
                *o = t;
            }
            (*mean, *rstd) = (mu, rs);
        }
        y
    }

    /// The kernel against the plain passes: the same bits for several rows, row lengths with
    /// and without a vector tail (and rows starting off a cache line, for the streaming
    /// stores), each combination of parameters, signed zeros and NaN, on every instruction
    /// set, with the output stored and streamed.
    #[test]
    fn layer_norm_rows_match_the_plain_passes() {
        for cols in [1usize, 5, 32, 33, 64, 100, 1024] {
            let gamma: Vec<f32> = (0..cols).map(|i| 0.5 + (i % 13) as f32 * 0.1).collect();
            let beta: Vec<f32> = (0..cols).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
            let zero_gamma = vec![0.0f32; cols];
            let neg_zero_beta = vec![-0.0f32; cols];
            for rows in 1..=6usize {
                // Values over six decades (any change in the order of additions shows in the
                // bits), each row with its own offset.
                let mut seed = 0x2545_f491u32;
                let mut x: Vec<f32> = (0..rows * cols)
                    .map(|i| {
                        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        let u = (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
                        u * [1e-3f32, 1.0, 1e3][i % 3] + (i / cols) as f32 * 100.0
                    })
                    .collect();
                if rows == 5 {
                    x[3 * cols] = f32::NAN; // a NaN row between others
                }
                for (g, b) in [
                    (Some(&gamma[..]), Some(&beta[..])),
                    (Some(&gamma[..]), None),
                    (None, Some(&beta[..])),
                    (None, None),
                    (Some(&zero_gamma[..]), Some(&neg_zero_beta[..])),
                    (Some(&zero_gamma[..]), None),
                ] {
                    let (mut m0, mut r0) = (vec![0.0f32; rows], vec![0.0f32; rows]);
                    let want = layer_norm_rows_reference(&x, &mut m0, &mut r0, g, b, cols, 1e-5);
                    let outs = variants(|level| {
                        let mut y = vec![0.0f32; rows * cols];
                        let (mut m, mut r) = (vec![0.0f32; rows], vec![0.0f32; rows]);
                        // Odd row counts stream their rows out (as large outputs do), even ones
                        // store them: the bits must not depend on it.
                        let stream = rows % 2 == 1;
                        layer_norm_variant(level, &x, &mut y, &mut m, &mut r, g, b, cols, stream);
                        (y, m, r)
                    });
                    let what = format!(
                        "rows={rows} cols={cols} gamma={:?} beta={:?}",
                        g.map(|g| g[0]),
                        b.map(|b| b[0])
                    );
                    for (y, m, r) in &outs {
                        assert!(same_bits(y, &want), "{what}: outputs differ");
                        assert!(
                            same_bits(m, &m0) && same_bits(r, &r0),
                            "{what}: stats differ"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn pairwise_sum_is_accurate() {
        let xs: Vec<f32> = (0..1_000_003i64)
            .map(|i| ((i * 7919) % 1000) as f32 * 0.001 + 0.1)
            .collect();
        let exact: f64 = xs.iter().map(|v| f64::from(*v)).sum();
        let s: f32 = pairwise_sum(&xs, |x| x);
        assert!(((f64::from(s) - exact) / exact).abs() < 1e-6);
    }

    #[test]
    fn plans_coalesce_and_pick_the_mode() {
        let p = Plan::new(&[4, 5, 6], &[30, 6, 1], 0, 0b011).unwrap();
        assert_eq!(p.kept.len(), 1);
        assert_eq!(p.reduced.len(), 1);
        assert_eq!(p.reduced[0].size, 20);
        assert!(p.vertical());
        let p = Plan::new(&[4, 5, 6], &[30, 6, 1], 0, 0b100).unwrap();
        assert!(!p.vertical());
        assert_eq!(p.kept[0].size, 20);
        // Transposed input: kept dims are visited in memory order, results come back logical.
        let p = Plan::new(&[3, 4, 2], &[1, 3, 12], 0, 0b010).unwrap();
        assert!(!p.logical);
    }

    #[test]
    fn reductions_over_views_match_naive_results() {
        let data: Vec<f32> = (0..60).map(|i| (i as f32 * 1.37).sin()).collect();
        let t = Tensor::from_vec(data.clone(), &[3, 4, 5]).unwrap();
        // [5, 3] view: element (a, b) = data[b * 20 + a * 4 + 1].
        let v = t.as_strided_view(&[5, 3], &[4, 20], 1).unwrap();
        for mask in [0b01u64, 0b10, 0b11, 0] {
            let got = reduce::<f32, f32, _>(&v, mask, &Sum(SumKind::Plain)).unwrap();
            let mut expect = vec![];
            let (ra, rb) = (mask & 1 == 1, mask & 2 == 2);
            for a in 0..(if ra { 1 } else { 5 }) {
                for b in 0..(if rb { 1 } else { 3 }) {
                    let mut s = 0.0f32;
                    for aa in 0..5 {
                        for bb in 0..3 {
                            if (ra || aa == a) && (rb || bb == b) {
                                s += data[bb * 20 + aa * 4 + 1];
                            }
                        }
                    }
                    expect.push(s);
                }
            }
            assert_eq!(got.len(), expect.len());
            for (g, e) in got.iter().zip(&expect) {
                assert!((g - e).abs() < 1e-5, "mask {mask}: {got:?} vs {expect:?}");
            }
        }
        let arg = reduce::<f32, f32, _>(&v, 0b01, &ArgBest::<true>).unwrap();
        for (b, (val, idx)) in arg.iter().enumerate() {
            let col: Vec<f32> = (0..5).map(|a| data[b * 20 + a * 4 + 1]).collect();
            assert_eq!(*val, col[*idx as usize]);
            assert!(col.iter().all(|c| c <= val));
        }
    }

    /// The two-pass `ArgBest::fold` against a sequential compare-and-keep scan (the
    /// definition): ties keep the first, `-0.0` and `0.0` tie, the first NaN wins, and an
    /// accumulator from an earlier run keeps its place unless beaten.
    #[test]
    fn arg_best_fold_matches_a_sequential_scan() {
        fn scan<const MAX: bool>(acc: (f32, i64), xs: &[f32], first: i64) -> (f32, i64) {
            let (mut v, mut i) = acc;
            for (k, &x) in xs.iter().enumerate() {
                if i < 0 || ArgBest::<MAX>::better(x, v) {
                    (v, i) = (x, first + k as i64);
                }
            }
            (v, i)
        }
        let mut seed = 12345u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            seed >> 8
        };
        for len in [1usize, 2, 5, 31, 32, 33, 64, 100, 1000] {
            for round in 0..40 {
                // Few distinct values (many ties), signed zeros, and sometimes NaN.
                let xs: Vec<f32> = (0..len)
                    .map(|_| match next() % 16 {
                        0 => 0.0,
                        1 => -0.0,
                        2 if round % 4 == 0 => f32::NAN,
                        r => (r % 5) as f32 - 2.0,
                    })
                    .collect();
                for acc in [(0.0, -1), (1.0, 3), (-0.0, 7), (5.0, 2), (f32::NAN, 1)] {
                    for (got, want) in [
                        (
                            ArgBest::<true>.fold(acc, &xs, 10),
                            scan::<true>(acc, &xs, 10),
                        ),
                        (
                            ArgBest::<false>.fold(acc, &xs, 10),
                            scan::<false>(acc, &xs, 10),
                        ),
                    ] {
                        assert_eq!(got.1, want.1, "len {len} round {round} acc {acc:?}");
                        assert_eq!(got.0.to_bits(), want.0.to_bits(), "len {len} acc {acc:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn large_reductions_split_and_combine_in_order() {
        let n = 200_003usize;
        let mut data = vec![1.0f32; n];
        data[150_000] = 5.0;
        data[170_000] = 5.0;
        let t = Tensor::from_vec(data, &[n as i64]).unwrap();
        let s = reduce::<f32, f32, _>(&t, 1, &Sum(SumKind::Plain)).unwrap();
        assert_eq!(s, vec![n as f32 + 8.0]);
        let a = reduce::<f32, f32, _>(&t, 1, &ArgBest::<true>).unwrap();
        assert_eq!(a, vec![(5.0, 150_000)]);
        let m = Tensor::from_vec((0..n).map(|i| (i % 7) as i64).collect(), &[n as i64]).unwrap();
        let mx = reduce::<i64, i64, _>(&m, 1, &Extreme::<true>::plain()).unwrap();
        assert_eq!(mx, vec![6]);
        let out = Tensor::allocate(&[], ScalarType::Double, Device::CPU).unwrap();
        store(&out, &mx, |v| *v).unwrap();
        assert_eq!(out.to_vec::<f64>().unwrap(), vec![6.0]);
    }
}
