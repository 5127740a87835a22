//! Storage: the refcounted, device-tagged, resizable memory that tensors view.
//!
//! # Concurrency
//!
//! Every storage guards its bytes with a reader–writer lock. Code reads or writes tensor
//! data only through [`crate::tensor::with_tensors`] (or the single-storage guards here),
//! which
//!
//! 1. snapshots each tensor's geometry,
//! 2. locks every distinct storage involved at once — shared for reads, exclusive if any
//!    tensor on it is written — in address order, so two threads can never wait on each other
//!    in a cycle,
//! 3. re-checks every geometry against the locked storage's size, and
//! 4. hands out byte slices whose borrows end with the closure.
//!
//! Two threads mutating tensors that share storage are therefore serialised, never racing:
//! the worst outcome of unsynchronised user code is one of the possible interleavings of
//! whole operations, not undefined behaviour. A thread may not start a new data access while
//! it already holds one (a kernel must not call back into operators with locks held); that
//! would deadlock, so it is refused with an error instead.

use crate::device::{Device, DeviceType};
use crate::{Error, Result};
use smallvec::SmallVec;
use std::alloc::Layout;
use std::any::Any;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ptr::{NonNull, addr_of_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Alignment of host allocations of at least this many bytes, enough for any SIMD load.
pub const HOST_ALIGNMENT: usize = 64;

/// Alignment of smaller host allocations: above every element type's alignment, and it lets
/// the allocator serve tiny tensors (scalars, short vectors) from its fast path instead of the
/// slower aligned-allocation one; a buffer that small gains nothing from cache-line alignment.
pub const SMALL_HOST_ALIGNMENT: usize = 16;

/// Memory owned by a device that is not the host: an opaque handle a backend interprets.
pub trait DeviceMemory: Send + Sync + 'static {
    /// Size in bytes.
    fn nbytes(&self) -> usize;
    /// For downcasting to the backend's own type.
    fn as_any(&self) -> &dyn Any;
    /// For downcasting to the backend's own type.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// Allocates and copies memory of one non-host device. A backend installs its allocator with
/// [`set_allocator`]; storages on its device are then created and resized through it.
pub trait Allocator: Send + Sync + 'static {
    /// Allocates `nbytes` of zeroed device memory.
    fn allocate(&self, nbytes: usize) -> Result<Box<dyn DeviceMemory>>;
    /// Copies the first `nbytes` of `src` into `dst` (both allocated by this allocator).
    fn copy_bytes(
        &self,
        dst: &mut dyn DeviceMemory,
        src: &dyn DeviceMemory,
        nbytes: usize,
    ) -> Result<()>;
}

static ALLOCATORS: RwLock<Vec<(DeviceType, Arc<dyn Allocator>)>> = RwLock::new(Vec::new());

/// Installs the allocator for a device type (replacing any previous one).
pub fn set_allocator(kind: DeviceType, allocator: Arc<dyn Allocator>) -> Result<()> {
    if matches!(kind, DeviceType::Cpu | DeviceType::Meta) {
        return Err(Error::runtime(format!(
            "the allocator of device type {} is built in and cannot be replaced",
            kind.name()
        )));
    }
    let mut table = ALLOCATORS.write().unwrap_or_else(PoisonError::into_inner);
    table.retain(|(k, _)| *k != kind);
    table.push((kind, allocator));
    Ok(())
}

/// The allocator installed for a device type, if any.
pub fn get_allocator(kind: DeviceType) -> Option<Arc<dyn Allocator>> {
    let table = ALLOCATORS.read().unwrap_or_else(PoisonError::into_inner);
    table
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, a)| a.clone())
}

/// Host buffers of at most this many bytes are stored inline, in the storage object itself:
/// scalars and short vectors, the outputs of tiny operator calls, then cost no allocation of
/// their own.
pub const INLINE_HOST_BYTES: usize = 32;

/// Inline bytes, aligned like a small heap buffer.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct InlineBytes([u8; INLINE_HOST_BYTES]);

const _: () = assert!(std::mem::align_of::<InlineBytes>() == SMALL_HOST_ALIGNMENT);

/// Where a [`HostBuffer`]'s bytes are.
enum HostBytes {
    /// An allocation of the buffer's length, owned by the buffer.
    Heap(NonNull<u8>),
    /// Inside the buffer (lengths up to [`INLINE_HOST_BYTES`]).
    Inline(InlineBytes),
}

/// Zero-initialised host memory, aligned to [`HOST_ALIGNMENT`] (to [`SMALL_HOST_ALIGNMENT`]
/// below `HOST_ALIGNMENT` bytes). Up to [`INLINE_HOST_BYTES`] bytes are held inline.
pub struct HostBuffer {
    bytes: HostBytes,
    len: usize,
}

