//! Checks across entries (§2.6): structured delegates exist and are structured, argument names
//! are not Python keywords, and `inplace_view` ops follow the naming rules.

use std::collections::{HashMap, HashSet};

use switchyard_schema::{BaseOperatorName, FunctionSchema, OperatorName};

use crate::model::NativeFunction;

/// Python 3's reserved words (`keyword.kwlist`).
const PYTHON_KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Operators that predate the keyword check and keep their argument names.
const KEYWORD_EXCLUSIONS: [(&str, &str); 3] = [
    ("_has_compatible_shallow_copy_type", "from"),
    ("random_.from", "from"),
    ("uniform_", "from"),
];

/// What is known about entries that failed to parse, so that checks do not blame their
/// neighbours for them (a delegate pointing at a broken entry is not "missing").
#[derive(Default)]
pub(crate) struct FailedEntries {
    pub(crate) names: HashSet<OperatorName>,
    pub(crate) base_names: HashSet<BaseOperatorName>,
    pub(crate) signatures: HashSet<FunctionSchema>,
    pub(crate) view_signatures: HashSet<FunctionSchema>,
    /// Base names of entries whose schema did not parse: their signature is unknown, so every
    /// family with that base name is suspect.
    pub(crate) unparsed_bases: HashSet<String>,
}

impl FailedEntries {
    pub(crate) fn record(&mut self, schema: &FunctionSchema) {
        self.names.insert(schema.name.clone());
        self.base_names.insert(schema.name.name.clone());
        self.signatures
            .insert(schema.signature(false, false, false));
        self.view_signatures
            .insert(schema.signature(false, true, false));
    }

    /// Records an entry whose schema did not parse, by the operator name in front of its `(`,
    /// when that much can be read.
    pub(crate) fn record_unparsed(&mut self, func: &str) {
        let name = func.split('(').next().unwrap_or(func);
        let name = name.rsplit("::").next().unwrap_or(name);
        if let Ok(op) = OperatorName::parse(name) {
            self.unparsed_bases.insert(op.name.base.clone());
            self.base_names.insert(op.name.clone());
            self.names.insert(op);
        }
    }

    /// Whether `f`'s signature family touches a failed entry.
    pub(crate) fn touches(&self, f: &crate::model::NativeFunction) -> bool {
        self.unparsed_bases.contains(f.root_name())
    }
}

/// The cross-entry problems, as (function index, message), in function order.
pub(crate) fn cross_entry_checks(
    functions: &[NativeFunction],
    failed: &FailedEntries,
) -> Vec<(usize, String)> {
    let mut by_name: HashMap<&OperatorName, &NativeFunction> = HashMap::new();
    let mut base_names: HashSet<&BaseOperatorName> = HashSet::new();
    for f in functions {
        by_name.insert(&f.func.name, f);
        base_names.insert(&f.func.name.name);
    }
    let mut errors = Vec::new();
    for (i, f) in functions.iter().enumerate() {
        let name = &f.func.name;
        if let Some(delegate) = &f.structured_delegate {
            match by_name.get(delegate) {
                None if failed.names.contains(delegate) => {}
                None => errors.push((
                    i,
                    format!(
                        "{name} is marked as a structured_delegate pointing to {delegate}, but {delegate} is missing."
                    ),
                )),
                Some(target) if !target.structured => errors.push((
                    i,
                    format!(
                        "{name} is marked as a structured_delegate pointing to {delegate}, but {delegate} is not marked as structured. Consider adding 'structured=True' to the delegated operator"
                    ),
                )),
                Some(_) => {}
            }
        }

        let full = name.to_string();
        for arg in &f.func.arguments {
            if PYTHON_KEYWORDS.contains(&arg.name.as_str())
                && !KEYWORD_EXCLUSIONS.contains(&(full.as_str(), arg.name.as_str()))
            {
                errors.push((
                    i,
                    format!(
                        "Argument name '{}' in function '{full}' is a reserved Python keyword.",
                        arg.name
                    ),
                ));
                break;
            }
        }

        // resize_ and set_ are in-place views without a view counterpart; functionalization
        // handles them specially.
        if f.has_tag("inplace_view")
            && full != "resize_"
            && full != "resize_as_"
            && name.name.to_string() != "set_"
        {
            let base = &name.name;
            if !base.inplace {
                errors.push((
                    i,
                    format!(
                        "{full} is marked with tag: inplace_view, but it doesn't follow the naming convention for inplace ops - the codegen expects the base name to have a trailing underscore."
                    ),
                ));
                continue;
            }
            let out_of_place = BaseOperatorName {
                base: base.base.clone(),
                inplace: false,
                dunder_method: base.dunder_method,
                functional_overload: false,
            };
            if !base_names.contains(&out_of_place) && !failed.base_names.contains(&out_of_place) {
                errors.push((
                    i,
                    format!(
                        "{full} is marked with tag: inplace_view. The codegen expects there to be a corresponding out-of-place view op with the name '{base}' and matching schema, but it didn't find one."
                    ),
                ));
            }
        }
    }
    errors
}
