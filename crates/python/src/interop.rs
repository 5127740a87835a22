//! Memory shared with NumPy and DLPack without copies (docs/python-plan.md §5).
//!
//! - `from_numpy(a)` reads the array's `__array_interface__` and wraps its memory in a
//!   non-resizable storage whose owner is a reference to the array
//!   ([`Storage::from_external_host`]): constant time in the size.
//! - `Tensor.numpy()` hands NumPy an object exposing `__array_interface__` over the tensor's
//!   storage ([`Storage::export_host_ptr`], after which the storage never moves its bytes);
//!   the object keeps the tensor alive and becomes the array's `.base`.
//! - DLPack: `__dlpack__` exports a `DLManagedTensorVersioned` (capsule `"dltensor_versioned"`)
//!   when the consumer asks for version 1, else a `DLManagedTensor` (`"dltensor"`);
//!   `from_dlpack` consumes either, renames the capsule to `used_*` as the protocol requires,
//!   and calls the producer's deleter when the last tensor over the memory is dropped.
//!
//! As in PyTorch, memory shared with NumPy is outside switchyard's access protocol: a NumPy
//! write racing a kernel on another thread is a race of the user's program.

use std::ffi::{CStr, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use switchyard_core::{Device, DeviceType, ScalarType, Storage, Tensor};

use crate::errors::{OrRaise, guard};
use crate::tensor::PyTensor;

// ---------------------------------------------------------------------------------------------
// NumPy

/// The `__array_interface__` type string of a dtype (native byte order), or PyTorch's error for
/// one NumPy lacks.
fn numpy_typestr(ty: ScalarType) -> PyResult<&'static str> {
    let native = cfg!(target_endian = "little");
    Ok(match (ty, native) {
        (ScalarType::Double, true) => "<f8",
        (ScalarType::Float, true) => "<f4",
        (ScalarType::Half, true) => "<f2",
        (ScalarType::Long, true) => "<i8",
        (ScalarType::Int, true) => "<i4",
        (ScalarType::Short, true) => "<i2",
        (ScalarType::Double, false) => ">f8",
        (ScalarType::Float, false) => ">f4",
        (ScalarType::Half, false) => ">f2",
        (ScalarType::Long, false) => ">i8",
        (ScalarType::Int, false) => ">i4",
        (ScalarType::Short, false) => ">i2",
        (ScalarType::Char, _) => "|i1",
        (ScalarType::Byte, _) => "|u1",
        (ScalarType::Bool, _) => "|b1",
        (ScalarType::BFloat16, _) => {
            return Err(PyTypeError::new_err("Got unsupported ScalarType BFloat16"));
        }
    })
}

/// The dtype of an `__array_interface__` type string without its byte-order character.
fn dtype_of_numpy_kind(kind: &str) -> Option<ScalarType> {
    Some(match kind {
        "f8" => ScalarType::Double,
        "f4" => ScalarType::Float,
        "f2" => ScalarType::Half,
        "i8" => ScalarType::Long,
        "i4" => ScalarType::Int,
        "i2" => ScalarType::Short,
        "i1" => ScalarType::Char,
        "u1" => ScalarType::Byte,
        "b1" => ScalarType::Bool,
        _ => return None,
    })
}

/// The byte span `[min, max]` (relative to the first element) that a strided view of
/// `itemsize`-byte elements touches; `None` for an empty view.
fn byte_extent(sizes: &[i64], strides: &[i64], itemsize: i64) -> Option<(i64, i64)> {
    if sizes.contains(&0) {
        return None;
    }
    let (mut lo, mut hi) = (0i64, 0i64);
    for (&n, &s) in sizes.iter().zip(strides) {
        let reach = (n - 1).saturating_mul(s);
        if reach < 0 {
            lo = lo.saturating_add(reach);
        } else {
            hi = hi.saturating_add(reach);
        }
    }
    Some((
        lo.saturating_mul(itemsize),
        hi.saturating_add(1).saturating_mul(itemsize),
    ))
}