// SAFETY: a HostBuffer exclusively owns its allocation (like Vec<u8>); shared access only hands
// out `&[u8]`, mutable access needs `&mut self`.
unsafe impl Send for HostBuffer {}
// SAFETY: see the Send impl; `&HostBuffer` only allows reads.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// Allocates `len` zeroed bytes.
    #[inline]
    pub fn zeroed(len: usize) -> Result<HostBuffer> {
        if len <= INLINE_HOST_BYTES {
            return Ok(Self::inline(len));
        }
        let layout = Self::layout(len)?;
        // SAFETY: `layout` has non-zero size (len > INLINE_HOST_BYTES).
        let ptr = Self::allocated(unsafe { std::alloc::alloc_zeroed(layout) }, len)?;
        Ok(HostBuffer {
            bytes: HostBytes::Heap(ptr),
            len,
        })
    }

    /// `len <= INLINE_HOST_BYTES` zeroed bytes held inline.
    #[inline]
    fn inline(len: usize) -> HostBuffer {
        HostBuffer {
            bytes: HostBytes::Inline(InlineBytes([0; INLINE_HOST_BYTES])),
            len,
        }
    }

    /// The result of an allocation of `len` bytes, or PyTorch's out-of-memory error.
    fn allocated(raw: *mut u8, len: usize) -> Result<NonNull<u8>> {
        NonNull::new(raw).ok_or_else(|| {
            Error::runtime(format!(
                "DefaultCPUAllocator: not enough memory: you tried to allocate {len} bytes."
            ))
        })
    }

    /// A buffer of `count` elements of `T` written by `init` instead of zeroed, for kernels that
    /// produce every element of a large new buffer (zeroing 16 MB costs as much as a
    /// memory-bound kernel reading and writing it).
    ///
    /// `init` receives the uninitialised elements and must return them initialised, as the
    /// very slice it received (same address and length; checked, an error otherwise). Safe
    /// code can only produce that slice by writing every element (`write_copy_of_slice`, or
    /// element writes followed by `assume_init_mut`, whose SAFETY argument is exactly that),
    /// and `T: Pod` has no padding, so every byte is then initialised. On an error or a panic
    /// in `init` the memory is freed unread.
    pub fn init_with<T: bytemuck::Pod>(
        count: usize,
        init: impl for<'a> FnOnce(&'a mut [MaybeUninit<T>]) -> Result<&'a mut [T]>,
    ) -> Result<HostBuffer> {
        const { assert!(std::mem::align_of::<T>() <= SMALL_HOST_ALIGNMENT) };
        let len = count
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::runtime("DefaultCPUAllocator: allocation size overflow"))?;
        if len <= INLINE_HOST_BYTES {
            // Small enough to live inline: start from zeroed (hence initialised) bytes.
            let mut buffer = Self::inline(len);
            let bytes = buffer.as_mut_slice();
            // SAFETY: `bytes` is `len = count * size_of::<T>()` initialised bytes, aligned to
            // SMALL_HOST_ALIGNMENT >= align_of::<T>() (checked above), exclusively borrowed for
            // the slice's lifetime; `MaybeUninit<T>` has no validity requirement.
            let slots: &mut [MaybeUninit<T>] =
                unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast(), count) };
            Self::initialise(slots, init)?;
            return Ok(buffer);
        }
        let layout = Self::layout(len)?;
        // SAFETY: `layout` has non-zero size (len > INLINE_HOST_BYTES).
        let ptr = Self::allocated(unsafe { std::alloc::alloc(layout) }, len)?;
        /// Frees the allocation (without reading it) unless forgotten.
        struct Uninit(NonNull<u8>, Layout);
        impl Drop for Uninit {
            fn drop(&mut self) {
                // SAFETY: `self.0` was returned by `alloc` with layout `self.1` and is owned by
                // this guard alone.
                unsafe { std::alloc::dealloc(self.0.as_ptr(), self.1) };
            }
        }
        let guard = Uninit(ptr, layout);
        // SAFETY: `ptr` is valid for `len = count * size_of::<T>()` bytes, aligned to at least
        // SMALL_HOST_ALIGNMENT >= align_of::<T>() (checked above), and exclusively owned by `guard`
        // for the slice's lifetime; `MaybeUninit<T>` has no validity requirement.
        let slots = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr().cast(), count) };
        Self::initialise(slots, init)?;
        std::mem::forget(guard);
        Ok(HostBuffer {
            bytes: HostBytes::Heap(ptr),
            len,
        })
    }

    /// Hands `slots` to `init` and checks that it gave back the very same slice (address and
    /// length), which is what proves every element written (see [`HostBuffer::init_with`]).
    fn initialise<T>(
        slots: &mut [MaybeUninit<T>],
        init: impl for<'a> FnOnce(&'a mut [MaybeUninit<T>]) -> Result<&'a mut [T]>,
    ) -> Result<()> {
        let (start, count) = (slots.as_ptr().cast::<u8>(), slots.len());
        let done = init(slots)?;
        if done.as_ptr().cast::<u8>() != start || done.len() != count {
            return Err(Error::runtime(
                "internal error: HostBuffer::init_with: init returned another slice than its own",
            ));
        }
        Ok(())
    }

    /// Copies `bytes` into a new buffer.
    pub fn from_bytes(bytes: &[u8]) -> Result<HostBuffer> {
        // Written once by the copy, not zeroed first (`Tensor::from_vec` comes through here).
        Self::init_with::<u8>(bytes.len(), |slots| Ok(slots.write_copy_of_slice(bytes)))
    }

    fn layout(len: usize) -> Result<Layout> {
        let align = if len < HOST_ALIGNMENT {
            SMALL_HOST_ALIGNMENT
        } else {
            HOST_ALIGNMENT
        };
        Layout::from_size_align(len, align)
            .map_err(|_| Error::runtime(format!("DefaultCPUAllocator: can't allocate {len} bytes")))
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-byte buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match &self.bytes {
            // SAFETY: `ptr` is valid for `len` initialised bytes (zeroed or written at
            // allocation); the borrow of `self` prevents concurrent mutation.
            HostBytes::Heap(ptr) => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), self.len) },
            HostBytes::Inline(b) => b.0.get(..self.len).unwrap_or_default(),
        }
    }

    /// The bytes, mutably.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match &mut self.bytes {
            // SAFETY: as in `as_slice`, and `&mut self` guarantees exclusive access.
            HostBytes::Heap(ptr) => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), self.len)
            },
            HostBytes::Inline(b) => b.0.get_mut(..self.len).unwrap_or_default(),
        }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if let HostBytes::Heap(ptr) = self.bytes
            && let Ok(layout) = Self::layout(self.len)
        {
            // SAFETY: `ptr` was returned by `alloc_zeroed` with this same layout and is freed
            // exactly once.
            unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }
}

