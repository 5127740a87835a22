//! switchyard's functionalization layer (issue 18; PyTorch's `FunctionalTensorWrapper` and
//! `RegisterFunctionalization`): a dispatch layer at the `Functionalize` key that turns a
//! program with views and in-place mutation into one a backend without aliasing can run.
//!
//! * [`FunctionalTensor`] is the payload of a *functional wrapper*: a tensor without storage
//!   whose current value (a plain tensor below the layer) is replaced, never mutated in place;
//! * [`FunctionalStorage`] is the alias group shared by a wrapper and its views: the base they
//!   are all derived from, a FIFO queue of updates made through its members, and a generation
//!   counter bumped once per update;
//! * [`ViewMeta`] records one view: how to replay it from its base (`forward`) and how to push
//!   a mutated view back into the base (`reverse`, the view inverse);
//! * the functions of the data model ([`to_functional`], [`from_functional`], [`sync`],
//!   [`replace_`], [`commit_update`], [`mark_mutation`], [`apply_updates`],
//!   [`regenerate_from_base`], [`are_aliased`], ...) follow A.3 of the reference note;
//! * a boxed fallback at `Functionalize` handles every operator that neither mutates nor
//!   aliases: it syncs and unwraps functional inputs, runs the operator below the layer and
//!   wraps the outputs. A mutating or view operator reaching it is an error;
//! * [`inverses`] holds the hand-written view inverses (§3.4 of the plan): what a base becomes
//!   when a view of it is replaced by a mutated value;
//! * [`functionalize`] / [`run_functionalized`] are the transform (§5.1, A.9): a program run on
//!   wrappers of its inputs, its input mutations written back to the caller's tensors, its
//!   outputs unwrapped. [`Remove`] chooses whether views are kept or replaced by `*_copy`
//!   operators.
//!
//! ```
//! use switchyard_core::Tensor;
//! use switchyard_cpu as _;
//! use switchyard_functionalize::{from_functional, is_functional, sync, to_functional};
//!
//! let a = to_functional(&Tensor::from_slice(&[1.0f32, 2.0])?)?;
//! let b = switchyard_ops::add(&a, &a)?; // through the fallback
//! assert!(is_functional(&b));
//! sync(&b)?;
//! assert_eq!(from_functional(&b)?.to_vec::<f32>()?, vec![2.0, 4.0]);
//! # Ok::<(), switchyard_core::Error>(())
//! ```
//!
//! The transform hides the wrapping: the program sees functional tensors, the caller plain
//! ones.
//!
//! ```
//! use switchyard_core::Tensor;
//! use switchyard_cpu as _;
//! use switchyard_functionalize::{Remove, run_functionalized};
//! use switchyard_ops::TensorOps;
//!
//! let x = Tensor::from_slice(&[1.0f32, 1.0, 1.0])?;
//! let out = run_functionalized(
//!     &|x: &[Tensor]| {
//!         let y = switchyard_ops::select(&x[0], 0, 1)?; // a view of the input
//!         y.fill_scalar_(5.0)?; // mutated in place
//!         Ok(vec![switchyard_ops::mul(&x[0], &x[0])?])
//!     },
//!     &[Clone::clone(&x)],
//!     Remove::Mutations,
//! )?;
//! assert_eq!(out[0].to_vec::<f32>()?, vec![1.0, 25.0, 1.0]);
//! assert_eq!(x.to_vec::<f32>()?, vec![1.0, 5.0, 1.0]); // written back
//! # Ok::<(), switchyard_core::Error>(())
//! ```
//!
//! Besides the fallback, the layer has generated kernels (`src/generated/`, from
//! `crates/codegen/src/emit/functionalize.rs`) for mutating operators with a functional
//! variant, for every view operator (recording its inverse: a `*_scatter` operator or a
//! function of [`inverses`]) and its in-place form, and the composite kernels of
//! CompositeImplicitAutograd views and mutating operators; and hand-written kernels
//! (`src/manual.rs`, plan §3.5) for `resize_`, `set_.source_Tensor`, `lift`, `lift_fresh`,
//! `lift_fresh_copy`, `_to_copy` and `_unsafe_view`. [`functionalize_aten_op`] runs a
//! composite kernel functionalized on plain tensors (for backends).
//!
//! Wrappers report the eager program's geometry (plan §2.4): a view's sizes, strides and
//! offset come from the real view operator run on a [`meta_shadow`] of its input when the
//! value's own layout may differ (views removed, or an input whose value was replaced); an
//! in-place view (`transpose_`), `resize_` or `set_` sets the eager geometry on the wrapper;
//! the fallback reruns an operator on shadows when some input's value layout differs from its
//! wrapper's, for eager output strides (operators without a Meta kernel keep the value's).
//!
//! [`trace`] records what a program sends to the backend as a [`Graph`] (plan §5.2, `make_fx`):
//! a boxed fallback at the `Python` key, below this layer, active only inside [`trace`]; the
//! graph prints in the reference note's A.11 text, as Graphviz dot and as JSON, and replays.
//! [`programs`] holds A.11's programs as data (the tests and the `switchyard functionalize`
//! command run them).
//!
//! Not yet here (see `docs/functionalization-plan.md`): the in-place meta check of mutation
//! kernels.
//!
//! Locking: a wrapper's state and its storage's state are never locked together, and the
//! wrapper lock is never held across an operator call; the storage lock is held while updates
//! are applied (those calls run below the layer and cannot re-enter it). Using a group from one
//! thread at a time is the expected pattern; the locks make other use safe, not meaningful.