/// Wraps `nbytes` bytes at `ptr` in a tensor of the given geometry whose storage keeps `owner`
/// alive. `ptr` is the storage's first byte; `offset` the first element's index in it.
///
/// # Safety
/// `ptr..ptr + nbytes` must be valid for reads and writes while `owner` lives.
unsafe fn tensor_over_external(
    ptr: NonNull<u8>,
    nbytes: usize,
    owner: switchyard_core::storage::ExternalOwner,
    sizes: &[i64],
    strides: &[i64],
    offset: i64,
    dtype: ScalarType,
) -> switchyard_core::Result<Tensor> {
    // SAFETY: forwarded from this function's contract.
    let storage = unsafe { Storage::from_external_host(ptr, nbytes, owner) };
    Tensor::from_storage(storage, sizes, strides, offset, dtype)
}

fn not_aligned(what: &str, itemsize: i64) -> PyErr {
    PyValueError::new_err(format!(
        "{what}: the data is not aligned to its {itemsize}-byte element size, which switchyard's kernels need. Copy it first (for NumPy: numpy.ascontiguousarray(a).copy())."
    ))
}

/// Whether the read-only warning was given (PyTorch gives it once per process).
static READ_ONLY_WARNED: AtomicBool = AtomicBool::new(false);

/// `switchyard.from_numpy(a)`: a tensor sharing `a`'s memory (no copy), with PyTorch's checks
/// and messages.
#[pyfunction]
pub fn from_numpy<'py>(array: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTensor>> {
    let py = array.py();
    guard(|| {
        let numpy = py.import("numpy")?;
        if !array.is_instance(&numpy.getattr("ndarray")?)? {
            return Err(PyTypeError::new_err(format!(
                "expected np.ndarray (got {})",
                array.get_type().name()?
            )));
        }
        let iface = array.getattr("__array_interface__")?;
        let iface = iface.cast::<PyDict>()?;
        let get = |k: &str| -> PyResult<Bound<'py, PyAny>> {
            iface
                .get_item(k)?
                .ok_or_else(|| PyRuntimeError::new_err(format!("__array_interface__ has no {k}")))
        };
        let (address, read_only): (usize, bool) = get("data")?.extract()?;
        let typestr: String = get("typestr")?.extract()?;
        let sizes: Vec<i64> = get("shape")?.extract()?;
        let itemsize: i64 = array.getattr("itemsize")?.extract()?;
        if read_only && !READ_ONLY_WARNED.swap(true, Ordering::Relaxed) {
            PyErr::warn(
                py,
                py.get_type::<PyUserWarning>().as_any(),
                c"The given NumPy array is not writable, and PyTorch does not support non-writable tensors. This means writing to this tensor will result in undefined behavior. You may want to copy the array to protect its data or make it writable before converting it to a tensor. This type of warning will be suppressed for the rest of this program.",
                1,
            )?;
        }
        // The array's own strides in bytes: its interface omits them for arrays NumPy deems
        // C-contiguous, which includes views with size-1 dimensions of any stride.
        let byte_strides: Vec<i64> = array.getattr("strides")?.extract()?;
        // PyTorch's checks, in its order.
        if itemsize <= 0 || byte_strides.iter().any(|s| s % itemsize != 0) {
            return Err(PyValueError::new_err(
                "given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory.",
            ));
        }
        let strides: Vec<i64> = byte_strides.iter().map(|s| s / itemsize).collect();
        if strides.iter().any(|&s| s < 0) {
            return Err(PyValueError::new_err(
                "At least one stride in the given numpy array is negative, and tensors with negative strides are not currently supported. (You can probably work around this by making a copy of your array  with array.copy().) ",
            ));
        }
        let (order, kind) = typestr.split_at(1.min(typestr.len()));
        let native = if cfg!(target_endian = "little") {
            "<"
        } else {
            ">"
        };
        if order != native && order != "|" && order != "=" {
            return Err(PyValueError::new_err(
                "given numpy array has byte order different from the native byte order. Conversion between byte orders is currently not supported.",
            ));
        }
        let dtype = dtype_of_numpy_kind(kind).ok_or_else(|| {
            let name = array
                .getattr("dtype")
                .and_then(|d| d.getattr("type"))
                .and_then(|t| {
                    Ok(format!(
                        "{}.{}",
                        t.getattr("__module__")?.extract::<String>()?,
                        t.getattr("__name__")?.extract::<String>()?
                    ))
                })
                .unwrap_or_else(|_| typestr.clone());
            PyTypeError::new_err(format!(
                "can't convert np.ndarray of type {name}. The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
            ))
        })?;
        if !address.is_multiple_of(itemsize as usize) {
            return Err(not_aligned("from_numpy", itemsize));
        }
        let nbytes = match byte_extent(&sizes, &strides, itemsize) {
            Some((_, hi)) => usize::try_from(hi).map_err(|_| {
                PyValueError::new_err("from_numpy: the array's extent does not fit in memory")
            })?,
            None => 0,
        };
        // An empty array may have a null data pointer; the storage needs a non-null one.
        let ptr = NonNull::new(address as *mut u8).unwrap_or(NonNull::<u64>::dangling().cast());
        let owner: Py<PyAny> = array.clone().unbind();
        // SAFETY: NumPy's `__array_interface__` promises `nbytes` (the extent of its shape and
        // non-negative strides from the data pointer) valid bytes at `address` for as long as
        // the array lives, and `owner` holds a reference to it (which also makes NumPy refuse
        // to resize it in place). An empty array is given 0 bytes, never read.
        let t = unsafe {
            tensor_over_external(ptr, nbytes, Box::new(owner), &sizes, &strides, 0, dtype)
        }
        .or_raise(py)?;
        Bound::new(py, PyTensor::new(t))
    })
}

