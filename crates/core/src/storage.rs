//! Storage: the refcounted, device-tagged, resizable memory that tensors view.
//!
//! # Concurrency
//!
//! Code reads or writes tensor data only through [`crate::tensor::with_tensors`] (or the
//! single-storage guards [`Storage::read`] and [`Storage::write`]), which
//!
//! 1. snapshots each tensor's geometry,
//! 2. takes every distinct storage involved at once, shared for reads and exclusive if any
//!    tensor on it is written ([`crate::access`]: a storage is accessed without a lock by the
//!    thread that created it until another thread needs its data, and under a reader–writer
//!    lock from then on),
//! 3. re-checks every geometry against the storage's size, and
//! 4. hands out byte slices whose borrows end with the closure.
//!
//! Two threads mutating tensors that share storage are therefore serialised, never racing:
//! the worst outcome of unsynchronised user code is one of the possible interleavings of
//! whole operations, not undefined behaviour. A thread may not start a new data access while
//! it already holds one (a kernel must not call back into operators with data held); that
//! would deadlock, so it is refused with an error instead.

pub use crate::access::{Access, StorageGuard, StorageLocks};

use crate::access::AccessControl;
use crate::device::{Device, DeviceType};
use crate::shared::Shared;
use crate::{Error, Result};
use std::alloc::Layout;
use std::any::Any;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr::{NonNull, addr_of_mut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

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
    /// A private anonymous memory mapping of the buffer's length rounded up to whole pages,
    /// owned by the buffer (large zeroed buffers on Linux; see [`mapped`]).
    #[cfg(target_os = "linux")]
    Mapped(NonNull<u8>),
    /// Memory owned by someone else (a NumPy array, a DLPack producer), kept alive by
    /// `owner`, which is dropped with the buffer (see [`HostBuffer::from_external`]).
    External {
        /// The first byte.
        ptr: NonNull<u8>,
        /// Keeps the memory alive; its drop releases it (never read, only dropped).
        #[allow(dead_code)]
        owner: ExternalOwner,
    },
}

/// What keeps externally owned host memory alive: dropped when the storage is.
pub type ExternalOwner = Box<dyn Any + Send + Sync>;

/// Zeroed host buffers of at least this many bytes are fresh memory mappings.
///
/// The general allocator zeroes an aligned allocation by writing every byte on the calling
/// thread. Above glibc's largest mmap threshold (32 MiB) every such allocation is a fresh
/// mapping, so that write faulted in every page, one thread alone, before the kernel
/// overwrote it all: most of a functional 16M-element `add`. A mapping of our own is zero
/// already; its pages are faulted in (zero-filled by the kernel) as the kernel's threads
/// first write them, and it asks for transparent huge pages, so a 64 MiB buffer takes 32
/// faults rather than 16384 where the system allows them (measured here: 5.6-7.7 ms for that
/// `add` against 34 ms before and 22.7 ms without the huge-page hint; PyTorch 13.7 ms).
/// Smaller buffers stay with the allocator, which recycles freed memory instead of mapping
/// fresh pages (a 4 MiB `matmul` output mapped afresh each call cost 2-3 ms more).
#[cfg(target_os = "linux")]
pub const MAPPED_HOST_BYTES: usize = 32 << 20;

/// The threshold in use: [`MAPPED_HOST_BYTES`] unless [`set_mapped_host_bytes`] changed it.
#[cfg(target_os = "linux")]
static MAPPED_THRESHOLD: AtomicUsize = AtomicUsize::new(MAPPED_HOST_BYTES);

/// Sets the size from which zeroed host buffers are fresh memory mappings (`usize::MAX`:
/// never), returning the previous one. For measurements: a counting global allocator (the
/// lazy backend's peak-memory test) sees every buffer only when none is mapped.
#[cfg(target_os = "linux")]
pub fn set_mapped_host_bytes(n: usize) -> usize {
    MAPPED_THRESHOLD.swap(n, Ordering::Relaxed)
}

