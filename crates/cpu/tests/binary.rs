//! The binary pointwise operators against PyTorch's answers recorded by
//! `tools/oracle/binary.py`, called through the dispatcher (boxed, every overload by its schema
//! name) on CPU tensors and on `Meta` tensors (shapes and dtypes only), plus property tests:
//! strided views equal their contiguous copies, out= equals functional, in-place equals
//! functional, large (threaded) inputs equal small ones element by element.
//!
//! Float tolerances are the shared ones of `linalg_support.rs` (f32: 2e-5 relative, f16: 2e-3,
//! bf16: 1.6e-2, f64: 1e-12): PyTorch's vectorised `add` with `alpha` fuses the multiply-add.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "linalg_support.rs"]
mod support;
// This suite runs on CPU tensors (the lazy backend's tests run it on lazy ones).
use support::CPU_TARGET as TARGET;
use support::{finish, placed, serial, with_target};

use serde_json::Value;
use switchyard_core::{Device, IValue, Result, Scalar, ScalarType, Tensor};
use switchyard_dispatch::Dispatcher;
use switchyard_ops::op;

/// Builds the boxed argument of a fixture entry (`meta`: tensors become `Meta` tensors).
fn arg(v: &Value, meta: bool) -> IValue {
    if support::is_tensor(v) {
        let t = support::tensor(v);
        if meta {
            return Tensor::allocate_strided(&t.sizes(), &t.strides(), t.dtype(), Device::META)
                .unwrap()
                .into();
        }
        return t.into();
    }
    if v.get("none").is_some() {
        return IValue::None;
    }
    if let Some(s) = v.get("str") {
        return s.as_str().unwrap().into();
    }
    match support::scalar(v) {
        Scalar::Bool(b) => b.into(),
        Scalar::Int(i) => i.into(),
        Scalar::Float(f) => f.into(),
    }
}

/// Calls the case's overload through the dispatcher's boxed API.
fn call(case: &Value, meta: bool) -> Result<Vec<Tensor>> {
    let name = format!("aten::{}", case["op"].as_str().unwrap());
    let handle = Dispatcher::singleton().find_schema_or_error(&name)?;
    let mut stack: Vec<IValue> = case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| arg(a, meta))
        .collect();
    handle.call_boxed(&mut stack)?;
    Ok(vec![stack[0].as_tensor()?.clone()])
}

fn cases() -> Vec<Value> {
    let fixture = support::fixture("binary.json");
    support::cases(&fixture).to_vec()
}

#[test]
fn binary_ops_match_pytorch() {
    let cases = cases();
    assert!(cases.len() > 500, "{} cases", cases.len());
    support::check_all(&cases, true, |c| call(c, false));
}

