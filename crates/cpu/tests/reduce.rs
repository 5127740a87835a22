//! The reduce operators against PyTorch's answers recorded by `tools/oracle/reduce.py`, called
//! through the dispatcher (`switchyard_ops::op::*`), on CPU tensors and on Meta tensors
//! (shape and dtype only), plus properties (strided == contiguous, out= == functional) and
//! accuracy / large-input checks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "linalg_support.rs"]
mod support;
// This suite runs on CPU tensors (the lazy backend's tests run it on lazy ones).
use support::CPU_TARGET as TARGET;

use serde_json::Value;
use support::Arg;
use switchyard_core::{Device, MemoryFormat, Result, Scalar, ScalarType, Tensor};
use switchyard_cpu as _;
use switchyard_ops::op;

/// A fixture argument: a dtype (`{"dtype": "float32"}`) or anything `support::Arg` parses.
enum A {
    Dtype(ScalarType),
    Arg(Arg),
}

impl A {
    fn parse(v: &Value) -> A {
        match v.get("dtype").and_then(Value::as_str) {
            Some(d) if v.get("sizes").is_none() => A::Dtype(support::dtype_of(d)),
            _ => A::Arg(Arg::parse(v)),
        }
    }
    fn arg(&self) -> &Arg {
        match self {
            A::Arg(a) => a,
            A::Dtype(d) => panic!("expected an argument, got dtype {d}"),
        }
    }
    fn t(&self) -> &Tensor {
        self.arg().tensor()
    }
    fn i(&self) -> i64 {
        self.arg().int()
    }
    fn b(&self) -> bool {
        self.arg().boolean()
    }
    fn opt_i(&self) -> Option<i64> {
        self.arg().opt_int()
    }
    fn dims(&self) -> Option<&[i64]> {
        match self.arg() {
            Arg::None => None,
            a => Some(a.ints()),
        }
    }
    fn ints(&self) -> &[i64] {
        self.arg().ints()
    }
    fn dtype(&self) -> Option<ScalarType> {
        match self {
            A::Dtype(d) => Some(*d),
            A::Arg(Arg::None) => None,
            A::Arg(a) => panic!("expected a dtype, got {a:?}"),
        }
    }
    fn scalar(&self) -> Option<Scalar> {
        match self.arg() {
            Arg::None => None,
            a => Some(a.scalar()),
        }
    }
}

fn one(r: Result<Tensor>) -> Result<Vec<Tensor>> {
    r.map(|t| vec![t])
}

fn two(r: Result<(Tensor, Tensor)>) -> Result<Vec<Tensor>> {
    r.map(|(a, b)| vec![a, b])
}

