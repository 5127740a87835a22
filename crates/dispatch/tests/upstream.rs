//! PyTorch's dispatcher tests (`test/test_dispatch.py`), cases T01–T24 and the Python
//! toy-dispatcher cases P1–P4 of `shared/reference/dispatcher.md` §9, run through the
//! `commute` harness: every registration order, every deregistration order.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use switchyard_core::DispatchKey as K;
use switchyard_dispatch::{
    AliasAnalysisKind, Dispatcher, FRAMEWORK_DEBUG, Kernel, Library, LibraryKind,
};

const KERNEL_LINE: &str = ":: (Tensor _0) -> Tensor _0 [ boxed unboxed ]";

fn lines(items: &[&str]) -> String {
    items.iter().map(|l| format!("{l}\n")).collect()
}

fn bf() -> String {
    // The framework's Autograd fallback is a fallthrough (dumped as PyTorch dumped its own,
    // "fallthrough registered in pytorch framework").
    format!("fallthrough {FRAMEWORK_DEBUG}")
}

fn def_alias(schema: &'static str, alias: AliasAnalysisKind) -> Registration {
    Box::new(move |d, ns| {
        let mut lib = fragment(d, ns);
        lib.def_with_alias(schema, alias)?;
        Ok(lib)
    })
}

fn def_legacy(schema: &'static str) -> Registration {
    Box::new(move |d, ns| {
        let mut lib = fragment(d, ns);
        lib.def_legacy(schema)?;
        Ok(lib)
    })
}

#[test]
fn t01_def() {
    let r = commute(
        &[
            def("foo(Tensor x) -> Tensor"),
            imp(None, "impl_t_t"),
            imp(Some(K::CPU), "impl_t_t"),
            imp(Some(K::Autograd), "impl_t_t"),
            imp(Some(K::AutogradCPU), "impl_t_t"),
        ],
        false,
    );
    assert_eq!(
        r.state,
        lines(&[
            "name: test::foo",
            "schema: test::foo(Tensor x) -> Tensor",
            "debug: registered at /dev/null:0",
            "alias analysis kind: FROM_SCHEMA",
            &format!("CPU: impl_t_t {KERNEL_LINE}"),
            &format!("AutogradCPU: impl_t_t {KERNEL_LINE}"),
            &format!("Autograd[alias]: impl_t_t {KERNEL_LINE}"),
            &format!("CompositeImplicitAutograd[alias]: impl_t_t {KERNEL_LINE}"),
        ])
    );
}

#[test]
fn t02_def_impl_schema_mismatch() {
    let r = commute(
        &[
            def("foo(Tensor x, Tensor y) -> Tensor"),
            imp(None, "impl_t_t"),
        ],
        true,
    );
    assert_eq!(
        r.state,
        "Inferred operator schema for a C++ kernel function doesn't match the expected function schema.\n  operator: test::foo\n  expected schema: test::foo(Tensor x, Tensor y) -> Tensor\n    registered at /dev/null:0\n  inferred schema: (Tensor _0) -> Tensor _0\n    impl_t_t\n  reason: The number of arguments is different. 2 vs 1."
    );
}

#[test]
fn t03_def_with_inference() {
    let r = commute(
        &[
            def_inferred(),
            imp(Some(K::CPU), "impl_t_t"),
            imp(Some(K::Autograd), "impl_t_t"),
            imp(Some(K::AutogradCPU), "impl_t_t"),
        ],
        false,
    );
    assert_eq!(
        r.state,
        lines(&[
            "name: test::foo",
            "schema: test::foo(Tensor _0) -> Tensor _0",
            "debug: registered at /dev/null:0",
            "alias analysis kind: CONSERVATIVE",
            &format!("CPU: impl_t_t {KERNEL_LINE}"),
            &format!("AutogradCPU: impl_t_t {KERNEL_LINE}"),
            &format!("Autograd[alias]: impl_t_t {KERNEL_LINE}"),
            &format!("CompositeImplicitAutograd[alias]: default_def_name_t_t {KERNEL_LINE}"),
        ])
    );
}

