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

#[test]
fn demo_steps_equal_eager_and_are_cached() {
    let _g = setup();
    let mut eager = DemoTrainer::new(Device::CPU).unwrap();
    let mut lazy = DemoTrainer::new(switchyard_lazy::device()).unwrap();
    // Dump the step's program when asked (profiling aid): LTC_SAVE_TENSORS_FILE applies.
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
