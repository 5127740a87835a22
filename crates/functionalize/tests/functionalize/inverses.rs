//! The view inverses (`switchyard_functionalize::inverses`) and the scatter operators that
//! serve as inverses, on plain CPU tensors: for each, the defining property
//! `forward(inverse(base, m)) == m`, the base's elements outside the view unchanged (checked by
//! the full expected values, computed with PyTorch 2.15 by writing `m` into the view of a clone
//! of the base), non-contiguous bases, both modes the layer uses, and errors as `Err`.

use switchyard_core::{ErrorKind, Result, ScalarType, Tensor};
use switchyard_functionalize::InverseMode::{self, AlwaysView, NeverView, ViewOrScatterInverse};
use switchyard_functionalize::inverses as inv;
use switchyard_ops::op;

/// The two modes the layer uses.
const MODES: [InverseMode; 2] = [NeverView, ViewOrScatterInverse];

/// A contiguous `f32` tensor of `shape` holding `data`.
fn tensor(data: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}

/// `0, 1, ..., n-1` (contiguous) with `shape`.
fn arange(shape: &[i64]) -> Tensor {
    let n: i64 = shape.iter().product();
    tensor(&(0..n).map(|x| x as f32).collect::<Vec<_>>(), shape)
}

/// `-1, -2, ..., -n` (contiguous) with `shape`: a mutated view distinguishable from any base
/// element.
fn negatives(shape: &[i64]) -> Tensor {
    let n: i64 = shape.iter().product();
    tensor(&(1..=n).map(|x| -(x as f32)).collect::<Vec<_>>(), shape)
}

/// `arange([cols, rows])` transposed: a non-contiguous `[rows, cols]` base.
fn transposed_arange(rows: i64, cols: i64) -> Tensor {
    let t = op::t::call(&arange(&[cols, rows])).unwrap();
    assert!(!t.is_contiguous());
    t
}

fn sizes(t: &Tensor) -> Vec<i64> {
    t.sizes().to_vec()
}

fn vals(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// Checks that `new_base` has `base`'s sizes and the `expected` elements, and that replaying
/// the view on it gives `m` back.
fn check(
    base: &Tensor,
    new_base: &Tensor,
    expected: &[f32],
    forward: impl Fn(&Tensor) -> Result<Tensor>,
    m: &Tensor,
) {
    assert_eq!(sizes(new_base), sizes(base));
    assert_eq!(vals(new_base), expected);
    let again = forward(new_base).unwrap();
    assert_eq!(sizes(&again), sizes(m));
    assert_eq!(vals(&again), vals(m));
}

/// In `NeverView` the result never shares storage with `mutated`; in the view-allowed modes it
/// does when the inverse is a view.
fn check_aliasing(mode: InverseMode, result: &Tensor, mutated: &Tensor, is_view_inverse: bool) {
    let expect = mode != NeverView && is_view_inverse;
    assert_eq!(result.is_alias_of(mutated), expect, "mode {mode:?}");
}

#[test]
fn view_reshapes_back_to_the_base_sizes() {
    let base = arange(&[2, 3]);
    let m = negatives(&[3, 2]);
    for mode in MODES {
        let r = inv::view_inverse(&base, &m, mode, &[3, 2]).unwrap();
        check(
            &base,
            &r,
            &[-1.0, -2.0, -3.0, -4.0, -5.0, -6.0],
            |b| op::view_copy::call(b, &[3, 2]),
            &m,
        );
        check_aliasing(mode, &r, &m, true);
    }
    // A non-contiguous base: the view's value (a `view_copy`, hence contiguous) still goes back
    // to the base's sizes; the base's strides are not the result's business.
    let base = transposed_arange(2, 3);
    let m = negatives(&[6]);
    for mode in MODES {
        let r = inv::view_inverse(&base, &m, mode, &[6]).unwrap();
        check(
            &base,
            &r,
            &[-1.0, -2.0, -3.0, -4.0, -5.0, -6.0],
            |b| op::view_copy::call(b, &[6]),
            &m,
        );
    }
    // A mutated value whose layout cannot be viewed with the base's sizes (an operator's result
    // in another layout than the view had): copied in every mode.
    let base = arange(&[6]);
    let m = transposed_arange(3, 2);
    for mode in MODES {
        let r = inv::view_inverse(&base, &m, mode, &[3, 2]).unwrap();
        check(
            &base,
            &r,
            &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0],
            |b| op::view_copy::call(b, &[3, 2]),
            &m,
        );
        check_aliasing(mode, &r, &m, false);
    }
    // A mutated value of the wrong size is an error, not a panic.
    let base = transposed_arange(2, 3);
    let e = inv::view_inverse(&base, &negatives(&[5]), NeverView, &[6]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::RuntimeError);
}

