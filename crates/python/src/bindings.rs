//! The generated bindings: one callable per Python name of the signature tables
//! (`generated/signatures.rs`), as module functions (`switchyard.add`, `switchyard._C._nn.gelu`,
//! `switchyard._C._linalg.linalg_vector_norm`) and `Tensor` methods (`x.add(y)`), each running
//! PyTorch's argument parser ([`crate::parser`]) over its signatures and calling the chosen
//! overload through the dispatcher (`OperatorHandle::call_boxed`).
//!
//! A signature is bound to its operator's schema by parameter name (`input` and a method's
//! receiver are `self`; `out`, or each item of `TensorList[N] out`, fills the out= overload's
//! out arguments); parameters the signature does not have take the schema's defaults. Parsing
//! and binding happen on a callable's first call and are cached in it, so importing the module
//! parses nothing.
//!
//! Results: a return that the schema marks as a written argument is that argument's own Python
//! object (`x.add_(1) is x`, `out=` returns `out`); several returns with a `RETURN_TYPES`
//! entry are a `switchyard.return_types.<name>` named tuple; `Tensor[]` is a tuple; the Python-only
//! `requires_grad=` of factories is applied to the result.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};
use switchyard_call::args::parse_default;
use switchyard_core::{Device, IValue, Stack, Tensor};
use switchyard_dispatch::{Dispatcher, OperatorHandle, ReturnAlias, SchemaFacts};
use switchyard_schema::FunctionSchema;

use crate::convert::{ivalue_to_py, param_value};
use crate::errors::{OrRaise, guard};
use crate::generated::signatures::{FUNCTIONS, METHODS, PyName, RETURN_TYPES};
use crate::parser::{Arg, Signature, raw_parse};
use crate::tensor::PyTensor;

/// Where a schema argument's value comes from.
#[derive(Clone, Debug)]
enum Source {
    /// Parameter `i` of the signature.
    Param(usize),
    /// The method's receiver.
    Receiver,
    /// Item `k` of the `out` parameter `i` (`TensorList[N] out`), or the whole of it.
    Out(usize, Option<usize>),
    /// Not in the signature: the schema default.
    Fixed,
}

/// One schema argument of a bound target.
#[derive(Debug)]
struct Slot {
    source: Source,
    /// The schema default, parsed.
    default: Option<IValue>,
}

