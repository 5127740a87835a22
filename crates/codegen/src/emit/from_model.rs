//! Builds the generators' input from the parsed `native_functions.yaml` model.

use super::input::{GenFunction, GenGroup, GenInput};
use crate::{NativeFunction, NativeFunctions, cpp_name};
use std::collections::{BTreeMap, BTreeSet};
use switchyard_core::DispatchKey;

/// The dispatch keys whose kernels the generators register, and the crate implementing them.
pub const GENERATED_KEYS: [(DispatchKey, &str); 5] = [
    (DispatchKey::CPU, "cpu"),
    (DispatchKey::Meta, "ops"),
    (DispatchKey::CompositeImplicitAutograd, "ops"),
    (DispatchKey::CompositeExplicitAutograd, "ops"),
    (DispatchKey::CompositeExplicitAutogradNonFunctional, "ops"),
];

fn crate_of(key: DispatchKey) -> Option<&'static str> {
    GENERATED_KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, c)| *c)
}

/// Rust has no overloading: a kernel name that several operators share within one crate gets
/// `_<overload>` (lower case) for each of them. PyTorch's `_symint` convention is dropped
/// (every size is an `i64` here).
fn rust_kernel_names(functions: &[NativeFunction]) -> Vec<Vec<(DispatchKey, String)>> {
    let raw: Vec<Vec<(DispatchKey, String)>> = functions
        .iter()
        .map(|f| {
            f.dispatch
                .iter()
                .filter(|(k, _)| crate_of(*k).is_some())
                .map(|(k, m)| (*k, m.kernel.replace("_symint", "")))
                .collect()
        })
        .collect();
    let mut users: BTreeMap<(&str, &str), BTreeSet<usize>> = BTreeMap::new();
    for (i, kernels) in raw.iter().enumerate() {
        for (k, name) in kernels {
            if let Some(c) = crate_of(*k) {
                users.entry((c, name.as_str())).or_default().insert(i);
            }
        }
    }
    raw.iter()
        .enumerate()
        .map(|(i, kernels)| {
            kernels
                .iter()
                .map(|(k, name)| {
                    let shared = crate_of(*k).is_some_and(|c| {
                        users.get(&(c, name.as_str())).is_some_and(|u| u.len() > 1)
                    });
                    let overload = &functions[i].func.name.overload_name;
                    let rust = if shared && !overload.is_empty() {
                        format!("{name}_{}", overload.to_lowercase())
                    } else {
                        name.clone()
                    };
                    (*k, rust)
                })
                .collect()
        })
        .collect()
}

/// The generators' view of a parsed yaml file.
pub fn from_model(nf: &NativeFunctions) -> GenInput {
    let functions = &nf.functions;
    let names = rust_kernel_names(functions);
    let mut view_copy_of: BTreeMap<usize, usize> = BTreeMap::new();
    for g in &nf.view_groups {
        if let Some(c) = g.view_copy {
            // Standard copies only: `<view>_copy` of the same overload.
            if crate::view_copy_name(&functions[g.view]) == functions[c].func.name {
                view_copy_of.insert(c, g.view);
            }
        }
    }
    let gen_functions = functions
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut schema = f.func.clone();
            schema.name.namespace = Some(f.namespace.clone());
            GenFunction {
                schema,
                function_variant: f.variants.function,
                method_variant: f.variants.method,
                kernels: names[i].clone(),
                structured: f.structured,
                structured_delegate: f.structured_delegate.as_ref().and_then(|d| nf.index_of(d)),
                generated: f.is_generated(),
                view_copy_of: view_copy_of.get(&i).copied(),
                manual_kernel_registration: f.manual_kernel_registration,
                random: f.has_tag("nondeterministic_seeded"),
            }
        })
        .collect();
    let groups = nf
        .groups()
        .map(|g| GenGroup {
            functional: g.functional,
            inplace: g.inplace,
            mutable: g.mutable,
            out: g.out,
            structured: g.structured(functions),
        })
        .collect();
    let _ = cpp_name;
    GenInput {
        functions: gen_functions,
        groups,
    }
}
