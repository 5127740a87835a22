//! The view-copy operators and the scatter family against PyTorch 2.15
//! (`tools/oracle/view_copies.py` wrote `fixtures/view_copies.json`), through the dispatcher
//! on CPU and Meta tensors: every `<view>_copy` and its out= overload on every view case of
//! `views.json`, `narrow_copy` (PyTorch's own CPU kernel and its words), and
//! `slice_scatter` / `select_scatter` / `diagonal_scatter` / `as_strided_scatter` and their
//! out= overloads (negative dimensions, indices and bounds, every dtype, mismatched `src`).
//!
//! A `_copy` result has the view's elements but its own contiguous storage: writing to it
//! leaves the input as it was, and it does not share the input's version counter. A Meta case
//! expects what its CPU twin gives (sizes, strides, dtype; the same error): PyTorch's Meta
//! kernels of these operators are Python decompositions that skip or reword some checks, and
//! this crate's Meta kernels refuse what the CPU kernels refuse, word for word.

use super::views_support::*;
use serde_json::Value;
use switchyard_core::{Result, Scalar, ScalarType, Tensor};
use switchyard_ops::op;

/// What a call returned.
enum Out {
    One(Tensor),
    Many(Vec<Tensor>),
}

fn flag(v: &Value) -> bool {
    v.as_bool().unwrap_or(false)
}

