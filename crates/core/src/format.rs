//! Printing tensors exactly as PyTorch does (`torch/_tensor_str.py`, default print options:
//! precision 4, line width 80, summarisation above 1000 elements with 3 edge items).

use crate::element::read_element;
use crate::shape::fmt_tuple;
use crate::storage::Access;
use crate::tensor::{Tensor, with_tensors};
use crate::{Element, Result, ScalarType, dispatch_dtype};
use std::fmt;
use std::sync::OnceLock;

const PRECISION: usize = 4;
const LINEWIDTH: usize = 80;
const THRESHOLD: i64 = 1000;
const EDGEITEMS: usize = 3;

/// Python's `repr(float)`: the shortest string that round-trips, in fixed notation for
/// exponents in `[-4, 16)` and scientific notation (`1e-05`, `1.5e+16`) otherwise.
pub fn python_float_repr(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let sign = if v.is_sign_negative() { "-" } else { "" };
    let sci = format!("{:e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let body = if exp >= 0 {
            let int_len = exp as usize + 1;
            let padded = format!("{digits:0<int_len$}");
            let (int_part, frac) = padded.split_at(int_len);
            if frac.is_empty() {
                format!("{int_part}.0")
            } else {
                format!("{int_part}.{frac}")
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{body}")
    } else {
        let mant = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        format!(
            "{sign}{mant}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    }
}

fn non_finite(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("nan")
    } else if v == f64::INFINITY {
        Some("inf")
    } else if v == f64::NEG_INFINITY {
        Some("-inf")
    } else {
        None
    }
}

/// Python's `f"{v:.{p}f}"`.
fn py_fixed(v: f64, precision: usize) -> String {
    match non_finite(v) {
        Some(s) => s.into(),
        None => format!("{v:.precision$}"),
    }
}

/// Python's `f"{v:.{p}e}"` (exponent with a sign and at least two digits).
fn py_sci(v: f64, precision: usize) -> String {
    if let Some(s) = non_finite(v) {
        return s.into();
    }
    let s = format!("{v:.precision$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => s,
    }
}

#[derive(Clone, Copy)]
enum Val {
    F(f64),
    I(i64),
    B(bool),
}

impl Val {
    fn plain(self) -> String {
        match self {
            Val::F(v) => python_float_repr(v),
            Val::I(i) => i.to_string(),
            Val::B(true) => "True".into(),
            Val::B(false) => "False".into(),
        }
    }
}

/// `_Formatter`: decides integer / fixed / scientific mode and the column width.
struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
}

impl Formatter {
    fn new(values: &[Val], floating: bool) -> Formatter {
        let mut f = Formatter {
            floating,
            int_mode: true,
            sci_mode: false,
            max_width: 1,
        };
        if !floating {
            for v in values {
                f.max_width = f.max_width.max(v.plain().len());
            }
            return f;
        }
        let nonzero_finite: Vec<f64> = values
            .iter()
            .filter_map(|v| match v {
                Val::F(x) if x.is_finite() && *x != 0.0 => Some(*x),
                _ => None,
            })
            .collect();
        if nonzero_finite.is_empty() {
            return f;
        }
        let min = nonzero_finite
            .iter()
            .map(|x| x.abs())
            .fold(f64::INFINITY, f64::min);
        let max = nonzero_finite.iter().map(|x| x.abs()).fold(0.0, f64::max);
        f.int_mode = nonzero_finite.iter().all(|x| *x == x.ceil());
        let width = |s: String| s.len();
        if f.int_mode {
            if max / min > 1000.0 || max > 1.0e8 {
                f.sci_mode = true;
                f.max_width = nonzero_finite
                    .iter()
                    .map(|x| width(py_sci(*x, PRECISION)))
                    .max()
                    .unwrap_or(1);
            } else {
                f.max_width = nonzero_finite
                    .iter()
                    .map(|x| width(py_fixed(*x, 0)) + 1)
                    .max()
                    .unwrap_or(1);
            }
        } else if max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4 {
            f.sci_mode = true;
            f.max_width = nonzero_finite
                .iter()
                .map(|x| width(py_sci(*x, PRECISION)))
                .max()
                .unwrap_or(1);
        } else {
            f.max_width = nonzero_finite
                .iter()
                .map(|x| width(py_fixed(*x, PRECISION)))
                .max()
                .unwrap_or(1);
        }
        f.max_width = f.max_width.max(1);
        f
    }

    fn format(&self, v: Val) -> String {
        let s = match v {
            Val::F(x) if self.floating => {
                if self.sci_mode {
                    py_sci(x, PRECISION)
                } else if self.int_mode {
                    let mut s = py_fixed(x, 0);
                    if x.is_finite() {
                        s.push('.');
                    }
                    s
                } else {
                    py_fixed(x, PRECISION)
                }
            }
            other => other.plain(),
        };
        format!("{s:>width$}", width = self.max_width)
    }
}

/// Indices printed along a dimension of size `n` (all, or the edge items when summarising).
fn shown_indices(n: usize, summarize: bool) -> Vec<usize> {
    if summarize && n > 2 * EDGEITEMS {
        (0..EDGEITEMS).chain(n - EDGEITEMS..n).collect()
    } else {
        (0..n).collect()
    }
}

struct Printer<'a> {
    sizes: &'a [i64],
    summarize: bool,
    formatter: Formatter,
    get: &'a dyn Fn(&[usize]) -> Val,
}

