//! `switchyard-codegen`: regenerates the Rust code derived from `crates/ops/ops.yaml`.
//!
//! ```text
//! cargo run -p switchyard-codegen -- generate          # write the files under src/generated/
//! cargo run -p switchyard-codegen -- generate --check  # fail if they are stale
//! cargo run -p switchyard-codegen -- check FILE.yaml   # validate a yaml file
//! ```

use std::process::ExitCode;
use switchyard_codegen::emit::workspace;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace::workspace_root();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["generate"] => workspace::write(&root).map(|written| {
            for p in &written {
                println!("wrote {}", p.display());
            }
            if written.is_empty() {
                println!("generated files are up to date");
            }
            true
        }),
        ["generate", "--check"] => workspace::stale(&root).map(|stale| {
            for p in &stale {
                eprintln!(
                    "stale: {} (run `cargo run -p switchyard-codegen -- generate`)",
                    p.display()
                );
            }
            stale.is_empty()
        }),
        ["check", file] => workspace::check_yaml_file(std::path::Path::new(file)).map(|problems| {
            for p in &problems {
                println!("{p}\n");
            }
            problems.is_empty()
        }),
        _ => Err("usage: switchyard-codegen generate [--check] | check FILE.yaml".to_string()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