/// Runs the case's operator on `t` (and `src`, `outs` where it takes them).
fn run(c: &Value, t: &Tensor, src: Option<&Tensor>, outs: &[Tensor]) -> Result<Out> {
    let a = &c["args"];
    let op_name = c["op"].as_str().unwrap();
    let one = |r: Result<Tensor>| r.map(Out::One);
    let many = |r: Result<Vec<Tensor>>| r.map(Out::Many);
    let listed = |r: Result<()>| r.map(|()| Out::Many(outs.to_vec()));
    let out = || &outs[0];
    let src = || src.unwrap();
    let (dim, index) = (|| int(&a["dim"]), || int(&a["index"]));
    let (start, end, step) = (
        || opt_int(&a["start"]),
        || opt_int(&a["end"]),
        || int(&a["step"]),
    );
    let (offset, dim1, dim2) = (|| int(&a["offset"]), || int(&a["dim1"]), || int(&a["dim2"]));
    let (size, stride, storage_offset) = (
        || int_list(&a["size"]),
        || int_list(&a["stride"]),
        || opt_int(&a["storage_offset"]),
    );
    let view_dtype = || dtype(a["dtype"].as_str().unwrap());
    match op_name {
        "view_copy" => one(op::view_copy::call(t, &size())),
        "view_copy.out" => one(op::view_copy_out::call(t, &size(), out())),
        "view_copy.dtype" => one(op::view_copy_dtype::call(t, view_dtype())),
        "view_copy.dtype_out" => one(op::view_copy_dtype_out::call(t, view_dtype(), out())),
        "expand_copy" => one(op::expand_copy::call(t, &size(), flag(&a["implicit"]))),
        "expand_copy.out" => one(op::expand_copy_out::call(
            t,
            &size(),
            flag(&a["implicit"]),
            out(),
        )),
        "transpose_copy.int" => one(op::transpose_copy_int::call(
            t,
            int(&a["dim0"]),
            int(&a["dim1"]),
        )),
        "transpose_copy.int_out" => one(op::transpose_copy_int_out::call(
            t,
            int(&a["dim0"]),
            int(&a["dim1"]),
            out(),
        )),
        "t_copy" => one(op::t_copy::call(t)),
        "t_copy.out" => one(op::t_copy_out::call(t, out())),
        "permute_copy" => one(op::permute_copy::call(t, &int_list(&a["dims"]))),
        "permute_copy.out" => one(op::permute_copy_out::call(t, &int_list(&a["dims"]), out())),
        "squeeze_copy" => one(op::squeeze_copy::call(t)),
        "squeeze_copy.out" => one(op::squeeze_copy_out::call(t, out())),
        "squeeze_copy.dim" => one(op::squeeze_copy_dim::call(t, dim())),
        "squeeze_copy.dim_out" => one(op::squeeze_copy_dim_out::call(t, dim(), out())),
        "squeeze_copy.dims" => one(op::squeeze_copy_dims::call(t, &int_list(&a["dim"]))),
        "squeeze_copy.dims_out" => one(op::squeeze_copy_dims_out::call(
            t,
            &int_list(&a["dim"]),
            out(),
        )),
        "unsqueeze_copy" => one(op::unsqueeze_copy::call(t, dim())),
        "unsqueeze_copy.out" => one(op::unsqueeze_copy_out::call(t, dim(), out())),
        "slice_copy.Tensor" => one(op::slice_copy_Tensor::call(
            t,
            dim(),
            start(),
            end(),
            step(),
        )),
        "slice_copy.Tensor_out" => one(op::slice_copy_Tensor_out::call(
            t,
            dim(),
            start(),
            end(),
            step(),
            out(),
        )),
        "select_copy.int" => one(op::select_copy_int::call(t, dim(), index())),
        "select_copy.int_out" => one(op::select_copy_int_out::call(t, dim(), index(), out())),
        "narrow_copy" => one(op::narrow_copy::call(
            t,
            dim(),
            int(&a["start"]),
            int(&a["length"]),
        )),
        "narrow_copy.out" => one(op::narrow_copy_out::call(
            t,
            dim(),
            int(&a["start"]),
            int(&a["length"]),
            out(),
        )),
        "unfold_copy" => one(op::unfold_copy::call(
            t,
            int(&a["dimension"]),
            int(&a["size"]),
            int(&a["step"]),
        )),
        "unfold_copy.out" => one(op::unfold_copy_out::call(
            t,
            int(&a["dimension"]),
            int(&a["size"]),
            int(&a["step"]),
            out(),
        )),
        "diagonal_copy" => one(op::diagonal_copy::call(t, offset(), dim1(), dim2())),
        "diagonal_copy.out" => one(op::diagonal_copy_out::call(
            t,
            offset(),
            dim1(),
            dim2(),
            out(),
        )),
        "as_strided_copy" => one(op::as_strided_copy::call(
            t,
            &size(),
            &stride(),
            storage_offset(),
        )),
        "as_strided_copy.out" => one(op::as_strided_copy_out::call(
            t,
            &size(),
            &stride(),
            storage_offset(),
            out(),
        )),
        "split_copy.Tensor" => many(op::split_copy_Tensor::call(t, int(&a["split_size"]), dim())),
        "split_copy.Tensor_out" => listed(op::split_copy_Tensor_out::call(
            t,
            int(&a["split_size"]),
            dim(),
            outs,
        )),
        "split_with_sizes_copy" => many(op::split_with_sizes_copy::call(
            t,
            &int_list(&a["split_sizes"]),
            dim(),
        )),
        "split_with_sizes_copy.out" => listed(op::split_with_sizes_copy_out::call(
            t,
            &int_list(&a["split_sizes"]),
            dim(),
            outs,
        )),
        "unbind_copy.int" => many(op::unbind_copy_int::call(t, dim())),
        "unbind_copy.int_out" => listed(op::unbind_copy_int_out::call(t, dim(), outs)),
        "alias_copy" => one(op::alias_copy::call(t)),
        "alias_copy.out" => one(op::alias_copy_out::call(t, out())),
        "detach_copy" => one(op::detach_copy::call(t)),
        "detach_copy.out" => one(op::detach_copy_out::call(t, out())),
        "slice_scatter" => one(op::slice_scatter::call(
            t,
            src(),
            dim(),
            start(),
            end(),
            step(),
        )),
        "slice_scatter.out" => one(op::slice_scatter_out::call(
            t,
            src(),
            dim(),
            start(),
            end(),
            step(),
            out(),
        )),
        "select_scatter" => one(op::select_scatter::call(t, src(), dim(), index())),
        "select_scatter.out" => one(op::select_scatter_out::call(
            t,
            src(),
            dim(),
            index(),
            out(),
        )),
        "diagonal_scatter" => one(op::diagonal_scatter::call(
            t,
            src(),
            offset(),
            dim1(),
            dim2(),
        )),
        "diagonal_scatter.out" => one(op::diagonal_scatter_out::call(
            t,
            src(),
            offset(),
            dim1(),
            dim2(),
            out(),
        )),
        "as_strided_scatter" => one(op::as_strided_scatter::call(
            t,
            src(),
            &size(),
            &stride(),
            storage_offset(),
        )),
        "as_strided_scatter.out" => one(op::as_strided_scatter_out::call(
            t,
            src(),
            &size(),
            &stride(),
            storage_offset(),
            out(),
        )),
        other => panic!("no runner for {other}"),
    }
}

