//! PyTorch's Python argument parser (`torch/csrc/utils/python_arg_parser.cpp` and
//! `invalid_arguments.cpp`): signature strings such as `add(Tensor input, Tensor other, *,
//! Scalar alpha=1, Tensor out=None)` parsed into [`Signature`]s, the acceptance check of each
//! parameter type (`FunctionParameter::check`), the matching of positional and keyword
//! arguments (`FunctionSignature::parse`: varargs int lists, NumPy keyword aliases, defaults)
//! and overload resolution with PyTorch's messages ([`Parser::parse`]: one signature raises its
//! precise `TypeError`; several are tried in order; when none matches, the single plausible one
//! raises, else "received an invalid combination of arguments").
//!
//! Only the check happens here; converting a matched object to a value is `convert.rs`'s job
//! (an int list whose later items are not ints passes the check and fails to unpack, as in
//! PyTorch).

use std::borrow::Borrow;

use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use crate::tensor::PyTensor;
use crate::types::{PyDType, PyDevice, PyLayout, PyMemoryFormat};

/// A parameter type, as `python_arg_parser.cpp`'s `type_map` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// `Tensor`.
    Tensor,
    /// `Scalar`.
    Scalar,
    /// `int64_t`.
    Int64,
    /// `SymInt`.
    SymInt,
    /// `double`.
    Double,
    /// `TensorList`.
    TensorList,
    /// `c10::List<::std::optional<Tensor>>` (items may be `None`).
    OptionalTensorList,
    /// `IntArrayRef`.
    IntList,
    /// `SymIntArrayRef`.
    SymIntList,
    /// `ArrayRef<double>`.
    FloatList,
    /// `Generator`.
    Generator,
    /// `bool`.
    Bool,
    /// `ScalarType`.
    ScalarType,
    /// `Layout`.
    Layout,
    /// `MemoryFormat`.
    MemoryFormat,
    /// `Device`.
    Device,
    /// `c10::string_view` / `std::string`.
    String,
    /// `ScalarList`.
    ScalarList,
}

impl ParamType {
    fn from_name(name: &str) -> Option<ParamType> {
        Some(match name {
            "Tensor" => ParamType::Tensor,
            "Scalar" => ParamType::Scalar,
            "int64_t" => ParamType::Int64,
            "SymInt" => ParamType::SymInt,
            "double" => ParamType::Double,
            "TensorList" => ParamType::TensorList,
            "c10::List<::std::optional<Tensor>>" | "c10::List<c10::optional<Tensor>>" => {
                ParamType::OptionalTensorList
            }
            "IntArrayRef" => ParamType::IntList,
            "SymIntArrayRef" => ParamType::SymIntList,
            "ArrayRef<double>" => ParamType::FloatList,
            "Generator" => ParamType::Generator,
            "bool" => ParamType::Bool,
            "ScalarType" => ParamType::ScalarType,
            "Layout" => ParamType::Layout,
            "MemoryFormat" => ParamType::MemoryFormat,
            "Device" => ParamType::Device,
            "std::string" | "c10::string_view" => ParamType::String,
            "ScalarList" => ParamType::ScalarList,
            _ => return None,
        })
    }

    /// The name messages use (`FunctionParameter::type_name`).
    pub fn type_name(self) -> &'static str {
        match self {
            ParamType::Tensor => "Tensor",
            ParamType::Scalar => "Number",
            ParamType::Int64 | ParamType::SymInt => "int",
            ParamType::Double => "float",
            ParamType::TensorList | ParamType::OptionalTensorList => "tuple of Tensors",
            ParamType::IntList | ParamType::SymIntList => "tuple of ints",
            ParamType::FloatList => "tuple of floats",
            ParamType::Generator => "torch.Generator",
            ParamType::Bool => "bool",
            ParamType::ScalarType => "torch.dtype",
            ParamType::Layout => "torch.layout",
            ParamType::MemoryFormat => "torch.memory_format",
            ParamType::Device => "torch.device",
            ParamType::String => "str",
            ParamType::ScalarList => "tuple of Scalars",
        }
    }
}

/// NumPy-compatible keyword names (`numpy_compatibility_arg_names`).
fn numpy_names(name: &str) -> &'static [&'static str] {
    match name {
        "dim" => &["axis"],
        "keepdim" => &["keepdims"],
        "input" => &["x", "a", "x1"],
        "other" => &["x2"],
        _ => &[],
    }
}

