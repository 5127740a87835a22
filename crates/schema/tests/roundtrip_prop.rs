//! Property test: random valid schemas print, parse back to the same model, and print again to
//! the same text.
//!
//! Schemas are built as models that satisfy torchgen's rules by construction: one strategy per
//! schema kind (functional, in-place, out, mutable), with every type shape, defaults, kwarg-only
//! arguments, TensorOptions, alias annotations, views and named returns mixed in.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use switchyard_schema::{
    Annotation, Argument, BaseOperatorName, BaseType, FunctionSchema, OperatorName, Return,
    SchemaKind, Type,
};

fn base_type() -> impl Strategy<Value = BaseType> {
    proptest::sample::select(BaseType::ALL.to_vec())
}

/// Any unannotated type: base types, custom classes, and optionals and lists of those nested
/// up to three deep (`int?[]`, `int[]?`, `SymInt[3]`, `Tensor?[]`, ...).
fn any_type() -> impl Strategy<Value = Type> {
    let leaf = prop_oneof![
        8 => base_type().prop_map(Type::Base),
        1 => "[a-z][a-z0-9_]{0,5}(\\.[A-Za-z][A-Za-z0-9_]{0,5}){0,2}".prop_map(Type::CustomClass),
    ];
    leaf.prop_recursive(3, 8, 1, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| Type::Optional(Box::new(t))),
            (inner, proptest::option::of(1usize..=9)).prop_map(|(t, size)| Type::List {
                elem: Box::new(t),
                size
            }),
        ]
    })
}

fn default_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("None".to_owned()),
        Just("False".to_owned()),
        Just("-1".to_owned()),
        Just("1e-05".to_owned()),
        Just("[]".to_owned()),
        Just("[-2,-1]".to_owned()),
        Just("'mean'".to_owned()),
        Just("\"L\"".to_owned()),
        Just("contiguous_format".to_owned()),
        "[A-Za-z0-9_.]{1,6}",
    ]
}

fn ident() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,6}"
}

/// The shape of a non-writing alias annotation; letters are assigned when the schema is built.
#[derive(Clone, Copy, Debug)]
enum AnnotationShape {
    Single,
    Pair,
    Wildcard,
    AfterPair,
}

/// An argument before names and alias letters are made unique.
#[derive(Clone, Debug)]
struct ArgSeed {
    stem: String,
    ty: Type,
    default: Option<String>,
    /// Only used when `ty` can carry an annotation.
    annotation: Option<AnnotationShape>,
}

fn arg_seed() -> impl Strategy<Value = ArgSeed> {
    let annotated_tensor = prop_oneof![
        Just(Type::Base(BaseType::Tensor)),
        Just(Type::Optional(Box::new(Type::Base(BaseType::Tensor)))),
        Just(Type::List {
            elem: Box::new(Type::Base(BaseType::Tensor)),
            size: None
        }),
    ];
    let shape = prop_oneof![
        Just(AnnotationShape::Single),
        Just(AnnotationShape::Pair),
        Just(AnnotationShape::Wildcard),
        Just(AnnotationShape::AfterPair),
    ];
    prop_oneof![
        3 => (ident(), any_type(), proptest::option::of(default_value())).prop_map(
            |(stem, ty, default)| ArgSeed { stem, ty, default, annotation: None }
        ),
        1 => (ident(), annotated_tensor, proptest::option::of(default_value()), shape).prop_map(
            |(stem, ty, default, shape)| ArgSeed { stem, ty, default, annotation: Some(shape) }
        ),
    ]
}

/// Hands out distinct alias-set letters so that no two annotations are accidentally equal.
struct Letters(std::ops::RangeInclusive<u8>);

impl Letters {
    fn new() -> Self {
        Letters(b'a'..=b'z')
    }

    fn next(&mut self) -> Option<String> {
        self.0.next().map(|b| char::from(b).to_string())
    }

    fn annotation(&mut self, shape: AnnotationShape) -> Option<Annotation> {
        let ann = |alias_set: Vec<String>, alias_set_after: Vec<String>| Annotation {
            alias_set,
            is_write: false,
            alias_set_after,
        };
        Some(match shape {
            AnnotationShape::Single => ann(vec![self.next()?], vec![]),
            AnnotationShape::Pair => ann(vec![self.next()?, self.next()?], vec![]),
            AnnotationShape::Wildcard => ann(vec![self.next()?], vec!["*".to_owned()]),
            AnnotationShape::AfterPair => {
                let before = self.next()?;
                ann(vec![before.clone()], vec![before, self.next()?])
            }
        })
    }

    fn written(&mut self) -> Annotation {
        // At most a handful of written annotations are requested after the (bounded) seeds.
        Annotation {
            alias_set: vec![self.next().unwrap()],
            is_write: true,
            alias_set_after: vec![],
        }
    }
}

fn argument(name: String, ty: Type, annotation: Option<Annotation>) -> Argument {
    Argument {
        name,
        ty,
        default: None,
        annotation,
        kwarg_only: false,
        is_out: false,
    }
}

