//! `switchyard demo`'s training step (the bench's `lazy/demo_mlp_step`, same code) on the lazy
//! device against the same steps run eagerly on the CPU: losses and parameters after every
//! step, and the step's graph taken from the cache once Adam's state exists.

#[path = "../../benches/shared/demo_step.rs"]
#[allow(dead_code)]
mod demo_step;

use demo_step::DemoTrainer;
use switchyard_core::Device;
use switchyard_nn::Module;

use crate::support::{counter, setup, values};

/// Six demo steps lazily and eagerly: equal losses and parameters after every step, and the
/// compile counts of the lazy steps.
fn demo_steps_equal_eager() {
    // The counts below start from an empty cache (the other test compiled the same step).
    switchyard_lazy::executor::clear_computation_cache();
    let mut eager = DemoTrainer::new(Device::CPU).unwrap();
    let mut lazy = DemoTrainer::new(switchyard_lazy::device()).unwrap();
    for step in 0..6 {
        let (le, ll) = (eager.step().unwrap(), lazy.step().unwrap());
        assert_eq!(values(&ll), values(&le), "loss of step {step}");
        for ((name, pl), (_, pe)) in lazy
            .net
            .named_parameters()
            .into_iter()
            .zip(eager.net.named_parameters())
        {
            assert_eq!(values(&pl), values(&pe), "{name} after step {step}");
        }
    }
    // Step 1 creates Adam's state, step 2 is the steady step's first compile; then cached.
    assert_eq!(counter("UncachedCompile"), 2);
    assert_eq!(counter("CachedCompile"), 4);
}

#[test]
fn demo_steps_equal_eager_and_are_cached() {
    let _g = setup();
    demo_steps_equal_eager();
}

/// With IR reuse across steps (`lazy/demo_mlp_step_reuse_ir` times it): the same values, and
/// the steady steps' nodes come from the trie.
#[test]
fn demo_steps_with_reuse_ir_equal_eager() {
    let _g = setup();
    switchyard_lazy::set_reuse_ir(true);
    let r = std::panic::catch_unwind(demo_steps_equal_eager);
    let reused: u64 = switchyard_lazy::counter_names()
        .iter()
        .filter(|n| n.starts_with("IrNodeReused_"))
        .map(|n| counter(n))
        .sum();
    switchyard_lazy::set_reuse_ir(false);
    switchyard_lazy::ir_cache::reset();
    if let Err(e) = r {
        std::panic::resume_unwind(e);
    }
    assert!(reused > 0, "no IR node was reused");
}
