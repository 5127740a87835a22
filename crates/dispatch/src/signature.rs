//! Typed (unboxed) calling conventions.
//!
//! Every operator has an [`OpSignature`]: the tuple of Rust argument types its kernels take
//! and the Rust type they return. Kernels are plain functions
//! `fn(DispatchKeySet, (&Tensor, &Tensor, Scalar)) -> Result<Tensor>`; the tuple borrows its
//! tensors, so a typed call moves no reference counts and allocates nothing.
//!
//! The same trait supplies the glue between the typed and boxed worlds: pushing a typed call's
//! arguments onto a [`Stack`] (to call a boxed-only kernel such as a fallback), and reading
//! them back off the stack (the boxed adaptor of a typed kernel).

use crate::OperatorHandle;
use switchyard_core::{
    Device, DispatchKeySet, Error, Generator, IValue, Layout, MemoryFormat, Result, Scalar,
    ScalarType, Stack, Tensor,
};
use switchyard_schema::{
    Argument, BaseOperatorName, BaseType, FunctionSchema, OperatorName, Return, Type,
};

/// One argument type of a typed kernel: how it is read from and written to an [`IValue`],
/// what dispatch keys it contributes, and which schema type it corresponds to.
pub trait ArgType<'a>: Sized {
    /// Reads the argument from its boxed form.
    fn from_ivalue(v: &'a IValue) -> Result<Self>;
    /// Boxes the argument.
    fn to_ivalue(&self) -> IValue;
    /// Adds the argument's dispatch keys (tensors, tensor lists, generators) to `ks`.
    #[inline(always)]
    fn add_key_set(&self, ks: DispatchKeySet) -> DispatchKeySet {
        ks
    }
    /// The schema type this Rust type stands for.
    fn schema_type() -> Type;
    /// The tensor, for `Tensor` arguments (used to return in-place / out arguments).
    fn as_tensor(&self) -> Option<&Tensor> {
        None
    }
}

fn base(b: BaseType) -> Type {
    Type::Base(b)
}
fn opt(t: Type) -> Type {
    Type::Optional(Box::new(t))
}
fn list(t: Type) -> Type {
    Type::List {
        elem: Box::new(t),
        size: None,
    }
}

impl<'a> ArgType<'a> for &'a Tensor {
    fn from_ivalue(v: &'a IValue) -> Result<Self> {
        v.as_tensor()
    }
    fn to_ivalue(&self) -> IValue {
        IValue::Tensor((*self).clone())
    }
    #[inline(always)]
    fn add_key_set(&self, ks: DispatchKeySet) -> DispatchKeySet {
        ks | self.key_set()
    }
    fn schema_type() -> Type {
        base(BaseType::Tensor)
    }
    fn as_tensor(&self) -> Option<&Tensor> {
        Some(self)
    }
}

impl<'a> ArgType<'a> for Option<&'a Tensor> {
    fn from_ivalue(v: &'a IValue) -> Result<Self> {
        match v {
            IValue::None => Ok(None),
            other => other.as_tensor().map(Some),
        }
    }
    fn to_ivalue(&self) -> IValue {
        self.map_or(IValue::None, |t| IValue::Tensor(t.clone()))
    }
    #[inline(always)]
    fn add_key_set(&self, ks: DispatchKeySet) -> DispatchKeySet {
        match self {
            Some(t) => ks | t.key_set(),
            None => ks,
        }
    }
    fn schema_type() -> Type {
        opt(base(BaseType::Tensor))
    }
}

impl<'a> ArgType<'a> for &'a [Tensor] {
    fn from_ivalue(v: &'a IValue) -> Result<Self> {
        match v {
            IValue::TensorList(l) => Ok(l),
            other => Err(Error::type_error(format!(
                "Expected TensorList but got {}",
                other.tag_name()
            ))),
        }
    }
    fn to_ivalue(&self) -> IValue {
        IValue::TensorList(self.to_vec())
    }
    fn add_key_set(&self, ks: DispatchKeySet) -> DispatchKeySet {
        self.iter().fold(ks, |acc, t| acc | t.key_set())
    }
    fn schema_type() -> Type {
        list(base(BaseType::Tensor))
    }
}

