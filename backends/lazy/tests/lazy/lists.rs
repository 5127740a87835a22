//! Tensor-list operands (`cat`, `stack`, `block_diag`, the index lists of `index` /
//! `index_put` / `_index_put_impl`) and `Tensor[]` returns (`split_copy`, `split_with_sizes_copy`,
//! `unbind_copy`): traced as one node each, lazy values equal to eager ones, and list length and
//! the place of absent indices part of the graph hash.

use switchyard_core::Tensor;
use switchyard_ops::{TensorOps, op};

use crate::support::{assert_close, counter, sample, setup};

/// The `aten::` counters (fallbacks) set since the last reset.
fn fallbacks() -> Vec<String> {
    switchyard_lazy::counter_names()
        .into_iter()
        .filter(|n| n.starts_with("aten::"))
        .collect()
}

/// Runs `f` on CPU tensors and on lazy copies of them (synced by `mark_step`), checks that
/// nothing fell back and that every output has the eager dtype, sizes and values.
fn check(inputs: &[Tensor], f: impl Fn(&[Tensor]) -> Vec<Tensor>) {
    let eager = f(inputs);
    let lazy_in: Vec<Tensor> = inputs
        .iter()
        .map(|t| switchyard_lazy::to_lazy(t).unwrap())
        .collect();
    switchyard_lazy::reset_metrics();
    let lazy = f(&lazy_in);
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(fallbacks(), Vec::<String>::new(), "fell back");
    assert_eq!(lazy.len(), eager.len());
    for (l, e) in lazy.iter().zip(&eager) {
        assert!(switchyard_lazy::is_lazy(l));
        assert_eq!(l.dtype(), e.dtype());
        assert_close(l, e, 1e-6);
    }
}

/// A clone of the handle (`TensorOps::clone` is the operator).
fn c(t: &Tensor) -> Tensor {
    Clone::clone(t)
}

fn long(values: &[i64], sizes: &[i64]) -> Tensor {
    Tensor::from_vec(values.to_vec(), sizes).unwrap()
}

#[test]
fn cat_stack_and_block_diag_trace_one_node_and_match_eager() {
    let _g = setup();
    let ints = long(&[1, 2, 3, 4, 5, 6], &[2, 3]);
    check(
        &[
            sample(&[2, 3], 1),
            sample(&[4, 3], 2),
            sample(&[2, 3], 3),
            ints,
        ],
        |x| {
            vec![
                op::cat::call(&[c(&x[0]), c(&x[1]), c(&x[2])], 0).unwrap(),
                op::cat::call(&[c(&x[0]), c(&x[2])], -1).unwrap(),
                // Type promotion across the list (Float with Long).
                op::cat::call(&[c(&x[0]), c(&x[3])], 0).unwrap(),
                op::stack::call(&[c(&x[0]), c(&x[2])], 1).unwrap(),
                op::block_diag::call(&[c(&x[0]), c(&x[1]), c(&x[3])]).unwrap(),
                // A list element computed in the same graph.
                op::cat::call(&[x[0].exp().unwrap(), c(&x[0])], 0)
                    .unwrap()
                    .sum()
                    .unwrap(),
            ]
        },
    );
    for name in ["lazy::cat", "lazy::stack", "lazy::block_diag"] {
        assert!(counter(name) > 0, "{name}");
    }
}

#[test]
fn a_cat_has_one_operand_per_element_and_prints_as_one_node() {
    let _g = setup();
    let a = switchyard_lazy::to_lazy(&sample(&[2, 2], 4)).unwrap();
    let b = switchyard_lazy::to_lazy(&sample(&[2, 2], 5)).unwrap();
    let c = op::cat::call(&[c(&a), c(&b), c(&a)], 1).unwrap();
    let text =
        switchyard_lazy::dump_ir(std::slice::from_ref(&c), switchyard_lazy::DumpFormat::Text)
            .unwrap();
    // Two leaves (device data), one cat node reading leaf 0, leaf 1, leaf 0, dim attribute.
    assert!(
        text.contains("[Float[2,6]] aten::cat(%0, %1, %0), dim=1"),
        "{text}"
    );
    switchyard_lazy::mark_step().unwrap();
}

