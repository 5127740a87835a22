//! The error type every switchyard crate returns.
//!
//! PyTorch raises Python exceptions of a few kinds (`RuntimeError`, `IndexError`, ...); switchyard
//! returns [`Error`] values carrying the same kind and, wherever PyTorch has a message for the
//! condition, the same message text. This is a deliberate difference from PyTorch's C++ API,
//! which throws: every public operation returns [`Result`].

use std::fmt;

/// The kind of an error, mirroring the Python exception type PyTorch raises for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A generic failure (`TORCH_CHECK`): bad shapes, dtypes, devices, arguments.
    RuntimeError,
    /// An index or dimension out of range (`TORCH_CHECK_INDEX`).
    IndexError,
    /// A bad value for an argument (`TORCH_CHECK_VALUE`).
    ValueError,
    /// A bad type for an argument (`TORCH_CHECK_TYPE`).
    TypeError,
    /// No kernel, or a feature that is not implemented (`TORCH_CHECK_NOT_IMPLEMENTED`).
    NotImplementedError,
}

impl ErrorKind {
    /// The Python exception name, e.g. `"RuntimeError"`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::RuntimeError => "RuntimeError",
            ErrorKind::IndexError => "IndexError",
            ErrorKind::ValueError => "ValueError",
            ErrorKind::TypeError => "TypeError",
            ErrorKind::NotImplementedError => "NotImplementedError",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An error: a kind, PyTorch's message, and the operator that raised it when known.
///
/// The payload is boxed so that `Result<Tensor>` stays two words wide on the success path.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorInner>);

#[derive(Clone, PartialEq, Eq)]
struct ErrorInner {
    kind: ErrorKind,
    message: String,
    /// The outermost operator the error passed through: the one the user called.
    operator: Option<String>,
    /// The innermost operator, where the error was raised, when that is another one (a
    /// composite's inner call).
    raised_in: Option<String>,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error(Box::new(ErrorInner {
            kind,
            message: message.into(),
            operator: None,
            raised_in: None,
        }))
    }

    /// A `RuntimeError`.
    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::RuntimeError, message)
    }

    /// An `IndexError`.
    pub fn index(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::IndexError, message)
    }

    /// A `ValueError`.
    pub fn value(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ValueError, message)
    }

    /// A `TypeError`.
    pub fn type_error(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::TypeError, message)
    }

    /// A `NotImplementedError`.
    pub fn not_implemented(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotImplementedError, message)
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The message, worded as PyTorch words it where PyTorch has one.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The operator the error is reported for (e.g. `aten::remainder.Scalar`): the outermost
    /// one it passed through, which is the operator the user called.
    pub fn operator(&self) -> Option<&str> {
        self.0.operator.as_deref()
    }

    /// The inner operator where the error was raised, when it differs from
    /// [`Error::operator`] (a composite such as `remainder.Scalar` failing inside the
    /// `remainder.Tensor` it calls).
    pub fn raised_in(&self) -> Option<&str> {
        self.0.raised_in.as_deref()
    }

    /// Records that the error passed through `operator` on its way out. The dispatcher calls
    /// it at every level, so the outermost operator, the one the user called, ends up named
    /// (as in PyTorch, whose errors from inside a composite are the error of the call the
    /// user made); the innermost one, where the error was raised, is kept as context.
    pub fn in_operator(mut self, operator: &str) -> Self {
        match self.0.operator.as_deref() {
            Some(current) if current == operator => {}
            Some(_) => {
                let inner = self.0.operator.replace(operator.to_owned());
                if self.0.raised_in.is_none() {
                    self.0.raised_in = inner;
                } else if self.0.raised_in.as_deref() == Some(operator) {
                    // Raised in the operator the error leaves by (`copy_` failing in its own
                    // check under a functional `copy` it called): no inner place to name.
                    self.0.raised_in = None;
                }
            }
            None => self.0.operator = Some(operator.to_owned()),
        }
        self
    }

    /// Prepends context to the message (keeps kind and operator).
    pub fn with_context(mut self, context: impl fmt::Display) -> Self {
        self.0.message = format!("{context}{}", self.0.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.kind, self.0.message)?;
        match (&self.0.operator, &self.0.raised_in) {
            (Some(op), Some(inner)) => write!(f, " (in operator {op}, raised in {inner})"),
            (Some(op), None) => write!(f, " (in operator {op})"),
            _ => Ok(()),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

/// The result type of every fallible switchyard operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Returns early with an [`Error`] of the given kind and a formatted message.
///
/// `bail!(IndexError, "Dimension out of range ({})", d)`.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return ::core::result::Result::Err($crate::Error::new($crate::ErrorKind::$kind, ::std::format!($($arg)*)))
    };
}

