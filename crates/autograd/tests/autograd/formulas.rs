//! Every differentiable operator's formula, checked against finite differences
//! (`gradcheck`, and `gradgradcheck` where PyTorch's formula is itself differentiable), on
//! float64 inputs that are contiguous, non-contiguous, broadcast and 0-dim where the operator
//! takes them; and the name of the node each operator records, which must be PyTorch's.
//!
//! One table of cases, one loop; a failure names the operator and the case.

use switchyard_autograd::{AutogradTensor, GradcheckOptions, gradcheck, gradgradcheck};
use switchyard_core::{Result, Scalar, ScalarType, Tensor};
use switchyard_ops::op;

type F = Box<dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>>;

/// Input values: where an operator is smooth.
#[derive(Clone, Copy)]
enum Dom {
    /// In [-2, 2], away from 0 and from each other.
    Any,
    /// In [0.5, 2].
    Pos,
    /// In (-0.9, 0.9), away from 0.
    Unit,
}

/// Distinct pseudo-random values in `dom` (no ties, so max/sort/... are smooth).
fn values(n: usize, dom: Dom, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out: Vec<f64> = Vec::with_capacity(n);
    while out.len() < n {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let u = ((s >> 11) as f64) / ((1u64 << 53) as f64);
        let v = match dom {
            Dom::Any => {
                let m = 0.3 + 1.7 * u;
                if (s >> 7) & 1 == 0 { m } else { -m }
            }
            Dom::Pos => 0.5 + 1.5 * u,
            Dom::Unit => {
                let m = 0.1 + 0.75 * u;
                if (s >> 7) & 1 == 0 { m } else { -m }
            }
        };
        if out.iter().all(|w| (w - v).abs() > 0.02) {
            out.push(v);
        }
    }
    out
}

fn leaf(t: Tensor) -> Tensor {
    t.requires_grad_(true).unwrap()
}

/// A contiguous float64 leaf.
fn c(shape: &[i64], dom: Dom, seed: u64) -> Tensor {
    let n = shape.iter().product::<i64>() as usize;
    leaf(Tensor::from_vec(values(n, dom, seed), shape).unwrap())
}

/// A non-contiguous float64 leaf: the last two dims transposed, or a step-2 slice for 1-d.
fn nc(shape: &[i64], dom: Dom, seed: u64) -> Tensor {
    let n = shape.iter().product::<i64>() as usize;
    let t = match shape.len() {
        0 => return c(shape, dom, seed),
        1 => {
            let big = Tensor::from_vec(values(2 * n, dom, seed), &[2 * shape[0]]).unwrap();
            op::slice_Tensor::call(&big, 0, Some(0), None, 2).unwrap()
        }
        k => {
            let mut s = shape.to_vec();
            s.swap(k - 1, k - 2);
            let base = Tensor::from_vec(values(n, dom, seed), &s).unwrap();
            op::transpose_int::call(&base, -1, -2).unwrap()
        }
    };
    assert!(!t.is_contiguous() || n <= 1);
    leaf(t)
}

