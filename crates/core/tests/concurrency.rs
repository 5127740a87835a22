//! Two threads mutating tensors that share storage: operations are serialised by the storage
//! locks, so every observed state is one a sequential interleaving could produce and no
//! update is lost or torn.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on failure

use std::sync::Arc;
use std::sync::Barrier;
use switchyard_core::element::{read_element, write_element};
use switchyard_core::{Access, Tensor, with_tensors};

/// Adds `delta` to every element of `t` (read-modify-write of the whole view at once).
fn add_in_place(t: &Tensor, delta: i64) {
    with_tensors(&[(t, Access::Write)], |d| {
        let offsets: Vec<i64> = d.geometry(0).offsets().collect();
        let bytes = d.bytes_mut(0)?;
        for off in offsets {
            let v: i64 = read_element(bytes, off as usize).unwrap();
            assert!(write_element(bytes, off as usize, v + delta));
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn concurrent_writers_through_views_lose_no_updates() {
    let base = Tensor::from_vec(vec![0i64; 64], &[8, 8]).unwrap();
    // Two different views of the same storage: the whole tensor and its transpose.
    let a = base.as_strided_view(&[8, 8], &[8, 1], 0).unwrap();
    let b = base.as_strided_view(&[8, 8], &[1, 8], 0).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let rounds = 2000;
    let handles: Vec<_> = [(a, 1i64), (b, 1000i64)]
        .into_iter()
        .map(|(view, delta)| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..rounds {
                    add_in_place(&view, delta);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let expected = rounds + rounds * 1000;
    assert!(base.to_vec::<i64>().unwrap().iter().all(|v| *v == expected));
}

#[test]
fn readers_never_see_a_half_written_update() {
    // A writer sets every element to the same value each round; a reader must always see all
    // elements equal (an update is never observed half done).
    let t = Tensor::from_vec(vec![0i64; 4096], &[4096]).unwrap();
    let writer_view = t.clone();
    let writer = std::thread::spawn(move || {
        for round in 1..=300i64 {
            with_tensors(&[(&writer_view, Access::Write)], |d| {
                let bytes = d.bytes_mut(0)?;
                for i in 0..4096 {
                    write_element(bytes, i, round);
                }
                Ok(())
            })
            .unwrap();
        }
    });
    for _ in 0..300 {
        let v = t.to_vec::<i64>().unwrap();
        assert!(v.iter().all(|x| *x == v[0]), "torn read");
    }
    writer.join().unwrap();
    assert!(t.to_vec::<i64>().unwrap().iter().all(|x| *x == 300));
}

#[test]
fn resizing_while_another_thread_reads_is_safe() {
    // One thread keeps resizing a tensor (reallocating its storage) while another reads a
    // view of it: reads either succeed with consistent data or fail with an error; nothing
    // crashes or reads freed memory.
    let t = Tensor::from_vec(vec![7i32; 16], &[16]).unwrap();
    let view = t.as_strided_view(&[4], &[1], 0).unwrap();
    let resizer = {
        let t = t.clone();
        std::thread::spawn(move || {
            for i in 0..500i64 {
                t.resize_contiguous(&[16 + (i % 7) * 64]).unwrap();
            }
        })
    };
    for _ in 0..2000 {
        match view.to_vec::<i32>() {
            Ok(v) => assert_eq!(v, vec![7; 4]),
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    resizer.join().unwrap();
}

#[test]
fn concurrent_metadata_mutation_and_reads() {
    let t = Tensor::from_vec((0..24).collect::<Vec<i64>>(), &[24]).unwrap();
    let mutator = {
        let t = t.clone();
        std::thread::spawn(move || {
            for i in 0..2000 {
                let (sizes, strides): (&[i64], &[i64]) = if i % 2 == 0 {
                    (&[4, 6], &[6, 1])
                } else {
                    (&[6, 4], &[1, 6])
                };
                t.set_geometry(sizes, strides, 0).unwrap();
            }
        })
    };
    for _ in 0..2000 {
        let g = t.geometry();
        // A snapshot is always one of the consistent states.
        assert!(matches!(g.sizes(), [24] | [4, 6] | [6, 4]));
        let v = t.to_vec::<i64>().unwrap();
        assert_eq!(v.len(), 24);
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(sorted, (0..24).collect::<Vec<_>>());
    }
    mutator.join().unwrap();
}
