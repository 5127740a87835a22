//! `unfold_backward` and its out= overload through the dispatcher, on the target's tensors
//! (CPU or lazy) and Meta tensors, against values recorded from PyTorch 2.15
//! (`torch.ops.aten.unfold_backward`).

use super::views_support::{CpuOnly, cpu_only, finish_one, host, on_cpu, serial, to_target};
use switchyard_core::{Device, ScalarType, Tensor};
use switchyard_ops::op;

/// `torch.arange(1., n + 1.).reshape(shape)` on the target.
fn arange(n: usize, shape: &[i64]) -> Tensor {
    to_target(Tensor::from_vec((1..=n).map(|v| v as f32).collect::<Vec<_>>(), shape).unwrap())
}

/// The values of a result, read on the host after the target's sync.
fn f32s(t: &Tensor) -> Vec<f32> {
    host(t).to_vec::<f32>().unwrap()
}

fn geometry(t: &Tensor) -> (Vec<i64>, Vec<i64>) {
    (t.sizes().to_vec(), t.strides().to_vec())
}

#[test]
fn unfold_backward_values_are_pytorchs() {
    let _serial = serial();
    // g = torch.arange(1., 13.).reshape(2, 3, 2): x of (2, 4), x.unfold(1, 2, 1); the
    // overlapping windows sum.
    let g = arange(12, &[2, 3, 2]);
    let expected = vec![1.0, 5.0, 9.0, 6.0, 7.0, 17.0, 21.0, 12.0];
    for dim in [1, -1] {
        let r = op::unfold_backward::call(&g, &[2, 4], dim, 2, 1).unwrap();
        assert_eq!(geometry(&r), (vec![2, 4], vec![4, 1]));
        assert_eq!(f32s(&r), expected, "dim {dim}");
    }
    // x of (5,), x.unfold(0, 2, 3): element 2 is in no window.
    let r = op::unfold_backward::call(&arange(4, &[2, 2]), &[5], 0, 2, 3).unwrap();
    assert_eq!(f32s(&r), vec![1.0, 2.0, 0.0, 3.0, 4.0]);
    // A transposed gradient: torch.arange(1., 13.).reshape(2, 2, 3).transpose(1, 2) for
    // x of (4, 3), x.unfold(0, 2, 2).
    let g4 = op::transpose_int::call(&arange(12, &[2, 2, 3]), 1, 2).unwrap();
    let r = op::unfold_backward::call(&g4, &[4, 3], 0, 2, 2).unwrap();
    assert_eq!(geometry(&r), (vec![4, 3], vec![3, 1]));
    assert_eq!(f32s(&r), (1..=12).map(|v| v as f32).collect::<Vec<_>>());
    // A 0-dim input: torch gives tensor(5.).
    let r = op::unfold_backward::call(&arange(1, &[1]), &[], 0, 1, 1).unwrap();
    assert_eq!((r.dim(), host(&r).item::<f32>().unwrap()), (0, 1.0));
    // The gradient's dtype is kept (int64 and float64 in torch).
    let gl = op::_to_copy::call(&g, Some(ScalarType::Long), None, None, None, false, None).unwrap();
    let r = op::unfold_backward::call(&gl, &[2, 4], 1, 2, 1).unwrap();
    assert_eq!(r.dtype(), ScalarType::Long);
    assert_eq!(
        host(&r).to_vec::<i64>().unwrap(),
        vec![1, 5, 9, 6, 7, 17, 21, 12]
    );
    // The result is new memory (a lazy tensor has none to share).
    if on_cpu() {
        assert!(!r.is_alias_of(&gl));
    }
}

#[test]
fn unfold_backward_errors_are_pytorchs() {
    let _serial = serial();
    let g = arange(12, &[2, 3, 2]);
    let meta = Tensor::allocate(&[2, 3, 2], ScalarType::Float, Device::META).unwrap();
    for (t, dim, message) in [
        (
            &g,
            2,
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
        ),
        (
            &g,
            -3,
            "Dimension out of range (expected to be in range of [-2, 1], but got -3)",
        ),
        (
            &meta,
            5,
            "Dimension out of range (expected to be in range of [-2, 1], but got 5)",
        ),
    ] {
        let e = finish_one(op::unfold_backward::call(t, &[2, 4], dim, 2, 1)).unwrap_err();
        assert_eq!(e.kind().name(), "IndexError");
        assert_eq!(e.message(), message);
    }
}