/// An overload a signature calls, with its argument sources.
struct Target {
    handle: OperatorHandle,
    facts: Arc<SchemaFacts>,
    slots: Vec<Slot>,
    /// Field names when the results are a named tuple.
    return_type: Option<(&'static str, &'static [&'static str])>,
    /// Whether calls release the GIL whatever their sizes ([`crate::gil`]).
    heavy: bool,
}

/// A signature bound to its overloads.
struct Overload {
    sig: Signature,
    target: Target,
    out_target: Option<Target>,
    out_param: Option<usize>,
    requires_grad_param: Option<usize>,
}

impl std::borrow::Borrow<Signature> for Overload {
    fn borrow(&self) -> &Signature {
        &self.sig
    }
}

/// The parsed, bound signatures of one Python name.
pub struct Parser {
    overloads: Vec<Overload>,
    /// Whether a deprecated signature was warned about (PyTorch warns once).
    warned: AtomicBool,
}

/// Deprecated signatures PyTorch still accepts (`tools/autograd/deprecated.yaml`), for the
/// names this build has: tried after the others and never listed in messages, and (as in
/// PyTorch) they make a call with too many arguments an "invalid combination" error rather
/// than a "takes N positional arguments" one. `(name, method, signature)`; they call the
/// first signature's overloads.
const DEPRECATED: &[(&str, bool, &str)] = &[
    (
        "add",
        false,
        "add(Tensor input, Scalar alpha, Tensor other, *, Tensor out=None)|deprecated",
    ),
    ("add", true, "add(Scalar alpha, Tensor other)|deprecated"),
    ("add_", true, "add_(Scalar alpha, Tensor other)|deprecated"),
    (
        "sub",
        false,
        "sub(Tensor input, Scalar alpha, Tensor other, *, Tensor out=None)|deprecated",
    ),
    ("sub", true, "sub(Scalar alpha, Tensor other)|deprecated"),
    ("sub_", true, "sub_(Scalar alpha, Tensor other)|deprecated"),
    (
        "addmm",
        false,
        "addmm(Scalar beta, Tensor input, Scalar alpha, Tensor mat1, Tensor mat2, *, Tensor out=None)|deprecated",
    ),
    (
        "addmm",
        false,
        "addmm(Scalar beta, Tensor input, Tensor mat1, Tensor mat2, *, Tensor out=None)|deprecated",
    ),
    (
        "addmm",
        true,
        "addmm(Scalar beta, Scalar alpha, Tensor mat1, Tensor mat2)|deprecated",
    ),
    (
        "addmm",
        true,
        "addmm(Scalar beta, Tensor mat1, Tensor mat2)|deprecated",
    ),
    (
        "addmm_",
        true,
        "addmm_(Scalar beta, Scalar alpha, Tensor mat1, Tensor mat2)|deprecated",
    ),
    (
        "addmm_",
        true,
        "addmm_(Scalar beta, Tensor mat1, Tensor mat2)|deprecated",
    ),
    (
        "baddbmm",
        false,
        "baddbmm(Scalar beta, Tensor input, Scalar alpha, Tensor batch1, Tensor batch2, *, Tensor out=None)|deprecated",
    ),
    (
        "baddbmm",
        false,
        "baddbmm(Scalar beta, Tensor input, Tensor batch1, Tensor batch2, *, Tensor out=None)|deprecated",
    ),
    (
        "baddbmm",
        true,
        "baddbmm(Scalar beta, Scalar alpha, Tensor batch1, Tensor batch2)|deprecated",
    ),
    (
        "baddbmm",
        true,
        "baddbmm(Scalar beta, Tensor batch1, Tensor batch2)|deprecated",
    ),
    (
        "baddbmm_",
        true,
        "baddbmm_(Scalar beta, Scalar alpha, Tensor batch1, Tensor batch2)|deprecated",
    ),
    (
        "baddbmm_",
        true,
        "baddbmm_(Scalar beta, Tensor batch1, Tensor batch2)|deprecated",
    ),
];

fn schema_error(msg: String) -> switchyard_core::Error {
    switchyard_core::Error::runtime(msg)
}

/// Binds `sig` to the schema of `op` (its out= overload when `out`): where each schema
/// argument's value comes from, and its parsed default. `return_key` names the named-tuple
/// class of the results (`max`, `max_out`), if `RETURN_TYPES` has one.
fn bind_target(
    sig: &Signature,
    op: &str,
    method: bool,
    out: bool,
    out_param: Option<usize>,
    return_key: &str,
) -> switchyard_core::Result<Target> {
    let handle = Dispatcher::singleton().find_schema_or_error(op)?;
    let schema: Arc<FunctionSchema> = handle.require_schema()?;
    let facts = handle.require_schema_facts()?;
    let out_args: Vec<usize> = if out {
        schema
            .arguments
            .iter()
            .enumerate()
            .filter(|(_, a)| a.is_out)
            .map(|(i, _)| i)
            .collect()
    } else {
        Vec::new()
    };
    let mut slots = Vec::with_capacity(schema.arguments.len());
    for (i, a) in schema.arguments.iter().enumerate() {
        let find = |name: &str| sig.params.iter().position(|p| p.name == name);
        let source = if let Some(k) = out_args.iter().position(|&j| j == i) {
            let p = out_param.ok_or_else(|| schema_error(format!("{op}: no out parameter")))?;
            Source::Out(p, (out_args.len() > 1).then_some(k))
        } else if let Some(p) = find(&a.name) {
            Source::Param(p)
        } else if a.name == "self" && method {
            Source::Receiver
        } else if a.name == "self"
            && let Some(p) = find("input")
        {
            Source::Param(p)
        } else {
            Source::Fixed
        };
        let default = match &a.default {
            Some(d) => Some(parse_default(&a.ty, d, Device::CPU)?),
            None => None,
        };
        if matches!(source, Source::Fixed) && default.is_none() && !a.ty.is_optional() {
            return Err(schema_error(format!(
                "{}: argument '{}' of {op} has no parameter and no default",
                sig.name, a.name
            )));
        }
        slots.push(Slot { source, default });
    }
    let named = schema.returns.len() > 1 && schema.returns.iter().all(|r| r.name.is_some());
    let return_type = if named {
        RETURN_TYPES
            .iter()
            .find(|(n, _)| *n == return_key)
            .map(|(n, f)| (*n, *f))
    } else {
        None
    };
    Ok(Target {
        heavy: crate::gil::is_heavy(handle.name()),
        handle,
        facts,
        slots,
        return_type,
    })
}

impl Parser {
    fn build(entry: &PyName, method: bool) -> switchyard_core::Result<Parser> {
        let base = entry.name.trim_end_matches('_');
        let mut overloads = Vec::new();
        let deprecated = DEPRECATED
            .iter()
            .filter(|(n, m, _)| *n == entry.name && *m == method)
            .map(|(_, _, s)| (*s, entry.signatures.first()));
        let all = entry
            .signatures
            .iter()
            .map(|s| (s.signature, Some(s)))
            .chain(deprecated);
        for (text, sigdef) in all {
            let Some(sigdef) = sigdef else { continue };
            let sig = Signature::parse(text).map_err(schema_error)?;
            let out_param = sig.params.iter().position(|p| p.name == "out");
            let requires_grad_param = sig.params.iter().position(|p| p.name == "requires_grad");
            let target = bind_target(&sig, sigdef.op, method, false, None, base)?;
            let out_target = match sigdef.out_op {
                Some(op) if out_param.is_some() => Some(bind_target(
                    &sig,
                    op,
                    method,
                    true,
                    out_param,
                    &format!("{base}_out"),
                )?),
                _ => None,
            };
            overloads.push(Overload {
                sig,
                target,
                out_target,
                out_param,
                requires_grad_param,
            });
        }
        Ok(Parser {
            overloads,
            warned: AtomicBool::new(false),
        })
    }

    /// `PythonArgParser::check_deprecated`'s `UserWarning`.
    fn warn_deprecated(&self, py: Python<'_>, sig: &Signature) -> PyResult<()> {
        let mut msg = format!(
            "This overload of {} is deprecated:\n\t{}{}",
            sig.name,
            sig.name,
            sig.describe()
        );
        let others: Vec<String> = self
            .overloads
            .iter()
            .filter(|o| !o.sig.hidden)
            .map(|o| format!("\n\t{}{}", sig.name, o.sig.describe()))
            .collect();
        if !others.is_empty() {
            msg.push_str("\nConsider using one of the following signatures instead:");
            msg.extend(others);
        }
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        let text = std::ffi::CString::new(msg).unwrap_or_default();
        PyErr::warn(py, &category, &text, 1)
    }

    /// Parses `args` / `kwargs`, calls the chosen overload and converts its results.
    fn call<'py>(
        &self,
        py: Python<'py>,
        receiver: Option<&Bound<'py, PyAny>>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut dst: Vec<Arg<'py>> = Vec::with_capacity(8);
        let index = raw_parse(&self.overloads, args, kwargs, &mut dst)?;
        let ov = &self.overloads[index];
        if ov.sig.deprecated && !self.warned.swap(true, Ordering::Relaxed) {
            self.warn_deprecated(py, &ov.sig)?;
        }
        let with_out = ov.out_param.is_some_and(|p| dst[p].obj().is_some());
        let target = match (&ov.out_target, with_out) {
            (Some(t), true) => t,
            _ => &ov.target,
        };
        // The Python object behind each schema argument, for aliasing returns.
        let mut objects: Vec<Option<Bound<'py, PyAny>>> = Vec::with_capacity(target.slots.len());
        let mut stack: Stack = Vec::with_capacity(target.slots.len());
        for slot in &target.slots {
            let (value, obj) = match &slot.source {
                Source::Receiver => {
                    let r = receiver.ok_or_else(|| PyRuntimeError::new_err("no receiver"))?;
                    (
                        Some(IValue::Tensor(r.cast::<PyTensor>()?.get().t.clone())),
                        Some(r.clone()),
                    )
                }
                Source::Param(p) => {
                    let param = &ov.sig.params[*p];
                    let value = match param_value(&ov.sig.name, param, &dst[*p])? {
                        Some(v) => Some(v),
                        // Omitted: what PyTorch's binding passes for the parameter's default.
                        None => param.python_default(),
                    };
                    (value, dst[*p].obj().cloned())
                }
                Source::Out(p, item) => {
                    let obj = dst[*p].obj().cloned();
                    match (item, &obj) {
                        (Some(k), Some(o)) => {
                            let items = crate::parser::sequence_items(o).unwrap_or_default();
                            let it = items.get(*k).cloned().ok_or_else(|| {
                                PyTypeError::new_err(format!(
                                    "{}(): argument 'out' must be tuple of Tensors",
                                    ov.sig.name
                                ))
                            })?;
                            (
                                Some(IValue::Tensor(it.cast::<PyTensor>()?.get().t.clone())),
                                Some(it),
                            )
                        }
                        _ => {
                            let param = &ov.sig.params[*p];
                            (param_value(&ov.sig.name, param, &dst[*p])?, obj)
                        }
                    }
                }
                Source::Fixed => (None, None),
            };
            // Nothing given and no Python default: the schema's default, or `None` for an
            // optional argument without one (binding checked the others have a default).
            let value = value.unwrap_or_else(|| slot.default.clone().unwrap_or(IValue::None));
            stack.push(value);
            objects.push(obj);
        }
        let release = target.heavy || crate::gil::stack_numel(&stack) >= crate::gil::RELEASE_NUMEL;
        let handle = target.handle;
        crate::gil::run(py, release, || handle.call_boxed(&mut stack)).or_raise(py)?;
        let requires_grad = ov
            .requires_grad_param
            .and_then(|p| dst[p].obj())
            .map(|o| o.is_truthy())
            .transpose()?
            .unwrap_or(false);
        let result = wrap_returns(py, target, stack, &objects)?;
        if requires_grad && let Ok(t) = result.cast::<PyTensor>() {
            let t = &t.get().t;
            // The factories' own check (`set_requires_grad` in PyTorch's
            // python_torch_functions), worded as there.
            if !t.dtype().is_floating_point() {
                return Err(PyRuntimeError::new_err(
                    "Only Tensors of floating point and complex dtype can require gradients",
                ));
            }
            t.set_requires_grad(true).or_raise(py)?;
            crate::preserve::register(py, &result);
        }
        Ok(result)
    }
}

/// The Python object of the argument that a returned tensor is (the same tensor object, not
/// a view of it): the written argument a mutable return names, else any argument that is `t`
/// itself (PyTorch returns one Python object per tensor; switchyard keeps that for arguments).
pub(crate) fn argument_object<'a, 'py>(
    objects: impl Iterator<Item = Option<&'a Bound<'py, PyAny>>> + Clone,
    alias: ReturnAlias,
    t: &Tensor,
) -> Option<&'a Bound<'py, PyAny>>
where
    'py: 'a,
{
    let is_t =
        |obj: &&Bound<'py, PyAny>| obj.cast::<PyTensor>().is_ok_and(|p| p.get().t.is_same(t));
    if let ReturnAlias::MutatedArgument(a) = alias
        && let Some(obj) = objects.clone().nth(a).flatten().filter(is_t)
    {
        return Some(obj);
    }
    objects.flatten().find(is_t)
}

/// The results of `target` as Python objects.
fn wrap_returns<'py>(
    py: Python<'py>,
    target: &Target,
    stack: Stack,
    objects: &[Option<Bound<'py, PyAny>>],
) -> PyResult<Bound<'py, PyAny>> {
    let mut items = Vec::with_capacity(stack.len());
    for (i, value) in stack.into_iter().enumerate() {
        let alias = target.facts.returns.get(i).map(|r| r.alias);
        // An argument returned itself (a written `self`, or `lift`, `contiguous` of a
        // contiguous tensor) comes back as the same Python object, as in PyTorch.
        if let IValue::Tensor(t) = &value
            && let Some(obj) = argument_object(
                objects.iter().map(Option::as_ref),
                alias.unwrap_or(ReturnAlias::Fresh),
                t,
            )
        {
            items.push(obj.clone());
            continue;
        }
        if let (Some(ReturnAlias::View), IValue::Tensor(t)) = (alias, &value) {
            crate::preserve::note_view_of(py, t, objects.iter().flatten());
        }
        items.push(match value {
            // PyTorch's bindings return tensor lists as tuples.
            IValue::TensorList(ts) => PyTuple::new(
                py,
                ts.into_iter()
                    .map(|t| Bound::new(py, PyTensor::new(t)))
                    .collect::<PyResult<Vec<_>>>()?,
            )?
            .into_any(),
            v => ivalue_to_py(py, v)?,
        });
    }
    match items.len() {
        0 => Ok(py.None().into_bound(py)),
        1 => Ok(items.swap_remove(0)),
        _ => {
            let tuple = PyTuple::new(py, items)?;
            match target.return_type {
                Some((name, fields)) => return_type(py, name, fields)?.call1((tuple,)),
                None => Ok(tuple.into_any()),
            }
        }
    }
}