#[test]
fn t04_def_only() {
    let r = commute(&[def("foo(Tensor x, Tensor y) -> Tensor")], false);
    assert_eq!(
        r.state,
        lines(&[
            "name: test::foo",
            "schema: test::foo(Tensor x, Tensor y) -> Tensor",
            "debug: registered at /dev/null:0",
            "alias analysis kind: FROM_SCHEMA",
        ])
    );
}

#[test]
fn t05_impl_only() {
    let r = commute(
        &[
            imp(None, "impl_t_t"),
            imp(Some(K::CPU), "impl_t_t"),
            imp(Some(K::Autograd), "impl_t_t"),
            imp(Some(K::AutogradCPU), "impl_t_t"),
        ],
        false,
    );
    assert_eq!(
        r.state,
        lines(&[
            "name: test::foo",
            "schema: (none)",
            &format!("CPU: impl_t_t {KERNEL_LINE}"),
            &format!("AutogradCPU: impl_t_t {KERNEL_LINE}"),
            &format!("Autograd[alias]: impl_t_t {KERNEL_LINE}"),
            &format!("CompositeImplicitAutograd[alias]: impl_t_t {KERNEL_LINE}"),
        ])
    );
}

#[test]
fn t06_computed_table() {
    let r = commute(
        &[
            def_inferred(),
            imp(Some(K::CPU), "fn_cpu"),
            imp(Some(K::XLA), "fn_xla"),
            imp(Some(K::Autograd), "fn_autograd"),
            imp(Some(K::AutogradCPU), "fn_autogradcpu"),
        ],
        false,
    );
    assert_eq!(
        extract_table(&r.table, DEFAULT_KEYS),
        lines(&[
            "Undefined: default_def_name_t_t [math kernel]",
            "CPU: fn_cpu [kernel]",
            "CUDA: default_def_name_t_t [math kernel]",
            "XLA: fn_xla [kernel]",
            "AutogradOther: default_def_name_t_t [math kernel]",
            "AutogradCPU: fn_autogradcpu [kernel]",
            "AutogradCUDA: default_def_name_t_t [math kernel]",
            "AutogradXLA: fn_autograd [autograd kernel]",
        ])
    );
}

#[test]
fn t07_computed_table_with_cpu_math_autogradcpu_fallthrough() {
    let r = commute(&[def_inferred(), imp(Some(K::CPU), "impl_t_t")], false);
    assert_eq!(
        extract_table(&r.table, DEFAULT_KEYS),
        lines(&[
            "Undefined: default_def_name_t_t [math kernel]",
            "CPU: impl_t_t [kernel]",
            "CUDA: default_def_name_t_t [math kernel]",
            "XLA: default_def_name_t_t [math kernel]",
            "AutogradOther: default_def_name_t_t [math kernel]",
            &format!("AutogradCPU: {} [backend fallback]", bf()),
            "AutogradCUDA: default_def_name_t_t [math kernel]",
            "AutogradXLA: default_def_name_t_t [math kernel]",
        ])
    );
}

#[test]
fn t08_computed_table_with_math() {
    let r = commute(
        &[
            def("foo(Tensor x) -> Tensor"),
            imp(Some(K::CompositeImplicitAutograd), "impl_t_t"),
        ],
        false,
    );
    let expected: Vec<String> = DEFAULT_KEYS
        .iter()
        .map(|k| format!("{k}: impl_t_t [math kernel]"))
        .collect();
    assert_eq!(
        extract_table(&r.table, DEFAULT_KEYS),
        lines(&expected.iter().map(String::as_str).collect::<Vec<_>>())
    );
}

#[test]
fn t09_computed_table_with_cpu_math() {
    let r = commute(
        &[
            def("foo(Tensor x) -> Tensor"),
            imp(Some(K::CPU), "fn_cpu"),
            imp(Some(K::CompositeImplicitAutograd), "fn_math"),
        ],
        false,
    );
    assert_eq!(
        extract_table(&r.table, DEFAULT_KEYS),
        lines(&[
            "Undefined: fn_math [math kernel]",
            "CPU: fn_cpu [kernel]",
            "CUDA: fn_math [math kernel]",
            "XLA: fn_math [math kernel]",
            "AutogradOther: fn_math [math kernel]",
            &format!("AutogradCPU: {} [backend fallback]", bf()),
            "AutogradCUDA: fn_math [math kernel]",
            "AutogradXLA: fn_math [math kernel]",
        ])
    );
}

