//! Every schema-level example of `codegen.md` §1 and the schema cases of §7.2 (27, 28,
//! 29q–29y), with torchgen's exact messages.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_schema::{
    Annotation, Argument, BaseOperatorName, BaseType, FunctionSchema, OperatorName, SchemaError,
    SchemaKind, Type,
};

/// Parses `s`, which must be valid and must print back unchanged.
fn parse(s: &str) -> FunctionSchema {
    let schema = FunctionSchema::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
    assert_eq!(schema.to_string(), s);
    schema
}

/// The error for `s`, which must be rejected.
fn error(s: &str) -> SchemaError {
    match FunctionSchema::parse(s) {
        Ok(schema) => panic!("{s} was accepted as {schema:?}"),
        Err(e) => e,
    }
}

fn message(s: &str) -> String {
    error(s).message
}

fn arg<'a>(schema: &'a FunctionSchema, name: &str) -> &'a Argument {
    schema.arguments.iter().find(|a| a.name == name).unwrap()
}

fn tensor() -> Type {
    Type::Base(BaseType::Tensor)
}

fn optional(t: Type) -> Type {
    Type::Optional(Box::new(t))
}

fn list(t: Type, size: Option<usize>) -> Type {
    Type::List {
        elem: Box::new(t),
        size,
    }
}

fn ann(s: &str) -> Annotation {
    Annotation::parse(s).unwrap()
}

// §1.1 Top level

#[test]
fn arrow_needs_spaces() {
    let e = error("foo(Tensor self)->Tensor");
    assert_eq!(
        e.message,
        "Invalid function schema: foo(Tensor self)->Tensor"
    );
    assert_eq!(e.position, Some(16));
    assert_eq!(
        e.expected.as_deref(),
        Some("` -> ` between the arguments and the returns")
    );
}

#[test]
fn schema_without_parentheses_is_invalid() {
    assert_eq!(
        message("foo -> Tensor"),
        "Invalid function schema: foo -> Tensor"
    );
    assert_eq!(
        message("(Tensor self) -> Tensor"),
        "Invalid function schema: (Tensor self) -> Tensor"
    );
}

// §1.2 Operator names

#[test]
fn overload_is_everything_after_the_first_dot() {
    let s = parse("foo.a.b(Tensor self) -> Tensor");
    assert_eq!(s.name.name.base, "foo");
    assert_eq!(s.name.overload_name, "a.b");
    assert_eq!(parse("foo(Tensor self) -> Tensor").name.overload_name, "");
}

#[test]
fn empty_overload_after_a_dot_fails_the_round_trip() {
    assert_eq!(message("foo.(Tensor self) -> Tensor"), "foo != foo.");
}

#[test]
fn namespace_prefix_is_split_off() {
    let s = parse("aten::add.Tensor(Tensor self, Tensor other) -> Tensor");
    assert_eq!(s.name.namespace.as_deref(), Some("aten"));
    assert_eq!(s.name.name.base, "add");
    assert_eq!(s.name.unqualified(), "add.Tensor");
    assert_eq!(parse("add(Tensor self) -> Tensor").name.namespace, None);
}

#[test]
fn out_suffix_is_reserved() {
    // Case 29v.
    let e = error("foo_out(Tensor self) -> Tensor");
    assert_eq!(
        e.message,
        "_out suffix is reserved and not permitted for operator names; did you mean to specify an out overload name instead?"
    );
    assert_eq!(e.position, Some(3));
}

#[test]
fn trailing_underscore_is_inplace() {
    let s = parse("abs_(Tensor(a!) self) -> Tensor(a!)");
    assert_eq!(
        s.name.name,
        BaseOperatorName {
            base: "abs".into(),
            inplace: true,
            dunder_method: false,
            functional_overload: false
        }
    );
}

