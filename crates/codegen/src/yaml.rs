//! Loading a YAML file into a small tree that behaves like what torchgen sees.
//!
//! torchgen reads `native_functions.yaml` with PyYAML's safe loader, which follows YAML 1.1:
//! `yes`/`on` are booleans, `0755` is octal, and every mapping remembers the line it starts on
//! (torchgen's `__line__`). We drive `saphyr-parser`'s event stream ourselves instead of taking a
//! ready-made tree, so that scalars are resolved by those YAML 1.1 rules (the raw text and its
//! quoting style are still at hand) and so that every node keeps its 1-based line.
//!
//! torchgen's loader rejects a repeated mapping key and stops; we report it with torchgen's message,
//! keep the last value (PyYAML's own behaviour) and go on, so that the rest of the file is
//! still checked.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span, Tag};

use crate::pyrepr;

/// A loaded YAML value, with the Python type PyYAML would have produced.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    /// `~`, `null`, or an empty plain scalar.
    Null,
    /// `true`, `yes`, `on`, ... (YAML 1.1 spellings).
    Bool(bool),
    /// An integer (decimal, `0x`, `0b`, `0`-octal or sexagesimal).
    Int(i128),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A scalar PyYAML turns into another Python type (a timestamp); kept as written.
    Other(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in document order (repeated keys already collapsed, last value wins in the
    /// first key's position, as a Python dict does).
    Map(Vec<(Node, Node)>),
}

/// A value with the 1-based line it starts on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub(crate) value: Value,
    pub(crate) line: usize,
}

/// A problem found while loading: its message and line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LoadIssue {
    pub(crate) message: String,
    pub(crate) line: Option<usize>,
    /// Extra detail torchgen does not give.
    pub(crate) note: Option<String>,
}

/// The result of loading: the document (if the text is valid YAML) and the repeated-key
/// problems found on the way.
pub(crate) struct Loaded {
    pub(crate) root: Option<Node>,
    pub(crate) issues: Vec<LoadIssue>,
}

/// Aliases are expanded by copying; this bounds the total copied nodes so that a crafted file
/// cannot exhaust memory.
const ALIAS_NODE_BUDGET: usize = 1_000_000;

impl Node {
    /// The string, if the value is a string.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Python's `str()` of the value.
    pub(crate) fn py_str(&self) -> String {
        pyrepr::py_str(self)
    }

    /// Python's `repr()` of the value.
    pub(crate) fn py_repr(&self) -> String {
        pyrepr::py_repr(self)
    }

    /// Python's `type(value)` as printed (`<class 'str'>`).
    pub(crate) fn py_type(&self) -> &'static str {
        match &self.value {
            Value::Null => "<class 'NoneType'>",
            Value::Bool(_) => "<class 'bool'>",
            Value::Int(_) => "<class 'int'>",
            Value::Float(_) => "<class 'float'>",
            Value::Str(_) => "<class 'str'>",
            Value::Other(_) => "<class 'datetime.date'>",
            Value::Seq(_) => "<class 'list'>",
            Value::Map(_) => "<class 'dict'>",
        }
    }
}

/// Loads one YAML document. A syntax error ends loading and is the only issue returned; an
/// empty stream gives no root.
pub(crate) fn load(text: &str) -> Loaded {
    let mut builder = Builder::default();
    for event in Parser::new_from_str(text) {
        match event {
            Ok((event, span)) => {
                if let Err(issue) = builder.event(event, span) {
                    return Loaded {
                        root: None,
                        issues: vec![issue],
                    };
                }
            }
            Err(e) => {
                return Loaded {
                    root: None,
                    issues: vec![LoadIssue {
                        message: e.info().to_owned(),
                        line: Some(e.marker().line()),
                        note: None,
                    }],
                };
            }
        }
    }
    Loaded {
        root: builder.root,
        issues: builder.issues,
    }
}

enum Frame {
    Seq {
        items: Vec<Node>,
        line: usize,
        anchor: usize,
    },
    Map {
        entries: Vec<(Node, Node)>,
        /// Where each key of `entries` is, so that a repeated key is found without scanning
        /// the mapping (a scan per key made loading quadratic in the size of a mapping).
        index: HashMap<KeyId, usize>,
        pending_key: Option<Node>,
        line: usize,
        anchor: usize,
    },
}

