//! The parsed model in detail for small inputs: generated functions' metadata, groups, options,
//! lookups, error layout, and the behaviours torchgen's own tests rely on.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeSet;

use switchyard_codegen::{
    BackendMetadata, DeviceCheckType, GroupedItem, NativeFunctions, ParseOptions, Variants,
    YamlError, parse_native_functions, parse_tags_yaml,
};
use switchyard_core::DispatchKey;
use switchyard_schema::{OperatorName, SchemaKind};

fn parse(yaml: &str) -> NativeFunctions {
    parse_native_functions(yaml, "t.yaml", &ParseOptions::default())
        .unwrap_or_else(|e| panic!("unexpected errors: {e:#?}"))
}

fn parse_with(yaml: &str, options: &ParseOptions) -> Result<NativeFunctions, Vec<YamlError>> {
    parse_native_functions(yaml, "t.yaml", options)
}

fn messages(errors: &[YamlError]) -> Vec<&str> {
    errors.iter().map(|e| e.message.as_str()).collect()
}

fn cea(kernel: &str) -> Vec<(DispatchKey, BackendMetadata)> {
    vec![(
        DispatchKey::CompositeExplicitAutograd,
        BackendMetadata {
            kernel: kernel.to_owned(),
            structured: false,
            cpp_namespace: "at::native".to_owned(),
        },
    )]
}

#[test]
fn case_30_generated_out_metadata() {
    let p = parse(
        "- func: op(Tensor self) -> Tensor\n  dispatch:\n    CompositeExplicitAutograd: op\n  autogen: op.out\n",
    );
    assert_eq!(p.num_yaml_functions, 1);
    let out = p.get_str("op.out").unwrap();
    assert_eq!(
        out.func.to_string(),
        "op.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"
    );
    assert_eq!(out.dispatch, cea("op_out"));
    let tags: Vec<&str> = out.tags.iter().map(String::as_str).collect();
    assert_eq!(tags, ["generated", "out", "pt2_compliant_tag"]);
    assert_eq!(out.variants, Variants::FUNCTION);
    assert!(!out.device_guard);
    assert_eq!(out.device_check, DeviceCheckType::NoCheck);
    assert!(out.has_composite_explicit_autograd_kernel);
    assert!(out.is_abstract);
    assert_eq!(out.line, 1);
    let [GroupedItem::Group(g)] = p.grouped[..] else {
        panic!("{:?}", p.grouped)
    };
    assert_eq!(
        (g.functional, g.out, g.inplace, g.mutable),
        (0, 1, None, None)
    );
    assert!(!g.structured(&p.functions));
    assert_eq!(g.root_name(&p.functions), "op");
}

#[test]
fn case_31_two_returns_kernel_name() {
    let p = parse(
        "- func: op_2() -> (Tensor, Tensor)\n  dispatch:\n    CPU: kernel_1\n  autogen: op_2.out\n",
    );
    let out = p.get_str("op_2.out").unwrap();
    assert_eq!(out.dispatch, cea("op_2_out"));
}

#[test]
fn case_33_generated_functional_from_inplace() {
    let p = parse(
        "- func: foo_(Tensor(a!) self) -> Tensor(a!)\n  dispatch:\n    CPU: foo_\n  autogen: foo, foo.out\n",
    );
    let functional = p.get_str("foo").unwrap();
    assert_eq!(functional.dispatch, cea("foo"));
    let g = p.groups().next().unwrap();
    assert_eq!(p.functions[g.functional].func.name.to_string(), "foo");
    assert_eq!(p.functions[g.out].func.name.to_string(), "foo.out");
    assert_eq!(g.inplace, Some(0));
    assert_eq!(g.generated_functional_target(&p.functions), Some(0));
    assert_eq!(p.group_of(0), Some(g));
}

#[test]
fn case_36_generated_from_mutable() {
    let p = parse(
        "- func: foo(Tensor self, Tensor(a!) buf) -> Tensor\n  dispatch:\n    CPU: foo\n  autogen: foo_functional, foo.out\n",
    );
    let functional = p.get_str("foo_functional").unwrap();
    assert!(functional.func.name.name.functional_overload);
    assert_eq!(functional.kind(), SchemaKind::Functional);
    assert_eq!(functional.dispatch, cea("foo_functional"));
    let g = p.groups().next().unwrap();
    assert_eq!(g.mutable, Some(0));
    assert_eq!(g.generated_functional_target(&p.functions), Some(0));
}

#[test]
fn symint_sources_give_symint_kernels() {
    let p = parse(
        "- func: ex(Tensor self, SymInt[] size) -> Tensor\n  dispatch:\n    CompositeExplicitAutograd: ex_symint\n  autogen: ex.out\n",
    );
    assert_eq!(p.get_str("ex.out").unwrap().dispatch, cea("ex_out_symint"));
}

