//! torchgen's schema validation rules (`Arguments.__post_init__`,
//! `FunctionSchema.__post_init__`), numbered V1–V12 as in `codegen.md` §1.9.

use crate::model::{Annotation, Argument, FunctionSchema, SchemaKind, Type};
use crate::parse::SchemaError;
use crate::query::multiple_alias_error;

/// Where the parts of a parsed schema start (byte offsets into its text).
#[derive(Debug, Default)]
pub(crate) struct Spans {
    /// The overload name (just after the operator name when there is none).
    pub(crate) overload: usize,
    /// Each argument.
    pub(crate) arguments: Vec<usize>,
    /// Each return.
    pub(crate) returns: Vec<usize>,
    /// The return list.
    pub(crate) returns_start: usize,
}

/// What a rule violation points at; the parser turns it into a byte offset.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Culprit {
    /// The overload name.
    Overload,
    /// The argument with this index.
    Argument(usize),
    /// The return with this index.
    Return(usize),
    /// The return list as a whole.
    Returns,
}

/// A broken rule: torchgen's message, what it points at, and what was expected there.
#[derive(Debug)]
pub(crate) struct RuleViolation {
    message: String,
    culprit: Culprit,
    expected: Option<String>,
}

impl RuleViolation {
    fn new(message: impl Into<String>, culprit: Culprit) -> Self {
        RuleViolation {
            message: message.into(),
            culprit,
            expected: None,
        }
    }

    fn expecting(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }

    /// An error pointing into the parsed text.
    pub(crate) fn locate(self, spans: &Spans) -> SchemaError {
        let position = match self.culprit {
            Culprit::Overload => Some(spans.overload),
            Culprit::Argument(i) => spans.arguments.get(i).copied(),
            Culprit::Return(i) => spans.returns.get(i).copied(),
            Culprit::Returns => Some(spans.returns_start),
        };
        SchemaError {
            message: self.message,
            position,
            expected: self.expected,
        }
    }

    /// An error for a schema that has no source text.
    fn unlocated(self) -> SchemaError {
        SchemaError {
            message: self.message,
            position: None,
            expected: self.expected,
        }
    }
}

type Rule = Result<(), RuleViolation>;

/// torchgen prints a missing annotation as `None`.
fn annotation_text(annotation: Option<&Annotation>) -> String {
    annotation.map_or_else(|| "None".to_owned(), ToString::to_string)
}

impl FunctionSchema {
    /// Checks a schema against torchgen's rules, for schemas built in code (parsing already
    /// applies them and reports positions).
    ///
    /// Besides the rules of [`FunctionSchema::parse`], this checks what the parser guarantees by
    /// construction: arguments are ordered positional, kwarg-only, out; out arguments are
    /// kwarg-only; annotations sit only on `Tensor`, `Tensor?` and `Tensor[]`.
    pub fn validate(&self) -> Result<(), SchemaError> {
        self.check_structure()
            .and_then(|()| self.check_argument_rules())
            .and_then(|()| self.check_schema_rules())
            .map_err(RuleViolation::unlocated)
    }

    fn check_structure(&self) -> Rule {
        let rank = |a: &Argument| match (a.kwarg_only, a.is_out) {
            (false, false) => 0,
            (true, false) => 1,
            (_, true) => 2,
        };
        for (i, pair) in self.arguments.windows(2).enumerate() {
            if rank(&pair[0]) > rank(&pair[1]) {
                return Err(RuleViolation::new(
                    format!(
                        "argument '{}' is out of order: arguments must be positional, then \
                         kwarg-only, then out",
                        pair[1].name
                    ),
                    Culprit::Argument(i + 1),
                ));
            }
        }
        if let Some(i) = self
            .arguments
            .iter()
            .position(|a| a.is_out && !a.kwarg_only)
        {
            return Err(RuleViolation::new(
                format!(
                    "out argument '{}' must be kwarg-only",
                    self.arguments[i].name
                ),
                Culprit::Argument(i),
            ));
        }
        let annotated = self
            .arguments
            .iter()
            .map(|a| (&a.ty, &a.annotation))
            .chain(self.returns.iter().map(|r| (&r.ty, &r.annotation)));
        for (ty, annotation) in annotated {
            if annotation.is_some() && !annotatable(ty) {
                return Err(RuleViolation::new(
                    format!("annotation on non-Tensor type: {ty}"),
                    Culprit::Overload,
                ));
            }
        }
        Ok(())
    }

