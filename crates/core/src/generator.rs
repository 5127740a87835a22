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
/// like PyTorch's `at::mt19937`, whose bookkeeping it keeps (`left`, `next`) so that its state
/// serialises to PyTorch's bytes ([`GeneratorState::get_state`]).
///
/// Invariant: `1 <= left` and `next + left <= MT_N + 1`, so a draw reads `state[next]` only
/// with `next < MT_N` (after a twist, `next` is 0). Every state PyTorch's engine reaches
/// satisfies it; [`GeneratorState::set_state`] refuses others.
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; MT_N],
    /// Draws left before the next twist, plus one (PyTorch's `left_`).
    left: u32,
    /// The index of the next word to temper (PyTorch's `next_`).
    next: u32,
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
        Mt19937 {
            state,
            left: 1,
            next: 0,
        }
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
        self.left = MT_N as u32;
        self.next = 0;
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        self.left -= 1;
        if self.left == 0 {
            self.twist();
        }
        let mut y = self.state[self.next as usize];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }
}

/// The size of PyTorch's `CPUGeneratorImplState` (its `get_rng_state()` bytes on x86-64 and
/// aarch64 Linux).
pub const CPU_STATE_SIZE: usize = 5056;

// Byte offsets of PyTorch's `CPUGeneratorImplState` (`CPUGeneratorImplStateLegacy` first:
// `u64 the_initial_seed; i32 left; i32 seeded; u64 next; u64 state[624]; f64 normal_x,
// normal_y, normal_rho; i32 normal_is_valid;` padded to 8, then `f32
// next_float_normal_sample; bool is_next_float_normal_sample_valid;` padded to 8).
const OFF_LEFT: usize = 8;
const OFF_SEEDED: usize = 12;
const OFF_NEXT: usize = 16;
const OFF_STATE: usize = 24;
const OFF_NORMAL_Y: usize = OFF_STATE + 8 * MT_N + 8;
const OFF_NORMAL_VALID: usize = OFF_NORMAL_Y + 16;
const OFF_FLOAT_NORMAL: usize = OFF_NORMAL_VALID + 8;
const OFF_FLOAT_VALID: usize = OFF_FLOAT_NORMAL + 4;

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_ne_bytes(b)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_ne_bytes(b)
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

    /// The state as PyTorch's `CPUGeneratorImpl::get_state` lays it out
    /// ([`CPU_STATE_SIZE`] bytes, native byte order, unused fields and padding zero).
    pub fn get_state(&self) -> Vec<u8> {
        let mut out = vec![0u8; CPU_STATE_SIZE];
        let mut put = |at: usize, b: &[u8]| out[at..at + b.len()].copy_from_slice(b);
        put(0, &self.seed.to_ne_bytes());
        put(OFF_LEFT, &self.engine.left.to_ne_bytes());
        put(OFF_SEEDED, &1u32.to_ne_bytes());
        put(OFF_NEXT, &u64::from(self.engine.next).to_ne_bytes());
        for (i, w) in self.engine.state.iter().enumerate() {
            put(OFF_STATE + 8 * i, &u64::from(*w).to_ne_bytes());
        }
        if let Some(y) = self.next_double_normal_sample {
            put(OFF_NORMAL_Y, &y.to_ne_bytes());
            put(OFF_NORMAL_VALID, &1u32.to_ne_bytes());
        }
        if let Some(f) = self.next_float_normal_sample {
            put(OFF_FLOAT_NORMAL, &f.to_ne_bytes());
            put(OFF_FLOAT_VALID, &[1]);
        }
        out
    }

    /// Restores a state from [`GeneratorState::get_state`]'s bytes (or PyTorch's), with
    /// `CPUGeneratorImpl::set_state`'s checks and messages. Beyond PyTorch's `is_valid`, a
    /// position its engine cannot reach (`next + left > 625`, which would read past the
    /// state array there) is refused too.
    pub fn set_state(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() != CPU_STATE_SIZE {
            return Err(Error::runtime(format!(
                "Expected a CPUGeneratorImplState of size {CPU_STATE_SIZE} but found the input RNG state size to be {}",
                bytes.len()
            )));
        }
        let left = read_u32(bytes, OFF_LEFT);
        let seeded = read_u32(bytes, OFF_SEEDED) != 0;
        // The engine keeps `next` as a u32 (PyTorch casts the legacy u64 down).
        let next = read_u64(bytes, OFF_NEXT) as u32;
        let n = MT_N as u32;
        // `left` is a C `int` there: a negative one reads as a huge u32 here, refused alike.
        let valid = seeded && (1..=n).contains(&left) && next <= n && next + left <= n + 1;
        if !valid {
            return Err(Error::runtime("Invalid mt19937 state"));
        }
        let mut state = [0u32; MT_N];
        for (i, w) in state.iter_mut().enumerate() {
            *w = read_u64(bytes, OFF_STATE + 8 * i) as u32;
        }
        self.seed = read_u64(bytes, 0);
        self.engine = Mt19937 { state, left, next };
        self.next_double_normal_sample = (read_u32(bytes, OFF_NORMAL_VALID) != 0)
            .then(|| f64::from_bits(read_u64(bytes, OFF_NORMAL_Y)));
        self.next_float_normal_sample = (bytes[OFF_FLOAT_VALID] != 0)
            .then(|| f32::from_bits(read_u32(bytes, OFF_FLOAT_NORMAL)));
        Ok(())
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

    /// Reseeds from the operating system's randomness (`Generator.seed()`); returns the seed.
    pub fn seed(&self) -> u64 {
        let seed = nondeterministic_seed();
        self.manual_seed(seed);
        seed
    }

    /// A new generator on the same device with a copy of this one's state
    /// (`Generator.clone_state()`).
    pub fn clone_state(&self) -> Generator {
        let st = self.lock();
        Generator {
            device: self.device,
            state: Arc::new(Mutex::new(GeneratorState {
                seed: st.seed,
                engine: st.engine.clone(),
                next_double_normal_sample: st.next_double_normal_sample,
                next_float_normal_sample: st.next_float_normal_sample,
            })),
        }
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

/// 64 bits from `/dev/urandom` (PyTorch's `getNonDeterministicRandom`), or, where that is
/// unavailable, from the clock and a per-process counter mixed by splitmix64.
fn nondeterministic_seed() -> u64 {
    use std::io::Read;
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
    {
        return u64::from_ne_bytes(b);
    }
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut z =
        nanos ^ COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, std::sync::atomic::Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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
    fn state_bytes_have_pytorchs_layout_and_round_trip() {
        let g = Generator::new(Device::CPU);
        g.manual_seed(3);
        let fresh = g.lock().get_state();
        assert_eq!(fresh.len(), CPU_STATE_SIZE);
        // torch.Generator().manual_seed(3).get_state()[:32]: seed 3, left 1, seeded 1, next 0,
        // state[0] = 3 (the low word of the seed).
        let head: [u8; 32] = [
            3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0,
            0, 0, 0,
        ];
        assert_eq!(fresh[..32], head);
        // After three draws (torch.rand(3, generator=g)): left 622, next 3, and state[0] is the
        // twisted word 0x8715c292.
        let drawn: Vec<u32> = (0..3).map(|_| g.lock().random()).collect();
        let after = g.lock().get_state();
        assert_eq!(after[8..12], 622u32.to_ne_bytes());
        assert_eq!(after[16..24], 3u64.to_ne_bytes());
        assert_eq!(after[24..28], 0x8715_c292u32.to_ne_bytes());
        // Restoring either state replays the stream.
        g.lock().set_state(&fresh).unwrap();
        let again: Vec<u32> = (0..3).map(|_| g.lock().random()).collect();
        assert_eq!(again, drawn);
        g.lock().set_state(&after).unwrap();
        let next = g.lock().random();
        g.manual_seed(3);
        let reference: Vec<u32> = (0..4).map(|_| g.lock().random()).collect();
        assert_eq!(next, reference[3]);
        // The cached normal samples travel with the state.
        g.lock().next_double_normal_sample = Some(1.25);
        g.lock().next_float_normal_sample = Some(-0.5);
        let with_normals = g.lock().get_state();
        let h = Generator::new(Device::CPU);
        h.lock().set_state(&with_normals).unwrap();
        assert_eq!(h.lock().next_double_normal_sample, Some(1.25));
        assert_eq!(h.lock().next_float_normal_sample, Some(-0.5));
        assert_eq!(h.initial_seed(), 3);
    }

    #[test]
    fn bad_states_are_refused_with_pytorchs_messages() {
        let g = Generator::new(Device::CPU);
        let e = g.lock().set_state(&[0u8; 3]).unwrap_err();
        assert_eq!(
            e.message(),
            "Expected a CPUGeneratorImplState of size 5056 but found the input RNG state size to be 3"
        );
        // All zeros: not seeded, left 0 (torch.Generator().set_state(torch.zeros(5056,
        // dtype=torch.uint8)) raises the same).
        let e = g.lock().set_state(&[0u8; CPU_STATE_SIZE]).unwrap_err();
        assert_eq!(e.message(), "Invalid mt19937 state");
        // A position PyTorch's engine never reaches (next 624 with 5 draws left) is refused
        // rather than read past the state.
        let mut s = g.lock().get_state();
        s[8..12].copy_from_slice(&5u32.to_ne_bytes());
        s[16..24].copy_from_slice(&624u64.to_ne_bytes());
        assert!(g.lock().set_state(&s).is_err());
    }

    #[test]
    fn clone_state_copies_and_seed_reseeds() {
        let g = Generator::new(Device::CPU);
        g.manual_seed(9);
        g.lock().random();
        let c = g.clone_state();
        assert!(!c.is_same(&g));
        assert_eq!(c.lock().random(), g.lock().random());
        let s = g.seed();
        assert_eq!(g.initial_seed(), s);
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
