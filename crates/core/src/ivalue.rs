//! `IValue`, the boxed value of any schema type, and `Stack`, the argument stack of boxed calls.

use crate::{Device, Error, Generator, Layout, MemoryFormat, Result, Scalar, ScalarType, Tensor};
use std::fmt;
use std::sync::Arc;

/// A value of any type an operator schema mentions.
///
/// Typed lists get their own variants (`IntList`, `TensorList`, `OptionalTensorList`, ...) so
/// a kernel reading them needs no per-element tag checks; `GenericList` holds anything else.
/// An absent optional is `None`. Scalars box as `Bool` / `Int` / `Double`, as in PyTorch.
#[derive(Clone, Default)]
pub enum IValue {
    /// `None`: an absent optional.
    #[default]
    None,
    /// A tensor.
    Tensor(Tensor),
    /// A bool (also a boolean Scalar).
    Bool(bool),
    /// An int, SymInt or integral Scalar.
    Int(i64),
    /// A float or floating Scalar.
    Double(f64),
    /// A string.
    String(Arc<str>),
    /// A device.
    Device(Device),
    /// A dtype.
    ScalarType(ScalarType),
    /// A layout.
    Layout(Layout),
    /// A memory format.
    MemoryFormat(MemoryFormat),
    /// A random number generator.
    Generator(Generator),
    /// `Tensor[]`.
    TensorList(Vec<Tensor>),
    /// `Tensor?[]`.
    OptionalTensorList(Vec<Option<Tensor>>),
    /// `int[]` / `SymInt[]`.
    IntList(Vec<i64>),
    /// `float[]`.
    DoubleList(Vec<f64>),
    /// `bool[]`.
    BoolList(Vec<bool>),
    /// A tuple (multiple returns).
    Tuple(Vec<IValue>),
    /// A list of anything else (`Scalar[]`, `str[]`, ...).
    GenericList(Vec<IValue>),
}

fn wrong(expected: &str, got: &IValue) -> Error {
    Error::type_error(format!("Expected {expected} but got {}", got.tag_name()))
}

