//! Every operator that autograd must know about has a derivatives.yaml entry.

use switchyard_codegen::derivatives::differentiable_type;
use switchyard_codegen::emit::autograd::MANUAL_AUTOGRAD;
use switchyard_codegen::emit::workspace::{
    find_workspace_root, parse_derivatives_yaml, parse_ops_yaml,
};
use switchyard_schema::SchemaKind;

/// Differentiable operators that PyTorch leaves without a formula, so that a gradient reaching
/// them raises "derivative for aten::<op> is not implemented" (`detach_copy`: `detach` is
/// autograd's own kernel, with no derivatives.yaml entry for its copy to inherit;
/// `set.source_Tensor`: neither `set_` nor its autogen functional variant has an entry;
/// `resize`, the functional variant of `resize_`; `scatter.reduce`, whose `reduce=` PyTorch
/// deprecates in favour of `scatter_reduce.two`).
const NO_FORMULA_IN_PYTORCH: [&str; 4] = [
    "detach_copy",
    "set.source_Tensor",
    "resize",
    "scatter.reduce",
];

/// The functional operators of ops.yaml that take a tensor and are not
/// CompositeImplicitAutograd (those are differentiated through their decomposition), nor
/// handled by a hand-written Autograd kernel, and that have no derivatives.yaml entry (their
/// own, or, for a `<view>_copy`, their view's).
fn missing_entries() -> Vec<String> {
    let root = find_workspace_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
    let nf = parse_ops_yaml(&root).unwrap();
    let d = parse_derivatives_yaml(&root, &nf).unwrap();
    nf.functions
        .iter()
        .enumerate()
        .filter(|(_, f)| f.kind() == SchemaKind::Functional)
        .filter(|(_, f)| !f.has_composite_implicit_autograd_kernel)
        .filter(|(_, f)| !f.manual_kernel_registration)
        .filter(|(_, f)| !MANUAL_AUTOGRAD.contains(&f.func.name.name.to_string().as_str()))
        .filter(|(_, f)| !NO_FORMULA_IN_PYTORCH.contains(&f.func.name.to_string().as_str()))
        .filter(|(_, f)| f.func.arguments.iter().any(|a| differentiable_type(&a.ty)))
        .filter(|(i, _)| !d.infos.iter().any(|info| info.func == *i))
        .filter(|(_, f)| !uses_mutable_formula(&nf, &d, f))
        .map(|(_, f)| f.func.to_string())
        .collect()
}

/// Whether `f` is the functional variant autogen adds to a mutable or in-place operator with
/// an entry, whose formula (and node) it uses (torchgen's `match_differentiability_info`,
/// rule 3: `_native_batch_norm_legit_functional`, `zero`, `uniform`).
fn uses_mutable_formula(
    nf: &switchyard_codegen::NativeFunctions,
    d: &switchyard_codegen::derivatives::Derivatives,
    f: &switchyard_codegen::NativeFunction,
) -> bool {
    let sig = f.func.signature(true, false, false);
    f.is_generated()
        && d.infos.iter().any(|info| {
            let g = &nf.functions[info.func].func;
            g.kind() != SchemaKind::Functional && g.signature(true, false, false) == sig
        })
}

#[test]
fn every_differentiable_operator_has_a_formula_or_a_decomposition() {
    let missing = missing_entries();
    assert!(
        missing.is_empty(),
        "{} operators have neither a derivatives.yaml entry nor a CompositeImplicitAutograd kernel:\n{}",
        missing.len(),
        missing.join("\n")
    );
}
