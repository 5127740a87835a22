//! One yaml entry → one [`NativeFunction`]: every key of §2.2, the dispatch table of §2.3 and the
//! automatic tags of §2.4, with torchgen's messages.
//!
//! torchgen stops at the first problem. We check the keys in torchgen's order but keep going, so
//! that one run reports every problem of an entry: a key whose value is wrong counts as unknown,
//! and a later check that needs an unknown value is skipped rather than reported on a guess.
//! The first error of an entry is therefore always the one torchgen would report.

use std::collections::BTreeSet;

use switchyard_core::DispatchKey;
use switchyard_schema::{FunctionSchema, OperatorName, SchemaError};

use crate::ParseOptions;
use crate::checks;
use crate::dispatch::{
    self, BackendMetadata, DEFAULT_KERNEL_NAMESPACE, SUPPORTED_DISPATCH_KEYS, UFUNC_DISPATCH_KEYS,
    YamlKey,
};
use crate::model::{DeviceCheckType, NativeFunction, Variants, cpp_name};
use crate::precompute::Precompute;
use crate::pyrepr::dict_repr;
use crate::ufunc::{self, UfuncInnerLoop, UfuncKey};
use crate::yaml::{Node, Value};

/// A message for the entry, plus our note (schema errors say where in the schema).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EntryError {
    pub(crate) message: String,
    pub(crate) note: Option<String>,
}

impl From<String> for EntryError {
    fn from(message: String) -> Self {
        EntryError {
            message,
            note: None,
        }
    }
}

impl From<&str> for EntryError {
    fn from(message: &str) -> Self {
        message.to_owned().into()
    }
}

impl From<SchemaError> for EntryError {
    fn from(e: SchemaError) -> Self {
        let note = match (e.position, e.expected) {
            (Some(p), Some(x)) => Some(format!("at position {p} of the schema: expected {x}")),
            (Some(p), None) => Some(format!("at position {p} of the schema")),
            (None, Some(x)) => Some(format!("expected {x}")),
            (None, None) => None,
        };
        EntryError {
            message: e.message,
            note,
        }
    }
}

/// What parsing one entry gave.
pub(crate) struct ParsedEntry {
    /// The function, when the entry has no error.
    pub(crate) function: Option<NativeFunction>,
    /// The schema, when the `func:` parsed (even if other keys failed).
    pub(crate) schema: Option<FunctionSchema>,
    /// The problems, first the one torchgen reports.
    pub(crate) errors: Vec<EntryError>,
}

/// The keys of an entry not yet interpreted; each key is taken out as it is read, like
/// torchgen's `dict.pop`, so whatever is left over is an unknown key.
struct Keys {
    items: Vec<(Node, Node)>,
    line: usize,
}

impl Keys {
    fn pop(&mut self, key: &str) -> Option<Node> {
        let i = self
            .items
            .iter()
            .position(|(k, _)| k.as_str() == Some(key))?;
        Some(self.items.remove(i).1)
    }

    /// Like [`Keys::pop`], but a YAML null counts as absent (torchgen's `is None` checks).
    fn pop_non_null(&mut self, key: &str) -> Option<Node> {
        self.pop(key).filter(|n| n.value != Value::Null)
    }
}

fn py_truthy(node: &Node) -> bool {
    match &node.value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::Str(s) | Value::Other(s) => !s.is_empty(),
        Value::Seq(v) => !v.is_empty(),
        Value::Map(m) => !m.is_empty(),
    }
}

struct EntryParser<'o> {
    options: &'o ParseOptions,
    errors: Vec<EntryError>,
}