/// A mapping key as a hashable value with [`Value`]'s equality: floats compare by value (so
/// `-0.0` is `0.0`), and NaN equals nothing, so it gets no id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum KeyId {
    Null,
    Bool(bool),
    Int(i128),
    Float(u64),
    Str(String),
    Other(String),
}

impl KeyId {
    /// The id of a scalar key; `None` for NaN (and for collections, which cannot be keys).
    fn of(value: &Value) -> Option<KeyId> {
        Some(match value {
            Value::Null => KeyId::Null,
            Value::Bool(b) => KeyId::Bool(*b),
            Value::Int(i) => KeyId::Int(*i),
            Value::Float(f) if f.is_nan() => return None,
            // `0.0 == -0.0`: both get the bits of `0.0`.
            Value::Float(f) => KeyId::Float(if *f == 0.0 { 0 } else { f.to_bits() }),
            Value::Str(s) => KeyId::Str(s.clone()),
            Value::Other(s) => KeyId::Other(s.clone()),
            Value::Seq(_) | Value::Map(_) => return None,
        })
    }
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    root: Option<Node>,
    documents: usize,
    alias_nodes: usize,
    issues: Vec<LoadIssue>,
}

impl Builder {
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), LoadIssue> {
        let line = span.start.line();
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(LoadIssue {
                        message:
                            "expected a single document in the stream, but found another document"
                                .to_owned(),
                        line: Some(line),
                        note: None,
                    });
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let value =
                    resolve_scalar(&text, style, tag.as_deref()).map_err(|message| LoadIssue {
                        message,
                        line: Some(line),
                        note: None,
                    })?;
                self.finish(Node { value, line }, anchor)?;
            }
            Event::SequenceStart(anchor, tag) => {
                check_collection_tag(tag.as_deref(), "seq", line)?;
                self.stack.push(Frame::Seq {
                    items: Vec::new(),
                    line,
                    anchor,
                });
            }
            Event::MappingStart(anchor, tag) => {
                check_collection_tag(tag.as_deref(), "map", line)?;
                self.stack.push(Frame::Map {
                    entries: Vec::new(),
                    index: HashMap::new(),
                    pending_key: None,
                    line,
                    anchor,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match self.stack.pop() {
                    Some(Frame::Seq {
                        items,
                        line,
                        anchor,
                    }) => (
                        Node {
                            value: Value::Seq(items),
                            line,
                        },
                        anchor,
                    ),
                    Some(Frame::Map {
                        entries,
                        line,
                        anchor,
                        ..
                    }) => (
                        Node {
                            value: Value::Map(entries),
                            line,
                        },
                        anchor,
                    ),
                    None => return Ok(()),
                };
                self.finish(node, anchor)?;
            }
            Event::Alias(id) => {
                let node = self.anchors.get(&id).cloned().ok_or_else(|| LoadIssue {
                    message: "found undefined alias".to_owned(),
                    line: Some(line),
                    note: None,
                })?;
                self.alias_nodes += count_nodes(&node);
                if self.alias_nodes > ALIAS_NODE_BUDGET {
                    return Err(LoadIssue {
                        message: "alias expansion exceeds the node budget".to_owned(),
                        line: Some(line),
                        note: None,
                    });
                }
                self.finish(Node { line, ..node }, 0)?;
            }
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
        Ok(())
    }

    /// Places a completed node into its parent (or makes it the document).
    fn finish(&mut self, node: Node, anchor: usize) -> Result<(), LoadIssue> {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                index,
                pending_key,
                line: map_line,
                ..
            }) => match pending_key.take() {
                None => {
                    if matches!(node.value, Value::Seq(_) | Value::Map(_)) {
                        return Err(LoadIssue {
                            message: "found unhashable key".to_owned(),
                            line: Some(node.line),
                            note: None,
                        });
                    }
                    *pending_key = Some(node);
                }
                Some(key) => {
                    let id = KeyId::of(&key.value);
                    let existing = id.as_ref().and_then(|id| index.get(id)).copied();
                    if let Some(slot) = existing.and_then(|i| entries.get_mut(i)) {
                        // torchgen's loader prints the mapping's 0-based start line.
                        self.issues.push(LoadIssue {
                            message: format!(
                                "Found a duplicate key in the yaml. key={}, line={}",
                                key.py_str(),
                                map_line.saturating_sub(1)
                            ),
                            line: Some(key.line),
                            note: Some(format!(
                                "the key is first given at line {}; the last value would be used",
                                slot.0.line
                            )),
                        });
                        slot.1 = node;
                    } else {
                        if let Some(id) = id {
                            index.insert(id, entries.len());
                        }
                        entries.push((key, node));
                    }
                }
            },
        }
        Ok(())
    }
}

