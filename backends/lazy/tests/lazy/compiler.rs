//! The fusing compiler (plan §5): each pass visible in the program text, and programs run
//! eagerly on the CPU, lazily through the naive backend and lazily through the compiler giving
//! the same results — bit for bit where only element-wise operators (fused or not) and views
//! are involved; reductions over an elided view read it strided where the naive program reads a
//! contiguous copy, so their sums may round differently in the last bits.

use switchyard_core::{Result, Scalar, ScalarType, Tensor};
use switchyard_lazy::compiler::{CompilerKind, set_compiler};
use switchyard_ops::{TensorOps, op};

use crate::support::{counter, sample, setup};

/// Restores the default compiler when a test ends (even by a failed assertion).
struct Fusing;
impl Drop for Fusing {
    fn drop(&mut self) {
        set_compiler(CompilerKind::Fusing);
    }
}

fn bits(t: &Tensor) -> (Vec<i64>, ScalarType, Vec<u64>) {
    let cpu = if switchyard_lazy::is_lazy(t) {
        switchyard_lazy::to_cpu(t).unwrap()
    } else {
        Clone::clone(t)
    };
    let c = op::clone::call(&cpu, Some(switchyard_core::MemoryFormat::Contiguous)).unwrap();
    let v = match c.dtype() {
        ScalarType::Double => c
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect(),
        ScalarType::Float => c
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|x| u64::from(x.to_bits()))
            .collect(),
        _ => {
            let f = op::_to_copy::call(&c, Some(ScalarType::Double), None, None, None, false, None)
                .unwrap();
            f.to_vec::<f64>()
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect()
        }
    };
    (cpu.sizes().to_vec(), cpu.dtype(), v)
}

fn strides(t: &Tensor) -> Vec<i64> {
    let cpu = switchyard_lazy::to_cpu(t).unwrap();
    cpu.geometry().strides().to_vec()
}

/// Runs `f` lazily on copies of `inputs` with `kind`, `mark_step`, returns the results and
/// the program text of that step.
fn run_lazy(
    kind: CompilerKind,
    inputs: &[Tensor],
    f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>,
) -> (Vec<Tensor>, String) {
    set_compiler(kind);
    let lazy_in: Vec<Tensor> = inputs
        .iter()
        .map(|t| switchyard_lazy::to_lazy(t).unwrap())
        .collect();
    switchyard_lazy::mark_step().unwrap();
    let out = f(&lazy_in).unwrap();
    let hash = switchyard_lazy::get_graph_hash(&out).unwrap();
    switchyard_lazy::mark_step().unwrap();
    let text = hash
        .and_then(switchyard_lazy::executor::program_text)
        .unwrap_or_default();
    (out, text)
}

/// `f` eagerly, naively and compiled: equal bits (`exact`) or within 1e-5 relative.
fn check(inputs: &[Tensor], exact: bool, f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>) -> String {
    let _restore = Fusing;
    let eager = f(inputs).unwrap();
    let (naive, _) = run_lazy(CompilerKind::Naive, inputs, f);
    let (fused, text) = run_lazy(CompilerKind::Fusing, inputs, f);
    for (k, ((e, n), c)) in eager.iter().zip(&naive).zip(&fused).enumerate() {
        let (eb, nb, cb) = (bits(e), bits(n), bits(c));
        assert_eq!(eb.0, cb.0, "output {k}: sizes\n{text}");
        assert_eq!(eb.1, cb.1, "output {k}: dtype\n{text}");
        assert_eq!(strides(n), strides(c), "output {k}: strides\n{text}");
        if exact {
            assert_eq!(eb.2, nb.2, "output {k}: naive vs eager");
            assert_eq!(eb.2, cb.2, "output {k}: compiled vs eager\n{text}");
        } else {
            for (i, ((a, b), c)) in eb.2.iter().zip(&nb.2).zip(&cb.2).enumerate() {
                let val = |x: u64| {
                    if eb.1 == ScalarType::Float {
                        f64::from(f32::from_bits(x as u32))
                    } else {
                        f64::from_bits(x)
                    }
                };
                for (what, y) in [("naive", val(*b)), ("compiled", val(*c))] {
                    let x = val(*a);
                    assert!(
                        (x - y).abs() <= 1e-5 * (1.0 + x.abs()) || (x.is_nan() && y.is_nan()),
                        "output {k} element {i}: {what} {y} vs eager {x}\n{text}"
                    );
                }
            }
        }
    }
    text
}