/// One parameter of a signature (`FunctionParameter`).
#[derive(Clone, Debug)]
pub struct Param {
    /// The type.
    pub ty: ParamType,
    /// The name.
    pub name: String,
    /// `N` of `IntArrayRef[N]` (0 when not given).
    pub size: usize,
    /// Whether `None` is accepted (`T?`, or a `None` default).
    pub allow_none: bool,
    /// Whether it has a default (may be omitted).
    pub optional: bool,
    /// Whether it comes after `*`.
    pub keyword_only: bool,
    /// The default as written (`1`, `None`, `False`).
    pub default: Option<String>,
    /// Whether a Tensor parameter takes Python numbers too.
    pub numbers_as_tensors: bool,
}

/// One signature (`FunctionSignature`).
#[derive(Clone, Debug)]
pub struct Signature {
    /// The function name (`add`).
    pub name: String,
    /// The parameters.
    pub params: Vec<Param>,
    /// Parameters without defaults.
    pub min_args: usize,
    /// All parameters.
    pub max_args: usize,
    /// Parameters that may be given by position.
    pub max_pos_args: usize,
    /// `|hidden` or `|deprecated`: tried, but not listed in messages.
    pub hidden: bool,
    /// `|deprecated`.
    pub deprecated: bool,
}

/// The functions whose Tensor parameters take Python numbers
/// (`should_allow_numbers_as_tensors`).
pub fn allows_numbers_as_tensors(name: &str) -> bool {
    matches!(
        name,
        "add"
            | "add_"
            | "add_out"
            | "div"
            | "div_"
            | "div_out"
            | "divide"
            | "divide_"
            | "divide_out"
            | "mul"
            | "mul_"
            | "mul_out"
            | "multiply"
            | "multiply_"
            | "multiply_out"
            | "sub"
            | "sub_"
            | "sub_out"
            | "subtract"
            | "subtract_"
            | "subtract_out"
            | "true_divide"
            | "true_divide_"
            | "true_divide_out"
            | "to"
            | "_to_copy"
            | "copy_"
            | "floor_divide"
            | "floor_divide_"
            | "floor_divide_out"
    )
}

impl Param {
    fn parse(fmt: &str, keyword_only: bool, numbers_as_tensors: bool) -> Result<Param, String> {
        let (type_str, name_str) = fmt
            .split_once(' ')
            .ok_or_else(|| format!("FunctionParameter(): missing type: {fmt}"))?;
        let mut type_str = type_str;
        let mut allow_none = false;
        if let Some(q) = type_str.find('?') {
            allow_none = true;
            type_str = &type_str[..q];
        }
        let mut size = 0;
        if let Some(b) = type_str.find('[') {
            size = type_str[b + 1..type_str.len() - 1]
                .parse::<usize>()
                .map_err(|_| format!("FunctionParameter(): invalid size in {fmt}"))?;
            type_str = &type_str[..b];
        }
        let ty = ParamType::from_name(type_str)
            .ok_or_else(|| format!("FunctionParameter(): invalid type string: {type_str}"))?;
        let (name, default) = match name_str.split_once('=') {
            Some((n, d)) => (n.to_owned(), Some(d.to_owned())),
            None => (name_str.to_owned(), None),
        };
        if default.as_deref() == Some("None") {
            allow_none = true;
        }
        Ok(Param {
            ty,
            name,
            size,
            allow_none,
            optional: default.is_some(),
            keyword_only,
            default,
            numbers_as_tensors,
        })
    }

    /// `FunctionParameter::check`: whether `obj` is acceptable for this parameter. A tensor
    /// list with a non-tensor item raises (even while overloads are being tried, as PyTorch
    /// does); `failed_idx` receives the first bad item of an int list.
    fn check(
        &self,
        obj: &Bound<'_, PyAny>,
        argnum: usize,
        failed_idx: &mut Option<usize>,
    ) -> PyResult<bool> {
        Ok(match self.ty {
            ParamType::Tensor => {
                obj.is_instance_of::<PyTensor>() || (self.numbers_as_tensors && is_scalar(obj))
            }
            ParamType::Scalar => is_scalar(obj) || is_double_like(obj),
            ParamType::Double => is_double_like(obj),
            ParamType::Int64 => {
                is_long(obj)
                    || obj.cast::<PyTensor>().is_ok_and(|t| {
                        let t = &t.get().t;
                        t.dtype().is_integral(false) && !t.requires_grad() && t.dim() == 0
                    })
            }
            ParamType::SymInt => is_index(obj),
            ParamType::TensorList | ParamType::OptionalTensorList => {
                let Some(items) = sequence_items(obj) else {
                    return Ok(false);
                };
                for (idx, item) in items.iter().enumerate() {
                    let ok = item.is_instance_of::<PyTensor>()
                        || (self.ty == ParamType::OptionalTensorList && item.is_none());
                    if !ok {
                        return Err(PyTypeError::new_err(format!(
                            "expected Tensor as element {idx} in argument {argnum}, but got {}",
                            tp_name(item)
                        )));
                    }
                }
                true
            }
            ParamType::IntList | ParamType::SymIntList => is_int_list(obj, self.size, failed_idx),
            ParamType::FloatList => match sequence_items(obj) {
                Some(items) => items.first().is_none_or(is_double),
                None => false,
            },
            ParamType::Layout => obj.is_instance_of::<PyLayout>(),
            ParamType::MemoryFormat => obj.is_instance_of::<PyMemoryFormat>(),
            ParamType::Generator => obj.is_instance_of::<crate::random::PyGenerator>(),
            ParamType::Bool => obj.is_instance_of::<PyBool>(),
            ParamType::ScalarType => obj.is_instance_of::<PyDType>() || is_python_scalar_type(obj),
            ParamType::Device => {
                is_long(obj) || obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyDevice>()
            }
            ParamType::String => obj.is_instance_of::<PyString>(),
            ParamType::ScalarList => {
                sequence_items(obj).is_some_and(|items| items.iter().all(is_scalar))
            }
        })
    }