/// Errors that the views' own Meta kernels word as PyTorch's Meta kernels do, not as the CPU
/// kernels (`as_strided` of a negative size; `views.rs` checks the view itself): there the
/// Meta twin expects PyTorch's Meta error.
const WORDED_AS_PYTORCH_META: [&str; 1] = ["numel: integer multiplication overflow"];

/// The Meta twin of a CPU case's expectation: the same error (with Meta's type names), or the
/// same geometry on the meta device without values.
fn on_meta(expect: &Value, pytorch_meta: &Value) -> Value {
    if let Some(err) = pytorch_meta.get("error")
        && WORDED_AS_PYTORCH_META.contains(&err["msg"].as_str().unwrap())
    {
        return pytorch_meta.clone();
    }
    let mut e = expect.clone();
    if let Some(err) = e.get_mut("error") {
        let msg = err["msg"].as_str().unwrap().to_string();
        let msg = ScalarType::ALL.iter().fold(msg, |m, dt| {
            m.replace(
                &format!("torch.{}Tensor", dt.name()),
                &format!("Meta{}Type", dt.name()),
            )
        });
        err["msg"] = Value::String(msg);
        return e;
    }
    let descs: Vec<&mut Value> = match (e.get("list").is_some(), &mut e) {
        (true, e) => e["list"].as_array_mut().unwrap().iter_mut().collect(),
        (false, e) => vec![&mut e["tensor"]],
    };
    for d in descs {
        d["device"] = Value::String("meta".into());
        d["values"] = Value::Null;
    }
    e
}

fn is_out_case(c: &Value) -> bool {
    !c["out"].is_null()
}

/// The out= tensors of a case: one per listed spec, on the case's device.
fn outs_of(c: &Value) -> Vec<Tensor> {
    let device = &c["self"]["device"];
    let mut with_device = |s: &Value| {
        let mut s = s.clone();
        s["device"] = device.clone();
        make(&s)
    };
    match &c["out"] {
        Value::Null => Vec::new(),
        Value::Array(specs) => specs.iter().map(&mut with_device).collect(),
        spec => vec![with_device(spec)],
    }
}