/// `Tensor.split` and `switchyard.split`, which PyTorch writes in Python (`torch/_tensor.py`,
/// `torch/functional.py`): an int (or a tensor holding one) splits into equal chunks
/// (`split.Tensor`), anything else is a list of sizes (`split_with_sizes`, whose parser then
/// names a wrong type).
const SPLIT_SOURCE: &std::ffi::CStr = cr#"
def make(Tensor, split_vf, split_with_sizes_vf):
    def split(self, split_size, dim=0):
        if isinstance(split_size, Tensor):
            try:
                split_size = int(split_size)
            except ValueError:
                pass
        if isinstance(split_size, int):
            return split_vf(self, split_size, dim)
        return split_with_sizes_vf(self, split_size, dim)

    split.__qualname__ = "Tensor.split"
    split.__module__ = "switchyard"

    def split_function(tensor, split_size_or_sections, dim=0):
        return tensor.split(split_size_or_sections, dim)

    split_function.__name__ = split_function.__qualname__ = "split"
    split_function.__module__ = "switchyard"
    return split, split_function
"#;

/// `switchyard.return_types`: named tuples as PyTorch's structseqs print and behave (a tuple
/// with field properties, `n_fields`, `repr` `torch.return_types.max(\nvalues=...,\n...)`).
const RETURN_TYPES_SOURCE: &std::ffi::CStr = cr#"
def make(name, fields):
    def __repr__(self):
        body = ",\n".join(f + "=" + repr(v) for f, v in zip(fields, self))
        return "torch.return_types." + name + "(\n" + body + ")"

    def __reduce__(self):
        return (cls, (tuple(self),))

    ns = {
        "__slots__": (),
        "__repr__": __repr__,
        "__str__": __repr__,
        "__reduce__": __reduce__,
        "n_fields": len(fields),
        "n_sequence_fields": len(fields),
        "n_unnamed_fields": 0,
        "__match_args__": tuple(fields),
        "__module__": "switchyard.return_types",
    }
    for i, f in enumerate(fields):
        ns[f] = property(lambda self, i=i: tuple.__getitem__(self, i))
    cls = type(name, (tuple,), ns)
    return cls
