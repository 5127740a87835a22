//! The trace kernels' shape cache (`NodeBuilder::known_shapes`, LTC's shape cache): a repeated
//! call skips shape inference, and everything inference reads is in the key, so a cached
//! success never hides an error or another result type.

use switchyard_core::{Scalar, ScalarType, Tensor};
use switchyard_ops::op;

use crate::support::{counter, setup, values};

fn lazy(t: &Tensor) -> Tensor {
    switchyard_lazy::to_lazy(t).unwrap()
}

/// PyTorch refuses negative integer powers of integer tensors and a floating `alpha` for
/// integer tensors; both checks read the scalar's value, after the same call with a valid
/// value was cached.
#[test]
fn a_cached_shape_never_hides_a_value_dependent_error() {
    let _g = setup();
    let x = lazy(&Tensor::from_vec(vec![2i64, 3], &[2]).unwrap());
    let squared = op::pow_Tensor_Scalar::call(&x, Scalar::Int(2)).unwrap();
    let hits = counter("ShapeCacheHit");
    let again = op::pow_Tensor_Scalar::call(&x, Scalar::Int(2)).unwrap();
    assert_eq!(counter("ShapeCacheHit"), hits + 1, "the repeat is a hit");
    let e = op::pow_Tensor_Scalar::call(&x, Scalar::Int(-1)).unwrap_err();
    assert!(
        e.to_string()
            .contains("Integers to negative integer powers are not allowed."),
        "{e}"
    );
    op::add_Tensor::call(&x, &x, Scalar::Int(1)).unwrap();
    let e = op::add_Tensor::call(&x, &x, Scalar::Float(1.5)).unwrap_err();
    assert!(
        e.to_string().contains(
            "For integral input tensors, argument alpha must not be a floating point number."
        ),
        "{e}"
    );
    assert_eq!(values(&squared), (vec![2], vec![4.0, 9.0]));
    assert_eq!(values(&again), (vec![2], vec![4.0, 9.0]));
}

/// Type promotion ranks a wrapped number below a 0-dim tensor (PyTorch: float32 0-dim plus a
/// Python float stays float32, plus a 0-dim float64 tensor becomes float64): the two calls
/// differ only in the operand's wrapped-number flag, in either order.
#[test]
fn wrapped_numbers_and_zero_dim_tensors_keep_their_own_result_types() {
    let _g = setup();
    let a = lazy(&Tensor::from_vec(vec![1.5f32], &[]).unwrap());
    let wrapped = Tensor::wrapped_scalar(Scalar::Float(2.0)).unwrap();
    let zero_dim = Tensor::from_vec(vec![2.0f64], &[]).unwrap();
    for _ in 0..2 {
        let w = op::add_Tensor::call(&a, &wrapped, Scalar::Int(1)).unwrap();
        let z = op::add_Tensor::call(&a, &zero_dim, Scalar::Int(1)).unwrap();
        assert_eq!(w.dtype(), ScalarType::Float);
        assert_eq!(z.dtype(), ScalarType::Double);
        assert_eq!(values(&w), (vec![], vec![3.5]));
        assert_eq!(values(&z), (vec![], vec![3.5]));
    }
}

/// Sizes and strides are in the key: a sum over dim 1 of a 2×3 tensor, a 3×2 tensor and the
/// 2×3 tensor's transpose (a view: same sizes as the 3×2 one, other strides) each gets its own
/// shape, and only exact repeats hit.
#[test]
fn sizes_and_strides_are_in_the_key() {
    let _g = setup();
    let a = lazy(&Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap());
    let b = lazy(&Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap());
    let at = op::t::call(&a).unwrap();
    let sum = |t: &Tensor| op::sum_dim_IntList::call(t, Some(&[1]), false, None).unwrap();
    assert_eq!(values(&sum(&a)), (vec![2], vec![6.0, 15.0]));
    assert_eq!(values(&sum(&b)), (vec![3], vec![3.0, 7.0, 11.0]));
    assert_eq!(values(&sum(&at)), (vec![3], vec![5.0, 7.0, 9.0]));
    let hits = counter("ShapeCacheHit");
    assert_eq!(values(&sum(&a)), (vec![2], vec![6.0, 15.0]));
    assert!(counter("ShapeCacheHit") > hits, "an exact repeat hits");
}
