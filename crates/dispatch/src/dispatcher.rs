//! The dispatcher: the registry of operators and backend fallbacks.
//!
//! All registration goes through one lock (as in PyTorch); calls never take it. Operator
//! entries and kernels are allocated once and live for the rest of the process, so handles
//! and table slots never dangle; deregistration removes kernels from tables, and an operator
//! with neither a schema nor kernels simply stops being listed.

use crate::kernel::KernelFunction;
use crate::operator::{
    AliasAnalysisKind, AnnotatedKernel, DefInfo, FixedSignature, OperatorEntry, OperatorHandle,
    runtime_keys,
};
use crate::signature::schema_difference;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, OnceLock, PoisonError, RwLock};
use switchyard_core::keys::{
    DispatchKey, DispatchKeySet, NUM_RUNTIME_ENTRIES, runtime_key_set, sets,
};
use switchyard_core::{Error, Result};
use switchyard_schema::FunctionSchema;

/// A backend fallback in the global fallback table.
pub(crate) struct FallbackSlot {
    pub(crate) kernel: &'static KernelFunction,
    pub(crate) debug: String,
    pub(crate) id: u64,
    /// The framework's placeholder (`FRAMEWORK_DEBUG`) that this registration displaced; it
    /// comes back when this registration is removed. A layer crate (autograd) replaces the
    /// placeholder fallthrough of its keys this way, without a conflict.
    pub(crate) displaced_default: Option<Box<FallbackSlot>>,
}

/// Registration state, guarded by the dispatcher's single registration lock.
pub(crate) struct DispatcherState {
    /// Backend fallbacks by table index.
    pub(crate) fallbacks: Vec<Option<FallbackSlot>>,
    /// Namespaces claimed by a `Def` library, with that library's debug string.
    libraries: HashMap<String, String>,
    /// Every operator entry ever created, in creation order.
    entries: Vec<&'static OperatorEntry>,
    next_id: u64,
}

/// The operator registry. Use [`Dispatcher::singleton`] for the process-wide instance, or
/// [`Dispatcher::new_isolated`] for a private one (tests).
pub struct Dispatcher {
    operators: RwLock<HashMap<String, &'static OperatorEntry>>,
    state: Mutex<DispatcherState>,
    ambiguous: OnceLock<&'static KernelFunction>,
    warned_override: AtomicBool,
    /// The first static registration that failed, as the error every lookup then returns
    /// (set once, when the singleton runs them; never set on an isolated dispatcher).
    static_failure: OnceLock<Option<Error>>,
}

/// A registration run when the process-wide dispatcher is first used: the equivalent of
/// PyTorch's `TORCH_LIBRARY` static initialisers. Crates add theirs with
/// `#[linkme::distributed_slice(STATIC_REGISTRATIONS)]`; the generated registrations of
/// `switchyard-ops` and `switchyard-cpu` are such.
#[derive(Clone, Copy)]
pub struct StaticRegistration {
    /// Who registers (a crate name), named in the error when it fails.
    pub name: &'static str,
    /// Registers through the dispatcher it receives (it must not call
    /// [`Dispatcher::singleton`]).
    pub register: fn(&'static Dispatcher) -> Result<()>,
}

/// Every [`StaticRegistration`] linked into the process.
///
/// A registration that fails is not skipped silently: its operators would be missing at run
/// time with no hint why. The failure is recorded, and from then on every lookup of an
/// operator ([`Dispatcher::find_schema_or_error`], so the first call of any typed operator)
/// and every boxed call fails with an error naming the registration and its cause.
#[linkme::distributed_slice]
pub static STATIC_REGISTRATIONS: [StaticRegistration];

/// The debug string of the fallbacks the dispatcher installs itself.
pub const FRAMEWORK_DEBUG: &str = "registered in switchyard framework";

fn leak_kernel(k: KernelFunction) -> &'static KernelFunction {
    // Kernels live for the process: table slots point at them without reference counts, so
    // a call never touches an atomic count and a deregistered kernel never dangles.
    Box::leak(Box::new(k))
}

/// What a [`RegistrationHandle`] undoes when dropped.
pub(crate) enum Undo {
    Library(String),
    Def(&'static OperatorEntry),
    Impl(&'static OperatorEntry, DispatchKey, u64),
    Fallback(DispatchKey, u64),
}

/// Keeps one registration alive; dropping it deregisters (the previous kernel at that key,
/// if any, becomes active again).
#[must_use = "dropping the handle deregisters immediately"]
pub struct RegistrationHandle {
    dispatcher: &'static Dispatcher,
    undo: Option<Undo>,
}

impl Drop for RegistrationHandle {
    fn drop(&mut self) {
        if let Some(undo) = self.undo.take() {
            self.dispatcher.undo(undo);
        }
    }
}

impl std::fmt::Debug for RegistrationHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RegistrationHandle")
    }
}

