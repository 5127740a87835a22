//! The tensor handle.
//!
//! A [`Tensor`] is a cheap, clonable handle (a reference-counted pointer) to a [`TensorImpl`]: dtype, device,
//! dispatch key set and storage (fixed at creation), a geometry (sizes, strides, storage
//! offset), a version counter shared with every view of the same data, the `requires_grad`
//! flag and a slot for autograd metadata, and an optional *payload* for tensors that are not
//! plain strided memory (functional wrappers, lazy tensors, backend tensors).
//!
//! Cloning a `Tensor` shares it, like assigning a `torch.Tensor` in Python: metadata
//! mutations (`resize_`, `set_geometry`) are seen through every handle. The geometry sits in a
//! sequence lock ([`crate::geometry`]), so such mutations are safe from any thread and reading
//! it writes nothing shared; data access goes through [`with_tensors`], which locks storages
//! (see [`crate::storage`]). A tensor never changes which storage it views (PyTorch's `set_`
//! would; it is not supported), which is what lets operator calls borrow the storage without
//! touching its reference count.

pub use crate::geometry::{Geometry, StridedOffsets};

use crate::element::{Element, read_element};
use crate::geometry::{GeometryCell, NewGeometry};
use crate::keys::{DispatchKey, DispatchKeySet, NUM_BACKENDS, sets, tensor_key_set};
use crate::local_dispatch::is_inference_mode_enabled;
use crate::set_once::SetOnce;
use crate::shape::{self, DimVec, fmt_dims};
use crate::shared::Shared;
use crate::storage::{Access, Storage, StorageData, StorageLocks};
use crate::{Device, Error, Layout, Result, Scalar, ScalarType, bail, torch_check};
use smallvec::SmallVec;
use std::any::Any;
use std::mem::MaybeUninit;
use std::ptr::addr_of_mut;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// A counter bumped by every in-place mutation, shared by a tensor and all its views; autograd
/// uses it to reject a backward pass through data modified after it was saved.
///
/// The shared cell is allocated on first need (a bump, or sharing with a view): most tensors
/// are temporaries that are never viewed or modified, and an allocation per tensor is a
/// measurable part of a tiny operator call. Until then the version is 0.
#[derive(Debug, Default)]
pub struct VersionCounter(SetOnce<Arc<AtomicU32>>);

impl VersionCounter {
    fn cell(&self) -> &Arc<AtomicU32> {
        self.0.get_or_init(Arc::default)
    }

    /// The current version.
    pub fn current(&self) -> u32 {
        self.0.get().map_or(0, |c| c.load(Ordering::Acquire))
    }

    /// Increments the version.
    pub fn bump(&self) {
        self.cell().fetch_add(1, Ordering::AcqRel);
    }

    /// Whether two counters are the same shared counter.
    pub fn is_shared_with(&self, other: &VersionCounter) -> bool {
        Arc::ptr_eq(self.cell(), other.cell())
    }
}

impl Clone for VersionCounter {
    /// Shares the counter (a view's counter is its base's). The clone is born set: every view
    /// clones its base's counter, and `OnceLock::from` would pay a `Once` call for it.
    fn clone(&self) -> Self {
        VersionCounter(SetOnce::with_value(self.cell().clone()))
    }
}

/// Type-erased per-tensor data owned by another layer (autograd metadata, a functional
/// wrapper's state, a lazy tensor's IR value). The owner downcasts it.
pub type Extension = Arc<dyn Any + Send + Sync>;

/// The object a [`Tensor`] handle points to.
pub struct TensorImpl {
    dtype: ScalarType,
    device: Device,
    layout: Layout,
    key_set: DispatchKeySet,
    /// The storage this tensor views, fixed for its life (absent for payload tensors). Being
    /// immutable, it is read without synchronisation or reference counting.
    storage: Option<Storage>,
    geometry: GeometryCell,
    version: VersionCounter,
    requires_grad: AtomicBool,
    wrapped_number: AtomicBool,
    /// Set at most once (a tensor's autograd identity never changes), so the autograd layer's
    /// hot path reads it without a lock and borrows it without touching a reference count.
    autograd_meta: SetOnce<Extension>,
    payload: Option<Extension>,
}

/// What [`Tensor::from_payload_parts`] builds a payload tensor from (a tensor without storage
/// whose data another layer keeps in `payload`).
pub struct PayloadParts<'a> {
    /// The layer's per-tensor state (downcast with [`Tensor::payload_as`]).
    pub payload: Extension,
    /// Sizes, strides and storage offset the tensor reports. Not checked against any
    /// storage: there is none.
    pub geometry: &'a Geometry,
    /// The element type.
    pub dtype: ScalarType,
    /// The device.
    pub device: Device,
    /// The full set of keys the tensor dispatches on.
    pub key_set: DispatchKeySet,
    /// A version counter to share (a view's base's); `None` gives a fresh one.
    pub version: Option<&'a VersionCounter>,
}

/// A tensor handle; `Clone` shares the tensor (see the module documentation).
#[derive(Clone)]
pub struct Tensor(Shared<TensorImpl>);

/// The key set of a new dense tensor on `device` (inference tensors get no autograd keys).
pub fn dense_key_set(device: Device) -> DispatchKeySet {
    // Every new tensor needs this set, and computing it is a few dozen key-set operations:
    // cache it per backend and inference mode (an empty set marks a slot not yet filled; the
    // computed set is never empty, and racing threads store the same value).
    static CACHE: [[AtomicU64; 2]; NUM_BACKENDS + 1] =
        [const { [const { AtomicU64::new(0) }, const { AtomicU64::new(0) }] }; NUM_BACKENDS + 1];
    let backend = device.kind().backend_component();
    let inference = is_inference_mode_enabled();
    let slot = CACHE
        .get(backend as usize)
        .map(|pair| &pair[usize::from(inference)]);
    if let Some(raw) = slot
        .map(|s| s.load(Ordering::Relaxed))
        .filter(|raw| *raw != 0)
    {
        return DispatchKeySet::from_raw(raw);
    }
    let ks = tensor_key_set(DispatchKey::Dense, backend, inference);
    if let Some(s) = slot {
        s.store(ks.raw(), Ordering::Relaxed);
    }
    ks
}

