//! Meta functions of structured factory operators (there are none: every factory operator is
//! unstructured), plus [`factory_support`]: the argument checks, dtype inference and size
//! computations that the CPU and Meta factory kernels share.

pub mod factory_support {
    //! Argument rules shared by the factory kernels of every backend: dtype inference
    //! (`arange`, `full`, `linspace`), sizes (`arange`), layouts (`empty`, `empty_strided`),
    //! and the checks of the random fills (`uniform_`, `normal_`, `bernoulli_`, `random_`).

    use crate::meta::index_support::{stride_order, strides_for_memory_format};
    use switchyard_core::element::{Element, write_element};
    use switchyard_core::promotion::DEFAULT_DTYPE;
    use switchyard_core::shape::{DimVec, check_nonnegative, fmt_dims};
    use switchyard_core::{Access, Generator, Tensor, with_tensors};
    use switchyard_core::{
        Device, DeviceType, Error, Layout, MemoryFormat, Result, Scalar, ScalarType, bail,
        torch_check,
    };

    /// Formats a double as C++'s `std::ostream << double` does (`%g`, 6 significant digits):
    /// `2`, `0.1`, `1e-07`, `3e+38`, `inf`, `nan`.
    pub fn fmt_g(v: f64) -> String {
        if v.is_nan() {
            return "nan".to_string();
        }
        if v.is_infinite() {
            return if v > 0.0 { "inf" } else { "-inf" }.to_string();
        }
        if v == 0.0 {
            return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
        }
        let sci = format!("{v:.5e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let trim = |s: &str| -> String {
            if s.contains('.') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s.to_string()
            }
        };
        if !(-4..6).contains(&exp) {
            let sign = if exp < 0 { '-' } else { '+' };
            format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
        } else {
            let decimals = (5 - exp).max(0) as usize;
            trim(&format!("{v:.decimals$}"))
        }
    }

    /// The default dtype of a new tensor (`torch.get_default_dtype()`).
    pub fn default_dtype(dtype: Option<ScalarType>) -> ScalarType {
        dtype.unwrap_or(DEFAULT_DTYPE)
    }

    /// Checks the tensor options of a factory for a dense tensor: strided layout and no pinned
    /// memory on devices that cannot pin.
    pub fn check_options(
        layout: Option<Layout>,
        pin_memory: Option<bool>,
        device: Device,
    ) -> Result<()> {
        match layout.unwrap_or(Layout::Strided) {
            Layout::Strided => {}
        }
        if pin_memory == Some(true) {
            torch_check!(
                device.kind() == DeviceType::Cpu,
                "Only dense CPU tensors can be pinned"
            );
        }
        Ok(())
    }

    /// Strides of `empty(size, memory_format=...)` (contiguous by default; `preserve_format`
    /// is not a layout a new tensor can have).
    pub fn empty_strides(size: &[i64], memory_format: Option<MemoryFormat>) -> Result<DimVec> {
        check_nonnegative(size)?;
        match memory_format.unwrap_or(MemoryFormat::Contiguous) {
            MemoryFormat::Preserve => bail!(RuntimeError, "unsupported memory format Preserve"),
            format => strides_for_memory_format(size, format),
        }
    }

    /// A new tensor of `size` in `memory_format` on `device`, checked in the order of
    /// PyTorch's `empty_generic`: negative sizes, the memory format, the storage size
    /// ("Storage size calculation overflowed with sizes=[..]"), the allocation (PyTorch's
    /// out-of-memory error), the contiguous strides ("Stride calculation overflowed"), then
    /// the restride to a channels-last format. Shared by the CPU and Meta `empty` kernels.
    pub fn empty_tensor(
        size: &[i64],
        dtype: ScalarType,
        device: Device,
        memory_format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        check_nonnegative(size)?;
        let format = memory_format.unwrap_or(MemoryFormat::Contiguous);
        if format == MemoryFormat::Preserve {
            bail!(RuntimeError, "unsupported memory format Preserve");
        }
        let t = Tensor::allocate(size, dtype, device)?;
        if format != MemoryFormat::Contiguous {
            t.set_geometry(size, &strides_for_memory_format(size, format)?, 0)?;
        }
        Ok(t)
    }

    /// Checks the arguments of `empty_strided`.
    pub fn check_empty_strided(size: &[i64], stride: &[i64]) -> Result<()> {
        torch_check!(
            size.len() == stride.len(),
            "dimensionality of sizes ({}) must match dimensionality of strides ({})",
            size.len(),
            stride.len()
        );
        check_nonnegative(size)?;
        torch_check!(
            stride.iter().all(|s| *s >= 0),
            "Storage size calculation overflowed with sizes={} and strides={}",
            fmt_dims(size),
            fmt_dims(stride)
        );
        Ok(())
    }

    /// The dtype `full` infers from its fill value: `Bool` for a bool, `Long` for an
    /// integer, the default float dtype for a float.
    pub fn full_dtype(fill_value: Scalar, dtype: Option<ScalarType>) -> ScalarType {
        dtype.unwrap_or(match fill_value {
            Scalar::Bool(_) => ScalarType::Bool,
            Scalar::Int(_) => ScalarType::Long,
            Scalar::Float(_) => DEFAULT_DTYPE,
        })
    }

    /// The dtype of `arange` without a `dtype` argument: `Long` when every bound is an
    /// integer (bools included), the default float dtype otherwise.
    pub fn arange_dtype(
        start: Scalar,
        end: Scalar,
        step: Scalar,
        dtype: Option<ScalarType>,
    ) -> ScalarType {
        let integral = [start, end, step].iter().all(|s| !s.is_floating_point());
        dtype.unwrap_or(if integral {
            ScalarType::Long
        } else {
            DEFAULT_DTYPE
        })
    }

    /// `"name" not implemented for 'Bool'`.
    pub fn not_implemented_for(name: &str, dtype: ScalarType) -> Error {
        Error::not_implemented(format!("\"{name}\" not implemented for '{dtype}'"))
    }

    /// The number of elements of `arange(start, end, step)` in `dtype`, with PyTorch's
    /// checks (`compute_arange_size`): a nonzero finite step, finite bounds, bounds ordered as
    /// the step's sign, and a size that fits in `int64`.
    pub fn arange_size(start: Scalar, end: Scalar, step: Scalar, dtype: ScalarType) -> Result<i64> {
        if dtype == ScalarType::Bool {
            return Err(not_implemented_for("arange_cpu", dtype));
        }
        let (ds, de, dst) = (start.to_f64(), end.to_f64(), step.to_f64());
        torch_check!(dst != 0.0, "step must be nonzero");
        torch_check!(
            dst.is_finite(),
            "step must be finite but got {}",
            fmt_g(dst)
        );
        torch_check!(
            ds.is_finite() && de.is_finite(),
            "unsupported range: {} -> {}",
            fmt_g(ds),
            fmt_g(de)
        );
        torch_check!(
            (dst > 0.0 && de >= ds) || (dst < 0.0 && de <= ds),
            "upper bound and lower bound inconsistent with step sign"
        );
        let integral_args = [start, end, step].iter().all(|s| !s.is_floating_point());
        let size = if dtype == ScalarType::Long && integral_args {
            let (xs, xe, xst) = (
                start.to_i64_lossy(),
                end.to_i64_lossy(),
                step.to_i64_lossy(),
            );
            let sgn = xst.signum();
            (xe.wrapping_sub(xs).wrapping_add(xst).wrapping_sub(sgn) / xst) as f64
        } else {
            ((de - ds) / dst).ceil()
        };
        torch_check!(
            size >= 0.0 && size <= i64::MAX as f64,
            "invalid size, possible overflow?"
        );
        Ok(size as i64)
    }

    /// The type `arange` accumulates in on CPU (`acc_type<T, false>`): `Double` for `Float`
    /// and `Double`, `Float` for the 16-bit floats, `Long` for integers.
    pub fn arange_acc_dtype(dtype: ScalarType) -> ScalarType {
        match dtype {
            ScalarType::Float | ScalarType::Double => ScalarType::Double,
            ScalarType::Half | ScalarType::BFloat16 => ScalarType::Float,
            _ => ScalarType::Long,
        }
    }

    /// The warning `arange.out` gives when it resizes a non-empty output.
    pub fn arange_resize_warning(sizes: &[i64], numel: i64, size: i64) -> String {
        format!(
            "The number of elements in the out tensor of shape {} is {numel} which does not match the computed number of elements {size}. Note that this may occur as a result of rounding error. The out tensor will be resized to a tensor of shape ({size},).",
            fmt_dims(sizes)
        )
    }

    /// Checks `linspace`'s step count.
    pub fn check_linspace(steps: i64) -> Result<()> {
        torch_check!(steps >= 0, "number of steps must be non-negative");
        Ok(())
    }

    /// Checks `eye`'s sizes.
    pub fn check_eye(n: i64, m: i64) -> Result<()> {
        torch_check!(n >= 0, "n must be greater or equal to 0, got {n}");
        torch_check!(m >= 0, "m must be greater or equal to 0, got {m}");
        Ok(())
    }

    /// `[lowest, max]` of a floating dtype as `f64`.
    fn float_range(dtype: ScalarType) -> (f64, f64) {
        match dtype {
            ScalarType::Half => (-65504.0, 65504.0),
            ScalarType::BFloat16 => {
                let max = f64::from(switchyard_core::half::bf16::MAX);
                (-max, max)
            }
            ScalarType::Float => (f64::from(f32::MIN), f64::from(f32::MAX)),
            _ => (f64::MIN, f64::MAX),
        }
    }

    /// Checks `uniform_`'s bounds for `dtype` and returns them clamped to the dtype's range
    /// (errors: integer dtypes, bounds outside the dtype, `from > to`, `to - from` overflowing).
    pub fn check_uniform(dtype: ScalarType, from: f64, to: f64) -> Result<(f64, f64)> {
        if !dtype.is_floating_point() {
            return Err(not_implemented_for("check_uniform_bounds", dtype));
        }
        let (min, max) = float_range(dtype);
        let name = dtype.type_meta_name();
        torch_check!(
            from >= min && from <= max,
            "from is out of bounds for {name}"
        );
        torch_check!(to >= min && to <= max, "to is out of bounds for {name}");
        torch_check!(
            from <= to,
            "uniform_ expects to return a [from, to) range, but found from={} > to={}",
            fmt_g(from),
            fmt_g(to)
        );
        torch_check!(
            to - from <= max,
            "uniform_ expects to-from <= std::numeric_limits<{dtype}>::max(), but found to={} and from={} which result in to-from to exceed the limit",
            fmt_g(to),
            fmt_g(from)
        );
        Ok((from.clamp(min, max), to.clamp(min, max)))
    }

    /// Checks `normal_`'s standard deviation.
    pub fn check_normal_std(std: f64) -> Result<()> {
        torch_check!(
            std >= 0.0,
            "normal expects std >= 0.0, but found std {}",
            fmt_g(std)
        );
        Ok(())
    }

    /// Checks that `normal_` supports `dtype` (floating dtypes only).
    pub fn check_normal_dtype(dtype: ScalarType) -> Result<()> {
        if dtype.is_floating_point() {
            Ok(())
        } else {
            Err(not_implemented_for("normal_kernel_cpu", dtype))
        }
    }

    /// Checks `bernoulli_`'s probability.
    pub fn check_bernoulli_p(p: f64) -> Result<()> {
        torch_check!(
            (0.0..=1.0).contains(&p),
            "bernoulli_ expects p to be in [0, 1], but got p={}",
            fmt_g(p)
        );
        Ok(())
    }

    /// `random_(from, to)`'s range and base for `dtype` (PyTorch's `random_from_to_impl`
    /// checks, including the adjustment of bounds not representable in a float dtype).
    pub fn random_from_to(dtype: ScalarType, from: i64, to: i64) -> Result<(u64, i64)> {
        torch_check!(
            from < to,
            "random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"
        );
        let (mut from, mut to) = (from, to);
        if dtype.is_floating_point() {
            let digits = float_digits(dtype);
            from = update_from(from, dtype, digits);
            to = update_to(to, dtype, digits);
            torch_check!(
                from < to,
                "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from={from} >= to={to}"
            );
        }
        let to_inc = to - 1;
        let name = dtype.type_meta_name();
        let in_range = |v: i64| -> bool {
            if dtype.is_floating_point() {
                let (min, max) = float_range(dtype);
                (min..=max).contains(&(v as f64))
            } else {
                let (min, max) = int_range(dtype);
                (min..=max).contains(&v)
            }
        };
        torch_check!(in_range(from), "from is out of bounds for {name}");
        torch_check!(in_range(to_inc), "to - 1 is out of bounds for {name}");
        if dtype.is_floating_point() {
            let digits = float_digits(dtype);
            for (v, what) in [(from, "from"), (to_inc, "to - 1")] {
                let limit = 1i64 << digits;
                if v < -limit || v > limit {
                    switchyard_dispatch::warnings::warn(format!(
                        "{what} is out of bounds [-{limit}, {limit}] for {name}. Some values are not exactly representable in this dtype."
                    ));
                }
            }
        }
        Ok(((to as u64).wrapping_sub(from as u64), from))
    }

    /// `random_(from, to)` on a CPU tensor (what `randint` needs; the operator set has no
    /// `random_`): every element becomes `draw % range + from`, drawn from `generator`'s
    /// mt19937 stream in TensorIterator order as PyTorch's `random_from_to_kernel` does (64-bit
    /// draws when the range needs them and the dtype is `Long` or floating).
    pub fn random_fill(t: &Tensor, from: i64, to: i64, generator: &Generator) -> Result<()> {
        let (range, base) = random_from_to(t.dtype(), from, to)?;
        if t.numel() == 0 {
            return Ok(());
        }
        torch_check!(
            t.is_cpu(),
            "random_fill needs a CPU tensor, got one on {}",
            t.device()
        );
        let (sizes, strides) = (t.sizes(), t.strides());
        let order = stride_order(&sizes, &[&strides]);
        let wide = matches!(
            t.dtype(),
            ScalarType::Long | ScalarType::Double | ScalarType::Float | ScalarType::BFloat16
        ) && range >= 1u64 << 32;
        let mut state = generator.lock();
        let offsets = ordered_offsets(&sizes, &strides, t.storage_offset(), &order)?;
        switchyard_core::dispatch_dtype!(t.dtype(), T => {
            with_tensors(&[(t, Access::Write)], |data| {
                let bytes = data.bytes_mut(0)?;
                for o in &offsets {
                    let draw = if wide { state.random64() } else { u64::from(state.random()) };
                    let v = (draw % range.max(1)).wrapping_add(base as u64) as i64;
                    let ok = usize::try_from(*o).is_ok_and(|o| write_element(bytes, o, T::from_i64_lossy(v)));
                    torch_check!(ok, "internal error: random_fill outside the tensor's storage");
                }
                Ok(())
            })
        })
    }

    /// Storage offsets of every element, visiting dimensions in `order` (fastest first).
    fn ordered_offsets(
        sizes: &[i64],
        strides: &[i64],
        offset: i64,
        order: &[usize],
    ) -> Result<Vec<i64>> {
        let dims: Vec<usize> = order.iter().rev().copied().collect();
        let n: i64 = sizes.iter().product();
        let mut out = switchyard_core::alloc::try_with_capacity(usize::try_from(n).unwrap_or(0))?;
        let mut index = vec![0i64; dims.len()];
        let mut current = offset;
        for _ in 0..n {
            out.push(current);
            for k in (0..dims.len()).rev() {
                let d = dims[k];
                index[k] += 1;
                current += strides[d];
                if index[k] < sizes[d] {
                    break;
                }
                current -= strides[d] * sizes[d];
                index[k] = 0;
            }
        }
        Ok(out)
    }

    fn float_digits(dtype: ScalarType) -> u32 {
        match dtype {
            ScalarType::Half => 11,
            ScalarType::BFloat16 => 8,
            ScalarType::Float => 24,
            _ => 53,
        }
    }

    fn int_range(dtype: ScalarType) -> (i64, i64) {
        match dtype {
            ScalarType::Bool => (0, 1),
            ScalarType::Byte => (0, 255),
            ScalarType::Char => (-128, 127),
            ScalarType::Short => (-32768, 32767),
            ScalarType::Int => (i64::from(i32::MIN), i64::from(i32::MAX)),
            _ => (i64::MIN, i64::MAX),
        }
    }

    /// `static_cast<int64_t>(static_cast<T>(v))` for a float dtype with `digits` mantissa bits.
    fn through_float(v: i64, dtype: ScalarType) -> i64 {
        match dtype {
            ScalarType::Half => switchyard_core::half::f16::from_f64(v as f64).to_f64() as i64,
            ScalarType::BFloat16 => switchyard_core::half::bf16::from_f64(v as f64).to_f64() as i64,
            ScalarType::Float => (v as f32) as i64,
            _ => (v as f64) as i64,
        }
    }

    fn bit_length_minus_one(mut v: i64) -> i64 {
        let mut n = 0;
        v >>= 1;
        while v != 0 {
            n += 1;
            v >>= 1;
        }
        n
    }

    fn update_from(from: i64, dtype: ScalarType, digits: u32) -> i64 {
        let from_plus_1 = through_float(from.wrapping_add(1), dtype);
        if from_plus_1 < from {
            let n = bit_length_minus_one(from.wrapping_add(1).wrapping_abs());
            return from_plus_1.wrapping_add(1i64.wrapping_shl((n - i64::from(digits) + 1) as u32));
        }
        from
    }

    fn update_to(to: i64, dtype: ScalarType, digits: u32) -> i64 {
        let to_minus_1 = through_float(to.wrapping_sub(1), dtype);
        if to_minus_1 >= to {
            let n = bit_length_minus_one(to.wrapping_sub(1).wrapping_abs());
            return to_minus_1.wrapping_sub(1i64.wrapping_shl((n - i64::from(digits) + 1) as u32));
        }
        to
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn doubles_print_like_cpp_streams() {
            assert_eq!(fmt_g(2.0), "2");
            assert_eq!(fmt_g(0.1), "0.1");
            assert_eq!(fmt_g(-0.05), "-0.05");
            assert_eq!(fmt_g(3e38), "3e+38");
            assert_eq!(fmt_g(1.7e308), "1.7e+308");
            assert_eq!(fmt_g(1e-7), "1e-07");
            assert_eq!(fmt_g(123456.7), "123457");
            assert_eq!(fmt_g(1234567.0), "1.23457e+06");
            assert_eq!(fmt_g(0.0001), "0.0001");
            assert_eq!(fmt_g(f64::NAN), "nan");
            assert_eq!(fmt_g(f64::NEG_INFINITY), "-inf");
        }

        #[test]
        fn arange_sizes() {
            let s = |a: f64, b: f64, c: f64| {
                arange_size(
                    Scalar::Float(a),
                    Scalar::Float(b),
                    Scalar::Float(c),
                    ScalarType::Float,
                )
            };
            assert_eq!(s(0.0, 1.0, 0.1).unwrap(), 10);
            assert_eq!(
                s(0.0, 1.0, -0.1).unwrap_err().message(),
                "upper bound and lower bound inconsistent with step sign"
            );
            assert_eq!(
                s(0.0, 1.0, 0.0).unwrap_err().message(),
                "step must be nonzero"
            );
            let i = |a: i64, b: i64, c: i64| {
                arange_size(
                    Scalar::Int(a),
                    Scalar::Int(b),
                    Scalar::Int(c),
                    ScalarType::Long,
                )
                .unwrap()
            };
            assert_eq!(i(0, 1_000_000_000_000_000_001, 100_000_000_000_000_000), 11);
            assert_eq!(i(10, 0, -3), 4);
        }
    }
}
