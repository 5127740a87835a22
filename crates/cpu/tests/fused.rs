//! The fused element-wise engine (`switchyard_cpu::fused`) against the eager kernels: every
//! operation it knows, in `f32` and `f64`, on contiguous, transposed, broadcast and sliced
//! inputs, with scalar operands (Python numbers, 0-dim tensors, `alpha`), sizes below and
//! above the threading threshold, and special values (NaN, ±inf, -0.0). Results must equal the
//! same operators run one by one eagerly, bit for bit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_core::{Scalar, ScalarType, Tensor};
use switchyard_cpu::fused::{BinaryOp, FusedBuilder, Operand, UnaryOp, Value};
use switchyard_ops::op;

fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|i| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            match i % 97 {
                0 => f64::NAN,
                1 => -0.0,
                2 => f64::INFINITY,
                3 => f64::NEG_INFINITY,
                _ => (u - 0.5) * 8.0,
            }
        })
        .collect()
}

fn tensor(dtype: ScalarType, sizes: &[i64], seed: u64) -> Tensor {
    let n: i64 = sizes.iter().product();
    let v = values(n as usize, seed);
    if dtype == ScalarType::Double {
        Tensor::from_vec(v, sizes).unwrap()
    } else {
        Tensor::from_vec(v.into_iter().map(|x| x as f32).collect::<Vec<f32>>(), sizes).unwrap()
    }
}

fn bits(t: &Tensor) -> Vec<u64> {
    let t = op::contiguous::call(t, switchyard_core::MemoryFormat::Contiguous).unwrap();
    if t.dtype() == ScalarType::Double {
        t.to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    } else {
        t.to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| u64::from(v.to_bits()))
            .collect()
    }
}

fn wrapped(v: f64) -> Tensor {
    Tensor::wrapped_scalar(Scalar::Float(v)).unwrap()
}

fn eager_unary(f: UnaryOp, x: &Tensor) -> Tensor {
    match f {
        UnaryOp::Neg => op::neg::call(x),
        UnaryOp::Exp => op::exp::call(x),
        UnaryOp::Log => op::log::call(x),
        UnaryOp::Sin => op::sin::call(x),
        UnaryOp::Tanh => op::tanh::call(x),
        UnaryOp::Sigmoid => op::sigmoid::call(x),
        UnaryOp::Sqrt => op::sqrt::call(x),
        UnaryOp::Relu => op::relu::call(x),
    }
    .unwrap()
}

const UNARY: [UnaryOp; 8] = [
    UnaryOp::Neg,
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Sin,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Sqrt,
    UnaryOp::Relu,
];

#[test]
fn every_unary_operation_equals_eager() {
    for dtype in [ScalarType::Float, ScalarType::Double] {
        for sizes in [&[5usize as i64, 7][..], &[70_000][..]] {
            let x = tensor(dtype, sizes, 1);
            for f in UNARY {
                let mut b = FusedBuilder::new(dtype, sizes).unwrap();
                let i = b.input().unwrap();
                let r = b.unary(f, i).unwrap();
                let k = b.finish(r).unwrap();
                let got = k.run(&[Operand::Tensor(&x)]).unwrap();
                assert_eq!(
                    bits(&got),
                    bits(&eager_unary(f, &x)),
                    "{f:?} {dtype:?} {sizes:?}"
                );
            }
        }
    }
}