fn tensor() -> Type {
    Type::Base(BaseType::Tensor)
}

fn optional(base: BaseType) -> Type {
    Type::Optional(Box::new(Type::Base(base)))
}

/// Turns seeds into arguments with unique names (`<stem>_<n>`) and distinct letters.
fn realize(
    seeds: &[ArgSeed],
    letters: &mut Letters,
    counter: &mut usize,
    kwarg_only: bool,
) -> Vec<Argument> {
    seeds
        .iter()
        .map(|seed| {
            *counter += 1;
            Argument {
                name: format!("{}_{counter}", seed.stem),
                ty: seed.ty.clone(),
                default: seed.default.clone(),
                annotation: seed.annotation.and_then(|shape| letters.annotation(shape)),
                kwarg_only,
                is_out: false,
            }
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Functional,
    Inplace,
    Out,
    Mutable,
}

/// Everything random about a schema; `build` assembles a valid schema of `kind` from it.
#[derive(Clone, Debug)]
struct Recipe {
    kind: Kind,
    namespace: Option<String>,
    base: String,
    dunder: Option<&'static str>,
    functional_overload: bool,
    overload: String,
    positional: Vec<ArgSeed>,
    self_at: Option<usize>,
    kwarg_only: Vec<ArgSeed>,
    tensor_options: bool,
    optional_tensor_options: bool,
    mutable_positional: bool,
    outs: usize,
    list_out: bool,
    scratch: bool,
    list_self: bool,
    returns: Vec<(Type, Option<String>)>,
    view_return: bool,
    name_returns: bool,
}

fn recipe() -> impl Strategy<Value = Recipe> {
    let kind = prop_oneof![
        Just(Kind::Functional),
        Just(Kind::Inplace),
        Just(Kind::Out),
        Just(Kind::Mutable)
    ];
    let base = "[a-z][a-z0-9]{0,5}(_[a-z0-9]{1,4}){0,2}".prop_map(|b| {
        if b.ends_with("_out") {
            format!("{b}x")
        } else {
            b
        }
    });
    let dunder = proptest::option::weighted(
        0.1,
        proptest::sample::select(vec!["add", "mul", "and", "or", "lshift"]),
    );
    let overload = prop_oneof![
        Just(String::new()),
        "[A-Za-z0-9_]{1,8}(\\.[A-Za-z0-9_]{1,4})?"
    ];
    let names = (
        proptest::option::of("[a-z][a-z0-9_]{0,5}"),
        base,
        dunder,
        any::<bool>(),
        overload,
    );
    let args = (
        proptest::collection::vec(arg_seed(), 0..4),
        proptest::option::of(0usize..4),
        proptest::collection::vec(arg_seed(), 0..4),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    );
    let outs = (
        1usize..4,
        proptest::bool::weighted(0.2),
        any::<bool>(),
        any::<bool>(),
    );
    let returns = (
        proptest::collection::vec((any_type(), proptest::option::of(ident())), 0..4),
        any::<bool>(),
        any::<bool>(),
    );
    (kind, names, args, outs, returns).prop_map(
        |(
            kind,
            (namespace, base, dunder, functional_overload, overload),
            (
                positional,
                self_at,
                kwarg_only,
                tensor_options,
                optional_tensor_options,
                mutable_positional,
            ),
            (outs, list_out, scratch, list_self),
            (returns, view_return, name_returns),
        )| {
            // `functional` in an overload name is reserved for functional schemas.
            let overload = overload.replace("functional", "f");
            Recipe {
                kind,
                namespace,
                base,
                dunder,
                functional_overload,
                overload,
                positional,
                self_at,
                kwarg_only,
                tensor_options,
                optional_tensor_options,
                mutable_positional,
                outs,
                list_out,
                scratch,
                list_self,
                returns,
                view_return,
                name_returns,
            }
        },
    )
}

/// Assembles a schema satisfying torchgen's rules; returns it with the kind it must report.
fn build(r: &Recipe) -> (FunctionSchema, SchemaKind) {
    let inplace = r.kind == Kind::Inplace;
    let name = match r.dunder {
        Some(base) => BaseOperatorName {
            base: base.to_owned(),
            inplace,
            dunder_method: true,
            functional_overload: false,
        },
        None => BaseOperatorName {
            base: r.base.clone(),
            inplace,
            dunder_method: false,
            functional_overload: r.functional_overload && !inplace,
        },
    };
    let name = OperatorName {
        namespace: r.namespace.clone(),
        name,
        overload_name: r.overload.clone(),
    };

    let mut letters = Letters::new();
    let mut counter = 0;
    let mut positional = realize(&r.positional, &mut letters, &mut counter, false);
    let mut kwarg_only = realize(&r.kwarg_only, &mut letters, &mut counter, true);
    let mut returns: Vec<Return> = Vec::new();
    let mut outs: Vec<Argument> = Vec::new();
    let mut expected_kind = match r.kind {
        Kind::Functional => SchemaKind::Functional,
        Kind::Inplace => SchemaKind::Inplace,
        Kind::Out => SchemaKind::Out,
        Kind::Mutable => SchemaKind::Mutable,
    };
    let ret_name = |stem: &str, i: usize| r.name_returns.then(|| format!("{stem}_r{i}"));

    // `self`: required (and written) for in-place ops, optional otherwise.
    let self_at = if inplace {
        Some(r.self_at.unwrap_or(0))
    } else {
        r.self_at
    };
    if let Some(at) = self_at {
        let at = at.min(positional.len());
        let (ty, annotation) = match (inplace, r.list_self) {
            (true, true) => (
                Type::List {
                    elem: Box::new(tensor()),
                    size: None,
                },
                Some(letters.written()),
            ),
            (true, false) => (tensor(), Some(letters.written())),
            (false, _) => (tensor(), None),
        };
        if inplace && ty.is_tensor() {
            returns.push(Return {
                name: ret_name("self", 0),
                ty: tensor(),
                annotation: annotation.clone(),
            });
        }
        positional.insert(at, argument("self".to_owned(), ty, annotation));
    }
    // A written positional after `self` that is not returned: what makes an op mutable, and
    // allowed (but hidden by the kind's precedence) in in-place and out ops.
    if r.kind == Kind::Mutable || (r.mutable_positional && r.kind != Kind::Functional) {
        positional.push(argument(
            "buf".to_owned(),
            tensor(),
            Some(letters.written()),
        ));
    }

    match r.kind {
        Kind::Functional | Kind::Mutable => {
            for (i, (ty, stem)) in r.returns.iter().enumerate() {
                let name = r
                    .name_returns
                    .then(|| format!("{}_r{i}", stem.as_deref().unwrap_or("x")));
                returns.push(Return {
                    name,
                    ty: ty.clone(),
                    annotation: None,
                });
            }
            // A view: a return sharing a simple annotation with exactly one argument.
            let simple = positional.iter().chain(&kwarg_only).find_map(|a| {
                a.annotation
                    .as_ref()
                    .filter(|ann| !ann.is_write && ann.alias_set_after.is_empty())
                    .cloned()
            });
            if let Some(annotation) = simple.filter(|_| r.view_return) {
                returns.push(Return {
                    name: ret_name("view", returns.len()),
                    ty: tensor(),
                    annotation: Some(annotation),
                });
            }
        }
        Kind::Out => {
            for i in 0..r.outs {
                let ty = if r.list_out && i == 0 {
                    Type::List {
                        elem: Box::new(tensor()),
                        size: None,
                    }
                } else {
                    tensor()
                };
                outs.push(Argument {
                    kwarg_only: true,
                    is_out: true,
                    ..argument(format!("out{i}"), ty, Some(letters.written()))
                });
            }
            if r.scratch {
                outs.push(Argument {
                    kwarg_only: true,
                    is_out: true,
                    ..argument("_scratch_tmp".to_owned(), tensor(), Some(letters.written()))
                });
                expected_kind = SchemaKind::Scratch;
            }
            // Plain Tensor outs are returned one for one (scratch ones excepted); list outs
            // mean no returns at all.
            if !r.list_out {
                for (i, out) in outs
                    .iter()
                    .filter(|o| !o.name.starts_with("_scratch_"))
                    .enumerate()
                {
                    returns.push(Return {
                        name: ret_name("out", i),
                        ty: tensor(),
                        annotation: out.annotation.clone(),
                    });
                }
            }
        }
        Kind::Inplace => {}
    }

    if r.tensor_options && r.kind == Kind::Functional {
        let member = |name: &str, base: BaseType| {
            let ty = if r.optional_tensor_options {
                optional(base)
            } else {
                Type::Base(base)
            };
            let default = r.optional_tensor_options.then(|| "None".to_owned());
            Argument {
                default,
                kwarg_only: true,
                ..argument(name.to_owned(), ty, None)
            }
        };
        kwarg_only.push(member("dtype", BaseType::ScalarType));
        kwarg_only.push(member("layout", BaseType::Layout));
        kwarg_only.push(member("device", BaseType::Device));
        kwarg_only.push(member("pin_memory", BaseType::Bool));
    }

    let arguments = positional
        .into_iter()
        .chain(kwarg_only)
        .chain(outs)
        .collect();
    (
        FunctionSchema {
            name,
            arguments,
            returns,
        },
        expected_kind,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn printed_schemas_parse_back_to_the_same_model(recipe in recipe()) {
        let (schema, kind) = build(&recipe);
        let text = schema.to_string();
        let parsed = FunctionSchema::parse(&text)
            .unwrap_or_else(|e| panic!("generated schema failed to parse: {text}\n{e}"));
        prop_assert_eq!(parsed.to_string(), text.as_str());
        prop_assert_eq!(&parsed, &schema);
        prop_assert_eq!(parsed.kind(), kind);
        prop_assert!(schema.validate().is_ok());
    }

    #[test]
    fn printed_types_parse_back(ty in any_type()) {
        let text = ty.to_string();
        prop_assert_eq!(Type::parse(&text).unwrap(), ty);
    }
}
