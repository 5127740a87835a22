//! `switchyard functionalize`: runs one of the A.11 programs (`switchyard_functionalize::programs`)
//! or a recorded graph (`--load-graph`, the JSON `Graph::to_json` writes) through the
//! functionalize transform and prints the graph the backend saw, traced below the layer (plan
//! §5.3), as text, Graphviz dot or JSON. `--save-graph` records a built-in program as traced
//! eagerly; `--device` replays the program's eager recording on another device.

use crate::Outcome;
use std::io::Write;
use std::path::PathBuf;
use switchyard_call::explain;
use switchyard_core::{Device, Error, IValue, Result, Tensor};
use switchyard_dispatch::OperatorHandle;
use switchyard_functionalize::programs::{PROGRAMS, Program, program};
use switchyard_functionalize::{
    Graph, ReapplyViewsGuard, Remove, run_functionalized, to_functional, trace,
};

/// How the graph is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// One statement per line (`%view_copy = view_copy(x, [4,2])`), as in the reference note.
    Text,
    /// Graphviz's dot language (`... | dot -Tsvg`).
    Dot,
    /// The graph as JSON (`Graph::to_json`: inputs, constants, nodes with every argument).
    Json,
}

/// The arguments of `switchyard functionalize`.
#[derive(clap::Args)]
pub(crate) struct FunctionalizeArgs {
    /// The program to run (`--list` shows them all; default `simple`).
    #[arg(conflicts_with = "load_graph")]
    program: Option<String>,
    /// What functionalization removes: `mutations` (views stay views, PyTorch's default) or
    /// `mutations_and_views` (views become their `*_copy` operators).
    #[arg(long, value_name = "MODE", conflicts_with = "eager")]
    remove: Option<String>,
    /// How to print the graph.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Trace the program as written, without functionalizing it.
    #[arg(long)]
    eager: bool,
    /// List the programs and exit.
    #[arg(long)]
    list: bool,
    /// The device of the inputs (cpu, sidecar). Off the CPU, the program is recorded eagerly
    /// on the CPU and its graph replayed on the device, its factories there too.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Also write the program as traced eagerly (not functionalized, on the CPU) to FILE, as
    /// JSON, for `--load-graph`.
    #[arg(long, value_name = "FILE", conflicts_with = "load_graph")]
    save_graph: Option<PathBuf>,
    /// Functionalize a recorded graph instead of a built-in program: FILE holds its JSON (as
    /// `--save-graph` or `--format json` write it), replayed on fresh inputs of the recorded
    /// dtypes, sizes and strides, filled with ones.
    #[arg(long, value_name = "FILE")]
    load_graph: Option<PathBuf>,
}

fn find(name: &str) -> Result<&'static Program> {
    program(name).ok_or_else(|| {
        Error::value(format!(
            "unknown program '{name}' (try `switchyard functionalize --list`)"
        ))
    })
}

/// Runs `p` (functionalized with `remove`, or eagerly) under the tracer.
fn traced(p: &Program, remove: Option<Remove>) -> Result<Graph> {
    let inputs = (p.inputs)()?;
    let f = |x: &[Tensor]| match remove {
        Some(r) => run_functionalized(&p.run, x, r),
        None => (p.run)(x),
    };
    Ok(trace(&f, &inputs, p.input_names)?.1)
}

/// Replays `recorded` on fresh inputs on `device` (functionalized with `remove`, or eagerly)
/// under the tracer.
fn replayed(recorded: &Graph, device: Device, remove: Option<Remove>) -> Result<Graph> {
    let inputs = recorded.fresh_inputs(device)?;
    let names: Vec<&str> = recorded.inputs.iter().map(String::as_str).collect();
    // On the CPU, as recorded (factories keep their arguments as traced).
    let on = (!device.is_cpu()).then_some(device);
    let program = |x: &[Tensor]| recorded.replay_on(x, on);
    let f = |x: &[Tensor]| match remove {
        Some(r) => run_functionalized(&program, x, r),
        None => program(x),
    };
    Ok(trace(&f, &inputs, &names)?.1)
}

/// The recorded graph in `path` (`--load-graph`), which must record its inputs' types.
fn load(path: &std::path::Path) -> Result<Graph> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::value(format!("cannot read {}: {e}", path.display())))?;
    let graph = Graph::from_json(&text)
        .map_err(|e| Error::value(format!("{}: {}", path.display(), e.message())))?;
    if graph.input_types.len() != graph.inputs.len() {
        return Err(Error::value(format!(
            "{}: the graph does not record its inputs' dtypes and sizes ('input_types'), which replaying it needs",
            path.display()
        )));
    }
    Ok(graph)
}