#[test]
fn binary_operations_with_tensors_and_scalars_equal_eager() {
    for dtype in [ScalarType::Float, ScalarType::Double] {
        let sizes = [33i64, 65];
        let a = tensor(dtype, &sizes, 2);
        let b = tensor(dtype, &sizes, 3);
        let s = wrapped(0.3);
        let zero_dim = Tensor::from_vec(vec![1.7f64], &[]).unwrap();
        for (f, eager) in [
            (
                BinaryOp::Mul,
                op::mul_Tensor::call as fn(&Tensor, &Tensor) -> _,
            ),
            (BinaryOp::Div, op::div_Tensor::call),
            (BinaryOp::Maximum, op::maximum::call),
        ] {
            for (lhs, rhs, ol, or) in [
                (&a, &b, Operand::Tensor(&a), Operand::Tensor(&b)),
                (
                    &a,
                    &s,
                    Operand::Tensor(&a),
                    Operand::Scalar(Scalar::Float(0.3)),
                ),
                (
                    &s,
                    &a,
                    Operand::Scalar(Scalar::Float(0.3)),
                    Operand::Tensor(&a),
                ),
                (
                    &a,
                    &zero_dim,
                    Operand::Tensor(&a),
                    Operand::Tensor(&zero_dim),
                ),
            ] {
                if f == BinaryOp::Maximum && (rhs.dim() == 0 || lhs.dim() == 0) {
                    continue; // maximum takes no Python scalars
                }
                let mut bld = FusedBuilder::new(dtype, &sizes).unwrap();
                let (x, y) = (bld.input().unwrap(), bld.input().unwrap());
                let r = bld.binary(f, x, y).unwrap();
                let got = bld.finish(r).unwrap().run(&[ol, or]).unwrap();
                assert_eq!(
                    bits(&got),
                    bits(&eager(lhs, rhs).unwrap()),
                    "{f:?} {dtype:?}"
                );
            }
        }
        // add / sub with alpha 1 and another alpha, tensor and scalar right-hand sides.
        for alpha in [Scalar::Int(1), Scalar::Float(0.7), Scalar::Int(-3)] {
            for negate in [false, true] {
                let mut bld = FusedBuilder::new(dtype, &sizes).unwrap();
                let (x, y, al) = (
                    bld.input().unwrap(),
                    bld.input().unwrap(),
                    bld.input().unwrap(),
                );
                let r = bld.add(x, y, al, negate).unwrap();
                let k = bld.finish(r).unwrap();
                let got = k
                    .run(&[
                        Operand::Tensor(&a),
                        Operand::Tensor(&b),
                        Operand::Scalar(alpha),
                    ])
                    .unwrap();
                let want = if negate {
                    op::sub_Tensor::call(&a, &b, alpha)
                } else {
                    op::add_Tensor::call(&a, &b, alpha)
                }
                .unwrap();
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "add alpha {alpha:?} negate {negate}"
                );
            }
        }
    }
}

/// `sub` with a zero alpha negates it as eager does, on the scalar: an integral 0 stays +0
/// (`-0 - 0 * (-1)` is `-0 + 0 * (-1)` = -0), a float 0.0 becomes -0.0; the signs of zero
/// results show the difference.
#[test]
fn sub_with_a_zero_alpha_negates_it_as_eager() {
    for dtype in [ScalarType::Float, ScalarType::Double] {
        let cast = |v: Vec<f64>| {
            let t = Tensor::from_vec(v, &[4]).unwrap();
            op::_to_copy::call(&t, Some(dtype), None, None, None, false, None).unwrap()
        };
        let a = cast(vec![-0.0, -0.0, 0.0, -2.0]);
        let b = cast(vec![1.0, -1.0, -1.0, 3.0]);
        for alpha in [Scalar::Int(0), Scalar::Float(0.0), Scalar::Float(-0.0)] {
            for negate in [false, true] {
                let mut bld = FusedBuilder::new(dtype, &[4]).unwrap();
                let (x, y, al) = (
                    bld.input().unwrap(),
                    bld.input().unwrap(),
                    bld.input().unwrap(),
                );
                let r = bld.add(x, y, al, negate).unwrap();
                let got = bld
                    .finish(r)
                    .unwrap()
                    .run(&[
                        Operand::Tensor(&a),
                        Operand::Tensor(&b),
                        Operand::Scalar(alpha),
                    ])
                    .unwrap();
                let want = if negate {
                    op::sub_Tensor::call(&a, &b, alpha)
                } else {
                    op::add_Tensor::call(&a, &b, alpha)
                }
                .unwrap();
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "{dtype:?} alpha {alpha:?} negate {negate}"
                );
            }
        }
    }
}

