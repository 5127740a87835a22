//! The shape and dtype rules of elementwise operators (the backend-independent half of
//! PyTorch's TensorIterator): broadcasting, type promotion, the layout of the outputs it
//! allocates, and the checks against outputs the caller provides (shapes, dtypes, memory
//! overlap). Structured meta functions of pointwise operators are built on [`IterConfig`];
//! backends then run the loop with the computed dtypes.

use crate::meta::index_support::{
    assert_no_internal_overlap, assert_no_partial_overlap, is_non_overlapping_and_dense,
    stride_order,
};
use crate::structured::{Meta, OutputSpec, Outs};
use smallvec::SmallVec;
use switchyard_core::promotion::ResultTypeState;
use switchyard_core::shape::{self, DimVec, fmt_dims, infer_size, same_dims};
use switchyard_core::{Device, Error, Result, Scalar, ScalarType, Tensor, can_cast, torch_check};

/// What the loop needs beyond the output spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IterInfo {
    /// The dtype the computation runs in (inputs are converted to it).
    pub common_dtype: ScalarType,
}

/// The configuration of an elementwise operator (PyTorch's `TensorIteratorConfig`).
#[derive(Clone, Debug)]
pub struct IterConfig<'a> {
    inputs: SmallVec<[&'a Tensor; 4]>,
    outs: Outs<'a>,
    promote_inputs_to_common_dtype: bool,
    promote_integer_inputs_to_float: bool,
    cast_common_dtype_to_outputs: bool,
    enforce_safe_casting_to_output: bool,
    check_all_same_dtype: bool,
    output_dtype: Option<ScalarType>,
    alpha: Option<Scalar>,
}

