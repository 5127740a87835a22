//! Meta functions of structured linalg operators: `mm`, `addmm`, `bmm`, `baddbmm`.
//!
//! The checks and their order follow PyTorch's `LinearAlgebra.cpp`. Two deliberate moves:
//! PyTorch checks `mm`'s operand dtypes in the CPU impl and `addmm`'s `self` shape when the
//! impl expands it; here the dtype check runs at the end of the meta function (same order of
//! errors for every input) and the `self` expansion stays in the impl, as in PyTorch.

use crate::structured::{Meta, OutputSpec, Outs};
use switchyard_core::shape::fmt_dims;
use switchyard_core::{Result, Tensor, torch_check};

fn check_matrix(op: &str, t: &Tensor, name: &str) -> Result<()> {
    torch_check!(
        t.dim() == 2,
        "{op}: {name} must be a matrix, got {}-D tensor",
        t.dim()
    );
    Ok(())
}

fn check_mm_shapes(op: &str, a: &[i64], b: &[i64]) -> Result<()> {
    torch_check!(
        a[1] == b[0],
        "{op}: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
        a[0],
        a[1],
        b[0],
        b[1]
    );
    Ok(())
}

fn check_m1_m2_dtypes(a: &Tensor, b: &Tensor) -> Result<()> {
    torch_check!(
        a.dtype() == b.dtype(),
        "expected m1 and m2 to have the same dtype, but got: {} != {}",
        a.dtype().type_meta_name(),
        b.dtype().type_meta_name()
    );
    Ok(())
}

/// `mm(self, mat2)`: a `[n, k] @ [k, m]` product with `self`'s dtype.
pub fn mm(self_: &Tensor, mat2: &Tensor, outs: Outs<'_>) -> Result<Meta> {
    let _ = outs;
    check_matrix("mm", self_, "self")?;
    check_matrix("mm", mat2, "mat2")?;
    let (a, b) = (self_.sizes(), mat2.sizes());
    check_mm_shapes("mm", &a, &b)?;
    check_m1_m2_dtypes(self_, mat2)?;
    Ok(Meta::new(
        [OutputSpec::contiguous(
            &[a[0], b[1]],
            self_.dtype(),
            self_.device(),
        )],
        (),
    ))
}

/// `addmm(self, mat1, mat2, beta, alpha)`: `beta * self + alpha * (mat1 @ mat2)`; `self` is
/// expanded to the product's shape by the impl.
pub fn addmm(
    self_: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    beta: switchyard_core::Scalar,
    alpha: switchyard_core::Scalar,
    outs: Outs<'_>,
) -> Result<Meta> {
    torch_check!(
        self_.dtype() == mat2.dtype(),
        "self and mat2 must have the same dtype, but got {} and {}",
        self_.dtype(),
        mat2.dtype()
    );
    torch_check!(
        mat1.dtype() == mat2.dtype(),
        "mat1 and mat2 must have the same dtype, but got {} and {}",
        mat1.dtype(),
        mat2.dtype()
    );
    // PyTorch 2.15 calls mat1 "self" in this message.
    check_matrix("addmm", mat1, "self")?;
    check_matrix("addmm", mat2, "mat2")?;
    let (a, b) = (mat1.sizes(), mat2.sizes());
    check_mm_shapes("addmm", &a, &b)?;
    // PyTorch's kernel expands `self` to the result's shape, then reads beta and alpha as the
    // element type; both are checked here, for every backend. (In place, `self` is the
    // output, whose size the in-place check compares with the result's first.)
    if !outs.is_inplace() {
        check_expand_size(self_, &[a[0], b[1]])?;
    }
    check_product_scalars(mat1.dtype(), beta, alpha)?;
    Ok(Meta::new(
        [OutputSpec::contiguous(
            &[a[0], b[1]],
            mat1.dtype(),
            mat1.device(),
        )],
        (),
    ))
}

/// The checks shared by `bmm` and `baddbmm` (PyTorch's `common_checks_baddbmm_bmm`); returns
/// the output spec `[b, n, m]` with `batch2`'s dtype.
fn common_checks_baddbmm_bmm(
    batch1: &Tensor,
    batch2: &Tensor,
    outs: Outs<'_>,
) -> Result<OutputSpec> {
    torch_check!(batch1.dim() == 3, "batch1 must be a 3D tensor");
    torch_check!(batch2.dim() == 3, "batch2 must be a 3D tensor");
    let (s1, s2) = (batch1.sizes(), batch2.sizes());
    let (bs, contraction, rows, cols) = (s1[0], s1[2], s1[1], s2[2]);
    torch_check!(
        s2[0] == bs && s2[1] == contraction,
        "Expected size for first two dimensions of batch2 tensor to be: [{bs}, {contraction}] but got: [{}, {}].",
        s2[0],
        s2[1]
    );
    let output_size = [bs, rows, cols];
    // An in-place `self` of another shape is rejected by the wrapper's `check_inplace`, which
    // runs before PyTorch's own "Expected an output tensor with shape" check could.
    let _ = outs;
    torch_check!(
        batch1.dtype() == batch2.dtype(),
        "expected scalar type {} but found {}",
        batch1.dtype(),
        batch2.dtype()
    );
    Ok(OutputSpec::contiguous(
        &output_size,
        batch2.dtype(),
        batch2.device(),
    ))
}