/// PyTorch's benchmark chain (`chain8`) over strided and broadcast inputs, large enough to
/// run threaded: `relu(exp(sin(x*2+1)^2 - 0.5) / 3) + maximum(xt, row)`.
#[test]
fn chains_over_strided_and_broadcast_inputs_equal_eager() {
    for dtype in [ScalarType::Float, ScalarType::Double] {
        for n in [3i64, 300] {
            let sizes = [n, 257];
            let x = tensor(dtype, &sizes, 4);
            let base = tensor(dtype, &[257, n], 5);
            let xt = op::transpose_int::call(&base, 0, 1).unwrap();
            let row = tensor(dtype, &[257], 6);
            let wide = tensor(dtype, &[n, 514], 7);
            let sliced = op::slice_Tensor::call(&wide, 1, Some(0), Some(514), 2).unwrap();
            // Eager.
            let one = Scalar::Int(1);
            let mut y = op::mul_Tensor::call(&x, &wrapped(2.0)).unwrap();
            y = op::add_Tensor::call(&y, &wrapped(1.0), one).unwrap();
            y = op::sin::call(&y).unwrap();
            y = op::mul_Tensor::call(&y, &y).unwrap();
            y = op::sub_Tensor::call(&y, &wrapped(0.5), one).unwrap();
            y = op::exp::call(&y).unwrap();
            y = op::div_Tensor::call(&y, &wrapped(3.0)).unwrap();
            y = op::relu::call(&y).unwrap();
            let m = op::maximum::call(&xt, &row).unwrap();
            y = op::add_Tensor::call(&y, &m, one).unwrap();
            y = op::mul_Tensor::call(&y, &sliced).unwrap();
            // Fused.
            let mut b = FusedBuilder::new(dtype, &sizes).unwrap();
            let ins: Vec<Value> = (0..9).map(|_| b.input().unwrap()).collect();
            let mut v = b.binary(BinaryOp::Mul, ins[0], ins[1]).unwrap();
            v = b.add(v, ins[2], ins[3], false).unwrap();
            v = b.unary(UnaryOp::Sin, v).unwrap();
            v = b.binary(BinaryOp::Mul, v, v).unwrap();
            v = b.add(v, ins[4], ins[3], true).unwrap();
            v = b.unary(UnaryOp::Exp, v).unwrap();
            v = b.binary(BinaryOp::Div, v, ins[5]).unwrap();
            v = b.unary(UnaryOp::Relu, v).unwrap();
            let m = b.binary(BinaryOp::Maximum, ins[6], ins[7]).unwrap();
            v = b.add(v, m, ins[3], false).unwrap();
            v = b.binary(BinaryOp::Mul, v, ins[8]).unwrap();
            let k = b.finish(v).unwrap();
            let got = k
                .run(&[
                    Operand::Tensor(&x),
                    Operand::Scalar(Scalar::Float(2.0)),
                    Operand::Scalar(Scalar::Float(1.0)),
                    Operand::Scalar(one),
                    Operand::Scalar(Scalar::Float(0.5)),
                    Operand::Scalar(Scalar::Float(3.0)),
                    Operand::Tensor(&xt),
                    Operand::Tensor(&row),
                    Operand::Tensor(&sliced),
                ])
                .unwrap();
            assert_eq!(got.sizes().to_vec(), sizes.to_vec());
            assert_eq!(bits(&got), bits(&y), "{dtype:?} n={n}");
        }
    }
}

#[test]
fn wrong_input_counts_and_dtypes_are_errors() {
    let mut b = FusedBuilder::new(ScalarType::Float, &[4]).unwrap();
    let i = b.input().unwrap();
    let r = b.unary(UnaryOp::Exp, i).unwrap();
    let k = b.finish(r).unwrap();
    assert!(k.run(&[]).is_err());
    let d = tensor(ScalarType::Double, &[4], 1);
    assert!(k.run(&[Operand::Tensor(&d)]).is_err());
    assert!(FusedBuilder::new(ScalarType::Long, &[4]).is_err());
}

/// A kernel as the prologue of softmax / log_softmax over the last dimension gives the bits
/// of eager `_softmax` on the eager chain's result (rows of 1, 7 and 1024 elements, threaded
/// and not).
#[test]
fn softmax_prologue_equals_eager_softmax_of_the_chain() {
    for dtype in [ScalarType::Float, ScalarType::Double] {
        // Row groups and tasks of every shape: one row, rows longer than a group, a count of
        // rows that leaves a partial group, many tasks; and (`transposed`) an input the kernel
        // gathers rather than reads in place (nothing to prefetch).
        let shapes = [
            [5i64, 7],
            [300, 1024],
            [4, 1],
            [1001, 37],
            [3, 5000],
            [2048, 96],
        ];
        for (sizes, transposed) in shapes.iter().flat_map(|s| [(*s, false), (*s, true)]) {
            let x = if transposed {
                let t = tensor(dtype, &[sizes[1], sizes[0]], 8);
                op::t::call(&t).unwrap()
            } else {
                tensor(dtype, &sizes, 8)
            };
            let x = op::nan_to_num::call(&x, Some(0.0), None, None).unwrap();
            let e = op::sub_Tensor::call(
                &op::mul_Tensor::call(&x, &wrapped(1.5)).unwrap(),
                &wrapped(0.25),
                Scalar::Int(1),
            )
            .unwrap();
            let mut b = FusedBuilder::new(dtype, &sizes).unwrap();
            let ins: Vec<Value> = (0..4).map(|_| b.input().unwrap()).collect();
            let mut v = b.binary(BinaryOp::Mul, ins[0], ins[1]).unwrap();
            v = b.add(v, ins[2], ins[3], true).unwrap();
            let k = b.finish(v).unwrap();
            let operands = [
                Operand::Tensor(&x),
                Operand::Scalar(Scalar::Float(1.5)),
                Operand::Scalar(Scalar::Float(0.25)),
                Operand::Scalar(Scalar::Int(1)),
            ];
            for log in [false, true] {
                let got = k.run_softmax(&operands, log).unwrap();
                let want = if log {
                    op::_log_softmax::call(&e, 1, false)
                } else {
                    op::_softmax::call(&e, 1, false)
                }
                .unwrap();
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "{dtype:?} {sizes:?} transposed={transposed} log={log}"
                );
            }
        }
    }
}

