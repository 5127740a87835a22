//! What a boxed kernel needs to know about an operator's arguments and returns, read off the
//! schema once when it is defined (`def`), so that boxed fallbacks (the CPU fallback, logging
//! fallbacks) do not walk the schema on every call.

use switchyard_schema::{Annotation, BaseType, FunctionSchema, Type};

/// The kind of a tensor-carrying argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorArgumentKind {
    /// `Tensor`.
    Tensor,
    /// `Tensor?`.
    OptionalTensor,
    /// `Tensor[]`.
    TensorList,
    /// `Tensor?[]`.
    OptionalTensorList,
}

/// One tensor-carrying argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorArgument {
    /// Position among the schema's arguments (= position on the stack, from the bottom of the
    /// argument window).
    pub index: usize,
    /// What it holds.
    pub kind: TensorArgumentKind,
    /// Whether the operator writes it (`Tensor(a!)`, `Tensor(a!)[]`).
    pub is_write: bool,
}

/// How a return relates to the arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnAlias {
    /// A fresh value.
    Fresh,
    /// The written argument at this index is returned (`-> Tensor(a!)` for `Tensor(a!) self`).
    MutatedArgument(usize),
    /// A written alias set that no argument carries (a malformed schema; reported by callers
    /// that need the argument).
    UnmatchedWrite,
    /// A view of an argument (`-> Tensor(a)`).
    View,
}

/// One return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReturnFacts {
    /// `Tensor`, `Tensor[]` or something else.
    pub kind: ReturnKindFacts,
    /// Its aliasing.
    pub alias: ReturnAlias,
    /// The return as written in the schema (for messages).
    pub text: String,
}

/// The value kind of a return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnKindFacts {
    /// `Tensor`.
    Tensor,
    /// `Tensor[]`.
    TensorList,
    /// Anything else (scalars, tuples of non-tensors, ...).
    Other,
}

/// Facts about a schema that boxed kernels use on every call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaFacts {
    /// Number of arguments.
    pub num_arguments: usize,
    /// Number of returns.
    pub num_returns: usize,
    /// The tensor-carrying arguments, in order.
    pub tensor_arguments: Vec<TensorArgument>,
    /// Indices of `Device` and `Device?` arguments.
    pub device_arguments: Vec<usize>,
    /// The returns, in order.
    pub returns: Vec<ReturnFacts>,
}

impl SchemaFacts {
    /// Reads the facts off `schema`.
    pub fn of(schema: &FunctionSchema) -> SchemaFacts {
        let tensor_arguments = schema
            .arguments
            .iter()
            .enumerate()
            .filter_map(|(index, a)| {
                let kind = tensor_argument_kind(&a.ty)?;
                Some(TensorArgument {
                    index,
                    kind,
                    is_write: a.is_write(),
                })
            })
            .collect();
        let device_arguments = schema
            .arguments
            .iter()
            .enumerate()
            .filter(|(_, a)| is_device(&a.ty))
            .map(|(i, _)| i)
            .collect();
        let returns = schema
            .returns
            .iter()
            .map(|r| {
                let kind = if r.ty.is_tensor() {
                    ReturnKindFacts::Tensor
                } else if r.ty.is_tensor_list() {
                    ReturnKindFacts::TensorList
                } else {
                    ReturnKindFacts::Other
                };
                let alias = match &r.annotation {
                    None => ReturnAlias::Fresh,
                    Some(ann) if ann.is_write => mutated_argument(schema, ann)
                        .map_or(ReturnAlias::UnmatchedWrite, ReturnAlias::MutatedArgument),
                    Some(_) => ReturnAlias::View,
                };
                ReturnFacts {
                    kind,
                    alias,
                    text: r.to_string(),
                }
            })
            .collect();
        SchemaFacts {
            num_arguments: schema.arguments.len(),
            num_returns: schema.returns.len(),
            tensor_arguments,
            device_arguments,
            returns,
        }
    }

    /// Whether some return is a view of an argument.
    pub fn is_view(&self) -> bool {
        self.returns.iter().any(|r| r.alias == ReturnAlias::View)
    }
}

fn tensor_argument_kind(ty: &Type) -> Option<TensorArgumentKind> {
    if ty.is_tensor() {
        Some(TensorArgumentKind::Tensor)
    } else if ty.is_optional_tensor() {
        Some(TensorArgumentKind::OptionalTensor)
    } else if ty.is_tensor_list() {
        Some(TensorArgumentKind::TensorList)
    } else if ty.is_optional_tensor_list() {
        Some(TensorArgumentKind::OptionalTensorList)
    } else {
        None
    }
}

fn is_device(ty: &Type) -> bool {
    match ty {
        Type::Base(BaseType::Device) => true,
        Type::Optional(inner) => matches!(inner.as_ref(), Type::Base(BaseType::Device)),
        _ => false,
    }
}

/// The first written tensor-like argument whose annotation equals the return's (PyTorch's
/// cpu_fallback matches the first such argument).
fn mutated_argument(schema: &FunctionSchema, ann: &Annotation) -> Option<usize> {
    schema
        .arguments
        .iter()
        .position(|a| a.ty.is_tensor_like() && a.annotation.as_ref() == Some(ann))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(schema: &str) -> SchemaFacts {
        SchemaFacts::of(&FunctionSchema::parse(schema).expect("schema"))
    }

    #[test]
    fn functional_inplace_out_and_views() {
        let f = facts("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
        assert_eq!(f.num_arguments, 3);
        assert_eq!(f.tensor_arguments.len(), 2);
        assert!(f.tensor_arguments.iter().all(|t| !t.is_write));
        assert_eq!(f.returns[0].alias, ReturnAlias::Fresh);
        assert!(!f.is_view());

        let f =
            facts("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
        assert!(f.tensor_arguments[0].is_write);
        assert_eq!(f.returns[0].alias, ReturnAlias::MutatedArgument(0));
        assert_eq!(f.returns[0].text, "Tensor(a!)");

        let f = facts(
            "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
        );
        assert_eq!(f.returns[0].alias, ReturnAlias::MutatedArgument(3));
        assert_eq!(f.returns[1].alias, ReturnAlias::MutatedArgument(4));
        assert_eq!(f.returns[1].text, "Tensor(b!) indices");

        let f = facts("view(Tensor(a) self, SymInt[] size) -> Tensor(a)");
        assert!(f.is_view());
    }

    #[test]
    fn lists_optionals_and_devices() {
        let f = facts(
            "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
        );
        let kinds: Vec<_> = f.tensor_arguments.iter().map(|t| t.kind).collect();
        assert_eq!(
            kinds,
            [
                TensorArgumentKind::Tensor,
                TensorArgumentKind::OptionalTensorList,
                TensorArgumentKind::Tensor
            ]
        );
        let f = facts(
            "zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
        );
        assert_eq!(f.device_arguments, [3]);
        let f = facts("cat(Tensor[] tensors, int dim=0) -> Tensor");
        assert_eq!(f.tensor_arguments[0].kind, TensorArgumentKind::TensorList);
        let f =
            facts("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
        assert_eq!(f.returns[0].kind, ReturnKindFacts::TensorList);
        assert!(f.is_view());
        let f = facts(
            "nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor",
        );
        assert_eq!(
            f.tensor_arguments[2].kind,
            TensorArgumentKind::OptionalTensor
        );
    }
}
