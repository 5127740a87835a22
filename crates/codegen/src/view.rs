//! View grouping (§3.3): a view op, its in-place form and its `_copy` op, paired by
//! `signature(strip_view_copy_name)`, as [`NativeFunctionsViewGroup`]s.

use std::collections::{HashMap, HashSet};

use switchyard_schema::{FunctionSchema, OperatorName, SchemaKind};

use crate::group::{kind_repr, kind_str};
use crate::model::{NativeFunction, ViewSchemaKind};
use crate::pyrepr::{str_repr, str_set_repr};

/// A view op with its optional in-place and `_copy` counterparts, by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NativeFunctionsViewGroup {
    /// The view op (`transpose.int`).
    pub view: usize,
    /// The `<view>_copy` op, when it exists (CompositeImplicitAutograd views need none).
    pub view_copy: Option<usize>,
    /// The in-place view op (`transpose_`).
    pub view_inplace: Option<usize>,
}

impl NativeFunctionsViewGroup {
    /// The members: view, in-place view, then the copy.
    pub fn functions(&self) -> impl Iterator<Item = usize> + '_ {
        [Some(self.view), self.view_inplace, self.view_copy]
            .into_iter()
            .flatten()
    }

    /// Whether the view decomposes (has a CompositeImplicitAutograd kernel).
    pub fn composite(&self, functions: &[NativeFunction]) -> bool {
        functions[self.view].has_composite_implicit_autograd_kernel
    }

    /// The view's base name.
    pub fn root_name<'a>(&self, functions: &'a [NativeFunction]) -> &'a str {
        functions[self.view].root_name()
    }
}

/// A top-level item of the view-grouped list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViewGroupedItem {
    /// A view group.
    Group(NativeFunctionsViewGroup),
    /// Any other function (index).
    Function(usize),
}

/// Whether a `<view>_copy` op is expected for this view: not for composite views, in-place
/// views, or `_inverse` ops (whose copies are written by hand under other names).
pub fn gets_generated_view_copy(f: &NativeFunction) -> bool {
    f.is_view_op()
        && !f.has_composite_implicit_autograd_kernel
        && !f.has_tag("inplace_view")
        && !f.root_name().ends_with("_inverse")
}

/// The name of a view's copy op: `<base>_copy`, same overload.
pub fn view_copy_name(f: &NativeFunction) -> OperatorName {
    let mut name = f.func.name.clone();
    name.name.base = format!("{}_copy", name.name.base);
    name.name.inplace = false;
    name.name.functional_overload = false;
    name
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Kind(SchemaKind),
    View(ViewSchemaKind),
}

fn slot_repr(slot: Slot) -> String {
    match slot {
        Slot::Kind(k) => kind_repr(k),
        Slot::View(v) => {
            let (name, value) = view_kind_name(v);
            format!("<{name}: {value}>")
        }
    }
}

fn view_kind_name(v: ViewSchemaKind) -> (&'static str, u8) {
    match v {
        ViewSchemaKind::Aliasing => ("ViewSchemaKind.aliasing", 1),
        ViewSchemaKind::AliasingInplace => ("ViewSchemaKind.aliasing_inplace", 2),
        ViewSchemaKind::NonAliasing => ("ViewSchemaKind.non_aliasing", 3),
    }
}

struct ViewBucket {
    members: Vec<(Slot, usize)>,
    poisoned: bool,
}

impl ViewBucket {
    fn take(&mut self, slot: Slot) -> Option<usize> {
        let i = self.members.iter().position(|(s, _)| *s == slot)?;
        Some(self.members.remove(i).1)
    }

    fn keys_repr(&self) -> String {
        let keys: Vec<String> = self.members.iter().map(|(s, _)| slot_repr(*s)).collect();
        format!("dict_keys([{}])", keys.join(", "))
    }
}

