//! The Meta kernels of the unstructured operators (those PyTorch implements per backend and
//! covers on its Meta device with Python meta registrations): each call runs through the
//! dispatcher on CPU tensors and on Meta tensors of the same sizes, strides and dtypes, and the
//! Meta results must have the CPU results' sizes, strides and dtypes, and the Meta errors the
//! CPU errors, word for word. The CPU kernels' results and errors are checked against PyTorch
//! by the fixture tests (`unary.rs`, `binary.rs`, `reduce.rs`, `indexing.rs`, ...); this file
//! checks that the Meta kernels agree with them, including on the layouts and errors that the
//! fixtures do not reach. (TensorIterator's memory-overlap checks are the exception: PyTorch
//! skips them on Meta tensors, and so does `iter_meta`; `iterator_rules.rs` covers that.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Linked for its kernel registrations.
use switchyard_core::{Device, ErrorKind, Result, Scalar, ScalarType, Tensor};
use switchyard_cpu as _;
use switchyard_ops::op;

/// A tensor of `sizes` on `device` whose elements are `i % modulo` (`i` counting in row-major
/// order), converted to `dtype`; Meta tensors have the same geometry and no data.
fn ramp(device: Device, dtype: ScalarType, sizes: &[i64], modulo: i64) -> Tensor {
    if device.is_meta() {
        return Tensor::allocate(sizes, dtype, device).unwrap();
    }
    let n: i64 = sizes.iter().product();
    let values: Vec<f64> = (0..n).map(|i| (i % modulo) as f64).collect();
    let t = Tensor::from_vec(values, sizes).unwrap();
    op::_to_copy::call(&t, Some(dtype), None, None, None, false, None).unwrap()
}

/// Floats in `[0, 1)` (valid probabilities), on `device`.
fn probabilities(device: Device, dtype: ScalarType, sizes: &[i64]) -> Tensor {
    let t = ramp(device, ScalarType::Double, sizes, 7);
    let t = op::div_Scalar::call(&t, Scalar::Float(7.0)).unwrap();
    op::_to_copy::call(&t, Some(dtype), None, None, None, false, None).unwrap()
}

fn float(device: Device, sizes: &[i64]) -> Tensor {
    ramp(device, ScalarType::Float, sizes, 5)
}

/// `[rows, cols]` as the transpose of a contiguous `[cols, rows]` tensor.
fn transposed(device: Device, dtype: ScalarType, rows: i64, cols: i64) -> Tensor {
    op::t::call(&ramp(device, dtype, &[cols, rows], 5)).unwrap()
}

fn long(device: Device, values: &[i64]) -> Tensor {
    if device.is_meta() {
        return Tensor::allocate(&[values.len() as i64], ScalarType::Long, device).unwrap();
    }
    Tensor::from_slice(values).unwrap()
}

fn mask(device: Device, sizes: &[i64]) -> Tensor {
    ramp(device, ScalarType::Bool, sizes, 2)
}

fn empty(device: Device, dtype: ScalarType) -> Tensor {
    Tensor::allocate(&[0], dtype, device).unwrap()
}

type Call = fn(Device) -> Result<Vec<Tensor>>;

/// Runs every case on CPU and on Meta and lists the differences.
fn compare(cases: &[(&str, Call)]) -> (Vec<String>, usize, usize) {
    let (mut failures, mut ok, mut errors) = (Vec::new(), 0, 0);
    for (name, f) in cases {
        match (f(Device::CPU), f(Device::META)) {
            (Ok(cpu), Ok(meta)) => {
                ok += 1;
                if cpu.len() != meta.len() {
                    failures.push(format!("{name}: {} vs {} results", cpu.len(), meta.len()));
                    continue;
                }
                for (i, (c, m)) in cpu.iter().zip(&meta).enumerate() {
                    let strides_differ = c.numel() > 1 && c.strides() != m.strides();
                    if !m.is_meta()
                        || c.sizes() != m.sizes()
                        || c.dtype() != m.dtype()
                        || strides_differ
                    {
                        failures.push(format!(
                            "{name} result {i}: CPU {:?} {:?} {}, Meta {:?} {:?} {} on {}",
                            c.sizes(),
                            c.strides(),
                            c.dtype(),
                            m.sizes(),
                            m.strides(),
                            m.dtype(),
                            m.device()
                        ));
                    }
                }
            }
            (Err(c), Err(m)) => {
                errors += 1;
                if c.message() != m.message() || c.kind() != m.kind() {
                    failures.push(format!("{name}: CPU error {c:?}, Meta error {m:?}"));
                }
            }
            (Ok(_), Err(m)) => failures.push(format!("{name}: only Meta fails: {m}")),
            (Err(c), Ok(_)) => failures.push(format!("{name}: only CPU fails: {c}")),
        }
    }
    (failures, ok, errors)
}

fn check(cases: &[(&str, Call)], min_ok: usize, min_errors: usize) {
    let (failures, ok, errors) = compare(cases);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ok >= min_ok, "{ok} successful cases");
    assert!(errors >= min_errors, "{errors} error cases");
}

