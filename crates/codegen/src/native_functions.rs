//! The parsed file: functions, groups, view groups and lookups, plus the parser options.

use std::collections::{BTreeSet, HashMap};

use switchyard_core::DispatchKey;
use switchyard_schema::OperatorName;

use crate::dispatch::{BackendMetadata, GEN_PY_DEFAULT_IGNORED_KEYS};
use crate::group::{GroupedItem, NativeFunctionsGroup};
use crate::model::NativeFunction;
use crate::tags::default_tags;
use crate::view::{NativeFunctionsViewGroup, ViewGroupedItem};

/// How to parse a `native_functions.yaml`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// The legal tags (default: PyTorch 2.15's `tags.yaml`). Empty means no tag is legal,
    /// and an op that has or gets any tag is an error (`valid_tags is empty`).
    pub valid_tags: BTreeSet<String>,
    /// Dispatch keys whose entries are dropped without a word (torchgen's `ignore_keys`).
    pub ignore_keys: BTreeSet<DispatchKey>,
    /// Skip autogen (torchgen's `skip_native_fns_gen`).
    pub skip_native_fns_gen: bool,
}

impl Default for ParseOptions {
    /// PyTorch 2.15's tags, no ignored keys, autogen on.
    fn default() -> Self {
        ParseOptions {
            valid_tags: default_tags(),
            ignore_keys: BTreeSet::new(),
            skip_native_fns_gen: false,
        }
    }
}

impl ParseOptions {
    /// What `torchgen/gen.py` uses without `--mps`, `--xpu` or `--mtia`: the MPS, XPU and MTIA
    /// keys are ignored.
    pub fn gen_py_defaults() -> Self {
        ParseOptions {
            ignore_keys: GEN_PY_DEFAULT_IGNORED_KEYS.into_iter().collect(),
            ..ParseOptions::default()
        }
    }
}

/// Everything parsed from one `native_functions.yaml`.
#[derive(Clone, Debug)]
pub struct NativeFunctions {
    /// The file name given to the parser.
    pub file: String,
    /// Functions in yaml order, then the generated ones in the order autogen added them.
    pub functions: Vec<NativeFunction>,
    /// How many of [`NativeFunctions::functions`] come from the yaml (the rest are generated).
    pub num_yaml_functions: usize,
    /// Groups and loose functions, in torchgen's `get_grouped_native_functions` order.
    pub grouped: Vec<GroupedItem>,
    /// View groups and other functions, in torchgen's `get_grouped_by_view_native_functions`
    /// order.
    pub view_grouped: Vec<ViewGroupedItem>,
    /// The view groups of [`NativeFunctions::view_grouped`].
    pub view_groups: Vec<NativeFunctionsViewGroup>,
    by_name: HashMap<OperatorName, usize>,
    by_full_name: HashMap<String, usize>,
}

impl NativeFunctions {
    pub(crate) fn new(
        file: &str,
        functions: Vec<NativeFunction>,
        num_yaml_functions: usize,
        grouped: Vec<GroupedItem>,
        view_grouped: Vec<ViewGroupedItem>,
    ) -> Self {
        let mut by_name = HashMap::new();
        let mut by_full_name = HashMap::new();
        for (i, f) in functions.iter().enumerate() {
            by_name.entry(f.func.name.clone()).or_insert(i);
            by_full_name.entry(f.func.name.to_string()).or_insert(i);
        }
        let view_groups = view_grouped
            .iter()
            .filter_map(|item| match item {
                ViewGroupedItem::Group(g) => Some(*g),
                ViewGroupedItem::Function(_) => None,
            })
            .collect();
        NativeFunctions {
            file: file.to_owned(),
            functions,
            num_yaml_functions,
            grouped,
            view_grouped,
            view_groups,
            by_name,
            by_full_name,
        }
    }

    /// The index of the operator `name` (`add.Tensor`; a namespace, if given, must match).
    pub fn index_of(&self, name: &OperatorName) -> Option<usize> {
        let unqualified = OperatorName {
            namespace: None,
            ..name.clone()
        };
        let i = *self.by_name.get(&unqualified)?;
        match &name.namespace {
            Some(ns) if *ns != self.functions[i].namespace => None,
            _ => Some(i),
        }
    }

    /// The operator `name`.
    pub fn get(&self, name: &OperatorName) -> Option<&NativeFunction> {
        self.index_of(name).map(|i| &self.functions[i])
    }

    /// The index of the operator spelled `name` (`add.Tensor`, `aten::add.Tensor`, `abs`).
    pub fn index_of_str(&self, name: &str) -> Option<usize> {
        match name.split_once("::") {
            Some((ns, rest)) => {
                let i = *self.by_full_name.get(rest)?;
                (self.functions[i].namespace == ns).then_some(i)
            }
            None => self.by_full_name.get(name).copied(),
        }
    }

    /// The operator spelled `name` (`add.Tensor`, `aten::add.Tensor`, `abs`).
    pub fn get_str(&self, name: &str) -> Option<&NativeFunction> {
        self.index_of_str(name).map(|i| &self.functions[i])
    }

    /// The groups of [`NativeFunctions::grouped`].
    pub fn groups(&self) -> impl Iterator<Item = &NativeFunctionsGroup> {
        self.grouped.iter().filter_map(|item| match item {
            GroupedItem::Group(g) => Some(g),
            GroupedItem::Function(_) => None,
        })
    }

    /// The group function `index` belongs to.
    pub fn group_of(&self, index: usize) -> Option<&NativeFunctionsGroup> {
        self.groups().find(|g| g.functions().any(|i| i == index))
    }

    /// The view group function `index` belongs to.
    pub fn view_group_of(&self, index: usize) -> Option<&NativeFunctionsViewGroup> {
        self.view_groups
            .iter()
            .find(|g| g.functions().any(|i| i == index))
    }

    /// The functions autogen added.
    pub fn generated(&self) -> &[NativeFunction] {
        &self.functions[self.num_yaml_functions..]
    }

    /// torchgen's `BackendIndex` for `key`: every function with a kernel there, in function
    /// order.
    pub fn backend_index(&self, key: DispatchKey) -> Vec<(usize, &BackendMetadata)> {
        self.functions
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.kernel(key).map(|m| (i, m)))
            .collect()
    }

    /// Every dispatch key some function has a kernel for, in order of first use.
    pub fn dispatch_keys(&self) -> Vec<DispatchKey> {
        let mut keys = Vec::new();
        for f in &self.functions {
            for (k, _) in &f.dispatch {
                if !keys.contains(k) {
                    keys.push(*k);
                }
            }
        }
        keys
    }
}
