//! The non-generic helpers the generated code calls: [`NodeBuilder`] for the trace kernels
//! (operands, attributes, shapes, the node and its lazy outputs) and [`LowerArgs`] for the
//! lowerings (a node's inputs and attributes at execution).

use std::sync::Arc;

use smallvec::SmallVec;
use switchyard_core::keys::sets;
use switchyard_core::local_dispatch::ExcludeDispatchKeyGuard;
use switchyard_core::storage::Storage;
use switchyard_core::{
    Device, DeviceType, DispatchKey, DispatchKeySet, Error, Layout, MemoryFormat, Result, Scalar,
    ScalarType, Tensor,
};
use switchyard_ops::structured::OutputSpec;

use crate::data::{CacheKey, DataValue, DeviceData, most_recent, scalar_key, scalar_leaf};
use crate::ir::{Arg, Attr, FastHash, Hash128, K_NULL_OPT, Node, NodeInfo, Output, Shape};
use crate::tensor::{create_from_ir, try_get_ltc_tensor};

/// Builds one node in a generated trace kernel.
pub struct NodeBuilder {
    info: &'static NodeInfo,
    operands: SmallVec<[Output; 3]>,
    args: SmallVec<[Arg; 4]>,
    device: Option<Device>,
    /// What shape inference reads: the node kind, every tensor argument's metadata, every
    /// scalar's value and attribute ([`NodeBuilder::known_shapes`]).
    shape_key: Hash128,
}

/// Entries of a thread's shape cache (LTC's `torch_lazy_shape_cache_size`); a full cache
/// starts over.
pub const SHAPE_CACHE_SIZE: usize = 4096;

thread_local! {
    static SHAPE_CACHE: std::cell::RefCell<std::collections::HashMap<Hash128, SmallVec<[Shape; 1]>, FastHash>> =
        std::cell::RefCell::new(std::collections::HashMap::default());
}

impl NodeBuilder {
    /// A builder for node kind `NODES[index]`.
    pub fn new(index: usize) -> Result<NodeBuilder> {
        let info = crate::generated::nodes::NODES
            .get(index)
            .ok_or_else(|| Error::runtime(format!("internal error: no lazy node kind {index}")))?;
        Ok(NodeBuilder {
            info,
            operands: SmallVec::new(),
            args: SmallVec::new(),
            device: None,
            shape_key: Hash128::of_u64(index as u64),
        })
    }

    /// Folds what shape inference reads of tensor argument `t` into the shape key: sizes,
    /// strides, offset, dtype, device and whether it is a wrapped number.
    fn fold_tensor(&mut self, t: &Tensor) {
        let g = t.geometry();
        let flags = (t.dtype() as u64) << 8
            | u64::from(t.is_wrapped_number())
            | u64::from(t.device().kind() == DeviceType::Lazy) << 1;
        self.shape_key = self
            .shape_key
            .with_i64s(g.sizes())
            .with_i64s(g.strides())
            .with_u64(g.storage_offset() as u64)
            .with_u64(flags);
    }

    /// The output shapes the thread's shape cache holds for this operator on arguments like
    /// these (every argument added already), if any. Shape inference depends only on what
    /// the key holds, so the cached shapes are what it would give, and a call it would refuse
    /// is never cached; its warnings are not repeated.
    pub fn known_shapes(&self) -> Option<SmallVec<[Shape; 1]>> {
        static HITS: crate::metrics::Counter = crate::metrics::Counter::new("ShapeCacheHit");
        let found = SHAPE_CACHE.with(|c| c.borrow().get(&self.shape_key).cloned());
        if found.is_some() {
            HITS.inc();
        }
        found
    }

    /// Records the shapes inference gave for this builder's key and returns them.
    pub fn remember_shapes(&self, shapes: SmallVec<[Shape; 1]>) -> SmallVec<[Shape; 1]> {
        SHAPE_CACHE.with(|c| {
            let mut cache = c.borrow_mut();
            if cache.len() >= SHAPE_CACHE_SIZE {
                cache.clear();
            }
            cache.insert(self.shape_key, shapes.clone());
        });
        shapes
    }

