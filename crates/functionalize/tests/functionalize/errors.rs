//! The errors of functionalization (A.10 of the reference note, plan §6), one test per row,
//! each asserting PyTorch's whole message (checked against PyTorch 2.15's sources and, where
//! the situation can be built in Python, against the error it raises: `torch.func.functionalize`
//! with the same program). All are `RuntimeError`s.
//!
//! | A.10 row | test |
//! |---|---|
//! | grow-resize a view or an aliased tensor | [`resize_of_a_view_or_an_aliased_tensor_to_a_larger_size`] (also `transform::f26_resize_view_larger`) |
//! | frozen storage | [`mutation_of_a_frozen_alias_group`] (also `transform::f30_freeze`, `manual::f35_set_`) |
//! | view chain with a later `as_strided` | [`mutation_through_as_strided_later_in_a_view_chain`] |
//! | `unfold` view with overlapping windows, views reapplied | [`mutation_of_overlapping_unfold_windows`] (also `transform::f32_unfold_overlap`) |
//! | mutation of an internally overlapping view | [`mutation_of_an_internally_overlapping_view`] |
//! | written tensor partially overlapping an input | [`mutation_partially_overlapping_an_input`] |
//! | plain tensor mutated with a functional argument | [`mutation_of_a_plain_tensor_with_a_functional_argument`] (also `transform::f28_mixed_invalid`) |
//! | operator with alias annotations reaching the fallback | [`alias_annotated_operator_without_a_kernel`] |
//! | invalid `remove=` | [`invalid_remove`] (the CLI: `crates/cli/tests/cli.rs`) |
//! | in-place change of a leaf that requires grad (autograd's, raised at the op) | `autograd::inplace_on_a_leaf_that_requires_grad_is_refused_at_the_op`, `autograd::inplace_on_a_view_of_a_leaf_is_refused_at_the_op` |
//! | sparse / nested / forward-AD views | none: ops.yaml has no such view |
//!
//! Not in A.10 but ours: [`nested_functionalize`].

use crate::{slice_meta, values, view_of};
use switchyard_core::{Error, Result, Tensor};
use switchyard_functionalize::{
    ReapplyViewsGuard, Remove, ViewMeta, commit_update, freeze, functional_payload,
    run_functionalized, to_functional,
};
use switchyard_ops::TensorOps;

const MODES: [Remove; 2] = [Remove::Mutations, Remove::MutationsAndViews];

type Program<'a> = dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a;

const RESIZE_VIEW: &str = "Attempted to resize a view tensor to a larger size. This is not allowed in the functionalization pass";
const FROZEN: &str = "cannot mutate tensors with frozen storage";
const UNFOLD_OVERLAP: &str = "While executing unfold, functionalization encountered a tensor being mutated that has internal overlap. When using torch.compile (or running functionalization directly), this is banned as the behavior is not well defined. Consider cloning the tensor before mutating it, or removing the mutation from your model.";
const INTERNAL_OVERLAP: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";
const PARTIAL_OVERLAP: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";
const MIXED: &str = "mutating a non-functional tensor with a functional tensor is not allowed. Please ensure that all of your inputs are wrapped inside of a functionalize() call.";

/// PyTorch's text for a mutation through a view chain of `len` records whose record `index`
/// is an `as_strided` ("today,so" is PyTorch's).
fn as_strided_chain(len: usize, index: usize) -> String {
    format!(
        "During torch.compile, encountered a mutation on a view chain of length {len}, where view {index} was an as_strided() call. as_strided() is non-compositional, and therefore is not possible to functionalize properly today,so this behavior is banned in compile. As a workaround, you can either remove the mutation from the model code, or you can insert a graph break right before the mutation with torch._dynamo.graph_break(). If you would like this behavior to work properly, please comment on https://github.com/pytorch/pytorch/issues/104505."
    )
}

