//! CPU kernels, named as in `ops.yaml` (`CPU:` entries); see `docs/kernels.md`.

#![allow(clippy::too_many_arguments)]

mod copy;
mod factory;
mod indexing;
mod linalg;
mod nn;
mod norm;
mod pointwise;
mod reduce;
mod unary;

pub use copy::*;
pub use factory::*;
pub use indexing::*;
pub use linalg::*;
pub use nn::*;
pub use norm::*;
pub use pointwise::*;
pub use reduce::*;
pub use unary::*;
