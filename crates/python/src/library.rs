//! The dispatcher from Python (docs/python-plan.md §7): `switchyard.library.Library` defines
//! operators and registers Python functions as boxed kernels and fallbacks, as
//! `torch.library.Library` does over PyTorch's `PythonKernelHolder`.
//!
//! A Python kernel is a boxed kernel holding the function. When called it takes the GIL
//! (re-entrantly: the operator may have been called from Python or from a Rust thread), pops
//! the schema's arguments, converts them to Python (positional up to the first keyword-only
//! argument, keywords after, with a trailing run of arguments equal to their defaults left
//! out, as PyTorch leaves them out), calls `fn([keyset,] [op,] *args, **kwargs)` and pushes
//! the result converted by the schema's returns. A Python exception raised by the function
//! becomes an error of the matching kind, and the original exception object is stashed so
//! that, when the error reaches Python again on the same thread, it is raised unchanged
//! ([`crate::errors::to_py_err`]).
//!
//! Kernel records live for the whole process (the dispatcher leaks them by design), so a
//! kernel holds its function in a slot that `_destroy` empties: the function is not kept
//! alive by a destroyed library. Rust never holds a lock while calling Python: the slot's
//! function is cloned out first.

use std::sync::{Arc, Mutex, PoisonError};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use switchyard_call::args::{ArgSource, default_value};
use switchyard_core::{Device, DispatchKey, DispatchKeySet, Error, IValue, Result, Stack};
use switchyard_dispatch::{AliasAnalysisKind, Kernel, Library, LibraryKind, OperatorHandle};

use crate::convert::{PySource, ivalue_to_py, returns_to_py};
use crate::errors::{OrRaise, error_from_py, guard};
use crate::ops::{OpOverload, overload_of};

/// `switchyard._C.DispatchKeySet`: a set of dispatch keys, as PyTorch's Python binding has it.
#[pyclass(frozen, name = "DispatchKeySet", module = "switchyard._C")]
#[derive(Clone, Copy)]
pub struct PyDispatchKeySet {
    /// The set.
    pub ks: DispatchKeySet,
}

fn parse_key(name: &str) -> PyResult<DispatchKey> {
    DispatchKey::parse(name).map_err(|e| PyValueError::new_err(e.message().to_owned()))
}

#[pymethods]
impl PyDispatchKeySet {
    #[new]
    #[pyo3(signature = (key = None))]
    fn new(key: Option<&str>) -> PyResult<Self> {
        Ok(PyDispatchKeySet {
            ks: match key {
                Some(k) => DispatchKeySet::from_key(parse_key(k)?),
                None => DispatchKeySet::EMPTY,
            },
        })
    }

    /// Whether `key` is in the set.
    fn has(&self, key: &str) -> PyResult<bool> {
        Ok(self.ks.has(parse_key(key)?))
    }

    /// The set with `key` added.
    fn add(&self, key: &str) -> PyResult<Self> {
        Ok(PyDispatchKeySet {
            ks: self.ks.add(parse_key(key)?),
        })
    }

    /// The set without `key`'s functionality.
    fn remove(&self, key: &str) -> PyResult<Self> {
        Ok(PyDispatchKeySet {
            ks: self.ks.remove(parse_key(key)?),
        })
    }

    /// The highest-priority key, as its name.
    #[allow(non_snake_case)]
    fn highestPriorityTypeId(&self) -> String {
        self.ks.highest_priority_type_id().display_name()
    }

    fn __or__(&self, other: &Self) -> Self {
        PyDispatchKeySet {
            ks: self.ks.or(other.ks),
        }
    }

    fn __and__(&self, other: &Self) -> Self {
        PyDispatchKeySet {
            ks: self.ks.and(other.ks),
        }
    }

    fn __sub__(&self, other: &Self) -> Self {
        PyDispatchKeySet {
            ks: self.ks.minus(other.ks),
        }
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.ks == other.ks
    }

    fn __repr__(&self) -> String {
        let keys: Vec<String> = self.ks.iter().map(|k| k.display_name()).collect();
        format!("DispatchKeySet({})", keys.join(", "))
    }
}

