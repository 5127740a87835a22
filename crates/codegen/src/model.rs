//! One `native_functions.yaml` entry after parsing: [`NativeFunction`].

use std::collections::{BTreeMap, BTreeSet};

use switchyard_core::DispatchKey;
use switchyard_schema::{FunctionSchema, OperatorName, SchemaKind};

use crate::dispatch::BackendMetadata;
use crate::precompute::Precompute;
use crate::ufunc::{UfuncInnerLoop, UfuncKey};

/// Which user-facing forms an operator gets (`variants:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Variants {
    /// A free function (`at::add`, `ops::add`).
    pub function: bool,
    /// A `Tensor` method.
    pub method: bool,
}

impl Variants {
    /// Only the function variant (the default, and what out ops must declare).
    pub const FUNCTION: Variants = Variants {
        function: true,
        method: false,
    };
}

/// `device_check:`: whether the generated wrapper checks that all tensors share a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceCheckType {
    /// No check.
    NoCheck,
    /// All tensor arguments must be on the same device (the default).
    #[default]
    ExactSame,
}

/// How an operator relates to aliasing, for view grouping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViewSchemaKind {
    /// A view op (its output aliases an input).
    Aliasing,
    /// An in-place view op (`transpose_`, tagged `inplace_view`).
    AliasingInplace,
    /// Not a view.
    NonAliasing,
}

/// One operator: a yaml entry, or one that autogen added.
///
/// The schema's own `name.namespace` is left empty, as in torchgen, so that names and
/// signatures compare across files; the namespace is in [`NativeFunction::namespace`].
#[derive(Clone, Debug, PartialEq)]
pub struct NativeFunction {
    /// The operator namespace (`aten` unless the `func:` says `ns::`).
    pub namespace: String,
    /// The schema (without namespace).
    pub func: FunctionSchema,
    /// `use_const_ref_for_mutable_tensors:`.
    pub use_const_ref_for_mutable_tensors: bool,
    /// `device_guard:` (default true).
    pub device_guard: bool,
    /// `device_check:`.
    pub device_check: DeviceCheckType,
    /// `python_module:` (`nn`, `fft`, `linalg`, `sparse`, `special`, `nested`).
    pub python_module: Option<String>,
    /// `category_override:`.
    pub category_override: Option<String>,
    /// `variants:` (default: function).
    pub variants: Variants,
    /// `manual_kernel_registration:`.
    pub manual_kernel_registration: bool,
    /// `manual_cpp_binding:`.
    pub manual_cpp_binding: bool,
    /// The 1-based line of the entry (of the source entry, for generated functions).
    pub line: usize,
    /// `autogen:`: the operators this entry declares the generator will add.
    pub autogen: Vec<OperatorName>,
    /// `ufunc_inner_loop:`, by key.
    pub ufunc_inner_loop: BTreeMap<UfuncKey, UfuncInnerLoop>,
    /// `structured:` (an out op with a meta function and structured kernels).
    pub structured: bool,
    /// `structured_delegate:`: the structured out op implementing this one.
    pub structured_delegate: Option<OperatorName>,
    /// `structured_inherits:`: the meta struct's base class.
    pub structured_inherits: Option<String>,
    /// `precomputed:`.
    pub precomputed: Option<Precompute>,
    /// `cpp_no_default_args:`, in yaml order without repeats.
    pub cpp_no_default_args: Vec<String>,
    /// Whether the operator's implementation differs per backend: true for structured delegates,
    /// otherwise false only when every kernel is CompositeImplicitAutograd\[NestedTensor\].
    pub is_abstract: bool,
    /// A CompositeImplicitAutograd kernel is in the dispatch table.
    pub has_composite_implicit_autograd_kernel: bool,
    /// A CompositeImplicitAutogradNestedTensor kernel is in the dispatch table.
    pub has_composite_implicit_autograd_nested_tensor_kernel: bool,
    /// A CompositeExplicitAutograd kernel is in the dispatch table.
    pub has_composite_explicit_autograd_kernel: bool,
    /// A CompositeExplicitAutogradNonFunctional kernel is in the dispatch table.
    pub has_composite_explicit_autograd_non_functional_kernel: bool,
    /// Tags, explicit and automatic.
    pub tags: BTreeSet<String>,
    /// Kernels by dispatch key, in yaml order (comma-separated key lists expanded, ignored keys
    /// dropped, the implicit CompositeImplicitAutograd entry and ufunc kernels added).
    pub dispatch: Vec<(DispatchKey, BackendMetadata)>,
}