/// PyTorch 2.15's text for an operator with alias annotations reaching the fallback, naming
/// it by its schema.
fn alias_annotated(schema: &str) -> String {
    format!(
        "Found a custom (non-ATen) operator whose output has alias annotations: {schema}. We only support functionalizing operators whose outputs do not have alias annotations (e.g. 'Tensor(a)' is a Tensor with an alias annotation whereas 'Tensor' is a Tensor without. The '(a)' is the alias annotation). The alias annotation specifies that the output Tensor shares storage with an input that has the same annotation. Please check if (1) the output needs to be an output (if not, don't return it), (2) if the output doesn't share storage with any inputs, then delete the alias annotation. (3) if the output indeed shares storage with an input, then add a .clone() before returning it to prevent storage sharing and then delete the alias annotation. Otherwise, please file an issue on GitHub."
    )
}

fn ones(shape: &[i64]) -> Tensor {
    switchyard_ops::ones(shape).unwrap()
}

fn arange(n: i64, shape: &[i64]) -> Tensor {
    Tensor::from_vec((0..n).map(|x| x as f32).collect(), shape).unwrap()
}

/// Runs `p` functionalized in both modes on a copy of `input`, expecting the error `message`;
/// the caller's tensor must be left as it was (no write-back after a failure).
fn fails_in_both_modes(p: &Program<'_>, input: &Tensor, message: &str) {
    for remove in MODES {
        let x = switchyard_ops::clone(input).unwrap();
        let err = run_functionalized(p, &[Clone::clone(&x)], remove).unwrap_err();
        assert_eq!(err.message(), message, "remove = {remove}");
        assert_eq!(
            x.to_f64_vec().unwrap(),
            input.to_f64_vec().unwrap(),
            "remove = {remove}"
        );
    }
}

/// Growing a view (F26), a tensor another live tensor aliases, or a wrapper's view records;
/// growth of an unaliased tensor and eager's own errors are not this error.
#[test]
fn resize_of_a_view_or_an_aliased_tensor_to_a_larger_size() {
    // A view of an intermediate, grown: eager grows the storage, functionalization refuses.
    let p = |x: &[Tensor]| {
        let y = x[0].add_scalar(1.0)?;
        let z = y.view(&[4, 4])?;
        z.resize_(&[5, 5])?;
        Ok(vec![z])
    };
    fails_in_both_modes(&p, &ones(&[8, 2]), RESIZE_VIEW);
    // Not a view, but a view of it is alive: growing it would leave the view behind.
    let p = |x: &[Tensor]| {
        let y = x[0].add_scalar(1.0)?;
        let v = y.view(&[-1])?;
        y.resize_(&[5, 5])?;
        Ok(vec![y, v])
    };
    assert!(p(&[ones(&[2, 2])]).is_ok());
    fails_in_both_modes(&p, &ones(&[2, 2]), RESIZE_VIEW);
    // On wrappers directly: once the view is gone, the base may grow.
    let a = to_functional(&arange(4, &[4])).unwrap();
    let v = a.view(&[2, 2]).unwrap();
    assert_eq!(v.resize_(&[3, 3]).unwrap_err().message(), RESIZE_VIEW);
    assert_eq!(a.resize_(&[9]).unwrap_err().message(), RESIZE_VIEW);
    drop(v);
    a.resize_(&[9]).unwrap();
    assert_eq!(a.sizes().as_slice(), &[9]);
    // Eager's own errors come first, from the meta shadow.
    let e = a.resize_(&[-1]).unwrap_err();
    let eager = arange(4, &[4]).resize_(&[-1]).unwrap_err();
    assert_eq!(e.message(), eager.message());
    // A plain tensor is resized below the layer.
    let p = arange(2, &[2]);
    p.resize_(&[3]).unwrap();
    assert_eq!(p.sizes().as_slice(), &[3]);
}