/// The contents of a storage.
pub enum StorageData {
    /// Host memory (CPU tensors).
    Host(HostBuffer),
    /// No memory, only a size (meta tensors).
    Meta {
        /// The size the storage would have.
        nbytes: usize,
    },
    /// Memory owned by an external device.
    Device(Box<dyn DeviceMemory>),
}

impl StorageData {
    /// Size in bytes.
    pub fn nbytes(&self) -> usize {
        match self {
            StorageData::Host(b) => b.len(),
            StorageData::Meta { nbytes } => *nbytes,
            StorageData::Device(m) => m.nbytes(),
        }
    }

    /// The host bytes; an error for meta and device storage.
    pub fn host_bytes(&self) -> Result<&[u8]> {
        match self {
            StorageData::Host(b) => Ok(b.as_slice()),
            StorageData::Meta { .. } => Err(meta_data_error()),
            StorageData::Device(_) => Err(device_data_error()),
        }
    }

    /// The host bytes, mutably; an error for meta and device storage.
    pub fn host_bytes_mut(&mut self) -> Result<&mut [u8]> {
        match self {
            StorageData::Host(b) => Ok(b.as_mut_slice()),
            StorageData::Meta { .. } => Err(meta_data_error()),
            StorageData::Device(_) => Err(device_data_error()),
        }
    }

    /// The device memory, for backends.
    pub fn device_memory(&self) -> Option<&dyn DeviceMemory> {
        match self {
            StorageData::Device(m) => Some(m.as_ref()),
            _ => None,
        }
    }

    /// The device memory, mutably, for backends.
    pub fn device_memory_mut(&mut self) -> Option<&mut dyn DeviceMemory> {
        match self {
            StorageData::Device(m) => Some(m.as_mut()),
            _ => None,
        }
    }
}

fn meta_data_error() -> Error {
    Error::not_implemented(
        "Cannot access data pointer of Tensor that doesn't have storage (a meta tensor has shapes and dtypes but no data)",
    )
}

fn device_data_error() -> Error {
    Error::runtime(
        "cannot access the data of a device tensor from the host; copy it to the CPU first",
    )
}

struct StorageImpl {
    device: Device,
    resizable: bool,
    allocator: Option<Arc<dyn Allocator>>,
    /// Mirror of the data's size, readable without the lock.
    nbytes: AtomicUsize,
    data: RwLock<StorageData>,
}

/// A refcounted storage. Cloning shares it (like PyTorch's `Storage`).
#[derive(Clone)]
pub struct Storage {
    inner: Arc<StorageImpl>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Storage(device={}, nbytes={})",
            self.device(),
            self.nbytes()
        )
    }
}

