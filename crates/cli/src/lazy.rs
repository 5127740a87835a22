//! `switchyard lazy`: built-in programs on the lazy device (plan §7.3). Each runs a few steps
//! (`mark_step` after each), then traces one more step and prints its IR (text, Graphviz or
//! SVG, B.13 and plan §6.4) before running it; `--metrics` appends the lazy metrics report
//! (B.12). `switchyard lazy render GRAPH.dot [-o GRAPH.svg]` lays out a saved Graphviz dump
//! as SVG.

use std::io::Write;

use switchyard_autograd::{AutogradTensor, no_grad};
use switchyard_core::{Result, Tensor};
use switchyard_lazy::DumpFormat;
use switchyard_ops::TensorOps;

use crate::Outcome;

/// How `switchyard lazy` prints the traced graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LazyFormat {
    /// LTC's IR text.
    Text,
    /// Graphviz.
    Dot,
    /// SVG: the Graphviz graph laid out (`dagre`) and drawn.
    Svg,
    /// The program the backend compiles for the step (slots, instructions, fusion groups).
    Backend,
}

#[derive(clap::Args)]
pub(crate) struct LazyArgs {
    /// The program to run (`--list` shows them; default `add`), or `render` to lay out a
    /// Graphviz dump given next as SVG.
    program: Option<String>,
    /// With `render`: the Graphviz file (as `--format dot` writes it).
    input: Option<std::path::PathBuf>,
    /// Write the graph (or the SVG of `render`) to this file instead of standard output.
    #[arg(short = 'o', long)]
    output: Option<std::path::PathBuf>,
    /// Steps run (and synced) before the one whose IR is printed.
    #[arg(long, default_value_t = 2)]
    steps: usize,
    /// How to print the IR.
    #[arg(long, value_enum, default_value = "text")]
    format: LazyFormat,
    /// Append the lazy metrics report.
    #[arg(long)]
    metrics: bool,
    /// List the programs.
    #[arg(long)]
    list: bool,
}

/// A built-in program: state made once, then one step at a time.
struct Program {
    name: &'static str,
    about: &'static str,
    make: fn() -> Result<Vec<Tensor>>,
    /// One step over the state; returns the tensors whose IR is printed.
    step: fn(&[Tensor]) -> Result<Vec<Tensor>>,
}

const PROGRAMS: [Program; 2] = [
    Program {
        name: "add",
        about: "z += x + y on 2x3x4 tensors (LTC's reuse test, L1)",
        make: add_make,
        step: add_step,
    },
    Program {
        name: "mlp-step",
        about: "an SGD step of a 4-8-2 tanh MLP: forward, backward and update in one graph",
        make: mlp_make,
        step: mlp_step,
    },
];

fn values(n: i64, scale: f32, offset: f32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as f32 * 0.37 + offset).sin()) * scale)
        .collect()
}

fn lazy_tensor(sizes: &[i64], scale: f32, offset: f32) -> Result<Tensor> {
    let n = sizes.iter().product();
    switchyard_lazy::to_lazy(&Tensor::from_vec(values(n, scale, offset), sizes)?)
}

fn add_make() -> Result<Vec<Tensor>> {
    Ok(vec![
        lazy_tensor(&[2, 3, 4], 1.0, 0.0)?,
        lazy_tensor(&[2, 3, 4], 1.0, 1.0)?,
        lazy_tensor(&[2, 3, 4], 0.0, 0.0)?,
    ])
}

fn add_step(s: &[Tensor]) -> Result<Vec<Tensor>> {
    s[2].add_(&s[0].add(&s[1])?)?;
    Ok(vec![Clone::clone(&s[2])])
}

fn mlp_make() -> Result<Vec<Tensor>> {
    let p = |sizes: &[i64], off: f32| lazy_tensor(sizes, 0.5, off)?.requires_grad_(true);
    Ok(vec![
        p(&[4, 8], 0.1)?,
        p(&[8], 0.2)?,
        p(&[8, 2], 0.3)?,
        p(&[2], 0.4)?,
        lazy_tensor(&[3, 4], 1.0, 0.5)?,
        lazy_tensor(&[3, 2], 1.0, 0.6)?,
    ])
}

fn mlp_step(s: &[Tensor]) -> Result<Vec<Tensor>> {
    let (params, x, target) = (&s[..4], &s[4], &s[5]);
    let h = x.mm(&params[0])?.add(&params[1])?.tanh()?;
    let d = h.mm(&params[2])?.add(&params[3])?.sub(target)?;
    let loss = d.mul(&d)?.mean()?;
    loss.backward()?;
    {
        let _ng = no_grad();
        for p in params {
            let g = p
                .grad()
                .ok_or_else(|| switchyard_core::Error::runtime("a parameter has no gradient"))?;
            p.sub_(&g.mul_scalar(0.1)?)?;
            p.set_grad(None)?;
        }
    }
    let mut roots = vec![loss];
    roots.extend(params.iter().cloned());
    Ok(roots)
}

pub(crate) fn run(args: &LazyArgs, out: &mut dyn Write) -> Outcome<()> {
    if args.list {
        for p in &PROGRAMS {
            writeln!(out, "{:<10} {}", p.name, p.about)?;
        }
        return Ok(());
    }
    let name = args.program.as_deref().unwrap_or("add");
    if name == "render" {
        let input = args.input.as_ref().ok_or_else(|| {
            switchyard_core::Error::value("lazy render: expected a Graphviz file to render")
        })?;
        let text = std::fs::read_to_string(input).map_err(|e| {
            switchyard_core::Error::value(format!("lazy render: {}: {e}", input.display()))
        })?;
        let svg = crate::svg::render_svg(&crate::svg::parse_dot(&text)?)?;
        return emit(args, &svg, out);
    }
    if let Some(extra) = &args.input {
        return Err(switchyard_core::Error::value(format!(
            "lazy: unexpected argument '{}' (only `render` takes a file)",
            extra.display()
        ))
        .into());
    }
    let program = PROGRAMS.iter().find(|p| p.name == name).ok_or_else(|| {
        switchyard_core::Error::value(format!(
            "unknown lazy program '{name}' (`switchyard lazy --list` shows them)"
        ))
    })?;
    switchyard_lazy::init()?;
    let state = (program.make)()?;
    switchyard_lazy::mark_step()?;
    switchyard_lazy::reset_metrics();
    for _ in 0..args.steps {
        (program.step)(&state)?;
        switchyard_lazy::mark_step()?;
    }
    let roots = (program.step)(&state)?;
    let graph = match args.format {
        LazyFormat::Text => switchyard_lazy::dump_ir(&roots, DumpFormat::Text)?,
        LazyFormat::Dot => switchyard_lazy::dump_ir(&roots, DumpFormat::Dot)?,
        LazyFormat::Backend => switchyard_lazy::dump_ir(&roots, DumpFormat::Backend)?,
        LazyFormat::Svg => {
            let dot = switchyard_lazy::dump_ir(&roots, DumpFormat::Dot)?;
            crate::svg::render_svg(&crate::svg::parse_dot(&dot)?)?
        }
    };
    emit(args, &graph, out)?;
    switchyard_lazy::mark_step()?;
    if args.metrics {
        write!(out, "{}", switchyard_lazy::metrics_report())?;
    }
    Ok(())
}

/// Writes `text` to `--output` (or `out`).
fn emit(args: &LazyArgs, text: &str, out: &mut dyn Write) -> Outcome<()> {
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| switchyard_core::Error::value(format!("lazy: {}: {e}", path.display())))?,
        None => write!(out, "{text}")?,
    }
    Ok(())
}