    /// The value PyTorch's binding passes when the parameter is omitted
    /// (`FunctionParameter::set_default_str`, its C parsing included: an `int64_t` default
    /// that is not a number, such as `at::Reduction::Mean`, reads as 0 there). `None` for no
    /// default or a `None` default (the schema's treatment applies).
    pub fn python_default(&self) -> Option<switchyard_core::IValue> {
        use switchyard_core::IValue;
        let d = self.default.as_deref()?;
        if d == "None" {
            return None;
        }
        Some(match self.ty {
            ParamType::Int64 | ParamType::SymInt => IValue::Int(atol(d)),
            ParamType::Bool => IValue::Bool(d == "True" || d == "true"),
            ParamType::Double => IValue::Double(atof(d)),
            ParamType::Scalar => match parse_c_integer(d) {
                Some(i) => IValue::Int(i),
                None => IValue::Double(atof(d)),
            },
            ParamType::IntList | ParamType::SymIntList => {
                if let Some(inner) = d.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
                    IValue::IntList(
                        inner
                            .split(',')
                            .filter(|t| !t.is_empty())
                            .map(atol)
                            .collect(),
                    )
                } else {
                    IValue::IntList(vec![atol(d); self.size.max(1)])
                }
            }
            ParamType::ScalarType if d == "torch.int64" => {
                IValue::ScalarType(switchyard_core::ScalarType::Long)
            }
            ParamType::String => {
                let t = d
                    .strip_prefix('"')
                    .and_then(|r| r.strip_suffix('"'))
                    .or_else(|| d.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
                    .unwrap_or(d);
                IValue::from(t)
            }
            _ => return None,
        })
    }

    /// The parameter as `toString` prints it: `Number alpha = 1`.
    fn describe(&self) -> String {
        match &self.default {
            Some(d) => format!("{} {} = {d}", self.ty.type_name(), self.name),
            None => format!("{} {}", self.ty.type_name(), self.name),
        }
    }
}