/// Calls the case's operator through the dispatcher with `args` (and `outs` for out=
/// overloads).
fn call(opname: &str, a: &[A], o: &[Tensor]) -> Result<Vec<Tensor>> {
    match opname {
        "sum" => one(op::sum::call(a[0].t(), a[1].dtype())),
        "sum.out" => one(op::sum_out::call(a[0].t(), a[1].dtype(), &o[0])),
        "sum.dim_IntList" => one(op::sum_dim_IntList::call(
            a[0].t(),
            a[1].dims(),
            a[2].b(),
            a[3].dtype(),
        )),
        "sum.IntList_out" => one(op::sum_IntList_out::call(
            a[0].t(),
            a[1].dims(),
            a[2].b(),
            a[3].dtype(),
            &o[0],
        )),
        "mean" => one(op::mean::call(a[0].t(), a[1].dtype())),
        "mean.dtype_out" => one(op::mean_dtype_out::call(a[0].t(), a[1].dtype(), &o[0])),
        "mean.dim" => one(op::mean_dim::call(
            a[0].t(),
            a[1].dims(),
            a[2].b(),
            a[3].dtype(),
        )),
        "mean.out" => one(op::mean_out::call(
            a[0].t(),
            a[1].dims(),
            a[2].b(),
            a[3].dtype(),
            &o[0],
        )),
        "max" => one(op::max::call(a[0].t())),
        "min" => one(op::min::call(a[0].t())),
        "max.unary_out" => one(op::max_unary_out::call(a[0].t(), &o[0])),
        "min.unary_out" => one(op::min_unary_out::call(a[0].t(), &o[0])),
        "max.dim" => two(op::max_dim::call(a[0].t(), a[1].i(), a[2].b())),
        "min.dim" => two(op::min_dim::call(a[0].t(), a[1].i(), a[2].b())),
        "max.dim_max" => two(op::max_dim_max::call(
            a[0].t(),
            a[1].i(),
            a[2].b(),
            &o[0],
            &o[1],
        )),
        "min.dim_min" => two(op::min_dim_min::call(
            a[0].t(),
            a[1].i(),
            a[2].b(),
            &o[0],
            &o[1],
        )),
        "amax" => one(op::amax::call(a[0].t(), a[1].ints(), a[2].b())),
        "amin" => one(op::amin::call(a[0].t(), a[1].ints(), a[2].b())),
        "argmax" => one(op::argmax::call(a[0].t(), a[1].opt_i(), a[2].b())),
        "argmin" => one(op::argmin::call(a[0].t(), a[1].opt_i(), a[2].b())),
        "prod" => one(op::prod::call(a[0].t(), a[1].dtype())),
        "prod.dim_int" => one(op::prod_dim_int::call(
            a[0].t(),
            a[1].i(),
            a[2].b(),
            a[3].dtype(),
        )),
        "all" => one(op::all::call(a[0].t())),
        "any.dim" => one(op::any_dim::call(a[0].t(), a[1].i(), a[2].b())),
        "cumsum" => one(op::cumsum::call(a[0].t(), a[1].i(), a[2].dtype())),
        "cumprod" => one(op::cumprod::call(a[0].t(), a[1].i(), a[2].dtype())),
        "linalg_vector_norm" => one(op::linalg_vector_norm::call(
            a[0].t(),
            a[1].scalar().unwrap(),
            a[2].dims(),
            a[3].b(),
            a[4].dtype(),
        )),
        "std" => one(op::std::call(a[0].t(), a[1].b())),
        "var" => one(op::var::call(a[0].t(), a[1].b())),
        "var_mean" => two(op::var_mean::call(a[0].t(), a[1].b())),
        "std.dim" => one(op::std_dim::call(a[0].t(), a[1].dims(), a[2].b(), a[3].b())),
        "var.dim" => one(op::var_dim::call(a[0].t(), a[1].dims(), a[2].b(), a[3].b())),
        "var_mean.dim" => two(op::var_mean_dim::call(
            a[0].t(),
            a[1].dims(),
            a[2].b(),
            a[3].b(),
        )),
        "std.out" => one(op::std_out::call(
            a[0].t(),
            a[1].dims(),
            a[2].b(),
            a[3].b(),
            &o[0],
        )),
        "var.out" => one(op::var_out::call(
            a[0].t(),
            a[1].dims(),
            a[2].b(),
            a[3].b(),
            &o[0],
        )),
        "std.correction" => one(op::std_correction::call(
            a[0].t(),
            a[1].dims(),
            a[2].scalar(),
            a[3].b(),
        )),
        "var.correction" => one(op::var_correction::call(
            a[0].t(),
            a[1].dims(),
            a[2].scalar(),
            a[3].b(),
        )),
        "var_mean.correction" => two(op::var_mean_correction::call(
            a[0].t(),
            a[1].dims(),
            a[2].scalar(),
            a[3].b(),
        )),
        "std.correction_out" => one(op::std_correction_out::call(
            a[0].t(),
            a[1].dims(),
            a[2].scalar(),
            a[3].b(),
            &o[0],
        )),
        "var.correction_out" => one(op::var_correction_out::call(
            a[0].t(),
            a[1].dims(),
            a[2].scalar(),
            a[3].b(),
            &o[0],
        )),
        "var_mean.correction_out" => two(op::var_mean_correction_out::call(
            a[0].t(),
            a[1].dims(),
            a[2].scalar(),
            a[3].b(),
            &o[0],
            &o[1],
        )),
        "softmax.int" => one(op::softmax_int::call(a[0].t(), a[1].i(), a[2].dtype())),
        "log_softmax.int" => one(op::log_softmax_int::call(a[0].t(), a[1].i(), a[2].dtype())),
        "softmax.int_out" => one(op::softmax_int_out::call(
            a[0].t(),
            a[1].i(),
            a[2].dtype(),
            &o[0],
        )),
        "log_softmax.int_out" => one(op::log_softmax_int_out::call(
            a[0].t(),
            a[1].i(),
            a[2].dtype(),
            &o[0],
        )),
        "_softmax" => one(op::_softmax::call(a[0].t(), a[1].i(), a[2].b())),
        "_log_softmax" => one(op::_log_softmax::call(a[0].t(), a[1].i(), a[2].b())),
        "_softmax.out" => one(op::_softmax_out::call(a[0].t(), a[1].i(), a[2].b(), &o[0])),
        "_log_softmax.out" => one(op::_log_softmax_out::call(
            a[0].t(),
            a[1].i(),
            a[2].b(),
            &o[0],
        )),
        other => panic!("no runner for {other}"),
    }
}

