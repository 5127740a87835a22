//! The `switchyard` command.

mod demo;
mod functionalize;
mod lazy;
mod output;
mod svg;
mod train;

use clap::{Parser, Subcommand};
use std::io::{self, Write};
use std::process::ExitCode;
use switchyard_call::explain;
use switchyard_core::{BackendComponent, Device, DispatchKey, Error, Result};
use switchyard_dispatch::{Dispatcher, OperatorHandle};

// Linking the CPU and autograd crates registers their kernels.
use switchyard_autograd as _;
use switchyard_cpu as _;

/// switchyard: a tensor runtime built around a PyTorch-style operator dispatcher.
#[derive(Parser)]
#[command(name = "switchyard", version, about, long_about = None)]
struct Cli {
    /// Load a backend before running the command (`sidecar`, the reference external backend,
    /// which takes the PrivateUse1 key). Naming it with `--backend` or `--device` loads it too.
    #[arg(long = "load", global = true, value_name = "BACKEND")]
    load: Vec<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what the runtime can do: tensors, type promotion, dispatch, an MLP forward pass,
    /// training a network on a real data set (on the CPU and on the reference backend).
    Demo,
    /// Train an MLP on the red-wine quality data set (1599 wines, 6 quality classes) and
    /// report the loss and accuracy per epoch; optionally draw the loss curve as a PNG.
    Train {
        /// Passes over the training data.
        #[arg(long, default_value_t = 30)]
        epochs: usize,
        /// Adam's learning rate.
        #[arg(long, default_value_t = 5e-3)]
        lr: f64,
        /// Examples per step.
        #[arg(long, default_value_t = 64)]
        batch_size: i64,
        /// Seed of the weights and the data order.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Device to train on (cpu, sidecar, lazy).
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Write the loss curve to this PNG file.
        #[arg(long, value_name = "PNG")]
        plot: Option<std::path::PathBuf>,
    },
    /// Print an operator's dispatch table (which kernel serves each key, and why).
    Table {
        /// Operator name, e.g. `aten::add.Tensor` or `add.Tensor`.
        op: String,
    },
    /// Explain how a call of an operator is dispatched: key sets, masks, every hop.
    Explain {
        /// Operator name, e.g. `aten::add.Tensor`.
        op: String,
        /// Device of the sample tensor arguments (cpu, meta, sidecar, ...).
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Make the sample tensors require gradients.
        #[arg(long)]
        requires_grad: bool,
        /// Wrap the sample tensors as functional tensors: show the Functionalize hop and the
        /// graph the backend sees below the layer.
        #[arg(long)]
        functionalize: bool,
        /// With --functionalize: what functionalization removes (`mutations`, PyTorch's
        /// default, or `mutations_and_views`).
        #[arg(long, value_name = "MODE", requires = "functionalize")]
        remove: Option<String>,
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
        /// Print one JSON value per return (errors as {"error", "message"}). Tensors are
        /// printed in full, up to 1048576 elements in all; larger results are refused (the
        /// text output summarises them).
        #[arg(long)]
        json: bool,
        /// Device for tensor arguments (cpu, meta, sidecar, ...).
        #[arg(long, default_value = "cpu")]
        device: String,
    },
    /// List operators and how a backend serves each (kernel, composite, fallback, missing).
    Ops {
        /// Backend dispatch key (CPU, Meta, PrivateUse1, ...) or backend name (sidecar) to
        /// report on.
        #[arg(long, default_value = "CPU")]
        backend: String,
    },
    /// Functionalize a built-in program (the A.11 cases: `simple`, `everything`,
    /// `view_inplace`, ...; see `--list`) and print the graph its backend sees, traced below
    /// the functionalization layer.
    Functionalize(functionalize::FunctionalizeArgs),
    /// Run a built-in program on the lazy device (`add`, `mlp-step`; see `--list`) and print
    /// the IR its last step traced (text, Graphviz or SVG) and the lazy metrics; `lazy render
    /// GRAPH.dot -o GRAPH.svg` lays out a saved Graphviz dump as SVG.
    Lazy(lazy::LazyArgs),
    /// Validate a native_functions.yaml-format file, or a backend yaml (recognised by its
    /// top-level `backend:` / `cpp_namespace:` keys; checked against the operators of this
    /// build), reporting every problem with its line.
    YamlCheck {
        /// The yaml file.
        file: std::path::PathBuf,
    },
}