#[test]
fn view_dtype_reinterprets_as_the_base_dtype() {
    let base = tensor(&[1.0, 2.0], &[2]);
    // The bits of 5.0f32 and 2.0f32.
    let m = Tensor::from_vec(vec![1_084_227_584i32, 1_073_741_824], &[2]).unwrap();
    for mode in MODES {
        let r = inv::view_dtype_inverse(&base, &m, mode, ScalarType::Int).unwrap();
        assert_eq!(r.dtype(), ScalarType::Float);
        assert_eq!(sizes(&r), [2]);
        assert_eq!(vals(&r), [5.0, 2.0]);
        let again = op::view_copy_dtype::call(&r, ScalarType::Int).unwrap();
        assert_eq!(again.to_vec::<i32>().unwrap(), m.to_vec::<i32>().unwrap());
        check_aliasing(mode, &r, &m, true);
    }
    // Element sizes that do not divide the last dimension: an error.
    let odd = Tensor::from_vec(vec![1i16, 2, 3], &[3]).unwrap();
    assert!(inv::view_dtype_inverse(&base, &odd, NeverView, ScalarType::Short).is_err());
}

#[test]
fn permute_applies_the_inverse_permutation() {
    let base = arange(&[2, 3, 4]);
    let expected = [
        -1.0, -7.0, -13.0, -19.0, -2.0, -8.0, -14.0, -20.0, -3.0, -9.0, -15.0, -21.0, -4.0, -10.0,
        -16.0, -22.0, -5.0, -11.0, -17.0, -23.0, -6.0, -12.0, -18.0, -24.0,
    ];
    let m = negatives(&[4, 2, 3]);
    for dims in [[2i64, 0, 1], [-1, 0, -2]] {
        for mode in MODES {
            let r = inv::permute_inverse(&base, &m, mode, &dims).unwrap();
            check(
                &base,
                &r,
                &expected,
                |b| op::permute_copy::call(b, &dims),
                &m,
            );
            check_aliasing(mode, &r, &m, true);
        }
    }
    // A non-contiguous mutated value (as a reapplied view would give) works too.
    let m2 = op::permute::call(&negatives(&[3, 2, 4]), &[2, 1, 0]).unwrap();
    let r = inv::permute_inverse(&base, &m2, NeverView, &[2, 1, 0]).unwrap();
    let again = op::permute_copy::call(&r, &[2, 1, 0]).unwrap();
    assert_eq!(vals(&again), vals(&m2));

    for bad in [&[0i64, 0, 1][..], &[0, 1], &[0, 1, 3]] {
        assert!(inv::permute_inverse(&base, &m, NeverView, bad).is_err());
    }
}

