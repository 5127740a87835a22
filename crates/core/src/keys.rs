//! Dispatch keys, backend components and dispatch key sets (PyTorch's `c10/core/DispatchKey.h`
//! and `DispatchKeySet.h`, as of PyTorch 2.15).
//!
//! A [`DispatchKey`] names one layer of dispatch (`Functionalize`, `AutogradCPU`, `CPU`, ...).
//! Keys come in four groups, generated below from ordered lists so that every number is
//! derived, never written by hand:
//!
//! * *functionality keys*, in priority order (a higher value is dispatched first);
//! * *per-backend runtime keys*: for each per-backend functionality (`Dense`, `Quantized`,
//!   `Sparse`, `SparseCsr`, `NestedTensor`, `AutogradFunctionality`) one key per
//!   [`BackendComponent`] (`CPU`, `QuantizedCPU`, ..., `AutogradMeta`);
//! * *alias keys* (`Autograd`, `CompositeImplicitAutograd`, ...), which expand to sets of
//!   runtime keys when kernels are registered and never appear in a key set.
//!
//! A [`DispatchKeySet`] is a `u64`: 16 backend bits, then one bit per functionality key. A per-backend
//! runtime key is the pair (functionality bit, backend bit), so a set is a cross product:
//! `{Dense, AutogradFunctionality} × {CPU, CUDA}` contains `CPU`, `CUDA`, `AutogradCPU` and
//! `AutogradCUDA`.

use crate::{Error, Result};
use std::fmt;

macro_rules! define_dispatch_keys {
    (
        backends: [$($b:ident => $bname:literal),* $(,)?];
        functionality: [$($f:ident),* $(,)?];
        per_backend: [$($pf:ident ($start:ident) => [$($rk:ident),* $(,)?]),* $(,)?];
        alias: [$($a:ident),* $(,)?];
    ) => {
        /// A backend: which device a per-backend functionality is specialised for. The order is
        /// the priority among backends (a later backend wins when several are present).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        #[allow(non_camel_case_types, missing_docs)]
        pub enum BackendComponent {
            /// No backend.
            Invalid = 0,
            $($b,)*
        }

        impl BackendComponent {
            /// Every real backend component, in priority order.
            pub const ALL: &'static [BackendComponent] = &[$(BackendComponent::$b),*];

            /// PyTorch's printed name (`CPUBit`, `MetaBit`; `MTIA`/`MAIA` print without `Bit`).
            pub const fn bit_name(self) -> &'static str {
                match self {
                    BackendComponent::Invalid => "InvalidBit",
                    $(BackendComponent::$b => $bname,)*
                }
            }

            /// The component with value `v` (0 = `Invalid`).
            pub const fn from_u8(v: u8) -> Option<BackendComponent> {
                if v == 0 {
                    return Some(BackendComponent::Invalid);
                }
                let i = v as usize - 1;
                if i < Self::ALL.len() { Some(Self::ALL[i]) } else { None }
            }
        }

        /// A dispatch key. See the module documentation for the four groups.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u16)]
        #[allow(non_camel_case_types, missing_docs)]
        pub enum DispatchKey {
            /// No key; also the table slot for calls with no tensor arguments.
            Undefined = 0,
            $($f,)*
            #[doc(hidden)]
            EndOfFunctionalityKeys,
            $(
                #[doc(hidden)]
                $start,
                $($rk,)*
            )*
            $($a,)*
        }

        /// Every key, indexed by its numeric value.
        const ALL_KEYS: &[DispatchKey] = &[
            DispatchKey::Undefined,
            $(DispatchKey::$f,)*
            DispatchKey::EndOfFunctionalityKeys,
            $(DispatchKey::$start, $(DispatchKey::$rk,)*)*
            $(DispatchKey::$a,)*
        ];

        /// Printed names, indexed by numeric value.
        const KEY_NAMES: &[&str] = &[
            "Undefined",
            $(stringify!($f),)*
            "EndOfFunctionalityKeys",
            $(stringify!($start), $(stringify!($rk),)*)*
            $(stringify!($a),)*
        ];

        /// `(functionality, its StartOf marker)` for every per-backend functionality, in order.
        const PER_BACKEND: &[(DispatchKey, DispatchKey)] = &[$((DispatchKey::$pf, DispatchKey::$start)),*];

        /// The alias keys, in order.
        const ALIAS_KEYS: &[DispatchKey] = &[$(DispatchKey::$a),*];

        const _: () = {
            $(assert!([$(DispatchKey::$rk),*].len() == NUM_BACKENDS, "one runtime key per backend");)*
        };
    };
}

