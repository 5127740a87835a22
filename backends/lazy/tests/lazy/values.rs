//! Lazy results against eager ones: each program runs once on CPU tensors and once on lazy
//! copies of them, synced by `mark_step` or by `to_cpu`.

use switchyard_core::{Result, Tensor};
use switchyard_ops::TensorOps;

use crate::support::{assert_close, sample, setup};

/// Runs `f` eagerly and lazily on `inputs`, syncing the lazy run with `mark_step`.
fn check(inputs: &[Tensor], f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>>) {
    let eager = f(inputs).unwrap();
    let lazy_in: Vec<Tensor> = inputs
        .iter()
        .map(|t| switchyard_lazy::to_lazy(t).unwrap())
        .collect();
    let lazy = f(&lazy_in).unwrap();
    for t in &lazy {
        assert!(switchyard_lazy::is_lazy(t));
    }
    switchyard_lazy::mark_step().unwrap();
    // Every operator was traced: none went through the CPU fallback.
    let fallbacks: Vec<String> = switchyard_lazy::counter_names()
        .into_iter()
        .filter(|n| n.starts_with("aten::"))
        .collect();
    assert!(fallbacks.is_empty(), "{fallbacks:?}");
    for (l, e) in lazy.iter().zip(&eager) {
        assert_close(l, e, 1e-5);
    }
}

#[test]
fn pointwise_chain() {
    let _g = setup();
    check(&[sample(&[3, 4], 1), sample(&[3, 4], 2)], |x| {
        let a = x[0].add(&x[1])?.mul(&x[0])?.exp()?.neg()?;
        Ok(vec![a])
    });
}

#[test]
fn scalars_comparisons_and_where() {
    let _g = setup();
    check(&[sample(&[2, 5], 3), sample(&[2, 5], 4)], |x| {
        let a = x[0].add_scalar(2.5)?.mul_scalar(-1.5)?;
        let b = x[0].pow_tensor_scalar(2)?.sub(&x[1])?;
        let c = x[0].gt_scalar(0.25)?;
        let d = x[0].lt(&x[1])?;
        let e = x[1]
            .eq(&x[1])?
            .to_dtype(switchyard_core::ScalarType::Float)?;
        let f = x[0].where_self(&c, &x[1])?;
        let g = x[0].maximum(&x[1])?.div(&x[1].abs()?.add_scalar(1.0)?)?;
        Ok(vec![a, b, c, d, e, f, g])
    });
}

#[test]
fn unary_functions() {
    let _g = setup();
    check(&[sample(&[4, 3], 5)], |x| {
        let p = x[0].abs()?.add_scalar(0.5)?;
        Ok(vec![
            x[0].tanh()?,
            x[0].relu()?,
            x[0].sigmoid()?,
            p.sqrt()?,
            p.log()?,
            x[0].neg()?.exp()?,
        ])
    });
}

#[test]
fn reductions() {
    let _g = setup();
    check(&[sample(&[3, 4, 5], 6)], |x| {
        Ok(vec![
            x[0].sum()?,
            x[0].sum_dim_intlist_with(Some(&[1]), true, None)?,
            x[0].mean_dim(Some(&[0, 2]))?,
            switchyard_ops::amax_with(&x[0], &[2], false)?,
        ])
    });
}

#[test]
fn matrix_products_and_nn() {
    let _g = setup();
    check(
        &[
            sample(&[4, 3], 7),
            sample(&[3, 5], 8),
            sample(&[5], 9),
            sample(&[5], 10),
        ],
        |x| {
            let mm = x[0].mm(&x[1])?;
            let addmm = x[2].addmm(&x[0], &x[1])?;
            let sm = mm.softmax(1)?;
            let lsm = mm.log_softmax(0)?;
            let (ln, mean, rstd) =
                switchyard_ops::native_layer_norm(&mm, &[5], Some(&x[2]), Some(&x[3]), 1e-5)?;
            Ok(vec![mm, addmm, sm, lsm, ln, mean, rstd])
        },
    );
}

#[test]
fn views_reach_the_backend_as_copies() {
    let _g = setup();
    check(&[sample(&[2, 3, 4], 11)], |x| {
        let v = x[0].view(&[6, 4])?;
        let p = x[0].permute(&[2, 0, 1])?;
        let t = v.t()?;
        let tr = x[0].transpose(0, 2)?;
        let e = x[0].select(1, 2)?.unsqueeze(0)?.expand(&[3, 2, 4])?;
        let n = x[0].narrow(2, 1, 2)?;
        let s = x[0].unsqueeze(1)?.squeeze_dim(1)?;
        // Views of views, then computation on them.
        let y = p.add(&tr.permute(&[0, 2, 1])?)?.mul_scalar(2)?;
        Ok(vec![v, p, t, tr, e, n, s, y])
    });
    assert!(crate::support::counter("lazy::view_copy") > 0);
    assert!(crate::support::counter("lazy::permute_copy") > 0);
    assert!(crate::support::counter("lazy::select_copy") > 0);
}