#[test]
fn t_and_transpose_transpose_back() {
    let base = transposed_arange(2, 3);
    let m = negatives(&[3, 2]);
    for mode in MODES {
        let r = inv::t_inverse(&base, &m, mode).unwrap();
        check(
            &base,
            &r,
            &[-1.0, -3.0, -5.0, -2.0, -4.0, -6.0],
            op::t_copy::call,
            &m,
        );
        check_aliasing(mode, &r, &m, true);
    }
    // `t` of a 1-d tensor is the identity.
    let base1 = arange(&[3]);
    let m1 = negatives(&[3]);
    let r = inv::t_inverse(&base1, &m1, NeverView).unwrap();
    check(&base1, &r, &[-1.0, -2.0, -3.0], op::t_copy::call, &m1);
    assert!(inv::t_inverse(&arange(&[1, 1, 1]), &arange(&[1, 1, 1]), NeverView).is_err());

    let base = arange(&[2, 3, 4]);
    let m = negatives(&[4, 3, 2]);
    let expected = [
        -1.0, -7.0, -13.0, -19.0, -3.0, -9.0, -15.0, -21.0, -5.0, -11.0, -17.0, -23.0, -2.0, -8.0,
        -14.0, -20.0, -4.0, -10.0, -16.0, -22.0, -6.0, -12.0, -18.0, -24.0,
    ];
    for mode in MODES {
        let r = inv::transpose_int_inverse(&base, &m, mode, 0, -1).unwrap();
        check(
            &base,
            &r,
            &expected,
            |b| op::transpose_copy_int::call(b, 0, -1),
            &m,
        );
        check_aliasing(mode, &r, &m, true);
    }
    assert!(inv::transpose_int_inverse(&base, &m, NeverView, 0, 3).is_err());
}

#[test]
fn unsqueeze_squeezes_the_dim_back() {
    let base = transposed_arange(2, 3);
    for (dim, shape) in [(1i64, [2i64, 1, 3]), (-1, [2, 3, 1]), (0, [1, 2, 3])] {
        let m = negatives(&shape);
        for mode in MODES {
            let r = inv::unsqueeze_inverse(&base, &m, mode, dim).unwrap();
            check(
                &base,
                &r,
                &[-1.0, -2.0, -3.0, -4.0, -5.0, -6.0],
                |b| op::unsqueeze_copy::call(b, dim),
                &m,
            );
            check_aliasing(mode, &r, &m, true);
        }
    }
    assert!(inv::unsqueeze_inverse(&base, &negatives(&[2, 1, 3]), NeverView, 5).is_err());
}

#[test]
fn squeeze_unsqueezes_where_the_base_had_size_one() {
    let expected = [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0];
    // A non-contiguous base with size-1 dims: [1, 2, 1, 3].
    let base = op::unsqueeze::call(
        &op::unsqueeze::call(&transposed_arange(2, 3), 1).unwrap(),
        0,
    )
    .unwrap();
    assert_eq!(sizes(&base), [1, 2, 1, 3]);
    let m = negatives(&[2, 3]);
    for mode in MODES {
        let r = inv::squeeze_inverse(&base, &m, mode).unwrap();
        check(&base, &r, &expected, op::squeeze_copy::call, &m);
        check_aliasing(mode, &r, &m, true);

        let r = inv::squeeze_dims_inverse(&base, &m, mode, &[0, -2]).unwrap();
        check(
            &base,
            &r,
            &expected,
            |b| op::squeeze_copy_dims::call(b, &[0, -2]),
            &m,
        );
        // Listed dims whose size is not 1 are left alone, as `squeeze` leaves them.
        let m3 = negatives(&[2, 1, 3]);
        let r = inv::squeeze_dims_inverse(&base, &m3, mode, &[0, 1]).unwrap();
        check(
            &base,
            &r,
            &expected,
            |b| op::squeeze_copy_dims::call(b, &[0, 1]),
            &m3,
        );
        let r = inv::squeeze_dim_inverse(&base, &m3, mode, 0).unwrap();
        check(
            &base,
            &r,
            &expected,
            |b| op::squeeze_copy_dim::call(b, 0),
            &m3,
        );
        // Squeezing a dim of size 2 is the identity, and so is its inverse.
        let m4 = negatives(&[1, 2, 1, 3]);
        let r = inv::squeeze_dim_inverse(&base, &m4, mode, 1).unwrap();
        check(
            &base,
            &r,
            &expected,
            |b| op::squeeze_copy_dim::call(b, 1),
            &m4,
        );
    }
    // A 0-dim base: nothing to unsqueeze.
    let scalar = Tensor::from_vec(vec![3.0f32], &[]).unwrap();
    let m0 = Tensor::from_vec(vec![-1.0f32], &[]).unwrap();
    for mode in MODES {
        let r = inv::squeeze_dims_inverse(&scalar, &m0, mode, &[0]).unwrap();
        check(
            &scalar,
            &r,
            &[-1.0],
            |b| op::squeeze_copy_dims::call(b, &[0]),
            &m0,
        );
        let r = inv::squeeze_dim_inverse(&scalar, &m0, mode, -1).unwrap();
        check(
            &scalar,
            &r,
            &[-1.0],
            |b| op::squeeze_copy_dim::call(b, -1),
            &m0,
        );
    }
    // In `AlwaysView` the result is a view even when nothing was unsqueezed.
    let r = inv::squeeze_dims_inverse(&scalar, &m0, AlwaysView, &[0]).unwrap();
    assert!(r.is_alias_of(&m0) && !r.is_same(&m0));
    // Bad dims are errors.
    assert!(inv::squeeze_dims_inverse(&base, &m, NeverView, &[0, 0]).is_err());
    assert!(inv::squeeze_dims_inverse(&base, &m, NeverView, &[4]).is_err());
    assert!(inv::squeeze_dim_inverse(&scalar, &m0, NeverView, 1).is_err());
}