/// What a new tensor is made of besides its geometry (see [`Tensor::build`]).
struct TensorParts {
    dtype: ScalarType,
    device: Device,
    layout: Layout,
    key_set: DispatchKeySet,
    storage: Option<Storage>,
    version: VersionCounter,
    payload: Option<Extension>,
}

impl TensorParts {
    /// A plain strided tensor (no payload, fresh version counter).
    #[inline]
    fn dense(dtype: ScalarType, device: Device, storage: Storage) -> TensorParts {
        TensorParts {
            dtype,
            device,
            layout: Layout::Strided,
            key_set: dense_key_set(device),
            storage: Some(storage),
            version: VersionCounter::default(),
            payload: None,
        }
    }
}

impl Tensor {
    /// A new tensor (no autograd state, `requires_grad` false), built in place in its
    /// allocation: moving the ~280-byte object into its allocation by value cost two `memcpy`
    /// calls, a quarter of allocating a tiny tensor.
    #[inline]
    fn build(parts: TensorParts, geometry: NewGeometry<'_>) -> Tensor {
        let TensorParts {
            dtype,
            device,
            layout,
            key_set,
            storage,
            version,
            payload,
        } = parts;
        // Lists every field without `..`: a new field of `TensorImpl` fails to compile here
        // until it is also written below.
        let _every_field_is_written = |t: &TensorImpl| {
            let TensorImpl {
                dtype: _,
                device: _,
                layout: _,
                key_set: _,
                storage: _,
                geometry: _,
                version: _,
                requires_grad: _,
                wrapped_number: _,
                autograd_meta: _,
                payload: _,
            } = t;
        };
        let write = |p: *mut TensorImpl| {
            // SAFETY: `p` points to a new allocation for a `TensorImpl`, aligned and exclusively
            // ours (`Shared::new_in_place`). Each line writes one field (every field, as the
            // pattern above checks) without reading or dropping the uninitialised old value.
            unsafe {
                addr_of_mut!((*p).dtype).write(dtype);
                addr_of_mut!((*p).device).write(device);
                addr_of_mut!((*p).layout).write(layout);
                addr_of_mut!((*p).key_set).write(key_set);
                addr_of_mut!((*p).storage).write(storage);
                GeometryCell::init(addr_of_mut!((*p).geometry), geometry);
                addr_of_mut!((*p).version).write(version);
                addr_of_mut!((*p).requires_grad).write(AtomicBool::new(false));
                addr_of_mut!((*p).wrapped_number).write(AtomicBool::new(false));
                addr_of_mut!((*p).autograd_meta).write(SetOnce::new());
                addr_of_mut!((*p).payload).write(payload);
            }
        };
        // SAFETY: `write` initialises every field of the value.
        Tensor(unsafe { Shared::new_in_place(write) })
    }

    /// A tensor viewing `storage` with the given geometry. Fails if the view reaches past
    /// the end of the storage.
    pub fn from_storage(
        storage: Storage,
        sizes: &[i64],
        strides: &[i64],
        storage_offset: i64,
        dtype: ScalarType,
    ) -> Result<Tensor> {
        check_in_bounds(&storage, sizes, strides, storage_offset, dtype)?;
        let device = storage.device();
        let geometry = Geometry::new(sizes, strides, storage_offset)?;
        Ok(Self::build(
            TensorParts::dense(dtype, device, storage),
            NewGeometry::Of(&geometry),
        ))
    }

    /// A new contiguous tensor on `device` (CPU, meta, or a device with an installed
    /// allocator). Host memory starts zeroed; callers must not rely on that (`torch.empty`
    /// promises nothing).
    pub fn allocate(sizes: &[i64], dtype: ScalarType, device: Device) -> Result<Tensor> {
        // Every operator's functional output comes through here: compute the size once and
        // build the contiguous geometry directly (it fits the new storage by construction).
        let (numel, nbytes) = contiguous_sizes(sizes, dtype)?;
        let storage = Storage::new(nbytes, device)?;
        Ok(Self::build(
            TensorParts::dense(dtype, device, storage),
            NewGeometry::Contiguous { sizes, numel },
        ))
    }

