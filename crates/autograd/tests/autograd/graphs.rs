//! What PyTorch's gradients are besides their values: whether a gradient made under
//! `create_graph=True` requires grad (and so has second-order gradients), and the strides a
//! gradient has. Expected values are PyTorch 2.15's for the same calls (the torch program is
//! in each test's comment).

use switchyard_autograd::{AutogradTensor, grad};
use switchyard_core::{MemoryFormat, Result, Scalar, Tensor};
use switchyard_ops::op;

fn leaf(v: &[f64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape)
        .unwrap()
        .requires_grad_(true)
        .unwrap()
}

fn arange(n: i64, shape: &[i64]) -> Tensor {
    let v: Vec<f64> = (0..n).map(|i| i as f64).collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    op::contiguous::call(t, MemoryFormat::Contiguous)
        .unwrap()
        .to_f64_vec()
        .unwrap()
}

/// `(out * w).sum()`.
fn weighted(out: &Tensor, w: &Tensor) -> Tensor {
    op::sum::call(&op::mul_Tensor::call(out, w).unwrap(), None).unwrap()
}

fn grads(loss: Tensor, inputs: &[Tensor], create_graph: bool) -> Vec<Tensor> {
    grad(&[loss], inputs, &[], None, create_graph, false)
        .unwrap()
        .into_iter()
        .map(|g| g.unwrap())
        .collect()
}

fn node_name(t: &Tensor) -> String {
    t.grad_fn().unwrap().map(|n| n.name()).unwrap_or_default()
}

/// relu's gradient is PyTorch's `threshold_backward(grad, result, 0)`, an operator whose
/// derivative for the result is zero: under create_graph it requires grad, and the
/// second-order gradient is zeros, not missing.
/// torch: `x = [[-1, 2], [3, -4]]`, `w = [[1, 1.25], [1.5, 1.75]]`,
/// `g = grad((x.relu() * w).sum(), x, create_graph=True)`, `grad((g * w).sum(), x)`.
#[test]
fn relu_gradient_has_a_graph_through_the_result() {
    let x = leaf(&[-1.0, 2.0, 3.0, -4.0], &[2, 2]);
    let w = Tensor::from_vec(vec![1.0, 1.25, 1.5, 1.75], &[2, 2]).unwrap();
    let y = op::relu::call(&x).unwrap();
    let g = grads(weighted(&y, &w), std::slice::from_ref(&x), true).remove(0);
    assert!(g.requires_grad());
    assert_eq!(node_name(&g), "ThresholdBackwardBackward0");
    assert_eq!(vals(&g), vec![0.0, 1.25, 1.5, 0.0]);
    let g2 = grads(weighted(&g, &w), &[x], false).remove(0);
    assert_eq!(vals(&g2), vec![0.0; 4]);
}

/// Every gradient of a convolution and of layer_norm requires grad under create_graph, the
/// bias's too (PyTorch's convolution_backward and native_layer_norm_backward are single
/// operators with the other inputs among theirs).
/// torch: `conv2d(arange(18).view(1, 2, 3, 3), arange(16).view(2, 2, 2, 2) / 10, [0.5, -0.5])`
/// weighted by `arange(8)`: bias gradient `[6, 22]` (ConvolutionBackwardBackward0), weight
/// gradient strides `(8, 4, 2, 1)`; `layer_norm([[1, 2, 4], [0, -1, 3]], [3], [1, 0.5, 2],
/// [0, 1, -1])` weighted by `arange(6)`: bias gradient `[3, 5, 7]`.
#[test]
fn convolution_and_layer_norm_bias_gradients_require_grad() {
    let input = leaf(&vals(&arange(18, &[1, 2, 3, 3])), &[1, 2, 3, 3]);
    let wv: Vec<f64> = (0..16).map(|i| i as f64 / 10.0).collect();
    let weight = leaf(&wv, &[2, 2, 2, 2]);
    let bias = leaf(&[0.5, -0.5], &[2]);
    let out = op::conv2d::call(&input, &weight, Some(&bias), &[1], &[0], &[1], 1).unwrap();
    let gs = grads(
        weighted(&out, &arange(8, &[1, 2, 2, 2])),
        &[input, weight, bias],
        true,
    );
    assert!(gs.iter().all(|g| g.requires_grad()));
    assert_eq!(vals(&gs[2]), vec![6.0, 22.0]);
    assert_eq!(node_name(&gs[2]), "ConvolutionBackwardBackward0");
    assert_eq!(gs[1].strides().as_slice(), &[8, 4, 2, 1]);

    let x = leaf(&[1.0, 2.0, 4.0, 0.0, -1.0, 3.0], &[2, 3]);
    let w = leaf(&[1.0, 0.5, 2.0], &[3]);
    let b = leaf(&[0.0, 1.0, -1.0], &[3]);
    let out = op::layer_norm::call(&x, &[3], Some(&w), Some(&b), 1e-5, true).unwrap();
    let gs = grads(weighted(&out, &arange(6, &[2, 3])), &[x, w, b], true);
    assert!(gs.iter().all(|g| g.requires_grad()));
    assert_eq!(vals(&gs[2]), vec![3.0, 5.0, 7.0]);
    assert_eq!(node_name(&gs[2]), "NativeLayerNormBackwardBackward0");
}

