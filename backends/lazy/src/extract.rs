//! `extract_compiled_graph` (B.15, PyTorch's `torch._lazy.extract_compiled_graph`): trace a
//! function once on lazy copies of example inputs, compile and cache its graph, and return a
//! callable that runs the cached program on new arguments without tracing again.
//!
//! PyTorch's takes an FX module; here the traced function is a Rust closure over tensors. The
//! steps are LTC's: move the examples to `lazy` and remember them; reset the metrics, run the
//! function (tracing); refuse if any operator fell back (`aten::` counters); the graph's
//! results are the arguments' values after the call followed by the outputs, each distinct
//! tensor once (duplicated outputs are re-expanded); its device-data leaves are mapped to the
//! arguments they hold (the others, constants and lifted scalars, keep their traced values);
//! `sync` compiles and caches it. A call maps its arguments onto the graph's parameters, runs
//! the cached program by hash, copies results into arguments the function mutated, and
//! returns the outputs.

use std::sync::Arc;

use switchyard_core::{Error, Result, Tensor};
use switchyard_ops::op;

use crate::data::DeviceData;
use crate::ir::Hash128;
use crate::tensor::{LazyTensor, get_ltc_tensor, value_copy};
use crate::trace::Val;

/// Where a graph parameter's value comes from at each call.
#[derive(Clone)]
enum Param {
    /// Argument `i`.
    Argument(usize),
    /// The value traced (a constant, a lifted scalar).
    Fixed(Val),
}

/// Where an argument's value after the call, or an output, comes from.
#[derive(Clone)]
enum Slot {
    /// Result `k` of the program.
    Result(usize),
    /// Argument `i` as passed (an argument the function did not change, or an output that is
    /// an argument).
    Argument(usize),
    /// A value fixed at tracing (an output computing nothing from the arguments).
    Fixed(Tensor),
}

/// A function traced once by [`extract_compiled_graph`]; [`CompiledGraph::call`] runs its
/// cached program.
pub struct CompiledGraph {
    /// The program's graph hash (`None`: the function computes nothing).
    hash: Option<Hash128>,
    params: Vec<Param>,
    /// One per argument: its value after the call.
    arguments: Vec<Slot>,
    /// One per output of the traced function.
    outputs: Vec<Slot>,
}

