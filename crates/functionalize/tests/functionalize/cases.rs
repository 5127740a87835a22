//! The A.11 cases (F1–F36 of the reference note, PyTorch's `test/test_functionalization.py`)
//! and where each is tested. Every case is run eagerly and through `functionalize` with
//! `Remove::Mutations` and `Remove::MutationsAndViews`: outputs and post-call inputs (values,
//! dtype, sizes, strides, version counter moved or not) equal eager's (`transform.rs`'s
//! `check`); and its graph, traced below the layer in both modes, is A.11's text (or
//! PyTorch's test's, with the differences the test names) and has no mutating node but the
//! transform's write-back, and with `MutationsAndViews` no view node (`graphs.rs`'s `traced`
//! and `check_both`, this module's [`traced_clean`]).
//!
//! | case | values and inputs vs eager, both modes | graph, both modes | notes |
//! |---|---|---|---|
//! | F1 simple | `transform::f01_simple` | `graphs::f01_simple`, `graphs::f01_write_back_is_tagged` | |
//! | F2 simple_out | `transform::f02_simple_out` | `graphs::f02_simple_out` | |
//! | F3 multi_out | `op_cases.rs` | `op_cases.rs` | `aminmax.out` |
//! | F4 tensor_ctr | `transform::f04_tensor_ctr` | [`f04_tensor_ctr_graphs`] | |
//! | F5 inplace_on_non_view | `transform::f05_inplace_on_non_view` | `graphs::f05_inplace_on_non_view` | |
//! | F6 mutable_op_not_inplace_or_other | `op_cases.rs` | `op_cases.rs` | `_fused_moving_avg_obs_fq_helper` |
//! | F7 as_strided | `transform::f07_as_strided` | `graphs::f07_as_strided` | |
//! | F8 tensor_list_composite | `op_cases.rs` | `op_cases.rs` | `block_diag` |
//! | F9 cat | `transform::f09_cat_out` | `graphs::f09_cat` | |
//! | F10 diagonal | `transform::f10_diagonal_of_clone` | `graphs::f10_diagonal` | |
//! | F11 diagonal_mutated_input | `transform::f11_diagonal_mutated_input` | `graphs::f11_diagonal_mutated_input` | |
//! | F12 split | `transform::f12_split` | `graphs::f12_split` | |
//! | F13 view_inplace | `transform::f13_view_inplace` | `graphs::f13_view_inplace` | the input's new shape and strides too |
//! | F14 optional_tensor_list | `transform::f14_index_put` | `graphs::f14_optional_tensor_list` | |
//! | F15 scalars | `transform::f15_scalars` | `graphs::f15_scalars` | |
//! | F16 metadata_change | `transform::f16_ge_inplace` | `graphs::f16_metadata_change` | |
//! | F17 only_one_view | `transform::f17_only_one_view` | `graphs::f17_only_one_view` | |
//! | F18 everything | `transform::f18_everything` | `graphs::f18_everything` | gradients: `autograd.rs` |
//! | F19 reapply_views_simple | `transform::f01_simple` (`Remove::Mutations`) | `graphs::f19_reapply_views_simple`, `graphs::f01_simple` | |
//! | F20 aliases maintained | `transform::f20_aliases_after_pass` | `graphs::f20_aliases_maintained` | |
//! | F21 copy_ | `transform::f21_copy_four_variants` | `graphs::f21_copy` | |
//! | F22 expand_symint | `transform::f22_expand` | `graphs::f22_expand_symint` | |
//! | F23 fill_ | `transform::f23_fill` | `graphs::f23_fill` | |
//! | F24 resize_smaller | `transform::f24_resize_smaller` | [`f24_resize_smaller_graphs`] | |
//! | F25 resize_larger_valid | `transform::f25_resize_larger` | [`f25_resize_larger_valid_graphs`] | |
//! | F26 resize_larger_invalid | `transform::f26_resize_view_larger`, `errors::resize_of_a_view_or_an_aliased_tensor_to_a_larger_size` | — | an error |
//! | F27 nested functions | `transform::f27_update_survives_view_death` | `graphs::f27_nested_functions` | |
//! | F28 mixed wrappers | `transform::f28_mixed_valid`, `transform::f28_mixed_invalid`, `errors::mutation_of_a_plain_tensor_with_a_functional_argument` | `graphs::f28_mixed_wrappers` | |
//! | F29 index_mutation_on_non_input | `transform::f29_select_fill` | `graphs::f29_index_mutation_on_non_input` | |
//! | F30 freeze | `transform::f30_freeze`, `errors::mutation_of_a_frozen_alias_group` | [`f30_freeze_graphs`] | no eager counterpart |
//! | F31 batch_norm | `op_cases.rs` | `op_cases.rs` | `_native_batch_norm_legit` |
//! | F32 mutation_overlapping_mem | [`f32_unfold_overlap_without_views_sums_as_pytorch`] | [`f32_unfold_overlap_without_views_sums_as_pytorch`] | the error with views: `errors::mutation_of_overlapping_unfold_windows`, `transform::f32_unfold_overlap` |
//! | F33 multiple views | `transform::f33_multiple_views_of_same_base` | `graphs::f33_multiple_views_of_same_base` | |
//! | F34 copy_stride_mismatch | `transform::f34_copy_keeps_strides` | `graphs::f34_copy_stride_mismatch` | |
//! | F35 set_ | `manual::f35_set_` (hand-computed values: eager CPU refuses `set_` across storages) | [`f35_set_graphs`] | |
//! | F36 instance_norm | `op_cases.rs` | `op_cases.rs` | `instance_norm` |
//!
//! `graphs::every_program_traces_clean_in_both_modes` checks the node classes for every
//! program of `switchyard_functionalize::programs`.