#[test]
fn t10_computed_table_with_autograd() {
    let r = commute(
        &[
            def("foo(Tensor x) -> Tensor"),
            imp(Some(K::Autograd), "impl_t_t"),
        ],
        false,
    );
    assert_eq!(
        extract_table(&r.table, DEFAULT_KEYS),
        lines(&[
            "AutogradOther: impl_t_t [autograd kernel]",
            "AutogradCPU: impl_t_t [autograd kernel]",
            "AutogradCUDA: impl_t_t [autograd kernel]",
            "AutogradXLA: impl_t_t [autograd kernel]",
        ])
    );
}

#[test]
fn t11_computed_table_with_cpu_autograd_math() {
    let r = commute(
        &[
            def("foo(Tensor x) -> Tensor"),
            imp(Some(K::CPU), "fn_cpu"),
            imp(Some(K::Autograd), "fn_autograd"),
            imp(Some(K::CompositeImplicitAutograd), "fn_math"),
        ],
        false,
    );
    assert_eq!(
        extract_table(&r.table, DEFAULT_KEYS),
        lines(&[
            "Undefined: fn_math [math kernel]",
            "CPU: fn_cpu [kernel]",
            "CUDA: fn_math [math kernel]",
            "XLA: fn_math [math kernel]",
            "AutogradOther: fn_math [math kernel]",
            "AutogradCPU: fn_autograd [autograd kernel]",
            "AutogradCUDA: fn_math [math kernel]",
            "AutogradXLA: fn_math [math kernel]",
        ])
    );
}

#[test]
fn t12_computed_table_with_ambiguous_autogradother() {
    let r = commute(
        &[
            def("foo(Tensor x) -> Tensor"),
            imp(Some(K::CompositeImplicitAutograd), "fn_math"),
            imp(Some(K::FPGA), "fn_fpga"),
        ],
        false,
    );
    assert_eq!(
        r.state,
        lines(&[
            "name: test::foo",
            "schema: test::foo(Tensor x) -> Tensor",
            "debug: registered at /dev/null:0",
            "alias analysis kind: FROM_SCHEMA",
            &format!("FPGA: fn_fpga {KERNEL_LINE}"),
            &format!("CompositeImplicitAutograd[alias]: fn_math {KERNEL_LINE}"),
        ])
    );
    let mut keys = DEFAULT_KEYS.to_vec();
    keys.push("FPGA");
    assert_eq!(
        extract_table(&r.table, &keys),
        lines(&[
            "Undefined: fn_math [math kernel]",
            "CPU: fn_math [math kernel]",
            "CUDA: fn_math [math kernel]",
            "XLA: fn_math [math kernel]",
            "AutogradOther: ambiguous_autogradother [ambiguous autogradother]",
            "AutogradCPU: fn_math [math kernel]",
            "AutogradCUDA: fn_math [math kernel]",
            "AutogradXLA: fn_math [math kernel]",
            "FPGA: fn_fpga [kernel]",
        ])
    );
}

#[test]
fn t13_computed_table_with_cpu_defaultbackend() {
    let r = commute(
        &[
            def("foo(Tensor x) -> Tensor"),
            imp(Some(K::CPU), "fn_cpu"),
            imp(Some(K::CompositeExplicitAutograd), "fn_defaultbackend"),
        ],
        false,
    );
    assert_eq!(
        extract_table(&r.table, DEFAULT_KEYS),
        lines(&[
            "Undefined: fn_defaultbackend [default backend kernel]",
            "CPU: fn_cpu [kernel]",
            "CUDA: fn_defaultbackend [default backend kernel]",
            "XLA: fn_defaultbackend [default backend kernel]",
            &format!("AutogradOther: {} [backend fallback]", bf()),
            &format!("AutogradCPU: {} [backend fallback]", bf()),
            &format!("AutogradCUDA: {} [backend fallback]", bf()),
            &format!("AutogradXLA: {} [backend fallback]", bf()),
        ])
    );
}

