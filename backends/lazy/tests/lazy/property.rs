//! Property test (plan §8.3, naive backend): random programs of element-wise operators (with
//! broadcasting, Python scalars and type promotion), reductions, views, in-place operators on
//! views and `mark_step` at random points, run eagerly on the CPU and lazily. Every tensor the
//! program creates (views and mutated bases included) must hold the same sizes, dtype and
//! values, and every failing step the same error text; running the same program again must not
//! compile anything new.

use switchyard_core::{ScalarType, Tensor};
use switchyard_ops::{TensorOps, op};

use crate::support::{counter, sample, setup, values};

/// A small deterministic generator (the programs are reproducible from their seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// One step's outcome: a tensor or an error text.
type Step = Result<Tensor, String>;

/// Runs program `seed` on the CPU (`lazy == false`) or on the lazy device; returns every
/// step's outcome (tensors still on their device).
fn run(seed: u64, lazy: bool) -> Vec<Step> {
    let mut rng = Rng(seed);
    let on = |t: Tensor| {
        if lazy {
            switchyard_lazy::to_lazy(&t).unwrap()
        } else {
            t
        }
    };
    // Inputs: 1–3 tensors of rank 1–3, sizes 1–4; some share a shape so that binary
    // operators meet equal and broadcastable shapes.
    let n_inputs = 1 + rng.below(3);
    let base_shape: Vec<i64> = (0..1 + rng.below(3))
        .map(|_| 1 + rng.below(4) as i64)
        .collect();
    let mut pool: Vec<Tensor> = Vec::new();
    for i in 0..n_inputs {
        let mut shape = base_shape.clone();
        if rng.below(3) == 0 {
            let d = rng.below(shape.len());
            shape[d] = 1;
        }
        let t = sample(&shape, seed * 31 + i as u64);
        let t = match rng.below(5) {
            0 => op::_to_copy::call(&t, Some(ScalarType::Double), None, None, None, false, None)
                .unwrap(),
            1 => op::_to_copy::call(&t, Some(ScalarType::Long), None, None, None, false, None)
                .unwrap(),
            _ => t,
        };
        pool.push(on(t));
    }
    let mut steps: Vec<Step> = pool.iter().cloned().map(Ok).collect();
    for _ in 0..12 {
        let a = Clone::clone(rng.pick(&pool));
        let b = Clone::clone(rng.pick(&pool));
        let rank = a.dim() as i64;
        let dim = if rank > 0 {
            rng.below(rank as usize) as i64
        } else {
            0
        };
        let r: switchyard_core::Result<Tensor> = match rng.below(22) {
            0 => a.add(&b),
            1 => a.sub(&b),
            2 => a.mul(&b),
            3 => a.maximum(&b),
            4 => a.add_scalar(1.5),
            5 => a.mul_scalar(3),
            6 => a.tanh(),
            7 => a.sigmoid(),
            // Likewise `abs` of a bool tensor (its kernel's dtype list).
            8 if a.dtype() == ScalarType::Bool => continue,
            8 => a.abs().and_then(|x| x.neg()),
            9 => op::gt_Tensor::call(&a, &b),
            10 => op::where_self::call(&op::gt_Scalar::call(&a, 0.into()).unwrap(), &a, &b),
            11 => a.sum(),
            12 => op::sum_dim_IntList::call(&a, Some(&[dim]), rng.below(2) == 0, None),
            13 => op::amax::call(&a, &[dim], false),
            // The softmax kernels have no integer loops: an error the CPU kernel raises when it
            // runs, which the lazy device reports at `mark_step` (tested in executor.rs), not
            // at the call.
            14 | 15 if !a.dtype().is_floating_point() => continue,
            14 => a.softmax(dim),
            15 => a.log_softmax(dim),
            16 => a.transpose(0, rank - 1),
            17 => a.unsqueeze(dim),
            18 => a.narrow(dim, 0, (a.sizes().first().copied().unwrap_or(1) + 1) / 2),
            19 => a.reshape(&[-1]),
            20 => {
                // In place through a view of a fresh copy: the copy (the base) is the result.
                let base = op::clone::call(&a, None).unwrap();
                let v = base.select(dim, 0);
                v.and_then(|v| v.add_(&v.mul_scalar(2).unwrap()))
                    .map(|_| base)
            }
            _ => {
                if lazy {
                    switchyard_lazy::mark_step().unwrap();
                }
                continue;
            }
        };
        match r {
            Ok(t) => {
                pool.push(Clone::clone(&t));
                steps.push(Ok(t));
            }
            Err(e) => steps.push(Err(e.to_string())),
        }
    }
    if lazy {
        switchyard_lazy::mark_step().unwrap();
    }
    steps
}

fn compare(seed: u64, eager: &[Step], lazy: &[Step]) {
    assert_eq!(eager.len(), lazy.len(), "program {seed}: step counts");
    for (i, (e, l)) in eager.iter().zip(lazy).enumerate() {
        match (e, l) {
            (Ok(e), Ok(l)) => {
                assert!(switchyard_lazy::is_lazy(l), "program {seed} step {i}");
                assert_eq!(l.dtype(), e.dtype(), "program {seed} step {i}: dtype");
                let (ls, lv) = values(l);
                let (es, ev) = values(e);
                assert_eq!(ls, es, "program {seed} step {i}: sizes");
                for (k, (x, y)) in lv.iter().zip(&ev).enumerate() {
                    assert!(
                        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                        "program {seed} step {i} element {k}: lazy {x} vs eager {y}"
                    );
                }
            }
            (Err(e), Err(l)) => assert_eq!(l, e, "program {seed} step {i}: error text"),
            (e, l) => panic!(
                "program {seed} step {i}: eager {:?} vs lazy {:?}",
                e.as_ref().map(|t| t.sizes().to_vec()),
                l.as_ref().map(|t| t.sizes().to_vec())
            ),
        }
    }
}

#[test]
fn random_programs_equal_eager() {
    let _g = setup();
    for seed in 1..=96u64 {
        let eager = run(seed, false);
        let lazy = run(seed, true);
        compare(seed, &eager, &lazy);
        // The same program again compiles nothing new.
        let before = counter("UncachedCompile");
        let again = run(seed, true);
        compare(seed, &eager, &again);
        assert_eq!(
            counter("UncachedCompile"),
            before,
            "program {seed}: a second run compiled"
        );
    }
}

/// The same random programs with IR reuse on: each runs twice lazily, the second run on new
/// inputs of the same shapes reusing the first run's nodes (their leaves given the new data);
/// both equal eager's.
#[test]
fn random_programs_equal_eager_with_ir_reuse() {
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            switchyard_lazy::set_reuse_ir(false);
            switchyard_lazy::ir_cache::reset();
        }
    }
    let _g = setup();
    switchyard_lazy::ir_cache::reset();
    switchyard_lazy::set_reuse_ir(true);
    let _off = Off;
    for seed in 1..=96u64 {
        let eager = run(seed, false);
        compare(seed, &eager, &run(seed, true));
        compare(seed, &eager, &run(seed, true));
    }
    let reused: u64 = switchyard_lazy::counter_names()
        .iter()
        .filter(|n| n.starts_with("IrNodeReused_"))
        .map(|n| counter(n))
        .sum();
    assert!(reused > 96, "{reused}");
}