impl Storage {
    // Always inlined into the constructors, so the storage data is built straight into the
    // new allocation (passed by value, it was copied from the stack with a store-forwarding
    // stall, half of `Storage::new`'s time).
    #[inline(always)]
    fn from_parts(
        device: Device,
        data: StorageData,
        allocator: Option<Arc<dyn Allocator>>,
        resizable: bool,
    ) -> Storage {
        let nbytes = data.nbytes();
        // Built in place: moving the value into its `Arc` went through a misaligned stack
        // copy whose store-forwarding stalls were a sixth of allocating a tiny tensor.
        let arc = Arc::<StorageImpl>::new_uninit();
        // Not `Arc::get_mut`: it proves uniqueness with an atomic compare-exchange (~10 ns
        // here), and a new `Arc` is unique by construction. `as_ptr` derives the pointer from
        // the allocation itself, not from a shared reference, so writing through it while no
        // other handle exists is sound (it is how `Arc::get_mut_unchecked` works).
        let p: *mut StorageImpl = Arc::as_ptr(&arc).cast_mut().cast();
        // Lists every field without `..`: a new field fails to compile here until it is
        // also written below.
        let _every_field_is_written = |s: &StorageImpl| {
            let StorageImpl {
                device: _,
                resizable: _,
                allocator: _,
                nbytes: _,
                data: _,
            } = s;
        };
        // SAFETY: `p` points to memory allocated for a `StorageImpl`, aligned, and exclusively
        // ours (the `Arc` was just created). Each write fills one field (every field, as the
        // pattern above checks) without reading or dropping the uninitialised old value; the
        // lock is only borrowed (`&mut`, nobody else can see it) after it was written.
        unsafe {
            addr_of_mut!((*p).device).write(device);
            addr_of_mut!((*p).resizable).write(resizable);
            addr_of_mut!((*p).allocator).write(allocator);
            addr_of_mut!((*p).nbytes).write(AtomicUsize::new(nbytes));
            // The lock first, around a placeholder, then the data through it: writing
            // `RwLock::new(data)` built the lock on the stack with the data at an odd offset,
            // and copying that stalled on store forwarding (half of `Storage::new`).
            let lock = addr_of_mut!((*p).data);
            lock.write(RwLock::new(StorageData::Meta { nbytes: 0 }));
            *(*lock).get_mut().unwrap_or_else(PoisonError::into_inner) = data;
        }
        Storage {
            // SAFETY: every field of the `StorageImpl` was written above.
            inner: unsafe { arc.assume_init() },
        }
    }

    /// A new resizable storage of `nbytes` zeroed bytes on `device` (host for CPU, size-only
    /// for meta, the device's installed allocator otherwise).
    #[inline]
    pub fn new(nbytes: usize, device: Device) -> Result<Storage> {
        match device.kind() {
            DeviceType::Cpu => Ok(Self::from_parts(
                device,
                StorageData::Host(HostBuffer::zeroed(nbytes)?),
                None,
                true,
            )),
            DeviceType::Meta => Ok(Self::from_parts(
                device,
                StorageData::Meta { nbytes },
                None,
                true,
            )),
            kind => {
                let allocator = get_allocator(kind).ok_or_else(|| {
                    Error::runtime(format!(
                        "no allocator is registered for device type {}; a backend must call set_allocator first",
                        kind.name()
                    ))
                })?;
                let memory = allocator.allocate(nbytes)?;
                Ok(Self::from_parts(
                    device,
                    StorageData::Device(memory),
                    Some(allocator),
                    true,
                ))
            }
        }
    }

