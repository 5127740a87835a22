//! The default generator from Python: `switchyard.manual_seed(seed)` and
//! `switchyard.initial_seed()`, as `torch.manual_seed` / `torch.initial_seed` (Generator objects
//! themselves are not exposed yet, so `manual_seed` returns `None`).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use switchyard_core::Device;

use crate::errors::{OrRaise, guard};

/// Reseeds the default CPU generator. PyTorch's range and remapping: seeds in
/// [-2^63, 2^64 - 1], negative ones taken as `0xffff_ffff_ffff_ffff + seed`.
#[pyfunction]
pub fn manual_seed(py: Python<'_>, seed: &Bound<'_, PyAny>) -> PyResult<()> {
    guard(|| {
        let seed: i128 = seed.call_method0("__int__")?.extract()?;
        if !(-(1i128 << 63)..=(u64::MAX as i128)).contains(&seed) {
            return Err(PyRuntimeError::new_err(format!(
                "Overflow when unpacking long long: {seed} is outside [-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]"
            )));
        }
        let seed = if seed < 0 {
            (u64::MAX as i128 + seed) as u64
        } else {
            seed as u64
        };
        switchyard_core::generator::manual_seed(seed).or_raise(py)
    })
}

/// The seed the default CPU generator was last seeded with.
#[pyfunction]
pub fn initial_seed(py: Python<'_>) -> PyResult<u64> {
    guard(|| {
        Ok(switchyard_core::generator::default_generator(Device::CPU)
            .or_raise(py)?
            .initial_seed())
    })
}
