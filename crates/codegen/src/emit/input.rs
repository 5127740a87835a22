//! What the generators consume: the operators of one yaml file after grouping and autogen,
//! reduced to the facts the generated Rust needs.

use switchyard_core::DispatchKey;
use switchyard_schema::{FunctionSchema, SchemaKind};

/// One operator.
#[derive(Clone, Debug)]
pub struct GenFunction {
    /// The schema, with its namespace set.
    pub schema: FunctionSchema,
    /// Has the `function` variant (a free function in the user API).
    pub function_variant: bool,
    /// Has the `method` variant (a `Tensor` method in the user API).
    pub method_variant: bool,
    /// Kernels by dispatch key, with the Rust function names (implicit composite names and
    /// overload disambiguation already applied).
    pub kernels: Vec<(DispatchKey, String)>,
    /// The out operator of a structured group.
    pub structured: bool,
    /// The out operator this one delegates to (a structured group member).
    pub structured_delegate: Option<usize>,
    /// Produced by `autogen` (its kernel body is generated).
    pub generated: bool,
    /// A standard `<view>_copy` operator: its kernel body is generated from the view (index of
    /// the view operator).
    pub view_copy_of: Option<usize>,
    /// Kernels are registered by hand.
    pub manual_kernel_registration: bool,
    /// Tagged `nondeterministic_seeded`: draws random numbers.
    pub random: bool,
}

/// A functional / in-place / out (/ mutable) family.
#[derive(Clone, Copy, Debug)]
pub struct GenGroup {
    /// The functional member.
    pub functional: usize,
    /// The in-place member.
    pub inplace: Option<usize>,
    /// The mutable member.
    pub mutable: Option<usize>,
    /// The out member.
    pub out: usize,
    /// Whether the group is structured.
    pub structured: bool,
}

/// Every operator of a yaml file and its groups.
#[derive(Clone, Debug, Default)]
pub struct GenInput {
    /// Operators, in yaml order then generated ones.
    pub functions: Vec<GenFunction>,
    /// Groups, by index into `functions`.
    pub groups: Vec<GenGroup>,
}

impl GenFunction {
    /// The schema kind.
    pub fn kind(&self) -> SchemaKind {
        self.schema.kind()
    }

    /// The kernel at `key`, if any.
    pub fn kernel(&self, key: DispatchKey) -> Option<&str> {
        self.kernels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, n)| n.as_str())
    }
}

impl GenInput {
    /// The group a function belongs to.
    pub fn group_of(&self, f: usize) -> Option<&GenGroup> {
        self.groups.iter().find(|g| {
            g.functional == f || g.out == f || g.inplace == Some(f) || g.mutable == Some(f)
        })
    }
}