#[test]
fn t14_computed_table_with_cpu_autograd_defaultbackend() {
    let r = commute(
        &[
            def("foo(Tensor x) -> Tensor"),
            imp(Some(K::CPU), "fn_cpu"),
            imp(Some(K::Autograd), "fn_autograd"),
            imp(Some(K::CompositeExplicitAutograd), "fn_defaultbackend"),
        ],
        false,
    );
    let mut keys = DEFAULT_KEYS.to_vec();
    keys.push("FPGA");
    assert_eq!(
        extract_table(&r.table, &keys),
        lines(&[
            "Undefined: fn_defaultbackend [default backend kernel]",
            "CPU: fn_cpu [kernel]",
            "CUDA: fn_defaultbackend [default backend kernel]",
            "XLA: fn_defaultbackend [default backend kernel]",
            "AutogradOther: fn_autograd [autograd kernel]",
            "AutogradCPU: fn_autograd [autograd kernel]",
            "AutogradCUDA: fn_autograd [autograd kernel]",
            "AutogradXLA: fn_autograd [autograd kernel]",
            "FPGA: fn_defaultbackend [default backend kernel]",
        ])
    );
}

#[test]
fn t15_computed_table_with_cpu_autograd_math_defaultbackend() {
    let r = commute(
        &[
            def("foo(Tensor x) -> Tensor"),
            imp(Some(K::CPU), "fn_cpu"),
            imp(Some(K::Autograd), "fn_autograd"),
            imp(Some(K::CompositeImplicitAutograd), "fn_math"),
            imp(Some(K::CompositeExplicitAutograd), "fn_defaultbackend"),
        ],
        false,
    );
    assert_eq!(
        r.state,
        lines(&[
            "name: test::foo",
            "schema: test::foo(Tensor x) -> Tensor",
            "debug: registered at /dev/null:0",
            "alias analysis kind: FROM_SCHEMA",
            &format!("CPU: fn_cpu {KERNEL_LINE}"),
            &format!("Autograd[alias]: fn_autograd {KERNEL_LINE}"),
            &format!("CompositeImplicitAutograd[alias]: fn_math {KERNEL_LINE}"),
            &format!("CompositeExplicitAutograd[alias]: fn_defaultbackend {KERNEL_LINE}"),
        ])
    );
    assert_eq!(
        extract_table(&r.table, DEFAULT_KEYS),
        lines(&[
            "Undefined: fn_defaultbackend [default backend kernel]",
            "CPU: fn_cpu [kernel]",
            "CUDA: fn_defaultbackend [default backend kernel]",
            "XLA: fn_defaultbackend [default backend kernel]",
            "AutogradOther: fn_autograd [autograd kernel]",
            "AutogradCPU: fn_autograd [autograd kernel]",
            "AutogradCUDA: fn_autograd [autograd kernel]",
            "AutogradXLA: fn_autograd [autograd kernel]",
        ])
    );
}

const DUPLICATE_DEF: &str = "Tried to register an operator (test::foo(Tensor x, Tensor y) -> Tensor) with the same name and overload name multiple times. Each overload's schema should only be registered with a single call to def(). Duplicate registration: registered at /dev/null:0. Original registration: registered at /dev/null:0";

#[test]
fn t16_multiple_def_error() {
    let r = commute(
        &[
            def("foo(Tensor x, Tensor y) -> Tensor"),
            def("foo(Tensor x, Tensor y) -> Tensor"),
        ],
        true,
    );
    assert_eq!(r.state, DUPLICATE_DEF);
}

#[test]
fn t17_def_with_explicit_alias() {
    let r = commute(
        &[def_alias(
            "foo(Tensor x, Tensor y) -> Tensor",
            AliasAnalysisKind::PureFunction,
        )],
        false,
    );
    assert_eq!(
        r.state,
        lines(&[
            "name: test::foo",
            "schema: test::foo(Tensor x, Tensor y) -> Tensor",
            "debug: registered at /dev/null:0",
            "alias analysis kind: PURE_FUNCTION",
        ])
    );
}

