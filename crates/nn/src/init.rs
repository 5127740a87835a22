//! Parameter initialisation with PyTorch's rules (`torch.nn.init`), drawing from the default
//! generator (seeded with [`switchyard_core::generator::manual_seed`]).

use switchyard_autograd::no_grad;
use switchyard_core::{Error, Result, Tensor};
use switchyard_ops::op;

/// `(fan_in, fan_out)` of a weight (PyTorch's `_calculate_fan_in_and_fan_out`): dimension 1
/// and 0 times the receptive field (the product of the dimensions after the first two).
pub fn fan_in_and_fan_out(t: &Tensor) -> Result<(i64, i64)> {
    let sizes = t.sizes();
    if sizes.len() < 2 {
        return Err(Error::value(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions",
        ));
    }
    let receptive: i64 = sizes[2..].iter().product();
    Ok((sizes[1] * receptive, sizes[0] * receptive))
}

/// Fills `t` from U(low, high) (`init.uniform_`).
pub fn uniform_(t: &Tensor, low: f64, high: f64) -> Result<()> {
    let _guard = no_grad();
    op::uniform_::call(t, low, high, None)?;
    Ok(())
}

/// Fills `t` from N(mean, std²) (`init.normal_`).
pub fn normal_(t: &Tensor, mean: f64, std: f64) -> Result<()> {
    let _guard = no_grad();
    op::normal_::call(t, mean, std, None)?;
    Ok(())
}

/// Fills `t` with `value` (`init.constant_`).
pub fn constant_(t: &Tensor, value: f64) -> Result<()> {
    let _guard = no_grad();
    op::fill__Scalar::call(t, value.into())?;
    Ok(())
}

/// He initialisation for a leaky ReLU of slope `a`, fan-in mode (`init.kaiming_uniform_`):
/// U(-b, b) with b = gain · sqrt(3 / fan_in), gain = sqrt(2 / (1 + a²)).
pub fn kaiming_uniform_(t: &Tensor, a: f64) -> Result<()> {
    let (fan_in, _) = fan_in_and_fan_out(t)?;
    if fan_in == 0 {
        return Ok(());
    }
    let gain = (2.0 / (1.0 + a * a)).sqrt();
    let bound = 3f64.sqrt() * gain / (fan_in as f64).sqrt();
    uniform_(t, -bound, bound)
}
