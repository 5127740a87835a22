//! L7 and L8 (plan §8.1): every operator on the lazy device, with the sidecar's sample
//! generator (`backends/sidecar/tests/samples/mod.rs`, included by `#[path]`).

#[path = "../../../sidecar/tests/samples/mod.rs"]
mod shared;

use switchyard_call::args::parse_call_args;
use switchyard_core::{Device, Stack};
use switchyard_schema::SchemaKind;

use crate::support::setup;

/// The lazy device as a comparison target: every call is followed by `mark_step`, so each
/// operator's graph is compiled and run before its results are read. Results run the CPU
/// kernels, so values are compared bit for bit, and the lazy tensor promises the CPU's
/// strides. Every variant the CPU accepts is run (L8 takes ~1 s for ~4000 runs).
fn target() -> shared::Target {
    shared::Target {
        name: "lazy",
        device: switchyard_lazy::device(),
        to_host: switchyard_lazy::to_cpu,
        after_call: switchyard_lazy::mark_step,
        exact: true,
        strides: true,
        all_variants: true,
        bumps: lazy_bumps,
    }
}

/// Version bumps on lazy tensors that differ from the CPU's, checked live against PyTorch
/// 2.15's LTC (`torch._lazy.ts_backend`): `matmul.out` of operands other than two matrices
/// (a CompositeImplicitAutograd composite; two matrices go to `mm.out`) resizes `out` with
/// `resize_output`, which for a tensor without storage goes through `resize_` (a bump) before
/// the `copy_` (another); on the CPU it resizes the storage directly. PyTorch's LTC bumps twice
/// as well.
fn lazy_bumps(op: &str, v: &shared::Variant) -> Option<u32> {
    // The variant's name starts with its sizes (`3x3 float`).
    let rank = v.name.split(' ').next().map_or(0, |s| s.split('x').count());
    (op == "aten::matmul.out" && rank != 2).then_some(2)
}

/// Operators whose lazy run differs from the CPU's on some variant, with the reason. A listed
/// operator that stops differing fails the test (so the list only shrinks). Entries marked
/// BUG are bugs left open.
const L8_DIFFERENCES: &[(&str, &str)] = &[
    (
        "aten::lift",
        "PyTorch's functionalization asserts the input is not functional (`lift_functionalize`), \
         and every lazy tensor is a functional wrapper; ours refuses with an error. (PyTorch's \
         LTC happens to return an alias of the input, by wrapping the wrapper again.)",
    ),
    (
        "aten::nonzero.out",
        "the CPU kernel gives `out` transposed strides ([1, 5]); on lazy the functional result is \
         copied into `out`, which keeps contiguous strides ([2, 1]). PyTorch's LTC gives (2, 1) \
         too (checked live)",
    ),
    (
        "aten::split_copy.Tensor_out",
        "the CPU kernel copies each piece into the given `out` tensors (broadcasting [1, 3] into \
         [2, 3]); functionalization replaces each `out` by the piece, so they become [1, 3]. \
         PyTorch's LTC gives [1, 3] pieces too (checked live)",
    ),
];

/// Runs L8 and checks the differences are exactly [`L8_DIFFERENCES`].
fn run_l08() {
    let report = shared::every_operator(&target(), &[]);
    println!(
        "compared {} operators ({} variants) with the CPU; {} views skipped; {} found no arguments the CPU accepts",
        report.compared.len(),
        report.variants,
        report.views,
        report.never_ran.len(),
    );
    println!(
        "of which functional: {}, in-place: {}, out=: {}",
        report.forms(SchemaKind::Functional),
        report.forms(SchemaKind::Inplace),
        report.forms(SchemaKind::Out)
    );
    let unexpected: Vec<String> = report
        .failures
        .iter()
        .filter(|f| !L8_DIFFERENCES.iter().any(|(n, _)| *n == f.op))
        .map(|f| format!("{} ({}): {}", f.op, f.variant, f.error))
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} mismatches:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    let stale: Vec<&str> = L8_DIFFERENCES
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !report.failures.iter().any(|f| f.op == *n))
        .collect();
    assert!(
        stale.is_empty(),
        "listed but no longer differing: {stale:?}"
    );
    // A floor, so that the comparison cannot silently cover nothing.
    assert!(
        report.compared.len() >= 550 && report.variants >= 3900,
        "only {} operators ({} variants) compared",
        report.compared.len(),
        report.variants
    );
}

