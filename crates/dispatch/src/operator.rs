//! Operators: their registered kernels, their dispatch tables, and the handles used to call
//! them.
//!
//! An operator's table has one slot per runtime dispatch key (137). Each slot holds a pointer
//! to a kernel that lives for the rest of the process, so a call reads its slot with one
//! atomic load and no lock while registrations replace slots (under the registration lock)
//! at any time.

use crate::dispatcher::{Dispatcher, FallbackSlot};
use crate::extractor::DispatchKeyExtractor;
use crate::kernel::KernelFunction;
use crate::signature::{ArgTuple, OpSignature, inferred_schema, schema_difference};
use crate::trace;
use std::any::TypeId;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock};
use switchyard_core::keys::{
    DispatchKey, DispatchKeySet, NUM_RUNTIME_ENTRIES, backend_key_set_from_autograd,
    is_included_in_alias, sets,
};
use switchyard_core::{Error, Result, Stack};
use switchyard_schema::FunctionSchema;

use crate::schema_facts::SchemaFacts;

/// How the JIT treats aliasing for an operator (recorded and printed; not otherwise used).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AliasAnalysisKind {
    /// Aliasing is read from the schema's annotations (the default for `def` with a schema).
    FromSchema,
    /// Assume anything may alias (the default for inferred schemas).
    Conservative,
    /// No aliasing or side effects.
    PureFunction,
}

impl AliasAnalysisKind {
    /// PyTorch's spelling.
    pub fn name(self) -> &'static str {
        match self {
            AliasAnalysisKind::FromSchema => "FROM_SCHEMA",
            AliasAnalysisKind::Conservative => "CONSERVATIVE",
            AliasAnalysisKind::PureFunction => "PURE_FUNCTION",
        }
    }
}

/// A registered kernel with what the dumps show about it.
pub(crate) struct AnnotatedKernel {
    pub(crate) id: u64,
    pub(crate) kernel: &'static KernelFunction,
    pub(crate) inferred: Option<Arc<FunctionSchema>>,
    pub(crate) debug: String,
}

pub(crate) struct DefInfo {
    pub(crate) schema: Arc<FunctionSchema>,
    pub(crate) debug: String,
    pub(crate) alias: AliasAnalysisKind,
    pub(crate) alias_is_default: bool,
}

/// The typed signature all typed kernels of an operator share, and who fixed it.
pub(crate) struct FixedSignature {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
    pub(crate) inferred: FunctionSchema,
    pub(crate) debug: String,
    pub(crate) key: Option<DispatchKey>,
}

pub(crate) struct EntryState {
    pub(crate) def: Option<DefInfo>,
    /// Kernels per key (runtime or alias), newest first; never empty lists.
    pub(crate) kernels: BTreeMap<DispatchKey, Vec<AnnotatedKernel>>,
    pub(crate) def_count: usize,
    pub(crate) def_and_impl_count: usize,
}

/// One table slot as computed, with its provenance (`kernel`, `math kernel`, ...).
pub(crate) struct ComputedEntry {
    pub(crate) kernel: Option<&'static KernelFunction>,
    pub(crate) debug: String,
    pub(crate) provenance: &'static str,
}

/// An operator: name, schema, kernels and dispatch table.
pub struct OperatorEntry {
    pub(crate) dispatcher: &'static Dispatcher,
    name: String,
    table: [AtomicPtr<KernelFunction>; NUM_RUNTIME_ENTRIES],
    pub(crate) extractor: DispatchKeyExtractor,
    pub(crate) state: Mutex<EntryState>,
    schema: RwLock<Option<(Arc<FunctionSchema>, Arc<SchemaFacts>)>>,
    pub(crate) signature: OnceLock<FixedSignature>,
}

/// Runtime keys by table index (index 0 is `Undefined`).
pub(crate) fn runtime_keys() -> &'static [DispatchKey] {
    static KEYS: OnceLock<Vec<DispatchKey>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = vec![DispatchKey::Undefined];
        keys.extend(DispatchKeySet::FULL.iter());
        keys
    })
}

fn table_index(k: DispatchKey) -> usize {
    DispatchKeySet::from_key(k).dispatch_table_index()
}

