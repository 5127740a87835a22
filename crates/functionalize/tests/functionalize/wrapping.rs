//! Wrapping and unwrapping (A.2.1, A.3 wrap/unwrap).

use switchyard_core::{DispatchKey, Scalar, Tensor};
use switchyard_functionalize::{
    FunctionalStorage, are_aliased, from_functional, from_functional_list,
    from_functional_optional_list, functional_payload, is_functional, is_functional_list,
    is_functional_optional_list, to_functional, to_functional_list,
};

#[test]
fn wrap_unwrap_round_trip() {
    let t = Tensor::from_data([[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]).unwrap();
    let w = to_functional(&t).unwrap();
    assert!(is_functional(&w) && !is_functional(&t));
    assert!(w.key_set().has(DispatchKey::Functionalize));
    assert!(!w.has_storage());
    // The wrapper reports the value's metadata and shares its version counter.
    assert_eq!(w.sizes(), t.sizes());
    assert_eq!(w.strides(), t.strides());
    assert_eq!((w.dtype(), w.device()), (t.dtype(), t.device()));
    assert!(w.version_counter().is_shared_with(t.version_counter()));
    // Unwrapping gives the very tensor that was wrapped.
    let back = from_functional(&w).unwrap();
    assert!(back.is_same(&t));
    let ft = functional_payload(&w).unwrap();
    assert_eq!((ft.generation(), ft.view_metas().len()), (0, 0));
    assert!(ft.is_up_to_date());
    assert!(ft.storage().base().is_same(&t));
    assert_eq!(ft.storage().nbytes(), t.storage().unwrap().nbytes());
}

#[test]
fn wrapping_keeps_a_strided_layout() {
    let t = Tensor::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]).unwrap();
    let tt = t.as_strided_view(&[3, 2], &[1, 3], 0).unwrap();
    let w = to_functional(&tt).unwrap();
    assert_eq!(w.strides().as_slice(), &[1, 3]);
    assert_eq!(crate::values(&w), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
}

#[test]
fn wrapped_numbers_are_never_wrapped() {
    let n = Tensor::wrapped_scalar(Scalar::Float(2.0)).unwrap();
    let w = to_functional(&n).unwrap();
    assert!(w.is_same(&n) && !is_functional(&w));
    assert!(from_functional(&n).unwrap().is_same(&n));
}

#[test]
fn no_nesting_and_no_unwrapping_of_plain_tensors() {
    let t = Tensor::from_slice(&[1.0f32]).unwrap();
    let w = to_functional(&t).unwrap();
    let e = to_functional(&w).unwrap_err();
    assert!(e.message().contains("already a functional tensor"), "{e}");
    let e = from_functional(&t).unwrap_err();
    assert!(e.message().contains("expected a functional tensor"), "{e}");
    // The storage refuses a functional base too.
    assert!(FunctionalStorage::new(w).is_err());
}

#[test]
fn list_variants_touch_only_functional_elements() {
    let a = Tensor::from_slice(&[1.0f32]).unwrap();
    let b = Tensor::from_slice(&[2.0f32]).unwrap();
    assert!(!is_functional_list(&[a.clone(), b.clone()]));
    let ws = to_functional_list(&[a.clone(), b.clone()]).unwrap();
    assert!(ws.iter().all(is_functional));
    let mixed = vec![ws[0].clone(), b.clone()];
    assert!(is_functional_list(&mixed));
    let un = from_functional_list(&mixed);
    assert!(un[0].is_same(&a) && un[1].is_same(&b));
    let opt = vec![None, Some(ws[1].clone()), Some(a.clone())];
    assert!(is_functional_optional_list(&opt));
    assert!(!is_functional_optional_list(&[None, Some(a.clone())]));
    let un = from_functional_optional_list(&opt);
    assert!(un[0].is_none());
    assert!(un[1].as_ref().unwrap().is_same(&b));
    assert!(un[2].as_ref().unwrap().is_same(&a));
}

#[test]
fn separately_wrapped_tensors_are_not_aliased() {
    let t = Tensor::from_slice(&[1.0f32, 2.0]).unwrap();
    let a = to_functional(&t).unwrap();
    // Wrapping the same plain tensor twice makes two alias groups (as in PyTorch).
    let b = to_functional(&t).unwrap();
    assert!(are_aliased(&a, &a));
    assert!(!are_aliased(&a, &b));
    assert!(!are_aliased(&a, &t));
}

#[test]
fn an_updated_alias_group_lets_go_of_its_first_base() {
    use switchyard_ops::TensorOps;
    let t = Tensor::from_data([1.0f32, 2.0, 3.0]).unwrap();
    let w = to_functional(&t).unwrap();
    w.add_scalar_(1.0).unwrap();
    switchyard_functionalize::sync(&w).unwrap();
    let ft = functional_payload(&w).unwrap();
    assert!(!ft.storage().base().is_same(&t));
    // Nothing of the group holds the first base any more (it kept a whole copy of a mutated
    // tensor's first data alive), only its size.
    assert_eq!(t.handle_count(), 1);
    assert_eq!(ft.storage().nbytes(), 12);
    assert_eq!(
        from_functional(&w).unwrap().to_vec::<f32>().unwrap(),
        [2.0, 3.0, 4.0]
    );
}