/// L8: every operator of ops.yaml (views aside) on lazy tensors, `mark_step` after the call,
/// gives the CPU's returns, written arguments and version bumps (the sidecar's
/// `every_operator_gives_the_cpu_result` on the lazy device).
#[test]
fn l08_every_operator_matches_cpu() {
    let _g = setup();
    run_l08();
}

/// L8 again with IR reuse on: the trie hands back nodes of earlier operators' graphs where
/// operands and arguments match, and the results must not change.
#[test]
fn l08_every_operator_matches_cpu_with_reuse() {
    let _g = setup();
    switchyard_lazy::ir_cache::reset();
    switchyard_lazy::set_reuse_ir(true);
    let result = std::panic::catch_unwind(run_l08);
    let reused: u64 = switchyard_lazy::counter_names()
        .iter()
        .filter(|n| n.starts_with("IrNodeReused_"))
        .map(|n| crate::support::counter(n))
        .sum();
    switchyard_lazy::set_reuse_ir(false);
    switchyard_lazy::ir_cache::reset();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    println!("{reused} nodes reused");
    assert!(reused > 0, "the trie reused nothing");
}

/// The operators of backend.yaml's `full_codegen` and `supported` lists (qualified names,
/// `aten::add.Tensor`), in listing order.
fn yaml_operators() -> Vec<String> {
    let root = switchyard_codegen::emit::workspace::find_workspace_root(std::path::Path::new(
        env!("CARGO_MANIFEST_DIR"),
    ))
    .unwrap();
    let model = switchyard_codegen::emit::workspace::parse_ops_yaml(&root).unwrap();
    let text = std::fs::read_to_string(root.join("backends/lazy/backend.yaml")).unwrap();
    let yaml = switchyard_codegen::parse_backend_yaml(&text, "backend.yaml", &model)
        .unwrap()
        .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    yaml.full_codegen
        .iter()
        .copied()
        .chain(yaml.supported.iter().map(|k| k.function))
        .filter(|i| seen.insert(*i))
        .map(|i| format!("aten::{}", model.functions[i].func.name.unqualified()))
        .collect()
}

/// `aten::add.Tensor` → `add`: the kernel name the lazy counters use (torchgen names a kernel
/// after the operator without its overload; the L7 test strips overloads as PyTorch's
/// `remove_suffixes` does).
fn base_name(qualified: &str) -> &str {
    let name = qualified.split_once("::").map_or(qualified, |(_, n)| n);
    name.split_once('.').map_or(name, |(n, _)| n)
}

/// Arguments (as `switchyard call` takes them) for the backend.yaml operators the generator's
/// variants find none for: their tensors must have related shapes (a convolution's weight, a
/// scatter's source of the selected shape, batch statistics of the channel count).
const HAND_SAMPLES: &[(&str, &[&str])] = &[
    (
        "aten::convolution",
        &[
            "input=[[[[0.5,-1.0,2.0],[1.5,0.25,-2.0],[1.0,0.0,3.0]]]]",
            "weight=[[[[1.0,-0.5],[0.25,2.0]]]]",
            "bias=[0.5]",
            "stride=[1,1]",
            "padding=[1,0]",
            "dilation=[1,1]",
            "transposed=False",
            "output_padding=[0,0]",
            "groups=1",
        ],
    ),
    (
        "aten::_native_batch_norm_legit.no_stats",
        &[
            "input=[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
            "weight=[1.0,2.0,0.5]",
            "bias=[0.0,0.5,-1.0]",
            "training=True",
            "momentum=0.1",
            "eps=1e-5",
        ],
    ),
    (
        "aten::_native_batch_norm_legit_no_training",
        &[
            "input=[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
            "weight=[1.0,2.0,0.5]",
            "bias=None",
            "running_mean=[0.5,0.0,-1.0]",
            "running_var=[1.0,4.0,0.25]",
            "momentum=0.1",
            "eps=1e-5",
        ],
    ),
    (
        "aten::_native_batch_norm_legit_functional",
        &[
            "input=[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
            "weight=None",
            "bias=[0.0,0.5,-1.0]",
            "running_mean=[0.5,0.0,-1.0]",
            "running_var=[1.0,4.0,0.25]",
            "training=True",
            "momentum=0.1",
            "eps=1e-5",
        ],
    ),
    (
        "aten::select_scatter",
        &[
            "self=[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
            "src=[7.0,8.0]",
            "dim=1",
            "index=2",
        ],
    ),
    (
        "aten::diagonal_scatter",
        &[
            "self=[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
            "src=[7.0]",
            "offset=2",
        ],
    ),
    (
        "aten::unfold_backward",
        &[
            "grad_in=[[1.0,2.0],[3.0,4.0],[5.0,6.0]]",
            "input_sizes=[4]",
            "dim=0",
            "size=2",
            "step=1",
        ],
    ),
];

