//! PyTorch's `result_type`: the dtype of an operation's result given its inputs.
//!
//! Inputs fall in three tiers, in priority order: tensors with at least one dimension,
//! 0-dim tensors, and "wrapped numbers" (Python scalars, here [`Scalar`] arguments). A lower
//! tier only influences the result when it belongs to a higher *category*
//! (bool < integral < floating): `int32_tensor + 2.5` is `float32` (the default dtype), but
//! `int32_tensor + int64_0dim` stays `int32`.

use crate::{Scalar, ScalarType, Tensor, promote_types};

/// The default floating dtype (`torch.get_default_dtype()`), `float32`.
pub const DEFAULT_DTYPE: ScalarType = ScalarType::Float;

/// Accumulates the three tiers of [`result_type`] (PyTorch's `ResultTypeState`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResultTypeState {
    dim_result: Option<ScalarType>,
    zero_dim_result: Option<ScalarType>,
    wrapped_result: Option<ScalarType>,
}

fn promote_opt(a: Option<ScalarType>, b: ScalarType) -> Option<ScalarType> {
    Some(match a {
        None => b,
        Some(a) => promote_types(a, b),
    })
}

/// The category rule: `higher` wins unless `lower` is of a higher category.
fn combine_categories(higher: Option<ScalarType>, lower: Option<ScalarType>) -> Option<ScalarType> {
    let Some(h) = higher else { return lower };
    if h.is_floating_point() {
        return Some(h);
    }
    match lower {
        Some(l) if h == ScalarType::Bool || l.is_floating_point() => Some(promote_types(h, l)),
        _ => Some(h),
    }
}

impl ResultTypeState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tensor argument (its tier comes from its dimensionality; a tensor marked as a
    /// wrapped number counts as a scalar).
    pub fn update_tensor(&mut self, t: &Tensor) {
        self.update_tensor_dim_by(t, || t.dim());
    }

    /// [`ResultTypeState::update_tensor`] when the caller already read `t`'s number of
    /// dimensions (`dim`), saving a metadata read.
    pub fn update_tensor_with_dim(&mut self, t: &Tensor, dim: usize) {
        self.update_tensor_dim_by(t, || dim);
    }

    /// The tier rule of both: a wrapped number counts as a scalar, any other tensor by its
    /// dimensionality (read only when needed).
    fn update_tensor_dim_by(&mut self, t: &Tensor, dim: impl FnOnce() -> usize) {
        if t.is_wrapped_number() {
            self.update_wrapped(t.dtype());
        } else {
            self.update_dims(t.dtype(), dim());
        }
    }

    /// Adds a tensor given by dtype and dimension count.
    pub fn update_dims(&mut self, dtype: ScalarType, dim: usize) {
        if dim > 0 {
            self.dim_result = promote_opt(self.dim_result, dtype);
        } else {
            self.zero_dim_result = promote_opt(self.zero_dim_result, dtype);
        }
    }

    /// Adds a Python-style scalar argument.
    pub fn update_scalar(&mut self, s: Scalar) {
        self.update_wrapped(s.dtype());
    }

    fn update_wrapped(&mut self, dtype: ScalarType) {
        // A wrapped float means "the default dtype", not double.
        let dtype = if dtype.is_floating_point() {
            DEFAULT_DTYPE
        } else {
            dtype
        };
        self.wrapped_result = promote_opt(self.wrapped_result, dtype);
    }

    /// The result dtype; `None` if nothing was added.
    pub fn result(&self) -> Option<ScalarType> {
        combine_categories(
            self.dim_result,
            combine_categories(self.zero_dim_result, self.wrapped_result),
        )
    }
}

/// An argument of [`result_type`].
#[derive(Clone, Copy, Debug)]
pub enum PromotionArg<'a> {
    /// A tensor.
    Tensor(&'a Tensor),
    /// A scalar (wrapped number).
    Scalar(Scalar),
}

/// `torch.result_type` over any number of tensors and scalars. `None` for no arguments.
pub fn result_type(args: &[PromotionArg<'_>]) -> Option<ScalarType> {
    let mut state = ResultTypeState::new();
    for a in args {
        match a {
            PromotionArg::Tensor(t) => state.update_tensor(t),
            PromotionArg::Scalar(s) => state.update_scalar(*s),
        }
    }
    state.result()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScalarType::*;

    #[test]
    fn tiers() {
        let mut s = ResultTypeState::new();
        s.update_dims(Int, 1);
        s.update_scalar(Scalar::Float(2.5));
        assert_eq!(s.result(), Some(Float));
        let mut s = ResultTypeState::new();
        s.update_dims(Int, 1);
        s.update_dims(Long, 0);
        assert_eq!(s.result(), Some(Int));
        let mut s = ResultTypeState::new();
        s.update_dims(Bool, 1);
        s.update_scalar(Scalar::Int(1));
        assert_eq!(s.result(), Some(Long));
        assert_eq!(ResultTypeState::new().result(), None);
    }
}