/// `TORCH_CHECK`: returns a `RuntimeError` with the formatted message unless `cond` holds.
#[macro_export]
macro_rules! torch_check {
    ($cond:expr, $($arg:tt)*) => {
        if !($cond) { $crate::bail!(RuntimeError, $($arg)*); }
    };
}

/// `TORCH_CHECK_INDEX`: like [`torch_check!`] but an `IndexError`.
#[macro_export]
macro_rules! torch_check_index {
    ($cond:expr, $($arg:tt)*) => {
        if !($cond) { $crate::bail!(IndexError, $($arg)*); }
    };
}

/// `TORCH_CHECK_VALUE`: like [`torch_check!`] but a `ValueError`.
#[macro_export]
macro_rules! torch_check_value {
    ($cond:expr, $($arg:tt)*) => {
        if !($cond) { $crate::bail!(ValueError, $($arg)*); }
    };
}

/// `TORCH_CHECK_TYPE`: like [`torch_check!`] but a `TypeError`.
#[macro_export]
macro_rules! torch_check_type {
    ($cond:expr, $($arg:tt)*) => {
        if !($cond) { $crate::bail!(TypeError, $($arg)*); }
    };
}

/// `TORCH_CHECK_NOT_IMPLEMENTED`: like [`torch_check!`] but a `NotImplementedError`.
#[macro_export]
macro_rules! torch_check_not_implemented {
    ($cond:expr, $($arg:tt)*) => {
        if !($cond) { $crate::bail!(NotImplementedError, $($arg)*); }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fails(x: i64) -> Result<i64> {
        crate::torch_check_index!(x >= 0, "Dimension out of range (got {x})");
        Ok(x)
    }

    #[test]
    fn macros_build_errors_of_the_right_kind() {
        let e = fails(-1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IndexError);
        assert_eq!(e.message(), "Dimension out of range (got -1)");
        assert_eq!(fails(3).unwrap(), 3);
    }

    #[test]
    fn the_outermost_operator_is_named_and_the_innermost_kept() {
        // matmul (the user's call) failing inside mm, reached through redispatches of each.
        let e = Error::runtime("boom")
            .in_operator("aten::mm")
            .in_operator("aten::mm")
            .in_operator("aten::matmul")
            .in_operator("aten::matmul");
        assert_eq!(e.operator(), Some("aten::matmul"));
        assert_eq!(e.raised_in(), Some("aten::mm"));
        assert_eq!(
            e.to_string(),
            "RuntimeError: boom (in operator aten::matmul, raised in aten::mm)"
        );
        // Three levels: the innermost stays the place it was raised.
        let e = e.in_operator("aten::outer");
        assert_eq!(e.operator(), Some("aten::outer"));
        assert_eq!(e.raised_in(), Some("aten::mm"));
        // One operator only: no inner context.
        let e = Error::runtime("boom").in_operator("aten::mm");
        assert_eq!(e.to_string(), "RuntimeError: boom (in operator aten::mm)");
        assert_eq!(e.raised_in(), None);
        // Back out through the operator it was raised in: named once.
        let e = Error::runtime("boom")
            .in_operator("aten::copy_")
            .in_operator("aten::copy")
            .in_operator("aten::copy_");
        assert_eq!(
            e.to_string(),
            "RuntimeError: boom (in operator aten::copy_)"
        );
        assert_eq!(std::mem::size_of::<Result<u64>>(), 16);
    }
}