impl Printer<'_> {
    fn vector(&self, prefix: &mut Vec<usize>, indent: usize) -> String {
        let n = self.sizes[prefix.len()] as usize;
        let element_length = self.formatter.max_width + 2;
        let per_line = ((LINEWIDTH.saturating_sub(indent)) / element_length).max(1);
        let mut data: Vec<String> = Vec::new();
        let fmt_at = |i: usize, prefix: &mut Vec<usize>| {
            prefix.push(i);
            let s = self.formatter.format((self.get)(prefix));
            prefix.pop();
            s
        };
        if self.summarize && n > 2 * EDGEITEMS {
            for i in 0..EDGEITEMS {
                data.push(fmt_at(i, prefix));
            }
            data.push(" ...".into());
            for i in n - EDGEITEMS..n {
                data.push(fmt_at(i, prefix));
            }
        } else {
            for i in 0..n {
                data.push(fmt_at(i, prefix));
            }
        }
        let lines: Vec<String> = data.chunks(per_line).map(|c| c.join(", ")).collect();
        format!(
            "[{}]",
            lines.join(&format!(",\n{}", " ".repeat(indent + 1)))
        )
    }

    fn tensor(&self, prefix: &mut Vec<usize>, indent: usize) -> String {
        let remaining = self.sizes.len() - prefix.len();
        if remaining == 0 {
            return self.formatter.format((self.get)(prefix));
        }
        if remaining == 1 {
            return self.vector(prefix, indent);
        }
        let n = self.sizes[prefix.len()] as usize;
        let mut slices = Vec::new();
        let slice = |i: usize, prefix: &mut Vec<usize>| {
            prefix.push(i);
            let s = self.tensor(prefix, indent + 1);
            prefix.pop();
            s
        };
        if self.summarize && n > 2 * EDGEITEMS {
            for i in 0..EDGEITEMS {
                slices.push(slice(i, prefix));
            }
            slices.push("...".into());
            for i in n - EDGEITEMS..n {
                slices.push(slice(i, prefix));
            }
        } else {
            for i in 0..n {
                slices.push(slice(i, prefix));
            }
        }
        let sep = format!(",{}{}", "\n".repeat(remaining - 1), " ".repeat(indent + 1));
        format!("[{}]", slices.join(&sep))
    }
}

/// All index tuples of the summarised data, for building the formatter.
fn summarized_values(sizes: &[i64], summarize: bool, get: &dyn Fn(&[usize]) -> Val) -> Vec<Val> {
    let per_dim: Vec<Vec<usize>> = sizes
        .iter()
        .map(|s| shown_indices(*s as usize, summarize))
        .collect();
    let mut out = Vec::new();
    let mut index = vec![0usize; sizes.len()];
    fn rec(
        d: usize,
        per_dim: &[Vec<usize>],
        index: &mut Vec<usize>,
        out: &mut Vec<Val>,
        get: &dyn Fn(&[usize]) -> Val,
    ) {
        if d == per_dim.len() {
            out.push(get(index));
            return;
        }
        for &i in &per_dim[d] {
            index[d] = i;
            rec(d + 1, per_dim, index, out, get);
        }
    }
    rec(0, &per_dim, &mut index, &mut out, get);
    out
}

fn element_val<T: Element>(bytes: &[u8], offset: i64) -> Val {
    let dtype = T::DTYPE;
    match read_element::<T>(bytes, offset.max(0) as usize) {
        None => Val::F(f64::NAN),
        Some(x) if dtype == ScalarType::Bool => Val::B(x.to_f64() != 0.0),
        Some(x) if dtype.is_floating_point() => Val::F(x.to_f64()),
        Some(x) => Val::I(x.to_scalar().to_i64_lossy()),
    }
}