#[test]
fn in_place_on_views_writes_through_scatters() {
    let _g = setup();
    check(&[sample(&[3, 4], 12), sample(&[4], 13)], |x| {
        let base = x[0].mul_scalar(1.0)?; // a fresh tensor to mutate
        let row = base.select(0, 1)?;
        row.add_(&x[1])?;
        let cols = base.narrow(1, 1, 2)?;
        cols.mul_(&cols)?;
        let tr = base.t()?;
        tr.select(0, 3)?
            .fill_(&Tensor::from_slice(&[7.0f32])?.view(&[])?)?;
        Ok(vec![base, row, cols])
    });
    assert!(crate::support::counter("lazy::select_scatter") > 0);
    assert!(crate::support::counter("lazy::slice_scatter") > 0);
}

#[test]
fn to_cpu_without_mark_step_and_fallback_operators() {
    let _g = setup();
    let x = sample(&[5], 14);
    let lx = switchyard_lazy::to_lazy(&x).unwrap();
    // `nonzero` is not in backend.yaml (its result's size is data): it runs through the CPU
    // fallback, counted.
    let nz = |t: &Tensor| {
        switchyard_ops::op::nonzero::call(
            &switchyard_ops::op::gt_Scalar::call(t, 0.into()).unwrap(),
        )
        .unwrap()
    };
    let ly = nz(&lx).add(&nz(&lx)).unwrap();
    assert_close(&ly, &nz(&x).add(&nz(&x)).unwrap(), 0.0);
    assert_eq!(crate::support::counter("aten::nonzero"), 2);
    assert_eq!(crate::support::counter("lazy::add"), 1);
}

#[test]
fn type_promotion_and_integer_tensors() {
    let _g = setup();
    let i = Tensor::from_vec(vec![1i64, -2, 3, 4], &[4]).unwrap();
    let f = sample(&[4], 15);
    check(&[i, f], |x| {
        Ok(vec![
            x[0].add(&x[1])?,
            x[0].mul_scalar(3)?,
            x[0].add_scalar(0.5)?,
            x[0].sum()?,
        ])
    });
}

/// Lazy tensors used below the functionalization layer (as the fallback and the layer itself
/// use them): in-place and out= calls go through the generated wrappers and `_copy_from`.
#[test]
fn plain_lazy_tensors_in_place_and_out() {
    use switchyard_core::local_dispatch::ExcludeDispatchKeyGuard;
    use switchyard_core::{DispatchKey, DispatchKeySet};
    let _g = setup();
    let (x, y) = (sample(&[2, 3], 16), sample(&[2, 3], 17));
    let _below = ExcludeDispatchKeyGuard::new(DispatchKeySet::from_key(DispatchKey::Functionalize));
    let (lx, ly) = (
        switchyard_lazy::to_lazy(&x).unwrap(),
        switchyard_lazy::to_lazy(&y).unwrap(),
    );
    assert!(!switchyard_functionalize::is_functional(&lx));
    // In place through the generated wrapper: add.Tensor traced, then copied into `lx`.
    lx.add_(&ly).unwrap();
    let ex = x.add(&y).unwrap();
    // out= of a traced operator, and of a fallback operator into an empty out (resized).
    let out =
        switchyard_lazy::to_lazy(&Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap()).unwrap();
    switchyard_ops::mul_out(&lx, &ly, &out).unwrap();
    let out2 =
        switchyard_lazy::to_lazy(&Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap()).unwrap();
    switchyard_ops::cos_out(&lx, &out2).unwrap();
    let c = lx.clone_with(None).unwrap();
    switchyard_lazy::mark_step().unwrap();
    assert_close(&lx, &ex, 1e-6);
    assert_close(&out, &ex.mul(&y).unwrap(), 1e-6);
    assert_close(&out2, &ex.cos().unwrap(), 1e-6);
    assert_close(&c, &ex, 0.0);
}