/// Traces `f` once on lazy copies of `example_inputs`, compiles and caches its graph, and
/// returns it as a [`CompiledGraph`]. Errors, as LTC's, when an operator of `f` ran through
/// the eager fallback: "Fail to extact the compiled graph because of fallback:
/// aten::sub.Tensor=1" (PyTorch's spelling).
pub fn extract_compiled_graph(
    f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
    example_inputs: &[Tensor],
) -> Result<CompiledGraph> {
    crate::init()?;
    let inputs: Vec<Tensor> = example_inputs
        .iter()
        .map(crate::to_lazy)
        .collect::<Result<_>>()?;
    let input_lts: Vec<Arc<LazyTensor>> =
        inputs.iter().map(get_ltc_tensor).collect::<Result<_>>()?;

    crate::metrics::reset_metrics();
    let outputs = f(&inputs)?;
    let fallbacks: Vec<String> = crate::metrics::counter_names()
        .into_iter()
        .filter(|n| n.starts_with("aten::"))
        .filter_map(|n| Some(format!("{n}={}", crate::metrics::counter_value(&n)?)))
        .collect();
    if !fallbacks.is_empty() {
        return Err(Error::runtime(format!(
            "Fail to extact the compiled graph because of fallback: {}",
            fallbacks.join(",")
        )));
    }

    let after: Vec<Arc<LazyTensor>> = inputs
        .iter()
        .chain(&outputs)
        .map(get_ltc_tensor)
        .collect::<Result<_>>()?;
    let pending = crate::executor::pending_graph(&after)?;
    // The device data each argument holds (set when tracing read it).
    let argument_data: Vec<Option<Arc<DeviceData>>> = input_lts
        .iter()
        .map(|lt| lt.state().handle.clone())
        .collect();
    let argument_of = |d: &Arc<DeviceData>| {
        argument_data
            .iter()
            .position(|a| a.as_ref().is_some_and(|a| a.handle == d.handle))
    };

    let (hash, params, computed) = match pending {
        Some((hash, params, computed)) => {
            let params = params
                .iter()
                .map(|d| match argument_of(d) {
                    Some(i) => Ok(Param::Argument(i)),
                    None => d
                        .value_or_wait()
                        .map(|v| Param::Fixed(Val::from(v)))
                        .ok_or_else(|| Error::runtime("a graph input has no data")),
                })
                .collect::<Result<Vec<_>>>()?;
            (Some(hash), params, computed)
        }
        None => (None, Vec::new(), Vec::new()),
    };
    // Compile and cache (and run once, as LTC's `sync_multi` does).
    crate::executor::sync_tensors(&after, true)?;

    let slot = |lt: &Arc<LazyTensor>| -> Result<Slot> {
        if let Some(k) = computed.iter().position(|c| c.id() == lt.id()) {
            return Ok(Slot::Result(k));
        }
        if let Some(i) = input_lts.iter().position(|a| a.id() == lt.id()) {
            return Ok(Slot::Argument(i));
        }
        let data = lt.state().handle.clone();
        if let Some(i) = data.as_ref().and_then(argument_of) {
            return Ok(Slot::Argument(i));
        }
        Ok(Slot::Fixed(value_copy(lt)?))
    };
    let slots: Vec<Slot> = after.iter().map(slot).collect::<Result<_>>()?;
    let (arguments, outputs) = slots.split_at(inputs.len());
    Ok(CompiledGraph {
        hash,
        params,
        arguments: arguments.to_vec(),
        outputs: outputs.to_vec(),
    })
}

impl CompiledGraph {
    /// Runs the cached program on `args` (as many as the example inputs, of their shapes and
    /// dtypes; CPU or lazy): arguments the traced function mutated are updated in place, and
    /// the outputs are returned on the arguments' device.
    pub fn call(&self, args: &[Tensor]) -> Result<Vec<Tensor>> {
        if args.len() != self.arguments.len() {
            return Err(Error::value(format!(
                "extract_compiled_graph: the graph takes {} arguments, got {}",
                self.arguments.len(),
                args.len()
            )));
        }
        let host: Vec<Tensor> = args
            .iter()
            .map(|a| {
                if crate::is_lazy(a) {
                    crate::to_cpu(a)
                } else {
                    Ok(a.clone())
                }
            })
            .collect::<Result<_>>()?;
        let results = match self.hash {
            Some(hash) => {
                let params = self
                    .params
                    .iter()
                    .map(|p| match p {
                        Param::Argument(i) => Val::Tensor(host[*i].clone()),
                        Param::Fixed(v) => v.clone(),
                    })
                    .collect();
                crate::executor::run_cached_values(hash, params)?
            }
            None => Vec::new(),
        };
        let value = |s: &Slot| -> Result<Tensor> {
            match s {
                Slot::Result(k) => results
                    .get(*k)
                    .cloned()
                    .ok_or_else(|| Error::runtime("the cached program returned too few results")),
                Slot::Argument(i) => Ok(host[*i].clone()),
                Slot::Fixed(t) => Ok(t.clone()),
            }
        };
        for (arg, s) in args.iter().zip(&self.arguments) {
            if let Slot::Result(_) = s {
                op::copy_::call(arg, &value(s)?, false)?;
            }
        }
        let on_lazy = args.first().is_some_and(crate::is_lazy);
        self.outputs
            .iter()
            .map(|s| {
                let t = value(s)?;
                if on_lazy { crate::to_lazy(&t) } else { Ok(t) }
            })
            .collect()
    }
}
