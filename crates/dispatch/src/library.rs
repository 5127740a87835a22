//! The registration API: a [`Library`] defines operators in a namespace, implements them for
//! dispatch keys, and registers backend fallbacks (PyTorch's `TORCH_LIBRARY`,
//! `TORCH_LIBRARY_FRAGMENT` and `TORCH_LIBRARY_IMPL` blocks).
//!
//! Every registration is undone when its library is dropped, in reverse order; a library meant
//! to live for the whole process is kept with [`Library::leak`].

use crate::dispatcher::{Dispatcher, RegistrationHandle};
use crate::kernel::KernelFunction;
use crate::operator::{AliasAnalysisKind, OperatorHandle};
use crate::signature::{OpSignature, UnboxedFn, inferred_schema};
use std::panic::Location;
use switchyard_core::{DispatchKey, DispatchKeySet, Error, Result, Stack};
use switchyard_schema::{FunctionSchema, OperatorName};

/// The kind of a library block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LibraryKind {
    /// Owns its namespace: only one per namespace (`TORCH_LIBRARY`).
    Def,
    /// Adds definitions to a namespace without owning it (`TORCH_LIBRARY_FRAGMENT`).
    Fragment,
    /// Implements operators or fallbacks for one dispatch key (`TORCH_LIBRARY_IMPL`).
    Impl,
}

impl LibraryKind {
    fn macro_name(self) -> &'static str {
        match self {
            LibraryKind::Def => "TORCH_LIBRARY",
            LibraryKind::Fragment => "TORCH_LIBRARY_FRAGMENT",
            LibraryKind::Impl => "TORCH_LIBRARY_IMPL",
        }
    }
}

/// A kernel to register, with its optional dispatch key and debug string (PyTorch's
/// `CppFunction`).
pub struct Kernel {
    function: KernelFunction,
    inferred: Option<FunctionSchema>,
    debug: Option<String>,
    key: Option<DispatchKey>,
}

impl Kernel {
    /// A typed kernel; its schema is inferred from `S` and checked against the operator's.
    pub fn typed<S: OpSignature>(f: UnboxedFn<S>) -> Kernel {
        Kernel {
            function: KernelFunction::from_unboxed::<S>(f),
            inferred: Some(inferred_schema::<S>()),
            debug: None,
            key: None,
        }
    }

    /// A boxed kernel.
    pub fn boxed(
        f: impl Fn(&OperatorHandle, DispatchKeySet, &mut Stack) -> Result<()> + Send + Sync + 'static,
    ) -> Kernel {
        Kernel {
            function: KernelFunction::from_boxed(f),
            inferred: None,
            debug: None,
            key: None,
        }
    }

    /// The fallthrough kernel.
    pub fn fallthrough() -> Kernel {
        Kernel {
            function: KernelFunction::fallthrough(),
            inferred: None,
            debug: None,
            key: None,
        }
    }

    /// Sets the debug string shown in dumps (default: where the library was created).
    pub fn debug(mut self, debug: impl Into<String>) -> Kernel {
        self.debug = Some(debug.into());
        self
    }

    /// Registers at `key` instead of the library's key (PyTorch's `torch::dispatch(K, f)`).
    pub fn for_key(mut self, key: DispatchKey) -> Kernel {
        self.key = Some(key);
        self
    }
}

/// A library block; see the module documentation.
pub struct Library {
    kind: LibraryKind,
    namespace: String,
    key: Option<DispatchKey>,
    dispatcher: &'static Dispatcher,
    location: String,
    handles: Vec<RegistrationHandle>,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Library({}, {}, {:?})",
            self.kind.macro_name(),
            self.namespace,
            self.key
        )
    }
}

impl Library {
    /// A library on the process-wide dispatcher; its debug location is the caller's.
    #[track_caller]
    pub fn new(kind: LibraryKind, namespace: &str, key: Option<DispatchKey>) -> Result<Library> {
        let loc = Location::caller();
        Self::with_location(
            Dispatcher::global(),
            kind,
            namespace,
            key,
            &format!("{}:{}", loc.file(), loc.line()),
        )
    }

    /// A library on `dispatcher`; its debug location is the caller's.
    #[track_caller]
    pub fn new_on(
        dispatcher: &'static Dispatcher,
        kind: LibraryKind,
        namespace: &str,
        key: Option<DispatchKey>,
    ) -> Result<Library> {
        let loc = Location::caller();
        Self::with_location(
            dispatcher,
            kind,
            namespace,
            key,
            &format!("{}:{}", loc.file(), loc.line()),
        )
    }