/// The data part of the repr (`[[1., 2.],\n        [3., 4.]]`), for a tensor with host data.
fn tensor_data_str(t: &Tensor, indent: usize) -> Result<String> {
    with_tensors(&[(t, Access::Read)], |data| {
        let bytes = data.bytes(0)?;
        let g = data.geometry(0);
        let strides = g.strides().to_vec();
        let offset = g.storage_offset();
        let dtype = t.dtype();
        let get = |idx: &[usize]| -> Val {
            let off = offset
                + idx
                    .iter()
                    .zip(&strides)
                    .map(|(i, s)| *i as i64 * s)
                    .sum::<i64>();
            dispatch_dtype!(dtype, T => element_val::<T>(bytes, off))
        };
        let summarize = g.numel() > THRESHOLD;
        let values = summarized_values(g.sizes(), summarize, &get);
        let formatter = Formatter::new(&values, dtype.is_floating_point());
        let printer = Printer {
            sizes: g.sizes(),
            summarize,
            formatter,
            get: &get,
        };
        Ok(printer.tensor(&mut Vec::new(), indent))
    })
}

/// A hook that copies a tensor without host-accessible data (lazy, external devices) to the
/// CPU for printing. Installed by the crate that can run operators.
pub type HostCopyHook = fn(&Tensor) -> Result<Tensor>;
static HOST_COPY_HOOK: OnceLock<HostCopyHook> = OnceLock::new();

/// Installs the hook used to print non-host tensors (first installation wins).
pub fn set_host_copy_hook(hook: HostCopyHook) {
    let _ = HOST_COPY_HOOK.set(hook);
}

/// A hook naming a tensor's autograd node (`grad_fn=<AddBackward0>`), installed by autograd.
pub type GradFnNameHook = fn(&Tensor) -> Option<String>;
static GRAD_FN_HOOK: OnceLock<GradFnNameHook> = OnceLock::new();

/// Installs the grad_fn naming hook (first installation wins).
pub fn set_grad_fn_name_hook(hook: GradFnNameHook) {
    let _ = GRAD_FN_HOOK.set(hook);
}

fn add_suffixes(tensor_str: String, suffixes: &[String], indent: usize) -> String {
    let mut out = tensor_str.clone();
    let rfind = tensor_str.rfind('\n').map(|i| i as i64).unwrap_or(-1);
    let mut last_line_len = (tensor_str.len() as i64 - rfind + 1) as usize;
    for suffix in suffixes {
        if last_line_len + suffix.len() + 2 > LINEWIDTH {
            out.push_str(&format!(",\n{}{}", " ".repeat(indent), suffix));
            last_line_len = indent + suffix.len();
        } else {
            out.push_str(&format!(", {suffix}"));
            last_line_len += suffix.len() + 2;
        }
    }
    out.push(')');
    out
}

/// `repr(tensor)`.
pub fn tensor_repr(t: &Tensor) -> String {
    let prefix = "tensor(";
    let indent = prefix.len();
    let mut suffixes = Vec::new();
    let device = t.device();
    if !device.is_cpu() {
        suffixes.push(format!("device='{device}'"));
    }
    let dtype = t.dtype();
    let default_dtype = crate::promotion::DEFAULT_DTYPE;
    let has_default_dtype =
        matches!(dtype, ScalarType::Long | ScalarType::Bool) || dtype == default_dtype;
    let sizes = t.sizes();
    let host_data = t.storage().is_some_and(|s| s.device().is_cpu());
    let printable = if host_data {
        Some(t.clone())
    } else if !t.is_meta() {
        HOST_COPY_HOOK.get().and_then(|hook| hook(t).ok())
    } else {
        None
    };
    let body = match printable {
        None => {
            suffixes.push(format!("size={}", fmt_tuple(&sizes)));
            if dtype != default_dtype {
                suffixes.push(format!("dtype={}", dtype.torch_name()));
            }
            "...".to_string()
        }
        Some(_) if t.numel() == 0 => {
            if sizes.len() != 1 {
                suffixes.push(format!("size={}", fmt_tuple(&sizes)));
            }
            if dtype != default_dtype {
                suffixes.push(format!("dtype={}", dtype.torch_name()));
            }
            "[]".to_string()
        }
        Some(p) => {
            if !has_default_dtype {
                suffixes.push(format!("dtype={}", dtype.torch_name()));
            }
            tensor_data_str(&p, indent)
                .unwrap_or_else(|e| format!("<unprintable: {}>", e.message()))
        }
    };
    if let Some(name) = GRAD_FN_HOOK.get().and_then(|hook| hook(t)) {
        suffixes.push(format!("grad_fn=<{name}>"));
    } else if t.requires_grad() {
        suffixes.push("requires_grad=True".into());
    }
    add_suffixes(format!("{prefix}{body}"), &suffixes, indent)
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&tensor_repr(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_reprs() {
        for (v, s) in [
            (2.0, "2.0"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123.456, "123.456"),
            (-0.0001, "-0.0001"),
            (1e15, "1000000000000000.0"),
            (f64::NAN, "nan"),
            (-f64::INFINITY, "-inf"),
        ] {
            assert_eq!(python_float_repr(v), s);
        }
        assert_eq!(py_sci(1e-5, 4), "1.0000e-05");
        assert_eq!(py_sci(-1.0e10, 4), "-1.0000e+10");
    }
}
