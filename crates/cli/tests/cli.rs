//! The `switchyard` command, run as a user runs it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn json_lines(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn call_prints_like_pytorch() {
    // torch.add(torch.tensor([[1,2],[3,4]]), torch.tensor([10,20]), alpha=2)
    let o = run(&[
        "call",
        "aten::add.Tensor",
        "[[1,2],[3,4]]",
        "[10,20]",
        "alpha=2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o), "tensor([[21, 42],\n        [23, 44]])\n");
}

#[test]
fn call_json_gives_dtype_shape_and_flat_values() {
    let o = run(&[
        "call",
        "add.Tensor",
        "[[1,2],[3,4]]",
        "[10,20]",
        "alpha=2",
        "--json",
    ]);
    assert!(o.status.success());
    assert_eq!(
        json_lines(&o),
        vec![json!({"dtype": "int64", "shape": [2, 2], "values": [21, 42, 23, 44]})]
    );
    // dtype inferred as torch.tensor does: any float makes float32; non-finite values as strings.
    let o = run(&[
        "call",
        "aten::div.Tensor",
        "[1, 2.5, 0]",
        "[0, 2, 0]",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        json_lines(&o),
        vec![json!({"dtype": "float32", "shape": [3], "values": ["inf", 1.25, "nan"]})]
    );
    // A JSON tensor object gives its dtype.
    let o = run(&[
        "call",
        "aten::mul.Tensor",
        r#"{"dtype": "float64", "shape": [2], "values": [1.5, -2]}"#,
        "[2]",
        "--json",
    ]);
    assert_eq!(
        json_lines(&o),
        vec![json!({"dtype": "float64", "shape": [2], "values": [3.0, -4.0]})]
    );
}

#[test]
fn call_returns_tuples_as_lists() {
    // torch.max(torch.tensor([[1, 5], [7, 3]]), 1) -> values [5, 7], indices [1, 0]
    let o = run(&["call", "aten::max.dim", "[[1,5],[7,3]]", "1", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json_lines(&o);
    assert_eq!(
        v,
        vec![
            json!({"dtype": "int64", "shape": [2], "values": [5, 7]}),
            json!({"dtype": "int64", "shape": [2], "values": [1, 0]})
        ]
    );
}

#[test]
fn call_errors_are_json_with_a_failing_exit_code() {
    let o = run(&["call", "aten::add.Tensor", "[1,2]", "[1,2,3]", "--json"]);
    assert!(!o.status.success());
    let v = &json_lines(&o)[0];
    assert_eq!(v["error"], "RuntimeError");
    assert_eq!(
        v["message"],
        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
    );
}

#[test]
fn bad_arguments_name_the_argument() {
    let o = run(&["call", "aten::add.Tensor", "[1,2", "[1]"]);
    assert!(!o.status.success());
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("argument 'self'"), "{err}");
    let o = run(&["call", "aten::add.Tensor", "[1]", "[1]", "beta=2"]);
    assert!(!o.status.success());
    assert!(String::from_utf8(o.stderr).unwrap().contains("beta"));
    let o = run(&["call", "aten::add.Tensor", "[1]"]);
    assert!(
        String::from_utf8(o.stderr)
            .unwrap()
            .contains("missing required argument 'other'")
    );
    let o = run(&["call", "aten::no_such_op", "[1]"]);
    assert!(
        String::from_utf8(o.stderr)
            .unwrap()
            .contains("unknown operator")
    );
}

#[test]
fn table_and_explain_show_the_dispatch() {
    let o = run(&["table", "add.Tensor"]);
    assert!(o.status.success());
    let table = stdout(&o);
    assert!(table.contains("CPU: "), "{table}");
    assert!(table.contains("Meta: "), "{table}");
    assert!(table.contains("[kernel]"), "{table}");
    let o = run(&["explain", "add.Tensor", "--requires-grad"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(text.contains("AutogradCPU"), "{text}");
    assert!(text.contains("CPU"), "{text}");
}

#[test]
fn ops_lists_how_a_backend_serves_each_operator() {
    let o = run(&["ops", "--backend", "Meta"]);
    assert!(o.status.success());
    let text = stdout(&o);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(str::to_owned)
    };
    assert!(line("aten::add.Tensor").unwrap().contains("kernel"));
    // A CompositeImplicitAutograd operator reaches Meta through its composite kernel.
    assert!(
        line("aten::matmul").unwrap().contains("composite"),
        "{:?}",
        line("aten::matmul")
    );
    // Every operator runs on Meta tensors except masked_select and nonzero, whose result
    // sizes depend on the values (PyTorch has no Meta kernel for them either; `where(c)` and
    // `nonzero_numpy` are composites over nonzero).
    let missing: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_end().ends_with("missing"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        missing,
        [
            "aten::masked_select",
            "aten::masked_select.out",
            "aten::nonzero",
            "aten::nonzero.out",
        ],
        "operators without a Meta kernel"
    );
}

#[test]
fn yaml_check_reports_each_problem_with_its_line() {
    let dir = std::env::temp_dir().join(format!("switchyard-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "- func: foo(Tensor self) -> Tensor\n  bogus: 1\n\n- func: bar(Tensor self, int x=) -> Tensor\n")
        .unwrap();
    let o = run(&["yaml-check", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    let text = stdout(&o);
    assert!(text.contains("leftover entries: {'bogus': 1}"), "{text}");
    assert!(text.contains("bad.yaml:1"), "{text}");
    assert!(text.contains("bad.yaml:4"), "{text}");
    let ops_yaml = concat!(env!("CARGO_MANIFEST_DIR"), "/../ops/ops.yaml");
    let o = run(&["yaml-check", ops_yaml]);
    assert!(o.status.success(), "{}", stdout(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn demo_and_help_run() {
    let o = run(&["demo"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    for section in [
        "Tensors",
        "Type promotion",
        "Dispatch",
        "MLP forward on cpu",
        "MLP forward on meta",
        "MLP forward on sidecar:0",
        "Operators",
    ] {
        assert!(text.contains(section), "missing {section}");
    }
    // The same MLP in PyTorch 2.15 (tools/oracle/demo_mlp.py) gives tensor(1.5558).
    assert!(text.contains("loss = tensor(1.5558)"), "{text}");
    // On the reference backend: the same value; relu, mm and add ran there, the rest (e.g.
    // log_softmax) went through the CPU fallback, and the demo says which.
    assert!(
        text.contains("loss = tensor(1.5558) (computed on sidecar:0)"),
        "{text}"
    );
    let fell_back = text
        .lines()
        .find(|l| l.starts_with("ran on the CPU through the fallback:"))
        .unwrap_or_default();
    assert!(fell_back.contains("aten::_log_softmax"), "{fell_back}");
    assert!(!fell_back.contains("aten::relu"), "{fell_back}");
    for sub in ["demo", "table", "explain", "call", "ops", "yaml-check"] {
        let o = run(&[sub, "--help"]);
        assert!(o.status.success(), "{sub} --help");
        assert!(stdout(&o).contains("Usage"), "{sub} --help");
    }
}