#[test]
fn t18_multiple_def_alias_defaulting() {
    let r = commute(
        &[
            def_alias("foo(Tensor x) -> Tensor", AliasAnalysisKind::PureFunction),
            def_legacy("foo(Tensor x) -> Tensor"),
        ],
        true,
    );
    assert_eq!(
        r.state,
        DUPLICATE_DEF.replace("Tensor x, Tensor y", "Tensor x")
    );
}

#[test]
fn t19_multiple_def_alias_mismatch() {
    let r = commute(
        &[
            def_alias("foo(Tensor x) -> Tensor", AliasAnalysisKind::PureFunction),
            def_alias("foo(Tensor x) -> Tensor", AliasAnalysisKind::Conservative),
        ],
        true,
    );
    assert_eq!(
        r.state,
        DUPLICATE_DEF.replace("Tensor x, Tensor y", "Tensor x")
    );
}

#[test]
fn t20_multiple_fallback() {
    let d = Dispatcher::new_isolated();
    let mut lib =
        Library::with_location(d, LibraryKind::Impl, "_", Some(K::XLA), "/dev/null:0").unwrap();
    lib.fallback(Kernel::fallthrough()).unwrap();
    let e = lib.fallback(Kernel::fallthrough()).unwrap_err();
    assert_eq!(
        e.message(),
        "Tried to register multiple backend fallbacks for the same dispatch key XLA; previous registration registered at /dev/null:0, new registration registered at /dev/null:0"
    );
    drop(lib);
    // Dropping the library removed the fallback: it can be registered again.
    let mut again =
        Library::with_location(d, LibraryKind::Impl, "_", Some(K::XLA), "/dev/null:0").unwrap();
    again.fallback(Kernel::fallthrough()).unwrap();
}

#[test]
fn t21_overwrite_math() {
    // Fixed order: two catch-all registrations at one key are not commutative.
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let fn1 = imp(None, "fn1")(d, &ns).unwrap();
    let fn2 = imp(None, "fn2")(d, &ns).unwrap();
    let op = d.find_op(&format!("{ns}::foo")).unwrap();
    assert_eq!(
        op.dump_state().replace(&ns, "test"),
        lines(&[
            "name: test::foo",
            "schema: (none)",
            &format!("CompositeImplicitAutograd[alias]: fn2 {KERNEL_LINE}"),
            &format!("CompositeImplicitAutograd[alias] (inactive): fn1 {KERNEL_LINE}"),
        ])
    );
    drop(fn2);
    assert_eq!(
        op.dump_state().replace(&ns, "test"),
        lines(&[
            "name: test::foo",
            "schema: (none)",
            &format!("CompositeImplicitAutograd[alias]: fn1 {KERNEL_LINE}")
        ])
    );
    op.check_invariants().unwrap();
    drop(fn1);
    assert_eq!(
        op.dump_state().replace(&ns, "test"),
        lines(&["name: test::foo", "schema: (none)"])
    );
}

#[test]
fn t22_find_dangling_impls() {
    let d = Dispatcher::new_isolated();
    assert!(d.find_dangling_impls().is_empty());
    let mut lib =
        Library::with_location(d, LibraryKind::Impl, "__test", Some(K::CPU), "/dev/null:0")
            .unwrap();
    fn nothing(_: switchyard_core::DispatchKeySet, (): ()) -> switchyard_core::Result<()> {
        Ok(())
    }
    lib.impl_("foo", Kernel::typed::<Unit>(nothing)).unwrap();
    let dangling = d.find_dangling_impls();
    assert_eq!(dangling.len(), 1);
    assert_eq!(
        dangling[0].dump_state(),
        "name: __test::foo\nschema: (none)\nCPU: registered at /dev/null:0 :: () -> () [ boxed unboxed ]\n"
    );
    drop(lib);
    assert!(d.find_dangling_impls().is_empty());
}

#[test]
fn t23_print_registrations_for_invalid_key() {
    let e = Dispatcher::new_isolated()
        .registrations_for_key("invalid_key")
        .unwrap_err();
    assert_eq!(e.message(), "could not parse dispatch key: invalid_key");
}

