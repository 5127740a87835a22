//! Autograd behaviour through the public API (one test binary; modules by topic).

use switchyard_cpu as _;

mod basics;
mod behaviour;
