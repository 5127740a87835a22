//! switchyard-nn against PyTorch's recorded behaviour (one test binary; modules by topic).

use switchyard_cpu as _;

mod layers;
mod optim;
mod serialize;