/// Every backend bit and every functionality below `key` (PyTorch's
/// `torch._C._after_autograd_keyset`-style helper for redispatching past a key).
#[pyfunction]
pub fn _dispatch_keyset_full_after(key: &str) -> PyResult<PyDispatchKeySet> {
    Ok(PyDispatchKeySet {
        ks: DispatchKeySet::full_after(parse_key(key)?),
    })
}

/// The function of a Python kernel; emptied by `_destroy`.
type FunctionSlot = Arc<Mutex<Option<Py<PyAny>>>>;

/// How a Python kernel is called.
#[derive(Clone, Copy)]
struct CallStyle {
    with_keyset: bool,
    with_op: bool,
}

/// Calls the Python function of a kernel for one operator call (`PythonKernelHolder`).
fn call_python_kernel(
    slot: &FunctionSlot,
    style: CallStyle,
    op: &OperatorHandle,
    ks: DispatchKeySet,
    stack: &mut Stack,
) -> Result<()> {
    let schema = op.require_schema()?;
    let n = schema.arguments.len();
    if stack.len() < n {
        return Err(Error::runtime(format!(
            "{}: the stack holds {} values, the schema takes {n} arguments",
            op.name(),
            stack.len()
        )));
    }
    let arguments: Vec<IValue> = stack.drain(stack.len() - n..).collect();
    // Leave out the trailing arguments equal to their defaults, as PyTorch does.
    let mut kept = n;
    while kept > 0 {
        let arg = &schema.arguments[kept - 1];
        if arg.default.is_none() {
            break;
        }
        match default_value(&schema, kept - 1, Device::CPU) {
            Ok(d) if d == arguments[kept - 1] => kept -= 1,
            _ => break,
        }
    }
    Python::attach(|py| -> Result<()> {
        // Taken with the GIL held, as `_destroy` takes it: one lock order, GIL then slot.
        let function = slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|f| f.clone_ref(py));
        let Some(function) = function else {
            return Err(Error::runtime(format!(
                "{}: its Python kernel belongs to a library that was destroyed",
                op.name()
            )));
        };
        let result = (|| -> PyResult<Bound<'_, PyAny>> {
            let mut positional: Vec<Bound<'_, PyAny>> = Vec::with_capacity(kept + 2);
            if style.with_keyset {
                positional.push(Bound::new(py, PyDispatchKeySet { ks })?.into_any());
            }
            if style.with_op {
                positional.push(Bound::new(py, overload_of(py, op)?)?.into_any());
            }
            let kwargs = PyDict::new(py);
            for (arg, value) in schema.arguments.iter().zip(arguments).take(kept) {
                let obj = ivalue_to_py(py, value)?;
                if arg.kwarg_only {
                    kwargs.set_item(&arg.name, obj)?;
                } else {
                    positional.push(obj);
                }
            }
            let args = PyTuple::new(py, positional)?;
            function.bind(py).call(args, Some(&kwargs))
        })();
        let result = result.map_err(|e| error_from_py(py, e))?;
        push_returns(py, op, &schema, &result, stack)
    })
}

/// Converts a Python kernel's result by the schema's returns and pushes it.
fn push_returns(
    py: Python<'_>,
    op: &OperatorHandle,
    schema: &switchyard_schema::FunctionSchema,
    result: &Bound<'_, PyAny>,
    stack: &mut Stack,
) -> Result<()> {
    let source = PySource::numbers_allowed(py);
    let wrong = |what: &str| {
        Error::runtime(format!(
            "{}: the Python kernel returned {what}, but the schema has {} returns",
            op.name(),
            schema.returns.len()
        ))
    };
    match schema.returns.len() {
        0 => {
            if !result.is_none() {
                return Err(wrong("a value"));
            }
        }
        1 => stack.push(source.convert(&schema.returns[0].ty, result, Device::CPU)?),
        n => {
            let items = result
                .cast::<PyTuple>()
                .map_err(|_| wrong("something other than a tuple"))?;
            if items.len() != n {
                return Err(wrong(&format!("a tuple of {}", items.len())));
            }
            for (ret, item) in schema.returns.iter().zip(items.iter()) {
                stack.push(source.convert(&ret.ty, &item, Device::CPU)?);
            }
        }
    }
    Ok(())
}

