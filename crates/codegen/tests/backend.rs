//! The external-backend generator (`switchyard-codegen backend`): the backend yaml's validation
//! with torchgen's messages (`shared/reference/codegen.md` §4.1–4.2, §7.2), the registrations
//! and generated in-place/out= wrappers (§4.5), and a committed, compiled fixture
//! (`tests/backend_fixture/`) whose registrations the dispatcher accepts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// Generated code is kept as generated (`cargo fmt` would make it stale).
#[rustfmt::skip]
#[path = "backend_fixture/mod.rs"]
mod backend_fixture;

// Every non-mutating operator of ops.yaml, functional only: compiling this checks the generated
// in-place/out= wrappers of the whole operator set.
#[rustfmt::skip]
#[allow(dead_code, unused_imports)]
#[path = "backend_fixture_all/mod.rs"]
mod backend_fixture_all;

use std::collections::BTreeSet;
use std::sync::OnceLock;
use switchyard_codegen::derivatives::Derivatives;
use switchyard_codegen::emit::backend::{
    BackendKernelKind, BackendRegistration, generate_backend_files, registrations,
};
use switchyard_codegen::emit::from_model::from_model;
use switchyard_codegen::emit::workspace;
use switchyard_codegen::{BackendKey, BackendYaml, NativeFunctions, parse_backend_yaml};
use switchyard_core::{
    Device, DispatchKey, DispatchKeySet, Error, Layout, MemoryFormat, Result, Scalar, ScalarType,
    Tensor,
};

/// The checkout these tests belong to.
fn root() -> std::path::PathBuf {
    workspace::find_workspace_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
}

const FILE: &str = "backend.yaml";

fn model() -> &'static NativeFunctions {
    static MODEL: OnceLock<NativeFunctions> = OnceLock::new();
    MODEL.get_or_init(|| workspace::parse_ops_yaml(&root()).unwrap())
}

/// The autograd layer's formulas (the out= wrappers at the autograd key follow its rule).
fn derivatives() -> &'static Derivatives {
    static D: OnceLock<Derivatives> = OnceLock::new();
    D.get_or_init(|| workspace::parse_derivatives_yaml(&root(), model()).unwrap())
}

fn parse(yaml: &str) -> Option<BackendYaml> {
    parse_backend_yaml(yaml, FILE, model()).unwrap_or_else(|e| panic!("{e}"))
}

fn error(yaml: &str) -> String {
    match parse_backend_yaml(yaml, FILE, model()) {
        Ok(_) => panic!("expected an error for:\n{yaml}"),
        Err(e) => e.message,
    }
}

fn regs(yaml: &str) -> Vec<BackendRegistration> {
    registrations(&parse(yaml).unwrap(), model(), Some(derivatives())).unwrap()
}

/// `(operator, key, kind)` of every registration.
fn reg_set(yaml: &str) -> BTreeSet<(String, DispatchKey, String)> {
    regs(yaml)
        .into_iter()
        .map(|r| (r.operator, r.key, format!("{:?}", r.kind)))
        .collect()
}

fn ops_of(regs: &[BackendRegistration], kind: BackendKernelKind) -> Vec<&str> {
    regs.iter()
        .filter(|r| r.kind == kind)
        .map(|r| r.operator.as_str())
        .collect()
}

fn fixture_yaml() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/backend_fixture/backend.yaml"),
    )
    .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Registrations and wrappers

#[test]
fn functional_only_gives_inplace_and_out_wrappers() {
    let r = regs("backend: XLA\ncpp_namespace: x\nsupported: [abs]\n");
    let ops: Vec<(&str, BackendKernelKind)> =
        r.iter().map(|r| (r.operator.as_str(), r.kind)).collect();
    // torchgen's order within a group: functional, out, in-place.
    assert_eq!(
        ops,
        [
            ("abs", BackendKernelKind::Explicit),
            ("abs.out", BackendKernelKind::GeneratedOut),
            ("abs_", BackendKernelKind::GeneratedInplace),
        ]
    );
    assert!(r.iter().all(|r| r.key == DispatchKey::XLA));
}

#[test]
fn an_explicit_inplace_kernel_wins_over_the_wrapper() {
    let r = regs("backend: XLA\ncpp_namespace: x\nsupported: [add.Tensor, add_.Tensor]\n");
    assert_eq!(
        ops_of(&r, BackendKernelKind::Explicit),
        ["add.Tensor", "add_.Tensor"]
    );
    assert_eq!(ops_of(&r, BackendKernelKind::GeneratedOut), ["add.out"]);
    assert!(ops_of(&r, BackendKernelKind::GeneratedInplace).is_empty());
}

#[test]
fn out_or_inplace_alone_generates_nothing() {
    // No functional kernel: nothing to wrap (the rule needs the functional member).
    let r = regs("backend: XLA\ncpp_namespace: x\nsupported: [abs.out, add_.Tensor]\n");
    let explicit: BTreeSet<&str> = ops_of(&r, BackendKernelKind::Explicit)
        .into_iter()
        .collect();
    assert_eq!(explicit, ["abs.out", "add_.Tensor"].into());
    assert_eq!(r.len(), 2);
}

#[test]
fn views_and_ungrouped_operators_get_no_wrappers() {
    let r = regs(
        "backend: XLA\ncpp_namespace: x\nsupported: [view, transpose.int, max_pool2d, _to_cpu]\n",
    );
    assert_eq!(r.len(), 4);
    assert!(r.iter().all(|r| r.kind == BackendKernelKind::Explicit));
}

#[test]
fn factory_tuple_and_list_out_variants_are_generated() {
    let yaml = "backend: XLA\ncpp_namespace: x\nsupported: [empty.memory_format, max.dim, unbind_copy.int]\n";
    let r = regs(yaml);
    let mut generated = ops_of(&r, BackendKernelKind::GeneratedOut);
    generated.sort_unstable();
    assert_eq!(
        generated,
        ["empty.out", "max.dim_max", "unbind_copy.int_out"]
    );
    let files = generate(yaml);
    let reg = &files["register.rs"];
    // empty.out takes the tensor options from its out tensor.
    assert!(reg.contains(
        "K::empty_memory_format(size, Some(out.dtype()), Some(out.layout()), Some(out.device()), None, memory_format)?"
    ));
    // max.dim_max checks both out tensors before writing either, copies both results and
    // returns both out tensors.
    let checks = reg
        .find("check_backend_out(max, &functional_result0)?;\n    switchyard_ops::runtime::check_backend_out(max_values, &functional_result1)?;")
        .unwrap();
    let first_copy = reg
        .find("copy_to_backend_out(max, &functional_result0)?;")
        .unwrap();
    assert!(checks < first_copy);
    assert!(reg.contains("copy_to_backend_out(max_values, &functional_result1)?;"));
    assert!(reg.contains("Ok((max.clone(), max_values.clone()))"));
    // unbind_copy.int_out returns nothing and copies element-wise.
    assert!(reg.contains("copy_list_to_backend_out(out, &functional_result)?;\n    Ok(())"));
}