/// C's `atol`: the leading integer of `s` (0 when there is none).
fn atol(s: &str) -> i64 {
    let s = s.trim_start();
    let (sign, digits) = match s.strip_prefix('-') {
        Some(r) => (-1, r),
        None => (1, s.strip_prefix('+').unwrap_or(s)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    sign * digits[..end].parse::<i64>().unwrap_or(0)
}

/// C's `atof`: the leading number of `s` (0 when there is none).
fn atof(s: &str) -> f64 {
    let s = s.trim_start();
    (1..=s.len())
        .rev()
        .filter(|&n| s.is_char_boundary(n))
        .find_map(|n| s[..n].parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// `strtol(s, &end, 0)` consuming all of `s`: decimal, `0x` hex or `0` octal.
fn parse_c_integer(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        i64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

/// `Py_TYPE(obj)->tp_name` as PyTorch prints it: the class name, and for the types PyTorch
/// defines in C its dotted name (`torch.dtype`, `torch.Size`).
pub fn tp_name(obj: &Bound<'_, PyAny>) -> String {
    let c_name = if obj.is_instance_of::<PyDType>() {
        Some("torch.dtype")
    } else if obj.is_instance_of::<PyDevice>() {
        Some("torch.device")
    } else if obj.is_instance_of::<PyLayout>() {
        Some("torch.layout")
    } else if obj.is_instance_of::<PyMemoryFormat>() {
        Some("torch.memory_format")
    } else if crate::types::size_type(obj.py()).is_ok_and(|t| obj.get_type().is(t)) {
        Some("torch.Size")
    } else {
        None
    };
    if let Some(n) = c_name {
        return n.to_owned();
    }
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

/// The items of a tuple or list (not of other sequences, as PyTorch's checks).
pub fn sequence_items<'py>(obj: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(t) = obj.cast::<PyTuple>() {
        return Some(t.iter().collect());
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return Some(l.iter().collect());
    }
    None
}

/// `THPUtils_checkLong`: an int that is not a bool, or an integer NumPy scalar.
pub fn is_long(obj: &Bound<'_, PyAny>) -> bool {
    if obj.is_instance_of::<PyBool>() {
        return false;
    }
    obj.is_instance_of::<PyInt>() || is_numpy_integer(obj)
}

fn is_numpy_integer(obj: &Bound<'_, PyAny>) -> bool {
    let ty = obj.get_type();
    ty.module()
        .is_ok_and(|m| m.to_str().is_ok_and(|m| m == "numpy"))
        && obj.hasattr("__index__").unwrap_or(false)
        && !obj.is_instance_of::<PyFloat>()
        && !ty
            .name()
            .is_ok_and(|n| n.to_str().is_ok_and(|n| n == "bool"))
}

/// `is_int_or_symint`: a one-element integral tensor, an int (not a bool) or an object with
/// `__index__`.
fn is_index(obj: &Bound<'_, PyAny>) -> bool {
    if obj.is_instance_of::<PyBool>() {
        return false;
    }
    if obj.is_instance_of::<PyInt>() {
        return true;
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        let t = &t.get().t;
        return t.numel() == 1 && t.dtype().is_integral(true);
    }
    obj.hasattr("__index__").unwrap_or(false)
}

/// `THPUtils_checkDouble`: a float or an int (bools included), or a NumPy floating scalar.
fn is_double(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>() || is_numpy_integer(obj)
}

/// `THPUtils_checkScalar`: a Python number.
fn is_scalar(obj: &Bound<'_, PyAny>) -> bool {
    is_double(obj)
}

/// A double, or a 0-dim tensor that does not require grad (the `DOUBLE` case of `check`).
fn is_double_like(obj: &Bound<'_, PyAny>) -> bool {
    if is_double(obj) {
        return true;
    }
    obj.cast::<PyTensor>().is_ok_and(|t| {
        let t = &t.get().t;
        !t.requires_grad() && t.dim() == 0
    })
}

/// `THPPythonScalarType_Check`: the Python types `float`, `int`, `bool`, `complex`.
fn is_python_scalar_type(obj: &Bound<'_, PyAny>) -> bool {
    let Ok(ty) = obj.cast::<PyType>() else {
        return false;
    };
    let py = obj.py();
    [
        py.get_type::<PyFloat>(),
        py.get_type::<PyInt>(),
        py.get_type::<PyBool>(),
        py.get_type::<pyo3::types::PyComplex>(),
    ]
    .iter()
    .any(|t| ty.is(t))
}

/// `is_int_list`: a tuple or list whose first item is an index (the others are checked when
/// unpacking), or, for `IntArrayRef[N]`, a bare int.
fn is_int_list(obj: &Bound<'_, PyAny>, size: usize, failed_idx: &mut Option<usize>) -> bool {
    if let Some(items) = sequence_items(obj) {
        return match items.first() {
            None => true,
            Some(first) if is_index(first) => true,
            Some(_) => {
                *failed_idx = Some(0);
                false
            }
        };
    }
    size > 0 && is_index(obj)
}

/// What a parameter received.
#[derive(Clone)]
pub enum Arg<'py> {
    /// Nothing (omitted, or `None` for a parameter that allows it): its default.
    Default,
    /// An object.
    Obj(Bound<'py, PyAny>),
    /// Every positional argument, for a lone int-list parameter (`x.view(2, 3)`).
    Varargs(Bound<'py, PyTuple>),
}

impl<'py> Arg<'py> {
    /// The object, if one was given.
    pub fn obj(&self) -> Option<&Bound<'py, PyAny>> {
        match self {
            Arg::Obj(o) => Some(o),
            Arg::Varargs(t) => Some(t.as_any()),
            Arg::Default => None,
        }
    }
}

impl Signature {
    /// Parses `name(T a, T b=1, *, T c=None)` with an optional `|hidden` / `|deprecated` tail.
    pub fn parse(fmt: &str) -> Result<Signature, String> {
        let open = fmt
            .find('(')
            .ok_or_else(|| format!("missing opening parenthesis: {fmt}"))?;
        let close = fmt
            .rfind(')')
            .ok_or_else(|| format!("missing closing parenthesis: {fmt}"))?;
        let name = fmt[..open].to_owned();
        let numbers_as_tensors = allows_numbers_as_tensors(&name);
        let mut params = Vec::new();
        let mut keyword_only = false;
        let inner = &fmt[open + 1..close];
        if !inner.is_empty() {
            for p in inner.split(", ") {
                if p == "*" {
                    keyword_only = true;
                } else {
                    params.push(Param::parse(p, keyword_only, numbers_as_tensors)?);
                }
            }
        }
        let tail = &fmt[close + 1..];
        let (hidden, deprecated) = match tail {
            "|deprecated" => (true, true),
            "|hidden" => (true, false),
            _ => (false, false),
        };
        let min_args = params.iter().filter(|p| !p.optional).count();
        let max_pos_args = params.iter().filter(|p| !p.keyword_only).count();
        Ok(Signature {
            name,
            max_args: params.len(),
            min_args,
            max_pos_args,
            params,
            hidden,
            deprecated,
        })
    }

    /// `FunctionSignature::toString`: `(Tensor input, *, Number alpha = 1)`.
    pub fn describe(&self) -> String {
        let mut s = String::from("(");
        let mut keyword_already = false;
        for (i, p) in self.params.iter().enumerate() {
            if i != 0 {
                s.push_str(", ");
            }
            if p.keyword_only && !keyword_already {
                s.push_str("*, ");
                keyword_already = true;
            }
            s.push_str(&p.describe());
        }
        s.push(')');
        s
    }

    fn extra_args(&self, nargs: usize) -> PyErr {
        if self.min_args != self.max_pos_args {
            return PyTypeError::new_err(format!(
                "{}() takes from {} to {} positional arguments but {nargs} were given",
                self.name, self.min_args, self.max_pos_args
            ));
        }
        PyTypeError::new_err(format!(
            "{}() takes {} positional argument{} but {nargs} {} given",
            self.name,
            self.max_pos_args,
            if self.max_pos_args == 1 { "" } else { "s" },
            if nargs == 1 { "was" } else { "were" }
        ))
    }

    fn missing_args(&self, idx: usize) -> PyErr {
        let missing: Vec<String> = self.params[idx..]
            .iter()
            .filter(|p| !p.optional)
            .map(|p| format!("\"{}\"", p.name))
            .collect();
        // PyTorch's plural rule, inverted as it is there.
        PyTypeError::new_err(format!(
            "{}() missing {} required positional argument{}: {}",
            self.name,
            missing.len(),
            if missing.len() == 1 { "s" } else { "" },
            missing.join(", ")
        ))
    }

    fn extra_kwargs(&self, kwargs: &Bound<'_, PyDict>, num_pos_args: usize) -> PyErr {
        for (key, _) in kwargs.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return PyTypeError::new_err("keywords must be strings");
            };
            let key = key.to_string();
            match self.params.iter().position(|p| p.name == key) {
                None => {
                    return PyTypeError::new_err(format!(
                        "{}() got an unexpected keyword argument '{key}'",
                        self.name
                    ));
                }
                Some(i) if i < num_pos_args => {
                    return PyTypeError::new_err(format!(
                        "{}() got multiple values for argument '{key}'",
                        self.name
                    ));
                }
                Some(_) => {}
            }
        }
        PyTypeError::new_err("invalid keyword arguments")
    }

    /// `FunctionSignature::parse`: matches `args` / `kwargs` to the parameters into `dst`.
    /// `Ok(false)` when they do not match and `raise` is false; with `raise`, the mismatch
    /// is PyTorch's `TypeError`.
    pub fn parse_into<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        dst: &mut Vec<Arg<'py>>,
        raise: bool,
    ) -> PyResult<bool> {
        dst.clear();
        let nargs = args.len();
        let mut remaining_kwargs = kwargs.map_or(0, |k| k.len());
        let mut arg_pos = 0usize;
        // A lone positional int list takes varargs: `x.view(2, 3)`, `x.permute(1, 0)`.
        let allow_varargs_intlist = self.max_pos_args == 1
            && matches!(
                self.params[0].ty,
                ParamType::IntList | ParamType::SymIntList
            );
        if nargs > self.max_pos_args && !allow_varargs_intlist {
            return if raise {
                Err(self.extra_args(nargs))
            } else {
                Ok(false)
            };
        }
        for (i, param) in self.params.iter().enumerate() {
            let mut obj: Option<Bound<'py, PyAny>> = None;
            let mut is_kwd = false;
            if arg_pos < nargs {
                if param.keyword_only {
                    return if raise {
                        Err(self.extra_args(nargs))
                    } else {
                        Ok(false)
                    };
                }
                obj = Some(args.get_item(arg_pos)?);
            } else if let Some(kw) = kwargs {
                obj = kw.get_item(&param.name)?;
                for alias in numpy_names(&param.name) {
                    if obj.is_some() {
                        break;
                    }
                    obj = kw.get_item(alias)?;
                }
                is_kwd = true;
            }
            let mut failed_idx = None;
            let varargs_eligible = allow_varargs_intlist && arg_pos == 0 && !is_kwd;
            match &obj {
                None if param.optional => dst.push(Arg::Default),
                Some(o) if o.is_none() && param.allow_none => dst.push(Arg::Default),
                None => {
                    return if raise {
                        Err(self.missing_args(i))
                    } else {
                        Ok(false)
                    };
                }
                Some(o) => {
                    if param.check(o, i, &mut failed_idx)? {
                        dst.push(Arg::Obj(o.clone()));
                    } else if varargs_eligible
                        && is_int_list(args.as_any(), param.size, &mut failed_idx)
                    {
                        dst.push(Arg::Varargs(args.clone()));
                        arg_pos = nargs;
                        continue;
                    } else if raise {
                        // PyTorch 2.15: a varargs list that fails with more positional
                        // arguments than parameters is a count error (`zeros(2.0, 3)`).
                        if varargs_eligible && nargs > self.max_pos_args {
                            return Err(self.extra_args(nargs));
                        }
                        return Err(self.type_error(param, o, is_kwd, arg_pos, failed_idx));
                    } else {
                        return Ok(false);
                    }
                }
            }
            if !is_kwd {
                arg_pos += 1;
            } else if obj.is_some() {
                remaining_kwargs -= 1;
            }
        }
        if remaining_kwargs > 0 {
            return match kwargs {
                Some(kw) if raise => Err(self.extra_kwargs(kw, nargs)),
                _ => Ok(false),
            };
        }
        Ok(true)
    }

    fn type_error(
        &self,
        param: &Param,
        obj: &Bound<'_, PyAny>,
        is_kwd: bool,
        arg_pos: usize,
        failed_idx: Option<usize>,
    ) -> PyErr {
        if is_kwd {
            return PyTypeError::new_err(format!(
                "{}(): argument '{}' must be {}, not {}",
                self.name,
                param.name,
                param.ty.type_name(),
                tp_name(obj)
            ));
        }
        // PyTorch 2.15 names the bad item only when the argument itself is a sequence (a bare
        // non-int for a varargs list reads "must be tuple of ints, not float").
        if let (Some(idx), Some(seq)) = (failed_idx, sequence_items(obj))
            && let Some(item) = seq.get(idx)
        {
            return PyTypeError::new_err(format!(
                "{}(): argument '{}' (position {}) must be {}, but found element of type {} at pos {idx}",
                self.name,
                param.name,
                arg_pos + 1,
                param.ty.type_name(),
                tp_name(item)
            ));
        }
        PyTypeError::new_err(format!(
            "{}(): argument '{}' (position {}) must be {}, not {}",
            self.name,
            param.name,
            arg_pos + 1,
            param.ty.type_name(),
            tp_name(obj)
        ))
    }
}

/// `PythonArgParser::raw_parse` over `sigs` (in the order they are tried; deprecated ones
/// last): the index of the signature that matched, with `dst` filled.
pub fn raw_parse<'py, S: Borrow<Signature>>(
    sigs: &[S],
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
    dst: &mut Vec<Arg<'py>>,
) -> PyResult<usize> {
    if let [only] = sigs {
        only.borrow().parse_into(args, kwargs, dst, true)?;
        return Ok(0);
    }
    for (i, sig) in sigs.iter().enumerate() {
        if sig.borrow().parse_into(args, kwargs, dst, false)? {
            return Ok(i);
        }
    }
    let sigs: Vec<&Signature> = sigs.iter().map(Borrow::borrow).collect();
    Err(print_error(&sigs, args, kwargs, dst))
}