    fn push_operand(&mut self, o: Output) {
        self.args.push(Arg::Operand(self.operands.len() as u32));
        self.operands.push(o);
    }

    /// Adds `o` to the operands without an argument of its own (an element of a list) and
    /// returns its operand number.
    fn push_element(&mut self, o: Output) -> u32 {
        self.operands.push(o);
        (self.operands.len() - 1) as u32
    }

    fn lazy_value(&mut self, t: &Tensor, any_device: bool) -> Result<Output> {
        self.fold_tensor(t);
        if let Some((inner, lt)) = try_get_ltc_tensor(t)? {
            match self.device {
                None => self.device = Some(lt.device()),
                Some(d) if d != lt.device() => {
                    return Err(Error::runtime(format!(
                        "Expected all tensors to be on the same device, but found at least two devices, {d} and {}!",
                        lt.device()
                    )));
                }
                Some(_) => {}
            }
            return lt.ir_value_of(&inner);
        }
        // A wrapped number becomes a lifted scalar; other 0-dim CPU tensors (and any tensor
        // where the operator copies across devices) become device data holding a copy.
        if t.is_wrapped_number() {
            let s = t.item_scalar()?;
            return Ok(Output {
                node: scalar_leaf(&s),
                index: 0,
            });
        }
        if (t.dim() == 0 && t.device() == Device::CPU) || (any_device && t.device() == Device::CPU)
        {
            let copy = switchyard_ops::op::clone::call(t, None)?;
            return Ok(Output {
                node: crate::trie::leaf(DeviceData::from_tensor(copy)),
                index: 0,
            });
        }
        Err(Error::runtime(format!(
            "Input tensor is not a lazy tensor: {}",
            t.device()
        )))
    }

    fn lazy_operand(&mut self, t: &Tensor, any_device: bool) -> Result<()> {
        let v = self.lazy_value(t, any_device)?;
        self.push_operand(v);
        Ok(())
    }

    /// A tensor operand: a lazy tensor's IR value (wrapped numbers and 0-dim CPU tensors are
    /// taken as on-the-fly parameters); any other tensor is "not a lazy tensor".
    pub fn tensor(&mut self, t: &Tensor) -> Result<()> {
        self.lazy_operand(t, false)
    }

    /// A tensor operand that may come from the CPU (`copy`'s `src`): such a tensor becomes a
    /// device-data leaf holding a copy of its value.
    pub fn tensor_any_device(&mut self, t: &Tensor) -> Result<()> {
        self.lazy_operand(t, true)
    }

    fn list(&mut self, ts: &[Option<&Tensor>], any_device: bool) -> Result<()> {
        let mut items = SmallVec::with_capacity(ts.len());
        self.shape_key = self.shape_key.with_u64(ts.len() as u64);
        for t in ts {
            items.push(match t {
                Some(t) => {
                    let v = self.lazy_value(t, any_device)?;
                    Some(self.push_element(v))
                }
                None => {
                    self.shape_key = self.shape_key.combine(K_NULL_OPT);
                    None
                }
            });
        }
        self.args.push(Arg::List(items));
        Ok(())
    }

    /// A `Tensor[]` argument: one operand per element, recorded as one [`Arg::List`].
    pub fn tensor_list(&mut self, ts: &[Tensor]) -> Result<()> {
        let refs: SmallVec<[Option<&Tensor>; 4]> = ts.iter().map(Some).collect();
        self.list(&refs, false)
    }

    /// A `Tensor?[]` argument: one operand per present element.
    pub fn opt_tensor_list(&mut self, ts: &[Option<Tensor>]) -> Result<()> {
        let refs: SmallVec<[Option<&Tensor>; 4]> = ts.iter().map(Option::as_ref).collect();
        self.list(&refs, false)
    }

    /// A `Tensor?[]` argument whose elements may come from the CPU (index lists: eager
    /// indexing takes CPU indices for a tensor on any device); those become device data.
    pub fn opt_tensor_list_any_device(&mut self, ts: &[Option<Tensor>]) -> Result<()> {
        let refs: SmallVec<[Option<&Tensor>; 4]> = ts.iter().map(Option::as_ref).collect();
        self.list(&refs, true)
    }

