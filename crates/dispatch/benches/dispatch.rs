//! Dispatcher overhead: a typed call to a trivial kernel, the same call boxed, key-set
//! computation alone, and a call that goes through an autograd-style kernel and redispatches.
//!
//! Run: `cargo bench -p switchyard-dispatch --bench dispatch`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::OnceLock;
use switchyard_core::keys::{DispatchKeySet, sets};
use switchyard_core::{DispatchKey as K, IValue, Result, Stack, Tensor};
use switchyard_dispatch::{
    Dispatcher, Kernel, Library, LibraryKind, OpSignature, TypedOperatorHandle,
};

struct Probe;
impl OpSignature for Probe {
    type Args<'a> = (&'a Tensor, &'a Tensor);
    type Output = ();
}

fn trivial(_: DispatchKeySet, _: (&Tensor, &Tensor)) -> Result<()> {
    Ok(())
}

static VIA_AUTOGRAD: OnceLock<TypedOperatorHandle<Probe>> = OnceLock::new();

fn autograd_then_redispatch(ks: DispatchKeySet, args: (&Tensor, &Tensor)) -> Result<()> {
    VIA_AUTOGRAD
        .get()
        .unwrap()
        .redispatch(ks & sets::AFTER_AUTOGRAD, args)
}

fn bench(c: &mut Criterion) {
    let d = Dispatcher::new_isolated();
    let mut lib = Library::new_on(d, LibraryKind::Def, "bench", None).unwrap();
    lib.def("direct(Tensor a, Tensor b) -> ()").unwrap();
    lib.def("layered(Tensor a, Tensor b) -> ()").unwrap();
    lib.impl_("direct", Kernel::typed::<Probe>(trivial).for_key(K::CPU))
        .unwrap();
    lib.impl_("layered", Kernel::typed::<Probe>(trivial).for_key(K::CPU))
        .unwrap();
    lib.impl_(
        "layered",
        Kernel::typed::<Probe>(autograd_then_redispatch).for_key(K::AutogradCPU),
    )
    .unwrap();
    let direct = d.find_schema("bench::direct").unwrap();
    let layered = d
        .find_schema("bench::layered")
        .unwrap()
        .typed::<Probe>()
        .unwrap();
    let _ = VIA_AUTOGRAD.set(layered);
    let typed = direct.typed::<Probe>().unwrap();
    let a = Tensor::from_slice(&[1.0f32]).unwrap();
    let b = Tensor::from_slice(&[2.0f32]).unwrap();

    // The direct op has no autograd kernel: the framework fallback at AutogradCPU redispatches,
    // so exclude autograd to measure exactly one dispatch hop.
    let below = switchyard_core::local_dispatch::auto_dispatch_below_autograd();
    c.bench_function("typed_call_trivial_kernel", |bench| {
        bench.iter(|| typed.call((black_box(&a), black_box(&b))).unwrap())
    });
    c.bench_function("boxed_call_trivial_kernel", |bench| {
        let mut stack: Stack = Vec::with_capacity(4);
        bench.iter(|| {
            stack.push(IValue::Tensor(a.clone()));
            stack.push(IValue::Tensor(b.clone()));
            direct.call_boxed(&mut stack).unwrap();
            black_box(&stack);
        })
    });
    c.bench_function("key_set_computation", |bench| {
        bench.iter(|| {
            direct.compute_dispatch_key_set(black_box(&a).key_set() | black_box(&b).key_set())
        })
    });
    drop(below);
    c.bench_function("call_autograd_kernel_then_redispatch", |bench| {
        bench.iter(|| layered.call((black_box(&a), black_box(&b))).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