/// Why a command stopped: an operation failed, or its output could not be written.
pub(crate) enum Failure {
    /// A switchyard error (printed to stderr).
    Op(Error),
    /// Writing the output failed; a closed pipe (`switchyard ops | head`) ends the command
    /// quietly.
    Io(io::Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Op(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Io(e)
    }
}

/// The result of a part of the command that writes output.
pub(crate) type Outcome<T> = std::result::Result<T, Failure>;

/// A backend the command can load by name.
struct Loadable {
    /// Its device name (`sidecar`).
    name: &'static str,
    /// The backend dispatch key it takes.
    key: DispatchKey,
    /// Registers it (idempotent).
    init: fn() -> Result<()>,
}

/// The backends the command can load: the reference external backend.
const BACKENDS: [Loadable; 2] = [
    Loadable {
        name: switchyard_sidecar::DEVICE_NAME,
        key: DispatchKey::PrivateUse1,
        init: switchyard_sidecar::init,
    },
    Loadable {
        name: "lazy",
        key: DispatchKey::Lazy,
        init: switchyard_lazy::init,
    },
];

fn loadable(name: &str) -> Option<&'static Loadable> {
    BACKENDS.iter().find(|b| b.name == name)
}

/// Loads the backend called `name`.
fn load_backend(name: &str) -> Result<()> {
    match loadable(name) {
        Some(b) => (b.init)(),
        None => Err(Error::value(format!(
            "unknown backend '{name}' (the switchyard command can load: {})",
            BACKENDS.map(|b| b.name).join(", ")
        ))),
    }
}

/// Loads the backend serving backend component `component`, if the command has one.
fn load_backend_for(component: BackendComponent) -> Result<()> {
    for b in &BACKENDS {
        if b.key.to_backend_component() == component {
            (b.init)()?;
        }
    }
    Ok(())
}

/// The dispatch key `--backend` names: a key (`CPU`, `PrivateUse1`, `AutogradPrivateUse1`)
/// or a loadable backend's name (`sidecar`). A key of a loadable backend loads it.
fn backend_key(text: &str) -> Result<DispatchKey> {
    if let Some(b) = loadable(text) {
        (b.init)()?;
        return Ok(b.key);
    }
    let key = DispatchKey::parse(text)?;
    load_backend_for(key.to_backend_component())?;
    Ok(key)
}

