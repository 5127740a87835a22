//! The `native_functions.yaml` model: parsing, torchgen's validation (with its exact messages),
//! grouping and autogen, as specified in `shared/reference/codegen.md` §2–§3.
//!
//! [`parse_native_functions`] is the entry point. It reads the yaml (keeping every entry's
//! line), turns each entry into a [`NativeFunction`], runs torchgen's checks across entries,
//! adds the out= and functional operators autogen generates, and groups the result into
//! [`NativeFunctionsGroup`]s and [`NativeFunctionsViewGroup`]s. Functions are referred to by
//! index into [`NativeFunctions::functions`], so the result is a plain owned value.
//!
//! Unlike torchgen, which stops at the first error, parsing reports every problem it finds,
//! each with its line ([`YamlError`]).
//!
//! ```
//! use switchyard_codegen::{parse_native_functions, GroupedItem, ParseOptions};
//!
//! let yaml = "\
//! - func: op(Tensor self) -> Tensor
//!   dispatch:
//!     CompositeExplicitAutograd: op
//!   autogen: op.out
//! ";
//! let parsed = parse_native_functions(yaml, "ops.yaml", &ParseOptions::default()).unwrap();
//! let out = parsed.get_str("op.out").unwrap();
//! assert_eq!(out.func.to_string(), "op.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
//! assert!(out.is_generated());
//! assert!(matches!(parsed.grouped[..], [GroupedItem::Group(_)]));
//!
//! let errors = parse_native_functions("- func: foo(Tensor self) -> Tensor\n  bogus: 1\n", "ops.yaml",
//!     &ParseOptions::default()).unwrap_err();
//! assert_eq!(errors[0].message, "leftover entries: {'bogus': 1}");
//! assert_eq!(errors[0].line, Some(1));
//! ```
//!
//! [`parse_backend_yaml`] reads an external backend's yaml (`backend`, `supported`, `autograd`,
//! ...; PyTorch's `gen_backend_stubs.py`) against that model, and
//! [`emit::backend`] generates the backend crate's kernel trait, its registration and the
//! in-place/out= wrappers for operators the backend gives only functionally:
//!
//! ```text
//! cargo run -p switchyard-codegen -- backend --source-yaml my_backend.yaml --output-dir src/generated
//! ```
//!
//! The backend crate then declares `#[rustfmt::skip] mod generated;`, implements the trait
//! (`generated::<Backend>NativeFunctions`, or its `class_name`) on a type `K`, and calls
//! `generated::register::<K>(&mut lib)` or `generated::library::<K>(dispatcher)`.

mod autogen;
pub mod backend;
mod checks;
pub mod derivatives;
mod dispatch;
mod entry;
mod error;
mod group;
mod model;
mod native_functions;
mod parse;
mod precompute;
mod pyrepr;
mod tags;
mod ufunc;
mod validate;
mod view;
mod yaml;

pub mod emit;

pub use backend::{BackendKernel, BackendKey, BackendYaml, NonNative, parse_backend_yaml};
pub use dispatch::{
    BackendMetadata, DEFAULT_KERNEL_NAMESPACE, GEN_PY_DEFAULT_IGNORED_KEYS,
    STRUCTURED_DISPATCH_KEYS, SUPPORTED_DISPATCH_KEYS, UFUNC_DISPATCH_KEYS, is_composite_key,
    is_structured_dispatch_key,
};
pub use error::YamlError;
pub use group::{GroupedItem, NativeFunctionsGroup};
pub use model::{
    DeviceCheckType, NativeFunction, Variants, ViewSchemaKind, cpp_name, unambiguous_name,
};
pub use native_functions::{NativeFunctions, ParseOptions};
pub use parse::parse_native_functions;
pub use precompute::Precompute;
pub use tags::{PYTORCH_TAGS, default_tags, parse_tags_yaml};
pub use ufunc::{SCALAR_TYPES, UfuncInnerLoop, UfuncKey};
pub use view::{
    NativeFunctionsViewGroup, ViewGroupedItem, gets_generated_view_copy, view_copy_name,
};