impl EntryParser<'_> {
    fn error(&mut self, e: impl Into<EntryError>) {
        self.errors.push(e.into());
    }

    fn bool_key(
        &mut self,
        keys: &mut Keys,
        key: &str,
        default: bool,
        prefix: &str,
    ) -> Option<bool> {
        match keys.pop(key) {
            None => Some(default),
            Some(Node {
                value: Value::Bool(b),
                ..
            }) => Some(b),
            Some(other) => {
                self.error(format!("{prefix}{}", other.py_str()));
                None
            }
        }
    }

    fn optional_str(&mut self, keys: &mut Keys, key: &str) -> Option<Option<String>> {
        match keys.pop_non_null(key) {
            None => Some(None),
            Some(node) => match node.as_str() {
                Some(s) => Some(Some(s.to_owned())),
                None => {
                    self.error(format!("not a str: {}", node.py_str()));
                    None
                }
            },
        }
    }
}

/// Parses one entry (its mapping entries, `func` included) found at `line`.
pub(crate) fn parse_entry(
    items: Vec<(Node, Node)>,
    line: usize,
    options: &ParseOptions,
) -> ParsedEntry {
    let mut keys = Keys { items, line };
    let mut p = EntryParser {
        options,
        errors: Vec::new(),
    };

    let (namespace, func) = match parse_func(keys.pop("func")) {
        Ok((ns, f)) => (Some(ns), Some(f)),
        Err(e) => {
            p.error(e);
            (None, None)
        }
    };

    let cpp_no_default_args: Option<Vec<Node>> = match keys.pop("cpp_no_default_args") {
        None => Some(Vec::new()),
        Some(Node {
            value: Value::Seq(items),
            ..
        }) => Some(items),
        Some(other) => {
            p.error(format!(
                "cpp_no_default_args is not a list: {}",
                other.py_str()
            ));
            None
        }
    };

    let use_const_ref = p.bool_key(
        &mut keys,
        "use_const_ref_for_mutable_tensors",
        false,
        "use_const_ref_for_mutable_tensors is not a bool: ",
    );
    if use_const_ref == Some(true) && func.as_ref().is_some_and(FunctionSchema::is_out_fn) {
        p.error("see https://github.com/pytorch/pytorch/issues/145522");
    }

    let variants = parse_variants(&mut p, keys.pop("variants"));
    let manual_kernel_registration = p.bool_key(
        &mut keys,
        "manual_kernel_registration",
        false,
        "not a bool: ",
    );
    let manual_cpp_binding = p.bool_key(&mut keys, "manual_cpp_binding", false, "not a bool: ");
    let device_guard = p.bool_key(&mut keys, "device_guard", true, "not a bool: ");
    let device_check = parse_device_check(&mut p, keys.pop_non_null("device_check"));
    let structured = p.bool_key(&mut keys, "structured", false, "not a bool: ");

    let structured_delegate: Option<Option<OperatorName>> = match p
        .optional_str(&mut keys, "structured_delegate")
    {
        None => None,
        Some(None) => Some(None),
        Some(Some(s)) if s.contains("::") => {
            p.error(
                    "namespace is not supported in structured delegate, using the same namespace as the native function",
                );
            None
        }
        Some(Some(s)) => match OperatorName::parse(&s) {
            Ok(name) => Some(Some(name)),
            Err(e) => {
                p.error(e);
                None
            }
        },
    };

    let structured_inherits = match p.optional_str(&mut keys, "structured_inherits") {
        Some(Some(s)) if s.contains("::") => {
            p.error(
                "namespace is not supported in structured inherits, using the same namespace as the native function",
            );
            None
        }
        other => other,
    };

    let python_module = p.optional_str(&mut keys, "python_module");
    if let (Some(Some(_)), Some(v)) = (&python_module, variants)
        && v.method
    {
        p.error("functions in modules cannot be methods");
    }
    let category_override = p.optional_str(&mut keys, "category_override");

    let precomputed = match keys.pop_non_null("precomputed") {
        None => Some(None),
        Some(node) => {
            if let Some(s) = structured
                && !s
            {
                p.error("precomputed requires structured=True, got structured=False");
                None
            } else if py_truthy(&node) {
                match Precompute::parse(&node) {
                    Ok(pc) => Some(Some(pc)),
                    Err(e) => {
                        p.error(e);
                        None
                    }
                }
            } else {
                Some(None)
            }
        }
    };

    let tags = parse_tags(
        &mut p,
        keys.pop("tags"),
        namespace.as_deref(),
        func.as_ref(),
    );

    let mut dispatch = parse_dispatch(
        &mut p,
        &mut keys,
        func.as_ref(),
        structured,
        structured_delegate.as_ref(),
        manual_kernel_registration,
    );

    let autogen = parse_autogen(&mut p, keys.pop("autogen"));
    let ufunc_inner_loop = parse_ufunc(&mut p, keys.pop("ufunc_inner_loop"));
    if let (Some(loops), Some(d)) = (&ufunc_inner_loop, dispatch.as_mut())
        && !loops.is_empty()
    {
        add_ufunc_kernels(&mut p, d, func.as_ref(), structured);
    }

    keys.items.retain(|(k, _)| k.as_str() != Some("__line__"));
    if !keys.items.is_empty() {
        p.error(format!(
            "leftover entries: {}",
            dict_repr(&keys.items, None)
        ));
    }

    if let (Some(Some(_)), Some(d)) = (&structured_delegate, &dispatch)
        && let Some((key, _)) = d
            .iter()
            .find(|(k, _)| dispatch::is_structured_dispatch_key(*k))
    {
        p.error(format!(
            "if structured_delegate, then must not have {} in dispatch dictionary (it is delegated!)",
            key.name()
        ));
    }

    let fields = checks::Fields {
        func: func.as_ref(),
        variants,
        structured,
        structured_delegate: structured_delegate.as_ref(),
        structured_inherits: structured_inherits.as_ref(),
        device_guard,
        device_check,
        cpp_no_default_args: cpp_no_default_args.as_deref(),
        tags: tags.as_ref(),
    };
    for e in checks::post_init(&fields) {
        p.error(e);
    }

    let function = if p.errors.is_empty() {
        build(BuildParts {
            namespace,
            func: func.clone(),
            use_const_ref,
            device_guard,
            device_check,
            python_module,
            category_override,
            variants,
            manual_kernel_registration,
            manual_cpp_binding,
            line,
            autogen,
            ufunc_inner_loop,
            structured,
            structured_delegate,
            structured_inherits,
            precomputed,
            cpp_no_default_args: cpp_no_default_args.map(|v| v.iter().map(Node::py_str).collect()),
            tags,
            dispatch,
        })
    } else {
        None
    };
    ParsedEntry {
        function,
        schema: func,
        errors: p.errors,
    }
}