    /// A resizable host storage of `count` elements of `T` written by `init` rather than zeroed
    /// (see [`HostBuffer::init_with`] for the contract).
    pub fn new_host_with<T: bytemuck::Pod>(
        count: usize,
        init: impl for<'a> FnOnce(&'a mut [MaybeUninit<T>]) -> Result<&'a mut [T]>,
    ) -> Result<Storage> {
        Ok(Self::from_parts(
            Device::CPU,
            StorageData::Host(HostBuffer::init_with(count, init)?),
            None,
            true,
        ))
    }

    /// A host storage holding a copy of `bytes`.
    pub fn from_host_bytes(bytes: &[u8]) -> Result<Storage> {
        Ok(Self::from_parts(
            Device::CPU,
            StorageData::Host(HostBuffer::from_bytes(bytes)?),
            None,
            true,
        ))
    }

    /// A storage on `device` around memory a backend already allocated.
    pub fn from_device_memory(
        device: Device,
        memory: Box<dyn DeviceMemory>,
        allocator: Arc<dyn Allocator>,
    ) -> Storage {
        Self::from_parts(device, StorageData::Device(memory), Some(allocator), true)
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// Size in bytes (read without locking).
    pub fn nbytes(&self) -> usize {
        self.inner.nbytes.load(Ordering::Acquire)
    }

    /// Whether `resize` is allowed.
    pub fn is_resizable(&self) -> bool {
        self.inner.resizable
    }

    /// Whether both handles refer to the same storage.
    pub fn is_alias_of(&self, other: &Storage) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A stable identity for ordering locks and comparing storages.
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as *const () as usize
    }

    /// Number of handles (tensors and clones) sharing this storage.
    pub fn use_count(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// Locks for reading.
    pub fn read(&self) -> Result<StorageGuard<'_>> {
        let held = HeldToken::acquire()?;
        let guard = self
            .inner
            .data
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(StorageGuard {
            inner: GuardInner::Read(guard),
            _held: held,
        })
    }

    /// Locks for writing.
    pub fn write(&self) -> Result<StorageGuard<'_>> {
        let held = HeldToken::acquire()?;
        let guard = self
            .inner
            .data
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(StorageGuard {
            inner: GuardInner::Write(guard),
            _held: held,
        })
    }

    /// Resizes to `nbytes`, keeping the common prefix of the contents (new bytes are zero).
    pub fn resize(&self, nbytes: usize) -> Result<()> {
        if !self.inner.resizable {
            return Err(Error::runtime(
                "Trying to resize storage that is not resizable",
            ));
        }
        let mut guard = self.write()?;
        let data = guard.data_mut()?;
        let keep = data.nbytes().min(nbytes);
        let new = match data {
            StorageData::Host(old) => {
                let mut fresh = HostBuffer::zeroed(nbytes)?;
                fresh.as_mut_slice()[..keep].copy_from_slice(&old.as_slice()[..keep]);
                StorageData::Host(fresh)
            }
            StorageData::Meta { .. } => StorageData::Meta { nbytes },
            StorageData::Device(old) => {
                let allocator = self.inner.allocator.as_ref().ok_or_else(|| {
                    Error::runtime("this device storage has no allocator and cannot be resized")
                })?;
                let mut fresh = allocator.allocate(nbytes)?;
                allocator.copy_bytes(fresh.as_mut(), old.as_ref(), keep)?;
                StorageData::Device(fresh)
            }
        };
        *data = new;
        self.inner.nbytes.store(nbytes, Ordering::Release);
        Ok(())
    }
}

thread_local! {
    static GUARDS_HELD: Cell<usize> = const { Cell::new(0) };
}

/// Counts storage accesses held by this thread; a second concurrent access is refused.
struct HeldToken(());

impl HeldToken {
    fn acquire() -> Result<HeldToken> {
        GUARDS_HELD.with(|c| {
            if c.get() > 0 {
                return Err(Error::runtime(
                    "internal error: a storage was accessed while this thread already holds storage locks (a kernel called back into an operator with data locks held); this would deadlock",
                ));
            }
            c.set(1);
            Ok(HeldToken(()))
        })
    }
}

impl Drop for HeldToken {
    fn drop(&mut self) {
        GUARDS_HELD.with(|c| c.set(0));
    }
}

enum GuardInner<'a> {
    Read(RwLockReadGuard<'a, StorageData>),
    Write(RwLockWriteGuard<'a, StorageData>),
}

/// A lock on one storage's data.
pub struct StorageGuard<'a> {
    inner: GuardInner<'a>,
    _held: HeldToken,
}

impl StorageGuard<'_> {
    /// The data.
    pub fn data(&self) -> &StorageData {
        match &self.inner {
            GuardInner::Read(g) => g,
            GuardInner::Write(g) => g,
        }
    }

    /// The data, mutably; an error for a read guard.
    pub fn data_mut(&mut self) -> Result<&mut StorageData> {
        match &mut self.inner {
            GuardInner::Read(_) => Err(Error::runtime(
                "internal error: tried to write through a read-only storage lock",
            )),
            GuardInner::Write(g) => Ok(g),
        }
    }
}

/// Whether a tensor's data is read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Shared access.
    Read,
    /// Exclusive access.
    Write,
}

/// Locks on several storages taken together (see the module documentation).
pub struct StorageLocks<'a> {
    guards: SmallVec<[GuardInner<'a>; 4]>,
    /// For each request, the index of its guard (requests on one storage share a guard).
    slot_of: SmallVec<[usize; 4]>,
    /// This thread's right to hold locks, from the first acquisition; dropped after the
    /// guards (fields drop in order).
    held: Option<HeldToken>,
}

