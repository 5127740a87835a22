//! temp
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use switchyard_codegen::*;
#[test]
fn cases() {
    let mut names: Vec<_> = std::fs::read_dir("/tmp/cg/cases")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut out = String::new();
    for p in names {
        let name = p.file_stem().unwrap().to_str().unwrap().to_owned();
        let text = std::fs::read_to_string(&p).unwrap();
        match parse_native_functions(&text, &p.display().to_string(), &ParseOptions::default()) {
            Ok(r) => {
                let generated: Vec<String> = r
                    .generated()
                    .iter()
                    .map(|f| format!("'{}'", f.func))
                    .collect();
                out.push_str(&format!("{name} => OK [{}]\n", generated.join(", ")));
            }
            Err(es) => {
                out.push_str(&format!(
                    "{name} => {:?} @{:?}\n",
                    es[0].message, es[0].line
                ));
                for e in &es[1..] {
                    out.push_str(&format!("    + {:?} @{:?}\n", e.message, e.line));
                }
            }
        }
    }
    std::fs::write("/tmp/cg/rs_cases.txt", out).unwrap();
}