/// After `freeze`, every member of the group refuses data mutations, through the kernels and
/// through `commit_update`; its metadata may still change (as in PyTorch); other groups are
/// not affected.
#[test]
fn mutation_of_a_frozen_alias_group() {
    for remove in MODES {
        let x = ones(&[2, 2]);
        run_functionalized(
            &|x| {
                let y = switchyard_ops::clone(&x[0])?;
                let row = y.select(0, 0)?;
                freeze(&y)?;
                assert_eq!(y.add_scalar_(1.0).unwrap_err().message(), FROZEN);
                assert_eq!(row.fill_scalar_(3.0).unwrap_err().message(), FROZEN);
                assert_eq!(
                    switchyard_ops::add_out(&x[0], &x[0], &y)
                        .unwrap_err()
                        .message(),
                    FROZEN
                );
                assert_eq!(y.copy_(&x[0]).unwrap_err().message(), FROZEN);
                // The failed mutations left the group as it was.
                assert_eq!(crate::values(&y), vec![1.0; 4]);
                // Metadata changes are no data mutation.
                y.transpose_(0, 1)?;
                // Another group is not frozen.
                x[0].add_scalar_(1.0)?;
                Ok(vec![y])
            },
            &[Clone::clone(&x)],
            remove,
        )
        .unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.0; 4], "{remove}");
    }
    // The group itself: a frozen group queues no update.
    let a = to_functional(&arange(3, &[3])).unwrap();
    let b = view_of(&a, slice_meta(0, 0, 2));
    freeze(&b).unwrap();
    assert!(functional_payload(&a).unwrap().storage().is_frozen());
    assert_eq!(commit_update(&a).unwrap_err().message(), FROZEN);
    assert_eq!(functional_payload(&a).unwrap().storage().generation(), 0);
    // A `resize_` window of a frozen group is frozen too.
    let a = to_functional(&arange(6, &[6])).unwrap();
    a.resize_(&[4]).unwrap();
    freeze(&a).unwrap();
    assert_eq!(a.add_scalar_(1.0).unwrap_err().message(), FROZEN);
}

/// `as_strided` of a view, then a mutation through it (PyTorch issue #104505): refused with
/// the chain's length and the `as_strided` record's position. `as_strided` of the base itself
/// (first in the chain) is allowed, as in PyTorch (F7).
#[test]
fn mutation_through_as_strided_later_in_a_view_chain() {
    let p = |x: &[Tensor]| {
        let z = switchyard_ops::as_strided_with(&x[0].view(&[-1])?, &[2], &[2], Some(0))?;
        z.add_scalar_(1.0)?;
        Ok(vec![Clone::clone(&x[0])])
    };
    assert!(p(&[ones(&[4])]).is_ok());
    fails_in_both_modes(&p, &ones(&[4]), &as_strided_chain(2, 1));
    // Three records, the `as_strided` last (`torch.func.functionalize` gives the same text in
    // both modes).
    let p = |x: &[Tensor]| {
        let z = x[0].select(0, 1)?.view(&[4])?;
        let s = switchyard_ops::as_strided_with(&z, &[2], &[1], Some(0))?;
        s.mul_scalar_(2.0)?;
        Ok(vec![])
    };
    fails_in_both_modes(&p, &arange(8, &[2, 4]), &as_strided_chain(3, 2));
    // First in the chain: allowed, and the same as eager.
    let p = |x: &[Tensor]| {
        let s = switchyard_ops::as_strided_with(&x[0], &[4], &[1], Some(0))?;
        s.narrow(0, 0, 2)?.add_scalar_(1.0)?;
        Ok(vec![Clone::clone(&x[0])])
    };
    let eager = arange(4, &[4]);
    p(&[Clone::clone(&eager)]).unwrap();
    for remove in MODES {
        let x = arange(4, &[4]);
        run_functionalized(&p, &[Clone::clone(&x)], remove).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), eager.to_vec::<f32>().unwrap());
    }
    // The storage-level check, on hand-built records.
    let a = to_functional(&arange(6, &[6])).unwrap();
    let b = view_of(&a, slice_meta(0, 0, 4));
    let strided = ViewMeta::new(
        "as_strided",
        |base, _| switchyard_ops::as_strided_copy_with(base, &[2], &[2], Some(0)),
        |_, _, _| Err(Error::runtime("not reached")),
    )
    .as_strided();
    let c = view_of(&b, strided);
    assert_eq!(values(&c), vec![0.0, 2.0]);
    assert_eq!(
        commit_update(&c).unwrap_err().message(),
        as_strided_chain(2, 1)
    );
}