fn count_nodes(node: &Node) -> usize {
    1 + match &node.value {
        Value::Seq(items) => items.iter().map(count_nodes).sum(),
        Value::Map(entries) => entries
            .iter()
            .map(|(k, v)| count_nodes(k) + count_nodes(v))
            .sum(),
        _ => 0,
    }
}

fn core_tag(tag: &Tag) -> Option<&str> {
    tag.is_yaml_core_schema().then_some(tag.suffix.as_str())
}

fn unknown_tag(tag: &Tag) -> String {
    format!(
        "could not determine a constructor for the tag '{}{}'",
        tag.handle, tag.suffix
    )
}

fn check_collection_tag(tag: Option<&Tag>, expected: &str, line: usize) -> Result<(), LoadIssue> {
    match tag {
        None => Ok(()),
        Some(t) if core_tag(t) == Some(expected) => Ok(()),
        Some(t) => Err(LoadIssue {
            message: unknown_tag(t),
            line: Some(line),
            note: None,
        }),
    }
}

/// Resolves a scalar the way PyYAML's safe loader does: quoted and block scalars are strings,
/// plain scalars go through YAML 1.1's implicit types, and `!!type` tags force a type.
fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    if let Some(tag) = tag {
        let bad = || format!("invalid value {text:?} for the tag '!!{}'", tag.suffix);
        return match core_tag(tag) {
            Some("str") => Ok(Value::Str(text.to_owned())),
            Some("null") => Ok(Value::Null),
            Some("bool") => parse_bool(text).map(Value::Bool).ok_or_else(bad),
            Some("int") => parse_int(text).map(Value::Int).ok_or_else(bad),
            Some("float") => parse_float(text).map(Value::Float).ok_or_else(bad),
            _ => Err(unknown_tag(tag)),
        };
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::Str(text.to_owned()));
    }
    Ok(resolve_plain(text))
}

fn resolve_plain(text: &str) -> Value {
    if matches!(text, "" | "~" | "null" | "Null" | "NULL") {
        return Value::Null;
    }
    if let Some(b) = parse_bool(text) {
        return Value::Bool(b);
    }
    if looks_like_float(text)
        && let Some(f) = parse_float(text)
    {
        return Value::Float(f);
    }
    if let Some(i) = parse_int(text) {
        return Value::Int(i);
    }
    if is_timestamp(text) {
        return Value::Other(text.to_owned());
    }
    Value::Str(text.to_owned())
}

fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => Some(true),
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

fn split_sign(text: &str) -> (i128, &str) {
    match text.as_bytes().first() {
        Some(b'-') => (-1, &text[1..]),
        Some(b'+') => (1, &text[1..]),
        _ => (1, text),
    }
}

fn all_digits(s: &str, radix: u32) -> bool {
    !s.is_empty() && s.chars().all(|c| c == '_' || c.is_digit(radix))
}

