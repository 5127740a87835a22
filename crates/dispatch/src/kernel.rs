//! Kernel functions: a boxed entry point, optionally a typed one, and the special kernels.

use crate::operator::OperatorHandle;
use crate::signature::{
    ArgTuple, OpSignature, UnboxedFn, call_unboxed_from_stack, output_after_boxed,
};
use std::any::TypeId;
use std::sync::Arc;
use switchyard_core::{DispatchKeySet, Error, Result, Stack};

/// The boxed calling convention: the operator, the key set that selected the kernel, and the
/// stack holding the arguments (replaced by the returns).
pub type BoxedFn = dyn Fn(&OperatorHandle, DispatchKeySet, &mut Stack) -> Result<()> + Send + Sync;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KernelKind {
    Regular,
    /// Never called: its functionality bit is masked out before lookup.
    Fallthrough,
    /// Installed for AutogradOther when a CompositeImplicitAutograd kernel shadows a backend
    /// kernel mapped to AutogradOther; calling it is an error.
    AmbiguousAutogradOther,
}

/// A typed entry point with its signature identity (the `TypeId` of the [`OpSignature`]).
#[derive(Clone, Copy)]
struct ErasedUnboxed {
    signature: TypeId,
    signature_name: &'static str,
    function: fn(),
}

/// A kernel: always callable boxed; callable typed without boxing when it has a typed entry.
#[derive(Clone)]
pub struct KernelFunction {
    boxed: Arc<BoxedFn>,
    unboxed: Option<ErasedUnboxed>,
    kind: KernelKind,
}

impl std::fmt::Debug for KernelFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelFunction([ {}])", self.dump_state())
    }
}

fn fallthrough_body(op: &OperatorHandle, _: DispatchKeySet, _: &mut Stack) -> Result<()> {
    Err(Error::runtime(format!(
        "fallthrough_kernel was executed but it should have been short-circuited by the dispatcher. This could occur if you redispatched to {} with a hand-made key set that still contains a key whose kernel is a fallthrough.",
        op.name()
    )))
}

fn ambiguous_body(op: &OperatorHandle, _: DispatchKeySet, _: &mut Stack) -> Result<()> {
    Err(Error::runtime(format!(
        "{} has kernels registered to both CompositeImplicitAutograd and a backend mapped to AutogradOther. This makes the backend kernel unreachable; the dispatcher will always prefer the CompositeImplicitAutograd lowering (see Note [Ambiguity in AutogradOther kernel]). If you want to override CompositeImplicitAutograd, please open an issue to request a dedicated Autograd dispatch key for the backend.\nIf you only want to run inference instead of training, use an InferenceMode guard.\nCanonical state\n~~~~~~~~~~~\n{}\n\n",
        op.name(),
        op.dump_state()
    )))
}

impl KernelFunction {
    /// A boxed-only kernel.
    pub fn from_boxed(
        f: impl Fn(&OperatorHandle, DispatchKeySet, &mut Stack) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        KernelFunction {
            boxed: Arc::new(f),
            unboxed: None,
            kind: KernelKind::Regular,
        }
    }

    /// A typed kernel of signature `S`, with a generated boxed adaptor.
    pub fn from_unboxed<S: OpSignature>(f: UnboxedFn<S>) -> Self {
        // SAFETY: both types are function pointers of the same size; the pointer is only ever
        // transmuted back to `UnboxedFn<S>` after checking that the stored signature identity
        // is `TypeId::of::<S>()` (see `call`).
        let function = unsafe { std::mem::transmute::<UnboxedFn<S>, fn()>(f) };
        KernelFunction {
            boxed: Arc::new(move |_op: &OperatorHandle, ks, stack: &mut Stack| {
                call_unboxed_from_stack::<S>(f, ks, stack)
            }),
            unboxed: Some(ErasedUnboxed {
                signature: TypeId::of::<S>(),
                signature_name: std::any::type_name::<S>(),
                function,
            }),
            kind: KernelKind::Regular,
        }
    }

    /// The fallthrough kernel: registering it at a key makes dispatch skip that key.
    pub fn fallthrough() -> Self {
        KernelFunction {
            boxed: Arc::new(fallthrough_body),
            unboxed: None,
            kind: KernelKind::Fallthrough,
        }
    }

    pub(crate) fn ambiguous_autogradother() -> Self {
        KernelFunction {
            boxed: Arc::new(ambiguous_body),
            unboxed: None,
            kind: KernelKind::AmbiguousAutogradOther,
        }
    }

    /// Whether this is the fallthrough kernel.
    pub fn is_fallthrough(&self) -> bool {
        self.kind == KernelKind::Fallthrough
    }

    /// Whether the kernel has a typed entry point.
    pub fn is_valid_unboxed(&self) -> bool {
        self.unboxed.is_some()
    }

    /// The typed signature's identity and name, if any.
    pub(crate) fn unboxed_signature(&self) -> Option<(TypeId, &'static str)> {
        self.unboxed.map(|u| (u.signature, u.signature_name))
    }

    /// `"fallthrough "`? + `"boxed "` + `"unboxed "`?, as PyTorch's `dumpState`.
    pub fn dump_state(&self) -> String {
        let mut s = String::new();
        if self.is_fallthrough() {
            s.push_str("fallthrough ");
        }
        s.push_str("boxed ");
        if self.unboxed.is_some() {
            s.push_str("unboxed ");
        }
        s
    }

    /// Calls the kernel boxed.
    #[inline]
    pub fn call_boxed(
        &self,
        op: &OperatorHandle,
        ks: DispatchKeySet,
        stack: &mut Stack,
    ) -> Result<()> {
        (self.boxed)(op, ks, stack)
    }

    /// Calls the kernel with typed arguments: directly if it has a typed entry of signature
    /// `S`, otherwise by boxing the arguments.
    #[inline]
    pub fn call<S: OpSignature>(
        &self,
        op: &OperatorHandle,
        ks: DispatchKeySet,
        args: S::Args<'_>,
    ) -> Result<S::Output> {
        if let Some(u) = self.unboxed
            && u.signature == TypeId::of::<S>()
        {
            // SAFETY: `u.function` was created in `from_unboxed::<S2>` from an `UnboxedFn<S2>`
            // with `TypeId::of::<S2>() == u.signature == TypeId::of::<S>()`, so S2 == S and the
            // pointer has exactly this type.
            let f = unsafe { std::mem::transmute::<fn(), UnboxedFn<S>>(u.function) };
            return f(ks, args);
        }
        self.call_boxing::<S>(op, ks, args)
    }

    #[cold]
    fn call_boxing<S: OpSignature>(
        &self,
        op: &OperatorHandle,
        ks: DispatchKeySet,
        args: S::Args<'_>,
    ) -> Result<S::Output> {
        let mut stack = Stack::with_capacity(<S::Args<'_> as ArgTuple<'_>>::LEN.max(1));
        args.push_all(&mut stack);
        self.call_boxed(op, ks, &mut stack)?;
        output_after_boxed::<S>(&args, &mut stack)
    }
}
