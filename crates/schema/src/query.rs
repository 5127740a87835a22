//! Questions torchgen asks of a schema: its kind, where `self`, the TensorOptions window and the
//! out arguments are, whether it is a view, and its grouping signature.

use std::ops::Range;

use crate::model::{
    Argument, BaseOperatorName, BaseType, FunctionSchema, OperatorName, Return, SchemaKind, Type,
};
use crate::parse::SchemaError;

impl Argument {
    /// Whether the argument is written by the operator (its annotation has `!`).
    pub fn is_write(&self) -> bool {
        self.annotation.as_ref().is_some_and(|a| a.is_write)
    }
}

impl Return {
    /// Whether the return aliases a written input (its annotation has `!`).
    pub fn is_write(&self) -> bool {
        self.annotation.as_ref().is_some_and(|a| a.is_write)
    }
}

/// The four kwarg-only arguments that torchgen folds into one `TensorOptions`, in order; each
/// may also be optional.
const TENSOR_OPTIONS: [(&str, BaseType); 4] = [
    ("dtype", BaseType::ScalarType),
    ("layout", BaseType::Layout),
    ("device", BaseType::Device),
    ("pin_memory", BaseType::Bool),
];

fn is_tensor_options_member(arg: &Argument, (name, base): (&str, BaseType)) -> bool {
    let ty_matches = match &arg.ty {
        Type::Base(b) => *b == base,
        Type::Optional(inner) => **inner == Type::Base(base),
        _ => false,
    };
    arg.name == name && ty_matches
}

impl FunctionSchema {
    /// The schema's kind, in torchgen's order of precedence: an in-place name wins, then a
    /// `_scratch_` out argument, then any out argument, then a written positional after `self`.
    ///
    /// torchgen asserts that a schema is not both in-place and out; parsing and
    /// [`FunctionSchema::validate`] reject such schemas, and for one built by hand this reports
    /// [`SchemaKind::Inplace`].
    pub fn kind(&self) -> SchemaKind {
        let outs = self.out_arguments();
        if self.name.name.inplace {
            SchemaKind::Inplace
        } else if outs.iter().any(|a| a.name.starts_with("_scratch_")) {
            SchemaKind::Scratch
        } else if !outs.is_empty() {
            SchemaKind::Out
        } else if self.post_self_positional().any(Argument::is_write) {
            SchemaKind::Mutable
        } else {
            SchemaKind::Functional
        }
    }

    /// The index in `arguments` of the first positional argument named `self`.
    pub fn self_index(&self) -> Option<usize> {
        self.arguments
            .iter()
            .position(|a| a.name == "self" && !a.kwarg_only && !a.is_out)
    }

    /// The positional arguments after `self` (all of them when there is no `self`).
    pub(crate) fn post_self_positional(&self) -> impl Iterator<Item = &Argument> {
        let start = self.self_index().map_or(0, |i| i + 1);
        self.arguments[start..]
            .iter()
            .filter(|a| !a.kwarg_only && !a.is_out)
    }

    /// The positional arguments before `self` (none when there is no `self`).
    pub(crate) fn pre_self_positional(&self) -> &[Argument] {
        &self.arguments[..self.self_index().unwrap_or(0)]
    }

    /// The first TensorOptions window: four consecutive kwarg-only arguments `dtype`, `layout`,
    /// `device`, `pin_memory` typed `ScalarType`, `Layout`, `Device`, `bool` (each possibly
    /// optional), as indices into `arguments`.
    pub fn tensor_options(&self) -> Option<Range<usize>> {
        self.tensor_options_windows().next()
    }

    /// Every TensorOptions window, scanning left to right and skipping over each match as
    /// torchgen does (a valid schema has at most one).
    pub(crate) fn tensor_options_windows(&self) -> impl Iterator<Item = Range<usize>> {
        let args = &self.arguments;
        let mut i = 0;
        std::iter::from_fn(move || {
            while i + TENSOR_OPTIONS.len() <= args.len() {
                let window = i..i + TENSOR_OPTIONS.len();
                let matches = args[window.clone()]
                    .iter()
                    .zip(TENSOR_OPTIONS)
                    .all(|(a, member)| {
                        a.kwarg_only && !a.is_out && is_tensor_options_member(a, member)
                    });
                if matches {
                    i = window.end;
                    return Some(window);
                }
                i += 1;
            }
            None
        })
    }

    /// Whether the schema has out arguments (torchgen's definition of an out function).
    pub fn is_out_fn(&self) -> bool {
        self.arguments.iter().any(|a| a.is_out)
    }

    /// The out arguments: the trailing arguments from the first one marked `is_out` (parsing
    /// and [`FunctionSchema::validate`] ensure that out arguments come last).
    pub fn out_arguments(&self) -> &[Argument] {
        let start = self
            .arguments
            .iter()
            .position(|a| a.is_out)
            .unwrap_or(self.arguments.len());
        &self.arguments[start..]
    }

    /// Whether the operator writes to any of its arguments: its kind is in-place, out or
    /// mutable (torchgen does not count scratch schemas).
    pub fn modifies_arguments(&self) -> bool {
        matches!(
            self.kind(),
            SchemaKind::Inplace | SchemaKind::Out | SchemaKind::Mutable
        )
    }