/// The command.
pub(crate) fn run(args: &FunctionalizeArgs, out: &mut dyn Write) -> Outcome<()> {
    if args.list {
        for p in PROGRAMS {
            writeln!(out, "{:<52} {:<4} {}", p.name, p.case, p.about)?;
        }
        return Ok(());
    }
    // Parsed first: an invalid mode is PyTorch's error whatever the program.
    let remove = match (&args.remove, args.eager) {
        (_, true) => None,
        (Some(text), false) => Some(text.parse::<Remove>()?),
        (None, false) => Some(Remove::Mutations),
    };
    let device = match crate::device(&args.device)? {
        // Tensors made on a device without an index are on its current one, index 0 here: name
        // it, so that factories replayed there make tensors of the same device as the inputs.
        d if !d.is_cpu() && d.index().is_none() => Device::new(d.kind(), Some(0)),
        d => d,
    };
    let (title, graph) = match &args.load_graph {
        Some(path) => {
            let recorded = load(path)?;
            let title = format!(
                "{}: a recorded graph, replayed on fresh inputs",
                path.display()
            );
            (title, replayed(&recorded, device, remove)?)
        }
        None => {
            let p = find(args.program.as_deref().unwrap_or("simple"))?;
            if let Some(path) = &args.save_graph {
                let json = traced(p, None)?.to_json()?;
                std::fs::write(path, format!("{json}\n"))
                    .map_err(|e| Error::runtime(format!("cannot write {}: {e}", path.display())))?;
            }
            let graph = if device.is_cpu() {
                traced(p, remove)?
            } else {
                replayed(&traced(p, None)?, device, remove)?
            };
            (format!("{} (A.11 {}): {}", p.name, p.case, p.about), graph)
        }
    };
    match args.format {
        Format::Text => {
            writeln!(out, "# {title}")?;
            let on = if device.is_cpu() {
                String::new()
            } else {
                format!(", on {device}")
            };
            match remove {
                Some(r) => writeln!(
                    out,
                    "# functionalize(f, remove='{r}'), traced below the layer{on}"
                )?,
                None => writeln!(out, "# traced eagerly (not functionalized){on}")?,
            }
            write!(out, "{graph}")?;
        }
        Format::Dot => write!(out, "{}", graph.to_dot())?,
        Format::Json => writeln!(out, "{}", graph.to_json()?)?,
    }
    Ok(())
}

/// `switchyard explain OP --functionalize`: the hops of a call whose tensor arguments are
/// functional wrappers (the `Functionalize` kernel and what it calls below the layer), then
/// the graph the backend sees for the same call under `functionalize(f, remove)`.
pub(crate) fn explain_functionalized(
    op: &OperatorHandle,
    device: Device,
    requires_grad: bool,
    remove: Remove,
) -> Result<String> {
    let schema = op.require_schema()?;
    // The hops: the sample tensors wrapped, as inside a `functionalize()` region.
    let mut wrapped = explain::sample_stack(op, device, requires_grad)?;
    let positions: Vec<usize> = wrapped
        .iter()
        .enumerate()
        .filter(|(_, v)| matches!(v, IValue::Tensor(_)))
        .map(|(i, _)| i)
        .collect();
    let mut text = {
        let _views = ReapplyViewsGuard::new(remove == Remove::Mutations);
        for &i in &positions {
            if let IValue::Tensor(t) = &wrapped[i] {
                let w = to_functional(t)?;
                wrapped[i] = IValue::Tensor(w);
            }
        }
        explain::explain_stack(op, wrapped)?
    };
    // The graph: the same call on fresh samples, functionalized and traced below the layer.
    let stack = explain::sample_stack(op, device, requires_grad)?;
    let inputs: Vec<Tensor> = positions
        .iter()
        .filter_map(|&i| match &stack[i] {
            IValue::Tensor(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = positions
        .iter()
        .filter_map(|&i| schema.arguments.get(i).map(|a| a.name.as_str()))
        .collect();
    let call = |ts: &[Tensor]| -> Result<Vec<Tensor>> {
        let mut s = stack.clone();
        for (&i, t) in positions.iter().zip(ts) {
            s[i] = IValue::Tensor(t.clone());
        }
        op.call_boxed(&mut s)?;
        Ok(s.iter()
            .flat_map(|v| v.tensors().into_iter().cloned())
            .collect())
    };
    let traced = trace(
        &|ts: &[Tensor]| run_functionalized(&call, ts, remove),
        &inputs,
        &names,
    );
    text.push_str(&format!(
        "\n8. Below the Functionalize layer: functionalize(f, remove='{remove}') traced\n"
    ));
    match traced {
        Ok((_, graph)) => {
            for line in graph.to_string().lines() {
                text.push_str(&format!("   {line}\n"));
            }
        }
        Err(e) => text.push_str(&format!("   the functionalized call failed: {e}\n")),
    }
    Ok(text)
}