define_dispatch_keys! {
    backends: [
        CPU => "CPUBit", CUDA => "CUDABit", HIP => "HIPBit", XLA => "XLABit", MPS => "MPSBit",
        IPU => "IPUBit", XPU => "XPUBit", HPU => "HPUBit", VE => "VEBit", Lazy => "LazyBit",
        MTIA => "MTIA", MAIA => "MAIA", PrivateUse1 => "PrivateUse1Bit",
        PrivateUse2 => "PrivateUse2Bit", PrivateUse3 => "PrivateUse3Bit", Meta => "MetaBit",
    ];
    functionality: [
        Dense, FPGA, Vulkan, Metal, Quantized, CustomRNGKeyId, MkldnnCPU, Sparse, SparseCsr,
        NestedTensor, BackendSelect, Fake, Python, FuncTorchDynamicLayerBackMode, Functionalize,
        Conjugate, Negative, ZeroTensor, ADInplaceOrView, AutogradOther, AutogradFunctionality,
        AutogradNestedTensor, Tracer, AutocastCPU, AutocastMTIA, AutocastMAIA, AutocastXPU,
        AutocastIPU, AutocastHPU, AutocastXLA, AutocastMPS, AutocastCUDA, AutocastPrivateUse1,
        FuncTorchBatched, BatchedNestedTensor, FuncTorchVmapMode, Batched, VmapMode,
        FuncTorchGradWrapper, DeferredInit, PythonTLSSnapshot, FuncTorchDynamicLayerFrontMode,
        TESTING_ONLY_GenericWrapper, TESTING_ONLY_GenericMode, PreDispatch, PythonDispatcher,
    ];
    per_backend: [
        Dense(StartOfDenseBackends) => [
            CPU, CUDA, HIP, XLA, MPS, IPU, XPU, HPU, VE, Lazy, MTIA, MAIA,
            PrivateUse1, PrivateUse2, PrivateUse3, Meta,
        ],
        Quantized(StartOfQuantizedBackends) => [
            QuantizedCPU, QuantizedCUDA, QuantizedHIP, QuantizedXLA, QuantizedMPS, QuantizedIPU,
            QuantizedXPU, QuantizedHPU, QuantizedVE, QuantizedLazy, QuantizedMTIA, QuantizedMAIA,
            QuantizedPrivateUse1, QuantizedPrivateUse2, QuantizedPrivateUse3, QuantizedMeta,
        ],
        Sparse(StartOfSparseBackends) => [
            SparseCPU, SparseCUDA, SparseHIP, SparseXLA, SparseMPS, SparseIPU, SparseXPU,
            SparseHPU, SparseVE, SparseLazy, SparseMTIA, SparseMAIA, SparsePrivateUse1,
            SparsePrivateUse2, SparsePrivateUse3, SparseMeta,
        ],
        SparseCsr(StartOfSparseCsrBackends) => [
            SparseCsrCPU, SparseCsrCUDA, SparseCsrHIP, SparseCsrXLA, SparseCsrMPS, SparseCsrIPU,
            SparseCsrXPU, SparseCsrHPU, SparseCsrVE, SparseCsrLazy, SparseCsrMTIA, SparseCsrMAIA,
            SparseCsrPrivateUse1, SparseCsrPrivateUse2, SparseCsrPrivateUse3, SparseCsrMeta,
        ],
        NestedTensor(StartOfNestedTensorBackends) => [
            NestedTensorCPU, NestedTensorCUDA, NestedTensorHIP, NestedTensorXLA, NestedTensorMPS,
            NestedTensorIPU, NestedTensorXPU, NestedTensorHPU, NestedTensorVE, NestedTensorLazy,
            NestedTensorMTIA, NestedTensorMAIA, NestedTensorPrivateUse1, NestedTensorPrivateUse2,
            NestedTensorPrivateUse3, NestedTensorMeta,
        ],
        AutogradFunctionality(StartOfAutogradFunctionalityBackends) => [
            AutogradCPU, AutogradCUDA, AutogradHIP, AutogradXLA, AutogradMPS, AutogradIPU,
            AutogradXPU, AutogradHPU, AutogradVE, AutogradLazy, AutogradMTIA, AutogradMAIA,
            AutogradPrivateUse1, AutogradPrivateUse2, AutogradPrivateUse3, AutogradMeta,
        ],
    ];
    alias: [
        Autograd, CompositeImplicitAutograd, FuncTorchBatchedDecomposition,
        CompositeImplicitAutogradNestedTensor, CompositeExplicitAutograd,
        CompositeExplicitAutogradNonFunctional,
    ];
}

/// Number of backend components (16; Meta is last so a Meta key in TLS wins).
pub const NUM_BACKENDS: usize = 16;
/// Number of functionality values including `Undefined` (PyTorch's `num_functionality_keys`).
pub const NUM_FUNCTIONALITY_KEYS: usize = DispatchKey::EndOfFunctionalityKeys as usize;
/// Number of per-backend functionalities.
pub const NUM_PER_BACKEND_FUNCTIONALITIES: usize = PER_BACKEND.len();
/// Slots in an operator's dispatch table: one per functionality, plus `NUM_BACKENDS - 1` extra
/// for each per-backend functionality.
pub const NUM_RUNTIME_ENTRIES: usize =
    NUM_FUNCTIONALITY_KEYS + NUM_PER_BACKEND_FUNCTIONALITIES * (NUM_BACKENDS - 1);
/// Mask of the backend bits of a key set.
pub const FULL_BACKEND_MASK: u64 = (1 << NUM_BACKENDS) - 1;

const _: () = {
    assert!(BackendComponent::ALL.len() == NUM_BACKENDS);
    assert!(NUM_BACKENDS + NUM_FUNCTIONALITY_KEYS <= 64);
    // The top functionality key must not be per-backend (PyTorch asserts the same).
    assert!(!DispatchKey::PythonDispatcher.is_per_backend_functionality());
    assert!(
        DispatchKey::CPU as u16 - DispatchKey::StartOfDenseBackends as u16
            == BackendComponent::CPU as u16
    );
    assert!(
        DispatchKey::AutogradMeta as u16 - DispatchKey::StartOfAutogradFunctionalityBackends as u16
            == BackendComponent::Meta as u16
    );
};

