//! Every operator functionalization must handle has a kernel of its own at `Functionalize`
//! (plan §7.1, as `crates/autograd/tests/autograd/coverage.rs` does for autograd): the boxed
//! fallback only takes operators that neither view nor mutate, and refuses the others at run
//! time, so a view or mutating operator left without a kernel (a view whose inverse is
//! missing, a mutating operator without a functional variant) would only show when a program
//! calls it. These tests read `ops.yaml` and the dispatcher's tables.

use std::collections::BTreeSet;
use switchyard_codegen::emit::functionalize::{MANUAL_FUNCTIONALIZE, VIEWS_WITH_INVERSES};
use switchyard_codegen::emit::workspace::{find_workspace_root, parse_ops_yaml};
use switchyard_codegen::{NativeFunction, NativeFunctions, unambiguous_name};
use switchyard_core::DispatchKey;
use switchyard_dispatch::Dispatcher;

fn ops_yaml() -> NativeFunctions {
    let root = find_workspace_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
    parse_ops_yaml(&root).unwrap()
}

/// `view` for `aten::view`, `transpose.int` for `aten::transpose.int`.
fn full_name(f: &NativeFunction) -> String {
    f.func.name.to_string()
}

/// Whether an argument or a return of `f` carries an alias annotation (`Tensor(a)`,
/// `Tensor(a!)`): PyTorch's `hasAnyAliasInfo`, what makes the fallback refuse an operator.
fn has_alias_info(f: &NativeFunction) -> bool {
    f.func.arguments.iter().any(|a| a.annotation.is_some())
        || f.func.returns.iter().any(|r| r.annotation.is_some())
}

/// The kernel name the generator (and `src/manual.rs`) gives operator `f`:
/// `functionalize_<unambiguous name>` (`functionalize_add__Tensor` for `add_.Tensor`).
fn kernel_name(f: &NativeFunction) -> String {
    format!("functionalize_{}", unambiguous_name(&f.func.name))
}

/// Every operator of ops.yaml with alias information has a `Functionalize` kernel (not the
/// fallback) under the name the generator derives from the yaml.
#[test]
fn every_aliasing_operator_has_a_functionalize_kernel_named_after_it() {
    switchyard_functionalize::init();
    let nf = ops_yaml();
    let d = Dispatcher::singleton();
    let mut problems = Vec::new();
    let mut checked = 0;
    for f in nf.functions.iter().filter(|f| has_alias_info(f)) {
        let name = format!("aten::{}", full_name(f));
        let Some(op) = d.find_op(&name) else {
            problems.push(format!("{name}: not registered"));
            continue;
        };
        checked += 1;
        match op.describe_slot(DispatchKey::Functionalize) {
            Some((debug, "kernel")) if debug == kernel_name(f) => {}
            Some((debug, provenance)) => problems.push(format!(
                "{name}: Functionalize holds {debug} [{provenance}], expected {} [kernel]",
                kernel_name(f)
            )),
            None => problems.push(format!("{name}: no Functionalize kernel")),
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {checked} aliasing operators lack their Functionalize kernel:\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The yaml has views, in-place views and every kind of mutation.
    assert!(checked > 300, "{checked}");
}

/// Conversely, every kernel at `Functionalize` named `functionalize_*` serves the operator
/// whose name it carries, and the operators without one are the fallback's: they neither view
/// nor mutate.
#[test]
fn functionalize_kernels_match_their_operators_and_the_rest_is_the_fallbacks() {
    switchyard_functionalize::init();
    let nf = ops_yaml();
    let by_name: std::collections::HashMap<String, &NativeFunction> = nf
        .functions
        .iter()
        .map(|f| (format!("aten::{}", full_name(f)), f))
        .collect();
    let mut problems = Vec::new();
    for op in Dispatcher::singleton().all_operators() {
        let Some((debug, provenance)) = op.describe_slot(DispatchKey::Functionalize) else {
            continue;
        };
        let yaml = by_name.get(op.name());
        match (provenance, yaml) {
            ("backend fallback", Some(f)) if has_alias_info(f) => {
                problems.push(format!("{}: aliasing, but left to the fallback", op.name()));
            }
            ("backend fallback", _) => {}
            (_, Some(f)) if debug != kernel_name(f) => problems.push(format!(
                "{}: kernel {debug}, expected {}",
                op.name(),
                kernel_name(f)
            )),
            (_, Some(_)) => {}
            // Operators defined outside ops.yaml (the tests' custom ones) have no kernel here.
            (_, None) if debug.starts_with("functionalize_") => {
                problems.push(format!("{}: {debug}, but not in ops.yaml", op.name()));
            }
            (_, None) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every view operator that is not a composite (decomposed before anything is recorded) nor
/// hand-written has an inverse: a `<view>_scatter` operator taking `(self, src, <the view's
/// other arguments>)` (derived from the yaml), or a hand-written `inverses::<name>_inverse`
/// (listed in `VIEWS_WITH_INVERSES`; the generated kernel calls it, so a listed view without
/// one does not compile). The list names views only, and none that has a scatter operator.
#[test]
fn every_view_operator_has_an_inverse() {
    let nf = ops_yaml();
    let scatter_of = |view: &NativeFunction| -> bool {
        let scatter = format!("{}_scatter", view.func.name.name.base);
        nf.functions.iter().any(|s| {
            s.func.name.name.to_string() == scatter && {
                let args: Vec<String> = s.func.arguments.iter().map(|a| a.name.clone()).collect();
                let mut expected = vec!["self".to_owned(), "src".to_owned()];
                expected.extend(view.func.arguments.iter().skip(1).map(|a| a.name.clone()));
                args == expected
            }
        })
    };
    let mut missing = Vec::new();
    let mut views = BTreeSet::new();
    for g in &nf.view_groups {
        let view = &nf.functions[g.view];
        let name = full_name(view);
        views.insert(name.clone());
        if view.has_composite_implicit_autograd_kernel
            || MANUAL_FUNCTIONALIZE.contains(&name.as_str())
        {
            continue;
        }
        let listed = VIEWS_WITH_INVERSES.contains(&name.as_str());
        match (scatter_of(view), listed) {
            (true, false) | (false, true) => {}
            (true, true) => missing.push(format!(
                "{name}: has a scatter operator and a hand-written inverse"
            )),
            (false, false) => missing.push(format!("{name}: no inverse")),
        }
    }
    for listed in VIEWS_WITH_INVERSES {
        if !views.contains(listed) {
            missing.push(format!(
                "VIEWS_WITH_INVERSES: {listed} is no view of ops.yaml"
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    assert!(views.len() > 20, "{views:?}");
}