"#;

static RETURN_TYPE_CLASSES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

fn return_types_dict(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    RETURN_TYPE_CLASSES
        .get_or_try_init(py, || -> PyResult<Py<PyDict>> {
            let module = PyModule::from_code(
                py,
                RETURN_TYPES_SOURCE,
                c"switchyard/_return_types.py",
                c"switchyard._return_types",
            )?;
            let make = module.getattr("make")?;
            let dict = PyDict::new(py);
            for (name, fields) in RETURN_TYPES {
                let cls = make.call1((*name, PyList::new(py, fields.iter())?))?;
                dict.set_item(*name, cls)?;
            }
            Ok(dict.unbind())
        })
        .map(|d| d.bind(py))
}

fn return_type<'py>(py: Python<'py>, name: &str, _fields: &[&str]) -> PyResult<Bound<'py, PyType>> {
    Ok(return_types_dict(py)?
        .get_item(name)?
        .ok_or_else(|| PyRuntimeError::new_err(format!("no return type {name}")))?
        .cast_into::<PyType>()?)
}

fn parser_of<'a>(
    cell: &'a OnceLock<Result<Parser, String>>,
    entry: &PyName,
    method: bool,
) -> PyResult<&'a Parser> {
    cell.get_or_init(|| {
        Parser::build(entry, method).map_err(|e| {
            format!(
                "switchyard: the binding of {} could not be built: {}",
                entry.name,
                e.message()
            )
        })
    })
    .as_ref()
    .map_err(|e| PyRuntimeError::new_err(e.clone()))
}

