//! `switchyard.ops.<ns>.<name>.<overload>`: operators called by schema, as `torch.ops` calls
//! them. An [`OpOverload`] matches its arguments with `switchyard_call::args::match_call_args`
//! (PyTorch's `createStackForSchema`, its messages included) and calls the operator boxed; an
//! [`OpOverloadPacket`] tries its overloads in turn and calls the first whose schema matches,
//! or fails with every overload's reason.
//!
//! Packets are looked up in the dispatcher when first asked for (`_get_packet`), so operators
//! defined later appear too. A packet tries its overloads in ops.yaml's order with the out=
//! overloads last (the generated `OVERLOADS` table), as `torch.ops` does.

use std::sync::Arc;

use pyo3::exceptions::{PyAttributeError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use switchyard_call::args::match_call_args;
use switchyard_core::{Device, IValue, Stack};
use switchyard_dispatch::{Dispatcher, OperatorHandle};
use switchyard_schema::FunctionSchema;

use crate::convert::{PySource, ivalue_to_py, returns_to_py};
use crate::errors::{OrRaise, guard};
use crate::generated::overloads::OVERLOADS;

/// `switchyard.ops.aten.add.Tensor`: one overload of an operator.
#[pyclass(frozen, name = "OpOverload", module = "switchyard._ops")]
pub struct OpOverload {
    handle: OperatorHandle,
    schema: Arc<FunctionSchema>,
    namespace: String,
    name: String,
    overload: String,
    /// Whether calls release the GIL whatever their sizes ([`crate::gil::is_heavy`]), decided
    /// once here rather than per call.
    heavy: bool,
}

/// `switchyard.ops.aten.add`: every overload of an operator name.
#[pyclass(frozen, name = "OpOverloadPacket", module = "switchyard._ops")]
pub struct OpOverloadPacket {
    namespace: String,
    name: String,
    /// Overload names (`""` for the default) and handles.
    overloads: Vec<(String, OperatorHandle)>,
}

/// `switchyard.ops.aten.add.Tensor._schema`: the schema, printed as PyTorch prints it.
#[pyclass(frozen, name = "FunctionSchema", module = "switchyard._C")]
pub struct PySchema {
    schema: Arc<FunctionSchema>,
}

#[pymethods]
impl PySchema {
    fn __str__(&self) -> String {
        self.schema.to_string()
    }

    fn __repr__(&self) -> String {
        self.schema.to_string()
    }

    /// The qualified name without the overload, `aten::add`.
    #[getter]
    fn name(&self) -> String {
        switchyard_call::args::base_name(&self.schema)
    }

    /// The overload name, `Tensor` (empty for the default overload).
    #[getter]
    fn overload_name(&self) -> String {
        self.schema.name.overload_name.clone()
    }
}

/// The positional and keyword arguments of a Python call.
type CallArgs<'py> = (Vec<Bound<'py, PyAny>>, Vec<(String, Bound<'py, PyAny>)>);

/// The arguments of a Python call, split as `match_call_args` takes them.
fn split_args<'py>(
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<CallArgs<'py>> {
    let positional: Vec<Bound<'py, PyAny>> = args.iter().collect();
    let mut keywords = Vec::new();
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            keywords.push((k.extract::<String>()?, v));
        }
    }
    Ok((positional, keywords))
}