    /// A new contiguous CPU tensor of element type `T` whose elements (row-major) `init`
    /// writes, without the zero-fill of [`Tensor::allocate`]: for kernels that produce every
    /// element of a large new output. `init` gets the uninitialised elements and returns them
    /// initialised, as the same slice (see [`crate::storage::HostBuffer::init_with`]).
    pub fn new_with<T: Element>(
        sizes: &[i64],
        init: impl for<'a> FnOnce(&'a mut [MaybeUninit<T::Repr>]) -> Result<&'a mut [T::Repr]>,
    ) -> Result<Tensor> {
        let (numel, _) = contiguous_sizes(sizes, T::DTYPE)?;
        let count =
            usize::try_from(numel).map_err(|_| Error::runtime("internal error: negative numel"))?;
        let storage = Storage::new_host_with::<T::Repr>(count, init)?;
        Ok(Self::build(
            TensorParts::dense(T::DTYPE, Device::CPU, storage),
            NewGeometry::Contiguous { sizes, numel },
        ))
    }

    /// A new tensor with explicit strides.
    pub fn allocate_strided(
        sizes: &[i64],
        strides: &[i64],
        dtype: ScalarType,
        device: Device,
    ) -> Result<Tensor> {
        let nbytes = storage_nbytes(sizes, strides, 0, dtype)?;
        let storage = Storage::new(nbytes, device)?;
        Self::from_storage(storage, sizes, strides, 0, dtype)
    }

    /// A tensor with no storage whose data lives in `payload` (functional wrappers, lazy
    /// tensors), with contiguous-or-given strides at offset 0 and its own version counter.
    /// `key_set` is the full set of keys it dispatches on. See [`Tensor::from_payload_parts`]
    /// for the general form.
    pub fn from_payload(
        payload: Extension,
        sizes: &[i64],
        strides: &[i64],
        dtype: ScalarType,
        device: Device,
        key_set: DispatchKeySet,
    ) -> Result<Tensor> {
        let geometry = Geometry::new(sizes, strides, 0)?;
        Ok(Self::from_payload_parts(PayloadParts {
            payload,
            geometry: &geometry,
            dtype,
            device,
            key_set,
            version: None,
        }))
    }

    /// A payload tensor (no storage) with any geometry, storage offset included, optionally
    /// sharing an existing version counter: a functional view wrapper reports its eager
    /// offset and bumps the same counter as its base wrapper, as a strided view does.
    pub fn from_payload_parts(parts: PayloadParts<'_>) -> Tensor {
        let PayloadParts {
            payload,
            geometry,
            dtype,
            device,
            key_set,
            version,
        } = parts;
        Self::build(
            TensorParts {
                dtype,
                device,
                layout: Layout::Strided,
                key_set,
                storage: None,
                // `clone` shares the counter (see `VersionCounter::clone`).
                version: version.cloned().unwrap_or_default(),
                payload: Some(payload),
            },
            NewGeometry::Of(geometry),
        )
    }

    /// A CPU tensor of shape `shape` holding `data` in row-major order.
    ///
    /// Errors: "shape '[2, 3]' is invalid for input of size 5" when the sizes disagree.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[i64]) -> Result<Tensor> {
        let numel = shape::numel(shape)?;
        if usize::try_from(numel).ok() != Some(data.len()) {
            bail!(
                RuntimeError,
                "shape '{}' is invalid for input of size {}",
                fmt_dims(shape),
                data.len()
            );
        }
        let repr: Vec<T::Repr> = crate::alloc::try_collect(data.into_iter().map(Element::to_repr))?;
        let storage = Storage::from_host_bytes(bytemuck::cast_slice(&repr))?;
        Self::from_storage(
            storage,
            shape,
            &shape::contiguous_strides(shape),
            0,
            T::DTYPE,
        )
    }

    /// A 1-d CPU tensor holding a copy of `data`.
    pub fn from_slice<T: Element>(data: &[T]) -> Result<Tensor> {
        Self::from_vec(data.to_vec(), &[data.len() as i64])
    }

    /// A CPU tensor from nested arrays or vectors: `Tensor::from_data([[1.0f32, 2.0], [3.0, 4.0]])`.
    /// A bare element gives a 0-dim tensor. Ragged nesting is an error.
    pub fn from_data<D: NestedData>(data: D) -> Result<Tensor> {
        let shape = data.shape()?;
        let mut flat = Vec::new();
        data.flatten_into(&mut flat);
        Self::from_vec(flat, &shape)
    }

    /// A 0-dim CPU tensor holding `s` with the dtype a scalar of its kind gets (`Bool`,
    /// `Long` or `Double`).
    pub fn scalar_tensor(s: Scalar) -> Result<Tensor> {
        match s {
            Scalar::Bool(b) => Self::from_vec(vec![b], &[]),
            Scalar::Int(i) => Self::from_vec(vec![i], &[]),
            Scalar::Float(f) => Self::from_vec(vec![f], &[]),
        }
    }

    /// A 0-dim CPU tensor marked as a *wrapped number*: it takes part in type promotion as a
    /// Python scalar would (lowest priority).
    pub fn wrapped_scalar(s: Scalar) -> Result<Tensor> {
        let t = Self::scalar_tensor(s)?;
        t.set_wrapped_number(true);
        Ok(t)
    }

    fn impl_(&self) -> &TensorImpl {
        &self.0
    }

    /// The element type.
    pub fn dtype(&self) -> ScalarType {
        self.0.dtype
    }

    /// Alias of [`Tensor::dtype`] (PyTorch's C++ name).
    pub fn scalar_type(&self) -> ScalarType {
        self.0.dtype
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.0.device
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.0.layout
    }

    /// The dispatch keys this tensor contributes to a call.
    pub fn key_set(&self) -> DispatchKeySet {
        self.0.key_set
    }

    /// A consistent snapshot of sizes, strides and offset.
    pub fn geometry(&self) -> Geometry {
        self.0.geometry.load()
    }

    /// Whether `self` and `other` have the same sizes, strides and storage offset (compared
    /// without copying either geometry).
    #[inline]
    pub fn has_same_geometry(&self, other: &Tensor) -> bool {
        self.0.geometry.same_as(&other.0.geometry)
    }

    /// The cell holding the geometry (for the crate's lean readers).
    #[inline]
    pub(crate) fn geometry_cell(&self) -> &GeometryCell {
        &self.0.geometry
    }

    /// Runs `f` on a snapshot of the geometry.
    pub fn with_geometry<R>(&self, f: impl FnOnce(&Geometry) -> R) -> R {
        f(&self.0.geometry.load())
    }

    /// Sizes.
    pub fn sizes(&self) -> DimVec {
        self.with_sizes(DimVec::from_slice)
    }

    /// Runs `f` on a consistent copy of the sizes, without building a [`DimVec`] (for hot
    /// paths: a returned `DimVec` is copied through the stack).
    #[inline]
    pub fn with_sizes<R>(&self, f: impl FnOnce(&[i64]) -> R) -> R {
        self.0.geometry.with_sizes(f)
    }

    /// Strides, in elements.
    pub fn strides(&self) -> DimVec {
        DimVec::from_slice(self.geometry().strides())
    }

    /// Size of dimension `dim` (negative counts from the end).
    pub fn size(&self, dim: i64) -> Result<i64> {
        let g = self.geometry();
        let d = shape::wrap_dim(dim, g.dim())?;
        Ok(g.sizes().get(d).copied().unwrap_or(1))
    }

    /// Stride of dimension `dim` (negative counts from the end).
    pub fn stride(&self, dim: i64) -> Result<i64> {
        let g = self.geometry();
        let d = shape::wrap_dim(dim, g.dim())?;
        Ok(g.strides().get(d).copied().unwrap_or(1))
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.0.geometry.rank()
    }

    /// Number of elements.
    pub fn numel(&self) -> i64 {
        self.0.geometry.numel()
    }

    /// Offset of element 0 in the storage, in elements.
    pub fn storage_offset(&self) -> i64 {
        self.0.geometry.storage_offset()
    }

    /// Whether the elements are row-major contiguous.
    pub fn is_contiguous(&self) -> bool {
        self.0.geometry.is_contiguous()
    }

    /// Bytes per element.
    pub fn element_size(&self) -> usize {
        self.dtype().element_size()
    }

    /// The storage (absent for payload tensors), as a new handle.
    pub fn storage(&self) -> Option<Storage> {
        self.0.storage.clone()
    }

    /// The storage (absent for payload tensors), borrowed: a tensor's storage never changes,
    /// so this needs neither a lock nor a reference count.
    pub fn storage_ref(&self) -> Option<&Storage> {
        self.0.storage.as_ref()
    }

    /// Whether the tensor has a storage.
    pub fn has_storage(&self) -> bool {
        self.0.storage.is_some()
    }

    /// Whether `self` and `other` share storage (or, without storage, are the same tensor).
    pub fn is_alias_of(&self, other: &Tensor) -> bool {
        match (self.storage_ref(), other.storage_ref()) {
            (Some(a), Some(b)) => a.is_alias_of(b),
            _ => self.is_same(other),
        }
    }

    /// Whether both handles refer to the same tensor object.
    pub fn is_same(&self, other: &Tensor) -> bool {
        Shared::ptr_eq(&self.0, &other.0)
    }

    /// The version counter (shared with views).
    pub fn version_counter(&self) -> &VersionCounter {
        &self.0.version
    }

    /// The current version (`tensor._version`).
    pub fn version(&self) -> u32 {
        self.0.version.current()
    }

    /// Records an in-place modification.
    pub fn bump_version(&self) {
        self.0.version.bump();
    }

    /// Whether gradients will be computed for this tensor.
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad.load(Ordering::Acquire)
    }

    /// Marks a tensor that autograd has given a history (a `grad_fn`) as requiring grad,
    /// whatever its dtype: PyTorch's `requires_grad()` of a non-leaf is `grad_fn != null`,
    /// and an in-place operation of a differentiable operator records a history on an
    /// integral `self` too (`bernoulli_` with a probability that requires grad); only leaves
    /// are limited to floating dtypes ([`Tensor::set_requires_grad`]).
    pub fn set_requires_grad_by_history(&self) -> Result<()> {
        if self.is_inference() {
            bail!(
                RuntimeError,
                "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
            );
        }
        self.0.requires_grad.store(true, Ordering::Release);
        Ok(())
    }

    /// Sets `requires_grad`; only floating-point tensors can require gradients.
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<()> {
        if requires_grad && !self.dtype().is_floating_point() {
            bail!(
                RuntimeError,
                "only Tensors of floating point dtype can require gradients"
            );
        }
        if requires_grad && self.is_inference() {
            bail!(
                RuntimeError,
                "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
            );
        }
        self.0.requires_grad.store(requires_grad, Ordering::Release);
        Ok(())
    }

    /// Whether this 0-dim tensor stands for a Python scalar in type promotion.
    pub fn is_wrapped_number(&self) -> bool {
        self.0.wrapped_number.load(Ordering::Relaxed)
    }

    /// Marks (or unmarks) the tensor as a wrapped number.
    pub fn set_wrapped_number(&self, wrapped: bool) {
        self.0.wrapped_number.store(wrapped, Ordering::Relaxed);
    }

    /// Whether this is an inference tensor (created in inference mode; no autograd keys).
    pub fn is_inference(&self) -> bool {
        !self
            .key_set()
            .has_any(sets::AUTOGRAD_WITH_AD_INPLACE_OR_VIEW)
    }

    /// The autograd metadata set by the autograd layer, if any (a lock-free read).
    #[inline]
    pub fn autograd_meta(&self) -> Option<&Extension> {
        self.0.autograd_meta.get()
    }

    /// The autograd metadata, installing `init()` first if there is none (atomically: two
    /// threads racing get the same value).
    #[inline]
    pub fn autograd_meta_or_init(&self, init: impl FnOnce() -> Extension) -> &Extension {
        self.0.autograd_meta.get_or_init(init)
    }

    /// Whether the tensor has autograd metadata (a lock-free check).
    #[inline]
    pub fn has_autograd_meta(&self) -> bool {
        self.0.autograd_meta.get().is_some()
    }

    /// Installs the autograd metadata of a tensor that has none; fails (leaving the tensor
    /// unchanged) if it already has some: metadata is set once, when the autograd layer first
    /// needs it, and never replaced.
    pub fn set_autograd_meta(&self, meta: Extension) -> Result<()> {
        self.0
            .autograd_meta
            .set(meta)
            .map(|_| ())
            .map_err(|_| Error::runtime("internal error: the tensor already has autograd metadata"))
    }

    /// The payload of a non-strided tensor.
    pub fn payload(&self) -> Option<&Extension> {
        self.0.payload.as_ref()
    }

    /// The payload downcast to `T`.
    pub fn payload_as<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.payload.as_ref()?.downcast_ref::<T>()
    }

    /// True on the meta device.
    pub fn is_meta(&self) -> bool {
        self.device().is_meta()
    }

    /// True on the CPU.
    pub fn is_cpu(&self) -> bool {
        self.device().is_cpu()
    }

    /// A new tensor sharing storage and version counter, with the given geometry (the
    /// primitive under every view operator). Fails if the view reaches past the storage.
    pub fn as_strided_view(
        &self,
        sizes: &[i64],
        strides: &[i64],
        storage_offset: i64,
    ) -> Result<Tensor> {
        let storage = self.storage().ok_or_else(|| {
            Error::runtime("Cannot create a strided view of a tensor that has no storage")
        })?;
        check_in_bounds(&storage, sizes, strides, storage_offset, self.dtype())?;
        let geometry = Geometry::new(sizes, strides, storage_offset)?;
        let src = self.impl_();
        Ok(Self::build(
            TensorParts {
                dtype: src.dtype,
                device: src.device,
                layout: src.layout,
                key_set: src.key_set,
                storage: Some(storage),
                version: src.version.clone(),
                payload: None,
            },
            NewGeometry::Of(&geometry),
        ))
    }

    /// A new handle to the same data with no autograd state (PyTorch's
    /// `shallow_copy_and_detach`): same storage or payload, geometry (copied now; later
    /// metadata changes of either are not shared), key set, wrapped-number flag and version
    /// counter, `requires_grad` false. What `detach()` and autograd's saved outputs are made of.
    pub fn shallow_copy(&self) -> Tensor {
        let src = self.impl_();
        let geometry = self.geometry();
        let copy = Self::build(
            TensorParts {
                dtype: src.dtype,
                device: src.device,
                layout: src.layout,
                key_set: src.key_set,
                storage: src.storage.clone(),
                version: src.version.clone(),
                payload: src.payload.clone(),
            },
            NewGeometry::Of(&geometry),
        );
        copy.set_wrapped_number(self.is_wrapped_number());
        copy
    }

    /// How many handles share this tensor object (PyTorch's `use_count`): autograd takes a
    /// fresh gradient as a leaf's `.grad` without copying only when nothing else holds it.
    pub fn handle_count(&self) -> usize {
        self.0.count()
    }

    /// An address identifying this tensor object (not its data) while it lives: equal for
    /// two handles exactly when [`Tensor::is_same`] holds.
    pub fn object_id(&self) -> usize {
        self.0.as_ptr().addr()
    }

    /// Replaces this tensor's sizes, strides and offset over its current storage
    /// (`as_strided_`); visible through every handle.
    pub fn set_geometry(&self, sizes: &[i64], strides: &[i64], storage_offset: i64) -> Result<()> {
        let writer = self.0.geometry.writer();
        if let Some(storage) = &self.0.storage {
            check_in_bounds(storage, sizes, strides, storage_offset, self.0.dtype)?;
        }
        writer.store(&Geometry::new(sizes, strides, storage_offset)?);
        Ok(())
    }

    /// Makes the tensor contiguous with `sizes` (the metadata half of `resize_`), growing the storage if needed
    /// (the storage must be resizable). Returns whether the sizes changed.
    ///
    /// Checks as c10's `set_sizes_contiguous` and `computeStorageNbytesContiguous` do, in
    /// their order: negative sizes, "numel: integer multiplication overflow", "Stride
    /// calculation overflowed", then the storage size; nothing changes on an error.
    pub fn resize_contiguous(&self, sizes: &[i64]) -> Result<bool> {
        shape::numel(sizes)?;
        self.resize_with_strides(sizes, &shape::checked_contiguous_strides(sizes)?)
    }

    /// Resizes to `sizes` with explicit `strides`, growing the storage if needed. Returns
    /// whether the sizes changed.
    pub fn resize_with_strides(&self, sizes: &[i64], strides: &[i64]) -> Result<bool> {
        let writer = self.0.geometry.writer();
        let current = writer.current();
        let changed = current.sizes() != sizes;
        let new = Geometry::new(sizes, strides, current.storage_offset())?;
        if let Some(storage) = &self.0.storage {
            let nbytes = nbytes_for(new.required_elements(), self.0.dtype, sizes)?;
            if nbytes > storage.nbytes() {
                storage.resize(nbytes)?;
            }
        }
        writer.store(&new);
        Ok(changed)
    }

    /// Copies the elements, in row-major order, into a `Vec<T>`; `T` must be this tensor's
    /// element type ("expected scalar type Float but found Double" otherwise).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        torch_check!(
            T::DTYPE == self.dtype(),
            "expected scalar type {} but found {}",
            T::DTYPE,
            self.dtype()
        );
        with_tensors(&[(self, Access::Read)], |data| {
            let bytes = data.bytes(0)?;
            let g = data.geometry(0);
            // Sized by the tensor: allocated fallibly (PyTorch's out-of-memory error).
            let mut v = crate::alloc::try_with_capacity(usize::try_from(g.numel()).unwrap_or(0))?;
            for off in g.offsets() {
                v.push(read_element::<T>(bytes, off as usize).ok_or_else(out_of_bounds)?);
            }
            Ok(v)
        })
    }

    /// The elements converted to `f64`, whatever the dtype (for tests and printing).
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        crate::dispatch_dtype!(self.dtype(), T => {
            crate::alloc::try_collect(self.to_vec::<T>()?.into_iter().map(Element::to_f64))
        })
    }

    /// The value of a one-element tensor as a [`Scalar`]
    /// ("a Tensor with 2 elements cannot be converted to Scalar" otherwise).
    pub fn item_scalar(&self) -> Result<Scalar> {
        let n = self.numel();
        torch_check!(
            n == 1,
            "a Tensor with {n} elements cannot be converted to Scalar"
        );
        crate::dispatch_dtype!(self.dtype(), T => {
            let v = self.to_vec::<T>()?;
            v.first().map(|x| x.to_scalar()).ok_or_else(out_of_bounds)
        })
    }

    /// The value of a one-element tensor converted to `T` (with PyTorch's overflow check).
    pub fn item<T: Element>(&self) -> Result<T> {
        self.item_scalar()?.to::<T>()
    }
}

