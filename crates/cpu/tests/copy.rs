//! The copy operators against PyTorch 2.15 (`tools/oracle/copy_ops.py` wrote
//! `fixtures/copy.json`): `copy_` across every dtype pair, layouts, broadcasting and overlap;
//! `clone` / `contiguous` / `_to_copy` / `to` with memory formats; `fill_`, `zero_`, `fill`;
//! `copy`; the `*_scatter` operators and the list out= view copies. Plus property tests of the
//! fast paths against the general engine.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod views_support;

use serde_json::Value;
use switchyard_core::{Device, MemoryFormat, Result, Scalar, ScalarType, Tensor};
use switchyard_cpu::native as cpu;
use switchyard_ops::native as ops;
use views_support::*;
// This suite runs on CPU tensors (the lazy backend's tests run its fixture test on lazy ones).
use views_support::CPU_TARGET as TARGET;

fn format(v: &Value) -> Option<MemoryFormat> {
    v.as_str().map(|s| MemoryFormat::parse(s).unwrap())
}

fn opt_dtype(v: &Value) -> Option<ScalarType> {
    v.as_str().map(dtype)
}

fn opt_device(v: &Value) -> Option<Device> {
    v.as_str().map(|s| Device::parse(s).unwrap())
}

fn scalar(v: &Value) -> Scalar {
    match v {
        Value::Bool(b) => Scalar::Bool(*b),
        Value::Number(n) if n.is_i64() => Scalar::Int(n.as_i64().unwrap()),
        Value::Number(n) => Scalar::Float(n.as_f64().unwrap()),
        Value::String(s) => Scalar::Float(s.parse().unwrap()),
        other => panic!("bad scalar {other}"),
    }
}

/// The source of a `copy_` case: the spec's tensor, or explicit values.
fn source(case: &Value) -> Tensor {
    let spec = &case["src"];
    let Some(vals) = case.get("src_values").and_then(Value::as_array) else {
        return make(spec);
    };
    let dt = dtype(spec["dtype"].as_str().unwrap());
    if vals[0].is_string() {
        let f: Vec<f64> = vals
            .iter()
            .map(|v| v.as_str().unwrap().parse().unwrap())
            .collect();
        tensor_of(&f, dt)
    } else {
        Tensor::from_vec(
            vals.iter().map(|v| v.as_i64().unwrap()).collect(),
            &[vals.len() as i64],
        )
        .unwrap()
    }
}

/// A view of `base` with the geometry `g`, reinterpreted as `dt` when given.
fn view_of(base: &Tensor, g: &Value, dt: &Value) -> Tensor {
    let v = base
        .as_strided_view(
            &int_list(&g["sizes"]),
            &int_list(&g["strides"]),
            int(&g["offset"]),
        )
        .unwrap();
    match dt.as_str() {
        Some(d) => ops::view_dtype(&v, dtype(d)).unwrap(),
        None => v,
    }
}

/// The kernel the dispatcher would choose for `fill_.Scalar` on this device.
fn fill_scalar_(t: &Tensor, v: Scalar) -> Result<Tensor> {
    if t.is_meta() {
        ops::fill_meta__scalar(t, v)
    } else {
        cpu::fill__scalar(t, v)
    }
}

