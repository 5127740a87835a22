//! The CPU kernel test suites run on the lazy device (plan §8.2), without copies: the suite
//! files of `crates/cpu/tests/` are included as modules, and their fixture tests take this
//! binary's `TARGET` (`crate::TARGET`, see `target_support/mod.rs` there): every fixture
//! tensor is moved to `lazy` with its exact geometry (a view of a lazy copy of its whole
//! storage), the operator is traced, `mark_step` executes it (an error it raises is the
//! case's error, compared with PyTorch's recorded one like a call's), and the results come
//! back to the CPU with their sizes and strides. Expected values, dtypes, strides and error
//! texts are the fixtures', unchanged.
//!
//! The suites whose CPU tests call kernels or meta functions directly (`linalg`, `indexing`,
//! `views`, `copy`, `factory`) call the same overloads through the dispatcher here. Tests of
//! those files that read host memory, call kernels directly or check Meta tensors return at
//! once here (`support::on_cpu()`, or `cpu_only(CpuOnly::..)`, whose variants state why); the
//! CPU suites run them.

use std::any::Any;

use serde_json::Value;
use switchyard_core::{Device, Result, Tensor};
use switchyard_ops::native::is_non_overlapping_and_dense;
use switchyard_ops::op;

/// The hooks' type (`TargetHooks` of `target_support/mod.rs`, spelled out: a tuple type).
type Hooks = (
    &'static str,
    fn(&Tensor) -> Result<Tensor>,
    fn() -> Result<()>,
    fn(&Tensor) -> Result<Tensor>,
    fn() -> Box<dyn Any>,
    fn(&str, &Value) -> Option<&'static str>,
);

/// This binary's target: the lazy device (see the module documentation).
pub const LAZY_TARGET: Hooks = (
    "lazy",
    to_device,
    switchyard_lazy::mark_step,
    to_host,
    serial,
    known_difference,
);

/// Why an out= call on lazy does not give eager's answer: functionalization (PyTorch's, hence
/// its LTC's, and ours) runs an out= or in-place call as its functional variant followed by a
/// copy into the written tensor, so the out= overload's own checks of `out` (its dtype:
/// "Found dtype Long but expected Float", "Expected out tensor to have dtype ...", "result
/// type Float can't be cast to the desired output type long int"; the resize warning; eval
/// statistics kept) and its compute dtype (an `f64` out of an `f32` reduction computes in
/// `f64` eagerly, in `f32` here) do not apply. PyTorch 2.15's LTC, checked live:
/// `torch.neg(lazy_f32, out=lazy_i64)` succeeds, `torch.exp` into a wrongly sized `out`
/// warns nothing.
const OUT_VIA_FUNCTIONAL: &str = "out= runs as functional + copy (functionalization)";