use crate::graphs::{assert_graph, reapplied};
use switchyard_core::{Result, Tensor};
use switchyard_functionalize::{Graph, Remove, freeze, run_functionalized, trace};
use switchyard_ops::TensorOps;

type Program<'a> = dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a;

/// `p` functionalized with `remove` and traced on `inputs` (named `names`): its outputs and
/// graph, after checking that the graph has no mutating node but the write-back, and with
/// `Remove::MutationsAndViews` no view node.
fn traced_clean(
    p: &Program<'_>,
    inputs: &[Tensor],
    names: &[&str],
    remove: Remove,
) -> (Vec<Tensor>, Graph) {
    let f = |x: &[Tensor]| run_functionalized(p, x, remove);
    let (outs, g) = trace(&f, inputs, names).unwrap();
    let mutating: Vec<String> = g.mutating_nodes().iter().map(|n| g.node_text(n)).collect();
    assert!(
        mutating.is_empty(),
        "{remove}: mutating nodes {mutating:?}\n{g}"
    );
    if remove == Remove::MutationsAndViews {
        let views: Vec<String> = g.view_nodes().iter().map(|n| g.node_text(n)).collect();
        assert!(views.is_empty(), "{remove}: view nodes {views:?}\n{g}");
    }
    (outs, g)
}

/// Traces `p` in both modes and compares with `expected` (A.11's notation, views removed;
/// with views reapplied each `<view>_copy` is the view itself).
fn check_both(p: &Program<'_>, inputs: &dyn Fn() -> Vec<Tensor>, names: &[&str], expected: &str) {
    let (_, g) = traced_clean(p, &inputs(), names, Remove::MutationsAndViews);
    assert_graph(&g, expected);
    let (_, g) = traced_clean(p, &inputs(), names, Remove::Mutations);
    assert_graph(&g, &reapplied(expected));
}

fn ones(shape: &[i64]) -> Tensor {
    switchyard_ops::ones(shape).unwrap()
}

/// F4: `torch.tensor((1, 2, 3))` inside the program is `lift_fresh` of a constant, computed as
/// `lift_fresh_copy` when views are removed (A.11's text) and as `lift_fresh` when they are
/// kept.
#[test]
fn f04_tensor_ctr_graphs() {
    let p = |_: &[Tensor]| {
        let c = Tensor::from_slice(&[1i64, 2, 3])?;
        let y = switchyard_ops::lift_fresh(&c)?;
        let z = y.view(&[-1])?;
        z.add_scalar_(1)?;
        Ok(vec![y])
    };
    check_both(
        &p,
        &Vec::new,
        &[],
        "%c = lift_fresh_copy(<constant [1,2,3]>)
         %v = view_copy(%c, [-1]); %a = add(%v, 1)
         %b = view_copy(%a, [3]); %z = view_copy(%b, [-1])
         return %b",
    );
    let (outs, _) = traced_clean(&p, &[], &[], Remove::Mutations);
    assert_eq!(outs[0].to_vec::<i64>().unwrap(), vec![2, 3, 4]);
}

/// F24: the shrinking `resize_` is a view, recorded as `as_strided` with the new contiguous
/// sizes and strides ([3,3], [3,1]) and inverted by `as_strided_scatter` with the same.
/// PyTorch's `test_resize_smaller` graph, with two differences: the functional `resize` PyTorch
/// runs on the value and drops (a dead node) is not run here (the eager result comes from a
/// meta shadow), and the view mutated in place (`y2`) is regenerated right after its mutation
/// (the sync A.11's 2023 graphs show, F1's `%v2`).
#[test]
fn f24_resize_smaller_graphs() {
    let p = |w: &[Tensor]| {
        let x = w[0].add_scalar(1)?;
        let y = x.view(&[4, 4])?;
        y.resize_(&[3, 3])?;
        let y2 = y.view(&[-1])?;
        y2.add_scalar_(1)?;
        Ok(vec![y.add_scalar(1)?])
    };
    check_both(
        &p,
        &|| vec![ones(&[8, 2])],
        &["w"],
        "%x = add(w, 1)
         %v = view_copy(%x, [4,4])
         %a = as_strided_copy(%v, [3,3], [3,1])
         %v1 = view_copy(%a, [-1])
         %x1 = add(%v1, 1)
         %v2 = view_copy(%x, [4,4])
         %a1 = as_strided_copy(%v2, [3,3], [3,1])              # intermediate, dead
         %v3 = view_copy(%x1, [3,3])                           # inverse of view(-1)
         %s = as_strided_scatter(%v2, %v3, [3,3], [3,1])       # inverse of the resize
         %b = view_copy(%s, [8,2])                             # inverse of view(4,4): new base
         %v5 = view_copy(%b, [4,4]); %a2 = as_strided_copy(%v5, [3,3], [3,1])
         %y2 = view_copy(%a2, [-1])                            # y2 regenerated
         %v6 = view_copy(%b, [4,4]); %y = as_strided_copy(%v6, [3,3], [3,1])   # y regenerated
         %z = add(%y, 1)
         return %z",
    );
}