fn out_of_bounds() -> Error {
    Error::runtime("internal error: tensor element outside its storage")
}

/// The element count and byte size of a new contiguous tensor of `sizes`, checked as
/// PyTorch's `empty_generic` does: negative sizes, then the storage size
/// (`computeStorageNbytesContiguous`), then, for an empty shape (whose strides are not bounded
/// by its element count), "Stride calculation overflowed".
#[inline]
fn contiguous_sizes(sizes: &[i64], dtype: ScalarType) -> Result<(i64, usize)> {
    shape::check_nonnegative(sizes)?;
    let nbytes = shape::storage_nbytes_contiguous(sizes, dtype.element_size())?;
    // Exact: the byte count is the element count times the (non-zero) element size, and at
    // most `i64::MAX`.
    let numel = (nbytes / dtype.element_size()) as i64;
    if numel == 0 {
        shape::checked_contiguous_strides(sizes)?;
    }
    Ok((numel, nbytes))
}

/// The bytes `elements` elements of `dtype` take, if that is a storage size (at most
/// [`shape::STORAGE_MAX`]).
fn checked_nbytes(elements: i64, dtype: ScalarType) -> Option<usize> {
    usize::try_from(elements)
        .ok()
        .and_then(|e| e.checked_mul(dtype.element_size()))
        .filter(|n| *n as u64 <= shape::STORAGE_MAX)
}