#[test]
fn reductions_on_meta_match_cpu() {
    use ScalarType::{Double, Float, Int, Long};
    let cases: &[(&str, Call)] = &[
        ("prod int", |d| {
            Ok(vec![op::prod::call(&ramp(d, Int, &[3, 4], 3), None)?])
        }),
        ("prod bool", |d| {
            Ok(vec![op::prod::call(&mask(d, &[3]), None)?])
        }),
        ("prod dtype", |d| {
            Ok(vec![op::prod::call(&float(d, &[3, 4]), Some(Double))?])
        }),
        ("max", |d| {
            Ok(vec![op::max::call(&transposed(d, Float, 3, 4))?])
        }),
        ("min", |d| Ok(vec![op::min::call(&ramp(d, Long, &[5], 9))?])),
        ("max empty", |d| {
            Ok(vec![op::max::call(&float(d, &[0, 3]))?])
        }),
        ("min empty", |d| Ok(vec![op::min::call(&float(d, &[0]))?])),
        ("max out resized", |d| {
            let out = empty(d, Double);
            Ok(vec![
                op::max_unary_out::call(&float(d, &[3, 4]), &out)?,
                out,
            ])
        }),
        ("min out", |d| {
            let out = Tensor::allocate(&[], Float, d)?;
            Ok(vec![op::min_unary_out::call(&float(d, &[3, 4]), &out)?])
        }),
        ("max out cannot cast", |d| {
            Ok(vec![op::max_unary_out::call(
                &float(d, &[3]),
                &empty(d, Long),
            )?])
        }),
        ("var dim keepdim", |d| {
            let x = transposed(d, Float, 3, 4);
            Ok(vec![op::var_correction::call(&x, Some(&[1]), None, true)?])
        }),
        ("var all", |d| {
            Ok(vec![op::var_correction::call(
                &float(d, &[3, 4]),
                None,
                None,
                false,
            )?])
        }),
        ("var int", |d| {
            let x = ramp(d, Int, &[3, 4], 3);
            Ok(vec![op::var_correction::call(&x, Some(&[1]), None, false)?])
        }),
        ("var dim repeated", |d| {
            let x = float(d, &[3, 4]);
            Ok(vec![op::var_correction::call(
                &x,
                Some(&[1, -1]),
                None,
                false,
            )?])
        }),
        ("var dim out of range", |d| {
            let x = float(d, &[3, 4]);
            Ok(vec![op::var_correction::call(&x, Some(&[2]), None, false)?])
        }),
        ("std correction", |d| {
            let x = float(d, &[2, 3, 4]);
            let c = Some(Scalar::Int(0));
            Ok(vec![op::std_correction::call(&x, Some(&[0, 2]), c, false)?])
        }),
        ("std out", |d| {
            let out = empty(d, Float);
            let x = float(d, &[3, 4]);
            Ok(vec![op::std_correction_out::call(
                &x,
                Some(&[0]),
                None,
                false,
                &out,
            )?])
        }),
        ("var out of another dtype", |d| {
            let out = empty(d, Double);
            let x = float(d, &[3, 4]);
            Ok(vec![op::var_correction_out::call(
                &x,
                Some(&[0]),
                None,
                false,
                &out,
            )?])
        }),
        ("var out that cannot hold it", |d| {
            let out = empty(d, Long);
            let x = float(d, &[3, 4]);
            Ok(vec![op::var_correction_out::call(
                &x,
                Some(&[0]),
                None,
                false,
                &out,
            )?])
        }),
        ("var_mean", |d| {
            let x = transposed(d, Double, 3, 4);
            let (v, m) = op::var_mean_correction::call(&x, Some(&[1]), None, false)?;
            Ok(vec![v, m])
        }),
        ("var_mean bool", |d| {
            let (v, m) = op::var_mean_correction::call(&mask(d, &[4]), None, None, false)?;
            Ok(vec![v, m])
        }),
        ("var empty", |d| {
            Ok(vec![op::var_correction::call(
                &float(d, &[0, 3]),
                Some(&[0]),
                None,
                false,
            )?])
        }),
        ("std bool", |d| {
            Ok(vec![op::std_correction::call(
                &mask(d, &[2]),
                None,
                None,
                false,
            )?])
        }),
    ];
    check(cases, 14, 6);
}

#[test]
fn degrees_of_freedom_warning_on_meta_too() {
    for device in [Device::CPU, Device::META] {
        switchyard_dispatch::warnings::take_warnings();
        op::var_correction::call(&float(device, &[1, 3]), Some(&[0]), None, false).unwrap();
        let got = switchyard_dispatch::warnings::take_warnings();
        assert!(
            got.iter()
                .any(|w| w.starts_with("var(): degrees of freedom is <= 0")),
            "{device}: {got:?}"
        );
    }
}