#[test]
fn advanced_indexing_traces_with_lazy_or_cpu_indices() {
    let _g = setup();
    let i = long(&[2, 0, 2], &[3]);
    let j = long(&[1, 0], &[2, 1]);
    let x = sample(&[3, 4], 6);
    let v = sample(&[3], 7);
    check(&[c(&x), c(&i), c(&j), c(&v)], |t| {
        let (x, i, j, v) = (&t[0], &t[1], &t[2], &t[3]);
        vec![
            op::index_Tensor::call(x, &[Some(c(i))]).unwrap(),
            op::index_Tensor::call(x, &[None, Some(long(&[3, 1], &[2]))]).unwrap(),
            // Indices broadcast together ([2, 1] with [3] → [2, 3]).
            op::index_Tensor::call(x, &[Some(c(j)), Some(c(i))]).unwrap(),
            op::index_put::call(x, &[Some(c(i))], &x.select(0, 1).unwrap(), true).unwrap(),
            op::index_put::call(x, &[None, Some(long(&[0, 3, 1], &[3]))], v, false).unwrap(),
            op::_index_put_impl::call(x, &[Some(c(i))], &x.select(0, 0).unwrap(), true, false)
                .unwrap(),
        ]
    });
    // Indices left on the CPU (eager indexing takes CPU indices with a tensor on any device).
    let eager = op::index_Tensor::call(&x, &[None, Some(c(&i))]).unwrap();
    let lx = switchyard_lazy::to_lazy(&x).unwrap();
    switchyard_lazy::reset_metrics();
    let lazy = op::index_Tensor::call(&lx, &[None, Some(c(&i))]).unwrap();
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(fallbacks(), Vec::<String>::new());
    assert_close(&lazy, &eager, 0.0);
}

#[test]
fn index_assignment_through_functionalization_traces_index_put() {
    let _g = setup();
    let i = long(&[0, 2], &[2]);
    let run = |x: &Tensor, i: &Tensor| {
        let y = x.mul_scalar(2).unwrap();
        op::index_put_::call(
            &y,
            &[Some(c(i))],
            &Tensor::from_vec(vec![5.0f32], &[]).unwrap(),
            false,
        )
        .unwrap();
        op::_index_put_impl_::call(
            &y,
            &[None, Some(c(i))],
            &x.select(1, 0).unwrap().unsqueeze(1).unwrap(),
            true,
            false,
        )
        .unwrap();
        y
    };
    let x = sample(&[3, 3], 8);
    let eager = run(&x, &i);
    let lx = switchyard_lazy::to_lazy(&x).unwrap();
    let li = switchyard_lazy::to_lazy(&i).unwrap();
    switchyard_lazy::reset_metrics();
    let lazy = run(&lx, &li);
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(fallbacks(), Vec::<String>::new());
    assert!(counter("lazy::index_put") > 0);
    assert!(counter("lazy::_index_put_impl") > 0);
    assert_close(&lazy, &eager, 1e-6);
}

#[test]
fn a_boolean_mask_index_falls_back_with_the_eager_values() {
    let _g = setup();
    let x = sample(&[3, 4], 9);
    let mask = op::gt_Scalar::call(&x, 0.into()).unwrap();
    let eager = op::index_Tensor::call(&x, &[Some(c(&mask))]).unwrap();
    let eager_put = op::index_put::call(
        &x,
        &[Some(c(&mask))],
        &Tensor::from_vec(vec![0.0f32], &[]).unwrap(),
        false,
    )
    .unwrap();
    let lx = switchyard_lazy::to_lazy(&x).unwrap();
    let lmask = switchyard_lazy::to_lazy(&mask).unwrap();
    switchyard_lazy::reset_metrics();
    let lazy = op::index_Tensor::call(&lx, &[Some(c(&lmask))]).unwrap();
    let lazy_put = op::index_put::call(
        &lx,
        &[Some(lmask)],
        &Tensor::from_vec(vec![0.0f32], &[]).unwrap(),
        false,
    )
    .unwrap();
    switchyard_lazy::mark_step().unwrap();
    // The result's size is the mask's count: the eager fallback, counted as PyTorch counts it.
    assert_eq!(counter("aten::index.Tensor"), 1);
    assert_eq!(counter("aten::index_put"), 1);
    assert_eq!(counter("lazy::index"), 0);
    assert!(switchyard_lazy::is_lazy(&lazy));
    assert_close(&lazy, &eager, 0.0);
    assert_close(&lazy_put, &eager_put, 0.0);
}

