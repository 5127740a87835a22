//! The user-facing autograd API: `backward`, `grad`, and the autograd methods of tensors
//! ([`AutogradTensor`]), with PyTorch's names, defaults and error messages.

use switchyard_core::shape::fmt_tuple;
use switchyard_core::{Error, MemoryFormat, Result, Tensor};
use switchyard_ops::op;

use crate::engine::{self, PassOptions};
use crate::graph::{Edge, NodeRef};
use crate::hooks::{self, HookHandle};
use crate::meta;
use crate::view;

/// The root gradients of a pass: the given ones checked against the outputs, and ones for
/// scalar outputs given none (PyTorch's `_make_grads`).
fn make_grads(outputs: &[Tensor], grads: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
    if !grads.is_empty() && grads.len() != outputs.len() {
        return Err(Error::runtime(format!(
            "grad can be implicitly created only for scalar outputs; got {} gradients for {} outputs",
            grads.len(),
            outputs.len()
        )));
    }
    outputs
        .iter()
        .enumerate()
        .map(|(i, out)| match grads.get(i).cloned().flatten() {
            Some(g) => {
                if g.sizes() != out.sizes() {
                    return Err(Error::runtime(format!(
                        "Mismatch in shape: grad_output[{i}] has a shape of torch.Size({}) and output[{i}] has a shape of torch.Size({}).",
                        fmt_list(&g.sizes()),
                        fmt_list(&out.sizes())
                    )));
                }
                Ok(Some(g))
            }
            None if view::requires_grad(out) => {
                if out.numel() != 1 {
                    return Err(Error::runtime(
                        "grad can be implicitly created only for scalar outputs",
                    ));
                }
                if !out.dtype().is_floating_point() {
                    return Err(Error::runtime(format!(
                        "grad can be implicitly created only for real scalar outputs but got {}",
                        out.dtype().torch_name()
                    )));
                }
                Ok(Some(op::ones_like::call(
                    out,
                    None,
                    None,
                    None,
                    None,
                    Some(MemoryFormat::Preserve),
                )?))
            }
            None => Ok(None),
        })
        .collect()
}

/// `[2, 3]` as `torch.Size` prints it.
fn fmt_list(d: &[i64]) -> String {
    let t = fmt_tuple(d);
    format!(
        "[{}]",
        t.trim_start_matches('(')
            .trim_end_matches(')')
            .trim_end_matches(',')
    )
}

/// The roots of a pass: each output's gradient edge with its gradient.
fn roots(outputs: &[Tensor], grads: Vec<Option<Tensor>>) -> Result<Vec<(Edge, Tensor)>> {
    let mut roots = Vec::new();
    for (i, (out, g)) in outputs.iter().zip(grads).enumerate() {
        if !view::requires_grad(out) {
            return Err(Error::runtime(format!(
                "element {i} of tensors does not require grad and does not have a grad_fn"
            )));
        }
        let edge = meta::gradient_edge(out)?;
        if let Some(g) = g {
            roots.push((edge, g));
        }
    }
    Ok(roots)
}

/// The edge at which a pass captures the gradient of `input` (PyTorch uses the leaf's
/// accumulator only if it exists: a leaf nothing used gets no gradient).
fn input_edge(input: &Tensor) -> Result<Edge> {
    if !view::requires_grad(input) {
        return Err(Error::runtime(
            "One of the differentiated Tensors does not require grad",
        ));
    }
    if let Some(f) = meta::grad_fn(input)? {
        return Ok(Edge::new(f, meta::output_nr(input)));
    }
    Ok(meta::existing_grad_accumulator(input)
        .map_or_else(Edge::default, |a| Edge::to_leaf(a, input.clone())))
}

/// Computes the gradients of `tensors` with respect to the leaves of their graph and adds them
/// into the leaves' `.grad` (`torch.autograd.backward`). `grad_tensors` may be empty (every
/// output a scalar) or give one gradient per output; `retain_graph` defaults to
/// `create_graph`; a non-empty `inputs` restricts accumulation to those tensors.
pub fn backward(
    tensors: &[Tensor],
    grad_tensors: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: &[Tensor],
) -> Result<()> {
    let grads = make_grads(tensors, grad_tensors)?;
    let roots = roots(tensors, grads)?;
    let mut edges = Vec::with_capacity(inputs.len());
    for input in inputs {
        // A non-leaf input keeps its gradient in `.grad`, as `retain_grad()` does.
        if !meta::is_leaf(input) {
            retain_grad(input)?;
            edges.push(input_edge(input)?);
        } else {
            let acc = meta::grad_accumulator(input)?;
            edges.push(acc.map_or_else(Edge::default, |a| Edge::to_leaf(a, input.clone())));
        }
    }
    let options = PassOptions {
        keep_graph: retain_graph.unwrap_or(create_graph),
        create_graph,
        accumulate_grad: true,
    };
    engine::execute(roots, &options, &edges)?;
    Ok(())
}

/// Computes and returns the gradients of `outputs` with respect to `inputs`, without
/// touching any `.grad` (`torch.autograd.grad`). An input the outputs do not depend on gets
/// `None` with `allow_unused`, an error otherwise.
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    let grads = make_grads(outputs, grad_outputs)?;
    let roots = roots(outputs, grads)?;
    let edges: Vec<Edge> = inputs.iter().map(input_edge).collect::<Result<_>>()?;
    let options = PassOptions {
        keep_graph: retain_graph.unwrap_or(create_graph),
        create_graph,
        accumulate_grad: false,
    };
    let result = engine::execute(roots, &options, &edges)?;
    if !allow_unused && let Some(i) = result.iter().position(Option::is_none) {
        return Err(Error::runtime(format!(
            "The differentiated Tensor at index {i} appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
        )));
    }
    Ok(result)
}