#[test]
fn pointwise_on_meta_match_cpu() {
    use ScalarType::{Bool, Byte, Double, Float, Int, Long};
    let cases: &[(&str, Call)] = &[
        ("abs out transposed input", |d| {
            let out = empty(d, Float);
            Ok(vec![op::abs_out::call(&transposed(d, Float, 3, 4), &out)?])
        }),
        ("abs out right shape kept", |d| {
            let out = transposed(d, Float, 3, 4);
            Ok(vec![op::abs_out::call(&float(d, &[3, 4]), &out)?])
        }),
        ("abs out wrong dtype", |d| {
            Ok(vec![op::abs_out::call(
                &ramp(d, Long, &[3], 3),
                &empty(d, Float),
            )?])
        }),
        ("isnan transposed", |d| {
            Ok(vec![op::isnan::call(&transposed(d, Float, 3, 4))?])
        }),
        ("isnan int", |d| {
            Ok(vec![op::isnan::call(&ramp(d, Int, &[2, 2], 3))?])
        }),
        ("logical_not out int", |d| {
            let out = empty(d, Int);
            Ok(vec![op::logical_not_out::call(
                &transposed(d, Float, 2, 3),
                &out,
            )?])
        }),
        ("nan_to_num out", |d| {
            let out = empty(d, Double);
            let x = transposed(d, Double, 2, 3);
            Ok(vec![op::nan_to_num_out::call(&x, None, None, None, &out)?])
        }),
        ("nan_to_num out dtype", |d| {
            let out = empty(d, Double);
            let x = float(d, &[3]);
            Ok(vec![op::nan_to_num_out::call(
                &x,
                Some(1.0),
                None,
                None,
                &out,
            )?])
        }),
        ("logical_and out broadcast", |d| {
            let out = empty(d, Int);
            let (a, b) = (float(d, &[3, 1]), ramp(d, Long, &[4], 2));
            Ok(vec![op::logical_and_out::call(&a, &b, &out)?])
        }),
        ("logical_or out transposed", |d| {
            let out = empty(d, Bool);
            let (a, b) = (transposed(d, Float, 3, 4), transposed(d, Float, 3, 4));
            Ok(vec![op::logical_or_out::call(&a, &b, &out)?])
        }),
        ("logical_xor out bad shapes", |d| {
            let out = empty(d, Bool);
            let (a, b) = (float(d, &[3, 1]), float(d, &[5, 2]));
            Ok(vec![op::logical_xor_out::call(&a, &b, &out)?])
        }),
        ("remainder scalar int", |d| {
            let x = ramp(d, Int, &[3, 4], 3);
            let x = op::add_Scalar::call(&x, Scalar::Int(1), Scalar::Int(1))?;
            Ok(vec![op::remainder_Scalar_Tensor::call(Scalar::Int(7), &x)?])
        }),
        ("remainder scalar float", |d| {
            let x = transposed(d, Float, 3, 4);
            Ok(vec![op::remainder_Scalar_Tensor::call(
                Scalar::Float(2.5),
                &x,
            )?])
        }),
        ("where", |d| {
            let (c, a, b) = (mask(d, &[3, 1]), float(d, &[4]), ramp(d, Double, &[1], 2));
            Ok(vec![op::where_self::call(&c, &a, &b)?])
        }),
        ("where transposed", |d| {
            let c = op::t::call(&mask(d, &[4, 3]))?;
            let (a, b) = (transposed(d, Float, 3, 4), transposed(d, Float, 3, 4));
            Ok(vec![op::where_self::call(&c, &a, &b)?])
        }),
        ("where byte condition", |d| {
            let c = ramp(d, Byte, &[3], 2);
            Ok(vec![op::where_self::call(
                &c,
                &float(d, &[3]),
                &float(d, &[3]),
            )?])
        }),
        ("where float condition", |d| {
            let c = float(d, &[3]);
            Ok(vec![op::where_self::call(
                &c,
                &float(d, &[3]),
                &float(d, &[3]),
            )?])
        }),
        ("where bad shapes", |d| {
            let c = mask(d, &[3]);
            Ok(vec![op::where_self::call(
                &c,
                &float(d, &[4]),
                &float(d, &[3]),
            )?])
        }),
        ("where out", |d| {
            let out = empty(d, Double);
            let (c, a, b) = (mask(d, &[3, 1]), float(d, &[4]), ramp(d, Double, &[1], 2));
            Ok(vec![op::where_self_out::call(&c, &a, &b, &out)?])
        }),
        ("where out wrong dtype", |d| {
            let out = empty(d, Float);
            let (c, a, b) = (mask(d, &[3]), float(d, &[3]), ramp(d, Double, &[3], 2));
            Ok(vec![op::where_self_out::call(&c, &a, &b, &out)?])
        }),
    ];
    check(cases, 14, 6);
}

