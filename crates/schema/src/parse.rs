//! The parser: torchgen's regular expressions and string splitting, re-implemented by hand so
//! that every error can say where it happened.
//!
//! Every level (annotation, type, argument, return, operator name, schema) checks that printing
//! what it parsed gives back its input, exactly like torchgen, so the printed form is the only
//! accepted spelling and the error for a non-canonical spelling is `"<printed> != <input>"`.

use std::fmt;

use crate::model::{
    Annotation, Argument, BaseOperatorName, BaseType, FunctionSchema, OperatorName, Return, Type,
};
use crate::print::AnnotatedType;
use crate::validate::Spans;

/// An error from parsing or validating a schema.
///
/// `message` is torchgen's text wherever torchgen has one, so it can be compared with PyTorch's;
/// `position` and `expected` add what torchgen does not say: where in the input the problem was
/// found and what should have been there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    /// The error message (torchgen's wording where it has one).
    pub message: String,
    /// Byte offset into the parsed text where the problem was found, when known.
    pub position: Option<usize>,
    /// What was expected at `position`, when known (`` "` -> `" ``, `"a type"`, ...).
    pub expected: Option<String>,
}

impl SchemaError {
    /// An error with a message only.
    pub fn new(message: impl Into<String>) -> Self {
        SchemaError {
            message: message.into(),
            position: None,
            expected: None,
        }
    }

    fn at(mut self, position: usize) -> Self {
        self.position = Some(position);
        self
    }

    fn expecting(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        match (self.position, &self.expected) {
            (Some(p), Some(e)) => write!(f, " (at position {p}: expected {e})"),
            (Some(p), None) => write!(f, " (at position {p})"),
            (None, Some(e)) => write!(f, " (expected {e})"),
            (None, None) => Ok(()),
        }
    }
}

impl std::error::Error for SchemaError {}

/// What an unknown type name is reported as expecting.
const EXPECTED_TYPE: &str = "a type such as Tensor, int, float, bool, str, Scalar, ...";
const EXPECTED_LETTER: &str = "a single lowercase letter (an alias set)";
const ARROW: &str = " -> ";
const CUSTOM_CLASS_PREFIX: &str = "__torch__.torch.classes.";
/// The `i`-prefixed dunder names that denote in-place operators (PEP 203's augmented
/// assignments).
const AUGMENTED_ASSIGNMENT_NAMES: [&str; 11] = [
    "add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or",
];

impl FunctionSchema {
    /// Parses a schema such as `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) ->
    /// Tensor`, applies torchgen's validation rules (see [`FunctionSchema::validate`]) and checks
    /// that printing the result reproduces `s` exactly.
    pub fn parse(s: &str) -> Result<FunctionSchema, SchemaError> {
        let decl = split_declaration(s)?;
        let name = parse_operator_name(decl.name, decl.name_offset)?;
        let (arguments, arg_offsets) = parse_arguments(decl.args, decl.args_offset)?;
        let mut spans = Spans {
            overload: decl.name_offset + decl.name.find('.').map_or(decl.name.len(), |dot| dot + 1),
            arguments: arg_offsets,
            returns: Vec::new(),
            returns_start: decl.returns_offset,
        };
        let mut schema = FunctionSchema {
            name,
            arguments,
            returns: Vec::new(),
        };
        // torchgen checks the argument-level rules when it builds the argument list, before it
        // looks at the returns.
        schema
            .check_argument_rules()
            .map_err(|v| v.locate(&spans))?;
        if decl.returns.is_empty() {
            return Err(invalid_schema(s)
                .at(decl.returns_offset)
                .expecting("a return type or `()`"));
        }
        (schema.returns, spans.returns) = parse_returns(decl.returns, decl.returns_offset)?;
        schema.check_schema_rules().map_err(|v| v.locate(&spans))?;
        check_round_trip(&schema.to_string(), s, 0, "schema")?;
        check_names_present(&schema, &spans)?;
        Ok(schema)
    }
}

