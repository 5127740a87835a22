//! The JSON literals of the command line (tensors, lists and their elements), read into a small
//! tree that keeps every integer exactly. The Python module builds the same tree from Python
//! data (nested lists and tuples of numbers) to share [`crate::data`]'s `torch.tensor` rules.
//!
//! serde_json turns an integer beyond `u64` into a float, so `[100000000000000000000]` would
//! become `1e20` and be stored into an int64 tensor as a float (saturated) instead of failing as
//! `torch.tensor([10**20])` does. This reader keeps integers as written and the caller decides.

use std::fmt;

/// How deeply lists and objects may nest. PyTorch tensors have at most 64 dimensions; the bound
/// keeps a hostile argument (`[[[[...`) from overflowing the stack.
const MAX_DEPTH: usize = 128;

/// A parsed literal.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// An integer outside `i64`, as written.
    BigInt(String),
    /// A number written with a fraction or an exponent.
    Float(f64),
    /// A string.
    Str(String),
    /// `[...]`.
    List(Vec<Lit>),
    /// `{...}`, keys in the order written.
    Object(Vec<(String, Lit)>),
}

impl Lit {
    /// What kind of value this is, for messages (`an integer`, `a list`).
    pub fn kind(&self) -> &'static str {
        match self {
            Lit::Null => "null",
            Lit::Bool(_) => "a bool",
            Lit::Int(_) | Lit::BigInt(_) => "an integer",
            Lit::Float(_) => "a float",
            Lit::Str(_) => "a string",
            Lit::List(_) => "a list",
            Lit::Object(_) => "an object",
        }
    }

    /// The value as a float, for numbers (big integers rounded, as Python's `float(int)`).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Lit::Int(i) => Some(*i as f64),
            Lit::BigInt(s) => s.parse::<f64>().ok(),
            Lit::Float(f) => Some(*f),
            _ => None,
        }
    }
}

impl Lit {
    /// An integer; one outside `i64` is kept as its decimal text ([`Lit::BigInt`]).
    pub fn from_integer_text(text: &str) -> Lit {
        match text.parse::<i64>() {
            Ok(i) => Lit::Int(i),
            Err(_) => Lit::BigInt(text.to_owned()),
        }
    }
}

impl From<bool> for Lit {
    fn from(b: bool) -> Lit {
        Lit::Bool(b)
    }
}

impl From<i64> for Lit {
    fn from(i: i64) -> Lit {
        Lit::Int(i)
    }
}

impl From<f64> for Lit {
    fn from(f: f64) -> Lit {
        Lit::Float(f)
    }
}

impl From<Vec<Lit>> for Lit {
    fn from(items: Vec<Lit>) -> Lit {
        Lit::List(items)
    }
}