#[test]
fn indexing_on_meta_match_cpu() {
    use ScalarType::{Double, Float, Int, Long};
    let cases: &[(&str, Call)] = &[
        ("index_select", |d| {
            let x = transposed(d, Float, 3, 4);
            Ok(vec![op::index_select::call(
                &x,
                1,
                &long(d, &[0, 2, 3, 1, 1]),
            )?])
        }),
        ("index_select dim 0 int index", |d| {
            let idx = ramp(d, Int, &[2], 2);
            Ok(vec![op::index_select::call(&float(d, &[3, 4]), 0, &idx)?])
        }),
        ("index_select 0-dim", |d| {
            let x = Tensor::allocate(&[], Float, d)?;
            Ok(vec![op::index_select::call(&x, 0, &long(d, &[0]))?])
        }),
        ("index_select out", |d| {
            let out = empty(d, Float);
            let x = float(d, &[3, 4]);
            Ok(vec![op::index_select_out::call(
                &x,
                0,
                &long(d, &[2, 0]),
                &out,
            )?])
        }),
        ("index_select float index", |d| {
            Ok(vec![op::index_select::call(
                &float(d, &[3, 4]),
                0,
                &float(d, &[2]),
            )?])
        }),
        ("index_select 2-d index", |d| {
            let idx = ramp(d, Long, &[2, 2], 2);
            Ok(vec![op::index_select::call(&float(d, &[3, 4]), 0, &idx)?])
        }),
        ("index_select out dtype", |d| {
            let out = empty(d, Double);
            let x = float(d, &[3, 4]);
            Ok(vec![op::index_select_out::call(
                &x,
                0,
                &long(d, &[1]),
                &out,
            )?])
        }),
        ("index_select dim out of range", |d| {
            Ok(vec![op::index_select::call(
                &float(d, &[3, 4]),
                2,
                &long(d, &[1]),
            )?])
        }),
        ("index_select empty axis", |d| {
            Ok(vec![op::index_select::call(
                &float(d, &[3, 0]),
                1,
                &long(d, &[0]),
            )?])
        }),
        ("flip", |d| {
            Ok(vec![op::flip::call(&transposed(d, Float, 3, 4), &[0])?])
        }),
        ("flip expanded", |d| {
            let x = op::expand::call(&float(d, &[1, 4]), &[3, 4], false)?;
            Ok(vec![op::flip::call(&x, &[0, 1])?])
        }),
        ("flip repeated dim", |d| {
            Ok(vec![op::flip::call(&float(d, &[3, 4]), &[0, -2])?])
        }),
        ("roll", |d| {
            Ok(vec![op::roll::call(
                &transposed(d, Float, 3, 4),
                &[1],
                &[0],
            )?])
        }),
        ("roll flattened", |d| {
            Ok(vec![op::roll::call(
                &transposed(d, Float, 3, 4),
                &[5],
                &[],
            )?])
        }),
        ("roll two dims", |d| {
            Ok(vec![op::roll::call(&float(d, &[3, 4]), &[1, -2], &[0, 1])?])
        }),
        ("roll misaligned", |d| {
            Ok(vec![op::roll::call(&float(d, &[3, 4]), &[1, 2], &[0])?])
        }),
        ("roll no shifts", |d| {
            Ok(vec![op::roll::call(&float(d, &[3, 4]), &[], &[])?])
        }),
        ("roll 0-dim", |d| {
            let x = Tensor::allocate(&[], Float, d)?;
            Ok(vec![op::roll::call(&x, &[1], &[0])?])
        }),
        ("masked_fill_", |d| {
            let x = transposed(d, Float, 3, 4);
            Ok(vec![op::masked_fill__Scalar::call(
                &x,
                &mask(d, &[4]),
                Scalar::Float(1.0),
            )?])
        }),
        ("masked_fill_ float mask", |d| {
            let x = float(d, &[3, 4]);
            Ok(vec![op::masked_fill__Scalar::call(
                &x,
                &float(d, &[4]),
                Scalar::Int(1),
            )?])
        }),
        ("masked_fill_ grows self", |d| {
            let x = float(d, &[1, 4]);
            Ok(vec![op::masked_fill__Scalar::call(
                &x,
                &mask(d, &[3, 4]),
                Scalar::Int(1),
            )?])
        }),
        ("masked_fill_ tensor value", |d| {
            let (x, v) = (float(d, &[3, 4]), Tensor::allocate(&[], Float, d)?);
            let v = if d.is_meta() {
                v
            } else {
                op::fill__Scalar::call(&v, Scalar::Int(2))?
            };
            Ok(vec![op::masked_fill__Tensor::call(
                &x,
                &mask(d, &[3, 4]),
                &v,
            )?])
        }),
        ("masked_fill_ 1-d value", |d| {
            let x = float(d, &[3, 4]);
            Ok(vec![op::masked_fill__Tensor::call(
                &x,
                &mask(d, &[4]),
                &float(d, &[1]),
            )?])
        }),
        ("index_put_", |d| {
            let x = float(d, &[3, 4]);
            let i = [Some(long(d, &[2, 0]))];
            Ok(vec![op::_index_put_impl_::call(
                &x,
                &i,
                &float(d, &[4]),
                false,
                false,
            )?])
        }),
        ("index_put_ accumulate", |d| {
            let x = float(d, &[3, 4]);
            let i = [None, Some(long(d, &[1, 1]))];
            Ok(vec![op::_index_put_impl_::call(
                &x,
                &i,
                &float(d, &[3, 2]),
                true,
                false,
            )?])
        }),
        ("index_put_ values do not broadcast", |d| {
            let x = float(d, &[3, 4]);
            let i = [Some(long(d, &[2, 0]))];
            Ok(vec![op::_index_put_impl_::call(
                &x,
                &i,
                &float(d, &[5]),
                false,
                false,
            )?])
        }),
        ("index_put_ values dtype", |d| {
            let x = float(d, &[3, 4]);
            let (i, v) = ([Some(long(d, &[2]))], ramp(d, Double, &[4], 3));
            Ok(vec![op::_index_put_impl_::call(&x, &i, &v, true, false)?])
        }),
        ("index_put_ too many indices", |d| {
            let x = float(d, &[3]);
            let i = [Some(long(d, &[0])), Some(long(d, &[0]))];
            Ok(vec![op::_index_put_impl_::call(
                &x,
                &i,
                &float(d, &[1]),
                false,
                false,
            )?])
        }),
        ("index_put_ float index", |d| {
            let x = float(d, &[3]);
            let i = [Some(float(d, &[1]))];
            Ok(vec![op::_index_put_impl_::call(
                &x,
                &i,
                &float(d, &[1]),
                false,
                false,
            )?])
        }),
        ("index_put_ mask", |d| {
            let x = float(d, &[3, 4]);
            let i = [Some(mask(d, &[3]))];
            Ok(vec![op::_index_put_impl_::call(
                &x,
                &i,
                &float(d, &[1]),
                true,
                false,
            )?])
        }),
    ];
    check(cases, 14, 12);
}

