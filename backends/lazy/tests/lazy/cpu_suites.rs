//! The CPU kernel test suites run on the lazy device (plan §8.2), without copies: the suite
//! files of `crates/cpu/tests/` are included as modules, and their fixture tests take this
//! binary's `TARGET` (`crate::TARGET`, see `target_support/mod.rs` there): every fixture
//! tensor is moved to `lazy` with its exact geometry (a view of a lazy copy of its whole
//! storage), the operator is traced, `mark_step` executes it (an error it raises is the
//! case's error, compared with PyTorch's recorded one like a call's), and the results come
//! back to the CPU with their sizes and strides. Expected values, dtypes, strides and error
//! texts are the fixtures', unchanged.
//!
//! Tests of those files that read host memory, call kernels directly or check Meta tensors
//! return at once here (`support::on_cpu()`); the CPU suites run them.

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

fn known_difference(name: &str, case: &Value) -> Option<&'static str> {
    if name == "fq one tensor for all (F6)" {
        return Some(ALIASED_MUTABLE_ARGUMENTS);
    }
    (unary_out_check(name, case) || OUT_CASES.contains(&name)).then_some(OUT_VIA_FUNCTIONAL)
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

