//! `switchyard-codegen`: regenerates the Rust code derived from `crates/ops/ops.yaml`, and an
//! external backend's registration code from its backend yaml.
//!
//! ```text
//! cargo run -p switchyard-codegen -- generate          # write the files under src/generated/ (and the
//!                                                    # backend fixtures under crates/codegen/tests/)
//! cargo run -p switchyard-codegen -- generate --check  # fail if they are stale
//! cargo run -p switchyard-codegen -- check FILE.yaml   # validate a yaml file (either kind)
//! cargo run -p switchyard-codegen -- backend --source-yaml B.yaml --output-dir DIR [--check]
//!                                    # an external backend's trait, registration and wrappers
//! ```
//!
//! Nothing depends on where the generator was built: `generate` works on the workspace at or
//! above the current directory; `check` and `backend` take paths relative to the current
//! directory and check a backend yaml against the operators bundled into the generator (or the
//! `ops.yaml` given with `--ops-yaml`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use switchyard_codegen::NativeFunctions;
use switchyard_codegen::emit::workspace;

const USAGE: &str = "\
usage: switchyard-codegen generate [--check]
       switchyard-codegen check FILE.yaml [--ops-yaml OPS.yaml]
       switchyard-codegen backend --source-yaml FILE.yaml --output-dir DIR [--ops-yaml OPS.yaml] [--check]

  generate   write the files generated from crates/ops/ops.yaml, and the backend test
             fixtures under crates/codegen/tests/ (--check: fail if stale), in the workspace
             at or above the current directory
  check      validate a native_functions-format yaml file, or a backend yaml (recognised by
             its top-level backend: / cpp_namespace: keys)
  backend    from an external backend's yaml (backend, supported, autograd, ...): write
             mod.rs, native_functions.rs (the kernel trait) and register.rs (registration and
             generated in-place/out= wrappers) into DIR (--check: fail if they are stale)

  Paths are relative to the current directory. A backend yaml is resolved against the
  operators of the ops.yaml bundled into this generator, or of --ops-yaml.";

/// Prints a line to stdout. A closed pipe (`switchyard-codegen check x | head -1`) ends the
/// output quietly instead of panicking as `println!` does.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// Prints a line to stderr (never panics, as [`say!`]).
macro_rules! warn {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Flags of `check` and `backend`: `--flag value` or `--flag=value`, in any order.
#[derive(Default)]
struct Flags<'a> {
    source: Option<&'a str>,
    output: Option<&'a str>,
    ops_yaml: Option<&'a str>,
    check: bool,
    positional: Vec<&'a str>,
}

fn flags<'a>(args: &[&'a str]) -> Result<Flags<'a>, String> {
    let mut f = Flags::default();
    let mut it = args.iter();
    while let Some(&arg) = it.next() {
        if !arg.starts_with('-') {
            f.positional.push(arg);
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f, Some(v)),
            None => (arg, None),
        };
        if flag == "--check" && inline.is_none() {
            f.check = true;
            continue;
        }
        let slot = match flag {
            "--source-yaml" | "--source_yaml" | "-s" => &mut f.source,
            "--output-dir" | "--output_dir" | "-o" => &mut f.output,
            "--ops-yaml" | "--ops_yaml" => &mut f.ops_yaml,
            _ => return Err(format!("unexpected argument {arg}\n\n{USAGE}")),
        };
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .copied()
                .ok_or_else(|| format!("{flag} needs a value\n\n{USAGE}"))?,
        };
        *slot = Some(value);
    }
    Ok(f)
}

/// The operators a backend yaml is resolved against: `--ops-yaml`, or the bundled ones.
fn ops_model(ops_yaml: Option<&str>) -> Result<NativeFunctions, String> {
    match ops_yaml {
        Some(p) => workspace::parse_ops_yaml_file(Path::new(p)),
        None => workspace::parse_bundled_ops_yaml(),
    }
}

/// `check FILE [--ops-yaml OPS]`.
fn check(args: &[&str]) -> Result<bool, String> {
    let f = flags(args)?;
    let ([file], None, None, false) = (f.positional.as_slice(), f.source, f.output, f.check) else {
        return Err(USAGE.to_string());
    };
    let problems = workspace::check_yaml_file(Path::new(file), f.ops_yaml.map(Path::new))?;
    for p in &problems {
        say!("{p}\n");
    }
    Ok(problems.is_empty())
}

/// `backend --source-yaml FILE --output-dir DIR [--ops-yaml OPS] [--check]`.
fn backend(args: &[&str]) -> Result<bool, String> {
    let f = flags(args)?;
    if !f.positional.is_empty() {
        return Err(format!(
            "unexpected argument {}\n\n{USAGE}",
            f.positional[0]
        ));
    }
    let (Some(source), Some(output)) = (f.source, f.output) else {
        return Err(format!(
            "backend needs --source-yaml and --output-dir\n\n{USAGE}"
        ));
    };
    let model = ops_model(f.ops_yaml)?;
    let (source, output) = (Path::new(source), Path::new(output));
    if f.check {
        let stale = workspace::stale_backend(&model, source, output)?;
        for p in &stale {
            warn!(
                "stale: {} (run `switchyard-codegen backend --source-yaml {} --output-dir {}`)",
                p.display(),
                source.display(),
                output.display()
            );
        }
        Ok(stale.is_empty())
    } else {
        let written = workspace::write_backend(&model, source, output)?;
        for p in &written {
            say!("wrote {}", p.display());
        }
        if written.is_empty() {
            say!("generated files are up to date (or the yaml lists no supported operator)");
        }
        Ok(true)
    }
}

/// The workspace `generate` works on: the one at or above the current directory.
fn workspace_root() -> Result<std::path::PathBuf, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    workspace::find_workspace_root(&cwd)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["generate"] => workspace_root().and_then(|root| {
            let written = workspace::write(&root)?;
            for p in &written {
                say!("wrote {}", root.join(p).display());
            }
            if written.is_empty() {
                say!("generated files are up to date");
            }
            Ok(true)
        }),
        ["generate", "--check"] => workspace_root().and_then(|root| {
            let stale = workspace::stale(&root)?;
            for p in &stale {
                warn!(
                    "stale: {} (run `cargo run -p switchyard-codegen -- generate`)",
                    root.join(p).display()
                );
            }
            Ok(stale.is_empty())
        }),
        ["check", rest @ ..] => check(rest),
        ["backend", rest @ ..] => backend(rest),
        ["help" | "--help" | "-h"] => {
            say!("{USAGE}");
            Ok(true)
        }
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            warn!("{e}");
            ExitCode::FAILURE
        }
    }
}
