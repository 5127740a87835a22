//! The tables of the Python module (`crates/python/src/generated/`), from ops.yaml.
//!
//! So far one table: every operator name with its overload names in ops.yaml order, out=
//! overloads last (`overloads.rs`): the order in which `switchyard.ops.aten.<name>(...)` tries
//! them. The signature tables and `.pyi` stubs of
//! `docs/python-plan.md` §3.1 (torchgen's Python signature rules) come next.

use super::writer::header;
use crate::NativeFunctions;
use switchyard_schema::SchemaKind;

/// The Python extension's manifest, relative to the workspace root: its tables are generated
/// when it exists.
pub const PYTHON_CRATE: &str = "crates/python/Cargo.toml";

/// The generated files (path relative to the workspace root, contents).
pub fn generate(model: &NativeFunctions) -> Vec<(String, String)> {
    let module = format!(
        "{}//! Tables generated from ops.yaml for the Python bindings.\n\npub mod overloads;\n",
        header("python")
    );
    vec![
        ("crates/python/src/generated/mod.rs".to_owned(), module),
        (
            "crates/python/src/generated/overloads.rs".to_owned(),
            overloads(model),
        ),
    ]
}

/// `OVERLOADS`: `("aten::add", &["Tensor", "Scalar", "out", "Scalar_out"])`, one entry per
/// qualified operator name, sorted by name (binary search); overload names in ops.yaml order
/// (the default overload is `""`; the generated `autogen:` operators after the written ones)
/// with the out= overloads last, as the JIT's `getAllSortedOperatorsFor` orders what
/// `torch.ops` packets try (PyTorch's own order of the others follows its registry, which is
/// not always native_functions.yaml's: `max` lists `other` before `dim`).
fn overloads(model: &NativeFunctions) -> String {
    // (name, overloads without out arguments, out= overloads)
    let mut names: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for f in &model.functions {
        let name = format!("{}::{}", f.namespace, f.func.name.name);
        let overload = f.func.name.overload_name.clone();
        let i = match names.iter().position(|(n, _, _)| *n == name) {
            Some(i) => i,
            None => {
                names.push((name, Vec::new(), Vec::new()));
                names.len() - 1
            }
        };
        if f.func.kind() == SchemaKind::Out {
            names[i].2.push(overload);
        } else {
            names[i].1.push(overload);
        }
    }
    let mut names: Vec<(String, Vec<String>)> = names
        .into_iter()
        .map(|(n, mut plain, out)| {
            plain.extend(out);
            (n, plain)
        })
        .collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = header("python");
    out.push_str(
        "//! Each operator name of ops.yaml with its overload names in ops.yaml order: the order in\n\
         //! which an overload packet (`switchyard.ops.aten.add`) tries them, out= overloads last.\n\n\
         /// `(qualified name, overload names)`, sorted by name; `\"\"` is the default overload.\n\
         pub static OVERLOADS: &[(&str, &[&str])] = &[\n",
    );
    for (name, list) in &names {
        let list: Vec<String> = list.iter().map(|o| format!("{o:?}")).collect();
        out.push_str(&format!("    ({name:?}, &[{}]),\n", list.join(", ")));
    }
    out.push_str("];\n");
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn packets_try_overloads_in_ops_yaml_order_with_out_last() {
        let model = crate::emit::workspace::parse_bundled_ops_yaml().unwrap();
        let text = overloads(&model);
        // PyTorch: torch.ops.aten.add.overloads() starts Tensor, Scalar, out, Scalar_out.
        assert!(
            text.contains(r#"    ("aten::add", &["Tensor", "Scalar", "out", "Scalar_out"]),"#),
            "{text}"
        );
        assert!(text.contains(r#"    ("aten::sum", &["", "dim_IntList", "IntList_out", "out"]),"#));
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("    (\""))
            .filter_map(|l| l.split('"').next())
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "OVERLOADS must be sorted for binary search");
    }
}
