//! Fused element-wise loops without a JIT: a small register bytecode run over cache-sized
//! blocks of the iteration space (the lazy backend's fusing compiler builds these, plan §5.4).
//!
//! A [`FusedKernel`] computes one output of a chain (or tree) of element-wise operators in one
//! floating compute type (`f32` or `f64`). Its inputs are tensors of that dtype with any
//! strides (broadcast inputs have stride 0) or scalars (Python numbers and 0-dim tensors,
//! converted to the compute type as the eager kernels convert them). Each block of the output
//! (a few thousand elements, so that every live register stays in L1) runs the code once: one
//! call of a monomorphic slice loop per operation (the multiversioned loops of `math.rs`),
//! reading inputs in place when they are visited linearly, gathered into a register
//! otherwise. Above [`GRAIN_SIZE`] elements × operations the blocks are shared between
//! threads, the caller included (`parallel`).
//!
//! **Bit-identical to eager.** Every operation applies the eager kernel's own per-element
//! function (`Float` / `Num` / `Arith` methods, [`relu`]), in the eager kernel's compute type,
//! with the same value-dependent choices (`add`'s `alpha == 1` shortcut, `sub` as `add` with
//! `-alpha`): a fused chain gives the bits of the same operators run one by one.

use std::mem::MaybeUninit;

use smallvec::SmallVec;
use switchyard_core::element::convert;
use switchyard_core::{
    Access, DimVec, Element, Error, Result, Scalar, ScalarType, Tensor, with_tensors,
};

use crate::loops::{GRAIN_SIZE, Plan, typed, typed_mut};
use crate::reduce_loops::Ahead;

/// Elements of the rows a fused softmax's prologue computes at a time (16 KiB of `f32`): small
/// enough to stay in L1 with the prologue's registers while the row kernel reads them.
const ROW_GROUP_ELEMENTS: usize = 4096;
use crate::math::{self, Float};
use crate::num::{Arith, Num};
use crate::parallel;

/// `max(x, 0)` as eager `relu` computes it (PyTorch's `clamp_min(x, 0)`: NaN and `-0.0` pass
/// through). Shared with the eager kernel.
#[inline(always)]
pub(crate) fn relu<C: Num>(x: C) -> C {
    if x < C::zero() { C::zero() } else { x }
}

/// A unary operation the engine knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `neg`.
    Neg,
    /// `exp`.
    Exp,
    /// `log`.
    Log,
    /// `sin`.
    Sin,
    /// `tanh`.
    Tanh,
    /// `sigmoid`.
    Sigmoid,
    /// `sqrt`.
    Sqrt,
    /// `relu`.
    Relu,
}

/// A binary operation the engine knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `mul.Tensor`.
    Mul,
    /// `div.Tensor` (true division).
    Div,
    /// `maximum` (NaN-propagating).
    Maximum,
}

impl UnaryOp {
    /// The operator's name (in program texts).
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sin => "sin",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Relu => "relu",
        }
    }
}

impl BinaryOp {
    /// The operator's name (in program texts).
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Maximum => "maximum",
        }
    }
}

/// A value inside a kernel under construction: an input or the result of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    /// Input `i` of the kernel.
    Input(u8),
    /// The result of operation `i`.
    Op(u16),
}

#[derive(Clone, Copy, Debug)]
enum Src {
    Input(u8),
    Reg(u8),
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Unary {
        f: UnaryOp,
        dst: u8,
        x: Src,
    },
    Binary {
        f: BinaryOp,
        dst: u8,
        a: Src,
        b: Src,
    },
    /// `a + alpha * b` (`sub`: alpha negated first), alpha a scalar input.
    Add {
        dst: u8,
        a: Src,
        b: Src,
        alpha: u8,
        negate: bool,
    },
    /// `where(r <= threshold, value, g)`, the two scalars inputs (ReLU's backward).
    WhereLe {
        dst: u8,
        r: Src,
        g: Src,
        threshold: u8,
        value: u8,
    },
}

/// A compiled fused element-wise computation (see the module documentation).
#[derive(Clone, Debug)]
pub struct FusedKernel {
    dtype: ScalarType,
    sizes: DimVec,
    n_inputs: usize,
    code: Vec<Op>,
    n_regs: usize,
    result: Src,
    names: Vec<&'static str>,
}

/// Builds a [`FusedKernel`] in SSA form; registers are allocated by liveness at `finish`.
#[derive(Clone, Debug)]
pub struct FusedBuilder {
    dtype: ScalarType,
    sizes: DimVec,
    n_inputs: usize,
    ops: Vec<SsaOp>,
}

#[derive(Clone, Copy, Debug)]
enum SsaOp {
    Unary(UnaryOp, Value),
    Binary(BinaryOp, Value, Value),
    Add(Value, Value, u8, bool),
    /// `r`, `g`, threshold input, value input.
    WhereLe(Value, Value, u8, u8),
}

impl SsaOp {
    fn operands(&self) -> SmallVec<[Value; 2]> {
        match *self {
            SsaOp::Unary(_, x) => smallvec::smallvec![x],
            SsaOp::Binary(_, a, b) | SsaOp::Add(a, b, _, _) | SsaOp::WhereLe(a, b, _, _) => {
                smallvec::smallvec![a, b]
            }
        }
    }
}

/// Whether the engine computes in `dtype`.
pub fn supports_dtype(dtype: ScalarType) -> bool {
    matches!(dtype, ScalarType::Float | ScalarType::Double)
}

impl FusedBuilder {
    /// A kernel computing in `dtype` (`Float` or `Double`) over an output of `sizes`.
    pub fn new(dtype: ScalarType, sizes: &[i64]) -> Result<FusedBuilder> {
        if !supports_dtype(dtype) {
            return Err(Error::runtime(format!(
                "internal error: fused kernels compute in Float or Double, not {dtype:?}"
            )));
        }
        Ok(FusedBuilder {
            dtype,
            sizes: DimVec::from_slice(sizes),
            n_inputs: 0,
            ops: Vec::new(),
        })
    }