/// F32: windows of size 3 every 2 elements share an element. With views reapplied, mutating
/// them is PyTorch's error (raised when the update is applied); with views removed the
/// mutation runs, its windows folded back by summing (as PyTorch does).
#[test]
fn mutation_of_overlapping_unfold_windows() {
    let p = |x: &[Tensor]| {
        let t2 = switchyard_ops::add(&x[0], &x[0])?.unfold(1, 3, 2)?;
        t2.abs_()?;
        Ok(vec![t2])
    };
    let err = run_functionalized(&p, &[ones(&[1, 5])], Remove::Mutations).unwrap_err();
    assert_eq!(err.message(), UNFOLD_OVERLAP);
    run_functionalized(&p, &[ones(&[1, 5])], Remove::MutationsAndViews).unwrap();
    // On wrappers, of an input.
    let x = to_functional(&ones(&[1, 5])).unwrap();
    {
        let _keep = ReapplyViewsGuard::new(true);
        let t = x.unfold(1, 3, 2).unwrap();
        assert_eq!(t.abs_().unwrap_err().message(), UNFOLD_OVERLAP);
    }
    // Windows that do not overlap (size == step) are fine in both modes.
    let p = |x: &[Tensor]| {
        x[0].unfold(1, 2, 2)?.mul_scalar_(3.0)?;
        Ok(vec![])
    };
    for remove in MODES {
        let x = ones(&[1, 5]);
        run_functionalized(&p, &[Clone::clone(&x)], remove).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![3.0, 3.0, 3.0, 3.0, 1.0]);
    }
}

/// A written tensor whose elements share memory: eager's error from its in-place and out=
/// kernels (TensorIterator's internal-overlap check), raised by functionalization on the
/// wrapper's eager geometry before anything changes: an expanded view, an `as_strided` view
/// with a zero stride.
///
/// PyTorch 2.15 (the reference) checks no more than eager: an `as_strided` view whose
/// elements overlap without a zero stride (eager's "too hard to tell") is mutated without an
/// error, eagerly and functionalized, here as there. (A later PyTorch change, #184864 for
/// issue #174371, refuses those in functionalization; its text is not in 2.15.)
#[test]
fn mutation_of_an_internally_overlapping_view() {
    let expanded = |x: &[Tensor]| {
        x[0].expand(&[3, 2])?.add_scalar_(1.0)?;
        Ok(vec![])
    };
    let zero_stride = |x: &[Tensor]| {
        switchyard_ops::as_strided_with(&x[0], &[2, 2], &[0, 1], Some(0))?.mul_scalar_(2.0)?;
        Ok(vec![])
    };
    let expanded_out = |x: &[Tensor]| {
        let out = x[0].expand(&[3, 2])?;
        switchyard_ops::add_out(&ones(&[3, 2]), &ones(&[3, 2]), &out)?;
        Ok(vec![])
    };
    for p in [&expanded as &Program<'_>, &zero_stride, &expanded_out] {
        assert_eq!(p(&[ones(&[2])]).unwrap_err().message(), INTERNAL_OVERLAP);
        fails_in_both_modes(p, &ones(&[2]), INTERNAL_OVERLAP);
    }
    // Overlapping without a zero stride: no error, eagerly or functionalized.
    let too_hard = |x: &[Tensor]| {
        switchyard_ops::as_strided_with(&x[0], &[3, 2], &[1, 1], Some(0))?.add_scalar_(1.0)?;
        Ok(vec![])
    };
    too_hard(&[ones(&[6])]).unwrap();
    for remove in MODES {
        run_functionalized(&too_hard, &[ones(&[6])], remove).unwrap();
    }
}