fn parse_func(node: Option<Node>) -> Result<(String, FunctionSchema), EntryError> {
    let Some(node) = node else {
        return Err("'func'".into());
    };
    let Some(text) = node.as_str() else {
        return Err(format!("not a str: {}", node.py_str()).into());
    };
    split_and_parse_func(text)
}

/// Parses a `func:` text (`[ns::]schema`) into its schema, dropping the namespace.
pub(crate) fn parse_func_text(text: &str) -> Result<FunctionSchema, EntryError> {
    split_and_parse_func(text).map(|(_, f)| f)
}

fn split_and_parse_func(text: &str) -> Result<(String, FunctionSchema), EntryError> {
    let (namespace, entity) = dispatch::split_namespace(text, 1)?;
    let namespace = if namespace.is_empty() {
        "aten"
    } else {
        namespace
    };
    let func = FunctionSchema::parse(entity)?;
    Ok((namespace.to_owned(), func))
}

fn parse_variants(p: &mut EntryParser<'_>, node: Option<Node>) -> Option<Variants> {
    let Some(node) = node else {
        return Some(Variants::FUNCTION);
    };
    let Some(text) = node.as_str() else {
        p.error(format!("variants is not a str: {}", node.py_str()));
        return None;
    };
    let mut variants = Variants::default();
    for v in text.split(", ") {
        match v {
            "function" => variants.function = true,
            "method" => variants.method = true,
            _ => {
                p.error(format!("illegal variant {v}"));
                return None;
            }
        }
    }
    Some(variants)
}

