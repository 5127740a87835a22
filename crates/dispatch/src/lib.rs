//! The switchyard dispatcher: every tensor operation is a named operator whose call is routed,
//! by dispatch keys, through layers (functionalization, autograd, backend selection) to a
//! backend kernel.
//!
//! * [`Library`] registers operators ([`Library::def`]), kernels ([`Library::impl_`]) and
//!   backend fallbacks ([`Library::fallback`]) in a [`Dispatcher`];
//! * an operator's table has one slot per runtime key, filled by PyTorch's precedence (direct
//!   kernel, composite kernels at alias keys, backend fallback, missing);
//! * a call computes its key set (arguments ∪ thread-local includes, minus excludes, minus
//!   fallthrough keys), picks the highest key's slot and calls it, typed
//!   ([`TypedOperatorHandle::call`], no allocation, no lock) or boxed
//!   ([`OperatorHandle::call_boxed`]); kernels continue below themselves with
//!   [`TypedOperatorHandle::redispatch`].
//!
//! The behaviour follows PyTorch's c10 dispatcher (`shared/reference/dispatcher.md`); test
//! names `t01`… refer to the upstream cases listed there.

pub mod backend_select;
mod dispatcher;
mod extractor;
mod kernel;
mod library;
mod operator;
mod schema_facts;
mod signature;
pub mod trace;
pub mod warnings;

pub use dispatcher::{
    Dispatcher, FRAMEWORK_DEBUG, RegistrationHandle, STATIC_REGISTRATIONS, StaticRegistration,
};
pub use kernel::{BoxedFn, KernelFunction};
pub use library::{Kernel, Library, LibraryKind};
pub use linkme;
pub use operator::{AliasAnalysisKind, OperatorEntry, OperatorHandle, TypedOperatorHandle};
pub use schema_facts::{
    ReturnAlias, ReturnFacts, ReturnKindFacts, SchemaFacts, TensorArgument, TensorArgumentKind,
};
pub use signature::{
    ArgTuple, ArgType, OpOutput, OpSignature, Operator, ReturnKind, UnboxedFn, call_boxed_typed,
    inferred_schema, schema_difference,
};