    /// A library whose registrations are reported as `registered at <location>` (tests use
    /// `/dev/null:0`, as PyTorch's do).
    pub fn with_location(
        dispatcher: &'static Dispatcher,
        kind: LibraryKind,
        namespace: &str,
        key: Option<DispatchKey>,
        location: &str,
    ) -> Result<Library> {
        // A catch-all key is no key.
        let key = key.filter(|k| *k != DispatchKey::Undefined);
        if namespace == "_" && kind != LibraryKind::Impl {
            return Err(Error::runtime(format!(
                "{}(_, ...): the wildcard namespace _ is only allowed in TORCH_LIBRARY_IMPL blocks (for fallbacks)  (Error occurred at {location})",
                kind.macro_name()
            )));
        }
        let mut lib = Library {
            kind,
            namespace: namespace.to_owned(),
            key,
            dispatcher,
            location: location.to_owned(),
            handles: Vec::new(),
        };
        if kind == LibraryKind::Def {
            let handle = dispatcher.register_library(namespace, &lib.debug_string())?;
            lib.handles.push(handle);
        }
        Ok(lib)
    }

    fn debug_string(&self) -> String {
        format!("registered at {}", self.location)
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The dispatcher this library registers into.
    pub fn dispatcher(&self) -> &'static Dispatcher {
        self.dispatcher
    }

    /// Defines an operator from a schema string (alias analysis from the schema).
    pub fn def(&mut self, schema: &str) -> Result<&mut Self> {
        self.def_with_alias(schema, AliasAnalysisKind::FromSchema)
    }

    /// Defines an operator with an explicit alias analysis kind.
    pub fn def_with_alias(&mut self, schema: &str, alias: AliasAnalysisKind) -> Result<&mut Self> {
        let parsed = self.parse_schema_for_def(schema)?;
        let h = self
            .dispatcher
            .register_def(parsed, self.debug_string(), alias, false)?;
        self.handles.push(h);
        Ok(self)
    }

    /// Defines an operator with the default alias analysis kind (PyTorch's legacy `def`).
    pub fn def_legacy(&mut self, schema: &str) -> Result<&mut Self> {
        let parsed = self.parse_schema_for_def(schema)?;
        let h = self.dispatcher.register_def(
            parsed,
            self.debug_string(),
            AliasAnalysisKind::Conservative,
            true,
        )?;
        self.handles.push(h);
        Ok(self)
    }

    /// Defines an operator and registers `kernel` as its catch-all implementation. With a
    /// bare name (`"foo"`), the schema is inferred from the kernel (alias kind CONSERVATIVE);
    /// with a full schema it is parsed.
    pub fn def_with_kernel(&mut self, name_or_schema: &str, kernel: Kernel) -> Result<&mut Self> {
        let (schema, alias) = if name_or_schema.contains('(') {
            (
                self.parse_schema_for_def(name_or_schema)?,
                AliasAnalysisKind::FromSchema,
            )
        } else {
            let inferred = kernel.inferred.clone().ok_or_else(|| {
                Error::runtime(format!(
                    "def(\"{name_or_schema}\", ...): cannot infer a schema from a boxed kernel; give the schema explicitly"
                ))
            })?;
            let name = self.qualify(name_or_schema, "def")?;
            (
                FunctionSchema { name, ..inferred },
                AliasAnalysisKind::Conservative,
            )
        };
        self.check_can_def(&schema.name.unqualified())?;
        let full = format!("{}::{}", self.namespace, schema.name.unqualified());
        let h = self
            .dispatcher
            .register_def(schema, self.debug_string(), alias, false)?;
        self.handles.push(h);
        let debug = kernel
            .debug
            .clone()
            .unwrap_or_else(|| format!("default_def_name_{}", self.location));
        let h =
            self.dispatcher
                .register_impl(&full, None, kernel.function, kernel.inferred, debug)?;
        self.handles.push(h);
        Ok(self)
    }

    fn check_can_def(&self, name: &str) -> Result<()> {
        if self.kind == LibraryKind::Impl {
            return Err(Error::runtime(format!(
                "def(\"{name}\"): Cannot define an operator inside of a TORCH_LIBRARY_IMPL block.  All def()s should be placed in the (unique) TORCH_LIBRARY block for their namespace.  (Error occurred at {})",
                self.location
            )));
        }
        Ok(())
    }

