//! switchyard's autograd: reverse-mode automatic differentiation as a dispatch layer.
//!
//! Every operator of `ops.yaml` gets a kernel at the `Autograd` keys, generated from
//! `derivatives.yaml` (PyTorch's `VariableType`): when an input requires grad, it records a
//! backward node ([`graph`]) that saves what its formula needs, runs the operator below
//! autograd, and makes the outputs the node's outputs. In-place and view operators also get
//! a kernel at `ADInplaceOrView`, which bumps version counters once per call and records
//! which tensor a view views ([`view`]). [`backward`] and [`grad`] run the [`engine`] over the
//! recorded graph.
//!
//! ```
//! use switchyard_autograd::AutogradTensor;
//! use switchyard_core::Tensor;
//! use switchyard_cpu as _;
//!
//! let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?.requires_grad_(true)?;
//! let y = switchyard_ops::mul(&x, &x)?;
//! let loss = switchyard_ops::sum(&y)?;
//! loss.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![2.0, 4.0, 6.0]);
//! # Ok::<(), switchyard_core::Error>(())
//! ```
//!
//! Grad modes ([`no_grad`], [`enable_grad`], [`set_grad_enabled`], [`inference_mode`]) are
//! RAII guards over thread-local state.

mod accumulate;
mod api;
mod engine;
mod fallback;
pub mod gradcheck;
mod graph;
mod hooks;
pub mod joined;
pub mod manual;
mod manual_kernels;
mod meta;
mod mode;
mod saved;
pub mod support;
pub mod view;

// Generated code keeps the generator's layout; `cargo fmt` must not make it stale.
#[rustfmt::skip]
mod generated;

pub use accumulate::AccumulateGrad;
pub use api::{AutogradTensor, backward, grad, retain_grad};
pub use gradcheck::{GradcheckOptions, gradcheck, gradgradcheck};
pub use graph::{Edge, EdgeList, Grad, InputMetadata, Node, NodeCore, NodeRef, node_id};
pub use hooks::{HookHandle, register_hook, register_post_accumulate_grad_hook};
pub use manual_kernels::CopyBackwards;
pub use meta::{grad_fn, gradient_edge, is_leaf};
pub use mode::{enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled};
pub use saved::{ERR_BACKWARD_TWICE, SavedVariable, legacy_type_name};
pub use support::NotImplemented;
pub use view::{CopySlices, CreationMeta};

use switchyard_dispatch::{Dispatcher, STATIC_REGISTRATIONS, StaticRegistration};

/// Registers the generated and hand-written kernels and the fallback of operators without one.
fn register(d: &'static Dispatcher) -> switchyard_core::Result<()> {
    generated::register(d)?;
    manual_kernels::register(d)?;
    fallback::register(d)?;
    // A tensor prints its node's class name (Python's `type(grad_fn).__name__`): the
    // hand-written nodes without their C++ namespace (`grad_fn=<CopySlices>`).
    switchyard_core::format::set_grad_fn_name_hook(|t| {
        meta::grad_fn(t).ok().flatten().map(|f| {
            let name = f.name();
            match name.rsplit_once("::") {
                Some((_, short)) => short.to_owned(),
                None => name,
            }
        })
    });
    Ok(())
}

#[linkme::distributed_slice(STATIC_REGISTRATIONS)]
static REGISTER: StaticRegistration = StaticRegistration {
    name: "switchyard-autograd",
    register,
};

/// Makes sure this crate's kernels are registered (linking the crate is enough; this gives
/// code that does not otherwise name the crate a way to say it needs it).
pub fn init() {
    let _ = Dispatcher::singleton();
}
