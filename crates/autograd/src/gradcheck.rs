//! `gradcheck` and `gradgradcheck` (PyTorch's `torch.autograd.gradcheck`): the Jacobian the
//! backward pass computes, compared with central finite differences, in double precision.
//!
//! For every differentiable input (a floating tensor that requires grad) and every element,
//! the numerical column is `(f(x + eps e_j) - f(x - eps e_j)) / 2 eps`; the analytical row of
//! each output element comes from a backward pass with a one-hot gradient. They must agree
//! within `atol + rtol * |numerical|` (PyTorch's defaults: eps 1e-6, atol 1e-5, rtol 1e-3).
//! Inputs keep their layout (a non-contiguous input is perturbed as a non-contiguous tensor).

use switchyard_core::{Error, Result, ScalarType, Tensor};
use switchyard_ops::op;

use crate::api::grad;
use crate::view::requires_grad;

/// Tolerances and step of [`gradcheck`].
#[derive(Clone, Copy, Debug)]
pub struct GradcheckOptions {
    /// Finite-difference step.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
        }
    }
}

/// A function under test: inputs to outputs.
pub type TestFn<'a> = dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a;

fn to_f64(t: &Tensor) -> Result<Vec<f64>> {
    let c = op::contiguous::call(t, switchyard_core::MemoryFormat::Contiguous)?;
    c.to_f64_vec()
}

/// A fresh tensor with `t`'s sizes and strides holding `values` (row-major order), so that a
/// perturbed input keeps its input's layout.
fn with_values_like(t: &Tensor, values: Vec<f64>) -> Result<Tensor> {
    let flat = Tensor::from_vec(values, &t.sizes())?;
    let flat = op::to_dtype::call(&flat, t.dtype(), false, false, None)?;
    // A layout whose elements share memory (an expanded output) cannot hold independent
    // values: those get a contiguous tensor (PyTorch's gradcheck uses contiguous
    // grad_outputs).
    if overlaps(&t.sizes(), &t.strides()) {
        return Ok(flat);
    }
    let out = op::empty_strided::call(
        &t.sizes(),
        &t.strides(),
        Some(t.dtype()),
        None,
        Some(t.device()),
        None,
    )?;
    op::copy_::call(&out, &flat, false)
}

/// Whether two elements of a strided layout may share a memory location.
fn overlaps(sizes: &[i64], strides: &[i64]) -> bool {
    let mut dims: Vec<(i64, i64)> = sizes
        .iter()
        .zip(strides)
        .filter(|(n, _)| **n > 1)
        .map(|(&n, &s)| (s.abs(), n))
        .collect();
    dims.sort_unstable();
    let mut extent = 0i64;
    for (stride, n) in dims {
        if stride <= extent {
            return true;
        }
        extent += (n - 1) * stride;
    }
    false
}

fn float_outputs(outs: &[Tensor]) -> Vec<usize> {
    (0..outs.len())
        .filter(|&i| outs[i].dtype().is_floating_point())
        .collect()
}