fn chain8(x: &Tensor) -> Result<Tensor> {
    let mut y = x.mul_scalar(2.0)?;
    y = y.add_scalar(1.0)?;
    y = y.sin()?;
    y = y.mul(&y)?;
    y = y.sub_scalar(0.5)?;
    y = y.exp()?;
    y = y.div_scalar(3.0)?;
    y.relu()
}

#[test]
fn chain8_is_one_fused_loop_with_eager_bits() {
    let _g = setup();
    for n in [1000i64, 100_003] {
        let text = check(&[sample(&[n], 21)], true, &|x| Ok(vec![chain8(&x[0])?]));
        assert!(
            text.contains("fused[mul, add, sin, mul, sub, exp, div, relu]"),
            "{text}"
        );
        assert!(!text.contains("aten::"), "{text}");
    }
    // Double too.
    let x = op::_to_copy::call(
        &sample(&[77, 13], 22),
        Some(ScalarType::Double),
        None,
        None,
        None,
        false,
        None,
    )
    .unwrap();
    check(&[x], true, &|x| Ok(vec![chain8(&x[0])?]));
}

/// ReLU's backward as autograd traces it (`le.Scalar` then `where.ScalarSelf`, see
/// `switchyard_autograd::manual::threshold_backward`): one fused `where_le`, the mask never
/// materialised, with eager's bits on NaN, ±0, ±inf and the threshold itself, in Float and
/// Double; a mask used twice stays an eager kernel.
#[test]
fn relu_backward_is_one_fused_where_le_with_eager_bits() {
    let _g = setup();
    let special = [
        f32::NAN,
        -0.0,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.25,
        -0.25,
        1e-30,
    ];
    let mut r: Vec<f32> = sample(&[64, 64], 31).to_vec::<f32>().unwrap();
    let mut g: Vec<f32> = sample(&[64, 64], 32).to_vec::<f32>().unwrap();
    for (i, v) in special.iter().enumerate() {
        r[i] = *v;
        g[i + 8] = *v;
        r[i + 16] = *v;
        g[i + 16] = special[(i + 3) % special.len()];
    }
    let r = Tensor::from_vec(r, &[64, 64]).unwrap();
    let g = Tensor::from_vec(g, &[64, 64]).unwrap();
    let backward = |x: &[Tensor], t: f64| -> Result<Tensor> {
        let relu_out = x[0].relu()?;
        let mask = op::le_Scalar::call(&relu_out, Scalar::Float(t))?;
        op::where_ScalarSelf::call(&mask, Scalar::Int(0), &x[1])
    };
    for t in [0.0, 0.25] {
        let text = check(&[Clone::clone(&r), Clone::clone(&g)], true, &|x| {
            Ok(vec![backward(x, t)?])
        });
        assert!(text.contains("fused[where_le]"), "{text}");
        assert!(!text.contains("aten::le"), "{text}");
    }
    let to_double = |t: &Tensor| {
        op::_to_copy::call(t, Some(ScalarType::Double), None, None, None, false, None).unwrap()
    };
    let text = check(&[to_double(&r), to_double(&g)], true, &|x| {
        Ok(vec![backward(x, 0.0)?])
    });
    assert!(text.contains("fused[where_le]"), "{text}");
    // The mask is also a result: computed by eager's kernel, and the `where` with it.
    let text = check(&[r, g], true, &|x| {
        let mask = op::le_Scalar::call(&x[0], Scalar::Float(0.0))?;
        Ok(vec![
            op::where_ScalarSelf::call(&mask, Scalar::Int(0), &x[1])?,
            mask,
        ])
    });
    assert!(text.contains("aten::le.Scalar"), "{text}");
    assert!(!text.contains("where_le"), "{text}");
}

#[test]
fn cse_merges_repeated_subexpressions() {
    let _g = setup();
    let text = check(&[sample(&[4, 5], 23)], true, &|x| {
        let a = x[0].exp()?.mul_scalar(3.0)?;
        let b = x[0].exp()?.mul_scalar(3.0)?;
        Ok(vec![a.add(&b)?])
    });
    assert!(text.contains("# cse 2,"), "{text}");
    // exp and mul (merged) are used twice by one add: one group of three operations.
    assert!(text.contains("fused[exp, mul, add]"), "{text}");
}

