//! `switchyard._C`, the extension module of the `switchyard` Python package: PyTorch's Python
//! API over switchyard's dispatcher and kernels (issue 20; the design is
//! `docs/python-plan.md`).
//!
//! - [`tensor`]: the `Tensor` class and `switchyard.tensor(...)`;
//! - [`types`]: the `dtype`, `device` and `Size` objects;
//! - [`ops`]: `switchyard.ops.<ns>.<name>.<overload>`, calls by schema as `torch.ops` makes them;
//! - [`introspect`]: dispatch-table dumps and call explanations (`_dispatch_dump_table`, ...);
//! - [`convert`]: Python objects to and from switchyard values;
//! - [`errors`]: switchyard errors as Python exceptions, and the panic guard of every entry;
//! - [`generated`]: tables generated from ops.yaml (`cargo run -p switchyard-codegen -- generate`).
//!
//! The package's Python half (`python/switchyard/`) re-exports these names and adds what
//! PyTorch writes in Python. Linking `switchyard-cpu` registers its kernels; importing the
//! module initialises `switchyard-autograd` (its Autograd and ADInplaceOrView kernels).

use pyo3::prelude::*;

// Linked for its kernels' static registration at the CPU key.
use switchyard_cpu as _;

pub mod autograd;
pub mod convert;
pub mod errors;
#[rustfmt::skip]
pub mod generated;
pub mod indexing;
pub mod introspect;
pub mod ops;
pub mod tensor;
pub mod tensor_ops;
pub mod types;

/// The module `switchyard._C`.
#[pymodule]
#[pyo3(name = "_C")]
fn switchyard_c(m: &Bound<'_, PyModule>) -> PyResult<()> {
    switchyard_autograd::init();
    let py = m.py();
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<types::PyDType>()?;
    m.add_class::<types::PyDevice>()?;
    m.add_class::<ops::OpOverload>()?;
    m.add_class::<ops::OpOverloadPacket>()?;
    m.add_class::<ops::PySchema>()?;
    m.add("Size", types::size_type(py)?)?;
    for (name, ty) in types::dtype_attributes() {
        m.add(name, types::dtype_object(py, ty)?)?;
    }
    m.add_function(wrap_pyfunction!(tensor::tensor, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_get_packet, m)?)?;
    m.add_function(wrap_pyfunction!(introspect::_dispatch_dump, m)?)?;
    m.add_function(wrap_pyfunction!(introspect::_dispatch_dump_table, m)?)?;
    m.add_function(wrap_pyfunction!(introspect::_dispatch_explain, m)?)?;
    m.add_class::<tensor_ops::PyLayout>()?;
    m.add("strided", tensor_ops::strided(py)?)?;
    m.add_class::<autograd::PyNode>()?;
    m.add_class::<autograd::RemovableHandle>()?;
    m.add_class::<autograd::InferenceModeGuard>()?;
    m.add_function(wrap_pyfunction!(autograd::_backward, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_grad, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(autograd::is_inference_mode_enabled, m)?)?;
    Ok(())
}
