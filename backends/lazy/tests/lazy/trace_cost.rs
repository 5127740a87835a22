//! What the cheaper tracing path must keep (branch lazy-trace): the `.Scalar` overloads traced
//! as nodes of their own (no wrapped-number tensor) with eager's values and errors, their
//! scalars still lifted parameters (one cached leaf per value), fused like the `.Tensor`
//! overloads; and the live-tensor registry's slots, reused after drops, never reorder a step.

use switchyard_core::{Result, Scalar, ScalarType, Tensor};
use switchyard_lazy::compiler::{CompilerKind, set_compiler};
use switchyard_lazy::{DumpFormat, dump_ir};
use switchyard_ops::{TensorOps, op};

use crate::support::{counter, sample, setup};

type ScalarOp = fn(&Tensor, Scalar) -> Result<Tensor>;

/// Every `.Scalar` overload the lazy backend traces directly, by name.
fn scalar_ops() -> Vec<(&'static str, ScalarOp)> {
    vec![
        ("add.Scalar", |t, s| {
            op::add_Scalar::call(t, s, Scalar::Int(2))
        }),
        ("sub.Scalar", |t, s| {
            op::sub_Scalar::call(t, s, Scalar::Int(3))
        }),
        ("mul.Scalar", |t, s| op::mul_Scalar::call(t, s)),
        ("div.Scalar", |t, s| op::div_Scalar::call(t, s)),
        ("div.Scalar_mode floor", |t, s| {
            op::div_Scalar_mode::call(t, s, Some("floor"))
        }),
        ("div.Scalar_mode trunc", |t, s| {
            op::div_Scalar_mode::call(t, s, Some("trunc"))
        }),
        ("fmod.Scalar", |t, s| op::fmod_Scalar::call(t, s)),
        ("remainder.Scalar", |t, s| op::remainder_Scalar::call(t, s)),
    ]
}

fn bitwise_ops() -> Vec<(&'static str, ScalarOp)> {
    vec![
        ("bitwise_and.Scalar", |t, s| {
            op::bitwise_and_Scalar::call(t, s)
        }),
        ("bitwise_or.Scalar", |t, s| {
            op::bitwise_or_Scalar::call(t, s)
        }),
        ("bitwise_xor.Scalar", |t, s| {
            op::bitwise_xor_Scalar::call(t, s)
        }),
    ]
}

fn cast(t: &Tensor, dtype: ScalarType) -> Tensor {
    op::_to_copy::call(t, Some(dtype), None, None, None, false, None).unwrap()
}

/// Dtype, sizes and the raw bits of every element (f32 / f64 / i64 / bool).
fn bits(t: &Tensor) -> (ScalarType, Vec<i64>, Vec<u64>) {
    let c = op::clone::call(t, Some(switchyard_core::MemoryFormat::Contiguous)).unwrap();
    let v: Vec<u64> = match c.dtype() {
        ScalarType::Float => c
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|x| u64::from(x.to_bits()))
            .collect(),
        ScalarType::Double => c
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect(),
        ScalarType::Long => c
            .to_vec::<i64>()
            .unwrap()
            .iter()
            .map(|&x| x as u64)
            .collect(),
        ScalarType::Bool => c
            .to_vec::<bool>()
            .unwrap()
            .iter()
            .map(|&x| u64::from(x))
            .collect(),
        other => panic!("no bits for {other:?}"),
    };
    (c.dtype(), c.sizes().to_vec(), v)
}