/// var without degrees of freedom: PyTorch's gradient is `grad * where(x == mean, NaN, inf)`,
/// NaN here, and does not require grad under create_graph.
/// torch: `z = tensor(1.5)` (and `tensor([2.])`), `grad(z.var(), z, create_graph=True)`.
#[test]
fn var_without_degrees_of_freedom_has_no_second_order() {
    for (v, shape) in [(1.5, &[][..]), (2.0, &[1][..])] {
        let z = leaf(&[v], shape);
        let y = op::var::call(&z, true).unwrap();
        let g = grads(y, &[z], true).remove(0);
        assert!(!g.requires_grad(), "shape {shape:?}");
        assert!(vals(&g)[0].is_nan(), "shape {shape:?}");
    }
}

/// masked_select of a 0-dim input gives its gradient back (scattered into the one element).
/// torch: `z = tensor(2.5)`, `grad((masked_select(z, tensor(m)) * 3).sum(), z)`: 3 for
/// `m = True`, 0 for `False`, both 0-dim.
#[test]
fn masked_select_of_a_zero_dim_input() {
    for (m, expected) in [(true, 3.0), (false, 0.0)] {
        let z = leaf(&[2.5], &[]);
        let mask = Tensor::from_vec(vec![m], &[]).unwrap();
        let y = op::masked_select::call(&z, &mask).unwrap();
        let loss = op::sum::call(&op::mul_Scalar::call(&y, Scalar::Int(3)).unwrap(), None).unwrap();
        let g = grads(loss, &[z], false).remove(0);
        assert_eq!(g.dim(), 0);
        assert_eq!(vals(&g), vec![expected]);
    }
}

/// Layouts: constant_pad_nd's gradient is a fresh contiguous tensor, not a view of the padded
/// gradient; maximum's follows its transposed inputs; the second-order gradient of abs (the
/// zero tensor of `sgn`'s derivative) and of softmax (its backward kernel writes a contiguous
/// tensor) are contiguous.
/// torch: `x = arange(6).view(2, 3)`, `constant_pad_nd(x, [1, 1])` weighted by
/// `arange(10).view(2, 5)`: gradient `[[1, 2, 3], [6, 7, 8]]`, strides `(3, 1)`; with pads
/// `[1, -1]` weighted by `arange(6)`: `[[1, 2, 0], [4, 5, 0]]`. `maximum(a.t(), c.t())` for
/// `a = [[1, 5], [3, 3], [0, 2]]`, `c = [[2, 4], [3, 1], [0, 7]]` weighted by
/// `arange(6).view(2, 3)`: `a`'s gradient `[[0, 3], [0.5, 4], [1, 0]]`, `c`'s
/// `[[0, 0], [0.5, 0], [1, 5]]`, both strides `(2, 1)`. For `x` (3, 2), `g = grad((f(x.t()) *
/// arange(6).view(2, 3)).sum(), x, create_graph=True)` and `grad((g * v).sum(), x)`:
/// strides `(1, 3)` for `f = abs` (zeros) and `f = softmax(·, 1)`.
#[test]
fn gradient_layouts_are_pytorchs() {
    let x = leaf(&vals(&arange(6, &[2, 3])), &[2, 3]);
    let y = op::constant_pad_nd::call(&x, &[1, 1], Scalar::Int(0)).unwrap();
    let g = grads(weighted(&y, &arange(10, &[2, 5])), &[x], false).remove(0);
    assert_eq!(g.strides().as_slice(), &[3, 1]);
    assert_eq!(vals(&g), vec![1.0, 2.0, 3.0, 6.0, 7.0, 8.0]);
    let x = leaf(&vals(&arange(6, &[2, 3])), &[2, 3]);
    let y = op::constant_pad_nd::call(&x, &[1, -1], Scalar::Int(0)).unwrap();
    let g = grads(weighted(&y, &arange(6, &[2, 3])), &[x], false).remove(0);
    assert_eq!(g.strides().as_slice(), &[3, 1]);
    assert_eq!(vals(&g), vec![1.0, 2.0, 0.0, 4.0, 5.0, 0.0]);

    let a = leaf(&[1.0, 5.0, 3.0, 3.0, 0.0, 2.0], &[3, 2]);
    let c = leaf(&[2.0, 4.0, 3.0, 1.0, 0.0, 7.0], &[3, 2]);
    let y = op::maximum::call(&op::t::call(&a).unwrap(), &op::t::call(&c).unwrap()).unwrap();
    let gs = grads(weighted(&y, &arange(6, &[2, 3])), &[a, c], false);
    assert_eq!(gs[0].strides().as_slice(), &[2, 1]);
    assert_eq!(gs[1].strides().as_slice(), &[2, 1]);
    assert_eq!(vals(&gs[0]), vec![0.0, 3.0, 0.5, 4.0, 1.0, 0.0]);
    assert_eq!(vals(&gs[1]), vec![0.0, 0.0, 0.5, 0.0, 1.0, 5.0]);

    type F = fn(&Tensor) -> Result<Tensor>;
    let fs: [(&str, F); 2] = [
        ("abs", |t| op::abs::call(t)),
        ("softmax", |t| op::softmax_int::call(t, 1, None)),
    ];
    for (label, f) in fs {
        let x = leaf(&[1.0, -2.0, 3.0, 0.5, -5.0, 6.0], &[3, 2]);
        let y = f(&op::t::call(&x).unwrap()).unwrap();
        let g = grads(
            weighted(&y, &arange(6, &[2, 3])),
            std::slice::from_ref(&x),
            true,
        )
        .remove(0);
        let g2 = grads(weighted(&g, &arange(6, &[3, 2])), &[x], false).remove(0);
        assert_eq!(g2.strides().as_slice(), &[1, 3], "{label}");
    }
}