    /// A new input (a tensor of the compute dtype, broadcastable to the output, or a scalar).
    pub fn input(&mut self) -> Result<Value> {
        let i = u8::try_from(self.n_inputs)
            .map_err(|_| Error::runtime("internal error: too many fused inputs"))?;
        self.n_inputs += 1;
        Ok(Value::Input(i))
    }

    fn push(&mut self, op: SsaOp) -> Result<Value> {
        let i = u16::try_from(self.ops.len())
            .map_err(|_| Error::runtime("internal error: too many fused operations"))?;
        self.ops.push(op);
        Ok(Value::Op(i))
    }

    /// `f(x)`.
    pub fn unary(&mut self, f: UnaryOp, x: Value) -> Result<Value> {
        self.push(SsaOp::Unary(f, x))
    }

    /// `f(a, b)`.
    pub fn binary(&mut self, f: BinaryOp, a: Value, b: Value) -> Result<Value> {
        self.push(SsaOp::Binary(f, a, b))
    }

    /// `a + alpha * b` (`negate`: `a - alpha * b`, PyTorch's `sub`), `alpha` a scalar input.
    pub fn add(&mut self, a: Value, b: Value, alpha: Value, negate: bool) -> Result<Value> {
        let Value::Input(alpha) = alpha else {
            return Err(Error::runtime(
                "internal error: a fused add's alpha must be a scalar input",
            ));
        };
        self.push(SsaOp::Add(a, b, alpha, negate))
    }

    /// `where(r <= threshold, value, g)` as eager's `le.Scalar` then `where.self` compute it
    /// (the comparison in the compute dtype; the mask is never materialised): ReLU's
    /// backward. `threshold` and `value` are scalar inputs.
    pub fn where_le(
        &mut self,
        r: Value,
        g: Value,
        threshold: Value,
        value: Value,
    ) -> Result<Value> {
        let (Value::Input(threshold), Value::Input(value)) = (threshold, value) else {
            return Err(Error::runtime(
                "internal error: a fused where_le's threshold and value must be scalar inputs",
            ));
        };
        self.push(SsaOp::WhereLe(r, g, threshold, value))
    }

    /// The kernel computing `result`.
    pub fn finish(self, result: Value) -> Result<FusedKernel> {
        // Last use of each operation's value.
        let n = self.ops.len();
        let mut last_use = vec![0usize; n];
        for (i, op) in self.ops.iter().enumerate() {
            for v in op.operands() {
                if let Value::Op(k) = v {
                    let k = usize::from(k);
                    if k >= i {
                        return Err(Error::runtime("internal error: fused operand out of order"));
                    }
                    last_use[k] = i;
                }
            }
        }
        if let Value::Op(k) = result {
            if usize::from(k) >= n {
                return Err(Error::runtime("internal error: fused result out of range"));
            }
            last_use[usize::from(k)] = usize::MAX;
        }
        let mut reg_of = vec![0u8; n];
        let mut free: Vec<u8> = Vec::new();
        let mut n_regs = 0usize;
        let mut code = Vec::with_capacity(n);
        let mut names = Vec::with_capacity(n);
        let src = |v: Value, reg_of: &[u8]| match v {
            Value::Input(i) => Src::Input(i),
            Value::Op(k) => Src::Reg(reg_of[usize::from(k)]),
        };
        for (i, op) in self.ops.iter().enumerate() {
            let ins: SmallVec<[Src; 2]> = op.operands().iter().map(|v| src(*v, &reg_of)).collect();
            // Registers whose value dies here are free for this operation's result (the
            // slice loops handle a destination equal to a source).
            for v in op.operands() {
                if let Value::Op(k) = v {
                    let k = usize::from(k);
                    if last_use[k] == i && !free.contains(&reg_of[k]) {
                        free.push(reg_of[k]);
                    }
                }
            }
            let dst = match free.pop() {
                Some(r) => r,
                None => {
                    n_regs += 1;
                    u8::try_from(n_regs - 1)
                        .map_err(|_| Error::runtime("internal error: too many fused registers"))?
                }
            };
            reg_of[i] = dst;
            code.push(match *op {
                SsaOp::Unary(f, _) => {
                    names.push(f.name());
                    Op::Unary { f, dst, x: ins[0] }
                }
                SsaOp::Binary(f, _, _) => {
                    names.push(f.name());
                    Op::Binary {
                        f,
                        dst,
                        a: ins[0],
                        b: ins[1],
                    }
                }
                SsaOp::Add(_, _, alpha, negate) => {
                    names.push(if negate { "sub" } else { "add" });
                    Op::Add {
                        dst,
                        a: ins[0],
                        b: ins[1],
                        alpha,
                        negate,
                    }
                }
                SsaOp::WhereLe(_, _, threshold, value) => {
                    names.push("where_le");
                    Op::WhereLe {
                        dst,
                        r: ins[0],
                        g: ins[1],
                        threshold,
                        value,
                    }
                }
            });
        }
        Ok(FusedKernel {
            dtype: self.dtype,
            sizes: self.sizes,
            n_inputs: self.n_inputs,
            code,
            n_regs,
            result: src(result, &reg_of),
            names,
        })
    }
}

/// One input of a fused kernel at execution.
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    /// A tensor (a 0-dim tensor is read as a scalar, as eager's type promotion treats it).
    Tensor(&'a Tensor),
    /// A scalar.
    Scalar(Scalar),
}

