//! The printer: torchgen's canonical spelling, which is also the only spelling the parser
//! accepts.

use std::fmt;

use crate::model::{
    Annotation, Argument, BaseOperatorName, FunctionSchema, OperatorName, Return, Type,
};

impl fmt::Display for Annotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.alias_set.join("|"))?;
        if self.is_write {
            f.write_str("!")?;
        }
        if !self.alias_set_after.is_empty() {
            write!(f, " -> {}", self.alias_set_after.join("|"))?;
        }
        Ok(())
    }
}

impl fmt::Display for BaseOperatorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.dunder_method {
            let i = if self.inplace { "i" } else { "" };
            write!(f, "__{i}{}__", self.base)
        } else {
            let suffix = if self.inplace {
                "_"
            } else if self.functional_overload {
                "_functional"
            } else {
                ""
            };
            write!(f, "{}{suffix}", self.base)
        }
    }
}

/// `ns::name.overload`; an empty base name prints as nothing, which is how the dispatcher's
/// nameless inferred schemas print as `(Tensor _0) -> Tensor _0`.
impl fmt::Display for OperatorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(ns) = self.namespace.as_deref().filter(|ns| !ns.is_empty()) {
            write!(f, "{ns}::")?;
        }
        write!(f, "{}", self.name)?;
        if !self.overload_name.is_empty() {
            write!(f, ".{}", self.overload_name)?;
        }
        Ok(())
    }
}

/// A type with its alias annotation inserted right after the first `Tensor` (`Tensor(a!)[]`,
/// `Tensor(a)?`). The parser only produces annotations on `Tensor`, `Tensor?` and `Tensor[]`;
/// on any other type the annotation is still shown, but the text will not parse back
/// ([`FunctionSchema::validate`] rejects such schemas).
pub(crate) struct AnnotatedType<'a>(pub(crate) &'a Type, pub(crate) Option<&'a Annotation>);

impl fmt::Display for AnnotatedType<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let AnnotatedType(ty, annotation) = self;
        let Some(annotation) = annotation else {
            return write!(f, "{ty}");
        };
        let ty = ty.to_string();
        let split = ty.find("Tensor").map_or(ty.len(), |i| i + "Tensor".len());
        write!(f, "{}({annotation}){}", &ty[..split], &ty[split..])
    }
}

impl fmt::Display for Argument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", AnnotatedType(&self.ty, self.annotation.as_ref()))?;
        write!(f, " {}", self.name)?;
        // Like torchgen, an empty default prints as no default.
        if let Some(default) = self.default.as_deref().filter(|d| !d.is_empty()) {
            write!(f, "={default}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Return {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", AnnotatedType(&self.ty, self.annotation.as_ref()))?;
        if let Some(name) = &self.name {
            write!(f, " {name}")?;
        }
        Ok(())
    }
}

/// `name(positional, *, kwarg_only, out) -> returns`: `*` goes before the first kwarg-only or
/// out argument, a single return is not parenthesised, no returns print as `()`.
impl fmt::Display for FunctionSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name)?;
        let mut star_written = false;
        for (i, arg) in self.arguments.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if (arg.kwarg_only || arg.is_out) && !star_written {
                f.write_str("*, ")?;
                star_written = true;
            }
            write!(f, "{arg}")?;
        }
        f.write_str(") -> ")?;
        match self.returns.as_slice() {
            [single] => write!(f, "{single}"),
            returns => {
                f.write_str("(")?;
                for (i, ret) in returns.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{ret}")?;
                }
                f.write_str(")")
            }
        }
    }
}