#[test]
fn case_32_core_composite_gets_out_variant() {
    let yaml = "- func: op_3.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor\n  tags: core\n  autogen: op_3.vec_out\n";
    let p = parse(yaml);
    let out = p.get_str("op_3.vec_out").unwrap();
    assert_eq!(out.dispatch, cea("op_3_vec_out_symint"));
    // Without `core`, nothing is generated and the autogen line is silently unused.
    let p = parse(&yaml.replace("  tags: core\n", ""));
    assert_eq!(p.generated().len(), 0);
}

#[test]
fn skip_native_fns_gen_generates_nothing() {
    let options = ParseOptions {
        skip_native_fns_gen: true,
        ..ParseOptions::default()
    };
    let p = parse_with(
        "- func: op(Tensor self) -> Tensor\n  dispatch:\n    CompositeExplicitAutograd: op\n  autogen: op.out\n",
        &options,
    )
    .unwrap();
    assert_eq!(p.functions.len(), 1);
    assert_eq!(p.grouped, [GroupedItem::Function(0)]);
}

#[test]
fn empty_valid_tags_like_torchgen_tests() {
    let options = ParseOptions {
        valid_tags: BTreeSet::new(),
        ..ParseOptions::default()
    };
    let p = parse_with("- func: foo(Tensor self) -> Tensor\n", &options).unwrap();
    assert!(p.functions[0].tags.is_empty());
    let e = parse_with(
        "- func: foo(Tensor self) -> Tensor\n  tags: core\n",
        &options,
    )
    .unwrap_err();
    assert_eq!(messages(&e), ["valid_tags is empty"]);
    // Generated ops still get their tags, as in torchgen.
    let p = parse_with(
        "- func: op(Tensor self) -> Tensor\n  dispatch:\n    CompositeExplicitAutograd: op\n  autogen: op.out\n",
        &options,
    )
    .unwrap();
    let tags: Vec<&str> = p.functions[1].tags.iter().map(String::as_str).collect();
    assert_eq!(tags, ["generated", "out"]);
}

#[test]
fn custom_tag_sets() {
    let options = ParseOptions {
        valid_tags: ["mine".to_owned()].into(),
        ..ParseOptions::default()
    };
    let p = parse_with(
        "- func: foo(Tensor self) -> Tensor\n  tags: mine\n",
        &options,
    )
    .unwrap();
    assert_eq!(p.functions[0].tags, BTreeSet::from(["mine".to_owned()]));
    let e = parse_with(
        "- func: foo(Tensor self) -> Tensor\n  tags: core\n",
        &options,
    )
    .unwrap_err();
    assert_eq!(messages(&e), ["illegal tag core"]);
}

#[test]
fn ignored_keys_are_dropped_but_counted() {
    let options = ParseOptions::gen_py_defaults();
    // The ignored key still counts, so the CompositeImplicitAutograd entry is not redundant.
    let p = parse_with(
        "- func: foo(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd: foo\n    MPS: foo_mps\n",
        &options,
    )
    .unwrap();
    let f = &p.functions[0];
    assert_eq!(f.dispatch.len(), 1);
    assert!(f.has_composite_implicit_autograd_kernel);
    assert!(!f.is_abstract);
    // A table of ignored keys only is empty, and no implicit kernel is added.
    let p = parse_with(
        "- func: foo(Tensor self) -> Tensor\n  dispatch:\n    MPS, XPU, MTIA: foo_mps\n",
        &options,
    )
    .unwrap();
    assert!(p.functions[0].dispatch.is_empty());
    assert!(p.functions[0].is_abstract);
    // Without ignore keys, they are supported keys.
    let p = parse("- func: foo(Tensor self) -> Tensor\n  dispatch:\n    MPS, XPU, MTIA: foo_mps\n");
    assert_eq!(p.functions[0].dispatch.len(), 3);
}

#[test]
fn kernels_of_one_operator_share_a_namespace() {
    let e = parse_with(
        "- func: op_2(Tensor self) -> Tensor\n  dispatch:\n    CPU: kernel_2\n    QuantizedCPU: custom::kernel_3\n",
        &ParseOptions::default(),
    )
    .unwrap_err();
    // torchgen prints these Python sets in hash order; we sort them.
    assert_eq!(
        messages(&e),
        [
            "Codegen only supports one namespace per operator, got {'at::native', 'custom::native'} from {<DispatchKey.CPU: 50>, <DispatchKey.QuantizedCPU: 65>}"
        ]
    );
}