/// torchgen accepts `Tensor ` as an argument or return whose name is the empty string; we do
/// not. Checked last, so that every input torchgen rejects fails with torchgen's message.
fn check_names_present(schema: &FunctionSchema, spans: &Spans) -> Result<(), SchemaError> {
    let name_position = |start: Option<&usize>, ty: &Type, annotation: Option<&Annotation>| {
        start.map(|start| start + AnnotatedType(ty, annotation).to_string().len() + 1)
    };
    for (i, arg) in schema.arguments.iter().enumerate() {
        if arg.name.is_empty() {
            return Err(SchemaError {
                message: format!("missing argument name in '{arg}'"),
                position: name_position(spans.arguments.get(i), &arg.ty, arg.annotation.as_ref()),
                expected: Some("an argument name".to_owned()),
            });
        }
    }
    for (i, ret) in schema.returns.iter().enumerate() {
        if ret.name.as_deref() == Some("") {
            return Err(SchemaError {
                message: format!("missing return name in '{ret}'"),
                position: name_position(spans.returns.get(i), &ret.ty, ret.annotation.as_ref()),
                expected: Some("a return name after the space".to_owned()),
            });
        }
    }
    Ok(())
}

fn invalid_schema(s: &str) -> SchemaError {
    SchemaError::new(format!("Invalid function schema: {s}"))
}

impl OperatorName {
    /// Parses `name`, `name.overload` or `ns::name.overload` (everything after the first `.` is
    /// the overload name).
    pub fn parse(s: &str) -> Result<OperatorName, SchemaError> {
        parse_operator_name(s, 0)
    }
}

impl Type {
    /// Parses a type such as `int[]?`, `Tensor?[]`, `SymInt[2]` or
    /// `__torch__.torch.classes.ns.Class` (alias annotations belong to arguments and returns,
    /// not to types).
    pub fn parse(s: &str) -> Result<Type, SchemaError> {
        parse_type(s, 0)
    }
}

impl Annotation {
    /// Parses the inside of an alias annotation: `a`, `a!`, `a|b`, `a -> *`, `a! -> a|b`.
    pub fn parse(s: &str) -> Result<Annotation, SchemaError> {
        parse_annotation(s, 0)
    }
}

/// The three parts of `name(args) -> returns`, with their offsets.
struct Declaration<'a> {
    name: &'a str,
    name_offset: usize,
    args: &'a str,
    args_offset: usize,
    returns: &'a str,
    returns_offset: usize,
}

/// torchgen searches for `[^(]+\((.*)\) -> (.*)`: the name starts at the first character that
/// is not `(` and runs to the next `(`; the arguments run to the last `) -> `.
fn split_declaration(s: &str) -> Result<Declaration<'_>, SchemaError> {
    // `.` in torchgen's regex does not match a newline, so a schema is a single line.
    if let Some(newline) = s.find('\n') {
        return Err(invalid_schema(s)
            .at(newline)
            .expecting("a schema on a single line"));
    }
    let name_offset = s.find(|c| c != '(').unwrap_or(s.len());
    let Some(open) = s[name_offset..].find('(').map(|p| name_offset + p) else {
        let expected = if name_offset == s.len() {
            "an operator name"
        } else {
            "`(` after the operator name"
        };
        return Err(invalid_schema(s).at(s.len()).expecting(expected));
    };
    let args_offset = open + 1;
    let rest = &s[args_offset..];
    let Some(close) = rest.rfind(") -> ") else {
        return Err(match rest.rfind(')') {
            Some(p) => invalid_schema(s)
                .at(args_offset + p + 1)
                .expecting("` -> ` between the arguments and the returns"),
            None => invalid_schema(s)
                .at(s.len())
                .expecting("`)` closing the argument list"),
        });
    };
    let returns_offset = args_offset + close + ") -> ".len();
    Ok(Declaration {
        name: &s[name_offset..open],
        name_offset,
        args: &rest[..close],
        args_offset,
        returns: &s[returns_offset..],
        returns_offset,
    })
}

/// `s` split on `sep`, each piece with its offset (relative to `s`).
fn split_with_offsets<'a>(s: &'a str, sep: &'a str) -> impl Iterator<Item = (usize, &'a str)> {
    let mut start = 0;
    s.split(sep).map(move |piece| {
        let offset = start;
        start += piece.len() + sep.len();
        (offset, piece)
    })
}

fn parse_operator_name(s: &str, offset: usize) -> Result<OperatorName, SchemaError> {
    let (name, overload_name) = s.split_once('.').unwrap_or((s, ""));
    let (namespace, base) = parse_base_operator_name(name, offset)?;
    let op = OperatorName {
        namespace,
        name: base,
        overload_name: overload_name.to_owned(),
    };
    check_round_trip(&op.to_string(), s, offset, "operator name")?;
    Ok(op)
}