/// The bytes a view of `(sizes, strides)` at `offset` reaches (PyTorch's
/// `computeStorageNbytes`, with its error).
fn storage_nbytes(sizes: &[i64], strides: &[i64], offset: i64, dtype: ScalarType) -> Result<usize> {
    let elements = shape::required_storage_elements(sizes, strides, offset)?;
    checked_nbytes(elements, dtype).ok_or_else(|| {
        Error::runtime(format!(
            "Storage size calculation overflowed with sizes={} and strides={}",
            fmt_dims(sizes),
            fmt_dims(strides)
        ))
    })
}

/// The bytes `elements` elements of `dtype` take, at most [`shape::STORAGE_MAX`].
fn nbytes_for(elements: i64, dtype: ScalarType, sizes: &[i64]) -> Result<usize> {
    checked_nbytes(elements, dtype).ok_or_else(|| {
        Error::runtime(format!(
            "Storage size calculation overflowed with sizes={}",
            fmt_dims(sizes)
        ))
    })
}

/// Checks that a view fits in `storage` (PyTorch's `checkInBoundsForStorage`).
fn check_in_bounds(
    storage: &Storage,
    sizes: &[i64],
    strides: &[i64],
    offset: i64,
    dtype: ScalarType,
) -> Result<()> {
    let needed = storage_nbytes(sizes, strides, offset, dtype)?;
    let available = storage.nbytes();
    if needed > available {
        bail!(
            RuntimeError,
            "setStorage: sizes {}, strides {}, storage offset {}, and itemsize {} requiring a storage size of {} are out of bounds for storage of size {}",
            fmt_dims(sizes),
            fmt_dims(strides),
            offset,
            dtype.element_size(),
            needed,
            available
        );
    }
    Ok(())
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Locked access to the data of several tensors, handed to the closure of [`with_tensors`].
pub struct TensorData<'a, 'l> {
    geometries: &'a [Geometry],
    tensors: &'a [(&'a Tensor, Access)],
    /// Borrowed, not owned: the set of locks is ~150 bytes, and moving it into this struct
    /// was a `memcpy` call on every operator call.
    locks: &'l mut StorageLocks<'a>,
}