/// What NumPy sees of a tensor (`__array_interface__`), holding the tensor: the `.base` of
/// every array `Tensor.numpy()` returns.
#[pyclass(frozen, module = "switchyard._C", name = "_NumpyView")]
pub struct NumpyView {
    tensor: Tensor,
    interface: Py<PyDict>,
}

#[pymethods]
impl NumpyView {
    /// NumPy's array interface (version 3) over the tensor's memory.
    #[getter]
    fn __array_interface__(&self, py: Python<'_>) -> Py<PyDict> {
        self.interface.clone_ref(py)
    }

    /// The tensor whose memory this is.
    #[getter]
    fn tensor(&self) -> PyTensor {
        PyTensor::new(self.tensor.clone())
    }
}

/// The address of `t`'s first element, exporting its storage (it never moves its bytes
/// afterwards).
fn exported_data_ptr(t: &Tensor) -> switchyard_core::Result<NonNull<u8>> {
    let storage = t
        .storage()
        .ok_or_else(|| switchyard_core::Error::runtime("this tensor has no storage to share"))?;
    let base = storage.export_host_ptr()?;
    let offset = usize::try_from(t.storage_offset())
        .unwrap_or(0)
        .saturating_mul(t.element_size());
    if t.numel() == 0 {
        return Ok(base);
    }
    // SAFETY: a tensor with elements has its first one inside its storage (tensor geometry
    // is checked against the storage's size), so the offset stays in the allocation.
    Ok(unsafe { base.add(offset) })
}

