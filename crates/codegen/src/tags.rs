//! Operator tags: PyTorch 2.15's `tags.yaml` names (the default legal set) and a parser for a
//! `tags.yaml` file.

use std::collections::BTreeSet;

use crate::error::YamlError;
use crate::yaml::{self, Value};

/// The tags of PyTorch 2.15's `tags.yaml`, in file order.
pub const PYTORCH_TAGS: [&str; 20] = [
    "inplace_view",
    "pt2_compliant_tag",
    "view_copy",
    "dynamic_output_shape",
    "data_dependent_output",
    "generated",
    "nondeterministic_seeded",
    "nondeterministic_bitwise",
    "needs_exact_strides",
    "needs_contiguous_strides",
    "needs_fixed_stride_order",
    "flexible_layout",
    "core",
    "pointwise",
    "maybe_aliasing_or_mutating",
    "cudagraph_unsafe",
    "reduction",
    "inplace",
    "out",
    "out_variant",
];

/// [`PYTORCH_TAGS`] as a set.
pub fn default_tags() -> BTreeSet<String> {
    PYTORCH_TAGS.iter().map(|t| (*t).to_owned()).collect()
}

/// Parses a `tags.yaml` file (a list of `{tag: name, desc: text}` mappings) into the set of tag
/// names, with torchgen's checks (every tag needs a non-empty description). All problems are
/// returned, each with its line.
pub fn parse_tags_yaml(text: &str, file: &str) -> Result<BTreeSet<String>, Vec<YamlError>> {
    let loaded = yaml::load(text);
    let mut errors: Vec<YamlError> = loaded
        .issues
        .iter()
        .map(|i| YamlError::new(file, i.line, i.message.clone()))
        .collect();
    let mut tags = BTreeSet::new();
    let items = match loaded.root {
        Some(root) => match root.value {
            Value::Seq(items) => items,
            _ => {
                errors.push(YamlError::new(
                    file,
                    Some(root.line),
                    format!("Expected 'es' to be a list, but got {}", root.py_type()),
                ));
                return Err(errors);
            }
        },
        None if errors.is_empty() => {
            errors.push(YamlError::new(
                file,
                None,
                "Expected 'es' to be a list, but got <class 'NoneType'>",
            ));
            return Err(errors);
        }
        None => return Err(errors),
    };
    for item in items {
        let Value::Map(entries) = &item.value else {
            errors.push(YamlError::new(
                file,
                Some(item.line),
                format!("Expected to be dict: {}", item.py_str()),
            ));
            continue;
        };
        let get = |key: &str| {
            entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v)
        };
        let name = get("tag");
        let context = name
            .map(|n| n.py_str())
            .unwrap_or_else(|| "None".to_owned());
        let Some(name) = name else {
            errors.push(YamlError::new(file, Some(item.line), "'tag'").with_func(Some(&context)));
            continue;
        };
        let desc_empty = match get("desc") {
            None => true,
            Some(d) => d.as_str() == Some(""),
        };
        if desc_empty {
            errors.push(
                YamlError::new(
                    file,
                    Some(item.line),
                    format!("Tag '{}' must have a non-empty description", name.py_str()),
                )
                .with_func(Some(&context)),
            );
            continue;
        }
        tags.insert(name.py_str());
    }
    if errors.is_empty() {
        Ok(tags)
    } else {
        Err(errors)
    }
}