    /// An optional tensor operand.
    pub fn opt_tensor(&mut self, t: Option<&Tensor>) -> Result<()> {
        match t {
            Some(t) => self.tensor(t),
            None => {
                self.shape_key = self.shape_key.combine(K_NULL_OPT);
                self.args.push(Arg::Absent);
                Ok(())
            }
        }
    }

    /// A `Scalar` argument, lifted to a parameter (B.7.8): graphs that differ only in scalar
    /// values hash equal.
    pub fn scalar(&mut self, s: &Scalar) -> Result<()> {
        // Its value too: some checks read it (an integral power's sign, an integral alpha).
        let (kind, bits) = scalar_key(s);
        self.shape_key = self.shape_key.with_u64(u64::from(kind)).with_u64(bits);
        self.push_operand(Output {
            node: scalar_leaf(s),
            index: 0,
        });
        Ok(())
    }

    /// A non-tensor argument.
    pub fn attr(&mut self, a: Attr) {
        self.shape_key = self.shape_key.combine(a.hash());
        self.args.push(Arg::Attr(a));
    }

    /// A meta shadow of operand `t` for shape inference: a lazy tensor becomes a `Meta` tensor
    /// with its geometry; anything else (a wrapped number, a CPU tensor) is passed as it is.
    pub fn shadow(&self, t: &Tensor) -> Result<Tensor> {
        if t.device().kind() != DeviceType::Lazy {
            return Ok(t.clone());
        }
        let g = t.geometry();
        let nbytes = usize::try_from(g.required_elements()).unwrap_or(0) * t.element_size();
        Tensor::from_storage(
            Storage::new(nbytes, Device::META)?,
            g.sizes(),
            g.strides(),
            g.storage_offset(),
            t.dtype(),
        )
    }

    /// [`NodeBuilder::shadow`] of an optional operand.
    pub fn shadow_opt(&self, t: Option<&Tensor>) -> Result<Option<Tensor>> {
        t.map(|t| self.shadow(t)).transpose()
    }

    /// [`NodeBuilder::shadow`] of each element of a `Tensor[]`.
    pub fn shadow_list(&self, ts: &[Tensor]) -> Result<Vec<Tensor>> {
        ts.iter().map(|t| self.shadow(t)).collect()
    }

    /// [`NodeBuilder::shadow`] of each element of a `Tensor?[]`.
    pub fn shadow_opt_list(&self, ts: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        ts.iter().map(|t| self.shadow_opt(t.as_ref())).collect()
    }

    /// With IR reuse on (`trie.rs`), the node the trie holds at this place for the same
    /// operator, attributes and operand nodes, as new lazy tensors (one per output); `None`
    /// when reuse is off or nothing matches (then [`NodeBuilder::build`] caches the new node).
    /// Random operators are reused only from a graph nothing can read any more.
    pub fn reuse(&self) -> Result<Option<Vec<Tensor>>> {
        if !crate::trie::reuse_ir() {
            return Ok(None);
        }
        let random = self.info.random;
        let found = crate::trie::lookup(|n, exclusive| {
            matches!(&n.kind, crate::ir::OpKind::Aten(i) if std::ptr::eq(*i, self.info))
                && (!random || exclusive)
                && n.args == self.args
                && n.operands.len() == self.operands.len()
                && n.operands
                    .iter()
                    .zip(&self.operands)
                    .all(|(a, b)| a.index == b.index && Arc::ptr_eq(&a.node, &b.node))
        });
        let Some(node) = found else {
            return Ok(None);
        };
        let device = self.device.unwrap_or_else(crate::device);
        (0..node.shapes.len())
            .map(|index| {
                create_from_ir(
                    Output {
                        node: Arc::clone(&node),
                        index,
                    },
                    device,
                )
            })
            .collect::<Result<_>>()
            .map(Some)
    }

