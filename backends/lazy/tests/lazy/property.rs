//! Property test (plan §8.3, proptest): random programs over one to three inputs (rank ≤ 4,
//! sizes ≤ 5; f32, f64, f16, i64 and bool mixed; contiguous, transposed, strided and expanded)
//! of element-wise operators (broadcasting, Python scalars of each kind, type promotion, add/sub
//! with alpha), reductions (`sum`, `mean`, `amax` over a dimension, `softmax`, `log_softmax`,
//! `layer_norm`), views (`view`, `reshape`, `transpose`, `permute`, `slice`, `select`, `expand`,
//! `unsqueeze`), in-place operators on tensors of the program and on views of fresh copies, out=
//! calls and `mark_step` at random points. Each program runs eagerly on the CPU, lazily with the
//! naive backend, lazily with the fusing compiler (twice: the second run compiles nothing new)
//! and, for some programs, twice with IR reuse on (the second run on new inputs reuses the first
//! run's nodes). Every tensor the program creates (views, bases and mutated tensors included)
//! must hold eager's sizes, dtype and values at the end — bit for bit where only element-wise
//! operators and views made it, within a tolerance of its dtype past a reduction — and every
//! failing call the same error text.
//!
//! A program is plain data (proptest shrinks it); operands are indices into the tensors made so
//! far and dimensions are taken modulo the rank at run time, so every shrunk program still runs.

use proptest::prelude::*;
use switchyard_core::{Scalar, ScalarType, Tensor};
use switchyard_lazy::compiler::{CompilerKind, set_compiler};
use switchyard_ops::{TensorOps, op};

use crate::support::{counter, sample, setup};

#[derive(Clone, Copy, Debug)]
enum Dtype {
    F32,
    F64,
    F16,
    I64,
    Bool,
}

#[derive(Clone, Copy, Debug)]
enum Layout {
    Contiguous,
    /// A permutation of a contiguous tensor of the reversed shape.
    Transposed,
    /// Every other element along dimension 0.
    Strided,
    /// Dimension 0 expanded from size 1 (stride 0).
    Expanded,
}

#[derive(Clone, Debug)]
struct Input {
    /// Which dimensions of the program's base shape it keeps as they are (the others are 1)
    /// and how many leading ones it drops (broadcasting across ranks).
    ones: Vec<bool>,
    drop: usize,
    dtype: Dtype,
    layout: Layout,
}