/// Parses `[ns::]base` (the part of an operator name before the overload).
fn parse_base_operator_name(
    op: &str,
    offset: usize,
) -> Result<(Option<String>, BaseOperatorName), SchemaError> {
    let empty = |at: usize| {
        SchemaError::new("operator name cannot be empty")
            .at(at)
            .expecting("an operator name")
    };
    if op.is_empty() {
        return Err(empty(offset));
    }
    if op.ends_with("_out") {
        return Err(SchemaError::new(
            "_out suffix is reserved and not permitted for operator names; \
             did you mean to specify an out overload name instead?",
        )
        .at(offset + op.len() - "_out".len())
        .expecting("an overload name such as `.out` instead of an `_out` suffix"));
    }
    let (namespace, name, name_offset) = match op.rsplit_once("::") {
        Some((ns, name)) => {
            if let Some(inner) = ns.find("::") {
                return Err(SchemaError::new(format!(
                    "nested operator namespaces are not supported: {op}"
                ))
                .at(offset + inner)
                .expecting("a single `namespace::` prefix"));
            }
            // An empty namespace is dropped, so `::foo` fails the round trip as in torchgen.
            let ns = (!ns.is_empty()).then(|| ns.to_owned());
            (ns, name, offset + op.len() - name.len())
        }
        None => (None, op, offset),
    };
    if name.is_empty() {
        return Err(empty(name_offset));
    }

    let mut base = name;
    let mut inplace = false;
    let dunder = name
        .strip_prefix("__")
        .and_then(|n| n.strip_suffix("__"))
        .filter(|inner| !inner.is_empty() && !inner.contains('_'));
    if let Some(inner) = dunder {
        base = inner;
        match inner.strip_prefix('i') {
            Some(rest) if AUGMENTED_ASSIGNMENT_NAMES.contains(&rest) => {
                inplace = true;
                base = rest;
            }
            Some(_) => {
                return Err(SchemaError::new(format!(
                    "unexpected dunder method starting with 'i': {op}"
                ))
                .at(name_offset + 2)
                .expecting(
                    "an in-place dunder such as `__iadd__`, or a name not starting with `i`",
                ));
            }
            None => {}
        }
    } else if let Some(stripped) = name.strip_suffix('_') {
        inplace = true;
        base = stripped;
    }
    let dunder_method = dunder.is_some();

    let functional_overload = match base.strip_suffix("_functional") {
        Some(stripped) => {
            if dunder_method || inplace {
                return Err(SchemaError::new(format!(
                    "functional overload cannot be a dunder method or inplace: {op}"
                ))
                .at(name_offset + stripped.len())
                .expecting("a name ending in `_functional` without a trailing `_`"));
            }
            base = stripped;
            true
        }
        None => false,
    };

    let parsed = BaseOperatorName {
        base: base.to_owned(),
        inplace,
        dunder_method,
        functional_overload,
    };
    let printed = match &namespace {
        Some(ns) => format!("{ns}::{parsed}"),
        None => parsed.to_string(),
    };
    check_round_trip(&printed, op, offset, "operator name")?;
    Ok((namespace, parsed))
}

/// Where an argument is in the list: torchgen's `_preparse` buckets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bucket {
    Positional,
    KwargOnly,
    Out,
}

/// Parses the text between the parentheses; returns the arguments and the offset of each.
fn parse_arguments(s: &str, offset: usize) -> Result<(Vec<Argument>, Vec<usize>), SchemaError> {
    let mut arguments = Vec::new();
    let mut offsets = Vec::new();
    let mut bucket = Bucket::Positional;
    let mut previous: Option<&str> = None;
    for (rel, piece) in split_with_offsets(s, ", ") {
        let at = offset + rel;
        if piece.is_empty() {
            continue;
        }
        if piece == "*" {
            if bucket != Bucket::Positional {
                return Err(SchemaError::new(
                    "invalid syntax: kwarg-only specifier * can only occur once",
                )
                .at(at)
                .expecting("an argument (`*` was already given)"));
            }
            bucket = Bucket::KwargOnly;
            previous = Some(piece);
            continue;
        }
        let mut arg = parse_argument(piece, at).map_err(|e| {
            match previous.filter(|p| !piece.contains(' ') && splits_a_list_default(p)) {
                // `int[2] x=[1, 1]` was split inside its default: point at that separator.
                Some(_) => SchemaError {
                    position: Some(at - ", ".len()),
                    expected: Some("a list default without spaces, such as `[1,1]`".to_owned()),
                    ..e
                },
                None => e,
            }
        })?;
        if arg.is_write() {
            if bucket == Bucket::KwargOnly {
                bucket = Bucket::Out;
            }
        } else if bucket == Bucket::Out {
            return Err(SchemaError::new(format!(
                "non-mutable argument '{}' cannot follow mutable out arguments",
                arg.name
            ))
            .at(at)
            .expecting(
                "a mutable out argument such as `Tensor(b!) out` (out arguments come last)",
            ));
        }
        arg.kwarg_only = bucket != Bucket::Positional;
        arg.is_out = bucket == Bucket::Out;
        arguments.push(arg);
        offsets.push(at);
        previous = Some(piece);
    }
    Ok((arguments, offsets))
}