/// Whether torchgen binds the method without arguments (one signature, no parameters).
fn is_noarg(entry: &PyName) -> bool {
    matches!(entry.signatures, [only] if only.signature.ends_with("()"))
}

/// A module function of the tables (`switchyard.add`).
#[pyclass(frozen, name = "builtin_function", module = "switchyard._C")]
pub struct PyFunction {
    entry: &'static PyName,
    parser: OnceLock<Result<Parser, String>>,
}

#[pymethods]
impl PyFunction {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| parser_of(&self.parser, self.entry, false)?.call(py, None, args, kwargs))
    }

    fn __repr__(&self) -> String {
        format!("<built-in method {} of type object>", self.entry.name)
    }

    /// The function's name.
    #[getter]
    fn __name__(&self) -> &'static str {
        self.entry.name
    }

    /// The function's name.
    #[getter]
    fn __qualname__(&self) -> &'static str {
        self.entry.name
    }
}

/// A hand-written method: `(receiver, args, kwargs) -> result`.
pub type HandFn = for<'py> fn(
    &Bound<'py, PyAny>,
    &Bound<'py, PyTuple>,
    Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>>;

/// What a method runs.
enum MethodKind {
    /// A table method, parsed and bound on first use.
    Table(&'static PyName, OnceLock<Result<Parser, String>>),
    /// A hand-written one.
    Hand(&'static str, HandFn),
}

/// A `Tensor` method: a descriptor giving [`PyBoundMethod`]s.
#[pyclass(frozen, name = "method_descriptor", module = "switchyard._C")]
pub struct PyMethod {
    kind: MethodKind,
}

impl PyMethod {
    fn name(&self) -> &'static str {
        match &self.kind {
            MethodKind::Table(e, _) => e.name,
            MethodKind::Hand(n, _) => n,
        }
    }

    fn invoke<'py>(
        &self,
        receiver: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match &self.kind {
            MethodKind::Table(entry, cell) => {
                if is_noarg(entry) {
                    // PyTorch binds these as METH_NOARGS: CPython's own messages.
                    if kwargs.is_some_and(|k| !k.is_empty()) {
                        return Err(PyTypeError::new_err(format!(
                            "TensorBase.{}() takes no keyword arguments",
                            entry.name
                        )));
                    }
                    if !args.is_empty() {
                        return Err(PyTypeError::new_err(format!(
                            "TensorBase.{}() takes no arguments ({} given)",
                            entry.name,
                            args.len()
                        )));
                    }
                }
                parser_of(cell, entry, true)?.call(receiver.py(), Some(receiver), args, kwargs)
            }
            MethodKind::Hand(_, f) => f(receiver, args, kwargs),
        }
    }
}

