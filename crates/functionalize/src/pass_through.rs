//! Typed kernels at `Functionalize` for functional operators (plan §7.4's fast path): what the
//! boxed fallback does for them (sync and unwrap the inputs, call below the layer, wrap the
//! outputs) without boxing the arguments. The generator emits one per functional operator of a
//! mutation group (`crates/codegen/src/emit/functionalize.rs`); every step is a call into the
//! non-generic [`PassThrough`], so each kernel is a few lines.
//!
//! A call whose inputs need the fallback's rarer work (a functional input whose value has
//! another layout than the eager program's, so the outputs' eager strides come from a meta
//! shadow run) goes through the fallback itself ([`PassThrough::boxed`]), unless the operator
//! is structured and its meta function, run on the wrappers, gives contiguous outputs.

use crate::fallback::functionalize_fallback;
use crate::tensor::{below, functional_payload, unwrap_current, wrap_output};
use switchyard_core::shape::contiguous_strides;
use switchyard_core::{DispatchKeySet, MemoryFormat, Result, Tensor};
use switchyard_dispatch::{Operator, call_boxed_typed};
use switchyard_ops::op;
use switchyard_ops::structured::Meta;

/// The inputs seen so far by one pass-through call.
#[derive(Default)]
pub(crate) struct PassThrough {
    any_functional: bool,
    layout_differs: bool,
}

impl PassThrough {
    /// `t` unwrapped (its up-to-date value) if functional, else `t`.
    #[inline]
    pub(crate) fn arg(&mut self, t: &Tensor) -> Result<Tensor> {
        let Some(ft) = functional_payload(t) else {
            return Ok(t.clone());
        };
        self.any_functional = true;
        let (value, differs) = unwrap_current(t, ft)?;
        self.layout_differs |= differs;
        Ok(value)
    }

    /// [`PassThrough::arg`] of a `Tensor?`.
    #[inline]
    pub(crate) fn opt_arg(&mut self, t: Option<&Tensor>) -> Result<Option<Tensor>> {
        t.map(|t| self.arg(t)).transpose()
    }

    /// Whether the call must take the fallback's path ([`PassThrough::boxed`]).
    #[inline]
    pub(crate) fn needs_fallback(&self) -> bool {
        self.layout_differs
    }

    /// Whether a structured operator's meta function, run on the wrappers, lays every output
    /// out contiguously: then a call whose inputs' values differ in layout from their wrappers
    /// still takes this path ([`PassThrough::wrap`] gives the outputs eager's contiguous
    /// layout), not the fallback's shadow run. A refusal goes to the fallback, which reports
    /// the operator's own error.
    pub(crate) fn eager_outputs_contiguous<P>(meta: &Result<Meta<P>>) -> bool {
        matches!(meta, Ok(m) if m.outputs.iter().all(|o| o.strides.is_none()))
    }

    /// The output of the call below the layer, wrapped if some input was functional (a call
    /// on plain tensors inside a functionalized region stays plain, as in the fallback).
    /// After inputs of another layout (checked: eager's output is contiguous), the output is
    /// laid out contiguously as the fallback's shadow run would lay it out: the value copied if
    /// it is not, the wrapper given eager's exact contiguous geometry.
    #[inline]
    pub(crate) fn wrap(&self, out: Tensor) -> Result<Tensor> {
        if !self.any_functional {
            return Ok(out);
        }
        if !self.layout_differs {
            return wrap_output(out);
        }
        let out = if out.is_contiguous() {
            out
        } else {
            let _below = below();
            op::clone::call(&out, Some(MemoryFormat::Contiguous))?
        };
        let wrapper = wrap_output(out)?;
        let sizes = wrapper.sizes();
        // Wrappers have no storage, so no bounds to break: this cannot fail.
        let _ = wrapper.set_geometry(&sizes, &contiguous_strides(&sizes), 0);
        Ok(wrapper)
    }

    /// The call through the boxed fallback, arguments as received.
    #[cold]
    pub(crate) fn boxed<O: Operator>(
        ks: DispatchKeySet,
        args: <O as switchyard_dispatch::OpSignature>::Args<'_>,
    ) -> Result<<O as switchyard_dispatch::OpSignature>::Output> {
        let handle = O::typed_handle()?;
        call_boxed_typed::<O>(functionalize_fallback, &handle.handle(), ks, args)
    }
}