#[test]
fn t24_all_invariants() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let _a = def("foo(Tensor x) -> Tensor")(d, &ns).unwrap();
    let _b = imp(Some(K::CPU), "fn_cpu")(d, &ns).unwrap();
    let _c = imp(Some(K::CompositeImplicitAutograd), "fn_math")(d, &ns).unwrap();
    d.check_all_invariants().unwrap();
    Dispatcher::singleton().check_all_invariants().unwrap();
}

/// The toy dispatcher's cases: kernels named `fn_<Key>` at each key, every registration
/// order (upstream runs these against a pure-Python model, without the `commute` harness).
fn toy(keys: &[K]) -> String {
    let regs: Vec<Registration> = std::iter::once(def("foo(Tensor x) -> Tensor"))
        .chain(keys.iter().map(|k| {
            let name: &'static str = Box::leak(format!("fn_{}", k.name()).into_boxed_str());
            imp(Some(*k), name)
        }))
        .collect();
    let table = every_order(&regs);
    extract_table(
        &table,
        &[
            "CPU",
            "XLA",
            "Lazy",
            "FPGA",
            "AutogradOther",
            "AutogradCPU",
            "AutogradXLA",
            "AutogradLazy",
        ],
    )
}

#[test]
fn p1_to_p4_python_toy_dispatcher() {
    let fb = bf();
    assert_eq!(
        toy(&[K::CPU, K::XLA, K::Lazy, K::CompositeImplicitAutograd]),
        lines(&[
            "CPU: fn_CPU [kernel]",
            "XLA: fn_XLA [kernel]",
            "Lazy: fn_Lazy [kernel]",
            "FPGA: fn_CompositeImplicitAutograd [math kernel]",
            "AutogradOther: fn_CompositeImplicitAutograd [math kernel]",
            &format!("AutogradCPU: {fb} [backend fallback]"),
            &format!("AutogradXLA: {fb} [backend fallback]"),
            &format!("AutogradLazy: {fb} [backend fallback]"),
        ])
    );
    assert_eq!(
        toy(&[
            K::CPU,
            K::XLA,
            K::Lazy,
            K::CompositeImplicitAutograd,
            K::AutogradCPU
        ]),
        lines(&[
            "CPU: fn_CPU [kernel]",
            "XLA: fn_XLA [kernel]",
            "Lazy: fn_Lazy [kernel]",
            "FPGA: fn_CompositeImplicitAutograd [math kernel]",
            "AutogradOther: fn_CompositeImplicitAutograd [math kernel]",
            "AutogradCPU: fn_AutogradCPU [kernel]",
            &format!("AutogradXLA: {fb} [backend fallback]"),
            &format!("AutogradLazy: {fb} [backend fallback]"),
        ])
    );
    assert_eq!(
        toy(&[
            K::CPU,
            K::XLA,
            K::Lazy,
            K::CompositeExplicitAutograd,
            K::AutogradCPU
        ]),
        lines(&[
            "CPU: fn_CPU [kernel]",
            "XLA: fn_XLA [kernel]",
            "Lazy: fn_Lazy [kernel]",
            "FPGA: fn_CompositeExplicitAutograd [default backend kernel]",
            &format!("AutogradOther: {fb} [backend fallback]"),
            "AutogradCPU: fn_AutogradCPU [kernel]",
            &format!("AutogradXLA: {fb} [backend fallback]"),
            &format!("AutogradLazy: {fb} [backend fallback]"),
        ])
    );
    assert_eq!(
        toy(&[K::CPU, K::FPGA, K::CompositeImplicitAutograd]),
        lines(&[
            "CPU: fn_CPU [kernel]",
            "XLA: fn_CompositeImplicitAutograd [math kernel]",
            "Lazy: fn_CompositeImplicitAutograd [math kernel]",
            "FPGA: fn_FPGA [kernel]",
            "AutogradOther: ambiguous_autogradother [ambiguous autogradother]",
            &format!("AutogradCPU: {fb} [backend fallback]"),
            "AutogradXLA: fn_CompositeImplicitAutograd [math kernel]",
            "AutogradLazy: fn_CompositeImplicitAutograd [math kernel]",
        ])
    );
}
