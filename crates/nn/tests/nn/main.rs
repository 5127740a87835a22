//! switchyard-nn against PyTorch's recorded behaviour (one test binary; modules by topic).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_cpu as _;

mod layers;
mod optim;
mod serialize;