/// A written tensor that shares part of its memory with an input of the same alias group:
/// eager's error, raised before anything changes.
#[test]
fn mutation_partially_overlapping_an_input() {
    let inplace = |x: &[Tensor]| {
        let a = x[0].narrow(0, 0, 3)?;
        let b = x[0].narrow(0, 1, 3)?;
        a.add_(&b)?;
        Ok(vec![])
    };
    let out = |x: &[Tensor]| {
        let a = x[0].narrow(0, 0, 3)?;
        let b = x[0].narrow(0, 1, 3)?;
        switchyard_ops::mul_out(&b, &b, &a)?;
        Ok(vec![])
    };
    for p in [&inplace as &Program<'_>, &out] {
        assert_eq!(
            p(&[arange(5, &[5])]).unwrap_err().message(),
            PARTIAL_OVERLAP
        );
        fails_in_both_modes(p, &arange(5, &[5]), PARTIAL_OVERLAP);
    }
}

/// A plain tensor (made outside the program) mutated with a functional argument, in place,
/// through out= or `copy_`: PyTorch's internal assert (its text; PyTorch prefixes the file and
/// line). `set_` has texts of its own. The other way round (a functional tensor mutated with a
/// plain argument) is allowed (F28).
#[test]
fn mutation_of_a_plain_tensor_with_a_functional_argument() {
    let plain = arange(2, &[2]);
    let programs: [Box<Program<'_>>; 3] = [
        Box::new(|x: &[Tensor]| plain.add_(&x[0]).map(|_| vec![])),
        Box::new(|x: &[Tensor]| switchyard_ops::add_out(&x[0], &x[0], &plain).map(|_| vec![])),
        Box::new(|x: &[Tensor]| plain.copy_(&x[0]).map(|_| vec![])),
    ];
    for p in &programs {
        fails_in_both_modes(p.as_ref(), &ones(&[2]), MIXED);
        assert_eq!(plain.to_vec::<f32>().unwrap(), vec![0.0, 1.0]);
    }
    // `set_`, either way round.
    let w = to_functional(&arange(2, &[2])).unwrap();
    let p = arange(2, &[2]);
    assert_eq!(
        p.set_(&w).unwrap_err().message(),
        "set__functionalize: Tried to mutate a non-functional tensor with a functional tensor, which is not allowed"
    );
    assert_eq!(
        w.set_(&p).unwrap_err().message(),
        "set__functionalize: We do not currently support x.set_(y) where y is not a FunctionalTensor. Please file an issue"
    );
    // Allowed: a functional tensor mutated with a plain one.
    for remove in MODES {
        let x = ones(&[2]);
        run_functionalized(
            &|x| x[0].add_(&plain).map(|_| vec![]),
            &[Clone::clone(&x)],
            remove,
        )
        .unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    }
}

/// Operators with alias annotations (views, mutations) need a kernel at `Functionalize`;
/// every ATen one has one (`coverage.rs`), so the examples are custom operators the tests
/// define. Reaching the fallback is PyTorch 2.15's error naming the operator's schema (older
/// PyTorch, and A.10, word it "Found a custom (non-ATen) operator that either mutates or its
/// inputs: ..."); nothing changes. On plain tensors the operators run.
#[test]
fn alias_annotated_operator_without_a_kernel() {
    let a = to_functional(&Tensor::from_slice(&[1.0f32, 2.0]).unwrap()).unwrap();
    let e = crate::custom::call("fztest::alias_of", &a).unwrap_err();
    assert_eq!(
        e.message(),
        alias_annotated("fztest::alias_of(Tensor(a) self) -> Tensor(a)")
    );
    let e = crate::custom::call("fztest::bump_", &a).unwrap_err();
    assert_eq!(
        e.message(),
        alias_annotated("fztest::bump_(Tensor(a!) self) -> Tensor(a!)")
    );
    assert_eq!(values(&a), vec![1.0, 2.0]);
    // Inside the transform too.
    for remove in MODES {
        let e = run_functionalized(
            &|x| Ok(vec![crate::custom::call("fztest::alias_of", &x[0])?]),
            &[ones(&[2])],
            remove,
        )
        .unwrap_err();
        assert_eq!(
            e.message(),
            alias_annotated("fztest::alias_of(Tensor(a) self) -> Tensor(a)")
        );
    }
    // Eagerly (plain tensors) the same operators run.
    let p = Tensor::from_slice(&[1.0f32, 2.0]).unwrap();
    assert!(
        crate::custom::call("fztest::alias_of", &p)
            .unwrap()
            .is_alias_of(&p)
    );
    crate::custom::call("fztest::bump_", &p).unwrap();
    assert_eq!(p.to_vec::<f32>().unwrap(), vec![2.0, 3.0]);
}

