//! Running the generators over the workspace: writing the files, or checking they are current.
//!
//! Nothing here depends on where this crate was built: `generate` finds the workspace from the
//! current directory ([`find_workspace_root`]), and a backend crate anywhere can generate its
//! files from its own yaml against the operator set bundled into the generator
//! ([`BUNDLED_OPS_YAML`]) or against an `ops.yaml` it names.

use super::from_model::from_model;
use crate::{NativeFunctions, ParseOptions, parse_native_functions};
use std::path::{Path, PathBuf};

/// The yaml file the generators read, relative to the workspace root.
pub const OPS_YAML: &str = "crates/ops/ops.yaml";

/// `crates/ops/ops.yaml` as this generator was built with it: the operators a backend yaml is
/// checked against unless another `ops.yaml` is named, as torchgen's `gen_backend_stubs` reads
/// the `native_functions.yaml` it is packaged with.
pub const BUNDLED_OPS_YAML: &str = include_str!("../../../ops/ops.yaml");

/// The workspace root at or above `start`: the nearest directory holding `crates/ops/ops.yaml`.
pub fn find_workspace_root(start: &Path) -> Result<PathBuf, String> {
    let start = std::path::absolute(start)
        .map_err(|e| format!("cannot resolve {}: {e}", start.display()))?;
    start
        .ancestors()
        .find(|dir| dir.join(OPS_YAML).is_file())
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            format!(
                "no switchyard workspace (a directory holding {OPS_YAML}) at or above {}",
                start.display()
            )
        })
}

fn parse_ops_text(text: &str, name: &str) -> Result<NativeFunctions, String> {
    parse_native_functions(text, name, &ParseOptions::default()).map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n\n")
    })
}

/// Parses `crates/ops/ops.yaml` of `root`, reporting every problem.
pub fn parse_ops_yaml(root: &Path) -> Result<NativeFunctions, String> {
    let path = root.join(OPS_YAML);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_ops_text(&text, OPS_YAML)
}

/// Parses an `ops.yaml` (native_functions format) at `path`.
pub fn parse_ops_yaml_file(path: &Path) -> Result<NativeFunctions, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_ops_text(&text, &path.display().to_string())
}

/// Parses [`BUNDLED_OPS_YAML`].
pub fn parse_bundled_ops_yaml() -> Result<NativeFunctions, String> {
    parse_ops_text(BUNDLED_OPS_YAML, OPS_YAML)
}

/// The autograd layer's formulas, relative to the workspace root.
pub const DERIVATIVES_YAML: &str = "crates/autograd/derivatives.yaml";

/// `crates/autograd/derivatives.yaml` as this generator was built with it (the out= wrappers
/// of a backend's autograd kernels follow its rule).
pub const BUNDLED_DERIVATIVES_YAML: &str = include_str!("../../../autograd/derivatives.yaml");

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

/// The functionalization layer's crate manifest, relative to the workspace root: its kernels
/// are generated when it exists.
pub const FUNCTIONALIZE_CRATE: &str = "crates/functionalize/Cargo.toml";

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
    if root.join(FUNCTIONALIZE_CRATE).exists() {
        let (functionalize, _) = super::functionalize::generate(&input, &model)
            .map_err(|e| format!("cannot generate Rust for schema type {}", e.0))?;
        files.extend(
            functionalize
                .into_iter()
                .map(|(p, c)| (PathBuf::from(p), c)),
        );
    }
    if root.join(super::python::PYTHON_CRATE).exists() {
        let python = super::python::generate(&model);
        files.extend(python.into_iter().map(|(p, c)| (PathBuf::from(p), c)));
    }
    for (yaml, dir) in BACKEND_YAMLS {
        let dir = Path::new(dir);
        let yaml = root.join(yaml);
        if !yaml.exists() {
            // A root holding only ops.yaml (the staleness tests build one).
            continue;
        }
        for (rel, contents) in generate_backend(&model, &yaml)? {
            files.push((dir.join(rel), contents));
        }
    }
    Ok(files)
}