#[cfg(target_os = "linux")]
mod mapped {
    //! Large zeroed host buffers as anonymous memory mappings.

    use std::ptr::NonNull;

    /// `len` rounded up to whole pages (4 KiB multiples suffice for `mmap`/`munmap` of the
    /// same length: the kernel rounds both the same way).
    pub(super) fn mapping_len(len: usize) -> usize {
        len.div_ceil(4096).saturating_mul(4096)
    }

    /// Maps `len` zeroed bytes (page-aligned, so aligned to every SIMD width), asking for
    /// huge pages; `None` if the kernel refuses.
    pub(super) fn map_zeroed(len: usize) -> Option<NonNull<u8>> {
        let size = mapping_len(len);
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing has no
        // preconditions; the result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        // A hint only: failure (no transparent huge pages here) leaves ordinary pages.
        // SAFETY: `ptr..ptr + size` is the mapping just created.
        unsafe { libc::madvise(ptr, size, libc::MADV_HUGEPAGE) };
        NonNull::new(ptr.cast())
    }

    /// Unmaps a mapping made by [`map_zeroed`] for `len` bytes.
    ///
    /// # Safety
    /// `ptr` must come from `map_zeroed(len)` and not be used afterwards.
    pub(super) unsafe fn unmap(ptr: NonNull<u8>, len: usize) {
        // SAFETY: per the contract, this is exactly one whole mapping of this length.
        unsafe { libc::munmap(ptr.as_ptr().cast(), mapping_len(len)) };
    }
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
        #[cfg(target_os = "linux")]
        if len >= MAPPED_THRESHOLD.load(Ordering::Relaxed)
            && let Some(ptr) = mapped::map_zeroed(len)
        {
            return Ok(HostBuffer {
                bytes: HostBytes::Mapped(ptr),
                len,
            });
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
        NonNull::new(raw).ok_or_else(|| crate::alloc::out_of_memory(len))
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
            .ok_or_else(|| crate::alloc::out_of_memory(usize::MAX))?;
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

    /// A buffer over `len` bytes at `ptr` that someone else owns; `owner` keeps them alive and
    /// is dropped with the buffer. No byte is copied.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` bytes, and stay so until `owner` is
    /// dropped; nothing else in Rust may hold a reference to those bytes meanwhile. Writes by
    /// the owner's side (a NumPy array sharing the memory) while a kernel runs are a data race
    /// of the user's program, as in PyTorch, which this type cannot prevent.
    pub unsafe fn from_external(ptr: NonNull<u8>, len: usize, owner: ExternalOwner) -> HostBuffer {
        HostBuffer {
            bytes: HostBytes::External { ptr, owner },
            len,
        }
    }

    fn layout(len: usize) -> Result<Layout> {
        let align = if len < HOST_ALIGNMENT {
            SMALL_HOST_ALIGNMENT
        } else {
            HOST_ALIGNMENT
        };
        // Only sizes beyond `isize::MAX` are refused here; storage sizes stop at `i64::MAX`.
        Layout::from_size_align(len, align).map_err(|_| crate::alloc::out_of_memory(len))
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
            // SAFETY: as for `Heap`: the mapping spans at least `len` bytes, zeroed by the
            // kernel or written since.
            #[cfg(target_os = "linux")]
            HostBytes::Mapped(ptr) => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), self.len) },
            // SAFETY: `from_external`'s contract: `ptr` is valid for reads and writes of `len`
            // bytes while `owner` lives, which is as long as the buffer.
            HostBytes::External { ptr, .. } => unsafe {
                std::slice::from_raw_parts(ptr.as_ptr(), self.len)
            },
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
            // SAFETY: as for `Heap`.
            #[cfg(target_os = "linux")]
            HostBytes::Mapped(ptr) => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), self.len)
            },
            // SAFETY: as in `as_slice`; `&mut self` excludes other Rust references (writers
            // outside Rust, such as NumPy, are the caller's concern: `from_external`).
            HostBytes::External { ptr, .. } => unsafe {
                std::slice::from_raw_parts_mut(ptr.as_ptr(), self.len)
            },
            HostBytes::Inline(b) => b.0.get_mut(..self.len).unwrap_or_default(),
        }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        match self.bytes {
            HostBytes::Heap(ptr) => {
                if let Ok(layout) = Self::layout(self.len) {
                    // SAFETY: `ptr` was returned by `alloc_zeroed` or `alloc` with this same
                    // layout and is freed exactly once.
                    unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
                }
            }
            // SAFETY: `ptr` was mapped by `map_zeroed(self.len)` and is unmapped exactly once.
            #[cfg(target_os = "linux")]
            HostBytes::Mapped(ptr) => unsafe { mapped::unmap(ptr, self.len) },
            // The owner is dropped with the enum, releasing the memory.
            HostBytes::External { .. } | HostBytes::Inline(_) => {}
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

pub(crate) struct StorageImpl {
    device: Device,
    resizable: bool,
    /// Set once the host address was handed out ([`Storage::export_host_ptr`]): from then on
    /// the bytes never move (`resize` refuses), so the exported pointer cannot dangle.
    exported: AtomicBool,
    allocator: Option<Arc<dyn Allocator>>,
    /// Mirror of the data's size, readable without holding the data.
    nbytes: AtomicUsize,
    /// Who may touch `data`, and when ([`crate::access`]).
    pub(crate) access: AccessControl,
    /// The bytes; read and written only while held through `access`.
    pub(crate) data: UnsafeCell<StorageData>,
}

// SAFETY: `data` is only dereferenced by the holders of an access taken through `access`
// (`crate::access::StorageLocks`), which grants shared access to readers and exclusive
// access to one writer at a time across threads; every other field is immutable or atomic.
// `StorageData` itself is `Send + Sync` (host bytes, or `Send + Sync` device memory).
unsafe impl Sync for StorageImpl {}

/// A refcounted storage. Cloning shares it (like PyTorch's `Storage`).
#[derive(Clone)]
pub struct Storage {
    inner: Shared<StorageImpl>,
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
        // Built in place: moving the value into its allocation went through a misaligned
        // stack copy whose store-forwarding stalls were a sixth of allocating a tiny tensor.
        // Lists every field without `..`: a new field fails to compile here until it is
        // also written below.
        let _every_field_is_written = |s: &StorageImpl| {
            let StorageImpl {
                device: _,
                resizable: _,
                exported: _,
                allocator: _,
                nbytes: _,
                access: _,
                data: _,
            } = s;
        };
        let write = |p: *mut StorageImpl| {
            // SAFETY: `p` points to a new allocation for a `StorageImpl`, aligned and
            // exclusively ours (`Shared::new_in_place`). Each write fills one field (every
            // field, as the pattern above checks) without reading or dropping the
            // uninitialised old value. The new storage is owned by the creating thread (see
            // `crate::access`).
            unsafe {
                addr_of_mut!((*p).device).write(device);
                addr_of_mut!((*p).resizable).write(resizable);
                addr_of_mut!((*p).exported).write(AtomicBool::new(false));
                addr_of_mut!((*p).allocator).write(allocator);
                addr_of_mut!((*p).nbytes).write(AtomicUsize::new(nbytes));
                addr_of_mut!((*p).access).write(AccessControl::owned_by_current_thread());
                addr_of_mut!((*p).data).write(UnsafeCell::new(data));
            }
        };
        Storage {
            // SAFETY: `write` initialises every field of the value.
            inner: unsafe { Shared::new_in_place(write) },
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

    /// A non-resizable host storage over `nbytes` bytes at `ptr` owned by someone else
    /// (`owner`, dropped when the last handle to the storage is): memory shared with NumPy or
    /// a DLPack producer, without a copy.
    ///
    /// # Safety
    /// As [`HostBuffer::from_external`]: `ptr` valid for reads and writes of `nbytes` bytes
    /// until `owner` is dropped, with no other Rust reference to them.
    pub unsafe fn from_external_host(
        ptr: NonNull<u8>,
        nbytes: usize,
        owner: ExternalOwner,
    ) -> Storage {
        // SAFETY: forwarded from this function's contract.
        let buffer = unsafe { HostBuffer::from_external(ptr, nbytes, owner) };
        Self::from_parts(Device::CPU, StorageData::Host(buffer), None, false)
    }

    /// The address of a host storage's first byte, for sharing the memory outside Rust
    /// (NumPy, DLPack). From this call on the bytes never move: [`Storage::resize`] refuses to
    /// change the size, so the address stays valid for as long as this storage lives. Taken
    /// under a read access, so it never observes a resize in progress. Meta and device
    /// storages have no host address (an error).
    pub fn export_host_ptr(&self) -> Result<NonNull<u8>> {
        let guard = self.read()?;
        let bytes = guard.data().host_bytes()?;
        self.inner.exported.store(true, Ordering::Release);
        // The slice of an empty buffer still has a non-null, aligned address.
        Ok(NonNull::from(bytes).cast())
    }

    /// Whether [`Storage::export_host_ptr`] has handed out this storage's address.
    pub fn is_exported(&self) -> bool {
        self.inner.exported.load(Ordering::Acquire)
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
        Shared::ptr_eq(&self.inner, &other.inner)
    }

    /// A stable identity for ordering locks and comparing storages.
    pub fn id(&self) -> usize {
        self.inner.as_ptr() as usize
    }

    /// Number of handles (tensors and clones) sharing this storage.
    pub fn use_count(&self) -> usize {
        self.inner.count()
    }

    /// The shared object, for the access protocol.
    pub(crate) fn inner(&self) -> &StorageImpl {
        &self.inner
    }

    /// Holds the data for reading (see [`crate::access`]).
    pub fn read(&self) -> Result<StorageGuard<'_>> {
        StorageGuard::new(self, Access::Read)
    }

    /// Holds the data for writing (see [`crate::access`]).
    pub fn write(&self) -> Result<StorageGuard<'_>> {
        StorageGuard::new(self, Access::Write)
    }

    /// Resizes to `nbytes`, keeping the common prefix of the contents (new bytes are zero).
    pub fn resize(&self, nbytes: usize) -> Result<()> {
        if !self.inner.resizable {
            return Err(Error::runtime(
                "Trying to resize storage that is not resizable",
            ));
        }
        let mut guard = self.write()?;
        // Checked under the write access: an export either happened before it (refused here)
        // or waits for it (and sees the new buffer).
        if self.inner.exported.load(Ordering::Acquire) {
            if guard.data().nbytes() == nbytes {
                return Ok(());
            }
            return Err(Error::runtime(
                "Trying to resize storage that is not resizable",
            ));
        }
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

    /// Large zeroed buffers (mapped on Linux) are zero, aligned, writable to their last byte,
    /// keep their prefix across a resize, and are freed (several buffers are allocated in
    /// turn).
    #[test]
    fn large_zeroed_buffers_are_zero_aligned_and_writable() {
        let len = (33 << 20) + 5;
        for round in 0..8u8 {
            let mut b = HostBuffer::zeroed(len).unwrap();
            assert_eq!(b.as_slice().as_ptr() as usize % HOST_ALIGNMENT, 0);
            assert_eq!(b.len(), len);
            let bytes = b.as_mut_slice();
            assert!(bytes.iter().step_by(4093).all(|x| *x == 0));
            assert_eq!(bytes[len - 1], 0);
            bytes[0] = round;
            bytes[len - 1] = round.wrapping_add(1);
            assert_eq!(
                (b.as_slice()[0], b.as_slice()[len - 1]),
                (round, round.wrapping_add(1))
            );
        }
        let s = Storage::from_host_bytes(&[9, 8, 7]).unwrap();
        s.resize(len).unwrap();
        let grown = s.read().unwrap().data().host_bytes().unwrap().to_vec();
        assert_eq!(&grown[..3], &[9, 8, 7]);
        assert!(grown[3..].iter().all(|b| *b == 0));
        s.resize(4).unwrap();
        assert_eq!(
            s.read().unwrap().data().host_bytes().unwrap(),
            &[9, 8, 7, 0]
        );
    }

    /// A host allocation the system refuses is PyTorch's error, for new buffers and for a
    /// storage grown by `resize` (which then keeps its old size and bytes).
    #[test]
    fn refused_allocations_are_errors() {
        let oom = |n: usize| {
            format!(
                "DefaultCPUAllocator: can't allocate memory: you tried to allocate {n} bytes. Error code 12 (Cannot allocate memory)"
            )
        };
        // 2^62 bytes: more than any machine's address space.
        let huge = 1usize << 62;
        let e = HostBuffer::zeroed(huge).map(|b| b.len()).unwrap_err();
        assert_eq!(e.message(), oom(huge));
        let e = HostBuffer::init_with::<u64>(huge / 8, |_| Err(Error::runtime("not called")));
        assert_eq!(e.map(|b| b.len()).unwrap_err().message(), oom(huge));
        let s = Storage::from_host_bytes(&[1, 2, 3]).unwrap();
        assert_eq!(s.resize(huge).unwrap_err().message(), oom(huge));
        assert_eq!(s.nbytes(), 3);
        assert_eq!(s.read().unwrap().data().host_bytes().unwrap(), &[1, 2, 3]);
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

    /// External memory is used in place (no copy), is not resizable, and its owner is dropped
    /// exactly when the last handle to the storage goes.
    #[test]
    fn external_host_memory_is_shared_and_released_with_the_storage() {
        use std::sync::atomic::AtomicUsize;
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Owner(Vec<u64>);
        impl Drop for Owner {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::SeqCst);
            }
        }
        let mut owner = Box::new(Owner(vec![1, 2, 3]));
        let ptr = NonNull::new(owner.0.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: the Vec's 24 bytes stay allocated until `owner` (moved into the storage,
        // the Vec's heap block does not move with it) is dropped, and nothing else uses them.
        let s = unsafe { Storage::from_external_host(ptr, 24, owner) };
        assert!(!s.is_resizable());
        assert_eq!(s.export_host_ptr().unwrap(), ptr);
        {
            let mut g = s.write().unwrap();
            let bytes = g.data_mut().unwrap().host_bytes_mut().unwrap();
            assert_eq!(bytes.as_ptr(), ptr.as_ptr());
            assert_eq!(bytes[8], 2);
            bytes[16] = 7;
        }
        assert_eq!(
            s.resize(32).unwrap_err().message(),
            "Trying to resize storage that is not resizable"
        );
        let second = s.clone();
        drop(s);
        assert_eq!(DROPS.load(Ordering::SeqCst), 0);
        assert_eq!(second.read().unwrap().data().host_bytes().unwrap()[16], 7);
        drop(second);
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    }

    /// Once its address is exported a storage never moves its bytes: a resize to another
    /// size is refused (the exported pointer would dangle), one to the same size is a no-op.
    #[test]
    fn exported_storage_keeps_its_address() {
        for len in [4, 100] {
            let s = Storage::from_host_bytes(&vec![5; len]).unwrap();
            assert!(!s.is_exported());
            s.resize(len + 1).unwrap();
            let p = s.export_host_ptr().unwrap();
            assert!(s.is_exported());
            s.resize(len + 1).unwrap();
            assert_eq!(
                s.resize(len + 8).unwrap_err().message(),
                "Trying to resize storage that is not resizable"
            );
            assert_eq!(s.export_host_ptr().unwrap(), p);
            assert_eq!(s.read().unwrap().data().host_bytes().unwrap()[0], 5);
        }
        let m = Storage::new(8, Device::META).unwrap();
        assert!(m.export_host_ptr().is_err());
        assert!(!m.is_exported());
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