/// `Tensor.numpy(*, force=False)`: an array sharing the tensor's memory.
#[pyfunction]
#[pyo3(signature = (tensor, force = false))]
pub fn tensor_to_numpy<'py>(
    tensor: &PyTensor,
    force: bool,
    py: Python<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let mut t = tensor.t.clone();
        if !force {
            if t.device().kind() != DeviceType::Cpu {
                return Err(PyTypeError::new_err(format!(
                    "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
                    t.device()
                )));
            }
            if switchyard_core::local_dispatch::is_grad_enabled() && t.requires_grad() {
                return Err(PyRuntimeError::new_err(
                    "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
                ));
            }
        }
        t = switchyard_ops::op::detach::call(&t).or_raise(py)?;
        if t.device() != Device::CPU {
            t = switchyard_ops::op::_to_copy::call(
                &t,
                None,
                None,
                Some(Device::CPU),
                None,
                false,
                None,
            )
            .or_raise(py)?;
        }
        let typestr = numpy_typestr(t.dtype())?;
        let itemsize = t.element_size() as i64;
        let ptr = exported_data_ptr(&t).or_raise(py)?;
        let interface = PyDict::new(py);
        interface.set_item("version", 3)?;
        interface.set_item("typestr", typestr)?;
        interface.set_item("shape", PyTuple::new(py, t.sizes().iter())?)?;
        interface.set_item(
            "strides",
            PyTuple::new(py, t.strides().iter().map(|s| s * itemsize))?,
        )?;
        interface.set_item("data", (ptr.as_ptr() as usize, false))?;
        let view = Bound::new(
            py,
            NumpyView {
                tensor: t,
                interface: interface.unbind(),
            },
        )?;
        py.import("numpy")?.getattr("asarray")?.call1((view,))
    })
}

// ---------------------------------------------------------------------------------------------
// DLPack (https://dmlc.github.io/dlpack/latest/c_api.html), the C structs of dlpack.h v1.0

const KDL_CPU: i32 = 1;
const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
const KDL_BFLOAT: u8 = 4;
const KDL_BOOL: u8 = 6;

const VERSIONED: &CStr = c"dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

fn dl_dtype(ty: ScalarType) -> DLDataType {
    let (code, bits) = match ty {
        ScalarType::Double => (KDL_FLOAT, 64),
        ScalarType::Float => (KDL_FLOAT, 32),
        ScalarType::Half => (KDL_FLOAT, 16),
        ScalarType::BFloat16 => (KDL_BFLOAT, 16),
        ScalarType::Long => (KDL_INT, 64),
        ScalarType::Int => (KDL_INT, 32),
        ScalarType::Short => (KDL_INT, 16),
        ScalarType::Char => (KDL_INT, 8),
        ScalarType::Byte => (KDL_UINT, 8),
        ScalarType::Bool => (KDL_BOOL, 8),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

fn scalar_type_of(dt: DLDataType) -> Option<ScalarType> {
    if dt.lanes != 1 {
        return None;
    }
    Some(match (dt.code, dt.bits) {
        (KDL_FLOAT, 64) => ScalarType::Double,
        (KDL_FLOAT, 32) => ScalarType::Float,
        (KDL_FLOAT, 16) => ScalarType::Half,
        (KDL_BFLOAT, 16) => ScalarType::BFloat16,
        (KDL_INT, 64) => ScalarType::Long,
        (KDL_INT, 32) => ScalarType::Int,
        (KDL_INT, 16) => ScalarType::Short,
        (KDL_INT, 8) => ScalarType::Char,
        (KDL_UINT, 8) => ScalarType::Byte,
        (KDL_BOOL, 8) => ScalarType::Bool,
        _ => return None,
    })
}

/// An exported tensor: the managed struct first (so a pointer to it is a pointer to this), the
/// tensor keeping the memory alive, and the shape and strides the struct points into.
#[repr(C)]
struct Exported<M> {
    managed: M,
    tensor: Tensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

/// The `DLTensor` of `t` at `data`, pointing at `shape` and `strides` (which must outlive it).
fn dl_tensor(t: &Tensor, data: NonNull<u8>, shape: &mut [i64], strides: &mut [i64]) -> DLTensor {
    DLTensor {
        data: data.as_ptr().cast(),
        device: DLDevice {
            device_type: KDL_CPU,
            device_id: 0,
        },
        ndim: shape.len() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    }
}

/// Frees an [`Exported`] versioned tensor; the consumer calls it once, from any thread.
unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    if !p.is_null() {
        // SAFETY: `p` came from `Box::into_raw` of an `Exported<DLManagedTensorVersioned>`
        // (whose first field it is, `repr(C)`), and the protocol calls the deleter once.
        // Dropping a tensor does not unwind (no Drop in the core panics).
        drop(unsafe { Box::from_raw(p.cast::<Exported<DLManagedTensorVersioned>>()) });
    }
}

/// Frees an [`Exported`] legacy tensor; as [`delete_versioned`].
unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    if !p.is_null() {
        // SAFETY: as in `delete_versioned`, for `Exported<DLManagedTensor>`.
        drop(unsafe { Box::from_raw(p.cast::<Exported<DLManagedTensor>>()) });
    }
}

/// The destructor of an exported capsule: frees the tensor unless a consumer took it (and
/// renamed the capsule to `used_*`, taking over the deleter).
unsafe extern "C" fn capsule_destructor(capsule: *mut pyo3::ffi::PyObject) {
    // SAFETY: called by Python with the GIL held on a capsule we created; `PyCapsule_IsValid`
    // checks the name without raising, and `PyCapsule_GetPointer` with that same valid name
    // returns the pointer we stored.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr());
            delete_versioned(p.cast());
        } else if pyo3::ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr());
            delete_legacy(p.cast());
        }
    }
}

