//! The shape family against PyTorch 2.15 (`tools/oracle/shape.py` wrote `fixtures/shape.json`):
//! values, dtypes, sizes, strides and error messages of stack, repeat, constant_pad_nd,
//! embedding, one_hot, sort, logsumexp, cross_entropy_loss and max / min.other, every case
//! called through the dispatcher (`switchyard_ops::op::<name>::call`), functional and out=;
//! every successful case again on `Meta` tensors (shapes and dtypes); plus property tests
//! (strided input = contiguous input, out= = functional, method / free function = op).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "indexing_support/mod.rs"]
mod support;
// This suite runs on CPU tensors (the lazy backend's tests run it on lazy ones).
use support::CPU_TARGET as TARGET;

use serde_json::Value;
use support::{compare, copy_values, fixture, int_values, scalar, tensor, values};
use switchyard_core::{Device, Result, Scalar, ScalarType, Tensor};
use switchyard_ops::op;
// Linking the CPU crate registers its kernels with the dispatcher.
use switchyard_cpu as _;

/// How fixture tensors are placed: as recorded (CPU) or as `Meta` tensors of the same
/// geometry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Place {
    Cpu,
    Meta,
}

fn place(t: Tensor, p: Place) -> Tensor {
    match p {
        Place::Cpu => t,
        Place::Meta => {
            let storage = t.storage().map_or(0, |s| s.nbytes()) / t.element_size().max(1);
            let m = Tensor::allocate(&[storage.max(1) as i64], t.dtype(), Device::META).unwrap();
            m.as_strided_view(&t.sizes(), &t.strides(), t.storage_offset())
                .unwrap()
        }
    }
}

struct Args<'a> {
    a: &'a [Value],
    p: Place,
}

