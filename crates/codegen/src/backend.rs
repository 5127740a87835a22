//! An external backend's yaml (PyTorch's `gen_backend_stubs.py` input, `shared/reference/codegen.md`
//! §4.1–4.2): the keys, their validation with torchgen's exact messages, and the backend and
//! autograd indices resolved against a parsed `native_functions.yaml` model.
//!
//! ```yaml
//! backend: PrivateUse1
//! cpp_namespace: my_backend          # accepted; ignored by the Rust generator
//! class_name: MyBackendKernels       # the trait's name (default: <backend key>NativeFunctions)
//! supported: [abs, add.Tensor, add_.Tensor, mm]
//! autograd: [max_pool2d]             # registered at Autograd<backend>
//! full_codegen: [relu]               # appended to supported (lazy codegen generates bodies)
//! ir_gen: [...]                      # lazy codegen: IR node and lowering, no kernel
//! non_native: [...]                  # lazy codegen: nodes without a schema (func, opkind, properties)
//! symint: [empty.memory_format]      # no effect in Rust: SymInt is i64 everywhere
//! use_out_as_primary: false          # true turns off the generated in-place/out wrappers
//! device_guard: false                # accepted; Rust wrappers have no device guards
//! ```
//!
//! Like torchgen, parsing stops at the first problem. Deliberate differences, each an extra
//! error where torchgen would go on and fail later (or not at all):
//! * a `backend` torchgen knows but switchyard's dispatcher does not (`MKLDNN`, `Named`, ...)
//!   passes validation as in torchgen, and is refused when code is generated;
//! * `class_name` must be a Rust identifier (it names a trait);
//! * `cpp_namespace` that is empty or blank is refused (`You must provide a value for
//!   "cpp_namespace"`), as the reference note specifies.

use std::collections::BTreeSet;

use switchyard_core::DispatchKey;
use switchyard_schema::OperatorName;

use crate::dispatch::{YamlKey, parse_yaml_key};
use crate::pyrepr::{float_repr, str_repr};
use crate::yaml::{Node, Value, load};
use crate::{GroupedItem, NativeFunctions, YamlError, cpp_name};

/// The keys torchgen's message lists as supported (`extra_headers` is listed but never consumed,
/// so using it is an error too; `use_out_as_primary` and `device_guard` are consumed but not
/// listed).
pub const BACKEND_YAML_VALID_KEYS: [&str; 10] = [
    "backend",
    "class_name",
    "cpp_namespace",
    "extra_headers",
    "supported",
    "autograd",
    "full_codegen",
    "non_native",
    "ir_gen",
    "symint",
];

/// A dispatch key named in a backend yaml: one switchyard's dispatcher has, or a member of
/// torchgen's enum it lacks (accepted when parsing, refused when generating).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKey {
    /// A key of the dispatcher.
    Known(DispatchKey),
    /// A torchgen key the dispatcher does not have (`MKLDNN`, `Named`, ...).
    TorchgenOnly(&'static str),
}

impl BackendKey {
    /// The printed name.
    pub fn name(self) -> &'static str {
        match self {
            BackendKey::Known(k) => k.name(),
            BackendKey::TorchgenOnly(n) => n,
        }
    }

    fn from_yaml(k: YamlKey) -> BackendKey {
        match k {
            YamlKey::Known(k) => BackendKey::Known(k),
            YamlKey::TorchgenOnly(n) => BackendKey::TorchgenOnly(n),
        }
    }
}

/// One kernel of a backend or autograd index (torchgen's `BackendMetadata`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendKernel {
    /// Index into [`NativeFunctions::functions`].
    pub function: usize,
    /// torchgen's kernel name: the dispatcher name (`add`, `add_`, `add_out`; no overload),
    /// plus `_symint` for ops listed under `symint`. Shown in messages and docs; the Rust trait
    /// names its items by the unambiguous name instead.
    pub kernel: String,
}