/// The stack of `op`'s hand-written sample on `device`.
fn hand_sample(op: &switchyard_dispatch::OperatorHandle, device: Device) -> Option<Stack> {
    let (_, texts) = HAND_SAMPLES.iter().find(|(n, _)| *n == op.name())?;
    let texts: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
    let schema = op.schema()?;
    Some(parse_call_args(&schema, &texts, device).unwrap())
}

/// The hand-written samples give the CPU's results on lazy (the part of L8 the generator's
/// variants cannot reach).
#[test]
fn l08_hand_samples_match_cpu() {
    let _g = setup();
    let dispatcher = switchyard_dispatch::Dispatcher::singleton();
    let target = target();
    for (name, _) in HAND_SAMPLES {
        let op = dispatcher.find_schema(name).unwrap();
        let mut cpu = hand_sample(&op, Device::CPU).unwrap();
        let cpu_args = cpu.clone();
        op.call_boxed(&mut cpu)
            .unwrap_or_else(|e| panic!("{name} on the CPU: {e}"));
        let mut lazy = hand_sample(&op, switchyard_lazy::device()).unwrap();
        let lazy_args = lazy.clone();
        op.call_boxed(&mut lazy).unwrap();
        switchyard_lazy::mark_step().unwrap();
        assert_eq!(cpu.len(), lazy.len(), "{name}");
        for (i, (c, l)) in cpu.iter().zip(&lazy).enumerate() {
            shared::compare(c, l, &format!("{name} return {i}"), true, &target).unwrap();
        }
        for (i, (c, l)) in cpu_args.iter().zip(&lazy_args).enumerate() {
            shared::compare(c, l, &format!("{name} argument {i}"), true, &target).unwrap();
        }
    }
}

/// backend.yaml operators L7 does not expect to reach their lazy kernel when called from the
/// top, with the reason (PyTorch's `FUNCTIONAL_DECOMPOSE_LIST` and `SKIP_VARIANT_LIST`).
const L7_NOT_DISPATCHED: &[(&str, &str)] = &[
    (
        "aten::lift",
        "functionalization refuses a functional input (PyTorch asserts), and every lazy tensor \
         is one; only a plain lazy tensor reaches `lazy::lift`",
    ),
    (
        "aten::lift_fresh",
        "functionalization returns a view of a functional input (PyTorch's \
         `lift_fresh_functionalize`: `self.view_as(self)`), traced as `lazy::view_copy`",
    ),
    (
        "aten::lift_fresh_copy",
        "functionalization clones a functional input (PyTorch's \
         `lift_fresh_functionalize_copy`), traced as `lazy::clone`",
    ),
];