impl FusedKernel {
    /// The compute (and output) dtype.
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }

    /// The output sizes.
    pub fn sizes(&self) -> &[i64] {
        &self.sizes
    }

    /// Number of inputs.
    pub fn input_count(&self) -> usize {
        self.n_inputs
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.code.len()
    }

    /// Whether the kernel has no operation (it copies its input).
    pub fn is_empty(&self) -> bool {
        self.code.is_empty()
    }

    /// The operations' names, in order (`mul, add, sin, ...`).
    pub fn op_names(&self) -> &[&'static str] {
        &self.names
    }

    /// Elements per block with `live` registers: the largest power of two with every register
    /// in 32 KiB, clamped to [256, 4096].
    fn block(&self) -> usize {
        let live = (self.n_regs + self.n_inputs).max(1);
        let per = 32 * 1024 / (live * self.dtype.element_size());
        let mut b = 256usize;
        while b * 2 <= per && b < 4096 {
            b *= 2;
        }
        b
    }

    /// Runs the kernel: a new contiguous output of [`FusedKernel::sizes`].
    pub fn run(&self, inputs: &[Operand<'_>]) -> Result<Tensor> {
        self.run_new(inputs, None)
    }

    /// Runs the kernel as the prologue of `softmax` (`log`: `log_softmax`) over the last
    /// dimension (plan §5.5): rows of the kernel's result are computed into an L1/L2-sized
    /// buffer and handed to the eager kernel's row function, so the result has the bits of the
    /// kernel's output followed by eager `_softmax(out, -1, false)`.
    pub fn run_softmax(&self, inputs: &[Operand<'_>], log: bool) -> Result<Tensor> {
        self.run_new(inputs, Some(log))
    }

    /// [`FusedKernel::run`] writing into `out` instead of a new tensor: a buffer the caller
    /// recycles (a dropped result of an earlier run), so that a large output is not mapped and
    /// page-faulted afresh every time. `out` must be a contiguous CPU tensor of the kernel's
    /// dtype and sizes sharing no storage with an input (an error otherwise); its old values
    /// are never read.
    pub fn run_into(&self, inputs: &[Operand<'_>], out: &Tensor) -> Result<()> {
        self.run_out(inputs, None, out)
    }

    /// [`FusedKernel::run_softmax`] writing into `out` (see [`FusedKernel::run_into`]).
    pub fn run_softmax_into(&self, inputs: &[Operand<'_>], log: bool, out: &Tensor) -> Result<()> {
        self.run_out(inputs, Some(log), out)
    }

    fn check_arity(&self, inputs: &[Operand<'_>]) -> Result<()> {
        if inputs.len() != self.n_inputs {
            return Err(Error::runtime(format!(
                "internal error: fused kernel takes {} inputs, got {}",
                self.n_inputs,
                inputs.len()
            )));
        }
        Ok(())
    }

    fn numel(&self) -> Result<usize> {
        self.sizes
            .iter()
            .try_fold(1usize, |acc, s| acc.checked_mul(usize::try_from(*s).ok()?))
            .ok_or_else(|| Error::runtime("internal error: fused output size"))
    }

    fn run_new(&self, inputs: &[Operand<'_>], softmax: Option<bool>) -> Result<Tensor> {
        self.check_arity(inputs)?;
        match self.dtype {
            ScalarType::Double => self.run_new_typed::<f64>(inputs, softmax),
            _ => self.run_new_typed::<f32>(inputs, softmax),
        }
    }

    fn run_out(&self, inputs: &[Operand<'_>], softmax: Option<bool>, out: &Tensor) -> Result<()> {
        self.check_arity(inputs)?;
        if out.dtype() != self.dtype
            || out.sizes().as_slice() != self.sizes.as_slice()
            || !out.is_contiguous()
            || out.device() != switchyard_core::Device::CPU
        {
            return Err(Error::runtime(
                "internal error: a fused kernel's output must be a contiguous CPU tensor of its dtype and sizes",
            ));
        }
        match self.dtype {
            ScalarType::Double => self.run_out_typed::<f64>(inputs, softmax, out),
            _ => self.run_out_typed::<f32>(inputs, softmax, out),
        }
    }

    fn run_new_typed<C: FusedFloat>(
        &self,
        inputs: &[Operand<'_>],
        softmax: Option<bool>,
    ) -> Result<Tensor> {
        let prep = Prepared::<C>::new(self, inputs)?;
        let numel = self.numel()?;
        Tensor::new_with::<C>(&self.sizes, |ys| {
            if ys.len() != numel {
                return Err(Error::runtime("internal error: fused output size"));
            }
            with_tensors(&prep.tensors, |data| {
                let mut geoms: SmallVec<[&switchyard_core::tensor::Geometry; 8]> = SmallVec::new();
                let mut bytes: SmallVec<[&[u8]; 8]> = SmallVec::new();
                for i in 0..prep.tensors.len() {
                    geoms.push(data.geometry(i));
                    bytes.push(data.bytes(i)?);
                }
                self.compute(&prep, &geoms, &bytes, ys, softmax)
            })?;
            // SAFETY: `compute` returned Ok, and it writes every one of the `numel` elements of
            // `ys` (each block of `[0, numel)` is stored whole; each row by `softmax_rows`,
            // which writes all of its output) before returning Ok.
            Ok(unsafe { ys.assume_init_mut() })
        })
    }

    fn run_out_typed<C: FusedFloat>(
        &self,
        inputs: &[Operand<'_>],
        softmax: Option<bool>,
        out: &Tensor,
    ) -> Result<()> {
        let prep = Prepared::<C>::new(self, inputs)?;
        let numel = self.numel()?;
        let mut all: SmallVec<[(&Tensor, Access); 8]> = SmallVec::new();
        all.push((out, Access::Write));
        all.extend(prep.tensors.iter().copied());
        with_tensors(&all, |data| {
            let offset = usize::try_from(data.geometry(0).storage_offset())
                .map_err(|_| Error::runtime("internal error: fused output offset"))?;
            let mut geoms: SmallVec<[switchyard_core::tensor::Geometry; 8]> = SmallVec::new();
            for i in 1..all.len() {
                geoms.push(data.geometry(i).clone());
            }
            let mut rest: SmallVec<[Option<&[u8]>; 4]> = SmallVec::new();
            let ob = data.split_first_host_mut(&mut rest)?;
            let bytes: SmallVec<[&[u8]; 8]> = rest
                .into_iter()
                .map(|b| {
                    b.ok_or_else(|| {
                        Error::runtime("internal error: a fused kernel's output aliases an input")
                    })
                })
                .collect::<Result<_>>()?;
            let ys = typed_mut::<C>(ob)?
                .get_mut(offset..offset + numel)
                .ok_or_else(range_error)?;
            // SAFETY: `MaybeUninit<C>` has the layout of `C`, and `compute` only ever stores
            // initialised values through the slice, so `ys` stays initialised.
            let ys: &mut [MaybeUninit<C>] = unsafe {
                std::slice::from_raw_parts_mut(ys.as_mut_ptr().cast::<MaybeUninit<C>>(), ys.len())
            };
            let geoms: SmallVec<[&switchyard_core::tensor::Geometry; 8]> = geoms.iter().collect();
            self.compute(&prep, &geoms, &bytes, ys, softmax)
        })
    }

    /// The kernel over `ys` (the whole output), the tensor inputs' geometries and bytes given.
    fn compute<C: FusedFloat>(
        &self,
        prep: &Prepared<'_, C>,
        geoms_in: &[&switchyard_core::tensor::Geometry],
        bytes: &[&[u8]],
        ys: &mut [MaybeUninit<C>],
        softmax: Option<bool>,
    ) -> Result<()> {
        let out_geom = switchyard_core::tensor::Geometry::new(
            &self.sizes,
            &switchyard_core::shape::contiguous_strides(&self.sizes),
            0,
        )?;
        let mut geoms: SmallVec<[&switchyard_core::tensor::Geometry; 8]> = SmallVec::new();
        geoms.push(&out_geom);
        geoms.extend(geoms_in.iter().copied());
        let plan = Plan::new(&self.sizes, &geoms)?;
        let mut slices: SmallVec<[&[C]; 8]> = SmallVec::new();
        for b in bytes {
            slices.push(typed::<C>(b)?);
        }
        let env = Env {
            plan: &plan,
            scalars: &prep.scalars,
            negated: &prep.negated,
            tensor_of: &prep.tensor_of,
            slices: &slices,
        };
        match softmax {
            None => self.execute(&env, ys, ys.len()),
            Some(log) => self.execute_softmax(&env, ys, log),
        }
    }

    fn execute<C: FusedFloat>(
        &self,
        env: &Env<'_, C>,
        ys: &mut [MaybeUninit<C>],
        numel: usize,
    ) -> Result<()> {
        if numel == 0 {
            return Ok(());
        }
        let block = self.block().min(numel);
        let work = numel.saturating_mul(self.code.len().max(1));
        if work >= GRAIN_SIZE && numel > block && parallel::num_threads() > 1 {
            let per = numel / (parallel::num_threads() * 4);
            let chunk = per.max(GRAIN_SIZE / 4).div_ceil(block) * block;
            parallel::for_each_chunk_mut(ys, chunk, &|i, part| {
                self.range(env, i * chunk, part, block)
            })
        } else {
            self.range(env, 0, ys, block)
        }
    }

    fn execute_softmax<C: FusedFloat>(
        &self,
        env: &Env<'_, C>,
        ys: &mut [MaybeUninit<C>],
        log: bool,
    ) -> Result<()> {
        let dim = self
            .sizes
            .last()
            .and_then(|d| usize::try_from(*d).ok())
            .unwrap_or(0);
        if ys.is_empty() || dim == 0 {
            return Ok(());
        }
        // Whole rows per task: at least GRAIN_SIZE / 4 elements (as eager's softmax cuts), and
        // few enough tasks (8 per thread) that a task's row groups prefetch their successors.
        let total_rows = ys.len() / dim;
        let rows = (GRAIN_SIZE / 4 / dim)
            .max(total_rows.div_ceil(parallel::num_threads().max(1) * 8))
            .max(1);
        let chunk = rows * dim;
        // Within a task, a few rows at a time (about 16 KiB) go through the prologue into a
        // row buffer that stays in L1 while `softmax_rows` reads it (its three passes), so the
        // input is read from memory once and the intermediate never leaves the core's cache.
        let group = (ROW_GROUP_ELEMENTS / dim).clamp(1, rows) * dim;
        let block = self.block().min(group);
        let body = |i: usize, part: &mut [MaybeUninit<C>]| -> Result<()> {
            let mut scratch = self.scratch::<C>(env, block)?;
            let mut buf: Vec<MaybeUninit<C>> = Vec::new();
            buf.try_reserve_exact(group.min(part.len()))
                .map_err(|_| Error::runtime("fused softmax: cannot allocate a row buffer"))?;
            buf.resize(group.min(part.len()), MaybeUninit::uninit());
            let (part_at, part_len) = (part.as_ptr(), part.len());
            for (g, rows_out) in part.chunks_mut(group).enumerate() {
                let start = i * chunk + g * group;
                let x = &mut buf[..rows_out.len()];
                self.range_in(env, start, x, block, &mut scratch)?;
                // SAFETY: `range_in` returned Ok, so it wrote every element of `x`.
                let x = unsafe { x.assume_init_ref() };
                // While these rows compute, the next group's input and output rows come in.
                let next = ((g + 1) * group).min(part_len);
                let ahead = Ahead::of_raw(
                    next_linear_input(env, start + group, group),
                    part_at.wrapping_add(next),
                    group.min(part_len - next),
                );
                crate::reduce_loops::softmax_rows(x, rows_out, dim, log, ahead);
            }
            Ok(())
        };
        if ys.len() >= GRAIN_SIZE && parallel::num_threads() > 1 {
            parallel::for_each_chunk_mut(ys, chunk, &body)
        } else {
            for (i, part) in ys.chunks_mut(chunk).enumerate() {
                body(i, part)?;
            }
            Ok(())
        }
    }

    /// The working memory of [`FusedKernel::range_in`] for blocks of `block` elements:
    /// the registers, one scratch block, then a block per gathered tensor input.
    fn scratch<C: FusedFloat>(&self, env: &Env<'_, C>, block: usize) -> Result<Vec<C>> {
        let n_bufs = self.n_regs + 1 + env.slices.len();
        switchyard_core::alloc::try_vec(n_bufs * block, C::zero())
    }

    /// [`FusedKernel::range_in`] with working memory of its own.
    fn range<C: FusedFloat>(
        &self,
        env: &Env<'_, C>,
        start: usize,
        out: &mut [MaybeUninit<C>],
        block: usize,
    ) -> Result<()> {
        let mut bufs = self.scratch::<C>(env, block)?;
        self.range_in(env, start, out, block, &mut bufs)
    }

    /// Computes elements `[start, start + out.len())` block by block. The last operation
    /// stores straight into `out` (no register in between); the others work in registers,
    /// in place when their destination is one of their sources.
    /// `bufs` is working memory from [`FusedKernel::scratch`] for the same `block`.
    fn range_in<C: FusedFloat>(
        &self,
        env: &Env<'_, C>,
        start: usize,
        out: &mut [MaybeUninit<C>],
        block: usize,
        bufs: &mut [C],
    ) -> Result<()> {
        let n_tensors = env.slices.len();
        if bufs.len() < (self.n_regs + 1 + n_tensors) * block {
            return Err(Error::runtime("internal error: fused kernel scratch"));
        }
        // Whether the last operation computes the result (it then writes `out` itself).
        let direct = match (self.result, self.code.last()) {
            (Src::Reg(r), Some(op)) => op.dst() == r,
            _ => false,
        };
        let (body, last) = if direct {
            self.code.split_at(self.code.len() - 1)
        } else {
            (&self.code[..], &[][..])
        };
        let mut pos = 0;
        while pos < out.len() {
            let len = block.min(out.len() - pos);
            let first = start + pos;
            let (regs, rest) = bufs.split_at_mut(self.n_regs * block);
            let (scratch, gathered) = rest.split_at_mut(block);
            // Inputs of this block: in place when linear, else gathered.
            let mut views: SmallVec<[&[C]; 8]> = SmallVec::new();
            for (t, gbuf) in gathered.chunks_mut(block).enumerate().take(n_tensors) {
                let k = t + 1;
                if env.plan.is_linear(k) {
                    let off = usize::try_from(env.plan.offsets[k]).map_err(|_| range_error())?;
                    let s = env.slices[t]
                        .get(off + first..off + first + len)
                        .ok_or_else(range_error)?;
                    views.push(s);
                } else {
                    let buf = &mut gbuf[..len];
                    gather(env.plan, k, env.slices[t], first, buf)?;
                    views.push(&*buf);
                }
            }
            for op in body {
                run_op::<C>(op, env, &views, regs, scratch, block, len)?;
            }
            let dst = &mut out[pos..pos + len];
            if let Some(op) = last.first() {
                let regs: &[C] = regs;
                let read = |s: Src| arg(s, env, &views, regs, block, len);
                apply_to(op, env, read, dst)?;
            } else {
                match arg(self.result, env, &views, regs, block, len)? {
                    Arg::Slice(r) => {
                        for (o, v) in dst.iter_mut().zip(r) {
                            o.write(*v);
                        }
                    }
                    Arg::Scalar(v) => {
                        for o in dst.iter_mut() {
                            o.write(v);
                        }
                    }
                    Arg::Dst => return Err(Error::runtime("internal error: fused result")),
                }
            }
            pos += len;
        }
        Ok(())
    }
}

/// Elements `[start, start + len)` (clipped) of the first tensor input read in place (not
/// gathered), as a fused softmax prefetches the prologue's next rows: empty when there is none.
fn next_linear_input<'s, C>(env: &Env<'s, C>, start: usize, len: usize) -> &'s [C] {
    (0..env.slices.len())
        .find(|&t| env.plan.is_linear(t + 1))
        .and_then(|t| {
            let off = usize::try_from(env.plan.offsets[t + 1]).ok()?;
            let s: &'s [C] = env.slices[t];
            let from = off.checked_add(start)?.min(s.len());
            s.get(from..from.saturating_add(len).min(s.len()))
        })
        .unwrap_or_default()
}

/// The inputs of one run: scalars converted once, tensors to lock for reading.
struct Prepared<'t, C> {
    scalars: SmallVec<[Option<C>; 8]>,
    /// Each scalar negated as eager's `sub` negates its alpha, on the scalar before the
    /// conversion (an integral 0 stays +0, where negating the converted value gives -0).
    negated: SmallVec<[Option<C>; 8]>,
    tensors: SmallVec<[(&'t Tensor, Access); 8]>,
    tensor_of: SmallVec<[usize; 8]>,
}

impl<'t, C: FusedFloat> Prepared<'t, C> {
    fn new(k: &FusedKernel, inputs: &[Operand<'t>]) -> Result<Prepared<'t, C>> {
        let mut p = Prepared {
            scalars: SmallVec::new(),
            negated: SmallVec::new(),
            tensors: SmallVec::new(),
            tensor_of: SmallVec::new(),
        };
        for op in inputs {
            let scalar = match *op {
                Operand::Scalar(s) => Some(s),
                Operand::Tensor(t) if t.dim() == 0 => Some(t.item_scalar()?),
                Operand::Tensor(_) => None,
            };
            if let Some(s) = scalar {
                p.scalars.push(Some(scalar_to::<C>(s)));
                p.negated.push(s.checked_neg().ok().map(scalar_to::<C>));
                p.tensor_of.push(usize::MAX);
                continue;
            }
            if let Operand::Tensor(t) = *op {
                if t.dtype() != k.dtype {
                    return Err(Error::runtime(format!(
                        "internal error: fused kernel over {:?} got a {:?} input",
                        k.dtype,
                        t.dtype()
                    )));
                }
                p.scalars.push(None);
                p.negated.push(None);
                p.tensor_of.push(p.tensors.len());
                p.tensors.push((t, Access::Read));
            }
        }
        Ok(p)
    }
}

impl Op {
    fn dst(&self) -> u8 {
        match *self {
            Op::Unary { dst, .. }
            | Op::Binary { dst, .. }
            | Op::Add { dst, .. }
            | Op::WhereLe { dst, .. } => dst,
        }
    }
}

struct Env<'a, C> {
    plan: &'a Plan,
    scalars: &'a [Option<C>],
    negated: &'a [Option<C>],
    tensor_of: &'a [usize],
    slices: &'a [&'a [C]],
}

fn range_error() -> Error {
    Error::runtime("internal error: fused input outside its storage")
}

/// Operand `k` of `plan` over linear indices `[first, first + buf.len())`, into `buf`.
fn gather<C: Copy>(plan: &Plan, k: usize, src: &[C], first: usize, buf: &mut [C]) -> Result<()> {
    let stride = plan.inner_stride(k);
    let mut at = 0usize;
    let mut bad = false;
    plan.for_each_run(first, first + buf.len(), |offsets, len| {
        if bad {
            return;
        }
        let dst = &mut buf[at..at + len];
        let base = offsets[k];
        if stride == 0 {
            match usize::try_from(base).ok().and_then(|b| src.get(b)) {
                Some(v) => dst.fill(*v),
                None => bad = true,
            }
        } else if stride == 1 {
            match usize::try_from(base).ok().and_then(|b| src.get(b..b + len)) {
                Some(s) => dst.copy_from_slice(s),
                None => bad = true,
            }
        } else {
            for (j, d) in dst.iter_mut().enumerate() {
                match usize::try_from(base + stride * j as i64)
                    .ok()
                    .and_then(|b| src.get(b))
                {
                    Some(v) => *d = *v,
                    None => {
                        bad = true;
                        return;
                    }
                }
            }
        }
        at += len;
    });
    if bad || at != buf.len() {
        return Err(range_error());
    }
    Ok(())
}

/// Where an operation stores: a register (`C`) or the output (`MaybeUninit<C>`).
pub(crate) trait Store<C>: Copy + Send {
    /// The stored form of `v`.
    fn put(v: C) -> Self;
}
impl Store<f32> for f32 {
    #[inline(always)]
    fn put(v: f32) -> f32 {
        v
    }
}
impl Store<f64> for f64 {
    #[inline(always)]
    fn put(v: f64) -> f64 {
        v
    }
}
impl<C: Copy + Send> Store<C> for MaybeUninit<C> {
    #[inline(always)]
    fn put(v: C) -> MaybeUninit<C> {
        MaybeUninit::new(v)
    }
}

/// The compute types of fused kernels.
pub(crate) trait FusedFloat:
    Float
    + Arith
    + crate::reduce_loops::SoftFloat
    + Element<Repr = Self>
    + std::ops::Div<Output = Self>
    + Store<Self>
    + Send
    + Sync
{
    /// `sin` over a slice, bit for bit eager's `Float::sin_` per element.
    fn sin_slice<U: Store<Self>>(x: &[Self], dst: &mut [U]);
    /// [`FusedFloat::sin_slice`] in place.
    fn sin_in_place(buf: &mut [Self]);
}
impl FusedFloat for f32 {
    /// Eager's `sin_f32` per element, without its per-element branch in the vector loop: the
    /// polynomial over the whole block, then the rare arguments beyond its range (|x| > 2^20,
    /// finite) again through `sin_f32`'s libm path. Same bits; a branch inside the loop made
    /// LLVM call libm for every element.
    fn sin_slice<U: Store<f32>>(x: &[f32], dst: &mut [U]) {
        math::map1(x, dst, &|v: f32| U::put(math::sin_fast_f32(v)));
        for (d, &v) in dst.iter_mut().zip(x) {
            if math::trig_needs_slow_f32(v) {
                *d = U::put(math::sin_f32(v));
            }
        }
    }
    fn sin_in_place(buf: &mut [f32]) {
        // The slow arguments need the input after the polynomial overwrote it: such (rare)
        // blocks go element by element. The scan folds without stopping early, so it is
        // vectorised (`any`'s early exit made it a scalar loop, a quarter of a fused chain).
        let slow = buf
            .iter()
            .fold(false, |slow, &v| slow | math::trig_needs_slow_f32(v));
        if slow {
            buf.iter_mut().for_each(|v| *v = math::sin_f32(*v));
        } else {
            math::map1_inplace(buf, &|v: f32| math::sin_fast_f32(v));
        }
    }
}
impl FusedFloat for f64 {
    fn sin_slice<U: Store<f64>>(x: &[f64], dst: &mut [U]) {
        math::map1(x, dst, &|v: f64| U::put(Float::sin_(v)));
    }
    fn sin_in_place(buf: &mut [f64]) {
        math::map1_inplace(buf, &|v: f64| Float::sin_(v));
    }
}

fn scalar_to<C: FusedFloat>(s: Scalar) -> C {
    match s {
        Scalar::Float(v) => convert::<f64, C>(v),
        Scalar::Int(v) => convert::<i64, C>(v),
        Scalar::Bool(v) => convert::<bool, C>(v),
    }
}

/// An operand of one operation over a block.
enum Arg<'s, C> {
    Slice(&'s [C]),
    Scalar(C),
    /// The destination's own values (an operation computing in place).
    Dst,
}

fn arg<'s, C: FusedFloat>(
    src: Src,
    env: &Env<'_, C>,
    views: &[&'s [C]],
    regs: &'s [C],
    block: usize,
    len: usize,
) -> Result<Arg<'s, C>> {
    Ok(match src {
        Src::Reg(r) => Arg::Slice(&regs[usize::from(r) * block..usize::from(r) * block + len]),
        Src::Input(i) => {
            let i = usize::from(i);
            match env.tensor_of.get(i).copied() {
                Some(usize::MAX) => Arg::Scalar(env.scalars[i].unwrap_or(C::zero())),
                Some(t) => Arg::Slice(views[t]),
                None => return Err(Error::runtime("internal error: fused input index")),
            }
        }
    })
}

/// `dst = f(a, b)` over a block (neither operand is `dst` itself).
fn binary_to<C: FusedFloat, U: Store<C>>(
    dst: &mut [U],
    a: Arg<'_, C>,
    b: Arg<'_, C>,
    f: &(impl Fn(C, C) -> C + Sync),
) -> Result<()> {
    match (a, b) {
        (Arg::Slice(a), Arg::Slice(b)) => math::map2(a, b, dst, &|x, y| U::put(f(x, y))),
        (Arg::Slice(a), Arg::Scalar(s)) => math::map1(a, dst, &|x| U::put(f(x, s))),
        (Arg::Scalar(s), Arg::Slice(b)) => math::map1(b, dst, &|y| U::put(f(s, y))),
        (Arg::Scalar(x), Arg::Scalar(y)) => dst.fill(U::put(f(x, y))),
        _ => {
            return Err(Error::runtime(
                "internal error: fused operand aliases its output",
            ));
        }
    }
    Ok(())
}

/// `buf = f(a, b)` over a block where `a`, `b` or both may be `buf`'s own values. A tensor
/// operand beside the destination's values goes through `scratch` (a copy of `buf`) and the
/// two-slice loop: that is the loop shape eager's kernels have, and with two NaN operands the
/// one whose payload and sign survive depends on the instruction's operand order, which an
/// in-place loop would let the compiler swap.
fn binary_in_place<C: FusedFloat>(
    buf: &mut [C],
    scratch: &mut [C],
    a: Arg<'_, C>,
    b: Arg<'_, C>,
    f: &(impl Fn(C, C) -> C + Sync),
) -> Result<()> {
    match (a, b) {
        (Arg::Dst, Arg::Dst) => math::map1_inplace(buf, &|v| f(v, v)),
        (Arg::Dst, Arg::Scalar(s)) => math::map1_inplace(buf, &|v| f(v, s)),
        (Arg::Scalar(s), Arg::Dst) => math::map1_inplace(buf, &|y| f(s, y)),
        (Arg::Dst, Arg::Slice(b)) => {
            let copy = &mut scratch[..buf.len()];
            copy.copy_from_slice(buf);
            math::map2(copy, b, buf, f);
        }
        (Arg::Slice(a), Arg::Dst) => {
            let copy = &mut scratch[..buf.len()];
            copy.copy_from_slice(buf);
            math::map2(a, copy, buf, f);
        }
        (a, b) => return binary_to(buf, a, b, f),
    }
    Ok(())
}

/// `dst = f(x)` over a block (`x` is not `dst`).
fn unary_to<C: FusedFloat, U: Store<C>>(f: UnaryOp, x: Arg<'_, C>, dst: &mut [U]) -> Result<()> {
    let x = match x {
        Arg::Slice(x) => x,
        Arg::Scalar(s) => {
            let mut one = [C::zero()];
            unary_to(f, Arg::Slice(&[s]), &mut one)?;
            dst.fill(U::put(one[0]));
            return Ok(());
        }
        Arg::Dst => {
            return Err(Error::runtime(
                "internal error: fused operand aliases its output",
            ));
        }
    };
    match f {
        UnaryOp::Neg => math::map1(x, dst, &|v: C| U::put(Arith::neg(v))),
        UnaryOp::Exp => math::map1(x, dst, &|v: C| U::put(Float::exp_(v))),
        UnaryOp::Log => math::map1(x, dst, &|v: C| U::put(Float::log_(v))),
        UnaryOp::Sin => C::sin_slice(x, dst),
        UnaryOp::Tanh => math::map1(x, dst, &|v: C| U::put(Float::tanh_(v))),
        UnaryOp::Sigmoid => math::map1(x, dst, &|v: C| U::put(Float::sigmoid_(v))),
        UnaryOp::Sqrt => math::map1(x, dst, &|v: C| U::put(Float::sqrt_(v))),
        UnaryOp::Relu => math::map1(x, dst, &|v: C| U::put(relu(v))),
    }
    Ok(())
}

/// `buf = f(buf)` over a block.
fn unary_in_place<C: FusedFloat>(f: UnaryOp, buf: &mut [C]) {
    match f {
        UnaryOp::Neg => math::map1_inplace(buf, &|v: C| Arith::neg(v)),
        UnaryOp::Exp => math::map1_inplace(buf, &|v: C| Float::exp_(v)),
        UnaryOp::Log => math::map1_inplace(buf, &|v: C| Float::log_(v)),
        UnaryOp::Sin => C::sin_in_place(buf),
        UnaryOp::Tanh => math::map1_inplace(buf, &|v: C| Float::tanh_(v)),
        UnaryOp::Sigmoid => math::map1_inplace(buf, &|v: C| Float::sigmoid_(v)),
        UnaryOp::Sqrt => math::map1_inplace(buf, &|v: C| Float::sqrt_(v)),
        UnaryOp::Relu => math::map1_inplace(buf, &|v: C| relu(v)),
    }
}

/// The scalar `alpha` of a fused `add` / `sub`, as eager's `add_kernel` uses it: `sub`
/// negates it first.
fn add_alpha<C: FusedFloat>(env: &Env<'_, C>, alpha: u8, negate: bool) -> Result<C> {
    let i = usize::from(alpha);
    let value = match env.tensor_of.get(i).copied() {
        Some(usize::MAX) if negate => env.negated.get(i).copied().flatten(),
        Some(usize::MAX) => env.scalars.get(i).copied().flatten(),
        _ => None,
    };
    value.ok_or_else(|| Error::runtime("internal error: a fused add's alpha"))
}

/// Applies `op` with its result stored into `dst` (the output, or a register none of the
/// sources is), its sources read by `read` (which may answer [`Arg::Dst`] only when `dst` is
/// a register: then through the in-place loops).
fn apply<'s, C: FusedFloat>(
    op: &Op,
    env: &Env<'_, C>,
    mut read: impl FnMut(Src) -> Result<Arg<'s, C>>,
    dst: &mut [C],
    scratch: &mut [C],
) -> Result<()> {
    match *op {
        Op::Unary { f, x, .. } => match read(x)? {
            Arg::Dst => unary_in_place(f, dst),
            x => unary_to(f, x, dst)?,
        },
        Op::Binary { f, a, b, .. } => {
            let (a, b) = (read(a)?, read(b)?);
            match f {
                BinaryOp::Mul => binary_in_place(dst, scratch, a, b, &|x: C, y: C| Num::mul(x, y))?,
                BinaryOp::Div => binary_in_place(dst, scratch, a, b, &|x: C, y: C| x / y)?,
                BinaryOp::Maximum => {
                    binary_in_place(dst, scratch, a, b, &|x: C, y: C| Num::maximum(x, y))?
                }
            }
        }
        Op::Add {
            a,
            b,
            alpha,
            negate,
            ..
        } => {
            let (a, b) = (read(a)?, read(b)?);
            // Eager's `add_kernel`: `alpha == 1` is plain add.
            let alpha = add_alpha(env, alpha, negate)?;
            if alpha == C::one() {
                binary_in_place(dst, scratch, a, b, &|x: C, y: C| Num::add(x, y))?;
            } else {
                binary_in_place(dst, scratch, a, b, &move |x: C, y: C| {
                    Num::add(x, Num::mul(alpha, y))
                })?;
            }
        }
        Op::WhereLe {
            r,
            g,
            threshold,
            value,
            ..
        } => {
            let (r, g) = (read(r)?, read(g)?);
            let (t, v) = (scalar_input(env, threshold)?, scalar_input(env, value)?);
            binary_in_place(dst, scratch, r, g, &move |x: C, y: C| {
                if x <= t { v } else { y }
            })?;
        }
    }
    Ok(())
}

/// Applies `op` storing into the output block `dst` (never one of its sources).
fn apply_to<'s, C: FusedFloat>(
    op: &Op,
    env: &Env<'_, C>,
    mut read: impl FnMut(Src) -> Result<Arg<'s, C>>,
    dst: &mut [MaybeUninit<C>],
) -> Result<()> {
    match *op {
        Op::Unary { f, x, .. } => unary_to(f, read(x)?, dst),
        Op::Binary { f, a, b, .. } => {
            let (a, b) = (read(a)?, read(b)?);
            match f {
                BinaryOp::Mul => binary_to(dst, a, b, &|x: C, y: C| Num::mul(x, y)),
                BinaryOp::Div => binary_to(dst, a, b, &|x: C, y: C| x / y),
                BinaryOp::Maximum => binary_to(dst, a, b, &|x: C, y: C| Num::maximum(x, y)),
            }
        }
        Op::Add {
            a,
            b,
            alpha,
            negate,
            ..
        } => {
            let (a, b) = (read(a)?, read(b)?);
            let alpha = add_alpha(env, alpha, negate)?;
            if alpha == C::one() {
                binary_to(dst, a, b, &|x: C, y: C| Num::add(x, y))
            } else {
                binary_to(dst, a, b, &move |x: C, y: C| {
                    Num::add(x, Num::mul(alpha, y))
                })
            }
        }
        Op::WhereLe {
            r,
            g,
            threshold,
            value,
            ..
        } => {
            let (r, g) = (read(r)?, read(g)?);
            let (t, v) = (scalar_input(env, threshold)?, scalar_input(env, value)?);
            binary_to(dst, r, g, &move |x: C, y: C| if x <= t { v } else { y })
        }
    }
}

/// The value of scalar input `i` (a `where_le`'s threshold or value).
fn scalar_input<C: FusedFloat>(env: &Env<'_, C>, i: u8) -> Result<C> {
    match env.tensor_of.get(usize::from(i)).copied() {
        Some(usize::MAX) => env.scalars[usize::from(i)]
            .ok_or_else(|| Error::runtime("internal error: a fused scalar input without value")),
        _ => Err(Error::runtime(
            "internal error: a fused where_le's threshold or value is not a scalar",
        )),
    }
}

/// Runs `op` into its destination register; a source that is the destination itself is
/// computed in place (no copy of the block).
fn run_op<C: FusedFloat>(
    op: &Op,
    env: &Env<'_, C>,
    views: &[&[C]],
    regs: &mut [C],
    scratch: &mut [C],
    block: usize,
    len: usize,
) -> Result<()> {
    let dst_reg = op.dst();
    let d = usize::from(dst_reg);
    let (before, rest) = regs.split_at_mut(d * block);
    let (dst_full, after) = rest.split_at_mut(block);
    let dst = &mut dst_full[..len];
    let (before, after): (&[C], &[C]) = (before, after);
    let read = |s: Src| -> Result<Arg<'_, C>> {
        match s {
            Src::Reg(r) if r == dst_reg => Ok(Arg::Dst),
            Src::Reg(r) if usize::from(r) < d => {
                let r = usize::from(r);
                Ok(Arg::Slice(&before[r * block..r * block + len]))
            }
            Src::Reg(r) => {
                let r = usize::from(r) - d - 1;
                Ok(Arg::Slice(&after[r * block..r * block + len]))
            }
            Src::Input(_) => arg(s, env, views, &[], block, len),
        }
    };
    apply(op, env, read, dst, scratch)
}