/// A CPU case on a target other than the CPU: its tensors built there, the call through the
/// dispatcher, the target synced; results and `self` afterwards compared with
/// [`check_on_target`] (no version counters: functionalization gives a lazy tensor's writes
/// its own bookkeeping), or the error.
fn check_case_on_target(c: &Value, expect: &Value) {
    let ctx = format!("{} (on {})", context(c), target_name());
    let (t, result) = with_target(|| {
        let t = make(&c["self"]);
        let src = c.get("src").map(|s| {
            let mut s = s.clone();
            s["device"] = c["self"]["device"].clone();
            make(&s)
        });
        let outs = outs_of(c);
        let r = run(c, &t, src.as_ref(), &outs);
        (t, r)
    });
    let results = result.map(|o| match o {
        Out::One(o) => vec![o],
        Out::Many(v) => v,
    });
    let hosts = finish(results.clone().map(|mut v| {
        v.push(t.clone());
        v
    }));
    if let Some(err) = expect.get("error") {
        match hosts {
            Err(e) => check_error(&e, err, &ctx),
            Ok(_) => panic!("{ctx}: expected error {err}"),
        }
        return;
    }
    let mut hosts = hosts.unwrap_or_else(|e| panic!("{ctx}: unexpected error {e}"));
    let results = results.unwrap();
    let self_host = hosts.pop().unwrap();
    let descs: Vec<Value> = match (expect.get("tensor"), expect.get("list")) {
        (Some(d), _) => vec![d.clone()],
        (_, Some(l)) => l.as_array().unwrap().clone(),
        _ => panic!("{ctx}: result kind differs from {expect}"),
    };
    assert_eq!(results.len(), descs.len(), "{ctx}: number of outputs");
    for (i, ((o, h), d)) in results.iter().zip(&hosts).zip(&descs).enumerate() {
        check_on_target(o, h, d, &format!("{ctx} output {i}"));
    }
    check_on_target(
        &t,
        &self_host,
        &c["self_after"],
        &format!("{ctx} (self afterwards)"),
    );
    // A copy is not a view: writing to it leaves `self` alone.
    for (i, r) in results.iter().enumerate() {
        if r.numel() == 0 {
            continue;
        }
        op::fill__Scalar::call(r, Scalar::Int(1)).unwrap();
        let after = finish_one(Ok(t.clone())).unwrap();
        assert_eq!(
            values(&after),
            values(&self_host),
            "{ctx} output {i}: writing to the result changed self"
        );
    }
}

fn check_case(c: &Value, expect: &Value) {
    if !on_cpu() {
        return check_case_on_target(c, expect);
    }
    let ctx = context(c);
    let t = make(&c["self"]);
    let src = c.get("src").map(|s| {
        let mut s = s.clone();
        s["device"] = c["self"]["device"].clone();
        make(&s)
    });
    let outs = outs_of(c);
    let versions: Vec<u32> = outs.iter().map(Tensor::version).collect();
    let result = run(c, &t, src.as_ref(), &outs);
    if let Some(err) = expect.get("error") {
        match result {
            Err(e) => check_error(&e, err, &ctx),
            Ok(_) => panic!("{ctx}: expected error {err}"),
        }
        return;
    }
    let out = result.unwrap_or_else(|e| panic!("{ctx}: unexpected error {e}"));
    let results = match (&out, expect.get("tensor"), expect.get("list")) {
        (Out::One(o), Some(desc), _) => {
            check_tensor(o, desc, Some(&t), &ctx);
            vec![o.clone()]
        }
        (Out::Many(v), _, Some(descs)) => {
            let descs = descs.as_array().unwrap();
            assert_eq!(v.len(), descs.len(), "{ctx}: number of outputs");
            for (i, (o, d)) in v.iter().zip(descs).enumerate() {
                check_tensor(o, d, Some(&t), &format!("{ctx} output {i}"));
            }
            v.clone()
        }
        _ => panic!("{ctx}: result kind differs from {expect}"),
    };
    if is_out_case(c) {
        // out= returns its out argument and bumps its version once.
        for (i, (o, before)) in outs.iter().zip(&versions).enumerate() {
            assert_eq!(o.version(), before + 1, "{ctx}: version of out {i}");
        }
        if let Out::One(r) = &out {
            assert!(r.is_same(&outs[0]), "{ctx}: returns out");
        }
    }
    if !t.is_meta() {
        check_tensor(
            &t,
            &c["self_after"],
            None,
            &format!("{ctx} (self afterwards)"),
        );
    }
    // A copy is not a view: its own version counter, and writes to it leave `self` alone.
    for (i, r) in results.iter().enumerate() {
        let ctx = format!("{ctx} output {i}");
        assert!(
            !r.version_counter().is_shared_with(t.version_counter()),
            "{ctx}: shares self's version counter"
        );
        if r.is_meta() || r.numel() == 0 {
            continue;
        }
        let before = values(&t);
        op::fill__Scalar::call(r, Scalar::Int(1)).unwrap();
        assert_eq!(
            values(&t),
            before,
            "{ctx}: writing to the result changed self"
        );
    }
}

