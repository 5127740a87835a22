//! The schema data model.

use std::fmt;

/// A base (non-optional, non-list) type name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BaseType {
    /// `Tensor`
    Tensor,
    /// `int`
    Int,
    /// `SymInt`
    SymInt,
    /// `float`
    Float,
    /// `bool`
    Bool,
    /// `str`
    Str,
    /// `Scalar`
    Scalar,
    /// `ScalarType`
    ScalarType,
    /// `Layout`
    Layout,
    /// `Device`
    Device,
    /// `DeviceIndex`
    DeviceIndex,
    /// `MemoryFormat`
    MemoryFormat,
    /// `Generator`
    Generator,
    /// `QScheme`
    QScheme,
    /// `Storage`
    Storage,
    /// `Stream`
    Stream,
    /// `SymBool`
    SymBool,
    /// `DimVector`
    DimVector,
    /// `GraphModule`
    GraphModule,
    /// `Dimname` (named-tensor overloads of older PyTorch versions)
    Dimname,
}

/// A schema type: a base type, an optional (`T?`), a list (`T[]`, `T[N]`), or a custom
/// class (`__torch__.torch.classes.ns.Name`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// A base type.
    Base(BaseType),
    /// `T?`
    Optional(Box<Type>),
    /// `T[]` (size `None`) or `T[N]`.
    List {
        /// Element type.
        elem: Box<Type>,
        /// Fixed size, if written.
        size: Option<usize>,
    },
    /// A TorchScript custom class; holds the part after `__torch__.torch.classes.`.
    CustomClass(String),
}

/// An alias annotation: `a`, `a!`, `a -> *`, `a! -> a|b`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Annotation {
    /// The alias sets before the call (`a`, or `a|b`).
    pub alias_set: Vec<String>,
    /// Whether the value is written (`!`).
    pub is_write: bool,
    /// The alias sets after the call (`*` for the wildcard set), if an arrow was written.
    pub alias_set_after: Vec<String>,
}

/// One argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Argument {
    /// Name.
    pub name: String,
    /// Type.
    pub ty: Type,
    /// Default value, kept as written (`1`, `None`, `[0,1]`, `'mean'`, `contiguous_format`).
    pub default: Option<String>,
    /// Alias annotation, for tensor-like types.
    pub annotation: Option<Annotation>,
    /// Whether the argument comes after `*`.
    pub kwarg_only: bool,
    /// Whether the argument is an out argument (a mutable kwarg-only argument, or any
    /// argument after one).
    pub is_out: bool,
}

/// One return value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Return {
    /// Name, if written (named-tuple field).
    pub name: Option<String>,
    /// Type.
    pub ty: Type,
    /// Alias annotation.
    pub annotation: Option<Annotation>,
}

/// The base name of an operator with its in-place / dunder / `_functional` markers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BaseOperatorName {
    /// The base, without `_`, dunders or `_functional` (`add` for `add_`).
    pub base: String,
    /// Trailing `_` (or `__iadd__`-style dunder).
    pub inplace: bool,
    /// Written as `__name__`.
    pub dunder_method: bool,
    /// Written with a `_functional` suffix.
    pub functional_overload: bool,
}

/// An operator name: optional namespace, base name, overload name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OperatorName {
    /// `aten` in `aten::add.Tensor`; absent when not written.
    pub namespace: Option<String>,
    /// The base name.
    pub name: BaseOperatorName,
    /// `Tensor` in `add.Tensor`; empty when absent.
    pub overload_name: String,
}

/// The kind of a schema, as torchgen classifies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchemaKind {
    /// No mutation.
    Functional,
    /// In-place (`add_`).
    Inplace,
    /// Writes into out arguments.
    Out,
    /// Mutates a positional argument.
    Mutable,
    /// An out op with `_scratch_` outputs.
    Scratch,
}

/// A function schema.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionSchema {
    /// The operator name.
    pub name: OperatorName,
    /// All arguments, in schema order (positional, then kwarg-only, then out).
    pub arguments: Vec<Argument>,
    /// The returns.
    pub returns: Vec<Return>,
}

