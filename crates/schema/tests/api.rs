//! The query helpers, printing of schemas built in code, `validate`, and error reporting.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_schema::{
    Argument, BaseOperatorName, BaseType, FunctionSchema, OperatorName, Return, SchemaError, Type,
};

fn parse(s: &str) -> FunctionSchema {
    FunctionSchema::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn names(args: &[Argument]) -> Vec<&str> {
    args.iter().map(|a| a.name.as_str()).collect()
}

#[test]
fn out_arguments_and_is_out_fn() {
    let s = parse(
        "foo.out(Tensor self, *, int k=1, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))",
    );
    assert!(s.is_out_fn());
    assert_eq!(names(s.out_arguments()), ["out0", "out1"]);
    let f = parse("foo(Tensor self, *, int k=1) -> Tensor");
    assert!(!f.is_out_fn());
    assert!(f.out_arguments().is_empty());
}

#[test]
fn modifies_arguments_by_kind() {
    assert!(!parse("foo(Tensor self) -> Tensor").modifies_arguments());
    assert!(parse("foo_(Tensor(a!) self) -> Tensor(a!)").modifies_arguments());
    assert!(parse("foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)").modifies_arguments());
    assert!(parse("foo(Tensor self, Tensor(a!) buf) -> Tensor").modifies_arguments());
    // torchgen does not count scratch schemas.
    assert!(
        !parse("foo.out(Tensor self, *, Tensor(a!) out, Tensor(b!) _scratch_x) -> Tensor(a!)")
            .modifies_arguments()
    );
}

#[test]
fn view_ops() {
    assert!(parse("view(Tensor(a) self, SymInt[] size) -> Tensor(a)").is_view_op());
    assert!(parse("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]").is_view_op());
    assert!(parse("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor[]").is_view_op());
    assert!(!parse("add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)").is_view_op());
    assert!(!parse("foo(Tensor(a) self) -> Tensor").is_view_op());
}

#[test]
fn aliased_return_names() {
    let s = parse(
        "foo.out(Tensor self, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) v, Tensor(b!) i)",
    );
    assert_eq!(
        s.aliased_return_names().unwrap(),
        [Some("values"), Some("indices")]
    );
    let s = parse("max.dim(Tensor self, int dim) -> (Tensor values, Tensor indices)");
    assert_eq!(s.aliased_return_names().unwrap(), [None, None]);
}

#[test]
fn aliased_return_names_rejects_built_schema_with_shared_alias() {
    let mut s = parse("foo(Tensor(a) self, Tensor other) -> Tensor(a)");
    s.arguments[1].annotation = s.arguments[0].annotation.clone();
    assert_eq!(
        s.aliased_return_names().unwrap_err().message,
        "Found a return (None)that aliases multiple inputs (self, other)"
    );
}

#[test]
fn inferred_schema_without_a_name_prints_parameters_only() {
    let schema = FunctionSchema {
        name: OperatorName {
            namespace: None,
            name: BaseOperatorName {
                base: String::new(),
                inplace: false,
                dunder_method: false,
                functional_overload: false,
            },
            overload_name: String::new(),
        },
        arguments: vec![
            Argument {
                name: "_0".into(),
                ty: Type::Base(BaseType::Tensor),
                default: None,
                annotation: None,
                kwarg_only: false,
                is_out: false,
            },
            Argument {
                name: "_1".into(),
                ty: Type::Base(BaseType::Int),
                default: None,
                annotation: None,
                kwarg_only: false,
                is_out: false,
            },
        ],
        returns: vec![Return {
            name: Some("_0".into()),
            ty: Type::Base(BaseType::Tensor),
            annotation: None,
        }],
    };
    assert_eq!(schema.to_string(), "(Tensor _0, int _1) -> Tensor _0");
    let mut none = schema.clone();
    none.arguments.clear();
    none.returns.clear();
    assert_eq!(none.to_string(), "() -> ()");
}

#[test]
fn display_of_parts() {
    let s = parse(
        "aten::__iadd__.Tensor(Tensor(a!) self, Tensor(b!)? other, Tensor(c!)[] more) -> Tensor(a!)",
    );
    assert_eq!(s.name.to_string(), "aten::__iadd__.Tensor");
    assert_eq!(s.name.name.to_string(), "__iadd__");
    assert_eq!(s.arguments[1].to_string(), "Tensor(b!)? other");
    assert_eq!(s.arguments[2].to_string(), "Tensor(c!)[] more");
    assert_eq!(
        s.arguments[2].annotation.as_ref().unwrap().to_string(),
        "c!"
    );
    let r = parse("foo(Tensor(a) self) -> (Tensor(a) view, int n)");
    assert_eq!(r.returns[0].to_string(), "Tensor(a) view");
    assert_eq!(r.returns[1].to_string(), "int n");
}

#[test]
fn validate_accepts_parsed_schemas() {
    let s = parse("foo.out(Tensor self, Tensor(a!) buf, *, Tensor(b!) out) -> Tensor(b!)");
    assert_eq!(s.validate(), Ok(()));
}

#[test]
fn validate_applies_the_rules_to_built_schemas() {
    let mut s = parse("foo_(Tensor(a!) self) -> Tensor(a!)");
    s.returns.clear();
    let e = s.validate().unwrap_err();
    assert_eq!(
        e.message,
        "Inplace op foo_ with Tensor self must return self"
    );
    assert_eq!(e.position, None, "a built schema has no text to point into");
}

#[test]
fn validate_checks_structure_of_built_schemas() {
    let mut s = parse("foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
    s.arguments.swap(0, 1);
    assert_eq!(
        s.validate().unwrap_err().message,
        "argument 'self' is out of order: arguments must be positional, then kwarg-only, then out"
    );

    let mut s = parse("foo(Tensor(a) self) -> Tensor(a)");
    s.arguments[0].ty = Type::Base(BaseType::Int);
    assert_eq!(
        s.validate().unwrap_err().message,
        "annotation on non-Tensor type: int"
    );

    let mut s = parse("foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
    s.arguments[1].kwarg_only = false;
    assert_eq!(
        s.validate().unwrap_err().message,
        "out argument 'out' must be kwarg-only"
    );
}

#[test]
fn error_display() {
    let full = SchemaError {
        message: "m".into(),
        position: Some(3),
        expected: Some("x".into()),
    };
    assert_eq!(full.to_string(), "m (at position 3: expected x)");
    let at = SchemaError {
        expected: None,
        ..full.clone()
    };
    assert_eq!(at.to_string(), "m (at position 3)");
    assert_eq!(SchemaError::new("m").to_string(), "m");
}

#[test]
fn errors_point_into_the_input() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "foo(Tensor self,int x) -> Tensor",
            15,
            "`, ` between arguments",
        ),
        (
            "foo(Tensor self) -> Tensor a b",
            26,
            "a single space between the type and the name",
        ),
        (
            "foo(Tensor self, Tensor?(a) x) -> Tensor",
            24,
            "the alias annotation right after `Tensor`, as in `Tensor(a)?`",
        ),
        (
            "foo(Tensor self) -> Tensor(a -> *)",
            31,
            "`)` closing the alias annotation (an annotation with ` -> ` must be followed by a name)",
        ),
        (
            "foo(Tensor(ab) self) -> Tensor",
            12,
            "`|`, `!`, ` -> ` or the end of the annotation",
        ),
        ("foo(Tensor self", 15, "`)` closing the argument list"),
        ("foo() -> ", 9, "a return type or `()`"),
        (
            "foo(Tensor self, int x=) -> Tensor",
            22,
            "the end of the argument",
        ),
    ];
    for &(input, position, expected) in cases {
        let e = FunctionSchema::parse(input).unwrap_err();
        assert_eq!(
            (e.position, e.expected.as_deref()),
            (Some(position), Some(expected)),
            "{input}: {e}"
        );
    }
}

#[test]
fn empty_names_are_rejected() {
    // torchgen would accept these as an argument / return named "".
    let e = FunctionSchema::parse("foo(Tensor ) -> Tensor").unwrap_err();
    assert_eq!(
        (e.message.as_str(), e.position),
        ("missing argument name in 'Tensor '", Some(11))
    );
    let e = FunctionSchema::parse("foo(Tensor self) -> (Tensor(a) , int n)").unwrap_err();
    assert_eq!(
        (e.message.as_str(), e.position),
        ("missing return name in 'Tensor(a) '", Some(31))
    );
}

#[test]
fn nested_namespaces_are_rejected() {
    let e = OperatorName::parse("a::b::c").unwrap_err();
    assert_eq!(
        e.message,
        "nested operator namespaces are not supported: a::b::c"
    );
    assert_eq!(e.position, Some(1));
}