/// Runs a case; returns the outputs and the tensor they are compared against for aliasing.
fn run(c: &Value) -> Result<(Vec<Tensor>, Vec<Tensor>, bool)> {
    let op = c["op"].as_str().unwrap();
    let one = |r: Result<Tensor>, base: &Tensor| r.map(|o| (vec![o], vec![base.clone()], false));
    match op {
        "copy_shared" | "fill_alias" => {
            let base = make(&c["base"]);
            let dst = view_of(&base, &c["dst"], &c["dst_dtype"]);
            if op == "copy_shared" {
                let src = view_of(&base, &c["src"], &c["src_dtype"]);
                ops::copy_(&dst, &src, false)?;
            } else {
                let value = view_of(&base, &c["value"], &Value::Null);
                cpu::fill__tensor(&dst, &value)?;
            }
            return Ok((vec![base], vec![], false));
        }
        "_to_cpu" => {
            let ts: Vec<Tensor> = c["tensors"].as_array().unwrap().iter().map(make).collect();
            let out = ops::_to_cpu(&ts)?;
            return Ok((out, ts, true));
        }
        _ => {}
    }
    let t = make(&c["self"]);
    match op {
        "copy_" => one(ops::copy_(&t, &source(c), false), &t),
        "clone" => one(ops::clone(&t, format(&c["memory_format"])), &t),
        "contiguous" => one(
            ops::contiguous(&t, format(&c["memory_format"]).unwrap()),
            &t,
        ),
        "_to_copy" => one(
            ops::_to_copy(
                &t,
                opt_dtype(&c["dtype"]),
                None,
                opt_device(&c["device"]),
                None,
                false,
                format(&c["memory_format"]),
            ),
            &t,
        ),
        "to.dtype" => one(
            ops::to_dtype(
                &t,
                dtype(c["dtype"].as_str().unwrap()),
                false,
                c["copy"].as_bool().unwrap(),
                format(&c["memory_format"]),
            ),
            &t,
        ),
        "to.device" => one(
            ops::to_device(
                &t,
                opt_device(&c["device"]).unwrap(),
                dtype(c["dtype"].as_str().unwrap()),
                false,
                c["copy"].as_bool().unwrap(),
                format(&c["memory_format"]),
            ),
            &t,
        ),
        "to.other" => one(
            ops::to_other(
                &t,
                &make(&c["other"]),
                false,
                c["copy"].as_bool().unwrap(),
                None,
            ),
            &t,
        ),
        "to.dtype_layout" => one(
            ops::to_dtype_layout(
                &t,
                opt_dtype(&c["dtype"]),
                None,
                opt_device(&c["device"]),
                None,
                false,
                c["copy"].as_bool().unwrap(),
                None,
            ),
            &t,
        ),
        "fill_.Scalar" => one(fill_scalar_(&t, scalar(&c["value"])), &t),
        "fill.Scalar" => one(ops::fill_scalar(&t, scalar(&c["value"])), &t),
        "fill_.Tensor" => {
            let v = make(&c["value"]);
            let r = if t.is_meta() {
                ops::fill_meta__tensor(&t, &v)
            } else {
                cpu::fill__tensor(&t, &v)
            };
            one(r, &t)
        }
        "fill.Tensor" => one(ops::fill_tensor(&t, &make(&c["value"])), &t),
        "zero_" => one(
            if t.is_meta() {
                ops::zero_meta_(&t)
            } else {
                cpu::zero_(&t)
            },
            &t,
        ),
        "copy" => {
            let src = make(&c["src"]);
            one(
                if t.is_meta() {
                    ops::copy_meta(&t, &src, false)
                } else {
                    ops::copy(&t, &src, false)
                },
                &t,
            )
        }
        "slice_scatter" => one(
            ops::slice_scatter(
                &t,
                &make(&c["src"]),
                int(&c["dim"]),
                opt_int(&c["start"]),
                opt_int(&c["end"]),
                int(&c["step"]),
            ),
            &t,
        ),
        "select_scatter" => one(
            ops::select_scatter(&t, &make(&c["src"]), int(&c["dim"]), int(&c["index"])),
            &t,
        ),
        "diagonal_scatter" => one(
            ops::diagonal_scatter(
                &t,
                &make(&c["src"]),
                int(&c["offset"]),
                int(&c["dim1"]),
                int(&c["dim2"]),
            ),
            &t,
        ),
        "as_strided_scatter" => one(
            ops::as_strided_scatter(
                &t,
                &make(&c["src"]),
                &int_list(&c["size"]),
                &int_list(&c["stride"]),
                opt_int(&c["storage_offset"]),
            ),
            &t,
        ),
        "unbind_copy.int_out" | "split_copy.Tensor_out" | "split_with_sizes_copy.out" => {
            let outs: Vec<Tensor> = c["out"].as_array().unwrap().iter().map(make).collect();
            let r = match op {
                "unbind_copy.int_out" => ops::unbind_copy_int_out(&t, int(&c["dim"]), &outs),
                "split_copy.Tensor_out" => {
                    ops::split_copy_Tensor_out(&t, int(&c["split_size"]), int(&c["dim"]), &outs)
                }
                _ => ops::split_with_sizes_copy_out(
                    &t,
                    &int_list(&c["split_sizes"]),
                    int(&c["dim"]),
                    &outs,
                ),
            };
            if let (Err(_), Some(after)) = (&r, c.get("outs_after")) {
                // Outputs before the failing one were resized (and written) already.
                for (o, d) in outs.iter().zip(after.as_array().unwrap()) {
                    assert_eq!(o.sizes().as_slice(), int_list(&d["sizes"]).as_slice());
                }
            }
            r.map(|()| (outs, vec![], true))
        }
        other => panic!("no runner for {other}"),
    }
}

