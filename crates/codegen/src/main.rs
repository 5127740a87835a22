//! `switchyard-codegen`: regenerates the Rust code derived from `crates/ops/ops.yaml`.
//!
//! ```text
//! cargo run -p switchyard-codegen -- generate          # write the files under src/generated/ (and the
//!                                                    # backend fixtures under crates/codegen/tests/)
//! cargo run -p switchyard-codegen -- generate --check  # fail if they are stale
//! cargo run -p switchyard-codegen -- check FILE.yaml   # validate a yaml file
//! cargo run -p switchyard-codegen -- backend --source-yaml B.yaml --output-dir DIR [--check]
//!                                    # an external backend's trait, registration and wrappers
//! ```

use std::process::ExitCode;
use switchyard_codegen::emit::workspace;

const USAGE: &str = "\
usage: switchyard-codegen generate [--check]
       switchyard-codegen check FILE.yaml
       switchyard-codegen backend --source-yaml FILE.yaml --output-dir DIR [--check]

  generate   write the files generated from crates/ops/ops.yaml, and the backend test
             fixtures under crates/codegen/tests/ (--check: fail if stale)
  check      validate a native_functions-format yaml file
  backend    from an external backend's yaml (backend, supported, autograd, ...): write
             mod.rs, native_functions.rs (the kernel trait) and register.rs (registration and
             generated in-place/out= wrappers) into DIR (--check: fail if they are stale)";

/// `backend --source-yaml FILE --output-dir DIR [--check]` (flags in any order; `--flag=value`
/// also accepted).
fn backend(root: &std::path::Path, args: &[&str]) -> Result<bool, String> {
    let mut source = None;
    let mut output = None;
    let mut check = false;
    let mut it = args.iter();
    while let Some(&arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f, Some(v)),
            None => (arg, None),
        };
        match flag {
            "--check" if inline.is_none() => check = true,
            "--source-yaml" | "--source_yaml" | "-s" | "--output-dir" | "--output_dir" | "-o" => {
                let value = match inline {
                    Some(v) => v,
                    None => it
                        .next()
                        .copied()
                        .ok_or_else(|| format!("{flag} needs a value\n\n{USAGE}"))?,
                };
                if flag.starts_with("--s") || flag == "-s" {
                    source = Some(value);
                } else {
                    output = Some(value);
                }
            }
            _ => return Err(format!("unexpected argument {arg}\n\n{USAGE}")),
        }
    }
    let (Some(source), Some(output)) = (source, output) else {
        return Err(format!(
            "backend needs --source-yaml and --output-dir\n\n{USAGE}"
        ));
    };
    let (source, output) = (std::path::Path::new(source), std::path::Path::new(output));
    if check {
        let stale = workspace::stale_backend(root, source, output)?;
        for p in &stale {
            eprintln!(
                "stale: {} (run `cargo run -p switchyard-codegen -- backend --source-yaml {} --output-dir {}`)",
                p.display(),
                source.display(),
                output.display()
            );
        }
        Ok(stale.is_empty())
    } else {
        let written = workspace::write_backend(root, source, output)?;
        for p in &written {
            println!("wrote {}", p.display());
        }
        if written.is_empty() {
            println!("generated files are up to date (or the yaml lists no supported operator)");
        }
        Ok(true)
    }
}

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
        ["backend", rest @ ..] => backend(&root, rest),
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            Ok(true)
        }
        _ => Err(USAGE.to_string()),
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
