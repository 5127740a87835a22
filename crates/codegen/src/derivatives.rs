//! The `derivatives.yaml` model (torchgen's `load_derivatives`): one entry per operator
//! schema, with a backward formula per differentiable input, read against the operators of
//! `native_functions.yaml` and validated with torchgen's rules and messages.
//!
//! Formulas are Rust expressions. As in torchgen, a formula names the operator's arguments
//! (`self`, `other`, ...), its outputs (`result`, `result0`, named returns), and `grad` /
//! `grads[i]` / `grad_input_mask`. The names a formula uses decide what the backward node
//! saves; calls that need only part of a tensor are saved as that part
//! (`self.sizes()` saves the sizes, not the tensor):
//!
//! | in a formula | saved as |
//! |---|---|
//! | `x.sizes()`, `x.strides()` | `x_sizes`, `x_strides`: `&[i64]` |
//! | `x.dim()` | `x_dim`: `usize` |
//! | `x.numel()` | `x_numel`: `i64` |
//! | `x.dtype()`, `x.scalar_type()` | `x_scalar_type`: `ScalarType` |
//! | `x.device()` | `x_device`: `Device` |
//! | `TensorGeometry::of(x)` | `x_geometry`: `&TensorGeometry` |
//! | `to_args_sizes(xs)`, `to_args_scalartypes(xs)` | `&[DimVec]`, `&[ScalarType]` |
//!
//! Keys that name no argument are forward-mode formulas (`result: auto_element_wise`); they
//! are validated with torchgen's rules but no forward-mode code is generated from them.

use std::collections::{BTreeMap, BTreeSet};

use switchyard_schema::{BaseType, FunctionSchema, SchemaKind, Type};

use crate::error::YamlError;
use crate::yaml::{self, Node, Value};
use crate::{NativeFunctions, cpp_name};

/// A value a backward node keeps from the forward call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedAttr {
    /// The node's field name (a Rust identifier, e.g. `self_`, `self_sizes`).
    pub name: String,
    /// The argument or output it comes from, by schema name.
    pub source: String,
    /// What is saved.
    pub kind: SavedKind,
}

/// What a [`SavedAttr`] holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SavedKind {
    /// The value itself; its schema type.
    Value(Type),
    /// `x.sizes()`.
    Sizes,
    /// `x.strides()`.
    Strides,
    /// `x.dim()`.
    Dim,
    /// `x.numel()`.
    Numel,
    /// `x.dtype()` / `x.scalar_type()`.
    ScalarType,
    /// `x.device()`.
    Device,
    /// `TensorGeometry::of(x)`.
    Geometry,
    /// `to_args_sizes(xs)`.
    ArgsSizes,
    /// `to_args_scalartypes(xs)`.
    ArgsScalarTypes,
}

/// One formula: the inputs it gives gradients for and the Rust expression, with saved
/// values already substituted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivative {
    /// The rewritten formula.
    pub formula: String,
    /// The formula as written.
    pub original_formula: String,
    /// The inputs it computes (one name, or several for a formula returning a tuple).
    pub var_names: Vec<String>,
    /// Saved argument values.
    pub saved_inputs: Vec<SavedAttr>,
    /// Saved output values.
    pub saved_outputs: Vec<SavedAttr>,
}

/// A forward-mode formula (validated, not generated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForwardDerivative {
    /// The outputs it gives tangents for.
    pub var_names: Vec<String>,
    /// The formula.
    pub formula: String,
}