#[test]
fn wrapper_bodies_call_the_functional_kernel_then_copy() {
    let files = generate("backend: XLA\ncpp_namespace: x\nsupported: [abs, add.Tensor, mm]\n");
    let reg = &files["register.rs"];
    let body = |name: &str| {
        let start = reg.find(&format!("fn {name}<")).unwrap();
        let end = reg[start..].find("\n}\n").unwrap();
        reg[start..start + end].to_string()
    };
    // Operators tagged `pointwise` (`abs.out`, `add_.Tensor`, `add.out`) check the written
    // tensor for memory overlap with itself and the tensors read, as TensorIterator checks it;
    // the others (`abs_`, untagged as in PyTorch's yaml, and `mm.out`) copy without them, as
    // the functionalization layer's kernels of the same operators do.
    let inplace = body("wrapper_XLA_abs_");
    assert!(inplace.contains("let functional_result = K::abs(self_)?;"));
    assert!(
        inplace
            .contains("switchyard_ops::runtime::copy_to_backend_self(self_, &functional_result)?;")
    );
    assert!(inplace.contains("Ok(self_.clone())"));
    let out = body("wrapper_XLA_abs_out");
    assert!(out.contains("let functional_result = K::abs(self_)?;"));
    assert!(out.contains(
        "switchyard_ops::runtime::copy_to_backend_out_checked(out, &functional_result, &[Some(self_)])?;"
    ));
    assert!(out.contains("Ok(out.clone())"));
    let add_ = body("wrapper_XLA_add__Tensor");
    assert!(
        add_.contains("copy_to_backend_self_checked(self_, &functional_result, &[Some(other)])?;")
    );
    let add_out = body("wrapper_XLA_add_out");
    assert!(add_out.contains(
        "copy_to_backend_out_checked(out, &functional_result, &[Some(self_), Some(other)])?;"
    ));
    let mm_out = body("wrapper_XLA_mm_out");
    assert!(mm_out.contains("let functional_result = K::mm(self_, mat2)?;"));
    assert!(
        mm_out.contains("switchyard_ops::runtime::copy_to_backend_out(out, &functional_result)?;")
    );
    let functional = body("wrapper_XLA_abs");
    assert!(functional.contains("K::abs(self_)"));
    for (name, key) in [("abs", "XLA"), ("abs.out", "XLA"), ("abs_", "XLA")] {
        let op = name.replace('.', "_");
        assert!(
            reg.contains(&format!(
                "lib.impl_({name:?}, Kernel::typed::<op::{op}>(wrapper_{key}_{op}::<K>)"
            )),
            "{name} not registered"
        );
    }
}

#[test]
fn trait_has_one_item_per_listed_kernel() {
    let yaml = "backend: XLA\ncpp_namespace: x\nsupported: [abs, add.Tensor, add_.Tensor, add.Scalar, view]\nautograd: [max_pool2d]\n";
    let files = generate(yaml);
    let tr = &files["native_functions.rs"];
    assert!(tr.contains("pub trait XLANativeFunctions {"));
    let items: BTreeSet<String> = tr
        .lines()
        .filter_map(|l| l.trim().strip_prefix("fn "))
        .map(|l| l[..l.find('(').unwrap()].to_string())
        .collect();
    let expected: BTreeSet<String> = [
        "abs",
        "add_Tensor",
        "add__Tensor",
        "add_Scalar",
        "view",
        "max_pool2d",
    ]
    .map(String::from)
    .into();
    assert_eq!(items, expected);
    assert!(tr.contains("    fn abs(self_: &Tensor) -> Result<Tensor>;"));
    assert!(tr.contains(
        "    fn add_Scalar(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor>;"
    ));
    assert!(tr.contains("    fn view(self_: &Tensor, size: &[i64]) -> Result<Tensor>;"));
    // PyTorch's kernel names (no overload) are in the docs.
    assert!(tr.contains("Kernel `add`, registered at `XLA`."));
    assert!(tr.contains("Kernel `add_`, registered at `XLA`."));
    assert!(tr.contains("Kernel `max_pool2d`, registered at `AutogradXLA`."));
}

#[test]
fn autograd_entries_register_at_the_autograd_key_with_their_wrappers() {
    let set = reg_set(
        "backend: XLA\ncpp_namespace: x\nsupported: [mm]\nautograd: [max_pool2d, sub.Tensor]\n",
    );
    let expect = |op: &str, key, kind: &str| (op.to_string(), key, kind.to_string());
    for e in [
        expect("mm", DispatchKey::XLA, "Explicit"),
        expect("mm.out", DispatchKey::XLA, "GeneratedOut"),
        expect("max_pool2d", DispatchKey::AutogradXLA, "Explicit"),
        expect("sub.Tensor", DispatchKey::AutogradXLA, "Explicit"),
        expect("sub.out", DispatchKey::AutogradXLA, "GeneratedOut"),
        expect("sub_.Tensor", DispatchKey::AutogradXLA, "GeneratedInplace"),
    ] {
        assert!(set.contains(&e), "missing {e:?} in {set:?}");
    }
    assert_eq!(set.len(), 6, "{set:?}");
}

#[test]
fn autograd_kernels_take_the_key_set_and_their_wrappers_pass_it_on() {
    let files =
        generate("backend: XLA\ncpp_namespace: x\nsupported: [abs]\nautograd: [sub.Tensor]\n");
    let tr = &files["native_functions.rs"];
    // The autograd kernel gets the call's key set first; the backend's kernels do not.
    assert!(tr.contains(
        "    fn sub_Tensor(ks: DispatchKeySet, self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor>;"
    ));
    assert!(tr.contains("op::sub_Tensor::redispatch(ks & sets::AFTER_AUTOGRAD, ..)"));
    assert!(tr.contains("    fn abs(self_: &Tensor) -> Result<Tensor>;"));
    let reg = &files["register.rs"];
    let body = |name: &str| {
        let start = reg.find(&format!("fn {name}<")).unwrap();
        let end = reg[start..].find("\n}\n").unwrap();
        reg[start..start + end].to_string()
    };
    let functional = body("wrapper_AutogradXLA_sub_Tensor");
    assert!(functional.contains("(ks: DispatchKeySet, (self_, other, alpha)"));
    assert!(functional.contains("K::sub_Tensor(ks, self_, other, alpha)"));
    let inplace = body("wrapper_AutogradXLA_sub__Tensor");
    assert!(inplace.contains("let functional_result = K::sub_Tensor(ks, self_, other, alpha)?;"));
    assert!(
        inplace
            .contains("copy_to_backend_self_checked(self_, &functional_result, &[Some(other)])?;")
    );
    // The out= wrapper refuses arguments that require grad before anything runs.
    let out = body("wrapper_AutogradXLA_sub_out");
    let check = out
        .find("switchyard_ops::runtime::check_backend_autograd_out(\"sub\", self_.requires_grad() || other.requires_grad() || out.requires_grad())?;")
        .unwrap();
    assert!(check < out.find("K::sub_Tensor(ks, self_, other, alpha)?").unwrap());
    // Wrappers at the backend key neither take nor pass it.
    let abs_out = body("wrapper_XLA_abs_out");
    assert!(abs_out.contains("(_ks: DispatchKeySet,"));
    assert!(abs_out.contains("K::abs(self_)?"));
    assert!(!abs_out.contains("check_backend_autograd_out"));
}