#[test]
fn expand_takes_the_value_written_into_the_copies() {
    // base [3, 1] = [[0], [1], [2]] expanded to [2, 3, 4]: element r has the eight copies
    // [i, r, c], flat index 12 * i + 4 * r + c. Eager writes one value into the copies it
    // writes (`fill_` of the whole view or of a view of some copies, an in-place op on a view
    // holding one copy); the element ends with it.
    let base = arange(&[3, 1]);
    let mut mv = vals(&op::expand_copy::call(&base, &[2, 3, 4], false).unwrap());
    mv[1] = -1.0; // two copies of element 0: -1
    mv[14] = -1.0;
    for c in [4, 5, 6, 7, 16, 17, 18, 19] {
        mv[c] = 50.0; // every copy of element 1: 50
    }
    mv[20] = -7.0; // one copy of element 2, below its value: -7
    let m = tensor(&mv, &[2, 3, 4]);
    // PyTorch's rule (base + sum_to(m - base)) would give [-2, 393, -7].
    for mode in MODES {
        let r = inv::expand_inverse(&base, &m, mode, &[2, 3, 4], false).unwrap();
        assert_eq!(sizes(&r), [3, 1]);
        assert_eq!(vals(&r), [-1.0, 50.0, -7.0]);
        assert!(!r.is_alias_of(&m) && !r.is_alias_of(&base));
    }
    // A true inverse whenever all copies of an element agree: `x.expand(..).fill_(v)` (eager:
    // every copy and `x` hold v).
    let filled = tensor(&[-3.0; 24], &[2, 3, 4]);
    for mode in MODES {
        let r = inv::expand_inverse(&base, &filled, mode, &[2, 3, 4], false).unwrap();
        check(
            &base,
            &r,
            &[-3.0, -3.0, -3.0],
            |b| op::expand_copy::call(b, &[2, 3, 4], false),
            &filled,
        );
    }
    // ... when nothing is really broadcast (a leading dim of size 1) and when nothing changed.
    let base = transposed_arange(2, 3);
    let m = negatives(&[1, 2, 3]);
    for mode in MODES {
        let r = inv::expand_inverse(&base, &m, mode, &[1, 2, 3], false).unwrap();
        check(
            &base,
            &r,
            &[-1.0, -2.0, -3.0, -4.0, -5.0, -6.0],
            |b| op::expand_copy::call(b, &[1, 2, 3], false),
            &m,
        );
        let unchanged = op::expand_copy::call(&base, &[4, 2, 3], false).unwrap();
        let r = inv::expand_inverse(&base, &unchanged, mode, &[4, 2, 3], false).unwrap();
        check(
            &base,
            &r,
            &vals(&base),
            |b| op::expand_copy::call(b, &[4, 2, 3], false),
            &unchanged,
        );
    }
    // Integer tensors keep their dtype; a 0-dim base.
    let ibase = Tensor::from_vec(vec![1i32, 2], &[2, 1]).unwrap();
    let im = Tensor::from_vec(vec![1i32, 4, 2, 7], &[2, 2]).unwrap();
    let r = inv::expand_inverse(&ibase, &im, NeverView, &[2, 2], false).unwrap();
    assert_eq!(r.dtype(), ScalarType::Int);
    assert_eq!(r.to_vec::<i32>().unwrap(), [4, 7]);
    let scalar = tensor(&[5.0], &[]);
    let one_copy = tensor(&[5.0, 5.0, 5.0, 5.0, -6.0, 5.0], &[2, 3]);
    for mode in MODES {
        let r = inv::expand_inverse(&scalar, &one_copy, mode, &[2, 3], false).unwrap();
        assert_eq!(sizes(&r), Vec::<i64>::new());
        assert_eq!(vals(&r), [-6.0]);
    }
    // A mutated value the base does not broadcast to is an error.
    let base = arange(&[3, 1]);
    assert!(inv::expand_inverse(&base, &negatives(&[3]), NeverView, &[3], false).is_err());
    assert!(inv::expand_inverse(&base, &negatives(&[2, 4]), NeverView, &[2, 4], false).is_err());
}