/// Whether `piece` ends inside an unclosed `[` of a default value.
fn splits_a_list_default(piece: &str) -> bool {
    piece
        .split_once('=')
        .is_some_and(|(_, default)| default.matches('[').count() > default.matches(']').count())
}

fn parse_argument(arg: &str, offset: usize) -> Result<Argument, SchemaError> {
    let illegal = || SchemaError::new(format!("illegal argument '{arg}'"));
    if !arg.contains(' ') {
        return Err(illegal()
            .at(offset)
            .expecting("a type and a name separated by a space"));
    }
    let (type_and_annotation, name, default) = match arg.split_once('=') {
        Some((lhs, default)) => {
            if let Some(second) = default.find('=') {
                return Err(SchemaError::new(format!(
                    "illegal argument with default value: '{arg}'"
                ))
                .at(offset + lhs.len() + 1 + second)
                .expecting("a default value without `=` (only one `=` per argument)"));
            }
            let Some((ty, name)) = lhs.rsplit_once(' ') else {
                return Err(illegal()
                    .at(offset + lhs.len())
                    .expecting("a type and a name before the default value"));
            };
            // torchgen prints no `=` for an empty default, so `int x=` fails the round trip.
            (ty, name, (!default.is_empty()).then(|| default.to_owned()))
        }
        None => match arg.rsplit_once(' ') {
            Some((ty, name)) => (ty, name, None),
            None => return Err(illegal().at(offset)),
        },
    };
    let (ty, annotation) = parse_annotated_type(type_and_annotation, offset)?;
    let parsed = Argument {
        name: name.to_owned(),
        ty,
        default,
        annotation,
        kwarg_only: false,
        is_out: false,
    };
    check_round_trip(&parsed.to_string(), arg, offset, "argument")?;
    Ok(parsed)
}

fn parse_returns(s: &str, offset: usize) -> Result<(Vec<Return>, Vec<usize>), SchemaError> {
    if s == "()" {
        return Ok((Vec::new(), Vec::new()));
    }
    let (inner, inner_offset) = match s.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) => (inner, offset + 1),
        None => (s, offset),
    };
    let mut returns = Vec::new();
    let mut offsets = Vec::new();
    for (rel, piece) in split_with_offsets(inner, ", ") {
        returns.push(parse_return(piece, inner_offset + rel)?);
        offsets.push(inner_offset + rel);
    }
    Ok((returns, offsets))
}

fn parse_return(ret: &str, offset: usize) -> Result<Return, SchemaError> {
    let (type_and_annotation, name) = match ret.rsplit_once(' ') {
        Some((ty, name)) => (ty, Some(name.to_owned())),
        None => (ret, None),
    };
    let (ty, annotation) = parse_annotated_type(type_and_annotation, offset)?;
    let parsed = Return {
        name,
        ty,
        annotation,
    };
    check_round_trip(&parsed.to_string(), ret, offset, "return")?;
    Ok(parsed)
}

/// Parses a type that may carry an alias annotation right after `Tensor` (`Tensor(a!)`,
/// `Tensor(a)?`, `Tensor(a -> *)[]`).
fn parse_annotated_type(s: &str, offset: usize) -> Result<(Type, Option<Annotation>), SchemaError> {
    const OPEN: &str = "Tensor(";
    // torchgen's `Tensor\((.+)\)(.*)`: the annotation runs to the last `)` and is not empty.
    let split = s.strip_prefix(OPEN).and_then(|rest| {
        let close = rest.rfind(')').filter(|&close| close > 0)?;
        Some((&rest[..close], &rest[close + 1..]))
    });
    let Some((annotation, suffix)) = split else {
        return Ok((parse_type(s, offset)?, None));
    };
    let ty = match suffix {
        "" => Type::Base(BaseType::Tensor),
        "?" => Type::Optional(Box::new(Type::Base(BaseType::Tensor))),
        "[]" => Type::List {
            elem: Box::new(Type::Base(BaseType::Tensor)),
            size: None,
        },
        _ => {
            return Err(SchemaError::new(format!(
                "unrecognized alias analysis form with Tensor: {suffix}"
            ))
            .at(offset + s.len() - suffix.len())
            .expecting("`?`, `[]` or nothing after the alias annotation"));
        }
    };
    let annotation = parse_annotation(annotation, offset + OPEN.len())?;
    Ok((ty, Some(annotation)))
}