/// The fixture cases (by name, or `case N (op)` label in `shape.rs`) whose eager answer the
/// lazy device does not give, each for [`OUT_VIA_FUNCTIONAL`]'s reason.
const OUT_CASES: &[&str] = &[
    // unary.rs: see `unary_out_check`.
    // binary.rs
    "clamp_ int64 float bound (error)",
    "clamp_max_ int32 by float (error)",
    "clamp.out int float bound wrong out",
    "clamp.out strided",
    // reduce.rs
    "sum out float into int",
    "sum out dtype mismatch",
    "mean out f64 from f32",
    "mean.dtype_out cast error",
    "max.dim_max wrong dtype",
    "max.dim_max wrong index dtype",
    "min.dim_min wrong dtype",
    "min.dim_min wrong index dtype",
    "max.unary_out cast",
    "min.unary_out cast",
    "max.unary_out empty",
    "min.unary_out empty",
    "std.out f64 from f32",
    "var.out f64 from f32",
    "softmax.int_out wrong dtype",
    "log_softmax.int_out wrong dtype",
    // nn_support/norm_quant.rs
    "aminmax out error dtype",
    "aminmax out error dtype max",
    "legit out eval keeps stats",
    "legit out error dtype",
    "legit out error stat dtype",
    // linalg.rs
    "mm out wrong dtype",
    "bmm out wrong dtype",
    "dot out wrong dtype",
    // indexing.rs (labels): out= of another dtype than the result's
    "indexing case 34 (cat)",
    "indexing case 35 (cat)",
    "indexing case 81 (index_select)",
    "indexing case 271 (index)",
    "indexing case 357 (masked_select)",
    // factory.rs: `arange.out` into an `out` of the right element count but other sizes
    // (eager keeps them, functionalization takes the result's `[6]`), and into a strided
    // view that must grow (eager resizes it; functionalization writes the `[6]` result back
    // into the 3-element view: "expected src to have a size equal to the slice of self").
    // PyTorch 2.15's LTC gives both answers, checked live.
    "case 208 (\"arange_out\" null)",
    "case 212 (\"arange_out\" null)",
    // nn.rs: an f64 `out` of an f32 loss (computed in f32 here), an `out` of another dtype
    "mse_loss out double",
    "nll out dtype",
    // lift_and_set/mod.rs, indexing.rs (hand-written checks, named by the tests): the out=
    // overload's dtype check ("Expected out tensor to have dtype float, but got long int
    // instead"; `lift.out` and `lift_fresh_copy.out` here refuse the write-back instead, with
    // the backend's out= check: "result type Float can't be cast to the desired output type
    // Long"; `nonzero.out` writes the result into the Float `out`), and the layout of a
    // resized `out` (eager's `nonzero.out` resizes it column by column, strides `[1, 3]`;
    // here it is resized to the contiguous `[2, 1]` and the result copied in)
    "lift.out wrong dtype",
    "lift_fresh_copy.out wrong dtype",
    "indexing nonzero.out float out",
    "indexing nonzero.out resized strides",
    // shape.rs (labels): out= of another dtype than the result's
    "case 31 (stack)",
    "case 70 (repeat)",
    "case 113 (constant_pad_nd)",
    "case 138 (embedding)",
    "case 264 (sort)",
    "case 265 (sort)",
    "case 309 (logsumexp)",
    "case 310 (logsumexp)",
    "case 311 (logsumexp)",
];

/// Why A.11's F6 differs: one tensor passed as every argument of
/// `_fused_moving_avg_obs_fq_helper`, so its written running statistics, scale and zero point
/// alias its input. Eagerly the kernel reads memory it has just written; functionalization runs
/// the functional variant on the arguments' values before the call and writes the results back
/// one by one (the A.11 semantics of aliased mutable arguments).
const ALIASED_MUTABLE_ARGUMENTS: &str =
    "aliased mutable arguments run through the functional variant (A.11 F6)";

/// unary.rs's out= cases that expect one of the out= overload's own checks: `<op>[0].out
/// dtype a->b` expecting an error about `out`'s dtype, `<op>[0].out resize-warn <dtype>`
/// expecting a result with the resize warning. (The other cases of those families, kernel
/// dtype errors raised at `mark_step` included, must and do match.)
fn unary_out_check(name: &str, case: &Value) -> bool {
    const OUT_DTYPE_ERRORS: &[&str] = &[
        "Found dtype ",
        "Expected out tensor to have dtype ",
        "nan_to_num: dtype of out: ",
    ];
    let error = case["expect"]["error"]["message"].as_str();
    (name.contains(".out dtype ")
        && error.is_some_and(|m| OUT_DTYPE_ERRORS.iter().any(|p| m.starts_with(p))))
        || (name.contains(".out resize-warn ") && error.is_none())
}

/// Why an in-place call with a `self` the result would have to resize differs: the in-place
/// overload's own "Bad in-place call: input tensor size [4] and output tensor size [2, 4]
/// should match" is not made, the functional result's write-back into `self` refuses it
/// instead ("output with shape [4] doesn't match the broadcast shape [2, 4]"). PyTorch
/// 2.15's LTC raises that same error for `lazy_zeros(4).addmm_(ones(2, 3), ones(3, 4))`,
/// checked live.
const INPLACE_VIA_FUNCTIONAL: &str = "in-place runs as functional + write-back";