/// Matches the Python arguments to `schema`: the stack, or the matching error.
fn match_args<'py>(
    py: Python<'py>,
    schema: &FunctionSchema,
    positional: &[Bound<'py, PyAny>],
    keywords: &[(String, Bound<'py, PyAny>)],
) -> switchyard_core::Result<Stack> {
    let pos: Vec<&Bound<'py, PyAny>> = positional.iter().collect();
    let kw: Vec<(&str, &Bound<'py, PyAny>)> =
        keywords.iter().map(|(k, v)| (k.as_str(), v)).collect();
    match_call_args(
        &PySource::for_call(py, schema),
        schema,
        &pos,
        &kw,
        Device::CPU,
    )
}

/// The Python object given for each argument of `schema` (by position or by keyword).
fn objects_by_argument<'a, 'py>(
    schema: &FunctionSchema,
    positional: &'a [Bound<'py, PyAny>],
    keywords: &'a [(String, Bound<'py, PyAny>)],
) -> Vec<Option<&'a Bound<'py, PyAny>>> {
    let mut by_index: Vec<Option<&Bound<'py, PyAny>>> = vec![None; schema.arguments.len()];
    for (slot, obj) in by_index.iter_mut().zip(positional) {
        *slot = Some(obj);
    }
    for (name, obj) in keywords {
        if let Some(i) = schema.arguments.iter().position(|a| a.name == *name) {
            by_index[i] = Some(obj);
        }
    }
    by_index
}

/// Calls `handle` with `stack` and converts the returns. A return the schema marks as the
/// written argument (`Tensor(a!) self -> Tensor(a!)`, `out=`) is the caller's own object, as in
/// PyTorch (`torch.ops.aten.add_.Tensor(x, 1) is x`), when it is still the same tensor.
/// `heavy`: the operator releases the GIL whatever its sizes.
fn call_with_stack<'py>(
    py: Python<'py>,
    handle: &OperatorHandle,
    heavy: bool,
    mut stack: Stack,
    objects: &[Option<&Bound<'py, PyAny>>],
) -> PyResult<Bound<'py, PyAny>> {
    let facts = handle.require_schema_facts().or_raise(py)?;
    let release = heavy || crate::gil::stack_numel(&stack) >= crate::gil::RELEASE_NUMEL;
    let h = *handle;
    crate::gil::run(py, release, || h.call_boxed(&mut stack)).or_raise(py)?;
    if stack.len() != facts.returns.len() {
        return returns_to_py(py, stack);
    }
    let mut items = Vec::with_capacity(stack.len());
    for (value, ret) in stack.into_iter().zip(&facts.returns) {
        // An argument returned itself (a written `self`, or `lift`, `contiguous` of a
        // contiguous tensor) comes back as the same Python object, as in PyTorch.
        if let IValue::Tensor(t) = &value
            && let Some(obj) =
                crate::bindings::argument_object(objects.iter().copied(), ret.alias, t)
        {
            items.push(obj.clone());
            continue;
        }
        items.push(ivalue_to_py(py, value)?);
    }
    match items.len() {
        0 => Ok(py.None().into_bound(py)),
        1 => Ok(items.swap_remove(0)),
        _ => Ok(PyTuple::new(py, items)?.into_any()),
    }
}

impl OpOverload {
    /// The operator.
    pub fn handle(&self) -> &OperatorHandle {
        &self.handle
    }

    /// The stack of a call with these Python arguments (`torch.ops`' matching and messages).
    pub fn match_python_args<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Stack> {
        let (positional, keywords) = split_args(args, kwargs)?;
        match_args(py, &self.schema, &positional, &keywords).or_raise(py)
    }
}

#[pymethods]
impl OpOverload {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let (positional, keywords) = split_args(args, kwargs)?;
            let stack = match_args(py, &self.schema, &positional, &keywords).or_raise(py)?;
            let objects = objects_by_argument(&self.schema, &positional, &keywords);
            call_with_stack(py, &self.handle, self.heavy, stack, &objects)
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "<OpOverload(op='{}.{}', overload='{}')>",
            self.namespace,
            self.name,
            overload_label(&self.overload)
        )
    }

    /// The schema.
    #[getter]
    fn _schema(&self) -> PySchema {
        PySchema {
            schema: self.schema.clone(),
        }
    }

    /// The overload name, `'default'` for the default overload.
    #[getter]
    fn _overloadname(&self) -> &str {
        overload_label(&self.overload)
    }

    /// The qualified name, `aten::add.Tensor`.
    fn name(&self) -> String {
        self.handle.name().to_owned()
    }
}

