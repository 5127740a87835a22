//! `fixtures/everything.yaml` exercises every key of an entry, every argument and return type,
//! every way of writing a dispatch table and every kind of group and generated operator
//! (torchgen 2.15 accepts it). The model must come out as torchgen builds it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_codegen::emit::workspace::check_yaml_file;
use switchyard_codegen::{GroupedItem, NativeFunctions, ParseOptions, parse_native_functions};
use switchyard_core::DispatchKey;

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/everything.yaml"
);

fn parsed() -> NativeFunctions {
    let text = std::fs::read_to_string(PATH).unwrap();
    parse_native_functions(&text, "everything.yaml", &ParseOptions::default())
        .unwrap_or_else(|e| panic!("{}", e[0]))
}

#[test]
fn every_entry_parses_and_the_file_checks_clean() {
    let p = parsed();
    let entries = std::fs::read_to_string(PATH)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("- func:"))
        .count();
    assert_eq!(p.num_yaml_functions, entries);
    assert_eq!(
        check_yaml_file(std::path::Path::new(PATH), None).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn every_autogen_line_yields_a_generated_function() {
    let p = parsed();
    let mut generated = 0;
    for f in p.functions.iter().filter(|f| !f.is_generated()) {
        for name in &f.autogen {
            let g = p
                .get(name)
                .unwrap_or_else(|| panic!("{name} (autogen of {}) missing", f.func.name));
            assert!(g.is_generated(), "{name}");
            generated += 1;
        }
    }
    assert!(generated >= 12, "{generated}");
    assert_eq!(p.functions.len(), p.num_yaml_functions + generated);
    // The out= variant autogen adds has PyTorch's shape: the functional arguments, then `out`.
    assert_eq!(
        p.get_str("sy_expand.out").unwrap().func.to_string(),
        "sy_expand.out(Tensor self, SymInt[] size, *, bool implicit=False, Tensor(a!) out) -> Tensor(a!)"
    );
}

#[test]
fn the_structured_family_groups_with_its_delegates() {
    let p = parsed();
    let i = p.index_of_str("sy_add.Tensor").unwrap();
    let g = p.group_of(i).unwrap();
    let name = |k: usize| p.functions[k].func.name.to_string();
    assert_eq!(name(g.functional), "sy_add.Tensor");
    assert_eq!(g.inplace.map(name).as_deref(), Some("sy_add_.Tensor"));
    assert_eq!(name(g.out), "sy_add.out");
    assert!(g.structured(&p.functions));
    let out = &p.functions[g.out];
    assert_eq!(
        out.structured_inherits.as_deref(),
        Some("TensorIteratorBase")
    );
    // One line naming three keys gives each of them the kernel.
    for key in [
        DispatchKey::SparseCPU,
        DispatchKey::SparseCUDA,
        DispatchKey::SparseMeta,
    ] {
        let (_, m) = out.dispatch.iter().find(|(k, _)| *k == key).unwrap();
        assert_eq!(m.kernel, "sy_add_out_sparse");
    }
    assert!(
        p.grouped
            .iter()
            .any(|item| matches!(item, GroupedItem::Group(gr) if gr.out == g.out))
    );
}

#[test]
fn precomputed_custom_namespaces_and_views() {
    let p = parsed();
    let reduce = p.get_str("sy_reduce.dim_out").unwrap();
    let pre = reduce.precomputed.as_ref().unwrap();
    assert_eq!(pre.replace.len(), 1);
    assert_eq!(pre.replace[0].0, "dim");
    assert_eq!(pre.add.len(), 2);
    let custom = p
        .functions
        .iter()
        .find(|f| f.func.name.to_string() == "sy_custom")
        .unwrap();
    assert_eq!(custom.namespace, "custom");
    let view = p.index_of_str("sy_view").unwrap();
    let vg = p.view_group_of(view).unwrap();
    let name = |k: usize| p.functions[k].func.name.to_string();
    assert_eq!(vg.view_copy.map(name).as_deref(), Some("sy_view_copy"));
    assert_eq!(vg.view_inplace.map(name).as_deref(), Some("sy_view_"));
}