impl<'a> ArgType<'a> for &'a [Option<Tensor>] {
    fn from_ivalue(v: &'a IValue) -> Result<Self> {
        match v {
            IValue::OptionalTensorList(l) => Ok(l),
            other => Err(Error::type_error(format!(
                "Expected OptionalTensorList but got {}",
                other.tag_name()
            ))),
        }
    }
    fn to_ivalue(&self) -> IValue {
        IValue::OptionalTensorList(self.to_vec())
    }
    fn add_key_set(&self, ks: DispatchKeySet) -> DispatchKeySet {
        self.iter().flatten().fold(ks, |acc, t| acc | t.key_set())
    }
    fn schema_type() -> Type {
        list(opt(base(BaseType::Tensor)))
    }
}

impl<'a> ArgType<'a> for Option<&'a Generator> {
    fn from_ivalue(v: &'a IValue) -> Result<Self> {
        match v {
            IValue::None => Ok(None),
            IValue::Generator(g) => Ok(Some(g)),
            other => Err(Error::type_error(format!(
                "Expected Generator but got {}",
                other.tag_name()
            ))),
        }
    }
    fn to_ivalue(&self) -> IValue {
        self.map_or(IValue::None, |g| IValue::Generator(g.clone()))
    }
    fn add_key_set(&self, ks: DispatchKeySet) -> DispatchKeySet {
        match self {
            Some(g) => ks | g.key_set(),
            None => ks,
        }
    }
    fn schema_type() -> Type {
        opt(base(BaseType::Generator))
    }
}

/// Implements [`ArgType`] for a plain value type and its `Option`.
macro_rules! value_arg {
    ($t:ty, $base:ident, |$v:ident| $from:expr, |$s:ident| $to:expr) => {
        impl<'a> ArgType<'a> for $t {
            fn from_ivalue($v: &'a IValue) -> Result<Self> {
                $from
            }
            fn to_ivalue(&self) -> IValue {
                let $s = *self;
                $to
            }
            fn schema_type() -> Type {
                base(BaseType::$base)
            }
        }
        impl<'a> ArgType<'a> for Option<$t> {
            fn from_ivalue(v: &'a IValue) -> Result<Self> {
                match v {
                    IValue::None => Ok(None),
                    other => <$t as ArgType<'a>>::from_ivalue(other).map(Some),
                }
            }
            fn to_ivalue(&self) -> IValue {
                match self {
                    None => IValue::None,
                    Some(x) => x.to_ivalue(),
                }
            }
            fn schema_type() -> Type {
                opt(base(BaseType::$base))
            }
        }
    };
}

value_arg!(i64, Int, |v| v.to_int(), |s| IValue::Int(s));
value_arg!(f64, Float, |v| v.to_double(), |s| IValue::Double(s));
value_arg!(bool, Bool, |v| v.to_bool(), |s| IValue::Bool(s));
value_arg!(Scalar, Scalar, |v| v.to_scalar(), |s| IValue::from(s));
value_arg!(ScalarType, ScalarType, |v| v.to_scalar_type(), |s| {
    IValue::ScalarType(s)
});
value_arg!(Layout, Layout, |v| v.to_layout(), |s| IValue::Layout(s));
value_arg!(Device, Device, |v| v.to_device(), |s| IValue::Device(s));
value_arg!(MemoryFormat, MemoryFormat, |v| v.to_memory_format(), |s| {
    IValue::MemoryFormat(s)
});

/// Implements [`ArgType`] for a borrowed slice stored in a typed-list IValue, and its `Option`.
macro_rules! slice_arg {
    ($elem:ty, $variant:ident, $base:ident) => {
        impl<'a> ArgType<'a> for &'a [$elem] {
            fn from_ivalue(v: &'a IValue) -> Result<Self> {
                match v {
                    IValue::$variant(l) => Ok(l),
                    other => Err(Error::type_error(format!(
                        concat!("Expected ", stringify!($variant), " but got {}"),
                        other.tag_name()
                    ))),
                }
            }
            fn to_ivalue(&self) -> IValue {
                IValue::$variant(self.to_vec())
            }
            fn schema_type() -> Type {
                list(base(BaseType::$base))
            }
        }
        impl<'a> ArgType<'a> for Option<&'a [$elem]> {
            fn from_ivalue(v: &'a IValue) -> Result<Self> {
                match v {
                    IValue::None => Ok(None),
                    other => <&'a [$elem] as ArgType<'a>>::from_ivalue(other).map(Some),
                }
            }
            fn to_ivalue(&self) -> IValue {
                match self {
                    None => IValue::None,
                    Some(x) => x.to_ivalue(),
                }
            }
            fn schema_type() -> Type {
                opt(list(base(BaseType::$base)))
            }
        }
    };
}

