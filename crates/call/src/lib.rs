//! Calls by name: how switchyard turns values that are not Rust types (command-line text,
//! Python objects) into a boxed call of an operator, as `torch.ops.aten.<op>.<overload>(...)`
//! does in PyTorch.
//!
//! - [`args`]: matching positional and keyword values to a schema (PyTorch's
//!   `createStackForSchema`, its messages included), generic over where the values come from
//!   ([`args::ArgSource`]); the command line's text is one source ([`args::TextSource`]), the
//!   Python module's objects another.
//! - [`literal`]: the JSON literals of the command line, read into [`literal::Lit`] trees,
//!   which Python data converts to as well.
//! - [`data`]: tensors built from literal data as `torch.tensor` builds them (dtype inference,
//!   ragged lists refused, values checked against the dtype's range).
//! - [`explain`]: a call explained hop by hop (key sets, kernels, the autograd record).
//!
//! The `switchyard` command and the Python extension both depend on this crate, so a call by
//! name behaves the same from either.

pub mod args;
pub mod data;
pub mod explain;
pub mod literal;