#[test]
fn a_value_used_outside_its_chain_ends_a_group() {
    let _g = setup();
    let text = check(&[sample(&[6, 7], 24), sample(&[7], 25)], true, &|x| {
        let a = x[0].tanh()?.add(&x[1])?; // broadcast input
        let b = a.sigmoid()?.sqrt()?;
        let c = a.neg()?.maximum(&b)?; // `a` used twice: the end of its group
        Ok(vec![b, c])
    });
    assert!(text.contains("fused[tanh, add]"), "{text}");
    assert!(text.contains("fused[sigmoid, sqrt]"), "{text}");
    assert!(text.contains("fused[neg, maximum]"), "{text}");
}

#[test]
fn view_copies_inside_the_program_become_views() {
    let _g = setup();
    let text = check(&[sample(&[3, 4, 5], 26), sample(&[5, 4], 27)], true, &|x| {
        let t = x[0].transpose(1, 2)?; // [3, 5, 4], read strided
        let y = t.mul(&x[1])?.exp()?;
        let s = x[0].narrow(2, 1, 3)?.unsqueeze(0)?.expand(&[2, 3, 4, 3])?;
        let z = s.sin()?;
        let w = x[0].view(&[12, 5])?; // a root: stays a copy
        Ok(vec![y, z, w])
    });
    assert!(text.contains("view aten::transpose_copy.int"), "{text}");
    assert!(text.contains("view aten::expand_copy"), "{text}");
    assert!(text.contains("= aten::view_copy("), "{text}");
    assert!(counter("lazy::transpose_copy") > 0);
}

#[test]
fn views_feeding_kernels_keep_the_promised_layout() {
    let _g = setup();
    // `relu` of a permuted view would follow the view's layout on the CPU; the lazy tensor
    // promised the layout of `relu` on the contiguous copy.
    check(&[sample(&[2, 3, 4], 28)], true, &|x| {
        let p = x[0].permute(&[2, 0, 1])?;
        let r = op::abs::call(&p)?; // not fused: a Call on the view
        Ok(vec![r])
    });
}

#[test]
fn dead_code_and_unused_values_are_freed() {
    let _g = setup();
    let text = check(&[sample(&[8, 8], 29)], true, &|x| {
        let a = x[0].exp()?;
        let b = op::abs::call(&a)?; // not fusible: a Call, then `a` is dead
        let c = b.sum()?;
        Ok(vec![c])
    });
    assert!(text.contains("free %"), "{text}");
}

#[test]
fn reductions_and_nn_after_fused_producers() {
    let _g = setup();
    check(&[sample(&[16, 64], 30), sample(&[64], 31)], false, &|x| {
        let e = x[0].mul_scalar(1.5)?.sub_scalar(0.25)?;
        let sm = e.softmax(1)?;
        let lsm = x[0].tanh()?.add(&x[0])?.log_softmax(1)?;
        let ln =
            op::native_layer_norm::call(&x[0].tanh()?.add(&x[0])?, &[64], Some(&x[1]), None, 1e-5)?
                .0;
        let s = x[0].exp()?.sum_dim_intlist(Some(&[1]))?;
        let m = x[0].t()?.relu()?.mean_dim(Some(&[0]))?;
        Ok(vec![sm, lsm, ln, s, m])
    });
}

#[test]
fn a_cached_step_compiles_nothing_and_scalars_are_parameters() {
    let _g = setup();
    let _restore = Fusing;
    set_compiler(CompilerKind::Fusing);
    let x = switchyard_lazy::to_lazy(&sample(&[256], 32)).unwrap();
    switchyard_lazy::mark_step().unwrap();
    for (step, alpha) in [0.5f64, 0.25, 2.0].into_iter().enumerate() {
        let y = op::add_Tensor::call(&x.exp().unwrap(), &x, Scalar::Float(alpha))
            .unwrap()
            .mul_scalar(alpha)
            .unwrap();
        switchyard_lazy::mark_step().unwrap();
        let ex = sample(&[256], 32);
        let want = op::add_Tensor::call(&ex.exp().unwrap(), &ex, Scalar::Float(alpha))
            .unwrap()
            .mul_scalar(alpha)
            .unwrap();
        assert_eq!(bits(&y), bits(&want), "step {step}");
        assert_eq!(counter("UncachedCompile"), 1, "step {step}");
        assert_eq!(counter("CachedCompile"), step as u64, "step {step}");
    }
}