impl OperatorEntry {
    pub(crate) fn new(
        dispatcher: &'static Dispatcher,
        name: String,
        fallbacks: &[Option<FallbackSlot>],
    ) -> OperatorEntry {
        let entry = OperatorEntry {
            dispatcher,
            name,
            table: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            extractor: DispatchKeyExtractor::new(),
            state: Mutex::new(EntryState {
                def: None,
                kernels: BTreeMap::new(),
                def_count: 0,
                def_and_impl_count: 0,
            }),
            schema: RwLock::new(None),
            signature: OnceLock::new(),
        };
        let state = entry.lock_state();
        entry.update_all(&state, fallbacks);
        drop(state);
        entry
    }

    /// `ns::name` or `ns::name.overload`.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn lock_state(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The schema given by `def`, if any.
    pub fn schema(&self) -> Option<Arc<FunctionSchema>> {
        self.schema
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|(schema, _)| Arc::clone(schema))
    }

    /// What boxed kernels need to know about the schema's arguments and returns, computed
    /// when the schema was defined.
    pub fn schema_facts(&self) -> Option<Arc<SchemaFacts>> {
        self.schema
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|(_, facts)| Arc::clone(facts))
    }

    pub(crate) fn set_schema(&self, schema: Option<Arc<FunctionSchema>>) -> Result<()> {
        self.extractor.set_schema(schema.as_deref())?;
        let with_facts = schema.map(|s| {
            let facts = Arc::new(SchemaFacts::of(&s));
            (s, facts)
        });
        *self.schema.write().unwrap_or_else(PoisonError::into_inner) = with_facts;
        Ok(())
    }

    /// The kernel in the slot for `ks` (no lock, no allocation).
    #[inline(always)]
    pub(crate) fn lookup(&self, ks: DispatchKeySet) -> Result<&'static KernelFunction> {
        let p = self.table[ks.dispatch_table_index()].load(Ordering::Acquire);
        if p.is_null() {
            return Err(self.missing_kernel_error(ks.highest_priority_type_id()));
        }
        // SAFETY: every non-null pointer stored in the table comes from `&'static
        // KernelFunction` (kernels are leaked on registration and never freed), and is only read.
        Ok(unsafe { &*p })
    }

    /// The kernel currently in the slot of runtime key `k`.
    pub(crate) fn slot(&self, k: DispatchKey) -> Option<&'static KernelFunction> {
        let p = self.table[table_index(k)].load(Ordering::Acquire);
        // SAFETY: as in `lookup`.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    fn has_kernel_for_any(&self, st: &EntryState, ks: DispatchKeySet) -> bool {
        st.kernels.keys().any(|k| !k.is_alias() && ks.has(*k))
    }

    fn alias_kernel(st: &EntryState, k: DispatchKey) -> Option<&AnnotatedKernel> {
        st.kernels.get(&k).and_then(|l| l.first())
    }

    /// The slot for runtime key `k` by PyTorch's precedence (reference §4.2): direct kernel,
    /// then CompositeExplicitAutogradNonFunctional, CompositeExplicitAutograd, the nested and
    /// implicit composites (with the has-backend-kernel rule and the AutogradOther
    /// ambiguity), the Autograd alias, the batched decomposition, the backend fallback, and
    /// finally "missing".
    pub(crate) fn compute_entry(
        &self,
        st: &EntryState,
        fallbacks: &[Option<FallbackSlot>],
        k: DispatchKey,
    ) -> ComputedEntry {
        use DispatchKey as K;
        let found = |a: &AnnotatedKernel, provenance: &'static str| ComputedEntry {
            kernel: Some(a.kernel),
            debug: a.debug.clone(),
            provenance,
        };
        let undefined = k == K::Undefined;
        if !undefined && let Some(a) = Self::alias_kernel(st, k) {
            return found(a, "kernel");
        }
        if (undefined || is_included_in_alias(k, K::CompositeExplicitAutogradNonFunctional))
            && let Some(a) = Self::alias_kernel(st, K::CompositeExplicitAutogradNonFunctional)
        {
            return found(a, "default backend kernel");
        }
        if (undefined || is_included_in_alias(k, K::CompositeExplicitAutograd))
            && let Some(a) = Self::alias_kernel(st, K::CompositeExplicitAutograd)
        {
            return found(a, "default backend kernel");
        }
        let has_backend_kernel = self.has_kernel_for_any(st, backend_key_set_from_autograd(k))
            || st.kernels.contains_key(&K::CompositeExplicitAutograd);
        if !undefined
            && is_included_in_alias(k, K::CompositeImplicitAutogradNestedTensor)
            && let Some(a) = Self::alias_kernel(st, K::CompositeImplicitAutogradNestedTensor)
        {
            return found(a, "nested kernel");
        }
        if (undefined || is_included_in_alias(k, K::CompositeImplicitAutograd))
            && let Some(a) = Self::alias_kernel(st, K::CompositeImplicitAutograd)
        {
            if k == K::AutogradOther && self.has_kernel_for_any(st, sets::AUTOGRADOTHER_BACKENDS) {
                return ComputedEntry {
                    kernel: Some(self.dispatcher.ambiguous_kernel()),
                    debug: "ambiguous_autogradother".into(),
                    provenance: "ambiguous autogradother",
                };
            }
            if !has_backend_kernel {
                return found(a, "math kernel");
            }
        }
        if is_included_in_alias(k, K::Autograd)
            && let Some(a) = Self::alias_kernel(st, K::Autograd)
        {
            return found(a, "autograd kernel");
        }
        if is_included_in_alias(k, K::FuncTorchBatchedDecomposition)
            && let Some(a) = Self::alias_kernel(st, K::FuncTorchBatchedDecomposition)
        {
            return found(a, "batched kernel");
        }
        if let Some(Some(fb)) = fallbacks.get(table_index(k)) {
            return ComputedEntry {
                kernel: Some(fb.kernel),
                debug: fb.debug.clone(),
                provenance: "backend fallback",
            };
        }
        ComputedEntry {
            kernel: None,
            debug: String::new(),
            provenance: "missing",
        }
    }

    fn write_slot(&self, st: &EntryState, fallbacks: &[Option<FallbackSlot>], k: DispatchKey) {
        let computed = self.compute_entry(st, fallbacks, k);
        let ptr = computed.kernel.map_or(std::ptr::null_mut(), |k| {
            k as *const KernelFunction as *mut KernelFunction
        });
        self.table[table_index(k)].store(ptr, Ordering::Release);
        if k != DispatchKey::Undefined {
            self.extractor.set_has_fallthrough(
                k,
                computed.kernel.is_some_and(KernelFunction::is_fallthrough),
            );
        }
    }

    /// Recomputes every slot.
    pub(crate) fn update_all(&self, st: &EntryState, fallbacks: &[Option<FallbackSlot>]) {
        for k in runtime_keys() {
            self.write_slot(st, fallbacks, *k);
        }
    }

    /// Recomputes the slots a registration at `k` can affect: `k` itself, its autograd key
    /// and AutogradOther (whose ambiguity check looks at every backend kernel), or the whole
    /// table for alias keys.
    pub(crate) fn update_for_key(
        &self,
        st: &EntryState,
        fallbacks: &[Option<FallbackSlot>],
        k: DispatchKey,
    ) {
        if k.is_alias() || k == DispatchKey::Undefined {
            return self.update_all(st, fallbacks);
        }
        self.write_slot(st, fallbacks, k);
        let backend = k.to_backend_component();
        self.write_slot(
            st,
            fallbacks,
            switchyard_core::keys::autograd_key_from_backend(backend),
        );
        self.write_slot(st, fallbacks, DispatchKey::AutogradOther);
    }

    /// Checks that every slot and the fallthrough masks equal a from-scratch recomputation
    /// (PyTorch's `checkInvariants`).
    pub(crate) fn check_invariants(
        &self,
        st: &EntryState,
        fallbacks: &[Option<FallbackSlot>],
    ) -> Result<()> {
        for k in runtime_keys() {
            let computed = self.compute_entry(st, fallbacks, *k);
            let expected = computed.kernel.map(|k| k as *const KernelFunction);
            let actual = self.slot_raw(*k);
            if expected != actual {
                return Err(Error::runtime(format!(
                    "Table entry for dispatch key {k} of operator {} is out of date (expected {} [{}])",
                    self.name, computed.debug, computed.provenance
                )));
            }
            if *k != DispatchKey::Undefined {
                let fallthrough = computed.kernel.is_some_and(KernelFunction::is_fallthrough);
                let in_mask = self
                    .extractor
                    .mask_for(DispatchKeySet::from_key(*k))
                    .has(*k);
                if fallthrough == in_mask {
                    return Err(Error::runtime(format!(
                        "Fallthrough mask of operator {} disagrees with its table at {k}",
                        self.name
                    )));
                }
            }
        }
        if st.kernels.contains_key(&DispatchKey::Undefined)
            || st.kernels.values().any(Vec::is_empty)
        {
            return Err(Error::runtime(format!(
                "Kernel lists of {} are malformed",
                self.name
            )));
        }
        Ok(())
    }

    fn slot_raw(&self, k: DispatchKey) -> Option<*const KernelFunction> {
        let p = self.table[table_index(k)].load(Ordering::Acquire);
        (!p.is_null()).then_some(p as *const KernelFunction)
    }

    /// PyTorch's `dumpState`.
    pub(crate) fn dump_state_locked(&self, st: &EntryState) -> String {
        let mut out = format!("name: {}\n", self.name);
        match &st.def {
            Some(def) => {
                out.push_str(&format!("schema: {}\n", def.schema));
                out.push_str(&format!("debug: {}\n", def.debug));
                out.push_str(&format!(
                    "alias analysis kind: {}{}\n",
                    def.alias.name(),
                    if def.alias_is_default {
                        " (default)"
                    } else {
                        ""
                    }
                ));
            }
            None => out.push_str("schema: (none)\n"),
        }
        for (key, list) in &st.kernels {
            for (i, a) in list.iter().enumerate() {
                let inferred = a
                    .inferred
                    .as_ref()
                    .map_or("(none)".to_string(), |s| s.to_string());
                out.push_str(&format!(
                    "{}{}{}: {} :: {} [ {}]\n",
                    key.display_name(),
                    if key.is_alias() { "[alias]" } else { "" },
                    if i > 0 { " (inactive)" } else { "" },
                    a.debug,
                    inferred,
                    a.kernel.dump_state()
                ));
            }
        }
        out
    }

    /// PyTorch's `dumpComputedTable`.
    pub(crate) fn dump_table_locked(
        &self,
        st: &EntryState,
        fallbacks: &[Option<FallbackSlot>],
    ) -> String {
        let mut out = String::new();
        for k in runtime_keys() {
            let c = self.compute_entry(st, fallbacks, *k);
            if let Some(kernel) = c.kernel {
                out.push_str(&format!(
                    "{}: {}{} [{}]\n",
                    k.display_name(),
                    if kernel.is_fallthrough() {
                        "fallthrough "
                    } else {
                        ""
                    },
                    c.debug,
                    c.provenance
                ));
            }
        }
        out
    }

    /// Runtime keys whose slot holds a kernel (PyTorch's `listAllDispatchKeys`).
    fn available_keys(&self) -> String {
        runtime_keys()
            .iter()
            .skip(1)
            .filter(|k| self.slot(**k).is_some())
            .map(|k| k.display_name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    #[cold]
    fn missing_kernel_error(&self, key: DispatchKey) -> Error {
        let table = self.dispatcher.with_state(|ds| {
            let st = self.lock_state();
            self.dump_table_locked(&st, &ds.fallbacks)
        });
        let keys = self.available_keys();
        let message = if key == DispatchKey::Undefined {
            format!(
                "There were no tensor arguments to this function (e.g., you passed an empty list of Tensors), but no fallback function is registered for schema {}.  This usually means that this function requires a non-empty list of Tensors, or that you (the operator writer) forgot to register a fallback function.  Available functions are [{keys}].\n\n{table}",
                self.name
            )
        } else {
            format!(
                "Could not run '{name}' with arguments from the '{key}' backend. This could be because the operator doesn't exist for this backend, or was omitted during the selective/custom build process (if using custom build). '{name}' is only available for these backends: [{keys}].\n\n{table}",
                name = self.name,
                key = key.display_name()
            )
        };
        Error::not_implemented(message).in_operator(&self.name)
    }
}

/// A handle to an operator, for boxed calls and introspection. Cheap to copy; valid for the
/// whole process (operator entries are never freed).
#[derive(Clone, Copy)]
pub struct OperatorHandle {
    pub(crate) entry: &'static OperatorEntry,
}

impl std::fmt::Debug for OperatorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OperatorHandle({})", self.entry.name)
    }
}