impl NativeFunction {
    /// The schema kind.
    pub fn kind(&self) -> SchemaKind {
        self.func.kind()
    }

    /// The kernel for `key`, if any.
    pub fn kernel(&self, key: DispatchKey) -> Option<&BackendMetadata> {
        self.dispatch
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, m)| m)
    }

    /// Whether the function carries `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.contains(tag)
    }

    /// Added by autogen (tagged `generated`).
    pub fn is_generated(&self) -> bool {
        self.has_tag("generated")
    }

    /// The base name (`add` for `add_.Tensor`).
    pub fn root_name(&self) -> &str {
        &self.func.name.name.base
    }

    /// Structured, or delegating to a structured op.
    pub fn part_of_structured_group(&self) -> bool {
        self.structured || self.structured_delegate.is_some()
    }

    /// torchgen's `has_composite_kernel`: a CompositeImplicitAutograd,
    /// CompositeExplicitAutograd or CompositeExplicitAutogradNonFunctional kernel.
    pub fn has_composite_kernel(&self) -> bool {
        self.has_composite_implicit_autograd_kernel
            || self.has_composite_explicit_autograd_kernel
            || self.has_composite_explicit_autograd_non_functional_kernel
    }

    /// torchgen's `is_view_op`: a return aliases an input without writing it, an argument joins
    /// the wildcard set, or the op is tagged `inplace_view` (except `resize_`, `resize_as_`).
    pub fn is_view_op(&self) -> bool {
        let name = self.func.name.to_string();
        let inplace_view =
            self.has_tag("inplace_view") && name != "resize_" && name != "resize_as_";
        self.func.is_view_op() || inplace_view
    }

    /// The view kind; an in-place-named view op must be tagged `inplace_view`.
    pub fn view_schema_kind(&self) -> Result<ViewSchemaKind, String> {
        if !self.is_view_op() {
            return Ok(ViewSchemaKind::NonAliasing);
        }
        if self.func.name.name.inplace {
            if !self.has_tag("inplace_view") {
                return Err(format!("inplace_view tag missing for {}", self.func.name));
            }
            return Ok(ViewSchemaKind::AliasingInplace);
        }
        Ok(ViewSchemaKind::Aliasing)
    }

    /// Whether any non-out argument has a SymInt type.
    pub fn has_symint(&self) -> bool {
        has_symint(&self.func)
    }
}

/// Whether any non-out argument of `func` has a SymInt type (torchgen's `has_symint`).
pub(crate) fn has_symint(func: &FunctionSchema) -> bool {
    func.arguments
        .iter()
        .any(|a| !a.is_out && a.ty.is_symint_like())
}

/// torchgen's C++ API name of a schema (`cpp.name`): the base name with its in-place `_`, plus
/// `_out` for out functions; no overload.
pub fn cpp_name(func: &FunctionSchema) -> String {
    let mut name = func.name.name.to_string();
    if func.is_out_fn() {
        name.push_str("_out");
    }
    name
}

/// torchgen's `unambiguous_name`: `name_overload` (`add_Tensor`), or `name` without overload.
pub fn unambiguous_name(name: &OperatorName) -> String {
    if name.overload_name.is_empty() {
        name.name.to_string()
    } else {
        format!("{}_{}", name.name, name.overload_name)
    }
}
