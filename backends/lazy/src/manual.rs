//! The hand-written kernels (`supported` in backend.yaml; B.6, plan §3.3). Every other item
//! of the trait is a generated trace kernel (its default body).

#![allow(non_snake_case)]

use switchyard_core::local_dispatch::tls_is_dispatch_key_excluded;
use switchyard_core::{
    Device, DeviceType, DispatchKey, Error, Layout, MemoryFormat, Result, ScalarType, Tensor,
};
use switchyard_functionalize as functionalize;
use switchyard_ops::op;

use crate::generated::LazyNativeFunctions;
use crate::ir::{Attr, Shape};
use crate::metrics::counter_add;
use crate::tensor::{
    create_from_ir, create_from_tensor, get_ltc_tensor, try_get_ltc_tensor, value_copy,
};
use crate::trace::{NodeBuilder, meta_guard, shapes_of_tensors};

/// The lazy backend's kernels.
pub struct Lazy;

/// A lazy device from an optional device argument: `lazy` without an index is `lazy:0`, the
/// current lazy device, as PyTorch's device guard makes it (`x.to("lazy").device` is
/// `device(type='lazy', index=0)`).
fn lazy_device(device: Option<Device>) -> Device {
    match device {
        Some(d) if d.kind() == DeviceType::Lazy && d.index().is_some() => d,
        _ => crate::device(),
    }
}

/// Wraps a new plain lazy tensor as a functional tensor (B.11: factories and moves to the
/// device enter functionalization), unless the layer is excluded on this thread (a call made
/// from below it, such as the fallback moving results back).
fn maybe_wrap(t: Tensor) -> Result<Tensor> {
    if tls_is_dispatch_key_excluded(DispatchKey::Functionalize) {
        Ok(t)
    } else {
        functionalize::to_functional(&t)
    }
}

/// A CPU tensor with `dst`'s sizes, strides and dtype holding `src` (cast and broadcast as
/// `copy_` does).
fn cpu_like(dst: &Tensor, src: &Tensor) -> Result<Tensor> {
    let g = dst.geometry();
    let t = op::empty_strided::call(
        g.sizes(),
        g.strides(),
        Some(dst.dtype()),
        None,
        Some(Device::CPU),
        None,
    )?;
    op::copy_::call(&t, src, false)?;
    Ok(t)
}

impl Lazy {
    /// `self` → `dst` where `dst` is lazy and `self` is anything: eager data for a CPU
    /// source, an IR-level `copy` for a lazy one.
    fn copy_into_lazy(self_: &Tensor, dst: &Tensor) -> Result<()> {
        let dst_lt = get_ltc_tensor(dst)?;
        match try_get_ltc_tensor(self_)? {
            None => {
                // Eager → lazy: a private copy, so later writes to the source are not seen.
                dst_lt.set_tensor_data(cpu_like(dst, self_)?);
            }
            Some(_) => {
                let r = <Lazy as LazyNativeFunctions>::copy(dst, self_, false)?;
                let ir = get_ltc_tensor(&r)?.ir_value()?;
                dst_lt.set_ir_value(ir);
            }
        }
        Ok(())
    }
}

impl LazyNativeFunctions for Lazy {
    fn clone(self_: &Tensor, memory_format: Option<MemoryFormat>) -> Result<Tensor> {
        counter_add("lazy::clone", 1);
        let lt = get_ltc_tensor(self_)?;
        let shape = lt.shape();
        // All lazy operators are functional: a clone shares the IR value, unless it asks for
        // another layout than the value has (`contiguous()` of a transposed value, which a
        // `view` then relies on): then it is a `_to_copy` to that memory format.
        let relayout = match memory_format {
            None | Some(MemoryFormat::Preserve) => false,
            // Exactly the contiguous strides, as eager's clone gives them (a size-1 dimension's
            // stride too: `[2, 7, 1]` of sizes `[3, 1, 2]` becomes `[2, 2, 1]`).
            Some(MemoryFormat::Contiguous) => {
                shape.strides.as_slice()
                    != switchyard_core::shape::contiguous_strides(&shape.sizes).as_slice()
            }
            Some(_) => true,
        };
        if relayout {
            return <Lazy as LazyNativeFunctions>::_to_copy(
                self_,
                None,
                None,
                None,
                None,
                false,
                memory_format,
            );
        }
        create_from_ir(lt.ir_value()?, lt.device())
    }

    fn _copy_from(self_: &Tensor, dst: &Tensor, _non_blocking: bool) -> Result<Tensor> {
        counter_add("lazy::_copy_from", 1);
        if dst.device().kind() == DeviceType::Lazy {
            Lazy::copy_into_lazy(self_, dst)?;
        } else {
            // Lazy → eager: materialise (a graph break), then copy with the CPU's rules.
            let lt = get_ltc_tensor(self_)?;
            let value = lt.to_tensor()?;
            op::copy_::call(dst, &value, false)?;
        }
        Ok(dst.clone())
    }

    fn _copy_from_and_resize(self_: &Tensor, dst: &Tensor) -> Result<Tensor> {
        counter_add("lazy::_copy_from_and_resize", 1);
        if dst.device().kind() == DeviceType::Lazy {
            let g = self_.geometry();
            if dst.geometry().sizes() != g.sizes() {
                let shape = Shape::contiguous(self_.dtype(), g.sizes());
                dst.set_geometry(&shape.sizes, &shape.strides, 0)?;
            }
            Lazy::copy_into_lazy(self_, dst)?;
            Ok(dst.clone())
        } else {
            let lt = get_ltc_tensor(self_)?;
            let value = lt.to_tensor()?;
            op::resize_::call(dst, value.geometry().sizes(), None)?;
            op::copy_::call(dst, &value, false)?;
            Ok(dst.clone())
        }
    }

