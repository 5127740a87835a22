//! View-copy elision (plan §5.2 step 4): a `*_copy` whose result stays inside the program runs
//! as the view itself on its source's buffer. CPU kernels accept strided inputs and never
//! write their inputs, and the program writes a buffer in place only when nothing else holds
//! its storage (`scatter.rs`, `buffers.rs`: a live view counts), so the view sees the values
//! the copy would have held.

use switchyard_core::{Result, Tensor};
use switchyard_ops::op;

use crate::ir::NodeInfo;
use crate::trace::{LowerArgs, cpu_only};

/// The `*_copy` operators with a view counterpart (`as_strided_copy` is not one: its offset
/// is relative to a storage the source buffer need not start).
const VIEW_COPIES: [(&str, &str); 11] = [
    ("aten::view_copy", ""),
    ("aten::permute_copy", ""),
    ("aten::t_copy", ""),
    ("aten::transpose_copy", "int"),
    ("aten::expand_copy", ""),
    ("aten::slice_copy", "Tensor"),
    ("aten::select_copy", "int"),
    ("aten::unsqueeze_copy", ""),
    ("aten::squeeze_copy", "dim"),
    ("aten::alias_copy", ""),
    ("aten::detach_copy", ""),
];

/// Whether `info` is a `*_copy` this pass turns into a view.
pub(super) fn is_view_copy(info: &NodeInfo) -> bool {
    VIEW_COPIES
        .iter()
        .any(|(q, o)| *q == info.qualified && *o == info.overload)
}

/// The view a `*_copy` node's arguments describe, on the CPU tensor of its input.
pub(super) fn view(a: &LowerArgs<'_>) -> Result<Tensor> {
    let ks = cpu_only();
    let t = a.tensor(0)?;
    match a.info.qualified {
        "aten::view_copy" => op::view::redispatch(ks, &t, a.ints(1)?),
        "aten::permute_copy" => op::permute::redispatch(ks, &t, a.ints(1)?),
        "aten::t_copy" => op::t::redispatch(ks, &t),
        "aten::transpose_copy" => op::transpose_int::redispatch(ks, &t, a.int(1)?, a.int(2)?),
        "aten::expand_copy" => op::expand::redispatch(ks, &t, a.ints(1)?, a.bool(2)?),
        "aten::slice_copy" => {
            op::slice_Tensor::redispatch(ks, &t, a.int(1)?, a.opt_int(2)?, a.opt_int(3)?, a.int(4)?)
        }
        "aten::select_copy" => op::select_int::redispatch(ks, &t, a.int(1)?, a.int(2)?),
        "aten::unsqueeze_copy" => op::unsqueeze::redispatch(ks, &t, a.int(1)?),
        "aten::squeeze_copy" => op::squeeze_dim::redispatch(ks, &t, a.int(1)?),
        "aten::alias_copy" => op::alias::redispatch(ks, &t),
        "aten::detach_copy" => op::detach::redispatch(ks, &t),
        other => Err(switchyard_core::Error::runtime(format!(
            "internal error: {other} has no view counterpart"
        ))),
    }
}