fn overload_label(overload: &str) -> &str {
    if overload.is_empty() {
        "default"
    } else {
        overload
    }
}

pub(crate) fn overload_of(py: Python<'_>, handle: &OperatorHandle) -> PyResult<OpOverload> {
    let schema = handle.require_schema().or_raise(py)?;
    let namespace = schema
        .name
        .namespace
        .clone()
        .unwrap_or_else(|| "aten".to_owned());
    Ok(OpOverload {
        handle: *handle,
        namespace,
        name: schema.name.name.to_string(),
        overload: schema.name.overload_name.clone(),
        heavy: crate::gil::is_heavy(handle.name()),
        schema,
    })
}

#[pymethods]
impl OpOverloadPacket {
    /// The overload `name` (`default` for the one without a name).
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<OpOverload> {
        guard(|| {
            let wanted = if name == "default" { "" } else { name };
            match self.overloads.iter().find(|(o, _)| o == wanted) {
                Some((_, h)) => overload_of(py, h),
                None => Err(PyAttributeError::new_err(format!(
                    "The underlying op of '{}.{}' has no overload name '{name}'",
                    self.namespace, self.name
                ))),
            }
        })
    }

    /// The overload names, `'default'` for the one without a name.
    fn overloads(&self) -> Vec<String> {
        self.overloads
            .iter()
            .map(|(o, _)| overload_label(o).to_owned())
            .collect()
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let (positional, keywords) = split_args(args, kwargs)?;
            let mut reasons = String::new();
            for (_, handle) in &self.overloads {
                let schema = handle.require_schema().or_raise(py)?;
                match match_args(py, &schema, &positional, &keywords) {
                    Ok(stack) => {
                        let objects = objects_by_argument(&schema, &positional, &keywords);
                        let heavy = crate::gil::is_heavy(handle.name());
                        return call_with_stack(py, handle, heavy, stack, &objects);
                    }
                    Err(e) => {
                        reasons.push_str(e.message());
                        reasons.push_str("\n\n");
                    }
                }
            }
            Err(PyRuntimeError::new_err(format!(
                "Overloaded torch operator invoked from Python failed to match any schema:\n{reasons}"
            )))
        })
    }

    fn __repr__(&self) -> String {
        format!("<OpOverloadPacket(op='{}.{}')>", self.namespace, self.name)
    }
}

/// `_C._get_packet(ns, name)`: the packet of `ns::name`, or `AttributeError` (PyTorch's
/// message for `torch.ops.<ns>.<name>`) when no overload of it is defined.
#[pyfunction]
pub fn _get_packet(namespace: &str, name: &str) -> PyResult<OpOverloadPacket> {
    guard(|| {
        let qualified = format!("{namespace}::{name}");
        let prefix = format!("{qualified}.");
        let mut overloads: Vec<(String, OperatorHandle)> = Dispatcher::singleton()
            .all_operators()
            .into_iter()
            .filter_map(|h| {
                let n = h.name();
                if n == qualified {
                    Some((String::new(), h))
                } else {
                    n.strip_prefix(&prefix).map(|o| (o.to_owned(), h))
                }
            })
            .collect();
        if overloads.is_empty() {
            return Err(PyAttributeError::new_err(format!(
                "'_OpNamespace' '{namespace}' object has no attribute '{name}'"
            )));
        }
        // ops.yaml's order (out= overloads last) for its operators; name order, the default
        // first, for the others (and after them, for overloads defined at run time).
        let table = OVERLOADS
            .binary_search_by(|(n, _)| (*n).cmp(qualified.as_str()))
            .ok()
            .map(|i| OVERLOADS[i].1)
            .unwrap_or(&[]);
        overloads.sort_by_key(|(o, _)| {
            let position = table.iter().position(|t| t == o).unwrap_or(usize::MAX);
            (position, !o.is_empty(), o.clone())
        });
        Ok(OpOverloadPacket {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            overloads,
        })
    })
}
