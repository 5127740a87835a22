//! Running the generators over the workspace: writing the files, or checking they are current.

use super::from_model::from_model;
use crate::{NativeFunctions, ParseOptions, parse_native_functions};
use std::path::{Path, PathBuf};

/// The yaml file the generators read, relative to the workspace root.
pub const OPS_YAML: &str = "crates/ops/ops.yaml";

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Parses `crates/ops/ops.yaml` of `root`, reporting every problem.
pub fn parse_ops_yaml(root: &Path) -> Result<NativeFunctions, String> {
    let path = root.join(OPS_YAML);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_native_functions(&text, OPS_YAML, &ParseOptions::default()).map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n\n")
    })
}

/// Every generated file (path relative to `root`, contents) from `root`'s ops.yaml.
pub fn generate(root: &Path) -> Result<Vec<(PathBuf, String)>, String> {
    let model = parse_ops_yaml(root)?;
    super::generate_all(&from_model(&model))
        .map_err(|e| format!("cannot generate Rust for schema type {}", e.0))
}

/// Writes every generated file; returns the paths written.
pub fn write(root: &Path) -> Result<Vec<PathBuf>, String> {
    let files = generate(root)?;
    let mut written = Vec::new();
    for (rel, contents) in files {
        let path = root.join(&rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != contents {
            std::fs::write(&path, contents)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            written.push(rel);
        }
    }
    Ok(written)
}

/// The generated files that differ from what the generator produces now.
pub fn stale(root: &Path) -> Result<Vec<PathBuf>, String> {
    Ok(generate(root)?
        .into_iter()
        .filter(|(rel, contents)| {
            std::fs::read_to_string(root.join(rel)).ok().as_deref() != Some(contents.as_str())
        })
        .map(|(rel, _)| rel)
        .collect())
}

/// Validates a native_functions-format yaml file, returning every problem (empty: valid).
pub fn check_yaml_file(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let name = path.display().to_string();
    Ok(
        match parse_native_functions(&text, &name, &ParseOptions::default()) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        },
    )
}