/// Every successful case also runs on `Meta` tensors: same dtype and shape, no data.
#[test]
fn meta_tensors_give_pytorchs_shapes_and_dtypes() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let mut failures = Vec::new();
    for case in cases() {
        let Some(results) = case["expect"].get("results") else {
            continue;
        };
        let name = case["name"].as_str().unwrap();
        match call(&case, true) {
            Ok(ts) => {
                let want = &results[0];
                let t = &ts[0];
                let dtype = support::dtype_of(want["dtype"].as_str().unwrap());
                let sizes: Vec<i64> = want["sizes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect();
                // Strides too: TensorIterator lays out Meta outputs as CPU ones.
                let strides_ok = want.get("strides").is_none_or(|s| {
                    t.numel() <= 1
                        || s.as_array()
                            .unwrap()
                            .iter()
                            .map(|v| v.as_i64().unwrap())
                            .eq(t.strides())
                });
                if !t.is_meta()
                    || t.dtype() != dtype
                    || t.sizes().as_slice() != sizes.as_slice()
                    || !strides_ok
                {
                    failures.push(format!(
                        "{name}: {:?} {} {:?} {:?}",
                        t.device(),
                        t.dtype(),
                        t.sizes(),
                        t.strides()
                    ));
                }
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every error case fails on Meta tensors with the CPU's (PyTorch's) error: Meta kernels make
/// the checks of their CPU twins (`support::cpu_only_error` lists what only a computing kernel
/// can refuse).
#[test]
fn meta_tensors_fail_as_the_cpu_does() {
    if support::cpu_only(support::CpuOnly::Meta) {
        return;
    }
    let cases = cases();
    let (checked, failures) = support::meta_error_parity(&cases, |c| call(c, true));
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 150, "{checked} error cases");
}

/// `n` values in [-6, 6.5] of `dtype`, built on the host (see [`on_target`]).
fn ramp(n: usize, dtype: ScalarType) -> Tensor {
    let v: Vec<f64> = (0..n)
        .map(|i| ((i * 37 + 11) % 101) as f64 / 8.0 - 6.0)
        .collect();
    let t = Tensor::from_vec(v, &[n as i64]).unwrap();
    op::_to_copy::call(&t, Some(dtype), None, None, None, false, None).unwrap()
}

/// [`ramp`] on the target.
fn on_target(n: usize, dtype: ScalarType) -> Tensor {
    support::to_target(ramp(n, dtype))
}

/// A contiguous copy through `clone`.
fn contiguous(t: &Tensor) -> Tensor {
    op::clone::call(t, None).unwrap()
}

/// `a` and `b` (on the target) have the same dtype, sizes and elements (NaN equal to NaN),
/// read on the host after the sync.
fn assert_same(a: &Tensor, b: &Tensor, what: &str) {
    assert_eq!(a.dtype(), b.dtype(), "{what}");
    assert_eq!(a.sizes(), b.sizes(), "{what}");
    let (a, b) = (support::host(a), support::host(b));
    let (x, y) = (a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap());
    for (i, (p, q)) in x.iter().zip(&y).enumerate() {
        assert!(
            p == q || (p.is_nan() && q.is_nan()),
            "{what}: element {i}: {p} != {q}"
        );
    }
}

type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;

fn binaries() -> Vec<(&'static str, Binary)> {
    vec![
        ("add", |a, b| op::add_Tensor::call(a, b, Scalar::Int(2))),
        ("sub", |a, b| op::sub_Tensor::call(a, b, Scalar::Int(1))),
        ("mul", |a, b| op::mul_Tensor::call(a, b)),
        ("div", |a, b| op::div_Tensor::call(a, b)),
        ("div floor", |a, b| {
            op::div_Tensor_mode::call(a, b, Some("floor"))
        }),
    ]
}

/// Strided (transposed, broadcast) and large (threaded) inputs give the same values as
/// contiguous copies; the engine's direct, blocked and threaded paths agree.
#[test]
fn strided_and_threaded_inputs_equal_contiguous_copies() {
    let _serial = support::serial();
    for dtype in [ScalarType::Float, ScalarType::Half, ScalarType::Double] {
        let a = support::to_target(
            ramp(400 * 300, dtype)
                .as_strided_view(&[300, 400], &[1, 300], 0)
                .unwrap(),
        );
        let b = op::add_Scalar::call(&on_target(400, dtype), Scalar::Float(7.25), Scalar::Int(1))
            .unwrap();
        for (name, f) in binaries() {
            let strided = f(&a, &b).unwrap();
            let dense = f(
                &contiguous(&a),
                &contiguous(&op::expand::call(&b, &[300, 400], false).unwrap()),
            )
            .unwrap();
            assert_same(&strided, &dense, &format!("{name} {dtype}"));
        }
    }
}

/// out= and in-place variants equal the functional one.
#[test]
fn out_and_inplace_equal_functional() {
    let _serial = support::serial();
    let a = on_target(50_000, ScalarType::Float);
    let b = op::add_Scalar::call(
        &on_target(50_000, ScalarType::Float),
        Scalar::Float(7.25),
        Scalar::Int(1),
    )
    .unwrap();
    let f = op::mul_Tensor::call(&a, &b).unwrap();
    let out = support::to_target(Tensor::allocate(&[0], ScalarType::Float, Device::CPU).unwrap());
    op::mul_out::call(&a, &b, &out).unwrap();
    assert_same(&out, &f, "mul out=");
    let c = contiguous(&a);
    let r = op::mul__Tensor::call(&c, &b).unwrap();
    assert!(r.is_same(&c));
    assert_same(&c, &f, "mul_");
    let f = op::div_Tensor_mode::call(&a, &b, Some("trunc")).unwrap();
    let c = contiguous(&a);
    op::div__Tensor_mode::call(&c, &b, Some("trunc")).unwrap();
    assert_same(&c, &f, "div_ trunc");
}

/// In-place with the operand being `self` itself (full overlap, which PyTorch allows; a
/// transposed alias is a partial-overlap error in PyTorch that the shared iterator config does
/// not implement yet).
#[test]
fn inplace_with_self_as_operand() {
    let _serial = support::serial();
    let a =
        support::to_target(Tensor::from_vec((0..16).map(|i| i as f32).collect(), &[4, 4]).unwrap());
    let squares = Tensor::from_vec((0..16).map(|i| (i * i) as f32).collect(), &[4, 4]).unwrap();
    let expected = op::mul_Tensor::call(&a, &a).unwrap();
    assert_same(&expected, &squares, "a * a");
    op::mul__Tensor::call(&a, &a).unwrap();
    assert_same(&a, &squares, "a *= a");
}

/// Small in-place calls, where `self` is both the output and an input element for element
/// (the tiny-call fast path reads each element just before overwriting it), equal the
/// functional results; so do calls whose other operand is `self` too.
#[test]
fn small_inplace_calls_equal_functional() {
    let _serial = support::serial();
    for n in [1usize, 7, 300] {
        let a = op::add_Scalar::call(
            &on_target(n, ScalarType::Float),
            Scalar::Float(0.5),
            Scalar::Int(1),
        )
        .unwrap();
        let b = op::add_Scalar::call(
            &on_target(n, ScalarType::Float),
            Scalar::Float(2.25),
            Scalar::Int(1),
        )
        .unwrap();
        let expected = op::add_Tensor::call(&a, &b, Scalar::Int(3)).unwrap();
        let c = contiguous(&a);
        op::add__Tensor::call(&c, &b, Scalar::Int(3)).unwrap();
        assert_same(&c, &expected, &format!("add_ alpha=3, n={n}"));

        let expected = op::div_Tensor::call(&b, &a).unwrap();
        let c = contiguous(&b);
        op::div__Tensor::call(&c, &a).unwrap();
        assert_same(&c, &expected, &format!("div_, n={n}"));

        // `self` on both sides: x + 3x = 4x, x - x = 0.
        let expected = op::mul_Scalar::call(&a, Scalar::Int(4)).unwrap();
        let c = contiguous(&a);
        op::add__Tensor::call(&c, &c, Scalar::Int(3)).unwrap();
        assert_same(&c, &expected, &format!("x.add_(x, alpha=3), n={n}"));
        let c = contiguous(&a);
        op::sub__Tensor::call(&c, &c, Scalar::Int(1)).unwrap();
        let zeros = Tensor::from_vec(vec![0.0f32; n], &[n as i64]).unwrap();
        assert_same(&c, &zeros, &format!("x.sub_(x), n={n}"));

        // An integer self with a float result cannot be written in place (PyTorch's error).
        let i = on_target(n, ScalarType::Int);
        let err = support::finish_one(op::add__Tensor::call(&i, &a, Scalar::Int(1))).unwrap_err();
        assert!(
            err.to_string()
                .contains("can't be cast to the desired output type"),
            "{err}"
        );
    }
}

/// `where.self` / `where.self_out` are not registered (the generator emits the kernel name
/// `where` unescaped), so their kernels are tested directly; values checked against
/// `torch.where` by hand.
#[test]
fn where_kernels() {
    // Calls the CPU kernels directly (the overloads are not registered).
    if support::cpu_only(support::CpuOnly::Kernel) {
        return;
    }
    use switchyard_cpu::native;
    let cond = Tensor::from_vec(vec![true, false, true, false], &[2, 2]).unwrap();
    let a = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    let b = Tensor::from_vec(vec![0.5f32, 1.5, 2.5, 3.5], &[2, 2]).unwrap();
    let r = native::r#where(&cond, &a, &b).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1.0, 1.5, 1.0, 3.5]);
    // A uint8 condition still works (deprecated in PyTorch, with a warning).
    let c8 = Tensor::from_vec(vec![0u8, 7], &[2]).unwrap();
    let r = native::r#where(&c8, &a, &Tensor::wrapped_scalar(Scalar::Int(9)).unwrap()).unwrap();
    assert_eq!(r.dtype(), ScalarType::Int);
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![9, 2]);
    let cf = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let e = native::r#where(&cf, &a, &a).unwrap_err();
    assert_eq!(
        e.message(),
        "where expected condition to be a boolean tensor, but got a tensor with dtype Float"
    );
    let out = Tensor::allocate(&[0], ScalarType::Long, Device::CPU).unwrap();
    let e = native::where_self_out(&cond, &a, &b, &out).unwrap_err();
    assert_eq!(e.message(), "Expected out type to be Float but got Long");
    let out = Tensor::allocate(&[0], ScalarType::Float, Device::CPU).unwrap();
    native::where_self_out(&cond, &a, &b, &out).unwrap();
    assert_eq!(out.sizes().as_slice(), &[2, 2]);
}

/// Half and BFloat16 inputs into a wider `out` compute in their common dtype and are then cast
/// (PyTorch's TensorIterator computes into a temporary of the common dtype on the CPU): the
/// result is rounded to Half (BFloat16) first, though the loops compute these in `f32`. By
/// hand: 1 + 2^-11 lies halfway between the Halfs 1 and 1 + 2^-10 and rounds to even, 1;
/// 2048 + 1 = 2049 rounds to 2048 (Halfs are 2 apart there); 256 + 1 rounds to 256 in BFloat16
/// (8 significant bits); sqrt(2) in Half is 1448 * 2^-10 = 1.4140625 (f32: 1.4142135).
#[test]
fn reduced_precision_results_are_rounded_before_a_wider_out() {
    let _serial = serial();
    let typed = |v: &[f32], dtype: ScalarType| {
        let t = Tensor::from_slice(v).unwrap();
        op::_to_copy::call(&t, Some(dtype), None, None, None, false, None).unwrap()
    };
    let run = |f: &dyn Fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>,
               a: &[f32],
               b: &[f32],
               dtype: ScalarType| {
        let out = finish(with_target(|| {
            let (a, b) = (placed(typed(a, dtype)), placed(typed(b, dtype)));
            let out = placed(typed(&[0.0; 2], ScalarType::Float));
            f(&a, &b, &out).map(|r| vec![r])
        }))
        .unwrap();
        assert_eq!(out[0].dtype(), ScalarType::Float);
        out[0].to_vec::<f32>().unwrap()
    };
    let add = |a: &Tensor, b: &Tensor, out: &Tensor| op::add_out::call(a, b, Scalar::Int(1), out);
    let mul = |a: &Tensor, b: &Tensor, out: &Tensor| op::mul_out::call(a, b, out);
    let sqrt = |a: &Tensor, _: &Tensor, out: &Tensor| op::sqrt_out::call(a, out);
    let eps = 1.0 / 2048.0;
    assert_eq!(
        run(&add, &[1.0, 2048.0], &[eps, 1.0], ScalarType::Half),
        [1.0, 2048.0]
    );
    // 3 * 683 = 2049: 2048 in Half.
    assert_eq!(
        run(&mul, &[3.0, 1.0], &[683.0, eps], ScalarType::Half),
        [2048.0, eps]
    );
    assert_eq!(
        run(&add, &[256.0, 1.0], &[1.0, 0.0], ScalarType::BFloat16),
        [256.0, 1.0]
    );
    assert_eq!(
        run(&sqrt, &[2.0, 4.0], &[0.0, 0.0], ScalarType::Half),
        [1.4140625, 2.0]
    );
    // The same inputs into a Half `out` give the same values (no proxy, no cast).
    let half_out = finish(with_target(|| {
        let a = placed(typed(&[1.0, 2048.0], ScalarType::Half));
        let b = placed(typed(&[eps, 1.0], ScalarType::Half));
        let out = placed(typed(&[0.0; 2], ScalarType::Half));
        op::add_out::call(&a, &b, Scalar::Int(1), &out).map(|r| vec![r])
    }))
    .unwrap();
    let half_out = switchyard_ops::TensorOps::to_dtype(&half_out[0], ScalarType::Float).unwrap();
    assert_eq!(half_out.to_vec::<f32>().unwrap(), [1.0, 2048.0]);
}
