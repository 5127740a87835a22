//! Code generators: from the operators of `ops.yaml` to the Rust files under `src/generated/`
//! of `switchyard-ops` and of each backend crate.

pub mod api;
pub mod autograd;
pub mod backend;
pub mod from_model;
pub mod functionalize;
pub mod input;
pub mod lazy;
pub mod operators;
pub mod python;
pub mod registration;
pub mod rust;
pub mod workspace;
pub mod writer;

use input::GenInput;
use rust::UnsupportedType;
use std::path::PathBuf;
use switchyard_core::DispatchKey;

/// Every generated file: path relative to the workspace root, and contents.
pub fn generate_all(input: &GenInput) -> Result<Vec<(PathBuf, String)>, UnsupportedType> {
    let ops_mod = format!(
        "{}//! Code generated from ops.yaml.\n\n#![allow(unused_imports, missing_docs)]\n\npub mod functions;\npub mod operators;\nmod register;\npub mod tensor_methods;\n",
        writer::header("mod")
    );
    let cpu_mod = format!(
        "{}//! Code generated from ops.yaml: the registration of this crate's kernels.\n\n#![allow(unused_imports, missing_docs)]\n\nmod register;\n",
        writer::header("mod")
    );
    Ok(vec![
        ("crates/ops/src/generated/mod.rs".into(), ops_mod),
        ("crates/cpu/src/generated/mod.rs".into(), cpu_mod),
        (
            "crates/ops/src/generated/operators.rs".into(),
            operators::generate(input)?,
        ),
        (
            "crates/ops/src/generated/functions.rs".into(),
            api::generate_functions(input)?,
        ),
        (
            "crates/ops/src/generated/tensor_methods.rs".into(),
            api::generate_methods(input)?,
        ),
        (
            "crates/ops/src/generated/register.rs".into(),
            registration::generate_ops(input)?,
        ),
        (
            "crates/cpu/src/generated/register.rs".into(),
            registration::generate_backend(input, DispatchKey::CPU, "switchyard-cpu")?,
        ),
    ])
}