/// A Python scalar.
#[derive(Clone, Copy, Debug)]
enum Sc {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Sc {
    fn scalar(self) -> Scalar {
        match self {
            Sc::Int(i) => Scalar::Int(i),
            Sc::Float(f) => Scalar::Float(f),
            Sc::Bool(b) => Scalar::Bool(b),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Unary {
    Neg,
    Abs,
    Exp,
    Tanh,
    Sigmoid,
    Relu,
}

#[derive(Clone, Copy, Debug)]
enum Binary {
    Add(Sc),
    Sub(Sc),
    Mul,
    Div,
    Maximum,
    Gt,
    Eq,
    /// `where(a > 0, a, b)`.
    Where,
}

#[derive(Clone, Copy, Debug)]
enum WithScalar {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Clone, Copy, Debug)]
enum Reduce {
    SumAll,
    Sum(bool),
    Mean(bool),
    Amax(bool),
    Softmax,
    LogSoftmax,
    /// Over the last `1 + dim % rank` dimensions.
    LayerNorm,
}

#[derive(Clone, Copy, Debug)]
enum View {
    Flatten,
    /// `reshape` to the reversed sizes.
    Reshape,
    Transpose,
    Permute,
    Slice,
    Select,
    Expand,
    Unsqueeze,
}

#[derive(Clone, Copy, Debug)]
enum InPlace {
    Add,
    Mul,
    Copy,
}

#[derive(Clone, Copy, Debug)]
enum Out {
    Add,
    Mul,
    Maximum,
}

#[derive(Clone, Debug)]
enum Op {
    Unary(Unary, usize),
    Binary(Binary, usize, usize),
    Scalar(WithScalar, usize, Sc),
    Reduce(Reduce, usize, u8),
    View(View, usize, u8, u8),
    /// `a.op_(b)` on a tensor of the program (inputs and views included, so the write reaches
    /// every alias).
    InPlace(InPlace, usize, usize),
    /// `base = a.clone(); v = view(base); v.op_(b)`: the base and the view are results.
    InPlaceOnView(View, u8, u8, InPlace, usize, usize),
    /// `op(a, b, out=empty(0, dtype))`, the out's dtype `a`'s (or f32 when `false`).
    Out(Out, usize, usize, bool),
    MarkStep,
}

#[derive(Clone, Debug)]
struct Program {
    shape: Vec<i64>,
    inputs: Vec<Input>,
    ops: Vec<Op>,
    /// Also run twice with IR reuse on.
    reuse: bool,
}

fn sc() -> impl Strategy<Value = Sc> {
    prop_oneof![
        (-3i64..4).prop_map(Sc::Int),
        prop_oneof![Just(0.5), Just(-1.25), Just(2.0), Just(1e-3)].prop_map(Sc::Float),
        any::<bool>().prop_map(Sc::Bool),
    ]
}

fn view() -> impl Strategy<Value = View> {
    prop_oneof![
        Just(View::Flatten),
        Just(View::Reshape),
        Just(View::Transpose),
        Just(View::Permute),
        Just(View::Slice),
        Just(View::Select),
        Just(View::Expand),
        Just(View::Unsqueeze),
    ]
}

fn in_place() -> impl Strategy<Value = InPlace> {
    prop_oneof![Just(InPlace::Add), Just(InPlace::Mul), Just(InPlace::Copy)]
}

fn op() -> impl Strategy<Value = Op> {
    let i = 0usize..16;
    let unary = prop_oneof![
        Just(Unary::Neg),
        Just(Unary::Abs),
        Just(Unary::Exp),
        Just(Unary::Tanh),
        Just(Unary::Sigmoid),
        Just(Unary::Relu),
    ];
    let binary = prop_oneof![
        sc().prop_map(Binary::Add),
        sc().prop_map(Binary::Sub),
        Just(Binary::Mul),
        Just(Binary::Div),
        Just(Binary::Maximum),
        Just(Binary::Gt),
        Just(Binary::Eq),
        Just(Binary::Where),
    ];
    let with_scalar = prop_oneof![
        Just(WithScalar::Add),
        Just(WithScalar::Sub),
        Just(WithScalar::Mul),
        Just(WithScalar::Div),
    ];
    let reduce = prop_oneof![
        Just(Reduce::SumAll),
        any::<bool>().prop_map(Reduce::Sum),
        any::<bool>().prop_map(Reduce::Mean),
        any::<bool>().prop_map(Reduce::Amax),
        Just(Reduce::Softmax),
        Just(Reduce::LogSoftmax),
        Just(Reduce::LayerNorm),
    ];
    let out = prop_oneof![Just(Out::Add), Just(Out::Mul), Just(Out::Maximum)];
    prop_oneof![
        3 => (unary, i.clone()).prop_map(|(u, a)| Op::Unary(u, a)),
        4 => (binary, i.clone(), i.clone()).prop_map(|(b, x, y)| Op::Binary(b, x, y)),
        2 => (with_scalar, i.clone(), sc()).prop_map(|(w, a, s)| Op::Scalar(w, a, s)),
        3 => (reduce, i.clone(), any::<u8>()).prop_map(|(r, a, d)| Op::Reduce(r, a, d)),
        4 => (view(), i.clone(), any::<u8>(), any::<u8>())
            .prop_map(|(v, a, p, q)| Op::View(v, a, p, q)),
        2 => (in_place(), i.clone(), i.clone()).prop_map(|(k, a, b)| Op::InPlace(k, a, b)),
        2 => (view(), any::<u8>(), any::<u8>(), in_place(), i.clone(), i.clone())
            .prop_map(|(v, p, q, k, a, b)| Op::InPlaceOnView(v, p, q, k, a, b)),
        1 => (out, i.clone(), i.clone(), any::<bool>()).prop_map(|(o, a, b, d)| Op::Out(o, a, b, d)),
        1 => Just(Op::MarkStep),
    ]
}

fn input(rank: usize) -> impl Strategy<Value = Input> {
    let dtype = prop_oneof![
        3 => Just(Dtype::F32),
        1 => Just(Dtype::F64),
        1 => Just(Dtype::F16),
        1 => Just(Dtype::I64),
        1 => Just(Dtype::Bool),
    ];
    let layout = prop_oneof![
        3 => Just(Layout::Contiguous),
        1 => Just(Layout::Transposed),
        1 => Just(Layout::Strided),
        1 => Just(Layout::Expanded),
    ];
    (
        proptest::collection::vec(prop::bool::weighted(0.8), rank),
        prop_oneof![4 => Just(0usize), 1 => 0..=rank],
        dtype,
        layout,
    )
        .prop_map(|(ones, drop, dtype, layout)| Input {
            ones,
            drop,
            dtype,
            layout,
        })
}

fn program() -> impl Strategy<Value = Program> {
    // Size 0 included (an empty tensor with an expanded input's strides once made a lazy
    // in-place write fail, plan §9.2.7).
    proptest::collection::vec(0i64..=5, 0..=4)
        .prop_flat_map(|shape| {
            let rank = shape.len();
            (
                Just(shape),
                proptest::collection::vec(input(rank), 1..=3),
                proptest::collection::vec(op(), 1..=12),
                prop::bool::weighted(0.25),
            )
        })
        .prop_map(|(shape, inputs, ops, reuse)| Program {
            shape,
            inputs,
            ops,
            reuse,
        })
}

fn to(t: &Tensor, dtype: ScalarType) -> Tensor {
    op::_to_copy::call(t, Some(dtype), None, None, None, false, None).unwrap()
}

/// Input `k` on the CPU: values of `sample` (f32 in [-2, 2)), as its dtype, in its layout.
fn make_input(shape: &[i64], input: &Input, k: usize) -> Tensor {
    let mut shape: Vec<i64> = shape
        .iter()
        .zip(&input.ones)
        .map(|(&s, &keep)| if keep { s } else { 1 })
        .collect();
    shape.drain(..input.drop.min(shape.len()));
    let rank = shape.len();
    let convert = |t: Tensor| match input.dtype {
        Dtype::F32 => t,
        Dtype::F64 => to(&t, ScalarType::Double),
        Dtype::F16 => to(&t, ScalarType::Half),
        Dtype::I64 => to(&t.mul_scalar(2).unwrap(), ScalarType::Long),
        Dtype::Bool => op::gt_Scalar::call(&t, 0.into()).unwrap(),
    };
    let seed = 77 + k as u64;
    match input.layout {
        Layout::Transposed if rank >= 2 => {
            let rev: Vec<i64> = shape.iter().rev().copied().collect();
            let dims: Vec<i64> = (0..rank as i64).rev().collect();
            convert(sample(&rev, seed)).permute(&dims).unwrap()
        }
        Layout::Strided if rank >= 1 => {
            let mut big = shape.clone();
            big[0] *= 2;
            op::slice_Tensor::call(&convert(sample(&big, seed)), 0, Some(0), None, 2).unwrap()
        }
        Layout::Expanded if rank >= 1 => {
            let mut one = shape.clone();
            one[0] = 1;
            convert(sample(&one, seed)).expand(&shape).unwrap()
        }
        _ => convert(sample(&shape, seed)),
    }
}

fn dim(d: u8, rank: usize) -> i64 {
    i64::from(d) % rank.max(1) as i64
}

fn apply_view(v: View, a: &Tensor, p: u8, q: u8) -> switchyard_core::Result<Tensor> {
    let rank = a.dim();
    let sizes = a.sizes().to_vec();
    match v {
        View::Flatten => a.view(&[-1]),
        View::Reshape => {
            let rev: Vec<i64> = sizes.iter().rev().copied().collect();
            a.reshape(&rev)
        }
        View::Transpose => a.transpose(dim(p, rank), dim(q, rank)),
        View::Permute => {
            let r = rank as i64;
            let k = dim(p, rank);
            let dims: Vec<i64> = (0..r).map(|i| (i + k) % r).collect();
            a.permute(&dims)
        }
        View::Slice => {
            let d = dim(p, rank);
            op::slice_Tensor::call(a, d, Some(i64::from(q % 3)), None, 1 + i64::from(q % 2))
        }
        View::Select => {
            let d = dim(p, rank);
            let size = sizes.get(d as usize).copied().unwrap_or(1).max(1);
            a.select(d, i64::from(q) % size)
        }
        View::Expand => {
            let mut to = vec![2];
            to.extend_from_slice(&sizes);
            a.expand(&to)
        }
        View::Unsqueeze => a.unsqueeze(i64::from(p) % (rank as i64 + 1)),
    }
}

fn apply_in_place(k: InPlace, a: &Tensor, b: &Tensor) -> switchyard_core::Result<Tensor> {
    match k {
        InPlace::Add => op::add__Tensor::call(a, b, Scalar::Int(1)),
        InPlace::Mul => op::mul__Tensor::call(a, b),
        InPlace::Copy => op::copy_::call(a, b, false),
    }
}

/// A tensor the program made and whether its value is exact (only element-wise operators and
/// views made it): the index of its group of aliases, whose flag in-place writes update.
struct Made {
    t: Tensor,
    group: usize,
    /// Some element is stored twice (an expanded input or view): a write into it is refused
    /// eagerly, and the lazy copy of an expanded input is dense. Decided from the program, not
    /// the device's strides.
    overlap: bool,
    /// An out= result or a view of one: the lazy out takes the functional result's
    /// contiguous layout where eager's follows the inputs' (as PyTorch's lazy tensors do), so
    /// it is not flattened (a view eagerly refused, a reshape that copies only eagerly) and
    /// copied contiguous before a view is written.
    out: bool,
}

/// One created tensor or an error text; `bool`: exact.
type Step = (Result<Tensor, String>, bool);

/// Runs `p` eagerly (`lazy == false`) or on the lazy device; every step's outcome, the lazy
/// ones synced.
fn run(p: &Program, lazy: bool) -> Vec<Step> {
    // Inputs are copied to the device (`t.to(device)`: a dense copy of a strided or expanded
    // tensor, a permuted one keeps its strides), eagerly too, so both start from equal layouts.
    let on = |t: Tensor| {
        if lazy {
            switchyard_lazy::to_lazy(&t).unwrap()
        } else {
            op::_to_copy::call(&t, None, None, None, None, false, None).unwrap()
        }
    };
    let mut pool: Vec<Made> = Vec::new();
    let mut exact: Vec<bool> = Vec::new();
    // (outcome, group) per step.
    let mut steps: Vec<(Result<Tensor, String>, usize)> = Vec::new();
    let push = |pool: &mut Vec<Made>,
                steps: &mut Vec<(Result<Tensor, String>, usize)>,
                r: switchyard_core::Result<Tensor>,
                group: usize,
                (overlap, out): (bool, bool)| {
        match r {
            Ok(t) => {
                pool.push(Made {
                    t: Clone::clone(&t),
                    group,
                    overlap,
                    out,
                });
                steps.push((Ok(t), group));
            }
            Err(e) => steps.push((Err(e.to_string()), group)),
        }
    };
    for (k, input) in p.inputs.iter().enumerate() {
        exact.push(true);
        let g = exact.len() - 1;
        let t = on(make_input(&p.shape, input, k));
        push(&mut pool, &mut steps, Ok(t), g, (false, false));
    }
    for o in &p.ops {
        let pick = |i: usize| &pool[i % pool.len()];
        let fresh = |exact: &mut Vec<bool>, e: bool| {
            exact.push(e);
            exact.len() - 1
        };
        match *o {
            Op::Unary(u, a) => {
                let a = pick(a);
                let t = &a.t;
                let r = match u {
                    Unary::Neg => t.neg(),
                    // `abs` has no bool loop: the CPU kernel fails when it runs, which the
                    // lazy device reports at `mark_step`, not at the call.
                    Unary::Abs if t.dtype() == ScalarType::Bool => continue,
                    Unary::Abs => t.abs(),
                    Unary::Exp => t.exp(),
                    Unary::Tanh => t.tanh(),
                    Unary::Sigmoid => t.sigmoid(),
                    Unary::Relu => t.relu(),
                };
                let (e, out) = (exact[a.group], a.out);
                let g = fresh(&mut exact, e);
                // Element-wise results take their inputs' layout: an out= one's stays apart.
                push(&mut pool, &mut steps, r, g, (false, out));
            }
            Op::Binary(b, x, y) => {
                let (x, y) = (pick(x), pick(y));
                let (s, t) = (&x.t, &y.t);
                let r = match b {
                    Binary::Add(alpha) => op::add_Tensor::call(s, t, alpha.scalar()),
                    Binary::Sub(alpha) => op::sub_Tensor::call(s, t, alpha.scalar()),
                    Binary::Mul => s.mul(t),
                    Binary::Div => s.div(t),
                    Binary::Maximum => s.maximum(t),
                    Binary::Gt => op::gt_Tensor::call(s, t),
                    Binary::Eq => op::eq_Tensor::call(s, t),
                    Binary::Where => op::gt_Scalar::call(s, 0.into())
                        .and_then(|c| op::where_self::call(&c, s, t)),
                };
                let (e, out) = (exact[x.group] && exact[y.group], x.out || y.out);
                let g = fresh(&mut exact, e);
                push(&mut pool, &mut steps, r, g, (false, out));
            }
            Op::Scalar(w, a, s) => {
                let a = pick(a);
                let t = &a.t;
                let r = match w {
                    WithScalar::Add => op::add_Scalar::call(t, s.scalar(), Scalar::Int(1)),
                    WithScalar::Sub => op::sub_Scalar::call(t, s.scalar(), Scalar::Int(1)),
                    WithScalar::Mul => op::mul_Scalar::call(t, s.scalar()),
                    WithScalar::Div => op::div_Scalar::call(t, s.scalar()),
                };
                let (e, out) = (exact[a.group], a.out);
                let g = fresh(&mut exact, e);
                push(&mut pool, &mut steps, r, g, (false, out));
            }
            Op::Reduce(red, a, d) => {
                let t = &pick(a).t;
                let rank = t.dim();
                let d = dim(d, rank);
                let float = t.dtype().is_floating_point();
                let r = match red {
                    Reduce::SumAll => t.sum(),
                    Reduce::Sum(keep) => op::sum_dim_IntList::call(t, Some(&[d]), keep, None),
                    Reduce::Mean(keep) => op::mean_dim::call(t, Some(&[d]), keep, None),
                    Reduce::Amax(keep) => op::amax::call(t, &[d], keep),
                    // No integer loops: a kernel error at `mark_step` on lazy (tested in
                    // executor.rs), not at the call.
                    Reduce::Softmax | Reduce::LogSoftmax | Reduce::LayerNorm if !float => {
                        continue;
                    }
                    Reduce::Softmax => t.softmax(d),
                    Reduce::LogSoftmax => t.log_softmax(d),
                    Reduce::LayerNorm => {
                        let sizes = t.sizes();
                        let from = if rank == 0 { 0 } else { d as usize };
                        op::native_layer_norm::call(t, &sizes[from..], None, None, 1e-5)
                            .map(|r| r.0)
                    }
                };
                let e = false;
                let g = fresh(&mut exact, e);
                push(&mut pool, &mut steps, r, g, (false, false));
            }
            Op::View(v, a, p1, q1) => {
                let a = pick(a);
                let (g, overlap, out) = (a.group, a.overlap || matches!(v, View::Expand), a.out);
                if out && matches!(v, View::Flatten | View::Reshape) {
                    continue;
                }
                let r = apply_view(v, &a.t, p1, q1);
                push(&mut pool, &mut steps, r, g, (overlap, out));
            }
            Op::InPlace(k, a, b) => {
                let (a, b) = (pick(a), pick(b));
                // Eager refuses a source overlapping the written tensor (PyTorch too), a
                // functional lazy tensor would not: skipped, as where no element is written
                // once.
                if a.overlap || a.group == b.group {
                    continue;
                }
                let (ga, e) = (a.group, exact[b.group]);
                let r = apply_in_place(k, &a.t, &b.t);
                if r.is_ok() {
                    exact[ga] &= e;
                }
                // The result is the written tensor itself: an error text or nothing new.
                if let Err(e) = r {
                    steps.push((Err(e.to_string()), ga));
                }
            }
            Op::InPlaceOnView(kind, p1, q1, k, a, b) => {
                let (a, b) = (pick(a), pick(b));
                let e = exact[a.group] && exact[b.group];
                let g = fresh(&mut exact, e);
                let b = Clone::clone(&b.t);
                let format = a.out.then_some(switchyard_core::MemoryFormat::Contiguous);
                let base = op::clone::call(&a.t, format);
                let view = base.as_ref().map_err(Clone::clone).and_then(|base| {
                    let v = apply_view(kind, base, p1, q1)?;
                    if !matches!(kind, View::Expand) {
                        apply_in_place(k, &v, &b)?;
                    }
                    Ok(v)
                });
                push(&mut pool, &mut steps, base, g, (false, false));
                push(
                    &mut pool,
                    &mut steps,
                    view,
                    g,
                    (matches!(kind, View::Expand), false),
                );
            }
            Op::Out(kind, x, y, same) => {
                let (x, y) = (pick(x), pick(y));
                let dtype = if same { x.t.dtype() } else { ScalarType::Float };
                let out = op::empty_memory_format::call(
                    &[0],
                    Some(dtype),
                    None,
                    Some(x.t.device()),
                    None,
                    None,
                )
                .unwrap();
                let r = match kind {
                    Out::Add => op::add_out::call(&x.t, &y.t, Scalar::Int(1), &out),
                    Out::Mul => op::mul_out::call(&x.t, &y.t, &out),
                    Out::Maximum => op::maximum_out::call(&x.t, &y.t, &out),
                }
                .map(|_| out);
                let e = exact[x.group] && exact[y.group];
                let g = fresh(&mut exact, e);
                push(&mut pool, &mut steps, r, g, (false, true));
            }
            Op::MarkStep => {
                if lazy {
                    switchyard_lazy::mark_step().unwrap();
                }
            }
        }
    }
    if lazy {
        switchyard_lazy::mark_step().unwrap();
    }
    steps.into_iter().map(|(r, g)| (r, exact[g])).collect()
}

/// `t` on the CPU as f64 values (exact for every dtype here) and its sizes.
fn f64_values(t: &Tensor) -> (Vec<i64>, ScalarType, Vec<f64>) {
    let cpu = if switchyard_lazy::is_lazy(t) {
        switchyard_lazy::to_cpu(t).unwrap()
    } else {
        Clone::clone(t)
    };
    let c = op::clone::call(
        &to(&cpu, ScalarType::Double),
        Some(switchyard_core::MemoryFormat::Contiguous),
    )
    .unwrap();
    (
        cpu.sizes().to_vec(),
        cpu.dtype(),
        c.to_vec::<f64>().unwrap(),
    )
}

/// An error text without its `, raised in <operator>` part: on the lazy device an in-place
/// or out= call fails in the functional operator functionalization runs for it
/// (`add_.Tensor` raised in `add.Tensor`), eagerly in its own meta function. The message and
/// the operator called are compared.
fn without_inner(text: &str) -> String {
    match (text.rfind(", raised in "), text.ends_with(')')) {
        (Some(at), true) => format!("{})", &text[..at]),
        _ => text.to_owned(),
    }
}

fn tolerance(dtype: ScalarType) -> f64 {
    match dtype {
        ScalarType::Half => 1e-2,
        ScalarType::Float => 1e-4,
        _ => 1e-9,
    }
}

fn compare(what: &str, eager: &[Step], lazy: &[Step]) -> Result<(), TestCaseError> {
    let show = |s: &[Step]| -> Vec<Result<Vec<i64>, String>> {
        s.iter()
            .map(|(r, _)| r.as_ref().map(|t| t.sizes().to_vec()).map_err(Clone::clone))
            .collect()
    };
    prop_assert_eq!(
        eager.len(),
        lazy.len(),
        "{}: step counts: eager {:?} lazy {:?}",
        what,
        show(eager),
        show(lazy)
    );
    for (i, ((e, exact), (l, _))) in eager.iter().zip(lazy).enumerate() {
        match (e, l) {
            (Ok(e), Ok(l)) => {
                prop_assert!(switchyard_lazy::is_lazy(l), "{} step {}", what, i);
                let (es, et, ev) = f64_values(e);
                let (ls, lt, lv) = f64_values(l);
                prop_assert_eq!(&ls, &es, "{} step {}: sizes", what, i);
                prop_assert_eq!(lt, et, "{} step {}: dtype", what, i);
                // Past a reduction, integral and boolean values may follow a float rounded
                // otherwise (`gt` of a softmax): only their sizes are compared.
                if !*exact && !et.is_floating_point() {
                    continue;
                }
                for (k, (x, y)) in lv.iter().zip(&ev).enumerate() {
                    let ok = if *exact {
                        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
                    } else {
                        (x - y).abs() <= tolerance(et) * (1.0 + y.abs())
                            || (x.is_nan() && y.is_nan())
                            || x == y
                    };
                    prop_assert!(
                        ok,
                        "{} step {} element {}: lazy {} vs eager {} ({})",
                        what,
                        i,
                        k,
                        x,
                        y,
                        if *exact { "exact" } else { "tolerance" }
                    );
                }
            }
            (Err(e), Err(l)) => prop_assert_eq!(
                without_inner(l),
                without_inner(e),
                "{} step {}: error text",
                what,
                i
            ),
            (e, l) => prop_assert!(
                false,
                "{} step {}: eager {:?} vs lazy {:?}",
                what,
                i,
                e.as_ref().map(|t| t.sizes().to_vec()),
                l.as_ref().map(|t| t.sizes().to_vec())
            ),
        }
    }
    Ok(())
}

/// Restores the default compiler and IR reuse off when a case ends (even by a failure).
struct Restore;
impl Drop for Restore {
    fn drop(&mut self) {
        set_compiler(CompilerKind::Fusing);
        switchyard_lazy::set_reuse_ir(false);
        switchyard_lazy::ir_cache::reset();
        // What a failed case left pending.
        let _ = switchyard_lazy::mark_step();
    }
}

fn check(p: &Program) -> Result<(), TestCaseError> {
    let _restore = Restore;
    let eager = run(p, false);
    set_compiler(CompilerKind::Naive);
    compare("naive", &eager, &run(p, true))?;
    set_compiler(CompilerKind::Fusing);
    compare("compiled", &eager, &run(p, true))?;
    // The same program again compiles nothing new.
    let before = counter("UncachedCompile");
    compare("compiled again", &eager, &run(p, true))?;
    prop_assert_eq!(counter("UncachedCompile"), before, "a second run compiled");
    if p.reuse {
        switchyard_lazy::ir_cache::reset();
        switchyard_lazy::set_reuse_ir(true);
        compare("reuse", &eager, &run(p, true))?;
        compare("reuse again", &eager, &run(p, true))?;
    }
    Ok(())
}

proptest! {
    // 256 cases (proptest's default; `PROPTEST_CASES` overrides it).
    #![proptest_config(ProptestConfig::default())]
    #[test]
    fn random_programs_equal_eager(p in program()) {
        let _g = setup();
        check(&p)?;
    }
}

/// IR reuse pays off in the programs above: nodes of the first run are reused by the second
/// (a fixed program of each kind of operator, so the count does not depend on the cases).
#[test]
fn reuse_ir_reuses_the_programs_nodes() {
    let _g = setup();
    let p = Program {
        shape: vec![3, 4],
        inputs: vec![
            Input {
                ones: vec![true, true],
                drop: 0,
                dtype: Dtype::F32,
                layout: Layout::Transposed,
            },
            Input {
                ones: vec![false, true],
                drop: 0,
                dtype: Dtype::F64,
                layout: Layout::Contiguous,
            },
        ],
        ops: vec![
            Op::Binary(Binary::Add(Sc::Float(0.5)), 0, 1),
            Op::Unary(Unary::Tanh, 2),
            Op::Reduce(Reduce::Softmax, 3, 1),
            Op::View(View::Transpose, 4, 0, 1),
            Op::InPlaceOnView(View::Select, 0, 1, InPlace::Add, 3, 1),
            Op::Out(Out::Mul, 2, 1, true),
            Op::Scalar(WithScalar::Mul, 5, Sc::Int(3)),
        ],
        reuse: true,
    };
    check(&p).unwrap();
    let reused: u64 = switchyard_lazy::counter_names()
        .iter()
        .filter(|n| n.starts_with("IrNodeReused_") && !n.ends_with("DeviceData"))
        .map(|n| counter(n))
        .sum();
    assert!(reused >= 7, "{reused}");
}
