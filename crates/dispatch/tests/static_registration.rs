//! A static registration that fails is not skipped silently: the first lookup of an operator and
//! every boxed call report it. (Its own test binary: the broken registration below is linked
//! into this process only.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchyard_core::{ErrorKind, IValue, Tensor};
use switchyard_dispatch::{
    Dispatcher, Kernel, Library, LibraryKind, STATIC_REGISTRATIONS, StaticRegistration,
};

fn identity(
    _: &switchyard_dispatch::OperatorHandle,
    _: switchyard_core::DispatchKeySet,
    _: &mut switchyard_core::Stack,
) -> switchyard_core::Result<()> {
    Ok(())
}

#[linkme::distributed_slice(STATIC_REGISTRATIONS)]
static GOOD: StaticRegistration = StaticRegistration {
    name: "good-crate",
    register: |d| {
        let mut lib = Library::new_on(d, LibraryKind::Def, "good", None)?;
        lib.def("op(Tensor x) -> Tensor")?;
        lib.impl_("op", Kernel::boxed(identity))?;
        lib.leak();
        Ok(())
    },
};

#[linkme::distributed_slice(STATIC_REGISTRATIONS)]
static BROKEN: StaticRegistration = StaticRegistration {
    name: "broken-crate",
    register: |d| {
        let mut lib = Library::new_on(d, LibraryKind::Def, "broken", None)?;
        lib.def("fine(Tensor x) -> Tensor")?;
        // A malformed schema: registration stops here, and `after` is never defined.
        lib.def("oops(Tensor x -> Tensor")?;
        lib.def("after(Tensor x) -> Tensor")?;
        lib.leak();
        Ok(())
    },
};

#[test]
fn a_failed_static_registration_fails_every_lookup_and_call_loudly() {
    let d = Dispatcher::singleton();
    let e = d.check_static_registrations().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::RuntimeError);
    assert!(
        e.message()
            .starts_with("the static registration of broken-crate failed, so its operators and kernels are missing: "),
        "{e}"
    );
    // The cause is there too (the schema parser's message).
    assert!(e.message().contains("oops"), "{e}");
    // The operator it never defined is reported with that cause, not as merely unknown ...
    let missing = d.find_schema_or_error("broken::after").unwrap_err();
    assert_eq!(missing.message(), e.message());
    // ... and so is any other lookup: the process's operator set is incomplete.
    assert_eq!(
        d.find_schema_or_error("good::op").unwrap_err().message(),
        e.message()
    );
    // A handle obtained without the check cannot be called boxed either.
    let op = d.find_schema("good::op").unwrap();
    let mut stack = vec![IValue::Tensor(Tensor::from_slice(&[1.0f32]).unwrap())];
    assert_eq!(
        op.call_boxed(&mut stack).unwrap_err().message(),
        e.message()
    );
    // A private dispatcher runs no static registration and is unaffected.
    let isolated = Dispatcher::new_isolated();
    isolated.check_static_registrations().unwrap();
}