    /// The rules torchgen checks while building the argument list, before it parses the
    /// returns: one TensorOptions window at most (1.3) and V10.
    pub(crate) fn check_argument_rules(&self) -> Rule {
        if let Some(second) = self.tensor_options_windows().nth(1) {
            return Err(RuleViolation::new(
                "tensor options arguments can only appear once",
                Culprit::Argument(second.start),
            )
            .expecting("a single dtype, layout, device, pin_memory group"));
        }
        // V10
        let mutable_pre_self: Vec<String> = self
            .pre_self_positional()
            .iter()
            .filter(|a| a.is_write())
            .map(ToString::to_string)
            .collect();
        if !mutable_pre_self.is_empty() {
            return Err(RuleViolation::new(
                format!(
                    "mutable pre_self_positional arguments are not currently supported in the \
                     schema: [{}]",
                    mutable_pre_self.join(", ")
                ),
                Culprit::Argument(0),
            )
            .expecting("no written (`!`) positional argument before `self`"));
        }
        Ok(())
    }

    /// torchgen's `FunctionSchema.__post_init__` (V1–V9, in its order), then the two checks
    /// torchgen only makes when it is later asked for the kind or the aliased return names.
    pub(crate) fn check_schema_rules(&self) -> Rule {
        let outs = self.out_arguments();
        let out_start = self.arguments.len() - outs.len();

        // V1
        for (i, (arg, ret)) in outs.iter().zip(&self.returns).enumerate() {
            if arg.annotation != ret.annotation {
                return Err(RuleViolation::new(
                    format!(
                        "Out arguments must have matching return Tensor; furthermore, the \
                         ith-argument needs to correspond to the ith return. \
                         arg.annotation={}, ret.annotation={}",
                        annotation_text(arg.annotation.as_ref()),
                        annotation_text(ret.annotation.as_ref())
                    ),
                    Culprit::Return(i),
                )
                .expecting(format!(
                    "the annotation `({})` of out argument '{}'",
                    annotation_text(arg.annotation.as_ref()),
                    arg.name
                )));
            }
        }

        // V2
        for arg in self.post_self_positional().filter(|a| a.is_write()) {
            if let Some(i) = self
                .returns
                .iter()
                .position(|r| r.annotation == arg.annotation)
            {
                return Err(RuleViolation::new(
                    format!(
                        "If you have a schema with mutable positional args, we expect them to \
                         not be returned. schema: {self}"
                    ),
                    Culprit::Return(i),
                )
                .expecting(format!(
                    "a return not aliasing positional argument '{}' (did you forget `*` before \
                     an out argument?)",
                    arg.name
                )));
            }
        }

        // V3
        let first_is_write = self.returns.first().is_some_and(|r| r.is_write());
        if let Some(i) = self
            .returns
            .iter()
            .position(|r| r.is_write() != first_is_write)
        {
            return Err(RuleViolation::new(
                format!(
                    "NativeFunctions must have either only mutable returns, or only immutable \
                     returns. Found: {self}"
                ),
                Culprit::Return(i),
            )
            .expecting(if first_is_write {
                "a mutable return"
            } else {
                "an immutable return"
            }));
        }

        // V4
        let self_like = |a: &&Argument| a.is_out || (a.name == "self" && !a.kwarg_only);
        for (i, ret) in self
            .returns
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_write())
        {
            if !self
                .arguments
                .iter()
                .filter(self_like)
                .any(|a| a.annotation == ret.annotation)
            {
                return Err(RuleViolation::new(
                    "All mutable returns must be aliased either to a keyword argument, or to \
                     \"self\". Did you forget to mark an out argument as keyword-only?",
                    Culprit::Return(i),
                )
                .expecting("the annotation of an out argument or of `self`"));
            }
        }