/// L7 (PyTorch's `test_dispatched_to_lazy`): every operator of backend.yaml's `full_codegen`
/// and `supported` lists, called on lazy tensors with its sample arguments between two
/// `mark_step`s, counts its lazy kernel (`lazy::<name>`, overloads stripped) and falls back
/// for nothing.
#[test]
fn l07_dispatched_to_lazy() {
    let _g = setup();
    let dispatcher = switchyard_dispatch::Dispatcher::singleton();
    let (mut checked, mut wrong, mut no_sample) = (0, Vec::new(), Vec::new());
    for name in yaml_operators() {
        if L7_NOT_DISPATCHED.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let op = dispatcher.find_schema(&name).unwrap();
        let device = switchyard_lazy::device();
        let Some((variant, mut stack)) = shared::cpu_sample(&op)
            .map(|(v, _)| (v.name, shared::arguments(&op, v, device).unwrap()))
            .or_else(|| hand_sample(&op, device).map(|s| ("hand-written", s)))
        else {
            no_sample.push(name);
            continue;
        };
        switchyard_lazy::mark_step().unwrap();
        switchyard_lazy::reset_metrics();
        let called = op.call_boxed(&mut stack);
        let stepped = switchyard_lazy::mark_step();
        // Nothing of this call may stay pending for the next one.
        drop(stack);
        let counters: std::collections::BTreeSet<String> = switchyard_lazy::counter_names()
            .iter()
            .map(|c| c.split('.').next().unwrap_or(c).to_owned())
            .collect();
        let want = format!("lazy::{}", base_name(&name));
        let fell_back: Vec<&String> = counters
            .iter()
            .filter(|c| c.starts_with("aten::"))
            .collect();
        if let Err(e) = called.and(stepped) {
            wrong.push(format!("{name} ({variant}): {e}"));
        } else if !counters.contains(&want) || !fell_back.is_empty() {
            wrong.push(format!(
                "{name} ({variant}): {want} not counted or a fallback: {:?}",
                counters
                    .iter()
                    .filter(|c| c.contains("::"))
                    .collect::<Vec<_>>()
            ));
        } else {
            checked += 1;
        }
    }
    switchyard_lazy::mark_step().unwrap();
    println!("{checked} operators dispatched to lazy");
    assert!(
        wrong.is_empty(),
        "{} operators:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(
        no_sample.is_empty(),
        "operators without a sample: {no_sample:?}"
    );
}

