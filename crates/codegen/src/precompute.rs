//! `precomputed`: values a structured kernel's `meta()` computes and hands to `impl()`, either
//! replacing a kernel argument (`dim -> int dim`) or added to them (a last line without `->`).

use switchyard_schema::{Argument, FunctionSchema};

use crate::pyrepr::str_list_repr;
use crate::yaml::Node;

/// The parsed `precomputed` list of a structured out op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Precompute {
    /// Kernel argument name → the declarations that replace it, in yaml order.
    pub replace: Vec<(String, Vec<Argument>)>,
    /// Declarations added without replacing anything (the optional last line).
    pub add: Vec<Argument>,
}

impl Precompute {
    /// The replacement lines as they must have been written (`dim -> int dim, int valid`).
    pub fn to_list(&self) -> Vec<String> {
        self.replace
            .iter()
            .map(|(param, args)| {
                let decls: Vec<String> = args.iter().map(ToString::to_string).collect();
                format!("{param} -> {}", decls.join(", "))
            })
            .collect()
    }

    /// Parses the yaml list with torchgen's checks and messages.
    pub(crate) fn parse(src: &Node) -> Result<Precompute, String> {
        let crate::yaml::Value::Seq(items) = &src.value else {
            return Err(format!("precomputed must be a list, got {}", src.py_type()));
        };
        let mut lines: Vec<&str> = Vec::with_capacity(items.len());
        for item in items {
            match item.as_str() {
                Some(s) => lines.push(s),
                None => {
                    return Err(format!(
                        "precomputed item must be a str, got {}",
                        item.py_type()
                    ));
                }
            }
        }
        let mut add = Vec::new();
        if let Some(last) = lines.last()
            && !last.contains(" -> ")
        {
            add = last
                .split(',')
                .map(|decl| parse_decl(decl.trim()))
                .collect::<Result<_, _>>()?;
            lines.pop();
        }
        let mut replace: Vec<(String, Vec<Argument>)> = Vec::new();
        for line in &lines {
            let Some((param, decls)) = line.split_once(" -> ") else {
                return Err(format!(
                    "precomputed parameters without replacement are allowed only in the last line, got: {line}"
                ));
            };
            if decls.contains(" -> ") {
                return Err("too many values to unpack (expected 2)".to_owned());
            }
            if param.contains(' ') {
                return Err(format!(
                    "illegal kernel param name '{param}' in precomputed parameters"
                ));
            }
            let args = decls
                .split(',')
                .map(|decl| parse_decl(decl.trim()))
                .collect::<Result<Vec<_>, _>>()?;
            // A repeated parameter replaces the earlier line in place, as a Python dict does.
            match replace.iter_mut().find(|(p, _)| p == param) {
                Some(slot) => slot.1 = args,
                None => replace.push((param.to_owned(), args)),
            }
        }
        let r = Precompute { replace, add };
        // Upper-case names would collide with the template parameters generated for them.
        for a in r
            .add
            .iter()
            .chain(r.replace.iter().flat_map(|(_, args)| args))
        {
            if a.name.to_uppercase() == a.name {
                return Err(format!(
                    "precomputed argument name must not be all uppercase: {}",
                    a.name
                ));
            }
        }
        let printed = r.to_list();
        if printed.iter().map(String::as_str).ne(lines.iter().copied()) {
            return Err(format!(
                "r.to_list() != src: {} != {}",
                str_list_repr(printed.iter().map(String::as_str)),
                str_list_repr(lines.iter().copied())
            ));
        }
        Ok(r)
    }
}

/// Parses one `Type name` declaration with the schema parser (as the only argument of a
/// throw-away schema).
fn parse_decl(decl: &str) -> Result<Argument, String> {
    let schema =
        FunctionSchema::parse(&format!("_precomputed({decl}) -> ()")).map_err(|e| e.message)?;
    match <[Argument; 1]>::try_from(schema.arguments) {
        Ok([arg]) => Ok(arg),
        Err(_) => Err(format!("illegal argument '{decl}'")),
    }
}