    /// Builds the node with `shapes` and returns one new lazy tensor per output (with IR
    /// reuse on, the node is cached in the trie).
    pub fn build(self, shapes: SmallVec<[Shape; 1]>) -> Result<Vec<Tensor>> {
        let device = self.device.unwrap_or_else(crate::device);
        let n = shapes.len();
        let node = Arc::new(Node::new(self.info, self.operands, self.args, shapes));
        if crate::trie::reuse_ir() {
            crate::trie::insert(&node);
        }
        (0..n)
            .map(|index| {
                create_from_ir(
                    Output {
                        node: Arc::clone(&node),
                        index,
                    },
                    device,
                )
            })
            .collect()
    }

    /// Builds a one-output node and returns its lazy tensor.
    pub fn build_one(self, shapes: SmallVec<[Shape; 1]>) -> Result<Tensor> {
        if shapes.len() != 1 {
            return Err(Error::runtime(format!(
                "internal error: a one-output lazy node with {} shapes",
                shapes.len()
            )));
        }
        let device = self.device.unwrap_or_else(crate::device);
        let node = Arc::new(Node::new(self.info, self.operands, self.args, shapes));
        if crate::trie::reuse_ir() {
            crate::trie::insert(&node);
        }
        create_from_ir(Output { node, index: 0 }, device)
    }
}

/// A wrapped-number tensor holding `s`, for the shape inference of a `.Scalar` overload (the
/// `.Tensor` overload's meta function reads its dtype). Read-only and never handed out, so the
/// calling thread keeps the last few and repeats return the same tensor: tracing a `.Scalar`
/// call allocates no tensor for its scalar.
pub fn wrapped_scalar(s: Scalar) -> Result<Tensor> {
    use std::cell::RefCell;
    const KEEP: usize = 8;
    thread_local! {
        static WRAPPED: RefCell<Vec<(CacheKey, Tensor)>> = const { RefCell::new(Vec::new()) };
    }
    // Keyed by kind and bits: reading the tensor back (`item`) would take its storage lock.
    WRAPPED.with(|cell| {
        most_recent(&mut cell.borrow_mut(), scalar_key(&s), KEEP, || {
            Tensor::wrapped_scalar(s)
        })
    })
}

/// Whether an index list holds a boolean (or byte) mask: the result's shape (or, for
/// `index_put`, its checks) then depends on the mask's values, which a trace does not have, so
/// the operator runs eagerly through the fallback (as `nonzero` does).
pub fn has_mask(indices: &[Option<Tensor>]) -> bool {
    indices
        .iter()
        .flatten()
        .any(|t| matches!(t.dtype(), ScalarType::Bool | ScalarType::Byte))
}

/// Output `i` of a multi-output kernel.
pub fn output(outs: &[Tensor], i: usize) -> Result<Tensor> {
    outs.get(i)
        .cloned()
        .ok_or_else(|| Error::runtime(format!("internal error: lazy node has no output {i}")))
}

/// Excludes the layers above the backends while a Meta kernel runs on shadows (shape
/// inference is bookkeeping, not part of the program).
pub fn meta_guard() -> ExcludeDispatchKeyGuard {
    ExcludeDispatchKeyGuard::new(
        sets::AUTOGRAD_WITH_AD_INPLACE_OR_VIEW.add(DispatchKey::Functionalize) | sets::PYTHON,
    )
}

/// The shapes a structured meta function computed.
pub fn shapes_of_specs(specs: &[OutputSpec]) -> SmallVec<[Shape; 1]> {
    specs
        .iter()
        .map(|s| match &s.strides {
            Some(strides) => Shape {
                dtype: s.dtype,
                sizes: s.sizes.clone(),
                strides: strides.iter().copied().collect(),
            },
            None => Shape::contiguous(s.dtype, &s.sizes),
        })
        .collect()
}

/// The shapes of the Meta kernel outputs of a `Tensor[]` return.
pub fn shapes_of_list(ts: &[Tensor]) -> SmallVec<[Shape; 1]> {
    ts.iter().map(Shape::of).collect()
}

/// The shapes of Meta kernel outputs.
pub fn shapes_of_tensors(ts: &[&Tensor]) -> SmallVec<[Shape; 1]> {
    ts.iter().map(|t| Shape::of(t)).collect()
}