/// `view_of` through the dispatcher (a tensor of a target has no storage to view by hand).
fn view_of_dispatched(base: &Tensor, g: &Value, dt: &Value) -> Result<Tensor> {
    use switchyard_ops::op;
    let v = op::as_strided::call(
        base,
        &int_list(&g["sizes"]),
        &int_list(&g["strides"]),
        Some(int(&g["offset"])),
    )?;
    match dt.as_str() {
        Some(d) => op::view_dtype::call(&v, dtype(d)),
        None => Ok(v),
    }
}

/// Runs a case through the dispatcher, the path of a target other than the CPU (inside
/// `with_target`, so its tensors are built there); returns the outputs (for `copy_shared` and
/// `fill_alias`, the written base).
fn run_dispatched(c: &Value) -> Result<Vec<Tensor>> {
    use switchyard_ops::op;
    let op_name = c["op"].as_str().unwrap();
    match op_name {
        "copy_shared" | "fill_alias" => {
            let base = make(&c["base"]);
            let dst = view_of_dispatched(&base, &c["dst"], &c["dst_dtype"])?;
            if op_name == "copy_shared" {
                let src = view_of_dispatched(&base, &c["src"], &c["src_dtype"])?;
                op::copy_::call(&dst, &src, false)?;
            } else {
                let value = view_of_dispatched(&base, &c["value"], &Value::Null)?;
                op::fill__Tensor::call(&dst, &value)?;
            }
            return Ok(vec![base]);
        }
        "_to_cpu" => {
            let ts: Vec<Tensor> = c["tensors"].as_array().unwrap().iter().map(make).collect();
            return op::_to_cpu::call(&ts);
        }
        _ => {}
    }
    let t = make(&c["self"]);
    let one = |r: Result<Tensor>| r.map(|o| vec![o]);
    let copy = || c["copy"].as_bool().unwrap();
    match op_name {
        "copy_" => {
            // Explicit source values are built on the CPU (`make` places its tensors).
            let src = source(c);
            let src = if src.is_cpu() { placed(src) } else { src };
            one(op::copy_::call(&t, &src, false))
        }
        "clone" => one(op::clone::call(&t, format(&c["memory_format"]))),
        "contiguous" => one(op::contiguous::call(
            &t,
            format(&c["memory_format"]).unwrap(),
        )),
        "_to_copy" => one(op::_to_copy::call(
            &t,
            opt_dtype(&c["dtype"]),
            None,
            opt_device(&c["device"]),
            None,
            false,
            format(&c["memory_format"]),
        )),
        "to.dtype" => one(op::to_dtype::call(
            &t,
            dtype(c["dtype"].as_str().unwrap()),
            false,
            copy(),
            format(&c["memory_format"]),
        )),
        "to.device" => one(op::to_device::call(
            &t,
            opt_device(&c["device"]).unwrap(),
            dtype(c["dtype"].as_str().unwrap()),
            false,
            copy(),
            format(&c["memory_format"]),
        )),
        "to.other" => one(op::to_other::call(
            &t,
            &make(&c["other"]),
            false,
            copy(),
            None,
        )),
        "to.dtype_layout" => one(op::to_dtype_layout::call(
            &t,
            opt_dtype(&c["dtype"]),
            None,
            opt_device(&c["device"]),
            None,
            false,
            copy(),
            None,
        )),
        "fill_.Scalar" => one(op::fill__Scalar::call(&t, scalar(&c["value"]))),
        "fill.Scalar" => one(op::fill_Scalar::call(&t, scalar(&c["value"]))),
        "fill_.Tensor" => one(op::fill__Tensor::call(&t, &make(&c["value"]))),
        "fill.Tensor" => one(op::fill_Tensor::call(&t, &make(&c["value"]))),
        "zero_" => one(op::zero_::call(&t)),
        "copy" => one(op::copy::call(&t, &make(&c["src"]), false)),
        "slice_scatter" => one(op::slice_scatter::call(
            &t,
            &make(&c["src"]),
            int(&c["dim"]),
            opt_int(&c["start"]),
            opt_int(&c["end"]),
            int(&c["step"]),
        )),
        "select_scatter" => one(op::select_scatter::call(
            &t,
            &make(&c["src"]),
            int(&c["dim"]),
            int(&c["index"]),
        )),
        "diagonal_scatter" => one(op::diagonal_scatter::call(
            &t,
            &make(&c["src"]),
            int(&c["offset"]),
            int(&c["dim1"]),
            int(&c["dim2"]),
        )),
        "as_strided_scatter" => one(op::as_strided_scatter::call(
            &t,
            &make(&c["src"]),
            &int_list(&c["size"]),
            &int_list(&c["stride"]),
            opt_int(&c["storage_offset"]),
        )),
        "unbind_copy.int_out" | "split_copy.Tensor_out" | "split_with_sizes_copy.out" => {
            let outs: Vec<Tensor> = c["out"].as_array().unwrap().iter().map(make).collect();
            match op_name {
                "unbind_copy.int_out" => op::unbind_copy_int_out::call(&t, int(&c["dim"]), &outs),
                "split_copy.Tensor_out" => op::split_copy_Tensor_out::call(
                    &t,
                    int(&c["split_size"]),
                    int(&c["dim"]),
                    &outs,
                ),
                _ => op::split_with_sizes_copy_out::call(
                    &t,
                    &int_list(&c["split_sizes"]),
                    int(&c["dim"]),
                    &outs,
                ),
            }
            .map(|()| outs)
        }
        other => panic!("no runner for {other}"),
    }
}