/// F25: growing a tensor no other tensor aliases replaces its storage (`resize` below the
/// layer); A.11's text.
#[test]
fn f25_resize_larger_valid_graphs() {
    let p = |x: &[Tensor]| {
        let y = x[0].add_scalar(1)?;
        y.resize_(&[5, 5])?;
        let y2 = y.view(&[25])?;
        y2.fill_scalar_(1)?;
        let out = y.add_scalar(1)?;
        Ok(vec![y, out])
    };
    check_both(
        &p,
        &|| vec![ones(&[8, 2])],
        &["x"],
        "%a=add(x,1); %r=resize(%a,[5,5]); %v=view_copy(%r,[25]); %f=fill(%v,1)
         %y=view_copy(%f,[5,5]); %v2=view_copy(%y,[25]); %o=add(%y,1); return (%y,%o)",
    );
}

/// F30: the mutation of the input is functional and written back; the refused mutations of
/// the frozen group change nothing, but their out-of-place operators ran before the refusal
/// (dead nodes), as in PyTorch, where `add_update` refuses after the kernel computed the new
/// value.
#[test]
fn f30_freeze_graphs() {
    let p = |x: &[Tensor]| {
        let y = switchyard_ops::clone(&x[0])?;
        let z = y.select(0, 0)?;
        freeze(&y)?;
        x[0].add_scalar_(1)?;
        assert!(y.add_scalar_(1).is_err() && z.add_scalar_(1).is_err());
        Ok(vec![y])
    };
    check_both(
        &p,
        &|| vec![ones(&[2, 2])],
        &["x"],
        "%y = clone(x); %z = select_copy(%y, 0, 0); %a = add(x, 1)
         %dead = add(%y, 1); %dead1 = add(%z, 1)
         copy_(x, %a); return %y",
    );
}

/// F32 with views removed: the mutation of overlapping `unfold` windows runs and folds the
/// windows back by summing them, as PyTorch's `functionalize(remove='mutations_and_views')`
/// does (not eager's result, which depends on the order of the overlapping writes; with views
/// kept it is PyTorch's error: `errors.rs`). Values recorded from PyTorch 2.15 for
/// `x = -arange(5).view(1, 5)`: eager gives `[[0,2,4],[4,6,8]]`, functionalize
/// `[[0,2,8],[8,6,8]]`.
#[test]
fn f32_unfold_overlap_without_views_sums_as_pytorch() {
    let p = |x: &[Tensor]| {
        let t2 = switchyard_ops::add(&x[0], &x[0])?.unfold(1, 3, 2)?;
        t2.abs_()?;
        Ok(vec![t2])
    };
    let x = || vec![Tensor::from_vec(vec![0.0f32, -1.0, -2.0, -3.0, -4.0], &[1, 5]).unwrap()];
    let eager = p(&x()).unwrap();
    assert_eq!(
        eager[0].to_vec::<f32>().unwrap(),
        vec![0.0, 2.0, 4.0, 4.0, 6.0, 8.0]
    );
    let (outs, _) = traced_clean(&p, &x(), &["x"], Remove::MutationsAndViews);
    assert_eq!(outs[0].sizes().as_slice(), &[1, 2, 3]);
    assert_eq!(
        outs[0].to_vec::<f32>().unwrap(),
        vec![0.0, 2.0, 8.0, 8.0, 6.0, 8.0]
    );
}

/// F35: `y.set_(x)` records nothing (it changes which alias group `y` belongs to); the result
/// is the input itself, on the CPU.
#[test]
fn f35_set_graphs() {
    let p = |x: &[Tensor]| {
        let y = switchyard_ops::ones(&[2])?;
        y.set_(&x[0])?;
        Ok(vec![y])
    };
    check_both(&p, &|| vec![ones(&[3])], &["x"], "%o = ones([2]); return x");
    let x = ones(&[3]);
    let (outs, _) = traced_clean(&p, &[Clone::clone(&x)], &["x"], Remove::Mutations);
    assert!(outs[0].is_cpu() && outs[0].is_same(&x));
}