/// chain8 with its first factor `s` (a lifted scalar: every `s` runs the same program).
fn chain8_with(x: &Tensor, s: f64) -> Result<Tensor> {
    let y = x.mul_scalar(s)?.add_scalar(1.0)?.sin()?;
    y.mul(&y)?.sub_scalar(0.5)?.exp()?.div_scalar(3.0)?.relu()
}

#[test]
fn a_fused_output_is_reused_only_when_nothing_holds_it() {
    let _g = setup();
    let _restore = Fusing;
    set_compiler(CompilerKind::Fusing);
    // 1 MiB outputs: large enough to be kept between runs.
    let n = 1 << 18;
    let ex = sample(&[n], 40);
    let x = switchyard_lazy::to_lazy(&ex).unwrap();
    let rows = sample(&[256, 1024], 41);
    let lrows = switchyard_lazy::to_lazy(&rows).unwrap();
    switchyard_lazy::mark_step().unwrap();
    let step = |s: f64| {
        let y = chain8_with(&x, s).unwrap();
        let sm = lrows.mul_scalar(s).unwrap().softmax(1).unwrap();
        switchyard_lazy::mark_step().unwrap();
        (y, sm)
    };
    let want = |s: f64| {
        (
            bits(&chain8_with(&ex, s).unwrap()),
            bits(&rows.mul_scalar(s).unwrap().softmax(1).unwrap()),
        )
    };
    // Results kept by the user are never written by a later run; values read from them to the
    // CPU are copies, which outlive the lazy tensor's buffer.
    let (y1, sm1) = step(2.0);
    let compiled = counter("UncachedCompile");
    // (Not 3.0: a factor equal to the chain's divisor shares its parameter, another graph.)
    let (y2, sm2) = step(2.5);
    let (c2, csm2) = (
        switchyard_lazy::to_cpu(&y2).unwrap(),
        switchyard_lazy::to_cpu(&sm2).unwrap(),
    );
    drop((y2, sm2));
    // Step 2's lazy results are gone: step 3 writes into their buffers; step 1's are kept, so
    // step 2 wrote new ones.
    let (y3, sm3) = step(4.0);
    assert_eq!(counter("FusedOutputReused"), 2);
    assert_eq!((bits(&y1), bits(&sm1)), want(2.0));
    assert_eq!((bits(&c2), bits(&csm2)), want(2.5));
    assert_eq!((bits(&y3), bits(&sm3)), want(4.0));
    // Dropped results: their buffers take the next run's values.
    drop((y1, sm1, c2, csm2, y3, sm3));
    for (k, s) in [5.0, 6.0, -1.5].into_iter().enumerate() {
        let (y, sm) = step(s);
        assert_eq!(counter("FusedOutputReused"), 2 * (k as u64 + 2), "run {k}");
        assert_eq!((bits(&y), bits(&sm)), want(s), "run {k}");
    }
    // Every step ran the program compiled for the first.
    assert_eq!(counter("UncachedCompile"), compiled);
}

#[test]
fn producers_fuse_into_softmax_rows_with_eager_bits() {
    let _g = setup();
    let text = check(&[sample(&[64, 1024], 33)], true, &|x| {
        let sm = x[0].mul_scalar(1.5)?.sub_scalar(0.25)?.softmax(1)?;
        let lsm = x[0].tanh()?.add(&x[0])?.log_softmax(-1)?;
        // Not the last dimension: the producer materialises, softmax is the eager kernel.
        let other = x[0].exp()?.softmax(0)?;
        Ok(vec![sm, lsm, other])
    });
    assert!(
        text.contains("fused[mul, sub] -> softmax(dim=-1)"),
        "{text}"
    );
    assert!(
        text.contains("fused[tanh, add] -> log_softmax(dim=-1)"),
        "{text}"
    );
    assert!(text.contains("aten::_softmax("), "{text}");
}