fn long(v: &[i64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn boolean(v: &[bool], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

struct Case {
    op: &'static str,
    variant: &'static str,
    node: &'static str,
    inputs: Vec<Tensor>,
    f: F,
    gradgrad: bool,
}

#[derive(Default)]
struct Cases(Vec<Case>);

impl Cases {
    fn add(
        &mut self,
        op: &'static str,
        variant: &'static str,
        node: &'static str,
        inputs: Vec<Tensor>,
        gradgrad: bool,
        f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'static,
    ) {
        self.0.push(Case {
            op,
            variant,
            node,
            inputs,
            f: Box::new(f),
            gradgrad,
        });
    }

    /// A unary operator on contiguous, non-contiguous and 0-dim inputs.
    fn unary(
        &mut self,
        op: &'static str,
        node: &'static str,
        dom: Dom,
        gradgrad: bool,
        f: fn(&Tensor) -> Result<Tensor>,
    ) {
        self.add(
            op,
            "contiguous",
            node,
            vec![c(&[3, 4], dom, 1)],
            gradgrad,
            move |x| Ok(vec![f(&x[0])?]),
        );
        self.add(
            op,
            "transposed",
            node,
            vec![nc(&[3, 4], dom, 2)],
            gradgrad,
            move |x| Ok(vec![f(&x[0])?]),
        );
        self.add(
            op,
            "0-dim",
            node,
            vec![c(&[], dom, 3)],
            gradgrad,
            move |x| Ok(vec![f(&x[0])?]),
        );
    }

    /// A binary operator on contiguous, non-contiguous, broadcast ([3,1] with [4]) and 0-dim
    /// inputs.
    #[allow(clippy::too_many_arguments)]
    fn binary(
        &mut self,
        op: &'static str,
        node: &'static str,
        d0: Dom,
        d1: Dom,
        gradgrad: bool,
        f: fn(&Tensor, &Tensor) -> Result<Tensor>,
    ) {
        let g = move |x: &[Tensor]| Ok(vec![f(&x[0], &x[1])?]);
        self.add(
            op,
            "contiguous",
            node,
            vec![c(&[3, 4], d0, 4), c(&[3, 4], d1, 5)],
            gradgrad,
            g,
        );
        self.add(
            op,
            "transposed",
            node,
            vec![nc(&[3, 4], d0, 6), nc(&[3, 4], d1, 7)],
            gradgrad,
            g,
        );
        self.add(
            op,
            "broadcast",
            node,
            vec![c(&[3, 1], d0, 8), c(&[4], d1, 9)],
            gradgrad,
            g,
        );
        self.add(
            op,
            "0-dim",
            node,
            vec![c(&[], d0, 10), c(&[3], d1, 11)],
            gradgrad,
            g,
        );
    }
}

fn one(t: Tensor) -> Result<Vec<Tensor>> {
    Ok(vec![t])
}

fn cases() -> Vec<Case> {
    use Dom::*;
    let mut k = Cases::default();

    // Pointwise unary.
    k.unary("abs", "AbsBackward0", Any, true, |x| op::abs::call(x));
    k.unary("cos", "CosBackward0", Any, true, |x| op::cos::call(x));
    k.unary("sin", "SinBackward0", Any, true, |x| op::sin::call(x));
    k.unary("tan", "TanBackward0", Unit, true, |x| op::tan::call(x));
    k.unary("tanh", "TanhBackward0", Any, true, |x| op::tanh::call(x));
    k.unary("sigmoid", "SigmoidBackward0", Any, true, |x| {
        op::sigmoid::call(x)
    });
    k.unary("erf", "ErfBackward0", Any, true, |x| op::erf::call(x));
    k.unary("exp", "ExpBackward0", Any, true, |x| op::exp::call(x));
    k.unary("expm1", "Expm1Backward0", Any, true, |x| op::expm1::call(x));
    k.unary("log", "LogBackward0", Pos, true, |x| op::log::call(x));
    k.unary("log1p", "Log1PBackward0", Pos, true, |x| op::log1p::call(x));
    k.unary("log2", "Log2Backward0", Pos, true, |x| op::log2::call(x));
    k.unary("reciprocal", "ReciprocalBackward0", Pos, true, |x| {
        op::reciprocal::call(x)
    });
    k.unary("neg", "NegBackward0", Any, true, |x| op::neg::call(x));
    k.unary("relu", "ReluBackward0", Any, true, |x| op::relu::call(x));
    k.unary("gelu", "GeluBackward0", Any, true, |x| {
        op::gelu::call(x, "none")
    });
    k.unary("gelu(tanh)", "GeluBackward0", Any, true, |x| {
        op::gelu::call(x, "tanh")
    });
    k.unary("rsqrt", "RsqrtBackward0", Pos, true, |x| op::rsqrt::call(x));
    k.unary("sqrt", "SqrtBackward0", Pos, true, |x| op::sqrt::call(x));
    k.unary("silu", "SiluBackward0", Any, true, |x| op::silu::call(x));
    k.unary("nan_to_num", "NanToNumBackward0", Any, true, |x| {
        op::nan_to_num::call(x, None, None, None)
    });
    k.unary("ceil", "CeilBackward0", Any, true, |x| op::ceil::call(x));
    k.unary("floor", "FloorBackward0", Any, true, |x| op::floor::call(x));
    k.unary("round", "RoundBackward0", Any, true, |x| op::round::call(x));
    k.unary("round.decimals", "RoundBackward1", Any, true, |x| {
        op::round_decimals::call(x, 1)
    });
    k.unary("trunc", "TruncBackward0", Any, true, |x| op::trunc::call(x));
    k.unary("sign", "SignBackward0", Any, true, |x| op::sign::call(x));
    k.unary("clone", "CloneBackward0", Any, true, |x| {
        op::clone::call(x, None)
    });
    k.unary("alias", "AliasBackward0", Any, true, |x| op::alias::call(x));
    // unfold_backward of x.unfold(1, 2, 1) with x of sizes (2, 4) (overlapping windows) and
    // of x.unfold(-1, 2, 3) with x of sizes (2, 5) (gaps), on contiguous and transposed grads.
    k.add(
        "unfold_backward",
        "overlapping windows",
        "UnfoldBackwardBackward0",
        vec![c(&[2, 3, 2], Any, 91)],
        true,
        |x| one(op::unfold_backward::call(&x[0], &[2, 4], 1, 2, 1)?),
    );
    k.add(
        "unfold_backward",
        "gaps, transposed grad, negative dim",
        "UnfoldBackwardBackward0",
        vec![nc(&[2, 2, 2], Any, 92)],
        true,
        |x| one(op::unfold_backward::call(&x[0], &[2, 5], -1, 2, 3)?),
    );
    k.unary("lift", "LiftBackward0", Any, true, |x| op::lift::call(x));
    k.unary("lift_fresh", "LiftFreshBackward0", Any, true, |x| {
        op::lift_fresh::call(x)
    });
    k.unary("_to_copy", "ToCopyBackward0", Any, true, |x| {
        op::_to_copy::call(x, Some(ScalarType::Double), None, None, None, false, None)
    });
    k.unary("add.Scalar", "AddBackward1", Any, true, |x| {
        op::add_Scalar::call(x, Scalar::Float(1.5), Scalar::Int(2))
    });
    k.unary("sub.Scalar", "SubBackward1", Any, true, |x| {
        op::sub_Scalar::call(x, Scalar::Float(1.5), Scalar::Int(2))
    });
    k.unary("mul.Scalar", "MulBackward1", Any, true, |x| {
        op::mul_Scalar::call(x, Scalar::Float(-1.5))
    });
    k.unary("div.Scalar", "DivBackward1", Any, true, |x| {
        op::div_Scalar::call(x, Scalar::Float(-1.5))
    });
    k.unary("div.Scalar_mode", "DivBackward3", Any, true, |x| {
        op::div_Scalar_mode::call(x, Scalar::Float(0.7), Some("floor"))
    });
    k.unary("fmod.Scalar", "FmodBackward0", Any, true, |x| {
        op::fmod_Scalar::call(x, Scalar::Float(0.75))
    });
    k.unary("remainder.Scalar", "RemainderBackward0", Any, true, |x| {
        op::remainder_Scalar::call(x, Scalar::Float(0.75))
    });
    k.unary("pow.Tensor_Scalar", "PowBackward0", Pos, true, |x| {
        op::pow_Tensor_Scalar::call(x, Scalar::Float(2.5))
    });
    k.unary("pow.Tensor_Scalar(int)", "PowBackward0", Any, true, |x| {
        op::pow_Tensor_Scalar::call(x, Scalar::Int(3))
    });
    k.unary("pow.Scalar", "PowBackward2", Any, true, |x| {
        op::pow_Scalar::call(Scalar::Float(1.7), x)
    });
    k.unary("clamp", "ClampBackward1", Any, true, |x| {
        op::clamp::call(x, Some(Scalar::Float(-0.5)), Some(Scalar::Float(1.0)))
    });
    k.unary("clamp_min", "ClampMinBackward0", Any, true, |x| {
        op::clamp_min::call(x, Scalar::Float(0.1))
    });
    k.unary("clamp_max", "ClampMaxBackward0", Any, true, |x| {
        op::clamp_max::call(x, Scalar::Float(0.1))
    });
    k.unary(
        "masked_fill.Scalar",
        "MaskedFillBackward0",
        Any,
        true,
        |x| {
            let m = op::gt_Scalar::call(&op::detach::call(x)?, Scalar::Float(0.5))?;
            op::masked_fill_Scalar::call(x, &m, Scalar::Float(2.0))
        },
    );
    k.unary("fill.Scalar", "FillBackward0", Any, true, |x| {
        op::fill_Scalar::call(x, Scalar::Float(2.0))
    });
    k.unary("zero", "ZeroBackward0", Any, true, |x| op::zero::call(x));

    // Pointwise binary.
    k.binary("add.Tensor", "AddBackward0", Any, Any, true, |a, b| {
        op::add_Tensor::call(a, b, Scalar::Float(-2.0))
    });
    k.binary("sub.Tensor", "SubBackward0", Any, Any, true, |a, b| {
        op::sub_Tensor::call(a, b, Scalar::Float(3.0))
    });
    k.binary("mul.Tensor", "MulBackward0", Any, Any, true, |a, b| {
        op::mul_Tensor::call(a, b)
    });
    k.binary("div.Tensor", "DivBackward0", Any, Pos, true, |a, b| {
        op::div_Tensor::call(a, b)
    });
    k.binary("div.Tensor_mode", "DivBackward2", Any, Pos, true, |a, b| {
        op::div_Tensor_mode::call(a, b, Some("trunc"))
    });
    k.binary("atan2", "Atan2Backward0", Any, Any, true, |a, b| {
        op::atan2::call(a, b)
    });
    k.binary("fmod.Tensor", "FmodBackward1", Any, Pos, true, |a, b| {
        op::fmod_Tensor::call(a, b)
    });
    k.binary(
        "remainder.Tensor",
        "RemainderBackward1",
        Any,
        Pos,
        true,
        |a, b| op::remainder_Tensor::call(a, b),
    );
    k.binary("maximum", "MaximumBackward0", Any, Any, true, |a, b| {
        op::maximum::call(a, b)
    });
    k.binary("minimum", "MinimumBackward0", Any, Any, true, |a, b| {
        op::minimum::call(a, b)
    });
    k.binary(
        "clamp_min.Tensor",
        "ClampMinBackward1",
        Any,
        Any,
        true,
        |a, b| op::clamp_min_Tensor::call(a, b),
    );
    k.binary(
        "clamp_max.Tensor",
        "ClampMaxBackward1",
        Any,
        Any,
        true,
        |a, b| op::clamp_max_Tensor::call(a, b),
    );
    k.binary(
        "pow.Tensor_Tensor",
        "PowBackward1",
        Pos,
        Any,
        true,
        |a, b| op::pow_Tensor_Tensor::call(a, b),
    );
    k.binary("where.self", "WhereBackward0", Any, Any, true, |a, b| {
        let cond = op::gt_Scalar::call(&op::detach::call(a)?, Scalar::Float(0.0))?;
        op::where_self::call(&cond, a, b)
    });
    k.binary(
        "mse_loss(none)",
        "MseLossBackward0",
        Any,
        Any,
        true,
        |a, b| op::mse_loss::call(a, b, 0),
    );
    k.binary(
        "mse_loss(mean)",
        "MseLossBackward0",
        Any,
        Any,
        true,
        |a, b| op::mse_loss::call(a, b, 1),
    );
    k.binary(
        "mse_loss(sum)",
        "MseLossBackward0",
        Any,
        Any,
        true,
        |a, b| op::mse_loss::call(a, b, 2),
    );
    k.add(
        "remainder.Scalar_Tensor",
        "contiguous",
        "RemainderBackward2",
        vec![c(&[3, 4], Pos, 12)],
        true,
        |x| {
            one(op::remainder_Scalar_Tensor::call(
                Scalar::Float(2.3),
                &x[0],
            )?)
        },
    );
    k.add(
        "clamp.Tensor",
        "contiguous",
        "ClampBackward0",
        vec![c(&[3, 4], Any, 13), c(&[3, 4], Any, 14), c(&[4], Pos, 15)],
        true,
        |x| {
            let lo = op::sub_Scalar::call(&x[1], Scalar::Float(0.5), Scalar::Int(1))?;
            one(op::clamp_Tensor::call(&x[0], Some(&lo), Some(&x[2]))?)
        },
    );
    k.add(
        "clamp.Tensor(min)",
        "broadcast",
        "ClampBackward0",
        vec![c(&[3, 4], Any, 16), c(&[3, 1], Any, 17)],
        true,
        |x| one(op::clamp_Tensor::call(&x[0], Some(&x[1]), None)?),
    );
    k.add(
        "clamp.Tensor(max)",
        "transposed",
        "ClampBackward0",
        vec![nc(&[3, 4], Any, 18), c(&[4], Any, 19)],
        true,
        |x| one(op::clamp_Tensor::call(&x[0], None, Some(&x[1]))?),
    );
    k.add(
        "masked_fill.Tensor",
        "contiguous",
        "MaskedFillBackward1",
        vec![c(&[3, 4], Any, 20), c(&[], Any, 21)],
        true,
        |x| {
            let m = op::gt_Scalar::call(&op::detach::call(&x[0])?, Scalar::Float(0.0))?;
            one(op::masked_fill_Tensor::call(&x[0], &m, &x[1])?)
        },
    );
    k.add(
        "fill.Tensor",
        "contiguous",
        "FillBackward1",
        vec![c(&[3, 4], Any, 22), c(&[], Any, 23)],
        true,
        |x| one(op::fill_Tensor::call(&x[0], &x[1])?),
    );
    k.add(
        "copy",
        "broadcast",
        "CopyBackward0",
        vec![c(&[3, 4], Any, 24), c(&[4], Any, 25)],
        true,
        |x| one(op::copy::call(&x[0], &x[1], false)?),
    );
    k.add(
        "dot",
        "contiguous",
        "DotBackward0",
        vec![c(&[5], Any, 26), nc(&[5], Any, 27)],
        true,
        |x| one(op::dot::call(&x[0], &x[1])?),
    );

    // Matrix products.
    k.add(
        "mm",
        "contiguous",
        "MmBackward0",
        vec![c(&[3, 4], Any, 30), c(&[4, 2], Any, 31)],
        true,
        |x| one(op::mm::call(&x[0], &x[1])?),
    );
    k.add(
        "mm",
        "transposed",
        "MmBackward0",
        vec![nc(&[3, 4], Any, 32), nc(&[4, 2], Any, 33)],
        true,
        |x| one(op::mm::call(&x[0], &x[1])?),
    );
    k.add(
        "bmm",
        "contiguous",
        "BmmBackward0",
        vec![c(&[2, 3, 4], Any, 34), nc(&[2, 4, 2], Any, 35)],
        true,
        |x| one(op::bmm::call(&x[0], &x[1])?),
    );
    k.add(
        "addmm",
        "broadcast",
        "AddmmBackward0",
        vec![c(&[2], Any, 36), c(&[3, 4], Any, 37), nc(&[4, 2], Any, 38)],
        true,
        |x| {
            one(op::addmm::call(
                &x[0],
                &x[1],
                &x[2],
                Scalar::Float(0.5),
                Scalar::Float(2.0),
            )?)
        },
    );
    k.add(
        "baddbmm",
        "broadcast",
        "BaddbmmBackward0",
        vec![
            c(&[3, 1], Any, 39),
            c(&[2, 3, 4], Any, 40),
            c(&[2, 4, 2], Any, 41),
        ],
        true,
        |x| {
            one(op::baddbmm::call(
                &x[0],
                &x[1],
                &x[2],
                Scalar::Float(0.5),
                Scalar::Float(2.0),
            )?)
        },
    );

    // Reductions.
    for (variant, x) in [
        ("contiguous", c(&[3, 4], Any, 50)),
        ("transposed", nc(&[3, 4], Any, 51)),
    ] {
        k.add("sum", variant, "SumBackward0", vec![x.clone()], true, |x| {
            one(op::sum::call(&x[0], None)?)
        });
        k.add(
            "sum.dim_IntList",
            variant,
            "SumBackward1",
            vec![x.clone()],
            true,
            |x| one(op::sum_dim_IntList::call(&x[0], Some(&[1]), false, None)?),
        );
        k.add(
            "mean",
            variant,
            "MeanBackward0",
            vec![x.clone()],
            true,
            |x| one(op::mean::call(&x[0], None)?),
        );
        k.add(
            "mean.dim",
            variant,
            "MeanBackward1",
            vec![x.clone()],
            true,
            |x| one(op::mean_dim::call(&x[0], Some(&[0]), true, None)?),
        );
        k.add(
            "prod",
            variant,
            "ProdBackward0",
            vec![x.clone()],
            true,
            |x| one(op::prod::call(&x[0], None)?),
        );
        k.add(
            "prod.dim_int",
            variant,
            "ProdBackward1",
            vec![x.clone()],
            true,
            |x| one(op::prod_dim_int::call(&x[0], 1, false, None)?),
        );
        k.add(
            "var.correction",
            variant,
            "VarBackward0",
            vec![x.clone()],
            true,
            |x| one(op::var_correction::call(&x[0], Some(&[1]), None, false)?),
        );
        k.add(
            "std.correction",
            variant,
            "StdBackward0",
            vec![x.clone()],
            true,
            |x| {
                one(op::std_correction::call(
                    &x[0],
                    None,
                    Some(Scalar::Int(0)),
                    true,
                )?)
            },
        );
        k.add(
            "var_mean.correction",
            variant,
            "VarMeanBackward0",
            vec![x.clone()],
            true,
            |x| {
                let (v, m) = op::var_mean_correction::call(&x[0], Some(&[0]), None, false)?;
                Ok(vec![v, m])
            },
        );
        k.add("max", variant, "MaxBackward1", vec![x.clone()], true, |x| {
            one(op::max::call(&x[0])?)
        });
        k.add("min", variant, "MinBackward1", vec![x.clone()], true, |x| {
            one(op::min::call(&x[0])?)
        });
        k.add(
            "max.dim",
            variant,
            "MaxBackward0",
            vec![x.clone()],
            true,
            |x| one(op::max_dim::call(&x[0], 1, false)?.0),
        );
        k.add(
            "min.dim",
            variant,
            "MinBackward0",
            vec![x.clone()],
            true,
            |x| one(op::min_dim::call(&x[0], 0, true)?.0),
        );
        k.add(
            "amax",
            variant,
            "AmaxBackward0",
            vec![x.clone()],
            true,
            |x| one(op::amax::call(&x[0], &[1], false)?),
        );
        k.add(
            "amin",
            variant,
            "AminBackward0",
            vec![x.clone()],
            true,
            |x| one(op::amin::call(&x[0], &[], true)?),
        );
        k.add(
            "logsumexp",
            variant,
            "LogsumexpBackward0",
            vec![x.clone()],
            true,
            |x| one(op::logsumexp::call(&x[0], &[1], false)?),
        );
        k.add(
            "cumsum",
            variant,
            "CumsumBackward0",
            vec![x.clone()],
            true,
            |x| one(op::cumsum::call(&x[0], 1, None)?),
        );
        k.add(
            "cumprod",
            variant,
            "CumprodBackward0",
            vec![x.clone()],
            true,
            |x| one(op::cumprod::call(&x[0], 0, None)?),
        );
        k.add(
            "linalg_vector_norm(2)",
            variant,
            "LinalgVectorNormBackward0",
            vec![x.clone()],
            true,
            |x| {
                one(op::linalg_vector_norm::call(
                    &x[0],
                    Scalar::Int(2),
                    None,
                    false,
                    None,
                )?)
            },
        );
        k.add(
            "linalg_vector_norm(1)",
            variant,
            "LinalgVectorNormBackward0",
            vec![x.clone()],
            true,
            |x| {
                one(op::linalg_vector_norm::call(
                    &x[0],
                    Scalar::Int(1),
                    Some(&[1]),
                    false,
                    None,
                )?)
            },
        );
        k.add(
            "linalg_vector_norm(3)",
            variant,
            "LinalgVectorNormBackward0",
            vec![x.clone()],
            true,
            |x| {
                one(op::linalg_vector_norm::call(
                    &x[0],
                    Scalar::Float(3.0),
                    Some(&[0]),
                    true,
                    None,
                )?)
            },
        );
        k.add(
            "linalg_vector_norm(inf)",
            variant,
            "LinalgVectorNormBackward0",
            vec![x.clone()],
            true,
            |x| {
                one(op::linalg_vector_norm::call(
                    &x[0],
                    Scalar::Float(f64::INFINITY),
                    Some(&[1]),
                    false,
                    None,
                )?)
            },
        );
        k.add(
            "sort",
            variant,
            "SortBackward0",
            vec![x.clone()],
            true,
            |x| one(op::sort::call(&x[0], 1, true)?.0),
        );
        k.add(
            "sort.stable",
            variant,
            "SortBackward1",
            vec![x.clone()],
            true,
            |x| one(op::sort_stable::call(&x[0], Some(true), 0, false)?.0),
        );
        k.add(
            "topk",
            variant,
            "TopkBackward0",
            vec![x.clone()],
            true,
            |x| one(op::topk::call(&x[0], 2, 1, true, true)?.0),
        );
        k.add(
            "_softmax",
            variant,
            "SoftmaxBackward0",
            vec![x.clone()],
            true,
            |x| one(op::_softmax::call(&x[0], 1, false)?),
        );
        k.add(
            "_log_softmax",
            variant,
            "LogSoftmaxBackward0",
            vec![x.clone()],
            true,
            |x| one(op::_log_softmax::call(&x[0], 0, false)?),
        );
    }
    for (name, node) in [
        ("sum", "SumBackward0"),
        ("mean", "MeanBackward0"),
        ("prod", "ProdBackward0"),
        ("max", "MaxBackward1"),
    ] {
        k.add(name, "0-dim", node, vec![c(&[], Any, 52)], true, move |x| {
            one(match name {
                "sum" => op::sum::call(&x[0], None)?,
                "mean" => op::mean::call(&x[0], None)?,
                "prod" => op::prod::call(&x[0], None)?,
                _ => op::max::call(&x[0])?,
            })
        });
    }
    k.add(
        "prod(zero)",
        "contiguous",
        "ProdBackward0",
        vec![leaf(floats(&[2.0, 0.0, 3.0, -1.5]))],
        true,
        |x| one(op::prod::call(&x[0], None)?),
    );
    k.add(
        "prod.dim_int(zero)",
        "contiguous",
        "ProdBackward1",
        vec![leaf(
            Tensor::from_vec(vec![2.0, 0.0, 3.0, -1.5, 0.5, 0.0], &[2, 3]).unwrap(),
        )],
        true,
        |x| one(op::prod_dim_int::call(&x[0], 1, true, None)?),
    );
    k.add(
        "cumprod(zero)",
        "contiguous",
        "CumprodBackward0",
        vec![leaf(floats(&[2.0, 0.0, 3.0, -1.5]))],
        true,
        |x| one(op::cumprod::call(&x[0], 0, None)?),
    );

    // Shapes and views.
    for (variant, x) in [
        ("contiguous", c(&[3, 4], Any, 60)),
        ("transposed", nc(&[3, 4], Any, 61)),
    ] {
        k.add(
            "view",
            variant,
            "ViewBackward0",
            vec![x.clone()],
            true,
            |x| {
                one(op::view::call(
                    &op::contiguous::call(&x[0], switchyard_core::MemoryFormat::Contiguous)?,
                    &[4, 3],
                )?)
            },
        );
        k.add(
            "expand",
            variant,
            "ExpandBackward0",
            vec![x.clone()],
            true,
            |x| {
                one(op::expand::call(
                    &op::unsqueeze::call(&x[0], 0)?,
                    &[2, 3, 4],
                    false,
                )?)
            },
        );
        k.add(
            "permute",
            variant,
            "PermuteBackward0",
            vec![x.clone()],
            true,
            |x| one(op::permute::call(&x[0], &[1, 0])?),
        );
        k.add(
            "transpose.int",
            variant,
            "TransposeBackward0",
            vec![x.clone()],
            true,
            |x| one(op::transpose_int::call(&x[0], 0, 1)?),
        );
        k.add("t", variant, "TBackward0", vec![x.clone()], true, |x| {
            one(op::t::call(&x[0])?)
        });
        k.add(
            "diagonal",
            variant,
            "DiagonalBackward0",
            vec![x.clone()],
            true,
            |x| one(op::diagonal::call(&x[0], 1, 0, 1)?),
        );
        k.add(
            "select.int",
            variant,
            "SelectBackward0",
            vec![x.clone()],
            true,
            |x| one(op::select_int::call(&x[0], 1, -2)?),
        );
        k.add(
            "slice.Tensor",
            variant,
            "SliceBackward0",
            vec![x.clone()],
            true,
            |x| one(op::slice_Tensor::call(&x[0], 1, Some(1), None, 2)?),
        );
        k.add(
            "unsqueeze",
            variant,
            "UnsqueezeBackward0",
            vec![x.clone()],
            true,
            |x| one(op::unsqueeze::call(&x[0], -1)?),
        );
        k.add(
            "unfold",
            variant,
            "UnfoldBackward0",
            vec![x.clone()],
            true,
            |x| one(op::unfold::call(&x[0], 1, 2, 1)?),
        );
        k.add(
            "unfold",
            variant,
            "UnfoldBackward0",
            vec![x.clone()],
            true,
            |x| one(op::unfold::call(&x[0], -1, 2, 3)?),
        );
        k.add(
            "as_strided",
            variant,
            "AsStridedBackward0",
            vec![x.clone()],
            true,
            |x| one(op::as_strided::call(&x[0], &[2, 2], &[1, 2], Some(1))?),
        );
        k.add(
            "flip",
            variant,
            "FlipBackward0",
            vec![x.clone()],
            true,
            |x| one(op::flip::call(&x[0], &[0, 1])?),
        );
        k.add(
            "roll",
            variant,
            "RollBackward0",
            vec![x.clone()],
            true,
            |x| one(op::roll::call(&x[0], &[1, -2], &[0, 1])?),
        );
        k.add(
            "repeat",
            variant,
            "RepeatBackward0",
            vec![x.clone()],
            true,
            |x| one(op::repeat::call(&x[0], &[2, 1, 2])?),
        );
        k.add(
            "constant_pad_nd",
            variant,
            "ConstantPadNdBackward0",
            vec![x.clone()],
            true,
            |x| {
                one(op::constant_pad_nd::call(
                    &x[0],
                    &[1, 2, 0, 1],
                    Scalar::Float(0.5),
                )?)
            },
        );
        k.add(
            "constant_pad_nd(crop)",
            variant,
            "ConstantPadNdBackward0",
            vec![x.clone()],
            true,
            |x| {
                one(op::constant_pad_nd::call(
                    &x[0],
                    &[-1, 1],
                    Scalar::Float(0.5),
                )?)
            },
        );
        k.add(
            "tril",
            variant,
            "TrilBackward0",
            vec![x.clone()],
            true,
            |x| one(op::tril::call(&x[0], 0)?),
        );
        k.add(
            "triu",
            variant,
            "TriuBackward0",
            vec![x.clone()],
            true,
            |x| one(op::triu::call(&x[0], 1)?),
        );
        k.add(
            "split.Tensor",
            variant,
            "SplitBackward0",
            vec![x.clone()],
            true,
            |x| {
                let parts = op::split_Tensor::call(&x[0], 3, 1)?;
                Ok(vec![
                    parts[1].clone(),
                    op::mul_Scalar::call(&parts[0], Scalar::Float(2.0))?,
                ])
            },
        );
        k.add(
            "split_with_sizes",
            variant,
            "SplitWithSizesBackward0",
            vec![x.clone()],
            true,
            |x| {
                // Only one output is used: the other's gradient is zeros.
                let parts = op::split_with_sizes::call(&x[0], &[1, 2], 0)?;
                Ok(vec![parts[1].clone()])
            },
        );
        k.add(
            "unbind.int",
            variant,
            "UnbindBackward0",
            vec![x.clone()],
            true,
            |x| {
                let parts = op::unbind_int::call(&x[0], 1)?;
                Ok(vec![parts[0].clone(), parts[3].clone()])
            },
        );
    }
    // `_unsafe_view` needs a viewable input, as PyTorch's does.
    k.add(
        "_unsafe_view",
        "contiguous",
        "UnsafeViewBackward0",
        vec![c(&[3, 4], Any, 59)],
        true,
        |x| one(op::_unsafe_view::call(&x[0], &[2, 6])?),
    );
    k.add(
        "squeeze",
        "contiguous",
        "SqueezeBackward0",
        vec![c(&[3, 1, 2, 1], Any, 62)],
        true,
        |x| one(op::squeeze::call(&x[0])?),
    );
    k.add(
        "squeeze.dim",
        "contiguous",
        "SqueezeBackward1",
        vec![c(&[3, 1, 2], Any, 63)],
        true,
        |x| one(op::squeeze_dim::call(&x[0], 1)?),
    );
    k.add(
        "squeeze.dims",
        "transposed",
        "SqueezeBackward2",
        vec![nc(&[1, 3, 2], Any, 64)],
        true,
        |x| one(op::squeeze_dims::call(&x[0], &[0, -1, 1])?),
    );
    k.add(
        "squeeze",
        "0-dim",
        "SqueezeBackward0",
        vec![c(&[], Any, 65)],
        true,
        |x| one(op::squeeze::call(&x[0])?),
    );
    k.add(
        "unsqueeze",
        "0-dim",
        "UnsqueezeBackward0",
        vec![c(&[], Any, 66)],
        true,
        |x| one(op::unsqueeze::call(&x[0], 0)?),
    );
    k.add(
        "expand",
        "0-dim",
        "ExpandBackward0",
        vec![c(&[], Any, 67)],
        true,
        |x| one(op::expand::call(&x[0], &[2, 3], false)?),
    );
    k.add(
        "cat",
        "mixed",
        "CatBackward0",
        vec![
            c(&[1, 3], Any, 68),
            nc(&[2, 3], Any, 69),
            c(&[3, 3], Any, 70),
        ],
        true,
        |x| {
            one(op::cat::call(
                &[x[0].clone(), x[1].clone(), x[2].clone()],
                -2,
            )?)
        },
    );
    k.add(
        "stack",
        "mixed",
        "StackBackward0",
        vec![c(&[2, 3], Any, 71), nc(&[2, 3], Any, 72)],
        true,
        |x| one(op::stack::call(&[x[0].clone(), x[1].clone()], 1)?),
    );
    k.add(
        "slice_scatter",
        "contiguous",
        "SliceScatterBackward0",
        vec![c(&[4, 3], Any, 73), c(&[2, 3], Any, 74)],
        true,
        |x| one(op::slice_scatter::call(&x[0], &x[1], 0, Some(1), None, 2)?),
    );
    k.add(
        "select_scatter",
        "contiguous",
        "SelectScatterBackward0",
        vec![nc(&[4, 3], Any, 75), c(&[4], Any, 76)],
        true,
        |x| one(op::select_scatter::call(&x[0], &x[1], 1, 2)?),
    );
    k.add(
        "diagonal_scatter",
        "contiguous",
        "DiagonalScatterBackward0",
        vec![c(&[3, 4], Any, 77), c(&[3], Any, 78)],
        true,
        |x| one(op::diagonal_scatter::call(&x[0], &x[1], 1, 0, 1)?),
    );
    k.add(
        "as_strided_scatter",
        "contiguous",
        "AsStridedScatterBackward0",
        vec![c(&[3, 4], Any, 79), c(&[2, 2], Any, 80)],
        true,
        |x| {
            one(op::as_strided_scatter::call(
                &x[0],
                &x[1],
                &[2, 2],
                &[4, 1],
                Some(1),
            )?)
        },
    );

    // The scatters on transposed inputs, with negative dimensions and bounds.
    k.add(
        "slice_scatter",
        "transposed, negative dim",
        "SliceScatterBackward0",
        vec![nc(&[3, 4], Any, 81), nc(&[3, 2], Any, 82)],
        true,
        |x| {
            one(op::slice_scatter::call(
                &x[0],
                &x[1],
                -1,
                Some(-3),
                Some(-1),
                1,
            )?)
        },
    );
    k.add(
        "select_scatter",
        "transposed, negative dim",
        "SelectScatterBackward0",
        vec![nc(&[2, 3, 4], Any, 83), c(&[2, 3], Any, 84)],
        true,
        |x| one(op::select_scatter::call(&x[0], &x[1], -1, -4)?),
    );
    k.add(
        "diagonal_scatter",
        "transposed, negative dims",
        "DiagonalScatterBackward0",
        vec![nc(&[2, 3, 4], Any, 85), nc(&[2, 3], Any, 86)],
        true,
        |x| one(op::diagonal_scatter::call(&x[0], &x[1], -1, -1, -2)?),
    );

    // The view copies: the views' formulas, under the views' node names with `_copy`.
    for (variant, x) in [
        ("contiguous", c(&[3, 4], Any, 87)),
        ("transposed", nc(&[3, 4], Any, 88)),
    ] {
        k.add(
            "view_copy",
            variant,
            "ViewBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::view_copy::call(&x[0], &[2, -1, 3])?),
        );
        k.add(
            "expand_copy",
            variant,
            "ExpandBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::expand_copy::call(&x[0], &[2, -1, 4], false)?),
        );
        k.add(
            "permute_copy",
            variant,
            "PermuteBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::permute_copy::call(&x[0], &[-1, 0])?),
        );
        k.add(
            "transpose_copy.int",
            variant,
            "TransposeBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::transpose_copy_int::call(&x[0], -1, 0)?),
        );
        k.add(
            "t_copy",
            variant,
            "TBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::t_copy::call(&x[0])?),
        );
        k.add(
            "diagonal_copy",
            variant,
            "DiagonalBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::diagonal_copy::call(&x[0], -1, 0, 1)?),
        );
        k.add(
            "select_copy.int",
            variant,
            "SelectBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::select_copy_int::call(&x[0], -1, -2)?),
        );
        k.add(
            "slice_copy.Tensor",
            variant,
            "SliceBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::slice_copy_Tensor::call(&x[0], -1, Some(-3), None, 2)?),
        );
        k.add(
            "narrow_copy",
            variant,
            "NarrowCopyBackward0",
            vec![x.clone()],
            true,
            |x| one(op::narrow_copy::call(&x[0], -1, 1, 2)?),
        );
        k.add(
            "unsqueeze_copy",
            variant,
            "UnsqueezeBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::unsqueeze_copy::call(&x[0], -2)?),
        );
        k.add(
            "unfold_copy",
            variant,
            "UnfoldBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::unfold_copy::call(&x[0], -1, 2, 1)?),
        );
        k.add(
            "as_strided_copy",
            variant,
            "AsStridedBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::as_strided_copy::call(&x[0], &[2, 2], &[1, 2], Some(1))?),
        );
        k.add(
            "alias_copy",
            variant,
            "AliasBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::alias_copy::call(&x[0])?),
        );
        k.add(
            "lift_fresh_copy",
            variant,
            "LiftFreshBackward0_copy",
            vec![x.clone()],
            true,
            |x| one(op::lift_fresh_copy::call(&x[0])?),
        );
        k.add(
            "split_copy.Tensor",
            variant,
            "SplitBackward0_copy",
            vec![x.clone()],
            true,
            |x| {
                let parts = op::split_copy_Tensor::call(&x[0], 3, -1)?;
                Ok(vec![
                    parts[1].clone(),
                    op::mul_Scalar::call(&parts[0], Scalar::Float(2.0))?,
                ])
            },
        );
        k.add(
            "split_with_sizes_copy",
            variant,
            "SplitWithSizesBackward0_copy",
            vec![x.clone()],
            true,
            |x| {
                let parts = op::split_with_sizes_copy::call(&x[0], &[1, 2], 0)?;
                Ok(vec![parts[1].clone()])
            },
        );
        k.add(
            "unbind_copy.int",
            variant,
            "UnbindBackward0_copy",
            vec![x.clone()],
            true,
            |x| {
                let parts = op::unbind_copy_int::call(&x[0], -1)?;
                Ok(vec![parts[0].clone(), parts[3].clone()])
            },
        );
    }
    // A negative start ending at the dimension's end (PyTorch's formula slices `[-2:0]` here
    // and fails; see `narrow_copy_backward`).
    k.add(
        "narrow_copy",
        "transposed, negative start",
        "NarrowCopyBackward0",
        vec![nc(&[3, 4], Any, 93)],
        true,
        |x| one(op::narrow_copy::call(&x[0], 1, -2, 2)?),
    );
    k.add(
        "squeeze_copy",
        "contiguous",
        "SqueezeBackward0_copy",
        vec![c(&[3, 1, 2, 1], Any, 89)],
        true,
        |x| one(op::squeeze_copy::call(&x[0])?),
    );
    k.add(
        "squeeze_copy.dim",
        "contiguous",
        "SqueezeBackward1_copy",
        vec![c(&[3, 1, 2], Any, 90)],
        true,
        |x| one(op::squeeze_copy_dim::call(&x[0], -2)?),
    );
    k.add(
        "squeeze_copy.dims",
        "transposed",
        "SqueezeBackward2_copy",
        vec![nc(&[1, 3, 2], Any, 91)],
        true,
        |x| one(op::squeeze_copy_dims::call(&x[0], &[0, -1, 1])?),
    );
    k.add(
        "expand_copy",
        "0-dim",
        "ExpandBackward0_copy",
        vec![c(&[], Any, 92)],
        true,
        |x| one(op::expand_copy::call(&x[0], &[2, 3], false)?),
    );

    // Indexing.
    let idx2 = || long(&[2, 0, 1, 1, 3, 0], &[3, 2]);
    k.add(
        "gather",
        "contiguous",
        "GatherBackward0",
        vec![c(&[3, 4], Any, 90)],
        true,
        move |x| one(op::gather::call(&x[0], 1, &idx2(), false)?),
    );
    k.add(
        "index_select",
        "transposed",
        "IndexSelectBackward0",
        vec![nc(&[3, 4], Any, 91)],
        true,
        |x| one(op::index_select::call(&x[0], 1, &long(&[3, 0, 3], &[3]))?),
    );
    k.add(
        "index.Tensor",
        "contiguous",
        "IndexBackward0",
        vec![c(&[3, 4], Any, 92)],
        true,
        |x| {
            one(op::index_Tensor::call(
                &x[0],
                &[None, Some(long(&[1, 1, 3], &[3]))],
            )?)
        },
    );
    k.add(
        "index.Tensor(bool)",
        "contiguous",
        "IndexBackward0",
        vec![c(&[3, 4], Any, 93)],
        true,
        |x| {
            let m = boolean(&[true, false, true], &[3]);
            one(op::index_Tensor::call(&x[0], &[Some(m)])?)
        },
    );
    k.add(
        "index_put",
        "contiguous",
        "IndexPutBackward0",
        vec![c(&[3, 4], Any, 94), c(&[2], Any, 95)],
        true,
        |x| {
            let i = [Some(long(&[0, 2], &[2])), Some(long(&[1, 3], &[2]))];
            one(op::index_put::call(&x[0], &i, &x[1], false)?)
        },
    );
    k.add(
        "index_put(accumulate)",
        "broadcast",
        "IndexPutBackward0",
        vec![c(&[3, 4], Any, 96), c(&[4], Any, 97)],
        true,
        |x| {
            let i = [Some(long(&[0, 2, 0], &[3]))];
            one(op::index_put::call(&x[0], &i, &x[1], true)?)
        },
    );
    k.add(
        "_index_put_impl",
        "contiguous",
        "IndexPutImplBackward0",
        vec![c(&[3, 4], Any, 98), c(&[2], Any, 99)],
        true,
        |x| {
            let i = [Some(long(&[0, 2], &[2])), Some(long(&[1, 3], &[2]))];
            one(op::_index_put_impl::call(&x[0], &i, &x[1], false, false)?)
        },
    );
    k.add(
        "masked_select",
        "broadcast",
        "MaskedSelectBackward0",
        vec![c(&[3, 1], Any, 100)],
        true,
        |x| {
            let m = boolean(&[true, false, true, true], &[4]);
            one(op::masked_select::call(&x[0], &m)?)
        },
    );
    k.add(
        "scatter.src",
        "contiguous",
        "ScatterBackward0",
        vec![c(&[3, 4], Any, 101), c(&[3, 2], Any, 102)],
        true,
        move |x| {
            one(op::scatter_src::call(
                &x[0],
                1,
                &long(&[2, 0, 1, 3, 3, 0], &[3, 2]),
                &x[1],
            )?)
        },
    );
    k.add(
        "scatter.value",
        "contiguous",
        "ScatterBackward1",
        vec![c(&[3, 4], Any, 103)],
        true,
        move |x| {
            one(op::scatter_value::call(
                &x[0],
                1,
                &idx2(),
                Scalar::Float(1.5),
            )?)
        },
    );
    k.add(
        "scatter.value_reduce(add)",
        "contiguous",
        "ScatterBackward2",
        vec![c(&[3, 4], Any, 106)],
        true,
        move |x| {
            one(op::scatter_value_reduce::call(
                &x[0],
                1,
                &idx2(),
                Scalar::Float(1.5),
                "add",
            )?)
        },
    );
    k.add(
        "scatter_add",
        "contiguous",
        "ScatterAddBackward0",
        vec![c(&[3, 4], Any, 107), c(&[3, 2], Any, 108)],
        true,
        move |x| one(op::scatter_add::call(&x[0], 1, &idx2(), &x[1])?),
    );
    k.add(
        "embedding",
        "contiguous",
        "EmbeddingBackward0",
        vec![c(&[5, 3], Any, 109)],
        true,
        |x| {
            one(op::embedding::call(
                &x[0],
                &long(&[1, 4, 1, 0, 2, 4], &[2, 3]),
                -1,
                false,
                false,
            )?)
        },
    );
    // Neural-network operators.
    for (variant, x) in [
        ("contiguous", c(&[2, 3, 4], Any, 120)),
        ("transposed", nc(&[2, 3, 4], Any, 121)),
    ] {
        k.add(
            "native_layer_norm",
            variant,
            "NativeLayerNormBackward0",
            vec![x.clone(), c(&[4], Any, 122), c(&[4], Any, 123)],
            true,
            |x| {
                let (y, _, _) =
                    op::native_layer_norm::call(&x[0], &[4], Some(&x[1]), Some(&x[2]), 1e-5)?;
                one(y)
            },
        );
        k.add(
            "native_layer_norm(2 dims, no affine)",
            variant,
            "NativeLayerNormBackward0",
            vec![x.clone()],
            true,
            |x| {
                let (y, _, _) = op::native_layer_norm::call(&x[0], &[3, 4], None, None, 1e-5)?;
                one(y)
            },
        );
    }
    // aminmax, block_diag, batch norm.
    for (variant, x) in [
        ("contiguous", c(&[3, 4], Any, 180)),
        ("transposed", nc(&[3, 4], Any, 181)),
    ] {
        k.add(
            "aminmax",
            variant,
            "AminmaxBackward0",
            vec![x.clone()],
            true,
            |x| {
                let (mn, mx) = op::aminmax::call(&x[0], None, false)?;
                Ok(vec![mn, mx])
            },
        );
        k.add(
            "aminmax(dim, keepdim)",
            variant,
            "AminmaxBackward0",
            vec![x.clone()],
            true,
            |x| {
                let (mn, mx) = op::aminmax::call(&x[0], Some(1), true)?;
                Ok(vec![mn, mx])
            },
        );
    }
    k.add(
        "aminmax(min only)",
        "contiguous",
        "AminmaxBackward0",
        vec![c(&[4, 3], Any, 182)],
        true,
        |x| one(op::aminmax::call(&x[0], Some(0), false)?.0),
    );
    k.add(
        "block_diag",
        "contiguous",
        "BlockDiagBackward0",
        vec![c(&[2, 3], Any, 183), nc(&[3], Any, 184), c(&[], Any, 185)],
        true,
        |x| {
            one(op::block_diag::call(&[
                x[0].clone(),
                x[1].clone(),
                x[2].clone(),
            ])?)
        },
    );
    // The running statistics are written, not differentiated: plain tensors, fresh per call
    // so that every evaluation of gradcheck sees the same ones.
    let stats = || {
        (
            Tensor::from_vec(vec![0.1f64, -0.2, 0.3], &[3]).unwrap(),
            Tensor::from_vec(vec![0.5f64, 1.5, 2.0], &[3]).unwrap(),
        )
    };
    for (variant, x) in [
        ("contiguous", c(&[2, 3, 4], Any, 186)),
        ("transposed", nc(&[4, 3, 2], Any, 187)),
    ] {
        for training in [true, false] {
            k.add(
                if training {
                    "_native_batch_norm_legit(training)"
                } else {
                    "_native_batch_norm_legit(eval)"
                },
                variant,
                "NativeBatchNormLegitBackward0",
                vec![x.clone(), c(&[3], Any, 188), c(&[3], Any, 189)],
                true,
                move |x| {
                    let (rm, rv) = stats();
                    let (y, _, _) = op::_native_batch_norm_legit::call(
                        &x[0],
                        Some(&x[1]),
                        Some(&x[2]),
                        &rm,
                        &rv,
                        training,
                        0.1,
                        1e-5,
                    )?;
                    one(y)
                },
            );
        }
        k.add(
            "_native_batch_norm_legit.no_stats",
            variant,
            "NativeBatchNormLegitBackward1",
            vec![x.clone(), c(&[3], Any, 190)],
            true,
            |x| {
                let (y, _, _) = op::_native_batch_norm_legit_no_stats::call(
                    &x[0],
                    Some(&x[1]),
                    None,
                    true,
                    0.1,
                    1e-5,
                )?;
                one(y)
            },
        );
    }
    // native_batch_norm has its own node, as in PyTorch (its kernel decomposes into
    // _native_batch_norm_legit* below autograd): with running statistics in training and in
    // evaluation, and without them.
    for (what, training, with_stats) in [
        ("native_batch_norm(training)", true, true),
        ("native_batch_norm(eval)", false, true),
        ("native_batch_norm(no stats)", true, false),
    ] {
        k.add(
            what,
            "contiguous",
            "NativeBatchNormBackward0",
            vec![
                c(&[2, 3, 4], Any, 200),
                c(&[3], Any, 201),
                c(&[3], Any, 202),
            ],
            true,
            move |x| {
                let (rm, rv) = stats();
                let (rm, rv) = if with_stats {
                    (Some(&rm), Some(&rv))
                } else {
                    (None, None)
                };
                let (y, _, _) = op::native_batch_norm::call(
                    &x[0],
                    Some(&x[1]),
                    Some(&x[2]),
                    rm,
                    rv,
                    training,
                    0.1,
                    1e-5,
                )?;
                one(y)
            },
        );
    }
    k.add(
        "_native_batch_norm_legit_no_training",
        "contiguous",
        "NativeBatchNormLegitNoTrainingBackward0",
        vec![c(&[4, 3], Any, 191), c(&[3], Any, 192)],
        true,
        move |x| {
            let (rm, rv) = stats();
            let (y, _, _) = op::_native_batch_norm_legit_no_training::call(
                &x[0],
                None,
                Some(&x[1]),
                &rm,
                &rv,
                0.1,
                1e-5,
            )?;
            one(y)
        },
    );
    k.add(
        "_native_batch_norm_legit_functional",
        "contiguous",
        "NativeBatchNormLegitBackward0",
        vec![c(&[4, 3, 2], Any, 193), c(&[3], Any, 194)],
        true,
        move |x| {
            let (rm, rv) = stats();
            let r = op::_native_batch_norm_legit_functional::call(
                &x[0],
                Some(&x[1]),
                None,
                &rm,
                &rv,
                true,
                0.1,
                1e-5,
            )?;
            one(r.0)
        },
    );
    k.add(
        "native_dropout(eval)",
        "contiguous",
        "NativeDropoutBackward0",
        vec![c(&[3, 4], Any, 124)],
        true,
        |x| one(op::native_dropout::call(&x[0], 0.5, Some(false))?.0),
    );
    k.add(
        "convolution",
        "contiguous",
        "ConvolutionBackward0",
        vec![
            c(&[2, 2, 5, 4], Any, 125),
            c(&[3, 2, 2, 3], Any, 126),
            c(&[3], Any, 127),
        ],
        true,
        |x| {
            one(op::convolution::call(
                &x[0],
                &x[1],
                Some(&x[2]),
                &[2, 1],
                &[1, 1],
                &[1, 2],
                false,
                &[0, 0],
                1,
            )?)
        },
    );
    k.add(
        "convolution(groups)",
        "transposed",
        "ConvolutionBackward0",
        vec![nc(&[1, 4, 4, 4], Any, 128), c(&[2, 2, 3, 2], Any, 129)],
        true,
        |x| {
            one(op::convolution::call(
                &x[0],
                &x[1],
                None,
                &[1, 1],
                &[0, 1],
                &[1, 1],
                false,
                &[0, 0],
                2,
            )?)
        },
    );
    k.add(
        "convolution(transposed)",
        "contiguous",
        "ConvolutionBackward0",
        vec![
            c(&[1, 2, 3, 3], Any, 130),
            c(&[2, 3, 2, 2], Any, 131),
            c(&[3], Any, 132),
        ],
        true,
        |x| {
            one(op::convolution::call(
                &x[0],
                &x[1],
                Some(&x[2]),
                &[2, 2],
                &[1, 0],
                &[1, 1],
                true,
                &[1, 0],
                1,
            )?)
        },
    );
    k.add(
        "avg_pool2d",
        "contiguous",
        "AvgPool2DBackward0",
        vec![c(&[1, 2, 5, 4], Any, 133)],
        true,
        |x| {
            one(op::avg_pool2d::call(
                &x[0],
                &[3, 2],
                &[2, 2],
                &[1, 1],
                true,
                false,
                None,
            )?)
        },
    );
    k.add(
        "avg_pool2d(include pad, divisor)",
        "transposed",
        "AvgPool2DBackward0",
        vec![nc(&[2, 4, 4], Any, 134)],
        true,
        |x| {
            one(op::avg_pool2d::call(
                &x[0],
                &[2, 2],
                &[],
                &[1, 0],
                false,
                true,
                Some(3),
            )?)
        },
    );
    k.add(
        "max_pool2d_with_indices",
        "contiguous",
        "MaxPool2DWithIndicesBackward0",
        vec![c(&[1, 2, 5, 4], Any, 135)],
        true,
        |x| {
            one(
                op::max_pool2d_with_indices::call(&x[0], &[2, 2], &[2, 1], &[1, 0], &[1, 1], true)?
                    .0,
            )
        },
    );
    k.add(
        "nll_loss_forward(mean, weight)",
        "contiguous",
        "NllLossBackward0",
        vec![c(&[4, 3], Any, 136)],
        true,
        |x| {
            let w = Tensor::from_vec(vec![0.5f64, 2.0, 1.5], &[3])?;
            one(op::nll_loss_forward::call(
                &x[0],
                &long(&[2, 0, -100, 1], &[4]),
                Some(&w),
                1,
                -100,
            )?
            .0)
        },
    );
    k.add(
        "nll_loss_forward(none)",
        "transposed",
        "NllLossBackward0",
        vec![nc(&[4, 3], Any, 137)],
        true,
        |x| one(op::nll_loss_forward::call(&x[0], &long(&[2, 0, 1, 1], &[4]), None, 0, 1)?.0),
    );
    k.add(
        "nll_loss_forward(sum, 1-d)",
        "contiguous",
        "NllLossBackward0",
        vec![c(&[3], Any, 138)],
        true,
        |x| one(op::nll_loss_forward::call(&x[0], &long(&[2], &[]), None, 2, -100)?.0),
    );
    k.add(
        "bernoulli.p",
        "contiguous",
        "BernoulliBackward3",
        vec![c(&[3, 4], Unit, 139)],
        false,
        |x| {
            // With p = 0 every draw is 0, so finite differences are exact: the gradient is zero.
            one(op::bernoulli_p::call(&x[0], 0.0, None)?)
        },
    );

    // CompositeImplicitAutograd operators: differentiated through their decompositions, with
    // the node PyTorch's decomposition ends in.
    k.add(
        "linear",
        "contiguous",
        "AddmmBackward0",
        vec![
            c(&[3, 4], Any, 150),
            c(&[5, 4], Any, 151),
            c(&[5], Any, 152),
        ],
        true,
        |x| one(op::linear::call(&x[0], &x[1], Some(&x[2]))?),
    );
    k.add(
        "linear(3-d)",
        "transposed",
        "AddBackward0",
        vec![
            nc(&[2, 3, 4], Any, 153),
            c(&[5, 4], Any, 154),
            c(&[5], Any, 155),
        ],
        true,
        |x| one(op::linear::call(&x[0], &x[1], Some(&x[2]))?),
    );
    k.add(
        "matmul",
        "contiguous",
        "MmBackward0",
        vec![c(&[3, 4], Any, 156), nc(&[4, 2], Any, 157)],
        true,
        |x| one(op::matmul::call(&x[0], &x[1])?),
    );
    k.add(
        "matmul(batched)",
        "broadcast",
        "UnsafeViewBackward0",
        vec![c(&[2, 3, 4], Any, 158), c(&[4, 2], Any, 159)],
        true,
        |x| one(op::matmul::call(&x[0], &x[1])?),
    );
    k.add(
        "softmax.int",
        "contiguous",
        "SoftmaxBackward0",
        vec![c(&[3, 4], Any, 160)],
        true,
        |x| one(op::softmax_int::call(&x[0], 1, None)?),
    );
    k.add(
        "log_softmax.int",
        "transposed",
        "LogSoftmaxBackward0",
        vec![nc(&[3, 4], Any, 161)],
        true,
        |x| one(op::log_softmax_int::call(&x[0], 1, None)?),
    );
    k.add(
        "layer_norm",
        "contiguous",
        "NativeLayerNormBackward0",
        vec![c(&[3, 4], Any, 162), c(&[4], Any, 163), c(&[4], Any, 164)],
        true,
        |x| {
            one(op::layer_norm::call(
                &x[0],
                &[4],
                Some(&x[1]),
                Some(&x[2]),
                1e-5,
                true,
            )?)
        },
    );
    let stats = || {
        (
            Tensor::from_vec(vec![0.1f64, -0.2, 0.3], &[3]).unwrap(),
            Tensor::from_vec(vec![0.5f64, 1.5, 2.0], &[3]).unwrap(),
        )
    };
    // batch_norm decomposes into native_batch_norm, whose own node PyTorch records.
    k.add(
        "batch_norm",
        "contiguous",
        "NativeBatchNormBackward0",
        vec![
            c(&[4, 3, 2], Any, 195),
            c(&[3], Any, 196),
            c(&[3], Any, 197),
        ],
        true,
        move |x| {
            let (rm, rv) = stats();
            one(op::batch_norm::call(
                &x[0],
                Some(&x[1]),
                Some(&x[2]),
                Some(&rm),
                Some(&rv),
                true,
                0.1,
                1e-5,
                false,
            )?)
        },
    );
    k.add(
        "instance_norm",
        "transposed",
        "ViewBackward0",
        vec![nc(&[2, 3, 4], Any, 198), c(&[3], Any, 199)],
        true,
        move |x| {
            let (rm, rv) = stats();
            one(op::instance_norm::call(
                &x[0],
                Some(&x[1]),
                None,
                Some(&rm),
                Some(&rv),
                true,
                0.1,
                1e-5,
                false,
            )?)
        },
    );
    k.add(
        "cross_entropy_loss",
        "contiguous",
        "NllLossBackward0",
        vec![c(&[3, 4], Any, 165)],
        true,
        |x| {
            one(op::cross_entropy_loss::call(
                &x[0],
                &long(&[1, 0, 3], &[3]),
                None,
                1,
                -100,
                0.0,
            )?)
        },
    );
    k.add(
        "nll_loss",
        "contiguous",
        "NllLossBackward0",
        vec![c(&[3, 4], Any, 166)],
        true,
        |x| {
            one(op::nll_loss::call(
                &x[0],
                &long(&[1, 0, 3], &[3]),
                None,
                1,
                -100,
            )?)
        },
    );
    k.add(
        "max_pool2d",
        "contiguous",
        "MaxPool2DWithIndicesBackward0",
        vec![c(&[1, 2, 4, 4], Any, 167)],
        true,
        |x| {
            one(op::max_pool2d::call(
                &x[0],
                &[2, 2],
                &[],
                &[0, 0],
                &[1, 1],
                false,
            )?)
        },
    );
    k.add(
        "conv2d",
        "contiguous",
        "ConvolutionBackward0",
        vec![c(&[1, 2, 4, 4], Any, 168), c(&[3, 2, 2, 2], Any, 169)],
        true,
        |x| {
            one(op::conv2d::call(
                &x[0],
                &x[1],
                None,
                &[1, 1],
                &[0, 0],
                &[1, 1],
                1,
            )?)
        },
    );
    k.add(
        "flatten",
        "contiguous",
        "ViewBackward0",
        vec![c(&[2, 3, 2], Any, 170)],
        true,
        |x| one(op::flatten_using_ints::call(&x[0], 0, -1)?),
    );
    k.add(
        "reshape",
        "transposed",
        "UnsafeViewBackward0",
        vec![nc(&[3, 4], Any, 171)],
        true,
        |x| one(op::reshape::call(&x[0], &[12])?),
    );
    k.add(
        "narrow",
        "contiguous",
        "SliceBackward0",
        vec![c(&[3, 4], Any, 172)],
        true,
        |x| one(op::narrow::call(&x[0], 1, 0, 2)?),
    );
    k.add(
        "movedim",
        "contiguous",
        "PermuteBackward0",
        vec![c(&[3, 4], Any, 173)],
        true,
        |x| one(op::movedim_int::call(&x[0], 0, 1)?),
    );
    k.add(
        "chunk",
        "contiguous",
        "SplitBackward0",
        vec![c(&[3, 4], Any, 174)],
        true,
        |x| one(op::chunk::call(&x[0], 2, 1)?[0].clone()),
    );
    k.add(
        "var(unbiased)",
        "contiguous",
        "VarBackward0",
        vec![c(&[3, 4], Any, 175)],
        true,
        |x| one(op::var::call(&x[0], true)?),
    );
    k.add(
        "std.dim",
        "contiguous",
        "StdBackward0",
        vec![c(&[3, 4], Any, 176)],
        true,
        |x| one(op::std_dim::call(&x[0], Some(&[1]), true, false)?),
    );
    k.add(
        "where.ScalarOther",
        "contiguous",
        "WhereBackward0",
        vec![c(&[3, 4], Any, 177)],
        true,
        |x| {
            let m = op::gt_Scalar::call(&op::detach::call(&x[0])?, Scalar::Int(0))?;
            one(op::where_ScalarOther::call(&m, &x[0], Scalar::Float(1.0))?)
        },
    );
    k.add(
        "max.other",
        "contiguous",
        "MaximumBackward0",
        vec![c(&[3, 4], Any, 178), c(&[3, 4], Any, 179)],
        true,
        |x| one(op::max_other::call(&x[0], &x[1])?),
    );
    k.0
}

fn floats(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len() as i64]).unwrap()
}

/// The node name of the first output, as PyTorch would record it.
fn node_name(case: &Case) -> Result<String> {
    let outs = (case.f)(&case.inputs)?;
    let Some(first) = outs.first() else {
        return Ok(String::new());
    };
    // A view of a view records its own node; the name checked is the operator's own.
    Ok(first.grad_fn()?.map(|n| n.name()).unwrap_or_default())
}

#[test]
fn gradcheck_every_differentiable_operator() {
    let cases = cases();
    let mut failures = Vec::new();
    let opts = GradcheckOptions::default();
    for case in &cases {
        let label = format!("{} [{}]", case.op, case.variant);
        match node_name(case) {
            Ok(n) if n == case.node => {}
            Ok(n) => failures.push(format!(
                "{label}: grad_fn is {n:?}, PyTorch records {:?}",
                case.node
            )),
            Err(e) => failures.push(format!("{label}: forward failed: {e}")),
        }
        if let Err(e) = gradcheck(&*case.f, &case.inputs, opts) {
            failures.push(format!("{label}: gradcheck: {e}"));
        }
        if case.gradgrad
            && let Err(e) = gradgradcheck(&*case.f, &case.inputs, opts)
        {
            failures.push(format!("{label}: gradgradcheck: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Every view copy and every scatter with a formula has cases above (`view_copy.dtype` is not
/// differentiable, `detach_copy` has no formula in PyTorch: `semantics.rs` checks both).
#[test]
fn every_view_copy_and_scatter_has_a_case() {
    use switchyard_codegen::emit::workspace::{find_workspace_root, parse_ops_yaml};
    use switchyard_schema::SchemaKind;
    let root = find_workspace_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
    let nf = parse_ops_yaml(&root).unwrap();
    let cases = cases();
    let missing: Vec<String> = nf
        .functions
        .iter()
        .filter(|f| f.kind() == SchemaKind::Functional)
        .filter(|f| f.has_tag("view_copy") || f.func.name.name.base.ends_with("_scatter"))
        .map(|f| f.func.name.to_string())
        .filter(|n| !["view_copy.dtype", "detach_copy"].contains(&n.as_str()))
        .filter(|n| !cases.iter().any(|c| c.op == n))
        .collect();
    assert!(missing.is_empty(), "no gradcheck case: {missing:?}");
}

/// `_fused_moving_avg_obs_fq_helper`'s gradient is PyTorch's straight-through estimator: the
/// incoming gradient where the fake quantization's mask is set, zero where the value was
/// clamped (finite differences do not apply to the rounding steps). The mask output does not
/// require grad.
#[test]
fn fused_moving_avg_obs_fq_helper_passes_the_gradient_through_its_mask() {
    // Observer off, range [-1, 1] over [0, 255]: -2 and 2 fall outside.
    let x = leaf(Tensor::from_vec(vec![-2.0f32, -0.5, 0.5, 2.0], &[4]).unwrap());
    let flag = |v: f32| Tensor::from_vec(vec![v], &[1]).unwrap();
    let (out, mask) = op::_fused_moving_avg_obs_fq_helper::call(
        &x,
        &flag(0.0),
        &flag(1.0),
        &flag(-1.0),
        &flag(1.0),
        &flag(1.0),
        &Tensor::from_vec(vec![0i32], &[1]).unwrap(),
        0.01,
        0,
        255,
        0,
        false,
        false,
    )
    .unwrap();
    assert_eq!(
        mask.to_vec::<bool>().unwrap(),
        vec![false, true, true, false]
    );
    assert!(!mask.requires_grad());
    assert_eq!(
        out.grad_fn().unwrap().map(|n| n.name()).as_deref(),
        Some("FusedMovingAvgObsFqHelperBackward0")
    );
    let g = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let grads = switchyard_autograd::grad(&[out], &[x], &[Some(g)], None, false, false).unwrap();
    assert_eq!(
        grads[0].as_ref().unwrap().to_vec::<f32>().unwrap(),
        vec![0.0, 2.0, 3.0, 0.0]
    );
}
