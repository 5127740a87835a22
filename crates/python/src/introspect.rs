//! The dispatcher's introspection from Python, under PyTorch's names:
//! `switchyard._C._dispatch_dump(name)` (an operator's registrations),
//! `_dispatch_dump_table(name)` (its computed dispatch table; both `""` for an unknown name, as
//! in PyTorch) and `_dispatch_explain(op, *args, **kwargs)`, which explains a call of an
//! `OpOverload` with the caller's own arguments hop by hop (`switchyard explain` on the command
//! line explains one with sample arguments).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use switchyard_call::explain::explain_stack;
use switchyard_dispatch::Dispatcher;

use crate::errors::{OrRaise, guard};
use crate::ops::OpOverload;

/// `_dispatch_dump("aten::add.Tensor")`: the operator's schema and registered kernels.
#[pyfunction]
pub fn _dispatch_dump(name: &str) -> PyResult<String> {
    guard(|| {
        Ok(Dispatcher::singleton()
            .find_op(name)
            .map(|h| h.dump_state())
            .unwrap_or_default())
    })
}

/// `_dispatch_dump_table("aten::add.Tensor")`: the kernel each dispatch key resolves to.
#[pyfunction]
pub fn _dispatch_dump_table(name: &str) -> PyResult<String> {
    guard(|| {
        Ok(Dispatcher::singleton()
            .find_op(name)
            .map(|h| h.dump_table())
            .unwrap_or_default())
    })
}

/// `_dispatch_explain(switchyard.ops.aten.add.Tensor, a, b)`: the key sets of the call, every
/// dispatch hop, what autograd recorded and the result (or the error the call failed with).
#[pyfunction]
#[pyo3(signature = (op, *args, **kwargs))]
pub fn _dispatch_explain<'py>(
    op: &Bound<'py, OpOverload>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<String> {
    let py = op.py();
    guard(|| {
        let op = op.get();
        let stack = op.match_python_args(py, args, kwargs)?;
        explain_stack(op.handle(), stack).or_raise(py)
    })
}
