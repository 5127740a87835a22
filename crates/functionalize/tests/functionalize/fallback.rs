//! The boxed fallback at `Functionalize` (A.4.1), reached through ordinary operator calls.

use crate::{mutate, slice_meta, values, view_of};
use switchyard_core::local_dispatch::IncludeDispatchKeyGuard;
use switchyard_core::{DispatchKey, Tensor};
use switchyard_functionalize::{from_functional, functional_payload, is_functional, to_functional};

#[test]
fn out_of_place_op_on_wrappers_returns_a_wrapper() {
    let a = to_functional(&Tensor::from_data([[1.0f32, 2.0], [3.0, 4.0]]).unwrap()).unwrap();
    let b = to_functional(&Tensor::from_data([[10.0f32, 20.0], [30.0, 40.0]]).unwrap()).unwrap();
    let c = switchyard_ops::add_with(&a, &b, 2.0).unwrap();
    assert!(is_functional(&c));
    assert_eq!(c.sizes().as_slice(), &[2, 2]);
    // A fresh output is a new alias group of its own.
    assert!(!switchyard_functionalize::are_aliased(&c, &a));
    let fc = functional_payload(&c).unwrap();
    assert!(fc.view_metas().is_empty() && fc.is_up_to_date());
    assert!(!is_functional(&from_functional(&c).unwrap()));
    assert_eq!(values(&c), vec![21.0, 42.0, 63.0, 84.0]);
    // Reductions and ops with scalars go the same way.
    assert_eq!(values(&switchyard_ops::sum(&c).unwrap()), vec![210.0]);
}

/// Inputs are synced first: an op on a stale base sees the update made through its view.
#[test]
fn inputs_are_synced_before_the_call() {
    let a = to_functional(&Tensor::from_slice(&[1.0f32, 2.0, 3.0]).unwrap()).unwrap();
    let v = view_of(&a, slice_meta(0, 0, 2));
    mutate(&v, |x| switchyard_ops::mul(x, x));
    assert!(!functional_payload(&a).unwrap().is_up_to_date());
    let out = switchyard_ops::add(&a, &a).unwrap();
    assert_eq!(values(&out), vec![2.0, 8.0, 6.0]);
    assert!(functional_payload(&a).unwrap().is_up_to_date());
}

/// Mixing plain and functional inputs is allowed, and the output is functional (F28); plain
/// inputs alone never reach the layer.
#[test]
fn mixed_inputs_give_a_functional_output() {
    let plain = Tensor::from_slice(&[1.0f32, 2.0]).unwrap();
    let w = to_functional(&Tensor::from_slice(&[10.0f32, 20.0]).unwrap()).unwrap();
    let out = switchyard_ops::mul(&plain, &w).unwrap();
    assert!(is_functional(&out));
    assert_eq!(values(&out), vec![10.0, 40.0]);
    let out = switchyard_ops::mul(&plain, &plain).unwrap();
    assert!(!is_functional(&out));
}

#[test]
fn tensor_lists_and_optional_tensors_are_unwrapped() {
    let a = to_functional(&Tensor::from_slice(&[1.0f32, 2.0]).unwrap()).unwrap();
    let b = Tensor::from_slice(&[3.0f32]).unwrap();
    // Tensor[] with one functional element.
    let cat = switchyard_ops::cat(&[a.clone(), b.clone()]).unwrap();
    assert!(is_functional(&cat));
    assert_eq!(values(&cat), vec![1.0, 2.0, 3.0]);
    // Tensor? (absent and present).
    let lo = to_functional(&Tensor::from_slice(&[1.5f32, 1.5]).unwrap()).unwrap();
    let clamped = switchyard_ops::clamp_tensor_with(&a, Some(&lo), None).unwrap();
    assert!(is_functional(&clamped));
    assert_eq!(values(&clamped), vec![1.5, 2.0]);
    // Tensor?[] (index with a functional index tensor).
    let idx = to_functional(&Tensor::from_slice(&[1i64, 0, 1]).unwrap()).unwrap();
    let picked = switchyard_ops::index(&cat, &[Some(idx)]).unwrap();
    assert!(is_functional(&picked));
    assert_eq!(values(&picked), vec![2.0, 1.0, 2.0]);
}

/// A factory reaches the layer only through the thread's included keys; its output is wrapped.
#[test]
fn factories_inside_a_functionalized_region_are_wrapped() {
    let z = {
        let _in = IncludeDispatchKeyGuard::new(DispatchKey::Functionalize);
        switchyard_ops::zeros(&[2]).unwrap()
    };
    assert!(is_functional(&z));
    assert_eq!(values(&z), vec![0.0, 0.0]);
    assert!(!is_functional(&switchyard_ops::zeros(&[2]).unwrap()));
}
