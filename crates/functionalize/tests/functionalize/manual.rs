//! The hand-written kernels at `Functionalize` (plan §3.5): `resize_`, `set_.source_Tensor`,
//! `lift*`, `_to_copy`, `_unsafe_view`, and `functionalize_aten_op`. Programs that run eagerly
//! too are compared with eager in `transform.rs`; here, what only the layer has (its records,
//! its alias groups, its errors) and what has no eager counterpart (`set_`).

use crate::values;
use std::sync::atomic::Ordering;
use switchyard_core::{IValue, ScalarType, Stack, Tensor};
use switchyard_functionalize::{
    Remove, are_aliased, functional_payload, functionalize_aten_op, is_functional,
    run_functionalized, to_functional,
};
use switchyard_ops::TensorOps;

fn arange(n: i64, shape: &[i64]) -> Tensor {
    Tensor::from_vec((0..n).map(|x| x as f32).collect(), shape).unwrap()
}

const MODES: [Remove; 2] = [Remove::Mutations, Remove::MutationsAndViews];

#[test]
fn resize_shrinking_records_a_view_and_growing_replaces_the_storage() {
    let a = to_functional(&arange(16, &[16])).unwrap();
    let group = functional_payload(&a).unwrap().storage();
    a.resize_(&[2, 3]).unwrap();
    let fa = functional_payload(&a).unwrap();
    // A window on the same group: eager's first 6 elements, contiguous.
    assert!(std::sync::Arc::ptr_eq(&fa.storage(), &group));
    assert_eq!(fa.view_metas().len(), 1);
    assert_eq!(fa.view_metas()[0].op, "resize_");
    assert!(fa.has_metadata_mutation());
    assert_eq!(
        (a.sizes().to_vec(), a.strides().to_vec()),
        (vec![2, 3], vec![3, 1])
    );
    assert_eq!(values(&a), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    // Back to 16 elements still fits the storage: another window, showing the old data.
    a.resize_(&[16]).unwrap();
    assert_eq!(values(&a), (0..16).map(|x| x as f32).collect::<Vec<_>>());
    // Past the storage: a new group whose base is the grown value.
    let b = to_functional(&arange(4, &[4])).unwrap();
    // (Holding the group here would count as an alias: compare addresses.)
    let old = std::sync::Arc::as_ptr(&functional_payload(&b).unwrap().storage());
    b.resize_(&[2, 3]).unwrap();
    let fb = functional_payload(&b).unwrap();
    assert!(!std::ptr::eq(std::sync::Arc::as_ptr(&fb.storage()), old));
    assert!(fb.view_metas().is_empty() && fb.has_metadata_mutation());
    assert_eq!(b.sizes().as_slice(), &[2, 3]);
    assert_eq!(&values(&b)[..4], &[0.0, 1.0, 2.0, 3.0]);
    // Same sizes: nothing changes, strides included (as eagerly).
    let c = to_functional(&arange(6, &[2, 3]).t().unwrap()).unwrap();
    c.resize_(&[3, 2]).unwrap();
    assert_eq!(c.strides().as_slice(), &[1, 3]);
    assert!(functional_payload(&c).unwrap().view_metas().is_empty());
}

#[test]
fn f35_set_() {
    // Eager CPU refuses `set_` across storages (a tensor's storage is fixed), so the expected
    // values are worked out by hand: after `y.set_(x)`, y is x (sizes and data), and mutating
    // y mutates x; y's old group is frozen.
    for remove in MODES {
        let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0]).unwrap();
        let outs = run_functionalized(
            &|x| {
                let y = switchyard_ops::ones(&[2])?;
                let old_view = y.view(&[2])?;
                y.set_(&x[0])?;
                assert!(are_aliased(&y, &x[0]));
                assert_eq!(y.sizes().as_slice(), &[3]);
                y.add_scalar_(10.0)?;
                let e = old_view.add_scalar_(1.0).unwrap_err();
                assert_eq!(e.message(), "cannot mutate tensors with frozen storage");
                Ok(vec![y, old_view])
            },
            &[Clone::clone(&x)],
            remove,
        )
        .unwrap();
        assert_eq!(outs[0].to_vec::<f32>().unwrap(), vec![11.0, 12.0, 13.0]);
        assert!(outs[0].is_cpu() && !is_functional(&outs[0]));
        assert_eq!(outs[1].to_vec::<f32>().unwrap(), vec![1.0, 1.0]);
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![11.0, 12.0, 13.0]);
    }
    // Mixed plain / functional arguments: PyTorch's errors (`errors.rs`). Eager's checks.
    let w = to_functional(&arange(2, &[2])).unwrap();
    let l = to_functional(&Tensor::from_slice(&[1i64, 2]).unwrap()).unwrap();
    let e = w.set_(&l).unwrap_err();
    assert!(
        e.message().starts_with("Could not set tensor of type"),
        "{e}"
    );
}

