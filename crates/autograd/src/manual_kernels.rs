//! The kernels torchgen leaves to hand-written code (`VariableTypeManual.cpp`): `copy_`,
//! `detach`, `detach_` and `resize_` at the Autograd key, and `detach` / `detach_` at the
//! ADInplaceOrView key. The generator skips them (`MANUAL_AUTOGRAD`,
//! `MANUAL_INPLACE_OR_VIEW` in `switchyard_codegen::emit::autograd`).

use std::any::Any;
use std::sync::Arc;
use switchyard_core::keys::sets;
use switchyard_core::local_dispatch::{
    auto_dispatch_below_ad_inplace_or_view, auto_dispatch_below_autograd, is_grad_enabled,
};
use switchyard_core::{
    Device, DispatchKey, DispatchKeySet, Error, MemoryFormat, Result, ScalarType, Tensor,
};
use switchyard_dispatch::{Dispatcher, Kernel, Library, LibraryKind};
use switchyard_ops::op;

use crate::graph::{Grad, Node, NodeCore};
use crate::meta;
use crate::support::{edge, rg};
use crate::view::{CreationMeta, as_view, check_inplace, is_view, rebase_history};

/// The backward of `copy_` (PyTorch's `CopyBackwards`): `self`'s old value gets no gradient,
/// `src` gets the gradient in its own dtype and device (summed down to its shape by the
/// engine when `src` was broadcast).
pub struct CopyBackwards {
    core: NodeCore,
    src_dtype: ScalarType,
    src_device: Device,
}

impl Node for CopyBackwards {
    fn name(&self) -> String {
        "torch::autograd::CopyBackwards".into()
    }

    fn core(&self) -> &NodeCore {
        &self.core
    }

    fn apply(self: Arc<Self>, grads: Vec<Grad>) -> Result<Vec<Grad>> {
        let mut out: Vec<Grad> = vec![None, None];
        let Some(Some(grad)) = grads.first() else {
            return Ok(out);
        };
        if self.core.should_compute_output(0) {
            out[0] = Some(op::zeros_like::call(
                grad,
                None,
                None,
                None,
                None,
                Some(MemoryFormat::Contiguous),
            )?);
        }
        if self.core.should_compute_output(1) {
            out[1] = Some(op::_to_copy::call(
                grad,
                Some(self.src_dtype),
                None,
                Some(self.src_device),
                None,
                false,
                None,
            )?);
        }
        Ok(out)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn autograd_copy_(
    ks: DispatchKeySet,
    (self_, src, non_blocking): (&Tensor, &Tensor, bool),
) -> Result<Tensor> {
    let requires_grad =
        is_grad_enabled() && (rg(self_) || rg(src)) && self_.dtype().is_floating_point();
    check_inplace(self_, requires_grad)?;
    let node = if requires_grad {
        Some(CopyBackwards {
            core: NodeCore::new([edge(self_)?, edge(src)?], []),
            src_dtype: src.dtype(),
            src_device: src.device(),
        })
    } else {
        None
    };
    let result = {
        let _guard = auto_dispatch_below_autograd();
        op::copy_::redispatch(ks & sets::AFTER_AUTOGRAD, self_, src, non_blocking)?
    };
    if let Some(mut node) = node {
        node.core.add_input_metadata(self_);
        rebase_history(self_, Arc::new(node))?;
    }
    Ok(result)
}

fn autograd_detach(ks: DispatchKeySet, (self_,): (&Tensor,)) -> Result<Tensor> {
    let _guard = auto_dispatch_below_autograd();
    op::detach::redispatch(ks & sets::AFTER_AUTOGRAD, self_)
}

fn inplace_or_view_detach(ks: DispatchKeySet, (self_,): (&Tensor,)) -> Result<Tensor> {
    let out = {
        let _guard = auto_dispatch_below_ad_inplace_or_view();
        op::detach::redispatch(ks & sets::AFTER_AD_INPLACE_OR_VIEW, self_)?
    };
    // A view that cuts the graph: shares memory and version, records no base.
    as_view(self_, out, false, CreationMeta::current())
}

fn autograd_detach_(ks: DispatchKeySet, (self_,): (&Tensor,)) -> Result<Tensor> {
    if is_view(self_) {
        return Err(Error::runtime(
            "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.",
        ));
    }
    let result = {
        let _guard = auto_dispatch_below_autograd();
        op::detach_::redispatch(ks & sets::AFTER_AUTOGRAD, self_)?
    };
    if let Some(m) = meta::get(self_) {
        let mut st = m.lock();
        m.set_grad_fn(&mut st, None, 0);
    }
    self_.set_requires_grad(false)?;
    Ok(result)
}

fn inplace_or_view_detach_(ks: DispatchKeySet, (self_,): (&Tensor,)) -> Result<Tensor> {
    // Detaching changes no data: no version bump.
    let _guard = auto_dispatch_below_ad_inplace_or_view();
    op::detach_::redispatch(ks & sets::AFTER_AD_INPLACE_OR_VIEW, self_)
}

fn autograd_resize_(
    ks: DispatchKeySet,
    (self_, size, memory_format): (&Tensor, &[i64], Option<MemoryFormat>),
) -> Result<Tensor> {
    if crate::view::requires_grad(self_) {
        return Err(Error::runtime("cannot resize variables that require grad"));
    }
    let _guard = auto_dispatch_below_autograd();
    op::resize_::redispatch(ks & sets::AFTER_AUTOGRAD, self_, size, memory_format)
}

/// Registers the hand-written kernels.
pub(crate) fn register(d: &'static Dispatcher) -> Result<()> {
    let mut lib = Library::new_on(d, LibraryKind::Impl, "aten", Some(DispatchKey::Autograd))?;
    lib.impl_(
        "copy_",
        Kernel::typed::<op::copy_>(autograd_copy_).debug("autograd_copy_ (manual)"),
    )?;
    lib.impl_(
        "detach",
        Kernel::typed::<op::detach>(autograd_detach).debug("autograd_detach (manual)"),
    )?;
    lib.impl_(
        "detach_",
        Kernel::typed::<op::detach_>(autograd_detach_).debug("autograd_detach_ (manual)"),
    )?;
    lib.impl_(
        "resize_",
        Kernel::typed::<op::resize_>(autograd_resize_).debug("autograd_resize_ (manual)"),
    )?;
    lib.leak();
    let mut lib = Library::new_on(
        d,
        LibraryKind::Impl,
        "aten",
        Some(DispatchKey::ADInplaceOrView),
    )?;
    lib.impl_(
        "detach",
        Kernel::typed::<op::detach>(inplace_or_view_detach)
            .debug("inplace_or_view_detach (manual)"),
    )?;
    lib.impl_(
        "detach_",
        Kernel::typed::<op::detach_>(inplace_or_view_detach_)
            .debug("inplace_or_view_detach_ (manual)"),
    )?;
    lib.leak();
    Ok(())
}
