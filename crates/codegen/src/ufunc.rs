//! `ufunc_inner_loop`: the keys, the `name (dtypes)` values, and the consistency rules that
//! torchgen's ufunc generators enforce.

use std::collections::BTreeMap;
use std::fmt;

use switchyard_schema::FunctionSchema;

/// A ufunc loop kind. User-level keys are [`UfuncKey::Generic`] and [`UfuncKey::ScalarOnly`];
/// the others name one instantiation each. The order is torchgen's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UfuncKey {
    /// CUDA functor over all operands.
    CUDAFunctor,
    /// CUDA functor with the first operand a scalar.
    CUDAFunctorOnOther,
    /// CUDA functor with the second operand a scalar.
    CUDAFunctorOnSelf,
    /// CPU scalar loop.
    CPUScalar,
    /// CPU vectorised loop.
    CPUVector,
    /// CUDA functors and the CPU scalar loop.
    ScalarOnly,
    /// CUDA functors and both CPU loops.
    Generic,
}

impl UfuncKey {
    /// Every key, in torchgen's order.
    pub const ALL: [UfuncKey; 7] = [
        UfuncKey::CUDAFunctor,
        UfuncKey::CUDAFunctorOnOther,
        UfuncKey::CUDAFunctorOnSelf,
        UfuncKey::CPUScalar,
        UfuncKey::CPUVector,
        UfuncKey::ScalarOnly,
        UfuncKey::Generic,
    ];

    /// The name as written in yaml.
    pub fn name(self) -> &'static str {
        match self {
            UfuncKey::CUDAFunctor => "CUDAFunctor",
            UfuncKey::CUDAFunctorOnOther => "CUDAFunctorOnOther",
            UfuncKey::CUDAFunctorOnSelf => "CUDAFunctorOnSelf",
            UfuncKey::CPUScalar => "CPUScalar",
            UfuncKey::CPUVector => "CPUVector",
            UfuncKey::ScalarOnly => "ScalarOnly",
            UfuncKey::Generic => "Generic",
        }
    }

    /// Parses a key name (`unknown ufunc key X` otherwise).
    pub fn parse(s: &str) -> Result<UfuncKey, String> {
        UfuncKey::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown ufunc key {s}"))
    }
}

impl fmt::Display for UfuncKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The dtype names torchgen knows, in its order.
pub const SCALAR_TYPES: [&str; 18] = [
    "Byte",
    "Char",
    "Short",
    "Int",
    "Long",
    "Half",
    "Float",
    "Double",
    "ComplexHalf",
    "ComplexFloat",
    "ComplexDouble",
    "Bool",
    "BFloat16",
    "Float8_e5m2",
    "Float8_e5m2fnuz",
    "Float8_e4m3fn",
    "Float8_e4m3fnuz",
    "Float8_e8m0fnu",
];

/// The members of a dtype class (`Integral` excludes `Bool`; `Floating` excludes the
/// low-precision types).
fn dtype_class(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "Integral" => &["Byte", "Char", "Int", "Long", "Short"],
        "Floating" => &["Float", "Double"],
        "Complex" => &["ComplexFloat", "ComplexDouble"],
        "All" => &["Byte", "Char", "Int", "Long", "Short", "Float", "Double"],
        "AllAndComplex" => &[
            "Byte",
            "Char",
            "Int",
            "Long",
            "Short",
            "Float",
            "Double",
            "ComplexFloat",
            "ComplexDouble",
        ],
        "FloatingAndComplex" => &["Float", "Double", "ComplexFloat", "ComplexDouble"],
        _ => return None,
    })
}

/// One `ufunc_inner_loop` value: `<name> (<dtype or class>, ...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UfuncInnerLoop {
    /// The ufunc name (`add` → `ufunc::add`).
    pub name: String,
    /// The dtypes, classes expanded, first occurrence first.
    pub supported_dtypes: Vec<String>,
    /// The key this loop was given under.
    pub ufunc_key: UfuncKey,
}

impl UfuncInnerLoop {
    /// Parses `add (AllAndComplex, BFloat16, Half)` with torchgen's messages.
    pub fn parse(value: &str, ufunc_key: UfuncKey) -> Result<UfuncInnerLoop, String> {
        let Some((name, dtypes)) = value.split_once(' ') else {
            return Err("not enough values to unpack (expected 2, got 1)".to_owned());
        };
        if !dtypes.starts_with('(') {
            return Err(format!(
                "expected '(' at start of supported_dtypes, got: {dtypes}"
            ));
        }
        if !dtypes.ends_with(')') {
            return Err(format!(
                "expected ')' at end of supported_dtypes, got: {dtypes}"
            ));
        }
        let inner = dtypes.get(1..dtypes.len() - 1).unwrap_or("");
        let mut supported_dtypes: Vec<String> = Vec::new();
        for item in inner.split(", ") {
            let members: Vec<&str> = match dtype_class(item) {
                Some(class) => class.to_vec(),
                None if SCALAR_TYPES.contains(&item) => vec![item],
                None => return Err(format!("unknown dtype {item}")),
            };
            for m in members {
                if !supported_dtypes.iter().any(|d| d == m) {
                    supported_dtypes.push(m.to_owned());
                }
            }
        }
        Ok(UfuncInnerLoop {
            name: name.to_owned(),
            supported_dtypes,
            ufunc_key,
        })
    }
}

