//! The tables of the Python module (`crates/python/src/generated/`), from ops.yaml.
//!
//! - `overloads.rs`: every operator name with its overload names in ops.yaml order, out=
//!   overloads last: the order in which `switchyard.ops.aten.<name>(...)` tries them.
//! - `signatures.rs`: the Python signatures of each module function and `Tensor` method, in
//!   PythonArgParser's text and parse order, from a port of torchgen's rules
//!   (`torchgen/api/python.py`, `tools/autograd/gen_python_functions.py`;
//!   `docs/python-plan.md` §3.1).
//! - `python/switchyard/_C.pyi`: type stubs of the same signatures in gen_pyi's shape.

use super::writer::header;
use crate::{NativeFunction, NativeFunctions};
use switchyard_schema::{Argument, BaseType, SchemaKind, Type};

/// The Python extension's manifest, relative to the workspace root: its tables are generated
/// when it exists.
pub const PYTHON_CRATE: &str = "crates/python/Cargo.toml";

/// The generated files (path relative to the workspace root, contents).
pub fn generate(model: &NativeFunctions) -> Vec<(String, String)> {
    let module = format!(
        "{}//! Tables generated from ops.yaml for the Python bindings.\n\npub mod overloads;\npub mod signatures;\n",
        header("python")
    );
    vec![
        ("crates/python/src/generated/mod.rs".to_owned(), module),
        (
            "crates/python/src/generated/overloads.rs".to_owned(),
            overloads(model),
        ),
        (
            "crates/python/src/generated/signatures.rs".to_owned(),
            signatures(model),
        ),
        (STUB_PATH.to_owned(), stubs(model)),
    ]
}

/// `OVERLOADS`: `("aten::add", &["Tensor", "Scalar", "out", "Scalar_out"])`, one entry per
/// qualified operator name, sorted by name (binary search); overload names in ops.yaml order
/// (the default overload is `""`; the generated `autogen:` operators after the written ones)
/// with the out= overloads last, as the JIT's `getAllSortedOperatorsFor` orders what
/// `torch.ops` packets try (PyTorch's own order of the others follows its registry, which is
/// not always native_functions.yaml's: `max` lists `other` before `dim`).
fn overloads(model: &NativeFunctions) -> String {
    // (name, overloads without out arguments, out= overloads)
    let mut names: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for f in &model.functions {
        let name = format!("{}::{}", f.namespace, f.func.name.name);
        let overload = f.func.name.overload_name.clone();
        let i = match names.iter().position(|(n, _, _)| *n == name) {
            Some(i) => i,
            None => {
                names.push((name, Vec::new(), Vec::new()));
                names.len() - 1
            }
        };
        if f.func.kind() == SchemaKind::Out {
            names[i].2.push(overload);
        } else {
            names[i].1.push(overload);
        }
    }
    let mut names: Vec<(String, Vec<String>)> = names
        .into_iter()
        .map(|(n, mut plain, out)| {
            plain.extend(out);
            (n, plain)
        })
        .collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = header("python");
    out.push_str(
        "//! Each operator name of ops.yaml with its overload names in ops.yaml order: the order in\n\
         //! which an overload packet (`switchyard.ops.aten.add`) tries them, out= overloads last.\n\n\
         /// `(qualified name, overload names)`, sorted by name; `\"\"` is the default overload.\n\
         pub static OVERLOADS: &[(&str, &[&str])] = &[\n",
    );
    for (name, list) in &names {
        let list: Vec<String> = list.iter().map(|o| format!("{o:?}")).collect();
        out.push_str(&format!("    ({name:?}, &[{}]),\n", list.join(", ")));
    }
    out.push_str("];\n");
    out
}

// ---------------------------------------------------------------------------------------------
// Python signatures: torchgen's `torchgen/api/python.py` and `gen_python_functions.py` rules.
// ---------------------------------------------------------------------------------------------

/// Names torchgen's `SKIP_PYTHON_BINDINGS` keeps out of the generated bindings (whole-name
/// patterns over `cpp.name`: the base name with `_` for in-place and `_out` for out= schemas):
/// manual bindings, attributes, internals.
const SKIP_PYTHON_BINDINGS: &[&str] = &[
    "alias",
    "contiguous",
    "is_cuda",
    "is_sparse",
    "is_sparse_csr",
    "size",
    "stride",
    "sym_size",
    "sym_stride",
    "sym_storage_offset",
    "sym_numel",
    ".*_backward",
    ".*_backward_(out|input|weight|bias)",
    ".*_forward",
    ".*_forward_out",
    ".*_jvp",
    "_unsafe_view",
    "tensor",
    "_?sparse_(coo|compressed|csr|csc|bsr|bsc)_tensor.*",
    "_range.*",
    "_sparse_add_out",
    "_sparse_div.*",
    "_sparse_mul.*",
    "_sparse_sub.*",
    "_sparse_dense_add_out",
    "index",
    "index_out",
    "unique_dim_consecutive",
    "_cumsum.*",
    "_cumprod.*",
    "_sum.*",
    "_prod.*",
    "_th_.*",
    "_thnn_.*",
    "range.*",
    "_solve.*",
    "_inverse.*",
    "_cholesky.*",
    "_triangular_solve.*",
    "_qr.*",
    "_svd.*",
    "slice",
    "item",
    "_local_scalar_dense",
    "to",
    "_to_copy",
    "_to_copy_out",
    "_reshape_copy",
    "_reshape_copy_out",
    "copy_sparse_to_sparse_",
    "copy_",
    "_foreach_copy",
    "numpy_T",
    "matrix_H",
    "mT",
    "mH",
    "nonzero(_(out|numpy))?",
    "set_data",
    ".*_overrideable",
    "data",
    "is_leaf",
    "output_nr",
    "_version",
    "requires_grad_",
    "retains_grad",
    "set_",
    "_fw_primal",
    "fake_quantize_per_tensor_affine_cachemask",
    "fake_quantize_per_channel_affine_cachemask",
    "_new_zeros_with_same_feature_meta",
    "_has_same_storage_numel",
    "_reshape_alias",
    "replace_",
    "copy",
    "fill.Tensor",
    "fill.Scalar",
    "lift.*",
    "normal_functional",
    "nbytes",
    "itemsize",
    "_batch_norm_with_update",
    "_batch_norm_with_update_out",
    "_batch_norm_no_update",
];

