//! Losses and activations as functions (`torch.nn.functional`), over the operators.

use switchyard_core::{Result, Tensor};
use switchyard_ops::op;

/// How a loss reduces over the batch (`reduction=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// Per-element losses.
    None,
    /// Their mean (the default).
    Mean,
    /// Their sum.
    Sum,
}

impl Reduction {
    /// ATen's enum value.
    pub fn code(self) -> i64 {
        match self {
            Reduction::None => 0,
            Reduction::Mean => 1,
            Reduction::Sum => 2,
        }
    }
}

/// Mean squared error (`F.mse_loss`).
pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    op::mse_loss::call(input, target, reduction.code())
}

/// Cross entropy of logits against class indices (`F.cross_entropy`), with PyTorch's
/// `ignore_index=-100` and `label_smoothing=0` defaults available to the caller.
pub fn cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    op::cross_entropy_loss::call(
        input,
        target,
        weight,
        reduction.code(),
        ignore_index,
        label_smoothing,
    )
}

/// Negative log-likelihood of log-probabilities (`F.nll_loss`).
pub fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    ignore_index: i64,
) -> Result<Tensor> {
    op::nll_loss::call(input, target, weight, reduction.code(), ignore_index)
}

/// `F.relu`.
pub fn relu(x: &Tensor) -> Result<Tensor> {
    op::relu::call(x)
}

/// `F.log_softmax(x, dim)`.
pub fn log_softmax(x: &Tensor, dim: i64) -> Result<Tensor> {
    op::log_softmax_int::call(x, dim, None)
}

/// `F.softmax(x, dim)`.
pub fn softmax(x: &Tensor, dim: i64) -> Result<Tensor> {
    op::softmax_int::call(x, dim, None)
}