/// The kernel name torchgen gives the ufunc kernel of an out op for `key` (`ufunc_add_CPU`).
pub(crate) fn schema_kernel_name(func: &FunctionSchema, key: &str) -> Result<String, String> {
    if !func.is_out_fn() {
        return Err("ufunc.kernel_name should only be invoked on out schemas".to_owned());
    }
    Ok(format!("ufunc_{}_{key}", func.name.name))
}

/// The checks torchgen's ufunc generators make on a structured group whose out op has
/// `ufunc_inner_loop` (CPU kernel first, then CUDA functors, as torchgen generates them).
/// `functional` is the group's functional schema (it decides whether the op is binary).
pub(crate) fn check_group_loops(
    loops: &BTreeMap<UfuncKey, UfuncInnerLoop>,
    functional: &FunctionSchema,
) -> Result<(), String> {
    check_cpu_loops(loops)?;
    check_cuda_loops(loops, functional)
}

fn check_cpu_loops(loops: &BTreeMap<UfuncKey, UfuncInnerLoop>) -> Result<(), String> {
    // Reindex the loops by dtype the way the CPU generator does; a dtype that ends up with a
    // vector loop but no scalar loop cannot be generated.
    let mut by_dtype: Vec<(&str, bool, bool)> = Vec::new();
    for k in [UfuncKey::CPUScalar, UfuncKey::CPUVector] {
        let mut sources = Vec::new();
        if loops.contains_key(&k) {
            sources.push(k);
        }
        if k == UfuncKey::CPUScalar && loops.contains_key(&UfuncKey::ScalarOnly) {
            sources.push(UfuncKey::ScalarOnly);
        }
        if loops.contains_key(&UfuncKey::Generic) {
            sources.push(UfuncKey::Generic);
        }
        for source in sources {
            for dtype in loops
                .get(&source)
                .map(|l| l.supported_dtypes.as_slice())
                .unwrap_or(&[])
            {
                let entry = match by_dtype.iter_mut().find(|(d, _, _)| d == dtype) {
                    Some(e) => e,
                    None => {
                        by_dtype.push((dtype, false, false));
                        let last = by_dtype.len() - 1;
                        &mut by_dtype[last]
                    }
                };
                if k == UfuncKey::CPUScalar {
                    entry.1 = true;
                } else {
                    entry.2 = true;
                }
            }
        }
    }
    for (dtype, scalar, vector) in by_dtype {
        if !scalar {
            let keys = if vector {
                "<UfuncKey.CPUVector: 5>"
            } else {
                ""
            };
            return Err(format!("{dtype}, dict_keys([{keys}])"));
        }
    }
    Ok(())
}

fn check_cuda_loops(
    loops: &BTreeMap<UfuncKey, UfuncInnerLoop>,
    functional: &FunctionSchema,
) -> Result<(), String> {
    let tensor_inputs = functional
        .arguments
        .iter()
        .filter(|a| !a.is_out && a.ty.is_tensor_like())
        .count();
    let keys: &[UfuncKey] = if tensor_inputs == 2 {
        &[
            UfuncKey::CUDAFunctorOnSelf,
            UfuncKey::CUDAFunctorOnOther,
            UfuncKey::CUDAFunctor,
        ]
    } else {
        for k in [UfuncKey::CUDAFunctorOnSelf, UfuncKey::CUDAFunctorOnOther] {
            if loops.contains_key(&k) {
                return Err(format!("cannot use {k} on non-binary function"));
            }
        }
        &[UfuncKey::CUDAFunctor]
    };
    for k in keys {
        if loops.contains_key(k) {
            continue;
        }
        let mut name: Option<&str> = None;
        for lk in [UfuncKey::ScalarOnly, UfuncKey::Generic] {
            let Some(l) = loops.get(&lk) else { continue };
            match name {
                None => name = Some(&l.name),
                Some(n) if n != l.name => {
                    return Err("ScalarOnly and Generic must have same ufunc name".to_owned());
                }
                Some(_) => {}
            }
        }
        if name.is_none() {
            return Err("ufunc_name must be non-None".to_owned());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_add_loop() {
        let l = UfuncInnerLoop::parse(
            "add (AllAndComplex, BFloat16, Half, ComplexHalf)",
            UfuncKey::Generic,
        )
        .unwrap();
        assert_eq!(l.name, "add");
        assert_eq!(l.supported_dtypes.len(), 12);
        assert_eq!(
            UfuncInnerLoop::parse("add (Foo)", UfuncKey::Generic),
            Err("unknown dtype Foo".to_owned())
        );
        assert_eq!(
            UfuncInnerLoop::parse("add", UfuncKey::Generic),
            Err("not enough values to unpack (expected 2, got 1)".to_owned())
        );
    }
}