/// A validated backend yaml with at least one supported operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendYaml {
    /// The `backend` value as written.
    pub backend: String,
    /// The backend's dispatch key.
    pub backend_key: BackendKey,
    /// `Autograd<backend>`, when `autograd` lists operators.
    pub autograd_key: Option<BackendKey>,
    /// `cpp_namespace` (accepted for compatibility; the Rust generator ignores it: the backend
    /// crate decides where the generated module lives).
    pub cpp_namespace: String,
    /// The trait name: `class_name`, or `<backend key>NativeFunctions`.
    pub class_name: String,
    /// The backend index (`supported` then `full_codegen`), de-duplicated, in listing order.
    pub supported: Vec<BackendKernel>,
    /// The autograd index, de-duplicated, in listing order.
    pub autograd: Vec<BackendKernel>,
    /// The `full_codegen` operators (also in `supported`): for a `Lazy` backend, the
    /// generator writes their IR node, trace kernel and lowering.
    pub full_codegen: Vec<usize>,
    /// The `ir_gen` operators: an IR node and a lowering, no kernel (lazy backends only).
    pub ir_gen: Vec<usize>,
    /// The `non_native` entries: IR nodes without an operator of the model.
    pub non_native: Vec<NonNative>,
    /// The `symint` names as written.
    pub symint: BTreeSet<String>,
    /// `use_out_as_primary` (default false); when true no in-place/out wrappers are generated.
    pub use_out_as_primary: bool,
    /// `device_guard` (default false); accepted, no effect in Rust.
    pub device_guard: bool,
}

/// One `non_native` entry of a lazy backend yaml (torchgen's `NativeFunction` built from a
/// schema with no operator behind it): an IR node the backend's hand-written code builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonNative {
    /// The schema as written (`func:`).
    pub func: String,
    /// The node's operator kind (`opkind:`, e.g. `prim::Constant`); `None` when absent
    /// (torchgen then uses `lazy_tensors::<name>`).
    pub opkind: Option<String>,
    /// `properties:` (`ShapePrecompute`, `ShapeCompute`, `ShapeCache`,
    /// `TreatScalarsAsConstants`, `CanBeReusedDeclOnly`).
    pub properties: Vec<String>,
}

impl NonNative {
    /// The node's operator kind: `opkind`, or `lazy_tensors::<name>` as torchgen names it.
    pub fn op_kind(&self) -> String {
        match &self.opkind {
            Some(k) => k.clone(),
            None => {
                let name = self.func.split('(').next().unwrap_or_default().trim();
                format!("lazy_tensors::{name}")
            }
        }
    }
}

/// The properties a `non_native` entry may list (torchgen's `LazyIrProperties`).
pub const NON_NATIVE_PROPERTIES: [&str; 5] = [
    "ShapePrecompute",
    "ShapeCompute",
    "ShapeCache",
    "TreatScalarsAsConstants",
    "CanBeReusedDeclOnly",
];

fn parse_non_native(file: &str, node: Option<Node>) -> Result<Vec<NonNative>, YamlError> {
    let Some(node) = node.filter(|n| n.value != Value::Null) else {
        return Ok(Vec::new());
    };
    let Value::Seq(items) = node.value else {
        return Err(err(
            file,
            Some(node.line),
            format!(
                "expected \"non_native\" to be a list, but got: {}",
                py_str(&node)
            ),
        ));
    };
    let mut out = Vec::new();
    for item in items {
        let Value::Map(entries) = &item.value else {
            return Err(err(
                file,
                Some(item.line),
                format!(
                    "expected a non_native entry to be a dict, but got: {}",
                    py_str(&item)
                ),
            ));
        };
        let get = |key: &str| {
            entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v)
        };
        let Some(func) = get("func").and_then(Node::as_str) else {
            return Err(err(
                file,
                Some(item.line),
                "a non_native entry needs a \"func\" schema string",
            ));
        };
        if let Err(e) = switchyard_schema::FunctionSchema::parse(func) {
            return Err(err(
                file,
                Some(item.line),
                format!("invalid non_native schema {func}: {e}"),
            ));
        }
        let opkind = get("opkind").and_then(Node::as_str).map(str::to_owned);
        let mut properties = Vec::new();
        if let Some(p) = get("properties") {
            for prop in iterate(p).unwrap_or_default() {
                let name = py_str(&prop);
                if !NON_NATIVE_PROPERTIES.contains(&name.as_str()) {
                    return Err(err(
                        file,
                        Some(prop.line),
                        format!("Invalid LazyIrProperty: {name}"),
                    ));
                }
                properties.push(name);
            }
        }
        out.push(NonNative {
            func: func.to_owned(),
            opkind,
            properties,
        });
    }
    Ok(out)
}

