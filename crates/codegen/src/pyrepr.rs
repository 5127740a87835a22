//! Python's `str()` and `repr()` of loaded YAML values, so that messages which torchgen builds
//! by formatting Python objects (`leftover entries: {'bogus_key': 1}`) come out identical.

use crate::yaml::{Node, Value};

/// `str(value)`: strings as they are, everything else as `repr`.
pub(crate) fn py_str(node: &Node) -> String {
    match &node.value {
        Value::Str(s) | Value::Other(s) => s.clone(),
        _ => py_repr(node),
    }
}

/// `repr(value)`. Mappings end with the `'__line__': N` entry that torchgen's loader adds to
/// every mapping.
pub(crate) fn py_repr(node: &Node) -> String {
    match &node.value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => float_repr(*f),
        Value::Str(s) => str_repr(s),
        Value::Other(s) => s.clone(),
        Value::Seq(items) => {
            let parts: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Map(entries) => dict_repr(entries, Some(node.line)),
    }
}

/// `repr` of a dict holding `entries`, with a trailing `'__line__': line` when given.
pub(crate) fn dict_repr(entries: &[(Node, Node)], line: Option<usize>) -> String {
    let mut parts: Vec<String> = entries
        .iter()
        .filter(|(k, _)| k.as_str() != Some("__line__"))
        .map(|(k, v)| format!("{}: {}", py_repr(k), py_repr(v)))
        .collect();
    if let Some(line) = line {
        parts.push(format!("'__line__': {line}"));
    }
    format!("{{{}}}", parts.join(", "))
}

/// `repr` of a Python set of strings. Python orders sets by hash, which changes from run to run;
/// we keep the order given.
pub(crate) fn str_set_repr<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let parts: Vec<String> = items.into_iter().map(str_repr).collect();
    if parts.is_empty() {
        "set()".to_owned()
    } else {
        format!("{{{}}}", parts.join(", "))
    }
}

/// `repr` of a Python list of strings.
pub(crate) fn str_list_repr<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let parts: Vec<String> = items.into_iter().map(str_repr).collect();
    format!("[{}]", parts.join(", "))
}

/// `repr(s)` for a str: single quotes unless the text has a `'` and no `"`.
pub(crate) fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `repr(f)` for a float: the shortest round-trip digits, in positional notation for decimal
/// exponents from -4 to 15 and scientific (`1e+16`, `1.5e-05`) otherwise.
pub(crate) fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else {
            let point = point as usize;
            if digits.len() <= point {
                format!("{digits}{}.0", "0".repeat(point - digits.len()))
            } else {
                format!("{}.{}", &digits[..point], &digits[point..])
            }
        };
        format!("{sign}{body}")
    } else {
        let (head, tail) = digits.split_at(1);
        let mantissa = if tail.is_empty() {
            head.to_owned()
        } else {
            format!("{head}.{tail}")
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exp.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python() {
        assert_eq!(float_repr(1.0), "1.0");
        assert_eq!(float_repr(0.5), "0.5");
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(1.5e-5), "1.5e-05");
        assert_eq!(float_repr(0.0001), "0.0001");
        assert_eq!(float_repr(123456.789), "123456.789");
        assert_eq!(float_repr(-2.0), "-2.0");
    }

    #[test]
    fn strings_print_like_python() {
        assert_eq!(str_repr("abc"), "'abc'");
        assert_eq!(str_repr("{'a'}"), "\"{'a'}\"");
        assert_eq!(str_repr("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(str_repr("a\nb"), "'a\\nb'");
    }
}
