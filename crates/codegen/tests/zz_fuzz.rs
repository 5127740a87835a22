//! temp
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use switchyard_codegen::*;
#[test]
fn fuzz() {
    let Ok(dir) = std::env::var("FUZZ_DIR") else {
        return;
    };
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut out = String::from("{");
    for (n, p) in names.iter().enumerate() {
        let text = std::fs::read_to_string(p).unwrap();
        let name = p.file_name().unwrap().to_str().unwrap();
        let v = match parse_native_functions(&text, "x", &ParseOptions::default()) {
            Ok(_) => "null".to_string(),
            Err(es) => format!(
                "[{}]",
                es.iter()
                    .map(|e| format!("[{:?}, {:?}]", e.message, e.line.unwrap_or(0)))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        if n > 0 {
            out.push(',');
        }
        out.push_str(&format!("{:?}: {}", name, v));
    }
    out.push('}');
    std::fs::write(format!("{dir}/../rs_fuzz.json"), out).unwrap();
}
#[test]
fn timing() {
    let Ok(path) = std::env::var("SWITCHYARD_NATIVE_FUNCTIONS_YAML") else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let _ = parse_native_functions(&text, &path, &ParseOptions::default()).unwrap();
        println!("{:?}", t.elapsed());
    }
}
