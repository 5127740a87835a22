//! Grouping (§3.1–§3.2): functions with the same `signature()` are the functional, in-place, out
//! and mutable variants of one operator; a family with a functional and an out member is a
//! [`NativeFunctionsGroup`].

use std::collections::{HashMap, HashSet};

use switchyard_schema::{FunctionSchema, SchemaKind};

use crate::dispatch::torchgen_key_repr;
use crate::model::NativeFunction;
use crate::pyrepr::str_repr;
use crate::ufunc;

/// A functional / in-place / mutable / out family, by index into the function list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NativeFunctionsGroup {
    /// The functional member.
    pub functional: usize,
    /// The in-place member.
    pub inplace: Option<usize>,
    /// The mutable member (then the functional is a `_functional` op).
    pub mutable: Option<usize>,
    /// The out member.
    pub out: usize,
}

impl NativeFunctionsGroup {
    /// The members, in torchgen's order: functional, out, in-place, mutable.
    pub fn functions(&self) -> impl Iterator<Item = usize> + '_ {
        [
            Some(self.functional),
            Some(self.out),
            self.inplace,
            self.mutable,
        ]
        .into_iter()
        .flatten()
    }

    /// Whether the group is structured (its out op is).
    pub fn structured(&self, functions: &[NativeFunction]) -> bool {
        functions[self.out].structured
    }

    /// The functional member's base name.
    pub fn root_name<'a>(&self, functions: &'a [NativeFunction]) -> &'a str {
        functions[self.functional].root_name()
    }

    /// The shared grouping signature.
    pub fn signature(&self, functions: &[NativeFunction]) -> FunctionSchema {
        functions[self.out].func.signature(false, false, false)
    }

    /// For a group whose functional op autogen produced: the member its kernel calls, a yaml
    /// in-place op if there is one, else a yaml mutable op (§3.6).
    pub fn generated_functional_target(&self, functions: &[NativeFunction]) -> Option<usize> {
        [self.inplace, self.mutable]
            .into_iter()
            .flatten()
            .find(|&i| !functions[i].is_generated())
    }
}

/// A top-level item of the grouped list: a group, or a function that belongs to none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupedItem {
    /// A group.
    Group(NativeFunctionsGroup),
    /// A loose function (index).
    Function(usize),
}

/// Python's name of a schema kind (`SchemaKind.functional`).
pub(crate) fn kind_str(kind: SchemaKind) -> &'static str {
    match kind {
        SchemaKind::Functional => "SchemaKind.functional",
        SchemaKind::Inplace => "SchemaKind.inplace",
        SchemaKind::Out => "SchemaKind.out",
        SchemaKind::Mutable => "SchemaKind.mutable",
        SchemaKind::Scratch => "SchemaKind.scratch",
    }
}

/// Python's `repr` of a schema kind (`<SchemaKind.functional: 1>`).
pub(crate) fn kind_repr(kind: SchemaKind) -> String {
    let value = match kind {
        SchemaKind::Functional => 1,
        SchemaKind::Inplace => 2,
        SchemaKind::Out => 3,
        SchemaKind::Mutable => 4,
        SchemaKind::Scratch => 5,
    };
    format!("<{}: {value}>", kind_str(kind))
}

/// The functions sharing one signature, by kind, in the order they were added.
#[derive(Clone, Debug)]
pub(crate) struct Bucket {
    pub(crate) members: Vec<(SchemaKind, usize)>,
    /// Touched by an entry that failed or by a duplicate: its checks would only repeat or
    /// guess at that problem, so they are skipped.
    pub(crate) poisoned: bool,
}

impl Bucket {
    pub(crate) fn get(&self, kind: SchemaKind) -> Option<usize> {
        self.members
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, i)| *i)
    }
}

/// Buckets by `signature()`, in order of first appearance, plus the duplicate-kind problems as
/// (function index, message). A duplicate stays out of its bucket and poisons it.
pub(crate) fn pre_group(
    functions: &[NativeFunction],
    poisoned_signatures: &HashSet<FunctionSchema>,
) -> (Vec<Bucket>, Vec<(usize, String)>) {
    let mut buckets: Vec<Bucket> = Vec::new();
    let mut index: HashMap<FunctionSchema, usize> = HashMap::new();
    let mut errors = Vec::new();
    for (i, f) in functions.iter().enumerate() {
        let signature = f.func.signature(false, false, false);
        let b = *index.entry(signature.clone()).or_insert_with(|| {
            buckets.push(Bucket {
                poisoned: poisoned_signatures.contains(&signature),
                members: Vec::new(),
            });
            buckets.len() - 1
        });
        let bucket = &mut buckets[b];
        let kind = f.kind();
        if bucket.get(kind).is_some() {
            errors.push((
                i,
                format!("Duplicate schema kind {} for {}", kind_str(kind), f.func),
            ));
            bucket.poisoned = true;
        } else {
            bucket.members.push((kind, i));
        }
    }
    (buckets, errors)
}

