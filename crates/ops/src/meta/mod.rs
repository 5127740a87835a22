//! Meta functions of structured operators, named after the functional operator
//! (`add.Tensor` → [`add_tensor`]); see `docs/kernels.md`.

#![allow(clippy::too_many_arguments)]

mod factory;
mod indexing;
mod linalg;
mod nn;
mod norm;
mod pointwise;
mod reduce;
mod unary;
mod views;

pub use factory::*;
pub use indexing::*;
pub use linalg::*;
pub use nn::*;
pub use norm::*;
pub use pointwise::*;
pub use reduce::*;
pub use unary::*;
pub use views::*;