#[pymethods]
impl PyMethod {
    fn __get__<'py>(
        slf: &Bound<'py, Self>,
        obj: Option<&Bound<'py, PyAny>>,
        _owner: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match obj {
            Some(o) if !o.is_none() => Ok(Bound::new(
                slf.py(),
                PyBoundMethod {
                    method: slf.clone().unbind(),
                    receiver: o.clone().unbind(),
                },
            )?
            .into_any()),
            _ => Ok(slf.clone().into_any()),
        }
    }

    /// Unbound call: `Tensor.add(x, y)`.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = py;
        guard(|| {
            let Some(receiver) = args.iter().next() else {
                return Err(PyTypeError::new_err(format!(
                    "descriptor '{}' of 'torch._C.TensorBase' object needs an argument",
                    self.name()
                )));
            };
            if !receiver.is_instance_of::<PyTensor>() {
                return Err(PyTypeError::new_err(format!(
                    "descriptor '{}' for 'torch._C.TensorBase' objects doesn't apply to a '{}' object",
                    self.name(),
                    crate::parser::tp_name(&receiver)
                )));
            }
            let rest = args.get_slice(1, args.len());
            self.invoke(&receiver, &rest, kwargs)
        })
    }

    /// The method's name.
    #[getter]
    fn __name__(&self) -> &'static str {
        self.name()
    }

    fn __repr__(&self) -> String {
        format!(
            "<method '{}' of 'torch._C.TensorBase' objects>",
            self.name()
        )
    }
}