/// A CPU case on a target other than the CPU: built there, run through the dispatcher,
/// synced; results compared with [`check_on_target`], or the error.
fn check_case_on_target(c: &Value) {
    let ctx = format!("{} {c} (on {})", c["op"], target_name());
    let ctx = &ctx[..ctx.len().min(400)];
    let result = with_target(|| run_dispatched(c));
    let outs = result.clone();
    let hosts = finish(result);
    if let Some(err) = c["expect"].get("error") {
        match hosts {
            Err(e) => check_error(&e, err, ctx),
            Ok(_) => panic!("{ctx}: expected error {err}"),
        }
        return;
    }
    let hosts = hosts.unwrap_or_else(|e| panic!("{ctx}: unexpected error {e}"));
    let outs = outs.unwrap();
    let descs: Vec<Value> = match (c["expect"].get("tensor"), c["expect"].get("list")) {
        (Some(d), _) => vec![d.clone()],
        (_, Some(l)) => l.as_array().unwrap().clone(),
        _ => panic!("{ctx}: no expectation"),
    };
    assert_eq!(outs.len(), descs.len(), "{ctx}: number of outputs");
    for (i, ((o, h), d)) in outs.iter().zip(&hosts).zip(&descs).enumerate() {
        check_on_target(o, h, d, &format!("{ctx} output {i}"));
    }
}

fn check_case(c: &Value) {
    if !on_cpu() {
        return check_case_on_target(c);
    }
    let ctx = format!("{} {}", c["op"], c);
    let ctx = &ctx[..ctx.len().min(400)];
    let result = run(c);
    if let Some(err) = c["expect"].get("error") {
        match result {
            Err(e) => check_error(&e, err, ctx),
            Ok(_) => panic!("{ctx}: expected error {err}"),
        }
        return;
    }
    let (outs, bases, is_list) = result.unwrap_or_else(|e| panic!("{ctx}: unexpected error {e}"));
    let descs: Vec<Value> = match (c["expect"].get("tensor"), c["expect"].get("list")) {
        (Some(d), _) => vec![d.clone()],
        (_, Some(l)) => l.as_array().unwrap().clone(),
        _ => panic!("{ctx}: no expectation"),
    };
    assert_eq!(outs.len(), descs.len(), "{ctx}: number of outputs");
    assert!(is_list || outs.len() == 1);
    for (i, (o, d)) in outs.iter().zip(&descs).enumerate() {
        let ctx = format!("{ctx} output {i}");
        let base = bases.get(i).or(bases.first());
        check_tensor(o, d, base, &ctx);
        if let Some(sv) = d.get("storage_values").filter(|v| !v.is_null()) {
            let n = o.storage().unwrap().nbytes() / o.element_size();
            let whole = o.as_strided_view(&[n as i64], &[1], 0).unwrap();
            assert_eq!(values(&whole), expected_values(sv), "{ctx}: storage");
        }
    }
}