fn parse_device_check(p: &mut EntryParser<'_>, node: Option<Node>) -> Option<DeviceCheckType> {
    let Some(node) = node else {
        return Some(DeviceCheckType::ExactSame);
    };
    match node.as_str() {
        Some("NoCheck") => Some(DeviceCheckType::NoCheck),
        Some("ExactSame") => Some(DeviceCheckType::ExactSame),
        Some(other) => {
            p.error(format!("illegal device_check: {other}"));
            None
        }
        None => {
            p.error(format!("not a str: {}", node.py_str()));
            None
        }
    }
}

fn parse_tags(
    p: &mut EntryParser<'_>,
    node: Option<Node>,
    namespace: Option<&str>,
    func: Option<&FunctionSchema>,
) -> Option<BTreeSet<String>> {
    let mut written: Vec<Node> = match node {
        None => Vec::new(),
        Some(
            n @ Node {
                value: Value::Str(_),
                ..
            },
        ) => vec![n],
        Some(Node {
            value: Value::Seq(items),
            ..
        }) => items,
        Some(other) => {
            p.error(format!("tags is not a list: {}", other.py_str()));
            return None;
        }
    };
    let valid = &p.options.valid_tags;
    let auto = |tag: &str| Node {
        value: Value::Str(tag.to_owned()),
        line: 0,
    };
    if let Some(func) = func {
        if namespace == Some("aten") && valid.contains("pt2_compliant_tag") {
            written.push(auto("pt2_compliant_tag"));
        }
        if func.is_out_fn() && valid.contains("out") {
            written.push(auto("out"));
        }
        if func.name.name.inplace && valid.contains("inplace") {
            written.push(auto("inplace"));
        }
    }
    let mut tags = BTreeSet::new();
    let mut ok = true;
    for t in &written {
        if valid.is_empty() {
            p.error("valid_tags is empty");
            return None;
        }
        match t.as_str() {
            Some(name) if valid.contains(name) => {
                tags.insert(name.to_owned());
            }
            _ => {
                p.error(format!("illegal tag {}", t.py_str()));
                ok = false;
            }
        }
    }
    ok.then_some(tags)
}