fn boxed_python_kernel(
    slot: FunctionSlot,
    style: CallStyle,
) -> impl Fn(&OperatorHandle, DispatchKeySet, &mut Stack) -> Result<()> + Send + Sync + 'static {
    move |op, ks, stack| call_python_kernel(&slot, style, op, ks, stack)
}

fn function_name(f: &Bound<'_, PyAny>) -> String {
    f.getattr("__qualname__")
        .or_else(|_| f.getattr("__name__"))
        .and_then(|n| n.extract::<String>())
        .unwrap_or_else(|_| "<callable>".to_owned())
}

/// `switchyard._C._Library`: one library block (the Rust half of `switchyard.library.Library`).
#[pyclass(frozen, name = "_Library", module = "switchyard._C")]
pub struct PyLibrary {
    library: Mutex<Option<Library>>,
    /// The functions of the kernels it registered, emptied by `_destroy`.
    slots: Mutex<Vec<FunctionSlot>>,
}

impl PyLibrary {
    /// Runs `f` on the library, or fails if it was destroyed.
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&mut Library) -> Result<T>) -> PyResult<T> {
        let mut guard = self.library.lock().unwrap_or_else(PoisonError::into_inner);
        let lib = guard
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("Library object has been destroyed"))?;
        f(lib).or_raise(py)
    }

    fn slot(&self, f: &Bound<'_, PyAny>) -> FunctionSlot {
        let slot: FunctionSlot = Arc::new(Mutex::new(Some(f.clone().unbind())));
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(slot.clone());
        slot
    }
}

#[pymethods]
impl PyLibrary {
    #[new]
    #[pyo3(signature = (kind, namespace, dispatch_key = ""))]
    fn new(py: Python<'_>, kind: &str, namespace: &str, dispatch_key: &str) -> PyResult<Self> {
        guard(|| {
            let kind = match kind {
                "DEF" => LibraryKind::Def,
                "FRAGMENT" => LibraryKind::Fragment,
                "IMPL" => LibraryKind::Impl,
                other => {
                    return Err(PyValueError::new_err(format!("Unsupported kind: {other}")));
                }
            };
            let key = if dispatch_key.is_empty() {
                None
            } else {
                Some(parse_key(dispatch_key)?)
            };
            let library = Library::new(kind, namespace, key).or_raise(py)?;
            Ok(PyLibrary {
                library: Mutex::new(Some(library)),
                slots: Mutex::new(Vec::new()),
            })
        })
    }

    /// Defines an operator from its schema; returns its name.
    #[pyo3(signature = (schema, alias_analysis = ""))]
    fn define(&self, py: Python<'_>, schema: &str, alias_analysis: &str) -> PyResult<String> {
        guard(|| {
            let alias = match alias_analysis {
                "" | "FROM_SCHEMA" => None,
                "CONSERVATIVE" => Some(AliasAnalysisKind::Conservative),
                "PURE_FUNCTION" => Some(AliasAnalysisKind::PureFunction),
                other => return Err(PyRuntimeError::new_err(format!("could not parse {other}"))),
            };
            self.with(py, |lib| {
                match alias {
                    None => lib.def(schema)?,
                    Some(a) => lib.def_with_alias(schema, a)?,
                };
                Ok(())
            })?;
            let name = schema.split('(').next().unwrap_or(schema).trim();
            Ok(name.split("::").last().unwrap_or(name).to_owned())
        })
    }

    /// Registers `fn` as the kernel of operator `name` at `dispatch_key` (the library's key
    /// when empty, else the catch-all).
    #[pyo3(signature = (name, function, dispatch_key = "", with_keyset = false))]
    fn impl_(
        &self,
        py: Python<'_>,
        name: &str,
        function: &Bound<'_, PyAny>,
        dispatch_key: &str,
        with_keyset: bool,
    ) -> PyResult<()> {
        guard(|| {
            let slot = self.slot(function);
            let mut kernel = Kernel::boxed(boxed_python_kernel(
                slot,
                CallStyle {
                    with_keyset,
                    with_op: false,
                },
            ))
            .debug(format!("Python kernel {}", function_name(function)));
            if !dispatch_key.is_empty() {
                kernel = kernel.for_key(parse_key(dispatch_key)?);
            }
            self.with(py, |lib| lib.impl_(name, kernel).map(|_| ()))
        })
    }