#[test]
fn dunder_names() {
    let iadd = parse("__iadd__(Tensor(a!) self, Tensor other) -> Tensor(a!)");
    assert_eq!(
        iadd.name.name,
        BaseOperatorName {
            base: "add".into(),
            inplace: true,
            dunder_method: true,
            functional_overload: false
        }
    );
    let add = parse("__add__(Tensor self, Tensor other) -> Tensor");
    assert!(add.name.name.dunder_method && !add.name.name.inplace);
    assert_eq!(add.name.name.base, "add");
    assert_eq!(
        message("__ifoo__(Tensor self) -> Tensor"),
        "unexpected dunder method starting with 'i': __ifoo__"
    );
}

#[test]
fn functional_suffix() {
    let s = parse("normal_functional(Tensor self) -> Tensor");
    assert_eq!(s.name.name.base, "normal");
    assert!(s.name.name.functional_overload);
    assert_eq!(
        message("foo_functional_(Tensor(a!) self) -> Tensor(a!)"),
        "functional overload cannot be a dunder method or inplace: foo_functional_"
    );
}

#[test]
fn empty_operator_name() {
    assert_eq!(
        message(".foo(Tensor self) -> Tensor"),
        "operator name cannot be empty"
    );
}

#[test]
fn operator_name_parse_alone() {
    let op = OperatorName::parse("aten::add_.Tensor").unwrap();
    assert_eq!(op.namespace.as_deref(), Some("aten"));
    assert!(op.name.inplace);
    assert_eq!(op.to_string(), "aten::add_.Tensor");
    assert_eq!(op.unqualified(), "add_.Tensor");
}

// §1.3 Argument list structure

#[test]
fn empty_argument_list() {
    assert!(parse("foo() -> Tensor").arguments.is_empty());
}

#[test]
fn second_star_is_rejected() {
    // Case 29y.
    let e = error("foo(Tensor self, *, int x, *, int y) -> Tensor");
    assert_eq!(
        e.message,
        "invalid syntax: kwarg-only specifier * can only occur once"
    );
    assert_eq!(e.position, Some(27));
}

#[test]
fn trailing_star_fails_the_round_trip() {
    assert_eq!(
        message("foo(Tensor self, *) -> Tensor"),
        "foo(Tensor self) -> Tensor != foo(Tensor self, *) -> Tensor"
    );
}

#[test]
fn arguments_are_classified_positional_kwarg_only_out() {
    let s = parse("foo.out(Tensor self, Tensor(a!) buf, *, int k=1, Tensor(b!) out) -> Tensor(b!)");
    let flags: Vec<(&str, bool, bool)> = s
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.kwarg_only, a.is_out))
        .collect();
    assert_eq!(
        flags,
        [
            ("self", false, false),
            ("buf", false, false),
            ("k", true, false),
            ("out", true, true)
        ]
    );
}

#[test]
fn non_mutable_argument_after_out_is_rejected() {
    // Case 29u.
    assert_eq!(
        message("foo.out(Tensor self, *, Tensor(a!) out, int x) -> Tensor(a!)"),
        "non-mutable argument 'x' cannot follow mutable out arguments"
    );
}

#[test]
fn self_is_the_first_positional_named_self() {
    let s = parse("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor");
    assert_eq!(s.self_index(), Some(1));
    assert_eq!(
        parse("foo(Tensor a, Tensor b) -> Tensor").self_index(),
        None
    );
}