/// The `dispatch:` table and the implicit CompositeImplicitAutograd entry (§2.3). `None` when
/// the table itself is unusable.
fn parse_dispatch(
    p: &mut EntryParser<'_>,
    keys: &mut Keys,
    func: Option<&FunctionSchema>,
    structured: Option<bool>,
    structured_delegate: Option<&Option<OperatorName>>,
    manual_kernel_registration: Option<bool>,
) -> Option<Vec<(DispatchKey, BackendMetadata)>> {
    let mut dispatch: Vec<(DispatchKey, BackendMetadata)> = Vec::new();
    let mut complete = true;
    match keys.pop_non_null("dispatch") {
        Some(Node {
            value: Value::Map(table),
            line: table_line,
        }) => {
            if manual_kernel_registration == Some(true) {
                p.error(
                    "cannot specify both manual_kernel_registration and dispatch; with manual registration, dispatch has no effect!",
                );
            }
            let table_repr = || dict_repr(&table, Some(table_line));
            let mut num_dispatch_keys = 0usize;
            let mut redundant_cia = false;
            for (ks, v) in &table {
                let Some(ks_text) = ks.as_str() else {
                    p.error(format!(
                        "illegal dispatch key '{}' in {}",
                        ks.py_str(),
                        table_repr()
                    ));
                    complete = false;
                    continue;
                };
                let Some(kernel_text) = v.as_str() else {
                    p.error(format!(
                        "illegal dispatch value '{}' in {}",
                        v.py_str(),
                        table_repr()
                    ));
                    complete = false;
                    continue;
                };
                for k in ks_text.split(',') {
                    let key = match dispatch::parse_yaml_key(k.trim()) {
                        Ok(key) => key,
                        Err(e) => {
                            p.error(e);
                            complete = false;
                            continue;
                        }
                    };
                    num_dispatch_keys += 1;
                    let supported = match key {
                        YamlKey::Known(dk) if p.options.ignore_keys.contains(&dk) => continue,
                        YamlKey::Known(dk) if SUPPORTED_DISPATCH_KEYS.contains(&dk) => Some(dk),
                        _ => None,
                    };
                    let Some(dk) = supported else {
                        p.error(format!(
                            "Dispatch key {} of kernel {kernel_text} is not a supported dispatch key.",
                            key.name()
                        ));
                        complete = false;
                        continue;
                    };
                    let (ns, kernel) = match dispatch::split_namespace(kernel_text, 3) {
                        Ok(split) => split,
                        Err(e) => {
                            p.error(e);
                            complete = false;
                            continue;
                        }
                    };
                    let ns = if ns.is_empty() { "at" } else { ns };
                    let meta = BackendMetadata {
                        kernel: kernel.to_owned(),
                        structured: structured == Some(true)
                            && dispatch::is_structured_dispatch_key(dk),
                        cpp_namespace: format!("{ns}::native"),
                    };
                    // A key written twice keeps its first position, as in a Python dict.
                    match dispatch.iter_mut().find(|(k, _)| *k == dk) {
                        Some(slot) => slot.1 = meta,
                        None => dispatch.push((dk, meta)),
                    }
                    if dk == DispatchKey::CompositeImplicitAutograd
                        && func.is_some_and(|f| kernel_text == cpp_name(f))
                    {
                        redundant_cia = true;
                    }
                }
            }
            if complete && let Some(func) = func {
                check_singleton_cia(
                    p,
                    &dispatch,
                    func,
                    num_dispatch_keys,
                    redundant_cia,
                    structured_delegate,
                );
            }
        }
        Some(_) => {
            let mut remaining = keys.items.clone();
            remaining.retain(|(k, _)| k.as_str() != Some("__line__"));
            p.error(format!(
                "dispatch is not a dict: {}",
                dict_repr(&remaining, Some(keys.line))
            ));
            return None;
        }
        None => {
            if let (Some(func), Some(false), Some(None)) = (func, structured, structured_delegate) {
                let name = func.name.name.to_string();
                let factory = func.tensor_options().is_some()
                    && !func
                        .arguments
                        .iter()
                        .any(|a| !a.is_out && a.ty.is_tensor_like());
                if name.starts_with("new_") || name.ends_with("_like") || factory {
                    p.error(format!(
                        "expected {name} to have a CompositeExplicitAutograd dispatch entry, but there was no dispatch table.  Factory functions should not have implicit dispatch as they should not be decomposed for __torch_dispatch__"
                    ));
                    return None;
                }
                dispatch.push((
                    DispatchKey::CompositeImplicitAutograd,
                    BackendMetadata {
                        kernel: cpp_name(func),
                        structured: false,
                        cpp_namespace: DEFAULT_KERNEL_NAMESPACE.to_owned(),
                    },
                ));
            } else if func.is_none() || structured.is_none() || structured_delegate.is_none() {
                complete = false;
            }
        }
    }

    let composites = dispatch
        .iter()
        .filter(|(k, _)| dispatch::is_composite_key(*k))
        .count();
    let has = |key: DispatchKey| dispatch.iter().any(|(k, _)| *k == key);
    let allowed_pair = composites == 2
        && !has(DispatchKey::CompositeExplicitAutogradNonFunctional)
        && has(DispatchKey::CompositeImplicitAutogradNestedTensor);
    if composites > 1 && !allowed_pair {
        p.error(
            "cannot specify more than one of CompositeExplicitAutograd, CompositeExplicitAutogradNonFunctional, or CompositeImplicitAutograd on a single kernel; each strictly subsumes the other.  If you wanted to provide an explicit autograd implementation, specify CompositeExplicitAutograd; otherwise specify CompositeImplicitAutograd only",
        );
    }
    complete.then_some(dispatch)
}