impl Dispatcher {
    /// The process-wide dispatcher. The first call runs every static registration.
    pub fn singleton() -> &'static Dispatcher {
        static INIT: Once = Once::new();
        let d = Self::global();
        INIT.call_once(|| {
            let mut failure = None;
            for r in STATIC_REGISTRATIONS {
                if let Err(e) = (r.register)(d)
                    && failure.is_none()
                {
                    failure = Some(Error::new(
                        e.kind(),
                        format!(
                            "the static registration of {} failed, so its operators and kernels are missing: {}",
                            r.name,
                            e.message()
                        ),
                    ));
                }
            }
            let _ = d.static_failure.set(failure);
        });
        d
    }

    /// `Err` naming the static registration that failed, if one did (only the singleton runs
    /// static registrations).
    pub fn check_static_registrations(&self) -> Result<()> {
        match self.static_failure.get() {
            Some(Some(e)) => Err(e.clone()),
            _ => Ok(()),
        }
    }

    /// The process-wide dispatcher without running static registrations (what registration
    /// code uses, so that static initialisers can register while the singleton initialises).
    pub fn global() -> &'static Dispatcher {
        static INSTANCE: OnceLock<&'static Dispatcher> = OnceLock::new();
        INSTANCE.get_or_init(Self::new_isolated)
    }

    /// A new, private dispatcher with only the framework's default fallbacks. It lives for
    /// the rest of the process.
    pub fn new_isolated() -> &'static Dispatcher {
        let d: &'static Dispatcher = Box::leak(Box::new(Dispatcher {
            operators: RwLock::new(HashMap::new()),
            state: Mutex::new(DispatcherState {
                fallbacks: (0..NUM_RUNTIME_ENTRIES).map(|_| None).collect(),
                libraries: HashMap::new(),
                entries: Vec::new(),
                next_id: 1,
            }),
            ambiguous: OnceLock::new(),
            warned_override: AtomicBool::new(false),
            static_failure: OnceLock::new(),
        }));
        d.install_default_fallbacks();
        d
    }

    fn lock(&self) -> MutexGuard<'_, DispatcherState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` with the registration state locked (for dumps and error reports).
    pub(crate) fn with_state<R>(&self, f: impl FnOnce(&DispatcherState) -> R) -> R {
        f(&self.lock())
    }

    pub(crate) fn ambiguous_kernel(&self) -> &'static KernelFunction {
        self.ambiguous
            .get_or_init(|| leak_kernel(KernelFunction::ambiguous_autogradother()))
    }

    fn install_default_fallbacks(&'static self) {
        let mut defaults: Vec<(DispatchKey, KernelFunction)> = vec![
            (DispatchKey::BackendSelect, KernelFunction::fallthrough()),
            (DispatchKey::ADInplaceOrView, KernelFunction::fallthrough()),
        ];
        for k in sets::AUTOCAST.iter() {
            defaults.push((k, KernelFunction::fallthrough()));
        }
        // Until the autograd layer registers its kernels, the Autograd keys fall through to
        // the layers below (PyTorch's VariableFallbackKernel registers `makeFallthrough()` the
        // same way). A fallthrough is masked out of the key set before the lookup, so a typed
        // call still reaches the backend's unboxed kernel: a boxed "continue below autograd"
        // kernel here would box every call's arguments (about 100 ns per tiny `add`).
        let below_autograd = KernelFunction::fallthrough();
        use DispatchKey as K;
        for k in [
            K::AutogradOther,
            K::AutogradCPU,
            K::AutogradXPU,
            K::AutogradCUDA,
            K::AutogradMTIA,
            K::AutogradMAIA,
            K::AutogradXLA,
            K::AutogradLazy,
            K::AutogradMPS,
            K::AutogradMeta,
            K::AutogradHPU,
            K::AutogradPrivateUse1,
        ] {
            defaults.push((k, below_autograd.clone()));
        }
        for (k, kernel) in defaults {
            // A fresh dispatcher has no fallbacks, so these cannot conflict.
            if let Ok(handles) = self.register_fallback(k, kernel, FRAMEWORK_DEBUG.into()) {
                handles.into_iter().for_each(std::mem::forget);
            }
        }
    }

    fn next_id(st: &mut DispatcherState) -> u64 {
        st.next_id += 1;
        st.next_id
    }

    fn find_or_create(
        &'static self,
        st: &mut DispatcherState,
        name: &str,
    ) -> &'static OperatorEntry {
        if let Some(e) = self
            .operators
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
        {
            return e;
        }
        let entry: &'static OperatorEntry = Box::leak(Box::new(OperatorEntry::new(
            self,
            name.to_owned(),
            &st.fallbacks,
        )));
        st.entries.push(entry);
        self.operators
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), entry);
        entry
    }

    /// The operator named `ns::name[.overload]`, if it currently has a schema or a kernel.
    ///
    /// An operator whose registrations were all dropped is forgotten, as in PyTorch (its
    /// entry stays allocated, so existing handles remain valid and see it re-registered).
    pub fn find_op(&self, name: &str) -> Option<OperatorHandle> {
        let entry = *self
            .operators
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)?;
        (entry.lock_state().def_and_impl_count > 0).then_some(OperatorHandle { entry })
    }

    /// The operator named `ns::name[.overload]` if it has a schema.
    pub fn find_schema(&self, name: &str) -> Option<OperatorHandle> {
        self.find_op(name).filter(|h| h.schema().is_some())
    }

    /// Like [`Dispatcher::find_schema`], with an error naming the operator, or the static
    /// registration that failed if one did (see [`STATIC_REGISTRATIONS`]).
    pub fn find_schema_or_error(&self, name: &str) -> Result<OperatorHandle> {
        self.check_static_registrations()?;
        self.find_schema(name)
            .ok_or_else(|| Error::runtime(format!("Could not find schema for {name}")))
    }

    /// Every operator with a schema, sorted by name.
    pub fn all_operators(&self) -> Vec<OperatorHandle> {
        let mut ops: Vec<OperatorHandle> = self
            .lock()
            .entries
            .iter()
            .map(|entry| OperatorHandle { entry })
            .filter(|h| h.schema().is_some())
            .collect();
        ops.sort_by(|a, b| a.name().cmp(b.name()));
        ops
    }

    /// Operators with kernels but no schema (PyTorch's `findDanglingImpls`).
    pub fn find_dangling_impls(&self) -> Vec<OperatorHandle> {
        self.lock()
            .entries
            .iter()
            .filter(|e| {
                let st = e.lock_state();
                st.def.is_none() && !st.kernels.is_empty()
            })
            .map(|entry| OperatorHandle { entry })
            .collect()
    }

    /// Checks every operator's table against a recomputation.
    pub fn check_all_invariants(&self) -> Result<()> {
        let st = self.lock();
        for e in &st.entries {
            e.check_invariants(&e.lock_state(), &st.fallbacks)?;
        }
        Ok(())
    }

    /// The debug string of the backend fallback registered for runtime key `key`, if any.
    pub fn fallback_debug(&self, key: DispatchKey) -> Option<String> {
        let idx = DispatchKeySet::from_key(key).dispatch_table_index();
        self.lock()
            .fallbacks
            .get(idx)
            .and_then(|f| f.as_ref())
            .map(|f| f.debug.clone())
    }

    /// Every registration at `key`: its backend fallback and each operator's kernels there
    /// (PyTorch's `_dispatch_print_registrations_for_dispatch_key`, which takes a key name).
    pub fn registrations_for_key(&self, key: &str) -> Result<Vec<String>> {
        let key = DispatchKey::parse(key)?;
        let st = self.lock();
        let mut out = Vec::new();
        for e in &st.entries {
            if e.lock_state().kernels.contains_key(&key) {
                out.push(e.name().to_owned());
            }
        }
        out.sort();
        Ok(out)
    }

    pub(crate) fn register_library(
        &'static self,
        ns: &str,
        debug: &str,
    ) -> Result<RegistrationHandle> {
        let mut st = self.lock();
        if let Some(prev) = st.libraries.get(ns) {
            return Err(Error::runtime(format!(
                "Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please put all of your definitions in a single TORCH_LIBRARY block.  If you were trying to specify implementations, consider using TORCH_LIBRARY_IMPL (which can be duplicated).  If you really intended to define operators for a single namespace in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to explicitly indicate this.  Previous registration of TORCH_LIBRARY was {prev}; latest registration was {debug}"
            )));
        }
        st.libraries.insert(ns.to_owned(), debug.to_owned());
        Ok(RegistrationHandle {
            dispatcher: self,
            undo: Some(Undo::Library(ns.to_owned())),
        })
    }

    pub(crate) fn register_def(
        &'static self,
        schema: FunctionSchema,
        debug: String,
        alias: AliasAnalysisKind,
        alias_is_default: bool,
    ) -> Result<RegistrationHandle> {
        let mut st = self.lock();
        let name = format!(
            "{}::{}",
            schema.name.namespace.as_deref().unwrap_or("aten"),
            schema.name.unqualified()
        );
        let entry = self.find_or_create(&mut st, &name);
        let mut es = entry.lock_state();
        if let Some(def) = &es.def {
            return Err(Error::runtime(format!(
                "Tried to register an operator ({schema}) with the same name and overload name multiple times. Each overload's schema should only be registered with a single call to def(). Duplicate registration: {debug}. Original registration: {}",
                def.debug
            )));
        }
        for list in es.kernels.values() {
            for k in list {
                if let Some(inferred) = &k.inferred
                    && let Some(reason) = schema_difference(&schema, inferred)
                {
                    return Err(schema_mismatch(
                        &name, &schema, &debug, inferred, &k.debug, &reason,
                    ));
                }
            }
        }
        if let Some(fixed) = entry.signature.get()
            && let Some(reason) = schema_difference(&schema, &fixed.inferred)
        {
            return Err(schema_mismatch(
                &name,
                &schema,
                &debug,
                &fixed.inferred,
                &fixed.debug,
                &reason,
            ));
        }
        let schema = Arc::new(schema);
        entry.set_schema(Some(schema.clone()))?;
        es.def = Some(DefInfo {
            schema,
            debug,
            alias,
            alias_is_default,
        });
        es.def_count += 1;
        es.def_and_impl_count += 1;
        Ok(RegistrationHandle {
            dispatcher: self,
            undo: Some(Undo::Def(entry)),
        })
    }

    /// Registers `kernel` for operator `name` at `key` (`None`: catch-all, stored as
    /// CompositeImplicitAutograd).
    pub(crate) fn register_impl(
        &'static self,
        name: &str,
        key: Option<DispatchKey>,
        kernel: KernelFunction,
        inferred: Option<FunctionSchema>,
        debug: String,
    ) -> Result<RegistrationHandle> {
        let mut st = self.lock();
        let entry = self.find_or_create(&mut st, name);
        let stored_key = key.unwrap_or(DispatchKey::CompositeImplicitAutograd);
        let mut es = entry.lock_state();
        if let (Some(def), Some(inferred)) = (&es.def, &inferred)
            && let Some(reason) = schema_difference(&def.schema, inferred)
        {
            return Err(schema_mismatch(
                name,
                &def.schema,
                &def.debug,
                inferred,
                &debug,
                &reason,
            ));
        }
        if let Some((id, sig_name)) = kernel.unboxed_signature() {
            let inferred_schema = inferred
                .clone()
                .unwrap_or_else(crate::signature::empty_schema);
            let fixed = entry.signature.get_or_init(|| FixedSignature {
                id,
                name: sig_name,
                inferred: inferred_schema,
                debug: debug.clone(),
                key,
            });
            if fixed.id != id {
                let key_name = |k: Option<DispatchKey>| {
                    k.map_or("(catch all)".to_string(), |k| k.display_name())
                };
                return Err(Error::runtime(format!(
                    "\nMismatch in kernel C++ signatures\n  operator: {}\n    {}\n  kernel 1: {}\n    dispatch key: {}\n    {}\n  kernel 2: {}\n    dispatch key: {}\n    {}\n",
                    es.def
                        .as_ref()
                        .map_or(name.to_string(), |d| d.schema.to_string()),
                    es.def.as_ref().map_or(String::new(), |d| d.debug.clone()),
                    fixed.name,
                    key_name(fixed.key),
                    fixed.debug,
                    sig_name,
                    key_name(key),
                    debug
                )));
            }
        }
        if es.kernels.get(&stored_key).is_some_and(|l| !l.is_empty())
            && !matches!(stored_key, DispatchKey::Meta | DispatchKey::MTIA)
            && !self.warned_override.swap(true, Ordering::Relaxed)
        {
            let previous = es
                .kernels
                .get(&stored_key)
                .and_then(|l| l.first())
                .map_or(String::new(), |a| a.debug.clone());
            crate::warnings::warn(format!(
                "Warning only once for all operators,  other operators may also be overridden.\n  Overriding a previously registered kernel for the same operator and the same dispatch key\n  operator: {}\n    {}\n  dispatch key: {}\n  previous kernel: {}\n       new kernel: {}",
                es.def
                    .as_ref()
                    .map_or(name.to_string(), |d| d.schema.to_string()),
                es.def.as_ref().map_or(String::new(), |d| d.debug.clone()),
                stored_key.display_name(),
                previous,
                debug
            ));
        }
        let id = Self::next_id(&mut st);
        let annotated = AnnotatedKernel {
            id,
            kernel: leak_kernel(kernel),
            inferred: inferred.map(Arc::new),
            debug,
        };
        es.kernels
            .entry(stored_key)
            .or_default()
            .insert(0, annotated);
        es.def_and_impl_count += 1;
        if key.is_none() {
            entry.update_all(&es, &st.fallbacks);
        } else {
            entry.update_for_key(&es, &st.fallbacks, stored_key);
        }
        Ok(RegistrationHandle {
            dispatcher: self,
            undo: Some(Undo::Impl(entry, stored_key, id)),
        })
    }

    /// Registers a boxed fallback for every runtime key `key` stands for. Fails, registering
    /// nothing, if any of them already has one.
    pub(crate) fn register_fallback(
        &'static self,
        key: DispatchKey,
        kernel: KernelFunction,
        debug: String,
    ) -> Result<Vec<RegistrationHandle>> {
        let mut st = self.lock();
        let keys: Vec<DispatchKey> = runtime_key_set(key).iter().collect();
        for k in &keys {
            let idx = DispatchKeySet::from_key(*k).dispatch_table_index();
            if let Some(prev) = &st.fallbacks[idx]
                && *k != DispatchKey::AutogradPrivateUse1
                && prev.debug != FRAMEWORK_DEBUG
            {
                return Err(Error::runtime(format!(
                    "Tried to register multiple backend fallbacks for the same dispatch key {}; previous registration {}, new registration {}",
                    k.display_name(),
                    prev.debug,
                    debug
                )));
            }
        }
        let kernel = leak_kernel(kernel);
        let mut handles = Vec::new();
        for k in keys {
            let id = Self::next_id(&mut st);
            let idx = DispatchKeySet::from_key(k).dispatch_table_index();
            let displaced_default = st.fallbacks[idx]
                .take()
                .filter(|prev| prev.debug == FRAMEWORK_DEBUG && debug != FRAMEWORK_DEBUG)
                .map(Box::new);
            st.fallbacks[idx] = Some(FallbackSlot {
                kernel,
                debug: debug.clone(),
                id,
                displaced_default,
            });
            for e in &st.entries {
                e.update_for_key(&e.lock_state(), &st.fallbacks, k);
            }
            handles.push(RegistrationHandle {
                dispatcher: self,
                undo: Some(Undo::Fallback(k, id)),
            });
        }
        Ok(handles)
    }

    fn undo(&self, undo: Undo) {
        let mut st = self.lock();
        match undo {
            Undo::Library(ns) => {
                st.libraries.remove(&ns);
            }
            Undo::Def(entry) => {
                let mut es = entry.lock_state();
                es.def_count = es.def_count.saturating_sub(1);
                es.def_and_impl_count = es.def_and_impl_count.saturating_sub(1);
                if es.def_count == 0 {
                    es.def = None;
                    // Clearing a schema cannot fail (the 64-argument check only applies to
                    // a new schema).
                    let _ = entry.set_schema(None);
                }
            }
            Undo::Impl(entry, key, id) => {
                let mut es = entry.lock_state();
                if let Some(list) = es.kernels.get_mut(&key) {
                    list.retain(|a| a.id != id);
                    if list.is_empty() {
                        es.kernels.remove(&key);
                    }
                }
                es.def_and_impl_count = es.def_and_impl_count.saturating_sub(1);
                entry.update_for_key(&es, &st.fallbacks, key);
            }
            Undo::Fallback(key, id) => {
                let idx = DispatchKeySet::from_key(key).dispatch_table_index();
                if st.fallbacks[idx].as_ref().is_some_and(|f| f.id == id) {
                    st.fallbacks[idx] = st.fallbacks[idx]
                        .take()
                        .and_then(|f| f.displaced_default)
                        .map(|b| *b);
                }
                for e in &st.entries {
                    e.update_for_key(&e.lock_state(), &st.fallbacks, key);
                }
            }
        }
    }

    /// Every runtime dispatch key, in table order (index 0 is `Undefined`).
    pub fn runtime_keys() -> &'static [DispatchKey] {
        runtime_keys()
    }
}

fn schema_mismatch(
    name: &str,
    expected: &FunctionSchema,
    def_debug: &str,
    inferred: &FunctionSchema,
    kernel_debug: &str,
    reason: &str,
) -> Error {
    Error::runtime(format!(
        "Inferred operator schema for a C++ kernel function doesn't match the expected function schema.\n  operator: {name}\n  expected schema: {expected}\n    {def_debug}\n  inferred schema: {inferred}\n    {kernel_debug}\n  reason: {reason}"
    ))
}
