//! Checks the core rules against answers recorded from PyTorch 2.15
//! (`tools/oracle/core_fixtures.py` wrote `fixtures/torch_core.json`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on failure

use serde_json::Value;
use switchyard_core::promotion::{PromotionArg, result_type};
use switchyard_core::shape::infer_size;
use switchyard_core::{Device, Scalar, ScalarType, Tensor, promote_types};

fn fixtures() -> Value {
    serde_json::from_str(include_str!("fixtures/torch_core.json")).unwrap()
}

fn dtype(name: &str) -> ScalarType {
    ScalarType::parse(name).unwrap()
}

#[test]
fn promote_types_matches_pytorch_for_every_pair() {
    let f = fixtures();
    let table = f["promote_types"].as_array().unwrap();
    assert_eq!(table.len(), 100, "every pair of the 10 dtypes");
    for row in table {
        let (a, b, r) = (
            row[0].as_str().unwrap(),
            row[1].as_str().unwrap(),
            row[2].as_str().unwrap(),
        );
        assert_eq!(
            promote_types(dtype(a), dtype(b)),
            dtype(r),
            "promote_types({a}, {b})"
        );
    }
}

fn arg_tensor(kind: &str, dt: ScalarType) -> Tensor {
    let sizes: &[i64] = if kind == "dim" { &[2] } else { &[] };
    Tensor::allocate(sizes, dt, Device::CPU).unwrap()
}

#[test]
fn result_type_matches_pytorch_for_tensor_and_scalar_tiers() {
    let f = fixtures();
    let cases = f["result_type"].as_array().unwrap();
    assert!(cases.len() > 400);
    for case in cases {
        let args = case["args"].as_array().unwrap();
        let mut tensors = Vec::new();
        let mut scalars = Vec::new();
        for a in args {
            let (kind, what) = (a[0].as_str().unwrap(), a[1].as_str().unwrap());
            if kind == "scalar" {
                scalars.push(match what {
                    "bool" => Scalar::Bool(true),
                    "int" => Scalar::Int(2),
                    _ => Scalar::Float(2.5),
                });
            } else {
                tensors.push(arg_tensor(kind, dtype(what)));
            }
        }
        let mut pargs: Vec<PromotionArg<'_>> = tensors.iter().map(PromotionArg::Tensor).collect();
        pargs.extend(scalars.into_iter().map(PromotionArg::Scalar));
        assert_eq!(
            result_type(&pargs),
            Some(dtype(case["result"].as_str().unwrap())),
            "result_type{:?}",
            args
        );
    }
}

#[test]
fn wrapped_number_tensors_promote_like_scalars() {
    let t = Tensor::from_slice(&[1i32, 2]).unwrap();
    let w = Tensor::wrapped_scalar(Scalar::Float(0.5)).unwrap();
    assert_eq!(w.dtype(), ScalarType::Double);
    assert_eq!(
        result_type(&[PromotionArg::Tensor(&t), PromotionArg::Tensor(&w)]),
        Some(ScalarType::Float)
    );
    let zero_dim = Tensor::scalar_tensor(Scalar::Float(0.5)).unwrap();
    assert_eq!(
        result_type(&[PromotionArg::Tensor(&t), PromotionArg::Tensor(&zero_dim)]),
        Some(ScalarType::Double)
    );
}

fn parse_python_scalar(s: &str) -> Scalar {
    match s {
        "True" => Scalar::Bool(true),
        "False" => Scalar::Bool(false),
        "inf" => Scalar::Float(f64::INFINITY),
        "nan" => Scalar::Float(f64::NAN),
        _ if s.contains('.') || s.contains('e') => Scalar::Float(s.parse().unwrap()),
        _ => Scalar::Int(s.parse().unwrap()),
    }
}