/// `PythonArgParser::print_error`: the single plausible signature's own error, else the
/// "invalid combination of arguments" message.
fn print_error<'py>(
    sigs: &[&Signature],
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
    dst: &mut Vec<Arg<'py>>,
) -> PyErr {
    let num_args = args.len() + kwargs.map_or(0, |k| k.len());
    let plausible: Vec<&&Signature> = sigs
        .iter()
        .filter(|s| num_args >= s.min_args && num_args <= s.max_args && !s.hidden)
        .collect();
    if let [only] = plausible.as_slice()
        && let Err(e) = only.parse_into(args, kwargs, dst, true)
    {
        return e;
    }
    let options: Vec<String> = sigs
        .iter()
        .filter(|s| !s.hidden)
        .map(|s| s.describe())
        .collect();
    let name = sigs.first().map_or("", |s| s.name.as_str());
    match format_invalid_args(args, kwargs, &format!("{name}()"), &options) {
        Ok(msg) => PyTypeError::new_err(msg),
        Err(e) => e,
    }
}

// ---- invalid_arguments.cpp -------------------------------------------------------------

/// A type in an option string, matched by the argument's type name.
enum MatchType {
    Simple(String),
    Multi(&'static [&'static str]),
    Nullable(Box<MatchType>),
}

impl MatchType {
    fn build(name: &str, nullable: bool) -> MatchType {
        let t = match name {
            "float" => MatchType::Multi(&["float", "int", "long"]),
            "int" => MatchType::Multi(&["int", "long"]),
            other => MatchType::Simple(other.to_owned()),
        };
        if nullable {
            MatchType::Nullable(Box::new(t))
        } else {
            t
        }
    }