fn parse_args(case: &Value) -> Vec<A> {
    case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(A::parse)
        .collect()
}

fn run(case: &Value) -> Result<Vec<Tensor>> {
    let a = parse_args(case);
    let o = support::outs(case);
    call(case["op"].as_str().unwrap(), &a, &o)
}

/// `t` as a Meta tensor of the same sizes, strides and dtype.
fn to_meta(t: &Tensor) -> Tensor {
    let m = Tensor::allocate(&[t.numel().max(1) * 4 + 16], t.dtype(), Device::META).unwrap();
    m.as_strided_view(&t.sizes(), &t.strides(), t.storage_offset())
        .unwrap()
}

fn meta_args(a: &[A]) -> Vec<A> {
    a.iter()
        .map(|x| match x {
            A::Dtype(d) => A::Dtype(*d),
            A::Arg(Arg::Tensor(t)) => A::Arg(Arg::Tensor(to_meta(t))),
            A::Arg(other) => A::Arg(other.clone()),
        })
        .collect()
}

#[test]
fn reduce_ops_match_pytorch() {
    let fixture = support::fixture("reduce.json");
    let cases = support::cases(&fixture);
    assert!(cases.len() >= 450, "{} cases", cases.len());
    support::check_all(cases, true, run);
}

/// Every warning PyTorch emitted (degrees of freedom <= 0) is emitted here too.
#[test]
fn reduce_warnings_match_pytorch() {
    let _serial = support::serial();
    let fixture = support::fixture("reduce.json");
    let (mut checked, mut failures) = (0, Vec::new());
    for case in support::cases(&fixture) {
        let Some(w) = case.get("warning").and_then(Value::as_str) else {
            continue;
        };
        let name = case["name"].as_str().unwrap();
        // The warning is checked where the target gives it (`reduce warning: <case>`).
        if support::known_difference(&format!("reduce warning: {name}"), case).is_some() {
            continue;
        }
        switchyard_dispatch::warnings::take_warnings();
        // On the target: built there, run, synced (a warning of the sync counts too).
        let _ = support::run_on_target(|| run(case));
        let got = switchyard_dispatch::warnings::take_warnings();
        if !got.iter().any(|g| g == w) {
            failures.push(format!("{name}: warnings {got:?}, expected {w:?}"));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 8, "{checked} warning cases");
}

/// On Meta tensors every error case fails with the CPU's (PyTorch's) error, except those only
/// a computing kernel can raise (`support::cpu_only_error`).
#[test]
fn reduce_errors_on_meta_are_the_cpu_errors() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let fixture = support::fixture("reduce.json");
    let (checked, failures) = support::meta_error_parity(support::cases(&fixture), |case| {
        let a = meta_args(&parse_args(case));
        let o: Vec<Tensor> = support::outs(case).iter().map(to_meta).collect();
        call(case["op"].as_str().unwrap(), &a, &o)
    });
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 40, "{checked} error cases");
}