#[test]
fn lookups() {
    let p = parse(concat!(
        "- func: add.Tensor(Tensor self, Tensor other) -> Tensor\n  dispatch:\n    CPU: add\n",
        "- func: custom::thing(Tensor self) -> Tensor\n  dispatch:\n    CPU: thing\n",
    ));
    assert_eq!(p.index_of_str("add.Tensor"), Some(0));
    assert_eq!(p.index_of_str("aten::add.Tensor"), Some(0));
    assert_eq!(p.index_of_str("custom::add.Tensor"), None);
    assert_eq!(p.index_of_str("custom::thing"), Some(1));
    assert_eq!(p.index_of_str("thing"), Some(1));
    assert_eq!(p.index_of_str("add"), None);
    let name = OperatorName::parse("aten::add.Tensor").unwrap();
    assert_eq!(p.index_of(&name), Some(0));
    assert_eq!(
        p.get(&OperatorName::parse("add.Tensor").unwrap())
            .unwrap()
            .namespace,
        "aten"
    );
    assert_eq!(p.functions[1].namespace, "custom");
    assert!(
        p.functions[1].tags.is_empty(),
        "only aten ops get pt2_compliant_tag"
    );
    let cpu = p.backend_index(DispatchKey::CPU);
    assert_eq!(
        cpu.iter()
            .map(|(i, m)| (*i, m.kernel.as_str()))
            .collect::<Vec<_>>(),
        [(0, "add"), (1, "thing")]
    );
    assert_eq!(p.dispatch_keys(), [DispatchKey::CPU]);
}

#[test]
fn error_layout_follows_torchgen() {
    let e = parse_with(
        "- func: foo(Tensor self) -> Tensor\n  bogus_key: 1\n",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        e[0].to_string(),
        "leftover entries: {'bogus_key': 1}\n  in t.yaml:1:\n    foo(Tensor self) -> Tensor"
    );
    assert_eq!(e[0].func.as_deref(), Some("foo(Tensor self) -> Tensor"));
    // Schema errors also say where in the schema the problem is.
    let e = parse_with(
        "- func: foo(Tensor self)->Tensor\n",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        e[0].message,
        "Invalid function schema: foo(Tensor self)->Tensor"
    );
    assert!(e[0].note.is_some());
    assert!(
        e[0].to_string()
            .starts_with("Invalid function schema: foo(Tensor self)->Tensor\n  (")
    );
}

#[test]
fn every_problem_of_one_entry_is_reported() {
    let e = parse_with(
        concat!(
            "- func: foo(Tensor self) -> Tensor\n",
            "  variants: function,method\n",
            "  device_guard: maybe\n",
            "  tags: [core, nope, nada]\n",
            "  dispatch:\n    Bogus: foo\n    XLA: foo\n",
            "  whatever: 1\n",
        ),
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        messages(&e),
        [
            "illegal variant function,method",
            "not a bool: maybe",
            "illegal tag nope",
            "illegal tag nada",
            "unknown dispatch key Bogus",
            "Dispatch key XLA of kernel foo is not a supported dispatch key.",
            "leftover entries: {'whatever': 1}",
        ]
    );
    assert!(e.iter().all(|e| e.line == Some(1)));
}

#[test]
fn duplicate_keys_use_torchgens_message_and_skip_the_entry() {
    let e = parse_with(
        "- func: foo(Tensor self) -> Tensor\n  variants: function\n  variants: method\n  bogus: 1\n",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        messages(&e),
        ["Found a duplicate key in the yaml. key=variants, line=0"]
    );
    assert_eq!(e[0].line, Some(3));
    assert!(e[0].note.as_deref().unwrap().contains("line 2"));
}

#[test]
fn yaml_1_1_values_as_torchgen_reads_them() {
    // PyYAML reads `yes` as a boolean and `0x10` as an integer.
    let p = parse(
        "- func: foo(Tensor self) -> Tensor\n  device_guard: no\n  dispatch:\n    CPU: foo\n",
    );
    assert!(!p.functions[0].device_guard);
    let e = parse_with(
        "- func: foo(Tensor self) -> Tensor\n  variants: 0x10\n",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(messages(&e), ["variants is not a str: 16"]);
    let e = parse_with(
        "- func: foo(Tensor self) -> Tensor\n  python_module: 1.50\n",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(messages(&e), ["not a str: 1.5"]);
}

#[test]
fn syntax_errors_have_lines() {
    let e = parse_with(
        "- func: foo(Tensor self) -> Tensor\n  dispatch: [CPU\n",
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.len(), 1);
    assert!(e[0].line.is_some());
}

#[test]
fn tags_yaml() {
    let tags = parse_tags_yaml(
        "- tag: a\n  desc: first\n- tag: b\n  desc: |\n    second\n",
        "tags.yaml",
    )
    .unwrap();
    assert_eq!(tags, BTreeSet::from(["a".to_owned(), "b".to_owned()]));
    let e = parse_tags_yaml(
        "- tag: a\n  desc: ''\n- tag: b\n- tag: c\n  desc: ok\n",
        "tags.yaml",
    )
    .unwrap_err();
    assert_eq!(
        messages(&e),
        [
            "Tag 'a' must have a non-empty description",
            "Tag 'b' must have a non-empty description"
        ]
    );
    assert_eq!(e[1].line, Some(3));
}