slice_arg!(i64, IntList, Int);
slice_arg!(f64, DoubleList, Float);
slice_arg!(bool, BoolList, Bool);

impl<'a> ArgType<'a> for &'a str {
    fn from_ivalue(v: &'a IValue) -> Result<Self> {
        v.to_str()
    }
    fn to_ivalue(&self) -> IValue {
        IValue::from(*self)
    }
    fn schema_type() -> Type {
        base(BaseType::Str)
    }
}

impl<'a> ArgType<'a> for Option<&'a str> {
    fn from_ivalue(v: &'a IValue) -> Result<Self> {
        match v {
            IValue::None => Ok(None),
            other => other.to_str().map(Some),
        }
    }
    fn to_ivalue(&self) -> IValue {
        self.map_or(IValue::None, IValue::from)
    }
    fn schema_type() -> Type {
        opt(base(BaseType::Str))
    }
}

/// The argument tuple of a typed kernel.
pub trait ArgTuple<'a>: Sized {
    /// Number of arguments.
    const LEN: usize;
    /// Reads the arguments from exactly `LEN` boxed values.
    fn from_ivalues(values: &'a [IValue]) -> Result<Self>;
    /// Pushes the arguments onto a stack, in order.
    fn push_all(&self, stack: &mut Stack);
    /// The union of the dispatch keys of the arguments.
    fn key_set(&self) -> DispatchKeySet;
    /// The schema types of the arguments.
    fn schema_types() -> Vec<Type>;
    /// Argument `i` if it is a tensor.
    fn tensor_at(&self, i: usize) -> Option<&Tensor>;
}

macro_rules! arg_tuple {
    ($len:expr; $($name:ident $idx:tt),*) => {
        impl<'a, $($name: ArgType<'a>),*> ArgTuple<'a> for ($($name,)*) {
            const LEN: usize = $len;
            #[allow(unused_variables)]
            fn from_ivalues(values: &'a [IValue]) -> Result<Self> {
                if values.len() != $len {
                    return Err(Error::runtime(format!(
                        "internal error: expected {} arguments on the stack, found {}", $len, values.len()
                    )));
                }
                Ok(($($name::from_ivalue(&values[$idx]).map_err(|e| e.with_context(format!("argument {}: ", $idx)))?,)*))
            }
            #[allow(unused_variables)]
            fn push_all(&self, stack: &mut Stack) {
                $(stack.push(self.$idx.to_ivalue());)*
            }
            #[inline(always)]
            fn key_set(&self) -> DispatchKeySet {
                let ks = DispatchKeySet::EMPTY;
                $(let ks = self.$idx.add_key_set(ks);)*
                ks
            }
            fn schema_types() -> Vec<Type> {
                vec![$($name::schema_type()),*]
            }
            #[allow(unused_variables)]
            fn tensor_at(&self, i: usize) -> Option<&Tensor> {
                match i {
                    $($idx => self.$idx.as_tensor(),)*
                    _ => None,
                }
            }
        }
    };
}