impl OperatorHandle {
    /// `ns::name.overload`.
    pub fn name(&self) -> &str {
        self.entry.name()
    }

    /// The schema, if the operator was defined.
    pub fn schema(&self) -> Option<Arc<FunctionSchema>> {
        self.entry.schema()
    }

    /// Argument and return facts for boxed kernels (see [`SchemaFacts`]), or an error saying
    /// the operator has no schema.
    pub fn require_schema_facts(&self) -> Result<Arc<SchemaFacts>> {
        self.entry.schema_facts().ok_or_else(|| {
            Error::runtime(format!(
                "Operator {} has no schema (it was never defined with def())",
                self.name()
            ))
        })
    }

    /// The schema, or an error saying the operator has none.
    pub fn require_schema(&self) -> Result<Arc<FunctionSchema>> {
        self.schema().ok_or_else(|| {
            Error::runtime(format!(
                "Operator {} has no schema (it was never defined with def())",
                self.name()
            ))
        })
    }

    /// The dispatcher owning this operator.
    pub fn dispatcher(&self) -> &'static Dispatcher {
        self.entry.dispatcher
    }

    /// Calls the operator with arguments on `stack` (all schema arguments, defaults
    /// materialised); leaves the returns there.
    pub fn call_boxed(&self, stack: &mut Stack) -> Result<()> {
        self.entry.dispatcher.check_static_registrations()?;
        let n = self.entry.extractor.num_args();
        if stack.len() < n {
            return Err(Error::runtime(format!(
                "{} expects {n} arguments on the stack but got {}",
                self.name(),
                stack.len()
            )));
        }
        let ks = self
            .entry
            .extractor
            .apply_tls_and_mask(self.entry.extractor.boxed_key_set(stack));
        self.dispatch_boxed(trace::Hop::CallBoxed, ks, stack)
    }

    /// Calls the kernel for key set `ks` as given (no TLS, no mask): how a kernel continues
    /// below its own key.
    pub fn redispatch_boxed(&self, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
        self.dispatch_boxed(trace::Hop::RedispatchBoxed, ks, stack)
    }

    fn dispatch_boxed(&self, hop: trace::Hop, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
        let kernel = self.entry.lookup(ks)?;
        if trace::enabled() {
            let _depth = trace::enter(hop, self, ks);
            return kernel
                .call_boxed(self, ks, stack)
                .map_err(|e| e.in_operator(self.name()));
        }
        kernel
            .call_boxed(self, ks, stack)
            .map_err(|e| e.in_operator(self.name()))
    }

    /// Calls the kernel registered directly at `key` (or the backend fallback of `key`),
    /// without alias resolution (PyTorch's `callBoxedForDispatchKey`).
    pub fn call_boxed_for_key(&self, key: DispatchKey, stack: &mut Stack) -> Result<()> {
        let ks = self.entry.extractor.boxed_key_set(stack);
        let kernel = self.entry.dispatcher.with_state(|ds| {
            let st = self.entry.lock_state();
            st.kernels
                .get(&key)
                .and_then(|l| l.first())
                .map(|a| a.kernel)
                .or_else(|| {
                    ds.fallbacks
                        .get(table_index(key))
                        .and_then(|f| f.as_ref())
                        .map(|f| f.kernel)
                })
        });
        match kernel {
            Some(k) => k
                .call_boxed(self, ks, stack)
                .map_err(|e| e.in_operator(self.name())),
            None => Err(self.entry.missing_kernel_error(key)),
        }
    }

    /// A typed handle of signature `S`. The first typed use (or typed kernel registration)
    /// fixes the operator's signature; a different one is refused, as are signatures that
    /// disagree with the schema.
    pub fn typed<S: OpSignature>(&self) -> Result<TypedOperatorHandle<S>> {
        let id = TypeId::of::<S>();
        let fixed = self.entry.signature.get_or_init(|| FixedSignature {
            id,
            name: std::any::type_name::<S>(),
            inferred: inferred_schema::<S>(),
            debug: "typed handle".into(),
            key: None,
        });
        if fixed.id != id {
            return Err(Error::runtime(format!(
                "\nTried to access or call an operator with a wrong signature.\n  operator: {}\n  correct signature:  {}\n  accessed/called as: {}\nThis likely happened in a call to OperatorHandle::typed::<S>(). Please make sure that the signature matches the signature in the operator registration call.",
                self.schema()
                    .map_or(self.name().to_string(), |s| s.to_string()),
                fixed.name,
                std::any::type_name::<S>()
            )));
        }
        if let Some(schema) = self.schema()
            && let Some(reason) = schema_difference(&schema, &inferred_schema::<S>())
        {
            return Err(Error::runtime(format!(
                "\nTried to access or call an operator with a wrong signature.\n  operator: {schema}\n  accessed/called as: {} ({})\n  reason: {reason}",
                std::any::type_name::<S>(),
                inferred_schema::<S>()
            )));
        }
        Ok(TypedOperatorHandle {
            op: *self,
            _signature: PhantomData,
        })
    }

    /// PyTorch's `_dispatch_dump`: schema and registered kernels.
    pub fn dump_state(&self) -> String {
        let st = self.entry.lock_state();
        self.entry.dump_state_locked(&st)
    }

    /// PyTorch's `_dispatch_dump_table`: the computed slot for every key that has one.
    pub fn dump_table(&self) -> String {
        self.entry.dispatcher.with_state(|ds| {
            let st = self.entry.lock_state();
            self.entry.dump_table_locked(&st, &ds.fallbacks)
        })
    }

    /// The kernel debug string and provenance that `key`'s slot holds (`("fn_cpu", "kernel")`),
    /// or `None` if the slot is empty.
    pub fn describe_slot(&self, key: DispatchKey) -> Option<(String, &'static str)> {
        self.entry.dispatcher.with_state(|ds| {
            let st = self.entry.lock_state();
            let c = self.entry.compute_entry(&st, &ds.fallbacks, key);
            c.kernel.map(|_| (c.debug, c.provenance))
        })
    }

    /// The key set a call would dispatch on given the union of its arguments' key sets: TLS
    /// applied and fallthrough keys masked.
    pub fn compute_dispatch_key_set(&self, args: DispatchKeySet) -> DispatchKeySet {
        self.entry.extractor.apply_tls_and_mask(args)
    }

    /// The operator's current non-fallthrough mask for calls whose keys are `ks`.
    pub fn fallthrough_mask(&self, ks: DispatchKeySet) -> DispatchKeySet {
        self.entry.extractor.mask_for(ks)
    }

    /// Checks the table and masks against a recomputation.
    pub fn check_invariants(&self) -> Result<()> {
        self.entry.dispatcher.with_state(|ds| {
            let st = self.entry.lock_state();
            self.entry.check_invariants(&st, &ds.fallbacks)
        })
    }
}