/// Checks the gradients of `f` at `inputs` against finite differences. Inputs that require
/// grad must be `float64`. Returns an error describing the first mismatch.
pub fn gradcheck(f: &TestFn<'_>, inputs: &[Tensor], options: GradcheckOptions) -> Result<()> {
    let diff: Vec<usize> = (0..inputs.len())
        .filter(|&i| requires_grad(&inputs[i]))
        .collect();
    for &i in &diff {
        if inputs[i].dtype() != ScalarType::Double {
            return Err(Error::runtime(format!(
                "gradcheck: input {i} requires grad but is {}; use float64 inputs",
                inputs[i].dtype().torch_name()
            )));
        }
    }
    let outs = f(inputs)?;
    let out_idx = float_outputs(&outs);
    let out_lens: Vec<usize> = out_idx.iter().map(|&o| outs[o].numel() as usize).collect();
    let n_outs = outs.len();
    // Numerical Jacobian: per input, per element, the column over all output elements.
    let mut numerical: Vec<Vec<Vec<f64>>> = Vec::new();
    for &i in &diff {
        let base = to_f64(&inputs[i])?;
        let mut cols = Vec::with_capacity(base.len());
        for j in 0..base.len() {
            let eval = |delta: f64| -> Result<Vec<f64>> {
                let mut v = base.clone();
                v[j] += delta;
                let x = with_values_like(&inputs[i], v)?;
                // The perturbed input stands for the input: it requires grad as the input
                // does (a function that differentiates inside, as gradgradcheck's does,
                // needs that).
                x.set_requires_grad(true)?;
                let mut args = inputs.to_vec();
                args[i] = x;
                let _no_grad = crate::mode::no_grad();
                let outs = f(&args)?;
                let mut all = Vec::new();
                for &o in &out_idx {
                    let out = outs.get(o).ok_or_else(|| {
                        Error::runtime(format!(
                            "gradcheck: the function returned {} outputs for a perturbed input, {} for the input",
                            outs.len(),
                            n_outs
                        ))
                    })?;
                    all.extend(to_f64(out)?);
                }
                Ok(all)
            };
            let plus = eval(options.eps)?;
            let minus = eval(-options.eps)?;
            cols.push(
                plus.iter()
                    .zip(&minus)
                    .map(|(p, m)| (p - m) / (2.0 * options.eps))
                    .collect::<Vec<f64>>(),
            );
        }
        numerical.push(cols);
    }
    // Analytical Jacobian, one output element at a time.
    let diff_inputs: Vec<Tensor> = diff.iter().map(|&i| inputs[i].clone()).collect();
    let mut row = 0usize;
    for (k, &o) in out_idx.iter().enumerate() {
        let out = &outs[o];
        for e in 0..out_lens[k] {
            let mut onehot = vec![0.0; out_lens[k]];
            onehot[e] = 1.0;
            let g = with_values_like(out, onehot)?;
            let grads = if requires_grad(out) {
                grad(
                    std::slice::from_ref(out),
                    &diff_inputs,
                    &[Some(g)],
                    Some(true),
                    false,
                    true,
                )?
            } else {
                vec![None; diff_inputs.len()]
            };
            for (d, gi) in grads.iter().enumerate() {
                let analytical = match gi {
                    Some(t) => to_f64(t)?,
                    None => vec![0.0; numerical[d].len()],
                };
                for (j, a) in analytical.iter().enumerate() {
                    let n = numerical[d][j][row];
                    if (a - n).abs() > options.atol + options.rtol * n.abs()
                        || a.is_nan() != n.is_nan()
                    {
                        return Err(Error::runtime(format!(
                            "Jacobian mismatch for output {o} with respect to input {}: element ({e}, {j}): numerical {n}, analytical {a}",
                            diff[d]
                        )));
                    }
                }
            }
            row += 1;
        }
    }
    Ok(())
}

/// Checks second-order gradients: the gradient of `f`'s backward pass (with random gradient
/// outputs) is checked by [`gradcheck`] (PyTorch's `gradgradcheck`).
pub fn gradgradcheck(f: &TestFn<'_>, inputs: &[Tensor], options: GradcheckOptions) -> Result<()> {
    let outs = f(inputs)?;
    let out_idx = float_outputs(&outs);
    let grad_outputs: Vec<Tensor> = out_idx
        .iter()
        .map(|&o| {
            let r = op::rand_like::call(&outs[o], None, None, None, None, None)?;
            let r = op::to_dtype::call(&r, ScalarType::Double, false, false, None)?;
            let r = op::contiguous::call(&r, switchyard_core::MemoryFormat::Contiguous)?;
            r.set_requires_grad(true)?;
            Ok(r)
        })
        .collect::<Result<_>>()?;
    let n_inputs = inputs.len();
    let diff: Vec<usize> = (0..n_inputs)
        .filter(|&i| requires_grad(&inputs[i]))
        .collect();
    let first_order = move |args: &[Tensor]| -> Result<Vec<Tensor>> {
        // The backward pass is differentiated: it records a graph even where gradcheck
        // evaluates it under no_grad for finite differences.
        let _grad_mode = crate::mode::enable_grad();
        let (xs, gos) = args.split_at(n_inputs);
        let outs = f(xs)?;
        let outs: Vec<Tensor> = out_idx.iter().map(|&o| outs[o].clone()).collect();
        let diff_inputs: Vec<Tensor> = diff.iter().map(|&i| xs[i].clone()).collect();
        let gos: Vec<Option<Tensor>> = gos.iter().cloned().map(Some).collect();
        let keep: Vec<(Tensor, Option<Tensor>)> = outs
            .into_iter()
            .zip(gos)
            .filter(|(o, _)| requires_grad(o))
            .collect();
        if keep.is_empty() {
            return Ok(Vec::new());
        }
        let (outs, gos): (Vec<Tensor>, Vec<Option<Tensor>>) = keep.into_iter().unzip();
        let gs = grad(&outs, &diff_inputs, &gos, Some(true), true, true)?;
        Ok(gs.into_iter().flatten().collect())
    };
    let mut args = inputs.to_vec();
    args.extend(grad_outputs);
    gradcheck(&first_order, &args, options)
}