/// Why a random fill of a non-contiguous tensor (`bernoulli_` of a transposed one, `randint`
/// into a transposed `out`) draws the same numbers into other elements: eagerly the kernel
/// fills in memory order, functionalized the functional result (a contiguous value) is filled
/// and then copied into the written tensor's elements. (PyTorch's LTC draws from its own
/// backend's generator, not reproducing the CPU's numbers at all.)
const RANDOM_ORDER: &str = "random fill of a non-contiguous tensor: functional result order";

/// Why a view-geometry call on a lazy tensor differs: a lazy tensor has no storage, so
/// `as_strided_copy` (a functional operator, not a view) reads the input's value as a
/// contiguous storage (the input's offset and strides into its base do not apply), and
/// `empty_strided` makes a contiguous value. PyTorch 2.15's LTC gives the same values and
/// errors (checked live: `as_strided_copy(x, [2], [1])` of a strided view, sizes `[-1]`:
/// "numel: integer multiplication overflow", `[5, 5]`: setStorage's message for a storage of
/// the value's size; `empty_strided((2, 3), (0, 0))` has strides `(3, 1)`).
const NO_STORAGE: &str = "a lazy tensor has no storage: values, not memory";

/// Why `lift_fresh_copy` of a lazy tensor keeps a dense input's strides (a transposed input
/// gives strides `(1, 3)`, eager's `(2, 1)`): a lazy tensor is functional, and
/// functionalization's `lift_fresh_copy` of a tensor already functional is its `clone()`
/// (PyTorch's `lift_fresh_functionalize_copy`), whose preserve format keeps them. The values
/// are eager's.
const LIFT_FRESH_COPY_CLONES: &str = "lift_fresh_copy of a functional tensor is clone()";

/// Why a write through a host tensor that is a view of a larger or overlapping storage
/// differs: it moves as an `as_strided` view of a lazy copy of its storage (`to_device`), so a
/// write through it is functionalized as `as_strided_scatter` into that storage, which refuses
/// a view with internal overlap ("more than one element of the written-to tensor refers to a
/// single memory location", where eager's `fill_` of an expanded tensor writes), and a growing
/// `resize_` of it is A.10's "Attempted to resize a view tensor to a larger size". PyTorch
/// 2.15's LTC answers the same for the same view (checked live: `fill_` of
/// `lazy_zeros(3).as_strided((4, 3), (0, 1))`).
const MOVED_AS_VIEW: &str = "a host view moves as an as_strided view of its storage";

/// Why a copy between overlapping views of one lazy storage is not refused: eager's overlap
/// checks of `copy_` are those of a device with a copy kernel of its own; lazy has none (eager
/// hands such copies to the backend's `_copy_from`), and functionalized they read values.
/// PyTorch 2.15's LTC refuses nothing either (checked live: `b[1:4].copy_(b[0:3])`).
const NO_MEMORY_OVERLAP: &str = "lazy tensors have no memory to overlap";

/// Why `to(device="cpu")` or `_to_cpu` of a lazy tensor is not `self` (nor a view of `self`'s
/// storage with its strides): it is a transfer to another device (the fixture's call moves a
/// CPU tensor to the CPU, a no-op).
const TRANSFER: &str = "to(cpu) of a lazy tensor is a transfer";

