//! The `functionalize` transform (plan §5.1, A.9 of the reference note): runs a program on
//! functional wrappers of its inputs, so that every view and mutation inside it goes through
//! the layer, then writes the input mutations back to the caller's tensors and returns plain
//! outputs.

use crate::tensor::{from_functional, is_functional, sync, to_functional};
use crate::view_meta::ReapplyViewsGuard;
use std::fmt;
use std::str::FromStr;
use switchyard_core::local_dispatch::{
    IncludeDispatchKeyGuard, auto_dispatch_skip_functionalize, tls_is_dispatch_key_included,
};
use switchyard_core::{DispatchKey, Error, Result, Tensor};
use switchyard_ops::TensorOps;

/// What [`functionalize`] removes from a program (PyTorch's `remove=` argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Remove {
    /// In-place and out= operators are replaced by their out-of-place equivalents; views stay
    /// views (`remove='mutations'`, views reapplied).
    Mutations,
    /// As [`Remove::Mutations`], and every view operator is replaced by its non-aliasing
    /// `*_copy` counterpart (`remove='mutations_and_views'`).
    MutationsAndViews,
}

impl Remove {
    /// The name PyTorch gives the mode (`"mutations"`, `"mutations_and_views"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Remove::Mutations => "mutations",
            Remove::MutationsAndViews => "mutations_and_views",
        }
    }

    /// Whether view kernels keep views as views in this mode.
    pub fn reapply_views(self) -> bool {
        self == Remove::Mutations
    }
}

impl fmt::Display for Remove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Remove {
    type Err = Error;

    /// Parses `"mutations"` or `"mutations_and_views"`; anything else is PyTorch's error
    /// listing the two valid values.
    fn from_str(s: &str) -> Result<Remove> {
        match s {
            "mutations" => Ok(Remove::Mutations),
            "mutations_and_views" => Ok(Remove::MutationsAndViews),
            other => Err(crate::errors::invalid_remove(other)),
        }
    }
}

/// Runs `f` on functional wrappers of `inputs` and returns its outputs unwrapped (plan §5.1,
/// A.9): the functionalized run of `f`, with the caller's tensors changed as `f` would have
/// changed them eagerly.
///
/// Steps: set the reapply-views flag for `remove`; include the `Functionalize` key for the
/// call (so tensors `f` creates with factories are wrapped too); wrap every input (the
/// wrapper's value is the caller's tensor object itself); run `f`; drop the include; then for
/// every input, in order, sync its wrapper and, if its value is no longer the caller's tensor,
/// write the mutation back: `resize_` if the element count changed, `as_strided_` to the
/// wrapper's geometry if the layout changed (a metadata mutation such as `transpose_`), and
/// `copy_` of the new value. The caller's version counter moves as eager's does: the wrapper
/// shares it, so the program's own changes move it, and the write-back itself runs below
/// autograd (no bump) unless the tensor is a non-leaf requiring grad. Last, every output is synced and unwrapped;
/// plain outputs pass through.
///
/// The wrappers carry the eager geometry (plan §2.4), so a metadata mutation of an input
/// (`transpose_`, `resize_`) is written back with eager's sizes, strides and offset in both
/// modes.
///
/// Errors: a call inside a functionalized region (or on functional inputs) is refused
/// ("nested functionalize() is not supported"); an error of `f` is returned as is, before any
/// write-back. The thread-local state set for the call (included key, reapply flag) is held by
/// guards and restored on every path.
pub fn run_functionalized(
    f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    inputs: &[Tensor],
    remove: Remove,
) -> Result<Vec<Tensor>> {
    if tls_is_dispatch_key_included(DispatchKey::Functionalize) || inputs.iter().any(is_functional)
    {
        return Err(crate::errors::nested_functionalize());
    }
    let _reapply = ReapplyViewsGuard::new(remove.reapply_views());
    let (wrapped, outputs) = {
        let _include = IncludeDispatchKeyGuard::new(DispatchKey::Functionalize);
        let wrapped = inputs
            .iter()
            .map(|x| {
                let w = to_functional(x)?;
                crate::autograd::connect_input(x, &w)?;
                Ok(w)
            })
            .collect::<Result<Vec<_>>>()?;
        let outputs = f(&wrapped)?;
        (wrapped, outputs)
    };
    for (orig, w) in inputs.iter().zip(&wrapped) {
        write_back(orig, w)?;
    }
    outputs
        .iter()
        .map(|o| {
            if is_functional(o) {
                sync(o)?;
                crate::autograd::connect_output(o, from_functional(o)?)
            } else {
                Ok(Clone::clone(o))
            }
        })
        .collect()
}

