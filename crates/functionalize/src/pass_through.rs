//! Typed kernels at `Functionalize` for functional operators (plan §7.4's fast path): what the
//! boxed fallback does for them (sync and unwrap the inputs, call below the layer, wrap the
//! outputs) without boxing the arguments. The generator emits one per functional operator of a
//! mutation group (`crates/codegen/src/emit/functionalize.rs`); every step is a call into the
//! non-generic [`PassThrough`], so each kernel is a few lines.
//!
//! A call whose inputs need the fallback's rarer work (a functional input whose value has
//! another layout than the eager program's, so the outputs' eager strides come from a meta
//! shadow run) goes through the fallback itself ([`PassThrough::boxed`]).

use crate::fallback::functionalize_fallback;
use crate::tensor::{functional_payload, unwrap_current, wrap_output};
use switchyard_core::{DispatchKeySet, Result, Tensor};
use switchyard_dispatch::{Operator, call_boxed_typed};

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

    /// The output of the call below the layer, wrapped if some input was functional (a call
    /// on plain tensors inside a functionalized region stays plain, as in the fallback).
    #[inline]
    pub(crate) fn wrap(&self, out: Tensor) -> Result<Tensor> {
        if self.any_functional {
            wrap_output(out)
        } else {
            Ok(out)
        }
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
