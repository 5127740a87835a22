//! Custom operators defined for the tests through the `Library` API: an aliasing and a
//! mutating operator the layer has no kernel for (so the fallback must refuse them), and an
//! operator whose CompositeExplicitAutograd kernel mutates a view inside (for
//! `functionalize_aten_op`).

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use switchyard_core::{DispatchKey, DispatchKeySet, Error, IValue, Result, Stack, Tensor};
use switchyard_dispatch::{Dispatcher, Kernel, Library, LibraryKind, OperatorHandle};
use switchyard_ops::TensorOps;

static DEFINE: Once = Once::new();

/// Whether the last run of `fztest::fill_first_row`'s kernel got a functional tensor.
pub static FILL_SAW_FUNCTIONAL: AtomicBool = AtomicBool::new(false);

fn pop_tensor(stack: &mut Stack) -> Result<Tensor> {
    stack
        .pop()
        .ok_or_else(|| Error::runtime("empty stack"))?
        .into_tensor()
}

/// `alias_of(Tensor(a) self) -> Tensor(a)` on CPU: `self` itself.
fn alias_of(_: &OperatorHandle, _: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    let t = pop_tensor(stack)?;
    stack.push(IValue::Tensor(t));
    Ok(())
}

/// `bump_(Tensor(a!) self) -> Tensor(a!)` on CPU: adds one in place.
fn bump_(_: &OperatorHandle, _: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    let t = pop_tensor(stack)?;
    t.add_scalar_(1.0)?;
    stack.push(IValue::Tensor(t));
    Ok(())
}

/// `fill_first_row(Tensor self, float value) -> Tensor`, CompositeExplicitAutograd: a clone
/// of `self` whose row 0 (a `select` view) is filled in place with `value`.
fn fill_first_row(_: &OperatorHandle, _: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    let value = match stack.pop() {
        Some(IValue::Double(v)) => v,
        other => return Err(Error::runtime(format!("expected a float, got {other:?}"))),
    };
    let x = pop_tensor(stack)?;
    FILL_SAW_FUNCTIONAL.store(
        switchyard_functionalize::is_functional(&x),
        Ordering::SeqCst,
    );
    let y = switchyard_ops::clone(&x)?;
    y.select(0, 0)?.fill_scalar_(value)?;
    stack.push(IValue::Tensor(y));
    Ok(())
}

/// Defines the `fztest` operators (once per process).
pub fn define() {
    DEFINE.call_once(|| {
        let d = Dispatcher::singleton();
        let mut lib = Library::new_on(d, LibraryKind::Def, "fztest", None).unwrap();
        lib.def("alias_of(Tensor(a) self) -> Tensor(a)").unwrap();
        lib.def("bump_(Tensor(a!) self) -> Tensor(a!)").unwrap();
        lib.def("fill_first_row(Tensor self, float value) -> Tensor")
            .unwrap();
        lib.impl_(
            "alias_of",
            Kernel::boxed(alias_of).for_key(DispatchKey::CPU),
        )
        .unwrap();
        lib.impl_("bump_", Kernel::boxed(bump_).for_key(DispatchKey::CPU))
            .unwrap();
        lib.impl_(
            "fill_first_row",
            Kernel::boxed(fill_first_row).for_key(DispatchKey::CompositeExplicitAutograd),
        )
        .unwrap();
        lib.leak();
    });
}

/// The handle of custom operator `name` (`"fztest::alias_of"`).
pub fn handle(name: &str) -> OperatorHandle {
    define();
    Dispatcher::singleton().find_schema(name).unwrap()
}

/// Calls the one-tensor-argument custom operator `name` on `t` (boxed).
pub fn call(name: &str, t: &Tensor) -> Result<Tensor> {
    let mut stack: Stack = vec![IValue::Tensor(Clone::clone(t))];
    handle(name).call_boxed(&mut stack)?;
    pop_tensor(&mut stack)
}