/// The out= wrappers at the autograd key follow the generated Autograd out= kernels' rule
/// (torchgen's): a differentiable operator's refuses its differentiable arguments that require
/// grad, a non-differentiable one's only runs, and an autogenerated out= overload (no
/// derivatives.yaml entry) gets none, so that the autograd fallback runs it.
#[test]
fn autograd_out_wrappers_follow_the_autograd_kernels_rule() {
    let yaml = "backend: XLA\ncpp_namespace: x\nsupported: [abs]\nautograd: [relu, eq.Tensor, index_select]\n";
    let set = reg_set(yaml);
    let has = |op: &str| {
        set.iter()
            .any(|(o, k, _)| o == op && *k == DispatchKey::AutogradXLA)
    };
    assert!(has("relu") && has("relu_"), "{set:?}");
    assert!(!has("relu.out"), "{set:?}");
    assert!(has("eq.Tensor_out") && has("index_select.out"), "{set:?}");
    let files = generate(yaml);
    let reg = &files["register.rs"];
    let body = |name: &str| {
        let start = reg.find(&format!("fn {name}<")).unwrap();
        let end = reg[start..].find("\n}\n").unwrap();
        reg[start..start + end].to_string()
    };
    // eq's outputs are not differentiable: the out= call runs.
    assert!(!body("wrapper_AutogradXLA_eq_Tensor_out").contains("check_backend_autograd_out"));
    // index_select's `index` is non_differentiable: only `self` and `out` are checked.
    assert!(
        body("wrapper_AutogradXLA_index_select_out").contains(
            "check_backend_autograd_out(\"index_select\", self_.requires_grad() || out.requires_grad())?;"
        ),
        "{}",
        body("wrapper_AutogradXLA_index_select_out")
    );
    // Without the formulas every argument is checked.
    let y = parse(yaml).unwrap();
    let files = generate_backend_files(&y, model(), &from_model(model()), FILE, None).unwrap();
    let reg = &files
        .iter()
        .find(|(p, _)| p.ends_with("register.rs"))
        .unwrap()
        .1;
    assert!(reg.contains("fn wrapper_AutogradXLA_relu_out<"));
    assert!(reg.contains(
        "check_backend_autograd_out(\"eq\", self_.requires_grad() || other.requires_grad() || out.requires_grad())?;"
    ));
}

#[test]
fn full_codegen_is_appended_to_supported_and_ir_gen_non_native_are_ignored() {
    let y = parse(
        "backend: XLA\ncpp_namespace: x\nsupported: [abs]\nfull_codegen: [mul.Tensor]\nir_gen: [relu]\nnon_native:\n  - func: foo() -> Tensor\n",
    )
    .unwrap();
    let names: Vec<String> = y
        .supported
        .iter()
        .map(|k| model().functions[k.function].func.name.unqualified())
        .collect();
    assert_eq!(names, ["abs", "mul.Tensor"]);
    assert_eq!(y.full_codegen.len(), 1);
    let set =
        reg_set("backend: XLA\ncpp_namespace: x\nfull_codegen: [mul.Tensor]\nir_gen: [relu]\n");
    assert!(
        set.iter().all(|(op, _, _)| op.starts_with("mul")),
        "{set:?}"
    );
    assert_eq!(set.len(), 3);
}

#[test]
fn symint_suffixes_the_kernel_name_only() {
    let y = parse("backend: XLA\ncpp_namespace: x\nsupported: [empty.memory_format, view, abs]\nsymint: [empty.memory_format, view]\n").unwrap();
    let kernels: Vec<&str> = y.supported.iter().map(|k| k.kernel.as_str()).collect();
    assert_eq!(kernels, ["empty_symint", "view_symint", "abs"]);
    let tr = &generate("backend: XLA\ncpp_namespace: x\nsupported: [view]\nsymint: [view]\n")["native_functions.rs"];
    assert!(tr.contains("fn view(self_: &Tensor, size: &[i64]) -> Result<Tensor>;"));
}

#[test]
fn use_out_as_primary_turns_wrappers_off() {
    let r = regs(
        "backend: XLA\ncpp_namespace: x\nuse_out_as_primary: true\ndevice_guard: true\nsupported: [abs]\n",
    );
    assert_eq!(r.len(), 1);
}

#[test]
fn duplicates_are_harmless_and_class_name_is_used() {
    let y = parse("backend: XLA\ncpp_namespace: torch_xla::ns\nclass_name: MyKernels\nsupported: [abs, abs, abs]\n").unwrap();
    assert_eq!(y.supported.len(), 1);
    assert_eq!(y.class_name, "MyKernels");
    assert_eq!(y.cpp_namespace, "torch_xla::ns");
    let y = parse("backend: PrivateUse1\ncpp_namespace: x\nsupported: [abs]\n").unwrap();
    assert_eq!(y.class_name, "PrivateUse1NativeFunctions");
    assert_eq!(y.backend_key, BackendKey::Known(DispatchKey::PrivateUse1));
    assert_eq!(y.autograd_key, None);
}