impl TensorData<'_, '_> {
    /// The geometry snapshot of operand `i`.
    pub fn geometry(&self, i: usize) -> &Geometry {
        &self.geometries[i.min(self.geometries.len().saturating_sub(1))]
    }

    /// The dtype of operand `i`.
    pub fn dtype(&self, i: usize) -> ScalarType {
        self.tensors[i.min(self.tensors.len().saturating_sub(1))]
            .0
            .dtype()
    }

    /// The whole storage of operand `i` as host bytes (elements are addressed through
    /// the geometry's offsets).
    pub fn bytes(&self, i: usize) -> Result<&[u8]> {
        self.locks.data(i)?.host_bytes()
    }

    /// The whole storage of operand `i`, mutably (operand `i` must be locked for writing).
    pub fn bytes_mut(&mut self, i: usize) -> Result<&mut [u8]> {
        self.locks.data_mut(i)?.host_bytes_mut()
    }

    /// The raw storage data of operand `i` (for device backends).
    pub fn data(&self, i: usize) -> Result<&StorageData> {
        self.locks.data(i)
    }

    /// The raw storage data of operand `i`, mutably.
    pub fn data_mut(&mut self, i: usize) -> Result<&mut StorageData> {
        self.locks.data_mut(i)
    }

    /// Whether operands `i` and `j` share a storage.
    pub fn same_storage(&self, i: usize, j: usize) -> bool {
        self.locks.same_storage(i, j)
    }

    /// Host bytes for a computation: mutable bytes of each operand in `writes` (which must be in
    /// distinct storages), and shared bytes of every operand — `None` for an operand sharing a
    /// storage with a written one (it must be read through the written bytes).
    #[allow(clippy::type_complexity)]
    pub fn split_host_mut(
        &mut self,
        writes: &[usize],
    ) -> Result<(SmallVec<[&mut [u8]; 2]>, SmallVec<[Option<&[u8]>; 4]>)> {
        let (written, shared) = self.locks.split_mut(writes)?;
        let written = written
            .into_iter()
            .map(StorageData::host_bytes_mut)
            .collect::<Result<_>>()?;
        let shared = shared
            .into_iter()
            .map(|d| d.map(StorageData::host_bytes).transpose())
            .collect::<Result<_>>()?;
        Ok((written, shared))
    }

    /// [`TensorData::split_host_mut`] for one written operand, operand 0: its bytes mutably;
    /// the bytes of operands 1.. are pushed onto `rest` (`None` for those sharing operand 0's
    /// storage). `rest` is the caller's so that nothing large is returned by value.
    pub fn split_first_host_mut<'s>(
        &'s mut self,
        rest: &mut SmallVec<[Option<&'s [u8]>; 4]>,
    ) -> Result<&'s mut [u8]> {
        self.locks.split_first_host_mut(rest)
    }
}

/// Runs `f` with the data of `tensors` locked (shared for `Read`, exclusive for `Write`):
/// the one safe way to touch tensor memory. See [`crate::storage`] for the locking rules.
pub fn with_tensors<R>(
    tensors: &[(&Tensor, Access)],
    f: impl FnOnce(&mut TensorData<'_, '_>) -> Result<R>,
) -> Result<R> {
    // Filled in place, not collected: a collected small vector of geometries is moved
    // whole (hundreds of bytes) on its way out, which showed in tiny calls' profiles.
    let mut geometries: SmallVec<[Geometry; 4]> = SmallVec::new();
    let mut requests: SmallVec<[(&Storage, Access); 4]> = SmallVec::new();
    for (t, access) in tensors {
        let storage = t.storage_ref().ok_or_else(|| {
            Error::runtime(format!(
                "Cannot access data of a {} tensor without storage",
                t.device()
            ))
        })?;
        requests.push((storage, *access));
        // Written in its slot, not copied there (see `GeometryCell::load_into`).
        geometries.push(Geometry::EMPTY);
        if let Some(g) = geometries.last_mut() {
            t.0.geometry.load_into(g);
        }
    }
    // The locks are taken into their final place (see `StorageLocks::acquire`).
    let mut locks = StorageLocks::unlocked();
    locks.acquire(&requests)?;
    for (i, (g, (t, _))) in geometries.iter().zip(tensors).enumerate() {
        // The geometry was read before the lock: re-check it against the locked storage, in
        // case another thread shrank the storage in between.
        let needed = nbytes_for(g.required_elements(), t.dtype(), g.sizes())?;
        let available = locks.data(i)?.nbytes();
        torch_check!(
            needed <= available,
            "a tensor's storage was resized by another thread while it was being accessed ({needed} bytes needed, {available} available)"
        );
    }
    let mut data = TensorData {
        geometries: &geometries,
        tensors,
        locks: &mut locks,
    };
    f(&mut data)
}