    fn parse_schema_for_def(&self, schema: &str) -> Result<FunctionSchema> {
        let mut parsed =
            FunctionSchema::parse(schema).map_err(|e| Error::runtime(e.to_string()))?;
        self.check_can_def(&parsed.name.unqualified())?;
        match &parsed.name.namespace {
            Some(ns) if *ns != self.namespace => {
                return Err(Error::runtime(format!(
                    "Explicitly provided namespace ({ns}) in schema string does not match namespace of enclosing {} block ({}).  Move this definition to the (unique) TORCH_LIBRARY block corresponding to this namespace (and consider deleting the namespace from your schema string.)  (Error occurred at {})",
                    self.kind.macro_name(),
                    self.namespace,
                    self.location
                )));
            }
            _ => parsed.name.namespace = Some(self.namespace.clone()),
        }
        Ok(parsed)
    }

    fn qualify(&self, name: &str, what: &str) -> Result<OperatorName> {
        let mut op = OperatorName::parse(name).map_err(|e| Error::runtime(e.to_string()))?;
        match &op.namespace {
            Some(ns) if *ns != self.namespace && self.namespace != "_" => {
                return Err(Error::runtime(format!(
                    "{what}(\"{name}\", ...): Explicitly provided namespace ({ns}) in operator name does not match namespace of enclosing {} block ({}).  (Error occurred at {})",
                    self.kind.macro_name(),
                    self.namespace,
                    self.location
                )));
            }
            Some(_) => {}
            None => op.namespace = Some(self.namespace.clone()),
        }
        Ok(op)
    }

    /// Registers `kernel` for operator `name` (`"foo"` or `"foo.overload"`) at the kernel's
    /// key, else the library's key, else as the catch-all (CompositeImplicitAutograd).
    pub fn impl_(&mut self, name: &str, kernel: Kernel) -> Result<&mut Self> {
        let key = match (kernel.key, self.key) {
            (Some(a), Some(b)) if a != b => {
                return Err(Error::runtime(format!(
                    "impl(\"{name}\", ...): Explicitly provided dispatch key ({}) is inconsistent with the dispatch key of the enclosing TORCH_LIBRARY_IMPL block ({}).  Please declare a separate TORCH_LIBRARY_IMPL block for this dispatch key and move your impl() there.  (Error occurred at {})",
                    a.display_name(),
                    b.display_name(),
                    self.location
                )));
            }
            (Some(a), _) => Some(a),
            (None, b) => b,
        };
        let op = self.qualify(name, "impl")?;
        let full = format!(
            "{}::{}",
            op.namespace.as_deref().unwrap_or(&self.namespace),
            op.unqualified()
        );
        let debug = kernel.debug.unwrap_or_else(|| self.debug_string());
        let h =
            self.dispatcher
                .register_impl(&full, key, kernel.function, kernel.inferred, debug)?;
        self.handles.push(h);
        Ok(self)
    }

    /// Registers `kernel` as the backend fallback of the library's key (expanded to runtime
    /// keys when it is an alias). Only in `Impl` libraries of namespace `_`.
    pub fn fallback(&mut self, kernel: Kernel) -> Result<&mut Self> {
        if self.kind != LibraryKind::Impl {
            return Err(Error::runtime(format!(
                "fallback(...): Cannot define an operator inside of a {} block.  Did you mean to call this function inside a TORCH_LIBRARY_IMPL block?  (Error occurred at {})",
                self.kind.macro_name(),
                self.location
            )));
        }
        let key = kernel.key.or(self.key).ok_or_else(|| {
            Error::runtime(format!(
                "fallback(...): a fallback needs a dispatch key  (Error occurred at {})",
                self.location
            ))
        })?;
        if self.namespace != "_" {
            return Err(Error::runtime(format!(
                "fallback(...): Fallback functions which apply to only a single namespace (you specified {}) are not supported.  If you intended to apply this fallback function globally, please define a separate block:\n\n    TORCH_LIBRARY_IMPL(_, {}, m) {{ m.fallback(...); }}\n\n(Error occurred at {})",
                self.namespace,
                key.display_name(),
                self.location
            )));
        }
        let debug = kernel.debug.unwrap_or_else(|| self.debug_string());
        let handles = self
            .dispatcher
            .register_fallback(key, kernel.function, debug)?;
        self.handles.extend(handles);
        Ok(self)
    }

    /// Keeps every registration of this library for the rest of the process.
    pub fn leak(self) {
        std::mem::forget(self);
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        while let Some(h) = self.handles.pop() {
            drop(h);
        }
    }
}