/// Whether a fixture tensor spec (`views_support`'s: `storage`, `sizes`, `strides`,
/// `offset`) moves to lazy as a view of its storage rather than as it is (see `to_device`).
fn moved_as_view(spec: &Value) -> bool {
    let ints = |v: &Value| -> Vec<i64> {
        v.as_array()
            .map(|a| a.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default()
    };
    let (sizes, strides) = (ints(&spec["sizes"]), ints(&spec["strides"]));
    let numel: i64 = sizes.iter().product();
    spec["offset"].as_i64() != Some(0)
        || spec["storage"].as_i64() != Some(numel)
        || !is_non_overlapping_and_dense(&sizes, &strides)
}

/// Whether the expected result (`expect.tensor`) has other strides than the contiguous ones.
fn expects_non_contiguous(case: &Value) -> bool {
    let t = &case["expect"]["tensor"];
    let ints = |v: &Value| -> Vec<i64> {
        v.as_array()
            .map(|a| a.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default()
    };
    let sizes = ints(&t["sizes"]);
    !t.is_null()
        && ints(&t["strides"]).as_slice()
            != switchyard_core::shape::contiguous_strides(&sizes).as_slice()
}

/// The views, copy and view-copy suites' cases (named `<suite> <op>`) that differ, and why.
fn view_copy_difference(name: &str, case: &Value) -> Option<&'static str> {
    let (suite, op) = name.split_once(' ')?;
    if !matches!(suite, "views" | "copy" | "view_copies") {
        return None;
    }
    let self_ = &case["self"];
    let error = case["expect"]["error"]["msg"].as_str();
    if (op.starts_with("as_strided") || op.starts_with("view_copy.dtype"))
        && (moved_as_view(self_)
            || error.is_some_and(|m| m.starts_with("Storage size calculation overflowed")))
    {
        return Some(NO_STORAGE);
    }
    // `unbind_copy.out` of a dimension of size 0: `out=[]` holds no functional tensor, so the
    // call is a mutation of plain tensors with functional inputs, refused by functionalization
    // as PyTorch's (its LTC raises the same "mutating a non-functional tensor with a
    // functional tensor is not allowed", checked live).
    if op == "unbind_copy.int_out" && case["out"].as_array().is_some_and(Vec::is_empty) {
        return Some(OUT_VIA_FUNCTIONAL);
    }
    let sizes: Vec<i64> = serde_json::from_value(self_["sizes"].clone()).unwrap_or_default();
    let strides: Vec<i64> = serde_json::from_value(self_["strides"].clone()).unwrap_or_default();
    let overlapping = sizes.iter().zip(&strides).any(|(&n, &s)| n > 1 && s == 0);
    if (matches!(op, "copy_" | "fill_.Scalar" | "fill_.Tensor" | "zero_") && overlapping)
        || (op == "resize_" && moved_as_view(self_))
    {
        return Some(MOVED_AS_VIEW);
    }
    if op == "copy_shared" && error.is_some_and(|m| m.contains("refer to a single memory")) {
        return Some(NO_MEMORY_OVERLAP);
    }
    if (op.starts_with("to.") && case["device"] == "cpu") || op == "_to_cpu" {
        return Some(TRANSFER);
    }
    if matches!(op, "_to_copy" | "to.dtype" | "to.other" | "to.dtype_layout")
        && expects_non_contiguous(case)
    {
        return Some(NO_STORAGE);
    }
    let list_out = matches!(
        op,
        "unbind_copy.int_out" | "split_copy.Tensor_out" | "split_with_sizes_copy.out"
    );
    let out_dtype_differs = match &case["out"] {
        Value::Array(outs) => outs.iter().any(|o| o["dtype"] != self_["dtype"]),
        Value::Null => false,
        out => out["dtype"] != self_["dtype"],
    };
    if ((list_out || error.is_some()) && out_dtype_differs)
        || (list_out && error.is_some())
        || error.is_some_and(|m| m.starts_with("Expected out tensor to have dtype "))
    {
        return Some(OUT_VIA_FUNCTIONAL);
    }
    None
}

fn known_difference(name: &str, case: &Value) -> Option<&'static str> {
    if let Some(why) = view_copy_difference(name, case) {
        return Some(why);
    }
    if name == "fq one tensor for all (F6)" {
        return Some(ALIASED_MUTABLE_ARGUMENTS);
    }
    // `reduce cumsum_ of another dtype` (reduce.rs, hand-written): `x.cumsum_(1,
    // dtype=torch.float64)` of a float `x` runs as `cumsum(.., dtype=float64)` written back
    // into `x`, so the in-place overload's "Bad in-place call: input tensor dtype float and
    // output tensor dtype double should match" is not made (by the same reasoning; not
    // checked live, PyTorch not being installed here).
    if matches!(
        name,
        "addmm_ wrong shape"
            | "addmm_ 3-d self"
            | "baddbmm_ broadcast self"
            | "reduce cumsum_ of another dtype"
    ) {
        return Some(INPLACE_VIA_FUNCTIONAL);
    }
    if name == "api case 248 (\"randint_out\" null)"
        || (name.starts_with("random case ")
            && case["steps"].as_array().is_some_and(|steps| {
                steps
                    .iter()
                    .any(|s| s["op"] == "bernoulli_float" && s["tensor"]["view"] == "transposed")
            }))
    {
        return Some(RANDOM_ORDER);
    }
    // A hand-written test's check of strides (named by the test): `_to_copy` of a permuted
    // tensor is a contiguous value.
    if name == "case 11 (\"empty_strided\" \"int16\")"
        || name == "copy _to_copy strides of a permuted tensor"
    {
        return Some(NO_STORAGE);
    }
    if name == "lift_fresh_copy of a functional tensor" {
        return Some(LIFT_FRESH_COPY_CLONES);
    }
    // reduce.rs's warnings test (`reduce warning: <case>`): the out= overload's resize warning.
    let resize_warning = name.starts_with("reduce warning: ")
        && case["warning"]
            .as_str()
            .is_some_and(|w| w.starts_with("An output with one or more elements was resized"));
    (resize_warning || unary_out_check(name, case) || OUT_CASES.contains(&name))
        .then_some(OUT_VIA_FUNCTIONAL)
}