/// Rust data a tensor can be built from: an element, or arrays / vectors / slices of such
/// data nested to any depth (`[[1.0f32, 2.0], [3.0, 4.0]]`).
pub trait NestedData {
    /// The element type at the leaves.
    type Elem: Element;
    /// The shape, checking that nested sequences are not ragged.
    fn shape(&self) -> Result<DimVec>;
    /// Appends the elements in row-major order.
    fn flatten_into(&self, out: &mut Vec<Self::Elem>);
}

macro_rules! leaf_data {
    ($($t:ty),*) => {$(
        impl NestedData for $t {
            type Elem = $t;
            fn shape(&self) -> Result<DimVec> {
                Ok(DimVec::new())
            }
            fn flatten_into(&self, out: &mut Vec<$t>) {
                out.push(*self);
            }
        }
    )*};
}
leaf_data!(u8, i8, i16, i32, i64, f32, f64, bool, half::f16, half::bf16);

fn sequence_shape<U: NestedData>(items: &[U]) -> Result<DimVec> {
    let mut shape = DimVec::new();
    shape.push(items.len() as i64);
    if let Some(first) = items.first() {
        let inner = first.shape()?;
        for item in items {
            let s = item.shape()?;
            if s != inner {
                let depth = 1;
                let expected = inner.first().copied().unwrap_or(0);
                let got = s.first().copied().unwrap_or(0);
                bail!(
                    ValueError,
                    "expected sequence of length {expected} at dim {depth} (got {got})"
                );
            }
        }
        shape.extend_from_slice(&inner);
    }
    Ok(shape)
}

impl<U: NestedData, const N: usize> NestedData for [U; N] {
    type Elem = U::Elem;
    fn shape(&self) -> Result<DimVec> {
        sequence_shape(self.as_slice())
    }
    fn flatten_into(&self, out: &mut Vec<U::Elem>) {
        self.iter().for_each(|x| x.flatten_into(out));
    }
}

impl<U: NestedData> NestedData for Vec<U> {
    type Elem = U::Elem;
    fn shape(&self) -> Result<DimVec> {
        sequence_shape(self.as_slice())
    }
    fn flatten_into(&self, out: &mut Vec<U::Elem>) {
        self.iter().for_each(|x| x.flatten_into(out));
    }
}

