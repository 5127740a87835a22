//! Opt-in: every `func:` of PyTorch's `native_functions.yaml` parses and prints back exactly.
//!
//! Set `SWITCHYARD_NATIVE_FUNCTIONS_YAML` to the file's path (it ships in the torch wheel as
//! `torchgen/packaged/ATen/native/native_functions.yaml`); without it the test is skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_schema::FunctionSchema;

const ENV_VAR: &str = "SWITCHYARD_NATIVE_FUNCTIONS_YAML";

/// The `func:` values of the file's entries (each entry starts with a `- func: ` line).
fn func_values(yaml: &str) -> Vec<&str> {
    yaml.lines()
        .filter_map(|line| line.strip_prefix("- func: "))
        .map(|value| {
            let value = value.trim_end();
            ['"', '\'']
                .iter()
                .find_map(|&q| value.strip_prefix(q).and_then(|v| v.strip_suffix(q)))
                .unwrap_or(value)
        })
        .collect()
}

#[test]
fn every_native_function_schema_parses_and_round_trips() {
    let Some(path) = std::env::var_os(ENV_VAR) else {
        println!("note: {ENV_VAR} is not set; skipping the native_functions.yaml check");
        return;
    };
    let yaml = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.to_string_lossy()));
    let funcs = func_values(&yaml);
    assert!(
        funcs.len() > 2500,
        "only {} `- func:` lines found in {}",
        funcs.len(),
        path.to_string_lossy()
    );

    let failures: Vec<String> = funcs
        .iter()
        .filter_map(|&func| match FunctionSchema::parse(func) {
            Ok(schema) if schema.to_string() == func => None,
            Ok(schema) => Some(format!("{func}\n  printed as {schema}")),
            Err(e) => Some(format!("{func}\n  {e}")),
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} schemas failed:\n{}",
        failures.len(),
        funcs.len(),
        failures.join("\n")
    );
}

#[test]
fn func_values_strips_prefix_and_quotes() {
    let yaml = "- func: a() -> Tensor\n  variants: function\n- func: 'b() -> Tensor'\n- func: \"c() -> ()\"  \n# - func: d() -> Tensor\n";
    assert_eq!(
        func_values(yaml),
        vec!["a() -> Tensor", "b() -> Tensor", "c() -> ()"]
    );
}