        // V5, V6
        if !outs.is_empty() {
            if let Some(j) = outs.iter().position(|a| !a.ty.is_tensor()) {
                if !self.returns.is_empty() {
                    return Err(RuleViolation::new(
                        "out= ops that accept tensor lists as out arguments are expected to have \
                         no return type (since you can't do method chaining on them)",
                        Culprit::Returns,
                    )
                    .expecting(format!(
                        "`()` (out argument '{}' is not a plain Tensor)",
                        outs[j].name
                    )));
                }
            } else {
                let non_scratch = outs
                    .iter()
                    .filter(|a| !a.name.starts_with("_scratch_"))
                    .count();
                if non_scratch != self.returns.len() {
                    return Err(RuleViolation::new(
                        format!(
                            "Must return as many arguments as there are out arguments, or no \
                             return at all. Got {non_scratch} non-scratch out args and {} returns",
                            self.returns.len()
                        ),
                        Culprit::Returns,
                    )
                    .expecting(format!(
                        "one return per non-scratch out argument ({non_scratch} in all)"
                    )));
                }
            }
        }

        // V7
        if self.name.name.inplace {
            let self_arg = self.self_index().map(|i| (i, &self.arguments[i]));
            let Some((self_ix, self_arg)) = self_arg.filter(|(_, a)| a.is_write()) else {
                return Err(RuleViolation::new(
                    format!(
                        "Inplace op {} must have a self argument with a mutable annotation",
                        self.name
                    ),
                    self_arg.map_or(Culprit::Overload, |(i, _)| Culprit::Argument(i)),
                )
                .expecting("a written `self` argument such as `Tensor(a!) self`"));
            };
            if self_arg.ty.is_tensor() {
                let returns_self =
                    matches!(self.returns.as_slice(), [r] if r.annotation == self_arg.annotation);
                if !returns_self {
                    return Err(RuleViolation::new(
                        format!("Inplace op {} with Tensor self must return self", self.name),
                        Culprit::Returns,
                    )
                    .expecting(format!(
                        "the single return `Tensor({})`",
                        annotation_text(self_arg.annotation.as_ref())
                    )));
                }
            } else if !self.returns.is_empty() {
                return Err(RuleViolation::new(
                    format!(
                        "Inplace op {} with non-Tensor self must have no returns",
                        self.name
                    ),
                    Culprit::Returns,
                )
                .expecting(format!(
                    "`()` (self is a {}, not a plain Tensor)",
                    self.arguments[self_ix].ty
                )));
            }
        }

        // torchgen asserts this inside `kind()`, which V8 and V9 (and all of codegen) call.
        if self.name.name.inplace && !outs.is_empty() {
            return Err(RuleViolation::new(
                "A schema cannot be both out= and inplace",
                Culprit::Argument(out_start),
            )
            .expecting("no out arguments in an in-place operator"));
        }

        // V8
        if let Some(window) = self.tensor_options()
            && self.kind() != SchemaKind::Functional
        {
            return Err(RuleViolation::new(
                format!(
                    "Found an operator that is not functional or out variant, but has tensor \
                     options arguments.This is not allowed- tensor options arguments are only \
                     allowed for factory functions.schema: {self}"
                ),
                Culprit::Argument(window.start),
            )
            .expecting("no dtype, layout, device, pin_memory group in a non-functional operator"));
        }

        // V9
        if self.name.overload_name.contains("functional") && self.kind() != SchemaKind::Functional {
            return Err(RuleViolation::new(
                format!(
                    "Found an operator that is not functional, but its overload contains the \
                     string 'functional'.This is a special keyword in the codegen, please use a \
                     different overload name.schema: {self}"
                ),
                Culprit::Overload,
            )
            .expecting("an overload name without `functional`"));
        }

        // V11
        for (i, ret) in self.returns.iter().enumerate() {
            let aliased: Vec<&Argument> = self
                .arguments
                .iter()
                .filter(|a| a.annotation.is_some() && a.annotation == ret.annotation)
                .collect();
            if aliased.len() > 1 {
                let error = multiple_alias_error(ret, &aliased);
                return Err(RuleViolation::new(error.message, Culprit::Return(i))
                    .expecting("a return annotation shared with exactly one argument"));
            }
        }
        Ok(())
    }
}

/// The types an alias annotation may sit on.
fn annotatable(ty: &Type) -> bool {
    ty.is_tensor()
        || ty.is_optional_tensor()
        || matches!(ty, Type::List { elem, size: None } if elem.is_tensor())
}