/// torchgen's `get_grouped_native_functions`: one item per bucket (a group, or its functions
/// loose), with every group invariant checked. Problems are (function index, message).
pub(crate) fn group(
    functions: &[NativeFunction],
    buckets: &[Bucket],
) -> (Vec<GroupedItem>, Vec<(usize, String)>) {
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for bucket in buckets {
        let loose = |items: &mut Vec<GroupedItem>| {
            items.extend(
                bucket
                    .members
                    .iter()
                    .map(|(_, i)| GroupedItem::Function(*i)),
            );
        };
        if bucket.poisoned {
            loose(&mut items);
            continue;
        }
        match from_bucket(functions, bucket) {
            Ok(Some(g)) => {
                if let Err((i, message)) = check_group(functions, &g) {
                    errors.push((i, message));
                }
                items.push(GroupedItem::Group(g));
            }
            Ok(None) => {
                if let Some((_, first)) = bucket
                    .members
                    .iter()
                    .find(|(_, i)| functions[*i].is_generated())
                {
                    let names: Vec<String> = bucket
                        .members
                        .iter()
                        .map(|(_, i)| functions[*i].func.to_string())
                        .collect();
                    errors.push((
                        *first,
                        format!(
                            "Generated NativeFunctions should have been grouped into NativeFunctionsGroup objects: [{}]",
                            names.join(", ")
                        ),
                    ));
                }
                loose(&mut items);
            }
            Err((i, message)) => {
                errors.push((i, message));
                loose(&mut items);
            }
        }
    }
    for item in &items {
        if let Err((i, message)) = check_item_kernels(functions, item) {
            errors.push((i, message));
        }
    }
    (items, errors)
}

/// torchgen's `NativeFunctionsGroup.from_dict`: no group for a lone function or a family
/// without an out op; a family without a functional op is an error.
fn from_bucket(
    functions: &[NativeFunction],
    bucket: &Bucket,
) -> Result<Option<NativeFunctionsGroup>, (usize, String)> {
    if bucket.members.len() <= 1 {
        return Ok(None);
    }
    if let Some(i) = bucket.get(SchemaKind::Scratch) {
        return Err((
            i,
            format!(
                "unexpected keys in dict: {{{}: {}}}",
                kind_repr(SchemaKind::Scratch),
                functions[i].func
            ),
        ));
    }
    let Some(functional) = bucket.get(SchemaKind::Functional) else {
        let first = bucket.members.first().map_or(0, |(_, i)| *i);
        return Err((first, "functional variant is required".to_owned()));
    };
    let Some(out) = bucket.get(SchemaKind::Out) else {
        return Ok(None);
    };
    Ok(Some(NativeFunctionsGroup {
        functional,
        inplace: bucket.get(SchemaKind::Inplace),
        mutable: bucket.get(SchemaKind::Mutable),
        out,
    }))
}