arg_tuple!(0;);
arg_tuple!(1; A 0);
arg_tuple!(2; A 0, B 1);
arg_tuple!(3; A 0, B 1, C 2);
arg_tuple!(4; A 0, B 1, C 2, D 3);
arg_tuple!(5; A 0, B 1, C 2, D 3, E 4);
arg_tuple!(6; A 0, B 1, C 2, D 3, E 4, F 5);
arg_tuple!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
arg_tuple!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
arg_tuple!(9; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
arg_tuple!(10; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
arg_tuple!(11; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
arg_tuple!(12; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
arg_tuple!(13; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
arg_tuple!(14; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
arg_tuple!(15; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);

/// The return type of a typed kernel.
pub trait OpOutput: Sized {
    /// Number of stack values it occupies.
    const LEN: usize;
    /// Pushes the values.
    fn push_all(self, stack: &mut Stack);
    /// Pops exactly `LEN` values (in order).
    fn pop_all(stack: &mut Stack) -> Result<Self>;
    /// Builds the output from argument tensors (in-place and out operators return their
    /// mutated arguments themselves).
    fn from_tensors(tensors: &[&Tensor]) -> Result<Self>;
    /// The schema types of the returns.
    fn schema_types() -> Vec<Type>;
}

fn pop_one(stack: &mut Stack) -> Result<IValue> {
    stack.pop().ok_or_else(|| {
        Error::runtime("internal error: a boxed kernel left too few return values on the stack")
    })
}

fn not_tensor_output() -> Error {
    Error::runtime("internal error: this return type cannot be built from argument tensors")
}

impl OpOutput for () {
    const LEN: usize = 0;
    fn push_all(self, _: &mut Stack) {}
    fn pop_all(_: &mut Stack) -> Result<Self> {
        Ok(())
    }
    fn from_tensors(_: &[&Tensor]) -> Result<Self> {
        Ok(())
    }
    fn schema_types() -> Vec<Type> {
        Vec::new()
    }
}

impl OpOutput for Tensor {
    const LEN: usize = 1;
    fn push_all(self, stack: &mut Stack) {
        stack.push(IValue::Tensor(self));
    }
    fn pop_all(stack: &mut Stack) -> Result<Self> {
        pop_one(stack)?.into_tensor()
    }
    fn from_tensors(tensors: &[&Tensor]) -> Result<Self> {
        tensors
            .first()
            .map(|t| (*t).clone())
            .ok_or_else(not_tensor_output)
    }
    fn schema_types() -> Vec<Type> {
        vec![base(BaseType::Tensor)]
    }
}

impl OpOutput for Vec<Tensor> {
    const LEN: usize = 1;
    fn push_all(self, stack: &mut Stack) {
        stack.push(IValue::TensorList(self));
    }
    fn pop_all(stack: &mut Stack) -> Result<Self> {
        pop_one(stack)?.to_tensor_list()
    }
    fn from_tensors(_: &[&Tensor]) -> Result<Self> {
        Err(not_tensor_output())
    }
    fn schema_types() -> Vec<Type> {
        vec![list(base(BaseType::Tensor))]
    }
}

macro_rules! value_output {
    ($t:ty, $base:ident, |$v:ident| $from:expr) => {
        impl OpOutput for $t {
            const LEN: usize = 1;
            fn push_all(self, stack: &mut Stack) {
                stack.push(IValue::from(self));
            }
            fn pop_all(stack: &mut Stack) -> Result<Self> {
                let $v = pop_one(stack)?;
                $from
            }
            fn from_tensors(_: &[&Tensor]) -> Result<Self> {
                Err(not_tensor_output())
            }
            fn schema_types() -> Vec<Type> {
                vec![base(BaseType::$base)]
            }
        }
    };
}

value_output!(bool, Bool, |v| v.to_bool());
value_output!(i64, Int, |v| v.to_int());
value_output!(f64, Float, |v| v.to_double());
value_output!(Scalar, Scalar, |v| v.to_scalar());
value_output!(ScalarType, ScalarType, |v| v.to_scalar_type());

macro_rules! tensor_tuple_output {
    ($len:expr; $($t:ident $idx:tt),*) => {
        impl OpOutput for ($($t,)*) {
            const LEN: usize = $len;
            fn push_all(self, stack: &mut Stack) {
                $(stack.push(IValue::Tensor(self.$idx));)*
            }
            fn pop_all(stack: &mut Stack) -> Result<Self> {
                let mut values = switchyard_core::ivalue::stack::pop_n(stack, $len)?.into_iter();
                Ok(($({
                    let _ = $idx;
                    values.next().ok_or_else(not_tensor_output)?.into_tensor()?
                },)*))
            }
            fn from_tensors(tensors: &[&Tensor]) -> Result<Self> {
                if tensors.len() != $len {
                    return Err(not_tensor_output());
                }
                Ok(($(tensors[$idx].clone(),)*))
            }
            fn schema_types() -> Vec<Type> {
                vec![$({ let _ = $idx; base(BaseType::Tensor) }),*]
            }
        }
    };
}

tensor_tuple_output!(2; Tensor 0, Tensor 1);
tensor_tuple_output!(3; Tensor 0, Tensor 1, Tensor 2);
tensor_tuple_output!(4; Tensor 0, Tensor 1, Tensor 2, Tensor 3);
tensor_tuple_output!(5; Tensor 0, Tensor 1, Tensor 2, Tensor 3, Tensor 4);
tensor_tuple_output!(6; Tensor 0, Tensor 1, Tensor 2, Tensor 3, Tensor 4, Tensor 5);

/// `(Tensor, Tensor, Tensor, Tensor, int)` (`_batch_norm_impl_index`).
impl OpOutput for (Tensor, Tensor, Tensor, Tensor, i64) {
    const LEN: usize = 5;
    fn push_all(self, stack: &mut Stack) {
        stack.push(IValue::Tensor(self.0));
        stack.push(IValue::Tensor(self.1));
        stack.push(IValue::Tensor(self.2));
        stack.push(IValue::Tensor(self.3));
        stack.push(IValue::from(self.4));
    }
    fn pop_all(stack: &mut Stack) -> Result<Self> {
        let mut values = switchyard_core::ivalue::stack::pop_n(stack, 5)?.into_iter();
        let mut tensor = || values.next().ok_or_else(not_tensor_output)?.into_tensor();
        let (a, b, c, d) = (tensor()?, tensor()?, tensor()?, tensor()?);
        let index = values.next().ok_or_else(not_tensor_output)?.to_int()?;
        Ok((a, b, c, d, index))
    }
    fn from_tensors(_: &[&Tensor]) -> Result<Self> {
        Err(not_tensor_output())
    }
    fn schema_types() -> Vec<Type> {
        vec![
            base(BaseType::Tensor),
            base(BaseType::Tensor),
            base(BaseType::Tensor),
            base(BaseType::Tensor),
            base(BaseType::Int),
        ]
    }
}

/// What a typed call of a boxed-only kernel returns (PyTorch's `BoxedKernelWrapper` rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnKind {
    /// The values the kernel left on the stack.
    Functional,
    /// The first argument (in-place operators).
    Inplace,
    /// The last `n` arguments (out= operators).
    Out(usize),
}

/// The typed calling convention of an operator (see the module documentation).
///
/// Implemented by a marker type per operator (generated) or per test signature:
///
/// ```
/// use switchyard_core::Tensor;
/// use switchyard_dispatch::OpSignature;
/// struct Identity;
/// impl OpSignature for Identity {
///     type Args<'a> = (&'a Tensor,);
///     type Output = Tensor;
/// }
/// ```
pub trait OpSignature: 'static {
    /// The argument tuple (borrowing).
    type Args<'a>: ArgTuple<'a>;
    /// The return type.
    type Output: OpOutput;
    /// How the result is formed when the kernel is boxed-only.
    const RETURN_KIND: ReturnKind = ReturnKind::Functional;
}

/// An operator known by its type: each generated `op::*` struct of switchyard-ops implements
/// it, so code can name an operator without a string (`call_fallback::<op::addmm>(..)`).
pub trait Operator: OpSignature + Sized {
    /// `ns::name.overload`.
    const QUALIFIED_NAME: &'static str;
    /// The typed handle (looked up once, then cached).
    fn typed_handle() -> Result<crate::TypedOperatorHandle<Self>>;
}

/// Runs the boxed function `f` for operator `op` with typed arguments: the arguments are
/// pushed on a fresh stack, `f` runs, and the result is read back like a typed call into a
/// boxed-only kernel (in-place and out= operators give back their mutated arguments).
pub fn call_boxed_typed<S: OpSignature>(
    f: impl FnOnce(&OperatorHandle, DispatchKeySet, &mut Stack) -> Result<()>,
    op: &OperatorHandle,
    ks: DispatchKeySet,
    args: S::Args<'_>,
) -> Result<S::Output> {
    let mut stack = Stack::with_capacity(<S::Args<'_> as ArgTuple<'_>>::LEN.max(1));
    args.push_all(&mut stack);
    f(op, ks, &mut stack)?;
    output_after_boxed::<S>(&args, &mut stack)
}

/// A typed kernel of signature `S`: it receives the dispatch key set that selected it.
pub type UnboxedFn<S> =
    for<'a> fn(DispatchKeySet, <S as OpSignature>::Args<'a>) -> Result<<S as OpSignature>::Output>;

/// Calls typed kernel `f` with arguments read from the top of `stack`, replacing them with
/// the returns (the boxed adaptor of a typed kernel).
pub(crate) fn call_unboxed_from_stack<S: OpSignature>(
    f: UnboxedFn<S>,
    ks: DispatchKeySet,
    stack: &mut Stack,
) -> Result<()> {
    let n = <S::Args<'_> as ArgTuple<'_>>::LEN;
    let len = stack.len();
    if len < n {
        return Err(Error::runtime(format!(
            "internal error: a boxed call needs {n} arguments but the stack holds {len}"
        )));
    }
    let output = {
        let args = <S::Args<'_> as ArgTuple<'_>>::from_ivalues(&stack[len - n..])?;
        f(ks, args)?
    };
    stack.truncate(len - n);
    output.push_all(stack);
    Ok(())
}

/// Builds a typed call's result after a boxed kernel ran: for in-place and out operators the
/// mutated arguments themselves, otherwise the returned values.
pub(crate) fn output_after_boxed<S: OpSignature>(
    args: &S::Args<'_>,
    stack: &mut Stack,
) -> Result<S::Output> {
    match S::RETURN_KIND {
        ReturnKind::Functional => S::Output::pop_all(stack),
        ReturnKind::Inplace => {
            let self_ = args.tensor_at(0).ok_or_else(not_tensor_output)?;
            S::Output::from_tensors(&[self_])
        }
        ReturnKind::Out(count) => {
            let total = <S::Args<'_> as ArgTuple<'_>>::LEN;
            let outs: Option<Vec<&Tensor>> = (total.saturating_sub(count)..total)
                .map(|i| args.tensor_at(i))
                .collect();
            S::Output::from_tensors(&outs.ok_or_else(not_tensor_output)?)
        }
    }
}

/// A nameless schema with no arguments or returns.
pub(crate) fn empty_schema() -> FunctionSchema {
    FunctionSchema {
        name: OperatorName {
            namespace: None,
            name: BaseOperatorName {
                base: String::new(),
                inplace: false,
                dunder_method: false,
                functional_overload: false,
            },
            overload_name: String::new(),
        },
        arguments: Vec::new(),
        returns: Vec::new(),
    }
}

/// The schema PyTorch infers from a kernel's signature: `(Tensor _0, int _1) -> Tensor _0`.
pub fn inferred_schema<S: OpSignature>() -> FunctionSchema {
    let arguments = <S::Args<'_> as ArgTuple<'_>>::schema_types()
        .into_iter()
        .enumerate()
        .map(|(i, ty)| Argument {
            name: format!("_{i}"),
            ty,
            default: None,
            annotation: None,
            kwarg_only: false,
            is_out: false,
        })
        .collect();
    let returns = S::Output::schema_types()
        .into_iter()
        .enumerate()
        .map(|(i, ty)| Return {
            name: Some(format!("_{i}")),
            ty,
            annotation: None,
        })
        .collect();
    FunctionSchema {
        arguments,
        returns,
        ..empty_schema()
    }
}

/// How two schemas differ in argument and return types (PyTorch's `findSchemaDifferences`),
/// or `None` if they agree. Types that a Rust kernel cannot distinguish (`int`/`SymInt`,
/// sized and unsized lists) are considered equal.
pub fn schema_difference(expected: &FunctionSchema, inferred: &FunctionSchema) -> Option<String> {
    if expected.arguments.len() != inferred.arguments.len() {
        return Some(format!(
            "The number of arguments is different. {} vs {}.",
            expected.arguments.len(),
            inferred.arguments.len()
        ));
    }
    if expected.returns.len() != inferred.returns.len() {
        return Some(format!(
            "The number of returns is different. {} vs {}.",
            expected.returns.len(),
            inferred.returns.len()
        ));
    }
    for (i, (a, b)) in expected
        .arguments
        .iter()
        .zip(&inferred.arguments)
        .enumerate()
    {
        if !same_rust_type(&a.ty, &b.ty) {
            return Some(format!(
                "Type mismatch in argument {}: {} vs {}",
                i + 1,
                a.ty,
                b.ty
            ));
        }
    }
    for (i, (a, b)) in expected.returns.iter().zip(&inferred.returns).enumerate() {
        if !same_rust_type(&a.ty, &b.ty) {
            return Some(format!(
                "Type mismatch in return {}: {} vs {}",
                i + 1,
                a.ty,
                b.ty
            ));
        }
    }
    None
}

/// Type equality up to what a Rust signature can express.
fn same_rust_type(a: &Type, b: &Type) -> bool {
    fn norm(t: &Type) -> Type {
        match t {
            Type::Base(BaseType::SymInt) | Type::Base(BaseType::DeviceIndex) => {
                Type::Base(BaseType::Int)
            }
            Type::Base(BaseType::SymBool) => Type::Base(BaseType::Bool),
            Type::Optional(inner) => Type::Optional(Box::new(norm(inner))),
            Type::List { elem, .. } => Type::List {
                elem: Box::new(norm(elem)),
                size: None,
            },
            other => other.clone(),
        }
    }
    norm(a) == norm(b)
}