impl DispatchKey {
    /// The printed name (`AutogradCPU`, `CompositeImplicitAutograd`, ...). A trailing
    /// `PrivateUse1` is shown as is; see [`DispatchKey::display_name`] for the renamed form.
    pub const fn name(self) -> &'static str {
        KEY_NAMES[self as usize]
    }

    /// The name with `PrivateUse1` replaced by the registered backend name upper-cased, as
    /// PyTorch's error messages show it (`AutogradFOO`).
    pub fn display_name(self) -> String {
        let name = self.name();
        let custom = crate::device::privateuse1_backend_name();
        match name.strip_suffix("PrivateUse1") {
            Some(prefix) if custom != "privateuseone" => {
                format!("{prefix}{}", custom.to_uppercase())
            }
            _ => name.to_owned(),
        }
    }

    /// The key with numeric value `v`.
    pub const fn from_u16(v: u16) -> Option<DispatchKey> {
        if (v as usize) < ALL_KEYS.len() {
            Some(ALL_KEYS[v as usize])
        } else {
            None
        }
    }

    /// Every key including internal markers, in numeric order.
    pub fn all() -> &'static [DispatchKey] {
        ALL_KEYS
    }

    /// Parses a key name as PyTorch's `parseDispatchKey` does, including the legacy aliases
    /// (`CPUTensorId`, `DefaultBackend`, `Autocast`, `PrivateUse1_PreAutograd`, ...), `CatchAll`,
    /// and a renamed PrivateUse1 backend (`FOO`, `AutogradFOO`).
    pub fn parse(s: &str) -> Result<DispatchKey> {
        if let Some(k) = Self::parse_exact(s) {
            return Ok(k);
        }
        let custom = crate::device::privateuse1_backend_name();
        if custom != "privateuseone" {
            let upper = custom.to_uppercase();
            if s.contains(&upper)
                && let Some(k) = Self::parse_exact(&s.replacen(&upper, "PrivateUse1", 1))
            {
                return Ok(k);
            }
        }
        Err(Error::runtime(format!("could not parse dispatch key: {s}")))
    }

    fn parse_exact(s: &str) -> Option<DispatchKey> {
        let legacy = match s {
            "CatchAll" => Some(DispatchKey::Undefined),
            "CPUTensorId" => Some(DispatchKey::CPU),
            "CUDATensorId" => Some(DispatchKey::CUDA),
            "DefaultBackend" => Some(DispatchKey::CompositeExplicitAutograd),
            "PrivateUse1_PreAutograd" => Some(DispatchKey::AutogradPrivateUse1),
            "PrivateUse2_PreAutograd" => Some(DispatchKey::AutogradPrivateUse2),
            "PrivateUse3_PreAutograd" => Some(DispatchKey::AutogradPrivateUse3),
            "Autocast" => Some(DispatchKey::AutocastCUDA),
            _ => None,
        };
        if legacy.is_some() {
            return legacy;
        }
        ALL_KEYS
            .iter()
            .copied()
            .find(|k| !k.is_internal_marker() && k.name() == s)
    }

    /// `EndOfFunctionalityKeys` and the `StartOf*Backends` placeholders.
    pub const fn is_internal_marker(self) -> bool {
        if matches!(self, DispatchKey::EndOfFunctionalityKeys) {
            return true;
        }
        let mut i = 0;
        while i < PER_BACKEND.len() {
            if PER_BACKEND[i].1 as u16 == self as u16 {
                return true;
            }
            i += 1;
        }
        false
    }

    /// A functionality key (`Dense` .. `PythonDispatcher`; not `Undefined`).
    pub const fn is_functionality_key(self) -> bool {
        let v = self as u16;
        v > 0 && v < DispatchKey::EndOfFunctionalityKeys as u16
    }

    /// One of the per-backend functionalities (`Dense`, `Quantized`, `Sparse`, `SparseCsr`,
    /// `NestedTensor`, `AutogradFunctionality`).
    pub const fn is_per_backend_functionality(self) -> bool {
        let mut i = 0;
        while i < PER_BACKEND.len() {
            if PER_BACKEND[i].0 as u16 == self as u16 {
                return true;
            }
            i += 1;
        }
        false
    }

    /// A per-backend runtime key such as `CPU` or `AutogradMeta` (not the placeholders).
    pub const fn is_per_backend_runtime_key(self) -> bool {
        !matches!(self.to_backend_component(), BackendComponent::Invalid)
    }

    /// An alias key (`Autograd`, `CompositeImplicitAutograd`, ...).
    pub const fn is_alias(self) -> bool {
        self as u16 >= DispatchKey::Autograd as u16
    }

    /// The backend of a per-backend runtime key (`AutogradCUDA` → `CUDA`), else `Invalid`.
    pub const fn to_backend_component(self) -> BackendComponent {
        let v = self as u16;
        let mut i = 0;
        while i < PER_BACKEND.len() {
            let start = PER_BACKEND[i].1 as u16;
            if v > start && v <= start + NUM_BACKENDS as u16 {
                return match BackendComponent::from_u8((v - start) as u8) {
                    Some(b) => b,
                    None => BackendComponent::Invalid,
                };
            }
            i += 1;
        }
        BackendComponent::Invalid
    }

    /// The functionality of a key: itself for functionality keys, `F` for a runtime key of
    /// per-backend functionality `F` (including its placeholder), `Undefined` for aliases.
    pub const fn to_functionality_key(self) -> DispatchKey {
        let v = self as u16;
        if v <= DispatchKey::EndOfFunctionalityKeys as u16 {
            return self;
        }
        let mut i = 0;
        while i < PER_BACKEND.len() {
            let start = PER_BACKEND[i].1 as u16;
            if v >= start && v <= start + NUM_BACKENDS as u16 {
                return PER_BACKEND[i].0;
            }
            i += 1;
        }
        DispatchKey::Undefined
    }

    /// The runtime key of per-backend functionality `functionality` for `backend`
    /// (`(AutogradFunctionality, CPU)` → `AutogradCPU`). `None` if `functionality` is not
    /// per-backend.
    pub const fn runtime_key(
        functionality: DispatchKey,
        backend: BackendComponent,
    ) -> Option<DispatchKey> {
        let mut i = 0;
        while i < PER_BACKEND.len() {
            if PER_BACKEND[i].0 as u16 == functionality as u16 {
                return DispatchKey::from_u16(PER_BACKEND[i].1 as u16 + backend as u16);
            }
            i += 1;
        }
        None
    }

    /// All alias keys.
    pub fn aliases() -> &'static [DispatchKey] {
        ALIAS_KEYS
    }
}

