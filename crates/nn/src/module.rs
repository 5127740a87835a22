//! The [`Module`] trait (PyTorch's `torch.nn.Module`) and [`Sequential`].
//!
//! A module owns parameters (leaf tensors that require grad) and child modules. Parameter
//! names follow PyTorch's `state_dict` keys (`weight`, `bias`, children by name or, in a
//! `Sequential`, by index: `0.weight`), so weights saved here load into the same PyTorch model.

use switchyard_autograd::{AutogradTensor, no_grad};
use switchyard_core::shape::fmt_dims;
use switchyard_core::{Device, Error, Result, Tensor};
use switchyard_ops::op;

/// A layer or model.
pub trait Module: Send + Sync {
    /// The forward computation.
    fn forward(&self, input: &Tensor) -> Result<Tensor>;

    /// Every parameter with its dotted name, children included (`named_parameters()`).
    fn named_parameters(&self) -> Vec<(String, Tensor)>;

    /// Non-parameter state saved with the weights (`named_buffers()`).
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }

    /// Switches training behaviour (dropout) on or off (`train()` / `eval()`).
    fn set_training(&mut self, _training: bool) {}

    /// Moves every parameter to `device` (`module.to(device)`); the moved parameters are
    /// leaves that require grad, like the originals.
    fn to_device(&mut self, _device: Device) -> Result<()> {
        Ok(())
    }

    /// The module's name as `print(module)` shows it (`Linear(in_features=4, ...)`).
    fn describe(&self) -> String;

    /// The parameters, in `named_parameters` order.
    fn parameters(&self) -> Vec<Tensor> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }

    /// Clears every parameter's gradient (`zero_grad()`, which sets them to `None`).
    fn zero_grad(&self) -> Result<()> {
        for p in self.parameters() {
            p.set_grad(None)?;
        }
        Ok(())
    }

    /// Parameters and buffers by name, detached (`state_dict()`).
    fn state_dict(&self) -> Result<Vec<(String, Tensor)>> {
        let mut out = Vec::new();
        for (n, t) in self
            .named_parameters()
            .into_iter()
            .chain(self.named_buffers())
        {
            out.push((n, op::detach::call(&t)?));
        }
        Ok(out)
    }

    /// Copies `state` into the parameters and buffers (`load_state_dict(state, strict=True)`):
    /// every key must be present, with the parameter's shape.
    fn load_state_dict(&self, state: &[(String, Tensor)]) -> Result<()> {
        let own: Vec<(String, Tensor)> = self
            .named_parameters()
            .into_iter()
            .chain(self.named_buffers())
            .collect();
        let missing: Vec<&str> = own
            .iter()
            .filter(|(n, _)| !state.iter().any(|(k, _)| k == n))
            .map(|(n, _)| n.as_str())
            .collect();
        let unexpected: Vec<&str> = state
            .iter()
            .filter(|(k, _)| !own.iter().any(|(n, _)| n == k))
            .map(|(k, _)| k.as_str())
            .collect();
        if !missing.is_empty() || !unexpected.is_empty() {
            let mut msg = format!("Error(s) in loading state_dict for {}:", self.name());
            if !missing.is_empty() {
                msg.push_str(&format!(
                    "\n\tMissing key(s) in state_dict: {}. ",
                    quoted(&missing)
                ));
            }
            if !unexpected.is_empty() {
                msg.push_str(&format!(
                    "\n\tUnexpected key(s) in state_dict: {}. ",
                    quoted(&unexpected)
                ));
            }
            return Err(Error::runtime(msg));
        }
        let _guard = no_grad();
        for (name, p) in &own {
            let Some((_, v)) = state.iter().find(|(k, _)| k == name) else {
                continue;
            };
            if v.sizes() != p.sizes() {
                return Err(Error::runtime(format!(
                    "Error(s) in loading state_dict for {}:\n\tsize mismatch for {name}: copying a param with shape torch.Size({}) from checkpoint, the shape in current model is torch.Size({}).",
                    self.name(),
                    fmt_dims(&v.sizes()),
                    fmt_dims(&p.sizes())
                )));
            }
            op::copy_::call(p, v, false)?;
        }
        Ok(())
    }

    /// The class name (`Linear`), for messages.
    fn name(&self) -> String {
        let d = self.describe();
        d.split('(').next().unwrap_or_default().to_string()
    }
}

fn quoted(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Modules applied in order (`nn.Sequential`); children are named by index.
pub struct Sequential {
    layers: Vec<Box<dyn Module>>,
}

impl Sequential {
    /// A sequence of modules.
    pub fn new(layers: Vec<Box<dyn Module>>) -> Sequential {
        Sequential { layers }
    }

    /// The children.
    pub fn layers(&self) -> &[Box<dyn Module>] {
        &self.layers
    }
}

impl Module for Sequential {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let mut x = input.clone();
        for l in &self.layers {
            x = l.forward(&x)?;
        }
        Ok(x)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        prefixed(
            self.layers
                .iter()
                .enumerate()
                .map(|(i, l)| (i.to_string(), l.named_parameters())),
        )
    }

    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        prefixed(
            self.layers
                .iter()
                .enumerate()
                .map(|(i, l)| (i.to_string(), l.named_buffers())),
        )
    }

    fn set_training(&mut self, training: bool) {
        for l in &mut self.layers {
            l.set_training(training);
        }
    }

    fn to_device(&mut self, device: Device) -> Result<()> {
        for l in &mut self.layers {
            l.to_device(device)?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let mut s = String::from("Sequential(\n");
        for (i, l) in self.layers.iter().enumerate() {
            s.push_str(&format!(
                "  ({i}): {}\n",
                l.describe().replace('\n', "\n  ")
            ));
        }
        s.push(')');
        s
    }
}

/// `p` on `device` as a new leaf parameter (the same tensor if it is there already).
pub fn moved_parameter(p: &Tensor, device: Device) -> Result<Tensor> {
    if p.device() == device {
        return Ok(p.clone());
    }
    let moved = {
        let _guard = no_grad();
        op::_to_copy::call(p, None, None, Some(device), None, false, None)?
    };
    moved.requires_grad_(p.requires_grad())
}

/// Children's names prefixed with the child's name (`0.weight`).
pub fn prefixed(
    children: impl Iterator<Item = (String, Vec<(String, Tensor)>)>,
) -> Vec<(String, Tensor)> {
    children
        .flat_map(|(c, ps)| ps.into_iter().map(move |(n, p)| (format!("{c}.{n}"), p)))
        .collect()
}
