//! Kernels implemented in this crate (composites and Meta kernels), named as in `ops.yaml`.

#![allow(clippy::too_many_arguments)]

mod copy;
mod factory;
mod indexing;
mod linalg;
mod nn;
mod norm;
mod pointwise;
mod reduce;
mod shape;
mod unary;
mod views;

pub use copy::*;
pub use factory::*;
pub use indexing::*;
pub use linalg::*;
pub use nn::*;
pub use norm::*;
pub use pointwise::*;
pub use reduce::*;
pub use shape::*;
pub use unary::*;
pub use views::*;