/// A table method bound to its tensor (`x.add`).
#[pyclass(frozen, name = "builtin_method", module = "switchyard._C")]
pub struct PyBoundMethod {
    method: Py<PyMethod>,
    receiver: Py<PyAny>,
}

#[pymethods]
impl PyBoundMethod {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = self.method.get();
        guard(|| m.invoke(self.receiver.bind(py), args, kwargs))
    }

    /// The method's name.
    #[getter]
    fn __name__(&self) -> &'static str {
        self.method.get().name()
    }

    /// The tensor.
    #[getter]
    fn __self__(&self, py: Python<'_>) -> Py<PyAny> {
        self.receiver.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "<built-in method {} of Tensor object>",
            self.method.get().name()
        )
    }
}

static METHOD_OBJECTS: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

fn method_objects(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    METHOD_OBJECTS
        .get_or_try_init(py, || -> PyResult<Py<PyDict>> {
            let d = PyDict::new(py);
            for entry in METHODS {
                let kind = MethodKind::Table(entry, OnceLock::new());
                d.set_item(entry.name, Py::new(py, PyMethod { kind })?)?;
            }
            for (name, f) in crate::handwritten::METHODS {
                let kind = MethodKind::Hand(name, *f);
                d.set_item(*name, Py::new(py, PyMethod { kind })?)?;
            }
            Ok(d.unbind())
        })
        .map(|d| d.bind(py))
}

/// Adds every table function to `module` (`switchyard` functions), `nn` and `linalg`, every
/// table method to `Tensor` (except names the class defines itself), and the named-tuple
/// classes as `return_types`.
pub fn register(
    module: &Bound<'_, PyModule>,
    nn: &Bound<'_, PyModule>,
    linalg: &Bound<'_, PyModule>,
) -> PyResult<()> {
    let py = module.py();
    let mut torch_names = Vec::new();
    let mut split_function = None;
    for entry in FUNCTIONS {
        let f = Py::new(
            py,
            PyFunction {
                entry,
                parser: OnceLock::new(),
            },
        )?;
        match entry.module {
            "switchyard._C._nn" => nn.add(entry.name, f)?,
            "switchyard._C._linalg" => linalg.add(entry.name, f)?,
            "switchyard" if entry.name == "split" => {
                // `torch.split` is Python in PyTorch (below); its `_VF.split` is this one.
                split_function = Some(f);
                torch_names.push(entry.name);
            }
            _ => {
                // Hand-written functions of the module keep their own binding.
                if !module.hasattr(entry.name)? {
                    module.add(entry.name, f)?;
                    torch_names.push(entry.name);
                }
            }
        }
    }
    module.add("_torch_function_names", PyTuple::new(py, torch_names)?)?;
    let tensor = py.get_type::<PyTensor>();
    let own = tensor.getattr("__dict__")?;
    for (name, m) in method_objects(py)?.iter() {
        let name: Bound<'_, PyString> = name.cast_into()?;
        if !own.contains(&name)? {
            tensor.setattr(&name, m)?;
        }
    }
    crate::handwritten::register(&tensor)?;
    if let Some(split_vf) = split_function {
        let make = PyModule::from_code(
            py,
            SPLIT_SOURCE,
            c"switchyard/_split.py",
            c"switchyard._split",
        )?
        .getattr("make")?;
        let with_sizes = module.getattr("split_with_sizes")?;
        let (method, function): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
            make.call1((&tensor, split_vf, with_sizes))?.extract()?;
        tensor.setattr("split", method)?;
        module.add("split", function)?;
    }
    module.add("_return_types", return_types_dict(py)?)?;
    Ok(())
}
