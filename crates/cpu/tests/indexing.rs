//! The indexing kernels against PyTorch 2.15 (`tools/oracle/indexing.py` wrote
//! `fixtures/indexing.json`): values, dtypes, sizes, strides and error messages of cat,
//! index_select, gather, scatter*, index.Tensor, index_put_, masked_fill_, masked_select,
//! flip, roll, tril, triu, sort and topk, called through their meta functions and CPU kernels
//! directly; plus property tests (strided input = contiguous input, out= = functional,
//! in-place = functional, meta shapes = CPU shapes).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod indexing_support;
// This suite runs on CPU tensors (the lazy backend's tests run it on lazy ones).
use indexing_support::CPU_TARGET as TARGET;

use indexing_support::*;
use serde_json::Value;
use switchyard_autograd as _;
use switchyard_core::{Device, ErrorKind, Result, Scalar, ScalarType, Tensor};
use switchyard_cpu::native as cpu;
use switchyard_ops::meta;
use switchyard_ops::op;
use switchyard_ops::structured::Outs;

fn arg_tensor(v: &Value) -> Tensor {
    tensor(&v["tensor"])
}

fn arg_int(v: &Value) -> i64 {
    v["int"].as_i64().unwrap()
}

fn arg_bool(v: &Value) -> bool {
    v["bool"].as_bool().unwrap()
}

fn arg_opt_bool(v: &Value) -> Option<bool> {
    v.get("bool").map(|b| b.as_bool().unwrap())
}

fn arg_str(v: &Value) -> &str {
    v["str"].as_str().unwrap()
}

fn arg_ints(v: &Value) -> Vec<i64> {
    v["list"].as_array().unwrap().iter().map(arg_int).collect()
}