/// One `derivatives.yaml` entry, resolved against the operators (torchgen's
/// `DifferentiabilityInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DifferentiabilityInfo {
    /// The operator's base name (`add`).
    pub name: String,
    /// The operator the entry names (index into the native functions).
    pub func: usize,
    /// The entry's line.
    pub line: usize,
    /// The backward node's name (`AddBackward0`), when the entry has formulas.
    pub op: Option<String>,
    /// The formulas.
    pub derivatives: Vec<Derivative>,
    /// Forward-mode formulas.
    pub forward_derivatives: Vec<ForwardDerivative>,
    /// The inputs with a formula, in schema order.
    pub args_with_derivatives: Vec<String>,
    /// Inputs declared `non_differentiable`.
    pub non_differentiable_arg_names: Vec<String>,
    /// `output_differentiability`, when given (`[true]` when it is a condition).
    pub output_differentiability: Option<Vec<bool>>,
    /// torchgen's `output_differentiability_conditions`: `output_differentiability` given as
    /// one string, a Rust `bool` expression over the arguments (`_to_copy`'s
    /// `dtype.is_none_or(|d| d.is_floating_point())`), for single-output operators: the output
    /// requires grad only when it holds (and an input requires grad).
    pub output_differentiability_conditions: Option<Vec<String>>,
    /// Saved argument values, deduplicated across formulas.
    pub all_saved_inputs: Vec<SavedAttr>,
    /// Saved output values, deduplicated across formulas.
    pub all_saved_outputs: Vec<SavedAttr>,
}

impl DifferentiabilityInfo {
    /// Whether the entry has formulas (and so a backward node).
    pub fn has_derivatives(&self) -> bool {
        !self.args_with_derivatives.is_empty()
    }

    /// Whether the formulas use `grad` (only the first differentiable output gets history).
    pub fn uses_single_grad(&self) -> bool {
        self.derivatives
            .iter()
            .any(|d| contains_ident(&d.formula, "grad"))
    }
}