    /// The schema-only part of torchgen's `is_view_op`: some return carries an annotation
    /// without `!` (it aliases an input without writing it), or some argument joins the
    /// wildcard set (`Tensor(a -> *)`). torchgen also counts ops tagged `inplace_view`, which a
    /// schema alone cannot tell.
    pub fn is_view_op(&self) -> bool {
        let aliasing_return = self
            .returns
            .iter()
            .any(|r| r.annotation.as_ref().is_some_and(|a| !a.is_write));
        let wildcard_argument = self.arguments.iter().any(|a| {
            a.annotation
                .as_ref()
                .is_some_and(|ann| ann.alias_set_after.iter().any(|s| s == "*"))
        });
        aliasing_return || wildcard_argument
    }

    /// For every return, the name of the argument it aliases (an argument with an equal
    /// annotation), or `None`. A return aliasing several arguments is an error (rule V11 of the
    /// spec, which parsing already enforces).
    pub fn aliased_return_names(&self) -> Result<Vec<Option<&str>>, SchemaError> {
        self.returns
            .iter()
            .map(|r| {
                let aliased: Vec<&Argument> = match &r.annotation {
                    Some(ann) => self
                        .arguments
                        .iter()
                        .filter(|a| a.annotation.as_ref() == Some(ann))
                        .collect(),
                    None => Vec::new(),
                };
                match aliased.as_slice() {
                    [] => Ok(None),
                    [single] => Ok(Some(single.name.as_str())),
                    several => Err(multiple_alias_error(r, several)),
                }
            })
            .collect()
    }

    /// torchgen's grouping key: the form shared by a function's functional, in-place, out and
    /// mutable variants.
    ///
    /// The overload name, in-place and `_functional` markers, namespace, out arguments,
    /// TensorOptions arguments and all annotations are dropped; return names are dropped unless
    /// `keep_return_names`; defaults are dropped if `strip_default`. Every written input that no
    /// return aliases (`self`, then out arguments, then positionals after `self`) becomes an
    /// extra return, named `<arg>_out` when return names are kept. With
    /// `strip_view_copy_name`, a base name ending in `_copy` loses it and one ending in
    /// `_scatter` gets `_inverse` instead, to pair views with their view_copy ops.
    /// `bernoulli.p` gets back the default `p=0.5` that its yaml entry leaves out.
    pub fn signature(
        &self,
        strip_default: bool,
        strip_view_copy_name: bool,
        keep_return_names: bool,
    ) -> FunctionSchema {
        let base = &self.name.name.base;
        let base = match (
            strip_view_copy_name,
            base.strip_suffix("_copy"),
            base.strip_suffix("_scatter"),
        ) {
            (true, Some(stem), _) => stem.to_owned(),
            (true, None, Some(stem)) => format!("{stem}_inverse"),
            _ => base.clone(),
        };

        let tensor_options = self.tensor_options().unwrap_or(0..0);
        let mut arguments: Vec<Argument> = self
            .arguments
            .iter()
            .enumerate()
            .filter(|&(i, a)| !a.is_out && !tensor_options.contains(&i))
            .map(|(_, a)| Argument {
                annotation: None,
                default: if strip_default {
                    None
                } else {
                    a.default.clone()
                },
                ..a.clone()
            })
            .collect();
        // Note [bernoulli.p schema]: its yaml entry has no default for `p` so that it does not
        // clash with `bernoulli(Tensor self, *, Generator? generator=None)`, but it groups with
        // `bernoulli_.float`, whose `p` defaults to 0.5.
        if self.name.to_string() == "bernoulli.p" {
            for arg in &mut arguments {
                if arg.name == "p" && arg.ty == Type::Base(BaseType::Float) && arg.default.is_none()
                {
                    arg.default = Some("0.5".to_owned());
                }
            }
        }

        let mut returns: Vec<Return> = self
            .returns
            .iter()
            .map(|r| Return {
                name: if keep_return_names {
                    r.name.clone()
                } else {
                    None
                },
                ty: r.ty.clone(),
                annotation: None,
            })
            .collect();
        let mutated_inputs = self
            .self_index()
            .map(|i| &self.arguments[i])
            .into_iter()
            .chain(self.out_arguments())
            .chain(self.post_self_positional());
        for arg in mutated_inputs {
            let returned = self.returns.iter().any(|r| r.annotation == arg.annotation);
            if arg.is_write() && !returned {
                returns.push(Return {
                    name: keep_return_names.then(|| format!("{}_out", arg.name)),
                    ty: arg.ty.clone(),
                    annotation: None,
                });
            }
        }

        FunctionSchema {
            name: OperatorName {
                namespace: None,
                name: BaseOperatorName {
                    base,
                    inplace: false,
                    dunder_method: self.name.name.dunder_method,
                    functional_overload: false,
                },
                overload_name: String::new(),
            },
            arguments,
            returns,
        }
    }
}

/// Rule V11's message; torchgen prints a missing return name as `None`.
pub(crate) fn multiple_alias_error(ret: &Return, aliased: &[&Argument]) -> SchemaError {
    let names: Vec<&str> = aliased.iter().map(|a| a.name.as_str()).collect();
    SchemaError::new(format!(
        "Found a return ({})that aliases multiple inputs ({})",
        ret.name.as_deref().unwrap_or("None"),
        names.join(", ")
    ))
}