#[test]
fn copies_match_pytorch() {
    let f = fixture(include_str!("fixtures/copy.json"));
    let cases = f["cases"].as_array().unwrap();
    assert!(cases.len() > 1300, "fixture has {} cases", cases.len());
    let cpu_errors = cpu_errors(cases);
    let _serial = serial();
    if !on_cpu() {
        // The CPU cases on the target (the Meta cases are the CPU suite's).
        let on_meta = |c: &&Value| c.to_string().contains("\"device\":\"meta\"");
        let mut failures = Vec::new();
        for c in cases.iter().filter(|c| !on_meta(c)) {
            let label = format!("copy {}", c["op"].as_str().unwrap());
            if known_difference(&label, c).is_some() {
                continue;
            }
            if let Err(p) = std::panic::catch_unwind(|| check_case(c)) {
                failures.push(
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default(),
                );
            }
        }
        assert!(
            failures.is_empty(),
            "{} differences on {}:\n{}",
            failures.len(),
            target_name(),
            failures.join("\n")
        );
        return;
    }
    let mut stricter = 0;
    for c in cases {
        match cpu_twin_error(&cpu_errors, c) {
            Some(err) => {
                stricter += 1;
                let ctx = format!("{} {c} (Meta twin of a CPU error)", c["op"]);
                match run(c) {
                    Err(e) => check_error(&e, err, &ctx),
                    Ok(_) => panic!("{ctx}: expected error {err}"),
                }
            }
            None => check_case(c),
        }
    }
    // fill_ on Meta with values that overflow the dtype (PyTorch's `fill_meta_` accepts them).
    assert!(
        stricter >= 2,
        "{stricter} Meta cases held to their CPU twin's error"
    );
}

/// A case without its expectation, on the CPU: the key of [`cpu_errors`].
fn cpu_key(c: &Value) -> String {
    let mut c = c.clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("expect");
    }
    c.to_string()
        .replace("\"device\":\"meta\"", "\"device\":\"cpu\"")
}

/// The expected errors of the CPU cases, by [`cpu_key`].
fn cpu_errors(cases: &[Value]) -> std::collections::HashMap<String, &Value> {
    cases
        .iter()
        .filter(|c| !c.to_string().contains("\"device\":\"meta\""))
        .filter_map(|c| Some((cpu_key(c), c["expect"].get("error")?)))
        .collect()
}

/// The error of the CPU case identical to Meta case `c` but for the device, when PyTorch
/// accepted `c` on Meta although it refuses it on the CPU.
///
/// A deliberate difference from PyTorch: our Meta kernels make the checks of their CPU twins
/// (shape inference must refuse what execution refuses), where some of PyTorch's Meta
/// kernels check less (`fill_meta_` does not check the value's range).
fn cpu_twin_error<'a>(
    cpu_errors: &std::collections::HashMap<String, &'a Value>,
    c: &Value,
) -> Option<&'a Value> {
    if c["expect"].get("error").is_some() || !c.to_string().contains("\"device\":\"meta\"") {
        return None;
    }
    cpu_errors.get(&cpu_key(c)).copied()
}

/// Elementwise reference: every element converted one by one through `f64` / `i64`.
fn reference_copy(dst: &Tensor, src: &Tensor) -> Vec<Val> {
    let n = dst.numel() as usize;
    let expanded = ops::expand(src, &dst.sizes(), false).unwrap();
    let src_vals = values(&expanded);
    let as_dst = |v: &Val| -> Val {
        let t = match v {
            Val::F(x) => tensor_of(&[*x], dst.dtype()),
            Val::I(x) => {
                let s = Tensor::from_vec(vec![*x], &[1]).unwrap();
                let d = Tensor::allocate(&[1], dst.dtype(), Device::CPU).unwrap();
                ops::copy_(&d, &s, false).unwrap();
                d
            }
            Val::B(b) => tensor_of(&[f64::from(u8::from(*b))], dst.dtype()),
        };
        values(&t).remove(0)
    };
    let out: Vec<Val> = src_vals.iter().map(as_dst).collect();
    assert_eq!(out.len(), n);
    out
}