/// A copy of the host tensor `t` on lazy with `t`'s sizes, strides and storage offset: a
/// dense tensor over its whole storage moves as it is; any other view is made on lazy as the
/// same `as_strided` view of a lazy copy of its storage (so overlapping and offset views keep
/// their geometry, and writes through them are functionalized as writes to a view).
fn to_device(t: &Tensor) -> Result<Tensor> {
    let storage = (t.storage().map_or(0, |s| s.nbytes()) / t.element_size().max(1)) as i64;
    let (sizes, strides) = (t.sizes(), t.strides());
    if t.storage_offset() == 0
        && storage == t.numel()
        && is_non_overlapping_and_dense(&sizes, &strides)
    {
        return switchyard_lazy::to_lazy(t);
    }
    let base = switchyard_lazy::to_lazy(&t.as_strided_view(&[storage], &[1], 0)?)?;
    op::as_strided::call(&base, &sizes, &strides, Some(t.storage_offset()))
}

/// A lazy result on the CPU with its sizes and strides (a result of internal overlap, which
/// a fresh tensor cannot have, comes back dense).
fn to_host(t: &Tensor) -> Result<Tensor> {
    if !switchyard_lazy::is_lazy(t) {
        return Ok(t.clone());
    }
    let value = switchyard_lazy::to_cpu(t)?;
    let (sizes, strides) = (t.sizes(), t.strides());
    let overlapping = sizes.iter().zip(&strides).any(|(&n, &s)| n > 1 && s == 0);
    if value.strides() == strides || overlapping {
        return Ok(value);
    }
    let out = op::empty_strided::call(
        &sizes,
        &strides,
        Some(t.dtype()),
        None,
        Some(Device::CPU),
        None,
    )?;
    op::copy_::call(&out, &value, false)?;
    Ok(out)
}

/// The lazy tests' lock (the device's state is process-wide).
fn serial() -> Box<dyn Any> {
    Box::new(crate::support::setup())
}

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/binary.rs"]
mod binary;

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/unary.rs"]
mod unary;

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/reduce.rs"]
mod reduce;

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/shape.rs"]
mod shape;

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/nn.rs"]
mod nn;

// The suites below call kernels directly on the CPU; off it their fixture tests call the same
// overloads through the dispatcher.

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/linalg.rs"]
mod linalg;

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/indexing.rs"]
mod indexing;

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/views.rs"]
mod views;

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/copy.rs"]
mod copy;

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/factory.rs"]
mod factory;

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/iterator_rules.rs"]
mod iterator_rules;

#[allow(unused_imports, dead_code, clippy::all)]
#[path = "../../../../crates/cpu/tests/limits.rs"]
mod limits;