/// The device `--device` names, loading its backend first when it is a loadable one
/// (`sidecar`, `sidecar:0`, `privateuseone`).
fn device(text: &str) -> Result<Device> {
    let kind = text.split_once(':').map_or(text, |(k, _)| k);
    if let Some(b) = loadable(kind) {
        (b.init)()?;
    } else if kind == "privateuseone" {
        load_backend_for(BackendComponent::PrivateUse1)?;
    }
    Device::parse(text)
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

fn call(op: &str, texts: &[String], device_text: &str) -> Result<Vec<switchyard_core::IValue>> {
    let handle = find_op(op)?;
    let schema = handle.require_schema()?;
    let device = device(device_text)?;
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

fn run(cli: Cli, out: &mut dyn Write) -> Outcome<ExitCode> {
    for name in &cli.load {
        load_backend(name)?;
    }
    match cli.command {
        Command::Demo => demo::run(out)?,
        Command::Train {
            epochs,
            lr,
            batch_size,
            seed,
            device: device_text,
            plot,
        } => {
            let opts = train::TrainOptions {
                epochs,
                lr,
                batch_size,
                seed,
                device: device(&device_text)?,
                ..train::TrainOptions::default()
            };
            let data = train::wine_quality(seed)?;
            writeln!(
                out,
                "training an MLP on the red-wine quality data ({} training and {} test wines, {} classes) on {}",
                data.x_train.size(0)?,
                data.x_test.size(0)?,
                data.classes,
                opts.device
            )?;
            let history = train::train(out, &data, &opts, 1)?;
            writeln!(
                out,
                "{} steps in {:.2} s ({:.0} µs per step: forward, backward, Adam update)",
                history.steps,
                history.train_time.as_secs_f64(),
                history.train_time.as_secs_f64() * 1e6 / history.steps.max(1) as f64
            )?;
            if let Some(path) = plot {
                train::plot_loss(&history, "switchyard: MLP on red-wine quality", &path)?;
                writeln!(out, "loss curve written to {}", path.display())?;
            }
        }
        Command::Table { op } => write!(out, "{}", find_op(&op)?.dump_table())?,
        Command::Explain {
            op,
            device: device_text,
            requires_grad,
            functionalize: false,
            ..
        } => write!(
            out,
            "{}",
            explain::explain(find_op(&op)?, device(&device_text)?, requires_grad)?
        )?,
        Command::Explain {
            op,
            device: device_text,
            requires_grad,
            functionalize: true,
            remove,
        } => {
            // Parsed first: an invalid mode is PyTorch's error whatever the operator.
            let remove = match remove {
                Some(text) => text.parse::<switchyard_functionalize::Remove>()?,
                None => switchyard_functionalize::Remove::Mutations,
            };
            write!(
                out,
                "{}",
                functionalize::explain_functionalized(
                    &find_op(&op)?,
                    device(&device_text)?,
                    requires_grad,
                    remove
                )?
            )?
        }
        Command::Call {
            op,
            args,
            json,
            device,
        } => match call(&op, &args, &device).and_then(|values| {
            if json {
                output::json_lines(&values)
            } else {
                Ok(values.iter().map(|v| format!("{v}\n")).collect())
            }
        }) {
            Ok(text) => out.write_all(text.as_bytes())?,
            Err(e) => {
                if json {
                    writeln!(out, "{}", output::error_json(&e))?;
                } else {
                    report(&e);
                }
                return Ok(ExitCode::FAILURE);
            }
        },
        Command::Ops { backend } => {
            let key = backend_key(&backend)?;
            for op in Dispatcher::singleton().all_operators() {
                writeln!(out, "{:<48} {}", op.name(), serving(&op, key))?;
            }
        }
        Command::Functionalize(args) => functionalize::run(&args, out)?,
        Command::Lazy(args) => lazy::run(&args, out)?,
        Command::YamlCheck { file } => {
            let problems = switchyard_codegen::emit::workspace::check_yaml_file(&file, None)
                .map_err(Error::value)?;
            if problems.is_empty() {
                writeln!(out, "{}: ok", file.display())?;
            } else {
                for p in &problems {
                    writeln!(out, "{p}")?;
                }
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Prints an error to stderr; if stderr is closed too, there is nobody to tell.
fn report(e: &dyn std::fmt::Display) {
    let _ = writeln!(io::stderr(), "{e}");
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    switchyard_core::format::set_host_copy_hook(output::host_copy_for_printing);
    let mut out = io::BufWriter::new(io::stdout().lock());
    let code = match run(cli, &mut out) {
        Ok(code) => code,
        Err(Failure::Op(e)) => {
            // What was printed before the error goes out first.
            match out.flush() {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
                _ => {}
            }
            report(&e);
            ExitCode::FAILURE
        }
        Err(Failure::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
        Err(Failure::Io(e)) => {
            report(&format!("switchyard: cannot write the output: {e}"));
            return ExitCode::FAILURE;
        }
    };
    // Dropping a BufWriter flushes and ignores errors; flush explicitly to see them.
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            report(&format!("switchyard: cannot write the output: {e}"));
            ExitCode::FAILURE
        }
        _ => code,
    }
}