/// The view copies (generated composites, and `narrow_copy`'s hand-written CPU and Meta
/// kernels) and the scatters, on non-contiguous and expanded inputs, with out= tensors of
/// every kind; the fixture test (`views.rs`, `view_copies`) checks the values against PyTorch.
#[test]
fn view_copies_and_scatters_on_meta_match_cpu() {
    use ScalarType::{Double, Float, Long};
    let cases: &[(&str, Call)] = &[
        ("narrow_copy transposed", |d| {
            Ok(vec![op::narrow_copy::call(
                &transposed(d, Float, 3, 4),
                1,
                -3,
                2,
            )?])
        }),
        ("narrow_copy long", |d| {
            Ok(vec![op::narrow_copy::call(
                &ramp(d, Long, &[2, 3, 4], 5),
                2,
                1,
                3,
            )?])
        }),
        ("narrow_copy 0-dim", |d| {
            Ok(vec![op::narrow_copy::call(&float(d, &[]), 0, 0, 1)?])
        }),
        ("narrow_copy dim out of range", |d| {
            Ok(vec![op::narrow_copy::call(&float(d, &[2, 3]), 2, 0, 1)?])
        }),
        ("narrow_copy negative dim out of range", |d| {
            Ok(vec![op::narrow_copy::call(&float(d, &[2, 3]), -3, 0, 1)?])
        }),
        ("narrow_copy start out of range", |d| {
            Ok(vec![op::narrow_copy::call(&float(d, &[2, 3]), 1, -4, 1)?])
        }),
        ("narrow_copy negative length", |d| {
            Ok(vec![op::narrow_copy::call(&float(d, &[2, 3]), 1, 0, -1)?])
        }),
        ("narrow_copy extreme length", |d| {
            Ok(vec![op::narrow_copy::call(
                &float(d, &[2, 3]),
                1,
                3,
                i64::MIN,
            )?])
        }),
        ("narrow_copy.out", |d| {
            let out = empty(d, Float);
            Ok(vec![op::narrow_copy_out::call(
                &transposed(d, Float, 3, 4),
                0,
                1,
                2,
                &out,
            )?])
        }),
        ("narrow_copy.out keeps strides", |d| {
            let out = transposed(d, Float, 2, 2);
            Ok(vec![op::narrow_copy_out::call(
                &float(d, &[2, 3]),
                1,
                1,
                2,
                &out,
            )?])
        }),
        ("narrow_copy.out other size", |d| {
            let out = float(d, &[7]);
            Ok(vec![op::narrow_copy_out::call(
                &float(d, &[2, 3]),
                1,
                1,
                2,
                &out,
            )?])
        }),
        ("narrow_copy.out other dtype", |d| {
            let out = empty(d, Double);
            Ok(vec![op::narrow_copy_out::call(
                &float(d, &[2, 3]),
                1,
                1,
                2,
                &out,
            )?])
        }),
        ("permute_copy transposed", |d| {
            Ok(vec![op::permute_copy::call(
                &transposed(d, Float, 3, 4),
                &[1, 0],
            )?])
        }),
        ("expand_copy", |d| {
            Ok(vec![op::expand_copy::call(
                &float(d, &[3, 1]),
                &[2, 3, 4],
                false,
            )?])
        }),
        ("view_copy of a view that cannot be one", |d| {
            Ok(vec![op::view_copy::call(
                &transposed(d, Float, 3, 4),
                &[12],
            )?])
        }),
        ("view_copy bad size", |d| {
            Ok(vec![op::view_copy::call(
                &transposed(d, Float, 3, 4),
                &[5],
            )?])
        }),
        ("diagonal_copy.out keeps strides", |d| {
            let out = op::slice_Tensor::call(&float(d, &[6]), 0, None, None, 2)?;
            Ok(vec![op::diagonal_copy_out::call(
                &float(d, &[3, 4]),
                0,
                0,
                1,
                &out,
            )?])
        }),
        ("select_copy.int_out other dtype", |d| {
            let out = empty(d, Long);
            Ok(vec![op::select_copy_int_out::call(
                &float(d, &[3, 4]),
                1,
                0,
                &out,
            )?])
        }),
        ("split_copy", |d| {
            op::split_copy_Tensor::call(&transposed(d, Float, 5, 3), 2, 0)
        }),
        ("unbind_copy", |d| {
            op::unbind_copy_int::call(&float(d, &[2, 3]), -1)
        }),
        ("unfold_copy", |d| {
            Ok(vec![op::unfold_copy::call(
                &transposed(d, Float, 5, 3),
                0,
                2,
                1,
            )?])
        }),
        ("slice_scatter transposed", |d| {
            Ok(vec![op::slice_scatter::call(
                &transposed(d, Float, 3, 4),
                &float(d, &[3, 2]),
                -1,
                Some(-3),
                Some(-1),
                1,
            )?])
        }),
        ("slice_scatter mismatched src", |d| {
            Ok(vec![op::slice_scatter::call(
                &float(d, &[3, 4]),
                &float(d, &[3, 3]),
                1,
                Some(0),
                Some(2),
                1,
            )?])
        }),
        ("slice_scatter step 0", |d| {
            Ok(vec![op::slice_scatter::call(
                &float(d, &[3, 4]),
                &float(d, &[3, 4]),
                1,
                None,
                None,
                0,
            )?])
        }),
        ("select_scatter broadcastable src", |d| {
            Ok(vec![op::select_scatter::call(
                &float(d, &[3, 4]),
                &float(d, &[1]),
                0,
                1,
            )?])
        }),
        ("select_scatter index out of range", |d| {
            Ok(vec![op::select_scatter::call(
                &float(d, &[3, 4]),
                &float(d, &[3]),
                1,
                -5,
            )?])
        }),
        ("diagonal_scatter long", |d| {
            Ok(vec![op::diagonal_scatter::call(
                &ramp(d, Long, &[2, 3, 4], 7),
                &ramp(d, Long, &[3, 1], 7),
                -1,
                0,
                -1,
            )?])
        }),
        ("diagonal_scatter mismatched src", |d| {
            Ok(vec![op::diagonal_scatter::call(
                &float(d, &[3, 4]),
                &float(d, &[4]),
                0,
                0,
                1,
            )?])
        }),
        ("as_strided_scatter transposed", |d| {
            Ok(vec![op::as_strided_scatter::call(
                &transposed(d, Float, 3, 4),
                &float(d, &[3]),
                &[3],
                &[1],
                Some(0),
            )?])
        }),
        ("as_strided_scatter out of bounds", |d| {
            Ok(vec![op::as_strided_scatter::call(
                &float(d, &[3, 4]),
                &float(d, &[3]),
                &[3],
                &[5],
                Some(2),
            )?])
        }),
        ("slice_scatter.out", |d| {
            let out = transposed(d, Float, 3, 4);
            Ok(vec![op::slice_scatter_out::call(
                &float(d, &[3, 4]),
                &float(d, &[1, 4]),
                0,
                Some(2),
                None,
                1,
                &out,
            )?])
        }),
        ("select_scatter.out other dtype", |d| {
            let out = empty(d, Double);
            Ok(vec![op::select_scatter_out::call(
                &float(d, &[3, 4]),
                &float(d, &[4]),
                0,
                0,
                &out,
            )?])
        }),
    ];
    check(cases, 16, 16);
}