#[test]
fn list_returning_views_give_one_node_with_an_output_per_piece() {
    let _g = setup();
    check(&[sample(&[5, 4], 10)], |x| {
        let x = &x[0];
        let mut out = op::split_copy_Tensor::call(x, 2, 0).unwrap();
        out.extend(op::split_with_sizes_copy::call(x, &[1, 3], 1).unwrap());
        out.extend(op::unbind_copy_int::call(x, 1).unwrap());
        // The views, functionalized above into the `*_copy` operators, then computed on.
        let pieces = x.split_with(3, 0).unwrap();
        out.push(pieces[1].mul(&pieces[1]).unwrap());
        let rows = x.unbind().unwrap();
        out.push(rows[0].add(&rows[4]).unwrap());
        out
    });
    for name in [
        "lazy::split_copy",
        "lazy::split_with_sizes_copy",
        "lazy::unbind_copy",
    ] {
        assert!(counter(name) > 0, "{name}");
    }
    // One node of three outputs: the dump names its outputs %k.0 .. %k.2.
    let x = switchyard_lazy::to_lazy(&sample(&[5, 4], 11)).unwrap();
    let parts = op::split_copy_Tensor::call(&x, 2, 0).unwrap();
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[2].sizes().as_slice(), &[1, 4]);
    let text = switchyard_lazy::dump_ir(&parts, switchyard_lazy::DumpFormat::Text).unwrap();
    assert!(
        text.contains("aten::split_copy(%0), num_outputs=3, split_size=2, dim=0"),
        "{text}"
    );
    assert_eq!(text.matches("aten::split_copy").count(), 1, "{text}");
    switchyard_lazy::mark_step().unwrap();
}

fn graph_hash(t: &Tensor) -> switchyard_lazy::Hash128 {
    switchyard_lazy::get_graph_hash(std::slice::from_ref(t))
        .unwrap()
        .unwrap()
}

/// Two graphs that differ only in a list's length, or only in where an index list's absent
/// entries sit, are different programs (each compiles once; repeating either hits the cache).
#[test]
fn list_length_and_absent_indices_are_part_of_the_graph_hash() {
    let _g = setup();
    let a = switchyard_lazy::to_lazy(&sample(&[2, 2], 12)).unwrap();
    let run = |n: usize| {
        let list: Vec<Tensor> = (0..n).map(|_| c(&a)).collect();
        op::stack::call(&list, 0).unwrap().sum().unwrap()
    };
    let (two, three) = (run(2), run(3));
    // Same operand (one leaf, deduplicated), same attributes, same 0-dim result: only the
    // list's length differs.
    assert_eq!(two.sizes(), three.sizes());
    assert_ne!(graph_hash(&two), graph_hash(&three));
    assert_eq!(graph_hash(&two), graph_hash(&run(2)));
    switchyard_lazy::reset_metrics();
    for n in [2, 3, 2, 3] {
        let s = run(n);
        switchyard_lazy::sync(std::slice::from_ref(&s)).unwrap();
        let expected = op::stack::call(&vec![switchyard_lazy::to_cpu(&a).unwrap(); n], 0)
            .unwrap()
            .sum()
            .unwrap();
        assert_close(&s, &expected, 1e-6);
    }
    assert_eq!(counter("UncachedCompile"), 2);
    assert_eq!(counter("CachedCompile"), 2);

    // x[i] and x[:, i] of a square x: same operands, same result shape.
    let x = switchyard_lazy::to_lazy(&sample(&[3, 3], 13)).unwrap();
    let i = switchyard_lazy::to_lazy(&long(&[2, 0, 1], &[3])).unwrap();
    let rows = op::index_Tensor::call(&x, &[Some(c(&i))]).unwrap();
    let cols = op::index_Tensor::call(&x, &[None, Some(c(&i))]).unwrap();
    assert_eq!(rows.sizes(), cols.sizes());
    assert_ne!(graph_hash(&rows), graph_hash(&cols));
    let cx = switchyard_lazy::to_cpu(&x).unwrap();
    let ci = long(&[2, 0, 1], &[3]);
    assert_close(
        &rows,
        &op::index_Tensor::call(&cx, &[Some(c(&ci))]).unwrap(),
        0.0,
    );
    assert_close(
        &cols,
        &op::index_Tensor::call(&cx, &[None, Some(ci)]).unwrap(),
        0.0,
    );
}

/// The naive backend (one kernel per node) runs list nodes too.
#[test]
fn the_naive_backend_runs_list_nodes() {
    let _g = setup();
    switchyard_lazy::compiler::set_compiler(switchyard_lazy::compiler::CompilerKind::Naive);
    let x = sample(&[4, 2], 14);
    let eager = {
        let p = op::unbind_copy_int::call(&x, 0).unwrap();
        op::cat::call(&[c(&p[3]), c(&p[0])], 0).unwrap()
    };
    let lx = switchyard_lazy::to_lazy(&x).unwrap();
    let p = op::unbind_copy_int::call(&lx, 0).unwrap();
    let lazy = op::cat::call(&[c(&p[3]), c(&p[0])], 0).unwrap();
    let r = switchyard_lazy::mark_step();
    switchyard_lazy::compiler::set_compiler(switchyard_lazy::compiler::CompilerKind::Fusing);
    r.unwrap();
    assert_close(&lazy, &eager, 0.0);
}
