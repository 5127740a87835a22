//! `switchyard._C`, the extension module of the `switchyard` Python package: PyTorch's Python
//! API over switchyard's dispatcher and kernels (issue 20; the design is
//! `docs/python-plan.md`).
//!
//! - [`tensor`]: the `Tensor` class and `switchyard.tensor(...)`;
//! - [`types`]: the `dtype`, `device` and `Size` objects;
//! - [`ops`]: `switchyard.ops.<ns>.<name>.<overload>`, calls by schema as `torch.ops` makes them;
//! - [`random`]: `Generator` objects and the default generator;
//! - [`preserve`]: one Python object per tensor where a stored tensor comes back;
//! - [`interop`]: memory shared with NumPy and DLPack without copies;
//! - [`library`]: `switchyard.library.Library`, Python functions as kernels and fallbacks;
//! - [`introspect`]: dispatch-table dumps and call explanations (`_dispatch_dump_table`, ...);
//! - [`parser`], [`bindings`], [`handwritten`]: PyTorch's Python argument parser and the
//!   functions and methods generated from the signature tables (`switchyard.add`, `x.view(2, 3)`);
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
pub mod bindings;
pub mod convert;
pub mod errors;
pub mod func;
#[rustfmt::skip]
pub mod generated;
pub mod gil;
pub mod handwritten;
pub mod indexing;
pub mod interop;
pub mod introspect;
pub mod lazy;
pub mod library;
pub mod ops;
pub mod parser;
pub mod preserve;
pub mod random;
pub mod tensor;
pub mod tensor_ops;
pub mod types;

/// The module `switchyard._C`.
#[pymodule]
#[pyo3(name = "_C")]
fn switchyard_c(m: &Bound<'_, PyModule>) -> PyResult<()> {
    switchyard_autograd::init();
    switchyard_functionalize::init();
    // Kernels' warnings become Python `UserWarning`s when the call returns (errors.rs).
    switchyard_dispatch::warnings::defer_to_caller(true);
    let py = m.py();
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<types::PyDType>()?;
    m.add_class::<types::PyDevice>()?;
    m.add_class::<ops::OpOverload>()?;
    m.add_class::<ops::OpOverloadPacket>()?;
    m.add_class::<ops::PySchema>()?;
    m.add("Size", types::size_type(py)?)?;
    m.add_class::<types::PyLayout>()?;
    m.add_class::<types::PyMemoryFormat>()?;
    for (name, obj) in types::layout_and_format_objects(py)? {
        m.add(name, obj)?;
    }
    for (name, ty) in types::dtype_attributes() {
        m.add(name, types::dtype_object(py, ty)?)?;
    }
    m.add_function(wrap_pyfunction!(tensor::tensor, m)?)?;
    m.add_function(wrap_pyfunction!(ops::_get_packet, m)?)?;
    m.add_function(wrap_pyfunction!(introspect::_dispatch_dump, m)?)?;
    m.add_function(wrap_pyfunction!(introspect::_dispatch_dump_table, m)?)?;
    m.add_function(wrap_pyfunction!(introspect::_dispatch_explain, m)?)?;
    m.add_class::<library::PyLibrary>()?;
    m.add_class::<library::PyDispatchKeySet>()?;
    m.add_function(wrap_pyfunction!(library::_redispatch, m)?)?;
    m.add_class::<library::PyDispatchKeyGuard>()?;
    m.add_function(wrap_pyfunction!(library::include_dispatch_key_guard, m)?)?;
    m.add_function(wrap_pyfunction!(library::exclude_dispatch_key_guard, m)?)?;
    m.add_function(wrap_pyfunction!(library::_dispatch_keyset_full_after, m)?)?;
    m.add_function(wrap_pyfunction!(func::_functionalize, m)?)?;
    lazy::register(m)?;
    m.add_class::<random::PyGenerator>()?;
    m.add_function(wrap_pyfunction!(preserve::_preserved_sweep, m)?)?;
    m.add("default_generator", random::_default_generator(py)?)?;
    m.add_class::<interop::NumpyView>()?;
    m.add_function(wrap_pyfunction!(interop::from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(interop::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(interop::tensor_to_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(interop::tensor_to_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(interop::tensor_dlpack_device, m)?)?;
    let nn = PyModule::new(py, "switchyard._C._nn")?;
    let linalg = PyModule::new(py, "switchyard._C._linalg")?;
    bindings::register(m, &nn, &linalg)?;
    m.add("_nn", nn)?;
    m.add("_linalg", linalg)?;
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