#[test]
fn tensor_options_window() {
    let s = parse(
        "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    );
    assert_eq!(s.tensor_options(), Some(1..5));
    // Any other order is simply not recognised.
    let s =
        parse("foo(*, Layout layout, ScalarType dtype, Device device, bool pin_memory) -> Tensor");
    assert_eq!(s.tensor_options(), None);
    // Positional arguments are never TensorOptions.
    let s = parse("foo(ScalarType dtype, Layout layout, Device device, bool pin_memory) -> Tensor");
    assert_eq!(s.tensor_options(), None);
}

#[test]
fn tensor_options_only_once() {
    let to =
        "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";
    let e = error(&format!("foo(*, {to}, {to}) -> Tensor"));
    assert_eq!(e.message, "tensor options arguments can only appear once");
    assert_eq!(e.position, Some(7 + to.len() + 2));
}

// §1.4 Types

#[test]
fn question_mark_binds_before_brackets() {
    let s = parse("foo(int[]? a, int?[] b, Tensor?[] c, SymInt[2] d, bool[3]? e) -> Tensor");
    let types: Vec<&Type> = s.arguments.iter().map(|a| &a.ty).collect();
    let int = Type::Base(BaseType::Int);
    assert_eq!(
        types,
        [
            &optional(list(int.clone(), None)),
            &list(optional(int), None),
            &list(optional(tensor()), None),
            &list(Type::Base(BaseType::SymInt), Some(2)),
            &optional(list(Type::Base(BaseType::Bool), Some(3))),
        ]
    );
    assert!(types[2].is_optional_tensor_list());
}

#[test]
fn every_base_type_parses() {
    for base in BaseType::ALL {
        assert_eq!(Type::parse(base.name()).unwrap(), Type::Base(base));
    }
}

#[test]
fn dimname_is_accepted() {
    // torchgen 2.15 dropped it; this implementation keeps it for older named-tensor overloads.
    let s = parse("foo(Tensor self, Dimname d, Dimname[] names) -> Tensor");
    assert_eq!(arg(&s, "d").ty, Type::Base(BaseType::Dimname));
}

#[test]
fn size_zero_fails_the_round_trip() {
    let e = error("foo(Tensor self, int[0] x) -> Tensor");
    assert_eq!(e.message, "int[] != int[0]");
    assert_eq!(e.position, Some(21));
}

#[test]
fn unknown_type() {
    let e = error("foo(Tensor self, Foo x) -> Tensor");
    assert_eq!(e.message, "unrecognized type Foo");
    assert_eq!(e.position, Some(17));
    assert_eq!(
        e.expected.as_deref(),
        Some("a type such as Tensor, int, float, bool, str, Scalar, ...")
    );
    assert_eq!(
        e.to_string(),
        "unrecognized type Foo (at position 17: expected a type such as Tensor, int, float, bool, str, Scalar, ...)"
    );
    // Inside an optional or a list, the innermost name is reported.
    assert_eq!(
        message("foo(Tensor self, Foo[]? x) -> Tensor"),
        "unrecognized type Foo"
    );
}

#[test]
fn custom_class_type() {
    // Case 27.
    let text = "__torch__.torch.classes.namespace_foo.class_bar";
    let ty = Type::parse(text).unwrap();
    assert_eq!(ty, Type::CustomClass("namespace_foo.class_bar".into()));
    assert_eq!(ty.to_string(), text);
    assert_eq!(
        Type::parse("__torch__.torch.classes.ns.Cls?").unwrap(),
        optional(Type::CustomClass("ns.Cls".into()))
    );
}

// §1.5 Default values

#[test]
fn defaults_are_opaque() {
    let s = parse(
        "foo(Tensor self, int x=None, str r='mean', str m=\"L\", int[2] d=[-2,-1], MemoryFormat f=contiguous_format, float e=1e-05) -> Tensor",
    );
    let defaults: Vec<&str> = s
        .arguments
        .iter()
        .filter_map(|a| a.default.as_deref())
        .collect();
    assert_eq!(
        defaults,
        [
            "None",
            "'mean'",
            "\"L\"",
            "[-2,-1]",
            "contiguous_format",
            "1e-05"
        ]
    );
}

#[test]
fn only_one_equals_sign() {
    assert_eq!(
        message("foo(Tensor self, str x='a=b') -> Tensor"),
        "illegal argument with default value: 'str x='a=b''"
    );
}

#[test]
fn list_default_with_a_space_is_split() {
    // Case 29x.
    let e = error("foo(Tensor self, int[2] x=[1, 1]) -> Tensor");
    assert_eq!(e.message, "illegal argument '1]'");
    assert_eq!(e.position, Some(28));
    assert_eq!(
        e.expected.as_deref(),
        Some("a list default without spaces, such as `[1,1]`")
    );
}

// §1.6 Alias annotations

#[test]
fn annotations_sit_right_after_tensor() {
    let s = parse(
        "foo(Tensor(a) a, Tensor(b!) b, Tensor(c -> *) c, Tensor(d!)[] d, Tensor(e!)? e) -> ()",
    );
    let got: Vec<(String, &Type)> = s
        .arguments
        .iter()
        .map(|a| (a.annotation.as_ref().unwrap().to_string(), &a.ty))
        .collect();
    assert_eq!(
        got,
        [
            ("a".to_owned(), &tensor()),
            ("b!".to_owned(), &tensor()),
            ("c -> *".to_owned(), &tensor()),
            ("d!".to_owned(), &list(tensor(), None)),
            ("e!".to_owned(), &optional(tensor())),
        ]
    );
}

#[test]
fn annotation_must_come_before_the_suffix() {
    assert_eq!(
        message("foo(Tensor?(a) self) -> Tensor"),
        "unrecognized type Tensor?(a)"
    );
    assert_eq!(
        message("foo(Tensor(a)?[] self) -> Tensor"),
        "unrecognized alias analysis form with Tensor: ?[]"
    );
}

#[test]
fn annotations_only_on_tensors() {
    // V12.
    let e = error("foo(Tensor self, int(a) x) -> Tensor");
    assert_eq!(e.message, "unrecognized type int(a)");
    assert_eq!(e.position, Some(20));
}

#[test]
fn annotation_parse_cases() {
    // Case 28.
    assert_eq!(
        ann("a"),
        Annotation {
            alias_set: vec!["a".into()],
            is_write: false,
            alias_set_after: vec![]
        }
    );
    assert_eq!(
        ann("a!"),
        Annotation {
            alias_set: vec!["a".into()],
            is_write: true,
            alias_set_after: vec![]
        }
    );
    assert_eq!(
        ann("a! -> *"),
        Annotation {
            alias_set: vec!["a".into()],
            is_write: true,
            alias_set_after: vec!["*".into()]
        }
    );
    assert_eq!(
        ann("a|b"),
        Annotation {
            alias_set: vec!["a".into(), "b".into()],
            is_write: false,
            alias_set_after: vec![]
        }
    );
    assert_eq!(
        ann("a! -> a|b"),
        Annotation {
            alias_set: vec!["a".into()],
            is_write: true,
            alias_set_after: vec!["a".into(), "b".into()]
        }
    );
    assert_eq!(
        Annotation::parse("a|b!").unwrap_err().message,
        "alias set larger than 1 is not mutable, got a|b! instead."
    );
    assert_eq!(
        Annotation::parse("a|b -> c|d").unwrap_err().message,
        "before alias set and after alias set cannot be larger than 1 at the same time, got a|b -> c|d instead."
    );
}

#[test]
fn malformed_annotations() {
    assert_eq!(
        Annotation::parse("A").unwrap_err().message,
        "unrecognized alias annotation A"
    );
    assert_eq!(
        Annotation::parse("ab").unwrap_err().message,
        "unrecognized alias annotation ab"
    );
    // Only the last repetition of `|x` is captured, so a before-set of three fails the round
    // trip; the after-set has no such limit.
    assert_eq!(
        Annotation::parse("a|b|c").unwrap_err().message,
        "a|c != a|b|c"
    );
    assert_eq!(message("foo(Tensor(a|b|c) self) -> Tensor"), "a|c != a|b|c");
    assert_eq!(ann("a -> b|c|d").alias_set_after, ["b", "c", "d"]);
    // The README's `Tensor!` shorthand is not accepted.
    assert_eq!(
        message("foo_(Tensor! self) -> Tensor!"),
        "unrecognized type Tensor!"
    );
}

// §1.7 Returns

#[test]
fn return_forms() {
    assert!(parse("foo(Tensor self) -> ()").returns.is_empty());
    assert_eq!(parse("foo(Tensor self) -> Tensor").returns.len(), 1);
    let s = parse(
        "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    );
    let names: Vec<Option<&str>> = s.returns.iter().map(|r| r.name.as_deref()).collect();
    assert_eq!(names, [Some("values"), Some("indices")]);
    assert_eq!(
        parse("foo(Tensor self) -> Tensor out").returns[0]
            .name
            .as_deref(),
        Some("out")
    );
}

#[test]
fn single_return_must_not_be_parenthesised() {
    // Case 29w, second half.
    let e = error("foo(Tensor self) -> (Tensor)");
    assert_eq!(
        e.message,
        "foo(Tensor self) -> Tensor != foo(Tensor self) -> (Tensor)"
    );
    assert_eq!(e.position, Some(20));
}

#[test]
fn missing_arrow_spaces() {
    // Case 29w, first half.
    assert_eq!(
        message("foo(Tensor self)->Tensor"),
        "Invalid function schema: foo(Tensor self)->Tensor"
    );
}

// §1.8 SchemaKind

#[test]
fn kinds() {
    let kind = |s: &str| parse(s).kind();
    assert_eq!(kind("foo(Tensor self) -> Tensor"), SchemaKind::Functional);
    assert_eq!(
        kind("foo_(Tensor(a!) self) -> Tensor(a!)"),
        SchemaKind::Inplace
    );
    assert_eq!(
        kind("foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"),
        SchemaKind::Out
    );
    assert_eq!(
        kind("foo(Tensor self, Tensor(a!) buf) -> Tensor"),
        SchemaKind::Mutable
    );
    assert_eq!(
        kind("foo.out(Tensor self, *, Tensor(a!) out, Tensor(b!) _scratch_x) -> Tensor(a!)"),
        SchemaKind::Scratch
    );
    // Out wins over a written positional.
    assert_eq!(
        kind("foo.out(Tensor self, Tensor(a!) buf, *, Tensor(b!) out) -> Tensor(b!)"),
        SchemaKind::Out
    );
}

// §1.9 Validation rules

#[test]
fn accepted_examples() {
    assert!(parse("foo.out(Tensor self, *, Tensor(a!)[] out) -> ()").is_out_fn());
    assert_eq!(
        parse("foo(Tensor self, Tensor(a!) buf) -> Tensor").kind(),
        SchemaKind::Mutable
    );
    assert_eq!(
        parse("foo.out(Tensor self, Tensor(a!) buf, *, Tensor(b!) out) -> Tensor(b!)").kind(),
        SchemaKind::Out
    );
    assert_eq!(
        parse("foo.out(Tensor self, *, Tensor(a!) out, Tensor(b!) _scratch_x) -> Tensor(a!)")
            .kind(),
        SchemaKind::Scratch
    );
}

#[test]
fn v1_out_annotations_match_returns_in_order() {
    assert_eq!(
        message("foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(b!)"),
        "Out arguments must have matching return Tensor; furthermore, the ith-argument needs to correspond to the ith return. arg.annotation=a!, ret.annotation=b!"
    );
    assert_eq!(
        message("foo.out(Tensor self, *, Tensor(a!) out) -> Tensor"),
        "Out arguments must have matching return Tensor; furthermore, the ith-argument needs to correspond to the ith return. arg.annotation=a!, ret.annotation=None"
    );
}

#[test]
fn v2_mutable_positional_is_not_returned() {
    // Case 29s: a forgotten `*`.
    assert_eq!(
        message("foo(Tensor self, Tensor(a!) out) -> Tensor(a!)"),
        "If you have a schema with mutable positional args, we expect them to not be returned. schema: foo(Tensor self, Tensor(a!) out) -> Tensor(a!)"
    );
}

#[test]
fn v3_returns_all_mutable_or_all_immutable() {
    assert_eq!(
        message("foo(Tensor(a!) self) -> (Tensor(a!), Tensor)"),
        "NativeFunctions must have either only mutable returns, or only immutable returns. Found: foo(Tensor(a!) self) -> (Tensor(a!), Tensor)"
    );
}

#[test]
fn v4_mutable_return_aliases_out_or_self() {
    assert_eq!(
        message("foo(Tensor self) -> Tensor(a!)"),
        "All mutable returns must be aliased either to a keyword argument, or to \"self\". Did you forget to mark an out argument as keyword-only?"
    );
}

#[test]
fn v5_list_outs_return_nothing() {
    assert_eq!(
        message("foo.out(Tensor self, *, Tensor(a!)[] out) -> Tensor(a!)[]"),
        "out= ops that accept tensor lists as out arguments are expected to have no return type (since you can't do method chaining on them)"
    );
}

#[test]
fn v6_one_return_per_out() {
    // Case 29t.
    assert_eq!(
        message("foo.out(Tensor self, *, Tensor(a!) out0, Tensor(b!) out1) -> Tensor(a!)"),
        "Must return as many arguments as there are out arguments, or no return at all. Got 2 non-scratch out args and 1 returns"
    );
    // Despite the wording, returning nothing is not accepted either.
    assert_eq!(
        message("foo.out(Tensor self, *, Tensor(a!) out) -> ()"),
        "Must return as many arguments as there are out arguments, or no return at all. Got 1 non-scratch out args and 0 returns"
    );
}

#[test]
fn v7_inplace_rules() {
    // Case 29q.
    assert_eq!(
        message("foo_(Tensor self) -> Tensor"),
        "Inplace op foo_ must have a self argument with a mutable annotation"
    );
    // Case 29r.
    assert_eq!(
        message("foo_(Tensor(a!) self) -> Tensor"),
        "Inplace op foo_ with Tensor self must return self"
    );
    assert_eq!(
        message("_foreach_foo_(Tensor(a!)[] self) -> Tensor[]"),
        "Inplace op _foreach_foo_ with non-Tensor self must have no returns"
    );
    assert_eq!(
        message("add_.Tensor(Tensor other) -> Tensor"),
        "Inplace op add_.Tensor must have a self argument with a mutable annotation"
    );
    parse("_foreach_foo_(Tensor(a!)[] self) -> ()");
}

#[test]
fn v8_tensor_options_only_on_functional_schemas() {
    let s = "foo_(Tensor(a!) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor(a!)";
    assert_eq!(
        message(s),
        format!(
            "Found an operator that is not functional or out variant, but has tensor options arguments.This is not allowed- tensor options arguments are only allowed for factory functions.schema: {s}"
        )
    );
    let out = "foo.out(*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, Tensor(a!) out) -> Tensor(a!)";
    assert!(message(out).starts_with("Found an operator that is not functional or out variant"));
}

#[test]
fn v9_functional_overload_only_on_functional_schemas() {
    let s = "foo.functional(Tensor self, Tensor(a!) buf) -> ()";
    let e = error(s);
    assert_eq!(
        e.message,
        format!(
            "Found an operator that is not functional, but its overload contains the string 'functional'.This is a special keyword in the codegen, please use a different overload name.schema: {s}"
        )
    );
    assert_eq!(e.position, Some(4));
    parse("foo.functional(Tensor self) -> Tensor");
}

#[test]
fn v10_no_mutable_argument_before_self() {
    assert_eq!(
        message("foo(Tensor(a!) x, Tensor self) -> ()"),
        "mutable pre_self_positional arguments are not currently supported in the schema: [Tensor(a!) x]"
    );
}

#[test]
fn v11_return_aliases_one_input() {
    assert_eq!(
        message("foo(Tensor(a) x, Tensor(a) self) -> Tensor(a)"),
        "Found a return (None)that aliases multiple inputs (x, self)"
    );
    assert_eq!(
        message("foo(Tensor(a) x, Tensor(a) y) -> Tensor(a) r"),
        "Found a return (r)that aliases multiple inputs (x, y)"
    );
}

#[test]
fn out_and_inplace_together_are_rejected() {
    assert_eq!(
        message("foo_(Tensor(a!) self, *, Tensor(a!) out) -> Tensor(a!)"),
        "A schema cannot be both out= and inplace"
    );
}

// §1.10 signature()

#[test]
fn signature_drops_out_args_and_appends_mutated_inputs() {
    let s = parse(
        "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor observer_on, Tensor fake_quant_on, Tensor(a!) running_min, Tensor(b!) running_max, Tensor(c!) scale, Tensor(d!) zero_point, float averaging_const, int quant_min, int quant_max, int ch_axis, bool per_row_fake_quant=False, bool symmetric_quant=False) -> (Tensor output, Tensor mask)",
    );
    assert_eq!(
        s.signature(false, false, false).to_string(),
        "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor observer_on, Tensor fake_quant_on, Tensor running_min, Tensor running_max, Tensor scale, Tensor zero_point, float averaging_const, int quant_min, int quant_max, int ch_axis, bool per_row_fake_quant=False, bool symmetric_quant=False) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)"
    );
    assert_eq!(
        s.signature(false, false, true).to_string(),
        "_fused_moving_avg_obs_fq_helper(Tensor self, Tensor observer_on, Tensor fake_quant_on, Tensor running_min, Tensor running_max, Tensor scale, Tensor zero_point, float averaging_const, int quant_min, int quant_max, int ch_axis, bool per_row_fake_quant=False, bool symmetric_quant=False) -> (Tensor output, Tensor mask, Tensor running_min_out, Tensor running_max_out, Tensor scale_out, Tensor zero_point_out)"
    );
}

#[test]
fn variants_share_a_signature() {
    let functional = parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
    let inplace =
        parse("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
    let out = parse(
        "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    );
    let expected = "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
    assert_eq!(
        functional.signature(false, false, false).to_string(),
        expected
    );
    assert_eq!(inplace.signature(false, false, false).to_string(), expected);
    assert_eq!(out.signature(false, false, false).to_string(), expected);
    assert_eq!(
        out.signature(true, false, false).to_string(),
        "add(Tensor self, Tensor other, *, Scalar alpha) -> Tensor"
    );
}

#[test]
fn signature_drops_tensor_options_and_namespace() {
    let s = parse(
        "aten::zeros.names(int[] size, *, int? names, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    );
    assert_eq!(
        s.signature(false, false, false).to_string(),
        "zeros(int[] size, *, int? names, MemoryFormat? memory_format=None) -> Tensor"
    );
}

#[test]
fn signature_strips_view_copy_names() {
    let copy = parse("expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor");
    assert_eq!(copy.signature(false, true, false).name.name.base, "expand");
    assert_eq!(
        copy.signature(false, false, false).name.name.base,
        "expand_copy"
    );
    let scatter = parse("slice_scatter(Tensor self, Tensor src, int dim=0) -> Tensor");
    assert_eq!(
        scatter.signature(false, true, false).name.name.base,
        "slice_inverse"
    );
}

#[test]
fn signature_restores_bernoulli_p_default() {
    let s = parse("bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor");
    assert_eq!(
        s.signature(false, false, false).to_string(),
        "bernoulli(Tensor self, float p=0.5, *, Generator? generator=None) -> Tensor"
    );
    // Also when defaults are stripped, as torchgen does.
    assert_eq!(
        s.signature(true, false, false).to_string(),
        "bernoulli(Tensor self, float p=0.5, *, Generator? generator) -> Tensor"
    );
    let inplace = parse(
        "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)",
    );
    assert_eq!(
        inplace.signature(false, false, false),
        s.signature(false, false, false)
    );
}