/// A table holding only a CompositeImplicitAutograd entry says nothing the default does not.
fn check_singleton_cia(
    p: &mut EntryParser<'_>,
    dispatch: &[(DispatchKey, BackendMetadata)],
    func: &FunctionSchema,
    num_dispatch_keys: usize,
    redundant_cia: bool,
    structured_delegate: Option<&Option<OperatorName>>,
) {
    if num_dispatch_keys == 1 && redundant_cia {
        p.error(
            "unnecessary dispatch table for this function; just delete the dispatch key entirely",
        );
        return;
    }
    let Some(delegate) = structured_delegate else {
        return;
    };
    if let [(DispatchKey::CompositeImplicitAutograd, meta)] = dispatch
        && delegate.is_none()
        && !meta.supports_symint()
        && num_dispatch_keys == 1
    {
        p.error(format!(
            "unexpected name for singleton CompositeImplicitAutograd dispatch entry: expected {} but got {meta}.  Rename your implementation to the expected name, then delete the dispatch table",
            cpp_name(func)
        ));
    }
}

fn parse_autogen(p: &mut EntryParser<'_>, node: Option<Node>) -> Option<Vec<OperatorName>> {
    let Some(node) = node else {
        return Some(Vec::new());
    };
    let Some(text) = node.as_str() else {
        p.error(format!("autogen is not a str: {}", node.py_str()));
        return None;
    };
    if text.is_empty() {
        return Some(Vec::new());
    }
    let mut names = Vec::new();
    for part in text.split(", ") {
        match OperatorName::parse(part) {
            Ok(name) => names.push(name),
            Err(e) => {
                p.error(e);
                return None;
            }
        }
    }
    Some(names)
}

type Loops = std::collections::BTreeMap<UfuncKey, UfuncInnerLoop>;

fn parse_ufunc(p: &mut EntryParser<'_>, node: Option<Node>) -> Option<Loops> {
    let mut loops = Loops::new();
    let Some(node) = node else {
        return Some(loops);
    };
    match &node.value {
        Value::Str(s) => match UfuncInnerLoop::parse(s, UfuncKey::Generic) {
            Ok(l) => {
                loops.insert(UfuncKey::Generic, l);
            }
            Err(e) => {
                p.error(e);
                return None;
            }
        },
        Value::Map(entries) => {
            for (k, v) in entries {
                let Some(k) = k.as_str() else {
                    p.error(format!("ufunc_inner_loop key is not a str: {}", k.py_str()));
                    return None;
                };
                let Some(v) = v.as_str() else {
                    p.error(format!(
                        "ufunc_inner_loop value is not a str: {}",
                        v.py_str()
                    ));
                    return None;
                };
                let parsed = UfuncKey::parse(k).and_then(|key| UfuncInnerLoop::parse(v, key));
                match parsed {
                    Ok(l) => {
                        loops.insert(l.ufunc_key, l);
                    }
                    Err(e) => {
                        p.error(e);
                        return None;
                    }
                }
            }
        }
        _ => {
            p.error(format!(
                "ufunc_inner_loop not str or dict: {}",
                node.py_str()
            ));
            return None;
        }
    }
    Some(loops)
}

