#![allow(clippy::unwrap_used, clippy::expect_used)]
use switchyard_codegen::*;

#[test]
fn scratch() {
    let Ok(path) = std::env::var("SWITCHYARD_NATIVE_FUNCTIONS_YAML") else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let t = std::time::Instant::now();
    match parse_native_functions(&text, &path, &ParseOptions::default()) {
        Ok(p) => {
            println!(
                "ok {} yaml {} groups {} items {} views {} in {:?}",
                p.functions.len(),
                p.num_yaml_functions,
                p.groups().count(),
                p.grouped.len(),
                p.view_groups.len(),
                t.elapsed()
            );
        }
        Err(es) => {
            for e in es.iter().take(30) {
                println!("{e}\n");
            }
            println!("{} errors", es.len());
        }
    }
}