/// The invariants of `NativeFunctionsGroup.__post_init__`, first failure only (they build on
/// each other).
fn check_group(
    functions: &[NativeFunction],
    g: &NativeFunctionsGroup,
) -> Result<(), (usize, String)> {
    let f = |i: usize| &functions[i];
    let out = f(g.out);
    let structured = out.structured;
    for i in g.functions() {
        if structured != f(i).part_of_structured_group() {
            return Err((
                i,
                format!(
                    "NativeFunctionsGroup constructed from structured and unstructured functions: {} and {}",
                    out.func.name,
                    f(i).func.name
                ),
            ));
        }
    }
    let functional = f(g.functional);
    if functional.namespace != out.namespace {
        return Err((
            g.out,
            format!(
                "functional.namespace ({}) != out.namespace ({})",
                functional.namespace, out.namespace
            ),
        ));
    }
    if let Some(i) = g.inplace
        && f(i).namespace != functional.namespace
    {
        return Err((
            i,
            format!(
                "inplace.namespace ({}) != functional.namespace ({})",
                f(i).namespace,
                functional.namespace
            ),
        ));
    }
    if let Some(i) = g.mutable {
        if f(i).namespace != functional.namespace {
            return Err((
                i,
                format!(
                    "mutable.namespace ({}) != functional.namespace ({})",
                    f(i).namespace,
                    functional.namespace
                ),
            ));
        }
        if !functional.func.name.name.functional_overload {
            return Err((
                g.functional,
                "functional.func.name.name.functional_overload must be True when mutable is not None"
                    .to_owned(),
            ));
        }
    }
    if structured {
        if out.has_composite_implicit_autograd_kernel
            || out.has_composite_implicit_autograd_nested_tensor_kernel
        {
            return Err((
                g.out,
                "structured composite kernels are not supported".to_owned(),
            ));
        }
        for i in [Some(g.functional), g.inplace].into_iter().flatten() {
            let delegate = f(i).structured_delegate.as_ref();
            if delegate != Some(&out.func.name) {
                return Err((
                    i,
                    format!(
                        "{} delegates to {} but its actual delegate is {}",
                        f(i).func.name,
                        delegate.map_or_else(|| "None".to_owned(), ToString::to_string),
                        out.func.name
                    ),
                ));
            }
        }
    }
    check_autogen_consistency(functions, g)?;
    if structured && !out.ufunc_inner_loop.is_empty() {
        ufunc::check_group_loops(&out.ufunc_inner_loop, &functional.func)
            .map_err(|m| (g.out, m))?;
    }
    Ok(())
}

/// The `autogen:` lines of a group must name exactly its generated members.
fn check_autogen_consistency(
    functions: &[NativeFunction],
    g: &NativeFunctionsGroup,
) -> Result<(), (usize, String)> {
    let mut generated: Vec<String> = g
        .functions()
        .filter(|&i| functions[i].is_generated())
        .map(|i| functions[i].func.name.to_string())
        .collect();
    generated.sort();
    let mut expected: Vec<String> = g
        .functions()
        .flat_map(|i| functions[i].autogen.iter().map(ToString::to_string))
        .collect();
    expected.sort();
    expected.dedup();
    let generated_str = generated.join(", ");
    let expected_str = expected.join(", ");
    // torchgen names the entry its loop over the members ended on.
    let last = g.functions().last().unwrap_or(g.out);
    if expected.is_empty() && !generated.is_empty() {
        return Err((
            last,
            format!(
                "The codegen expects to be able to generate '{generated_str}'. In order to generate them however, we expect them to be called out explicitly in the yaml. Please add an 'autogen: {generated_str}' line to the entry for {}",
                functions[last].func.name
            ),
        ));
    }
    if expected_str != generated_str {
        return Err((
            last,
            format!(
                "The codegen expects to be able to generate '{generated_str}'. To do so, it expects a line: 'autogen: {generated_str}'. Instead, it found 'autogen: {expected_str}'"
            ),
        ));
    }
    Ok(())
}

/// Kernel declarations are emitted per C++ namespace, so the kernels of one operator (the out
/// op, for a group) must share a namespace. torchgen checks this when it writes headers.
fn check_item_kernels(
    functions: &[NativeFunction],
    item: &GroupedItem,
) -> Result<(), (usize, String)> {
    let i = match item {
        GroupedItem::Group(g) => g.out,
        GroupedItem::Function(i) => *i,
    };
    let mut namespaces: Vec<&str> = Vec::new();
    let mut keys = Vec::new();
    for (key, meta) in &functions[i].dispatch {
        keys.push(*key);
        if !namespaces.contains(&meta.cpp_namespace.as_str()) {
            namespaces.push(&meta.cpp_namespace);
        }
        if namespaces.len() > 1 {
            // Python prints these sets in hash order; we sort them to be reproducible.
            namespaces.sort_unstable();
            keys.sort_by_key(|k| crate::dispatch::torchgen_key_value(*k));
            let ns: Vec<String> = namespaces.iter().map(|n| str_repr(n)).collect();
            let ks: Vec<String> = keys.iter().map(|k| torchgen_key_repr(*k)).collect();
            return Err((
                i,
                format!(
                    "Codegen only supports one namespace per operator, got {{{}}} from {{{}}}",
                    ns.join(", "),
                    ks.join(", ")
                ),
            ));
        }
    }
    Ok(())
}
