//! Opt-in: PyTorch's own `native_functions.yaml` parses, validates and groups without a single
//! problem. Set `SWITCHYARD_NATIVE_FUNCTIONS_YAML` to its path (the torch wheel ships it as
//! `torchgen/packaged/ATen/native/native_functions.yaml`); without it the test has nothing to check.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_codegen::emit::workspace::check_yaml_file;
use switchyard_codegen::{ParseOptions, parse_native_functions};

#[test]
fn pytorch_native_functions_yaml_passes() {
    let Ok(path) = std::env::var("SWITCHYARD_NATIVE_FUNCTIONS_YAML") else {
        eprintln!("SWITCHYARD_NATIVE_FUNCTIONS_YAML is not set; skipping");
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let parsed = match parse_native_functions(&text, &path, &ParseOptions::default()) {
        Ok(p) => p,
        Err(errors) => panic!("{} problems, first: {}", errors.len(), errors[0]),
    };
    // PyTorch 2.x declares well over two thousand operators and about a thousand groups.
    assert!(
        parsed.num_yaml_functions > 2000,
        "{}",
        parsed.num_yaml_functions
    );
    assert!(
        parsed.functions.len() > parsed.num_yaml_functions,
        "autogen adds functions"
    );
    assert!(parsed.groups().count() > 500);
    assert!(!parsed.view_groups.is_empty());
    assert_eq!(
        check_yaml_file(std::path::Path::new(&path), None).unwrap(),
        Vec::<String>::new()
    );
}
