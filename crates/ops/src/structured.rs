//! The runtime side of structured kernels.
//!
//! A structured operator has one *meta* function (shape, dtype and argument checks, shared by
//! every backend) and one *impl* per backend (the computation). The code generator builds the
//! functional, in-place and out= kernels of every backend from that pair, calling the helpers
//! here exactly as PyTorch's generated `Register<Backend>.cpp` does:
//!
//! * functional: `create_out` allocates each output as meta described it;
//! * in-place: `check_inplace` verifies `self` already has the output's dtype, device and size;
//! * out=: `resize_out` checks dtype and device and resizes the caller's tensor (restriding it
//!   only if it was actually resized);
//! * in-place and out=: `maybe_create_proxy` computes into a temporary when the caller's
//!   strides differ from the ones meta asked for, and `copy_back` copies the result over.

use smallvec::SmallVec;
use switchyard_core::shape::{DimVec, fmt_dims, same_dims};
use switchyard_core::{Device, Error, Result, ScalarType, Tensor, torch_check};

/// One output as a meta function describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputSpec {
    /// Sizes.
    pub sizes: DimVec,
    /// Strides, if the meta function requires a layout; `None` for contiguous (the common
    /// case: boxed, so specs stay small and cheap to move).
    pub strides: Option<Box<[i64]>>,
    /// Element type.
    pub dtype: ScalarType,
    /// Device.
    pub device: Device,
    /// The dtype a given output's values must be rounded to before they are written, when it
    /// is not `dtype` (TensorIterator's `cast_common_dtype_to_outputs` on the CPU: Half inputs
    /// into a Float `out` compute in Half, then cast). Set only where the CPU loops would
    /// otherwise keep more precision (a Half or BFloat16 common dtype computes in `f32`); the
    /// structured wrappers then compute into a proxy of this dtype ([`maybe_create_proxy`]).
    pub compute_dtype: Option<ScalarType>,
}

impl OutputSpec {
    /// A contiguous output.
    pub fn contiguous(sizes: &[i64], dtype: ScalarType, device: Device) -> OutputSpec {
        OutputSpec {
            sizes: DimVec::from_slice(sizes),
            strides: None,
            dtype,
            device,
            compute_dtype: None,
        }
    }
}

/// What a structured meta function computed: one spec per output, plus operator-specific
/// values for the impl (PyTorch's `precomputed`).
#[derive(Clone, Debug)]
pub struct Meta<P = ()> {
    /// The outputs. One inline: most operators have one, and a result of two inline specs
    /// (~180 bytes) was moved through `memcpy` at each step out of the meta function; the
    /// few multi-output operators spill to the heap.
    pub outputs: SmallVec<[OutputSpec; 1]>,
    /// Values computed once in meta and used by the impl.
    pub extra: P,
}

impl<P> Meta<P> {
    /// A result with the given outputs and extra values.
    pub fn new(outputs: impl IntoIterator<Item = OutputSpec>, extra: P) -> Meta<P> {
        Meta {
            outputs: outputs.into_iter().collect(),
            extra,
        }
    }

    /// Output `i`'s spec.
    pub fn output(&self, i: usize) -> Result<&OutputSpec> {
        self.outputs.get(i).ok_or_else(|| {
            Error::runtime(format!("internal error: structured meta has no output {i}"))
        })
    }
}

/// The existing outputs a meta function sees: none for the functional variant, `self` for
/// in-place, the out arguments for out=. TensorIterator-style meta functions use them to check
/// shapes and dtypes against what the caller provided.
#[derive(Clone, Copy, Debug)]
pub enum Outs<'a> {
    /// The functional variant: outputs will be allocated.
    Functional,
    /// The in-place variant: `self` is the output.
    Inplace(&'a Tensor),
    /// The out= variant.
    Out(&'a [&'a Tensor]),
}

impl<'a> Outs<'a> {
    /// The existing tensor for output `i`, if any.
    pub fn get(&self, i: usize) -> Option<&'a Tensor> {
        match self {
            Outs::Functional => None,
            Outs::Inplace(t) => (i == 0).then_some(*t),
            Outs::Out(ts) => ts.get(i).copied(),
        }
    }

    /// Whether this is the in-place variant.
    pub fn is_inplace(&self) -> bool {
        matches!(self, Outs::Inplace(_))
    }
}

/// A meta function's result by reference, or its error (cloned, on the error path only).
/// Generated wrappers use this rather than `?`: moving a `Meta` out of its `Result` copied it
/// through the stack and stalled on store forwarding in every call.
#[inline]
pub fn meta_ok<P>(meta: &Result<Meta<P>>) -> Result<&Meta<P>> {
    meta.as_ref().map_err(Clone::clone)
}

/// Allocates an output as described (PyTorch's `create_out`).
pub fn create_out(spec: &OutputSpec) -> Result<Tensor> {
    match &spec.strides {
        Some(strides) => Tensor::allocate_strided(&spec.sizes, strides, spec.dtype, spec.device),
        None => Tensor::allocate(&spec.sizes, spec.dtype, spec.device),
    }
}