impl fmt::Display for Lit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lit::Null => f.write_str("null"),
            Lit::Bool(b) => write!(f, "{b}"),
            Lit::Int(i) => write!(f, "{i}"),
            Lit::BigInt(s) => f.write_str(s),
            Lit::Float(x) => write!(f, "{x:?}"),
            Lit::Str(s) => write!(f, "{s:?}"),
            Lit::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Lit::Object(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k:?}: {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// Parses `text` as one JSON value (surrounding whitespace allowed). The error says what was
/// expected and at which character (1-based).
pub fn parse(text: &str) -> Result<Lit, String> {
    let mut p = Parser {
        bytes: text.as_bytes(),
        text,
        pos: 0,
    };
    p.skip_ws();
    let value = p.value(0)?;
    p.skip_ws();
    if p.pos < p.bytes.len() {
        return Err(p.error("trailing characters"));
    }
    Ok(value)
}

struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> String {
        if self.pos >= self.bytes.len() {
            format!("{what} at the end of the value")
        } else {
            format!("{what} at character {}", self.pos + 1)
        }
    }

    fn skip_ws(&mut self) {
        while self
            .bytes
            .get(self.pos)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn keyword(&mut self, word: &str, value: Lit) -> Result<Lit, String> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Lit, String> {
        if depth > MAX_DEPTH {
            return Err(format!("lists nest deeper than {MAX_DEPTH} levels"));
        }
        match self.peek() {
            Some(b'[') => self.list(depth),
            Some(b'{') => self.object(depth),
            Some(b'"') => self.string().map(Lit::Str),
            Some(b't') => self.keyword("true", Lit::Bool(true)),
            Some(b'f') => self.keyword("false", Lit::Bool(false)),
            Some(b'n') => self.keyword("null", Lit::Null),
            // Python's spellings, as schema defaults and Python users write them.
            Some(b'T') => self.keyword("True", Lit::Bool(true)),
            Some(b'F') => self.keyword("False", Lit::Bool(false)),
            Some(b'N') => self.keyword("None", Lit::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error("expected a JSON value")),
        }
    }

    fn list(&mut self, depth: usize) -> Result<Lit, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Lit::List(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Lit::List(items));
                }
                _ => return Err(self.error("expected ',' or ']'")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Lit, String> {
        self.pos += 1;
        let mut entries = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Lit::Object(entries));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':'"));
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(format!("key \"{key}\" given twice"));
            }
            entries.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Lit::Object(entries));
                }
                _ => return Err(self.error("expected ',' or '}'")),
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.text[self.pos..].chars().next() else {
                return Err(self.error("unterminated string"));
            };
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let Some(e) = self.peek() else {
                        return Err(self.error("unterminated string"));
                    };
                    self.pos += 1;
                    out.push(match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hex = self
                                .text
                                .get(self.pos..self.pos + 4)
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .and_then(char::from_u32)
                                .ok_or_else(|| self.error("bad \\u escape"))?;
                            self.pos += 4;
                            hex
                        }
                        _ => return Err(self.error("bad escape")),
                    });
                }
                c if (c as u32) < 0x20 => return Err(self.error("control character in string")),
                c => out.push(c),
            }
        }
    }

    /// JSON's number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Result<Lit, String> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.pos += 1;
            }
            p.pos - from
        };
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n = digits(self);
        if n == 0 || (n > 1 && self.bytes[int_start] == b'0') {
            self.pos = int_start;
            return Err(self.error("expected a number"));
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            float = true;
            if digits(self) == 0 {
                return Err(self.error("expected a digit after '.'"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            float = true;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(self.error("expected a digit in the exponent"));
            }
        }
        let text = &self.text[start..self.pos];
        if float {
            return text
                .parse::<f64>()
                .map(Lit::Float)
                .map_err(|_| self.error("bad number"));
        }
        Ok(match text.parse::<i64>() {
            Ok(i) => Lit::Int(i),
            Err(_) => Lit::BigInt(text.to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_stay_exact() {
        assert_eq!(
            parse("[1, -2]").unwrap(),
            Lit::List(vec![Lit::Int(1), Lit::Int(-2)])
        );
        assert_eq!(
            parse("100000000000000000000").unwrap(),
            Lit::BigInt("100000000000000000000".into())
        );
        assert_eq!(parse("-9223372036854775808").unwrap(), Lit::Int(i64::MIN));
        assert_eq!(parse("1e2").unwrap(), Lit::Float(100.0));
        assert_eq!(parse(" 2.5 ").unwrap(), Lit::Float(2.5));
        assert_eq!(
            parse("[True, False, None]").unwrap(),
            Lit::List(vec![Lit::Bool(true), Lit::Bool(false), Lit::Null])
        );
    }

    #[test]
    fn objects_strings_and_errors() {
        assert_eq!(
            parse(r#"{"a": "x\"y", "b": [true, null]}"#).unwrap(),
            Lit::Object(vec![
                ("a".into(), Lit::Str("x\"y".into())),
                ("b".into(), Lit::List(vec![Lit::Bool(true), Lit::Null])),
            ])
        );
        assert_eq!(
            parse("[1,2").unwrap_err(),
            "expected ',' or ']' at the end of the value"
        );
        assert_eq!(
            parse("[1,,2]").unwrap_err(),
            "expected a JSON value at character 4"
        );
        assert_eq!(parse("01").unwrap_err(), "expected a number at character 1");
        assert_eq!(
            parse("[1] x").unwrap_err(),
            "trailing characters at character 5"
        );
        assert!(parse(r#"{"a": 1, "a": 2}"#).unwrap_err().contains("twice"));
        let deep = "[".repeat(10_000);
        assert!(parse(&deep).unwrap_err().contains("nest deeper"));
    }
}