#[test]
fn split_scatters_the_chunk_back() {
    // base [5, 2], non-contiguous; split(2, 0) gives chunks of 2, 2 and 1 rows.
    let base = transposed_arange(5, 2);
    let cases: [(usize, &[i64], &[f32]); 2] = [
        (
            2,
            &[1, 2],
            &[0.0, 5.0, 1.0, 6.0, 2.0, 7.0, 3.0, 8.0, -1.0, -2.0],
        ),
        (
            1,
            &[2, 2],
            &[0.0, 5.0, 1.0, 6.0, -1.0, -2.0, -3.0, -4.0, 4.0, 9.0],
        ),
    ];
    for (index, shape, expected) in cases {
        let m = negatives(shape);
        for mode in MODES {
            for dim in [0, -2] {
                let r = inv::split_Tensor_inverse(&base, &m, mode, index, 2, dim).unwrap();
                check(
                    &base,
                    &r,
                    expected,
                    |b| Ok(op::split_copy_Tensor::call(b, 2, dim)?.remove(index)),
                    &m,
                );
                check_aliasing(mode, &r, &m, false);
            }
        }
    }
    let m = negatives(&[1, 2]);
    // No fourth chunk; a split size of 0; a dim out of range; a mutated value of the wrong size.
    let e = inv::split_Tensor_inverse(&base, &m, NeverView, 3, 2, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::IndexError);
    assert!(inv::split_Tensor_inverse(&base, &m, NeverView, 0, 0, 0).is_err());
    assert!(inv::split_Tensor_inverse(&base, &m, NeverView, 0, 2, 2).is_err());
    assert!(inv::split_Tensor_inverse(&base, &m, NeverView, 0, 2, 0).is_err());
}

#[test]
fn split_with_sizes_scatters_the_piece_back() {
    let base = arange(&[2, 5]);
    let m = negatives(&[2, 3]);
    for mode in MODES {
        let r = inv::split_with_sizes_inverse(&base, &m, mode, 1, &[1, 3, 1], -1).unwrap();
        check(
            &base,
            &r,
            &[0.0, -1.0, -2.0, -3.0, 4.0, 5.0, -4.0, -5.0, -6.0, 9.0],
            |b| Ok(op::split_with_sizes_copy::call(b, &[1, 3, 1], -1)?.remove(1)),
            &m,
        );
        check_aliasing(mode, &r, &m, false);
    }
    // The last piece, on a non-contiguous base.
    let base = transposed_arange(2, 5);
    let m = negatives(&[2, 1]);
    let r = inv::split_with_sizes_inverse(&base, &m, NeverView, 2, &[1, 3, 1], 1).unwrap();
    check(
        &base,
        &r,
        &[0.0, 2.0, 4.0, 6.0, -1.0, 1.0, 3.0, 5.0, 7.0, -2.0],
        |b| Ok(op::split_with_sizes_copy::call(b, &[1, 3, 1], 1)?.remove(2)),
        &m,
    );
    let e = inv::split_with_sizes_inverse(&base, &m, NeverView, 3, &[1, 3, 1], 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::IndexError);
    assert!(inv::split_with_sizes_inverse(&base, &m, NeverView, 1, &[1, 3, 1], 1).is_err());
    assert!(inv::split_with_sizes_inverse(&base, &m, NeverView, 2, &[1, 3, 1], 2).is_err());
}