fn parse_type(s: &str, offset: usize) -> Result<Type, SchemaError> {
    let ty = parse_type_unchecked(s, offset)?;
    check_round_trip(&ty.to_string(), s, offset, "type")?;
    Ok(ty)
}

/// torchgen tries a trailing `?` first, then a trailing `[N]`, so `int[]?` is an optional list
/// and `int?[]` a list of optionals.
fn parse_type_unchecked(s: &str, offset: usize) -> Result<Type, SchemaError> {
    if let Some(elem) = s.strip_suffix('?').filter(|e| !e.is_empty()) {
        return Ok(Type::Optional(Box::new(parse_type(elem, offset)?)));
    }
    if let Some((elem, size)) = s
        .strip_suffix(']')
        .and_then(|r| r.rsplit_once('['))
        .filter(|(elem, size)| !elem.is_empty() && size.bytes().all(|b| b.is_ascii_digit()))
    {
        let size = if size.is_empty() {
            None
        } else {
            let n: usize = size.parse().map_err(|_| {
                SchemaError::new(format!("list size too large: {s}"))
                    .at(offset + elem.len() + 1)
                    .expecting("a list size that fits in a usize")
            })?;
            // torchgen prints a size of 0 as `[]`, so `int[0]` fails the round trip.
            (n != 0).then_some(n)
        };
        return Ok(Type::List {
            elem: Box::new(parse_type(elem, offset)?),
            size,
        });
    }
    if let Some(class) = s.strip_prefix(CUSTOM_CLASS_PREFIX).filter(|c| {
        !c.is_empty()
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    }) {
        return Ok(Type::CustomClass(class.to_owned()));
    }
    match BaseType::from_name(s) {
        Some(base) => Ok(Type::Base(base)),
        None => Err(unrecognized_type(s, offset)),
    }
}

/// `unrecognized type <t>`, pointing at the most likely culprit inside `t`.
fn unrecognized_type(t: &str, offset: usize) -> SchemaError {
    let error = SchemaError::new(format!("unrecognized type {t}"));
    if let Some(comma) = t.find(',') {
        return error.at(offset + comma).expecting("`, ` between arguments");
    }
    if t.starts_with("Tensor(") && !t.contains(')') {
        // `Tensor(a -> *)` without a name is split at its last space.
        return error.at(offset + t.len()).expecting(
            "`)` closing the alias annotation (an annotation with ` -> ` must be followed by a name)",
        );
    }
    if let Some(space) = t.find(' ') {
        return error
            .at(offset + space)
            .expecting("a single space between the type and the name");
    }
    if let Some(paren) = t.find('(').filter(|&p| p > 0) {
        let at = offset + paren;
        return if t[paren..].starts_with("()") {
            error
                .at(at + 1)
                .expecting("an alias annotation such as `a` or `a!`")
        } else if t.starts_with("Tensor") {
            error
                .at(at)
                .expecting("the alias annotation right after `Tensor`, as in `Tensor(a)?`")
        } else {
            error
                .at(at)
                .expecting("a type; alias annotations only go on Tensor types")
        };
    }
    error.at(offset).expecting(EXPECTED_TYPE)
}