/// The text of a caught panic.
fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn view_copies_and_scatters_match_pytorch_on_cpu_and_meta() {
    let _serial = serial();
    let f = fixture(include_str!("../fixtures/view_copies.json"));
    let cases = f["cases"].as_array().unwrap();
    assert!(cases.len() > 2000, "fixture has {} cases", cases.len());
    let mut seen = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for pair in cases.chunks(2) {
        let (cpu_case, meta_case) = (&pair[0], &pair[1]);
        seen.insert(cpu_case["op"].as_str().unwrap());
        if !on_cpu() {
            // The CPU cases on the target (the Meta cases are the CPU suite's).
            let label = format!("view_copies {}", cpu_case["op"].as_str().unwrap());
            if known_difference(&label, cpu_case).is_some() {
                continue;
            }
            if let Err(p) = std::panic::catch_unwind(|| check_case(cpu_case, &cpu_case["expect"])) {
                failures.push(panic_message(p));
            }
            continue;
        }
        for (c, e) in [
            (cpu_case, cpu_case["expect"].clone()),
            (
                meta_case,
                on_meta(&cpu_case["expect"], &meta_case["expect"]),
            ),
        ] {
            let r = std::panic::catch_unwind(|| check_case(c, &e));
            if let Err(p) = r {
                failures.push(panic_message(p));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Every view-copy and scatter operator of ops.yaml, functional and out=.
    assert_eq!(seen.len(), 50, "{seen:?}");
}

/// `narrow_copy.out` into an `out` of the right sizes and other strides: the elements land
/// where `out`'s strides put them. (PyTorch's CPU kernel copies blocks of bytes as if `out`
/// were contiguous: `narrow_copy.out(arange(6).view(2, 3), 1, 1, 2, out=empty(2, 2).t())`
/// leaves `out` as `[[1, 4], [2, 5]]` instead of `[[1, 2], [4, 5]]`; its Meta kernel keeps
/// the strides too.)
#[test]
fn narrow_copy_out_follows_the_strides_of_out() {
    let _serial = serial();
    let x = to_target(Tensor::from_vec((0..6).map(|v| v as f32).collect(), &[2, 3]).unwrap());
    let out_base = to_target(Tensor::from_vec(vec![0.0f32; 4], &[2, 2]).unwrap());
    let out = op::t::call(&out_base).unwrap();
    let r = op::narrow_copy_out::call(&x, 1, 1, 2, &out).unwrap();
    assert!(r.is_same(&out));
    assert_eq!(out.strides().as_slice(), &[1, 2]);
    assert_eq!(
        host(&out).to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 4.0, 5.0]
    );
    // The write went through `out`'s strides into its base: [[1, 4], [2, 5]].
    assert_eq!(
        host(&out_base).to_vec::<f32>().unwrap(),
        vec![1.0, 4.0, 2.0, 5.0]
    );
    let m = Tensor::allocate(&[2, 3], ScalarType::Float, switchyard_core::Device::META).unwrap();
    let mo = op::t::call(
        &Tensor::allocate(&[2, 2], ScalarType::Float, switchyard_core::Device::META).unwrap(),
    )
    .unwrap();
    op::narrow_copy_out::call(&m, 1, 1, 2, &mo).unwrap();
    assert_eq!(mo.strides().as_slice(), &[1, 2]);
}

/// An out= tensor on another device than the result is refused after the resize, as PyTorch's
/// generated out= kernels (`copy_arg`) refuse it.
#[test]
fn view_copy_out_refuses_an_out_on_another_device() {
    if cpu_only(CpuOnly::Meta) {
        return;
    }
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let meta_out =
        Tensor::allocate(&[0], ScalarType::Float, switchyard_core::Device::META).unwrap();
    let e = op::t_copy_out::call(&x, &meta_out).unwrap_err();
    assert_eq!(e.kind().name(), "RuntimeError");
    assert_eq!(
        e.message(),
        "Expected out tensor to have device cpu, but got meta instead"
    );
}