#[test]
fn empty_supported_generates_nothing() {
    // torchgen case 3: no operator, so `backend` is never parsed.
    assert_eq!(parse("backend: XLA\ncpp_namespace: x\nsupported:\n"), None);
    assert_eq!(
        parse("backend: BAD_XLA\ncpp_namespace: x\nsupported: []\n"),
        None
    );
    assert_eq!(
        parse("backend: BAD_XLA\ncpp_namespace: x\nautograd: [abs]\n"),
        None
    );
    let tmp = std::env::temp_dir().join(format!("switchyard-backend-empty-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let yaml = tmp.join("b.yaml");
    std::fs::write(&yaml, "backend: XLA\ncpp_namespace: x\n").unwrap();
    let out = tmp.join("out");
    assert!(
        workspace::write_backend(model(), &yaml, &out)
            .unwrap()
            .is_empty()
    );
    assert!(!out.exists());
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn a_torchgen_only_key_parses_but_cannot_be_generated() {
    let y = parse("backend: MKLDNN\ncpp_namespace: x\nsupported: [abs]\n").unwrap();
    assert_eq!(y.backend_key, BackendKey::TorchgenOnly("MKLDNN"));
    assert_eq!(y.class_name, "MKLDNNNativeFunctions");
    let e = registrations(&y, model(), None).unwrap_err();
    assert!(e.0.contains("MKLDNN"), "{e}");
}

fn generate(yaml: &str) -> std::collections::HashMap<String, String> {
    let y = parse(yaml).unwrap();
    generate_backend_files(&y, model(), &from_model(model()), FILE, Some(derivatives()))
        .unwrap()
        .into_iter()
        .map(|(p, t)| (p.display().to_string(), t))
        .collect()
}

#[test]
fn every_file_carries_the_generated_header() {
    let files = generate("backend: XLA\ncpp_namespace: x\nsupported: [abs]\n");
    let mut names: Vec<&String> = files.keys().collect();
    names.sort();
    assert_eq!(names, ["mod.rs", "native_functions.rs", "register.rs"]);
    for (name, text) in &files {
        assert!(
            text.starts_with("// @generated by `cargo run -p switchyard-codegen -- backend"),
            "{name}"
        );
        assert!(text.contains("Do not edit"), "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// The committed fixture: fresh, compiled (this file includes it), and accepted by the dispatcher.

#[test]
fn committed_fixtures_are_up_to_date() {
    let root = root();
    for (yaml, dir) in workspace::BACKEND_YAMLS {
        let stale = workspace::stale_backend(model(), &root.join(yaml), &root.join(dir)).unwrap();
        assert!(
            stale.is_empty(),
            "stale (run `cargo run -p switchyard-codegen -- generate`): {stale:?}"
        );
    }
}

#[test]
fn the_all_operators_fixture_wraps_every_group() {
    let yaml = std::fs::read_to_string(
        root().join("crates/codegen/tests/backend_fixture_all/all_ops.yaml"),
    )
    .unwrap();
    let r = regs(&yaml);
    let nf = model();
    // Every group whose functional operator is listed gets all its in-place and out= members.
    for g in nf.groups() {
        if !r.iter().any(|x| x.function == g.functional) {
            continue;
        }
        for m in [Some(g.out), g.inplace].into_iter().flatten() {
            assert!(
                r.iter()
                    .any(|x| x.function == m && x.kind != BackendKernelKind::Explicit),
                "{} lacks a generated wrapper",
                nf.functions[m].func.name
            );
        }
    }
    assert!(ops_of(&r, BackendKernelKind::GeneratedOut).len() > 100);
}

#[test]
fn fixture_registrations_are_the_expected_ones() {
    let set = reg_set(&fixture_yaml());
    let kinds = |kind: &str| -> BTreeSet<&str> {
        set.iter()
            .filter(|(_, _, k)| k == kind)
            .map(|(op, _, _)| op.as_str())
            .collect()
    };
    assert_eq!(
        kinds("GeneratedInplace"),
        ["abs_", "add_.Scalar", "mul_.Tensor", "sub_.Tensor"].into()
    );
    assert_eq!(
        kinds("GeneratedOut"),
        [
            "abs.out",
            "add.out",
            "add.Scalar_out",
            "empty.out",
            "max.dim_max",
            "mul.out",
            "sub.out",
            "unbind_copy.int_out"
        ]
        .into()
    );
    assert!(!set.iter().any(|(op, _, _)| op.starts_with("relu")));
}

/// A backend whose kernels all fail: enough to register it.
struct Failing;

fn no<T>() -> Result<T> {
    Err(Error::runtime("not implemented by the fixture"))
}

impl backend_fixture::FixtureNativeFunctions for Failing {
    fn mm(_: &Tensor, _: &Tensor) -> Result<Tensor> {
        no()
    }
    fn mm_out(_: &Tensor, _: &Tensor, _: &Tensor) -> Result<Tensor> {
        no()
    }
    fn transpose_int(_: &Tensor, _: i64, _: i64) -> Result<Tensor> {
        no()
    }
    fn _to_cpu(_: &[Tensor]) -> Result<Vec<Tensor>> {
        no()
    }
    fn view(_: &Tensor, _: &[i64]) -> Result<Tensor> {
        no()
    }
    fn unbind_copy_int(_: &Tensor, _: i64) -> Result<Vec<Tensor>> {
        no()
    }
    fn add_Tensor(_: &Tensor, _: &Tensor, _: Scalar) -> Result<Tensor> {
        no()
    }
    fn add__Tensor(_: &Tensor, _: &Tensor, _: Scalar) -> Result<Tensor> {
        no()
    }
    fn add_Scalar(_: &Tensor, _: Scalar, _: Scalar) -> Result<Tensor> {
        no()
    }
    fn mul_Tensor(_: &Tensor, _: &Tensor) -> Result<Tensor> {
        no()
    }
    fn empty_memory_format(
        _: &[i64],
        _: Option<ScalarType>,
        _: Option<Layout>,
        _: Option<Device>,
        _: Option<bool>,
        _: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        no()
    }
    fn max_dim(_: &Tensor, _: i64, _: bool) -> Result<(Tensor, Tensor)> {
        no()
    }
    fn abs(_: &Tensor) -> Result<Tensor> {
        no()
    }
    fn max_pool2d(
        ks: DispatchKeySet,
        _: &Tensor,
        _: &[i64],
        _: &[i64],
        _: &[i64],
        _: &[i64],
        _: bool,
    ) -> Result<Tensor> {
        *AUTOGRAD_KS.lock().unwrap() = Some(ks);
        no()
    }
    fn sub_Tensor(ks: DispatchKeySet, _: &Tensor, _: &Tensor, _: Scalar) -> Result<Tensor> {
        *AUTOGRAD_KS.lock().unwrap() = Some(ks);
        no()
    }
}

/// The key set the fixture's last autograd kernel was called with.
static AUTOGRAD_KS: std::sync::Mutex<Option<DispatchKeySet>> = std::sync::Mutex::new(None);

#[test]
fn fixture_registers_at_the_dispatcher_with_matching_schemas() {
    let d = switchyard_dispatch::Dispatcher::singleton();
    let slot = |op: &str, key: DispatchKey| {
        d.find_schema_or_error(&format!("aten::{op}"))
            .unwrap()
            .describe_slot(key)
            .map(|(debug, _)| debug)
    };
    // Every typed kernel's inferred schema is checked against the operator's at registration.
    let lib = backend_fixture::library::<Failing>(d).unwrap();
    let expected = regs(&fixture_yaml());
    assert!(expected.len() > 20);
    for r in &expected {
        let debug = slot(&r.operator, r.key).unwrap_or_default();
        assert!(
            debug.starts_with(&format!("wrapper_{}_", r.key.name())),
            "{} at {:?}: {debug}",
            r.operator,
            r.key
        );
    }
    // A call at the backend key reaches the generated in-place wrapper, which calls the
    // backend's functional kernel.
    let t = Tensor::from_slice(&[1.0f32, -2.0]).unwrap();
    let e =
        switchyard_ops::op::abs_::redispatch(DispatchKeySet::from(DispatchKey::PrivateUse1), &t)
            .unwrap_err();
    assert!(
        e.to_string().contains("not implemented by the fixture"),
        "{e}"
    );
    // A call at the autograd key reaches the backend's autograd kernel with the key set it
    // was called with, directly or through a generated in-place wrapper, so that the kernel
    // can redispatch below autograd.
    let autograd = DispatchKeySet::from(DispatchKey::AutogradPrivateUse1)
        .add(DispatchKey::ADInplaceOrView)
        .add(DispatchKey::PrivateUse1);
    let one = Scalar::from(1);
    let calls: [&dyn Fn() -> Result<()>; 3] = [
        &|| switchyard_ops::op::sub_Tensor::redispatch(autograd, &t, &t, one).map(drop),
        &|| switchyard_ops::op::sub__Tensor::redispatch(autograd, &t, &t, one).map(drop),
        &|| {
            switchyard_ops::op::max_pool2d::redispatch(autograd, &t, &[1], &[1], &[0], &[1], false)
                .map(drop)
        },
    ];
    for call in calls {
        *AUTOGRAD_KS.lock().unwrap() = None;
        let e = call().unwrap_err();
        assert!(
            e.to_string().contains("not implemented by the fixture"),
            "{e}"
        );
        assert_eq!(*AUTOGRAD_KS.lock().unwrap(), Some(autograd));
    }
    // The generated out= wrapper at the autograd key refuses arguments that require grad
    // (before calling anything), as the generated Autograd out= kernels do.
    let x = Tensor::from_slice(&[1.0f32, -2.0]).unwrap();
    x.set_requires_grad(true).unwrap();
    let out = Tensor::from_slice(&[0.0f32, 0.0]).unwrap();
    *AUTOGRAD_KS.lock().unwrap() = None;
    let e = switchyard_ops::op::sub_out::redispatch(autograd, &x, &t, one, &out).unwrap_err();
    assert!(
        e.to_string().contains(
            "sub(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
        ),
        "{e}"
    );
    assert_eq!(
        *AUTOGRAD_KS.lock().unwrap(),
        None,
        "refused before the kernel ran"
    );
    // Without grad it reaches the functional autograd kernel.
    let e = switchyard_ops::op::sub_out::redispatch(autograd, &t, &t, one, &out).unwrap_err();
    assert!(
        e.to_string().contains("not implemented by the fixture"),
        "{e}"
    );
    assert_eq!(*AUTOGRAD_KS.lock().unwrap(), Some(autograd));
    // Dropping the library deregisters everything.
    drop(lib);
    assert!(
        !slot("abs_", DispatchKey::PrivateUse1)
            .unwrap_or_default()
            .starts_with("wrapper_PrivateUse1")
    );
    // register() into a key-less Impl library works the same.
    let mut lib = switchyard_dispatch::Library::new_on(
        d,
        switchyard_dispatch::LibraryKind::Impl,
        "aten",
        None,
    )
    .unwrap();
    backend_fixture::register::<Failing>(&mut lib).unwrap();
    assert_eq!(
        slot("max_pool2d", DispatchKey::AutogradPrivateUse1).as_deref(),
        Some("wrapper_AutogradPrivateUse1_max_pool2d")
    );
}

// ---------------------------------------------------------------------------------------------
// Errors: torchgen's exact messages (§4.2, §7.2), one test each.

#[test]
fn error_not_a_mapping() {
    assert_eq!(
        error("- abs\n"),
        "Expected yaml_values to be a dict, got <class 'list'>"
    );
    assert_eq!(
        error(""),
        "Expected yaml_values to be a dict, got <class 'NoneType'>"
    );
}

#[test]
fn error_missing_backend() {
    assert_eq!(
        error("cpp_namespace: x\nsupported: [abs]\n"),
        "You must provide a value for \"backend\""
    );
}

#[test]
fn error_empty_backend() {
    assert_eq!(
        error("backend:\ncpp_namespace: x\nsupported: [abs]\n"),
        "You must provide a value for \"backend\""
    );
}

#[test]
fn error_missing_cpp_namespace() {
    assert_eq!(
        error("backend: XLA\nsupported: [abs]\n"),
        "You must provide a value for \"cpp_namespace\""
    );
}

#[test]
fn error_blank_cpp_namespace() {
    assert_eq!(
        error("backend: XLA\ncpp_namespace: '  '\nsupported: [abs]\n"),
        "You must provide a value for \"cpp_namespace\""
    );
}

#[test]
fn error_use_out_as_primary_not_bool() {
    assert_eq!(
        error("backend: XLA\ncpp_namespace: x\nuse_out_as_primary: frue\nsupported: [abs]\n"),
        "You must provide either True or False for use_out_as_primary. Provided: frue"
    );
}

#[test]
fn error_device_guard_not_bool() {
    assert_eq!(
        error("backend: XLA\ncpp_namespace: x\ndevice_guard: 1\nsupported: [abs]\n"),
        "You must provide either True or False for device_guard. Provided: 1"
    );
}

#[test]
fn error_supported_not_a_list() {
    assert_eq!(
        error("backend: XLA\ncpp_namespace: x\nsupported: abs\n"),
        "expected \"supported\" to be a list, but got: abs (of type <class 'str'>)"
    );
}

#[test]
fn error_symint_not_a_list() {
    assert_eq!(
        error("backend: XLA\ncpp_namespace: x\nsupported: [view]\nsymint: view\n"),
        "expected \"symint\" to be a list, but got: view (of type <class 'str'>)"
    );
}

#[test]
fn error_autograd_not_a_list() {
    assert_eq!(
        error("backend: XLA\ncpp_namespace: x\nsupported: [abs]\nautograd: add.Tensor\n"),
        "expected \"autograd\" to be a list, but got: add.Tensor"
    );
    // Unlike `supported`, an empty `autograd:` is None, not a list.
    assert_eq!(
        error("backend: XLA\ncpp_namespace: x\nsupported: [abs]\nautograd:\n"),
        "expected \"autograd\" to be a list, but got: None"
    );
}

#[test]
fn error_unexpected_key() {
    assert_eq!(
        error("backend: XLA\ncpp_namespace: x\nsupported: [abs]\ninvalid_key: invalid_val\n"),
        "backend.yaml contains unexpected keys: invalid_key. Only the following keys are supported: backend, class_name, cpp_namespace, extra_headers, supported, autograd, full_codegen, non_native, ir_gen, symint"
    );
}

#[test]
fn error_extra_headers_is_listed_but_unexpected() {
    assert!(
        error("backend: XLA\ncpp_namespace: x\nsupported: [abs]\nextra_headers: [a.h]\n")
            .starts_with("backend.yaml contains unexpected keys: extra_headers. Only")
    );
}

#[test]
fn error_unknown_backend_key() {
    assert_eq!(
        error("backend: NOT_XLA\ncpp_namespace: x\nsupported: [abs]\n"),
        "unknown dispatch key NOT_XLA\n  The provided value for \"backend\" must be a valid DispatchKey, but got NOT_XLA."
    );
}

#[test]
fn error_unknown_autograd_key() {
    // torchgen case 10b: Vulkan is a key, AutogradVulkan is not.
    assert_eq!(
        error(
            "backend: Vulkan\ncpp_namespace: x\nsupported: [add.Tensor]\nautograd: [sub.Tensor]\n"
        ),
        "unknown dispatch key AutogradVulkan\n  The \"autograd\" key was specified, which indicates that you would like to override the behavior of autograd for some operators on your backend. However \"AutogradVulkan\" is not a valid DispatchKey."
    );
}

#[test]
fn error_invalid_operator_name() {
    assert_eq!(
        error("backend: XLA\ncpp_namespace: x\nsupported: [abs, abs_BAD]\n"),
        "Found an invalid operator name: abs_BAD"
    );
    // torchgen case 10: `add` has no empty overload.
    assert_eq!(
        error("backend: Vulkan\ncpp_namespace: x\nsupported: [add]\nautograd: [sub]\n"),
        "Found an invalid operator name: add"
    );
}

#[test]
fn error_invalid_operator_name_under_autograd() {
    assert_eq!(
        error("backend: XLA\ncpp_namespace: x\nsupported: [abs]\nautograd: [not_an_op.Tensor]\n"),
        "Found an invalid operator name: not_an_op.Tensor"
    );
}

#[test]
fn error_duplicate_backend_key() {
    assert_eq!(
        error("backend: CPU\ncpp_namespace: x\nsupported: [abs]\n"),
        "Duplicate backend key: CPU"
    );
}

#[test]
fn error_supported_and_autograd_mixed_in_a_group() {
    // torchgen case 11: the kernel names, not the operator names, are printed.
    assert_eq!(
        error("backend: XLA\ncpp_namespace: x\nsupported: [add.Tensor]\nautograd: [add.out]\n"),
        "Currently, all variants of an op must either be registered to a backend key, or to a backend's autograd key. They cannot be mix and matched. If this is something you need, feel free to create an issue! add is listed under \"supported\", but add_out is listed under \"autograd\"."
    );
}

#[test]
fn error_same_operator_in_both_lists() {
    assert!(
        error("backend: XLA\ncpp_namespace: x\nsupported: [mm]\nautograd: [mm]\n")
            .ends_with("mm is listed under \"supported\", but mm is listed under \"autograd\".")
    );
}

#[test]
fn error_class_name_not_an_identifier() {
    assert!(
        error("backend: XLA\ncpp_namespace: x\nclass_name: 'a::B'\nsupported: [abs]\n")
            .starts_with("class_name must be a Rust identifier")
    );
}

// ---------------------------------------------------------------------------------------------
// The command.

fn codegen(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_switchyard-codegen"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn command_writes_then_checks_a_backend() {
    let tmp = std::env::temp_dir().join(format!("switchyard-backend-cli-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let yaml = tmp.join("my_backend.yaml");
    std::fs::write(
        &yaml,
        "backend: PrivateUse1\ncpp_namespace: my\nsupported: [abs]\n",
    )
    .unwrap();
    let out = tmp.join("generated");
    let (y, o) = (yaml.to_str().unwrap(), out.to_str().unwrap());
    let check = codegen(&["backend", "--source-yaml", y, "--output-dir", o, "--check"]);
    assert!(!check.status.success(), "nothing written yet: stale");
    let write = codegen(&["backend", "--source-yaml", y, "--output-dir", o]);
    assert!(
        write.status.success(),
        "{}",
        String::from_utf8_lossy(&write.stderr)
    );
    for f in ["mod.rs", "native_functions.rs", "register.rs"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let header = std::fs::read_to_string(out.join("mod.rs")).unwrap();
    assert!(header.starts_with(
        "// @generated by `cargo run -p switchyard-codegen -- backend --source-yaml my_backend.yaml`"
    ));
    let check = codegen(&["backend", "--check", "--output-dir", o, "--source-yaml", y]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    std::fs::write(
        &yaml,
        "backend: NOT_XLA\ncpp_namespace: my\nsupported: [abs]\n",
    )
    .unwrap();
    let bad = codegen(&["backend", "--source-yaml", y, "--output-dir", o]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).starts_with("unknown dispatch key NOT_XLA\n"));
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn command_usage() {
    let help = codegen(&["--help"]);
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains(
        "backend --source-yaml FILE.yaml --output-dir DIR [--ops-yaml OPS.yaml] [--check]"
    ));
    let missing = codegen(&["backend", "--source-yaml", "x.yaml"]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("needs --source-yaml and --output-dir")
    );
}

// ---------------------------------------------------------------------------------------------
// Lazy backends (`backend: Lazy`): `ir_gen` / `non_native` parsed, and the node table, trace
// kernels and lowerings generated for `full_codegen` (`emit::lazy`).

const LAZY_YAML: &str = "backend: Lazy
cpp_namespace: lazy_fixture
class_name: LazyFixture
full_codegen:
  - add.Tensor
  - view_copy
  - native_layer_norm
  - copy
  - sum.dim_IntList
ir_gen:
  - _to_copy
supported:
  - _copy_from
non_native:
  - func: scalar(Scalar value, ScalarType type) -> Tensor
    opkind: prim::Constant
    properties:
      - ShapeCompute
      - TreatScalarsAsConstants
  - func: device_data() -> Tensor
";

#[test]
fn lazy_yaml_keeps_full_codegen_ir_gen_and_non_native() {
    let y = parse(LAZY_YAML).unwrap();
    assert!(y.is_lazy());
    let name = |f: usize| model().functions[f].func.name.unqualified();
    let full: Vec<String> = y.full_codegen.iter().map(|&f| name(f)).collect();
    assert_eq!(
        full,
        [
            "add.Tensor",
            "view_copy",
            "native_layer_norm",
            "copy",
            "sum.dim_IntList"
        ]
    );
    let ir: Vec<String> = y.ir_gen.iter().map(|&f| name(f)).collect();
    assert_eq!(ir, ["_to_copy"]);
    assert_eq!(y.non_native.len(), 2);
    assert_eq!(y.non_native[0].op_kind(), "prim::Constant");
    assert_eq!(
        y.non_native[0].properties,
        ["ShapeCompute", "TreatScalarsAsConstants"]
    );
    // torchgen's default kind for an entry without `opkind`.
    assert_eq!(y.non_native[1].op_kind(), "lazy_tensors::device_data");
    // full_codegen members are still in the backend index (registered), apart from supported.
    assert!(y.is_full_codegen(y.full_codegen[0]));
    assert!(!y.is_full_codegen(y.supported[0].function));
}

#[test]
fn lazy_yaml_refuses_bad_non_native_entries() {
    let bad_prop = "backend: Lazy\ncpp_namespace: x\nfull_codegen: [abs]\nnon_native:\n  - func: scalar(Scalar value) -> Tensor\n    properties: [Fast]\n";
    assert!(error(bad_prop).contains("Invalid LazyIrProperty: Fast"));
    let no_func = "backend: Lazy\ncpp_namespace: x\nfull_codegen: [abs]\nnon_native:\n  - opkind: prim::Constant\n";
    assert!(error(no_func).contains("\"func\""));
    let bad_ir_gen = "backend: Lazy\ncpp_namespace: x\nfull_codegen: [abs]\nir_gen: [no_such_op]\n";
    assert_eq!(
        error(bad_ir_gen),
        "Found an invalid operator name: no_such_op"
    );
}

#[test]
fn lazy_node_class_names_are_torchgens() {
    use switchyard_codegen::emit::lazy::node_class_name;
    assert_eq!(node_class_name("add", "Tensor"), "AddTensor");
    assert_eq!(node_class_name("native_batch_norm", ""), "NativeBatchNorm");
    // Python's str.capitalize lowers the rest of each part.
    assert_eq!(node_class_name("sum", "dim_IntList"), "SumDimIntlist");
    assert_eq!(node_class_name("_softmax", ""), "Softmax");
    assert_eq!(node_class_name("transpose_copy", "int"), "TransposeCopyInt");
}

#[test]
fn lazy_backend_generates_nodes_kernels_and_lowerings() {
    let files = generate(LAZY_YAML);
    let mut names: Vec<&String> = files.keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "kernels_0.rs",
            "kernels_1.rs",
            "lowerings_0.rs",
            "lowerings_1.rs",
            "mod.rs",
            "native_functions.rs",
            "nodes.rs",
            "register.rs"
        ]
    );
    let all_kernels = format!("{}{}", files["kernels_0.rs"], files["kernels_1.rs"]);
    let all_lowerings = format!("{}{}", files["lowerings_0.rs"], files["lowerings_1.rs"]);
    let kernel = |name: &str| -> String {
        let start = all_kernels
            .find(&format!("pub(crate) fn {name}("))
            .unwrap_or_else(|| panic!("no kernel {name}"));
        let rest = &all_kernels[start..];
        rest[..rest.find("\n}\n").unwrap()].to_string()
    };
    // Counter names are torchgen's kernel names (no overload).
    let add = kernel("lazy_add_Tensor");
    assert!(add.contains("Counter::new(\"lazy::add\")"), "{add}");
    // Operands before shape inference, the Scalar lifted to an operand.
    let (t, s, m) = (
        add.find("b.tensor(other)?").unwrap(),
        add.find("b.scalar(&alpha)?").unwrap(),
        add.find("switchyard_ops::meta::add_tensor(").unwrap(),
    );
    assert!(t < s && s < m, "{add}");
    // IR reuse: the trie is asked after the operands, before any shape inference.
    let r = add
        .find("if let Some(outs) = b.reuse()? {\n        return output(&outs, 0);\n    }")
        .unwrap_or_else(|| panic!("{add}"));
    assert!(s < r && r < m, "{add}");
    // Shape inference runs only when the thread's shape cache misses, and fills it.
    let (k, i, r) = (
        add.find("let shapes = match b.known_shapes() {\n        Some(shapes) => shapes,\n        None => {").unwrap_or_else(|| panic!("{add}")),
        add.find("switchyard_ops::meta::add_tensor(").unwrap(),
        add.find("b.remember_shapes(shapes)\n        }\n    };\n    b.build_one(shapes)").unwrap_or_else(|| panic!("{add}")),
    );
    assert!(r > i && i > k && k > s, "{add}");
    // Structured (and delegating) operators call their meta function on the lazy tensors...
    assert!(kernel("lazy_sum_dim_IntList").contains("switchyard_ops::meta::sum_dim_intlist("));
    // ...a generated `<view>_copy` runs its view on meta shadows (`view_copy`: reshape, the
    // kernel's fallback) and takes contiguous shapes of the result...
    let view = kernel("lazy_view_copy");
    assert!(
        view.contains("op::reshape::call(&b.shadow(self_)?, size)?")
            && view.contains("let shapes = contiguous_shapes_of_tensors(&[&o0]);")
            && !view.contains("op::view_copy::call"),
        "{view}"
    );
    assert!(view.contains("b.attr(Attr::from(size));"), "{view}");
    // ...and the others run their Meta kernel on meta shadows.
    let layer_norm = kernel("lazy_native_layer_norm");
    assert!(
        layer_norm.contains("op::native_layer_norm::call(&b.shadow(input)?, normalized_shape,")
            && layer_norm.contains("let shapes = shapes_of_tensors(&[&o0, &o1, &o2]);"),
        "{layer_norm}"
    );
    let ln = kernel("lazy_native_layer_norm");
    assert!(ln.contains("b.opt_tensor(weight)?;"), "{ln}");
    assert!(
        ln.contains("Ok((output(&outs, 0)?, output(&outs, 1)?, output(&outs, 2)?))"),
        "{ln}"
    );
    // `copy` reads its source from any device.
    assert!(kernel("lazy_copy").contains("b.tensor_any_device(src)?;"));
    // ir_gen: a lowering and a node entry, no kernel.
    assert!(!all_kernels.contains("fn lazy__to_copy("));
    assert!(all_lowerings.contains("fn lower__to_copy(ins: &LowerArgs<'_>)"));
    // Lowerings call the CPU kernel with the CPU-only key set, attributes by schema position.
    assert!(all_lowerings.contains(
        "op::add_Tensor::redispatch(cpu_only(), &ins.tensor(0)?, &ins.tensor(1)?, ins.scalar(2)?)?"
    ));
    assert!(all_lowerings.contains(
        "op::sum_dim_IntList::redispatch(cpu_only(), &ins.tensor(0)?, ins.opt_ints(1)?, ins.bool(2)?, ins.opt_dtype(3)?)?"
    ));
    // The node table: class names, hashes of the qualified name, argument kinds, lowerings.
    let nodes = &files["nodes.rs"];
    assert!(nodes.contains("class: \"AddTensor\""));
    assert!(nodes.contains("op_hash: Hash128::of_str(\"aten::add\")"));
    assert!(nodes.contains("arg_kinds: &[ArgKind::Tensor, ArgKind::Tensor, ArgKind::Scalar]"));
    assert!(nodes.contains("num_outputs: 3"));
    assert!(nodes.contains("pub(crate) const NODE__to_copy: usize = 5;"));
    assert!(nodes.contains(
        "NonNativeInfo { name: \"scalar\", op_kind: \"prim::Constant\", schema: \"scalar(Scalar value, ScalarType type) -> Tensor\", properties: &[\"ShapeCompute\", \"TreatScalarsAsConstants\"] }"
    ));
    // The trait: a generated kernel is a default body, a supported one is the backend's.
    let tr = &files["native_functions.rs"];
    assert!(tr.contains("fn add_Tensor(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {\n        super::kernels_0::lazy_add_Tensor(self_, other, alpha)\n    }"));
    assert!(tr.contains(
        "fn _copy_from(self_: &Tensor, dst: &Tensor, non_blocking: bool) -> Result<Tensor>;"
    ));
    let module = &files["mod.rs"];
    assert!(module.contains("pub mod nodes;\npub mod kernels_0;"));
}

#[test]
fn lazy_backend_keeps_composite_members_and_wraps_the_rest() {
    let set = reg_set(LAZY_YAML);
    // add_.Tensor / add.out get the generated wrappers around the traced add.Tensor...
    assert!(set.contains(&(
        "add_.Tensor".into(),
        DispatchKey::Lazy,
        "GeneratedInplace".into()
    )));
    assert!(set.contains(&("add.out".into(), DispatchKey::Lazy, "GeneratedOut".into())));
    // ...but copy_ keeps its CompositeExplicitAutograd kernel (copy_ → _copy_from): a wrapper
    // would end in copy_ itself.
    assert!(!set.iter().any(|(op, _, _)| op == "copy_"), "{set:?}");
    // A non-lazy backend's full_codegen gets no lazy files.
    let files = generate("backend: XLA\ncpp_namespace: x\nfull_codegen: [abs]\n");
    assert_eq!(files.len(), 3);
}

#[test]
fn lazy_backend_flattens_tensor_lists_and_returns_tensor_lists() {
    let files = generate(
        "backend: Lazy\ncpp_namespace: x\nfull_codegen:\n  - cat\n  - index.Tensor\n  - split_copy.Tensor\n",
    );
    let all_kernels = format!("{}{}", files["kernels_0.rs"], files["kernels_1.rs"]);
    let all_lowerings = format!("{}{}", files["lowerings_0.rs"], files["lowerings_1.rs"]);
    let kernel = |name: &str| -> String {
        let start = all_kernels
            .find(&format!("pub(crate) fn {name}("))
            .unwrap_or_else(|| panic!("no kernel {name}"));
        let rest = &all_kernels[start..];
        rest[..rest.find("\n}\n").unwrap()].to_string()
    };
    // A Tensor[] operand: its elements become operands; the structured meta reads the list.
    let cat = kernel("lazy_cat");
    assert!(cat.contains("b.tensor_list(tensors)?;"), "{cat}");
    assert!(cat.contains("switchyard_ops::meta::cat(tensors, dim, Outs::Functional)"));
    // An index list: a boolean mask goes to the fallback before anything is counted, CPU
    // indices are accepted, and the shape comes from meta shadows (the structured meta
    // broadcasts indices as views, which lazy tensors cannot give).
    let index = kernel("lazy_index_Tensor");
    let (guard, count) = (
        index
            .find("if has_mask(indices) {\n        return switchyard_backend::call_fallback::<op::index_Tensor>(crate::fallback::fallback, (self_, indices));")
            .unwrap_or_else(|| panic!("{index}")),
        index.find("COUNTER.inc()").unwrap(),
    );
    assert!(guard < count, "{index}");
    assert!(
        index.contains("b.opt_tensor_list_any_device(indices)?;"),
        "{index}"
    );
    assert!(
        index.contains("op::index_Tensor::call(&b.shadow(self_)?, &b.shadow_opt_list(indices)?)?")
    );
    // A Tensor[] return: one node, one output per piece of the view's result.
    let split = kernel("lazy_split_copy_Tensor");
    assert!(
        split.contains("op::split_Tensor::call(&b.shadow(self_)?, split_size, dim)?")
            && split.contains("let shapes = contiguous_shapes_of_list(&o0);\n            b.remember_shapes(shapes)")
            && split.contains("    };\n    b.build(shapes)"),
        "{split}"
    );
    assert!(split.contains("return Ok(outs);"), "{split}");
    assert!(
        all_lowerings
            .contains("op::cat::redispatch(cpu_only(), &ins.tensor_list(0)?, ins.int(1)?)?")
    );
    assert!(all_lowerings.contains(
        "op::index_Tensor::redispatch(cpu_only(), &ins.tensor(0)?, &ins.opt_tensor_list(1)?)?"
    ));
    assert!(all_lowerings.contains("    op::split_copy_Tensor::redispatch(cpu_only(), &ins.tensor(0)?, ins.int(1)?, ins.int(2)?)\n"));
    let nodes = &files["nodes.rs"];
    assert!(nodes.contains("arg_kinds: &[ArgKind::TensorList, ArgKind::Attr]"));
    assert!(nodes.contains("arg_kinds: &[ArgKind::Tensor, ArgKind::OptTensorList]"));
    assert!(nodes.contains("num_outputs: 0"));
}

/// A group whose functional member is the `_functional` variant of a mutable operator: its
/// out= wrapper unpacks all five results, checks the three outs and the two mutated running
/// statistics before writing any, then writes both (PyTorch's wrapper copies the outs only).
#[test]
fn out_wrapper_around_a_functional_variant_writes_the_mutated_arguments_too() {
    let files = generate(
        "backend: XLA\ncpp_namespace: x\nsupported:\n  - _native_batch_norm_legit_functional\n",
    );
    let reg = &files["register.rs"];
    let start = reg
        .find("fn wrapper_XLA__native_batch_norm_legit_out<")
        .unwrap_or_else(|| panic!("{reg}"));
    let body = &reg[start..];
    let body = &body[..body.find("\n}\n").unwrap()];
    let expected = "    let (functional_result0, functional_result1, functional_result2, functional_result3, functional_result4) = K::_native_batch_norm_legit_functional(input, weight, bias, running_mean, running_var, training, momentum, eps)?;
    switchyard_ops::runtime::check_backend_out(out, &functional_result0)?;
    switchyard_ops::runtime::check_backend_out(save_mean, &functional_result1)?;
    switchyard_ops::runtime::check_backend_out(save_invstd, &functional_result2)?;
    switchyard_ops::runtime::check_backend_self(running_mean, &functional_result3)?;
    switchyard_ops::runtime::check_backend_self(running_var, &functional_result4)?;
    switchyard_ops::runtime::copy_to_backend_out(out, &functional_result0)?;
    switchyard_ops::runtime::copy_to_backend_out(save_mean, &functional_result1)?;
    switchyard_ops::runtime::copy_to_backend_out(save_invstd, &functional_result2)?;
    switchyard_ops::runtime::copy_to_backend_self(running_mean, &functional_result3)?;
    switchyard_ops::runtime::copy_to_backend_self(running_var, &functional_result4)?;
    Ok((out.clone(), save_mean.clone(), save_invstd.clone()))";
    assert!(body.ends_with(expected), "{body}");
}