#[test]
fn lift_wraps_plain_tensors_only() {
    for remove in MODES {
        let outs = run_functionalized(
            &|_| {
                let c = Tensor::from_slice(&[1.0f32, 2.0])?;
                let a = switchyard_ops::lift(&c)?;
                let b = switchyard_ops::lift_fresh(&c)?;
                let d = switchyard_ops::lift_fresh_copy(&c)?;
                // Each is a new alias group.
                assert!(is_functional(&a) && is_functional(&b) && is_functional(&d));
                assert!(!are_aliased(&a, &b) && !are_aliased(&b, &d));
                // Mutating a lifted constant leaves the constant alone.
                b.mul_scalar_(3.0)?;
                assert_eq!(c.to_vec::<f32>()?, vec![1.0, 2.0]);
                // `lift` refuses a functional tensor (an internal assert in PyTorch);
                // `lift_fresh` of one is an alias of it, `lift_fresh_copy` a copy (PyTorch's
                // `lift_fresh_functionalize(_copy)`, checked live: `lift_fresh(y).add_(1)`
                // on a lazy `y` changes `y`).
                let e = switchyard_ops::lift(&b).unwrap_err();
                assert!(
                    e.message()
                        .starts_with("lift: expected a tensor that is not functional"),
                    "{e}"
                );
                let alias = switchyard_ops::lift_fresh(&b)?;
                let copy = switchyard_ops::lift_fresh_copy(&b)?;
                assert!(is_functional(&alias) && is_functional(&copy));
                assert!(are_aliased(&alias, &b) && !are_aliased(&copy, &b));
                alias.add_scalar_(1.0)?;
                copy.mul_scalar_(10.0)?;
                Ok(vec![a, b, d, copy])
            },
            &[],
            remove,
        )
        .unwrap();
        // b = c * 3, then + 1 through its alias; the copy took b's values before that.
        assert_eq!(outs[1].to_vec::<f32>().unwrap(), vec![4.0, 7.0]);
        assert_eq!(outs[2].to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
        assert_eq!(outs[3].to_vec::<f32>().unwrap(), vec![30.0, 60.0]);
    }
}

#[test]
fn to_copy_leaves_functionalization_outside_a_region() {
    // A wrapper whose view was mutated: `_to_copy` syncs it first.
    let w = to_functional(&arange(4, &[4])).unwrap();
    w.select(0, 1).unwrap().fill_scalar_(9.0).unwrap();
    let out =
        switchyard_ops::_to_copy_with(&w, Some(ScalarType::Double), None, None, None, false, None)
            .unwrap();
    assert!(!is_functional(&out));
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![0.0, 9.0, 2.0, 3.0]);
    // Inside `functionalize`, the copy is a wrapper like any other result.
    let outs = run_functionalized(
        &|x| {
            let d = x[0].to_dtype(ScalarType::Double)?;
            assert!(is_functional(&d));
            d.add_scalar_(0.5)?;
            Ok(vec![d])
        },
        &[arange(2, &[2])],
        Remove::MutationsAndViews,
    )
    .unwrap();
    assert_eq!(outs[0].to_vec::<f64>().unwrap(), vec![0.5, 1.5]);
}

#[test]
fn unsafe_view_aliases_its_input() {
    let w = to_functional(&arange(6, &[6])).unwrap();
    let u = switchyard_ops::_unsafe_view(&w, &[2, 3]).unwrap();
    assert!(are_aliased(&u, &w));
    assert_eq!(
        (u.sizes().to_vec(), u.strides().to_vec()),
        (vec![2, 3], vec![3, 1])
    );
    u.add_scalar_(1.0).unwrap();
    assert_eq!(values(&w), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    w.mul_scalar_(2.0).unwrap();
    assert_eq!(values(&u), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    // Eager's error for a size that does not fit.
    let e = switchyard_ops::_unsafe_view(&w, &[4]).unwrap_err();
    let eager = switchyard_ops::_unsafe_view(&arange(6, &[6]), &[4]).unwrap_err();
    assert_eq!(e.message(), eager.message());
}

#[test]
fn functionalize_aten_op_runs_a_composite_kernel_on_wrappers() {
    let op = crate::custom::handle("fztest::fill_first_row");
    let x = arange(4, &[2, 2]);
    let mut stack: Stack = vec![IValue::Tensor(Clone::clone(&x)), IValue::Double(5.0)];
    crate::custom::FILL_SAW_FUNCTIONAL.store(false, Ordering::SeqCst);
    functionalize_aten_op(&op, &mut stack).unwrap();
    assert!(crate::custom::FILL_SAW_FUNCTIONAL.load(Ordering::SeqCst));
    let out = stack.pop().unwrap().into_tensor().unwrap();
    assert!(stack.is_empty());
    assert!(!is_functional(&out));
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![5.0, 5.0, 2.0, 3.0]);
    // The same as the kernel eagerly, and the input is untouched.
    let mut eager: Stack = vec![IValue::Tensor(Clone::clone(&x)), IValue::Double(5.0)];
    op.call_boxed(&mut eager).unwrap();
    assert!(!crate::custom::FILL_SAW_FUNCTIONAL.load(Ordering::SeqCst));
    assert_eq!(
        eager
            .pop()
            .unwrap()
            .into_tensor()
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        out.to_vec::<f32>().unwrap()
    );
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);
    // Functional arguments are refused.
    let w = to_functional(&x).unwrap();
    let mut stack: Stack = vec![IValue::Tensor(w), IValue::Double(5.0)];
    let e = functionalize_aten_op(&op, &mut stack).unwrap_err();
    assert!(
        e.message().contains("expects plain tensor arguments"),
        "{e}"
    );
}