/// Large copies take the threaded paths (memcpy, tiled transpose, engine); they must equal
/// the element-by-element result.
#[test]
fn large_copies_equal_elementwise_reference() {
    if cpu_only(CpuOnly::Kernel) {
        return;
    }
    let n = 300i64;
    let vals: Vec<f64> = (0..n * n)
        .map(|i| ((i * 37) % 1001) as f64 - 500.0)
        .collect();
    for (src_dt, dst_dt) in [
        (ScalarType::Float, ScalarType::Float),
        (ScalarType::Int, ScalarType::Double),
        (ScalarType::Half, ScalarType::Float),
        (ScalarType::Double, ScalarType::BFloat16),
        (ScalarType::Short, ScalarType::Short),
    ] {
        let base = tensor_of(&vals, src_dt);
        let square = ops::view(&base, &[n, n]).unwrap();
        let sources = [
            square.clone(),
            ops::t(&square).unwrap(),
            ops::slice(&square, 1, Some(1), None, 2).unwrap(),
            ops::expand(&ops::select(&square, 0, 3).unwrap(), &[n, n], false).unwrap(),
        ];
        for src in &sources {
            let dst = Tensor::allocate(&src.sizes(), dst_dt, Device::CPU).unwrap();
            ops::copy_(&dst, src, false).unwrap();
            assert_eq!(
                values(&dst),
                reference_copy(&dst, src),
                "{src_dt:?} -> {dst_dt:?}"
            );
            // A transposed destination goes through the general engine.
            let dst_t =
                ops::t(&Tensor::allocate(&src.sizes(), dst_dt, Device::CPU).unwrap()).unwrap();
            let src_t = ops::t(src).unwrap();
            ops::copy_(&dst_t, &src_t, false).unwrap();
            assert_eq!(values(&dst_t), values(&ops::t(&dst).unwrap()));
        }
    }
}

/// `clone`, `contiguous` and `_to_copy` give the same elements as the input for every layout;
/// `clone` preserves dense strides.
#[test]
fn clones_preserve_elements_and_dense_layouts() {
    use switchyard_ops::op;
    let _serial = serial();
    let base =
        to_target(Tensor::from_vec((0..120).map(|x| x as f32).collect(), &[2, 3, 4, 5]).unwrap());
    let layouts = [
        base.clone(),
        op::permute::call(&base, &[0, 2, 3, 1]).unwrap(),
        op::slice_Tensor::call(&base, 3, None, None, 2).unwrap(),
        op::contiguous::call(&base, MemoryFormat::ChannelsLast).unwrap(),
    ];
    for t in &layouts {
        let elements = host(t).to_vec::<f32>().unwrap();
        for fmt in [
            None,
            Some(MemoryFormat::Contiguous),
            Some(MemoryFormat::ChannelsLast),
        ] {
            let c = op::clone::call(t, fmt).unwrap();
            assert_eq!(host(&c).to_vec::<f32>().unwrap(), elements, "{fmt:?}");
            if on_cpu() {
                // Memory: a lazy tensor has none to share.
                assert!(!c.is_alias_of(t));
            }
        }
        let g = t.geometry();
        if ops::is_non_overlapping_and_dense(g.sizes(), g.strides()) {
            assert_eq!(op::clone::call(t, None).unwrap().strides(), t.strides());
        }
    }
}

