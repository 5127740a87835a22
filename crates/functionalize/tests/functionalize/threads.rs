//! Alias groups used from several threads: the state is behind locks, so concurrent updates
//! and syncs are safe and none is lost.

use crate::{mutate, select_meta, values, view_of};
use switchyard_core::Tensor;
use switchyard_functionalize::{functional_payload, sync, to_functional};

#[test]
fn concurrent_updates_through_disjoint_views_all_land() {
    const N: usize = 8;
    let a = to_functional(&Tensor::from_vec(vec![0.0f32; N], &[N as i64]).unwrap()).unwrap();
    std::thread::scope(|s| {
        for i in 0..N {
            let a = &a;
            s.spawn(move || {
                let v = view_of(a, select_meta(0, i as i64));
                mutate(&v, |x| switchyard_ops::add_scalar(x, (i + 1) as f64));
                // Other threads' updates may be pending or applied: syncing is safe either way.
                sync(&v).unwrap();
                sync(a).unwrap();
            });
        }
    });
    assert_eq!(
        functional_payload(&a).unwrap().storage().generation(),
        N as u64
    );
    assert_eq!(values(&a), (1..=N).map(|x| x as f32).collect::<Vec<_>>());
}
