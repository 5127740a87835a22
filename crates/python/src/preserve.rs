//! One Python object per tensor where a tensor can come back (PyTorch's "PyObject
//! preservation"): `p.grad is p.grad`, `v._base is base`, a hook's argument and the `.grad`
//! it becomes, `node.variable is leaf`; attributes set on such an object (`p.grad.foo = 1`)
//! survive as long as the tensor does.
//!
//! PyTorch keeps the Python object in a slot of the `TensorImpl` and flips ownership so that
//! the C++ tensor keeps its Python object alive. switchyard's tensors have no such slot, and
//! the common path (`a + b` returning a fresh tensor) must not pay for one, so this is a
//! registry consulted only where an existing tensor can come back:
//!
//! - the key is the tensor object's identity ([`Tensor::object_id`], its address);
//! - the value is a strong reference to the Python `Tensor` object that represents it.
//!
//! Invariant: an entry's key is the address of the tensor its object wraps, and that tensor is
//! alive (the object holds a handle on it), so an address cannot be reused by another tensor
//! while its entry exists; lookups therefore never return an object of a different tensor.
//! An entry is dropped by a sweep once nothing but the registry can reach it: the object's
//! only Python reference is the registry's and the tensor's only handle is the object's (no
//! autograd slot, view or graph holds it any more), which is PyTorch's point of freeing both.
//! Sweeps run when the registry has doubled since the last one (amortised O(1) per
//! registration) and on `_C._preserved_sweep()`; until then a dead entry holds its tensor.
//! A reference cycle through an object's `__dict__` (`t.me = t`) keeps it alive, which
//! PyTorch's garbage-collector support would collect.
//!
//! Threads: every access holds the GIL (an attached `Python<'_>`), and the handle count of a
//! tensor whose only handle is inside a registered object cannot rise without the GIL (no
//! other thread can reach that handle), so the sweep's test is stable. The mutex is never held
//! while Python code can run: objects are created before it is taken and dropped after it is
//! released (a dropped object's `__dict__` may hold objects with `__del__`, which may read
//! `.grad` and re-enter here).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use switchyard_core::Tensor;

use crate::tensor::PyTensor;

/// The registry hashes addresses with `foldhash`'s fast variant, not SipHash: the keys are
/// addresses, not attacker-chosen, and views look their base up on every call.
type Objects = HashMap<usize, Py<PyAny>, foldhash::fast::FixedState>;

struct Registry {
    objects: Objects,
    /// The size at which the next insertion sweeps.
    sweep_at: usize,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

const FIRST_SWEEP: usize = 64;

fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    let mut guard = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let reg = guard.get_or_insert_with(|| Registry {
        objects: Objects::default(),
        sweep_at: FIRST_SWEEP,
    });
    f(reg)
}

/// The registered Python object of `t`, if any.
pub fn lookup<'py>(py: Python<'py>, t: &Tensor) -> Option<Bound<'py, PyAny>> {
    let id = t.object_id();
    with_registry(|r| r.objects.get(&id).map(|o| o.clone_ref(py).into_bound(py)))
}

/// The Python object of `t`: the registered one, or a new `Tensor` object, registered.
pub fn wrap<'py>(py: Python<'py>, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    if let Some(obj) = lookup(py, &t) {
        return Ok(obj);
    }
    let obj = Bound::new(py, PyTensor::new(t))?.into_any();
    Ok(register(py, &obj))
}

/// Registers `obj` (a `Tensor` object, possibly of a subclass) as its tensor's Python object,
/// unless the tensor already has a live one; returns the object that represents the tensor
/// from now on (the earlier one if there was one).
pub fn register<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> Bound<'py, PyAny> {
    let Ok(pt) = obj.cast::<PyTensor>() else {
        return obj.clone();
    };
    if pt.get().preserved.load(Ordering::Relaxed) {
        return obj.clone();
    }
    let id = pt.get().t.object_id();
    let mut swept = Vec::new();
    let existing = with_registry(|r| {
        if let Some(o) = r.objects.get(&id) {
            return Some(o.clone_ref(py).into_bound(py));
        }
        if r.objects.len() >= r.sweep_at {
            swept = take_unreachable(py, r);
            r.sweep_at = (2 * r.objects.len()).max(FIRST_SWEEP);
        }
        r.objects.insert(id, obj.clone().unbind());
        pt.get().preserved.store(true, Ordering::Relaxed);
        None
    });
    // Dropped without the lock (their `__dict__`s may run Python code).
    drop(swept);
    existing.unwrap_or_else(|| obj.clone())
}

/// Removes the entries nothing but the registry can reach and returns their objects, to be
/// dropped by the caller after releasing the lock.
fn take_unreachable(py: Python<'_>, r: &mut Registry) -> Vec<Py<PyAny>> {
    let dead: Vec<usize> = r
        .objects
        .iter()
        .filter(|(_, o)| {
            let o = o.bind(py);
            // SAFETY: `o` is a live object (the registry owns a reference) and the GIL is
            // held (`py`), so reading its reference count is sound.
            let refcnt = unsafe { pyo3::ffi::Py_REFCNT(o.as_ptr()) };
            refcnt == 1
                && o.cast::<PyTensor>()
                    .is_ok_and(|t| t.get().t.handle_count() == 1)
        })
        .map(|(k, _)| *k)
        .collect();
    dead.iter().filter_map(|k| r.objects.remove(k)).collect()
}

/// `switchyard._C._preserved_sweep()`: drops the entries nothing else reaches now; returns
/// how many remain (for tests and leak checks).
#[pyfunction]
pub fn _preserved_sweep(py: Python<'_>) -> usize {
    let (swept, left) = with_registry(|r| {
        let swept = take_unreachable(py, r);
        r.sweep_at = (2 * r.objects.len()).max(FIRST_SWEEP);
        (swept, r.objects.len())
    });
    drop(swept);
    left
}

/// After a call returned `result`, a view: registers the argument object among `args` that
/// is the view's base, so that `result._base` is that object. Costs one look at the result's
/// autograd slot for views, nothing more for other results.
pub fn note_view_of<'a, 'py: 'a>(
    py: Python<'py>,
    result: &Tensor,
    args: impl IntoIterator<Item = &'a Bound<'py, PyAny>>,
) {
    if !result.has_autograd_meta() {
        return;
    }
    // Arguments already registered need nothing (one load each); only the others can be the
    // base still to register.
    let mut candidates = args.into_iter().filter(|a| {
        a.cast::<PyTensor>()
            .is_ok_and(|t| !t.get().preserved.load(Ordering::Relaxed))
    });
    let Some(first) = candidates.next() else {
        return;
    };
    let Some(base) = switchyard_autograd::view::base(result) else {
        return;
    };
    let is_base =
        |a: &Bound<'_, PyAny>| a.cast::<PyTensor>().is_ok_and(|t| t.get().t.is_same(&base));
    if is_base(first) {
        register(py, first);
    } else if let Some(obj) = candidates.find(|a| is_base(a)) {
        register(py, obj);
    }
}
