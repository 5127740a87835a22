//! Random number generators (`torch.Generator`): a seedable Mersenne Twister per generator,
//! as PyTorch's CPU generator, plus one default generator per device.

use crate::keys::{DispatchKey, DispatchKeySet};
use crate::{Device, Error, Result};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

/// PyTorch's default seed for the default CPU generator.
pub const DEFAULT_SEED: u64 = 67_280_421_310_721;

const MT_N: usize = 624;
const MT_M: usize = 397;

/// The 32-bit Mersenne Twister (`std::mt19937`), seeded from the low 32 bits of a `u64`
/// like PyTorch's `at::mt19937`.
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; MT_N],
    index: usize,
}

impl Mt19937 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Mt19937 {
        let mut state = [0u32; MT_N];
        state[0] = (seed & 0xffff_ffff) as u32;
        for j in 1..MT_N {
            let prev = state[j - 1];
            state[j] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(j as u32);
        }
        Mt19937 { state, index: MT_N }
    }

    fn twist(&mut self) {
        for i in 0..MT_N {
            let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % MT_N] & 0x7fff_ffff);
            let mut v = self.state[(i + MT_M) % MT_N] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.state[i] = v;
        }
        self.index = 0;
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= MT_N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }
}

/// The state behind a [`Generator`]; kernels lock it once and draw many numbers.
pub struct GeneratorState {
    seed: u64,
    engine: Mt19937,
    /// A cached second normal sample from the Box–Muller transform (as PyTorch caches it).
    pub next_double_normal_sample: Option<f64>,
    /// A cached second normal sample in single precision.
    pub next_float_normal_sample: Option<f32>,
}

impl GeneratorState {
    /// The next 32 random bits.
    pub fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }

    /// The next 64 random bits (two 32-bit draws, high first).
    pub fn random64(&mut self) -> u64 {
        let hi = u64::from(self.engine.next_u32());
        let lo = u64::from(self.engine.next_u32());
        (hi << 32) | lo
    }

    /// Reseeds.
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
        self.engine = Mt19937::new(seed);
        self.next_double_normal_sample = None;
        self.next_float_normal_sample = None;
    }
}

/// A random number generator bound to a device; clones share the state.
#[derive(Clone)]
pub struct Generator {
    device: Device,
    state: Arc<Mutex<GeneratorState>>,
}

impl Generator {
    /// A generator on `device` seeded with [`DEFAULT_SEED`].
    pub fn new(device: Device) -> Generator {
        Generator {
            device,
            state: Arc::new(Mutex::new(GeneratorState {
                seed: DEFAULT_SEED,
                engine: Mt19937::new(DEFAULT_SEED),
                next_double_normal_sample: None,
                next_float_normal_sample: None,
            })),
        }
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The dispatch keys a generator argument contributes (its backend's dense key).
    pub fn key_set(&self) -> DispatchKeySet {
        DispatchKey::runtime_key(DispatchKey::Dense, self.device.kind().backend_component())
            .map(DispatchKeySet::from_key)
            .unwrap_or_default()
    }

    /// Locks the state for drawing numbers.
    pub fn lock(&self) -> MutexGuard<'_, GeneratorState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reseeds (`manual_seed`); returns the generator for chaining.
    pub fn manual_seed(&self, seed: u64) -> &Generator {
        self.lock().set_seed(seed);
        self
    }

    /// The seed last set.
    pub fn initial_seed(&self) -> u64 {
        self.lock().seed
    }

    /// Whether both handles share one state.
    pub fn is_same(&self, other: &Generator) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }
}

impl fmt::Debug for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Generator(device={}, seed={})",
            self.device,
            self.initial_seed()
        )
    }
}

static DEFAULT_CPU: OnceLock<Generator> = OnceLock::new();

/// The default generator of a device (only the CPU has one so far).
pub fn default_generator(device: Device) -> Result<Generator> {
    if device.is_cpu() {
        Ok(DEFAULT_CPU
            .get_or_init(|| Generator::new(Device::CPU))
            .clone())
    } else {
        Err(Error::runtime(format!(
            "no default generator is available for device {device}"
        )))
    }
}

/// `torch.manual_seed`: reseeds the default CPU generator.
pub fn manual_seed(seed: u64) -> Result<()> {
    default_generator(Device::CPU)?.manual_seed(seed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_reference_values() {
        // std::mt19937 with the default seed 5489: the 10000th output is 4123659995 (C++ standard).
        let mut mt = Mt19937::new(5489);
        let mut last = 0;
        for _ in 0..10_000 {
            last = mt.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
    }

    #[test]
    fn reseeding_repeats_the_stream() {
        let g = Generator::new(Device::CPU);
        g.manual_seed(42);
        let a: Vec<u32> = (0..5).map(|_| g.lock().random()).collect();
        g.manual_seed(42);
        let b: Vec<u32> = (0..5).map(|_| g.lock().random()).collect();
        assert_eq!(a, b);
        assert_eq!(g.initial_seed(), 42);
    }
}
