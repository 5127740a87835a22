//! The `switchyard-codegen` binary, run as a backend author or an operator author runs it: from
//! their own directory, with nothing tying it to the checkout it was built in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use switchyard_codegen::emit::workspace;

fn checkout() -> PathBuf {
    workspace::find_workspace_root(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn codegen(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchyard-codegen"))
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh, empty directory under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("switchyard-codegen-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn generate_works_on_the_workspace_around_the_current_directory() {
    // A workspace of its own (only ops.yaml), entered in a subdirectory.
    let ws = scratch("ws");
    let yaml = ws.join(workspace::OPS_YAML);
    std::fs::create_dir_all(yaml.parent().unwrap()).unwrap();
    std::fs::copy(checkout().join(workspace::OPS_YAML), &yaml).unwrap();
    let sub = ws.join("crates/ops");
    let o = codegen(&sub, &["generate", "--check"]);
    assert!(!o.status.success(), "nothing generated yet, so stale");
    assert!(
        text(&o.stderr).contains(&ws.join("crates/ops/src/generated").display().to_string()),
        "{}",
        text(&o.stderr)
    );
    let o = codegen(&sub, &["generate"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let generated = ws.join("crates/ops/src/generated/operators.rs");
    assert_eq!(
        std::fs::read_to_string(&generated).unwrap(),
        std::fs::read_to_string(checkout().join("crates/ops/src/generated/operators.rs")).unwrap()
    );
    let o = codegen(&sub, &["generate", "--check"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Outside any workspace, generate says so.
    let lost = scratch("lost");
    let o = codegen(&lost, &["generate"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains(
            "no switchyard workspace (a directory holding crates/ops/ops.yaml) at or above"
        ),
        "{}",
        text(&o.stderr)
    );
    std::fs::remove_dir_all(&ws).unwrap();
    std::fs::remove_dir_all(&lost).unwrap();
}

#[test]
fn a_backend_crate_anywhere_generates_its_files_from_relative_paths() {
    // The sidecar's yaml in a directory outside the workspace: the output equals the committed
    // generated code of backends/sidecar.
    let dir = scratch("backend");
    std::fs::copy(
        checkout().join("backends/sidecar/backend.yaml"),
        dir.join("backend.yaml"),
    )
    .unwrap();
    let o = codegen(
        &dir,
        &[
            "backend",
            "--source-yaml",
            "backend.yaml",
            "--output-dir",
            "gen",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    for name in ["mod.rs", "native_functions.rs", "register.rs"] {
        assert_eq!(
            std::fs::read_to_string(dir.join("gen").join(name)).unwrap(),
            std::fs::read_to_string(checkout().join("backends/sidecar/src/generated").join(name))
                .unwrap(),
            "{name}"
        );
    }
    let o = codegen(
        &dir,
        &["backend", "-s", "backend.yaml", "-o", "gen", "--check"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = codegen(&dir, &["check", "backend.yaml"]);
    assert!(o.status.success(), "{}", text(&o.stdout));

    // --ops-yaml names the operator set: one without `mm` refuses a yaml that lists it.
    let full = std::fs::read_to_string(checkout().join(workspace::OPS_YAML)).unwrap();
    let small: String = full
        .split("\n\n")
        .filter(|entry| entry.contains("- func: add.Tensor(") || entry.contains("- func: add.out("))
        .collect::<Vec<_>>()
        .join("\n\n");
    std::fs::write(dir.join("ops.yaml"), small).unwrap();
    std::fs::write(
        dir.join("mm.yaml"),
        "backend: PrivateUse1\ncpp_namespace: x\nsupported: [mm]\n",
    )
    .unwrap();
    let o = codegen(
        &dir,
        &[
            "backend",
            "-s",
            "mm.yaml",
            "-o",
            "gen2",
            "--ops-yaml=ops.yaml",
        ],
    );
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("Found an invalid operator name: mm"),
        "{}",
        text(&o.stderr)
    );
    let o = codegen(&dir, &["check", "mm.yaml", "--ops-yaml", "ops.yaml"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stdout).contains("Found an invalid operator name: mm"),
        "{}",
        text(&o.stdout)
    );
    // With the bundled operators it is fine.
    let o = codegen(&dir, &["check", "mm.yaml"]);
    assert!(o.status.success(), "{}", text(&o.stdout));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn check_tells_the_two_kinds_of_yaml_apart() {
    assert_eq!(
        workspace::yaml_kind("backend: XLA\ncpp_namespace: x\n"),
        workspace::YamlKind::Backend
    );
    assert_eq!(
        workspace::yaml_kind("cpp_namespace: x\nsupported: [abs]\n"),
        workspace::YamlKind::Backend
    );
    assert_eq!(
        workspace::yaml_kind("- func: foo(Tensor self) -> Tensor\n"),
        workspace::YamlKind::NativeFunctions
    );
    // A mapping without the backend keys is a (malformed) native_functions yaml.
    assert_eq!(
        workspace::yaml_kind("func: foo(Tensor self) -> Tensor\n"),
        workspace::YamlKind::NativeFunctions
    );
    let problems = workspace::check_yaml_text(
        "backend: PrivateUse1\ncpp_namespace: x\nsupported: [abs]\nautograd: abs\n",
        "b.yaml",
        workspace::parse_bundled_ops_yaml,
    )
    .unwrap();
    assert_eq!(
        problems,
        ["expected \"autograd\" to be a list, but got: abs\n  in b.yaml:4"]
    );
}