/// Whether `ident` occurs in `text` as a whole identifier (torchgen's `IDENT_REGEX`).
pub fn contains_ident(text: &str, ident: &str) -> bool {
    find_ident(text, ident, 0).is_some()
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn find_ident(text: &str, ident: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut start = from;
    while let Some(pos) = text.get(start..)?.find(ident) {
        let at = start + pos;
        let end = at + ident.len();
        let before_ok = at == 0 || !is_ident_char(bytes[at - 1]);
        let after_ok = end >= bytes.len() || !is_ident_char(bytes[end]);
        if before_ok && after_ok {
            return Some(at);
        }
        start = at + 1;
    }
    None
}

/// Replaces every whole-identifier occurrence of `ident`.
pub fn replace_ident(text: &str, ident: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut from = 0;
    while let Some(at) = find_ident(text, ident, from) {
        out.push_str(&text[last..at]);
        out.push_str(with);
        last = at + ident.len();
        from = last;
    }
    out.push_str(&text[last..]);
    out
}

/// Replaces every occurrence of `needle` that does not continue a longer name on its left
/// (`self.sizes()` in `other_self.sizes()` is left alone). Returns whether any was replaced.
fn replace_pattern(text: &str, needle: &str, with: &str) -> (String, bool) {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut found = false;
    let mut last = 0;
    let mut from = 0;
    while let Some(pos) = text.get(from..).and_then(|t| t.find(needle)) {
        let at = from + pos;
        let left_ok = at == 0 || !(is_ident_char(bytes[at - 1]) || bytes[at - 1] == b'.');
        if left_ok {
            out.push_str(&text[last..at]);
            out.push_str(with);
            last = at + needle.len();
            found = true;
        }
        from = at + needle.len();
    }
    out.push_str(&text[last..]);
    (out, found)
}

/// The replacements of `x.method()` and `f(x)` patterns, with what each saves.
const METHOD_REPLACEMENTS: [(&str, &str, SavedKind); 7] = [
    (".sizes()", "_sizes", SavedKind::Sizes),
    (".strides()", "_strides", SavedKind::Strides),
    (".dim()", "_dim", SavedKind::Dim),
    (".numel()", "_numel", SavedKind::Numel),
    (".dtype()", "_scalar_type", SavedKind::ScalarType),
    (".scalar_type()", "_scalar_type", SavedKind::ScalarType),
    (".device()", "_device", SavedKind::Device),
];

const CALL_REPLACEMENTS: [(&str, &str, SavedKind); 3] = [
    ("TensorGeometry::of(", "_geometry", SavedKind::Geometry),
    ("to_args_sizes(", "_args_sizes", SavedKind::ArgsSizes),
    (
        "to_args_scalartypes(",
        "_args_scalartypes",
        SavedKind::ArgsScalarTypes,
    ),
];

/// A Rust-safe local name for a schema name (`self` → `self_`).
pub fn rust_name(name: &str) -> String {
    crate::emit::rust::arg_name(name)
}

/// torchgen's `saved_variables`: rewrites the formula's partial uses of each named value into
/// saved fields, then saves whatever is still used whole.
fn saved_variables(formula: &str, names: &[(String, Type)]) -> (String, Vec<SavedAttr>) {
    let mut formula = formula.to_string();
    let mut saved = Vec::new();
    for (name, ty) in names {
        let local = rust_name(name);
        if ty.is_tensor() {
            for (method, suffix, kind) in &METHOD_REPLACEMENTS {
                let field = format!("{name}{suffix}");
                let (f, found) = replace_pattern(&formula, &format!("{name}{method}"), &field);
                if found {
                    formula = f;
                    saved.push(SavedAttr {
                        name: field,
                        source: name.clone(),
                        kind: kind.clone(),
                    });
                }
            }
        }
        if ty.is_tensor_like() {
            for (call, suffix, kind) in &CALL_REPLACEMENTS {
                let field = format!("{name}{suffix}");
                let (f, found) = replace_pattern(&formula, &format!("{call}{name})"), &field);
                if found {
                    formula = f;
                    saved.push(SavedAttr {
                        name: field,
                        source: name.clone(),
                        kind: kind.clone(),
                    });
                }
            }
        }
        if contains_ident(&formula, name) {
            saved.push(SavedAttr {
                name: local.clone(),
                source: name.clone(),
                kind: SavedKind::Value(ty.clone()),
            });
        }
        if local != *name {
            formula = replace_ident(&formula, name, &local);
        }
    }
    (formula, saved)
}

/// The indices `i` of `grads[i]` a formula uses.
pub fn used_gradient_indices(formula: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = find_ident(formula, "grads", from) {
        let rest = &formula[at + 5..];
        if let Some(inner) = rest.strip_prefix('[')
            && let Some(close) = inner.find(']')
            && let Ok(i) = inner[..close].trim().parse::<usize>()
        {
            out.push(i);
        }
        from = at + 5;
    }
    out
}

/// The names a schema's returns are known by in formulas: their names, or `result` /
/// `result0`, `result1`, ... (torchgen's `cpp.return_names`, `self` becoming `result`).
pub fn return_names(func: &FunctionSchema) -> Vec<String> {
    let n = func.returns.len();
    func.returns
        .iter()
        .enumerate()
        .map(|(i, r)| match &r.name {
            Some(name) if name != "self" => name.clone(),
            _ if n == 1 => "result".to_string(),
            _ => format!("result{i}"),
        })
        .collect()
}

/// The prefix of a node name: `_softmax` → `SoftmaxBackward`, `nll_loss_forward` →
/// `NllLossBackward` (torchgen's `_create_op_prefix`: Python's `str.title()` of each part).
pub fn op_prefix(name: &str) -> String {
    let camel: String = name
        .split('_')
        .map(|part| {
            let mut out = String::new();
            let mut prev_alpha = false;
            for c in part.chars() {
                if c.is_alphabetic() {
                    if prev_alpha {
                        out.extend(c.to_lowercase());
                    } else {
                        out.extend(c.to_uppercase());
                    }
                    prev_alpha = true;
                } else {
                    out.push(c);
                    prev_alpha = false;
                }
            }
            out
        })
        .collect();
    format!("{camel}Backward").replace("ForwardBackward", "Backward")
}

/// The parsed `derivatives.yaml`.
#[derive(Clone, Debug, Default)]
pub struct Derivatives {
    /// Entries in file order, then the ones derived for `<view>_copy` operators.
    pub infos: Vec<DifferentiabilityInfo>,
}

struct Ctx<'a> {
    file: &'a str,
    nf: &'a NativeFunctions,
    by_schema: BTreeMap<String, usize>,
    errors: Vec<YamlError>,
    op_counter: BTreeMap<String, usize>,
}

