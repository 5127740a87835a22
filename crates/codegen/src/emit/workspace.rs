//! Running the generators over the workspace: writing the files, or checking they are current.

use super::from_model::from_model;
use crate::{NativeFunctions, ParseOptions, parse_native_functions};
use std::path::{Path, PathBuf};

/// The yaml file the generators read, relative to the workspace root.
pub const OPS_YAML: &str = "crates/ops/ops.yaml";

/// The autograd layer's formulas, relative to the workspace root.
pub const DERIVATIVES_YAML: &str = "crates/autograd/derivatives.yaml";

/// Parses `derivatives.yaml` of `root` against the operators of `model`.
pub fn parse_derivatives_yaml(
    root: &Path,
    model: &NativeFunctions,
) -> Result<crate::derivatives::Derivatives, String> {
    let path = root.join(DERIVATIVES_YAML);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    crate::derivatives::parse_derivatives(&text, DERIVATIVES_YAML, model).map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n\n")
    })
}

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
    let input = from_model(&model);
    let mut files = super::generate_all(&input)
        .map_err(|e| format!("cannot generate Rust for schema type {}", e.0))?;
    if root.join(DERIVATIVES_YAML).exists() {
        let derivatives = parse_derivatives_yaml(root, &model)?;
        let autograd = super::autograd::generate(&input, &model, &derivatives)
            .map_err(|e| format!("cannot generate Rust for schema type {}", e.0))?;
        files.extend(autograd.into_iter().map(|(p, c)| (PathBuf::from(p), c)));
    }
    for (yaml, dir) in BACKEND_YAMLS {
        let dir = Path::new(dir);
        let yaml = root.join(yaml);
        if !yaml.exists() {
            // A root holding only ops.yaml (the staleness tests build one).
            continue;
        }
        for (rel, contents) in generate_backend_with(&model, &yaml)? {
            files.push((dir.join(rel), contents));
        }
    }
    Ok(files)
}

/// The backend yamls of the repository (yaml, output folder, both relative to the root) whose
/// generated code is committed: the reference backend `backends/sidecar` and two compiled test
/// fixtures of this crate. `generate` regenerates them too, so a change to ops.yaml that
/// changes them is caught by the same staleness check.
pub const BACKEND_YAMLS: [(&str, &str); 3] = [
    (
        "backends/sidecar/backend.yaml",
        "backends/sidecar/src/generated",
    ),
    (
        "crates/codegen/tests/backend_fixture/backend.yaml",
        "crates/codegen/tests/backend_fixture",
    ),
    (
        "crates/codegen/tests/backend_fixture_all/all_ops.yaml",
        "crates/codegen/tests/backend_fixture_all",
    ),
];

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

/// The files generated for the backend yaml at `source_yaml` (relative to the output
/// directory), from `root`'s ops.yaml; empty when the yaml lists no supported operator (torchgen
/// then writes nothing).
pub fn generate_backend(root: &Path, source_yaml: &Path) -> Result<Vec<(PathBuf, String)>, String> {
    generate_backend_with(&parse_ops_yaml(root)?, source_yaml)
}

fn generate_backend_with(
    model: &NativeFunctions,
    source_yaml: &Path,
) -> Result<Vec<(PathBuf, String)>, String> {
    let text = std::fs::read_to_string(source_yaml)
        .map_err(|e| format!("cannot read {}: {e}", source_yaml.display()))?;
    let name = source_yaml.display().to_string();
    let Some(yaml) = crate::parse_backend_yaml(&text, &name, model).map_err(|e| e.to_string())?
    else {
        return Ok(Vec::new());
    };
    let source = source_yaml
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or(name);
    super::backend::generate_backend_files(&yaml, model, &from_model(model), &source)
        .map_err(|e| e.to_string())
}

/// Writes the backend files into `output_dir`; returns the paths written (unchanged files are
/// left alone).
pub fn write_backend(
    root: &Path,
    source_yaml: &Path,
    output_dir: &Path,
) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for (rel, contents) in generate_backend(root, source_yaml)? {
        let path = output_dir.join(&rel);
        std::fs::create_dir_all(output_dir)
            .map_err(|e| format!("cannot create {}: {e}", output_dir.display()))?;
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != contents {
            std::fs::write(&path, contents)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}

/// The backend files in `output_dir` that differ from what the generator produces now.
pub fn stale_backend(
    root: &Path,
    source_yaml: &Path,
    output_dir: &Path,
) -> Result<Vec<PathBuf>, String> {
    Ok(generate_backend(root, source_yaml)?
        .into_iter()
        .map(|(rel, contents)| (output_dir.join(rel), contents))
        .filter(|(path, contents)| {
            std::fs::read_to_string(path).ok().as_deref() != Some(contents.as_str())
        })
        .map(|(path, _)| path)
        .collect())
}