#[test]
fn unbind_selects_the_slot_back() {
    // base [3, 2], non-contiguous: [[0, 3], [1, 4], [2, 5]].
    let base = transposed_arange(3, 2);
    let cases: [(i64, usize, &[i64], &[f32]); 2] = [
        (0, 1, &[2], &[0.0, 3.0, -1.0, -2.0, 2.0, 5.0]),
        (-1, 0, &[3], &[-1.0, 3.0, -2.0, 4.0, -3.0, 5.0]),
    ];
    for (dim, index, shape, expected) in cases {
        let m = negatives(shape);
        for mode in MODES {
            let r = inv::unbind_int_inverse(&base, &m, mode, index, dim).unwrap();
            check(
                &base,
                &r,
                expected,
                |b| Ok(op::unbind_copy_int::call(b, dim)?.remove(index)),
                &m,
            );
            check_aliasing(mode, &r, &m, false);
        }
    }
    let m = negatives(&[2]);
    let e = inv::unbind_int_inverse(&base, &m, NeverView, 3, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::IndexError);
    assert!(inv::unbind_int_inverse(&base, &m, NeverView, 0, 2).is_err());
    assert!(inv::unbind_int_inverse(&base, &negatives(&[3]), NeverView, 0, 0).is_err());
    let scalar = Tensor::from_vec(vec![1.0f32], &[]).unwrap();
    assert!(inv::unbind_int_inverse(&scalar, &m, NeverView, 0, 0).is_err());
}

#[test]
fn alias_and_detach_are_identities() {
    let base = transposed_arange(2, 3);
    let m = negatives(&[2, 3]);
    let expected = [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0];
    for mode in MODES {
        let r = inv::alias_inverse(&base, &m, mode).unwrap();
        check(&base, &r, &expected, op::alias_copy::call, &m);
        check_aliasing(mode, &r, &m, true);
        // `detach`'s inverse hands the mutated value back as is, in every mode.
        let r = inv::detach_inverse(&base, &m, mode).unwrap();
        check(&base, &r, &expected, op::detach_copy::call, &m);
        assert!(r.is_same(&m));
    }
}

/// `AlwaysView` (unused by the layer, kept for parity): where there is no view inverse, the
/// mutated view is given the base's geometry over its own storage.
#[test]
fn always_view_restrides_a_real_view() {
    let base = arange(&[3, 2]);
    let row = op::unbind_int::call(&base, 0).unwrap().remove(1);
    let r = inv::unbind_int_inverse(&base, &row, AlwaysView, 1, 0).unwrap();
    assert!(r.is_alias_of(&base));
    assert_eq!(sizes(&r), [3, 2]);
    assert_eq!(vals(&r), vals(&base));
    let piece = op::split_Tensor::call(&base, 2, 0).unwrap().remove(1);
    let r = inv::split_Tensor_inverse(&base, &piece, AlwaysView, 1, 2, 0).unwrap();
    assert!(r.is_alias_of(&base));
    assert_eq!(vals(&r), vals(&base));
    let wide = op::expand::call(&base, &[4, 3, 2], false).unwrap();
    let r = inv::expand_inverse(&base, &wide, AlwaysView, &[4, 3, 2], false).unwrap();
    assert!(r.is_alias_of(&base));
    assert_eq!(vals(&r), vals(&base));
}