/// Calls `op` with argument texts on the CPU and on lazy (then `mark_step`) and compares:
/// equal returns (bit for bit, with strides), or the same error (raised by the call or by
/// `mark_step` on lazy).
fn check_call(op: &str, texts: &[&str]) {
    let dispatcher = switchyard_dispatch::Dispatcher::singleton();
    let handle = dispatcher.find_schema(op).unwrap();
    let schema = handle.schema().unwrap();
    let texts: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
    let case = format!("{op}({})", texts.join(", "));
    let mut cpu = parse_call_args(&schema, &texts, Device::CPU).unwrap();
    switchyard_core::generator::manual_seed(11).unwrap();
    let cpu_result = handle.call_boxed(&mut cpu);
    let mut lazy = parse_call_args(&schema, &texts, switchyard_lazy::device()).unwrap();
    switchyard_core::generator::manual_seed(11).unwrap();
    let lazy_result = handle
        .call_boxed(&mut lazy)
        .and_then(|()| switchyard_lazy::mark_step());
    match (cpu_result, lazy_result) {
        (Ok(()), Ok(())) => {
            assert_eq!(cpu.len(), lazy.len(), "{case}");
            for (i, (c, l)) in cpu.iter().zip(&lazy).enumerate() {
                shared::compare(c, l, &format!("{case} return {i}"), true, &target())
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
        (Err(c), Err(l)) => assert!(
            l.message().starts_with(c.message()),
            "{case}: cpu error {c} vs lazy error {l}"
        ),
        (c, l) => panic!("{case}: cpu {c:?} vs lazy {l:?}"),
    }
    drop(lazy);
    switchyard_lazy::mark_step().unwrap();
}

/// The operators PyTorch's lazy opinfo test skips (`SKIP_RUNTIME_ERROR_LIST`,
/// `SKIP_INCORRECT_RESULTS_LIST` in `test/lazy/test_ts_opinfo.py`: "Value out of range",
/// "incorrect results", "Empty output_sizes is not supported", ASAN failures) give the CPU's
/// results here, on the edge cases those skips are about: negative and 0-d dimensions, empty
/// indices and tensors, random draws, special powers. (`addcdiv` is not in ops.yaml.)
#[test]
fn pytorch_lazy_opinfo_skips_match_cpu() {
    let _g = setup();
    let x3 = "self=[[[0.5],[-1.25],[2.0]]]"; // [1, 3, 1]
    let scalar = "self={\"dtype\": \"float32\", \"shape\": [], \"values\": [1.5]}";
    let cases: &[(&str, &[&str])] = &[
        // squeeze, t, transpose ("Value out of range": negative dims, 0-d and 1-d tensors).
        ("aten::squeeze", &[x3]),
        ("aten::squeeze.dim", &[x3, "dim=-1"]),
        ("aten::squeeze.dim", &[x3, "dim=1"]),
        ("aten::squeeze.dims", &[x3, "dim=[0,-1]"]),
        ("aten::squeeze.dim", &[scalar, "dim=0"]),
        ("aten::squeeze.dim", &[scalar, "dim=-1"]),
        ("aten::squeeze.dim", &[scalar, "dim=1"]),
        ("aten::t", &[scalar]),
        ("aten::t", &["self=[0.5,-1.25,2.0]"]),
        ("aten::t", &["self=[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]"]),
        ("aten::t", &[x3]),
        ("aten::transpose.int", &[scalar, "dim0=0", "dim1=-1"]),
        ("aten::transpose.int", &[x3, "dim0=-1", "dim1=0"]),
        ("aten::transpose.int", &[x3, "dim0=-4", "dim1=0"]),
        ("aten::squeeze_copy.dims", &[x3, "dim=[-3,2]"]),
        ("aten::transpose_copy.int", &[x3, "dim0=2", "dim1=-2"]),
        // bernoulli ("incorrect results"): the default generator's draws, an explicit one.
        ("aten::bernoulli", &["self=[[0.5,0.25,1.0],[0.0,0.75,0.5]]"]),
        (
            "aten::bernoulli.p",
            &["self=[[0.5,0.25,1.0],[0.0,0.75,0.5]]", "p=0.3"],
        ),
        (
            "aten::bernoulli.Tensor",
            &["self=[[0.5,0.25,1.0],[0.0,0.75,0.5]]", "p=[0.5,0.9,0.1]"],
        ),
        ("aten::bernoulli.p", &["self=[1.0,2.0,3.0]", "p=1.5"]),
        // pow ("incorrect results"): special exponents, negative bases, integer rules.
        (
            "aten::pow.Tensor_Tensor",
            &[
                "self=[-2.0,-0.5,0.0,0.0,4.0]",
                "exponent=[0.5,2.0,0.0,-1.0,-0.5]",
            ],
        ),
        (
            "aten::pow.Tensor_Tensor",
            &["self=[2,-3,0]", "exponent=[3,2,0]"],
        ),
        (
            "aten::pow.Tensor_Tensor",
            &["self=[2,-3,1]", "exponent=[-1,2,0]"],
        ),
        (
            "aten::pow.Tensor_Tensor",
            &["self=[2,-3,4]", "exponent=[0.5,2.0,-1.0]"],
        ),
        (
            "aten::pow.Tensor_Scalar",
            &["self=[-2.0,0.0,4.0]", "exponent=0.5"],
        ),
        (
            "aten::pow.Tensor_Scalar",
            &["self=[-2.0,0.0,4.0]", "exponent=-2"],
        ),
        ("aten::pow.Tensor_Scalar", &["self=[2,3,4]", "exponent=-1"]),
        ("aten::pow.Tensor_Scalar", &["self=[2,3,4]", "exponent=3"]),
        ("aten::pow.Tensor_Scalar", &["self=[2,3,4]", "exponent=0.5"]),
        (
            "aten::pow.Scalar",
            &["self=2", "exponent=[-1.0,0.0,0.5,10.0]"],
        ),
        ("aten::pow.Scalar", &["self=-8", "exponent=[1,2,3]"]),
        ("aten::pow.Scalar", &["self=2", "exponent=[-1,2]"]),
        // index_select ("Empty output_sizes is not supported"): 0-d inputs, empty indices.
        ("aten::index_select", &[scalar, "dim=0", "index=[0]"]),
        (
            "aten::index_select",
            &[
                "self=[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
                "dim=1",
                "index={\"dtype\": \"int64\", \"shape\": [0], \"values\": []}",
            ],
        ),
        (
            "aten::index_select",
            &[
                "self={\"dtype\": \"float32\", \"shape\": [0, 3], \"values\": []}",
                "dim=1",
                "index=[2,0]",
            ],
        ),
        (
            "aten::index_select",
            &[
                "self=[[0.5,-1.25,2.0],[3.0,-0.75,1.5]]",
                "dim=-1",
                "index=[3]",
            ],
        ),
        // nonzero, all, any (ASAN failures): bool and float inputs, none set, empty, 0-d.
        ("aten::nonzero", &["self=[[0.0,1.5,0.0],[-2.0,0.0,0.0]]"]),
        ("aten::nonzero", &["self=[[true,false],[false,false]]"]),
        ("aten::nonzero", &["self=[0,0,0]"]),
        ("aten::nonzero", &[scalar]),
        (
            "aten::nonzero",
            &["self={\"dtype\": \"float32\", \"shape\": [2, 0], \"values\": []}"],
        ),
        ("aten::all", &["self=[[true,false],[true,true]]"]),
        (
            "aten::all",
            &["self={\"dtype\": \"bool\", \"shape\": [0], \"values\": []}"],
        ),
        ("aten::all.dim", &["self=[[1.0,0.0],[2.0,-0.5]]", "dim=-1"]),
        (
            "aten::all.dims",
            &["self=[[1,0],[2,3]]", "dim=[0]", "keepdim=True"],
        ),
        ("aten::any", &["self=[[0.0,0.0],[0.0,-0.0]]"]),
        (
            "aten::any",
            &["self={\"dtype\": \"uint8\", \"shape\": [0], \"values\": []}"],
        ),
        (
            "aten::any.dim",
            &["self=[[false,false],[true,false]]", "dim=0"],
        ),
        ("aten::any.dims", &[scalar, "dim=[]"]),
    ];
    for (op, texts) in cases {
        check_call(op, texts);
    }
}

/// `matmul.out` of batched operands writes a lazy `out` of another size: its composite's
/// `resize_output` resizes a tensor without storage through `resize_` (it used to resize the
/// wrapper's geometry only, and the `copy_` after it failed with "The size of tensor a (0)
/// must match the size of tensor b (2)"). Values by hand; two version bumps, as PyTorch's
/// LTC (`resize_`, then `copy_`).
#[test]
fn matmul_out_resizes_a_lazy_out() {
    let _g = setup();
    // [[1, 2], [3, 4]] @ [[1, 0], [1, 1]] = [[3, 2], [7, 4]], twice (a batch of 2).
    let a = switchyard_core::Tensor::from_vec(
        vec![1.0f32, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0],
        &[2, 2, 2],
    )
    .unwrap();
    let b = switchyard_core::Tensor::from_vec(
        vec![1.0f32, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0],
        &[2, 2, 2],
    )
    .unwrap();
    let (la, lb) = (
        switchyard_lazy::to_lazy(&a).unwrap(),
        switchyard_lazy::to_lazy(&b).unwrap(),
    );
    let out = switchyard_lazy::to_lazy(
        &switchyard_core::Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap(),
    )
    .unwrap();
    let before = out.version();
    switchyard_ops::op::matmul_out::call(&la, &lb, &out).unwrap();
    switchyard_lazy::mark_step().unwrap();
    assert_eq!(out.sizes().as_slice(), [2, 2, 2]);
    let host = switchyard_lazy::to_cpu(&out).unwrap();
    assert_eq!(
        host.to_vec::<f32>().unwrap(),
        [3.0, 2.0, 7.0, 4.0, 3.0, 2.0, 7.0, 4.0]
    );
    assert_eq!(out.version() - before, 2);
}