    fn is_matching(&self, obj: &Bound<'_, PyAny>) -> bool {
        match self {
            MatchType::Simple(n) => tp_name(obj) == *n,
            MatchType::Multi(names) => names.contains(&tp_name(obj).as_str()),
            MatchType::Nullable(t) => obj.is_none() || t.is_matching(obj),
        }
    }
}

struct OptionArg {
    name: String,
    ty: MatchType,
}

struct ParsedOption {
    arguments: Vec<OptionArg>,
    is_variadic: bool,
    has_out: bool,
}

/// `_parseOption`, applied to `toString`'s text as PyTorch applies it: it splits at `", "`
/// and takes the text after the last space as the name, so `*` and `Number alpha = 1` become
/// arguments of their own that never match (which is what PyTorch's messages show).
fn parse_option(option: &str) -> ParsedOption {
    if option == "no arguments" {
        return ParsedOption {
            arguments: Vec::new(),
            is_variadic: false,
            has_out: false,
        };
    }
    let inner = &option[1..option.len() - 1];
    let has_out = option.contains('#');
    let mut arguments = Vec::new();
    for arg in inner.split(", ") {
        let mut arg = arg.to_owned();
        let mut start = 0;
        if arg.as_bytes().first() == Some(&b'#') {
            start += 1;
        }
        let mut nullable = false;
        if arg.as_bytes().get(start) == Some(&b'[') {
            nullable = true;
            start += 1;
            let cut = arg.len().saturating_sub(" or None]".len());
            arg.truncate(cut);
        }
        let (type_end, name_start) = match arg.rfind(' ') {
            Some(i) => (i, i + 1),
            None => (arg.len(), 0),
        };
        let type_end = if arg.contains("...") {
            type_end.saturating_sub(4)
        } else {
            type_end
        };
        let ty = arg.get(start..type_end.max(start)).unwrap_or("").to_owned();
        let name = arg[name_start..].to_owned();
        arguments.push(OptionArg {
            name,
            ty: MatchType::build(&ty, nullable),
        });
    }
    ParsedOption {
        arguments,
        is_variadic: inner.contains("..."),
        has_out,
    }
}