impl BackendYaml {
    /// Whether `f` is listed under `full_codegen`.
    pub fn is_full_codegen(&self, f: usize) -> bool {
        self.full_codegen.contains(&f)
    }

    /// Whether the backend is `Lazy`, whose `full_codegen` / `ir_gen` / `non_native` entries
    /// get generated IR nodes, kernels and lowerings (`emit::lazy`).
    pub fn is_lazy(&self) -> bool {
        self.backend_key == BackendKey::Known(DispatchKey::Lazy)
    }

    /// Whether the backend index has a kernel for function `f`.
    pub fn has_kernel(&self, f: usize) -> bool {
        self.supported.iter().any(|k| k.function == f)
    }

    /// Whether the autograd index has a kernel for function `f`.
    pub fn has_autograd_kernel(&self, f: usize) -> bool {
        self.autograd.iter().any(|k| k.function == f)
    }
}

fn err(file: &str, line: Option<usize>, message: impl Into<String>) -> YamlError {
    YamlError::new(file, line, message)
}

/// Python's `repr` of a value loaded by torchgen's plain `YamlLoader` (no `__line__` in dicts).
fn repr(node: &Node) -> String {
    match &node.value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => float_repr(*f),
        Value::Str(s) => str_repr(s),
        Value::Other(s) => s.clone(),
        Value::Seq(items) => format!(
            "[{}]",
            items.iter().map(repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", repr(k), repr(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Python's `str` of a loaded value.
fn py_str(node: &Node) -> String {
    match &node.value {
        Value::Str(s) | Value::Other(s) => s.clone(),
        _ => repr(node),
    }
}

/// The items `list.extend(value)` would add: a list's items, a string's characters, a dict's
/// keys; `None` for values Python cannot iterate.
fn iterate(node: &Node) -> Option<Vec<Node>> {
    let line = node.line;
    match &node.value {
        Value::Seq(items) => Some(items.clone()),
        Value::Str(s) => Some(
            s.chars()
                .map(|c| Node {
                    value: Value::Str(c.to_string()),
                    line,
                })
                .collect(),
        ),
        Value::Map(entries) => Some(entries.iter().map(|(k, _)| k.clone()).collect()),
        _ => None,
    }
}

/// Resolves the operator names of one index (`create_backend_index`).
fn build_index(
    file: &str,
    ops: &[Node],
    symint: &BTreeSet<String>,
    nf: &NativeFunctions,
) -> Result<Vec<BackendKernel>, YamlError> {
    let mut index: Vec<BackendKernel> = Vec::new();
    for op in ops {
        let text = py_str(op);
        let found = match &op.value {
            Value::Str(s) => OperatorName::parse(s)
                .ok()
                .filter(|n| n.namespace.is_none() && n.unqualified() == *s)
                .and_then(|n| nf.index_of(&n)),
            _ => None,
        };
        let Some(function) = found else {
            return Err(err(
                file,
                Some(op.line),
                format!("Found an invalid operator name: {text}"),
            ));
        };
        let mut kernel = cpp_name(&nf.functions[function].func);
        if symint.contains(&text) {
            kernel.push_str("_symint");
        }
        // A later listing of the same operator replaces the earlier (a dict keyed by name).
        match index.iter_mut().find(|k| k.function == function) {
            Some(k) => k.kernel = kernel,
            None => index.push(BackendKernel { function, kernel }),
        }
    }
    Ok(index)
}

/// Whether `s` is a Rust identifier usable as a trait name.
fn is_rust_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s != "_"
}

/// Parses and validates a backend yaml (`parse_backend_yaml` of `gen_backend_stubs.py`) against
/// the operators of `nf` (autogen'd ones included). `file` is the name used in messages.
///
/// Returns `Ok(None)` when `supported` (with `full_codegen`) is empty: torchgen then generates
/// nothing, even if `autograd` lists operators or `backend` is not a key.
pub fn parse_backend_yaml(
    text: &str,
    file: &str,
    nf: &NativeFunctions,
) -> Result<Option<BackendYaml>, YamlError> {
    let loaded = load(text);
    if let Some(issue) = loaded.issues.into_iter().next() {
        return Err(err(file, issue.line, issue.message).with_note(issue.note));
    }
    let root = loaded.root.unwrap_or(Node {
        value: Value::Null,
        line: 1,
    });
    let Value::Map(entries) = root.value else {
        return Err(err(
            file,
            Some(root.line),
            format!(
                "Expected yaml_values to be a dict, got {}",
                root_type(&root)
            ),
        ));
    };
    let mut values: Vec<(String, Node)> =
        entries.into_iter().map(|(k, v)| (py_str(&k), v)).collect();
    let mut pop = |key: &str| -> Option<Node> {
        let i = values.iter().position(|(k, _)| k == key)?;
        Some(values.remove(i).1)
    };
    let is_null = |n: &Option<Node>| n.as_ref().is_none_or(|n| n.value == Value::Null);

    let backend = pop("backend");
    if is_null(&backend) || backend.as_ref().is_some_and(|n| n.as_str() == Some("")) {
        return Err(err(
            file,
            backend.map(|n| n.line),
            "You must provide a value for \"backend\"",
        ));
    }
    let backend = backend.unwrap_or(Node {
        value: Value::Null,
        line: 1,
    });
    let backend_text = py_str(&backend);
    let class_name = pop("class_name").filter(|n| n.value != Value::Null);
    let cpp_namespace = pop("cpp_namespace");
    if is_null(&cpp_namespace)
        || cpp_namespace
            .as_ref()
            .is_some_and(|n| n.as_str().is_some_and(|s| s.trim().is_empty()))
    {
        return Err(err(
            file,
            cpp_namespace.map(|n| n.line),
            "You must provide a value for \"cpp_namespace\"",
        ));
    }
    let cpp_namespace = cpp_namespace.map(|n| py_str(&n)).unwrap_or_default();
    let mut flag = |key: &str| -> Result<bool, YamlError> {
        match pop(key) {
            None => Ok(false),
            Some(Node {
                value: Value::Bool(b),
                ..
            }) => Ok(b),
            Some(n) => Err(err(
                file,
                Some(n.line),
                format!(
                    "You must provide either True or False for {key}. Provided: {}",
                    py_str(&n)
                ),
            )),
        }
    };
    let use_out_as_primary = flag("use_out_as_primary")?;
    let device_guard = flag("device_guard")?;

    let list = |key: &str, node: Option<Node>, with_type: bool| -> Result<Vec<Node>, YamlError> {
        match node {
            None => Ok(Vec::new()),
            Some(Node {
                value: Value::Seq(items),
                ..
            }) => Ok(items),
            Some(n) => Err(err(
                file,
                Some(n.line),
                if with_type {
                    format!(
                        "expected \"{key}\" to be a list, but got: {} (of type {})",
                        py_str(&n),
                        n.py_type()
                    )
                } else {
                    format!("expected \"{key}\" to be a list, but got: {}", py_str(&n))
                },
            )),
        }
    };
    // `supported: ` and `symint: ` (None) are allowed; `autograd: ` is not.
    let mut supported = list(
        "supported",
        pop("supported").filter(|n| n.value != Value::Null),
        true,
    )?;
    let symint_nodes = list(
        "symint",
        pop("symint").filter(|n| n.value != Value::Null),
        true,
    )?;
    let symint: BTreeSet<String> = symint_nodes.iter().map(py_str).collect();
    let autograd = list("autograd", pop("autograd"), false)?;
    let full_codegen_nodes = match pop("full_codegen") {
        None => Vec::new(),
        Some(n) => iterate(&n).ok_or_else(|| {
            err(
                file,
                Some(n.line),
                format!(
                    "'{}' object is not iterable",
                    n.py_type()
                        .trim_start_matches("<class '")
                        .trim_end_matches("'>")
                ),
            )
        })?,
    };
    supported.extend(full_codegen_nodes.iter().cloned());
    let non_native = parse_non_native(file, pop("non_native"))?;
    let ir_gen_nodes = list(
        "ir_gen",
        pop("ir_gen").filter(|n| n.value != Value::Null),
        true,
    )?;
    if !values.is_empty() {
        let keys: Vec<&str> = values.iter().map(|(k, _)| k.as_str()).collect();
        return Err(err(
            file,
            values.first().map(|(_, n)| n.line),
            format!(
                "{file} contains unexpected keys: {}. Only the following keys are supported: {}",
                keys.join(", "),
                BACKEND_YAML_VALID_KEYS.join(", ")
            ),
        ));
    }

    if supported.is_empty() {
        return Ok(None);
    }
    let in_tree: Vec<DispatchKey> = nf.dispatch_keys();
    let backend_key = parse_yaml_key(&backend_text)
        .map(BackendKey::from_yaml)
        .map_err(|e| {
            err(
                file,
                Some(backend.line),
                format!(
                    "{e}\n  The provided value for \"backend\" must be a valid DispatchKey, but got {backend_text}."
                ),
            )
        })?;
    let supported_index = build_index(file, &supported, &symint, nf)?;
    if let BackendKey::Known(k) = backend_key
        && in_tree.contains(&k)
    {
        return Err(err(
            file,
            Some(backend.line),
            format!("Duplicate backend key: {}", k.name()),
        ));
    }
    let mut autograd_key = None;
    let mut autograd_index = Vec::new();
    if !autograd.is_empty() {
        let name = format!("Autograd{backend_text}");
        let key = parse_yaml_key(&name).map(BackendKey::from_yaml).map_err(|e| {
            err(
                file,
                Some(backend.line),
                format!(
                    "{e}\n  The \"autograd\" key was specified, which indicates that you would like to override the behavior of autograd for some operators on your backend. However \"{name}\" is not a valid DispatchKey."
                ),
            )
        })?;
        autograd_index = build_index(file, &autograd, &symint, nf)?;
        if let BackendKey::Known(k) = key
            && in_tree.contains(&k)
        {
            return Err(err(
                file,
                Some(backend.line),
                format!("Duplicate autograd key: {}", k.name()),
            ));
        }
        autograd_key = Some(key);
    }

    // Mixing rule: per group (or loose function), kernels in one index only.
    let kernel_of = |index: &[BackendKernel], f: usize| {
        index
            .iter()
            .find(|k| k.function == f)
            .map(|k| k.kernel.clone())
    };
    for item in &nf.grouped {
        let members: Vec<usize> = match item {
            GroupedItem::Group(g) => g.functions().collect(),
            GroupedItem::Function(f) => vec![*f],
        };
        let forward: Vec<String> = members
            .iter()
            .filter_map(|&f| kernel_of(&supported_index, f))
            .collect();
        let backward: Vec<String> = members
            .iter()
            .filter_map(|&f| kernel_of(&autograd_index, f))
            .collect();
        if let (Some(fw), Some(bw)) = (forward.first(), backward.first()) {
            return Err(err(
                file,
                None,
                format!(
                    "Currently, all variants of an op must either be registered to a backend key, or to a backend's autograd key. They cannot be mix and matched. If this is something you need, feel free to create an issue! {fw} is listed under \"supported\", but {bw} is listed under \"autograd\"."
                ),
            ));
        }
    }

    let class_name = match class_name {
        None => format!("{}NativeFunctions", backend_key.name()),
        Some(n) => {
            let name = py_str(&n);
            if !is_rust_ident(&name) {
                return Err(err(
                    file,
                    Some(n.line),
                    format!(
                        "class_name must be a Rust identifier (it names the generated trait), but got: {name}"
                    ),
                ));
            }
            name
        }
    };
    let full_codegen = full_codegen_nodes
        .iter()
        .filter_map(|n| n.as_str().and_then(|s| nf.index_of_str(s)))
        .collect();
    let ir_gen = build_index(file, &ir_gen_nodes, &symint, nf)?
        .into_iter()
        .map(|k| k.function)
        .collect();
    Ok(Some(BackendYaml {
        backend: backend_text,
        backend_key,
        autograd_key,
        cpp_namespace,
        class_name,
        supported: supported_index,
        autograd: autograd_index,
        full_codegen,
        ir_gen,
        non_native,
        symint,
        use_out_as_primary,
        device_guard,
    }))
}

fn root_type(root: &Node) -> &'static str {
    root.py_type()
}