/// torchgen's `SKIP_PYTHON_BINDINGS_SIGNATURES`: schemas (printed without namespace) whose
/// Python signature another overload covers (`add.Scalar` is `add.Tensor` with a number
/// converted to a tensor).
const SKIP_PYTHON_BINDINGS_SIGNATURES: &[&str] = &[
    "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    "add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
    "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    "sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
    "mul.Scalar(Tensor self, Scalar other) -> Tensor",
    "mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
    "div.Scalar(Tensor self, Scalar other) -> Tensor",
    "div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
];

/// python_arg_parser.cpp's `should_allow_numbers_as_tensors`: the signature names whose
/// `Tensor` parameters also accept Python numbers.
const NUMBERS_AS_TENSORS: &[&str] = &[
    "add",
    "add_",
    "add_out",
    "div",
    "div_",
    "div_out",
    "divide",
    "divide_",
    "divide_out",
    "mul",
    "mul_",
    "mul_out",
    "multiply",
    "multiply_",
    "multiply_out",
    "sub",
    "sub_",
    "sub_out",
    "subtract",
    "subtract_",
    "subtract_out",
    "true_divide",
    "true_divide_",
    "true_divide_out",
    "to",
    "_to_copy",
    "copy_",
    "floor_divide",
    "floor_divide_",
    "floor_divide_out",
    "_conj",
];

