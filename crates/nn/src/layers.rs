//! Layers with PyTorch's parameters, names and default initialisations.

use switchyard_autograd::AutogradTensor;
use switchyard_core::{Error, Result, ScalarType, Tensor};
use switchyard_ops::op;

use crate::init;
use crate::module::{Module, moved_parameter};
use switchyard_core::Device;

fn move_opt(p: &mut Option<Tensor>, device: Device) -> Result<()> {
    if let Some(t) = p {
        *t = moved_parameter(t, device)?;
    }
    Ok(())
}

fn parameter(sizes: &[i64]) -> Result<Tensor> {
    let t = op::empty_memory_format::call(sizes, Some(ScalarType::Float), None, None, None, None)?;
    t.requires_grad_(true)
}

/// `y = x Wᵀ + b` (`nn.Linear`): weight `[out, in]` and bias `[out]` from
/// U(-1/√in, 1/√in).
pub struct Linear {
    /// `[out_features, in_features]`.
    pub weight: Tensor,
    /// `[out_features]`, when the layer has one.
    pub bias: Option<Tensor>,
}

impl Linear {
    /// A layer with PyTorch's default initialisation.
    pub fn new(in_features: i64, out_features: i64, bias: bool) -> Result<Linear> {
        let weight = parameter(&[out_features, in_features])?;
        init::kaiming_uniform_(&weight, 5f64.sqrt())?;
        let bias = if bias {
            let b = parameter(&[out_features])?;
            let bound = if in_features > 0 {
                1.0 / (in_features as f64).sqrt()
            } else {
                0.0
            };
            init::uniform_(&b, -bound, bound)?;
            Some(b)
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }
}

impl Module for Linear {
    fn to_device(&mut self, device: Device) -> Result<()> {
        self.weight = moved_parameter(&self.weight, device)?;
        move_opt(&mut self.bias, device)
    }

    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        op::linear::call(input, &self.weight, self.bias.as_ref())
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut v = vec![("weight".to_string(), self.weight.clone())];
        if let Some(b) = &self.bias {
            v.push(("bias".to_string(), b.clone()));
        }
        v
    }

    fn describe(&self) -> String {
        let s = self.weight.sizes();
        format!(
            "Linear(in_features={}, out_features={}, bias={})",
            s[1],
            s[0],
            if self.bias.is_some() { "True" } else { "False" }
        )
    }
}

/// A 2-d convolution (`nn.Conv2d`), weight `[out, in / groups, kh, kw]` initialised as
/// `Linear`'s with fan-in `in / groups · kh · kw`.
pub struct Conv2d {
    /// The kernel.
    pub weight: Tensor,
    /// The bias, when the layer has one.
    pub bias: Option<Tensor>,
    stride: [i64; 2],
    padding: [i64; 2],
    dilation: [i64; 2],
    groups: i64,
}

/// The hyper-parameters of a [`Conv2d`] beyond its channels and kernel size.
#[derive(Clone, Copy, Debug)]
pub struct Conv2dOptions {
    /// Stride.
    pub stride: [i64; 2],
    /// Zero padding on each side.
    pub padding: [i64; 2],
    /// Dilation.
    pub dilation: [i64; 2],
    /// Groups.
    pub groups: i64,
    /// Whether there is a bias.
    pub bias: bool,
}

impl Default for Conv2dOptions {
    fn default() -> Self {
        Conv2dOptions {
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            groups: 1,
            bias: true,
        }
    }
}