/// The contiguous shape of `t`'s sizes (a `<view>_copy`'s output, from its view's).
fn contiguous_shape(t: &Tensor) -> Shape {
    Shape::contiguous(t.dtype(), &t.sizes())
}

/// The contiguous shapes of views' sizes (a `<view>_copy`'s outputs, from its view's).
pub fn contiguous_shapes_of_tensors(ts: &[&Tensor]) -> SmallVec<[Shape; 1]> {
    ts.iter().map(|t| contiguous_shape(t)).collect()
}

/// [`contiguous_shapes_of_tensors`] of a `Tensor[]` result.
pub fn contiguous_shapes_of_list(ts: &[Tensor]) -> SmallVec<[Shape; 1]> {
    ts.iter().map(contiguous_shape).collect()
}

/// The key set lowerings redispatch with: the `CPU` kernel alone, no layer above it.
pub fn cpu_only() -> DispatchKeySet {
    DispatchKeySet::from_key(DispatchKey::CPU)
}

/// A value in an execution: a CPU tensor or a lifted scalar.
#[derive(Clone)]
pub enum Val {
    /// A CPU tensor.
    Tensor(Tensor),
    /// A scalar parameter.
    Scalar(Scalar),
}

impl From<DataValue> for Val {
    fn from(v: DataValue) -> Val {
        match v {
            DataValue::Tensor(t) => Val::Tensor(t),
            DataValue::Scalar(s) => Val::Scalar(s),
        }
    }
}

impl From<Val> for DataValue {
    fn from(v: Val) -> DataValue {
        match v {
            Val::Tensor(t) => DataValue::Tensor(t),
            Val::Scalar(s) => DataValue::Scalar(s),
        }
    }
}

/// A node's arguments at execution: attributes from the node, operands as values.
pub struct LowerArgs<'a> {
    /// The node kind (named in errors).
    pub info: &'static NodeInfo,
    /// The node's schema arguments.
    pub args: &'a [Arg],
    /// The operands' values.
    pub ins: &'a [Val],
}

fn missing(what: &str, i: usize, info: &NodeInfo) -> Error {
    Error::runtime(format!(
        "internal error: argument {i} of lazy node {} is not {what}",
        info.operator_name()
    ))
}