/// Whether `text` matches the anchored pattern, for the small regex subset the skip list
/// uses: literals, `.*`, `?` after a group or character, and `(a|b)` groups.
fn matches_pattern(pattern: &str, text: &str) -> bool {
    // Expand groups into alternatives, then match `.*` and `x?` by backtracking.
    fn expand(p: &str) -> Vec<String> {
        let Some(open) = p.find('(') else {
            return vec![p.to_owned()];
        };
        let mut depth = 0;
        let mut close = open;
        for (i, c) in p[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let inner = &p[open + 1..close];
        let mut alts = Vec::new();
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                '|' if depth == 0 => {
                    alts.push(&inner[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        alts.push(&inner[start..]);
        let (rest, optional) = match p[close + 1..].strip_prefix('?') {
            Some(r) => (r, true),
            None => (&p[close + 1..], false),
        };
        if optional {
            alts.push("");
        }
        let mut out = Vec::new();
        for alt in alts {
            for tail in expand(rest) {
                for head in expand(alt) {
                    out.push(format!("{}{head}{tail}", &p[..open]));
                }
            }
        }
        out
    }
    fn glob(p: &[u8], t: &[u8]) -> bool {
        match p {
            [] => t.is_empty(),
            [b'.', b'*', rest @ ..] => (0..=t.len()).any(|i| glob(rest, &t[i..])),
            [c, b'?', rest @ ..] => {
                glob(rest, t)
                    || (t.first().is_some_and(|x| x == c || *c == b'.') && glob(rest, &t[1..]))
            }
            [b'.', rest @ ..] => !t.is_empty() && glob(rest, &t[1..]),
            [c, rest @ ..] => t.first() == Some(c) && glob(rest, &t[1..]),
        }
    }
    expand(pattern)
        .iter()
        .any(|p| glob(p.as_bytes(), text.as_bytes()))
}

/// torchgen's `cpp.name`: the base name (with `_` when in-place), `_out` added for out=.
fn cpp_name(f: &NativeFunction) -> String {
    let name = f.func.name.name.to_string();
    if f.func.is_out_fn() {
        format!("{name}_out")
    } else {
        name
    }
}

/// torchgen's `should_generate_py_binding`.
pub fn should_generate_py_binding(f: &NativeFunction) -> bool {
    // Operators autogen added get no bindings, except the view_copy ops PyTorch exposed
    // before they were generated.
    if f.is_generated() && !f.has_tag("view_copy") {
        return false;
    }
    let name = cpp_name(f);
    if SKIP_PYTHON_BINDINGS
        .iter()
        .any(|p| matches_pattern(p, &name))
    {
        return false;
    }
    let schema = f.func.to_string();
    !SKIP_PYTHON_BINDINGS_SIGNATURES.contains(&schema.as_str())
}

/// torchgen's `argument_type_str`: the type as PythonArgParser's signature strings spell it.
fn argument_type_str(t: &Type) -> String {
    match t {
        Type::Base(b) => match b {
            BaseType::Tensor => "Tensor".to_owned(),
            BaseType::Int => "int64_t".to_owned(),
            BaseType::Float => "double".to_owned(),
            BaseType::Str => "c10::string_view".to_owned(),
            other => other.name().to_owned(),
        },
        Type::Optional(elem) => {
            if **elem == Type::Base(BaseType::Tensor) {
                "Tensor?".to_owned()
            } else {
                format!("{}?", argument_type_str(elem))
            }
        }
        Type::List { elem, size } => {
            let sized = |s: &str| match size {
                Some(n) => format!("{s}[{n}]"),
                None => s.to_owned(),
            };
            match &**elem {
                Type::Base(BaseType::Bool) => format!("::std::array<bool,{}>", size.unwrap_or(0)),
                Type::Base(BaseType::Int) => sized("IntArrayRef"),
                Type::Base(BaseType::SymInt) => sized("SymIntArrayRef"),
                Type::Base(BaseType::Tensor) => sized("TensorList"),
                Type::Base(BaseType::Scalar) => sized("ScalarList"),
                Type::Base(BaseType::Dimname) => sized("DimnameList"),
                Type::Optional(inner) if **inner == Type::Base(BaseType::Tensor) => {
                    "c10::List<::std::optional<Tensor>>".to_owned()
                }
                other => format!("ArrayRef<{}>", argument_type_str(other)),
            }
        }
        Type::CustomClass(name) => name.clone(),
    }
}

/// A schema default as PythonArgParser's signature strings spell it (torchgen's
/// `cpp.default_expr` then `pythonify_default`).
fn python_default(default: &str, ty: &Type) -> String {
    if let Some(inner) = default.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        return if inner.is_empty() {
            "None".to_owned()
        } else {
            format!("{{{inner}}}")
        };
    }
    if let Some(inner) = default
        .strip_prefix('\'')
        .and_then(|d| d.strip_suffix('\''))
    {
        return format!("\"{}\"", inner.replace('"', "\\\""));
    }
    match (default, ty) {
        ("Mean", _) => "at::Reduction::Mean".to_owned(),
        ("Sum", _) => "at::Reduction::Sum".to_owned(),
        ("contiguous_format", _) => "c10::MemoryFormat::Contiguous".to_owned(),
        ("long", _) => "at::kLong".to_owned(),
        _ => default.to_owned(),
    }
}

/// One parameter of a Python signature.
#[derive(Clone, Debug)]
struct PyArg {
    name: String,
    /// The schema type (the overload order compares these).
    ty: Type,
    /// PythonArgParser's spelling of the type.
    type_str: String,
    default: Option<String>,
    /// For the stubs: a `Tensor` out parameter of a group, or several packed in one `out`.
    out_count: usize,
}

impl PyArg {
    fn from_schema(a: &Argument) -> PyArg {
        PyArg {
            name: a.name.clone(),
            ty: a.ty.clone(),
            type_str: argument_type_str(&a.ty),
            default: a.default.as_deref().map(|d| python_default(d, &a.ty)),
            out_count: 0,
        }
    }

    fn new(name: &str, ty: Type, default: &str) -> PyArg {
        PyArg {
            name: name.to_owned(),
            type_str: argument_type_str(&ty),
            ty,
            default: Some(default.to_owned()),
            out_count: 0,
        }
    }

    /// torchgen's `PythonArgument.argument_str`.
    fn argument_str(&self, method: bool) -> String {
        let name = if self.name == "self" && self.type_str == "Tensor" && !method {
            "input"
        } else {
            &self.name
        };
        match &self.default {
            Some(d) => {
                let d = match d.as_str() {
                    "nullptr" | "c10::nullopt" | "{}" => "None",
                    d => d,
                };
                format!("{} {name}={d}", self.type_str)
            }
            None => format!("{} {name}", self.type_str),
        }
    }
}

/// One Python signature of one operator (torchgen's `PythonSignature`).
#[derive(Clone, Debug)]
struct PySignature {
    /// The Python name: the base name with `_` for in-place (`add_`), dunders kept.
    name: String,
    input_args: Vec<PyArg>,
    input_kwargs: Vec<PyArg>,
    output: Option<PyArg>,
    tensor_options: Vec<PyArg>,
    method: bool,
}

impl PySignature {
    fn arguments(&self, skip_outputs: bool) -> Vec<&PyArg> {
        let mut args: Vec<&PyArg> = self.input_args.iter().chain(&self.input_kwargs).collect();
        if !skip_outputs {
            args.extend(&self.output);
        }
        args.extend(&self.tensor_options);
        args
    }

    /// torchgen's `signature_str`: what PythonArgParser parses.
    fn signature_str(&self, skip_outputs: bool) -> String {
        let mut formals: Vec<String> = self
            .arguments(skip_outputs)
            .iter()
            .map(|a| a.argument_str(self.method))
            .collect();
        if formals.len() > self.input_args.len() {
            formals.insert(self.input_args.len(), "*".to_owned());
        }
        format!("{}({})", self.name, formals.join(", "))
    }
}

/// torchgen's `signature(f, method=...)`.
fn python_signature(f: &NativeFunction, method: bool) -> PySignature {
    let schema = &f.func;
    let self_index = schema.self_index();
    let tensor_options = schema.tensor_options().unwrap_or(0..0);
    let mut input_args = Vec::new();
    let mut input_kwargs = Vec::new();
    let mut outputs = Vec::new();
    for (i, a) in schema.arguments.iter().enumerate() {
        if tensor_options.contains(&i) || (method && Some(i) == self_index) {
            continue;
        }
        if a.is_out {
            outputs.push(PyArg::from_schema(a));
        } else if a.kwarg_only {
            input_kwargs.push(PyArg::from_schema(a));
        } else {
            input_args.push(PyArg::from_schema(a));
        }
    }
    let output = match outputs.len() {
        0 => None,
        1 => {
            let mut out = outputs.remove(0);
            out.default = Some("None".to_owned());
            out.out_count = 1;
            Some(out)
        }
        n => {
            let ty = Type::List {
                elem: Box::new(Type::Base(BaseType::Tensor)),
                size: Some(n),
            };
            let mut out = PyArg::new("out", ty, "None");
            out.out_count = n;
            Some(out)
        }
    };
    let has_tensor_input = schema
        .arguments
        .iter()
        .any(|a| !a.is_out && a.ty.is_tensor_like());
    let has_tensor_return = schema.returns.iter().any(|r| r.ty.is_tensor_like());
    let name = cpp_name(f);
    let category = f.category_override.as_deref();
    let is_factory = category == Some("factory") || (has_tensor_return && !has_tensor_input);
    let is_like_or_new = matches!(category, Some("new" | "like"))
        || name.starts_with("new_")
        || name.ends_with("_like");
    let mut tensor_options = Vec::new();
    if is_factory || is_like_or_new {
        let opt = |b: BaseType| Type::Optional(Box::new(Type::Base(b)));
        tensor_options = vec![
            PyArg::new("dtype", opt(BaseType::ScalarType), "None"),
            PyArg::new("layout", opt(BaseType::Layout), "None"),
            PyArg::new("device", opt(BaseType::Device), "None"),
            PyArg::new("pin_memory", opt(BaseType::Bool), "False"),
            PyArg::new("requires_grad", opt(BaseType::Bool), "False"),
        ];
    }
    PySignature {
        name: schema.name.name.to_string(),
        input_args,
        input_kwargs,
        output,
        tensor_options,
        method,
    }
}

/// A functional (or in-place, mutable) overload and its out= overload, parsed by one
/// signature (torchgen's `PythonSignatureGroup`).
#[derive(Clone, Debug)]
struct PyGroup {
    signature: PySignature,
    base: usize,
    outplace: Option<usize>,
}

/// torchgen's `group_overloads`: pairs each out= overload with the overload whose signature
/// without outputs is the same, then [`sort_overloads`]. An out= overload without a partner
/// (torchgen rejects those) stands alone.
fn group_overloads(model: &NativeFunctions, members: &[usize], method: bool) -> Vec<PyGroup> {
    let mut bases: Vec<(String, usize)> = Vec::new();
    let mut outs: Vec<(String, usize)> = Vec::new();
    for &i in members {
        let f = &model.functions[i];
        let key = python_signature(f, method).signature_str(true);
        if f.func.is_out_fn() {
            outs.push((key, i));
        } else {
            bases.push((key, i));
        }
    }
    let mut groups: Vec<PyGroup> = bases
        .iter()
        .map(|(key, base)| {
            let outplace = outs.iter().find(|(k, _)| k == key).map(|(_, i)| *i);
            PyGroup {
                signature: python_signature(&model.functions[outplace.unwrap_or(*base)], method),
                base: *base,
                outplace,
            }
        })
        .collect();
    for (key, out) in &outs {
        if !bases.iter().any(|(k, _)| k == key) {
            groups.push(PyGroup {
                signature: python_signature(&model.functions[*out], method),
                base: *out,
                outplace: None,
            });
        }
    }
    sort_overloads(groups)
}

/// torchgen's `is_arg_smaller`: the parser tries the larger type first (`Tensor` before
/// `Scalar`, `int` before `int[]`, `Tensor[]` last among lists).
fn is_arg_smaller(t1: &Type, t2: &Type) -> bool {
    let (s1, s2) = (t1.to_string(), t2.to_string());
    (s1 == "Scalar" && s2 == "Tensor")
        || (s1 == "Scalar?" && s2 == "Tensor?")
        || (s1.contains("Dimname") && !s2.contains("Dimname"))
        || (s1 == "int[]" && (s2 == "int" || s2 == "int?"))
        || (s1 == "Tensor[]" && s2.contains("[]"))
        || (s1 == "SymInt[]" && s2 == "int[]")
        || ((s1 == "SymInt" || s1 == "int") && s2 == "Tensor")
}

/// torchgen's `is_smaller` over signatures without outputs.
fn is_smaller(s1: &PySignature, s2: &PySignature) -> bool {
    let (a1, a2) = (s1.arguments(true), s2.arguments(true));
    if a1.len() != a2.len() {
        return false;
    }
    let equal = a1.iter().zip(&a2).all(|(x, y)| x.ty == y.ty);
    let smaller_or_equal = a1
        .iter()
        .zip(&a2)
        .all(|(x, y)| x.ty.to_string() == y.ty.to_string() || is_arg_smaller(&x.ty, &y.ty));
    smaller_or_equal && !equal
}

/// torchgen's `sort_overloads`: by signature string, then a topological sort of the partial
/// order [`is_smaller`] (larger first), in torchgen's exact visiting order.
fn sort_overloads(mut groups: Vec<PyGroup>) -> Vec<PyGroup> {
    groups.sort_by_cached_key(|g| g.signature.signature_str(false));
    let n = groups.len();
    // larger_than[i]: the signatures that i is smaller than (that must come before it).
    let mut larger_than: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for i1 in 0..n {
        for i2 in 0..n {
            if is_smaller(&groups[i1].signature, &groups[i2].signature) {
                larger_than.entry(i1).or_default().push(i2);
            }
        }
    }
    if larger_than.is_empty() {
        return groups;
    }
    let mut sorted: Vec<usize> = (0..n).filter(|i| !larger_than.contains_key(i)).collect();
    let mut idx = 0;
    while idx < n && idx < sorted.len() {
        let i = sorted[idx];
        let keys: Vec<usize> = larger_than.keys().copied().collect();
        for j in keys {
            let Some(larger) = larger_than.get_mut(&j) else {
                continue;
            };
            larger.retain(|&x| x != i);
            if larger.is_empty() {
                larger_than.remove(&j);
                sorted.push(j);
            }
        }
        idx += 1;
    }
    let mut slots: Vec<Option<PyGroup>> = groups.into_iter().map(Some).collect();
    sorted.iter().filter_map(|&i| slots[i].take()).collect()
}

/// The Python module of a `python_module:` value.
fn module_of(python_module: Option<&str>) -> String {
    match python_module {
        None => "switchyard".to_owned(),
        Some(m) => format!("switchyard._C._{m}"),
    }
}

/// One Python name with its sorted signatures.
#[derive(Clone, Debug)]
struct PyBinding {
    name: String,
    module: String,
    groups: Vec<PyGroup>,
}

/// Every module function (sorted by module, then name) and every `Tensor` method (sorted by
/// name), as `gen_python_functions` groups and orders them.
fn bindings(model: &NativeFunctions) -> (Vec<PyBinding>, Vec<PyBinding>) {
    let candidates: Vec<usize> = (0..model.functions.len())
        .filter(|&i| should_generate_py_binding(&model.functions[i]))
        .collect();
    let collect = |method: bool| {
        let mut by_name: std::collections::BTreeMap<(String, String), Vec<usize>> =
            Default::default();
        for &i in &candidates {
            let f = &model.functions[i];
            let wanted = if method {
                f.python_module.is_none() && f.variants.method
            } else {
                f.python_module.is_some() || f.variants.function
            };
            if !wanted || (method && f.func.is_out_fn()) {
                continue;
            }
            let module = if method {
                String::new()
            } else {
                module_of(f.python_module.as_deref())
            };
            by_name
                .entry((module, f.func.name.name.to_string()))
                .or_default()
                .push(i);
        }
        by_name
            .into_iter()
            .map(|((module, name), members)| PyBinding {
                groups: group_overloads(model, &members, method),
                name,
                module,
            })
            .collect::<Vec<_>>()
    };
    (collect(false), collect(true))
}

fn qualified(f: &NativeFunction) -> String {
    let name = format!("{}::{}", f.namespace, f.func.name.name);
    if f.func.name.overload_name.is_empty() {
        name
    } else {
        format!("{name}.{}", f.func.name.overload_name)
    }
}

/// torchgen's `namedtuple_fieldnames`: the field names when every return is named.
fn namedtuple_fieldnames(f: &NativeFunction) -> Vec<String> {
    let returns = &f.func.returns;
    if returns.len() <= 1 || returns.iter().any(|r| r.name.is_none()) {
        return Vec::new();
    }
    returns.iter().filter_map(|r| r.name.clone()).collect()
}

/// `signatures.rs`: the Python signature tables.
fn signatures(model: &NativeFunctions) -> String {
    let (functions, methods) = bindings(model);
    let mut out = header("python");
    out.push_str(SIGNATURES_DOC);
    let table = |out: &mut String, name: &str, doc: &str, list: &[PyBinding]| {
        out.push_str(&format!("/// {doc}\npub static {name}: &[PyName] = &[\n"));
        for b in list {
            let numbers = NUMBERS_AS_TENSORS.contains(&b.name.as_str());
            out.push_str(&format!(
                "    PyName {{ name: {:?}, module: {:?}, numbers_as_tensors: {numbers}, signatures: &[\n",
                b.name, b.module
            ));
            for g in &b.groups {
                let op = qualified(&model.functions[g.base]);
                let out_op = match g.outplace {
                    Some(o) => format!("Some({:?})", qualified(&model.functions[o])),
                    None => "None".to_owned(),
                };
                out.push_str(&format!(
                    "        PySignature {{ signature: {:?}, op: {op:?}, out_op: {out_op} }},\n",
                    g.signature.signature_str(false)
                ));
            }
            out.push_str("    ] },\n");
        }
        out.push_str("];\n\n");
    };
    table(
        &mut out,
        "FUNCTIONS",
        "Module functions, sorted by module, then name.",
        &functions,
    );
    table(
        &mut out,
        "METHODS",
        "`Tensor` methods, sorted by name.",
        &methods,
    );
    let mut return_types: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for b in &functions {
        for g in &b.groups {
            for i in std::iter::once(g.base).chain(g.outplace) {
                let f = &model.functions[i];
                let fields = namedtuple_fieldnames(f);
                if !fields.is_empty() {
                    return_types.entry(cpp_name(f)).or_insert(fields);
                }
            }
        }
    }
    out.push_str(
        "/// Named-tuple return types (`switchyard.return_types.<name>`): name (torchgen's\n\
         /// `cpp.name`, `_out` for out= overloads) and field names.\n\
         pub static RETURN_TYPES: &[(&str, &[&str])] = &[\n",
    );
    for (name, fields) in &return_types {
        let fields: Vec<String> = fields.iter().map(|f| format!("{f:?}")).collect();
        out.push_str(&format!("    ({name:?}, &[{}]),\n", fields.join(", ")));
    }
    out.push_str("];\n");
    out
}

const SIGNATURES_DOC: &str = "\
//! The Python signatures of the operators, as PyTorch's `gen_python_functions` derives them
//! from native_functions.yaml (`docs/python-plan.md` §3.1), for the argument parser.
//!
//! Format: [`FUNCTIONS`] and [`METHODS`] list one [`PyName`] per Python name (the base name,
//! `_` kept for in-place: `add_`), each with its signatures in the order the parser tries them
//! (torchgen's `sort_overloads`). A signature is PythonArgParser's text, exactly as PyTorch
//! spells it (`add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)`):
//! positional parameters, `*`, keyword-only ones, the `out` parameter (one `Tensor`, or
//! `TensorList[N] out` packing several), then for factories and `*_like`/`new_*` the scattered
//! TensorOptions `ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool?
//! pin_memory=False, bool? requires_grad=False`. Types are torchgen's `argument_type_str`
//! (`int64_t`, `double`, `c10::string_view`, `IntArrayRef[N]`, `SymIntArrayRef`,
//! `TensorList`, `ScalarList`, `c10::List<::std::optional<Tensor>>`, `ArrayRef<double>`, `T?`
//! optional); `self` is `input` in functions and absent from methods. `op` is the overload
//! called when `out` is `None` (or absent), `out_op` the one called with `out`.
//!
//! Not generated: the deprecated signatures of PyTorch's `deprecated.yaml` (`add(Tensor input,
//! Scalar alpha, Tensor other)`).

/// One signature: the parser's text and the overloads it calls.
#[derive(Debug)]
pub struct PySignature {
    /// PythonArgParser's signature text.
    pub signature: &'static str,
    /// The qualified overload called without `out` (`aten::add.Tensor`).
    pub op: &'static str,
    /// The qualified out= overload called with `out`, when the signature has one.
    pub out_op: Option<&'static str>,
}

/// One Python name and its signatures, in the order the parser tries them.
#[derive(Debug)]
pub struct PyName {
    /// The Python name (`add`, `add_`, `__and__`).
    pub name: &'static str,
    /// The module of a function (`switchyard`, `switchyard._C._nn`, `switchyard._C._linalg`);
    /// empty for a `Tensor` method.
    pub module: &'static str,
    /// Whether `Tensor` parameters also take Python numbers (PyTorch's
    /// `should_allow_numbers_as_tensors`).
    pub numbers_as_tensors: bool,
    /// The signatures.
    pub signatures: &'static [PySignature],
}

";

// ---------------------------------------------------------------------------------------------
// Type stubs: gen_pyi's shape over the same signatures.
// ---------------------------------------------------------------------------------------------

/// The stub of the extension module: `python/switchyard/_C.pyi`.
pub const STUB_PATH: &str = "python/switchyard/_C.pyi";

/// The header of a generated Python file.
fn python_header() -> String {
    header("python").replace("// ", "# ")
}

/// A schema type as a stub annotation.
fn pyi_type(t: &Type, numbers_as_tensors: bool) -> String {
    match t {
        Type::Base(b) => match b {
            BaseType::Tensor if numbers_as_tensors => "Tensor | Number".to_owned(),
            BaseType::Tensor => "Tensor".to_owned(),
            BaseType::Int | BaseType::SymInt | BaseType::DeviceIndex => "_int".to_owned(),
            BaseType::Float => "_float".to_owned(),
            BaseType::Bool | BaseType::SymBool => "_bool".to_owned(),
            BaseType::Str => "_str".to_owned(),
            BaseType::Scalar => "Number".to_owned(),
            BaseType::ScalarType => "_dtype".to_owned(),
            BaseType::Layout => "_layout".to_owned(),
            BaseType::Device => "_device".to_owned(),
            BaseType::MemoryFormat => "_memory_format".to_owned(),
            BaseType::Generator => "_Generator".to_owned(),
            _ => "Any".to_owned(),
        },
        Type::Optional(elem) => format!("{} | None", pyi_type(elem, numbers_as_tensors)),
        Type::List { elem, size } => match &**elem {
            Type::Base(BaseType::Int | BaseType::SymInt) if size.is_some() => {
                "_int | _size".to_owned()
            }
            Type::Base(BaseType::Int | BaseType::SymInt) => "_size".to_owned(),
            Type::Base(BaseType::Tensor) => "tuple[Tensor, ...] | list[Tensor]".to_owned(),
            Type::Optional(inner) if **inner == Type::Base(BaseType::Tensor) => {
                "tuple[Tensor | None, ...] | list[Tensor | None]".to_owned()
            }
            Type::Base(BaseType::Float) => "Sequence[_float]".to_owned(),
            Type::Base(BaseType::Scalar) => "Sequence[Number]".to_owned(),
            Type::Base(BaseType::Bool) => "tuple[_bool, ...]".to_owned(),
            _ => "Sequence[Any]".to_owned(),
        },
        Type::CustomClass(_) => "Any".to_owned(),
    }
}

/// A parser-format default as a Python expression (`...` when it has none).
fn pyi_default(d: &str) -> String {
    let numeric = !d.is_empty()
        && d.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e'))
        && d.chars().any(|c| c.is_ascii_digit());
    if matches!(d, "None" | "True" | "False") || numeric {
        return d.to_owned();
    }
    if let Some(inner) = d.strip_prefix('{').and_then(|d| d.strip_suffix('}')) {
        let items: Vec<&str> = inner.split(',').map(str::trim).collect();
        return match items.as_slice() {
            [one] => (*one).to_owned(),
            many => format!("({})", many.join(", ")),
        };
    }
    if d.len() >= 2 && d.starts_with('"') && d.ends_with('"') && !d[1..d.len() - 1].contains('"') {
        return d.to_owned();
    }
    "...".to_owned()
}

/// A parameter name that is not a Python keyword (`from` becomes `from_`).
fn pyi_name(name: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    if KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_owned()
    }
}

/// The stub return annotation of an operator.
fn pyi_returns(f: &NativeFunction) -> String {
    let one = |t: &Type| match t {
        Type::Base(BaseType::Tensor) => "Tensor".to_owned(),
        Type::List { elem, .. } if **elem == Type::Base(BaseType::Tensor) => {
            "tuple[Tensor, ...]".to_owned()
        }
        other => match pyi_type(other, false).as_str() {
            "Any" => "Any".to_owned(),
            s => s.to_owned(),
        },
    };
    match f.func.returns.as_slice() {
        [] => "None".to_owned(),
        [r] => one(&r.ty),
        many => format!(
            "tuple[{}]",
            many.iter()
                .map(|r| one(&r.ty))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// One `def` line of a stub (gen_pyi's `signature_str_pyi`).
fn pyi_def(model: &NativeFunctions, b: &PyBinding, g: &PyGroup, numbers: bool) -> String {
    let sig = &g.signature;
    let mut formals: Vec<String> = Vec::new();
    if sig.method {
        formals.push("self".to_owned());
    }
    // A positional parameter without default may not follow one with a default.
    let last_required = sig.input_args.iter().rposition(|a| a.default.is_none());
    for (i, a) in sig.input_args.iter().enumerate() {
        let name = if a.name == "self" && a.type_str == "Tensor" && !sig.method {
            "input".to_owned()
        } else {
            pyi_name(&a.name)
        };
        let ty = pyi_type(&a.ty, numbers);
        match &a.default {
            Some(d) if last_required.is_none_or(|r| i > r) => {
                formals.push(format!("{name}: {ty} = {}", pyi_default(d)));
            }
            _ => formals.push(format!("{name}: {ty}")),
        }
    }
    let mut kwargs: Vec<String> = Vec::new();
    for a in &sig.input_kwargs {
        let ty = pyi_type(&a.ty, numbers);
        let name = pyi_name(&a.name);
        kwargs.push(match &a.default {
            Some(d) => format!("{name}: {ty} = {}", pyi_default(d)),
            None => format!("{name}: {ty}"),
        });
    }
    if let Some(out) = &sig.output {
        kwargs.push(if out.out_count > 1 {
            "out: tuple[Tensor, ...] | list[Tensor] | None = None".to_owned()
        } else {
            format!("{}: Tensor | None = None", pyi_name(&out.name))
        });
    }
    for a in &sig.tensor_options {
        kwargs.push(format!(
            "{}: {} = {}",
            a.name,
            pyi_type(&a.ty, false),
            a.default.as_deref().unwrap_or("None")
        ));
    }
    if !kwargs.is_empty() {
        formals.push("*".to_owned());
        formals.extend(kwargs);
    }
    format!(
        "def {}({}) -> {}: ...",
        b.name,
        formals.join(", "),
        pyi_returns(&model.functions[g.base])
    )
}

/// The `def` lines of one name, `@overload`-decorated when there are several.
fn pyi_name_defs(model: &NativeFunctions, b: &PyBinding, indent: &str) -> String {
    let numbers = NUMBERS_AS_TENSORS.contains(&b.name.as_str());
    let mut defs: Vec<String> = Vec::new();
    for g in &b.groups {
        let def = pyi_def(model, b, g, numbers);
        if !defs.contains(&def) {
            defs.push(def);
        }
    }
    let mut out = String::new();
    let several = defs.len() > 1;
    for def in defs {
        if several {
            out.push_str(&format!("{indent}@overload\n"));
        }
        out.push_str(&format!("{indent}{def}\n"));
    }
    out
}

/// The hand-written part of the module's stubs: the classes and functions of `_C` that are not
/// generated from ops.yaml (`dtype`, `device`, `Generator`, `tensor()`, ...).
const STUB_MODULE: &str = include_str!("python_stub_module.pyi");

/// The hand-written members of `class Tensor`: properties, dunders and the hand-written methods
/// (`crates/python/src/tensor.rs`, `handwritten.rs`, `_tensor.py`, `_interop.py`, ...).
const STUB_TENSOR: &str = include_str!("python_stub_tensor.pyi");

/// `_C.pyi`: the hand-written classes and functions, `class Tensor` with its hand-written
/// members and the generated methods, and the module functions of `switchyard` (those of
/// `switchyard._C._nn` and `._linalg` are not in it yet).
fn stubs(model: &NativeFunctions) -> String {
    let (functions, methods) = bindings(model);
    let mut out = python_header();
    out.push_str(STUB_PRELUDE);
    out.push_str(STUB_MODULE);
    out.push_str("\nclass Tensor:\n");
    out.push_str(STUB_TENSOR);
    for b in &methods {
        out.push_str(&pyi_name_defs(model, b, "    "));
    }
    out.push('\n');
    for b in functions.iter().filter(|b| b.module == "switchyard") {
        out.push_str(&pyi_name_defs(model, b, ""));
    }
    out
}

const STUB_PRELUDE: &str = r#""""Type stubs of ``switchyard._C``, generated from ops.yaml in the shape of PyTorch's gen_pyi:
one ``def`` per Python signature of ``crates/python/src/generated/signatures.rs`` (``@overload``
when a name has several), ``class Tensor`` with the operator methods; the classes, functions
and ``Tensor`` members written by hand come from ``crates/codegen/src/emit/python_stub_*.pyi``.
Private helpers of ``_C`` are typed ``Any`` through the module's ``__getattr__``.
"""

from builtins import bool as _bool
from builtins import float as _float
from builtins import int as _int
from builtins import str as _str
from collections.abc import Sequence
from typing import Any, overload

Number = _int | _float | _bool
_size = Sequence[_int]
_dtype = dtype
_device = device | _str | _int
_layout = layout
_memory_format = memory_format
_Generator = Generator

def __getattr__(name: _str) -> Any: ...

"#;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn packets_try_overloads_in_ops_yaml_order_with_out_last() {
        let model = crate::emit::workspace::parse_bundled_ops_yaml().unwrap();
        let text = overloads(&model);
        // PyTorch: torch.ops.aten.add.overloads() starts Tensor, Scalar, out, Scalar_out.
        assert!(
            text.contains(r#"    ("aten::add", &["Tensor", "Scalar", "out", "Scalar_out"]),"#),
            "{text}"
        );
        assert!(text.contains(r#"    ("aten::sum", &["", "dim_IntList", "IntList_out", "out"]),"#));
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("    (\""))
            .filter_map(|l| l.split('"').next())
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "OVERLOADS must be sorted for binary search");
    }
    /// The signature strings of `name` (module functions or methods), in parser order.
    fn sigs_of(name: &str, method: bool) -> Vec<String> {
        let model = crate::emit::workspace::parse_bundled_ops_yaml().unwrap();
        let (functions, methods) = bindings(&model);
        let list = if method { methods } else { functions };
        let b = list.iter().find(|b| b.name == name).unwrap();
        b.groups
            .iter()
            .map(|g| g.signature.signature_str(false))
            .collect()
    }

    // The expected strings below are PyTorch's own PythonArgParser signatures: the string
    // literals of libtorch_python.so of the reference install (`strings libtorch_python.so`),
    // in the order its "invalid combination of arguments" messages list them
    // (`torch.pow(object(), zzz=object())`). PyTorch's deprecated.yaml signatures
    // (`add(Tensor input, Scalar alpha, Tensor other, *, Tensor out=None)|deprecated`) are not
    // generated.

    #[test]
    fn add_pairs_tensor_with_out_and_skips_add_scalar() {
        assert_eq!(
            sigs_of("add", false),
            ["add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)"]
        );
        assert_eq!(
            sigs_of("add", true),
            ["add(Tensor other, *, Scalar alpha=1)"]
        );
    }

    #[test]
    fn pow_orders_tensor_before_scalar() {
        assert_eq!(
            sigs_of("pow", false),
            [
                "pow(Tensor input, Tensor exponent, *, Tensor out=None)",
                "pow(Scalar self, Tensor exponent, *, Tensor out=None)",
                "pow(Tensor input, Scalar exponent, *, Tensor out=None)",
            ]
        );
        assert_eq!(
            sigs_of("pow", true),
            ["pow(Tensor exponent)", "pow(Scalar exponent)"]
        );
    }

    #[test]
    fn div_keeps_scalar_mode_without_out() {
        assert_eq!(
            sigs_of("div", false),
            [
                "div(Tensor input, Tensor other, *, Tensor out=None)",
                "div(Tensor input, Tensor other, *, c10::string_view? rounding_mode, Tensor out=None)",
                "div(Tensor input, Scalar other, *, c10::string_view? rounding_mode)",
            ]
        );
        assert_eq!(
            sigs_of("div", true),
            [
                "div(Tensor other)",
                "div(Tensor other, *, c10::string_view? rounding_mode)",
                "div(Scalar other, *, c10::string_view? rounding_mode)",
            ]
        );
    }

    #[test]
    fn max_packs_two_outs_into_a_tensor_list() {
        assert_eq!(
            sigs_of("max", false),
            [
                "max(Tensor input, *, Tensor out=None)",
                "max(Tensor input, Tensor other, *, Tensor out=None)",
                "max(Tensor input, int64_t dim, bool keepdim=False, *, TensorList[2] out=None)",
            ]
        );
        // PyTorch's message for `torch.empty(1).max(object())`: (), (Tensor other),
        // (int dim, bool keepdim = False).
        assert_eq!(
            sigs_of("max", true),
            [
                "max()",
                "max(Tensor other)",
                "max(int64_t dim, bool keepdim=False)"
            ]
        );
    }

    #[test]
    fn sum_dim_list_is_optional_sized() {
        assert_eq!(
            sigs_of("sum", false),
            [
                "sum(Tensor input, *, ScalarType? dtype=None)",
                "sum(Tensor input, IntArrayRef[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor out=None)",
            ]
        );
        assert_eq!(
            sigs_of("sum", true),
            [
                "sum(*, ScalarType? dtype=None)",
                "sum(IntArrayRef[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)",
            ]
        );
    }

    #[test]
    fn randint_scatters_tensor_options_after_out() {
        let options = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=False, bool? requires_grad=False";
        assert_eq!(
            sigs_of("randint", false),
            [
                format!(
                    "randint(SymInt high, SymIntArrayRef size, *, Generator? generator, Tensor out=None, {options})"
                ),
                format!("randint(SymInt high, SymIntArrayRef size, *, Tensor out=None, {options})"),
                format!(
                    "randint(SymInt low, SymInt high, SymIntArrayRef size, *, Generator? generator, Tensor out=None, {options})"
                ),
                format!(
                    "randint(SymInt low, SymInt high, SymIntArrayRef size, *, Tensor out=None, {options})"
                ),
            ]
        );
    }

    #[test]
    fn stubs_declare_one_def_per_signature() {
        let model = crate::emit::workspace::parse_bundled_ops_yaml().unwrap();
        let text = stubs(&model);
        assert!(text.starts_with("# @generated"));
        // gen_pyi's shape; `add` takes numbers for its tensors (PyTorch's stub says the same
        // with `Union[Tensor, Number, _complex]`).
        assert!(text.contains(
            "\ndef add(input: Tensor | Number, other: Tensor | Number, *, alpha: Number = 1, out: Tensor | None = None) -> Tensor: ...\n"
        ));
        assert!(text.contains(
            "    @overload\n    def max(self, dim: _int, keepdim: _bool = False) -> tuple[Tensor, Tensor]: ...\n"
        ));
    }

    #[test]
    fn skip_patterns_match_whole_names() {
        assert!(matches_pattern("nonzero(_(out|numpy))?", "nonzero"));
        assert!(matches_pattern("nonzero(_(out|numpy))?", "nonzero_numpy"));
        assert!(!matches_pattern("nonzero(_(out|numpy))?", "nonzero_static"));
        assert!(matches_pattern(".*_backward", "threshold_backward"));
        assert!(!matches_pattern("to", "topk"));
        assert!(matches_pattern(
            "_?sparse_(coo|compressed|csr|csc|bsr|bsc)_tensor.*",
            "sparse_coo_tensor"
        ));
    }
}