/// `remove=` other than PyTorch's two names.
#[test]
fn invalid_remove() {
    assert_eq!("mutations".parse::<Remove>().unwrap(), Remove::Mutations);
    assert_eq!(
        "mutations_and_views".parse::<Remove>().unwrap(),
        Remove::MutationsAndViews
    );
    assert_eq!(Remove::MutationsAndViews.to_string(), "mutations_and_views");
    for bad in ["views", "", "Mutations"] {
        let err: Error = bad.parse::<Remove>().unwrap_err();
        assert_eq!(
            err.message(),
            format!(
                "functionalize(f, remove='mutations'): received invalid argument for remove={bad}. Valid options are:\n     remove='mutations': all inplace and out= operators will be removed from the program, and replaced with their out-of-place equivalents.\n     remove='mutations_and_views': In addition to the above, all aliasing operators {{view}} will be replaced with their non-aliasing counterparts, {{view}}_copy.\n"
            )
        );
    }
}

/// Not in A.10 (functorch stacks levels; this layer has one): `functionalize` inside a
/// functionalized region, or on functional inputs, is refused, and the outer state is intact.
#[test]
fn nested_functionalize() {
    let inner = |x: &[Tensor]| Ok(vec![x[0].add_scalar(1.0)?]);
    let err = run_functionalized(
        &|x| switchyard_functionalize::functionalize(inner, Remove::Mutations)(x),
        &[ones(&[2])],
        Remove::MutationsAndViews,
    )
    .unwrap_err();
    assert_eq!(err.message(), "nested functionalize() is not supported");
    // Also with plain inputs (a factory's result) inside the region.
    let err = run_functionalized(
        &|_| run_functionalized(&inner, &[], Remove::Mutations),
        &[],
        Remove::Mutations,
    )
    .unwrap_err();
    assert_eq!(err.message(), "nested functionalize() is not supported");
    // The refused call left the outer state alone: a later call works.
    let outs =
        switchyard_functionalize::functionalize(inner, Remove::Mutations)(&[ones(&[2])]).unwrap();
    assert_eq!(outs[0].to_vec::<f32>().unwrap(), vec![2.0; 2]);
}

/// Not in A.10: an in-place view is checked as itself, with its own words, and refused before
/// anything changes (`torch.zeros(2, 3, 4).t_()`: "t_() expects a tensor with <= 2
/// dimensions, but self is 3D", PyTorch 2.15; `t` words it "t() expects ...").
#[test]
fn inplace_view_errors_are_the_inplace_operators() {
    for mode in MODES {
        let err = run_functionalized(
            &|x| Ok(vec![switchyard_ops::op::t_::call(&x[0])?]),
            &[ones(&[2, 3, 4])],
            mode,
        )
        .unwrap_err();
        assert_eq!(
            err.message(),
            "t_() expects a tensor with <= 2 dimensions, but self is 3D",
            "{mode:?}"
        );
    }
    // The wrapper keeps its geometry after the refused call.
    let w = to_functional(&ones(&[2, 3, 4])).unwrap();
    assert!(switchyard_ops::op::t_::call(&w).is_err());
    assert_eq!(w.sizes().as_slice(), &[2, 3, 4]);
}
