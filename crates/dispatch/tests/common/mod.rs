//! Shared helpers for dispatcher tests: test signatures, identity kernels, and the
//! `commute` harness of PyTorch's `test/test_dispatch.py`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use switchyard_core::{DispatchKey, DispatchKeySet, Result, Tensor};
use switchyard_dispatch::{Dispatcher, Kernel, Library, LibraryKind, OpSignature};

/// `(Tensor) -> Tensor`, the signature of PyTorch's `impl_t_t` helper.
pub struct TT;
impl OpSignature for TT {
    type Args<'a> = (&'a Tensor,);
    type Output = Tensor;
}

/// `() -> ()`.
pub struct Unit;
impl OpSignature for Unit {
    type Args<'a> = ();
    type Output = ();
}

pub fn identity(_: DispatchKeySet, (t,): (&Tensor,)) -> Result<Tensor> {
    Ok(t.clone())
}

/// An identity kernel with debug name `debug` (`impl_t_t(name, dispatch, debug)`).
pub fn kt(debug: &str) -> Kernel {
    Kernel::typed::<TT>(identity).debug(debug)
}

static NS: AtomicUsize = AtomicUsize::new(0);

/// A fresh namespace per run, as the upstream harness uses `__testN__`.
pub fn fresh_namespace() -> String {
    format!("__test{}__", NS.fetch_add(1, Ordering::Relaxed))
}

/// A registration in neutral form: given the dispatcher and namespace, create a library and
/// register into it.
pub type Registration = Box<dyn Fn(&'static Dispatcher, &str) -> Result<Library>>;

pub fn fragment(d: &'static Dispatcher, ns: &str) -> Library {
    Library::with_location(d, LibraryKind::Fragment, ns, None, "/dev/null:0").unwrap()
}

/// `impl(name) @ key` of an identity kernel named `debug` (`None` key = catch-all).
pub fn imp(key: Option<DispatchKey>, debug: &'static str) -> Registration {
    Box::new(move |d, ns| {
        let mut lib = fragment(d, ns);
        let kernel = match key {
            Some(k) => kt(debug).for_key(k),
            None => kt(debug),
        };
        lib.impl_("foo", kernel)?;
        Ok(lib)
    })
}

/// `def(schema)`.
pub fn def(schema: &'static str) -> Registration {
    Box::new(move |d, ns| {
        let mut lib = fragment(d, ns);
        lib.def(schema)?;
        Ok(lib)
    })
}

/// `def_name_t_t("foo")`: inferred schema plus catch-all kernel `default_def_name_t_t`.
pub fn def_inferred() -> Registration {
    Box::new(|d, ns| {
        let mut lib = fragment(d, ns);
        lib.def_with_kernel("foo", kt("default_def_name_t_t"))?;
        Ok(lib)
    })
}

pub const DEFAULT_KEYS: &[&str] = &[
    "Undefined",
    "CPU",
    "CUDA",
    "XLA",
    "AutogradOther",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradXLA",
];

/// Keeps, for each key in order, the table lines for that key.
pub fn extract_table(table: &str, keys: &[&str]) -> String {
    let mut out = String::new();
    for k in keys {
        for line in table.lines() {
            if line.starts_with(&format!("{k}:")) {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    pub state: String,
    pub table: String,
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

fn observe(d: &'static Dispatcher, ns: &str) -> Observation {
    let name = format!("{ns}::foo");
    match d.find_op(&name) {
        None => Observation {
            state: String::new(),
            table: String::new(),
        },
        Some(op) => {
            op.check_invariants().unwrap();
            Observation {
                state: op.dump_state().replace(ns, "test"),
                table: op.dump_table().replace(ns, "test"),
            }
        }
    }
}

fn sorted(mut ids: Vec<usize>) -> Vec<usize> {
    ids.sort_unstable();
    ids
}

/// Runs every permutation of the registrations and, for each, every permutation of
/// deregistration; after every step the (state, table) pair must equal the first one observed
/// for the same set of active registrations (commutativity and invertibility). Returns the
/// observation with everything active, or, when `expect_raises`, the error message (which must
/// be the same whichever order triggers it), after checking that a failed registration left
/// the dispatcher unchanged.
pub fn commute(ops: &[Registration], expect_raises: bool) -> Observation {
    let d = Dispatcher::new_isolated();
    let mut expected: HashMap<Vec<usize>, Observation> = HashMap::new();
    let mut check = |ids: Vec<usize>, obs: Observation| {
        let key = sorted(ids);
        match expected.get(&key) {
            Some(e) => assert_eq!(&obs, e, "state differs for active registrations {key:?}"),
            None => {
                expected.insert(key, obs);
            }
        }
    };
    let mut error: Option<String> = None;
    let n = ops.len();
    // One namespace for every run: once every registration is dropped the operator is
    // forgotten, so each run starts from the same empty state (the harness checks it).
    let ns = fresh_namespace();
    for order in permutations(n) {
        check(vec![], observe(d, &ns));
        let mut libs: Vec<(usize, Library)> = Vec::new();
        let mut failed = false;
        for &i in &order {
            let before = observe(d, &ns);
            match ops[i](d, &ns) {
                Ok(lib) => {
                    libs.push((i, lib));
                    check(libs.iter().map(|(i, _)| *i).collect(), observe(d, &ns));
                }
                Err(e) => {
                    assert!(expect_raises, "registration {i} failed unexpectedly: {e}");
                    assert_eq!(
                        observe(d, &ns),
                        before,
                        "a failed registration changed the dispatcher"
                    );
                    match &error {
                        Some(m) => assert_eq!(
                            m,
                            &e.message().replace(&ns, "test"),
                            "the error depends on registration order"
                        ),
                        None => error = Some(e.message().replace(&ns, "test")),
                    }
                    failed = true;
                    break;
                }
            }
        }
        drop(libs);
        if failed {
            continue;
        }
        for drop_order in permutations(n) {
            let mut live: Vec<Option<(usize, Library)>> = order
                .iter()
                .map(|&i| Some((i, ops[i](d, &ns).unwrap())))
                .collect();
            for &j in &drop_order {
                live[j] = None;
                check(
                    live.iter().flatten().map(|(i, _)| *i).collect(),
                    observe(d, &ns),
                );
            }
        }
    }
    if expect_raises {
        let message = error.expect("expected a registration to raise");
        return Observation {
            state: message,
            table: String::new(),
        };
    }
    expected
        .remove(&(0..n).collect::<Vec<_>>())
        .expect("observation with everything registered")
}

/// Every registration order (no deregistration permutations): the final computed table must
/// not depend on the order. Returns that table.
pub fn every_order(ops: &[Registration]) -> String {
    let d = Dispatcher::new_isolated();
    let ns = fresh_namespace();
    let mut result: Option<String> = None;
    for order in permutations(ops.len()) {
        let libs: Vec<Library> = order.iter().map(|&i| ops[i](d, &ns).unwrap()).collect();
        let table = observe(d, &ns).table;
        match &result {
            Some(t) => assert_eq!(
                &table, t,
                "the table depends on registration order {order:?}"
            ),
            None => result = Some(table),
        }
        drop(libs);
        assert_eq!(
            observe(d, &ns),
            Observation {
                state: String::new(),
                table: String::new()
            }
        );
    }
    result.unwrap_or_default()
}
