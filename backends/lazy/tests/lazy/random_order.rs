//! Random operators with the default generator draw in eager's program order (plan §4.3):
//! with the naive backend and the compiler, with IR reuse off and on, and when a later step
//! traces the same graph with its random operators in another order.

use switchyard_core::{Device, Tensor};
use switchyard_lazy::compiler::{CompilerKind, set_compiler};
use switchyard_ops::{TensorOps, op};

use crate::support::{counter, setup, values};

/// Restores the default compiler and reuse off when a test ends.
struct Restore;
impl Drop for Restore {
    fn drop(&mut self) {
        set_compiler(CompilerKind::Fusing);
        switchyard_lazy::set_reuse_ir(false);
        switchyard_lazy::ir_cache::reset();
    }
}

/// Four steps from one seed. Each step draws `uniform` and `bernoulli` into fresh tensors
/// (in-place on a step-0 input, and functional), in an order that alternates between steps,
/// and keeps only values combining them (so a graph's post-order need not follow the draws).
fn program(device: Device) -> Vec<Tensor> {
    let lazy = device.kind() == switchyard_core::DeviceType::Lazy;
    switchyard_core::generator::manual_seed(7).unwrap();
    let base = crate::support::sample(&[3, 4], 5);
    let on = |t: &Tensor| {
        if lazy {
            switchyard_lazy::to_lazy(t).unwrap()
        } else {
            Clone::clone(t)
        }
    };
    let x = on(&base);
    let mut out = Vec::new();
    for step in 0..4 {
        let draw_u = || op::uniform::call(&x, -1.0, 1.0, None).unwrap();
        let draw_b = || op::bernoulli_p::call(&x, 0.5, None).unwrap();
        // Only the combined values outlive the block (the draws are no roots of the step).
        let (c, d) = {
            let (u, b) = if step % 2 == 0 {
                let u = draw_u();
                (u, draw_b())
            } else {
                let b = draw_b();
                (draw_u(), b)
            };
            // In place on a fresh tensor: the draw happens at the call eagerly.
            let w = on(&base);
            w.uniform__with(0.0, 2.0, None).unwrap();
            // The kept values read the draws in an order other than the program's.
            (w.add(&b).unwrap().mul(&u).unwrap(), b.sub(&w).unwrap())
        };
        out.push(c);
        out.push(d);
        if lazy {
            switchyard_lazy::mark_step().unwrap();
        }
    }
    out
}

fn check(kind: CompilerKind, reuse: bool) {
    let _restore = Restore;
    let eager = program(Device::CPU);
    set_compiler(kind);
    switchyard_lazy::ir_cache::reset();
    switchyard_lazy::set_reuse_ir(reuse);
    // Twice: the second run's steps reuse the first's nodes and cached programs.
    for run in 0..2 {
        let lazy = program(switchyard_lazy::device());
        for (i, (l, e)) in lazy.iter().zip(&eager).enumerate() {
            assert_eq!(
                values(l),
                values(e),
                "{kind:?} reuse {reuse} run {run} value {i}"
            );
        }
    }
    if reuse {
        // Random nodes were reused (their graphs dropped), beside new ones in the same steps.
        let reused = |class: &str| counter(&format!("IrNodeReused_torch::lazy::{class}"));
        assert!(reused("Uniform") > 0 && reused("BernoulliP") > 0);
    }
}

#[test]
fn random_draws_follow_program_order_naive() {
    let _g = setup();
    check(CompilerKind::Naive, false);
}

#[test]
fn random_draws_follow_program_order_compiled() {
    let _g = setup();
    check(CompilerKind::Fusing, false);
}

#[test]
fn random_draws_follow_program_order_naive_with_ir_reuse() {
    let _g = setup();
    check(CompilerKind::Naive, true);
}

#[test]
fn random_draws_follow_program_order_compiled_with_ir_reuse() {
    let _g = setup();
    check(CompilerKind::Fusing, true);
}
