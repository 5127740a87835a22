//! Safetensors files shared with PyTorch: the file `safetensors.torch.save_file` wrote
//! (`tools/oracle/optim.py`) loads with its values, and saving the same tensors here writes
//! the same bytes (so PyTorch's `load_file` reads what switchyard writes).

use serde_json::Value;
use switchyard_core::{ScalarType, Tensor};
use switchyard_nn::serialize::{load_file, save_file};
use switchyard_ops::op;

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn expected() -> Vec<(String, Tensor)> {
    let text = std::fs::read_to_string(dir().join("weights.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    // The file's order (safetensors sorts by dtype alignment, then name): follow the JSON's.
    let mut out = Vec::new();
    for (name, spec) in v.as_object().unwrap() {
        let shape: Vec<i64> = spec["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect();
        let values = spec["values"].as_array().unwrap();
        let t = match spec["dtype"].as_str().unwrap() {
            "float32" => Tensor::from_vec(
                values.iter().map(|x| x.as_f64().unwrap() as f32).collect(),
                &shape,
            ),
            "float64" => {
                Tensor::from_vec(values.iter().map(|x| x.as_f64().unwrap()).collect(), &shape)
            }
            "int64" => {
                Tensor::from_vec(values.iter().map(|x| x.as_i64().unwrap()).collect(), &shape)
            }
            "bool" => Tensor::from_vec(
                values.iter().map(|x| x.as_bool().unwrap()).collect(),
                &shape,
            ),
            other => panic!("dtype {other}"),
        }
        .unwrap();
        out.push((name.clone(), t));
    }
    out
}

fn same(a: &Tensor, b: &Tensor) -> bool {
    a.dtype() == b.dtype()
        && a.sizes() == b.sizes()
        && a.to_f64_vec().unwrap() == b.to_f64_vec().unwrap()
}

#[test]
fn loads_pytorchs_file() {
    let loaded = load_file(&dir().join("weights.safetensors")).unwrap();
    let want = expected();
    assert_eq!(loaded.len(), want.len());
    for (name, t) in &want {
        let (_, got) = loaded.iter().find(|(n, _)| n == name).unwrap();
        assert!(same(got, t), "{name}: {got} vs {t}");
    }
    let (_, w) = loaded.iter().find(|(n, _)| n == "2.weight").unwrap();
    assert_eq!(w.dtype(), ScalarType::Double);
}

#[test]
fn writes_the_bytes_pytorch_writes() {
    let path =
        std::env::temp_dir().join(format!("switchyard-nn-{}.safetensors", std::process::id()));
    // A non-contiguous tensor is written row-major, like a contiguous one.
    let mut tensors = expected();
    let i = tensors.iter().position(|(n, _)| n == "0.weight").unwrap();
    let t = op::t::call(
        &op::contiguous::call(
            &op::t::call(&tensors[i].1).unwrap(),
            switchyard_core::MemoryFormat::Contiguous,
        )
        .unwrap(),
    )
    .unwrap();
    assert!(!t.is_contiguous());
    tensors[i].1 = t;
    save_file(&tensors, &path).unwrap();
    let ours = std::fs::read(&path).unwrap();
    let theirs = std::fs::read(dir().join("weights.safetensors")).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(ours, theirs);
}