/// The keyword arguments in the order PyTorch's `std::unordered_map` gives them back: for the
/// few keys of a call, the reverse of insertion (libstdc++ puts a key landing in an empty
/// bucket at the front of its list).
type Kwargs<'py> = Vec<(String, Bound<'py, PyAny>)>;

fn kwargs_as_map<'py>(kwargs: Option<&Bound<'py, PyDict>>) -> PyResult<Kwargs<'py>> {
    let mut out = Vec::new();
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            out.push((k.extract::<String>()?, v));
        }
    }
    out.reverse();
    Ok(out)
}

fn argcount_match(option: &ParsedOption, nargs: usize, kwargs: &Kwargs<'_>) -> bool {
    let mut expected = option.arguments.len();
    let got = nargs + kwargs.len();
    if option.has_out && !kwargs.iter().any(|(k, _)| k == "out") {
        expected = expected.saturating_sub(1);
    }
    got == expected || (option.is_variadic && got > expected)
}

fn describe_value(obj: &Bound<'_, PyAny>) -> String {
    let is_tuple = obj.is_instance_of::<PyTuple>();
    match sequence_items(obj) {
        Some(items) => {
            let names: Vec<String> = items.iter().map(tp_name).collect();
            let mut s = format!("{} of ", tp_name(obj));
            if is_tuple {
                s.push('(');
                s.push_str(&names.join(", "));
                if names.len() == 1 {
                    s.push(',');
                }
                s.push(')');
            } else {
                s.push('[');
                s.push_str(&names.join(", "));
                s.push(']');
            }
            s
        }
        None => tp_name(obj),
    }
}