impl<'a> IterConfig<'a> {
    /// A configuration over `inputs` writing one output (existing per `outs`).
    pub fn new(inputs: &[&'a Tensor], outs: Outs<'a>) -> Self {
        IterConfig {
            inputs: SmallVec::from_slice(inputs),
            outs,
            promote_inputs_to_common_dtype: false,
            promote_integer_inputs_to_float: false,
            cast_common_dtype_to_outputs: false,
            enforce_safe_casting_to_output: false,
            check_all_same_dtype: true,
            output_dtype: None,
            alpha: None,
        }
    }

    /// `build_borrowing_binary_op`: inputs promoted to their common dtype, cast to the output,
    /// which must be able to hold it.
    pub fn binary(a: &'a Tensor, b: &'a Tensor, outs: Outs<'a>) -> Self {
        let mut c = Self::new(&[a, b], outs);
        c.promote_inputs_to_common_dtype = true;
        c.cast_common_dtype_to_outputs = true;
        c.enforce_safe_casting_to_output = true;
        c.check_all_same_dtype = false;
        c
    }

    /// `build_borrowing_binary_float_op`: like [`IterConfig::binary`], integer inputs compute
    /// in the default float dtype (true division, atan2, ...).
    pub fn binary_float(a: &'a Tensor, b: &'a Tensor, outs: Outs<'a>) -> Self {
        let mut c = Self::binary(a, b, outs);
        c.promote_integer_inputs_to_float = true;
        c
    }

    /// `build_borrowing_comparison_op`: common dtype of the inputs, a `Bool` result unless the
    /// caller gives an output of another dtype.
    pub fn comparison(a: &'a Tensor, b: &'a Tensor, outs: Outs<'a>) -> Self {
        let mut c = Self::new(&[a, b], outs);
        c.promote_inputs_to_common_dtype = true;
        c.check_all_same_dtype = false;
        c.output_dtype = Some(ScalarType::Bool);
        c
    }

    /// `build_borrowing_unary_op`: output dtype equals the input dtype.
    pub fn unary(a: &'a Tensor, outs: Outs<'a>) -> Self {
        Self::new(&[a], outs)
    }

    /// `build_borrowing_unary_float_op`: integer inputs compute in the default float dtype;
    /// the result is cast to the output.
    pub fn unary_float(a: &'a Tensor, outs: Outs<'a>) -> Self {
        let mut c = Self::new(&[a], outs);
        c.promote_inputs_to_common_dtype = true;
        c.promote_integer_inputs_to_float = true;
        c.cast_common_dtype_to_outputs = true;
        c.enforce_safe_casting_to_output = true;
        c.check_all_same_dtype = false;
        c
    }

    /// `build_borrowing_unary_force_boolean_op`: a `Bool` result (isnan, logical_not, ...).
    pub fn unary_force_boolean(a: &'a Tensor, outs: Outs<'a>) -> Self {
        let mut c = Self::new(&[a], outs);
        c.check_all_same_dtype = false;
        c.output_dtype = Some(ScalarType::Bool);
        c
    }

    /// Any number of inputs promoted to their common dtype (where, clamp with tensors, ...).
    pub fn nary_promoting(inputs: &[&'a Tensor], outs: Outs<'a>) -> Self {
        let mut c = Self::new(inputs, outs);
        c.promote_inputs_to_common_dtype = true;
        c.cast_common_dtype_to_outputs = true;
        c.enforce_safe_casting_to_output = true;
        c.check_all_same_dtype = false;
        c
    }

    /// Checks `alpha` against the common dtype (PyTorch's `alpha_check`, for `add`/`sub`), in
    /// [`IterConfig::build`]: checking after `build` moved the whole result once more.
    pub fn alpha(mut self, alpha: Scalar) -> Self {
        self.alpha = Some(alpha);
        self
    }

    /// Forces the output dtype when the caller gives no output.
    pub fn output_dtype(mut self, dtype: ScalarType) -> Self {
        self.output_dtype = Some(dtype);
        self
    }

    /// Computes the broadcast shape, dtypes and device, checking the caller's output; returns
    /// the meta result with [`IterInfo`] for the loop.
    pub fn build(self) -> Result<Meta<IterInfo>> {
        // Filled in place, not returned: moving the pair out of a `Result` stalled on store
        // forwarding (a third of this function's own time in a tiny call).
        let mut shape = DimVec::new();
        let mut dims: SmallVec<[usize; 4]> = SmallVec::new();
        let same_shape = self.compute_shape(&mut shape, &mut dims)?;
        let device = self.compute_device(&dims)?;
        let (common, out_dtype) = self.compute_types(&dims)?;
        if let Some(alpha) = self.alpha {
            crate::meta::alpha_check(common, alpha)?;
        }
        self.check_mem_overlaps()?;
        // Only an output TensorIterator allocates (or resizes) gets a layout of its choosing;
        // an in-place `self` or an out= of the right shape keeps its own.
        let strides = match self.outs {
            Outs::Functional => self.output_strides(&shape, same_shape),
            Outs::Out(outs)
                if outs
                    .first()
                    .is_some_and(|o| !o.with_sizes(|s| same_dims(s, &shape))) =>
            {
                self.output_strides(&shape, same_shape)
            }
            _ => None,
        };
        // Pushed, not collected from an array: collecting moved the spec twice through
        // `memcpy` (a tenth of a tiny call's meta function).
        let mut outputs = SmallVec::new();
        // A given output of another dtype than a Half or BFloat16 common dtype: the loops
        // compute those in `f32`, so the result is rounded to the common dtype through a
        // proxy before it is cast into the output (TensorIterator's CPU temporaries).
        let compute_dtype = (self.cast_common_dtype_to_outputs
            && !matches!(self.outs, Outs::Functional)
            && common != out_dtype
            && matches!(common, ScalarType::Half | ScalarType::BFloat16))
        .then_some(common);
        outputs.push(OutputSpec {
            sizes: shape,
            strides,
            dtype: out_dtype,
            device,
            compute_dtype,
        });
        Ok(Meta {
            outputs,
            extra: IterInfo {
                common_dtype: common,
            },
        })
    }

    /// PyTorch's `compute_mem_overlaps`: a given output may not have elements sharing memory
    /// (an expanded tensor), nor share only part of its memory with an input (an input that is
    /// the output itself, or covers exactly its elements in the same layout, is fine).
    fn check_mem_overlaps(&self) -> Result<()> {
        // Meta tensors have no memory to overlap: PyTorch checks nothing there either.
        let Some(out) = self.outs.get(0).filter(|o| !o.is_meta()) else {
            return Ok(());
        };
        // A contiguous output is dense: no element shares memory with another.
        if !out.is_contiguous() {
            assert_no_internal_overlap(out)?;
        }
        for input in &self.inputs {
            // Inputs in another storage cannot overlap (checked first: it is the common case,
            // and costs a pointer comparison).
            if !input.is_same(out) && input.is_alias_of(out) {
                assert_no_partial_overlap(out, input)?;
            }
        }
        Ok(())
    }

    /// The strides of an output TensorIterator allocates, `None` for row-major contiguous.
    /// With every input of the output's shape (`same_shape`), PyTorch's `fast_set_up`: all
    /// contiguous gives contiguous, all channels-last gives channels-last, all dense with one
    /// layout gives that layout. Otherwise `reorder_dimensions` sorts the dimensions by the
    /// inputs' strides (broadcast dimensions do not vote) and the output is dense in that
    /// order, so `x.t() + 1` is laid out like `x.t()`.
    fn output_strides(&self, shape: &[i64], same_shape: bool) -> Option<Box<[i64]>> {
        let ndim = shape.len();
        if ndim <= 1 || (same_shape && self.inputs.iter().all(|t| t.is_contiguous())) {
            return None;
        }
        let layouts: SmallVec<[(DimVec, DimVec); 4]> = self
            .inputs
            .iter()
            .map(|t| (t.sizes(), t.strides()))
            .collect();
        if same_shape {
            if ndim == 4
                && layouts
                    .iter()
                    .all(|(sizes, strides)| shape::is_channels_last_contiguous(sizes, strides))
            {
                // `get_channels_last_strides_2d` (no clamping of zero sizes, as in PyTorch).
                let mut strides = [0i64; 4];
                strides[1] = 1;
                strides[3] = shape[1];
                strides[2] = strides[3].saturating_mul(shape[3]);
                strides[0] = strides[2].saturating_mul(shape[2]);
                return Some(strides.into());
            }
            let dense = layouts
                .iter()
                .all(|(sizes, strides)| is_non_overlapping_and_dense(sizes, strides));
            if let Some((_, last)) = layouts.last()
                && dense
                && layouts.iter().all(|(_, strides)| same_dims(strides, last))
            {
                return Some(last.as_slice().into());
            }
        }
        // `compute_strides`: each input's strides aligned to the output's dimensions, zero
        // where it is broadcast.
        let aligned: SmallVec<[DimVec; 4]> = layouts
            .iter()
            .map(|(sizes, strides)| {
                let mut out = DimVec::from_elem(0, ndim);
                let offset = ndim - sizes.len();
                for (i, (size, stride)) in sizes.iter().zip(strides).enumerate() {
                    if !(*size == 1 && shape[offset + i] != 1) {
                        out[offset + i] = *stride;
                    }
                }
                out
            })
            .collect();
        let operands: SmallVec<[&[i64]; 4]> = aligned.iter().map(DimVec::as_slice).collect();
        let order = stride_order(shape, &operands);
        // The identity order (`order[j] == ndim - 1 - j`) gives a contiguous output.
        if order.iter().enumerate().all(|(j, d)| *d == ndim - 1 - j) {
            return None;
        }
        // `compatible_stride` in the sorted order (a zero size zeroes the outer strides, as
        // in PyTorch), put back in the output's dimension order (`invert_perm`).
        let mut strides = vec![0i64; ndim];
        let mut next = 1i64;
        for d in order {
            strides[d] = next;
            next = next.saturating_mul(shape[d]);
        }
        Some(strides.into())
    }

    /// Writes the broadcast shape and each input's number of dimensions (read from one
    /// consistent copy of each input's sizes: `Tensor::sizes` costs less than a closure over
    /// a whole geometry snapshot).
    /// Returns whether every input has the same sizes (PyTorch's `all_ops_same_shape_`).
    fn compute_shape(&self, shape: &mut DimVec, dims: &mut SmallVec<[usize; 4]>) -> Result<bool> {
        let mut same_shape = true;
        for (i, t) in self.inputs.iter().enumerate() {
            // Read in place (`with_sizes`): a returned `DimVec` stalled on store forwarding.
            t.with_sizes(|sizes| {
                dims.push(sizes.len());
                if i == 0 {
                    shape.extend_from_slice(sizes);
                } else if !same_dims(shape, sizes) {
                    same_shape = false;
                    *shape = infer_size(shape, sizes)?;
                }
                Ok::<(), Error>(())
            })?;
        }
        if let Some(out) = self.read_write_output() {
            check_read_write_shape(out, shape)?;
        }
        Ok(same_shape)
    }

    /// The output when it is also read (PyTorch's `is_read_write`): `self` of an in-place
    /// call, or an out= tensor that is one of the inputs (`logical_and.out(a, b, out=a)`,
    /// which is what `logical_and_` runs). Such an output is never resized.
    fn read_write_output(&self) -> Option<&'a Tensor> {
        match self.outs {
            Outs::Inplace(out) => Some(out),
            Outs::Out(outs) => outs
                .first()
                .copied()
                .filter(|o| self.inputs.iter().any(|i| i.is_same(o))),
            Outs::Functional => None,
        }
    }

    fn compute_device(&self, dims: &[usize]) -> Result<Device> {
        // 0-dim CPU tensors (scalars) may accompany tensors on any device.
        let out = self.outs.get(0);
        let inputs = self.inputs.iter().copied().zip(dims.iter().copied());
        let mut device: Option<Device> = None;
        for (t, dim) in inputs.chain(out.map(|o| (o, o.dim()))) {
            if t.is_cpu() && dim == 0 && !out.is_some_and(|o| o.is_same(t)) {
                continue;
            }
            match device {
                None => device = Some(t.device()),
                Some(d) if d != t.device() => {
                    return Err(Error::runtime(format!(
                        "Expected all tensors to be on the same device, but found at least two devices, {d} and {}!",
                        t.device()
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(device.unwrap_or(Device::CPU))
    }

    fn compute_types(&self, dims: &[usize]) -> Result<(ScalarType, ScalarType)> {
        let out = self.outs.get(0);
        if self.check_all_same_dtype {
            let first = self.inputs.first().map(|t| t.dtype());
            let expected = first.unwrap_or(ScalarType::Float);
            for t in self.inputs.iter().copied().chain(out) {
                torch_check!(
                    t.dtype() == expected,
                    "Found dtype {} but expected {}",
                    t.dtype(),
                    expected
                );
            }
            return Ok((expected, self.output_dtype.unwrap_or(expected)));
        }
        let mut state = ResultTypeState::new();
        for (t, dim) in self.inputs.iter().zip(dims) {
            state.update_tensor_with_dim(t, *dim);
        }
        let mut common = state.result().unwrap_or(ScalarType::Float);
        if self.promote_integer_inputs_to_float && common.is_integral(true) {
            common = switchyard_core::promotion::DEFAULT_DTYPE;
        }
        let out_dtype = match out {
            Some(o) => {
                if self.enforce_safe_casting_to_output {
                    torch_check!(
                        can_cast(common, o.dtype()),
                        "result type {} can't be cast to the desired output type {}",
                        common,
                        o.dtype()
                    );
                }
                o.dtype()
            }
            None => self.output_dtype.unwrap_or(common),
        };
        if !self.promote_inputs_to_common_dtype {
            // Inputs compute in their own (single) dtype.
            let first = self.inputs.first().map_or(common, |t| t.dtype());
            return Ok((first, out_dtype));
        }
        Ok((common, out_dtype))
    }
}

/// TensorIterator's rule for an output that is also read (in place, or out= one of the
/// inputs): it must already have the broadcast shape, it is never resized ("output with shape
/// [3] doesn't match the broadcast shape [2, 3]").
fn check_read_write_shape(out: &Tensor, shape: &[i64]) -> Result<()> {
    out.with_sizes(|out_sizes| {
        torch_check!(
            same_dims(out_sizes, shape),
            "output with shape {} doesn't match the broadcast shape {}",
            fmt_dims(out_sizes),
            fmt_dims(shape)
        );
        Ok(())
    })
}

/// An unstructured out= kernel's iterator: `config` built (shape, dtypes, overlap checks),
/// then `out` checked against the output it describes and resized to it, as PyTorch's
/// `TensorIterator` does for `abs.out`, `nan_to_num.out`, `logical_not.out`. Shared by the
/// CPU kernels and their Meta counterparts.
pub fn prepare_out(config: IterConfig<'_>, out: &Tensor) -> Result<Meta<IterInfo>> {
    let meta = config.build()?;
    crate::structured::resize_out(out, meta.output(0)?)?;
    Ok(meta)
}

/// Like [`prepare_out`] for the out= kernels that accept any output dtype (`logical_and.out`
/// and its siblings): `out` is only resized.
pub fn prepare_any_dtype_out(config: IterConfig<'_>, out: &Tensor) -> Result<Meta<IterInfo>> {
    let meta = config.build()?;
    crate::structured::resize_to_spec(out, meta.output(0)?)?;
    Ok(meta)
}

/// A new output for the elementwise `config`, laid out as TensorIterator lays out the outputs
/// it allocates.
pub fn allocate_output(config: IterConfig<'_>) -> Result<Tensor> {
    crate::structured::create_out(config.build()?.output(0)?)
}

/// TensorIterator's memory-overlap checks (`compute_mem_overlaps`, see
/// [`IterConfig::build`]) of the tensor `outs` writes (nothing when functional) against
/// `inputs`: for meta functions and kernels that describe or fill their output without
/// building an [`IterConfig`] over it, where PyTorch's kernel runs a TensorIterator
/// (`pow_.Scalar`, `clamp_`, `relu_`). Meta tensors are not checked, as in PyTorch.
pub fn check_mem_overlaps(inputs: &[&Tensor], outs: Outs<'_>) -> Result<()> {
    IterConfig::new(inputs, outs).check_mem_overlaps()
}

/// TensorIterator's treatment of an out= tensor, for kernels that compute their shape and
/// dtypes themselves (`where.self_out`): checks `out` against `inputs` for memory overlap,
/// then resizes it to `shape` if its sizes differ, laid out as TensorIterator lays out the
/// outputs it allocates (see [`IterConfig::build`]).
pub fn prepare_elementwise_out(out: &Tensor, inputs: &[&Tensor], shape: &[i64]) -> Result<()> {
    let outs = [out];
    let config = IterConfig::new(inputs, Outs::Out(&outs));
    config.check_mem_overlaps()?;
    if out.with_sizes(|sizes| same_dims(sizes, shape)) {
        return Ok(());
    }
    if config.read_write_output().is_some() {
        check_read_write_shape(out, shape)?;
    }
    let same_shape = inputs
        .iter()
        .all(|t| t.with_sizes(|sizes| same_dims(sizes, shape)));
    let spec = OutputSpec {
        sizes: DimVec::from_slice(shape),
        strides: config.output_strides(shape, same_shape),
        dtype: out.dtype(),
        device: out.device(),
        compute_dtype: None,
    };
    crate::structured::resize_to_spec(out, &spec)
}