    fn empty_memory_format(
        size: &[i64],
        dtype: Option<ScalarType>,
        layout: Option<Layout>,
        device: Option<Device>,
        pin_memory: Option<bool>,
        memory_format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        counter_add("lazy::empty", 1);
        let t = op::empty_memory_format::call(
            size,
            dtype,
            layout,
            Some(Device::CPU),
            pin_memory,
            memory_format,
        )?;
        maybe_wrap(create_from_tensor(t, lazy_device(device))?)
    }

    fn empty_strided(
        size: &[i64],
        stride: &[i64],
        dtype: Option<ScalarType>,
        layout: Option<Layout>,
        device: Option<Device>,
        pin_memory: Option<bool>,
    ) -> Result<Tensor> {
        counter_add("lazy::empty_strided", 1);
        let t =
            op::empty_strided::call(size, stride, dtype, layout, Some(Device::CPU), pin_memory)?;
        maybe_wrap(create_from_tensor(t, lazy_device(device))?)
    }

    fn new_empty_strided(
        self_: &Tensor,
        size: &[i64],
        stride: &[i64],
        dtype: Option<ScalarType>,
        layout: Option<Layout>,
        device: Option<Device>,
        pin_memory: Option<bool>,
    ) -> Result<Tensor> {
        counter_add("lazy::new_empty_strided", 1);
        let t = op::empty_strided::call(
            size,
            stride,
            Some(dtype.unwrap_or(self_.dtype())),
            layout,
            Some(Device::CPU),
            pin_memory,
        )?;
        let device = lazy_device(device.or(Some(self_.device())));
        maybe_wrap(create_from_tensor(t, device)?)
    }

    fn _to_copy(
        self_: &Tensor,
        dtype: Option<ScalarType>,
        layout: Option<Layout>,
        device: Option<Device>,
        pin_memory: Option<bool>,
        non_blocking: bool,
        memory_format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        counter_add("lazy::_to_copy", 1);
        let Some((_, lt)) = try_get_ltc_tensor(self_)? else {
            // Eager → lazy: copy to the options on the CPU, hold the copy as the value.
            let copy = op::_to_copy::call(
                self_,
                dtype,
                layout,
                Some(Device::CPU),
                pin_memory,
                non_blocking,
                memory_format,
            )?;
            let copy = if copy.is_same(self_) {
                op::clone::call(self_, None)?
            } else {
                copy
            };
            return maybe_wrap(create_from_tensor(copy, lazy_device(device))?);
        };
        match device {
            Some(d) if d.kind() != DeviceType::Lazy => {
                // Lazy → eager: materialise (IR kept), then copy on the CPU.
                let value = lt.to_tensor()?;
                op::_to_copy::call(
                    &value,
                    dtype,
                    layout,
                    Some(d),
                    pin_memory,
                    non_blocking,
                    memory_format,
                )
            }
            _ => {
                // Lazy → lazy: a `_to_copy` node (the device argument dropped).
                let mut b = NodeBuilder::new(crate::generated::nodes::NODE__to_copy)?;
                b.tensor(self_)?;
                b.attr(Attr::from(dtype));
                b.attr(Attr::from(layout));
                b.attr(Attr::from(None::<Device>));
                b.attr(Attr::from(pin_memory));
                b.attr(Attr::from(non_blocking));
                b.attr(Attr::from(memory_format));
                if let Some(outs) = b.reuse()? {
                    return crate::trace::output(&outs, 0);
                }
                let out = {
                    let _guard = meta_guard();
                    op::_to_copy::call(
                        &b.shadow(self_)?,
                        dtype,
                        layout,
                        None,
                        pin_memory,
                        non_blocking,
                        memory_format,
                    )?
                };
                b.build_one(shapes_of_tensors(&[&out]))
            }
        }
    }

    fn _to_cpu(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
        counter_add("lazy::_to_cpu", 1);
        // A CPU tensor among them (an operator taking a CPU `values` or index beside lazy
        // tensors) is its own CPU copy, as `Tensor.cpu()` gives it back in PyTorch's `_to_cpu`.
        let lts = tensors
            .iter()
            .map(|t| {
                if t.device() == Device::CPU {
                    Ok(None)
                } else {
                    get_ltc_tensor(t).map(Some)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let lazy: Vec<_> = lts.iter().flatten().cloned().collect();
        // One execution for all of them (seed 000's batched transfer).
        crate::executor::sync_tensors(&lazy, false)?;
        tensors
            .iter()
            .zip(&lts)
            .map(|(t, lt)| match lt {
                Some(lt) => value_copy(lt),
                None => Ok(Clone::clone(t)),
            })
            .collect()
    }

    fn lift(self_: &Tensor) -> Result<Tensor> {
        counter_add("lazy::lift", 1);
        lift_impl("lift", self_)
    }

    fn lift_fresh(self_: &Tensor) -> Result<Tensor> {
        counter_add("lazy::lift_fresh", 1);
        lift_impl("lift_fresh", self_)
    }

    fn _unsafe_view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
        counter_add("lazy::_unsafe_view", 1);
        <Lazy as LazyNativeFunctions>::view_copy(self_, size)
    }
}

fn lift_impl(name: &str, self_: &Tensor) -> Result<Tensor> {
    if functionalize::is_functional(self_) {
        return Err(Error::runtime(format!(
            "{name}: expected a tensor that is not functional, but got a functional tensor"
        )));
    }
    maybe_wrap(self_.clone())
}