/// `sin` of arguments beyond the polynomial's range (|x| > 2^20 goes through libm) mixed with
/// ordinary ones in one block.
#[test]
fn sin_of_large_arguments_equals_eager() {
    for dtype in [ScalarType::Float, ScalarType::Double] {
        let x = tensor(dtype, &[4099], 9);
        let big = op::mul_Tensor::call(&x, &wrapped(1.0e6)).unwrap();
        let mut b = FusedBuilder::new(dtype, &[4099]).unwrap();
        let i = b.input().unwrap();
        let r = b.unary(UnaryOp::Sin, i).unwrap();
        let got = b.finish(r).unwrap().run(&[Operand::Tensor(&big)]).unwrap();
        assert_eq!(bits(&got), bits(&op::sin::call(&big).unwrap()), "{dtype:?}");
    }
}

/// `run_into` / `run_softmax_into` write a given (recycled) output: the same bits as a new
/// output whatever the buffer held before, and outputs the kernel cannot write are errors.
#[test]
fn running_into_a_recycled_output_equals_a_new_output() {
    for dtype in [ScalarType::Float, ScalarType::Double] {
        for sizes in [[3i64, 5], [300, 257]] {
            let x = tensor(dtype, &sizes, 11);
            let y = tensor(dtype, &sizes, 12);
            // x * 2 + y, then sin, then * y (a last binary operation into the output).
            let mut b = FusedBuilder::new(dtype, &sizes).unwrap();
            let ins: Vec<Value> = (0..4).map(|_| b.input().unwrap()).collect();
            let mut v = b.binary(BinaryOp::Mul, ins[0], ins[1]).unwrap();
            v = b.add(v, ins[2], ins[3], false).unwrap();
            v = b.unary(UnaryOp::Sin, v).unwrap();
            v = b.binary(BinaryOp::Mul, v, ins[2]).unwrap();
            let k = b.finish(v).unwrap();
            let operands = [
                Operand::Tensor(&x),
                Operand::Scalar(Scalar::Float(2.0)),
                Operand::Tensor(&y),
                Operand::Scalar(Scalar::Int(1)),
            ];
            let one = Scalar::Int(1);
            let mut want = op::mul_Tensor::call(&x, &wrapped(2.0)).unwrap();
            want = op::add_Tensor::call(&want, &y, one).unwrap();
            want = op::sin::call(&want).unwrap();
            want = op::mul_Tensor::call(&want, &y).unwrap();
            // A buffer full of stale values (an earlier result).
            let out = tensor(dtype, &sizes, 13);
            k.run_into(&operands, &out).unwrap();
            assert_eq!(bits(&out), bits(&want), "{dtype:?} {sizes:?}");
            assert_eq!(bits(&k.run(&operands).unwrap()), bits(&want));
            let sm = k.run_softmax(&operands, false).unwrap();
            let stale = tensor(dtype, &sizes, 14);
            k.run_softmax_into(&operands, false, &stale).unwrap();
            assert_eq!(bits(&stale), bits(&sm), "{dtype:?} {sizes:?} softmax");
            // Outputs it cannot write: an input's own storage, another shape or dtype, strided.
            assert!(k.run_into(&operands, &x).is_err());
            assert!(
                k.run_into(&operands, &tensor(dtype, &[sizes[0]], 15))
                    .is_err()
            );
            let other = if dtype == ScalarType::Float {
                ScalarType::Double
            } else {
                ScalarType::Float
            };
            assert!(k.run_into(&operands, &tensor(other, &sizes, 15)).is_err());
            let t =
                op::transpose_int::call(&tensor(dtype, &[sizes[1], sizes[0]], 16), 0, 1).unwrap();
            assert!(k.run_into(&operands, &t).is_err());
        }
    }
}