impl fmt::Display for DispatchKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_name())
    }
}

/// Position of the highest set bit, plus one (0 for 0), like PyTorch's `llvm::findLastSet + 1`.
#[inline(always)]
const fn index_of_highest_bit(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// For each functionality value: the first table slot it owns and the backend mask used to
/// offset into its per-backend slots (0 for functionalities with a single slot).
const OFFSETS_AND_MASKS: [(u16, u64); NUM_FUNCTIONALITY_KEYS] = {
    let mut table = [(0u16, 0u64); NUM_FUNCTIONALITY_KEYS];
    let mut f = 1;
    while f < NUM_FUNCTIONALITY_KEYS {
        let (prev_offset, prev_mask) = table[f - 1];
        let offset = prev_offset
            + if prev_mask == 0 {
                1
            } else {
                NUM_BACKENDS as u16
            };
        let key = ALL_KEYS[f];
        let mask = if key.is_per_backend_functionality() {
            FULL_BACKEND_MASK
        } else {
            0
        };
        table[f] = (offset, mask);
        f += 1;
    }
    assert!(table[NUM_FUNCTIONALITY_KEYS - 1].0 as usize == NUM_RUNTIME_ENTRIES - 1);
    table
};

/// A set of dispatch keys in one `u64` (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DispatchKeySet(u64);

impl DispatchKeySet {
    /// The empty set.
    pub const EMPTY: DispatchKeySet = DispatchKeySet(0);
    /// Every backend bit and every functionality bit.
    pub const FULL: DispatchKeySet =
        DispatchKeySet((1 << (NUM_BACKENDS + NUM_FUNCTIONALITY_KEYS - 1)) - 1);

    /// A set from its raw representation.
    pub const fn from_raw(repr: u64) -> Self {
        DispatchKeySet(repr)
    }

    /// The raw representation.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// The set of one key: its functionality bit, plus its backend bit for a per-backend
    /// runtime key. Aliases and `Undefined` give the empty set.
    pub const fn from_key(k: DispatchKey) -> Self {
        let v = k as u16;
        if v == 0 || k.is_alias() {
            return Self::EMPTY;
        }
        if v < DispatchKey::EndOfFunctionalityKeys as u16 {
            return DispatchKeySet(1 << (NUM_BACKENDS as u64 + v as u64 - 1));
        }
        let f = k.to_functionality_key() as u16;
        if f == 0 {
            return Self::EMPTY;
        }
        let fbit = 1u64 << (NUM_BACKENDS as u64 + f as u64 - 1);
        DispatchKeySet(fbit | Self::from_backend(k.to_backend_component()).0)
    }

    /// The set of several keys.
    pub const fn from_keys(keys: &[DispatchKey]) -> Self {
        let mut repr = 0;
        let mut i = 0;
        while i < keys.len() {
            repr |= Self::from_key(keys[i]).0;
            i += 1;
        }
        DispatchKeySet(repr)
    }

    /// The set holding just backend bit `b` (empty for `Invalid`).
    pub const fn from_backend(b: BackendComponent) -> Self {
        match b {
            BackendComponent::Invalid => Self::EMPTY,
            b => DispatchKeySet(1 << (b as u64 - 1)),
        }
    }

    /// Every backend bit, every functionality strictly below `k`'s functionality, and
    /// `PythonDispatcher` (so the Python dispatcher still sees redispatches).
    pub const fn full_after(k: DispatchKey) -> Self {
        let f = k.to_functionality_key() as u64;
        if f == 0 {
            return Self::from_key(DispatchKey::PythonDispatcher);
        }
        let below = (1u64 << (NUM_BACKENDS as u64 + f - 1)) - 1;
        DispatchKeySet(below | Self::from_key(DispatchKey::PythonDispatcher).0)
    }

    /// Union.
    pub const fn or(self, other: Self) -> Self {
        DispatchKeySet(self.0 | other.0)
    }

    /// Intersection.
    pub const fn and(self, other: Self) -> Self {
        DispatchKeySet(self.0 & other.0)
    }

    /// Removes the *functionality* bits of `other`; backend bits always survive.
    pub const fn minus(self, other: Self) -> Self {
        DispatchKeySet(self.0 & (FULL_BACKEND_MASK | !other.0))
    }

    /// Adds a key.
    pub const fn add(self, k: DispatchKey) -> Self {
        self.or(Self::from_key(k))
    }

    /// Removes the functionality bit of `k` (for every backend).
    pub const fn remove(self, k: DispatchKey) -> Self {
        DispatchKeySet(self.0 & !(Self::from_key(k).0 & !FULL_BACKEND_MASK))
    }

    /// Removes one backend bit.
    pub const fn remove_backend(self, b: BackendComponent) -> Self {
        DispatchKeySet(self.0 & !Self::from_backend(b).0)
    }

    /// Whether every bit of `k` is present. `Undefined` is never contained.
    pub const fn has(self, k: DispatchKey) -> bool {
        let ks = Self::from_key(k);
        ks.0 != 0 && self.has_all(ks)
    }

    /// Whether every bit of `other` is present.
    pub const fn has_all(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any bit of `other` is present.
    pub const fn has_any(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether backend bit `b` is present.
    pub const fn has_backend(self, b: BackendComponent) -> bool {
        self.has_all(Self::from_backend(b)) && !matches!(b, BackendComponent::Invalid)
    }

    /// True for the empty set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The highest functionality present (`Undefined` if none).
    #[inline(always)]
    pub const fn highest_functionality_key(self) -> DispatchKey {
        let i = index_of_highest_bit(self.0) as usize;
        if i <= NUM_BACKENDS {
            return DispatchKey::Undefined;
        }
        ALL_KEYS[i - NUM_BACKENDS]
    }

    /// The highest backend present (`Invalid` if none).
    pub const fn highest_backend_key(self) -> BackendComponent {
        match BackendComponent::from_u8(index_of_highest_bit(self.0 & FULL_BACKEND_MASK) as u8) {
            Some(b) => b,
            None => BackendComponent::Invalid,
        }
    }

    /// The key dispatch would pick: the highest functionality, made a runtime key with the
    /// highest backend when it is per-backend.
    pub const fn highest_priority_type_id(self) -> DispatchKey {
        let f = self.highest_functionality_key();
        if f.is_per_backend_functionality() {
            match DispatchKey::runtime_key(f, self.highest_backend_key()) {
                Some(k) => k,
                None => DispatchKey::Undefined,
            }
        } else {
            f
        }
    }

    /// 0-based index of the highest backend bit (0 if none); selects a per-backend
    /// fallthrough mask.
    #[inline(always)]
    pub const fn backend_index(self) -> usize {
        let i = index_of_highest_bit(self.0 & FULL_BACKEND_MASK);
        if i == 0 { 0 } else { i as usize - 1 }
    }

    /// The operator-table slot for this set: two leading-zero counts and one table load.
    #[inline(always)]
    pub const fn dispatch_table_index(self) -> usize {
        let f = index_of_highest_bit(self.0 >> NUM_BACKENDS) as usize;
        let (offset, mask) = OFFSETS_AND_MASKS[f];
        let b = index_of_highest_bit((self.0 & mask) >> 1) as usize;
        offset as usize + b
    }

    /// The keys in ascending priority: functionalities low to high; a per-backend
    /// functionality yields one runtime key per backend bit, CPU first.
    pub fn iter(self) -> impl Iterator<Item = DispatchKey> {
        let repr = self.0;
        (1..NUM_FUNCTIONALITY_KEYS)
            .filter(move |f| repr & (1 << (NUM_BACKENDS + f - 1)) != 0)
            .flat_map(move |f| {
                let func = ALL_KEYS[f];
                let per_backend = func.is_per_backend_functionality();
                let single = (!per_backend).then_some(func);
                let runtime = BackendComponent::ALL
                    .iter()
                    .copied()
                    .filter(move |b| per_backend && repr & (1 << (*b as u64 - 1)) != 0)
                    .filter_map(move |b| DispatchKey::runtime_key(func, b));
                single.into_iter().chain(runtime)
            })
    }
}

impl std::ops::BitOr for DispatchKeySet {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.or(rhs)
    }
}
impl std::ops::BitAnd for DispatchKeySet {
    type Output = Self;
    fn bitand(self, rhs: Self) -> Self {
        self.and(rhs)
    }
}
impl std::ops::BitXor for DispatchKeySet {
    type Output = Self;
    fn bitxor(self, rhs: Self) -> Self {
        DispatchKeySet(self.0 ^ rhs.0)
    }
}
impl std::ops::Sub for DispatchKeySet {
    type Output = Self;
    /// Removes functionality bits only, see [`DispatchKeySet::minus`].
    fn sub(self, rhs: Self) -> Self {
        self.minus(rhs)
    }
}
impl From<DispatchKey> for DispatchKeySet {
    fn from(k: DispatchKey) -> Self {
        Self::from_key(k)
    }
}

impl fmt::Display for DispatchKeySet {
    /// `DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DispatchKeySet(")?;
        for (i, k) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(&k.display_name())?;
        }
        f.write_str(")")
    }
}