/// `Tensor.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)`: a
/// DLPack capsule over the tensor's memory (a copy of it when `copy=True`).
#[pyfunction]
#[pyo3(signature = (tensor, stream = None, max_version = None, dl_device = None, copy = None))]
pub fn tensor_to_dlpack<'py>(
    py: Python<'py>,
    tensor: &PyTensor,
    stream: Option<&Bound<'py, PyAny>>,
    max_version: Option<(u32, u32)>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let mut t = tensor.t.clone();
        if t.requires_grad() {
            return Err(PyBufferError::new_err(
                "Can't export tensors that require gradient, use tensor.detach()",
            ));
        }
        if t.device().kind() != DeviceType::Cpu {
            return Err(PyBufferError::new_err(format!(
                "Cannot pack tensors on {}",
                t.device()
            )));
        }
        if let Some(s) = stream
            && !s.is_none()
            && s.extract::<i64>().ok() != Some(-1)
        {
            return Err(PyValueError::new_err("stream should be None on cpu."));
        }
        if let Some((kind, _)) = dl_device
            && kind != KDL_CPU
        {
            return Err(PyBufferError::new_err(format!(
                "Cannot export a cpu tensor to DLPack device type {kind}"
            )));
        }
        if copy == Some(true) {
            t = switchyard_ops::op::clone::call(&t, None).or_raise(py)?;
        }
        let data = exported_data_ptr(&t).or_raise(py)?;
        let shape = t.sizes().to_vec();
        let strides = t.strides().to_vec();
        let versioned = matches!(max_version, Some((major, _)) if major >= 1);
        let (pointer, name) = if versioned {
            let mut e = Box::new(Exported {
                managed: DLManagedTensorVersioned {
                    version: DLPackVersion { major: 1, minor: 0 },
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_versioned),
                    // Bit 1, IS_COPIED, when `copy=True` made a copy nobody else sees.
                    flags: if copy == Some(true) { 2 } else { 0 },
                    dl_tensor: dl_tensor(&t, data, &mut [], &mut []),
                },
                tensor: t,
                shape,
                strides,
            });
            // The vectors' heap blocks do not move with the box: point into them now.
            let Exported {
                managed,
                tensor,
                shape,
                strides,
            } = &mut *e;
            managed.dl_tensor = dl_tensor(tensor, data, shape, strides);
            let raw = Box::into_raw(e);
            // SAFETY: `raw` is a live allocation; storing its own address as the context.
            unsafe { (*raw).managed.manager_ctx = raw.cast() };
            (raw.cast::<c_void>(), VERSIONED)
        } else {
            let mut e = Box::new(Exported {
                managed: DLManagedTensor {
                    dl_tensor: dl_tensor(&t, data, &mut [], &mut []),
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_legacy),
                },
                tensor: t,
                shape,
                strides,
            });
            let Exported {
                managed,
                tensor,
                shape,
                strides,
            } = &mut *e;
            managed.dl_tensor = dl_tensor(tensor, data, shape, strides);
            let raw = Box::into_raw(e);
            // SAFETY: as above.
            unsafe { (*raw).managed.manager_ctx = raw.cast() };
            (raw.cast::<c_void>(), LEGACY)
        };
        // SAFETY: `pointer` is the managed struct just leaked, `name` a static C string, and
        // the destructor frees the struct unless a consumer renamed the capsule. On failure
        // (null) the struct is freed here.
        unsafe {
            let capsule =
                pyo3::ffi::PyCapsule_New(pointer, name.as_ptr(), Some(capsule_destructor));
            if capsule.is_null() {
                if versioned {
                    delete_versioned(pointer.cast());
                } else {
                    delete_legacy(pointer.cast());
                }
            }
            Bound::from_owned_ptr_or_err(py, capsule)
        }
    })
}

