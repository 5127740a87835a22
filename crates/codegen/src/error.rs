//! The error type of the yaml model.

use std::fmt;

/// One problem found in a yaml file.
///
/// `message` is torchgen's exact text wherever torchgen has one, so it can be compared with
/// PyTorch's. `line` is the 1-based line of the entry (torchgen's `__line__`) or of the YAML
/// node at fault; `func` is the entry's `func:` text as written, when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YamlError {
    /// The file name given to the parser.
    pub file: String,
    /// The 1-based line, when the problem belongs to a place in the file.
    pub line: Option<usize>,
    /// The `func:` text of the entry, when the problem belongs to an entry.
    pub func: Option<String>,
    /// The message (torchgen's wording).
    pub message: String,
    /// Extra detail torchgen does not give (for schema errors: where in the schema, and what was
    /// expected there).
    pub note: Option<String>,
}

impl YamlError {
    pub(crate) fn new(file: &str, line: Option<usize>, message: impl Into<String>) -> Self {
        YamlError {
            file: file.to_owned(),
            line,
            func: None,
            message: message.into(),
            note: None,
        }
    }

    pub(crate) fn with_func(mut self, func: Option<&str>) -> Self {
        self.func = func.map(str::to_owned);
        self
    }

    pub(crate) fn with_note(mut self, note: Option<String>) -> Self {
        self.note = note;
        self
    }
}

/// torchgen's layout: the message, then the context indented below it
/// (`in <file>:<line>:` and the `func:` text), plus our note when there is one.
impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(note) = &self.note {
            write!(f, "\n  ({note})")?;
        }
        match (self.line, &self.func) {
            (Some(line), Some(func)) => write!(f, "\n  in {}:{line}:\n    {func}", self.file),
            (Some(line), None) => write!(f, "\n  in {}:{line}", self.file),
            (None, Some(func)) => write!(f, "\n  in {}:\n    {func}", self.file),
            (None, None) => write!(f, "\n  in {}", self.file),
        }
    }
}

impl std::error::Error for YamlError {}