impl<U: NestedData> NestedData for &[U] {
    type Elem = U::Elem;
    fn shape(&self) -> Result<DimVec> {
        sequence_shape(self)
    }
    fn flatten_into(&self, out: &mut Vec<U::Elem>) {
        self.iter().for_each(|x| x.flatten_into(out));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-backend cache of `dense_key_set` must give what the full computation gives,
    /// whichever inference mode filled it first.
    #[test]
    fn cached_dense_key_sets_follow_inference_mode() {
        use crate::local_dispatch::InferenceMode;
        for device in [Device::CPU, Device::META] {
            for inference in [true, false, true, false] {
                let _mode = InferenceMode::new(inference);
                let expected = tensor_key_set(
                    DispatchKey::Dense,
                    device.kind().backend_component(),
                    inference,
                );
                assert_eq!(dense_key_set(device), expected);
                let t = Tensor::allocate(&[1], ScalarType::Float, device).unwrap();
                assert_eq!((t.key_set(), t.is_inference()), (expected, inference));
            }
        }
    }

    #[test]
    fn version_counters_are_shared_however_late_they_are_allocated() {
        let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
        assert_eq!(t.version(), 0);
        // A view taken before any bump shares the (then allocated) counter.
        let v = t.as_strided_view(&[2], &[1], 1).unwrap();
        t.bump_version();
        assert_eq!((t.version(), v.version()), (1, 1));
        assert!(v.version_counter().is_shared_with(t.version_counter()));
        // A fresh tensor's counter is its own.
        let other = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
        assert!(!other.version_counter().is_shared_with(t.version_counter()));
        assert_eq!(other.version(), 0);
    }

    #[test]
    fn same_geometry_compares_sizes_strides_and_offset() {
        let t = Tensor::from_vec((0..12).map(|x| x as f32).collect(), &[3, 4]).unwrap();
        let same = t.as_strided_view(&[3, 4], &[4, 1], 0).unwrap();
        assert!(t.has_same_geometry(&t) && t.has_same_geometry(&same));
        let transposed = t.as_strided_view(&[4, 3], &[1, 4], 0).unwrap();
        let restrided = t.as_strided_view(&[3, 4], &[1, 3], 0).unwrap();
        let shifted = t.as_strided_view(&[3, 3], &[4, 1], 1).unwrap();
        let narrower = t.as_strided_view(&[3, 3], &[4, 1], 0).unwrap();
        let flat = t.as_strided_view(&[12], &[1], 0).unwrap();
        for other in [&transposed, &restrided, &shifted, &narrower, &flat] {
            assert!(!t.has_same_geometry(other), "{:?}", other.geometry());
            assert!(!other.has_same_geometry(&t));
        }
        // Above the inline rank the spilled dimensions are compared.
        let big = Tensor::from_vec(vec![0.0f32; 64], &[2; 6]).unwrap();
        let big_same = big
            .as_strided_view(&[2; 6], &[32, 16, 8, 4, 2, 1], 0)
            .unwrap();
        let big_other = big
            .as_strided_view(&[2; 6], &[32, 16, 8, 4, 1, 2], 0)
            .unwrap();
        assert!(big.has_same_geometry(&big_same));
        assert!(!big.has_same_geometry(&big_other));
    }

    #[test]
    fn views_taken_concurrently_of_a_fresh_tensor_share_one_counter() {
        for _ in 0..50 {
            let t = Tensor::from_vec(vec![0.0f32; 4], &[4]).unwrap();
            let views: Vec<Tensor> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| t.as_strided_view(&[2], &[1], 0).unwrap()))
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for v in &views {
                v.bump_version();
            }
            assert_eq!(t.version(), 4);
            assert!(views.iter().all(|v| v.version() == 4));
        }
    }

    #[test]
    fn strided_offsets_iterate_row_major() {
        let offs: Vec<i64> = StridedOffsets::new(&[2, 3], &[1, 2], 1).collect();
        assert_eq!(offs, vec![1, 3, 5, 2, 4, 6]);
        assert_eq!(
            StridedOffsets::new(&[], &[], 4).collect::<Vec<_>>(),
            vec![4]
        );
        assert_eq!(StridedOffsets::new(&[2, 0], &[1, 1], 0).count(), 0);
    }

    #[test]
    fn new_with_writes_every_element() {
        let t = Tensor::new_with::<f32>(&[2, 3], |s| {
            for (i, v) in s.iter_mut().enumerate() {
                v.write(i as f32);
            }
            // SAFETY: the loop above wrote every element.
            Ok(unsafe { s.assume_init_mut() })
        })
        .unwrap();
        assert_eq!(t.sizes().as_slice(), &[2, 3]);
        assert_eq!(t.strides().as_slice(), &[3, 1]);
        assert_eq!(
            t.to_vec::<f32>().unwrap(),
            vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        );
        let b = Tensor::new_with::<bool>(&[0, 4], |s| Ok(s.write_copy_of_slice(&[]))).unwrap();
        assert_eq!((b.numel(), b.dtype()), (0, ScalarType::Bool));
        assert!(Tensor::new_with::<f32>(&[-1], |_| Err(Error::runtime("not called"))).is_err());
    }

    #[test]
    fn construction_and_readback() {
        let t = Tensor::from_data([[1.0f32, 2.0], [3.0, 4.0]]).unwrap();
        assert_eq!(t.sizes().as_slice(), &[2, 2]);
        assert_eq!(t.strides().as_slice(), &[2, 1]);
        assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(t.dtype(), ScalarType::Float);
        let e = t.to_vec::<f64>().unwrap_err();
        assert_eq!(e.message(), "expected scalar type Double but found Float");
        let ragged = Tensor::from_data(vec![vec![1i64, 2], vec![3]]).unwrap_err();
        assert_eq!(
            ragged.message(),
            "expected sequence of length 2 at dim 1 (got 1)"
        );
        let bad = Tensor::from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err();
        assert_eq!(
            bad.message(),
            "shape '[2, 3]' is invalid for input of size 5"
        );
        assert!(Tensor::allocate(&[-1, 2], ScalarType::Float, Device::CPU).is_err());
        assert!(Tensor::allocate(&[1 << 62, 4], ScalarType::Float, Device::CPU).is_err());
        assert_eq!(Tensor::from_data(2.5f64).unwrap().dim(), 0);
        assert_eq!(
            Tensor::from_slice(&[1i32, 2])
                .unwrap()
                .item::<i32>()
                .unwrap_err()
                .message(),
            "a Tensor with 2 elements cannot be converted to Scalar"
        );
    }

    #[test]
    fn views_share_storage_and_version() {
        let t = Tensor::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]).unwrap();
        let tt = t.as_strided_view(&[3, 2], &[1, 3], 0).unwrap();
        assert!(tt.is_alias_of(&t));
        assert!(!tt.is_contiguous());
        assert_eq!(
            tt.to_vec::<f32>().unwrap(),
            vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        );
        t.bump_version();
        assert_eq!(tt.version(), 1);
        let e = t.as_strided_view(&[4, 2], &[2, 1], 0).unwrap_err();
        assert_eq!(
            e.message(),
            "setStorage: sizes [4, 2], strides [2, 1], storage offset 0, and itemsize 4 requiring a storage size of 32 are out of bounds for storage of size 24"
        );
        let other = Tensor::from_slice(&[1.0f32]).unwrap();
        assert!(!other.is_alias_of(&t));
    }

    #[test]
    fn resize_grows_shared_storage() {
        let t = Tensor::from_slice(&[1.0f32, 2.0]).unwrap();
        let alias = t.clone();
        assert!(t.resize_contiguous(&[2, 2]).unwrap());
        assert_eq!(alias.sizes().as_slice(), &[2, 2]);
        assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 0.0, 0.0]);
        assert!(!t.resize_contiguous(&[2, 2]).unwrap());
        assert!(t.resize_contiguous(&[-1]).is_err());
        assert_eq!(t.sizes().as_slice(), &[2, 2]);
    }

    #[test]
    fn payload_parts_keep_offset_and_share_version_counters() {
        let key_set = dense_key_set(Device::CPU);
        let base = Tensor::from_payload(
            Arc::new(1u8),
            &[2, 3],
            &[3, 1],
            ScalarType::Float,
            Device::CPU,
            key_set,
        )
        .unwrap();
        assert!(!base.has_storage());
        assert_eq!((base.storage_offset(), base.version()), (0, 0));
        assert_eq!(base.payload_as::<u8>(), Some(&1));
        let geometry = Geometry::new(&[3], &[1], 3).unwrap();
        let view = Tensor::from_payload_parts(PayloadParts {
            payload: Arc::new(2u8),
            geometry: &geometry,
            dtype: ScalarType::Float,
            device: Device::CPU,
            key_set,
            version: Some(base.version_counter()),
        });
        assert_eq!(view.sizes().as_slice(), &[3]);
        assert_eq!(view.strides().as_slice(), &[1]);
        assert_eq!((view.storage_offset(), view.numel()), (3, 3));
        assert_eq!((view.dtype(), view.key_set()), (ScalarType::Float, key_set));
        assert_eq!(view.payload_as::<u8>(), Some(&2));
        // A bump through either handle is seen through the other.
        view.bump_version();
        base.bump_version();
        assert_eq!((base.version(), view.version()), (2, 2));
        assert!(
            view.version_counter()
                .is_shared_with(base.version_counter())
        );
        // Without a counter to share, the tensor gets its own.
        let fresh = Tensor::from_payload_parts(PayloadParts {
            payload: Arc::new(3u8),
            geometry: &geometry,
            dtype: ScalarType::Float,
            device: Device::CPU,
            key_set,
            version: None,
        });
        assert_eq!(fresh.version(), 0);
        assert!(
            !fresh
                .version_counter()
                .is_shared_with(base.version_counter())
        );
        // No storage, so no data access (an error, not a panic).
        assert!(fresh.to_vec::<f32>().is_err());
    }

    #[test]
    fn requires_grad_only_for_floats() {
        let i = Tensor::from_slice(&[1i64]).unwrap();
        assert_eq!(
            i.set_requires_grad(true).unwrap_err().message(),
            "only Tensors of floating point dtype can require gradients"
        );
        let f = Tensor::from_slice(&[1.0f32]).unwrap();
        f.set_requires_grad(true).unwrap();
        assert!(f.requires_grad());
    }
}