/// A ufunc op gets structured CPU and CUDA kernels named after the ufunc; it must be structured
/// and must not list those keys itself.
fn add_ufunc_kernels(
    p: &mut EntryParser<'_>,
    dispatch: &mut Vec<(DispatchKey, BackendMetadata)>,
    func: Option<&FunctionSchema>,
    structured: Option<bool>,
) {
    match structured {
        Some(false) => {
            p.error("ufunc must be structured");
            return;
        }
        None => return,
        Some(true) => {}
    }
    for key in UFUNC_DISPATCH_KEYS {
        if dispatch.iter().any(|(k, _)| *k == key) {
            p.error(format!(
                "ufunc should not have explicit dispatch entry for {}",
                key.name()
            ));
            return;
        }
    }
    let Some(func) = func else { return };
    for key in UFUNC_DISPATCH_KEYS {
        match ufunc::schema_kernel_name(func, key.name()) {
            Ok(kernel) => dispatch.push((
                key,
                BackendMetadata {
                    kernel,
                    structured: true,
                    cpp_namespace: DEFAULT_KERNEL_NAMESPACE.to_owned(),
                },
            )),
            Err(e) => {
                p.error(e);
                return;
            }
        }
    }
}

/// Every field of an entry that parsed without error.
struct BuildParts {
    namespace: Option<String>,
    func: Option<FunctionSchema>,
    use_const_ref: Option<bool>,
    device_guard: Option<bool>,
    device_check: Option<DeviceCheckType>,
    python_module: Option<Option<String>>,
    category_override: Option<Option<String>>,
    variants: Option<Variants>,
    manual_kernel_registration: Option<bool>,
    manual_cpp_binding: Option<bool>,
    line: usize,
    autogen: Option<Vec<OperatorName>>,
    ufunc_inner_loop: Option<Loops>,
    structured: Option<bool>,
    structured_delegate: Option<Option<OperatorName>>,
    structured_inherits: Option<Option<String>>,
    precomputed: Option<Option<Precompute>>,
    cpp_no_default_args: Option<Vec<String>>,
    tags: Option<BTreeSet<String>>,
    dispatch: Option<Vec<(DispatchKey, BackendMetadata)>>,
}

/// Assembles the function; every part is known when the entry had no error (a missing part
/// would have been reported), so `None` here only means "not buildable".
fn build(b: BuildParts) -> Option<NativeFunction> {
    let dispatch = b.dispatch?;
    let structured_delegate = b.structured_delegate?;
    let has = |key: DispatchKey| dispatch.iter().any(|(k, _)| *k == key);
    let only_cia = dispatch.iter().all(|(k, _)| {
        matches!(
            k,
            DispatchKey::CompositeImplicitAutograd
                | DispatchKey::CompositeImplicitAutogradNestedTensor
        )
    });
    let is_abstract = structured_delegate.is_some() || dispatch.is_empty() || !only_cia;
    let mut cpp_no_default_args: Vec<String> = Vec::new();
    for a in b.cpp_no_default_args? {
        if !cpp_no_default_args.contains(&a) {
            cpp_no_default_args.push(a);
        }
    }
    Some(NativeFunction {
        namespace: b.namespace?,
        func: b.func?,
        use_const_ref_for_mutable_tensors: b.use_const_ref?,
        device_guard: b.device_guard?,
        device_check: b.device_check?,
        python_module: b.python_module?,
        category_override: b.category_override?,
        variants: b.variants?,
        manual_kernel_registration: b.manual_kernel_registration?,
        manual_cpp_binding: b.manual_cpp_binding?,
        line: b.line,
        autogen: b.autogen?,
        ufunc_inner_loop: b.ufunc_inner_loop?,
        structured: b.structured?,
        structured_delegate,
        structured_inherits: b.structured_inherits?,
        precomputed: b.precomputed?,
        cpp_no_default_args,
        is_abstract,
        has_composite_implicit_autograd_kernel: has(DispatchKey::CompositeImplicitAutograd),
        has_composite_implicit_autograd_nested_tensor_kernel: has(
            DispatchKey::CompositeImplicitAutogradNestedTensor,
        ),
        has_composite_explicit_autograd_kernel: has(DispatchKey::CompositeExplicitAutograd),
        has_composite_explicit_autograd_non_functional_kernel: has(
            DispatchKey::CompositeExplicitAutogradNonFunctional,
        ),
        tags: b.tags?,
        dispatch,
    })
}