pub mod autograd;
mod errors;
mod fallback;
mod geometry;
pub mod inverses;
mod manual;
mod pass_through;
pub mod programs;
mod storage;
mod support;
mod tensor;
pub mod trace;
mod transform;
mod view_meta;

// Generated code keeps the generator's layout; `cargo fmt` must not make it stale.
#[rustfmt::skip]
mod generated;

pub use geometry::meta_shadow;
pub use manual::functionalize_aten_op;
pub use storage::{FunctionalStorage, Update};
pub use tensor::{
    FunctionalTensor, apply_updates, are_aliased, below, commit_update, create_view, freeze,
    from_functional, from_functional_list, from_functional_optional_list, functional_payload,
    has_data_mutation, has_metadata_mutation, is_functional, is_functional_list,
    is_functional_optional_list, mark_mutation, maybe_replace_storage, mutate_view_meta,
    regenerate_from_base, replace_, set__impl, sync, sync_list, sync_optional_list, to_functional,
    to_functional_list, to_functional_optional_list, unsafe_reset_storage,
};
pub use trace::{Arg, Graph, InputType, Node, trace};
pub use transform::{Remove, functionalize, run_functionalized};
pub use view_meta::{
    ForwardFn, InverseMode, ReapplyViewsGuard, ReverseFn, ViewMeta, reapply_views,
};

use switchyard_dispatch::{Dispatcher, STATIC_REGISTRATIONS, StaticRegistration};

/// Registers the layer's kernels: the generated kernels of mutating, view and composite
/// operators, the hand-written ones, the boxed fallback at `Functionalize` for every other
/// operator, and the tracer's fallback at `Python`.
fn register(d: &'static Dispatcher) -> switchyard_core::Result<()> {
    generated::register(d)?;
    manual::register(d)?;
    fallback::register(d)?;
    trace::register(d)
}

#[linkme::distributed_slice(STATIC_REGISTRATIONS)]
static REGISTER: StaticRegistration = StaticRegistration {
    name: "switchyard-functionalize",
    register,
};

/// Makes sure this crate's kernels are registered (linking the crate is enough; this gives
/// code that does not otherwise name the crate a way to say it needs it).
pub fn init() {
    let _ = Dispatcher::singleton();
}