/// torchgen's `get_grouped_by_view_native_functions`, with the view-group invariants.
/// Problems are (function index, message).
pub(crate) fn group_views(
    functions: &[NativeFunction],
    poisoned_signatures: &HashSet<FunctionSchema>,
) -> (Vec<ViewGroupedItem>, Vec<(usize, String)>) {
    let mut buckets: Vec<ViewBucket> = Vec::new();
    let mut index: HashMap<FunctionSchema, usize> = HashMap::new();
    let mut errors = Vec::new();
    for (i, f) in functions.iter().enumerate() {
        let signature = f.func.signature(false, true, false);
        let b = *index.entry(signature.clone()).or_insert_with(|| {
            buckets.push(ViewBucket {
                members: Vec::new(),
                poisoned: poisoned_signatures.contains(&signature),
            });
            buckets.len() - 1
        });
        let bucket = &mut buckets[b];
        let slot = match f.view_schema_kind() {
            Ok(ViewSchemaKind::NonAliasing) => Slot::Kind(f.kind()),
            Ok(v) => Slot::View(v),
            Err(message) => {
                errors.push((i, message));
                bucket.poisoned = true;
                continue;
            }
        };
        if bucket.members.iter().any(|(s, _)| *s == slot) {
            if bucket.poisoned {
                continue;
            }
            let message = match slot {
                Slot::Kind(k) => format!(
                    "Duplicate schema kind {} in {}",
                    kind_str(k),
                    bucket.keys_repr()
                ),
                Slot::View(v) => {
                    format!("{} already in {}", view_kind_name(v).0, bucket.keys_repr())
                }
            };
            errors.push((i, message));
            bucket.poisoned = true;
            continue;
        }
        bucket.members.push((slot, i));
    }

    let mut items = Vec::new();
    for mut bucket in buckets {
        if !bucket.poisoned
            && let Some(view) = bucket.take(Slot::View(ViewSchemaKind::Aliasing))
        {
            let group = NativeFunctionsViewGroup {
                view,
                view_inplace: bucket.take(Slot::View(ViewSchemaKind::AliasingInplace)),
                view_copy: bucket.take(Slot::Kind(SchemaKind::Functional)),
            };
            if let Err(e) = check_view_group(functions, &group) {
                errors.push(e);
            }
            items.push(ViewGroupedItem::Group(group));
        }
        items.extend(
            bucket
                .members
                .iter()
                .map(|(_, i)| ViewGroupedItem::Function(*i)),
        );
    }
    (items, errors)
}

fn check_view_group(
    functions: &[NativeFunction],
    g: &NativeFunctionsViewGroup,
) -> Result<(), (usize, String)> {
    let view = &functions[g.view];
    let view_sig = view.func.signature(false, false, false);
    match g.view_copy {
        None => {
            if gets_generated_view_copy(view) {
                return Err((
                    g.view,
                    format!(
                        "{} appears to be a new operator that aliases its inputs. The codegen expects you to add a corresponding operator to native_functions.yaml: {}. See Note [view_copy NativeFunctions] for details.",
                        view.func.name,
                        view_copy_name(view)
                    ),
                ));
            }
        }
        Some(c) => {
            let copy = &functions[c];
            if !copy.root_name().ends_with("_copy") && !copy.root_name().ends_with("_scatter") {
                return Err((
                    c,
                    format!(
                        "view_copy name must end with '_copy' or '_scatter': {}",
                        copy.func.name
                    ),
                ));
            }
            let copy_sig = copy.func.signature(false, true, false);
            if view_sig != copy_sig {
                return Err((
                    c,
                    format!("view and view_copy signatures don't match: {view_sig} != {copy_sig}"),
                ));
            }
            if !copy.has_tag("view_copy") {
                // torchgen prints the view's tag set, in Python's (hash) order; we sort it.
                let tags = str_set_repr(view.tags.iter().map(String::as_str));
                return Err((
                    c,
                    format!(
                        "({}, {}) appears to be a view_copy operator. The codegen expects view_copy operators to be annotated with the 'view_copy' tag in native_functions.yaml. See Note [view_copy NativeFunction] for details.",
                        str_repr(&copy.func.name.to_string()),
                        str_repr(&tags)
                    ),
                ));
            }
        }
    }
    if let Some(i) = g.view_inplace {
        let inplace = &functions[i];
        let inplace_sig = inplace.func.signature(false, false, false);
        if view_sig != inplace_sig {
            return Err((
                i,
                format!(
                    "view and view_inplace signatures don't match: {view_sig} != {inplace_sig}"
                ),
            ));
        }
        if view.has_composite_implicit_autograd_kernel
            && !inplace.has_composite_implicit_autograd_kernel
        {
            return Err((
                i,
                format!(
                    "{} and {} must either both have CompositeImplicitAutograd kernels, or both not have composite kernels.",
                    view.func.name, inplace.func.name
                ),
            ));
        }
        if view.has_composite_implicit_autograd_nested_tensor_kernel
            && !inplace.has_composite_implicit_autograd_nested_tensor_kernel
        {
            return Err((
                i,
                format!(
                    "{} and {} must either both have CompositeImplicitAutogradNestedTensor kernels, or both not have composite kernels.",
                    view.func.name, inplace.func.name
                ),
            ));
        }
    }
    Ok(())
}