impl IValue {
    /// The variant name (`Tensor`, `Int`, `IntList`, ...), used in error messages.
    pub fn tag_name(&self) -> &'static str {
        match self {
            IValue::None => "None",
            IValue::Tensor(_) => "Tensor",
            IValue::Bool(_) => "Bool",
            IValue::Int(_) => "Int",
            IValue::Double(_) => "Double",
            IValue::String(_) => "String",
            IValue::Device(_) => "Device",
            IValue::ScalarType(_) => "ScalarType",
            IValue::Layout(_) => "Layout",
            IValue::MemoryFormat(_) => "MemoryFormat",
            IValue::Generator(_) => "Generator",
            IValue::TensorList(_) => "TensorList",
            IValue::OptionalTensorList(_) => "OptionalTensorList",
            IValue::IntList(_) => "IntList",
            IValue::DoubleList(_) => "DoubleList",
            IValue::BoolList(_) => "BoolList",
            IValue::Tuple(_) => "Tuple",
            IValue::GenericList(_) => "GenericList",
        }
    }

    /// True for `None`.
    pub fn is_none(&self) -> bool {
        matches!(self, IValue::None)
    }

    /// True for a tensor.
    pub fn is_tensor(&self) -> bool {
        matches!(self, IValue::Tensor(_))
    }

    /// The tensor.
    pub fn as_tensor(&self) -> Result<&Tensor> {
        match self {
            IValue::Tensor(t) => Ok(t),
            other => Err(wrong("Tensor", other)),
        }
    }

    /// The tensor, by value.
    pub fn into_tensor(self) -> Result<Tensor> {
        match self {
            IValue::Tensor(t) => Ok(t),
            other => Err(wrong("Tensor", &other)),
        }
    }

    /// A `Tensor?`: `None` or a tensor.
    pub fn into_optional_tensor(self) -> Result<Option<Tensor>> {
        match self {
            IValue::None => Ok(None),
            IValue::Tensor(t) => Ok(Some(t)),
            other => Err(wrong("Optional[Tensor]", &other)),
        }
    }

    /// The bool.
    pub fn to_bool(&self) -> Result<bool> {
        match self {
            IValue::Bool(b) => Ok(*b),
            other => Err(wrong("Bool", other)),
        }
    }

    /// The int (a dtype, layout or memory format boxed as its enum value is accepted too).
    pub fn to_int(&self) -> Result<i64> {
        match self {
            IValue::Int(i) => Ok(*i),
            IValue::ScalarType(t) => Ok(*t as i64),
            IValue::Layout(l) => Ok(l.to_i64()),
            IValue::MemoryFormat(m) => Ok(m.to_i64()),
            other => Err(wrong("Int", other)),
        }
    }

    /// The float (ints are accepted and converted, as a Python `float` parameter accepts 2).
    pub fn to_double(&self) -> Result<f64> {
        match self {
            IValue::Double(d) => Ok(*d),
            IValue::Int(i) => Ok(*i as f64),
            other => Err(wrong("Double", other)),
        }
    }

    /// A `Scalar` (from `Bool`, `Int` or `Double`).
    pub fn to_scalar(&self) -> Result<Scalar> {
        match self {
            IValue::Bool(b) => Ok(Scalar::Bool(*b)),
            IValue::Int(i) => Ok(Scalar::Int(*i)),
            IValue::Double(d) => Ok(Scalar::Float(*d)),
            other => Err(wrong("Scalar", other)),
        }
    }

    /// The string.
    pub fn to_str(&self) -> Result<&str> {
        match self {
            IValue::String(s) => Ok(s),
            other => Err(wrong("String", other)),
        }
    }

    /// The device.
    pub fn to_device(&self) -> Result<Device> {
        match self {
            IValue::Device(d) => Ok(*d),
            IValue::String(s) => Device::parse(s),
            other => Err(wrong("Device", other)),
        }
    }

    /// The dtype (an int holding PyTorch's enum value is accepted).
    pub fn to_scalar_type(&self) -> Result<ScalarType> {
        match self {
            IValue::ScalarType(t) => Ok(*t),
            IValue::Int(i) => ScalarType::from_i64(*i)
                .ok_or_else(|| Error::value(format!("{i} is not a valid dtype"))),
            other => Err(wrong("ScalarType", other)),
        }
    }

    /// The layout.
    pub fn to_layout(&self) -> Result<Layout> {
        match self {
            IValue::Layout(l) => Ok(*l),
            IValue::Int(0) => Ok(Layout::Strided),
            other => Err(wrong("Layout", other)),
        }
    }

    /// The memory format.
    pub fn to_memory_format(&self) -> Result<MemoryFormat> {
        match self {
            IValue::MemoryFormat(m) => Ok(*m),
            IValue::Int(i) => MemoryFormat::from_i64(*i)
                .ok_or_else(|| Error::value(format!("{i} is not a valid memory format"))),
            other => Err(wrong("MemoryFormat", other)),
        }
    }

    /// The generator.
    pub fn to_generator(&self) -> Result<Generator> {
        match self {
            IValue::Generator(g) => Ok(g.clone()),
            other => Err(wrong("Generator", other)),
        }
    }

    /// An `int[]` (a generic list of ints is accepted).
    pub fn to_int_list(&self) -> Result<Vec<i64>> {
        match self {
            IValue::IntList(v) => Ok(v.clone()),
            IValue::GenericList(v) => v.iter().map(IValue::to_int).collect(),
            other => Err(wrong("int[]", other)),
        }
    }

    /// A `float[]`.
    pub fn to_double_list(&self) -> Result<Vec<f64>> {
        match self {
            IValue::DoubleList(v) => Ok(v.clone()),
            IValue::IntList(v) => Ok(v.iter().map(|i| *i as f64).collect()),
            IValue::GenericList(v) => v.iter().map(IValue::to_double).collect(),
            other => Err(wrong("float[]", other)),
        }
    }

    /// A `bool[]`.
    pub fn to_bool_list(&self) -> Result<Vec<bool>> {
        match self {
            IValue::BoolList(v) => Ok(v.clone()),
            IValue::GenericList(v) => v.iter().map(IValue::to_bool).collect(),
            other => Err(wrong("bool[]", other)),
        }
    }

    /// A `Tensor[]`.
    pub fn to_tensor_list(&self) -> Result<Vec<Tensor>> {
        match self {
            IValue::TensorList(v) => Ok(v.clone()),
            IValue::GenericList(v) => v.iter().map(|x| x.as_tensor().cloned()).collect(),
            other => Err(wrong("Tensor[]", other)),
        }
    }

    /// A `Tensor?[]` (a `Tensor[]` is accepted).
    pub fn to_optional_tensor_list(&self) -> Result<Vec<Option<Tensor>>> {
        match self {
            IValue::OptionalTensorList(v) => Ok(v.clone()),
            IValue::TensorList(v) => Ok(v.iter().cloned().map(Some).collect()),
            IValue::GenericList(v) => v.iter().map(|x| x.clone().into_optional_tensor()).collect(),
            other => Err(wrong("Tensor?[]", other)),
        }
    }

    /// The elements of a tuple.
    pub fn into_tuple(self) -> Result<Vec<IValue>> {
        match self {
            IValue::Tuple(v) => Ok(v),
            other => Err(wrong("Tuple", &other)),
        }
    }

    /// Every tensor directly inside this value (itself, or the defined elements of a list).
    pub fn tensors(&self) -> Vec<&Tensor> {
        match self {
            IValue::Tensor(t) => vec![t],
            IValue::TensorList(v) => v.iter().collect(),
            IValue::OptionalTensorList(v) => v.iter().flatten().collect(),
            IValue::GenericList(v) | IValue::Tuple(v) => {
                v.iter().flat_map(IValue::tensors).collect()
            }
            _ => Vec::new(),
        }
    }
}

