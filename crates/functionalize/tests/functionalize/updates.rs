//! Updates through hand-built view records, syncing and regeneration (A.3).

use crate::{mutate, select_meta, slice_meta, values, view_of};
use switchyard_core::Tensor;
use switchyard_functionalize::{
    ViewMeta, apply_updates, are_aliased, commit_update, freeze, from_functional,
    functional_payload, has_data_mutation, has_metadata_mutation, is_functional, mutate_view_meta,
    regenerate_from_base, replace_, sync, to_functional, unsafe_reset_storage,
};

fn arange(n: usize) -> Tensor {
    Tensor::from_vec((0..n).map(|x| x as f32).collect(), &[n as i64]).unwrap()
}

/// `a = arange(6)`, `b = a[1:4]`; `b += 10` reaches `a` at the next sync; a second view made
/// before the update regenerates from the updated base.
#[test]
fn update_through_a_slice_reaches_the_base_and_other_views() {
    let a = to_functional(&arange(6)).unwrap();
    let b = view_of(&a, slice_meta(0, 1, 4));
    let c = view_of(&a, select_meta(0, 2));
    assert!(are_aliased(&a, &b) && are_aliased(&b, &c));
    assert_eq!(values(&b), vec![1.0, 2.0, 3.0]);
    let storage = functional_payload(&a).unwrap().storage();
    assert_eq!(storage.generation(), 0);
    assert!(!has_data_mutation(&a).unwrap());

    mutate(&b, |v| switchyard_ops::add_scalar(v, 10.0));
    // Queued, not applied: the base and the other view are stale until synced.
    assert_eq!(storage.generation(), 1);
    assert_eq!(storage.pending_updates(), 1);
    assert!(has_data_mutation(&a).unwrap());
    let fa = functional_payload(&a).unwrap();
    assert!(!fa.is_up_to_date());
    assert_eq!(
        from_functional(&a).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    );

    assert_eq!(values(&a), vec![0.0, 11.0, 12.0, 13.0, 4.0, 5.0]);
    assert!(fa.is_up_to_date());
    assert_eq!(fa.generation(), 1);
    assert_eq!(storage.pending_updates(), 0);
    // c = a[2] was made before the update: it regenerates on sync.
    let fc = functional_payload(&c).unwrap();
    assert_eq!(fc.generation(), 0);
    assert_eq!(values(&c), vec![12.0]);
    assert_eq!(fc.generation(), 1);
    assert_eq!(values(&b), vec![11.0, 12.0, 13.0]);
    // One counted mutation: regenerations are lazy replaces.
    assert_eq!(storage.mutation_count(), 1);
}

/// The base of a 2-d group mutated through a row (`select`), then the row's column slice
/// (a chain of two records: the intermediate row is rebuilt for the inverse).
#[test]
fn updates_through_a_view_chain_use_intermediates() {
    let a =
        to_functional(&Tensor::from_data([[0.0f32, 1.0, 2.0], [3.0, 4.0, 5.0]]).unwrap()).unwrap();
    let row = view_of(&a, select_meta(0, 1));
    assert_eq!(values(&row), vec![3.0, 4.0, 5.0]);
    let tail = view_of(&row, slice_meta(0, 1, 3));
    assert_eq!(functional_payload(&tail).unwrap().view_metas().len(), 2);
    assert_eq!(values(&tail), vec![4.0, 5.0]);

    mutate(&tail, |v| switchyard_ops::mul(v, v));
    assert_eq!(values(&a), vec![0.0, 1.0, 2.0, 3.0, 16.0, 25.0]);
    assert_eq!(values(&row), vec![3.0, 16.0, 25.0]);

    // The base itself mutated: its update has no records, so it replaces the base.
    mutate(&a, |v| switchyard_ops::add_scalar(v, 1.0));
    assert_eq!(values(&row), vec![4.0, 17.0, 26.0]);
    assert_eq!(values(&tail), vec![17.0, 26.0]);
    assert_eq!(functional_payload(&a).unwrap().storage().generation(), 2);
}

/// Updates queued before a sync apply in order: the later one wins where they overlap.
#[test]
fn queued_updates_apply_first_in_first_out() {
    let a = to_functional(&arange(5)).unwrap();
    let left = view_of(&a, slice_meta(0, 0, 3));
    let right = view_of(&a, slice_meta(0, 2, 5));
    mutate(&left, |v| switchyard_ops::add_scalar(v, 100.0));
    // `right` was not synced since: its value predates the first update (it still has 2.0 at
    // index 2), and its update overwrites the overlap.
    let new_right = Tensor::from_slice(&[-1.0f32, -2.0, -3.0]).unwrap();
    replace_(&right, &new_right, false).unwrap();
    commit_update(&right).unwrap();
    let storage = functional_payload(&a).unwrap().storage();
    assert_eq!((storage.generation(), storage.pending_updates()), (2, 2));
    assert!(apply_updates(&a).unwrap());
    assert!(!apply_updates(&a).unwrap());
    // Applied but not regenerated: `a` still holds its old value until regenerated.
    assert_eq!(
        from_functional(&a).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0, 1.0, 2.0, 3.0, 4.0]
    );
    regenerate_from_base(&a).unwrap();
    assert_eq!(
        from_functional(&a).unwrap().to_vec::<f32>().unwrap(),
        vec![100.0, 101.0, -1.0, -2.0, -3.0]
    );
    assert_eq!(values(&left), vec![100.0, 101.0, -1.0]);
}

