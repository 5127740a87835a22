//! Optimizers with PyTorch's exact update rules (`torch.optim.SGD`, `Adam`, `AdamW`, the
//! single-tensor "for-loop" implementations), run without recording gradients.

use switchyard_autograd::{AutogradTensor, no_grad};
use switchyard_core::format::python_float_repr;
use switchyard_core::{Error, MemoryFormat, Result, Scalar, Tensor};
use switchyard_ops::op;

/// An optimizer over a list of parameters.
pub trait Optimizer {
    /// Updates every parameter that has a gradient.
    fn step(&mut self) -> Result<()>;

    /// The parameters it updates.
    fn params(&self) -> &[Tensor];

    /// Clears the parameters' gradients (`zero_grad(set_to_none=True)`).
    fn zero_grad(&self) -> Result<()> {
        for p in self.params() {
            p.set_grad(None)?;
        }
        Ok(())
    }

    /// The learning rate.
    fn lr(&self) -> f64;

    /// Changes the learning rate (what a scheduler does).
    fn set_lr(&mut self, lr: f64);
}

fn check_non_negative(what: &str, v: f64) -> Result<()> {
    if v < 0.0 {
        return Err(Error::value(format!(
            "Invalid {what}: {}",
            python_float_repr(v)
        )));
    }
    Ok(())
}

fn s(v: f64) -> Scalar {
    Scalar::Float(v)
}

/// Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay
/// (`torch.optim.SGD`).
pub struct Sgd {
    params: Vec<Tensor>,
    /// Learning rate.
    pub lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
    momentum_buffers: Vec<Option<Tensor>>,
}

/// The hyper-parameters of [`Sgd`] besides the learning rate (PyTorch's defaults: all zero,
/// no Nesterov, minimising).
#[derive(Clone, Copy, Debug, Default)]
pub struct SgdOptions {
    /// Momentum factor.
    pub momentum: f64,
    /// Dampening of the momentum.
    pub dampening: f64,
    /// L2 penalty.
    pub weight_decay: f64,
    /// Nesterov momentum.
    pub nesterov: bool,
    /// Maximise instead of minimise.
    pub maximize: bool,
}

impl Sgd {
    /// An SGD optimizer (PyTorch's argument checks and messages).
    pub fn new(params: Vec<Tensor>, lr: f64, o: SgdOptions) -> Result<Sgd> {
        check_non_negative("learning rate", lr)?;
        check_non_negative("momentum value", o.momentum)?;
        check_non_negative("weight_decay value", o.weight_decay)?;
        if o.nesterov && (o.momentum <= 0.0 || o.dampening != 0.0) {
            return Err(Error::value(
                "Nesterov momentum requires a momentum and zero dampening",
            ));
        }
        let n = params.len();
        Ok(Sgd {
            params,
            lr,
            momentum: o.momentum,
            dampening: o.dampening,
            weight_decay: o.weight_decay,
            nesterov: o.nesterov,
            maximize: o.maximize,
            momentum_buffers: vec![None; n],
        })
    }
}

impl Optimizer for Sgd {
    fn step(&mut self) -> Result<()> {
        let _guard = no_grad();
        for (i, p) in self.params.iter().enumerate() {
            let Some(g) = p.grad() else { continue };
            let mut grad = if self.maximize { op::neg::call(&g)? } else { g };
            if self.weight_decay != 0.0 {
                grad = op::add_Tensor::call(&grad, p, s(self.weight_decay))?;
            }
            if self.momentum != 0.0 {
                let buf = match &self.momentum_buffers[i] {
                    None => {
                        let b = op::clone::call(&grad, None)?;
                        self.momentum_buffers[i] = Some(b.clone());
                        b
                    }
                    Some(b) => {
                        op::mul__Scalar::call(b, s(self.momentum))?;
                        op::add__Tensor::call(b, &grad, s(1.0 - self.dampening))?;
                        b.clone()
                    }
                };
                grad = if self.nesterov {
                    op::add_Tensor::call(&grad, &buf, s(self.momentum))?
                } else {
                    buf
                };
            }
            op::add__Tensor::call(p, &grad, s(-self.lr))?;
        }
        Ok(())
    }