fn message(e: &switchyard_core::Error) -> String {
    let s = e.to_string();
    s.split(" (in operator")
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// `f(x, s)` lazily (through the functional layer, as user code runs) and eagerly: equal
/// dtypes, sizes and bits, or equal errors.
fn same_as_eager(name: &str, f: ScalarOp, x: &Tensor, s: Scalar) {
    let eager = f(x, s);
    let lx = switchyard_lazy::to_lazy(x).unwrap();
    let lazy = f(&lx, s).and_then(|y| switchyard_lazy::to_cpu(&y));
    match (eager, lazy) {
        (Ok(e), Ok(l)) => assert_eq!(bits(&l), bits(&e), "{name} on {:?} with {s:?}", x.dtype()),
        // The same message; the dispatcher's context differs (eager's composite raised it
        // in the `.Tensor` overload it calls: "(in operator aten::sub.Scalar, raised in
        // aten::sub.Tensor)").
        (Err(e), Err(l)) => assert_eq!(
            message(&l),
            message(&e),
            "{name} on {:?} with {s:?}",
            x.dtype()
        ),
        (e, l) => panic!(
            "{name} on {:?} with {s:?}: eager {:?}, lazy {:?}",
            x.dtype(),
            e.map(|_| ()),
            l.map(|_| ())
        ),
    }
}

#[test]
fn scalar_overloads_match_eager_values_and_errors() {
    let _g = setup();
    let f = sample(&[3, 5], 901);
    let strided = op::transpose_int::call(&sample(&[5, 3], 902), 0, 1).unwrap();
    let inputs = [
        Clone::clone(&f),
        cast(&f, ScalarType::Double),
        strided,
        cast(&f.mul_scalar(3.0).unwrap(), ScalarType::Long),
        cast(&f, ScalarType::Bool),
    ];
    let scalars = [
        Scalar::Float(1.5),
        Scalar::Float(-0.25),
        Scalar::Int(3),
        Scalar::Int(0),
        Scalar::Bool(true),
    ];
    for x in &inputs {
        for &s in &scalars {
            for (name, f) in scalar_ops() {
                same_as_eager(name, f, x, s);
            }
        }
    }
    for x in [&inputs[3], &inputs[4]] {
        for s in [Scalar::Int(6), Scalar::Bool(true), Scalar::Float(1.0)] {
            for (name, f) in bitwise_ops() {
                same_as_eager(name, f, x, s);
            }
        }
    }
    // Errors raised while tracing, worded as eager's.
    let b = switchyard_lazy::to_lazy(&inputs[4]).unwrap();
    let err = op::sub_Scalar::call(&b, Scalar::Int(1), Scalar::Int(1)).unwrap_err();
    assert!(
        err.to_string()
            .contains("Subtraction, the `-` operator, with a bool tensor is not supported"),
        "{err}"
    );
    let l = switchyard_lazy::to_lazy(&inputs[3]).unwrap();
    let err = op::add_Scalar::call(&l, Scalar::Int(1), Scalar::Float(0.5)).unwrap_err();
    assert!(
        err.to_string().contains(
            "For integral input tensors, argument alpha must not be a floating point number."
        ),
        "{err}"
    );
    let err = op::div_Scalar_mode::call(&l, Scalar::Int(2), Some("round")).unwrap_err();
    assert!(
        err.to_string().contains(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"
        ),
        "{err}"
    );
}

#[test]
fn scalar_overloads_are_nodes_of_their_own_with_lifted_scalars() {
    let _g = setup();
    let x = switchyard_lazy::to_lazy(&sample(&[4], 903)).unwrap();
    switchyard_lazy::mark_step().unwrap();
    let y = x.mul_scalar(2.5).unwrap().add_scalar(2.5).unwrap();
    let text = dump_ir(&[Clone::clone(&y)], DumpFormat::Text).unwrap();
    // One leaf for the two uses of 2.5 (a parameter, not a constant), then the two nodes.
    assert_eq!(
        text,
        "IR {\n  %0 = [Float[4]] lazy_tensors::device_data(), device=lazy:0, NodeType=torch::lazy::DeviceData\n  %1 = [Double[]] lazy_tensors::device_data(), device=lazy:0, NodeType=torch::lazy::DeviceData\n  %2 = [Float[4]] aten::mul(%0, %1), NodeType=torch::lazy::MulScalar\n  %3 = [Long[]] lazy_tensors::device_data(), device=lazy:0, NodeType=torch::lazy::DeviceData\n  %4 = [Float[4]] aten::add(%2, %1, %3), ROOT=0, NodeType=torch::lazy::AddScalar\n}\n",
        "{text}"
    );
    assert_eq!(counter("lazy::mul"), 1);
    assert_eq!(counter("lazy::add"), 1);
    drop(y);

    // Graphs that differ in scalar values only share a program, as long as the pattern of
    // equal values is the same (equal values are one parameter).
    let _restore = RestoreFusing;
    set_compiler(CompilerKind::Fusing);
    let ex = sample(&[4], 903);
    let mut hashes = Vec::new();
    for (a, b) in [(2.0, 2.0), (5.0, 5.0), (2.0, 3.0), (4.0, 7.0)] {
        let y = x.mul_scalar(a).unwrap().add_scalar(b).unwrap();
        hashes.push(switchyard_lazy::get_graph_hash(&[Clone::clone(&y)]).unwrap());
        let want = ex.mul_scalar(a).unwrap().add_scalar(b).unwrap();
        assert_eq!(
            bits(&switchyard_lazy::to_cpu(&y).unwrap()),
            bits(&want),
            "{a} {b}"
        );
    }
    assert_eq!(hashes[0], hashes[1]);
    assert_eq!(hashes[2], hashes[3]);
    assert_ne!(hashes[0], hashes[2]);
    assert_eq!(counter("UncachedCompile"), 2);
    assert_eq!(counter("CachedCompile"), 2);
}

struct RestoreFusing;

impl Drop for RestoreFusing {
    fn drop(&mut self) {
        set_compiler(CompilerKind::Fusing);
    }
}

#[test]
fn scalar_overloads_fuse_with_eager_bits() {
    let _g = setup();
    let _restore = RestoreFusing;
    for dtype in [ScalarType::Float, ScalarType::Double] {
        let ex = cast(&sample(&[1000], 904), dtype);
        let f = |x: &Tensor| -> Result<Tensor> {
            let y = op::add_Scalar::call(
                &x.mul_scalar(1.0001)?,
                Scalar::Float(0.5),
                Scalar::Float(-2.0),
            )?;
            let y = op::sub_Scalar::call(&y, Scalar::Int(3), Scalar::Float(0.75))?;
            y.div_scalar(7.0)?.exp()
        };
        let want = f(&ex).unwrap();
        for kind in [CompilerKind::Naive, CompilerKind::Fusing] {
            set_compiler(kind);
            let x = switchyard_lazy::to_lazy(&ex).unwrap();
            switchyard_lazy::mark_step().unwrap();
            let y = f(&x).unwrap();
            let hash = switchyard_lazy::get_graph_hash(&[Clone::clone(&y)])
                .unwrap()
                .unwrap();
            switchyard_lazy::mark_step().unwrap();
            assert_eq!(
                bits(&switchyard_lazy::to_cpu(&y).unwrap()),
                bits(&want),
                "{kind:?} {dtype:?}"
            );
            if kind == CompilerKind::Fusing {
                let text = switchyard_lazy::executor::program_text(hash).unwrap();
                assert!(text.contains("fused[mul, add, sub, div, exp]"), "{text}");
                assert!(!text.contains("aten::"), "{text}");
            }
        }
    }
}

#[test]
fn registry_slots_reused_after_drops_keep_the_step_order() {
    let _g = setup();
    let _restore = RestoreFusing;
    set_compiler(CompilerKind::Fusing);
    let ex = sample(&[8], 905);
    let x = switchyard_lazy::to_lazy(&ex).unwrap();
    switchyard_lazy::mark_step().unwrap();
    for step in 0..4u64 {
        // Free slots in a different order every step, so `a` and `b` land in other slots.
        let junk: Vec<Tensor> = (0..5)
            .map(|i| x.mul_scalar(f64::from(i)).unwrap())
            .collect();
        let mut junk: Vec<Option<Tensor>> = junk.into_iter().map(Some).collect();
        for i in 0..5 {
            junk[(i * (step as usize + 2)) % 5] = None;
        }
        drop(junk);
        let a = x.add_scalar(1.0).unwrap();
        let b = x.exp().unwrap();
        switchyard_lazy::mark_step().unwrap();
        assert_eq!(
            bits(&switchyard_lazy::to_cpu(&a).unwrap()),
            bits(&ex.add_scalar(1.0).unwrap())
        );
        assert_eq!(
            bits(&switchyard_lazy::to_cpu(&b).unwrap()),
            bits(&ex.exp().unwrap())
        );
        // One program for the two roots, compiled once: the live tensors come in id order
        // whatever their slots.
        assert_eq!(counter("UncachedCompile"), 1, "step {step}");
        assert_eq!(counter("CachedCompile"), step, "step {step}");
    }
}