impl Args<'_> {
    fn t(&self, i: usize) -> Tensor {
        place(tensor(&self.a[i]["tensor"]), self.p)
    }
    fn opt_t(&self, i: usize) -> Option<Tensor> {
        self.a[i].get("tensor").map(|v| place(tensor(v), self.p))
    }
    fn ts(&self, i: usize) -> Vec<Tensor> {
        self.a[i]["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| place(tensor(&v["tensor"]), self.p))
            .collect()
    }
    fn int(&self, i: usize) -> i64 {
        self.a[i]["int"].as_i64().unwrap()
    }
    fn ints(&self, i: usize) -> Vec<i64> {
        self.a[i]["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["int"].as_i64().unwrap())
            .collect()
    }
    fn bool(&self, i: usize) -> bool {
        self.a[i]["bool"].as_bool().unwrap()
    }
    fn opt_bool(&self, i: usize) -> Option<bool> {
        self.a[i].get("bool").map(|b| b.as_bool().unwrap())
    }
    fn float(&self, i: usize) -> f64 {
        support::number(&self.a[i]["float"])
    }
    fn scalar_or_zero(&self, i: usize) -> Scalar {
        self.a.get(i).map_or(Scalar::Int(0), scalar)
    }
}

fn pair((a, b): (Tensor, Tensor)) -> Vec<Tensor> {
    vec![a, b]
}

/// Runs one fixture case through the dispatcher.
fn run(op: &str, a: &[Value], outs: &[Tensor], p: Place) -> Result<Vec<Tensor>> {
    let x = Args { a, p };
    let one = |r: Result<Tensor>| r.map(|t| vec![t]);
    match (op, outs) {
        ("stack", []) => one(op::stack::call(&x.ts(0), x.int(1))),
        ("stack", [o]) => one(op::stack_out::call(&x.ts(0), x.int(1), o)),
        ("repeat", []) => one(op::repeat::call(&x.t(0), &x.ints(1))),
        ("repeat", [o]) => one(op::repeat_out::call(&x.t(0), &x.ints(1), o)),
        ("constant_pad_nd", []) => one(op::constant_pad_nd::call(
            &x.t(0),
            &x.ints(1),
            x.scalar_or_zero(2),
        )),
        ("constant_pad_nd", [o]) => one(op::constant_pad_nd_out::call(
            &x.t(0),
            &x.ints(1),
            x.scalar_or_zero(2),
            o,
        )),
        ("embedding", []) => one(op::embedding::call(
            &x.t(0),
            &x.t(1),
            x.int(2),
            x.bool(3),
            x.bool(4),
        )),
        ("embedding", [o]) => one(op::embedding_out::call(
            &x.t(0),
            &x.t(1),
            x.int(2),
            x.bool(3),
            x.bool(4),
            o,
        )),
        ("one_hot", []) => one(op::one_hot::call(&x.t(0), x.int(1))),
        ("sort", []) => op::sort::call(&x.t(0), x.int(1), x.bool(2)).map(pair),
        ("sort", [v, i]) => op::sort_values::call(&x.t(0), x.int(1), x.bool(2), v, i).map(pair),
        ("sort_stable", []) => {
            op::sort_stable::call(&x.t(0), x.opt_bool(1), x.int(2), x.bool(3)).map(pair)
        }
        ("sort_stable", [v, i]) => {
            op::sort_values_stable::call(&x.t(0), x.opt_bool(1), x.int(2), x.bool(3), v, i)
                .map(pair)
        }
        ("logsumexp", []) => one(op::logsumexp::call(&x.t(0), &x.ints(1), x.bool(2))),
        ("logsumexp", [o]) => one(op::logsumexp_out::call(&x.t(0), &x.ints(1), x.bool(2), o)),
        ("cross_entropy_loss", []) => one(op::cross_entropy_loss::call(
            &x.t(0),
            &x.t(1),
            x.opt_t(2).as_ref(),
            x.int(3),
            x.int(4),
            x.float(5),
        )),
        ("max_other", []) => one(op::max_other::call(&x.t(0), &x.t(1))),
        ("max_other", [o]) => one(op::max_out::call(&x.t(0), &x.t(1), o)),
        ("min_other", []) => one(op::min_other::call(&x.t(0), &x.t(1))),
        ("min_other", [o]) => one(op::min_out::call(&x.t(0), &x.t(1), o)),
        _ => panic!("no runner for {op} with {} outputs", outs.len()),
    }
}

/// Relative tolerance for floating results: exact except where the result is computed
/// (logsumexp, cross_entropy_loss), where the summation order may differ from PyTorch's by
/// a few ulp of the dtype the computation runs in: the input's when it is narrower than the
/// result's (a `float32` logsumexp into a `float64` out= takes its `exp` in `float32`, whose
/// last-ulp differences from PyTorch's vectorised `exp` show in the `float64` result).
fn tolerance(op: &str, dtype: &str, input_dtype: Option<&str>) -> f64 {
    if !matches!(op, "logsumexp" | "cross_entropy_loss") {
        return 0.0;
    }
    let dtype = match input_dtype {
        Some(input) if dtype == "float64" && input != "float64" => input,
        _ => dtype,
    };
    match dtype {
        "float16" => 2e-3,
        "bfloat16" => 1.6e-2,
        "float32" => 4e-6,
        _ => 1e-13,
    }
}

fn cases() -> Vec<Value> {
    fixture("shape.json")["cases"].as_array().unwrap().clone()
}

fn outs_of(c: &Value, p: Place) -> Vec<Tensor> {
    c.get("out")
        .map(|o| {
            o.as_array()
                .unwrap()
                .iter()
                .map(|v| place(tensor(v), p))
                .collect()
        })
        .unwrap_or_default()
}

/// `sort` without `stable=True` leaves the order of ties to the implementation (PyTorch's
/// is not stable on large rows): its indices must select the sorted values.
fn indices_select_values(input: &Tensor, dim: i64, values_: &Tensor, indices: &Tensor) -> bool {
    let dim = if input.dim() == 0 { 0 } else { dim };
    let picked = op::gather::call(input, dim, indices, false).unwrap();
    let (a, b) = (support::values(&picked), support::values(values_));
    a.iter()
        .zip(&b)
        .all(|(x, y)| support::same_value(*x, *y) || (x.is_nan() && y.is_nan()))
}

#[test]
fn shape_operators_match_pytorch() {
    let _serial = support::serial();
    let mut failures = Vec::new();
    let all = cases();
    for (n, c) in all.iter().enumerate() {
        let op = c["op"].as_str().unwrap();
        let args = c["args"].as_array().unwrap();
        let label = format!("case {n} ({op})");
        if support::known_difference(&label, c).is_some() {
            continue;
        }
        // On the suite's target device, synced there (its errors are the call's).
        let (outs, got) = support::with_target(|| {
            let outs = outs_of(c, Place::Cpu);
            let got = run(op, args, &outs, Place::Cpu);
            (outs, got)
        });
        // out= returns the caller's tensors.
        let returned_outs = got
            .as_ref()
            .map_or(true, |ts| outs.iter().zip(ts).all(|(o, t)| o.is_same(t)));
        match (c.get("error"), support::finish(got)) {
            (Some(e), Err(got)) => {
                let (kind, msg) = (e["kind"].as_str().unwrap(), e["message"].as_str().unwrap());
                if kind != got.kind().name() || msg != got.message() {
                    failures.push(format!(
                        "{label}: expected {kind}: {msg}\n    got {}: {}",
                        got.kind().name(),
                        got.message()
                    ));
                }
            }
            (Some(e), Ok(_)) => failures.push(format!("{label}: expected error {e}, got a result")),
            (None, Err(got)) => failures.push(format!("{label}: unexpected error {got}")),
            (None, Ok(ts)) => {
                let expected = c["result"].as_array().unwrap();
                let strides = c["check_strides"].as_bool().unwrap_or(true);
                if expected.len() != ts.len() {
                    failures.push(format!("{label}: {} outputs", ts.len()));
                }
                for (i, (e, t)) in expected.iter().zip(&ts).enumerate() {
                    let input_dtype = args.first().and_then(|a| a["tensor"]["dtype"].as_str());
                    let tol = tolerance(op, e["dtype"].as_str().unwrap(), input_dtype);
                    // maximum's output layout for inputs of different layouts is the binary
                    // family's (it differs from TensorIterator's); the values are checked.
                    let strides = strides && !matches!(op, "max_other" | "min_other");
                    if op == "sort" && i == 1 {
                        let input = tensor(&args[0]["tensor"]);
                        let dim = args[1]["int"].as_i64().unwrap();
                        if !indices_select_values(&input, dim, &ts[0], t) {
                            failures.push(format!("{label}: indices do not select the values"));
                        }
                        continue;
                    }
                    if let Err(msg) = compare(e, t, strides, tol) {
                        failures.push(format!("{label} output {i}: {msg}"));
                    }
                }
                if !returned_outs {
                    failures.push(format!("{label}: out= did not return `out`"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from PyTorch:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

/// Operators whose every step has a `Meta` kernel, so they run on `Meta` tensors.
/// `one_hot` does only with an explicit `num_classes` (its values are needed otherwise, as
/// in PyTorch).
const META_CAPABLE: &[&str] = &[
    "stack",
    "repeat",
    "constant_pad_nd",
    "sort",
    "sort_stable",
    "logsumexp",
    "max_other",
    "min_other",
];

#[test]
fn meta_tensors_get_pytorch_shapes_and_dtypes() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let mut failures = Vec::new();
    let mut checked = 0;
    for (n, c) in cases().iter().enumerate() {
        let op = c["op"].as_str().unwrap();
        if !META_CAPABLE.contains(&op) || c.get("error").is_some() {
            continue;
        }
        let args = c["args"].as_array().unwrap();
        let outs = outs_of(c, Place::Meta);
        match run(op, args, &outs, Place::Meta) {
            Err(e) => failures.push(format!("case {n} ({op}): {e}")),
            Ok(ts) => {
                checked += 1;
                for (e, t) in c["result"].as_array().unwrap().iter().zip(&ts) {
                    let sizes = support::ints(&e["sizes"]);
                    let dtype = ScalarType::parse(e["dtype"].as_str().unwrap()).unwrap();
                    if t.sizes().as_slice() != sizes.as_slice()
                        || t.dtype() != dtype
                        || !t.is_meta()
                    {
                        failures.push(format!(
                            "case {n} ({op}): expected {sizes:?} {dtype} on meta, got {:?} {} on {}",
                            t.sizes(),
                            t.dtype(),
                            t.device()
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 150, "only {checked} meta cases ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn one_hot_on_meta_needs_num_classes() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let x = Tensor::allocate(&[2, 3], ScalarType::Long, Device::META).unwrap();
    let r = op::one_hot::call(&x, 4).unwrap();
    assert_eq!(r.sizes().as_slice(), &[2, 3, 4]);
    assert_eq!(r.dtype(), ScalarType::Long);
    assert!(r.is_meta());
    let e = op::one_hot::call(&x, -1).unwrap_err();
    assert_eq!(
        e.message(),
        "Tensor.item() cannot be called on meta tensors"
    );
}

/// A host tensor on the target (as it is on the CPU).
fn tgt(t: Tensor) -> Tensor {
    support::to_target(t)
}

/// A result's elements as `f64`, read on the host after the target's sync.
fn read(t: &Tensor) -> Vec<f64> {
    values(&support::host(t))
}

/// A contiguous tensor holding the values of `t`.
fn contiguous(t: &Tensor) -> Tensor {
    let c = Tensor::allocate(&t.sizes(), t.dtype(), Device::CPU).unwrap();
    copy_values(&c, t);
    c
}

/// A transposed (non-contiguous) `[rows, cols]` f32 view with distinct values.
fn transposed(rows: i64, cols: i64) -> Tensor {
    let data: Vec<f32> = (0..rows * cols)
        .map(|v| (v * 37 % 23) as f32 - 11.5)
        .collect();
    Tensor::from_vec(data, &[cols, rows])
        .unwrap()
        .as_strided_view(&[rows, cols], &[1, rows], 0)
        .unwrap()
}

#[test]
fn strided_inputs_give_the_contiguous_result() {
    let _serial = support::serial();
    let host_x = transposed(5, 7);
    let (x, xc) = (tgt(host_x.clone()), tgt(contiguous(&host_x)));
    let same = |f: &dyn Fn(&Tensor) -> Tensor| assert_eq!(read(&f(&x)), read(&f(&xc)));
    same(&|t| op::stack::call(&[t.clone(), t.clone()], 1).unwrap());
    same(&|t| op::repeat::call(t, &[2, 1, 3]).unwrap());
    same(&|t| op::constant_pad_nd::call(t, &[1, -2, 0, 3], Scalar::Float(0.5)).unwrap());
    same(&|t| op::logsumexp::call(t, &[0], false).unwrap());
    same(&|t| op::sort::call(t, 0, true).unwrap().0);
    same(&|t| op::max_other::call(t, &xc).unwrap());
    let idx = tgt(Tensor::from_vec(vec![4i64, 0, 2, 2], &[2, 2]).unwrap());
    same(&|t| op::embedding::call(t, &idx, -1, false, false).unwrap());
    let target = tgt(Tensor::from_slice(&[1i64, 0, 6, 2, 2]).unwrap());
    same(&|t| op::cross_entropy_loss::call(t, &target, None, 0, -100, 0.1).unwrap());
    let (_, i_strided) = op::sort::call(&x, 1, false).unwrap();
    let (_, i_contig) = op::sort::call(&xc, 1, false).unwrap();
    assert_eq!(
        int_values(&support::host(&i_strided)),
        int_values(&support::host(&i_contig))
    );
}

#[test]
fn out_variants_equal_functional() {
    let _serial = support::serial();
    let host_x = transposed(4, 6);
    let x = tgt(host_x.clone());
    let empty = || tgt(Tensor::allocate(&[0], ScalarType::Float, Device::CPU).unwrap());
    let check = |f: Tensor, o: Tensor| {
        assert_eq!(f.sizes(), o.sizes());
        assert_eq!(read(&f), read(&o));
    };
    // Every fourth element from the second: a strided view of `x`'s storage.
    let every_fourth = || tgt(host_x.as_strided_view(&[6], &[4], 1).unwrap());
    let o = empty();
    op::stack_out::call(&[x.clone(), x.clone()], -1, &o).unwrap();
    check(op::stack::call(&[x.clone(), x.clone()], -1).unwrap(), o);
    let o = empty();
    op::repeat_out::call(&x, &[3, 1], &o).unwrap();
    check(op::repeat::call(&x, &[3, 1]).unwrap(), o);
    let o = empty();
    op::constant_pad_nd_out::call(&x, &[2, 2], Scalar::Int(7), &o).unwrap();
    check(
        op::constant_pad_nd::call(&x, &[2, 2], Scalar::Int(7)).unwrap(),
        o,
    );
    let o = empty();
    op::logsumexp_out::call(&x, &[1], true, &o).unwrap();
    check(op::logsumexp::call(&x, &[1], true).unwrap(), o);
    let o = empty();
    op::min_out::call(
        &x,
        &tgt(contiguous(&host_x.as_strided_view(&[6], &[4], 1).unwrap())),
        &o,
    )
    .unwrap();
    check(op::min_other::call(&x, &every_fourth()).unwrap(), o);
    let (v, i) = (
        empty(),
        tgt(Tensor::allocate(&[0], ScalarType::Long, Device::CPU).unwrap()),
    );
    op::sort_values::call(&x, 0, true, &v, &i).unwrap();
    let (fv, fi) = op::sort::call(&x, 0, true).unwrap();
    assert_eq!(
        int_values(&support::host(&fi)),
        int_values(&support::host(&i))
    );
    check(fv, v);
}

#[test]
fn free_functions_and_methods_reach_the_same_kernels() {
    let _serial = support::serial();
    let x = tgt(transposed(3, 4));
    let r = switchyard_ops::stack(&[x.clone(), x.clone()]).unwrap();
    assert_eq!(r.sizes().as_slice(), &[2, 3, 4]);
    let r = switchyard_ops::one_hot(&tgt(Tensor::from_slice(&[2i64, 0]).unwrap())).unwrap();
    assert_eq!(int_values(&support::host(&r)), vec![0, 0, 1, 1, 0, 0]);
    let r = switchyard_ops::logsumexp(&x, &[1]).unwrap();
    assert_eq!(
        read(&r),
        read(&op::logsumexp::call(&x, &[1], false).unwrap())
    );
}