fn arg_tensors(v: &Value) -> Vec<Tensor> {
    v["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(arg_tensor)
        .collect()
}

fn arg_opt_tensors(v: &Value) -> Vec<Option<Tensor>> {
    v["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.get("tensor").map(tensor))
        .collect()
}

/// Runs one fixture case's operator through meta + CPU kernel (on the CPU), or through the
/// dispatcher on another target ([`run_dispatched`]).
fn run(op: &str, a: &[Value], outs: &[Tensor]) -> Result<Vec<Tensor>> {
    if !on_cpu() {
        return run_dispatched(op, a, outs);
    }
    let out_refs: Vec<&Tensor> = outs.iter().collect();
    let (mode, o) = if outs.is_empty() {
        (Mode::Functional, Outs::Functional)
    } else {
        (Mode::Out, Outs::Out(&out_refs))
    };
    let inplace = op.ends_with('_') && op != "index_put_";
    let base = op.trim_end_matches('_');
    let self_ = a.first().and_then(|v| v.get("tensor")).map(tensor);
    let s = self_.as_ref();
    let (mode, o) = if inplace {
        (Mode::Inplace, Outs::Inplace(s.unwrap()))
    } else {
        (mode, o)
    };
    match base {
        "cat" => {
            let ts = arg_tensors(&a[0]);
            let dim = arg_int(&a[1]);
            structured(mode, meta::cat(&ts, dim, o), None, outs, |m, t| {
                cpu::cat_out_cpu(m, &ts, dim, t[0])
            })
        }
        "index_select" => {
            let (s, dim, index) = (s.unwrap(), arg_int(&a[1]), arg_tensor(&a[2]));
            match outs.first() {
                Some(out) => cpu::index_select_out_cpu_(s, dim, &index, out).map(|t| vec![t]),
                None => cpu::index_select_cpu_(s, dim, &index).map(|t| vec![t]),
            }
        }
        "gather" => {
            let (dim, index) = (arg_int(&a[1]), arg_tensor(&a[2]));
            let m = meta::gather(s.unwrap(), dim, &index, false, o);
            structured(mode, m, s, outs, |m, t| {
                cpu::gather_out(m, s.unwrap(), dim, &index, false, t[0])
            })
        }
        "scatter_src" | "scatter_add" | "scatter_reduce" => {
            let (dim, index, src) = (arg_int(&a[1]), arg_tensor(&a[2]), arg_tensor(&a[3]));
            let s = s.unwrap();
            match base {
                "scatter_src" => structured(
                    mode,
                    meta::scatter_src(s, dim, &index, &src, o),
                    Some(s),
                    outs,
                    |m, t| cpu::scatter_src_out(m, s, dim, &index, &src, t[0]),
                ),
                "scatter_add" => structured(
                    mode,
                    meta::scatter_add(s, dim, &index, &src, o),
                    Some(s),
                    outs,
                    |m, t| cpu::scatter_add(m, s, dim, &index, &src, t[0]),
                ),
                _ => {
                    let r = arg_str(&a[4]);
                    structured(
                        mode,
                        meta::scatter_reduce(s, dim, &index, &src, r, o),
                        Some(s),
                        outs,
                        |m, t| cpu::scatter_reduce_out(m, s, dim, &index, &src, r, t[0]),
                    )
                }
            }
        }
        "scatter_value" | "scatter_value_reduce" => {
            let (dim, index, v) = (arg_int(&a[1]), arg_tensor(&a[2]), scalar(&a[3]));
            let s = s.unwrap();
            if base == "scatter_value" {
                structured(
                    mode,
                    meta::scatter_value(s, dim, &index, v, o),
                    Some(s),
                    outs,
                    |m, t| cpu::scatter_value_out(m, s, dim, &index, v, t[0]),
                )
            } else {
                let r = arg_str(&a[4]);
                structured(
                    mode,
                    meta::scatter_value_reduce(s, dim, &index, v, r, o),
                    Some(s),
                    outs,
                    |m, t| cpu::scatter_value_reduce_out(m, s, dim, &index, v, r, t[0]),
                )
            }
        }
        "index" => {
            let idx = arg_opt_tensors(&a[1]);
            let s = s.unwrap();
            structured(
                mode,
                meta::index_tensor(s, &idx, o),
                Some(s),
                outs,
                |m, t| cpu::index_out(m, s, &idx, t[0]),
            )
        }
        "index_put" => {
            let (idx, values, acc) = (arg_opt_tensors(&a[1]), arg_tensor(&a[2]), arg_bool(&a[3]));
            // Through the dispatcher: index_put_ (composite) -> _index_put_impl_ (CPU).
            op::index_put_::call(s.unwrap(), &idx, &values, acc).map(|t| vec![t])
        }
        "masked_fill_scalar" => {
            op::masked_fill__Scalar::call(s.unwrap(), &arg_tensor(&a[1]), scalar(&a[2]))
                .map(|t| vec![t])
        }
        "masked_fill_tensor" => {
            op::masked_fill__Tensor::call(s.unwrap(), &arg_tensor(&a[1]), &arg_tensor(&a[2]))
                .map(|t| vec![t])
        }
        "masked_select" => {
            let mask = arg_tensor(&a[1]);
            match outs.first() {
                Some(out) => cpu::masked_select_out_cpu(s.unwrap(), &mask, out).map(|t| vec![t]),
                None => cpu::masked_select_cpu(s.unwrap(), &mask).map(|t| vec![t]),
            }
        }
        "flip" => cpu::flip(s.unwrap(), &arg_ints(&a[1])).map(|t| vec![t]),
        "roll" => cpu::roll(s.unwrap(), &arg_ints(&a[1]), &arg_ints(&a[2])).map(|t| vec![t]),
        "tril" | "triu" => {
            let (s, k) = (s.unwrap(), arg_int(&a[1]));
            if base == "tril" {
                structured(mode, meta::tril(s, k, o), Some(s), outs, |m, t| {
                    cpu::tril_cpu(m, s, k, t[0])
                })
            } else {
                structured(mode, meta::triu(s, k, o), Some(s), outs, |m, t| {
                    cpu::triu_cpu(m, s, k, t[0])
                })
            }
        }
        "sort" => {
            let (s, stable, dim, desc) = (
                s.unwrap(),
                arg_opt_bool(&a[1]),
                arg_int(&a[2]),
                arg_bool(&a[3]),
            );
            structured(
                mode,
                meta::sort_stable(s, stable, dim, desc, o),
                Some(s),
                outs,
                |m, t| cpu::sort_stable_out(m, s, stable, dim, desc, t[0], t[1]),
            )
        }
        "topk" => {
            let s = s.unwrap();
            let (k, dim, largest, sorted) = (
                arg_int(&a[1]),
                arg_int(&a[2]),
                arg_bool(&a[3]),
                arg_bool(&a[4]),
            );
            structured(
                mode,
                meta::topk(s, k, dim, largest, sorted, o),
                Some(s),
                outs,
                |m, t| cpu::topk_out_cpu(m, s, k, dim, largest, sorted, t[0], t[1]),
            )
        }
        other => panic!("unknown op {other}"),
    }
}

/// Runs one fixture case's operator through the dispatcher, the path of a target other than
/// the CPU: the overload of the case's variant (functional, in place, out=) with the same
/// arguments.
fn run_dispatched(op: &str, a: &[Value], outs: &[Tensor]) -> Result<Vec<Tensor>> {
    let inplace = op.ends_with('_') && op != "index_put_";
    let base = op.trim_end_matches('_');
    let self_ = a.first().and_then(|v| v.get("tensor")).map(tensor);
    let s = || self_.as_ref().unwrap();
    let out = outs.first();
    let one = |r: Result<Tensor>| r.map(|t| vec![t]);
    let two = |r: Result<(Tensor, Tensor)>| r.map(|(v, i)| vec![v, i]);
    match base {
        "cat" => {
            let (ts, dim) = (arg_tensors(&a[0]), arg_int(&a[1]));
            one(match out {
                Some(o) => op::cat_out::call(&ts, dim, o),
                None => op::cat::call(&ts, dim),
            })
        }
        "index_select" => {
            let (dim, index) = (arg_int(&a[1]), arg_tensor(&a[2]));
            one(match out {
                Some(o) => op::index_select_out::call(s(), dim, &index, o),
                None => op::index_select::call(s(), dim, &index),
            })
        }
        "gather" => {
            let (dim, index) = (arg_int(&a[1]), arg_tensor(&a[2]));
            one(match out {
                Some(o) => op::gather_out::call(s(), dim, &index, false, o),
                None => op::gather::call(s(), dim, &index, false),
            })
        }
        "scatter_src" | "scatter_add" | "scatter_reduce" => {
            let (dim, index, src) = (arg_int(&a[1]), arg_tensor(&a[2]), arg_tensor(&a[3]));
            let (s, i) = (s(), &index);
            one(match (base, inplace, out) {
                ("scatter_src", true, _) => op::scatter__src::call(s, dim, i, &src),
                ("scatter_src", _, Some(o)) => op::scatter_src_out::call(s, dim, i, &src, o),
                ("scatter_src", _, None) => op::scatter_src::call(s, dim, i, &src),
                ("scatter_add", true, _) => op::scatter_add_::call(s, dim, i, &src),
                ("scatter_add", _, Some(o)) => op::scatter_add_out::call(s, dim, i, &src, o),
                ("scatter_add", _, None) => op::scatter_add::call(s, dim, i, &src),
                (_, true, _) => op::scatter__reduce::call(s, dim, i, &src, arg_str(&a[4])),
                (_, _, Some(o)) => op::scatter_reduce_out::call(s, dim, i, &src, arg_str(&a[4]), o),
                (_, _, None) => op::scatter_reduce::call(s, dim, i, &src, arg_str(&a[4])),
            })
        }
        "scatter_value" | "scatter_value_reduce" => {
            let (dim, index, v) = (arg_int(&a[1]), arg_tensor(&a[2]), scalar(&a[3]));
            let (s, i) = (s(), &index);
            one(match (base, inplace, out) {
                ("scatter_value", true, _) => op::scatter__value::call(s, dim, i, v),
                ("scatter_value", _, Some(o)) => op::scatter_value_out::call(s, dim, i, v, o),
                ("scatter_value", _, None) => op::scatter_value::call(s, dim, i, v),
                (_, true, _) => op::scatter__value_reduce::call(s, dim, i, v, arg_str(&a[4])),
                (_, _, Some(o)) => {
                    op::scatter_value_reduce_out::call(s, dim, i, v, arg_str(&a[4]), o)
                }
                (_, _, None) => op::scatter_value_reduce::call(s, dim, i, v, arg_str(&a[4])),
            })
        }
        "index" => {
            let idx = arg_opt_tensors(&a[1]);
            one(match out {
                Some(o) => op::index_Tensor_out::call(s(), &idx, o),
                None => op::index_Tensor::call(s(), &idx),
            })
        }
        "index_put" => {
            let (idx, values, acc) = (arg_opt_tensors(&a[1]), arg_tensor(&a[2]), arg_bool(&a[3]));
            one(op::index_put_::call(s(), &idx, &values, acc))
        }
        "masked_fill_scalar" => one(op::masked_fill__Scalar::call(
            s(),
            &arg_tensor(&a[1]),
            scalar(&a[2]),
        )),
        "masked_fill_tensor" => one(op::masked_fill__Tensor::call(
            s(),
            &arg_tensor(&a[1]),
            &arg_tensor(&a[2]),
        )),
        "masked_select" => {
            let mask = arg_tensor(&a[1]);
            one(match out {
                Some(o) => op::masked_select_out::call(s(), &mask, o),
                None => op::masked_select::call(s(), &mask),
            })
        }
        "flip" => one(op::flip::call(s(), &arg_ints(&a[1]))),
        "roll" => one(op::roll::call(s(), &arg_ints(&a[1]), &arg_ints(&a[2]))),
        "tril" | "triu" => {
            let k = arg_int(&a[1]);
            one(match (base, inplace, out) {
                ("tril", true, _) => op::tril_::call(s(), k),
                ("tril", _, Some(o)) => op::tril_out::call(s(), k, o),
                ("tril", _, None) => op::tril::call(s(), k),
                (_, true, _) => op::triu_::call(s(), k),
                (_, _, Some(o)) => op::triu_out::call(s(), k, o),
                (_, _, None) => op::triu::call(s(), k),
            })
        }
        "sort" => {
            let (stable, dim, desc) = (arg_opt_bool(&a[1]), arg_int(&a[2]), arg_bool(&a[3]));
            two(match outs {
                [v, i] => op::sort_values_stable::call(s(), stable, dim, desc, v, i),
                _ => op::sort_stable::call(s(), stable, dim, desc),
            })
        }
        "topk" => {
            let (k, dim, largest, sorted) = (
                arg_int(&a[1]),
                arg_int(&a[2]),
                arg_bool(&a[3]),
                arg_bool(&a[4]),
            );
            two(match outs {
                [v, i] => op::topk_values::call(s(), k, dim, largest, sorted, v, i),
                _ => op::topk::call(s(), k, dim, largest, sorted),
            })
        }
        other => panic!("unknown op {other}"),
    }
}

fn kind_name(k: ErrorKind) -> &'static str {
    k.name()
}

#[test]
fn indexing_kernels_match_pytorch() {
    let _serial = serial();
    let fx = fixture("indexing.json");
    let cases = fx["cases"].as_array().unwrap();
    let mut failures = Vec::new();
    for (n, c) in cases.iter().enumerate() {
        let op = c["op"].as_str().unwrap();
        let args = c["args"].as_array().unwrap();
        let label = format!("indexing case {n} ({op})");
        if known_difference(&label, c).is_some() {
            continue;
        }
        // Built on the target, run, synced, results on the host.
        let result = run_on_target(|| {
            let outs: Vec<Tensor> = c
                .get("out")
                .map(|o| o.as_array().unwrap().iter().map(tensor).collect())
                .unwrap_or_default();
            run(op, args, &outs)
        });
        match (c.get("error"), result) {
            (Some(e), Err(got)) => {
                let (kind, msg) = (e["kind"].as_str().unwrap(), e["message"].as_str().unwrap());
                // Core names the 16-bit floats `at::Half` in conversion errors; PyTorch says `c10::Half`.
                let got_msg = got
                    .message()
                    .replace("at::Half", "c10::Half")
                    .replace("at::BFloat16", "c10::BFloat16");
                if kind != kind_name(got.kind()) || msg != got_msg {
                    failures.push(format!(
                        "{label}: expected {kind}: {msg}\n    got {}: {}",
                        got.kind(),
                        got.message()
                    ));
                }
            }
            (Some(e), Ok(_)) => failures.push(format!("{label}: expected error {e}, got a result")),
            (None, Err(got)) => failures.push(format!("{label}: unexpected error {got}")),
            (None, Ok(ts)) => {
                let expected = c["result"].as_array().unwrap();
                let strides = c["check_strides"].as_bool().unwrap_or(true);
                // Ties and unsorted orders are implementation-defined for unstable sorts.
                let indices_exact = !(op == "sort" && args[1].get("none").is_some());
                for (i, (e, t)) in expected.iter().zip(&ts).enumerate() {
                    if i == 1 && !indices_exact {
                        continue;
                    }
                    if let Err(msg) = compare(e, t, strides, 0.0) {
                        failures.push(format!("{label} output {i}: {msg}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

// ------------------------------------------------------------------------------ properties

fn arange_f32(shape: &[i64]) -> Tensor {
    let n: i64 = shape.iter().product();
    Tensor::from_vec((0..n).map(|x| (x as f32) * 0.5 - 3.0).collect(), shape).unwrap()
}

/// A contiguous tensor holding the values of `t`.
fn contiguous(t: &Tensor) -> Tensor {
    let c = Tensor::allocate(&t.sizes(), t.dtype(), Device::CPU).unwrap();
    copy_values(&c, t);
    c
}

/// The transpose of a fresh contiguous `[cols, rows]` tensor: a non-contiguous `[rows, cols]`.
fn transposed(rows: i64, cols: i64) -> Tensor {
    let base = arange_f32(&[cols, rows]);
    base.as_strided_view(&[rows, cols], &[1, rows], 0).unwrap()
}

/// Asserts that `f` gives the same elements of `x` and of `xc` (on the target, read on the
/// host), naming the call `what`.
fn same_on(x: &Tensor, xc: &Tensor, what: &str, f: impl Fn(&Tensor) -> Result<Tensor>) {
    let strided = values(&host(&f(x).unwrap()));
    assert_eq!(strided, values(&host(&f(xc).unwrap())), "{what}");
}

#[test]
fn strided_inputs_give_the_contiguous_result() {
    let _serial = serial();
    let x_host = transposed(5, 7);
    let (x, xc) = (to_target(x_host.clone()), to_target(contiguous(&x_host)));
    let idx = to_target(Tensor::from_slice(&[4i64, 0, 2, 2]).unwrap());
    same_on(&x, &xc, "index_select", |t| {
        op::index_select::call(t, 0, &idx)
    });
    for dims in [vec![0], vec![1], vec![0, 1]] {
        same_on(&x, &xc, &format!("flip {dims:?}"), |t| {
            op::flip::call(t, &dims)
        });
    }
    same_on(&x, &xc, "roll", |t| op::roll::call(t, &[2, -3], &[0, 1]));
    let sort = |t: &Tensor| {
        let (v, i) = op::sort_stable::call(t, Some(true), 1, true).unwrap();
        (values(&host(&v)), int_values(&host(&i)))
    };
    assert_eq!(sort(&x), sort(&xc));
    let mask = to_target(
        Tensor::from_vec((0..35).map(|i| i % 3 == 0).collect::<Vec<bool>>(), &[5, 7]).unwrap(),
    );
    same_on(&x, &xc, "masked_select", |t| {
        op::masked_select::call(t, &mask)
    });
}

#[test]
fn out_variants_equal_functional_and_inplace_equals_functional() {
    let _serial = serial();
    let x_host = arange_f32(&[4, 5]);
    let x = to_target(x_host.clone());
    let xs = values(&x_host);
    let idx = to_target(Tensor::from_vec(vec![3i64, 0, 1, 1, 2, 0, 0, 3, 3, 1], &[2, 5]).unwrap());
    let src = to_target(arange_f32(&[2, 5]));
    let fresh =
        |shape: &[i64]| to_target(Tensor::allocate(shape, ScalarType::Float, Device::CPU).unwrap());
    // scatter_add: functional vs out= vs in place, and torch's
    // `torch.arange(20.).reshape(4, 5).mul(.5).sub(3).scatter_add(0, idx, src)`.
    let f = op::scatter_add::call(&x, 0, &idx, &src).unwrap();
    let out = fresh(&[4, 5]);
    op::scatter_add_out::call(&x, 0, &idx, &src, &out).unwrap();
    let inplace = to_target(contiguous(&x_host));
    op::scatter_add_::call(&inplace, 0, &idx, &src).unwrap();
    let expected = vec![
        -3.5, -5.0, -2.0, -1.5, -1.0, -0.5, 0.0, -1.5, -0.5, 3.0, 2.0, 2.5, 3.0, 3.5, 3.0, 1.5,
        5.0, 6.0, 7.0, 6.5,
    ];
    assert_eq!(values(&host(&f)), expected);
    assert_eq!(values(&host(&out)), expected);
    assert_eq!(values(&host(&inplace)), expected);
    // index_select out= equals functional: columns 1 and 3.
    let sel = to_target(Tensor::from_slice(&[1i64, 3]).unwrap());
    let out = fresh(&[0]);
    op::index_select_out::call(&x, 1, &sel, &out).unwrap();
    let expected: Vec<f64> = (0..4)
        .flat_map(|r| [xs[r * 5 + 1], xs[r * 5 + 3]])
        .collect();
    assert_eq!(out.sizes().as_slice(), &[4, 2]);
    assert_eq!(values(&host(&out)), expected);
    assert_eq!(
        values(&host(&op::index_select::call(&x, 1, &sel).unwrap())),
        expected
    );
    // tril in place equals functional: the elements with column - row <= 1 kept.
    let f = op::tril::call(&x, 1).unwrap();
    let inplace = to_target(contiguous(&x_host));
    op::tril_::call(&inplace, 1).unwrap();
    let expected: Vec<f64> = (0..20)
        .map(|i| if i % 5 <= i / 5 + 1 { xs[i] } else { 0.0 })
        .collect();
    assert_eq!(values(&host(&f)), expected);
    assert_eq!(values(&host(&inplace)), expected);
}

#[test]
fn meta_tensors_get_shapes_without_data() {
    if cpu_only(CpuOnly::Meta) {
        return;
    }
    let x = Tensor::allocate(&[3, 4], ScalarType::Float, Device::META).unwrap();
    let idx = Tensor::allocate(&[2, 4], ScalarType::Long, Device::META).unwrap();
    let m = meta::gather(&x, 0, &idx, false, Outs::Functional).unwrap();
    assert_eq!(m.output(0).unwrap().sizes.as_slice(), &[2, 4]);
    assert_eq!(m.output(0).unwrap().device, Device::META);
    let m = meta::cat(&[x.clone(), x.clone()], 1, Outs::Functional).unwrap();
    assert_eq!(m.output(0).unwrap().sizes.as_slice(), &[3, 8]);
    let i = Tensor::allocate(&[5], ScalarType::Long, Device::META).unwrap();
    let m = meta::index_tensor(&x, &[None, Some(i)], Outs::Functional).unwrap();
    assert_eq!(m.output(0).unwrap().sizes.as_slice(), &[3, 5]);
    let mask = Tensor::allocate(&[3], ScalarType::Bool, Device::META).unwrap();
    let e = meta::index_tensor(&x, &[Some(mask)], Outs::Functional).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplementedError);
    let m = meta::topk(&x, 2, 1, true, true, Outs::Functional).unwrap();
    assert_eq!(m.output(1).unwrap().dtype, ScalarType::Long);
    assert_eq!(m.output(1).unwrap().sizes.as_slice(), &[3, 2]);
}

#[test]
fn large_contiguous_copies_use_the_parallel_paths() {
    if cpu_only(CpuOnly::Kernel) {
        return;
    }
    // Above the grain size the gather-like kernels split their output across threads; the
    // result must not depend on it.
    let n = 300_000i64;
    let x = Tensor::from_vec((0..n).map(|v| v as f32).collect(), &[n / 100, 100]).unwrap();
    let rev: Vec<i64> = (0..n / 100).rev().collect();
    let idx = Tensor::from_slice(&rev).unwrap();
    let r = cpu::index_select_cpu_(&x, 0, &idx).unwrap();
    let v = values(&r);
    assert_eq!(v[0], ((n / 100 - 1) * 100) as f64);
    assert_eq!(v[(n - 1) as usize], 99.0);
    let cols: Vec<i64> = (0..100).rev().collect();
    let idx = Tensor::from_slice(&cols).unwrap();
    let r = cpu::index_select_cpu_(&x, 1, &idx).unwrap();
    assert_eq!(values(&r)[0..3], [99.0, 98.0, 97.0]);
    let gidx = Tensor::from_vec(
        (0..n).map(|i| (i * 7) % 100).collect::<Vec<i64>>(),
        &[n / 100, 100],
    )
    .unwrap();
    let m = meta::gather(&x, 1, &gidx, false, Outs::Functional).unwrap();
    let out = switchyard_ops::structured::create_out(m.output(0).unwrap()).unwrap();
    cpu::gather_out(&m, &x, 1, &gidx, false, &out).unwrap();
    let v = values(&out);
    for (i, got) in v.iter().enumerate().step_by(997) {
        let row = i as i64 / 100;
        assert_eq!(*got, (row * 100 + (i as i64 * 7) % 100) as f64);
    }
    let _ = Scalar::Int(0);
}

#[test]
fn functional_masked_fill_and_index_put_equal_clone_plus_inplace() {
    let _serial = serial();
    // masked_fill broadcasts `self` with the mask (PyTorch's expand_outplace) and returns a
    // contiguous result; the in-place form cannot broadcast `self`.
    let x_host = transposed(2, 3).as_strided_view(&[3], &[2], 0).unwrap();
    let xs = values(&x_host);
    let x = to_target(x_host);
    let mask =
        to_target(Tensor::from_vec(vec![true, false, true, false, false, true], &[2, 3]).unwrap());
    let got = op::masked_fill_Scalar::call(&x, &mask, Scalar::Float(-1.0)).unwrap();
    assert_eq!(got.sizes().as_slice(), &[2, 3]);
    assert!(got.is_contiguous());
    let expected: Vec<f64> = (0..6)
        .map(|i| {
            if [0, 2, 5].contains(&i) {
                -1.0
            } else {
                xs[i % 3]
            }
        })
        .collect();
    assert_eq!(values(&host(&got)), expected);
    let v = to_target(Tensor::from_vec(vec![9.0f32], &[]).unwrap());
    let got_t = op::masked_fill_Tensor::call(&x, &mask, &v).unwrap();
    let expected_t: Vec<f64> = expected
        .iter()
        .map(|e| if *e == -1.0 { 9.0 } else { *e })
        .collect();
    assert_eq!(values(&host(&got_t)), expected_t);
    let e = finish_one(op::masked_fill__Scalar::call(&x, &mask, Scalar::Float(0.0))).unwrap_err();
    assert!(
        e.message().contains("doesn't match the broadcast shape"),
        "{e}"
    );

    // index_put: a copy with the same layout; `self` untouched.
    let base_host = transposed(3, 4);
    let before = values(&base_host);
    let (base, c) = (
        to_target(base_host.clone()),
        to_target(contiguous(&base_host)),
    );
    let idx = vec![Some(to_target(
        Tensor::from_vec(vec![2i64, 0], &[2]).unwrap(),
    ))];
    let vals = to_target(Tensor::from_vec(vec![5.0f32], &[]).unwrap());
    let r = op::index_put::call(&base, &idx, &vals, false).unwrap();
    assert_eq!(values(&host(&base)), before);
    assert_eq!(r.strides(), base.strides());
    op::index_put_::call(&c, &idx, &vals, false).unwrap();
    // Rows 2 and 0 set to 5.
    let expected: Vec<f64> = before
        .iter()
        .enumerate()
        .map(|(i, v)| if i / 4 == 2 || i / 4 == 0 { 5.0 } else { *v })
        .collect();
    assert_eq!(values(&host(&r)), expected);
    assert_eq!(values(&host(&c)), expected);
    let acc = op::index_put::call(&base, &idx, &vals, true).unwrap();
    let expected: Vec<f64> = before
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if i / 4 == 2 || i / 4 == 0 {
                v + 5.0
            } else {
                *v
            }
        })
        .collect();
    assert_eq!(values(&host(&acc)), expected);
}

/// `nonzero` and `where(condition)` (PyTorch's `condition.nonzero(as_tuple=True)`), against
/// PyTorch 2.15's answers (recorded by hand from `/tmp/torchref`).
#[test]
fn nonzero_and_where_condition_match_pytorch() {
    use switchyard_core::half::{bf16, f16};
    let _serial = serial();
    // The results' sizes, strides and elements, read on the host.
    let ints_of = |t: &Tensor| {
        let h = host(t);
        (h.sizes().to_vec(), h.strides().to_vec(), int_values(&h))
    };
    // A result's sizes, strides (`None`: not compared) and elements.
    let check =
        |t: &Tensor, sizes: &[i64], strides: Option<&[i64]>, elements: &[i64], what: &str| {
            let (got_sizes, got_strides, got) = ints_of(t);
            assert_eq!(got_sizes, sizes, "{what}: sizes");
            if let Some(strides) = strides {
                assert_eq!(got_strides, strides, "{what}: strides");
            }
            assert_eq!(got, elements, "{what}: elements");
        };
    let c = to_target(Tensor::from_data([[0i64, 1, 2], [3, 0, 0]]).unwrap());
    // The schemas, character for character.
    assert_eq!(op::r#where::SCHEMA, "where(Tensor condition) -> Tensor[]");
    assert_eq!(op::nonzero::SCHEMA, "nonzero(Tensor self) -> Tensor");
    assert_eq!(
        op::nonzero_out::SCHEMA,
        "nonzero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"
    );
    assert_eq!(
        op::nonzero_numpy::SCHEMA,
        "nonzero_numpy(Tensor self) -> Tensor[]"
    );
    // [nnz, ndim] coordinates in row-major order, laid out column by column.
    let n = op::nonzero::call(&c).unwrap();
    assert_eq!(n.dtype(), ScalarType::Long);
    check(&n, &[3, 2], Some(&[1, 3]), &[0, 1, 0, 2, 1, 0], "nonzero");
    let t = op::t::call(&c).unwrap();
    assert_eq!(
        ints_of(&op::nonzero::call(&t).unwrap()).2,
        [0, 1, 1, 0, 2, 0]
    );
    // where(c): one Long tensor per dimension, each a contiguous column of nonzero's result.
    let w = op::r#where::call(&c).unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(ints_of(&w[0]), (vec![3], vec![1], vec![0, 0, 1]));
    assert_eq!(ints_of(&w[1]), (vec![3], vec![1], vec![1, 2, 0]));
    if on_cpu() {
        // Views of one storage: a lazy tensor has none.
        assert!(w[0].is_alias_of(&w[1]));
    }
    assert_eq!(
        ints_of(&switchyard_ops::nonzero_numpy(&c).unwrap()[1]).2,
        [1, 2, 0]
    );
    // A 0-dim condition counts as 1-d in where (NumPy's rule); nonzero gives [n, 0].
    let five = to_target(Tensor::from_data(5i64).unwrap());
    let zero = to_target(Tensor::from_data(0i64).unwrap());
    let w = op::r#where::call(&five).unwrap();
    assert_eq!((w.len(), ints_of(&w[0]).2), (1, vec![0]));
    let w = op::r#where::call(&zero).unwrap();
    assert_eq!((w.len(), ints_of(&w[0]).0), (1, vec![0]));
    let n = op::nonzero::call(&five).unwrap();
    check(&n, &[1, 0], Some(&[1, 1]), &[], "nonzero of 5");
    let n = op::nonzero::call(&zero).unwrap();
    check(&n, &[0, 0], Some(&[1, 0]), &[], "nonzero of 0");
    let e = to_target(Tensor::allocate(&[0, 3], ScalarType::Float, Device::CPU).unwrap());
    assert_eq!(ints_of(&op::nonzero::call(&e).unwrap()).0, [0, 2]);
    let w = op::r#where::call(&e).unwrap();
    assert_eq!(w.len(), 2);
    assert!(w.iter().all(|x| ints_of(x).0 == [0]));
    // NaN is non-zero, -0.0 is zero; every dtype.
    let of = |t: Tensor| ints_of(&op::nonzero::call(&to_target(t)).unwrap()).2;
    assert_eq!(of(Tensor::from_slice(&[f64::NAN, 0.0, -0.0]).unwrap()), [0]);
    let want = [1i64, 3];
    assert_eq!(
        of(Tensor::from_slice(&[false, true, false, true]).unwrap()),
        want
    );
    assert_eq!(of(Tensor::from_slice(&[0u8, 1, 0, 2]).unwrap()), want);
    assert_eq!(of(Tensor::from_slice(&[0i8, 1, 0, -2]).unwrap()), want);
    let h = [0.0f32, 1.0, 0.0, 2.0];
    assert_eq!(of(Tensor::from_slice(&h.map(f16::from_f32)).unwrap()), want);
    assert_eq!(
        of(Tensor::from_slice(&h.map(bf16::from_f32)).unwrap()),
        want
    );
    // A float condition for where.
    let w = op::r#where::call(&to_target(Tensor::from_slice(&[0.5f32, 0.0]).unwrap())).unwrap();
    assert_eq!(ints_of(&w[0]).2, [0]);
    // nonzero.out: resize_output's rules, column-major when resized, kept when not; one
    // version bump.
    let out = to_target(Tensor::from_vec(vec![9i64; 5], &[5]).unwrap());
    let version = out.version();
    let r = op::nonzero_out::call(&c, &out).unwrap();
    assert!(r.is_same(&out));
    // (The resize's layout where the target makes it as eager does.)
    let resized_as_eager =
        known_difference("indexing nonzero.out resized strides", &Value::Null).is_none();
    let strides: &[i64] = &[1, 3];
    check(
        &out,
        &[3, 2],
        resized_as_eager.then_some(strides),
        &[0, 1, 0, 2, 1, 0],
        "nonzero.out resized",
    );
    assert_eq!(out.version(), version + 1);
    let out = to_target(Tensor::from_vec(vec![9i64; 6], &[3, 2]).unwrap());
    op::nonzero_out::call(&c, &out).unwrap();
    check(
        &out,
        &[3, 2],
        Some(&[2, 1]),
        &[0, 1, 0, 2, 1, 0],
        "nonzero.out kept",
    );
    // The out= overload's own dtype check (a functionalizing target's `known_difference`).
    if known_difference("indexing nonzero.out float out", &Value::Null).is_none() {
        let float = to_target(Tensor::allocate(&[0], ScalarType::Float, Device::CPU).unwrap());
        let e = finish_one(op::nonzero_out::call(&c, &float)).unwrap_err();
        assert_eq!(
            e.message(),
            "nonzero: Expected out tensor to have scalar type Long but got scalar typeFloat"
        );
    }
    // Memory overlap (a lazy tensor has no memory to overlap).
    if on_cpu() {
        let expanded =
            op::expand::call(&Tensor::from_slice(&[0i64]).unwrap(), &[6], false).unwrap();
        let e = op::nonzero_out::call(&c, &expanded).unwrap_err();
        assert_eq!(
            e.message(),
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation."
        );
        let a = Tensor::from_vec(vec![0i64; 6], &[2, 3]).unwrap();
        let e = op::nonzero_out::call(&a, &a).unwrap_err();
        assert_eq!(
            e.message(),
            "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation."
        );
    }
    // The result's size depends on the values: no Meta kernel (as in PyTorch).
    let m = Tensor::allocate(&[2, 3], ScalarType::Float, Device::META).unwrap();
    assert_eq!(
        op::nonzero::call(&m).unwrap_err().kind(),
        ErrorKind::NotImplementedError
    );
    assert_eq!(
        op::r#where::call(&m).unwrap_err().kind(),
        ErrorKind::NotImplementedError
    );
}

/// `cat` of an empty list has no tensor, so no dispatch key: PyTorch's dispatcher runs the
/// operator's `Undefined` slot (the structured kernel's CompositeExplicitAutogradNonFunctional
/// expansion), whose meta function raises; ours did not find a kernel ("There were no tensor
/// arguments ..."). `cat.out` with an empty list dispatches on `out`'s device and raises the
/// same. The functional call is the same on every device; the out= call runs on the target.
#[test]
fn cat_of_an_empty_list_is_the_meta_functions_error() {
    let _serial = serial();
    let want = "torch.cat(): expected a non-empty list of Tensors";
    let e = op::cat::call(&[], 0).unwrap_err();
    assert_eq!((e.kind(), e.message()), (ErrorKind::ValueError, want));
    assert_eq!(e.operator(), Some("aten::cat"));
    let table = switchyard_dispatch::Dispatcher::singleton()
        .find_schema_or_error("aten::cat")
        .unwrap()
        .dump_table();
    assert!(
        table.contains(
            "Undefined: wrapper_CompositeExplicitAutogradNonFunctional_cat [default backend kernel]"
        ),
        "{table}"
    );
    let out = with_target(|| placed(arange_f32(&[2])));
    let e = finish(op::cat_out::call(&[], 0, &out).map(|t| vec![t])).unwrap_err();
    assert_eq!((e.kind(), e.message()), (ErrorKind::ValueError, want));
    if on_cpu() {
        // (`finish` rebuilds a target's error from its kind and message.)
        assert_eq!(e.operator(), Some("aten::cat.out"));
    }
}
