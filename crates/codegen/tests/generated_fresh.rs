//! The committed generated code must be what the generator produces from today's ops.yaml.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_codegen::emit::workspace;

/// The checkout these tests belong to.
fn root() -> std::path::PathBuf {
    workspace::find_workspace_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn committed_generated_code_is_up_to_date() {
    let root = root();
    let stale = workspace::stale(&root).unwrap();
    assert!(
        stale.is_empty(),
        "stale generated files (run `cargo run -p switchyard-codegen -- generate`): {stale:?}"
    );
}

#[test]
fn every_generated_file_carries_the_do_not_edit_header() {
    let root = root();
    for (path, text) in workspace::generate(&root).unwrap() {
        // Rust files start `// @generated`, Python stubs (`.pyi`) `# @generated`.
        let marker = if path.extension().is_some_and(|e| e == "pyi") {
            "# @generated"
        } else {
            "// @generated"
        };
        assert!(
            text.starts_with(marker),
            "{} lacks the header",
            path.display()
        );
        assert!(
            text.contains("Do not edit"),
            "{} lacks the do-not-edit line",
            path.display()
        );
    }
}

#[test]
fn the_python_signature_tables_and_stubs_are_generated() {
    let root = root();
    let files = workspace::generate(&root).unwrap();
    for wanted in [
        "crates/python/src/generated/signatures.rs",
        "python/switchyard/_C.pyi",
    ] {
        assert!(
            files.iter().any(|(p, _)| p == std::path::Path::new(wanted)),
            "{wanted} is not generated"
        );
    }
}

#[test]
fn a_hand_edited_generated_file_is_reported_stale() {
    let root = root();
    let tmp = std::env::temp_dir().join(format!("switchyard-fresh-{}", std::process::id()));
    let yaml = tmp.join(workspace::OPS_YAML);
    std::fs::create_dir_all(yaml.parent().unwrap()).unwrap();
    std::fs::copy(root.join(workspace::OPS_YAML), &yaml).unwrap();
    let written = workspace::write(&tmp).unwrap();
    assert!(!written.is_empty());
    assert!(workspace::stale(&tmp).unwrap().is_empty());
    let victim = tmp.join(&written[0]);
    let mut text = std::fs::read_to_string(&victim).unwrap();
    text.push_str("// a hand edit\n");
    std::fs::write(&victim, text).unwrap();
    assert_eq!(workspace::stale(&tmp).unwrap(), vec![written[0].clone()]);
    std::fs::remove_dir_all(&tmp).unwrap();
}
