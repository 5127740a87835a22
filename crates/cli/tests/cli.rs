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
            .contains("aten::add() is missing value for argument 'other'")
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
    // Lazily: the first step's loss equals the CPU's, nothing falls back, later steps hit the
    // program cache.
    assert!(text.contains("The same training lazily"), "{text}");
    let first = text
        .lines()
        .find(|l| l.contains("first step's loss:") && l.contains("lazily"))
        .unwrap_or_default();
    let losses: Vec<&str> = first
        .split([' ', ',', ';'])
        .filter(|w| w.contains('.') && w.parse::<f64>().is_ok())
        .collect();
    assert_eq!(losses.len(), 2, "{first}");
    assert_eq!(losses[0], losses[1], "{first}");
    assert!(
        text.contains("operators without a lazy kernel (run through the fallback): none"),
        "{text}"
    );
    assert!(text.contains("CachedCompile"), "{text}");
    for sub in ["demo", "table", "explain", "call", "ops", "yaml-check"] {
        let o = run(&[sub, "--help"]);
        assert!(o.status.success(), "{sub} --help");
        assert!(stdout(&o).contains("Usage"), "{sub} --help");
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Runs the command with stdout and stderr connected to pipes whose reading ends are already
/// closed, as in `switchyard ops | head -c1` once `head` has exited.
fn run_into_closed_pipes(args: &[&str]) -> std::process::ExitStatus {
    let (out_r, out_w) = std::io::pipe().unwrap();
    let (err_r, err_w) = std::io::pipe().unwrap();
    drop(out_r);
    drop(err_r);
    Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(args)
        .stdout(out_w)
        .stderr(err_w)
        .status()
        .unwrap()
}

#[test]
fn a_closed_pipe_ends_every_subcommand_quietly() {
    let ops_yaml = concat!(env!("CARGO_MANIFEST_DIR"), "/../ops/ops.yaml");
    for args in [
        &["ops"][..],
        &["demo"],
        &["table", "add.Tensor"],
        &["explain", "add.Tensor"],
        &["call", "aten::add.Tensor", "[1]", "[2]"],
        &["call", "aten::add.Tensor", "[1]", "[2]", "--json"],
        &["yaml-check", ops_yaml],
        &["--help"],
        &["call", "--help"],
    ] {
        // A panic exits with 101; a closed pipe must end the command as if all was read.
        let status = run_into_closed_pipes(args);
        assert_eq!(status.code(), Some(0), "{args:?}");
    }
    // A failure whose message cannot be printed (stderr closed too) still fails normally.
    for args in [
        &["call", "aten::add.Tensor", "[1,2]", "[1,2,3]"][..],
        &["call", "aten::add.Tensor", "[1,2]", "[1,2,3]", "--json"],
        &["table", "no_such_op"],
    ] {
        assert_eq!(run_into_closed_pipes(args).code(), Some(1), "{args:?}");
    }
}

#[test]
fn json_output_of_a_huge_broadcast_is_refused_not_materialised() {
    // torch.tensor([1]).expand(2**32) is a view of one stored value; printing it summarises.
    let o = run(&["call", "aten::expand", "[1]", "[4294967296]"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "tensor([1, 1, 1,  ..., 1, 1, 1])\n");
    // JSON would list 2^32 values: refused up front, with a clear error (and no abort).
    let o = run(&["call", "aten::expand", "[1]", "[4294967296]", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v = &json_lines(&o)[0];
    assert_eq!(v["error"], "RuntimeError");
    let message = v["message"].as_str().unwrap();
    assert!(
        message.starts_with("--json prints at most 1048576 tensor elements per call"),
        "{message}"
    );
    assert!(message.contains("[4294967296]"), "{message}");
    // The limit counts all returns together; up to it, every value is printed.
    let o = run(&["call", "aten::expand", "[7]", "[1048576]", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = &json_lines(&o)[0];
    assert_eq!(v["shape"], json!([1048576]));
    assert_eq!(v["values"].as_array().unwrap().len(), 1 << 20);
    assert!(
        v["values"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| *x == json!(7))
    );
    let o = run(&["call", "aten::expand", "[7]", "[1048577]", "--json"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn arguments_without_a_default_must_be_given() {
    // torch.ops.aten.div.Tensor_mode(a, b) raises "aten::div() is missing value for argument
    // 'rounding_mode'. Declaration: ..."; so do out= (no default) and `int[1]? dim`.
    for (args, missing, declaration) in [
        (
            &["call", "aten::div.Tensor_mode", "[7]", "[2]"][..],
            "aten::div() is missing value for argument 'rounding_mode'",
            "aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
        ),
        (
            &["call", "aten::add.out", "[1]", "[2]"],
            "aten::add() is missing value for argument 'out'",
            "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        ),
        (
            &["call", "aten::sum.dim_IntList", "[[1,2],[3,4]]"],
            "aten::sum() is missing value for argument 'dim'",
            "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
        ),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.starts_with(&format!(
                "RuntimeError: {missing}. Declaration: {declaration}"
            )),
            "{err}"
        );
    }
    // Given, they work: torch.div(tensor([7]), tensor([2]), rounding_mode='floor') = [3];
    // torch.add(tensor([1]), tensor([2]), out=tensor([0])) = [3]; None is a value for `dim`.
    for (args, expected) in [
        (
            &[
                "call",
                "aten::div.Tensor_mode",
                "[7]",
                "[2]",
                "rounding_mode=floor",
            ][..],
            "tensor([3])\n",
        ),
        (
            &[
                "call",
                "aten::div.Tensor_mode",
                "[7]",
                "[2]",
                "rounding_mode=None",
            ],
            "tensor([3.5000])\n",
        ),
        (
            &["call", "aten::add.out", "[1]", "[2]", "out=[0]"],
            "tensor([3])\n",
        ),
        (
            &["call", "aten::sum.dim_IntList", "[[1,2],[3,4]]", "None"],
            "tensor(10)\n",
        ),
    ] {
        let o = run(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), expected, "{args:?}");
    }
    // The other schema-matching errors use torch.ops' wording too.
    let o = run(&["call", "aten::add.Tensor", "[1]", "[2]", "1", "2"]);
    assert!(
        stderr(&o).starts_with("RuntimeError: aten::add() expected at most 3 argument(s) but received 4 argument(s). Declaration: aten::add.Tensor("),
        "{}",
        stderr(&o)
    );
    let o = run(&["call", "aten::add.Tensor", "[1]", "[2]", "2"]);
    assert!(
        stderr(&o).starts_with("RuntimeError: aten::add() takes 2 positional argument(s) but 3 was/were given.  Declaration: "),
        "{}",
        stderr(&o)
    );
    let o = run(&["call", "aten::add.Tensor", "[1]", "[2]", "self=[3]"]);
    assert!(
        stderr(&o).starts_with("RuntimeError: Argument 'self' specified both as positional and keyword argument. Schema: aten::add.Tensor("),
        "{}",
        stderr(&o)
    );
    let o = run(&["call", "aten::add.Tensor", "[1]", "[2]", "beta=2"]);
    assert!(
        stderr(&o).starts_with(
            "RuntimeError: Unknown keyword argument 'beta' for operator 'aten::add'. Schema: "
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn sized_int_lists_take_a_bare_int() {
    // F.max_pool2d(torch.tensor([[[1., 2.], [3., 4.]]]), 2) = [[[4.]]]; avg_pool2d gives 2.5.
    let x = "[[[1.0,2.0],[3.0,4.0]]]";
    for (op, expected) in [
        ("aten::max_pool2d", "tensor([[[4.]]])\n"),
        ("aten::avg_pool2d", "tensor([[[2.5000]]])\n"),
    ] {
        let o = run(&["call", op, x, "2"]);
        assert!(o.status.success(), "{op}: {}", stderr(&o));
        assert_eq!(stdout(&o), expected, "{op}");
        // padding=0 is [0, 0], stride=2 is [2, 2].
        let o = run(&["call", op, x, "kernel_size=2", "stride=2", "padding=0"]);
        assert_eq!(stdout(&o), expected, "{op}: {}", stderr(&o));
    }
    // The schema defaults (`SymInt[2] stride=1`) are read the same way, so explain works.
    for op in [
        "aten::conv2d",
        "aten::max_pool2d",
        "aten::avg_pool2d",
        "aten::convolution",
    ] {
        let o = run(&["explain", op]);
        assert!(o.status.success(), "{op}: {}", stderr(&o));
        assert!(stdout(&o).contains("6. Hops"), "{op}: {}", stdout(&o));
    }
    // An unsized list takes no bare int (PyTorch's parser refuses it too).
    let o = run(&["call", "aten::permute", "[[1]]", "0"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("expected a list"), "{}", stderr(&o));
}

#[test]
fn argument_errors_name_the_operator_and_the_argument() {
    for (args, operator, argument) in [
        (
            &["call", "aten::max_pool2d", "[[[1.0]]]", "abc"][..],
            "aten::max_pool2d",
            "'kernel_size'",
        ),
        (
            &["call", "aten::add.Tensor", "[1,2", "[1]"],
            "aten::add",
            "'self'",
        ),
        (
            &["call", "aten::sum.dim_IntList", "[1]", "[1.5]"],
            "aten::sum",
            "'dim'",
        ),
        (
            &["call", "aten::add.Tensor", "[1]", "[2]", "alpha=x"],
            "aten::add",
            "'alpha'",
        ),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.contains(&format!("{operator}() Expected a value of type"))
                && first.contains(&format!("for argument {argument}")),
            "{err}"
        );
        assert!(err.contains("Declaration: "), "{err}");
    }
}

/// The `--json` tensor of `call aten::clone LITERAL`, or the error message.
fn tensor_literal(literal: &str) -> Result<Value, String> {
    let o = run(&["call", "aten::clone", literal, "--json"]);
    let v = json_lines(&o).remove(0);
    if o.status.success() {
        Ok(v)
    } else {
        Err(v["message"].as_str().unwrap().to_owned())
    }
}

#[test]
fn tensor_literals_are_built_as_torch_tensor_builds_them() {
    let details = |literal: &str| {
        let e = tensor_literal(literal).unwrap_err();
        e.split("Cast error details: ")
            .nth(1)
            .unwrap_or(&e)
            .to_owned()
    };
    // Ragged lists: torch.tensor([[1, 2], [3]]) raises "expected sequence of length 2 at dim 1
    // (got 1)"; [1, [2]] and [[1], 2] are refused too (no shape [2, 1]).
    assert_eq!(
        details("[[1,2],[3]]"),
        "expected sequence of length 2 at dim 1 (got 1)"
    );
    assert_eq!(
        details("[1,[2]]"),
        "expected a number at dim 1 (got a sequence of length 1)"
    );
    assert_eq!(
        details("[[1],2]"),
        "not a sequence: expected sequence of length 1 at dim 1 (got 2)"
    );
    // Out of range: torch.tensor([300], dtype=torch.int8) raises "value cannot be converted to
    // type int8 without overflow"; so do 256 for uint8, 1e20 and inf for int64.
    let obj =
        |dtype: &str, v: &str| format!(r#"{{"dtype": "{dtype}", "shape": [1], "values": [{v}]}}"#);
    for (dtype, v) in [
        ("int8", "300"),
        ("uint8", "256"),
        ("int64", "1e20"),
        ("int64", "\"inf\""),
        ("int32", "2147483648"),
    ] {
        assert_eq!(
            details(&obj(dtype, v)),
            format!("value cannot be converted to type {dtype} without overflow"),
            "{dtype} {v}"
        );
    }
    // torch.tensor([2**70]) raises "Overflow when unpacking long" (it does not become a float).
    assert_eq!(
        details("[1180591620717411303424]"),
        "Overflow when unpacking long"
    );
    assert_eq!(
        details(&obj("int64", "9223372036854775808")),
        "Overflow when unpacking long"
    );
    // In range they are kept exactly: int64 extremes, and uint8 -1 wraps to 255 as in PyTorch.
    assert_eq!(
        tensor_literal("[9223372036854775807, -9223372036854775808]").unwrap(),
        json!({"dtype": "int64", "shape": [2], "values": [i64::MAX, i64::MIN]})
    );
    assert_eq!(
        tensor_literal(r#"{"dtype": "uint8", "shape": [2], "values": [255, -1]}"#).unwrap(),
        json!({"dtype": "uint8", "shape": [2], "values": [255, 255]})
    );
    // Malformed objects are refused, not defaulted.
    assert_eq!(
        details(r#"{"dtype": 5, "shape": [1], "values": [1]}"#),
        "\"dtype\" must be the name of a dtype such as \"float32\", got an integer (5)"
    );
    assert_eq!(
        details(r#"{"dtype": "float32", "shape": [1], "values": [1], "device": "cpu"}"#),
        "unknown key \"device\" in a tensor object (its keys are \"dtype\", \"shape\" and \"values\")"
    );
    assert_eq!(
        details(r#"{"dtype": "float32", "shape": [2, 2], "values": [1, 2, 3]}"#),
        "shape '[2, 2]' is invalid for input of size 3"
    );
    assert!(details(r#"{"dtype": "float32", "values": [1]}"#).contains("needs \"shape\""),);
    assert!(details(r#"["a"]"#).starts_with("invalid data type 'str'"));
    // Without "dtype" an object infers it from its values, as torch.tensor does.
    assert_eq!(
        tensor_literal(r#"{"shape": [2, 1], "values": [1, 2]}"#).unwrap(),
        json!({"dtype": "int64", "shape": [2, 1], "values": [1, 2]})
    );
    assert_eq!(
        tensor_literal("[[true, false]]").unwrap(),
        json!({"dtype": "bool", "shape": [1, 2], "values": [true, false]})
    );
}

#[test]
fn negative_numbers_are_values() {
    // torch.sum(torch.tensor([[1, 2], [3, 4]]), -1) = [3, 7]; x * -1.5 = [-3.].
    let o = run(&["call", "aten::sum.dim_IntList", "[[1,2],[3,4]]", "-1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "tensor([3, 7])\n");
    let o = run(&["call", "aten::mul.Scalar", "[2.0]", "-1.5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        json_lines(&o),
        vec![json!({"dtype": "float32", "shape": [1], "values": [-3.0]})]
    );
    let o = run(&[
        "call",
        "aten::sum.dim_IntList",
        "[[1,2],[3,4]]",
        "-2",
        "--json",
    ]);
    assert_eq!(
        json_lines(&o),
        vec![json!({"dtype": "int64", "shape": [2], "values": [4, 6]})]
    );
}

#[test]
fn the_reference_backend_is_loaded_by_name() {
    let line = |text: &str, name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    // The sidecar implements add.Tensor and mm itself; exp reaches it through its fallback.
    for backend in ["sidecar", "PrivateUse1"] {
        let o = run(&["ops", "--backend", backend]);
        assert!(o.status.success(), "{backend}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(
            line(&text, "aten::add.Tensor").ends_with(" kernel"),
            "{backend}"
        );
        assert!(line(&text, "aten::mm").ends_with(" kernel"), "{backend}");
        assert!(line(&text, "aten::exp").ends_with(" fallback"), "{backend}");
        assert!(!text.contains("missing"), "{backend}");
    }
    let o = run(&["table", "add.Tensor", "--load", "sidecar"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("SIDECAR: wrapper_PrivateUse1_add_Tensor [kernel]"),
        "{}",
        stdout(&o)
    );
    let o = run(&["explain", "add.Tensor", "--device", "sidecar"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("-> wrapper_PrivateUse1_add_Tensor"),
        "{}",
        stdout(&o)
    );
    let o = run(&[
        "call",
        "aten::add.Tensor",
        "[1,2]",
        "[10,20]",
        "--device",
        "sidecar",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "tensor([11, 22], device='sidecar:0')\n");
    let o = run(&[
        "call",
        "aten::exp",
        "[0.0]",
        "--device",
        "sidecar:0",
        "--json",
    ]);
    assert_eq!(
        json_lines(&o),
        vec![json!({"dtype": "float32", "shape": [1], "values": [1.0]})]
    );
    let o = run(&["ops", "--load", "nosuch"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("unknown backend 'nosuch'"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn yaml_check_validates_a_backend_yaml_with_the_backend_rules() {
    let sidecar = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../backends/sidecar/backend.yaml"
    );
    let o = run(&["yaml-check", sidecar]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).ends_with("backend.yaml: ok\n"), "{}", stdout(&o));
    let dir = std::env::temp_dir().join(format!("switchyard-cli-backend-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // gen_backend_stubs' messages, with the line.
    for (text, message, line) in [
        (
            "backend: PrivateUse1\ncpp_namespace: x\nsupported: [add.Tensor]\nbogus: 1\n",
            "contains unexpected keys: bogus. Only the following keys are supported: backend, class_name, cpp_namespace, extra_headers, supported, autograd, full_codegen, non_native, ir_gen, symint",
            4,
        ),
        (
            "backend: PrivateUse1\ncpp_namespace: x\nsupported: [no_such_op]\n",
            "Found an invalid operator name: no_such_op",
            3,
        ),
        (
            "cpp_namespace: x\nsupported: [abs]\n",
            "You must provide a value for \"backend\"",
            0,
        ),
    ] {
        let file = dir.join("b.yaml");
        std::fs::write(&file, text).unwrap();
        let o = run(&["yaml-check", file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{text}");
        let out = stdout(&o);
        assert!(out.contains(message), "{out}");
        if line > 0 {
            assert!(out.contains(&format!("b.yaml:{line}")), "{out}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_schema_default_is_a_value() {
    // Call by name fills defaults by reading them: each must read as a value of its type
    // (`SymInt[2] stride=1`, `bool[3] output_mask=[True, True, True]`, `str reduce="mean"`).
    use switchyard_core::Device;
    let mut checked = 0;
    for op in switchyard_dispatch::Dispatcher::singleton().all_operators() {
        let schema = op.require_schema().unwrap();
        for (i, a) in schema.arguments.iter().enumerate() {
            if a.default.is_some() {
                switchyard::args::default_value(&schema, i, Device::CPU)
                    .unwrap_or_else(|e| panic!("{}: {e}", op.name()));
                checked += 1;
            }
        }
    }
    assert!(checked > 400, "only {checked} defaults");
}

#[test]
fn errors_name_the_operator_the_user_called() {
    // remainder.Scalar is a composite over remainder.Tensor; torch.remainder(tensor([1]), 0)
    // raises "ZeroDivisionError". The error is reported for the operator called.
    let o = run(&["call", "aten::remainder.Scalar", "[1]", "0"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "RuntimeError: ZeroDivisionError (in operator aten::remainder.Scalar, raised in aten::remainder.Tensor)\n"
    );
    let o = run(&["call", "aten::remainder.Scalar", "[1]", "0", "--json"]);
    assert_eq!(
        json_lines(&o),
        vec![json!({
            "error": "RuntimeError",
            "message": "ZeroDivisionError",
            "operator": "aten::remainder.Scalar",
            "raised_in": "aten::remainder.Tensor"
        })]
    );
    // An operator that fails itself is named alone.
    let o = run(&["call", "aten::remainder.Tensor", "[1]", "[0]", "--json"]);
    assert_eq!(
        json_lines(&o),
        vec![
            json!({"error": "RuntimeError", "message": "ZeroDivisionError", "operator": "aten::remainder.Tensor"})
        ]
    );
}

#[test]
fn functionalize_prints_the_traced_graph_as_text() {
    let o = run(&["functionalize", "simple", "--remove", "mutations_and_views"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        stdout(&o),
        "# simple (A.11 F1): one view of the input, mutated in place, then a read of the input
# functionalize(f, remove='mutations_and_views'), traced below the layer
graph(x):
    %ones = ones([4,2])
    %view_copy = view_copy(x, [4,2])
    %add = add(%view_copy, %ones)
    %view_copy_1 = view_copy(%add, [4,2])
    %view_copy_2 = view_copy(%view_copy_1, [4,2])
    %mul = mul(%view_copy_1, %view_copy_1)
    copy_(x, %view_copy_1)  # write-back
    return %view_copy_2
"
    );
    // PyTorch's default keeps views; `--eager` shows the program before functionalization.
    let o = run(&["functionalize"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("remove='mutations'"));
    assert!(stdout(&o).contains("%view_1 = view(%add, [4,2])"));
    let o = run(&["functionalize", "simple", "--eager"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(text.contains("# traced eagerly"), "{text}");
    assert!(text.contains("    add_(%view, %ones)\n"), "{text}");
}

#[test]
fn functionalize_lists_its_programs() {
    let o = run(&["functionalize", "--list"]);
    assert!(o.status.success());
    let text = stdout(&o);
    for name in ["simple ", "everything ", "view_inplace ", "split "] {
        assert!(
            text.lines().any(|l| l.starts_with(name)),
            "{name} missing:\n{text}"
        );
    }
}

#[test]
fn functionalize_prints_dot() {
    let o = run(&["functionalize", "view_inplace", "--format", "dot"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dot = stdout(&o);
    assert!(dot.starts_with("digraph graph {\n"), "{dot}");
    assert!(dot.contains("in0 [shape=ellipse, label=\"x\"];"), "{dot}");
    // The write-back of the input's transpose_ and values: dashed.
    assert!(
        dot.contains("label=\"copy_(x, %transpose_4)\", style=dashed"),
        "{dot}"
    );
    assert!(dot.trim_end().ends_with('}'));
}

#[test]
fn functionalize_prints_json() {
    let o = run(&[
        "functionalize",
        "everything",
        "--remove",
        "mutations_and_views",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(g["format"], "switchyard-graph");
    assert_eq!(g["inputs"], json!(["x"]));
    let nodes = g["nodes"].as_array().unwrap();
    assert_eq!(
        nodes[0],
        json!({"op": "aten::ones", "name": "ones",
               "args": [{"ints": [2, 2]}, null, null, null, null],
               "outputs": [{"value": "ones"}], "write_back": false})
    );
    // No view survives: every view is its *_copy operator.
    for n in nodes {
        let op = n["op"].as_str().unwrap();
        assert!(
            !["aten::view", "aten::transpose.int", "aten::split.Tensor"].contains(&op),
            "{op}"
        );
    }
    assert_eq!(g["outputs"], json!([{"value": "getitem_1"}]));
}

#[test]
fn functionalize_refuses_a_bad_mode_or_program() {
    let o = run(&["functionalize", "simple", "--remove", "views"]);
    assert!(!o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "RuntimeError: functionalize(f, remove='mutations'): received invalid argument for remove=views. Valid options are:\n     remove='mutations': all inplace and out= operators will be removed from the program, and replaced with their out-of-place equivalents.\n     remove='mutations_and_views': In addition to the above, all aliasing operators {view} will be replaced with their non-aliasing counterparts, {view}_copy.\n\n"
    );
    let o = run(&["functionalize", "nope"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("unknown program 'nope'"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn explain_functionalize_shows_the_layer_and_the_graph_below_it() {
    // An in-place operator: the Functionalize kernel calls the functional variant below the
    // layer, and the backend's graph has no mutation but the transform's write-back.
    let o = run(&["explain", "add_.Tensor", "--functionalize"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(
        text.contains(
            "[redispatch] aten::add_.Tensor at Functionalize -> functionalize_add__Tensor"
        ),
        "{text}"
    );
    assert!(text.contains("[call] aten::add.Tensor at CPU"), "{text}");
    let graph = &text[text.find("8. Below the Functionalize layer").unwrap()..];
    assert!(graph.contains("remove='mutations'"), "{graph}");
    assert!(graph.contains("%add = add(self, other)"), "{graph}");
    assert!(graph.contains("copy_(self, %add)  # write-back"), "{graph}");
    assert!(!graph.contains("add_("), "{graph}");
    // A view, with views removed: the backend sees `transpose_copy`.
    let o = run(&[
        "explain",
        "transpose.int",
        "--functionalize",
        "--remove",
        "mutations_and_views",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(
        text.contains("at Functionalize -> functionalize_transpose_int"),
        "{text}"
    );
    let graph = &text[text.find("8. Below the Functionalize layer").unwrap()..];
    assert!(graph.contains("= transpose_copy(self,"), "{graph}");
    // PyTorch's error for an invalid mode.
    let o = run(&[
        "explain",
        "add.Tensor",
        "--functionalize",
        "--remove",
        "bogus",
    ]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("received invalid argument for remove=bogus. Valid options are:"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The graph part of `switchyard functionalize`'s text output (after its two `#` lines).
fn graph_body(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    stdout(o)
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("switchyard-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn functionalize_round_trips_a_recorded_graph() {
    // F18 saved as traced eagerly, loaded back and functionalized: the same graph as
    // functionalizing F18 itself, in both modes; replayed eagerly, the same eager graph.
    let dir = scratch_dir("graphs");
    for program in ["everything", "view_inplace", "optional_tensor_list"] {
        let file = dir.join(format!("{program}.json"));
        let path = file.to_str().unwrap();
        for mode in [
            &["--remove", "mutations_and_views"][..],
            &["--remove", "mutations"],
            &["--eager"],
        ] {
            let direct = run(&[&["functionalize", program, "--save-graph", path], mode].concat());
            let loaded = run(&[&["functionalize", "--load-graph", path], mode].concat());
            assert_eq!(
                graph_body(&loaded),
                graph_body(&direct),
                "{program} {mode:?}"
            );
            assert!(
                stdout(&loaded).starts_with(&format!(
                    "# {path}: a recorded graph, replayed on fresh inputs\n"
                )),
                "{}",
                stdout(&loaded)
            );
        }
        // What was saved is the eager program: its input's type, and its in-place calls.
        let g: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            g["input_types"],
            json!([{"dtype": "float32", "sizes": [4, 2], "strides": [2, 1]}])
        );
        let ops: Vec<&str> = g["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["op"].as_str().unwrap())
            .collect();
        let inplace = match program {
            "everything" => "aten::unsqueeze_",
            "view_inplace" => "aten::transpose_",
            _ => "aten::index_put_",
        };
        assert!(ops.contains(&inplace), "{program}: {ops:?}");
    }
    // `--format json` output loads too: a functionalized graph replayed and functionalized
    // again is the same graph (no mutation left to remove but the write-back).
    let file = dir.join("functional.json");
    let o = run(&[
        "functionalize",
        "simple",
        "--remove",
        "mutations_and_views",
        "--format",
        "json",
    ]);
    std::fs::write(&file, stdout(&o)).unwrap();
    let loaded = run(&[
        "functionalize",
        "--load-graph",
        file.to_str().unwrap(),
        "--remove",
        "mutations_and_views",
    ]);
    let text = graph_body(&loaded);
    assert!(text.contains("%add = add(%view_copy, %ones)"), "{text}");
    assert!(!text.contains("add_("), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn functionalize_refuses_bad_recorded_graphs() {
    let dir = scratch_dir("bad-graphs");
    let err = |args: &[&str]| {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let missing = dir.join("missing.json");
    let e = err(&["functionalize", "--load-graph", missing.to_str().unwrap()]);
    assert!(
        e.starts_with(&format!("ValueError: cannot read {}: ", missing.display())),
        "{e}"
    );
    let cases = [
        (
            "{not json",
            "invalid graph JSON: key must be a string at line 1 column 2",
        ),
        (
            r#"{"format": "other"}"#,
            r#"invalid graph JSON: expected "format": "switchyard-graph""#,
        ),
        (
            r#"{"format": "switchyard-graph", "version": 1, "inputs": ["x"], "constants": [],
                "nodes": [{"op": "aten::neg", "name": "n", "args": [{"value": "y"}], "outputs": [], "write_back": false}],
                "outputs": [{"value": "n"}]}"#,
            "invalid graph JSON: node 0 (aten::neg) uses %y before it is defined",
        ),
        (
            r#"{"format": "switchyard-graph", "version": 1, "inputs": ["x"], "constants": [],
                "input_types": [{"dtype": "float32", "sizes": [2], "strides": [1]}, {"dtype": "float32", "sizes": [2], "strides": [1]}],
                "nodes": [], "outputs": [{"value": "x"}]}"#,
            "invalid graph JSON: 2 input types for 1 inputs",
        ),
        (
            r#"{"format": "switchyard-graph", "version": 1, "inputs": ["x"], "constants": [],
                "input_types": [{"dtype": "float99", "sizes": [2], "strides": [1]}],
                "nodes": [], "outputs": [{"value": "x"}]}"#,
            "float99",
        ),
        (
            r#"{"format": "switchyard-graph", "version": 1, "inputs": ["x"], "constants": [],
                "nodes": [], "outputs": [{"value": "x"}]}"#,
            "the graph does not record its inputs' dtypes and sizes ('input_types'), which replaying it needs",
        ),
    ];
    for (i, (text, message)) in cases.iter().enumerate() {
        let file = dir.join(format!("bad{i}.json"));
        std::fs::write(&file, text).unwrap();
        let e = err(&["functionalize", "--load-graph", file.to_str().unwrap()]);
        assert!(
            e.starts_with(&format!("ValueError: {}: ", file.display())) || i == 4,
            "{e}"
        );
        assert!(e.contains(message), "{i}: {e}");
    }
    // A graph and a built-in program at once.
    let file = dir.join("bad0.json");
    let o = run(&[
        "functionalize",
        "simple",
        "--load-graph",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("the argument '[PROGRAM]' cannot be used with '--load-graph <FILE>'"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn functionalize_on_the_reference_backend() {
    // The program's eager recording replayed on the sidecar: the same graph as on the CPU,
    // its factories on the device.
    for mode in ["mutations", "mutations_and_views"] {
        for program in [
            "simple",
            "simple_out",
            "everything",
            "index_mutation_on_non_input",
        ] {
            let cpu = graph_body(&run(&["functionalize", program, "--remove", mode]));
            let o = run(&[
                "functionalize",
                program,
                "--remove",
                mode,
                "--device",
                "sidecar",
            ]);
            let sidecar = graph_body(&o);
            // The factories of these programs: `ones`, `empty`, `zeros` with a size only.
            let on_device: String = cpu
                .lines()
                .map(|l| {
                    let factory = ["= ones(", "= empty(", "= zeros("]
                        .iter()
                        .any(|f| l.contains(f));
                    match l.strip_suffix(')') {
                        Some(call) if factory => format!("{call}, device=sidecar:0)\n"),
                        _ => format!("{l}\n"),
                    }
                })
                .collect();
            assert_ne!(on_device, cpu, "{program}: no factory");
            assert_eq!(sidecar, on_device, "{program} {mode}");
            assert!(
                stdout(&o).contains(&format!(
                    "# functionalize(f, remove='{mode}'), traced below the layer, on sidecar:0\n"
                )),
                "{}",
                stdout(&o)
            );
        }
    }
}

/// `call --device lazy`: the arguments go to the lazy device, the call is traced, printing the
/// result runs it: the same text as on the CPU.
#[test]
fn call_on_the_lazy_device_prints_the_cpu_result() {
    let args = [
        "call",
        "aten::add.Tensor",
        "[[1,2],[3,4]]",
        "[10,20]",
        "alpha=2",
    ];
    let cpu = run(&args);
    let mut lazy_args = args.to_vec();
    lazy_args.extend(["--device", "lazy"]);
    let lazy = run(&lazy_args);
    assert!(
        lazy.status.success(),
        "{}",
        String::from_utf8_lossy(&lazy.stderr)
    );
    let (c, l) = (stdout(&cpu), stdout(&lazy));
    // The CPU prints a plain tensor; the lazy one names its device.
    assert_eq!(c, "tensor([[21, 42],\n        [23, 44]])\n");
    assert!(l.starts_with("tensor([[21, 42],\n        [23, 44]]"), "{l}");
}

/// `explain --device lazy` shows the layers above the backend, functionalization included,
/// and the lazy kernel.
#[test]
fn explain_on_the_lazy_device_shows_functionalize_then_lazy() {
    let o = run(&["explain", "aten::add.Tensor", "--device", "lazy"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    let f = text.find("Functionalize").expect(&text);
    let l = text[f..].find("Lazy").expect(&text);
    assert!(l > 0, "{text}");
}

/// `switchyard lazy`: the last step's IR as text and as Graphviz, the metrics report, the
/// program list and an unknown program's error.
#[test]
fn lazy_subcommand_dumps_and_reports() {
    let o = run(&["lazy", "add", "--steps", "2", "--metrics"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(text.starts_with("IR {\n"), "{text}");
    assert!(text.contains("aten::add("), "{text}");
    assert!(
        text.contains("ROOT=0, NodeType=torch::lazy::AddTensor"),
        "{text}"
    );
    // Three steps of the same graph: compiled once, then cached.
    assert!(
        text.contains("Counter: UncachedCompile\n  Value: 1"),
        "{text}"
    );
    assert!(
        text.contains("Counter: CachedCompile\n  Value: 2"),
        "{text}"
    );

    let o = run(&["lazy", "mlp-step", "--format", "dot"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dot = stdout(&o);
    assert!(
        dot.starts_with("digraph G {\n") && dot.ends_with("}\n"),
        "{dot}"
    );
    assert!(
        dot.contains("aten::tanh") && dot.contains("aten::mm"),
        "{dot}"
    );
    assert!(dot.contains(" -> node"), "{dot}");

    let o = run(&["lazy", "--list"]);
    assert!(stdout(&o).contains("mlp-step"));
    let o = run(&["lazy", "nope"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown lazy program 'nope'"));
}

/// The IR nodes of a text dump and, per node, how many operands it has (read from the
/// `%k = [shape] op(%a, %b.1), ...` lines).
fn ir_nodes_and_operands(text: &str) -> (usize, usize) {
    let mut nodes = 0;
    let mut operands = 0;
    for line in text.lines().filter(|l| l.trim_start().starts_with('%')) {
        nodes += 1;
        let call = &line[line.find("] ").unwrap() + 2..];
        let args = &call[call.find('(').unwrap() + 1..call.find(')').unwrap()];
        operands += args.matches('%').count();
    }
    (nodes, operands)
}

/// The `<g class="node">` and `<g class="edge">` groups of an SVG document, parsed as XML;
/// every edge joins two drawn nodes.
fn svg_nodes_and_edges(svg: &str) -> (usize, usize) {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let groups = |class: &str| {
        root.descendants()
            .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some(class))
            .collect::<Vec<_>>()
    };
    let nodes = groups("node");
    let ids: std::collections::HashSet<&str> =
        nodes.iter().map(|n| n.attribute("id").unwrap()).collect();
    let edges = groups("edge");
    for e in &edges {
        assert!(ids.contains(e.attribute("data-from").unwrap()));
        assert!(ids.contains(e.attribute("data-to").unwrap()));
        let points = e
            .descendants()
            .find(|n| n.has_tag_name("polyline"))
            .unwrap()
            .attribute("points")
            .unwrap();
        assert!(points.split(' ').count() >= 2, "{points}");
    }
    for n in &nodes {
        assert!(n.descendants().any(|c| c.has_tag_name("rect")));
    }
    (nodes.len(), edges.len())
}

/// `switchyard lazy --format svg` and `lazy render`: the SVG parses as XML and has one node
/// box per IR node and one edge per operand of the text dump of the same step.
#[test]
fn lazy_svg_has_a_box_per_ir_node_and_an_edge_per_operand() {
    let o = run(&["lazy", "mlp-step", "--format", "text"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (nodes, operands) = ir_nodes_and_operands(&stdout(&o));
    assert!(
        nodes > 20 && operands > nodes,
        "{nodes} nodes, {operands} operands"
    );

    let o = run(&["lazy", "mlp-step", "--format", "svg"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(svg_nodes_and_edges(&stdout(&o)), (nodes, operands));

    // A saved Graphviz dump rendered to a file.
    let dir = std::env::temp_dir().join(format!("switchyard-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (dot, svg) = (dir.join("g.dot"), dir.join("g.svg"));
    let o = run(&[
        "lazy",
        "mlp-step",
        "--format",
        "dot",
        "-o",
        dot.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    let o = run(&[
        "lazy",
        "render",
        dot.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(svg_nodes_and_edges(&text), (nodes, operands));

    // Anything outside the dumps' Dot subset is refused with its line.
    std::fs::write(
        &dot,
        "digraph G {\n  node0 [label=\"a\"]\n  subgraph x {\n}\n",
    )
    .unwrap();
    let o = run(&["lazy", "render", dot.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("line 3: not part of the Dot subset"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
