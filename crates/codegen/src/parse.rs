//! The whole pipeline: load, parse each entry, cross-entry checks, autogen, grouping and view
//! grouping, collecting every problem on the way.
//!
//! torchgen stops at the first error. Here each entry is validated on its own, the later phases
//! run on the entries that parsed, and all problems come back sorted by line. A later phase
//! stays quiet about whatever touches a broken entry (a delegate pointing at it, its signature
//! family), since what it would say is a consequence of the error already reported.

use std::collections::HashSet;

use switchyard_core::DispatchKey;
use switchyard_schema::{FunctionSchema, OperatorName};

use crate::autogen;
use crate::entry::{self, EntryError};
use crate::error::YamlError;
use crate::group;
use crate::model::NativeFunction;
use crate::native_functions::{NativeFunctions, ParseOptions};
use crate::pyrepr::dict_repr;
use crate::validate::{self, FailedEntries};
use crate::view;
use crate::yaml::{self, Node, Value};

/// Parses a `native_functions.yaml` text: every entry, torchgen's checks, autogen (unless
/// `options.skip_native_fns_gen`), grouping and view grouping.
///
/// `file` is only used in messages. On failure, every problem found is returned, in file order.
pub fn parse_native_functions(
    text: &str,
    file: &str,
    options: &ParseOptions,
) -> Result<NativeFunctions, Vec<YamlError>> {
    let mut run = Run {
        file,
        errors: Vec::new(),
        contexts: Vec::new(),
    };
    let loaded = yaml::load(text);
    for issue in &loaded.issues {
        run.errors.push(
            YamlError::new(file, issue.line, issue.message.clone()).with_note(issue.note.clone()),
        );
    }
    let items = match loaded.root {
        Some(Node {
            value: Value::Seq(items),
            ..
        }) => items,
        Some(root) => {
            run.errors.push(YamlError::new(
                file,
                Some(root.line),
                format!("Expected 'es' to be a list, but got {}", root.py_type()),
            ));
            return Err(run.finish());
        }
        None => {
            if run.errors.is_empty() {
                run.errors.push(YamlError::new(
                    file,
                    None,
                    "Expected 'es' to be a list, but got <class 'NoneType'>",
                ));
            }
            return Err(run.finish());
        }
    };

    let mut functions: Vec<NativeFunction> = Vec::new();
    let mut failed = FailedEntries::default();
    let mut kernels: HashSet<(DispatchKey, OperatorName)> = HashSet::new();
    // An entry holding a repeated key is ambiguous: only the repetition is reported for it.
    let duplicate_lines: Vec<usize> = loaded.issues.iter().filter_map(|i| i.line).collect();
    let starts: Vec<usize> = items.iter().map(|item| item.line).collect();
    for (n, item) in items.into_iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(usize::MAX);
        let ambiguous = duplicate_lines.iter().any(|l| (item.line..end).contains(l));
        run.entry(
            item,
            ambiguous,
            options,
            &mut functions,
            &mut failed,
            &mut kernels,
        );
    }
    let num_yaml_functions = functions.len();

    // Signature families whose grouping checks would only restate an error already reported.
    let mut poisoned: HashSet<FunctionSchema> = failed.signatures.clone();
    let mut poisoned_views: HashSet<FunctionSchema> = failed.view_signatures.clone();
    let mut poison = |f: &NativeFunction, poisoned: &mut HashSet<FunctionSchema>| {
        poisoned.insert(f.func.signature(false, false, false));
        poisoned_views.insert(f.func.signature(false, true, false));
    };

    for f in &functions {
        if failed.touches(f) {
            poison(f, &mut poisoned);
        }
    }

    let cross = validate::cross_entry_checks(&functions, &failed);
    for (i, _) in &cross {
        poison(&functions[*i], &mut poisoned);
    }
    run.report(&functions, cross);

    let (buckets, duplicates) = group::pre_group(&functions, &poisoned);
    for (i, _) in &duplicates {
        poison(&functions[*i], &mut poisoned);
    }
    run.report(&functions, duplicates);

    if !options.skip_native_fns_gen {
        let (sources, generation) =
            autogen::add_generated_native_functions(&mut functions, &buckets);
        run.report(&functions, generation);
        for (i, source) in (num_yaml_functions..).zip(sources) {
            // Messages about a generated function show its source entry.
            let context = run.contexts.get(source).cloned().unwrap_or_default();
            run.contexts.push(context);
            if let Some(e) = duplicate_kernel(&mut kernels, &functions[i]) {
                run.report(&functions, vec![(i, e)]);
            }
        }
    }

    // Duplicates were reported above; regrouping would only find them again.
    let (final_buckets, _) = group::pre_group(&functions, &poisoned);
    let (grouped, group_errors) = group::group(&functions, &final_buckets);
    run.report(&functions, group_errors);

    let (view_grouped, view_errors) = view::group_views(&functions, &poisoned_views);
    run.report(&functions, view_errors);

    if run.errors.is_empty() {
        Ok(NativeFunctions::new(
            file,
            functions,
            num_yaml_functions,
            grouped,
            view_grouped,
        ))
    } else {
        Err(run.finish())
    }
}