#[test]
fn scalar_conversion_overflow_matches_pytorch() {
    // PyTorch's fill_ converts with Scalar::to<T>() for every dtype except the 16-bit floats
    // (which go through float without a check), so those rows are compared for integers,
    // bool, float and double.
    let f = fixtures();
    let mut checked = 0;
    for case in f["scalar_conversion"].as_array().unwrap() {
        let dt = dtype(case["dtype"].as_str().unwrap());
        if dt.is_reduced_float() {
            continue;
        }
        let s = parse_python_scalar(case["value"].as_str().unwrap());
        match case.get("error") {
            Some(e) => {
                let err = s.check_fits(dt).unwrap_err();
                assert_eq!(err.message(), e.as_str().unwrap(), "{s} -> {dt}");
            }
            None => {
                assert!(!s.overflows(dt), "{s} -> {dt} should fit");
                let expected = &case["ok"];
                let got = switchyard_core::dispatch_dtype!(dt, T => {
                    use switchyard_core::Element;
                    s.to::<T>().unwrap().to_scalar()
                });
                match expected {
                    Value::Bool(b) => assert_eq!(got, Scalar::Bool(*b)),
                    Value::String(x) if x == "nan" => assert!(got.to_f64().is_nan()),
                    Value::String(x) => assert_eq!(
                        got.to_f64(),
                        if x == "inf" {
                            f64::INFINITY
                        } else {
                            f64::NEG_INFINITY
                        }
                    ),
                    Value::Number(n) if n.is_i64() => {
                        assert_eq!(got.to_i64_lossy(), n.as_i64().unwrap(), "{s} -> {dt}")
                    }
                    Value::Number(n) => {
                        assert_eq!(got.to_f64(), n.as_f64().unwrap(), "{s} -> {dt}")
                    }
                    other => panic!("unexpected fixture value {other}"),
                }
            }
        }
        checked += 1;
    }
    assert!(checked > 200);
}

#[test]
fn broadcasting_matches_pytorch_including_error_text() {
    let f = fixtures();
    for case in f["broadcast"].as_array().unwrap() {
        let dims = |k: &str| -> Vec<i64> {
            case[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect()
        };
        let (a, b) = (dims("a"), dims("b"));
        match case.get("add_error") {
            Some(e) => assert_eq!(
                infer_size(&a, &b).unwrap_err().message(),
                e.as_str().unwrap()
            ),
            None => assert_eq!(infer_size(&a, &b).unwrap().to_vec(), dims("ok")),
        }
    }
}

fn build_tensor(case: &Value) -> Tensor {
    let dt = dtype(case["dtype"].as_str().unwrap());
    let shape: Vec<i64> = case["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    if case["device"] == "meta" {
        return Tensor::allocate(&shape, dt, Device::META).unwrap();
    }
    let values = case["values"].as_array().unwrap();
    let as_f64 = |v: &Value| -> f64 {
        match v {
            Value::String(s) => s.parse().unwrap(),
            Value::Number(n) => n.as_f64().unwrap(),
            Value::Bool(b) => f64::from(u8::from(*b)),
            _ => unreachable!(),
        }
    };
    let transposed = case["transposed"].as_bool().unwrap_or(false);
    // A transposed case is stored in its printed (logical) order; build the contiguous
    // transpose and view it transposed, so the printer walks real strides.
    let (build_shape, data): (Vec<i64>, Vec<f64>) = if transposed {
        let (r, c) = (shape[0] as usize, shape[1] as usize);
        let flat: Vec<f64> = values.iter().map(as_f64).collect();
        let mut t = vec![0.0; r * c];
        for i in 0..r {
            for j in 0..c {
                t[j * r + i] = flat[i * c + j];
            }
        }
        (vec![shape[1], shape[0]], t)
    } else {
        (shape.clone(), values.iter().map(as_f64).collect())
    };
    let t = switchyard_core::dispatch_dtype!(dt, T => {
        use switchyard_core::Element;
        let v: Vec<T> = data.iter().map(|x| T::from_f64_lossy(*x)).collect();
        Tensor::from_vec(v, &build_shape).unwrap()
    });
    if transposed {
        t.as_strided_view(&shape, &[1, shape[0]], 0).unwrap()
    } else {
        t
    }
}

#[test]
fn display_matches_pytorch_repr() {
    let f = fixtures();
    let cases = f["print"].as_array().unwrap();
    assert!(cases.len() >= 50);
    for case in cases {
        let t = build_tensor(case);
        if case["expr"]
            .as_str()
            .unwrap()
            .contains("requires_grad=True")
        {
            t.set_requires_grad(true).unwrap();
        }
        assert_eq!(
            t.to_string(),
            case["str"].as_str().unwrap(),
            "repr of {}",
            case["expr"]
        );
    }
}