#[test]
fn linalg_and_random_on_meta_match_cpu() {
    use ScalarType::{Double, Float, Long};
    let cases: &[(&str, Call)] = &[
        ("dot", |d| {
            Ok(vec![op::dot::call(&float(d, &[5]), &float(d, &[5]))?])
        }),
        ("dot long", |d| {
            Ok(vec![op::dot::call(
                &ramp(d, Long, &[3], 3),
                &ramp(d, Long, &[3], 2),
            )?])
        }),
        ("dot 2-d", |d| {
            Ok(vec![op::dot::call(&float(d, &[3, 1]), &float(d, &[3]))?])
        }),
        ("dot lengths", |d| {
            Ok(vec![op::dot::call(&float(d, &[3]), &float(d, &[4]))?])
        }),
        ("dot dtypes", |d| {
            Ok(vec![op::dot::call(
                &float(d, &[3]),
                &ramp(d, Double, &[3], 2),
            )?])
        }),
        ("bernoulli_ float", |d| {
            Ok(vec![op::bernoulli__float::call(
                &transposed(d, Float, 3, 4),
                0.3,
                None,
            )?])
        }),
        ("bernoulli_ p out of range", |d| {
            Ok(vec![op::bernoulli__float::call(
                &float(d, &[3]),
                1.5,
                None,
            )?])
        }),
        ("bernoulli_ overlapping self", |d| {
            let x = op::expand::call(&float(d, &[1]), &[3], false)?;
            Ok(vec![op::bernoulli__float::call(&x, 0.5, None)?])
        }),
        ("bernoulli_ tensor", |d| {
            let p = probabilities(d, Float, &[4, 1]);
            Ok(vec![op::bernoulli__Tensor::call(
                &transposed(d, Float, 4, 3),
                &p,
                None,
            )?])
        }),
        ("bernoulli_ tensor does not broadcast", |d| {
            let p = probabilities(d, Float, &[4, 1]);
            Ok(vec![op::bernoulli__Tensor::call(
                &float(d, &[3, 4]),
                &p,
                None,
            )?])
        }),
        ("bernoulli out", |d| {
            let out = empty(d, Float);
            let p = op::t::call(&probabilities(d, Float, &[3, 4]))?;
            Ok(vec![op::bernoulli_out::call(&p, None, &out)?])
        }),
        ("bernoulli out of another dtype", |d| {
            let out = empty(d, Double);
            let p = probabilities(d, Float, &[3, 4]);
            Ok(vec![op::bernoulli_out::call(&p, None, &out)?])
        }),
        ("native_dropout", |d| {
            let (o, m) = op::native_dropout::call(&transposed(d, Float, 3, 4), 0.5, Some(true))?;
            Ok(vec![o, m])
        }),
        ("native_dropout eval", |d| {
            let (o, m) = op::native_dropout::call(&float(d, &[3, 4]), 0.5, Some(false))?;
            Ok(vec![o, m])
        }),
        ("native_dropout empty", |d| {
            let (o, m) = op::native_dropout::call(&ramp(d, Double, &[0, 4], 2), 0.5, None)?;
            Ok(vec![o, m])
        }),
        ("native_dropout p out of range", |d| {
            let (o, m) = op::native_dropout::call(&float(d, &[3]), 1.5, None)?;
            Ok(vec![o, m])
        }),
        ("native_dropout integer input", |d| {
            let (o, m) = op::native_dropout::call(&ramp(d, Long, &[3], 2), 0.5, None)?;
            Ok(vec![o, m])
        }),
        ("native_dropout bool eval", |d| {
            let (o, m) = op::native_dropout::call(&mask(d, &[3]), 0.5, Some(false))?;
            Ok(vec![o, m])
        }),
    ];
    check(cases, 9, 7);
}