impl PartialEq for IValue {
    /// Structural equality; tensors compare by identity (same tensor object), like Python's
    /// `is`, because element-wise comparison is an operator, not a property of the box.
    fn eq(&self, other: &Self) -> bool {
        use IValue::*;
        match (self, other) {
            (None, None) => true,
            (Tensor(a), Tensor(b)) => a.is_same(b),
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Double(a), Double(b)) => a.to_bits() == b.to_bits(),
            (String(a), String(b)) => a == b,
            (Device(a), Device(b)) => a == b,
            (ScalarType(a), ScalarType(b)) => a == b,
            (Layout(a), Layout(b)) => a == b,
            (MemoryFormat(a), MemoryFormat(b)) => a == b,
            (Generator(a), Generator(b)) => a.is_same(b),
            (TensorList(a), TensorList(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.is_same(y))
            }
            (OptionalTensorList(a), OptionalTensorList(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| match (x, y) {
                        (Option::None, Option::None) => true,
                        (Some(x), Some(y)) => x.is_same(y),
                        _ => false,
                    })
            }
            (IntList(a), IntList(b)) => a == b,
            (DoubleList(a), DoubleList(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (BoolList(a), BoolList(b)) => a == b,
            (Tuple(a), Tuple(b)) | (GenericList(a), GenericList(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Debug for IValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn join<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    items.iter().map(f).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for IValue {
    /// Prints like Python would print the value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IValue::None => f.write_str("None"),
            IValue::Tensor(t) => write!(f, "{t}"),
            IValue::Bool(b) => write!(f, "{}", Scalar::Bool(*b)),
            IValue::Int(i) => write!(f, "{i}"),
            IValue::Double(d) => f.write_str(&crate::format::python_float_repr(*d)),
            IValue::String(s) => write!(f, "'{s}'"),
            IValue::Device(d) => write!(
                f,
                "device(type='{}'{})",
                d.kind().name(),
                d.index()
                    .map(|i| format!(", index={i}"))
                    .unwrap_or_default()
            ),
            IValue::ScalarType(t) => f.write_str(&t.torch_name()),
            IValue::Layout(l) => write!(f, "{l}"),
            IValue::MemoryFormat(m) => write!(f, "{m}"),
            IValue::Generator(g) => write!(f, "{g:?}"),
            IValue::TensorList(v) => write!(f, "[{}]", join(v, |t| t.to_string())),
            IValue::OptionalTensorList(v) => write!(
                f,
                "[{}]",
                join(v, |t| t.as_ref().map_or("None".into(), |t| t.to_string()))
            ),
            IValue::IntList(v) => write!(f, "[{}]", join(v, |i| i.to_string())),
            IValue::DoubleList(v) => {
                write!(f, "[{}]", join(v, |d| crate::format::python_float_repr(*d)))
            }
            IValue::BoolList(v) => write!(f, "[{}]", join(v, |b| Scalar::Bool(*b).to_string())),
            IValue::Tuple(v) => {
                if v.len() == 1 {
                    write!(f, "({},)", v[0])
                } else {
                    write!(f, "({})", join(v, |x| x.to_string()))
                }
            }
            IValue::GenericList(v) => write!(f, "[{}]", join(v, |x| x.to_string())),
        }
    }
}

macro_rules! ivalue_from {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {$(
        impl From<$t> for IValue {
            fn from($v: $t) -> IValue { $e }
        }
    )*};
}

ivalue_from! {
    Tensor => |v| IValue::Tensor(v),
    &Tensor => |v| IValue::Tensor(v.clone()),
    bool => |v| IValue::Bool(v),
    i64 => |v| IValue::Int(v),
    i32 => |v| IValue::Int(i64::from(v)),
    f64 => |v| IValue::Double(v),
    &str => |v| IValue::String(Arc::from(v)),
    String => |v| IValue::String(Arc::from(v)),
    Device => |v| IValue::Device(v),
    ScalarType => |v| IValue::ScalarType(v),
    Layout => |v| IValue::Layout(v),
    MemoryFormat => |v| IValue::MemoryFormat(v),
    Generator => |v| IValue::Generator(v),
    Vec<Tensor> => |v| IValue::TensorList(v),
    &[Tensor] => |v| IValue::TensorList(v.to_vec()),
    Vec<Option<Tensor>> => |v| IValue::OptionalTensorList(v),
    Vec<i64> => |v| IValue::IntList(v),
    &[i64] => |v| IValue::IntList(v.to_vec()),
    Vec<f64> => |v| IValue::DoubleList(v),
    Vec<bool> => |v| IValue::BoolList(v),
    Scalar => |v| match v {
        Scalar::Bool(b) => IValue::Bool(b),
        Scalar::Int(i) => IValue::Int(i),
        Scalar::Float(d) => IValue::Double(d),
    },
}

impl<T: Into<IValue>> From<Option<T>> for IValue {
    fn from(v: Option<T>) -> IValue {
        v.map_or(IValue::None, Into::into)
    }
}

/// The argument stack of a boxed call: arguments are pushed in schema order (argument 0
/// deepest), a kernel pops its arguments and pushes its returns.
pub type Stack = Vec<IValue>;

/// Stack helpers named as in PyTorch's `stack.h`.
pub mod stack {
    use super::{IValue, Stack};
    use crate::{Error, Result};

    fn underflow(n: usize, len: usize) -> Error {
        Error::runtime(format!(
            "internal error: the stack holds {len} values but {n} were expected"
        ))
    }

    /// Argument `i` of the top `n` values.
    pub fn peek(stack: &Stack, i: usize, n: usize) -> Result<&IValue> {
        if n > stack.len() || i >= n {
            return Err(underflow(n, stack.len()));
        }
        Ok(&stack[stack.len() - n + i])
    }

    /// The top `n` values.
    pub fn last(stack: &Stack, n: usize) -> Result<&[IValue]> {
        if n > stack.len() {
            return Err(underflow(n, stack.len()));
        }
        Ok(&stack[stack.len() - n..])
    }

    /// The top `n` values, mutably.
    pub fn last_mut(stack: &mut Stack, n: usize) -> Result<&mut [IValue]> {
        let len = stack.len();
        if n > len {
            return Err(underflow(n, len));
        }
        Ok(&mut stack[len - n..])
    }

    /// Removes and returns the top `n` values, in order.
    pub fn pop_n(stack: &mut Stack, n: usize) -> Result<Vec<IValue>> {
        if n > stack.len() {
            return Err(underflow(n, stack.len()));
        }
        Ok(stack.split_off(stack.len() - n))
    }

    /// Removes the top `n` values.
    pub fn drop_n(stack: &mut Stack, n: usize) -> Result<()> {
        if n > stack.len() {
            return Err(underflow(n, stack.len()));
        }
        stack.truncate(stack.len() - n);
        Ok(())
    }

    /// Removes and returns the top value.
    pub fn pop(stack: &mut Stack) -> Result<IValue> {
        stack.pop().ok_or_else(|| underflow(1, 0))
    }
}