#[test]
fn replace_converts_dtype_and_restrides_on_a_size_change() {
    let a = to_functional(&Tensor::from_data([[1.0f32, 2.0], [3.0, 4.0]]).unwrap()).unwrap();
    // A bool result (`ge_` on a float tensor) is converted back to the wrapper's dtype.
    let mask = Tensor::from_data([[true, false], [false, true]]).unwrap();
    replace_(&a, &mask, false).unwrap();
    let v = from_functional(&a).unwrap();
    assert_eq!(v.dtype(), a.dtype());
    assert_eq!(v.to_vec::<f32>().unwrap(), vec![1.0, 0.0, 0.0, 1.0]);
    // New sizes (an out= resize): contiguous geometry of the new sizes.
    replace_(&a, &Tensor::from_slice(&[7.0f32, 8.0, 9.0]).unwrap(), false).unwrap();
    assert_eq!(
        (a.sizes().as_slice(), a.strides().as_slice()),
        (&[3][..], &[1][..])
    );
    // Same sizes: the wrapper keeps its (eager) geometry whatever the value's layout.
    let t = Tensor::from_vec(vec![0.0f32; 6], &[2, 3]).unwrap();
    let tt = to_functional(&t.as_strided_view(&[3, 2], &[1, 3], 0).unwrap()).unwrap();
    replace_(
        &tt,
        &Tensor::from_vec(vec![1.0f32; 6], &[3, 2]).unwrap(),
        false,
    )
    .unwrap();
    assert_eq!(tt.strides().as_slice(), &[1, 3]);
    assert_eq!(
        functional_payload(&a).unwrap().storage().mutation_count(),
        2
    );
}

#[test]
fn mutate_view_meta_makes_a_tensor_a_view_of_its_old_base() {
    let a = to_functional(&arange(4)).unwrap();
    mutate_view_meta(&a, slice_meta(0, 1, 3)).unwrap();
    assert!(has_metadata_mutation(&a).unwrap());
    assert_eq!(a.sizes().as_slice(), &[2]);
    assert_eq!(values(&a), vec![1.0, 2.0]);
    mutate(&a, |v| switchyard_ops::add_scalar(v, 5.0));
    let storage = functional_payload(&a).unwrap().storage();
    storage.apply_updates().unwrap();
    assert_eq!(
        storage.base().to_vec::<f32>().unwrap(),
        vec![0.0, 6.0, 7.0, 3.0]
    );
    assert_eq!(values(&a), vec![6.0, 7.0]);
}

#[test]
fn unsafe_reset_storage_leaves_the_group() {
    let a = to_functional(&arange(3)).unwrap();
    let b = view_of(&a, slice_meta(0, 0, 2));
    unsafe_reset_storage(&b).unwrap();
    assert!(!are_aliased(&a, &b));
    assert!(functional_payload(&b).unwrap().view_metas().is_empty());
    mutate(&b, |v| switchyard_ops::add_scalar(v, 1.0));
    assert_eq!(values(&b), vec![1.0, 2.0]);
    assert_eq!(values(&a), vec![0.0, 1.0, 2.0]);
}

/// A failing inverse is an error at sync, not a panic, and the update stays queued.
#[test]
fn a_failing_inverse_is_an_error_and_keeps_the_update() {
    let a = to_functional(&arange(3)).unwrap();
    let broken = ViewMeta::new(
        "broken",
        |base, _| Ok(base.clone()),
        |_, _, _| Err(switchyard_core::Error::runtime("inverse failed")),
    );
    let b = view_of(&a, broken);
    mutate(&b, |v| switchyard_ops::add_scalar(v, 1.0));
    let e = sync(&a).unwrap_err();
    assert_eq!(e.message(), "inverse failed");
    let storage = functional_payload(&a).unwrap().storage();
    assert_eq!(storage.pending_updates(), 1);
    assert!(sync(&a).is_err());
}

#[test]
fn plain_tensors_are_refused_or_ignored() {
    let t = arange(2);
    // Syncing a plain tensor is nothing; the wrapper-only operations are errors.
    sync(&t).unwrap();
    assert!(!is_functional(&t));
    for e in [
        commit_update(&t).unwrap_err(),
        replace_(&t, &t, false).unwrap_err(),
        apply_updates(&t).map(|_| ()).unwrap_err(),
        regenerate_from_base(&t).unwrap_err(),
        freeze(&t).unwrap_err(),
    ] {
        assert!(e.message().contains("expected a functional tensor"), "{e}");
    }
    let w = to_functional(&t).unwrap();
    let e = replace_(&w, &w, false).unwrap_err();
    assert!(e.message().contains("got a functional tensor"), "{e}");
    let e = switchyard_functionalize::create_view(&w, w.clone(), slice_meta(0, 0, 1), None)
        .unwrap_err();
    assert!(
        e.message().contains("must not be a functional tensor"),
        "{e}"
    );
}

/// A view wrapper shares its base wrapper's version counter and can report a given eager
/// geometry (offset included).
#[test]
fn views_share_the_version_counter_and_take_an_eager_geometry() {
    let a = to_functional(&arange(6)).unwrap();
    let meta = slice_meta(0, 2, 5);
    let value = meta.forward(&from_functional(&a).unwrap()).unwrap();
    let g = switchyard_core::tensor::Geometry::new(&[3], &[1], 2).unwrap();
    let b = switchyard_functionalize::create_view(&a, value, meta, Some(&g)).unwrap();
    assert_eq!(b.storage_offset(), 2);
    assert!(b.version_counter().is_shared_with(a.version_counter()));
    b.bump_version();
    assert_eq!(a.version(), 1);
}
