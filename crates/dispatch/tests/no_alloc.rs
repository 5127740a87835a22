//! The typed hot path allocates nothing: a counting global allocator watches this thread
//! while it makes typed calls (and redispatches) to typed kernels.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use switchyard_core::keys::{DispatchKeySet, sets};
use switchyard_core::{DispatchKey as K, Result, Tensor};
use switchyard_dispatch::{Dispatcher, Kernel, TypedOperatorHandle};

struct Counting;

thread_local! {
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator unchanged; the only addition is a thread-local
// counter update, which itself never allocates (const-initialised Cell).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        COUNT.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

static HANDLE: std::sync::OnceLock<TypedOperatorHandle<TT>> = std::sync::OnceLock::new();

fn autograd(ks: DispatchKeySet, (x,): (&Tensor,)) -> Result<Tensor> {
    HANDLE
        .get()
        .unwrap()
        .redispatch(ks & sets::AFTER_AUTOGRAD, (x,))
}

#[test]
fn typed_calls_and_redispatch_do_not_allocate() {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut l = fragment(d, &ns);
    l.def("foo(Tensor x) -> Tensor").unwrap();
    l.impl_("foo", Kernel::typed::<TT>(identity).for_key(K::CPU))
        .unwrap();
    l.impl_("foo", Kernel::typed::<TT>(autograd).for_key(K::AutogradCPU))
        .unwrap();
    let op = d
        .find_schema(&format!("{ns}::foo"))
        .unwrap()
        .typed::<TT>()
        .unwrap();
    let _ = HANDLE.set(op);
    let x = Tensor::from_slice(&[1.0f32]).unwrap();
    for _ in 0..10 {
        op.call((&x,)).unwrap();
    }
    let before = COUNT.with(Cell::get);
    for _ in 0..10_000 {
        let y = op.call((&x,)).unwrap();
        assert!(y.is_same(&x));
    }
    let after = COUNT.with(Cell::get);
    assert_eq!(after - before, 0, "typed dispatch allocated");
}