impl Type {
    /// `Tensor`, `Tensor?`, `Tensor[]`, `Tensor?[]` (and fixed-size variants): the types whose
    /// values carry dispatch keys.
    pub fn is_tensor_like(&self) -> bool {
        match self {
            Type::Base(BaseType::Tensor) => true,
            Type::Optional(t) => t.is_tensor_like(),
            Type::List { elem, .. } => elem.is_tensor_like(),
            _ => false,
        }
    }

    /// Exactly `Tensor`.
    pub fn is_tensor(&self) -> bool {
        matches!(self, Type::Base(BaseType::Tensor))
    }

    /// `Tensor[]` (any size).
    pub fn is_tensor_list(&self) -> bool {
        matches!(self, Type::List { elem, .. } if elem.is_tensor())
    }

    /// `Tensor?[]`.
    pub fn is_optional_tensor_list(&self) -> bool {
        matches!(self, Type::List { elem, .. } if matches!(elem.as_ref(), Type::Optional(t) if t.is_tensor()))
    }

    /// `Tensor?`.
    pub fn is_optional_tensor(&self) -> bool {
        matches!(self, Type::Optional(t) if t.is_tensor())
    }

    /// Whether the type is `T?`.
    pub fn is_optional(&self) -> bool {
        matches!(self, Type::Optional(_))
    }

    /// Whether `SymInt` appears anywhere in the type.
    pub fn is_symint_like(&self) -> bool {
        match self {
            Type::Base(BaseType::SymInt) => true,
            Type::Optional(t) => t.is_symint_like(),
            Type::List { elem, .. } => elem.is_symint_like(),
            _ => false,
        }
    }
}

impl BaseType {
    /// Every base type, in declaration order.
    pub const ALL: [BaseType; 20] = [
        BaseType::Tensor,
        BaseType::Int,
        BaseType::SymInt,
        BaseType::Float,
        BaseType::Bool,
        BaseType::Str,
        BaseType::Scalar,
        BaseType::ScalarType,
        BaseType::Layout,
        BaseType::Device,
        BaseType::DeviceIndex,
        BaseType::MemoryFormat,
        BaseType::Generator,
        BaseType::QScheme,
        BaseType::Storage,
        BaseType::Stream,
        BaseType::SymBool,
        BaseType::DimVector,
        BaseType::GraphModule,
        BaseType::Dimname,
    ];

    /// The base type spelled `name` in schemas (`int` gives [`BaseType::Int`]).
    pub fn from_name(name: &str) -> Option<BaseType> {
        BaseType::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The name as written in schemas.
    pub fn name(self) -> &'static str {
        match self {
            BaseType::Tensor => "Tensor",
            BaseType::Int => "int",
            BaseType::SymInt => "SymInt",
            BaseType::Float => "float",
            BaseType::Bool => "bool",
            BaseType::Str => "str",
            BaseType::Scalar => "Scalar",
            BaseType::ScalarType => "ScalarType",
            BaseType::Layout => "Layout",
            BaseType::Device => "Device",
            BaseType::DeviceIndex => "DeviceIndex",
            BaseType::MemoryFormat => "MemoryFormat",
            BaseType::Generator => "Generator",
            BaseType::QScheme => "QScheme",
            BaseType::Storage => "Storage",
            BaseType::Stream => "Stream",
            BaseType::SymBool => "SymBool",
            BaseType::DimVector => "DimVector",
            BaseType::GraphModule => "GraphModule",
            BaseType::Dimname => "Dimname",
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Base(b) => f.write_str(b.name()),
            Type::Optional(t) => write!(f, "{t}?"),
            Type::List { elem, size: None } => write!(f, "{elem}[]"),
            Type::List {
                elem,
                size: Some(n),
            } => write!(f, "{elem}[{n}]"),
            Type::CustomClass(name) => write!(f, "__torch__.torch.classes.{name}"),
        }
    }
}

impl OperatorName {
    /// `name` or `name.overload` without the namespace (`add.Tensor`, `add_.Tensor`).
    pub fn unqualified(&self) -> String {
        if self.overload_name.is_empty() {
            self.name.to_string()
        } else {
            format!("{}.{}", self.name, self.overload_name)
        }
    }
}
