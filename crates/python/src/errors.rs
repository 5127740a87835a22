//! switchyard errors as Python exceptions, and the guard that keeps Rust panics out of Python.
//!
//! An [`Error`] becomes the builtin exception its kind names (`RuntimeError`, `IndexError`,
//! `ValueError`, `TypeError`, `NotImplementedError`) with PyTorch's message exactly
//! ([`Error::message`], not `Display`, which appends the operator), so `str(e)` equals
//! PyTorch's; the operator the error passed through goes into a PEP 678 note, which tracebacks
//! print after the message.
//!
//! Every entry point from Python runs inside [`guard`]: a panic becomes a `RuntimeError`
//! saying it is an internal error, never pyo3's `PanicException` (a `BaseException` that
//! `except Exception` does not catch).

use std::any::Any;
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::exceptions::{
    PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use switchyard_core::{Error, ErrorKind};

thread_local! {
    /// The Python exception a Python kernel raised on this thread, with the message of the
    /// [`Error`] it became: restored unchanged when that error reaches Python again.
    static STASHED: RefCell<Option<(String, PyErr)>> = const { RefCell::new(None) };
}

/// A Python exception raised inside a Python kernel as a switchyard [`Error`] of the
/// matching kind with `str(exception)`; the exception object itself is stashed for
/// [`to_py_err`] (PyTorch's `python_error` keeps the original the same way).
pub fn error_from_py(py: Python<'_>, err: PyErr) -> Error {
    let message = err
        .value(py)
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "a Python exception without a printable message".to_owned());
    let e = if err.is_instance_of::<PyTypeError>(py) {
        Error::type_error(message.clone())
    } else if err.is_instance_of::<PyValueError>(py) {
        Error::value(message.clone())
    } else if err.is_instance_of::<PyIndexError>(py) {
        Error::index(message.clone())
    } else if err.is_instance_of::<PyNotImplementedError>(py) {
        Error::not_implemented(message.clone())
    } else {
        Error::runtime(message.clone())
    };
    STASHED.with(|s| *s.borrow_mut() = Some((message, err)));
    e
}

/// `e` as the Python exception PyTorch raises for it, with the operator as a note; the
/// original exception when `e` came from a Python kernel on this thread ([`error_from_py`]).
pub fn to_py_err(py: Python<'_>, e: &Error) -> PyErr {
    if let Some(original) = STASHED.with(|s| {
        let mut s = s.borrow_mut();
        match s.as_ref() {
            Some((m, _)) if m == e.message() => s.take().map(|(_, err)| err),
            _ => None,
        }
    }) {
        return original;
    }
    let message = e.message().to_owned();
    let err = match e.kind() {
        ErrorKind::RuntimeError => PyRuntimeError::new_err(message),
        ErrorKind::IndexError => PyIndexError::new_err(message),
        ErrorKind::ValueError => PyValueError::new_err(message),
        ErrorKind::TypeError => PyTypeError::new_err(message),
        ErrorKind::NotImplementedError => PyNotImplementedError::new_err(message),
    };
    if let Some(op) = e.operator() {
        let note = match e.raised_in() {
            Some(inner) => format!("(switchyard: in operator {op}, raised in {inner})"),
            None => format!("(switchyard: in operator {op})"),
        };
        // A note is context only: failing to attach it must not hide the error itself.
        let _ = err.add_note(py, note);
    }
    err
}

/// Converts a switchyard result into a Python one.
pub trait OrRaise<T> {
    /// The value, or the error as a Python exception ([`to_py_err`]).
    fn or_raise(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrRaise<T> for switchyard_core::Result<T> {
    fn or_raise(self, py: Python<'_>) -> PyResult<T> {
        // Every call's result passes here: the warnings it queued go out first (one relaxed
        // load when there are none).
        if switchyard_dispatch::warnings::has_pending() {
            let emitted = emit_pending(py);
            return match self {
                Ok(v) => emitted.map(|()| v),
                // The call's own error wins over a warning turned into an exception.
                Err(e) => Err(to_py_err(py, &e)),
            };
        }
        self.map_err(|e| to_py_err(py, &e))
    }
}

/// Emits the warnings the dispatcher queued on this thread (kernels' `TORCH_WARN`s) as
/// Python `UserWarning`s, in order, as PyTorch's `PyWarningHandler` does when a call returns.
/// A warning that the filters turn into an exception is raised; the rest are dropped then.
pub fn emit_pending(py: Python<'_>) -> PyResult<()> {
    let pending = switchyard_dispatch::warnings::take_pending();
    if pending.is_empty() {
        // Queued on another thread (a pool worker's, which no caller drains; bounded there).
        return Ok(());
    }
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    for message in pending {
        let text = std::ffi::CString::new(message.replace('\0', ""))
            .map_err(|_| PyRuntimeError::new_err("warning text holds a NUL byte"))?;
        PyErr::warn(py, &category, &text, 1)?;
    }
    Ok(())
}

/// Runs `f`, turning a panic into `RuntimeError("switchyard internal error (a Rust panic):
/// ...; please report it")`.
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        // Warnings of calls whose results did not pass through `or_raise` (backward).
        Ok(Ok(v)) if switchyard_dispatch::warnings::has_pending() => {
            Python::attach(emit_pending).map(|()| v)
        }
        Ok(result) => result,
        Err(payload) => Err(PyRuntimeError::new_err(format!(
            "switchyard internal error (a Rust panic): {}; please report it",
            panic_message(payload.as_ref())
        ))),
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