    fn params(&self) -> &[Tensor] {
        &self.params
    }

    fn lr(&self) -> f64 {
        self.lr
    }

    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
}

/// The hyper-parameters of [`Adam`] / [`AdamW`] besides the learning rate.
#[derive(Clone, Copy, Debug)]
pub struct AdamOptions {
    /// Decay rates of the first and second moment estimates.
    pub betas: (f64, f64),
    /// Added to the denominator.
    pub eps: f64,
    /// Weight decay (L2 for Adam, decoupled for AdamW).
    pub weight_decay: f64,
    /// Use the maximum of past second moments (AMSGrad).
    pub amsgrad: bool,
    /// Maximise instead of minimise.
    pub maximize: bool,
}

impl AdamOptions {
    /// PyTorch's `Adam` defaults: betas (0.9, 0.999), eps 1e-8, no weight decay.
    pub fn adam() -> AdamOptions {
        AdamOptions {
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
        }
    }

    /// PyTorch's `AdamW` defaults: as Adam's with weight decay 0.01.
    pub fn adamw() -> AdamOptions {
        AdamOptions {
            weight_decay: 1e-2,
            ..AdamOptions::adam()
        }
    }
}

struct AdamState {
    step: u64,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    max_exp_avg_sq: Option<Tensor>,
}

/// Adam (`torch.optim.Adam`), or AdamW (`torch.optim.AdamW`) with `decoupled` weight decay.
pub struct Adam {
    params: Vec<Tensor>,
    /// Learning rate.
    pub lr: f64,
    o: AdamOptions,
    decoupled: bool,
    state: Vec<Option<AdamState>>,
}

/// AdamW is Adam with decoupled weight decay.
pub type AdamW = Adam;

impl Adam {
    fn build(params: Vec<Tensor>, lr: f64, o: AdamOptions, decoupled: bool) -> Result<Adam> {
        check_non_negative("learning rate", lr)?;
        check_non_negative("epsilon value", o.eps)?;
        if !(0.0..1.0).contains(&o.betas.0) {
            return Err(Error::value(format!(
                "Invalid beta parameter at index 0: {}",
                python_float_repr(o.betas.0)
            )));
        }
        if !(0.0..1.0).contains(&o.betas.1) {
            return Err(Error::value(format!(
                "Invalid beta parameter at index 1: {}",
                python_float_repr(o.betas.1)
            )));
        }
        check_non_negative("weight_decay value", o.weight_decay)?;
        let n = params.len();
        Ok(Adam {
            params,
            lr,
            o,
            decoupled,
            state: (0..n).map(|_| None).collect(),
        })
    }

    /// Adam (L2 weight decay added to the gradient).
    pub fn new(params: Vec<Tensor>, lr: f64, o: AdamOptions) -> Result<Adam> {
        Adam::build(params, lr, o, false)
    }

    /// AdamW (weight decay applied to the parameter directly, scaled by the learning rate).
    pub fn new_adamw(params: Vec<Tensor>, lr: f64, o: AdamOptions) -> Result<AdamW> {
        Adam::build(params, lr, o, true)
    }
}

/// `a.lerp_(b, w)` as PyTorch's CPU kernel computes it (from the nearer end).
fn lerp_(a: &Tensor, b: &Tensor, w: f64) -> Result<()> {
    let diff = op::sub_Tensor::call(b, a, s(1.0))?;
    if w < 0.5 {
        op::add__Tensor::call(a, &diff, s(w))?;
    } else {
        let v = op::sub_Tensor::call(b, &diff, s(1.0 - w))?;
        op::copy_::call(a, &v, false)?;
    }
    Ok(())
}

