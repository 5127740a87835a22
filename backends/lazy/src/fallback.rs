//! The eager fallback (B.10) and forced fallback of one operator (PyTorch's
//! `torch._lazy.config.set_force_fallback` / `LTC_FORCE_FALLBACK`).
//!
//! Every operator without a lazy kernel runs through [`fallback`]: the counter named after the
//! operator with its overload (`aten::nonzero`, `aten::sub.Tensor`, as `c10::toString` of the
//! operator name spells it) is incremented, then `cpu_fallback` materialises the lazy
//! arguments in one batched `_to_cpu`, runs the CPU kernel, copies mutated arguments back and
//! moves the outputs to the lazy device.
//!
//! Forcing is a registration, not a check in every kernel: [`set_force_fallback`] registers
//! [`fallback`] at `Lazy` for every overload of the named operator in a [`Library`] it keeps;
//! replacing or clearing the setting drops that library, which restores the generated kernels.

use std::sync::{Mutex, PoisonError};

use switchyard_backend::{
    DispatchKey, DispatchKeySet, Dispatcher, Error, Kernel, Library, LibraryKind, OperatorHandle,
    Result, Stack, cpu_fallback,
};

use crate::metrics;

/// The eager fallback: counts `aten::<op>[.<overload>]`, then runs the operator on the CPU.
pub fn fallback(op: &OperatorHandle, ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    metrics::counter_add(op.name(), 1);
    cpu_fallback(op, ks, stack)
}

struct Forced {
    name: String,
    // Held for its registrations: dropping it unregisters them.
    _lib: Option<Library>,
}

static FORCED: Mutex<Forced> = Mutex::new(Forced {
    name: String::new(),
    _lib: None,
});

/// Sends every overload of operator `name` (`"aten::sub"`; `""` clears) to the eager fallback
/// on the lazy device, whether or not the backend has a kernel for it. Errors when `name` is
/// not empty and names no registered operator.
pub fn set_force_fallback(name: &str) -> Result<()> {
    let mut forced = FORCED.lock().unwrap_or_else(PoisonError::into_inner);
    // Drop the previous registrations first, so a failure below leaves nothing forced.
    forced._lib = None;
    forced.name.clear();
    if name.is_empty() {
        return Ok(());
    }
    let symbol = name.split('.').next().unwrap_or(name);
    let (ns, base) = symbol.split_once("::").unwrap_or(("aten", symbol));
    let overloads: Vec<String> = Dispatcher::singleton()
        .all_operators()
        .iter()
        .filter_map(|h| {
            let full = h.name();
            let unqualified = full.strip_prefix(ns)?.strip_prefix("::")?;
            let op = unqualified.split('.').next()?;
            (op == base).then(|| unqualified.to_string())
        })
        .collect();
    if overloads.is_empty() {
        return Err(Error::runtime(format!(
            "set_force_fallback: no operator named {symbol}"
        )));
    }
    let mut lib = Library::new(LibraryKind::Impl, ns, Some(DispatchKey::Lazy))?;
    for o in &overloads {
        lib.impl_(o, Kernel::boxed(fallback))?;
    }
    forced.name = format!("{ns}::{base}");
    forced._lib = Some(lib);
    Ok(())
}

/// The operator [`set_force_fallback`] forced (`""` when none).
pub fn get_force_fallback() -> String {
    FORCED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .name
        .clone()
}

/// Applies `LTC_FORCE_FALLBACK` from the environment (called by `init`).
pub(crate) fn force_fallback_from_env() -> Result<()> {
    match std::env::var("LTC_FORCE_FALLBACK") {
        Ok(name) if !name.is_empty() => set_force_fallback(&name),
        _ => Ok(()),
    }
}