/// Resizes `out` to `sizes` (PyTorch's `resize_output`): warns when a non-empty tensor of a
/// different shape is resized. Returns whether it was resized.
pub fn resize_output(out: &Tensor, sizes: &[i64]) -> Result<bool> {
    if out.with_sizes(|current| same_dims(current, sizes)) {
        return Ok(false);
    }
    let current = out.sizes();
    if out.numel() != 0 {
        switchyard_dispatch::warnings::warn(format!(
            "An output with one or more elements was resized since it had shape {}, which does not match the required output shape {}. This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
            fmt_dims(&current),
            fmt_dims(sizes)
        ));
    }
    if !out.has_storage() && !out.is_meta() {
        // A tensor without storage of its own (a functional wrapper, a lazy tensor) resizes
        // through its kernels, as PyTorch's `resize_output` calls `resize_`: resizing the
        // geometry in place would leave the value behind it at its old size.
        crate::op::resize_::call(out, sizes, None)?;
        return Ok(true);
    }
    out.resize_contiguous(sizes)?;
    Ok(true)
}

/// Prepares an out= argument (PyTorch's generated `resize_out`): same dtype and device as the
/// spec, resized if needed, and restrided to the spec's strides only if it was resized (the
/// meta function's strides are advisory for tensors that already have the right shape).
pub fn resize_out(out: &Tensor, spec: &OutputSpec) -> Result<()> {
    torch_check!(
        out.dtype() == spec.dtype,
        "Expected out tensor to have dtype {}, but got {} instead",
        spec.dtype.type_meta_name(),
        out.dtype().type_meta_name()
    );
    torch_check!(
        out.device() == spec.device,
        "Expected out tensor to have device {}, but got {} instead",
        spec.device,
        out.device()
    );
    resize_to_spec(out, spec)
}

/// Resizes `out` to the spec's sizes (PyTorch's `resize_output`, with its warning), and lays
/// it out with the spec's strides if it was resized: the resizing half of [`resize_out`], for
/// out= kernels that accept any output dtype (`logical_and.out`, ...).
pub fn resize_to_spec(out: &Tensor, spec: &OutputSpec) -> Result<()> {
    if resize_output(out, &spec.sizes)?
        && let Some(strides) = &spec.strides
    {
        out.set_geometry(&spec.sizes, strides, out.storage_offset())?;
    }
    Ok(())
}

/// Checks an in-place `self` against the spec (PyTorch's `check_inplace`; dtypes printed as
/// `caffe2::TypeMeta` prints them: `float`, `double`).
pub fn check_inplace(self_: &Tensor, spec: &OutputSpec) -> Result<()> {
    torch_check!(
        self_.dtype() == spec.dtype,
        "Bad in-place call: input tensor dtype {} and output tensor dtype {} should match",
        self_.dtype().type_meta_name(),
        spec.dtype.type_meta_name()
    );
    torch_check!(
        self_.device() == spec.device,
        "Bad in-place call: input tensor device {} and output tensor device {} should match",
        self_.device(),
        spec.device
    );
    torch_check!(
        self_.with_sizes(|sizes| same_dims(sizes, &spec.sizes)),
        "Bad in-place call: input tensor size {} and output tensor size {} should match",
        fmt_dims(&self_.sizes()),
        fmt_dims(&spec.sizes)
    );
    Ok(())
}

/// A temporary to compute into when `out`'s strides differ from the ones the spec requires,
/// or when the result must be rounded to another dtype first (`spec.compute_dtype`); the
/// wrapper copies it into `out` ([`copy_back`], converting).
pub fn maybe_create_proxy(out: &Tensor, spec: &OutputSpec) -> Result<Option<Tensor>> {
    if let Some(dtype) = spec.compute_dtype {
        return match &spec.strides {
            Some(strides) => Tensor::allocate_strided(&spec.sizes, strides, dtype, spec.device),
            None => Tensor::allocate_strided(&spec.sizes, &out.strides(), dtype, spec.device)
                .or_else(|_| Tensor::allocate(&spec.sizes, dtype, spec.device)),
        }
        .map(Some);
    }
    match &spec.strides {
        Some(strides) if out.strides().as_slice() != &strides[..] => {
            Tensor::allocate_strided(&spec.sizes, strides, spec.dtype, spec.device).map(Some)
        }
        _ => Ok(None),
    }
}

/// Copies a proxy's result into the real output.
pub fn copy_back(out: &Tensor, proxy: &Tensor) -> Result<()> {
    // By name: proxies are rare, and this module does not depend on the generated API.
    let op = switchyard_dispatch::Dispatcher::singleton().find_schema_or_error("aten::copy_")?;
    let mut stack: switchyard_core::Stack = vec![out.into(), proxy.into(), false.into()];
    op.call_boxed(&mut stack)
}