/// The backend yamls of the repository (yaml, output folder, both relative to the root) whose
/// generated code is committed: the reference backend `backends/sidecar`, two compiled test
/// fixtures of this crate, and the lazy backend `backends/lazy`. `generate` regenerates them too, so a change to ops.yaml that
/// changes them is caught by the same staleness check.
pub const BACKEND_YAMLS: [(&str, &str); 4] = [
    (
        "backends/sidecar/backend.yaml",
        "backends/sidecar/src/generated",
    ),
    ("backends/lazy/backend.yaml", "backends/lazy/src/generated"),
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

/// The two kinds of yaml file the generator reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YamlKind {
    /// A `native_functions.yaml`-format operator list (a sequence of `func:` entries).
    NativeFunctions,
    /// An external backend's yaml (`gen_backend_stubs` format): a mapping with top-level
    /// `backend:` or `cpp_namespace:`.
    Backend,
}

/// Which kind of yaml `text` is: a backend yaml if it is a mapping with a top-level `backend`
/// or `cpp_namespace` key, else a native_functions yaml (whose checks then report what is
/// wrong with it).
pub fn yaml_kind(text: &str) -> YamlKind {
    let loaded = crate::yaml::load(text);
    match loaded.root.map(|r| r.value) {
        Some(crate::yaml::Value::Map(entries))
            if entries
                .iter()
                .any(|(k, _)| matches!(k.as_str(), Some("backend" | "cpp_namespace"))) =>
        {
            YamlKind::Backend
        }
        _ => YamlKind::NativeFunctions,
    }
}

/// Validates yaml `text` (named `name` in messages) by its kind: a native_functions yaml with
/// torchgen's rules for it, a backend yaml with `gen_backend_stubs`' rules against the
/// operators `ops` gives (called only for a backend yaml). Returns every problem (empty:
/// valid); a backend yaml, like torchgen's parser, reports its first.
pub fn check_yaml_text(
    text: &str,
    name: &str,
    ops: impl FnOnce() -> Result<NativeFunctions, String>,
) -> Result<Vec<String>, String> {
    Ok(match yaml_kind(text) {
        YamlKind::NativeFunctions => {
            match parse_native_functions(text, name, &ParseOptions::default()) {
                Ok(_) => Vec::new(),
                Err(errors) => errors.iter().map(ToString::to_string).collect(),
            }
        }
        YamlKind::Backend => match crate::parse_backend_yaml(text, name, &ops()?) {
            Ok(_) => Vec::new(),
            Err(e) => vec![e.to_string()],
        },
    })
}

/// Validates a yaml file by its kind (see [`check_yaml_text`]); a backend yaml is checked
/// against the operators of `ops_yaml`, or of [`BUNDLED_OPS_YAML`] when `None`.
pub fn check_yaml_file(path: &Path, ops_yaml: Option<&Path>) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    check_yaml_text(&text, &path.display().to_string(), || match ops_yaml {
        Some(p) => parse_ops_yaml_file(p),
        None => parse_bundled_ops_yaml(),
    })
}

/// The files generated for the backend yaml at `source_yaml` (relative to the output
/// directory), against the operators of `model`; empty when the yaml lists no supported
/// operator (torchgen then writes nothing).
pub fn generate_backend(
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
    // The out= wrappers at the autograd key follow the autograd layer's rule, which needs its
    // formulas: the bundled derivatives.yaml, when it fits the operators (a foreign ops.yaml
    // may lack some; its wrappers then refuse every argument that requires grad).
    let derivatives =
        crate::derivatives::parse_derivatives(BUNDLED_DERIVATIVES_YAML, DERIVATIVES_YAML, model)
            .ok();
    super::backend::generate_backend_files(
        &yaml,
        model,
        &from_model(model),
        &source,
        derivatives.as_ref(),
    )
    .map_err(|e| e.to_string())
}

/// Writes the backend files into `output_dir`; returns the paths written (unchanged files are
/// left alone).
pub fn write_backend(
    model: &NativeFunctions,
    source_yaml: &Path,
    output_dir: &Path,
) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for (rel, contents) in generate_backend(model, source_yaml)? {
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
    model: &NativeFunctions,
    source_yaml: &Path,
    output_dir: &Path,
) -> Result<Vec<PathBuf>, String> {
    Ok(generate_backend(model, source_yaml)?
        .into_iter()
        .map(|(rel, contents)| (output_dir.join(rel), contents))
        .filter(|(path, contents)| {
            std::fs::read_to_string(path).ok().as_deref() != Some(contents.as_str())
        })
        .map(|(path, _)| path)
        .collect())
}