/// Writes the mutations of wrapper `w` back to `orig`, the caller's tensor it wraps (A.9
/// `propagate_input_mutation`, with the wrapper's eager geometry as the target layout).
fn write_back(orig: &Tensor, w: &Tensor) -> Result<()> {
    if !is_functional(w) {
        // A wrapped number is never wrapped.
        return Ok(());
    }
    sync(w)?;
    let value = from_functional(w)?;
    if value.is_same(orig) {
        // Neither data nor metadata changed.
        return Ok(());
    }
    let _skip = auto_dispatch_skip_functionalize();
    // Each change the program made moved the caller's version counter already (the wrapper
    // shares it, and autograd's in-place kernels bump it above the layer), as eager's changes
    // did. So the write-back runs below autograd, without another bump (which would invalidate
    // the tensors the program saved for backward, e.g. batch norm's running statistics), for
    // a tensor that does not require grad (no history to record) and for a leaf that does, or
    // a view of one (changed under `no_grad` only: with grad mode on the change was refused).
    // Only a non-leaf requiring grad is written back above autograd (data, not history: §7.3).
    let without_grad = !orig.requires_grad() || crate::autograd::write_back_without_grad(w);
    let _below = without_grad.then(crate::tensor::below);
    // A trace tags these calls, so that `Graph::mutating_nodes` leaves them out.
    let _tag = crate::trace::write_back_scope();
    let target = w.geometry();
    if orig.numel() != w.numel() {
        orig.resize_(target.sizes())?;
    }
    if orig.geometry() != target {
        orig.as_strided__with(
            target.sizes(),
            target.strides(),
            Some(target.storage_offset()),
        )?;
    }
    orig.copy_(&value)?;
    Ok(())
}

/// `f` as a functionalized program: each call runs [`run_functionalized`]`(f, inputs, remove)`.
///
/// ```
/// use switchyard_core::Tensor;
/// use switchyard_cpu as _;
/// use switchyard_functionalize::{Remove, functionalize};
/// use switchyard_ops::TensorOps;
///
/// // Adds one to a view of `x` in place and returns the view.
/// let g = functionalize(
///     |x: &[Tensor]| {
///         let y = x[0].view(&[2, 2])?;
///         y.add_scalar_(1.0)?;
///         Ok(vec![y])
///     },
///     Remove::MutationsAndViews,
/// );
/// let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let out = g(&[Clone::clone(&x)])?;
/// assert_eq!(out[0].sizes().as_slice(), &[2, 2]);
/// assert_eq!(out[0].to_vec::<f32>()?, vec![2.0, 3.0, 4.0, 5.0]);
/// // The mutation was written back to the caller's tensor.
/// assert_eq!(x.to_vec::<f32>()?, vec![2.0, 3.0, 4.0, 5.0]);
/// assert_eq!("mutations_and_views".parse::<Remove>()?, Remove::MutationsAndViews);
/// # Ok::<(), switchyard_core::Error>(())
/// ```
pub fn functionalize<F>(f: F, remove: Remove) -> impl Fn(&[Tensor]) -> Result<Vec<Tensor>>
where
    F: Fn(&[Tensor]) -> Result<Vec<Tensor>>,
{
    move |inputs: &[Tensor]| run_functionalized(&f, inputs, remove)
}
