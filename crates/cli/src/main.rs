//! The `switchyard` command.

mod demo;
mod explain;
mod output;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use switchyard_core::{Device, DispatchKey, Error, Result};
use switchyard_dispatch::{Dispatcher, OperatorHandle};

// Linking the CPU crate registers its kernels.
use switchyard_cpu as _;

/// switchyard: a tensor runtime built around a PyTorch-style operator dispatcher.
#[derive(Parser)]
#[command(name = "switchyard", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what the runtime can do: tensors, type promotion, dispatch, an MLP forward pass.
    Demo,
    /// Print an operator's dispatch table (which kernel serves each key, and why).
    Table {
        /// Operator name, e.g. `aten::add.Tensor` or `add.Tensor`.
        op: String,
    },
    /// Explain how a call of an operator is dispatched: key sets, masks, every hop.
    Explain {
        /// Operator name, e.g. `aten::add.Tensor`.
        op: String,
        /// Device of the sample tensor arguments (cpu, meta, ...).
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Make the sample tensors require gradients.
        #[arg(long)]
        requires_grad: bool,
    },
    /// Call an operator by name with arguments parsed according to its schema.
    ///
    /// Arguments are matched to the schema as `torch.ops.aten.<op>.<overload>(...)` matches
    /// them: positional values in order, then name=value keywords; an argument without a
    /// value takes its default, and one without a default (`out=` of an out= overload
    /// included) must be given.
    ///
    /// Tensors are JSON nested lists (dtype inferred as torch.tensor does) or objects
    /// {"dtype": "float32", "shape": [2, 2], "values": [...]} (dtype inferred when absent);
    /// sized lists such as int[2] take a bare number for all entries; other arguments are
    /// literals. Example:
    /// switchyard call 'aten::add.Tensor' '[[1,2],[3,4]]' '[10,20]' alpha=2
    Call {
        /// Operator name.
        op: String,
        /// Arguments: positional values (negative numbers included), then name=value keywords.
        #[arg(allow_negative_numbers = true)]
        args: Vec<String>,
        /// Print one JSON value per return (errors as {"error", "message"}).
        #[arg(long)]
        json: bool,
        /// Device for tensor arguments.
        #[arg(long, default_value = "cpu")]
        device: String,
    },
    /// List operators and how a backend serves each (kernel, composite, fallback, missing).
    Ops {
        /// Backend dispatch key to report on (CPU, Meta, ...).
        #[arg(long, default_value = "CPU")]
        backend: String,
    },
    /// Validate a native_functions.yaml-format file, or a backend yaml (recognised by its
    /// top-level `backend:` / `cpp_namespace:` keys; checked against the operators of this
    /// build), reporting every problem with its line.
    YamlCheck {
        /// The yaml file.
        file: std::path::PathBuf,
    },
}

fn find_op(name: &str) -> Result<OperatorHandle> {
    let d = Dispatcher::singleton();
    let qualified = if name.contains("::") {
        name.to_string()
    } else {
        format!("aten::{name}")
    };
    d.find_schema(&qualified).ok_or_else(|| {
        Error::value(format!(
            "unknown operator '{name}' (try `switchyard ops` for the list)"
        ))
    })
}

fn call(op: &str, texts: &[String], device: &str) -> Result<Vec<switchyard_core::IValue>> {
    let handle = find_op(op)?;
    let schema = handle.require_schema()?;
    let device = Device::parse(device)?;
    let mut stack = switchyard::args::parse_call_args(&schema, texts, device)?;
    handle.call_boxed(&mut stack)?;
    Ok(stack)
}

/// How `backend` serves an operator: kernel, composite, fallback, or missing.
fn serving(op: &OperatorHandle, backend: DispatchKey) -> String {
    match op.describe_slot(backend) {
        None => "missing".into(),
        Some((_, "kernel")) => "kernel".into(),
        Some((_, "backend fallback")) => "fallback".into(),
        Some((_, p)) => format!("composite ({p})"),
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Demo => demo::run()?,
        Command::Table { op } => print!("{}", find_op(&op)?.dump_table()),
        Command::Explain {
            op,
            device,
            requires_grad,
        } => {
            print!(
                "{}",
                explain::explain(find_op(&op)?, Device::parse(&device)?, requires_grad)?
            )
        }
        Command::Call {
            op,
            args,
            json,
            device,
        } => match call(&op, &args, &device) {
            Ok(values) => {
                if json {
                    for v in &values {
                        println!("{}", output::ivalue_json(v)?);
                    }
                } else {
                    for v in &values {
                        println!("{v}");
                    }
                }
            }
            Err(e) => {
                if json {
                    println!("{}", output::error_json(&e));
                } else {
                    eprintln!("{e}");
                }
                return Ok(ExitCode::FAILURE);
            }
        },
        Command::Ops { backend } => {
            let key = DispatchKey::parse(&backend)?;
            for op in Dispatcher::singleton().all_operators() {
                println!("{:<48} {}", op.name(), serving(&op, key));
            }
        }
        Command::YamlCheck { file } => {
            let problems = switchyard_codegen::emit::workspace::check_yaml_file(&file, None)
                .map_err(switchyard_core::Error::value)?;
            if problems.is_empty() {
                println!("{}: ok", file.display());
            } else {
                for p in &problems {
                    println!("{p}");
                }
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