/// Parses and validates `derivatives.yaml` against the operators of `nf`, reporting every
/// problem with its line.
pub fn parse_derivatives(
    text: &str,
    file: &str,
    nf: &NativeFunctions,
) -> Result<Derivatives, Vec<YamlError>> {
    let loaded = yaml::load(text);
    let mut ctx = Ctx {
        file,
        nf,
        by_schema: nf
            .functions
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.is_generated() || f.func.kind() != SchemaKind::Out)
            .map(|(i, f)| (f.func.to_string(), i))
            .collect(),
        errors: loaded
            .issues
            .iter()
            .map(|i| YamlError::new(file, i.line, i.message.clone()))
            .collect(),
        op_counter: BTreeMap::new(),
    };
    let items = match loaded.root {
        Some(Node {
            value: Value::Seq(items),
            ..
        }) => items,
        Some(root) => {
            ctx.errors.push(YamlError::new(
                file,
                Some(root.line),
                "derivatives.yaml must be a list of entries".to_string(),
            ));
            return Err(ctx.errors);
        }
        None => Vec::new(),
    };
    let mut infos = Vec::new();
    let mut seen: BTreeMap<usize, usize> = BTreeMap::new();
    for item in &items {
        if let Some(info) = ctx.entry(item) {
            if let Some(prev) = seen.insert(info.func, info.line) {
                ctx.errors.push(YamlError::new(
                    file,
                    Some(info.line),
                    format!(
                        "duplicate derivatives.yaml entry for {} (first at line {prev})",
                        nf.functions[info.func].func
                    ),
                ));
                continue;
            }
            infos.push(info);
        }
    }
    let view_copies = view_copy_infos(&infos, nf);
    infos.extend(view_copies);
    if ctx.errors.is_empty() {
        Ok(Derivatives { infos })
    } else {
        Err(ctx.errors)
    }
}

/// `<view>_copy` operators share their view's formulas (torchgen's
/// `add_view_copy_derivatives`); the node is named `<ViewNode>_copy`.
fn view_copy_infos(
    infos: &[DifferentiabilityInfo],
    nf: &NativeFunctions,
) -> Vec<DifferentiabilityInfo> {
    let mut out = Vec::new();
    for info in infos {
        let Some(group) = nf.view_group_of(info.func) else {
            continue;
        };
        if group.view != info.func {
            continue;
        }
        let Some(copy) = group.view_copy else {
            continue;
        };
        let mut c = info.clone();
        c.func = copy;
        c.name = nf.functions[copy].func.name.name.base.clone();
        c.op = info.op.as_ref().map(|o| format!("{o}_copy"));
        out.push(c);
    }
    out
}