/// YAML 1.1 integers: `0b1010`, `0x1F`, `017` (octal), `1_000`, `1:30` (sexagesimal).
fn parse_int(text: &str) -> Option<i128> {
    let (sign, body) = split_sign(text);
    let digits = |s: &str, radix: u32| -> Option<i128> {
        let cleaned: String = s.chars().filter(|&c| c != '_').collect();
        if cleaned.is_empty() {
            return Some(0);
        }
        i128::from_str_radix(&cleaned, radix).ok()
    };
    if let Some(bin) = body.strip_prefix("0b") {
        return all_digits(bin, 2)
            .then(|| digits(bin, 2))
            .flatten()
            .map(|v| sign * v);
    }
    if let Some(hex) = body.strip_prefix("0x") {
        return all_digits(hex, 16)
            .then(|| digits(hex, 16))
            .flatten()
            .map(|v| sign * v);
    }
    if body == "0" {
        return Some(0);
    }
    if let Some(oct) = body.strip_prefix('0') {
        return all_digits(oct, 8)
            .then(|| digits(oct, 8))
            .flatten()
            .map(|v| sign * v);
    }
    if body.contains(':') {
        let mut parts = body.split(':');
        let first = parts.next()?;
        if !first.starts_with(|c: char| ('1'..='9').contains(&c)) || !all_digits(first, 10) {
            return None;
        }
        let mut value = digits(first, 10)?;
        for part in parts {
            if part.is_empty() || part.len() > 2 || !part.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            if part.len() == 2 && part.as_bytes()[0] > b'5' {
                return None;
            }
            value = value.checked_mul(60)?.checked_add(digits(part, 10)?)?;
        }
        return Some(sign * value);
    }
    if body.starts_with(|c: char| ('1'..='9').contains(&c)) && all_digits(body, 10) {
        return digits(body, 10).map(|v| sign * v);
    }
    None
}