struct Run<'f> {
    file: &'f str,
    errors: Vec<YamlError>,
    /// The `func:` text of each function's entry, by function index.
    contexts: Vec<String>,
}

impl Run<'_> {
    fn entry(
        &mut self,
        item: Node,
        ambiguous: bool,
        options: &ParseOptions,
        functions: &mut Vec<NativeFunction>,
        failed: &mut FailedEntries,
        kernels: &mut HashSet<(DispatchKey, OperatorName)>,
    ) {
        let line = item.line;
        let Value::Map(entries) = item.value else {
            self.errors.push(YamlError::new(
                self.file,
                Some(line),
                format!("Expected to be dict: {}", item.py_str()),
            ));
            return;
        };
        let func = entries
            .iter()
            .find(|(k, _)| k.as_str() == Some("func"))
            .map(|(_, v)| v)
            .filter(|v| v.value != Value::Null);
        let Some(func) = func else {
            self.errors.push(YamlError::new(
                self.file,
                Some(line),
                format!("Missed 'func' in {}", dict_repr(&entries, Some(line))),
            ));
            return;
        };
        let context = func.py_str();
        if ambiguous {
            match func
                .as_str()
                .map(|text| (text, entry::parse_func_text(text)))
            {
                Some((_, Ok(schema))) => failed.record(&schema),
                Some((text, Err(_))) => failed.record_unparsed(text),
                None => {}
            }
            return;
        }
        let parsed = entry::parse_entry(entries, line, options);
        for e in &parsed.errors {
            self.push_entry_error(line, &context, e.clone());
        }
        match parsed.function {
            Some(f) => {
                if let Some(e) = duplicate_kernel(kernels, &f) {
                    self.push_entry_error(line, &context, e.into());
                    failed.record(&f.func);
                } else {
                    functions.push(f);
                    self.contexts.push(context);
                }
            }
            None => match &parsed.schema {
                Some(schema) => failed.record(schema),
                None => failed.record_unparsed(&context),
            },
        }
    }

    fn push_entry_error(&mut self, line: usize, context: &str, e: EntryError) {
        self.errors.push(
            YamlError::new(self.file, Some(line), e.message)
                .with_func(Some(context))
                .with_note(e.note),
        );
    }

    fn report(&mut self, functions: &[NativeFunction], errors: Vec<(usize, String)>) {
        for (i, message) in errors {
            let context = self.contexts.get(i).map(String::as_str);
            self.errors.push(
                YamlError::new(self.file, functions.get(i).map(|f| f.line), message)
                    .with_func(context),
            );
        }
    }

    fn finish(mut self) -> Vec<YamlError> {
        // Stable, so problems on one line keep the order the phases found them in.
        self.errors.sort_by_key(|e| e.line);
        self.errors
    }
}

/// torchgen indexes kernels by (dispatch key, operator name); a second kernel for the same pair
/// means the operator is defined twice.
fn duplicate_kernel(
    kernels: &mut HashSet<(DispatchKey, OperatorName)>,
    f: &NativeFunction,
) -> Option<String> {
    for (key, _) in &f.dispatch {
        if kernels.contains(&(*key, f.func.name.clone())) {
            return Some(format!(
                "duplicate operator {} for dispatch key {}",
                f.func.name,
                key.name()
            ));
        }
    }
    for (key, _) in &f.dispatch {
        kernels.insert((*key, f.func.name.clone()));
    }
    None
}