/// Makes a non-leaf keep its gradient in `.grad` (`Tensor.retain_grad`); a no-op on leaves.
pub fn retain_grad(t: &Tensor) -> Result<()> {
    if !view::requires_grad(t) {
        return Err(Error::runtime(
            "can't retain_grad on Tensor that has requires_grad=False",
        ));
    }
    let Some(f) = meta::grad_fn(t)? else {
        return Ok(());
    };
    let m = meta::get_or_create_shared(t)?;
    {
        let mut st = m.lock();
        if st.retains_grad {
            return Ok(());
        }
        st.retains_grad = true;
    }
    f.core()
        .add_retains_grad(meta::output_nr(t), std::sync::Arc::downgrade(&m));
    Ok(())
}

/// The autograd methods of a tensor, with PyTorch's names.
pub trait AutogradTensor {
    /// Whether gradients flow into this tensor (`tensor.requires_grad`).
    fn requires_grad_now(&self) -> bool;
    /// Sets `requires_grad` on a leaf (`tensor.requires_grad_()`); returns the tensor.
    fn requires_grad_(&self, requires_grad: bool) -> Result<Tensor>;
    /// The accumulated gradient (`tensor.grad`).
    fn grad(&self) -> Option<Tensor>;
    /// Replaces the accumulated gradient (`tensor.grad = g`).
    fn set_grad(&self, grad: Option<Tensor>) -> Result<()>;
    /// The node that produced this tensor (`tensor.grad_fn`).
    fn grad_fn(&self) -> Result<Option<NodeRef>>;
    /// Whether this tensor is a leaf of the graph (`tensor.is_leaf`).
    fn is_leaf(&self) -> bool;
    /// Which output of `grad_fn` this tensor is (`tensor.output_nr`).
    fn output_nr(&self) -> u32;
    /// Keeps this non-leaf's gradient in `.grad` (`tensor.retain_grad()`).
    fn retain_grad(&self) -> Result<()>;
    /// Whether `retain_grad()` was called (`tensor.retains_grad`).
    fn retains_grad(&self) -> bool;
    /// Backward from this scalar tensor (`tensor.backward()`).
    fn backward(&self) -> Result<()>;
    /// Backward with PyTorch's optional arguments (`tensor.backward(gradient, retain_graph,
    /// create_graph, inputs)`).
    fn backward_with(
        &self,
        gradient: Option<&Tensor>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: &[Tensor],
    ) -> Result<()>;
    /// Registers a gradient hook (`tensor.register_hook`).
    fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<HookHandle>;
    /// Registers a hook run after `.grad` accumulation (`register_post_accumulate_grad_hook`).
    fn register_post_accumulate_grad_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<()> + Send + Sync + 'static,
    ) -> Result<HookHandle>;
    /// Whether this is a differentiable view (`tensor._is_view()`).
    fn is_view(&self) -> bool;
    /// The tensor this view views (`tensor._base`).
    fn base(&self) -> Option<Tensor>;
}

impl AutogradTensor for Tensor {
    fn requires_grad_now(&self) -> bool {
        view::requires_grad(self)
    }

    fn requires_grad_(&self, requires_grad: bool) -> Result<Tensor> {
        if !meta::is_leaf(self) {
            if requires_grad {
                return Ok(self.clone());
            }
            return Err(Error::runtime(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().",
            ));
        }
        if requires_grad && !self.dtype().is_floating_point() {
            return Err(Error::runtime(
                "only Tensors of floating point dtype can require gradients",
            ));
        }
        self.set_requires_grad(requires_grad)?;
        Ok(self.clone())
    }

    fn grad(&self) -> Option<Tensor> {
        meta::grad(self)
    }

    fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        meta::set_grad(self, grad)
    }

    fn grad_fn(&self) -> Result<Option<NodeRef>> {
        meta::grad_fn(self)
    }

    fn is_leaf(&self) -> bool {
        meta::is_leaf(self)
    }

    fn output_nr(&self) -> u32 {
        meta::output_nr(self)
    }

    fn retain_grad(&self) -> Result<()> {
        retain_grad(self)
    }

    fn retains_grad(&self) -> bool {
        meta::get(self).is_some_and(|m| m.lock().retains_grad)
    }

    fn backward(&self) -> Result<()> {
        backward(std::slice::from_ref(self), &[], None, false, &[])
    }

    fn backward_with(
        &self,
        gradient: Option<&Tensor>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: &[Tensor],
    ) -> Result<()> {
        backward(
            std::slice::from_ref(self),
            &[gradient.cloned()],
            retain_graph,
            create_graph,
            inputs,
        )
    }

    fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<HookHandle> {
        hooks::register_hook(self, hook)
    }

    fn register_post_accumulate_grad_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<()> + Send + Sync + 'static,
    ) -> Result<HookHandle> {
        hooks::register_post_accumulate_grad_hook(self, hook)
    }

    fn is_view(&self) -> bool {
        view::is_view(self)
    }

    fn base(&self) -> Option<Tensor> {
        view::base(self)
    }
}