/// YAML 1.1's float pattern (a `.` is required, unlike YAML 1.2: `1e3` is a string).
fn looks_like_float(text: &str) -> bool {
    let (_, body) = split_sign(text);
    if matches!(body, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    if matches!(text, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let Some((int_part, rest)) = body.split_once('.') else {
        return false;
    };
    let (frac, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let exp_ok = exp.is_none_or(|e| {
        let mut chars = e.chars();
        matches!(chars.next(), Some('+' | '-')) && {
            let digits = chars.as_str();
            !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
        }
    });
    let frac_ok = frac.chars().all(|c| c == '_' || c.is_ascii_digit());
    let int_ok = if int_part.is_empty() {
        // `.5` is a float but `+.5` is not, and the fraction must start with a digit.
        body.len() == text.len() && frac.starts_with(|c: char| c.is_ascii_digit())
    } else if int_part.contains(':') {
        exp.is_none()
            && int_part.split(':').enumerate().all(|(i, p)| {
                if i == 0 {
                    p.starts_with(|c: char| c.is_ascii_digit()) && all_digits(p, 10)
                } else {
                    !p.is_empty() && p.len() <= 2 && p.chars().all(|c| c.is_ascii_digit())
                }
            })
    } else {
        int_part.starts_with(|c: char| c.is_ascii_digit()) && all_digits(int_part, 10)
    };
    int_ok && frac_ok && exp_ok
}

fn parse_float(text: &str) -> Option<f64> {
    let cleaned: String = text
        .chars()
        .filter(|&c| c != '_')
        .collect::<String>()
        .to_lowercase();
    let (sign, body) = match cleaned.as_bytes().first() {
        Some(b'-') => (-1.0, &cleaned[1..]),
        Some(b'+') => (1.0, &cleaned[1..]),
        _ => (1.0, cleaned.as_str()),
    };
    match body {
        ".inf" => return Some(sign * f64::INFINITY),
        ".nan" => return Some(f64::NAN),
        _ => {}
    }
    if body.contains(':') {
        let mut value = 0.0;
        for part in body.split(':') {
            value = value * 60.0 + part.parse::<f64>().ok()?;
        }
        return Some(sign * value);
    }
    body.parse::<f64>().ok().map(|v| sign * v)
}

/// YAML 1.1 timestamps: `2001-12-14`, or a date with 1-2 digit month/day followed by a time
/// (`2001-12-14t21:59:43.10-05:00`, `2001-12-14 21:59:43.10 -5`).
fn is_timestamp(text: &str) -> bool {
    fn digits(s: &str, min: usize, max: usize) -> bool {
        (min..=max).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_digit())
    }
    let b = text.as_bytes();
    if b.len() == 10 && digits(&text[..4], 4, 4) && b[4] == b'-' && b[7] == b'-' {
        return digits(&text[5..7], 2, 2) && digits(&text[8..], 2, 2);
    }
    let Some(split) = text.find(['T', 't', ' ', '\t']) else {
        return false;
    };
    let (date, time) = (
        &text[..split],
        text[split + 1..].trim_start_matches([' ', '\t']),
    );
    let mut parts = date.split('-');
    let date_ok = matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some(y), Some(m), Some(d), None) if digits(y, 4, 4) && digits(m, 1, 2) && digits(d, 1, 2)
    );
    let mut clock = time.split(':');
    let time_ok = matches!(
        (clock.next(), clock.next(), clock.next()),
        (Some(h), Some(m), Some(s)) if digits(h, 1, 2) && digits(m, 2, 2) && s.len() >= 2 && digits(&s[..2], 2, 2)
    );
    date_ok && time_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(text: &str) -> Value {
        resolve_plain(text)
    }

    #[test]
    fn yaml_1_1_scalars() {
        assert_eq!(scalar("True"), Value::Bool(true));
        assert_eq!(scalar("yes"), Value::Bool(true));
        assert_eq!(scalar("off"), Value::Bool(false));
        assert_eq!(scalar("1"), Value::Int(1));
        assert_eq!(scalar("0x1F"), Value::Int(31));
        assert_eq!(scalar("017"), Value::Int(15));
        assert_eq!(scalar("1:30"), Value::Int(90));
        assert_eq!(scalar("1.5"), Value::Float(1.5));
        assert_eq!(scalar("1e3"), Value::Str("1e3".into()));
        assert_eq!(scalar("~"), Value::Null);
        assert_eq!(scalar("2020-01-01"), Value::Other("2020-01-01".into()));
        assert_eq!(
            scalar("function, method"),
            Value::Str("function, method".into())
        );
        assert_eq!(scalar("09"), Value::Str("09".into()));
    }

    #[test]
    fn lines_and_duplicates() {
        let loaded = load("# c\n- func: a\n  x: 1\n\n- func: b\n  x: 1\n  x: 2\n");
        let root = loaded.root.unwrap();
        let Value::Seq(items) = &root.value else {
            panic!()
        };
        assert_eq!(items[0].line, 2);
        assert_eq!(items[1].line, 5);
        assert_eq!(loaded.issues.len(), 1);
        assert_eq!(loaded.issues[0].line, Some(7));
    }

    /// A repeated key is found through an index, not by scanning the mapping: loading is
    /// linear in the number of keys. The scan made 100k keys take 24 s (release) and a minute
    /// in a debug build; 200k keys now load in well under a second (release) and a few seconds
    /// (debug), so the generous bound fails only for a quadratic loader (1.5+ minutes).
    #[test]
    fn a_mapping_with_many_keys_loads_in_linear_time() {
        let n = 200_000;
        let mut text = String::from("- func: foo(Tensor self) -> Tensor\n");
        for i in 0..n {
            text.push_str(&format!("  k{i}: {i}\n"));
        }
        // Repeats are still found, wherever the first occurrence is.
        text.push_str("  k0: first\n  k199999: last\n");
        let start = std::time::Instant::now();
        let loaded = load(&text);
        let elapsed = start.elapsed();
        let root = loaded.root.unwrap();
        let Value::Seq(items) = &root.value else {
            panic!()
        };
        let Value::Map(entries) = &items[0].value else {
            panic!()
        };
        assert_eq!(entries.len(), n + 1);
        assert_eq!(entries[1].1.value, Value::Str("first".into()));
        assert_eq!(entries[n].1.value, Value::Str("last".into()));
        assert_eq!(loaded.issues.len(), 2);
        assert!(
            elapsed < std::time::Duration::from_secs(20),
            "loading {n} keys took {elapsed:?}: quadratic?"
        );
    }

    #[test]
    fn repeated_keys_are_found_by_value_equality() {
        // 0.0 and -0.0 are one key; NaN is never equal to itself; 1 and "1" differ.
        let loaded = load("a: 1\n0.0: x\n-0.0: y\n.nan: p\n.nan: q\n1: i\n'1': s\n");
        let Value::Map(entries) = &loaded.root.unwrap().value else {
            panic!()
        };
        assert_eq!(entries.len(), 6);
        assert_eq!(entries[1].1.value, Value::Str("y".into()));
        assert_eq!(loaded.issues.len(), 1);
    }

    #[test]
    fn syntax_error_has_line() {
        let loaded = load("- func: a\n  x: [1\n- b\n");
        assert!(loaded.root.is_none());
        assert!(loaded.issues[0].line.is_some());
    }
}