impl<'a> StorageLocks<'a> {
    /// Locks every storage of `requests` at once, in address order; a storage requested for
    /// both reading and writing is locked once, exclusively.
    pub fn lock(requests: &[(&'a Storage, Access)]) -> Result<StorageLocks<'a>> {
        let mut locks = StorageLocks::unlocked();
        locks.acquire(requests)?;
        Ok(locks)
    }

    /// An empty set, to [`StorageLocks::acquire`] into. Infallible, so the caller can build it
    /// in place (a `Result` of it is moved out through `memcpy`).
    pub(crate) fn unlocked() -> StorageLocks<'a> {
        StorageLocks {
            guards: SmallVec::new(),
            slot_of: SmallVec::new(),
            held: None,
        }
    }

    /// [`StorageLocks::lock`] into a value the caller already holds (on an empty set of
    /// locks): the set is ~150 bytes, and returning it by value moved it through `memcpy`
    /// on every operator call.
    pub(crate) fn acquire(&mut self, requests: &[(&'a Storage, Access)]) -> Result<()> {
        if self.held.is_some() {
            return Err(Error::runtime(
                "internal error: storage locks acquired twice",
            ));
        }
        self.held = Some(HeldToken::acquire()?);
        // Distinct storages (by identity), each with the strongest access asked of it. Built
        // in place: operator calls lock two to four storages, and moving whole small vectors
        // around showed in the profile of tiny calls.
        let mut distinct: SmallVec<[(usize, &'a Storage, Access); 4]> = SmallVec::new();
        for (s, a) in requests {
            let id = s.id();
            match distinct.iter_mut().find(|d| d.0 == id) {
                Some(d) => {
                    if *a == Access::Write {
                        d.2 = Access::Write;
                    }
                }
                None => distinct.push((id, s, *a)),
            }
        }
        // Address order (see the module documentation). An insertion sort: the list is
        // a handful of entries, where the library sort's set-up costs more than the sorting.
        for i in 1..distinct.len() {
            let mut j = i;
            while j > 0 && distinct[j - 1].0 > distinct[j].0 {
                distinct.swap(j - 1, j);
                j -= 1;
            }
        }
        for (_, s, a) in &distinct {
            self.guards.push(match a {
                Access::Read => {
                    GuardInner::Read(s.inner.data.read().unwrap_or_else(PoisonError::into_inner))
                }
                Access::Write => {
                    GuardInner::Write(s.inner.data.write().unwrap_or_else(PoisonError::into_inner))
                }
            });
        }
        for (s, _) in requests {
            let id = s.id();
            self.slot_of
                .push(distinct.iter().position(|d| d.0 == id).unwrap_or(0));
        }
        Ok(())
    }

    /// The data of request `i`.
    pub fn data(&self, i: usize) -> Result<&StorageData> {
        match self.guards.get(self.slot(i)?) {
            Some(GuardInner::Read(g)) => Ok(g),
            Some(GuardInner::Write(g)) => Ok(g),
            None => Err(bad_request(i)),
        }
    }

    /// The data of request `i`, mutably (the request must have asked for `Write`, or share its
    /// storage with one that did).
    pub fn data_mut(&mut self, i: usize) -> Result<&mut StorageData> {
        let slot = self.slot(i)?;
        match self.guards.get_mut(slot) {
            Some(GuardInner::Write(g)) => Ok(g),
            Some(GuardInner::Read(_)) => Err(Error::runtime(format!(
                "internal error: operand {i} was locked for reading but written"
            ))),
            None => Err(bad_request(i)),
        }
    }

    /// Splits the locks for a computation: mutable data for each request in `writes`, shared
    /// data for every request (`None` for those sharing a storage with a written request, which
    /// must be read through the written data). Written requests must be in distinct storages.
    #[allow(clippy::type_complexity)]
    pub fn split_mut(
        &mut self,
        writes: &[usize],
    ) -> Result<(
        SmallVec<[&mut StorageData; 2]>,
        SmallVec<[Option<&StorageData>; 4]>,
    )> {
        let mut write_slots: SmallVec<[usize; 2]> = SmallVec::new();
        for &w in writes {
            let slot = self.slot(w)?;
            if write_slots.contains(&slot) {
                return Err(Error::runtime(
                    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.",
                ));
            }
            write_slots.push(slot);
        }
        let mut written: SmallVec<[Option<&mut StorageData>; 2]> =
            write_slots.iter().map(|_| None).collect();
        let mut shared: SmallVec<[Option<&StorageData>; 4]> = SmallVec::new();
        for (slot, guard) in self.guards.iter_mut().enumerate() {
            let data: &mut StorageData = match guard {
                GuardInner::Write(g) => g,
                GuardInner::Read(g) => {
                    if write_slots.contains(&slot) {
                        return Err(Error::runtime(format!(
                            "internal error: storage {slot} was locked for reading but is written"
                        )));
                    }
                    shared.push(Some(&**g));
                    continue;
                }
            };
            match write_slots.iter().position(|s| *s == slot) {
                Some(k) => {
                    written[k] = Some(data);
                    shared.push(None);
                }
                None => shared.push(Some(&*data)),
            }
        }
        let written: Option<SmallVec<[&mut StorageData; 2]>> = written.into_iter().collect();
        let written = written
            .ok_or_else(|| Error::runtime("internal error: a written storage has no lock"))?;
        let per_request = self
            .slot_of
            .iter()
            .map(|slot| shared.get(*slot).copied().flatten())
            .collect();
        Ok((written, per_request))
    }

    /// [`StorageLocks::split_mut`] for the common case of one written request, request 0 (an
    /// elementwise output), on host storage: its bytes mutably, with the bytes of every other
    /// request pushed onto `rest` in order (`None` where it shares request 0's storage).
    /// Cheaper than the general split, which matters for tiny tensors; `rest` is the caller's
    /// because returning a small vector by value stalled on store forwarding.
    pub fn split_first_host_mut<'s>(
        &'s mut self,
        rest: &mut SmallVec<[Option<&'s [u8]>; 4]>,
    ) -> Result<&'s mut [u8]> {
        let written_slot = self.slot(0)?;
        let mut written = None;
        let mut per_slot: SmallVec<[Option<&[u8]>; 4]> = SmallVec::new();
        for (slot, guard) in self.guards.iter_mut().enumerate() {
            if slot != written_slot {
                per_slot.push(Some(match guard {
                    GuardInner::Write(g) => g.host_bytes()?,
                    GuardInner::Read(g) => g.host_bytes()?,
                }));
                continue;
            }
            match guard {
                GuardInner::Write(g) => written = Some(g.host_bytes_mut()?),
                GuardInner::Read(_) => {
                    return Err(Error::runtime(
                        "internal error: operand 0 was locked for reading but is written",
                    ));
                }
            }
            per_slot.push(None);
        }
        let written = written
            .ok_or_else(|| Error::runtime("internal error: a written storage has no lock"))?;
        for slot in &self.slot_of[1..] {
            rest.push(per_slot.get(*slot).copied().flatten());
        }
        Ok(written)
    }

    /// Whether requests `i` and `j` share a storage.
    pub fn same_storage(&self, i: usize, j: usize) -> bool {
        matches!((self.slot_of.get(i), self.slot_of.get(j)), (Some(a), Some(b)) if a == b)
    }

    fn slot(&self, i: usize) -> Result<usize> {
        self.slot_of.get(i).copied().ok_or_else(|| bad_request(i))
    }
}

fn bad_request(i: usize) -> Error {
    Error::runtime(format!("internal error: no storage lock for operand {i}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_buffers_are_aligned_and_zeroed() {
        let b = HostBuffer::zeroed(100).unwrap();
        assert_eq!(b.as_slice().as_ptr() as usize % HOST_ALIGNMENT, 0);
        assert!(b.as_slice().iter().all(|x| *x == 0));
        for len in [1, 8, 63] {
            let small = HostBuffer::zeroed(len).unwrap();
            assert_eq!(small.as_slice().as_ptr() as usize % SMALL_HOST_ALIGNMENT, 0);
            assert!(small.as_slice().iter().all(|x| *x == 0));
        }
        let e = HostBuffer::zeroed(0).unwrap();
        assert!(e.is_empty());
        assert_eq!(e.as_slice().as_ptr() as usize % SMALL_HOST_ALIGNMENT, 0);
        // Up to INLINE_HOST_BYTES the bytes live in the buffer itself, past it on the heap.
        for len in [INLINE_HOST_BYTES, INLINE_HOST_BYTES + 1] {
            let mut b = HostBuffer::zeroed(len).unwrap();
            let inside = b.as_slice().as_ptr_range().start as usize;
            let own = &b as *const HostBuffer as usize;
            let inline = (own..own + std::mem::size_of::<HostBuffer>()).contains(&inside);
            assert_eq!(inline, len <= INLINE_HOST_BYTES, "{len}");
            b.as_mut_slice()[len - 1] = 9;
            assert_eq!(b.as_slice().len(), len);
            assert_eq!(b.as_slice()[len - 1], 9);
        }
    }

    #[test]
    fn init_with_takes_the_initialised_slice_back() {
        let b = HostBuffer::init_with::<u32>(5, |s| Ok(s.write_copy_of_slice(&[7; 5]))).unwrap();
        assert_eq!(b.len(), 20);
        assert_eq!(b.as_slice().as_ptr() as usize % SMALL_HOST_ALIGNMENT, 0);
        let big =
            HostBuffer::init_with::<u32>(64, |s| Ok(s.write_copy_of_slice(&[3; 64]))).unwrap();
        assert_eq!(big.as_slice().as_ptr() as usize % HOST_ALIGNMENT, 0);
        assert_eq!(bytemuck::cast_slice::<u8, u32>(b.as_slice()), &[7; 5]);
        let e = HostBuffer::init_with::<f64>(0, |s| Ok(s.write_copy_of_slice(&[]))).unwrap();
        assert!(e.is_empty());
        // Only the slice handed out proves initialisation; anything else is refused.
        let e = HostBuffer::init_with::<u8>(4, |s| Ok(&mut s.write_copy_of_slice(&[1; 4])[1..]));
        let e = e.map(|b| b.len()).unwrap_err();
        assert!(e.message().contains("another slice"));
        let e = HostBuffer::init_with::<u8>(4, |_| Err(Error::runtime("no")));
        let e = e.map(|b| b.len()).unwrap_err();
        assert_eq!(e.message(), "no");
        let s =
            Storage::new_host_with::<u16>(3, |s| Ok(s.write_copy_of_slice(&[1, 2, 3]))).unwrap();
        assert_eq!(
            s.read().unwrap().data().host_bytes().unwrap(),
            &[1, 0, 2, 0, 3, 0]
        );
    }

    #[test]
    fn resize_between_inline_and_heap_bytes_keeps_the_prefix() {
        let s = Storage::from_host_bytes(&[5, 6, 7]).unwrap();
        s.resize(INLINE_HOST_BYTES + 40).unwrap();
        let grown = s.read().unwrap().data().host_bytes().unwrap().to_vec();
        assert_eq!(&grown[..3], &[5, 6, 7]);
        assert!(grown[3..].iter().all(|b| *b == 0));
        s.resize(2).unwrap();
        assert_eq!(s.read().unwrap().data().host_bytes().unwrap(), &[5, 6]);
    }

    #[test]
    fn resize_keeps_prefix() {
        let s = Storage::from_host_bytes(&[1, 2, 3, 4]).unwrap();
        s.resize(6).unwrap();
        assert_eq!(s.nbytes(), 6);
        assert_eq!(
            s.read().unwrap().data().host_bytes().unwrap(),
            &[1, 2, 3, 4, 0, 0]
        );
        s.resize(2).unwrap();
        assert_eq!(s.read().unwrap().data().host_bytes().unwrap(), &[1, 2]);
        let m = Storage::new(8, Device::META).unwrap();
        m.resize(16).unwrap();
        assert_eq!(m.nbytes(), 16);
        assert!(m.read().unwrap().data().host_bytes().is_err());
    }

    #[test]
    fn nested_access_is_refused_not_deadlocked() {
        let s = Storage::from_host_bytes(&[1]).unwrap();
        let _g = s.write().unwrap();
        let e = s.read().map(|_| ()).unwrap_err();
        assert!(e.message().contains("would deadlock"));
    }

    #[test]
    fn shared_storage_locked_once_exclusively() {
        let s = Storage::from_host_bytes(&[0; 8]).unwrap();
        let t = Storage::from_host_bytes(&[7; 8]).unwrap();
        let mut locks =
            StorageLocks::lock(&[(&s, Access::Read), (&t, Access::Read), (&s, Access::Write)])
                .unwrap();
        assert!(locks.same_storage(0, 2));
        assert!(!locks.same_storage(0, 1));
        locks.data_mut(0).unwrap().host_bytes_mut().unwrap()[0] = 9;
        assert_eq!(locks.data(2).unwrap().host_bytes().unwrap()[0], 9);
        assert!(locks.data_mut(1).is_err());
    }

    /// Threads locking the same three storages, each listing them in a different order, all
    /// finish: the locks are taken in one global (address) order whatever the request order.
    #[test]
    fn opposite_request_orders_do_not_deadlock() {
        let st: Vec<Storage> = (0..3)
            .map(|_| Storage::from_host_bytes(&[0; 8]).unwrap())
            .collect();
        let orders = [[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1]];
        let (done, finished) = std::sync::mpsc::channel();
        for order in orders {
            let (st, done) = (st.clone(), done.clone());
            std::thread::spawn(move || {
                for _ in 0..2000 {
                    let req: Vec<(&Storage, Access)> =
                        order.iter().map(|&i| (&st[i], Access::Write)).collect();
                    let mut locks = StorageLocks::lock(&req).unwrap();
                    for k in 0..3 {
                        let bytes = locks.data_mut(k).unwrap().host_bytes_mut().unwrap();
                        bytes[0] = bytes[0].wrapping_add(1);
                    }
                }
                done.send(()).unwrap();
            });
        }
        for _ in orders {
            // A deadlock fails here instead of hanging the test run.
            let timeout = std::time::Duration::from_secs(60);
            finished.recv_timeout(timeout).expect("threads deadlocked");
        }
        for s in &st {
            // 4 threads x 2000 increments, modulo 256.
            assert_eq!(
                s.read().unwrap().data().host_bytes().unwrap()[0],
                (8000 % 256) as u8
            );
        }
    }

    #[test]
    fn device_storage_needs_an_allocator() {
        let e = Storage::new(4, Device::new(DeviceType::Hpu, Some(0))).unwrap_err();
        assert!(e.message().contains("no allocator"));
        assert!(set_allocator(DeviceType::Cpu, Arc::new(NoAlloc)).is_err());
    }

    struct NoAlloc;
    impl Allocator for NoAlloc {
        fn allocate(&self, _: usize) -> Result<Box<dyn DeviceMemory>> {
            Err(Error::runtime("no"))
        }
        fn copy_bytes(
            &self,
            _: &mut dyn DeviceMemory,
            _: &dyn DeviceMemory,
            _: usize,
        ) -> Result<()> {
            Ok(())
        }
    }
}