/// `bmm(self, mat2)`: batched `[b, n, k] @ [b, k, m]`.
pub fn bmm(self_: &Tensor, mat2: &Tensor, outs: Outs<'_>) -> Result<Meta> {
    let spec = common_checks_baddbmm_bmm(self_, mat2, outs)?;
    Ok(Meta::new([spec], ()))
}

/// `baddbmm(self, batch1, batch2, beta, alpha)`: `beta * self + alpha * bmm(batch1, batch2)`;
/// `self` must expand to the product's shape.
pub fn baddbmm(
    self_: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: switchyard_core::Scalar,
    alpha: switchyard_core::Scalar,
    outs: Outs<'_>,
) -> Result<Meta> {
    let target = [batch1.size(0)?, batch1.size(1)?, batch2.size(2)?];
    check_expand_size(self_, &target)?;
    torch_check!(
        self_.dtype() == batch1.dtype(),
        "Input dtypes must be the same, got: input {}, batch1: {}, batch2: {}",
        self_.dtype().type_meta_name(),
        batch1.dtype().type_meta_name(),
        batch2.dtype().type_meta_name()
    );
    let spec = common_checks_baddbmm_bmm(batch1, batch2, outs)?;
    check_product_scalars(spec.dtype, beta, alpha)?;
    Ok(Meta::new([spec], ()))
}

/// The kernels of `addmm` / `baddbmm` read `beta` (when it is not 0: `self` is then ignored)
/// and `alpha` as the element type, with `Scalar::to<T>()`'s overflow check ("value cannot
/// be converted to type int8_t without overflow").
fn check_product_scalars(
    dtype: switchyard_core::ScalarType,
    beta: switchyard_core::Scalar,
    alpha: switchyard_core::Scalar,
) -> Result<()> {
    if beta.to_f64() != 0.0 {
        beta.check_fits(dtype)?;
    }
    alpha.check_fits(dtype)
}

/// PyTorch's legacy type string of a tensor (`torch.FloatTensor`, `MetaFloatType`), as
/// `expand` prints it.
fn legacy_type_string(t: &Tensor) -> String {
    if t.is_meta() {
        format!("Meta{}Type", t.dtype().name())
    } else {
        format!("torch.{}Tensor", t.dtype().name())
    }
}

/// Checks that `t` can be expanded to `target`, with `Tensor::expand`'s errors (used by the
/// meta functions and impls that expand an argument, such as `addmm`'s `self`).
pub fn check_expand_size(t: &Tensor, target: &[i64]) -> Result<()> {
    let sizes = t.sizes();
    let type_str = format!("{}{{{}}}", legacy_type_string(t), fmt_dims(&sizes));
    torch_check!(
        target.len() >= sizes.len(),
        "expand({type_str}, size={}): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
        fmt_dims(target),
        target.len(),
        sizes.len()
    );
    let lead = target.len() - sizes.len();
    for (i, &s) in sizes.iter().enumerate() {
        let t = target[lead + i];
        torch_check!(
            s == t || s == 1,
            "The expanded size of the tensor ({t}) must match the existing size ({s}) at non-singleton dimension {}.  Target sizes: {}.  Tensor sizes: {}",
            lead + i,
            fmt_dims(target),
            fmt_dims(&sizes)
        );
    }
    Ok(())
}

/// `dot`'s checks (PyTorch's `dot_check`): two 1-d tensors of one dtype and length, on one
/// device.
pub fn check_dot(self_: &Tensor, tensor: &Tensor) -> Result<()> {
    torch_check!(
        self_.dim() == 1 && tensor.dim() == 1,
        "1D tensors expected, but got {}D and {}D tensors",
        self_.dim(),
        tensor.dim()
    );
    torch_check!(
        self_.dtype() == tensor.dtype(),
        "dot : expected both vectors to have same dtype, but found {} and {}",
        self_.dtype(),
        tensor.dtype()
    );
    let (n, m) = (self_.numel(), tensor.numel());
    torch_check!(
        n == m,
        "inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number of elements, but got {n} and {m} elements respectively"
    );
    torch_check!(
        self_.device() == tensor.device(),
        "expected all tensors to be on the same device. Found: {}, {}",
        self_.device(),
        tensor.device()
    );
    Ok(())
}