/// `Tensor.__dlpack_device__()`: `(1, 0)`, DLPack's CPU, for CPU tensors.
#[pyfunction]
pub fn tensor_dlpack_device(tensor: &PyTensor) -> PyResult<(i32, i32)> {
    let device = tensor.t.device();
    if device.kind() == DeviceType::Cpu {
        Ok((KDL_CPU, 0))
    } else {
        Err(PyValueError::new_err(format!(
            "Unknown device type {} for Dlpack",
            device.kind().name()
        )))
    }
}

/// Calls the producer's deleter when the storage over its memory is dropped.
struct DlpackOwner {
    managed: *mut c_void,
    versioned: bool,
}

// SAFETY: DLPack's deleter may be called from any thread (NumPy's and PyTorch's take the GIL
// themselves when they need it), and the pointer is only passed to it, once.
unsafe impl Send for DlpackOwner {}
// SAFETY: `&DlpackOwner` gives no access to anything.
unsafe impl Sync for DlpackOwner {}

impl Drop for DlpackOwner {
    fn drop(&mut self) {
        // SAFETY: `managed` is the struct of a consumed capsule of the matching kind; the
        // protocol makes us its only owner, so its deleter is called exactly once, here.
        unsafe {
            if self.versioned {
                let m = self.managed.cast::<DLManagedTensorVersioned>();
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            } else {
                let m = self.managed.cast::<DLManagedTensor>();
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}

/// `switchyard.from_dlpack(x)`: a tensor sharing the memory of any DLPack producer (an object
/// with `__dlpack__`, or a capsule).
#[pyfunction]
pub fn from_dlpack<'py>(x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTensor>> {
    let py = x.py();
    guard(|| {
        if let Ok(t) = x.cast::<PyTensor>() {
            return Ok(t.clone());
        }
        let capsule = if x.hasattr("__dlpack__")? {
            let kwargs = PyDict::new(py);
            kwargs.set_item("max_version", (1, 0))?;
            match x.call_method("__dlpack__", (), Some(&kwargs)) {
                Ok(c) => c,
                // A producer older than the versioned protocol does not know `max_version`.
                Err(e) if e.is_instance_of::<PyTypeError>(py) => x.call_method0("__dlpack__")?,
                Err(e) => return Err(e),
            }
        } else {
            x.clone()
        };
        let cap = capsule.as_ptr();
        // SAFETY: `PyCapsule_IsValid` accepts any object and raises nothing.
        let versioned = unsafe { pyo3::ffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) } == 1;
        // SAFETY: as above.
        let legacy = unsafe { pyo3::ffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) } == 1;
        if !versioned && !legacy {
            return Err(PyRuntimeError::new_err(
                "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have already constructed a tensor from it once.",
            ));
        }
        let name = if versioned { VERSIONED } else { LEGACY };
        // SAFETY: the capsule is valid with this name (checked above), so this returns its
        // non-null pointer: a DLManagedTensor(Versioned) the producer keeps alive until its
        // deleter is called.
        let managed = unsafe { pyo3::ffi::PyCapsule_GetPointer(cap, name.as_ptr()) };
        // SAFETY: `managed` points to the struct of the capsule's kind (the protocol).
        let dl: &DLTensor = unsafe {
            if versioned {
                let m = &*managed.cast::<DLManagedTensorVersioned>();
                if m.version.major > 1 {
                    return Err(PyBufferError::new_err(format!(
                        "from_dlpack: DLPack version {}.{} is not supported (switchyard reads 1.x)",
                        m.version.major, m.version.minor
                    )));
                }
                &m.dl_tensor
            } else {
                &(*managed.cast::<DLManagedTensor>()).dl_tensor
            }
        };
        if dl.device.device_type != KDL_CPU {
            return Err(PyBufferError::new_err(format!(
                "from_dlpack: unsupported DLPack device type {} (switchyard reads CPU memory, type 1)",
                dl.device.device_type
            )));
        }
        let dtype = scalar_type_of(dl.dtype).ok_or_else(|| {
            PyBufferError::new_err(format!(
                "from_dlpack: unsupported DLPack dtype (code {}, bits {}, lanes {})",
                dl.dtype.code, dl.dtype.bits, dl.dtype.lanes
            ))
        })?;
        let ndim = usize::try_from(dl.ndim).unwrap_or(0);
        if ndim > 0 && dl.shape.is_null() {
            return Err(PyBufferError::new_err(
                "from_dlpack: the DLTensor has no shape",
            ));
        }
        let sizes: Vec<i64> = if ndim == 0 {
            Vec::new()
        } else {
            // SAFETY: the protocol gives `ndim` sizes at `shape` (checked non-null above),
            // valid while the capsule's struct lives.
            unsafe { std::slice::from_raw_parts(dl.shape, ndim) }.to_vec()
        };
        let strides: Vec<i64> = if dl.strides.is_null() || ndim == 0 {
            let mut s = vec![0i64; ndim];
            let mut step = 1i64;
            for (st, &n) in s.iter_mut().zip(&sizes).rev() {
                *st = step;
                step = step.saturating_mul(n.max(1));
            }
            s
        } else {
            // SAFETY: as for `shape`.
            unsafe { std::slice::from_raw_parts(dl.strides, ndim) }.to_vec()
        };
        let itemsize = dtype.element_size() as i64;
        let first = (dl.data as usize).wrapping_add(dl.byte_offset as usize);
        if !first.is_multiple_of(itemsize as usize) {
            return Err(not_aligned("from_dlpack", itemsize));
        }
        // The storage starts at the lowest byte the view touches (negative strides allowed).
        let (lo, hi) = byte_extent(&sizes, &strides, itemsize).unwrap_or((0, 0));
        let start = first.wrapping_add_signed(lo as isize);
        let nbytes = usize::try_from(hi - lo).map_err(|_| {
            PyBufferError::new_err("from_dlpack: the tensor's extent does not fit in memory")
        })?;
        let offset = -lo / itemsize;
        // Take ownership: rename so the capsule's destructor leaves the struct to us.
        let used = if versioned {
            USED_VERSIONED
        } else {
            USED_LEGACY
        };
        // SAFETY: `cap` is a valid capsule; the name is a static C string.
        if unsafe { pyo3::ffi::PyCapsule_SetName(cap, used.as_ptr()) } != 0 {
            return Err(PyErr::fetch(py));
        }
        let owner = DlpackOwner { managed, versioned };
        let ptr = NonNull::new(start as *mut u8).unwrap_or(NonNull::<u64>::dangling().cast());
        // SAFETY: the producer keeps `nbytes` bytes from `start` (the extent of the view it
        // described) valid until its deleter runs, which `owner` does when dropped with the
        // storage. An empty view is given 0 bytes, never read.
        let t = unsafe {
            tensor_over_external(
                ptr,
                nbytes,
                Box::new(owner),
                &sizes,
                &strides,
                offset,
                dtype,
            )
        }
        .or_raise(py)?;
        Bound::new(py, PyTensor::new(t))
    })
}
