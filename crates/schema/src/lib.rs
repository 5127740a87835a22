//! PyTorch function schemas (`add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`):
//! the data model, a strict parser, a printer that gives back the input exactly, and torchgen's
//! validation rules.
//!
//! Both the dispatcher (which parses schemas when operators are defined at run time) and the
//! code generator (which parses `ops.yaml`) use this crate, so it depends on nothing.
//!
//! The grammar is torchgen's (`torchgen/model.py`), described in
//! `shared/reference/codegen.md` §1: `", "` separates arguments, ` -> ` separates returns, a
//! single return is not parenthesised, and printing must reproduce the input character for
//! character.
//!
//! * [`FunctionSchema::parse`], [`OperatorName::parse`], [`Type::parse`] and
//!   [`Annotation::parse`] parse; every model type implements `Display` with the canonical
//!   spelling.
//! * [`FunctionSchema::validate`] applies torchgen's rules to a schema built in code.
//! * [`FunctionSchema::kind`], [`FunctionSchema::signature`] and the other methods on
//!   [`FunctionSchema`] answer the questions torchgen's grouping asks.
//!
//! ```
//! use switchyard_schema::{FunctionSchema, SchemaKind};
//!
//! let text = "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)";
//! let schema = FunctionSchema::parse(text)?;
//! assert_eq!(schema.kind(), SchemaKind::Out);
//! assert_eq!(schema.to_string(), text);
//! assert_eq!(
//!     schema.signature(false, false, false).to_string(),
//!     "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
//! );
//! # Ok::<(), switchyard_schema::SchemaError>(())
//! ```

mod model;
mod parse;
mod print;
mod query;
mod validate;

pub use model::*;
pub use parse::SchemaError;