/// Batch norm in training mode writes its running statistics: on lazy tensors it reaches the
/// backend as `_native_batch_norm_legit_functional` (functionalization's variant of the
/// mutating `_native_batch_norm_legit`), traced; outputs and updated statistics equal eager's.
#[test]
fn batch_norm_training_traces_the_functional_variant_and_updates_running_stats() {
    let _g = setup();
    let run = |x: &[Tensor]| -> Result<Vec<Tensor>> {
        // Statistics copied first: `check` runs eagerly on the inputs it then moves to lazy.
        let (rm, rv) = (&x[3].clone_with(None)?, &x[4].clone_with(None)?);
        let (input, w, b) = (&x[0], &x[1], &x[2]);
        let (y, mean, invstd) = switchyard_ops::native_batch_norm(
            input,
            Some(w),
            Some(b),
            Some(rm),
            Some(rv),
            true,
            0.1,
            1e-5,
        )?;
        let (y2, _, _) = switchyard_ops::op::_native_batch_norm_legit::call(
            input, None, None, rm, rv, true, 0.3, 1e-5,
        )?;
        let (y3, _, _) = switchyard_ops::native_batch_norm(
            input,
            Some(w),
            None,
            Some(rm),
            Some(rv),
            false,
            0.1,
            1e-5,
        )?;
        Ok(vec![
            y,
            mean,
            invstd,
            y2,
            y3,
            rm.clone_with(None)?,
            rv.clone_with(None)?,
        ])
    };
    let rv = sample(&[3], 5).abs().unwrap().add_scalar(0.5).unwrap();
    let inputs = [
        sample(&[4, 3, 2, 2], 1),
        sample(&[3], 2),
        sample(&[3], 3),
        sample(&[3], 4),
        rv,
    ];
    check(&inputs, run);
    assert!(crate::support::counter("lazy::_native_batch_norm_legit_functional") >= 2);
}

/// The generated out= wrapper around `_native_batch_norm_legit_functional` (plain lazy tensors,
/// below the functionalization layer): the three outs are written, and so are the running
/// statistics, as the CPU's `_native_batch_norm_legit.out` kernel writes them.
#[test]
fn batch_norm_out_wrapper_writes_outs_and_running_stats() {
    use switchyard_core::local_dispatch::ExcludeDispatchKeyGuard;
    use switchyard_core::{DispatchKey, DispatchKeySet};
    let _g = setup();
    let input = sample(&[4, 3, 2], 6);
    let (rm, rv) = (
        sample(&[3], 7),
        sample(&[3], 8).abs().unwrap().add_scalar(1.0).unwrap(),
    );
    let empty = || Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap();
    // Eager: the CPU kernel.
    let (erm, erv) = (rm.clone_with(None).unwrap(), rv.clone_with(None).unwrap());
    let eouts = [empty(), empty(), empty()];
    switchyard_ops::op::_native_batch_norm_legit_out::call(
        &input, None, None, &erm, &erv, true, 0.2, 1e-5, &eouts[0], &eouts[1], &eouts[2],
    )
    .unwrap();
    let _below = ExcludeDispatchKeyGuard::new(DispatchKeySet::from_key(DispatchKey::Functionalize));
    let lazy = |t: &Tensor| switchyard_lazy::to_lazy(t).unwrap();
    let (li, lrm, lrv) = (lazy(&input), lazy(&rm), lazy(&rv));
    let louts = [lazy(&empty()), lazy(&empty()), lazy(&empty())];
    switchyard_lazy::reset_metrics();
    let r = switchyard_ops::op::_native_batch_norm_legit_out::call(
        &li, None, None, &lrm, &lrv, true, 0.2, 1e-5, &louts[0], &louts[1], &louts[2],
    )
    .unwrap();
    assert!(r.0.is_same(&louts[0]) && r.2.is_same(&louts[2]));
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(
        crate::support::counter("lazy::_native_batch_norm_legit_functional"),
        1
    );
    for (l, e) in louts.iter().zip(&eouts) {
        assert_close(l, e, 1e-5);
    }
    assert_close(&lrm, &erm, 1e-6);
    assert_close(&lrv, &erv, 1e-6);
    // The statistics moved (training), so the check above is not vacuous.
    assert_ne!(erm.to_vec::<f32>().unwrap(), rm.to_vec::<f32>().unwrap());
}

/// An in-place write into an empty tensor with a zero stride (an expanded `[1, 0]`, and a
/// view of it): nothing is written, so nothing overlaps. Eager and PyTorch accept it (an
/// empty tensor is contiguous, hence non-overlapping and dense); lazy refused it with the
/// internal-overlap error.
#[test]
fn in_place_writes_into_empty_expanded_tensors() {
    let _g = setup();
    check(&[sample(&[1, 0], 14), sample(&[3, 0], 15)], |x| {
        let base = x[0].mul_scalar(1.0)?;
        let wide = base.expand(&[3, 0])?;
        assert_eq!(wide.strides().as_slice(), &[0, 1]);
        wide.add_(&x[1])?;
        wide.mul_scalar_(2.0)?;
        wide.t()?
            .fill_(&Tensor::from_slice(&[7.0f32])?.view(&[])?)?;
        Ok(vec![base, wide])
    });
}
