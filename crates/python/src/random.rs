//! Random number generators from Python: the `Generator` class (`torch.Generator`) over a core
//! [`Generator`], and the default CPU generator as `switchyard.default_generator`. The module
//! functions of `switchyard.random` (`manual_seed`, `seed`, `get_rng_state`, ...) are Python
//! over these, as `torch/random.py` is.
//!
//! The CPU generator is PyTorch's mt19937 with its bookkeeping, so `get_state()` returns the
//! bytes of PyTorch's `CPUGeneratorImplState` (5056 of them) and a state taken from one library
//! restores in the other.

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt, PyString, PyTuple};
use switchyard_core::{Device, Generator, Layout, ScalarType, Tensor};

use crate::errors::{OrRaise, guard};
use crate::parser::tp_name;
use crate::tensor::PyTensor;
use crate::types::{PyDevice, device_from_py, device_object};

/// `switchyard.Generator`: a handle on one generator's state (`torch.Generator`). Several
/// Python objects may wrap one core generator (their states are shared); the default CPU
/// generator is one object, `switchyard.default_generator`.
#[pyclass(name = "Generator", module = "switchyard._C", frozen)]
pub struct PyGenerator {
    /// The generator; clones share its state.
    pub g: Generator,
}

/// The seed `Generator.manual_seed` takes: an `int` (not a `bool`) in [-2^63, 2^64 - 1],
/// negative ones as their two's complement (`-1` is 2^64 - 1), PyTorch's errors otherwise.
fn unpack_seed(seed: &Bound<'_, PyAny>) -> PyResult<u64> {
    if !seed.is_instance_of::<PyInt>() || seed.is_instance_of::<PyBool>() {
        return Err(PyRuntimeError::new_err(format!(
            "manual_seed expected a long, but got {}",
            tp_name(seed)
        )));
    }
    let v: i128 = seed
        .extract()
        .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))?;
    if !(-(1i128 << 63)..=i128::from(u64::MAX)).contains(&v) {
        return Err(PyValueError::new_err("Overflow when unpacking long long"));
    }
    // Two's complement for negative seeds, as PyTorch's binding casts an int64 to uint64.
    Ok(v as u64)
}

impl PyGenerator {
    fn new_for(py: Python<'_>, device: Option<&Bound<'_, PyAny>>) -> PyResult<Generator> {
        let device = match device {
            None => Device::CPU,
            Some(d) if d.is_none() => Device::CPU,
            Some(d) if d.is_instance_of::<PyString>() || d.is_instance_of::<PyDevice>() => {
                device_from_py(d)?
            }
            Some(d) if d.is_instance_of::<PyInt>() && !d.is_instance_of::<PyBool>() => {
                return Err(PyRuntimeError::new_err(
                    "Device type CUDA is not supported for torch.Generator() api.",
                ));
            }
            Some(d) => {
                return Err(PyTypeError::new_err(format!(
                    "expect torch.device for creating Generator, got {}",
                    tp_name(d)
                )));
            }
        };
        if !device.is_cpu() {
            // PyTorch 2.15 looks for an accelerator of the device's type.
            return Err(PyRuntimeError::new_err(format!(
                "{} device type not an accelerator.",
                device.kind().name().to_uppercase()
            )));
        }
        let _ = py;
        Ok(Generator::new(device))
    }
}

#[pymethods]
impl PyGenerator {
    /// `Generator(device="cpu")`: a new generator seeded with PyTorch's default seed
    /// (67280421310721).
    #[new]
    #[pyo3(signature = (device = None))]
    fn py_new(py: Python<'_>, device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        guard(|| {
            Ok(PyGenerator {
                g: Self::new_for(py, device)?,
            })
        })
    }

    /// Reseeds; returns the generator itself.
    fn manual_seed<'py>(
        slf: &Bound<'py, Self>,
        seed: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        guard(|| {
            let seed = unpack_seed(seed)?;
            slf.get().g.manual_seed(seed);
            Ok(slf.clone())
        })
    }

    /// Reseeds from the operating system's randomness; returns the new seed.
    fn seed(&self) -> PyResult<u64> {
        guard(|| Ok(self.g.seed()))
    }

    /// The seed last set.
    fn initial_seed(&self) -> PyResult<u64> {
        guard(|| Ok(self.g.initial_seed()))
    }

    /// The device the generator draws for.
    #[getter]
    fn device<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDevice>> {
        device_object(py, self.g.device())
    }

    /// The state as a 1-d `uint8` tensor of PyTorch's `CPUGeneratorImplState` bytes.
    fn get_state(&self, py: Python<'_>) -> PyResult<PyTensor> {
        guard(|| {
            let bytes = self.g.lock().get_state();
            let n = bytes.len() as i64;
            Ok(PyTensor::new(Tensor::from_vec(bytes, &[n]).or_raise(py)?))
        })
    }

    /// Restores a state from `get_state()`; returns the generator itself.
    fn set_state<'py>(
        slf: &Bound<'py, Self>,
        new_state: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        guard(|| {
            let py = slf.py();
            let Ok(t) = new_state.cast::<PyTensor>() else {
                return Err(PyTypeError::new_err(format!(
                    "expected a torch.ByteTensor, but got {}",
                    tp_name(new_state)
                )));
            };
            let t = &t.get().t;
            if t.layout() != Layout::Strided
                || !t.device().is_cpu()
                || t.dtype() != ScalarType::Byte
            {
                return Err(PyTypeError::new_err("RNG state must be a torch.ByteTensor"));
            }
            if !t.is_contiguous() {
                return Err(PyRuntimeError::new_err("RNG state must be contiguous"));
            }
            let bytes: Vec<u8> = t.to_vec().or_raise(py)?;
            slf.get().g.lock().set_state(&bytes).or_raise(py)?;
            Ok(slf.clone())
        })
    }

    /// A new generator with a copy of this one's state.
    fn clone_state(&self) -> PyGenerator {
        PyGenerator {
            g: self.g.clone_state(),
        }
    }

    /// Pickling: the device and the state's bytes (restored by `__setstate__`).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let g = &slf.get().g;
        let device = g.device().to_string();
        let state = PyBytes::new(py, &g.lock().get_state());
        PyTuple::new(
            py,
            [
                slf.get_type().into_any(),
                PyTuple::new(py, [device])?.into_any(),
                state.into_any(),
            ],
        )
    }

    fn __setstate__(&self, py: Python<'_>, state: &Bound<'_, PyBytes>) -> PyResult<()> {
        guard(|| self.g.lock().set_state(state.as_bytes()).or_raise(py))
    }
}

/// The default CPU generator as a new `Generator` object (the package keeps one of them as
/// `switchyard.default_generator`).
#[pyfunction]
pub fn _default_generator(py: Python<'_>) -> PyResult<PyGenerator> {
    guard(|| {
        Ok(PyGenerator {
            g: switchyard_core::generator::default_generator(Device::CPU).or_raise(py)?,
        })
    })
}