impl Optimizer for Adam {
    fn step(&mut self) -> Result<()> {
        let _guard = no_grad();
        let (beta1, beta2) = self.o.betas;
        for (i, p) in self.params.iter().enumerate() {
            let Some(g) = p.grad() else { continue };
            let mut grad = if self.o.maximize {
                op::neg::call(&g)?
            } else {
                g
            };
            if self.state[i].is_none() {
                let zeros = || {
                    op::zeros_like::call(p, None, None, None, None, Some(MemoryFormat::Preserve))
                };
                self.state[i] = Some(AdamState {
                    step: 0,
                    exp_avg: zeros()?,
                    exp_avg_sq: zeros()?,
                    max_exp_avg_sq: if self.o.amsgrad { Some(zeros()?) } else { None },
                });
            }
            let Some(st) = self.state[i].as_mut() else {
                continue;
            };
            st.step += 1;
            if self.o.weight_decay != 0.0 {
                if self.decoupled {
                    op::mul__Scalar::call(p, s(1.0 - self.lr * self.o.weight_decay))?;
                } else {
                    grad = op::add_Tensor::call(&grad, p, s(self.o.weight_decay))?;
                }
            }
            lerp_(&st.exp_avg, &grad, 1.0 - beta1)?;
            let sq = op::mul_Tensor::call(&grad, &grad)?;
            op::mul__Scalar::call(&st.exp_avg_sq, s(beta2))?;
            op::add__Tensor::call(&st.exp_avg_sq, &sq, s(1.0 - beta2))?;
            let step = st.step as f64;
            let bias_correction1 = 1.0 - beta1.powf(step);
            let bias_correction2 = 1.0 - beta2.powf(step);
            let step_size = self.lr / bias_correction1;
            let bias_correction2_sqrt = bias_correction2.sqrt();
            let second = match &st.max_exp_avg_sq {
                Some(m) => {
                    op::maximum_out::call(m, &st.exp_avg_sq, m)?;
                    m.clone()
                }
                None => st.exp_avg_sq.clone(),
            };
            let denom = op::div_Scalar::call(&op::sqrt::call(&second)?, s(bias_correction2_sqrt))?;
            op::add__Scalar::call(&denom, s(self.o.eps), s(1.0))?;
            let update = op::div_Tensor::call(&st.exp_avg, &denom)?;
            op::add__Tensor::call(p, &update, s(-step_size))?;
        }
        Ok(())
    }

    fn params(&self) -> &[Tensor] {
        &self.params
    }

    fn lr(&self) -> f64 {
        self.lr
    }

    fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }
}

/// Scales the gradients of `params` so that their total `norm_type`-norm is at most
/// `max_norm` (`torch.nn.utils.clip_grad_norm_`); returns the total norm before clipping.
pub fn clip_grad_norm_(
    params: &[Tensor],
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<Tensor> {
    let _guard = no_grad();
    let grads: Vec<Tensor> = params.iter().filter_map(|p| p.grad()).collect();
    if grads.is_empty() {
        return Tensor::scalar_tensor(Scalar::Float(0.0));
    }
    let norms = grads
        .iter()
        .map(|g| op::linalg_vector_norm::call(g, s(norm_type), None, false, None))
        .collect::<Result<Vec<_>>>()?;
    let total = op::linalg_vector_norm::call(
        &op::stack::call(&norms, 0)?,
        s(norm_type),
        None,
        false,
        None,
    )?;
    let t = total
        .item::<f32>()
        .map(f64::from)
        .or_else(|_| total.item::<f64>())?;
    if error_if_nonfinite && !t.is_finite() {
        return Err(Error::runtime(format!(
            "The total norm of order {} for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`",
            python_float_repr(norm_type)
        )));
    }
    let coef = op::div_Tensor::call(
        &op::full_like::call(&total, s(max_norm), None, None, None, None, None)?,
        &op::add_Scalar::call(&total, s(1e-6), s(1.0))?,
    )?;
    let coef = op::clamp_max::call(&coef, s(1.0))?;
    for g in &grads {
        op::mul__Tensor::call(g, &coef)?;
    }
    Ok(total)
}