    /// Registers `fn` as the fallback of `dispatch_key`, called as `fn([keyset,] op, *args,
    /// **kwargs)`.
    #[pyo3(signature = (function, dispatch_key = "", with_keyset = false))]
    fn fallback(
        &self,
        py: Python<'_>,
        function: &Bound<'_, PyAny>,
        dispatch_key: &str,
        with_keyset: bool,
    ) -> PyResult<()> {
        guard(|| {
            let slot = self.slot(function);
            let mut kernel = Kernel::boxed(boxed_python_kernel(
                slot,
                CallStyle {
                    with_keyset,
                    with_op: true,
                },
            ))
            .debug(format!("Python fallback {}", function_name(function)));
            if !dispatch_key.is_empty() {
                kernel = kernel.for_key(parse_key(dispatch_key)?);
            }
            self.with(py, |lib| lib.fallback(kernel).map(|_| ()))
        })
    }

    /// Undoes every registration and releases the functions.
    fn _destroy(&self) {
        let library = self
            .library
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(library);
        for slot in self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        }
    }
}

/// `op.redispatch(keyset, *args, **kwargs)`: calls `op` from the highest key of `keyset`.
#[pyfunction]
#[pyo3(signature = (op, keyset, *args, **kwargs))]
pub fn _redispatch<'py>(
    py: Python<'py>,
    op: &OpOverload,
    keyset: &PyDispatchKeySet,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let mut stack = op.match_python_args(py, args, kwargs)?;
        op.handle()
            .redispatch_boxed(keyset.ks, &mut stack)
            .or_raise(py)?;
        returns_to_py(py, stack)
    })
}

/// `_C._IncludeDispatchKeyGuard(key)` / `_C._ExcludeDispatchKeyGuard(key)`: context managers
/// adding `key` to this thread's included or excluded keys while the block runs. Bound to the
/// thread that made them (`unsendable`), as the thread-local sets they change are.
#[pyclass(unsendable, name = "_DispatchKeyGuard", module = "switchyard._C")]
pub struct PyDispatchKeyGuard {
    ks: DispatchKeySet,
    include: bool,
    active: Vec<LocalGuard>,
}

enum LocalGuard {
    Include(#[allow(dead_code)] switchyard_core::local_dispatch::IncludeDispatchKeyGuard),
    Exclude(#[allow(dead_code)] switchyard_core::local_dispatch::ExcludeDispatchKeyGuard),
}

#[pymethods]
impl PyDispatchKeyGuard {
    fn __enter__(mut slf: PyRefMut<'_, Self>) -> PyRefMut<'_, Self> {
        let g = if slf.include {
            LocalGuard::Include(
                switchyard_core::local_dispatch::IncludeDispatchKeyGuard::new(slf.ks),
            )
        } else {
            LocalGuard::Exclude(
                switchyard_core::local_dispatch::ExcludeDispatchKeyGuard::new(slf.ks),
            )
        };
        slf.active.push(g);
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, PyTuple>) -> bool {
        // Guards restore the saved sets, so they are dropped innermost first.
        self.active.pop();
        false
    }
}

/// A guard including `key` on this thread while its `with` block runs.
#[pyfunction]
#[pyo3(name = "_IncludeDispatchKeyGuard")]
pub fn include_dispatch_key_guard(key: &str) -> PyResult<PyDispatchKeyGuard> {
    Ok(PyDispatchKeyGuard {
        ks: DispatchKeySet::from_key(parse_key(key)?),
        include: true,
        active: Vec::new(),
    })
}

/// A guard excluding `key` on this thread while its `with` block runs.
#[pyfunction]
#[pyo3(name = "_ExcludeDispatchKeyGuard")]
pub fn exclude_dispatch_key_guard(key: &str) -> PyResult<PyDispatchKeyGuard> {
    Ok(PyDispatchKeyGuard {
        ks: DispatchKeySet::from_key(parse_key(key)?),
        include: false,
        active: Vec::new(),
    })
}