/// What a call must give on both devices: an error (kind and message), or a result of these
/// sizes and dtype.
enum Expect {
    Error(ErrorKind, &'static str),
    Ok(&'static [i64], ScalarType),
}

type Case = fn(Device) -> Result<Tensor>;

/// Runs every case on CPU and on Meta tensors and checks both against PyTorch's outcome,
/// recorded from PyTorch 2.15's CPU kernels (`/tmp/torchref`): the Meta kernels make the
/// checks of their CPU twins, with the same messages. (PyTorch's own Meta kernels skip some of
/// these, `fill_meta_`, `gelu`'s meta and the Python references among them; here shape
/// inference refuses what execution refuses.)
fn check_on_both(cases: &[(&str, Case, Expect)]) {
    let mut failures = Vec::new();
    for (name, f, expect) in cases {
        for d in [Device::CPU, Device::META] {
            match (f(d), expect) {
                (Err(e), Expect::Error(kind, msg)) if e.kind() == *kind && e.message() == *msg => {}
                (Ok(t), Expect::Ok(sizes, dtype))
                    if t.sizes().as_slice() == *sizes && t.dtype() == *dtype && t.device() == d => {
                }
                (Ok(t), _) => {
                    failures.push(format!("{name} on {d}: Ok({:?} {})", t.sizes(), t.dtype()))
                }
                (Err(e), _) => failures.push(format!("{name} on {d}: {:?} {e}", e.kind())),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn zeros(d: Device, dtype: ScalarType, sizes: &[i64]) -> Tensor {
    op::zeros::call(sizes, Some(dtype), None, Some(d), None).unwrap()
}

/// Checks that CPU kernels made in their own bodies (after the meta function) and that the
/// Meta kernels skipped: argument values, unsafe casts into out=, in-place outputs that would
/// need resizing, scalars that do not fit the dtype, loss shapes.
#[test]
fn checks_of_cpu_kernels_are_made_on_meta_too() {
    use ErrorKind::{IndexError, RuntimeError, ValueError};
    use ScalarType::{Bool, Char, Double, Float, Long};
    const CAST_BOOL: &str = "result type Float can't be cast to the desired output type Bool";
    const CAST_LONG: &str = "result type Float can't be cast to the desired output type Long";
    const NO_RESIZE: &str = "output with shape [3] doesn't match the broadcast shape [2, 3]";
    const INT8: &str = "value cannot be converted to type int8_t without overflow";
    const INT64: &str = "value cannot be converted to type int64_t without overflow";
    const GELU: &str = "approximate argument must be either none or tanh.";
    let cases: &[(&str, Case, Expect)] = &[
        // gelu's approximate argument (checked by PyTorch's kernel, after the iterator).
        (
            "gelu bad approximate",
            |d| op::gelu::call(&float(d, &[2, 3]), "bogus"),
            Expect::Error(RuntimeError, GELU),
        ),
        (
            "gelu_ bad approximate",
            |d| op::gelu_::call(&float(d, &[2, 3]), "bogus"),
            Expect::Error(RuntimeError, GELU),
        ),
        (
            "gelu.out bad approximate",
            |d| op::gelu_out::call(&float(d, &[3]), "Tanh", &empty(d, Float)),
            Expect::Error(RuntimeError, GELU),
        ),
        (
            "gelu tanh",
            |d| op::gelu::call(&float(d, &[2, 3]), "tanh"),
            Expect::Ok(&[2, 3], Float),
        ),
        // pow.Scalar_out: a base other than 1 runs pow.Tensor_Tensor_out, whose iterator
        // refuses an unsafe cast; a base of 1 fills ones into any dtype.
        (
            "pow.Scalar_out into long",
            |d| op::pow_Scalar_out::call(Scalar::Float(2.5), &float(d, &[2, 3]), &empty(d, Long)),
            Expect::Error(RuntimeError, CAST_LONG),
        ),
        (
            "pow.Scalar_out bool base into long",
            |d| op::pow_Scalar_out::call(Scalar::Bool(true), &float(d, &[3]), &empty(d, Long)),
            Expect::Error(RuntimeError, CAST_LONG),
        ),
        (
            "pow.Scalar_out base 1 into long",
            |d| op::pow_Scalar_out::call(Scalar::Int(1), &float(d, &[2, 3]), &empty(d, Long)),
            Expect::Ok(&[2, 3], Long),
        ),
        // mean.out divides the sum in place: a bool or integer out cannot hold the quotient.
        (
            "mean.out into bool",
            |d| op::mean_out::call(&float(d, &[2, 3]), None, false, None, &empty(d, Bool)),
            Expect::Error(RuntimeError, CAST_BOOL),
        ),
        (
            "mean.out into long",
            |d| op::mean_out::call(&float(d, &[2, 3]), Some(&[0]), false, None, &empty(d, Long)),
            Expect::Error(RuntimeError, CAST_LONG),
        ),
        (
            "mean.out dtype float into long",
            |d| {
                op::mean_out::call(
                    &float(d, &[2, 3]),
                    Some(&[0]),
                    false,
                    Some(Float),
                    &empty(d, Long),
                )
            },
            Expect::Error(
                RuntimeError,
                "Expected out tensor to have dtype float, but got long int instead",
            ),
        ),
        (
            "mean.out into double",
            |d| {
                op::mean_out::call(
                    &float(d, &[2, 3]),
                    Some(&[0]),
                    false,
                    None,
                    &empty(d, Double),
                )
            },
            Expect::Ok(&[3], Double),
        ),
        (
            "mean.dtype_out into long",
            |d| op::mean_dtype_out::call(&float(d, &[2, 3]), None, &empty(d, Long)),
            Expect::Error(
                RuntimeError,
                "mean.dtype_out(): input types can't be cast to the desired output type Long",
            ),
        ),
        // clamp's integral bounds (PyTorch's prepare_clamp_bound).
        (
            "clamp int8 min 1000",
            |d| op::clamp::call(&zeros(d, Char, &[3]), Some(Scalar::Int(1000)), None),
            Expect::Error(
                RuntimeError,
                "Clamp min value 1000 is outside the representable range of Char",
            ),
        ),
        (
            "clamp_max int8 -1000",
            |d| op::clamp_max::call(&zeros(d, Char, &[3]), Scalar::Int(-1000)),
            Expect::Error(
                RuntimeError,
                "Clamp max value -1000 is outside the representable range of Char",
            ),
        ),
        (
            "clamp int8 max 1000 (no-op bound)",
            |d| op::clamp::call(&zeros(d, Char, &[3]), None, Some(Scalar::Int(1000))),
            Expect::Ok(&[3], Char),
        ),
        // In-place outputs (and out= tensors that are inputs) are never resized.
        (
            "logical_and_ broadcasting self",
            |d| op::logical_and_::call(&zeros(d, Bool, &[3]), &zeros(d, Bool, &[2, 3])),
            Expect::Error(RuntimeError, NO_RESIZE),
        ),
        (
            "logical_or_ broadcasting self",
            |d| op::logical_or_::call(&zeros(d, Bool, &[3]), &zeros(d, Float, &[2, 3])),
            Expect::Error(RuntimeError, NO_RESIZE),
        ),
        (
            "logical_xor_ broadcasting self",
            |d| op::logical_xor_::call(&zeros(d, Long, &[3]), &zeros(d, Bool, &[2, 3])),
            Expect::Error(RuntimeError, NO_RESIZE),
        ),
        (
            "logical_and_ same shape",
            |d| op::logical_and_::call(&zeros(d, Long, &[2, 3]), &zeros(d, Bool, &[3])),
            Expect::Ok(&[2, 3], Long),
        ),
        (
            "add.out into an input",
            |d| {
                let a = float(d, &[3]);
                op::add_out::call(&a, &float(d, &[2, 3]), Scalar::Int(1), &a)
            },
            Expect::Error(RuntimeError, NO_RESIZE),
        ),
        (
            "logical_and.out into an input",
            |d| {
                let a = zeros(d, Bool, &[3]);
                op::logical_and_out::call(&zeros(d, Bool, &[2, 3]), &a, &a)
            },
            Expect::Error(RuntimeError, NO_RESIZE),
        ),
        (
            "where.self_out into an input",
            |d| {
                let x = float(d, &[3]);
                op::where_self_out::call(&mask(d, &[2, 3]), &x, &float(d, &[3]), &x)
            },
            Expect::Error(RuntimeError, NO_RESIZE),
        ),
        (
            "add.out into a fresh out",
            |d| {
                op::add_out::call(
                    &float(d, &[3]),
                    &float(d, &[2, 3]),
                    Scalar::Int(1),
                    &empty(d, Float),
                )
            },
            Expect::Ok(&[2, 3], Float),
        ),
        // Scalars converted into a tensor of a dtype they do not fit.
        (
            "where.ScalarOther 300 into int8",
            |d| {
                op::where_ScalarOther::call(&mask(d, &[3]), &zeros(d, Char, &[3]), Scalar::Int(300))
            },
            Expect::Error(RuntimeError, INT8),
        ),
        (
            "where.ScalarSelf 300 into int8",
            |d| op::where_ScalarSelf::call(&mask(d, &[3]), Scalar::Int(300), &zeros(d, Char, &[3])),
            Expect::Error(RuntimeError, INT8),
        ),
        (
            "where.ScalarOther 2.5 promotes int8",
            |d| {
                op::where_ScalarOther::call(
                    &mask(d, &[3]),
                    &zeros(d, Char, &[3]),
                    Scalar::Float(2.5),
                )
            },
            Expect::Ok(&[3], Float),
        ),
        (
            "where.Scalar int and float",
            |d| op::where_Scalar::call(&mask(d, &[3]), Scalar::Int(1), Scalar::Float(2.5)),
            Expect::Ok(&[3], Float),
        ),
        (
            "fill_ int64 with 2^63",
            |d| {
                op::fill__Scalar::call(
                    &zeros(d, Long, &[3]),
                    Scalar::Float(9_223_372_036_854_775_808.0),
                )
            },
            Expect::Error(RuntimeError, INT64),
        ),
        (
            "fill_ int8 with 127.5",
            |d| op::fill__Scalar::call(&zeros(d, Char, &[3]), Scalar::Float(127.5)),
            Expect::Ok(&[3], Char),
        ),
        (
            "full int64 2^63",
            |d| {
                op::full::call(
                    &[2],
                    Scalar::Float(9_223_372_036_854_775_808.0),
                    Some(Long),
                    None,
                    Some(d),
                    None,
                )
            },
            Expect::Error(RuntimeError, INT64),
        ),
        (
            "masked_fill_ int8 with 300",
            |d| {
                op::masked_fill__Scalar::call(
                    &zeros(d, Char, &[3]),
                    &mask(d, &[3]),
                    Scalar::Int(300),
                )
            },
            Expect::Error(RuntimeError, INT8),
        ),
        // Loss shapes (LossNLL.cpp): a 0-dim target never matches a batch.
        (
            "nll_loss 0-dim target, 2-d input",
            |d| op::nll_loss::call(&float(d, &[1, 3]), &zeros(d, Long, &[]), None, 1, -100),
            Expect::Error(
                IndexError,
                "Dimension specified as 0 but tensor has no dimensions",
            ),
        ),
        (
            "nll_loss_nd 0-dim target, 2-d input",
            |d| op::nll_loss_nd::call(&float(d, &[1, 3]), &zeros(d, Long, &[]), None, 1, -100),
            Expect::Error(
                ValueError,
                "Expected input batch_size (1) to match target batch_size (0).",
            ),
        ),
        (
            "cross_entropy_loss 0-dim target, 2-d input",
            |d| {
                op::cross_entropy_loss::call(
                    &float(d, &[1, 3]),
                    &zeros(d, Long, &[]),
                    None,
                    1,
                    -100,
                    0.0,
                )
            },
            Expect::Error(
                ValueError,
                "Expected input batch_size (1) to match target batch_size (0).",
            ),
        ),
        (
            "cross_entropy_loss smoothed, 0-dim target",
            |d| {
                op::cross_entropy_loss::call(
                    &float(d, &[1, 3]),
                    &zeros(d, Long, &[]),
                    None,
                    1,
                    -100,
                    0.1,
                )
            },
            Expect::Error(
                ValueError,
                "Expected input batch_size (1) to match target batch_size (0).",
            ),
        ),
        (
            "nll_loss 0-dim target, 1-d input",
            |d| op::nll_loss::call(&float(d, &[3]), &zeros(d, Long, &[]), None, 1, -100),
            Expect::Ok(&[], Float),
        ),
        (
            "nll_loss_forward weight of another dtype",
            |d| {
                let w = ramp(d, Double, &[3], 2);
                op::nll_loss_forward::call(
                    &float(d, &[2, 3]),
                    &zeros(d, Long, &[2]),
                    Some(&w),
                    1,
                    -100,
                )
                .map(|(l, _)| l)
            },
            Expect::Error(RuntimeError, "expected scalar type Float but found Double"),
        ),
        // Batch norm's dtype coverage comes before the parameters' dtype checks (a `Long`
        // input with `Float` statistics is not a "mixed dtype" error), on Meta too:
        // `torch._native_batch_norm_legit(torch.zeros(2, 3, dtype=torch.long), None, None,
        // torch.zeros(3), torch.ones(3), True, 0.1, 1e-5)`.
        (
            "_native_batch_norm_legit long input",
            |d| {
                op::_native_batch_norm_legit::call(
                    &zeros(d, Long, &[2, 3]),
                    None,
                    None,
                    &zeros(d, Float, &[3]),
                    &zeros(d, Float, &[3]),
                    true,
                    0.1,
                    1e-5,
                )
                .map(|(o, _, _)| o)
            },
            Expect::Error(
                ErrorKind::NotImplementedError,
                "\"batch_norm\" not implemented for 'Long'",
            ),
        ),
    ];
    check_on_both(cases);
}