impl Conv2d {
    /// A layer with PyTorch's default initialisation.
    pub fn new(
        in_channels: i64,
        out_channels: i64,
        kernel_size: [i64; 2],
        options: Conv2dOptions,
    ) -> Result<Conv2d> {
        if options.groups <= 0 {
            return Err(Error::value("groups must be a positive integer"));
        }
        if in_channels % options.groups != 0 {
            return Err(Error::value("in_channels must be divisible by groups"));
        }
        if out_channels % options.groups != 0 {
            return Err(Error::value("out_channels must be divisible by groups"));
        }
        let weight = parameter(&[
            out_channels,
            in_channels / options.groups,
            kernel_size[0],
            kernel_size[1],
        ])?;
        init::kaiming_uniform_(&weight, 5f64.sqrt())?;
        let bias = if options.bias {
            let b = parameter(&[out_channels])?;
            let (fan_in, _) = init::fan_in_and_fan_out(&weight)?;
            if fan_in != 0 {
                let bound = 1.0 / (fan_in as f64).sqrt();
                init::uniform_(&b, -bound, bound)?;
            }
            Some(b)
        } else {
            None
        };
        Ok(Conv2d {
            weight,
            bias,
            stride: options.stride,
            padding: options.padding,
            dilation: options.dilation,
            groups: options.groups,
        })
    }
}

impl Module for Conv2d {
    fn to_device(&mut self, device: Device) -> Result<()> {
        self.weight = moved_parameter(&self.weight, device)?;
        move_opt(&mut self.bias, device)
    }

    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        op::conv2d::call(
            input,
            &self.weight,
            self.bias.as_ref(),
            &self.stride,
            &self.padding,
            &self.dilation,
            self.groups,
        )
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut v = vec![("weight".to_string(), self.weight.clone())];
        if let Some(b) = &self.bias {
            v.push(("bias".to_string(), b.clone()));
        }
        v
    }

    fn describe(&self) -> String {
        let s = self.weight.sizes();
        let mut d = format!(
            "Conv2d({}, {}, kernel_size=({}, {}), stride=({}, {})",
            s[1] * self.groups,
            s[0],
            s[2],
            s[3],
            self.stride[0],
            self.stride[1]
        );
        if self.padding != [0, 0] {
            d.push_str(&format!(
                ", padding=({}, {})",
                self.padding[0], self.padding[1]
            ));
        }
        if self.dilation != [1, 1] {
            d.push_str(&format!(
                ", dilation=({}, {})",
                self.dilation[0], self.dilation[1]
            ));
        }
        if self.groups != 1 {
            d.push_str(&format!(", groups={}", self.groups));
        }
        if self.bias.is_none() {
            d.push_str(", bias=False");
        }
        d.push(')');
        d
    }
}

/// Layer normalisation over the trailing `normalized_shape` (`nn.LayerNorm`): weight ones,
/// bias zeros.
pub struct LayerNorm {
    normalized_shape: Vec<i64>,
    eps: f64,
    /// The scale, when elementwise-affine.
    pub weight: Option<Tensor>,
    /// The shift, when elementwise-affine.
    pub bias: Option<Tensor>,
}

impl LayerNorm {
    /// A layer with PyTorch's defaults (`eps=1e-5`, `elementwise_affine=True`).
    pub fn new(normalized_shape: &[i64], eps: f64, elementwise_affine: bool) -> Result<LayerNorm> {
        let (weight, bias) = if elementwise_affine {
            let w = parameter(normalized_shape)?;
            init::constant_(&w, 1.0)?;
            let b = parameter(normalized_shape)?;
            init::constant_(&b, 0.0)?;
            (Some(w), Some(b))
        } else {
            (None, None)
        };
        Ok(LayerNorm {
            normalized_shape: normalized_shape.to_vec(),
            eps,
            weight,
            bias,
        })
    }
}

impl Module for LayerNorm {
    fn to_device(&mut self, device: Device) -> Result<()> {
        move_opt(&mut self.weight, device)?;
        move_opt(&mut self.bias, device)
    }

    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        op::layer_norm::call(
            input,
            &self.normalized_shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
            true,
        )
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut v = Vec::new();
        if let Some(w) = &self.weight {
            v.push(("weight".to_string(), w.clone()));
        }
        if let Some(b) = &self.bias {
            v.push(("bias".to_string(), b.clone()));
        }
        v
    }

    fn describe(&self) -> String {
        let shape: Vec<String> = self.normalized_shape.iter().map(i64::to_string).collect();
        let shape = if shape.len() == 1 {
            format!("({},)", shape[0])
        } else {
            format!("({})", shape.join(", "))
        };
        format!(
            "LayerNorm({shape}, eps={}, elementwise_affine={})",
            switchyard_core::format::python_float_repr(self.eps),
            if self.weight.is_some() {
                "True"
            } else {
                "False"
            }
        )
    }
}