#[test]
fn copy_from_and_resize_and_detach() {
    if cpu_only(CpuOnly::Storage) {
        return;
    }
    let src = Tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let dst = Tensor::allocate(&[0], ScalarType::Double, Device::CPU).unwrap();
    let r = ops::_copy_from_and_resize(&src, &dst).unwrap();
    assert!(r.is_same(&dst));
    assert_eq!(dst.sizes().as_slice(), &[2, 3]);
    assert_eq!(
        dst.to_vec::<f64>().unwrap(),
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    let dst2 = Tensor::allocate(&[3], ScalarType::Long, Device::CPU).unwrap();
    let row = ops::select(&src, 0, 1).unwrap();
    assert!(ops::_copy_from(&row, &dst2, false).unwrap().is_same(&dst2));
    assert_eq!(dst2.to_vec::<i64>().unwrap(), vec![4, 5, 6]);
    let meta = Tensor::allocate(&[2, 3], ScalarType::Float, Device::META).unwrap();
    assert!(ops::_copy_from(&src, &meta, false).unwrap().is_same(&meta));
    let e = ops::_copy_from(&meta, &dst2, false).unwrap_err();
    assert_eq!(e.message(), "Cannot copy out of meta tensor; no data!");
    // detach_ is a no-op below autograd; detach is an alias sharing the version counter.
    assert!(ops::detach_(&src).unwrap().is_same(&src));
    let d = ops::detach(&src).unwrap();
    assert!(d.is_alias_of(&src) && d.version_counter().is_shared_with(src.version_counter()));
}

/// `copy_` into a tensor followed by reading it back equals `_to_copy` (the functional form).
#[test]
fn inplace_copy_equals_functional_to_copy() {
    use switchyard_ops::op;
    let _serial = serial();
    let src = to_target(
        Tensor::from_vec((0..24).map(|x| x as f64 * 0.75 - 7.0).collect(), &[2, 3, 4]).unwrap(),
    );
    let src = op::permute::call(&src, &[1, 2, 0]).unwrap();
    for dt in ScalarType::ALL {
        let f = op::_to_copy::call(&src, Some(dt), None, None, None, false, None).unwrap();
        let dst = to_target(Tensor::allocate(&src.sizes(), dt, Device::CPU).unwrap());
        op::copy_::call(&dst, &src, false).unwrap();
        assert_eq!(values(&host(&f)), values(&host(&dst)), "{dt:?}");
        // `_to_copy` keeps a dense input's strides, as `clone` does (where the target lays
        // results out as eager does).
        if known_difference("copy _to_copy strides of a permuted tensor", &Value::Null).is_none() {
            assert_eq!(
                f.strides(),
                op::clone::call(&src, None).unwrap().strides(),
                "{dt:?}"
            );
        }
    }
}

/// The tiled transpose and the memcpy path also serve views of one storage (disjoint halves).
#[test]
fn fast_paths_within_one_storage() {
    if cpu_only(CpuOnly::Kernel) {
        return;
    }
    let n = 80i64;
    let base = Tensor::from_vec((0..2 * n * n).map(|x| x as i32).collect(), &[2 * n * n]).unwrap();
    let first = ops::view(
        &ops::slice(&base, 0, Some(0), Some(n * n), 1).unwrap(),
        &[n, n],
    )
    .unwrap();
    let second = ops::view(
        &ops::slice(&base, 0, Some(n * n), None, 1).unwrap(),
        &[n, n],
    )
    .unwrap();
    let expected = ops::clone(&ops::t(&second).unwrap(), Some(MemoryFormat::Contiguous)).unwrap();
    ops::copy_(&first, &ops::t(&second).unwrap(), false).unwrap();
    assert_eq!(
        first.to_vec::<i32>().unwrap(),
        expected.to_vec::<i32>().unwrap()
    );
    ops::copy_(&second, &first, false).unwrap();
    assert_eq!(
        second.to_vec::<i32>().unwrap(),
        first.to_vec::<i32>().unwrap()
    );
}

/// `fill_` and `zero_` on large dense, transposed and expanded tensors.
#[test]
fn large_fills_cover_every_element() {
    if cpu_only(CpuOnly::Kernel) {
        return;
    }
    let n = 400i64;
    let base = Tensor::allocate(&[n, n], ScalarType::Half, Device::CPU).unwrap();
    let views = [
        base.clone(),
        ops::t(&base).unwrap(),
        ops::slice(&base, 1, None, None, 3).unwrap(),
        ops::expand(&ops::select(&base, 0, 0).unwrap(), &[n, n], false).unwrap(),
    ];
    for v in &views {
        cpu::fill__scalar(&base, Scalar::Float(-1.5)).unwrap();
        cpu::fill__scalar(v, Scalar::Float(2.5)).unwrap();
        assert!(v.to_f64_vec().unwrap().iter().all(|x| *x == 2.5));
        cpu::zero_(v).unwrap();
        assert!(v.to_f64_vec().unwrap().iter().all(|x| *x == 0.0));
    }
    let meta = Tensor::allocate(&[n], ScalarType::Float, Device::META).unwrap();
    assert!(ops::zero_meta_(&meta).unwrap().is_same(&meta));
}