impl fmt::Debug for DispatchKeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Frequently used key sets (PyTorch's constants in `DispatchKeySet.h`).
pub mod sets {
    use super::{BackendComponent, DispatchKey as K, DispatchKeySet as S, FULL_BACKEND_MASK};

    const ALL_BACKENDS: S = S::from_raw(FULL_BACKEND_MASK);

    /// The three autograd functionalities (no backend bits, so it can be subtracted).
    pub const AUTOGRAD: S = S::from_keys(&[
        K::AutogradFunctionality,
        K::AutogradOther,
        K::AutogradNestedTensor,
    ]);
    /// Every autocast key.
    pub const AUTOCAST: S = S::from_keys(&[
        K::AutocastCPU,
        K::AutocastMPS,
        K::AutocastCUDA,
        K::AutocastXPU,
        K::AutocastIPU,
        K::AutocastHPU,
        K::AutocastXLA,
        K::AutocastPrivateUse1,
        K::AutocastMTIA,
        K::AutocastMAIA,
    ]);
    /// Keys every thread includes by default.
    pub const DEFAULT_INCLUDED: S = S::from_keys(&[K::BackendSelect, K::ADInplaceOrView]);
    /// Keys every thread excludes by default (autocast is off).
    pub const DEFAULT_EXCLUDED: S = AUTOCAST;
    /// Autograd keys plus ADInplaceOrView.
    pub const AUTOGRAD_WITH_AD_INPLACE_OR_VIEW: S = AUTOGRAD.add(K::ADInplaceOrView);
    /// The Python keys.
    pub const PYTHON: S = S::from_keys(&[K::Python, K::PythonTLSSnapshot]);
    /// Backends without their own autograd key: they map to AutogradOther (plus every
    /// backend bit, so Sparse*/Quantized* of every backend are members).
    pub const AUTOGRADOTHER_BACKENDS: S = S::from_keys(&[
        K::FPGA,
        K::Vulkan,
        K::Metal,
        K::CustomRNGKeyId,
        K::MkldnnCPU,
        K::Sparse,
        K::SparseCsr,
        K::Quantized,
    ])
    .or(ALL_BACKENDS);
    /// Everything below autograd.
    pub const AFTER_AUTOGRAD: S = S::full_after(K::AutogradOther);
    /// Everything below ADInplaceOrView.
    pub const AFTER_AD_INPLACE_OR_VIEW: S = S::full_after(K::ADInplaceOrView);
    /// Everything below Functionalize, minus ADInplaceOrView (the functional replacement op has
    /// its own fallthrough set, so ADInplaceOrView must be skipped explicitly).
    pub const AFTER_FUNCTIONALIZE: S = S::full_after(K::Functionalize).remove(K::ADInplaceOrView);
    /// The backend functionalities and every backend bit.
    pub const BACKEND_FUNCTIONALITY: S =
        S::from_keys(&[K::Dense, K::Quantized, K::Sparse, K::SparseCsr]).or(ALL_BACKENDS);
    /// Functorch transform keys with their own tensor type.
    pub const FUNCTORCH_TRANSFORMS: S = S::from_keys(&[
        K::FuncTorchBatched,
        K::FuncTorchVmapMode,
        K::Batched,
        K::VmapMode,
        K::FuncTorchGradWrapper,
    ]);

    /// Runtime keys a `CompositeExplicitAutograd` kernel may fill.
    pub const BACKEND_DISPATCH: S = AUTOGRADOTHER_BACKENDS.add(K::Dense);
    /// Runtime keys a `CompositeExplicitAutogradNonFunctional` kernel may fill: not Sparse,
    /// not the functional backends XLA and Lazy.
    pub const NON_FUNCTIONAL_BACKEND_DISPATCH: S = BACKEND_DISPATCH
        .remove(K::Sparse)
        .remove_backend(BackendComponent::XLA)
        .remove_backend(BackendComponent::Lazy);
    /// Runtime keys a `CompositeImplicitAutograd` kernel may fill.
    pub const MATH_DISPATCH: S = BACKEND_DISPATCH
        .or(AUTOGRAD)
        .add(K::NestedTensor)
        .add(K::AutogradNestedTensor)
        .or(ALL_BACKENDS);
    /// Runtime keys a `CompositeImplicitAutogradNestedTensor` kernel may fill.
    pub const NESTED_DISPATCH: S =
        S::from_keys(&[K::NestedTensor, K::AutogradNestedTensor]).or(ALL_BACKENDS);
    /// Runtime keys an `Autograd` kernel may fill.
    pub const AUTOGRAD_ALIAS: S = AUTOGRAD.or(ALL_BACKENDS);
}

/// The runtime keys a key stands for: the expansion of an alias key, or the key itself.
pub const fn runtime_key_set(k: DispatchKey) -> DispatchKeySet {
    match k {
        DispatchKey::Autograd => sets::AUTOGRAD_ALIAS,
        DispatchKey::CompositeImplicitAutograd => sets::MATH_DISPATCH,
        DispatchKey::CompositeImplicitAutogradNestedTensor => sets::NESTED_DISPATCH,
        DispatchKey::CompositeExplicitAutograd => sets::BACKEND_DISPATCH,
        DispatchKey::CompositeExplicitAutogradNonFunctional => {
            sets::NON_FUNCTIONAL_BACKEND_DISPATCH
        }
        DispatchKey::FuncTorchBatchedDecomposition => {
            DispatchKeySet::from_key(DispatchKey::FuncTorchBatched)
        }
        k => DispatchKeySet::from_key(k),
    }
}

/// Whether runtime key `k` is filled by a kernel registered at `alias`
/// (PyTorch's `isIncludedInAlias`).
pub const fn is_included_in_alias(k: DispatchKey, alias: DispatchKey) -> bool {
    if matches!(k, DispatchKey::Undefined) {
        return false;
    }
    match alias {
        DispatchKey::Autograd => sets::AUTOGRAD.has(k.to_functionality_key()),
        DispatchKey::CompositeExplicitAutograd => {
            !matches!(k, DispatchKey::NestedTensor) && sets::BACKEND_DISPATCH.has(k)
        }
        DispatchKey::CompositeExplicitAutogradNonFunctional => {
            !matches!(k, DispatchKey::NestedTensor) && sets::NON_FUNCTIONAL_BACKEND_DISPATCH.has(k)
        }
        DispatchKey::CompositeImplicitAutograd => sets::MATH_DISPATCH.has(k),
        DispatchKey::CompositeImplicitAutogradNestedTensor => sets::NESTED_DISPATCH.has(k),
        DispatchKey::FuncTorchBatchedDecomposition => matches!(k, DispatchKey::FuncTorchBatched),
        alias => k as u16 == alias as u16,
    }
}

/// `{ADInplaceOrView, Autograd<B>}` for backends with their own autograd key, else
/// `{ADInplaceOrView, AutogradOther}`: the autograd keys a tensor of backend `b` carries.
pub const fn autograd_related_key_set(b: BackendComponent) -> DispatchKeySet {
    use BackendComponent as B;
    let autograd = match b {
        B::CPU
        | B::IPU
        | B::MTIA
        | B::MAIA
        | B::XPU
        | B::CUDA
        | B::XLA
        | B::Lazy
        | B::Meta
        | B::MPS
        | B::HPU
        | B::PrivateUse1
        | B::PrivateUse2
        | B::PrivateUse3 => match DispatchKey::runtime_key(DispatchKey::AutogradFunctionality, b) {
            Some(k) => k,
            None => DispatchKey::AutogradOther,
        },
        _ => DispatchKey::AutogradOther,
    };
    DispatchKeySet::from_keys(&[DispatchKey::ADInplaceOrView, autograd])
}

/// The autograd key of backend `b` (`AutogradCPU`, or `AutogradOther`).
pub const fn autograd_key_from_backend(b: BackendComponent) -> DispatchKey {
    autograd_related_key_set(b).highest_priority_type_id()
}

/// The autocast key of backend `b`, as a set (empty for backends without autocast).
pub const fn autocast_related_key_set(b: BackendComponent) -> DispatchKeySet {
    use BackendComponent as B;
    let k = match b {
        B::CPU => DispatchKey::AutocastCPU,
        B::MTIA => DispatchKey::AutocastMTIA,
        B::MAIA => DispatchKey::AutocastMAIA,
        B::XPU => DispatchKey::AutocastXPU,
        B::IPU => DispatchKey::AutocastIPU,
        B::HPU => DispatchKey::AutocastHPU,
        B::CUDA => DispatchKey::AutocastCUDA,
        B::XLA => DispatchKey::AutocastXLA,
        B::PrivateUse1 => DispatchKey::AutocastPrivateUse1,
        B::MPS => DispatchKey::AutocastMPS,
        _ => return DispatchKeySet::EMPTY,
    };
    DispatchKeySet::from_key(k)
}

/// The backend keys whose kernels an autograd key covers (`AutogradCPU` → `{CPU}`): used by the
/// "has backend kernel" rule when filling autograd slots from `CompositeImplicitAutograd`.
pub const fn backend_key_set_from_autograd(k: DispatchKey) -> DispatchKeySet {
    use BackendComponent as B;
    match k {
        DispatchKey::AutogradOther => sets::AUTOGRADOTHER_BACKENDS,
        DispatchKey::AutogradNestedTensor => DispatchKeySet::from_key(DispatchKey::NestedTensor)
            .or(DispatchKeySet::from_raw(FULL_BACKEND_MASK)),
        _ => {
            if !matches!(k.to_functionality_key(), DispatchKey::AutogradFunctionality) {
                return DispatchKeySet::EMPTY;
            }
            match k.to_backend_component() {
                b @ (B::CPU
                | B::CUDA
                | B::XLA
                | B::Lazy
                | B::Meta
                | B::MPS
                | B::HPU
                | B::IPU
                | B::XPU
                | B::MAIA
                | B::PrivateUse1
                | B::PrivateUse2
                | B::PrivateUse3) => match DispatchKey::runtime_key(DispatchKey::Dense, b) {
                    Some(dense) => DispatchKeySet::from_key(dense),
                    None => DispatchKeySet::EMPTY,
                },
                _ => DispatchKeySet::EMPTY,
            }
        }
    }
}

/// A key a backend kernel may be registered at (not an alias, not Undefined, not the bare
/// NestedTensor functionality, in the CompositeExplicitAutograd set).
pub const fn is_backend_dispatch_key(k: DispatchKey) -> bool {
    !matches!(k, DispatchKey::Undefined | DispatchKey::NestedTensor)
        && !k.is_alias()
        && sets::BACKEND_DISPATCH.has(k)
}

/// The key set a new tensor of backend `b` with base functionality `functionality` carries:
/// the base, its autocast key, and (outside inference mode) ADInplaceOrView plus its autograd
/// key (PyTorch's `TensorImpl` constructor).
pub fn tensor_key_set(
    functionality: DispatchKey,
    b: BackendComponent,
    inference: bool,
) -> DispatchKeySet {
    let base = match DispatchKey::runtime_key(functionality, b) {
        Some(k) => DispatchKeySet::from_key(k),
        None => DispatchKeySet::from_key(functionality),
    };
    let b = base.highest_backend_key();
    let ks = base.or(autocast_related_key_set(b)).minus(sets::PYTHON);
    if inference {
        ks.minus(sets::AUTOGRAD_WITH_AD_INPLACE_OR_VIEW)
    } else {
        ks.or(autograd_related_key_set(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DispatchKey as K;

    #[test]
    fn numbering_matches_pytorch_2_15() {
        assert_eq!(NUM_FUNCTIONALITY_KEYS, 47);
        assert_eq!(NUM_RUNTIME_ENTRIES, 137);
        assert_eq!(K::BackendSelect as u16, 11);
        assert_eq!(K::Python as u16, 13);
        assert_eq!(K::ADInplaceOrView as u16, 19);
        assert_eq!(K::PythonDispatcher as u16, 46);
        assert_eq!(K::CPU as u16, 49);
        assert_eq!(K::Meta as u16, 64);
        assert_eq!(K::AutogradCPU as u16, 134);
        assert_eq!(K::AutogradMeta as u16, 149);
        assert_eq!(K::Autograd as u16, 150);
        assert_eq!(K::CompositeExplicitAutogradNonFunctional as u16, 155);
    }

    #[test]
    fn cpu_tensor_key_set_prints_like_pytorch() {
        let ks = tensor_key_set(K::Dense, BackendComponent::CPU, false);
        assert_eq!(
            ks.to_string(),
            "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)"
        );
        let meta = tensor_key_set(K::Dense, BackendComponent::Meta, false);
        assert_eq!(
            meta.to_string(),
            "DispatchKeySet(Meta, ADInplaceOrView, AutogradMeta)"
        );
        let inference = tensor_key_set(K::Dense, BackendComponent::CPU, true);
        assert_eq!(inference.to_string(), "DispatchKeySet(CPU, AutocastCPU)");
    }

    #[test]
    fn table_indices_are_a_bijection_over_runtime_keys() {
        let mut seen = [false; NUM_RUNTIME_ENTRIES];
        seen[DispatchKeySet::EMPTY.dispatch_table_index()] = true;
        for k in DispatchKeySet::FULL.iter() {
            let i = DispatchKeySet::from_key(k).dispatch_table_index();
            assert!(!seen[i], "{k} collides at {i}");
            seen[i] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(DispatchKeySet::from_key(K::CPU).dispatch_table_index(), 1);
        assert_eq!(DispatchKeySet::from_key(K::Meta).dispatch_table_index(), 16);
        assert_eq!(
            DispatchKeySet::from_key(K::PythonDispatcher).dispatch_table_index(),
            136
        );
    }

    #[test]
    fn highest_key_and_subtraction() {
        let ks = tensor_key_set(K::Dense, BackendComponent::CPU, false)
            .or(sets::DEFAULT_INCLUDED)
            .minus(sets::DEFAULT_EXCLUDED);
        assert_eq!(ks.highest_priority_type_id(), K::AutogradCPU);
        let below = ks.and(sets::AFTER_AUTOGRAD);
        assert_eq!(below.highest_priority_type_id(), K::ADInplaceOrView);
        assert_eq!(
            below
                .remove(K::ADInplaceOrView)
                .remove(K::BackendSelect)
                .highest_priority_type_id(),
            K::CPU
        );
        // Removing keeps backend bits.
        assert!(
            ks.minus(DispatchKeySet::from_key(K::CPU))
                .has_backend(BackendComponent::CPU)
        );
    }

    #[test]
    fn parse_names() {
        for k in DispatchKey::all() {
            if !k.is_internal_marker() {
                assert_eq!(DispatchKey::parse(k.name()).unwrap(), *k);
            }
        }
        assert_eq!(DispatchKey::parse("CatchAll").unwrap(), K::Undefined);
        assert_eq!(
            DispatchKey::parse("DefaultBackend").unwrap(),
            K::CompositeExplicitAutograd
        );
        assert_eq!(
            DispatchKey::parse("invalid_key").unwrap_err().message(),
            "could not parse dispatch key: invalid_key"
        );
        assert_eq!(
            DispatchKey::parse("Named").unwrap_err().message(),
            "could not parse dispatch key: Named"
        );
    }

    #[test]
    fn alias_membership() {
        assert!(is_included_in_alias(K::AutogradCPU, K::Autograd));
        assert!(is_included_in_alias(K::AutogradOther, K::Autograd));
        assert!(!is_included_in_alias(K::CPU, K::Autograd));
        assert!(is_included_in_alias(K::CPU, K::CompositeExplicitAutograd));
        assert!(is_included_in_alias(K::FPGA, K::CompositeExplicitAutograd));
        assert!(!is_included_in_alias(
            K::NestedTensorCPU,
            K::CompositeExplicitAutograd
        ));
        assert!(is_included_in_alias(
            K::NestedTensorCPU,
            K::CompositeImplicitAutograd
        ));
        assert!(!is_included_in_alias(
            K::XLA,
            K::CompositeExplicitAutogradNonFunctional
        ));
        assert!(!is_included_in_alias(
            K::SparseCPU,
            K::CompositeExplicitAutogradNonFunctional
        ));
        assert!(is_included_in_alias(
            K::SparseCsrCPU,
            K::CompositeExplicitAutogradNonFunctional
        ));
        assert!(is_included_in_alias(
            K::AutogradXLA,
            K::CompositeImplicitAutograd
        ));
        assert!(!is_included_in_alias(
            K::BackendSelect,
            K::CompositeImplicitAutograd
        ));
        assert_eq!(
            autograd_key_from_backend(BackendComponent::HIP),
            K::AutogradOther
        );
        assert_eq!(
            autograd_key_from_backend(BackendComponent::Lazy),
            K::AutogradLazy
        );
        assert_eq!(
            backend_key_set_from_autograd(K::AutogradCPU),
            DispatchKeySet::from_key(K::CPU)
        );
        assert!(backend_key_set_from_autograd(K::AutogradMTIA).is_empty());
    }

    #[test]
    fn iteration_is_ascending_and_complete() {
        let keys: Vec<_> = DispatchKeySet::FULL.iter().collect();
        assert_eq!(keys.len(), NUM_RUNTIME_ENTRIES - 1);
        assert!(
            keys.windows(2)
                .all(|w| DispatchKeySet::from_key(w[0]).dispatch_table_index()
                    < DispatchKeySet::from_key(w[1]).dispatch_table_index())
        );
        assert_eq!(DispatchKeySet::EMPTY.to_string(), "DispatchKeySet()");
    }
}