#[test]
fn unfold_backward_on_meta_and_out() {
    if cpu_only(CpuOnly::Meta) {
        return;
    }
    // PyTorch's Meta run fails inside its decomposition ("Cannot copy out of meta tensor");
    // here the Meta kernel gives the CPU kernel's geometry.
    let meta = Tensor::allocate(&[2, 3, 2], ScalarType::Double, Device::META).unwrap();
    let r = op::unfold_backward::call(&meta, &[2, 4], 1, 2, 1).unwrap();
    assert!(r.is_meta());
    assert_eq!(r.dtype(), ScalarType::Double);
    assert_eq!(geometry(&r), (vec![2, 4], vec![4, 1]));
    // out=: torch.ops.aten.unfold_backward.out(g, [2, 4], 1, 2, 1, out=torch.empty(0)).
    let g = arange(12, &[2, 3, 2]);
    let out = Tensor::allocate(&[0], ScalarType::Float, Device::CPU).unwrap();
    let r = op::unfold_backward_out::call(&g, &[2, 4], 1, 2, 1, &out).unwrap();
    assert!(r.is_same(&out));
    assert_eq!(geometry(&out), (vec![2, 4], vec![4, 1]));
    assert_eq!(
        out.to_vec::<f32>().unwrap(),
        vec![1.0, 5.0, 9.0, 6.0, 7.0, 17.0, 21.0, 12.0]
    );
    let long = Tensor::allocate(&[0], ScalarType::Long, Device::CPU).unwrap();
    let e = op::unfold_backward_out::call(&g, &[2, 4], 1, 2, 1, &long).unwrap_err();
    assert_eq!(
        e.message(),
        "Expected out tensor to have dtype float, but got long int instead"
    );
}

/// A `grad_in` of the wrong shape: PyTorch's kernel broadcasts the result, `grad_in` (without
/// its last dimension, `dim` of size 1) and the indices along `dim` in one TensorIterator when
/// windows overlap, and copies into `zeros.unfold(dim, size, step)` when they do not; its
/// messages, on CPU and Meta tensors (recorded from `torch.ops.aten.unfold_backward`).
#[test]
fn unfold_backward_refuses_a_grad_in_of_the_wrong_shape() {
    let _serial = serial();
    /// (grad_in sizes, input_sizes, dim, size, step, message)
    type Case = (&'static [i64], &'static [i64], i64, i64, i64, &'static str);
    let cases: [Case; 7] = [
        (
            &[2, 2, 2],
            &[2, 3],
            0,
            2,
            1,
            "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1",
        ),
        (
            &[2, 3],
            &[2, 4],
            1,
            2,
            1,
            "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1",
        ),
        (
            &[2, 3, 2, 2],
            &[2, 4],
            1,
            2,
            1,
            "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 2",
        ),
        (
            &[3, 3, 2],
            &[2, 4],
            1,
            2,
            1,
            "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0",
        ),
        (
            &[2, 3, 2],
            &[2, 4],
            -2,
            2,
            1,
            "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 1",
        ),
        (
            &[2, 3, 2],
            &[2, 4],
            1,
            2,
            2,
            "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1",
        ),
        (
            &[2, 2, 2],
            &[2, 4],
            1,
            2,
            3,
            "output with shape [2, 1, 2] doesn't match the broadcast shape [2, 2, 2]",
        ),
    ];
    for device in [Device::CPU, Device::META] {
        for (grad, input, dim, size, step, message) in cases {
            let g = Tensor::allocate(grad, ScalarType::Float, device).unwrap();
            // The CPU's gradient on the target (a Meta one stays Meta).
            let g = if g.is_meta() { g } else { to_target(g) };
            let e = finish_one(op::unfold_backward::call(&g, input, dim, size, step)).unwrap_err();
            assert_eq!(e.kind().name(), "RuntimeError", "{grad:?} {dim}");
            assert_eq!(e.message(), message, "{grad:?} {dim} on {device:?}");
        }
    }
    // Shapes PyTorch's kernel takes: a gradient broadcast along another dimension, fewer or
    // more windows than the input holds, a longer last dimension (only `size` of it read).
    // torch.ops.aten.unfold_backward(torch.arange(1., 7.).reshape(1, 3, 2), [2, 4], 1, 2, 1)
    let g = arange(6, &[1, 3, 2]);
    let r = op::unfold_backward::call(&g, &[2, 4], 1, 2, 1).unwrap();
    assert_eq!(geometry(&r), (vec![2, 4], vec![4, 1]));
    assert_eq!(f32s(&r), vec![1.0, 5.0, 9.0, 6.0, 1.0, 5.0, 9.0, 6.0]);
    // ... (2, 1, 2): one window each.
    let r = op::unfold_backward::call(&arange(4, &[2, 1, 2]), &[2, 4], 1, 2, 1).unwrap();
    assert_eq!(f32s(&r), vec![1.0, 2.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0]);
    // ... (1, 5, 2): windows past the input's end are dropped beyond it.
    let r = op::unfold_backward::call(&arange(10, &[1, 5, 2]), &[1, 4], 1, 2, 1).unwrap();
    assert_eq!(geometry(&r), (vec![1, 4], vec![4, 1]));
    assert_eq!(f32s(&r), vec![1.0, 5.0, 9.0, 13.0]);
    // ... (1, 3, 3) for size 2: the third column is not read.
    let r = op::unfold_backward::call(&arange(9, &[1, 3, 3]), &[1, 4], 1, 2, 1).unwrap();
    assert_eq!(f32s(&r), vec![1.0, 6.0, 12.0, 8.0]);
}