/// On Meta tensors, every operator with a Meta kernel gives PyTorch's shapes and dtypes (and
/// its errors, except the value-dependent ones).
#[test]
fn reduce_ops_on_meta_match_shapes() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let fixture = support::fixture("reduce.json");
    let mut checked = 0;
    for case in support::cases(&fixture) {
        let opname = case["op"].as_str().unwrap();
        if case["expect"].get("error").is_some() {
            continue;
        }
        let a = meta_args(&parse_args(case));
        let o: Vec<Tensor> = support::outs(case).iter().map(to_meta).collect();
        let got = call(opname, &a, &o).unwrap_or_else(|e| panic!("{}: {e}", case["name"]));
        let want = case["expect"]["results"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{}", case["name"]);
        for (g, w) in got.iter().zip(want) {
            assert!(g.is_meta(), "{}", case["name"]);
            assert_eq!(
                g.dtype(),
                support::dtype_of(w["dtype"].as_str().unwrap()),
                "{}",
                case["name"]
            );
            let sizes: Vec<i64> = w["sizes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            assert_eq!(g.sizes().as_slice(), sizes.as_slice(), "{}", case["name"]);
        }
        checked += 1;
    }
    assert!(checked >= 200, "{checked} meta cases");
}

/// A host tensor on the target (as it is on the CPU).
fn tgt(t: Tensor) -> Tensor {
    support::to_target(t)
}

/// A result's elements, read on the host after the target's sync.
trait Read {
    fn f32s(&self) -> Vec<f32>;
    fn f64s(&self) -> Vec<f64>;
    fn i64s(&self) -> Vec<i64>;
}

impl Read for Tensor {
    fn f32s(&self) -> Vec<f32> {
        support::host(self).to_vec::<f32>().unwrap()
    }
    fn f64s(&self) -> Vec<f64> {
        support::host(self).to_f64_vec().unwrap()
    }
    fn i64s(&self) -> Vec<i64> {
        support::host(self).to_vec::<i64>().unwrap()
    }
}

fn floats(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

/// `f32` sums of 16M ones are exact (pairwise / cascade summation), along every layout.
#[test]
fn sum_of_16m_ones_is_exact() {
    let _serial = support::serial();
    let n = 1i64 << 24;
    let ones = tgt(Tensor::from_vec(vec![1.0f32; n as usize], &[n]).unwrap());
    let s = op::sum::call(&ones, None).unwrap();
    assert_eq!(s.f32s(), vec![n as f32]);
    let m = op::mean::call(&ones, None).unwrap();
    assert_eq!(m.f32s(), vec![1.0]);
    // Outer reduction of a [4096, 4096] view: each column sums 4096 ones.
    let sq = op::view::call(&ones, &[4096, 4096]).unwrap();
    let cols = op::sum_dim_IntList::call(&sq, Some(&[0]), false, None).unwrap();
    assert!(cols.f32s().iter().all(|v| *v == 4096.0));
    let all = op::sum_dim_IntList::call(&sq, Some(&[1, 0]), false, None).unwrap();
    assert_eq!(all.f32s(), vec![n as f32]);
    // Half inputs accumulate in f32: 4096 halves of 1 sum to 4096 exactly.
    let h = tgt(Tensor::from_vec(vec![half::f16::ONE; 4096], &[4096]).unwrap());
    let hs = op::sum::call(&h, None).unwrap();
    assert_eq!(hs.f64s(), vec![4096.0]);
}

/// The plain `f32` sum and mean of 16M+ values (the benchmark's size, vector leaves, a tail
/// and an odd last pair, split across threads) stay within 1e-6 of an `f64` reference,
/// relative to the sum of magnitudes: PyTorch's cascade-sum accuracy. A sequential `f32`
/// accumulation of the same values is checked to miss that bound, so the bound has teeth.
#[test]
fn sum_and_mean_of_16m_floats_match_an_f64_reference() {
    let _serial = support::serial();
    let n = (1usize << 24) + 3 * 1024 + 7;
    for (seed, shift) in [(5u64, 0.0f32), (6, 2.0)] {
        // Values in [shift - 2, shift + 2): mixed signs, then all positive.
        let data: Vec<f32> = floats(n, seed).iter().map(|x| x + shift).collect();
        let exact: f64 = data.iter().map(|x| f64::from(*x)).sum();
        let magnitude: f64 = data.iter().map(|x| f64::from(x.abs())).sum();
        let tol = 1e-6 * magnitude;
        let t = tgt(Tensor::from_vec(data.clone(), &[n as i64]).unwrap());
        let s = f64::from(op::sum::call(&t, None).unwrap().f32s()[0]);
        assert!((s - exact).abs() <= tol, "sum {s} vs {exact} (seed {seed})");
        let m = f64::from(op::mean::call(&t, None).unwrap().f32s()[0]);
        let want = exact / n as f64;
        assert!(
            (m - want).abs() <= tol / n as f64 + f64::from(f32::EPSILON) * want.abs(),
            "mean {m} vs {want} (seed {seed})"
        );
        if shift > 0.0 {
            let naive = data.iter().fold(0.0f32, |a, x| a + x);
            assert!(
                (f64::from(naive) - exact).abs() > tol,
                "sequential sum {naive}"
            );
        }
    }
}

/// Strided views reduce like their contiguous copies; out= equals functional; the
/// `unbiased` overloads equal their correction forms.
#[test]
fn properties_hold() {
    let _serial = support::serial();
    let data = floats(6 * 7 * 8, 7);
    let base = Tensor::from_vec(data, &[6, 7, 8]).unwrap();
    let view = tgt(base.as_strided_view(&[8, 6, 7], &[1, 56, 8], 0).unwrap());
    let copy = op::contiguous::call(&view, MemoryFormat::Contiguous).unwrap();
    assert!(copy.is_contiguous());
    for dims in [&[0i64][..], &[1], &[2], &[0, 2], &[], &[1, 2]] {
        for keepdim in [false, true] {
            let a = op::sum_dim_IntList::call(&view, Some(dims), keepdim, None).unwrap();
            let b = op::sum_dim_IntList::call(&copy, Some(dims), keepdim, None).unwrap();
            assert_eq!(a.sizes(), b.sizes());
            for (x, y) in a.f32s().iter().zip(b.f32s()) {
                assert!(
                    (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                    "{dims:?}: {x} vs {y}"
                );
            }
            let out = tgt(Tensor::allocate(&[0], ScalarType::Float, Device::CPU).unwrap());
            op::mean_out::call(&view, Some(dims), keepdim, None, &out).unwrap();
            let f = op::mean_dim::call(&view, Some(dims), keepdim, None).unwrap();
            assert_eq!(out.sizes(), f.sizes());
            assert_eq!(out.f32s(), f.f32s());
        }
    }
    for d in 0..3 {
        let (v1, i1) = op::max_dim::call(&view, d, false).unwrap();
        let (v2, i2) = op::max_dim::call(&copy, d, false).unwrap();
        assert_eq!(v1.f32s(), v2.f32s());
        assert_eq!(i1.i64s(), i2.i64s());
        let s1 = op::softmax_int::call(&view, d, None).unwrap();
        let s2 = op::softmax_int::call(&copy, d, None).unwrap();
        assert_eq!(s1.f32s(), s2.f32s());
        let a = op::var_dim::call(&view, Some(&[d]), true, false).unwrap();
        let b = op::var_correction::call(&copy, Some(&[d]), Some(Scalar::Int(1)), false).unwrap();
        for (x, y) in a.f32s().iter().zip(b.f32s()) {
            assert!((x - y).abs() <= 1e-6 * (1.0 + y.abs()));
        }
    }
}

/// Large inputs take the multithreaded paths and agree with a double-precision reference.
#[test]
fn large_reductions_agree_with_f64() {
    let _serial = support::serial();
    let (r, c) = (512usize, 1536usize);
    let data = floats(r * c, 11);
    let t = tgt(Tensor::from_vec(data.clone(), &[r as i64, c as i64]).unwrap());
    let rows = op::sum_dim_IntList::call(&t, Some(&[1]), false, None).unwrap();
    let cols = op::sum_dim_IntList::call(&t, Some(&[0]), false, None).unwrap();
    let rows = rows.f32s();
    let cols = cols.f32s();
    for i in 0..r {
        let e: f64 = (0..c).map(|j| f64::from(data[i * c + j])).sum();
        assert!((f64::from(rows[i]) - e).abs() < 1e-3, "row {i}");
    }
    for j in 0..c {
        let e: f64 = (0..r).map(|i| f64::from(data[i * c + j])).sum();
        assert!((f64::from(cols[j]) - e).abs() < 1e-3, "col {j}");
    }
    let sm = op::softmax_int::call(&t, 1, None).unwrap().f32s();
    let lsm = op::log_softmax_int::call(&t, 1, None).unwrap().f32s();
    for i in (0..r).step_by(37) {
        let row: Vec<f64> = (0..c).map(|j| f64::from(data[i * c + j])).collect();
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for j in 0..c {
            let e = (row[j] - m).exp() / z;
            assert!((f64::from(sm[i * c + j]) - e).abs() <= 1e-6 * e + 1e-9);
            let le = row[j] - m - z.ln();
            assert!((f64::from(lsm[i * c + j]) - le).abs() <= 1e-5 * (1.0 + le.abs()));
        }
    }
    let (v, idx) = op::max_dim::call(&t, 0, false).unwrap();
    let (v, idx) = (v.f32s(), idx.i64s());
    for j in (0..c).step_by(53) {
        let col: Vec<f32> = (0..r).map(|i| data[i * c + j]).collect();
        let best = col.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(v[j], best);
        assert_eq!(idx[j], col.iter().position(|x| *x == best).unwrap() as i64);
    }
}

/// `a` and `b` hold the same values (NaN matching NaN).
fn same_values(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// `data` ([rows, n], row-major) stored transposed and viewed as [rows, n] again: a
/// non-contiguous tensor with the same values.
fn transposed_view(data: &[f32], rows: usize, n: usize) -> Tensor {
    let t: Vec<f32> = (0..n)
        .flat_map(|c| (0..rows).map(move |r| data[r * n + c]))
        .collect();
    let store = Tensor::from_vec(t, &[n as i64, rows as i64]).unwrap();
    store
        .as_strided_view(&[rows as i64, n as i64], &[1, rows as i64], 0)
        .unwrap()
}

/// The last-dimension softmax / log-softmax rows (the multiversioned row kernel, rows split
/// among threads above the grain size) through the dispatcher, for row lengths around the
/// vector widths, on rows with a large offset, `-inf` entries, a NaN, huge values and only
/// `-inf`:
/// - every row of the large (parallel) call equals, bit for bit, that row computed alone
///   (serial), and transposed inputs and strided `out=` give the same bits;
/// - the results are within the bounds derived in `reduce_loops`' unit test of the `f64`
///   answer, with the sum's error term bounded by `u (0.37 n + 2)` (`|d| e^d <= 1/e`, `S >= 1`);
/// - `f16` / `bf16` compute in `f32` and round once.
#[test]
fn softmax_last_dim_rows() {
    let _serial = support::serial();
    let u = f64::from(f32::EPSILON) / 2.0;
    for n in [1usize, 7, 17, 33, 1023] {
        let rows = 32_768 / n + 3;
        let mut data = floats(rows * n, n as u64);
        for (r, row) in data.chunks_mut(n).enumerate() {
            match r % 6 {
                1 => row.iter_mut().for_each(|v| *v += 1000.0),
                2 => row
                    .iter_mut()
                    .skip(1)
                    .step_by(3)
                    .for_each(|v| *v = f32::NEG_INFINITY),
                3 => row[n / 2] = f32::NAN,
                4 => row.iter_mut().for_each(|v| *v *= 1e30),
                5 if r % 12 == 5 => row.fill(f32::NEG_INFINITY),
                _ => {}
            }
        }
        let shape = [rows as i64, n as i64];
        let t = tgt(Tensor::from_vec(data.clone(), &shape).unwrap());
        let a = u * (0.37 * n as f64 + 2.0);
        let k = (n / 32) as f64;
        for log in [false, true] {
            let f = |x: &Tensor| {
                if log {
                    op::_log_softmax::call(x, 1, false).unwrap()
                } else {
                    op::_softmax::call(x, 1, false).unwrap()
                }
            };
            let out = f(&t);
            let got = out.f32s();
            for r in (0..rows).step_by(97).chain([rows - 1]) {
                let one = tgt(
                    Tensor::from_vec(data[r * n..(r + 1) * n].to_vec(), &[1, n as i64]).unwrap(),
                );
                let alone = f(&one).f64s();
                let row: Vec<f64> = got[r * n..(r + 1) * n]
                    .iter()
                    .map(|v| f64::from(*v))
                    .collect();
                assert!(same_values(&alone, &row), "n={n} log={log} row {r}");
            }
            let view = tgt(transposed_view(&data, rows, n));
            assert!(same_values(&f(&view).f64s(), &out.f64s()));
            let strided = tgt(transposed_view(&vec![0.0; rows * n], rows, n));
            if log {
                op::_log_softmax_out::call(&t, 1, false, &strided).unwrap();
            } else {
                op::_softmax_out::call(&t, 1, false, &strided).unwrap();
            }
            assert!(same_values(&strided.f64s(), &out.f64s()));
            for (r, (xs, ys)) in data.chunks(n).zip(got.chunks(n)).enumerate() {
                let max = xs
                    .iter()
                    .filter(|v| !v.is_nan())
                    .fold(f64::NEG_INFINITY, |m, v| m.max(f64::from(*v)));
                let sum: f64 = xs.iter().map(|v| (f64::from(*v) - max).exp()).sum();
                for (&x, &y) in xs.iter().zip(ys) {
                    let d = f64::from(x) - max;
                    let what = format!("n={n} log={log} row {r}: x={x:e} got {y:e}");
                    let want = if log { d - sum.ln() } else { d.exp() / sum };
                    if want.is_nan() {
                        assert!(y.is_nan(), "{what}");
                    } else if !(want as f32).is_finite() || d == f64::NEG_INFINITY {
                        assert_eq!(y, want as f32, "{what}");
                    } else if log {
                        let tol = u * (d.abs() + 2.0 * sum.ln().abs() + want.abs() + k + 5.0) + a;
                        assert!((f64::from(y) - want).abs() <= tol, "{what}, want {want:e}");
                    } else {
                        let tol = want * (u * (d.abs() + k + 9.0) + a) + 2f64.powi(-148);
                        assert!((f64::from(y) - want).abs() <= tol, "{what}, want {want:e}");
                    }
                }
            }
            for low in [ScalarType::Half, ScalarType::BFloat16] {
                let x = op::_to_copy::call(&t, Some(low), None, None, None, false, None).unwrap();
                let wide =
                    op::_to_copy::call(&x, Some(ScalarType::Float), None, None, None, false, None);
                let want = f(&wide.unwrap());
                let want = op::_to_copy::call(&want, Some(low), None, None, None, false, None);
                let want = want.unwrap().f64s();
                let got = f(&x).f64s();
                if low == ScalarType::Half {
                    assert!(same_values(&got, &want), "n={n} log={log} {low:?}");
                } else {
                    // The result is rounded to bf16 through `f64` with half 2.7's `bf16::from_f64`,
                    // which ignores the low 32 bits of the f64 mantissa, so an f32 just above a
                    // tie rounds down (`_to_copy` rounds from f32 correctly): one ulp at most.
                    for (g, w) in got.iter().zip(&want) {
                        let ulp = if w.is_normal() {
                            2f64.powi(w.abs().log2().floor() as i32 - 7)
                        } else {
                            0.0
                        };
                        let ok = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
                        assert!(
                            ok || (g - w).abs() <= ulp,
                            "n={n} log={log}: {g:e} vs {w:e}"
                        );
                    }
                }
            }
        }
    }
}

/// Functional `_softmax` / `_log_softmax` write their `Float` / `Double` output into new
/// memory themselves (not through `create_out`): they give the bits of the `out=` variants for
/// every dimension (inner and last), negative dims, strided and offset inputs, and match them
/// on empty inputs and errors.
#[test]
fn functional_softmax_matches_out_variant() {
    // The functional kernels writing their own output against the out= kernels (on lazy an
    // out= call is the functional one plus a copy).
    if support::cpu_only(support::CpuOnly::Kernel) {
        return;
    }
    let data = floats(2 * 3 * 5 * 7, 11);
    for dtype in [ScalarType::Float, ScalarType::Double] {
        let base = Tensor::from_vec(data.clone(), &[2, 3, 5, 7]).unwrap();
        let base = op::_to_copy::call(&base, Some(dtype), None, None, None, false, None).unwrap();
        let inputs = [
            base.clone(),
            // Strided (a transposed view) and offset (the second [3, 5, 7] block).
            base.as_strided_view(&[2, 3, 7, 5], &[105, 35, 1, 7], 0)
                .unwrap(),
            base.as_strided_view(&[3, 5, 7], &[35, 7, 1], 105).unwrap(),
        ];
        for x in &inputs {
            for dim in -1..x.dim() as i64 {
                for log in [false, true] {
                    let out = Tensor::allocate(&[0], dtype, Device::CPU).unwrap();
                    let got = if log {
                        op::_log_softmax_out::call(x, dim, false, &out).unwrap();
                        op::_log_softmax::call(x, dim, false).unwrap()
                    } else {
                        op::_softmax_out::call(x, dim, false, &out).unwrap();
                        op::_softmax::call(x, dim, false).unwrap()
                    };
                    assert_eq!(got.dtype(), dtype);
                    assert_eq!(got.sizes(), x.sizes());
                    assert!(got.is_contiguous());
                    assert!(
                        same_values(&got.to_f64_vec().unwrap(), &out.to_f64_vec().unwrap()),
                        "{dtype:?} {:?} dim={dim} log={log}",
                        x.sizes()
                    );
                }
            }
        }
        let empty = Tensor::allocate(&[4, 0], dtype, Device::CPU).unwrap();
        let got = op::_softmax::call(&empty, 1, false).unwrap();
        assert_eq!(
            (got.sizes().as_slice(), got.dtype()),
            (&[4i64, 0][..], dtype)
        );
    }
    let ints = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    let out = Tensor::allocate(&[0], ScalarType::Long, Device::CPU).unwrap();
    for log in [false, true] {
        let (functional, with_out) = if log {
            (
                op::_log_softmax::call(&ints, 0, false),
                op::_log_softmax_out::call(&ints, 0, false, &out),
            )
        } else {
            (
                op::_softmax::call(&ints, 0, false),
                op::_softmax_out::call(&ints, 0, false, &out),
            )
        };
        // The same error, up to the operator named at the end.
        let (a, b) = (functional.unwrap_err(), with_out.unwrap_err());
        let (a, b) = (a.to_string(), b.to_string());
        let message = |s: &str| {
            s.split(" (in operator")
                .next()
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(message(&a), message(&b));
        assert!(
            a.contains("softmax") && a.contains("not implemented for 'Long'"),
            "{a}"
        );
    }
    let x = Tensor::from_vec(vec![0.5f32, 1.5], &[2]).unwrap();
    let half_to_float = op::_softmax::call(&x, 0, true).unwrap_err();
    assert!(
        half_to_float.to_string().contains("half to float"),
        "{half_to_float}"
    );
}

/// `torch.ops.aten.amax(torch.empty(0, 3))` (and `amin`): an empty input with no `dim` is a
/// `RuntimeError` in PyTorch (`zero_numel_check_dims` over a list is a `TORCH_CHECK`), unlike
/// a reduced dimension of size zero (`amax(x, 0)`: `IndexError`).
#[test]
fn amax_amin_of_an_empty_input_without_dim_is_a_runtime_error() {
    let _serial = support::serial();
    use switchyard_core::ErrorKind;
    for device in [Device::CPU, Device::META] {
        let x = Tensor::allocate(&[0, 3], ScalarType::Float, device).unwrap();
        // The CPU's on the target (a Meta tensor stays Meta).
        let x = if x.is_meta() { x } else { tgt(x) };
        for (name, e) in [
            (
                "amax",
                support::finish_one(op::amax::call(&x, &[], false)).unwrap_err(),
            ),
            (
                "amin",
                support::finish_one(op::amin::call(&x, &[], false)).unwrap_err(),
            ),
        ] {
            assert_eq!(e.kind(), ErrorKind::RuntimeError, "{name} {e}");
            assert_eq!(
                e.message(),
                format!(
                    "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
                )
            );
        }
        let e = support::finish_one(op::amax::call(&x, &[0], false)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IndexError, "{e}");
        assert_eq!(
            e.message(),
            "amax(): Expected reduction dim 0 to have non-zero size."
        );
    }
}

/// `torch.ones(2, 3).cumsum_(1, dtype=torch.float64)` (and `cumprod_`): the structured
/// in-place check prints dtypes as c10's `TypeMeta` does (`float`, `double`).
#[test]
fn cumsum_and_cumprod_in_place_with_another_dtype_name_c10_types() {
    let _serial = support::serial();
    for device in [Device::CPU, Device::META] {
        let x = Tensor::allocate(&[2, 3], ScalarType::Float, device).unwrap();
        // The CPU's on the target (a Meta tensor stays Meta).
        let x = if x.is_meta() { x } else { tgt(x) };
        // The in-place overload's own check (a functionalizing target's `known_difference`).
        if !x.is_meta()
            && support::known_difference("reduce cumsum_ of another dtype", &Value::Null).is_some()
        {
            continue;
        }
        for e in [
            support::finish_one(op::cumsum_::call(&x, 1, Some(ScalarType::Double))).unwrap_err(),
            support::finish_one(op::cumprod_::call(&x, 1, Some(ScalarType::Double))).unwrap_err(),
        ] {
            assert_eq!(
                e.message(),
                "Bad in-place call: input tensor dtype float and output tensor dtype double should match"
            );
        }
    }
}