impl Ctx<'_> {
    fn err(&mut self, line: usize, message: String) {
        self.errors
            .push(YamlError::new(self.file, Some(line), message));
    }

    fn entry(&mut self, item: &Node) -> Option<DifferentiabilityInfo> {
        let Value::Map(pairs) = &item.value else {
            self.err(
                item.line,
                format!(
                    "derivatives.yaml entries must be mappings, got {}",
                    item.py_str()
                ),
            );
            return None;
        };
        let line = item.line;
        let mut spec = None;
        let mut output_differentiability = None;
        let mut output_differentiability_conditions = None;
        let mut formulas: Vec<(String, String, usize)> = Vec::new();
        for (k, v) in pairs {
            let Some(key) = k.as_str() else {
                self.err(
                    k.line,
                    format!("derivatives.yaml keys must be strings, got {}", k.py_str()),
                );
                continue;
            };
            match key {
                "name" => spec = v.as_str().map(str::to_owned),
                "output_differentiability" => {
                    let (od, conditions) = self.output_differentiability(v, spec.as_deref())?;
                    output_differentiability = Some(od);
                    output_differentiability_conditions = conditions;
                }
                "dispatch" => {
                    self.err(v.line, "derivatives.yaml: per-dispatch-key formulas (`dispatch:`) are not supported".to_string());
                }
                _ => match &v.value {
                    Value::Str(s) => formulas.push((key.to_string(), s.clone(), v.line)),
                    _ => formulas.push((key.to_string(), v.py_str(), v.line)),
                },
            }
        }
        let Some(specification) = spec else {
            self.err(line, "derivatives.yaml entry has no 'name'".to_string());
            return None;
        };
        let defn_name = specification
            .split('(')
            .next()
            .unwrap_or_default()
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string();
        let Some(&schema_idx) = self.by_schema.get(&specification) else {
            let avail: Vec<String> = self
                .nf
                .functions
                .iter()
                .filter(|f| cpp_name(&f.func) == defn_name)
                .map(|f| f.func.to_string())
                .collect();
            self.err(
                line,
                format!(
                    "could not find ATen function for schema: {specification} .  Available signatures:\n{}",
                    avail.join("\n")
                ),
            );
            return None;
        };
        let func = &self.nf.functions[schema_idx].func;
        if func.arguments.iter().any(|a| a.name == "grad_input_mask") {
            self.err(line, format!("Schema for {defn_name} has an argument named grad_input_mask, but this name would be shadowed by our codegen. Please use a different name in native_functions.yaml."));
            return None;
        }
        if func.arguments.iter().any(|a| a.name == "result") {
            self.err(line, format!("Schema for {defn_name} has an argument named result, but this is only allowed for outputs.Please use a different name in native_functions.yaml."));
            return None;
        }
        let mut info = self.set_up(
            defn_name,
            schema_idx,
            line,
            formulas,
            output_differentiability,
        )?;
        info.output_differentiability_conditions = output_differentiability_conditions;
        Some(info)
    }

    /// The booleans of `output_differentiability`, or torchgen's single condition (a string,
    /// which stands for `[True]` plus the condition).
    fn output_differentiability(
        &mut self,
        v: &Node,
        spec: Option<&str>,
    ) -> Option<(Vec<bool>, Option<Vec<String>>)> {
        let Value::Seq(items) = &v.value else {
            self.err(
                v.line,
                format!(
                    "output_differentiability must be a list of booleans, got {}",
                    v.py_str()
                ),
            );
            return None;
        };
        let mut out = Vec::new();
        let mut conditions = Vec::new();
        for i in items {
            match &i.value {
                Value::Bool(b) => out.push(*b),
                Value::Str(c) => conditions.push(c.clone()),
                _ => {
                    self.err(
                        i.line,
                        format!(
                            "output_differentiability must be a list of booleans or conditions (strings), got {}",
                            i.py_str()
                        ),
                    );
                    return None;
                }
            }
        }
        if conditions.is_empty() {
            return Some((out, None));
        }
        if items.len() != 1 {
            self.err(v.line, format!(
                "Not supported: for {},output_differentiability must either be List[bool] or a List[str] where each str is a condition. In the case where it is a condition, we only support single-output functions. Please file us an issue. ",
                spec.unwrap_or_default()
            ));
            return None;
        }
        Some((vec![true], Some(conditions)))
    }

    fn set_up(
        &mut self,
        defn_name: String,
        func_idx: usize,
        line: usize,
        mut formulas: Vec<(String, String, usize)>,
        output_differentiability: Option<Vec<bool>>,
    ) -> Option<DifferentiabilityInfo> {
        let f = self.nf.functions[func_idx].func.clone();
        let all_arg_names: Vec<String> = f.arguments.iter().map(|a| a.name.clone()).collect();
        let ret_names = return_names(&f);
        if let Some(od) = &output_differentiability
            && od.len() > f.returns.len()
        {
            self.err(line, format!(
                "output_differentiability for {defn_name} has {} entries but the operator has {} outputs",
                od.len(),
                f.returns.len()
            ));
            return None;
        }
        let mut derivatives = Vec::new();
        let mut forward = Vec::new();
        let mut non_differentiable: Vec<String> = Vec::new();
        let mut with_derivatives: BTreeSet<String> = BTreeSet::new();
        // torchgen processes the keys in sorted order.
        formulas.sort_by(|a, b| a.0.cmp(&b.0));
        let arg_types: Vec<(String, Type)> = f
            .arguments
            .iter()
            .map(|a| (a.name.clone(), a.ty.clone()))
            .collect();
        let ret_types: Vec<(String, Type)> = ret_names
            .iter()
            .cloned()
            .zip(f.returns.iter().map(|r| r.ty.clone()))
            .collect();
        for (raw_names, formula, fline) in formulas {
            let names: Vec<String> = raw_names.split(',').map(|s| s.trim().to_string()).collect();
            let is_forward = names.first().is_some_and(|n| !all_arg_names.contains(n));
            if is_forward {
                forward.push(ForwardDerivative {
                    var_names: names,
                    formula,
                });
                continue;
            }
            if let Some(bad) = names.iter().find(|n| !all_arg_names.contains(n)) {
                self.err(
                    fline,
                    format!("Missing arguments for derivatives: {{'{bad}'}} in {defn_name}"),
                );
                return None;
            }
            if formula.trim().eq_ignore_ascii_case("non_differentiable") {
                non_differentiable.extend(names);
                continue;
            }
            for n in &names {
                let ty = &arg_types
                    .iter()
                    .find(|(a, _)| a == n)
                    .map(|(_, t)| t.clone());
                if !ty.as_ref().is_some_and(Type::is_tensor_like) {
                    self.err(
                        fline,
                        format!("Missing arguments for derivatives: {{'{n}'}} in {defn_name}"),
                    );
                    return None;
                }
            }
            let (rewritten, saved_inputs) = saved_variables(&formula, &arg_types);
            let (rewritten, saved_outputs) = saved_variables(&rewritten, &ret_types);
            for i in used_gradient_indices(&rewritten) {
                if i >= f.returns.len() {
                    self.err(fline, format!(
                        "Out of bounds grads access: derivative formula for {} used grads[{i}], but the forward only returns {} outputs.",
                        cpp_name(&f),
                        f.returns.len()
                    ));
                    return None;
                }
            }
            with_derivatives.extend(names.iter().cloned());
            derivatives.push(Derivative {
                formula: rewritten,
                original_formula: formula,
                var_names: names,
                saved_inputs,
                saved_outputs,
            });
        }
        let overlap: Vec<&String> = with_derivatives
            .iter()
            .filter(|n| non_differentiable.contains(n))
            .collect();
        if !overlap.is_empty() {
            self.err(line, format!(
                "derivatives definition for {defn_name} have overlapped non_differentiable and differentiable variables: {overlap:?}"
            ));
            return None;
        }
        self.check_forward(&defn_name, &forward, &with_derivatives, &derivatives, line)?;
        self.check_grad_usage(&defn_name, &derivatives, line)?;
        // A tensor input given neither a formula nor `non_differentiable` is accepted, as
        // torchgen accepts it: the operator's Autograd kernel refuses it at the call when it
        // requires grad (`check_no_requires_grad`, emitted by `emit::autograd`).
        let args_with_derivatives: Vec<String> = f
            .arguments
            .iter()
            .filter(|a| with_derivatives.contains(&a.name))
            .map(|a| a.name.clone())
            .collect();
        let op = if args_with_derivatives.is_empty() {
            None
        } else {
            let prefix = op_prefix(&defn_name);
            let n = self.op_counter.entry(prefix.clone()).or_default();
            let name = format!("{prefix}{n}");
            *n += 1;
            Some(name)
        };
        Some(DifferentiabilityInfo {
            name: defn_name,
            func: func_idx,
            line,
            op,
            all_saved_inputs: dedup(derivatives.iter().flat_map(|d| d.saved_inputs.clone())),
            all_saved_outputs: dedup(derivatives.iter().flat_map(|d| d.saved_outputs.clone())),
            derivatives,
            forward_derivatives: forward,
            args_with_derivatives,
            non_differentiable_arg_names: non_differentiable,
            output_differentiability,
            output_differentiability_conditions: None,
        })
    }

    fn check_forward(
        &mut self,
        defn_name: &str,
        forward: &[ForwardDerivative],
        with_derivatives: &BTreeSet<String>,
        derivatives: &[Derivative],
        line: usize,
    ) -> Option<()> {
        for fw in forward {
            match fw.formula.trim() {
                "auto_element_wise" => {
                    if with_derivatives.len() != 1 || forward.len() > 1 || fw.var_names.len() > 1 {
                        self.err(line, format!("Derivative definition of {defn_name} in derivatives.yaml defines the forward definition of gradient as element_wise but this only works for functions with a single differentiable input and a single differentiable output."));
                        return None;
                    }
                    if derivatives.len() != 1 {
                        self.err(line, format!("Derivative definition of {defn_name} in derivatives.yaml defines the forward definition of gradient as element_wise but it does not defines the gradient formula for its argument which is required."));
                        return None;
                    }
                }
                "auto_linear" if forward.len() > 1 || fw.var_names.len() > 1 => {
                    self.err(line, format!("Derivative definition of {defn_name} in derivatives.yaml defines the forward definition of gradient as linear but this only works for functions with a single differentiable output."));
                    return None;
                }
                _ => {}
            }
        }
        Some(())
    }

    fn check_grad_usage(
        &mut self,
        defn_name: &str,
        derivatives: &[Derivative],
        line: usize,
    ) -> Option<()> {
        let mut uses_grad = false;
        let mut num_grads_uses = 0;
        let mut indices = Vec::new();
        for d in derivatives {
            uses_grad |= contains_ident(&d.formula, "grad");
            let mut from = 0;
            while let Some(at) = find_ident(&d.formula, "grads", from) {
                num_grads_uses += 1;
                from = at + 5;
            }
            indices.extend(used_gradient_indices(&d.formula));
        }
        let only_indexed = num_grads_uses == indices.len();
        if uses_grad && num_grads_uses > 0 {
            self.err(line, format!("Derivative definition of {defn_name} in derivatives.yaml illegally mixes use of 'grad' and 'grads'. Consider replacing occurrences of 'grad' with 'grads[0]'"));
            return None;
        }
        if only_indexed && !indices.is_empty() && indices.iter().all(|&i| i == 0) {
            self.err(line, format!("Derivative definition of {defn_name} in derivatives.yaml solely refers to 'grads[0]'.  If the first output is indeed the only differentiable output, replace 'grads[0]' with 'grad'; otherwise, there is a likely error in your derivatives declaration."));
            return None;
        }
        Some(())
    }
}

/// Whether an argument type can carry gradients (tensors and lists of them).
pub fn differentiable_type(ty: &Type) -> bool {
    ty.is_tensor_like()
}

fn dedup(items: impl Iterator<Item = SavedAttr>) -> Vec<SavedAttr> {
    let mut seen = BTreeSet::new();
    items.filter(|s| seen.insert(s.name.clone())).collect()
}

/// Whether a schema type is a plain integer list (for saved-field types).
pub fn is_int_list(ty: &Type) -> bool {
    matches!(ty, Type::List { elem, .. } if matches!(**elem, Type::Base(BaseType::Int | BaseType::SymInt)))
}