/// A lookup table (`nn.Embedding`), weight `[num_embeddings, embedding_dim]` from N(0, 1),
/// the `padding_idx` row zero (and kept out of the gradient).
pub struct Embedding {
    /// The table.
    pub weight: Tensor,
    padding_idx: Option<i64>,
}

impl Embedding {
    /// A table with PyTorch's default initialisation.
    pub fn new(
        num_embeddings: i64,
        embedding_dim: i64,
        padding_idx: Option<i64>,
    ) -> Result<Embedding> {
        let padding_idx = match padding_idx {
            Some(p) if p >= num_embeddings || p < -num_embeddings => {
                return Err(Error::runtime("Padding_idx must be within num_embeddings"));
            }
            Some(p) if p < 0 => Some(p + num_embeddings),
            other => other,
        };
        let weight = parameter(&[num_embeddings, embedding_dim])?;
        init::normal_(&weight, 0.0, 1.0)?;
        if let Some(p) = padding_idx {
            let _guard = switchyard_autograd::no_grad();
            op::fill__Scalar::call(&op::select_int::call(&weight, 0, p)?, 0.into())?;
        }
        Ok(Embedding {
            weight,
            padding_idx,
        })
    }
}

impl Module for Embedding {
    fn to_device(&mut self, device: Device) -> Result<()> {
        self.weight = moved_parameter(&self.weight, device)?;
        Ok(())
    }

    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        op::embedding::call(
            &self.weight,
            input,
            self.padding_idx.unwrap_or(-1),
            false,
            false,
        )
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        vec![("weight".to_string(), self.weight.clone())]
    }

    fn describe(&self) -> String {
        let s = self.weight.sizes();
        match self.padding_idx {
            Some(p) => format!("Embedding({}, {}, padding_idx={p})", s[0], s[1]),
            None => format!("Embedding({}, {})", s[0], s[1]),
        }
    }
}

/// Zeroes elements with probability `p` while training, scaling the rest by 1/(1-p)
/// (`nn.Dropout`); the identity in evaluation mode.
pub struct Dropout {
    p: f64,
    training: bool,
}

impl Dropout {
    /// A dropout layer (training mode).
    pub fn new(p: f64) -> Result<Dropout> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::value(format!(
                "dropout probability has to be between 0 and 1, but got {}",
                switchyard_core::format::python_float_repr(p)
            )));
        }
        Ok(Dropout { p, training: true })
    }
}

impl Module for Dropout {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        op::dropout::call(input, self.p, self.training)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }

    fn describe(&self) -> String {
        format!(
            "Dropout(p={}, inplace=False)",
            switchyard_core::format::python_float_repr(self.p)
        )
    }
}

/// `max(x, 0)` (`nn.ReLU`).
pub struct ReLU;

impl Module for ReLU {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        op::relu::call(input)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }

    fn describe(&self) -> String {
        "ReLU()".into()
    }
}

/// The Gaussian error linear unit (`nn.GELU`), exact (`"none"`) or with the tanh
/// approximation (`"tanh"`).
pub struct GELU {
    approximate: String,
}

impl GELU {
    /// A GELU; `approximate` is `"none"` or `"tanh"`.
    pub fn new(approximate: &str) -> GELU {
        GELU {
            approximate: approximate.to_string(),
        }
    }
}

impl Module for GELU {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        op::gelu::call(input, &self.approximate)
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }

    fn describe(&self) -> String {
        format!("GELU(approximate='{}')", self.approximate)
    }
}
