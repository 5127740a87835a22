//! Training with switchyard, in PyTorch's terms: [`Module`]s with PyTorch's parameter names and
//! default initialisations ([`layers`]), losses ([`functional`]), optimizers with PyTorch's exact
//! update rules ([`optim`]), gradient clipping, and weights saved and loaded as safetensors
//! ([`serialize`]).
//!
//! ```
//! use switchyard_nn::{Linear, Module, optim::{Optimizer, Sgd, SgdOptions}};
//! use switchyard_nn::functional::{Reduction, mse_loss};
//! use switchyard_autograd::AutogradTensor;
//! use switchyard_core::Tensor;
//! use switchyard_cpu as _;
//!
//! let model = Linear::new(2, 1, true)?;
//! let mut opt = Sgd::new(model.parameters(), 0.02, SgdOptions::default())?;
//! let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let y = Tensor::from_vec(vec![1.0f32, 2.0], &[2, 1])?;
//! let mut losses = Vec::new();
//! for _ in 0..20 {
//!     opt.zero_grad()?;
//!     let loss = mse_loss(&model.forward(&x)?, &y, Reduction::Mean)?;
//!     loss.backward()?;
//!     opt.step()?;
//!     losses.push(loss.item::<f32>()?);
//! }
//! assert!(losses[19] < losses[0]);
//! # Ok::<(), switchyard_core::Error>(())
//! ```

pub mod functional;
pub mod init;
pub mod layers;
pub mod module;
pub mod optim;
pub mod serialize;

pub use layers::{Conv2d, Conv2dOptions, Dropout, Embedding, GELU, LayerNorm, Linear, ReLU};
pub use module::{Module, Sequential};
pub use optim::clip_grad_norm_;