/// A hand-written matcher for torchgen's
/// `^([a-z])(\|[a-z])*(!?)( -> (\*|[a-z](\|[a-z])*))?$`, followed by its checks.
fn parse_annotation(s: &str, offset: usize) -> Result<Annotation, SchemaError> {
    let unrecognized = |at: usize, expected: &str| {
        SchemaError::new(format!("unrecognized alias annotation {s}"))
            .at(offset + at)
            .expecting(expected)
    };
    let bytes = s.as_bytes();
    let letter_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_lowercase);
    // The regex has no ambiguity, so matching greedily from the left is exact.
    let letters_from = |mut i: usize| -> Option<(Vec<String>, usize)> {
        if !letter_at(i) {
            return None;
        }
        let mut set = vec![s[i..=i].to_owned()];
        i += 1;
        while bytes.get(i) == Some(&b'|') && letter_at(i + 1) {
            set.push(s[i + 1..=i + 1].to_owned());
            i += 2;
        }
        Some((set, i))
    };

    let Some((before, mut i)) = letters_from(0) else {
        return Err(unrecognized(0, EXPECTED_LETTER));
    };
    let is_write = bytes.get(i) == Some(&b'!');
    if is_write {
        i += 1;
    }
    let mut after = Vec::new();
    if s[i..].starts_with(ARROW) {
        i += ARROW.len();
        if bytes.get(i) == Some(&b'*') {
            after.push("*".to_owned());
            i += 1;
        } else {
            let Some((set, end)) = letters_from(i) else {
                return Err(unrecognized(
                    i,
                    "`*` or a single lowercase letter (an alias set)",
                ));
            };
            after = set;
            i = end;
        }
    }
    if i != s.len() {
        let expected = if !after.is_empty() {
            "`|` or the end of the annotation"
        } else if is_write {
            "` -> ` or the end of the annotation"
        } else {
            "`|`, `!`, ` -> ` or the end of the annotation"
        };
        return Err(unrecognized(i, expected));
    }

    // The regex's repeated group captures only its last repetition, so a before-set of three or
    // more keeps its first and last elements and then fails the round trip.
    let before_is_a_set = before.len() > 1;
    let alias_set = match before.as_slice() {
        [first, .., last] => vec![first.clone(), last.clone()],
        _ => before,
    };
    if is_write && alias_set.len() > 1 {
        return Err(SchemaError::new(format!(
            "alias set larger than 1 is not mutable, got {s} instead."
        ))
        .at(offset + s.find('!').unwrap_or(0))
        .expecting("a single alias set before `!`"));
    }
    if before_is_a_set && after.len() > 1 {
        return Err(SchemaError::new(format!(
            "before alias set and after alias set cannot be larger than 1 at the same time, \
             got {s} instead."
        ))
        .at(offset)
        .expecting("a single alias set before or after ` -> `"));
    }
    let parsed = Annotation {
        alias_set,
        is_write,
        alias_set_after: after,
    };
    check_round_trip(&parsed.to_string(), s, offset, "annotation")?;
    Ok(parsed)
}

/// torchgen's round-trip assertion, `"<printed> != <input>"`, pointing at the first difference.
fn check_round_trip(
    printed: &str,
    input: &str,
    offset: usize,
    what: &str,
) -> Result<(), SchemaError> {
    if printed == input {
        return Ok(());
    }
    let diff = printed
        .char_indices()
        .zip(input.chars())
        .find(|&((_, p), i)| p != i)
        .map_or_else(|| printed.len().min(input.len()), |((at, _), _)| at);
    let expected = match &printed[diff..] {
        "" => format!("the end of the {what}"),
        tail => format!("`{}` (the canonical spelling)", excerpt(tail)),
    };
    Err(SchemaError::new(format!("{printed} != {input}"))
        .at(offset + diff)
        .expecting(expected))
}

fn excerpt(s: &str) -> String {
    const MAX_CHARS: usize = 24;
    match s.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_with_offsets_reports_piece_starts() {
        let pieces: Vec<_> = split_with_offsets("a, bc, , d", ", ").collect();
        assert_eq!(pieces, vec![(0, "a"), (3, "bc"), (7, ""), (9, "d")]);
    }

    #[test]
    fn round_trip_points_at_first_difference() {
        let e = check_round_trip("int[]", "int[0]", 7, "type").unwrap_err();
        assert_eq!(e.message, "int[] != int[0]");
        assert_eq!(e.position, Some(11));
        assert_eq!(e.expected.as_deref(), Some("`]` (the canonical spelling)"));
        let e = check_round_trip("int x", "int x=", 0, "argument").unwrap_err();
        assert_eq!(e.position, Some(5));
        assert_eq!(e.expected.as_deref(), Some("the end of the argument"));
    }

    #[test]
    fn list_default_detection() {
        assert!(splits_a_list_default("int[2] x=[1"));
        assert!(!splits_a_list_default("int[2] x=[1,1]"));
        assert!(!splits_a_list_default("int[2] x"));
    }
}