macro_rules! attr_getter {
    ($(#[$doc:meta])* $name:ident, $variant:ident, $t:ty, $conv:expr) => {
        $(#[$doc])*
        pub fn $name(&self, i: usize) -> Result<$t> {
            match self.args.get(i) {
                Some(Arg::Attr(Attr::$variant(v))) => Ok($conv(v)),
                _ => Err(missing(stringify!($name), i, self.info)),
            }
        }
    };
}

impl<'a> LowerArgs<'a> {
    fn operand(&self, i: usize) -> Result<Option<&'a Val>> {
        match self.args.get(i) {
            Some(Arg::Operand(k)) => self
                .ins
                .get(*k as usize)
                .map(Some)
                .ok_or_else(|| missing("an operand", i, self.info)),
            Some(Arg::Absent) => Ok(None),
            _ => Err(missing("an operand", i, self.info)),
        }
    }

    /// Tensor argument `i` (a scalar parameter given to a tensor argument is rebuilt as the
    /// wrapped number eager had).
    pub fn tensor(&self, i: usize) -> Result<Tensor> {
        match self.operand(i)? {
            Some(Val::Tensor(t)) => Ok(t.clone()),
            Some(Val::Scalar(s)) => Tensor::wrapped_scalar(*s),
            None => Err(missing("a tensor", i, self.info)),
        }
    }

    fn element(&self, k: u32) -> Result<Tensor> {
        match self.ins.get(k as usize) {
            Some(Val::Tensor(t)) => Ok(t.clone()),
            Some(Val::Scalar(s)) => Tensor::wrapped_scalar(*s),
            None => Err(missing("an operand", k as usize, self.info)),
        }
    }

    /// `Tensor[]` argument `i`.
    pub fn tensor_list(&self, i: usize) -> Result<Vec<Tensor>> {
        match self.args.get(i) {
            Some(Arg::List(items)) => items
                .iter()
                .map(|k| match k {
                    Some(k) => self.element(*k),
                    None => Err(missing("a tensor", i, self.info)),
                })
                .collect(),
            _ => Err(missing("a tensor list", i, self.info)),
        }
    }

    /// `Tensor?[]` argument `i`.
    pub fn opt_tensor_list(&self, i: usize) -> Result<Vec<Option<Tensor>>> {
        match self.args.get(i) {
            Some(Arg::List(items)) => items
                .iter()
                .map(|k| k.map(|k| self.element(k)).transpose())
                .collect(),
            _ => Err(missing("a tensor list", i, self.info)),
        }
    }

    /// Optional tensor argument `i`.
    pub fn opt_tensor(&self, i: usize) -> Result<Option<Tensor>> {
        match self.operand(i)? {
            None => Ok(None),
            Some(_) => self.tensor(i).map(Some),
        }
    }

    /// Scalar argument `i`.
    pub fn scalar(&self, i: usize) -> Result<Scalar> {
        match self.operand(i)? {
            Some(Val::Scalar(s)) => Ok(*s),
            Some(Val::Tensor(t)) => t.item_scalar(),
            None => Err(missing("a scalar", i, self.info)),
        }
    }

    attr_getter!(/// Attribute `i` as `int`.
        int, Int, i64, |v: &i64| *v);
    attr_getter!(/// Attribute `i` as `int[]`.
        ints, Ints, &'a [i64], |v: &'a [i64]| v);
    attr_getter!(/// Attribute `i` as `int?`.
        opt_int, OptInt, Option<i64>, |v: &Option<i64>| *v);
    attr_getter!(/// Attribute `i` as `int[]?`.
        opt_ints, OptInts, Option<&'a [i64]>, |v: &'a Option<Box<[i64]>>| v.as_deref());
    attr_getter!(/// Attribute `i` as `bool`.
        bool, Bool, bool, |v: &bool| *v);
    attr_getter!(/// Attribute `i` as `bool?`.
        opt_bool, OptBool, Option<bool>, |v: &Option<bool>| *v);
    attr_getter!(/// Attribute `i` as `float`.
        float, Float, f64, |v: &f64| *v);
    attr_getter!(/// Attribute `i` as `float?`.
        opt_float, OptFloat, Option<f64>, |v: &Option<f64>| *v);
    attr_getter!(/// Attribute `i` as `ScalarType`.
        dtype, Dtype, ScalarType, |v: &ScalarType| *v);
    attr_getter!(/// Attribute `i` as `ScalarType?`.
        opt_dtype, OptDtype, Option<ScalarType>, |v: &Option<ScalarType>| *v);
    attr_getter!(/// Attribute `i` as `Layout?`.
        opt_layout, OptLayout, Option<Layout>, |v: &Option<Layout>| *v);
    attr_getter!(/// Attribute `i` as `Device?`.
        opt_device, OptDevice, Option<Device>, |v: &Option<Device>| *v);
    attr_getter!(/// Attribute `i` as `MemoryFormat?`.
        opt_memory_format, OptMemoryFormat, Option<MemoryFormat>, |v: &Option<MemoryFormat>| *v);
    /// Attribute `i` as `str`.
    pub fn str(&self, i: usize) -> Result<&'a str> {
        match self.args.get(i) {
            Some(Arg::Attr(Attr::Str(v))) => Ok(v),
            _ => Err(missing("str", i, self.info)),
        }
    }
    attr_getter!(/// Attribute `i` as `str?`.
        opt_str, OptStr, Option<&'a str>, |v: &'a Option<Box<str>>| v.as_deref());
    attr_getter!(/// Attribute `i` as `Scalar?`.
        opt_scalar, OptScalar, Option<Scalar>, |v: &Option<Scalar>| *v);
    attr_getter!(/// Attribute `i` as `Generator?`.
        opt_generator, Generator, Option<&'a switchyard_core::Generator>, |v: &'a Option<crate::ir::GeneratorAttr>| v.as_ref().map(|g| &g.0));
}
