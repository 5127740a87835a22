//! PyTorch behaviour of the formulas that only shows with autograd: in-place variants give the
//! functional variants' gradients (and PyTorch's node names), out= refuses inputs that
//! require grad, integer and boolean outputs never require grad, and gradients at non-smooth
//! points (where finite differences say nothing) are PyTorch's.

use switchyard_autograd::{AutogradTensor, grad};
use switchyard_core::{Result, Scalar, ScalarType, Tensor};
use switchyard_ops::op;

fn x(v: &[f64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    op::contiguous::call(t, switchyard_core::MemoryFormat::Contiguous)
        .unwrap()
        .to_f64_vec()
        .unwrap()
}

/// The gradients of `Σ w·f(inputs)` (fixed weights `w`, so every output element matters).
fn grads_of(inputs: &[Tensor], f: &dyn Fn(&[Tensor]) -> Result<Tensor>) -> Vec<Vec<f64>> {
    let out = f(inputs).unwrap();
    let n = out.numel();
    let w: Vec<f64> = (0..n).map(|i| 1.0 + 0.25 * i as f64).collect();
    let w = Tensor::from_vec(w, &out.sizes()).unwrap();
    let loss = op::sum::call(&op::mul_Tensor::call(&out, &w).unwrap(), None).unwrap();
    grad(&[loss], inputs, &[], None, false, true)
        .unwrap()
        .into_iter()
        .map(|g| g.map(|g| vals(&g)).unwrap_or_default())
        .collect()
}

fn name(t: &Tensor) -> String {
    t.grad_fn().unwrap().map(|n| n.name()).unwrap_or_default()
}

#[test]
fn in_place_variants_match_functional_gradients_and_node_names() {
    type Pair = (
        &'static str,
        &'static str,
        fn(&Tensor, &Tensor) -> Result<Tensor>,
        fn(&Tensor, &Tensor) -> Result<Tensor>,
    );
    let pairs: Vec<Pair> = vec![
        (
            "mul_",
            "MulBackward0",
            |a, b| op::mul_Tensor::call(a, b),
            |a, b| op::mul__Tensor::call(a, b),
        ),
        (
            "add_",
            "AddBackward0",
            |a, b| op::add_Tensor::call(a, b, Scalar::Int(2)),
            |a, b| op::add__Tensor::call(a, b, Scalar::Int(2)),
        ),
        (
            "sub_",
            "SubBackward0",
            |a, b| op::sub_Tensor::call(a, b, Scalar::Int(1)),
            |a, b| op::sub__Tensor::call(a, b, Scalar::Int(1)),
        ),
        (
            "div_",
            "DivBackward0",
            |a, b| op::div_Tensor::call(a, b),
            |a, b| op::div__Tensor::call(a, b),
        ),
        (
            "pow_",
            "PowBackward1",
            |a, b| op::pow_Tensor_Tensor::call(a, b),
            |a, b| op::pow__Tensor::call(a, b),
        ),
        (
            "atan2_",
            "Atan2Backward0",
            |a, b| op::atan2::call(a, b),
            |a, b| op::atan2_::call(a, b),
        ),
        (
            "clamp_min_",
            "ClampMinBackward1",
            |a, b| op::clamp_min_Tensor::call(a, b),
            |a, b| op::clamp_min__Tensor::call(a, b),
        ),
        (
            "exp_",
            "ExpBackward0",
            |a, _| op::exp::call(a),
            |a, _| op::exp_::call(a),
        ),
        (
            "sigmoid_",
            "SigmoidBackward0",
            |a, _| op::sigmoid::call(a),
            |a, _| op::sigmoid_::call(a),
        ),
        (
            "tanh_",
            "TanhBackward0",
            |a, _| op::tanh::call(a),
            |a, _| op::tanh_::call(a),
        ),
        (
            "relu_",
            "ReluBackward0",
            |a, _| op::relu::call(a),
            |a, _| op::relu_::call(a),
        ),
        (
            "sqrt_",
            "SqrtBackward0",
            |a, _| op::sqrt::call(a),
            |a, _| op::sqrt_::call(a),
        ),
        (
            "cumsum_",
            "CumsumBackward0",
            |a, _| op::cumsum::call(a, 1, None),
            |a, _| op::cumsum_::call(a, 1, None),
        ),
        (
            "cumprod_",
            "CumprodBackward0",
            |a, _| op::cumprod::call(a, 0, None),
            |a, _| op::cumprod_::call(a, 0, None),
        ),
        (
            "tril_",
            "TrilBackward0",
            |a, _| op::tril::call(a, 0),
            |a, _| op::tril_::call(a, 0),
        ),
        (
            "masked_fill_",
            "MaskedFillBackward1",
            |a, b| {
                let m = op::gt_Scalar::call(&op::detach::call(a)?, Scalar::Float(1.0))?;
                op::masked_fill_Tensor::call(a, &m, &op::sum::call(b, None)?)
            },
            |a, b| {
                let m = op::gt_Scalar::call(&op::detach::call(a)?, Scalar::Float(1.0))?;
                op::masked_fill__Tensor::call(a, &m, &op::sum::call(b, None)?)
            },
        ),
        (
            "index_put_",
            "IndexPutBackward0",
            |a, b| {
                let i = [Some(Tensor::from_vec(vec![1i64, 0], &[2])?)];
                op::index_put::call(a, &i, &op::narrow::call(b, 0, 0, 1)?, false)
            },
            |a, b| {
                let i = [Some(Tensor::from_vec(vec![1i64, 0], &[2])?)];
                op::index_put_::call(a, &i, &op::narrow::call(b, 0, 0, 1)?, false)
            },
        ),
        (
            "scatter_",
            "ScatterBackward0",
            |a, b| {
                let i = Tensor::from_vec(vec![2i64, 0, 1, 0, 1, 2], &[2, 3])?;
                op::scatter_src::call(a, 1, &i, b)
            },
            |a, b| {
                let i = Tensor::from_vec(vec![2i64, 0, 1, 0, 1, 2], &[2, 3])?;
                op::scatter__src::call(a, 1, &i, b)
            },
        ),
    ];
    for (label, node, functional, inplace) in pairs {
        let a = x(&[0.5, 1.5, 2.0, 1.25, 0.75, 1.75], &[2, 3]);
        let b = x(&[1.1, 0.6, 1.3, 0.9, 1.7, 0.4], &[2, 3]);
        let expected = grads_of(&[a.clone(), b.clone()], &|t| functional(&t[0], &t[1]));
        let got = grads_of(&[a.clone(), b.clone()], &|t| {
            let y = op::clone::call(&t[0], None)?;
            let r = inplace(&y, &t[1])?;
            assert_eq!(name(&y), node, "{label}: node of the mutated tensor");
            Ok(r)
        });
        for (e, g) in expected.iter().zip(&got) {
            assert_eq!(e.len(), g.len(), "{label}");
            for (p, q) in e.iter().zip(g) {
                assert!(
                    (p - q).abs() < 1e-12,
                    "{label}: functional {e:?}, in-place {g:?}"
                );
            }
        }
    }
}

#[test]
fn in_place_entries_have_pytorchs_node_names() {
    type Unary = fn(&Tensor) -> Result<Tensor>;
    let cases: Vec<(&str, Unary)> = vec![
        ("SqueezeBackward3", |t| op::squeeze_::call(t)),
        ("SqueezeBackward4", |t| op::squeeze__dim::call(t, 0)),
        ("SqueezeBackward5", |t| op::squeeze__dims::call(t, &[0])),
        ("UnsqueezeBackward1", |t| op::unsqueeze_::call(t, 0)),
        ("TBackward1", |t| op::t_::call(t)),
        ("TransposeBackward1", |t| op::transpose_::call(t, 0, 1)),
        ("AsStridedBackward1", |t| {
            op::as_strided_::call(t, &[2], &[1], Some(0))
        }),
        ("ZeroBackward0", |t| op::zero_::call(t)),
        ("FillBackward2", |t| {
            op::fill__Scalar::call(t, Scalar::Int(1))
        }),
        ("EqBackward0", |t| op::eq__Scalar::call(t, Scalar::Int(1))),
        ("NeBackward1", |t| {
            op::ne__Tensor::call(t, &op::detach::call(t)?)
        }),
        ("UniformBackward0", |t| {
            op::uniform_::call(t, 0.0, 1.0, None)
        }),
        ("NormalBackward0", |t| op::normal_::call(t, 0.0, 1.0, None)),
        ("BernoulliBackward2", |t| {
            op::bernoulli__float::call(t, 0.5, None)
        }),
    ];
    for (node, f) in cases {
        let a = x(&[0.5, 1.5], &[1, 2]);
        let y = op::clone::call(&a, None).unwrap();
        let r = f(&y).unwrap();
        assert_eq!(name(&r), node);
        // Every one of these is differentiable: a backward pass reaches the leaf.
        let loss = op::sum::call(&r, None).unwrap();
        let g = grad(&[loss], std::slice::from_ref(&a), &[], None, false, false).unwrap();
        assert!(g[0].is_some(), "{node}");
    }
    // Random fills and comparisons give zero gradients, as in PyTorch.
    let a = x(&[0.5, 1.5], &[2]);
    let y = op::mul_Scalar::call(&a, Scalar::Int(2)).unwrap();
    op::uniform_::call(&y, 0.0, 1.0, None).unwrap();
    let loss = op::sum::call(&y, None).unwrap();
    let g = grad(&[loss], &[a], &[], None, false, false).unwrap();
    assert_eq!(vals(g[0].as_ref().unwrap()), vec![0.0, 0.0]);
}

#[test]
fn out_variants_refuse_inputs_that_require_grad() {
    let a = x(&[1.0, 2.0], &[2]);
    let b = Tensor::from_vec(vec![3.0f64, 4.0], &[2]).unwrap();
    let out = Tensor::from_vec(vec![0.0f64, 0.0], &[2]).unwrap();
    let err = op::add_out::call(&a, &b, Scalar::Int(1), &out).unwrap_err();
    assert_eq!(
        err.message(),
        "add(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
    );
    let err = op::mm_out::call(
        &op::view::call(&a, &[1, 2]).unwrap(),
        &op::view::call(&b, &[2, 1]).unwrap(),
        &Tensor::from_vec(vec![0.0f64], &[1, 1]).unwrap(),
    )
    .unwrap_err();
    assert!(
        err.message().starts_with("mm(): functions with out=..."),
        "{err}"
    );
    // Under no_grad the same call is fine.
    let _guard = switchyard_autograd::no_grad();
    op::add_out::call(&a, &b, Scalar::Int(1), &out).unwrap();
    assert_eq!(vals(&out), vec![4.0, 6.0]);
}

/// PyTorch refuses only the out= overloads of differentiable operators: a non-differentiable
/// one (`eq.Tensor_out`) runs and its out does not require grad; an out= overload without a
/// derivatives.yaml entry (autogen's `add.Scalar_out`) runs through the autograd fallback and
/// raises only at backward; `matmul.out` names matmul (its composite checks it).
#[test]
fn out_variants_of_non_differentiable_or_autogenerated_overloads_run() {
    let a = x(&[1.0, 2.0], &[2]);
    let b = Tensor::from_vec(vec![1.0f64, 4.0], &[2]).unwrap();
    let mask = op::empty_memory_format::call(&[2], Some(ScalarType::Bool), None, None, None, None)
        .unwrap();
    op::eq_Tensor_out::call(&a, &b, &mask).unwrap();
    assert!(!mask.requires_grad());
    assert_eq!(vals(&mask), vec![1.0, 0.0]);

    let out = Tensor::from_vec(vec![0.0f64, 0.0], &[2]).unwrap();
    op::add_Scalar_out::call(&a, Scalar::Int(1), Scalar::Int(1), &out).unwrap();
    assert_eq!(vals(&out), vec![2.0, 3.0]);
    assert!(out.requires_grad());
    assert_eq!(name(&out), "torch::autograd::NotImplemented");
    let loss = op::sum::call(&out, None).unwrap();
    let err = grad(&[loss], &[a.clone()], &[], None, false, true).unwrap_err();
    assert_eq!(err.message(), "derivative for aten::add is not implemented");

    let err = op::matmul_out::call(
        &op::view::call(&a, &[1, 2]).unwrap(),
        &op::view::call(&b, &[2, 1]).unwrap(),
        &Tensor::from_vec(vec![0.0f64], &[1, 1]).unwrap(),
    )
    .unwrap_err();
    assert!(
        err.message()
            .starts_with("matmul(): functions with out=..."),
        "{err}"
    );
}

#[test]
fn integer_and_boolean_outputs_never_require_grad() {
    let a = x(&[0.5, -1.5, 2.0, 1.0], &[2, 2]);
    let b = x(&[1.5, -1.5, 0.0, 1.0], &[2, 2]);
    let outs: Vec<(&str, Tensor)> = vec![
        ("argmax", op::argmax::call(&a, Some(1), false).unwrap()),
        ("argmin", op::argmin::call(&a, None, false).unwrap()),
        (
            "max.dim indices",
            op::max_dim::call(&a, 0, false).unwrap().1,
        ),
        ("sort indices", op::sort::call(&a, 1, false).unwrap().1),
        (
            "topk indices",
            op::topk::call(&a, 1, 0, true, true).unwrap().1,
        ),
        (
            "max_pool2d indices",
            op::max_pool2d_with_indices::call(
                &op::view::call(&a, &[1, 1, 2, 2]).unwrap(),
                &[2, 2],
                &[],
                &[0, 0],
                &[1, 1],
                false,
            )
            .unwrap()
            .1,
        ),
        ("eq", op::eq_Tensor::call(&a, &b).unwrap()),
        (
            "lt.Scalar",
            op::lt_Scalar::call(&a, Scalar::Int(0)).unwrap(),
        ),
        ("isnan", op::isnan::call(&a).unwrap()),
        ("isinf", op::isinf::call(&a).unwrap()),
        ("logical_and", op::logical_and::call(&a, &b).unwrap()),
        ("logical_not", op::logical_not::call(&a).unwrap()),
        ("all", op::all::call(&a).unwrap()),
        ("any.dim", op::any_dim::call(&a, 0, false).unwrap()),
        (
            "_to_copy(long)",
            op::_to_copy::call(&a, Some(ScalarType::Long), None, None, None, false, None).unwrap(),
        ),
        (
            "div floor (int)",
            op::div_Tensor_mode::call(
                &Tensor::from_vec(vec![3i64, 4], &[2]).unwrap(),
                &Tensor::from_vec(vec![2i64, 3], &[2]).unwrap(),
                Some("floor"),
            )
            .unwrap(),
        ),
        (
            "native_dropout mask",
            op::native_dropout::call(&a, 0.5, Some(true)).unwrap().1,
        ),
    ];
    for (label, t) in outs {
        assert!(!t.requires_grad_now(), "{label} requires grad");
        assert!(t.grad_fn().unwrap().is_none(), "{label} has a grad_fn");
    }
    // Outputs declared non-differentiable stay so even when floating.
    let floats: Vec<(&str, Tensor)> = vec![
        (
            "zeros_like",
            op::zeros_like::call(&a, None, None, None, None, None).unwrap(),
        ),
        (
            "ones_like",
            op::ones_like::call(&a, None, None, None, None, None).unwrap(),
        ),
        (
            "rand_like",
            op::rand_like::call(&a, None, None, None, None, None).unwrap(),
        ),
        (
            "randn_like",
            op::randn_like::call(&a, None, None, None, None, None).unwrap(),
        ),
        (
            "full_like",
            op::full_like::call(&a, Scalar::Int(3), None, None, None, None, None).unwrap(),
        ),
        (
            "empty_like",
            op::empty_like::call(&a, None, None, None, None, None).unwrap(),
        ),
        (
            "view.dtype",
            op::view_dtype::call(&a, ScalarType::Long).unwrap(),
        ),
    ];
    for (label, t) in floats {
        assert!(!t.requires_grad_now(), "{label} requires grad");
    }
}

/// `detach_copy` has no formula in PyTorch (`detach` is autograd's own kernel, so its copy
/// inherits none): the result requires grad through a `NotImplemented` node, and a gradient
/// reaching it is PyTorch's RuntimeError.
#[test]
fn detach_copy_records_a_not_implemented_node() {
    let a = x(&[1.0, 2.0, 3.0], &[3]);
    let d = op::detach_copy::call(&a).unwrap();
    assert!(d.requires_grad_now());
    assert_eq!(
        d.grad_fn().unwrap().unwrap().name(),
        "torch::autograd::NotImplemented"
    );
    assert!(!d.is_alias_of(&a));
    let e = op::sum::call(&d, None).unwrap().backward().unwrap_err();
    assert_eq!(e.kind().name(), "RuntimeError");
    assert_eq!(
        e.message(),
        "derivative for aten::detach_copy is not implemented"
    );
}

/// `set_` has no formula in PyTorch: after it, `self` requires grad through a `NotImplemented`
/// node, and a gradient reaching it is PyTorch's error, worded `set_` for the in-place op and
/// `aten::set` for its functional variant (PyTorch's boxed fallback drops the overload).
#[test]
fn set_records_a_not_implemented_node() {
    let a = x(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let y = op::clone::call(&a, None).unwrap();
    let yt = op::t::call(&y).unwrap();
    op::set__source_Tensor::call(&y, &yt).unwrap();
    assert_eq!(y.sizes().to_vec(), vec![3, 2]);
    assert_eq!(
        y.grad_fn().unwrap().unwrap().name(),
        "torch::autograd::NotImplemented"
    );
    let e = op::sum::call(&y, None).unwrap().backward().unwrap_err();
    assert_eq!(e.kind().name(), "RuntimeError");
    assert_eq!(e.message(), "derivative for set_ is not implemented");
}

/// `lift` and `lift_fresh` return their input itself, as PyTorch's kernels do, so the output's
/// history replaces the input's (a leaf given to `lift` stops being one, as in PyTorch); the
/// gradient with respect to it is the one reaching the node: `Σ [3, 4]·lift(a)` gives [3, 4],
/// `Σ [3, 4]·lift_fresh(2a)` gives [6, 8].
#[test]
fn lift_returns_its_input_itself() {
    let w = Tensor::from_vec(vec![3.0, 4.0], &[2]).unwrap();
    let loss = |t: &Tensor| op::sum::call(&op::mul_Tensor::call(t, &w).unwrap(), None).unwrap();
    let a = x(&[1.0, 2.0], &[2]);
    let r = op::lift::call(&a).unwrap();
    assert!(r.is_same(&a));
    assert_eq!(a.grad_fn().unwrap().unwrap().name(), "LiftBackward0");
    let g = grad(
        &[loss(&r)],
        std::slice::from_ref(&a),
        &[],
        None,
        false,
        false,
    )
    .unwrap();
    assert_eq!(vals(g[0].as_ref().unwrap()), vec![3.0, 4.0]);

    let a = x(&[1.0, 2.0], &[2]);
    let b = op::mul_Scalar::call(&a, Scalar::Float(2.0)).unwrap();
    let f = op::lift_fresh::call(&b).unwrap();
    assert!(f.is_same(&b));
    assert_eq!(f.grad_fn().unwrap().unwrap().name(), "LiftFreshBackward0");
    assert!(!switchyard_autograd::view::is_view(&f));
    let g = grad(
        &[loss(&f)],
        std::slice::from_ref(&a),
        &[],
        None,
        false,
        false,
    )
    .unwrap();
    assert_eq!(vals(g[0].as_ref().unwrap()), vec![6.0, 8.0]);
}

/// Gradients at points where the operator is not differentiable, as PyTorch 2.15 returns
/// them (recorded from `torch`; finite differences cannot check these).
#[test]
fn gradients_at_non_smooth_points_are_pytorchs() {
    type Case = (
        &'static str,
        Vec<Tensor>,
        fn(&[Tensor]) -> Result<Tensor>,
        Vec<Vec<f64>>,
    );
    let cases: Vec<Case> = vec![
        // torch.tensor([1.,3.,3.,2.]).max(): ties share the gradient evenly.
        (
            "max ties",
            vec![x(&[1.0, 3.0, 3.0, 2.0], &[4])],
            |t| op::max::call(&t[0]),
            vec![vec![0.0, 0.5, 0.5, 0.0]],
        ),
        // torch.maximum with a tie in the middle.
        (
            "maximum ties",
            vec![x(&[1.0, 2.0, 3.0], &[3]), x(&[1.0, 3.0, 2.0], &[3])],
            |t| op::maximum::call(&t[0], &t[1]),
            vec![vec![0.5, 0.0, 1.0], vec![0.5, 1.0, 0.0]],
        ),
        // x.clamp(0, 1) at both bounds: no gradient on the boundary.
        (
            "clamp bounds",
            vec![x(&[-1.0, 0.0, 0.5, 1.0, 2.0], &[5])],
            |t| op::clamp::call(&t[0], Some(Scalar::Int(0)), Some(Scalar::Int(1))),
            vec![vec![0.0, 0.0, 1.0, 0.0, 0.0]],
        ),
        (
            "clamp_min bound",
            vec![x(&[-1.0, 0.0, 0.5], &[3])],
            |t| op::clamp_min::call(&t[0], Scalar::Int(0)),
            vec![vec![0.0, 0.0, 1.0]],
        ),
        // x.clamp(lo, hi) with tensor bounds: ties split in half.
        (
            "clamp.Tensor ties",
            vec![
                x(&[-1.0, 0.0, 0.5, 1.0, 2.0], &[5]),
                x(&[0.0; 5], &[5]),
                x(&[1.0; 5], &[5]),
            ],
            |t| op::clamp_Tensor::call(&t[0], Some(&t[1]), Some(&t[2])),
            vec![
                vec![0.0, 0.5, 1.0, 0.5, 0.0],
                vec![1.0, 0.5, 0.0, 0.0, 0.0],
                vec![0.0, 0.0, 0.0, 0.5, 1.0],
            ],
        ),
        (
            "abs at 0",
            vec![x(&[-1.0, 0.0, 2.0], &[3])],
            |t| op::abs::call(&t[0]),
            vec![vec![-1.0, 0.0, 1.0]],
        ),
        (
            "relu at 0",
            vec![x(&[-1.0, 0.0, 2.0], &[3])],
            |t| op::relu::call(&t[0]),
            vec![vec![0.0, 0.0, 1.0]],
        ),
        (
            "amax ties",
            vec![x(&[1.0, 3.0, 3.0, 3.0], &[2, 2])],
            |t| op::amax::call(&t[0], &[1], false),
            vec![vec![0.0, 1.0, 0.5, 0.5]],
        ),
        (
            "prod one zero",
            vec![x(&[2.0, 0.0, 3.0], &[3])],
            |t| op::prod::call(&t[0], None),
            vec![vec![0.0, 6.0, 0.0]],
        ),
        (
            "prod two zeros",
            vec![x(&[2.0, 0.0, 3.0, 0.0], &[4])],
            |t| op::prod::call(&t[0], None),
            vec![vec![0.0; 4]],
        ),
        (
            "cumprod zero",
            vec![x(&[2.0, 0.0, 3.0, 4.0], &[4])],
            |t| op::cumprod::call(&t[0], 0, None),
            vec![vec![1.0, 32.0, 0.0, 0.0]],
        ),
        (
            "norm of zeros",
            vec![x(&[0.0, 0.0, 0.0], &[3])],
            |t| op::linalg_vector_norm::call(&t[0], Scalar::Int(2), None, false, None),
            vec![vec![0.0; 3]],
        ),
        (
            "pow(0, e)",
            vec![x(&[1.0, 2.0], &[2])],
            |t| op::pow_Scalar::call(Scalar::Float(0.0), &t[0]),
            vec![vec![0.0, 0.0]],
        ),
        (
            "pow(x, 0) at 0",
            vec![x(&[0.0, 2.0], &[2]), x(&[2.0, 0.0], &[2])],
            |t| op::pow_Tensor_Tensor::call(&t[0], &t[1]),
            vec![vec![0.0, 0.0], vec![0.0, std::f64::consts::LN_2]],
        ),
    ];
    for (label, inputs, f, expected) in cases {
        let out = f(&inputs).unwrap();
        let loss = op::sum::call(&out, None).unwrap();
        let gs = grad(&[loss], &inputs, &[], None, false, true).unwrap();
        for (g, e) in gs.iter().zip(&expected) {
            let g = vals(g.as_ref().unwrap());
            assert_eq!(g.len(), e.len(), "{label}");
            for (a, b) in g.iter().zip(e) {
                assert!(
                    (a - b).abs() < 1e-6,
                    "{label}: got {g:?}, PyTorch gives {e:?}"
                );
            }
        }
    }
}

/// Gradients at NaN, ±inf and signed zeros, as PyTorch 2.15 returns them for
/// `f(x).sum()` with x = [[nan, inf, -inf], [0, -0, 1.5]] (float64): relu passes the
/// gradient at NaN (`threshold_backward` zeroes where the output is <= 0 only), prod with
/// two zeros is all zeros, cumprod with zeros follows PyTorch's masks (NaN at an infinite
/// element before a zero).
#[test]
fn gradients_at_nan_and_infinity_are_pytorchs() {
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let data = [nan, inf, -inf, 0.0, -0.0, 1.5];
    type Case = (&'static str, fn(&Tensor) -> Result<Tensor>, Vec<f64>);
    let cases: Vec<Case> = vec![
        (
            "relu",
            |t| op::relu::call(t),
            vec![1.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        ),
        (
            "relu_",
            |t| op::relu_::call(&op::clone::call(t, None)?),
            vec![1.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        ),
        ("prod", |t| op::prod::call(t, None), vec![0.0; 6]),
        (
            "cumprod dim 0",
            |t| op::cumprod::call(t, 0, None),
            vec![nan, nan, nan, nan, inf, -inf],
        ),
        (
            "cumprod dim 1",
            |t| op::cumprod::call(t, 1, None),
            vec![nan, nan, nan, 1.0, 0.0, 0.0],
        ),
        (
            "cumprod_ dim 0",
            |t| op::cumprod_::call(&op::clone::call(t, None)?, 0, None),
            vec![nan, nan, nan, nan, inf, -inf],
        ),
    ];
    for (label, f, expected) in cases {
        let input = x(&data, &[2, 3]);
        let loss = op::sum::call(&f(&input).unwrap(), None).unwrap();
        let gs = grad(&[loss], &[input], &[], None, false, true).unwrap();
        let g = vals(gs[0].as_ref().unwrap());
        let same = g
            .iter()
            .zip(&expected)
            .all(|(a, b)| (a.is_nan() && b.is_nan()) || a == b);
        assert!(same, "{label}: got {g:?}, PyTorch gives {expected:?}");
    }
    // Two zeros in a slice: the first zero's gradient sums up to the second
    // (torch: x = [2, 0, 3, 0, 5], (x.cumprod(0) * [1, 2, 3, 4, 5]).sum()).
    let input = x(&[2.0, 0.0, 3.0, 0.0, 5.0], &[5]);
    let g = grads_of(&[input], &|t| op::cumprod::call(&t[0], 0, None));
    let w = [1.0, 1.25, 1.5, 1.75, 2.0];
    // d/dx0 = w0, d/dx1 = 2 w1 + 6 w2, the rest 0.
    assert_eq!(g[0], vec![w[0], 2.0 * w[1] + 6.0 * w[2], 0.0, 0.0, 0.0]);
}

/// `embedding` with `padding_idx` and `scale_grad_by_freq`: the padding row gets no gradient
/// and each row's gradient is divided by its index's count in the batch. Neither is the
/// derivative of the forward (which reads the padding row and does not scale), so finite
/// differences cannot check them; the values are PyTorch 2.15's for the same call.
#[test]
fn embedding_padding_and_frequency_scaling_are_pytorchs() {
    let w = x(&(0..15).map(f64::from).collect::<Vec<_>>(), &[5, 3]);
    let idx = Tensor::from_vec(vec![1i64, 4, 1, 0, 2, 4], &[2, 3]).unwrap();
    let out = op::embedding::call(&w, &idx, 2, true, false).unwrap();
    assert_eq!(name(&out), "EmbeddingBackward0");
    let weights = Tensor::from_vec((0..18).map(f64::from).collect::<Vec<_>>(), &[2, 3, 3]).unwrap();
    let loss = op::sum::call(&op::mul_Tensor::call(&out, &weights).unwrap(), None).unwrap();
    let g = grad(&[loss], &[w], &[], None, false, false).unwrap();
    assert_eq!(
        vals(g[0].as_ref().unwrap()),
        vec![
            9.0, 10.0, 11.0, 3.0, 4.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 9.0, 10.0, 11.0
        ]
    );
}

/// An in-place operator on a view rewrites the base's history (CopySlices) with the
/// operator's formula: the gradients are those of the functional program.
#[test]
fn in_place_on_a_view_matches_the_functional_program() {
    let a = x(&[0.5, 1.5, 2.0, 1.25, 0.75, 1.75], &[2, 3]);
    let b = x(&[1.1, 0.6, 1.3], &[3]);
    let expected = grads_of(&[a.clone(), b.clone()], &|t| {
        let row0 = op::mul_Tensor::call(&op::select_int::call(&t[0], 0, 0)?, &t[1])?;
        let row1 = op::sigmoid::call(&op::select_int::call(&t[0], 0, 1)?)?;
        op::stack::call(&[row0, row1], 0)
    });
    let got = grads_of(&[a.clone(), b.clone()], &|t| {
        let y = op::clone::call(&t[0], None)?;
        op::mul__Tensor::call(&op::select_int::call(&y, 0, 0)?, &t[1])?;
        op::sigmoid_::call(&op::select_int::call(&y, 0, 1)?)?;
        assert_eq!(name(&y), "torch::autograd::CopySlices");
        Ok(y)
    });
    for (e, g) in expected.iter().zip(&got) {
        for (p, q) in e.iter().zip(g) {
            assert!(
                (p - q).abs() < 1e-12,
                "functional {e:?}, in-place on views {g:?}"
            );
        }
    }
}

/// The gradient of `Σ w·f(leaf)` with `w = 1, 2, 3, ...` over the output in row-major order,
/// the node name of the output, and its gradient values.
fn weighted_grad(leaf: &Tensor, f: &dyn Fn(&Tensor) -> Result<Tensor>) -> (String, Vec<f64>) {
    let out = f(leaf).unwrap();
    let n = out.numel();
    let w: Vec<f64> = (1..=n).map(|i| i as f64).collect();
    let w = Tensor::from_vec(w, &out.sizes()).unwrap();
    let loss = op::sum::call(&op::mul_Tensor::call(&out, &w).unwrap(), None).unwrap();
    let g = grad(&[loss], std::slice::from_ref(leaf), &[], None, false, true).unwrap();
    (name(&out), vals(g[0].as_ref().unwrap()))
}

/// `leaf.clone()[:, ::2]`: a view of a non-leaf.
fn every_other_column(leaf: &Tensor) -> Result<Tensor> {
    op::slice_Tensor::call(&op::clone::call(leaf, None)?, -1, Some(0), None, 2)
}

/// In-place metadata operators on a view of a non-leaf record their own node, chained to the
/// view's history (PyTorch sets the history of `self` instead of rebasing it), and the
/// gradient follows the view's new geometry. Leaves `arange(n)` of shape [2, 4] ([1, 4] for
/// squeeze_); the slice takes columns 0 and 2, so `v[i][j] = l[i][2j]` before the operator;
/// hand-computed gradients (as PyTorch 2.15 gives them).
#[test]
fn in_place_metadata_ops_on_a_view_of_a_non_leaf() {
    type Case = (
        &'static str,
        &'static [i64],
        fn(&Tensor) -> Result<Tensor>,
        &'static str,
        Vec<f64>,
    );
    let (l24, l14): (&[i64], &[i64]) = (&[2, 4], &[1, 4]);
    // After t_, out[i][j] = l[j][2i]: w = [[1, 2], [3, 4]] lands at l[0][0] = 1, l[1][0] = 2,
    // l[0][2] = 3, l[1][2] = 4.
    let transposed = vec![1.0, 0.0, 3.0, 0.0, 2.0, 0.0, 4.0, 0.0];
    let cases: Vec<Case> = vec![
        (
            "t_",
            l24,
            |l| op::t_::call(&every_other_column(l)?),
            "TBackward1",
            transposed.clone(),
        ),
        (
            "transpose_",
            l24,
            |l| op::transpose_::call(&every_other_column(l)?, 0, 1),
            "TransposeBackward1",
            transposed,
        ),
        (
            "squeeze_",
            l14,
            |l| op::squeeze_::call(&every_other_column(l)?),
            "SqueezeBackward3",
            vec![1.0, 0.0, 2.0, 0.0],
        ),
        (
            "squeeze_.dim",
            l14,
            |l| op::squeeze__dim::call(&every_other_column(l)?, 0),
            "SqueezeBackward4",
            vec![1.0, 0.0, 2.0, 0.0],
        ),
        (
            "squeeze_.dims",
            l14,
            |l| op::squeeze__dims::call(&every_other_column(l)?, &[0]),
            "SqueezeBackward5",
            vec![1.0, 0.0, 2.0, 0.0],
        ),
        (
            "unsqueeze_",
            l24,
            |l| op::unsqueeze_::call(&every_other_column(l)?, 0),
            "UnsqueezeBackward1",
            vec![1.0, 0.0, 2.0, 0.0, 3.0, 0.0, 4.0, 0.0],
        ),
        (
            // Size [2], stride 4, offset 2: storage elements 2 and 6, l[0][2] and l[1][2].
            "as_strided_",
            l24,
            |l| op::as_strided_::call(&every_other_column(l)?, &[2], &[4], Some(2)),
            "AsStridedBackward1",
            vec![0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0],
        ),
        (
            // The base changes in place after the view's t_: the view's history is rebuilt
            // from the base's (an as_strided of it), with the view's new geometry.
            "t_ then mul_ of the base",
            l24,
            |l| {
                let c = op::clone::call(l, None)?;
                let v = op::slice_Tensor::call(&c, -1, Some(0), None, 2)?;
                op::t_::call(&v)?;
                op::mul__Scalar::call(&c, Scalar::Float(2.0))?;
                Ok(v)
            },
            "AsStridedBackward0",
            vec![2.0, 0.0, 6.0, 0.0, 4.0, 0.0, 8.0, 0.0],
        ),
        (
            // An in-place change of the transposed view reaches the base through CopySlices
            // with the view's new geometry: w (1..8 over the base) tripled at columns 0, 2.
            "t_ then mul_ of the view",
            l24,
            |l| {
                let c = op::clone::call(l, None)?;
                let v = op::slice_Tensor::call(&c, -1, Some(0), None, 2)?;
                op::t_::call(&v)?;
                op::mul__Scalar::call(&v, Scalar::Float(3.0))?;
                Ok(c)
            },
            "torch::autograd::CopySlices",
            vec![3.0, 2.0, 9.0, 4.0, 15.0, 6.0, 21.0, 8.0],
        ),
        (
            "t_ twice",
            l24,
            |l| {
                let v = every_other_column(l)?;
                op::t_::call(&v)?;
                op::t_::call(&v)
            },
            "TBackward1",
            vec![1.0, 0.0, 2.0, 0.0, 3.0, 0.0, 4.0, 0.0],
        ),
    ];
    for (what, shape, f, node, expected) in cases {
        let n = shape.iter().product::<i64>();
        let data: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let (got_node, got) = weighted_grad(&x(&data, shape), &f);
        assert_eq!(got_node, node, "{what}");
        assert_eq!(got, expected, "{what}");
    }
}

/// t_ of an expanded view of a non-leaf: `out[i][j] = l[i]`, so each leaf element gets the
/// sum of its row of w = [[1, 2], [3, 4], [5, 6]].
#[test]
fn t_of_an_expanded_view_of_a_non_leaf() {
    let l = x(&[0.5, 1.5, 2.5], &[3]);
    let (node, g) = weighted_grad(&l, &|l| {
        let e = op::expand::call(&op::clone::call(l, None)?, &[2, 3], false)?;
        op::t_::call(&e)
    });
    assert_eq!(node, "TBackward1");
    assert_eq!(g, vec![3.0, 7.0, 11.0]);
}