/// The views whose inverse is a scatter operator (A.6): the scatters satisfy the same
/// properties.
#[test]
fn scatter_operators_invert_slice_select_diagonal_as_strided() {
    let base = arange(&[3, 4]);
    let cases: Vec<(Tensor, Tensor, Tensor, Vec<f32>)> = vec![
        // x[:, 1:4:2]
        {
            let m = negatives(&[3, 2]);
            let fwd = |b: &Tensor| op::slice_copy_Tensor::call(b, 1, Some(1), Some(4), 2);
            let r = op::slice_scatter::call(&base, &m, 1, Some(1), Some(4), 2).unwrap();
            let again = fwd(&r).unwrap();
            (
                r,
                again,
                m,
                vec![
                    0.0, -1.0, 2.0, -2.0, 4.0, -3.0, 6.0, -4.0, 8.0, -5.0, 10.0, -6.0,
                ],
            )
        },
        // x.select(1, -1)
        {
            let m = negatives(&[3]);
            let r = op::select_scatter::call(&base, &m, 1, -1).unwrap();
            let again = op::select_copy_int::call(&r, 1, -1).unwrap();
            (
                r,
                again,
                m,
                vec![
                    0.0, 1.0, 2.0, -1.0, 4.0, 5.0, 6.0, -2.0, 8.0, 9.0, 10.0, -3.0,
                ],
            )
        },
        // x.diagonal(1)
        {
            let m = negatives(&[3]);
            let r = op::diagonal_scatter::call(&base, &m, 1, 0, 1).unwrap();
            let again = op::diagonal_copy::call(&r, 1, 0, 1).unwrap();
            (
                r,
                again,
                m,
                vec![
                    0.0, -1.0, 2.0, 3.0, 4.0, 5.0, -2.0, 7.0, 8.0, 9.0, 10.0, -3.0,
                ],
            )
        },
        // x.as_strided((2, 2), (4, 2), 1)
        {
            let m = negatives(&[2, 2]);
            let r = op::as_strided_scatter::call(&base, &m, &[2, 2], &[4, 2], Some(1)).unwrap();
            let again = op::as_strided_copy::call(&r, &[2, 2], &[4, 2], Some(1)).unwrap();
            (
                r,
                again,
                m,
                vec![
                    0.0, -1.0, 2.0, -2.0, 4.0, -3.0, 6.0, -4.0, 8.0, 9.0, 10.0, 11.0,
                ],
            )
        },
    ];
    for (r, again, m, expected) in cases {
        assert_eq!(sizes(&r), [3, 4]);
        assert_eq!(vals(&r), expected);
        assert_eq!(vals(&again), vals(&m));
        assert!(!r.is_alias_of(&base) && !r.is_alias_of(&m));
    }
    // The base is untouched.
    assert_eq!(vals(&base), vals(&arange(&[3, 4])));
    // A source of the wrong shape is an error.
    assert!(op::select_scatter::call(&base, &negatives(&[4]), 1, 0).is_err());
}

/// The inverses as the layer uses them: reverse closures of view records, applied when a
/// mutation of a view reaches its base at the next sync.
#[test]
fn inverses_drive_updates_through_view_records() {
    use crate::{mutate, values, view_of};
    use switchyard_functionalize::{ViewMeta, to_functional};

    // a = arange(6).view(2, 3); b = a.t(); b[:, :] += 10 through b; then a sees it.
    let a = to_functional(&arange(&[2, 3])).unwrap();
    let b = view_of(
        &a,
        ViewMeta::new(
            "t",
            |base, _| op::t_copy::call(base),
            |base, mutated, _| inv::t_inverse(base, mutated, NeverView),
        ),
    );
    mutate(&b, |v| switchyard_ops::add_scalar(v, 10.0));
    assert_eq!(values(&a), [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]);

    // c = a.split(1, 0)[1] (a multi-output record, output 1), then c.unsqueeze(0) mutated.
    let split = ViewMeta::new(
        "split.Tensor",
        |base, i| Ok(op::split_copy_Tensor::call(base, 1, 0)?.remove(i)),
        |base, mutated, i| inv::split_Tensor_inverse(base, mutated, NeverView, i, 1, 0),
    )
    .multi_output(1);
    let c = view_of(&a, split);
    let d = view_of(
        &c,
        ViewMeta::new(
            "unsqueeze",
            |base, _| op::unsqueeze_copy::call(base, 0),
            |base, mutated, _| inv::unsqueeze_inverse(base, mutated, NeverView, 0),
        ),
    );
    assert_eq!(sizes(&d), [1, 1, 3]);
    mutate(&d, |v| switchyard_ops::mul_scalar(v, -1.0));
    assert_eq!(values(&a), [10.0, 11.0, 12.0, -13.0, -14.0, -15.0]);
    assert_eq!(values(&b), [10.0, -13.0, 11.0, -14.0, 12.0, -15.0]);
}