/// A handle for typed calls with signature `S` (see [`OperatorHandle::typed`]).
pub struct TypedOperatorHandle<S> {
    op: OperatorHandle,
    _signature: PhantomData<fn() -> S>,
}

impl<S> Clone for TypedOperatorHandle<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for TypedOperatorHandle<S> {}

impl<S: OpSignature> TypedOperatorHandle<S> {
    /// The untyped handle.
    pub fn handle(&self) -> OperatorHandle {
        self.op
    }

    /// Calls the operator: key set from the arguments, TLS and fallthrough mask; then the
    /// kernel of the highest key. No allocation and no lock on the way to a typed kernel.
    #[inline]
    pub fn call(&self, args: S::Args<'_>) -> Result<S::Output> {
        let ks = self.op.entry.extractor.apply_tls_and_mask(args.key_set());
        self.dispatch(trace::Hop::Call, ks, args)
    }

    /// Calls the kernel for `ks` as given: how a kernel continues below its own key.
    #[inline]
    pub fn redispatch(&self, ks: DispatchKeySet, args: S::Args<'_>) -> Result<S::Output> {
        self.dispatch(trace::Hop::Redispatch, ks, args)
    }

    #[inline(always)]
    fn dispatch(
        &self,
        hop: trace::Hop,
        ks: DispatchKeySet,
        args: S::Args<'_>,
    ) -> Result<S::Output> {
        let kernel = self.op.entry.lookup(ks)?;
        if trace::enabled() {
            let _depth = trace::enter(hop, &self.op, ks);
            return kernel
                .call::<S>(&self.op, ks, args)
                .map_err(|e| e.in_operator(self.op.name()));
        }
        match kernel.call::<S>(&self.op, ks, args) {
            Ok(v) => Ok(v),
            Err(e) => Err(e.in_operator(self.op.name())),
        }
    }
}