fn formatted_arg_desc(
    option: &ParsedOption,
    args: &[Bound<'_, PyAny>],
    kwargs: &Kwargs<'_>,
) -> PyResult<String> {
    let num_args = args.len() + kwargs.len();
    let mut result = String::from("(");
    for i in 0..num_args {
        let is_kwarg = i >= args.len();
        let arg = if is_kwarg {
            // `kwargs.at(option.arguments[i].name)`: std::out_of_range when absent.
            let name = option.arguments.get(i).map(|a| a.name.as_str());
            match kwargs.iter().find(|(k, _)| Some(k.as_str()) == name) {
                Some((_, v)) => v.clone(),
                None => return Err(PyIndexError::new_err("_Map_base::at")),
            }
        } else {
            args[i].clone()
        };
        let matching = if let Some(a) = option.arguments.get(i) {
            a.ty.is_matching(&arg)
        } else if option.is_variadic {
            option
                .arguments
                .last()
                .is_some_and(|a| a.ty.is_matching(&arg))
        } else {
            false
        };
        // PyTorch colours the marks on a terminal; tests and logs see the `!` form.
        if !matching {
            result.push('!');
        }
        if is_kwarg {
            result.push_str(&option.arguments[i].name);
            result.push('=');
        }
        result.push_str(&describe_value(&arg));
        if !matching {
            result.push('!');
        }
        result.push_str(", ");
    }
    if !args.is_empty() {
        result.truncate(result.len() - 2);
    }
    result.push(')');
    Ok(result)
}

fn arg_desc(args: &[Bound<'_, PyAny>], kwargs: &Kwargs<'_>) -> String {
    let mut result = String::from("(");
    for a in args {
        result.push_str(&tp_name(a));
        result.push_str(", ");
    }
    for (k, v) in kwargs {
        result.push_str(k);
        result.push('=');
        result.push_str(&tp_name(v));
        result.push_str(", ");
    }
    if !args.is_empty() {
        result.truncate(result.len() - 2);
    }
    result.push(')');
    result
}

fn try_match_kwargs(option: &ParsedOption, kwargs: &Kwargs<'_>) -> Vec<String> {
    let mut start = option.arguments.len() as i64 - kwargs.len() as i64;
    if option.has_out && !kwargs.iter().any(|(k, _)| k == "out") {
        start -= 1;
    }
    let start = start.max(0) as usize;
    kwargs
        .iter()
        .filter(|(k, _)| !option.arguments.iter().skip(start).any(|a| a.name == *k))
        .map(|(k, _)| k.clone())
        .collect()
}

/// `format_invalid_args`: "add() received an invalid combination of arguments - got (...),
/// but expected ...".
pub fn format_invalid_args(
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
    function_name: &str,
    options: &[String],
) -> PyResult<String> {
    let positional: Vec<Bound<'_, PyAny>> = args.iter().collect();
    let kw = kwargs_as_map(kwargs)?;
    let has_kwargs = !kw.is_empty();
    let mut msg = format!("{function_name} received an invalid combination of arguments - ");
    if let [only] = options {
        let option = parse_option(only);
        let unmatched = if has_kwargs {
            try_match_kwargs(&option, &kw)
        } else {
            Vec::new()
        };
        if !unmatched.is_empty() {
            msg.push_str("got unrecognized keyword arguments: ");
            msg.push_str(&unmatched.join(", "));
        } else {
            msg.push_str("got ");
            if argcount_match(&option, positional.len(), &kw) {
                msg.push_str(&formatted_arg_desc(&option, &positional, &kw)?);
            } else {
                msg.push_str(&arg_desc(&positional, &kw));
            }
            msg.push_str(", but expected ");
            msg.push_str(only);
        }
    } else {
        msg.push_str("got ");
        msg.push_str(&arg_desc(&positional, &kw));
        msg.push_str(", but expected one of:\n");
        for option_str in options {
            let option = parse_option(option_str);
            msg.push_str(" * ");
            msg.push_str(option_str);
            msg.push('\n');
            if argcount_match(&option, positional.len(), &kw) {
                let unmatched = if has_kwargs {
                    try_match_kwargs(&option, &kw)
                } else {
                    Vec::new()
                };
                if !unmatched.is_empty() {
                    msg.push_str(
                        "      didn't match because some of the keywords were incorrect: ",
                    );
                    msg.push_str(&unmatched.join(", "));
                    msg.push('\n');
                } else {
                    msg.push_str(
                        "      didn't match because some of the arguments have invalid types: ",
                    );
                    msg.push_str(&formatted_arg_desc(&option, &positional, &kw)?);
                    msg.push('\n');
                }
            }
        }
    }
    Ok(msg)
}
