//! `SavedVariable`: a tensor a backward node keeps from the forward pass, with the version
//! it had then, so that using it after an in-place change is an error instead of a wrong
//! gradient; and freed after the backward pass unless the graph is retained.

use std::sync::{Mutex, PoisonError};
use switchyard_core::local_dispatch::is_grad_enabled;
use switchyard_core::shape::fmt_dims;
use switchyard_core::{Device, Error, Result, ScalarType, Tensor};

use crate::graph::NodeRef;
use crate::meta;

/// PyTorch's message for using saved tensors after they were freed.
pub const ERR_BACKWARD_TWICE: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

/// A tensor saved for the backward pass.
pub struct SavedVariable {
    state: Mutex<Option<Saved>>,
    saved_version: u32,
    is_output: bool,
    output_nr: u32,
    is_leaf: bool,
    requires_grad: bool,
}

struct Saved {
    /// The tensor itself (inputs and leaves), or, for a node's own outputs, a copy without
    /// autograd state: holding the output would hold its `grad_fn`, which holds this.
    data: Tensor,
}

impl SavedVariable {
    /// Saves `t`; `is_output` when `t` is an output of the node that saves it. Inference
    /// tensors cannot be saved (they have no version counter to check).
    pub fn new(t: &Tensor, is_output: bool) -> Result<SavedVariable> {
        if t.is_inference() {
            return Err(Error::runtime(
                "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.",
            ));
        }
        let is_leaf = meta::is_leaf(t);
        let keep_original = !is_output || is_leaf;
        Ok(SavedVariable {
            saved_version: t.version(),
            is_output,
            output_nr: meta::output_nr(t),
            is_leaf,
            requires_grad: t.requires_grad(),
            state: Mutex::new(Some(Saved {
                data: if keep_original {
                    t.clone()
                } else {
                    t.shallow_copy()
                },
            })),
        })
    }

    /// Saves output `output_nr` of the node that saves it, made before the output's history
    /// is set: a floating output is about to get this node as its `grad_fn`, so it is saved
    /// without its autograd state (holding it would hold the node that holds it), and gets the
    /// node back when unpacked.
    pub fn output(t: &Tensor, output_nr: u32) -> Result<SavedVariable> {
        if t.is_inference() {
            return SavedVariable::new(t, true);
        }
        let gets_history = t.dtype().is_floating_point();
        Ok(SavedVariable {
            saved_version: t.version(),
            is_output: true,
            output_nr,
            is_leaf: !gets_history,
            requires_grad: gets_history,
            state: Mutex::new(Some(Saved {
                data: if gets_history {
                    t.shallow_copy()
                } else {
                    t.clone()
                },
            })),
        })
    }

    /// A slot nothing was saved in: the formula that would read it is never evaluated (its
    /// input did not require grad when the node was made).
    pub fn empty() -> SavedVariable {
        SavedVariable {
            state: Mutex::new(None),
            saved_version: 0,
            is_output: false,
            output_nr: 0,
            is_leaf: true,
            requires_grad: false,
        }
    }

    /// The saved tensor, checked against in-place changes since it was saved. `saved_for` is
    /// the node that saved it (a saved output gets it back as its `grad_fn`, for
    /// higher-order gradients).
    pub fn unpack(&self, saved_for: &NodeRef) -> Result<Tensor> {
        let data = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|s| s.data.clone())
            .ok_or_else(|| Error::runtime(ERR_BACKWARD_TWICE))?;
        let current = data.version();
        if current != self.saved_version {
            let grad_fn = if self.is_output && !self.is_leaf {
                Some(saved_for.clone())
            } else {
                meta::grad_fn(&data).ok().flatten()
            };
            return Err(Error::runtime(modified_message(
                &data,
                grad_fn.as_ref(),
                self.output_nr,
                current,
                self.saved_version,
            )));
        }
        if !self.is_output || self.is_leaf {
            return Ok(data);
        }
        // A saved output: the copy has no history. It only needs one when the backward
        // pass itself is recorded (create_graph); then it is this node's output again.
        if is_grad_enabled() && self.requires_grad {
            let var = data.shallow_copy();
            meta::set_history(&var, saved_for.clone(), self.output_nr)?;
            return Ok(var);
        }
        Ok(data)
    }

    /// Frees the saved tensor.
    pub fn reset(&self) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// PyTorch's legacy type name of a tensor (`torch.FloatTensor`, `torch.cuda.LongTensor`).
pub fn legacy_type_name(dtype: ScalarType, device: Device) -> String {
    let base = match dtype {
        ScalarType::Float => "FloatTensor",
        ScalarType::Double => "DoubleTensor",
        ScalarType::Half => "HalfTensor",
        ScalarType::BFloat16 => "BFloat16Tensor",
        ScalarType::Long => "LongTensor",
        ScalarType::Int => "IntTensor",
        ScalarType::Short => "ShortTensor",
        ScalarType::Char => "CharTensor",
        ScalarType::Byte => "ByteTensor",
        ScalarType::Bool => "BoolTensor",
    };
    if device.is_cpu() {
        format!("torch.{base}")
    } else {
        format!("torch.{}.{base}", device.kind().name())
    }
}

fn modified_message(
    data: &Tensor,
    grad_fn: Option<&NodeRef>,
    output_nr: u32,
    current: u32,
    saved: u32,
) -> String {
    let mut m = format!(
        "one of the variables needed for gradient computation has been modified by an inplace operation: [{} {}]",
        legacy_type_name(data.dtype(), data.device()),
        fmt_dims(&data.sizes())
    );
    if let Some(f) = grad_fn {
        m.push_str(&format!(
            ", which is output {output_nr} of {},",
            crate::graph::forward_op_name(&f.name())
        ));
    }
    m.push_str(&format!(
        " is at version {current}; expected version {saved} instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    ));
    m
}
