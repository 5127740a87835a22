//! temp
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use switchyard_codegen::*;
fn b(x: bool) -> &'static str {
    if x { "T" } else { "F" }
}
#[test]
fn dump() {
    let Ok(path) = std::env::var("SWITCHYARD_NATIVE_FUNCTIONS_YAML") else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let opts = if std::env::var("IGN").is_ok() {
        ParseOptions::gen_py_defaults()
    } else {
        ParseOptions::default()
    };
    let p = parse_native_functions(&text, &path, &opts).unwrap();
    let mut out = String::new();
    for f in &p.functions {
        let mut ks: Vec<String> = f
            .dispatch
            .iter()
            .map(|(k, m)| {
                format!(
                    "{}={}::{}{}",
                    k.name(),
                    m.cpp_namespace,
                    m.kernel,
                    if m.structured { "/s" } else { "" }
                )
            })
            .collect();
        ks.sort();
        let pc = f
            .precomputed
            .as_ref()
            .map(|pc| {
                format!(
                    "{};{}",
                    pc.to_list().join("|"),
                    pc.add
                        .iter()
                        .map(|a| a.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            })
            .unwrap_or_default();
        let uf = f
            .ufunc_inner_loop
            .iter()
            .map(|(k, v)| format!("{}:{}({})", k, v.name, v.supported_dtypes.join(" ")))
            .collect::<Vec<_>>()
            .join(",");
        let mut variants = vec![];
        if f.variants.function {
            variants.push("function")
        }
        if f.variants.method {
            variants.push("method")
        }
        variants.sort();
        let mut cnda = f.cpp_no_default_args.clone();
        cnda.sort();
        let fields = [
            f.line.to_string(),
            f.namespace.clone(),
            f.func.to_string(),
            f.tags.iter().cloned().collect::<Vec<_>>().join(","),
            variants.join(","),
            format!(
                "{}{}{}{}{}",
                b(f.is_abstract),
                b(f.has_composite_implicit_autograd_kernel),
                b(f.has_composite_implicit_autograd_nested_tensor_kernel),
                b(f.has_composite_explicit_autograd_kernel),
                b(f.has_composite_explicit_autograd_non_functional_kernel)
            ),
            ks.join(" "),
            b(f.structured).into(),
            f.structured_delegate
                .as_ref()
                .map_or("None".into(), |d| d.to_string()),
            f.structured_inherits.clone().unwrap_or("None".into()),
            pc,
            f.autogen
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(","),
            uf,
            b(f.device_guard).into(),
            format!("{:?}", f.device_check),
            b(f.manual_kernel_registration).into(),
            b(f.manual_cpp_binding).into(),
            f.python_module.clone().unwrap_or("None".into()),
            f.category_override.clone().unwrap_or("None".into()),
            cnda.join(","),
            b(f.use_const_ref_for_mutable_tensors).into(),
        ];
        out.push_str(&fields.join(" ~ "));
        out.push('\n');
    }
    out.push_str("GROUPS\n");
    let n = |i: usize| p.functions[i].func.name.to_string();
    let on = |i: Option<usize>| i.map_or("None".to_string(), n);
    for g in &p.grouped {
        match g {
            GroupedItem::Group(g) => out.push_str(&format!(
                "G {} {} {} {}\n",
                n(g.functional),
                n(g.out),
                on(g.inplace),
                on(g.mutable)
            )),
            GroupedItem::Function(i) => out.push_str(&format!("F {}\n", n(*i))),
        }
    }
    out.push_str("VIEWS\n");
    for g in &p.view_grouped {
        match g {
            ViewGroupedItem::Group(g) => out.push_str(&format!(
                "V {} {} {}\n",
                n(g.view),
                on(g.view_copy),
                on(g.view_inplace)
            )),
            ViewGroupedItem::Function(i) => out.push_str(&format!("F {}\n", n(*i))),
        }
    }
    std::fs::write(
        if std::env::var("IGN").is_ok() {
            "/tmp/cg/rs_dump_ign.txt"
        } else {
            "/tmp/cg/rs_dump.txt"
        },
        out,
    )
    .unwrap();
}
