//! Backend data (B.7.7, B.7.8): what a device-data leaf holds. Device memory is host memory, so
//! data is a CPU tensor or a scalar; a placeholder is data not yet filled by an execution.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use switchyard_core::{Error, Result, Scalar, Tensor};

use crate::ir::{Node, Shape, scalar_dtype};
use crate::metrics;

/// A value on the device.
#[derive(Clone)]
pub enum DataValue {
    /// A CPU tensor.
    Tensor(Tensor),
    /// A lifted scalar (a `Scalar` argument or a wrapped number).
    Scalar(Scalar),
}

/// Backend data: a handle (unique id), its shape, and its value once known.
pub struct DeviceData {
    /// Unique id: parameters are deduplicated by it.
    pub handle: u64,
    /// The shape.
    pub shape: Shape,
    value: Mutex<Option<DataValue>>,
    /// Set when the value was donated to an execution that then failed: the run may have
    /// written it in place, so it is gone, and reading it says so (not "in flight").
    lost: AtomicBool,
    /// The error of the asynchronous run that was to fill this placeholder: reading it
    /// returns that error (LTC rethrows an asynchronous run's failure where its data is used).
    failed: Mutex<Option<Error>>,
}

static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

impl DeviceData {
    fn new(shape: Shape, value: Option<DataValue>) -> Arc<DeviceData> {
        Arc::new(DeviceData {
            handle: NEXT_HANDLE.fetch_add(1, Ordering::Relaxed),
            shape,
            value: Mutex::new(value),
            lost: AtomicBool::new(false),
            failed: Mutex::new(None),
        })
    }

    /// Data holding CPU tensor `t` (not copied: callers pass a tensor nobody else writes).
    pub fn from_tensor(t: Tensor) -> Arc<DeviceData> {
        DeviceData::new(Shape::of(&t), Some(DataValue::Tensor(t)))
    }

    /// Data holding a scalar.
    pub fn from_scalar(s: Scalar) -> Arc<DeviceData> {
        DeviceData::new(
            Shape::contiguous(scalar_dtype(&s), &[]),
            Some(DataValue::Scalar(s)),
        )
    }

    /// A placeholder of `shape`, filled by [`DeviceData::assign`].
    pub fn placeholder(shape: Shape) -> Arc<DeviceData> {
        DeviceData::new(shape, None)
    }

    /// The value, if known.
    pub fn value(&self) -> Option<DataValue> {
        self.value
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The value, waiting for the scheduled asynchronous runs when it is not known yet (one of
    /// them may fill it); `None` if still unknown after them.
    pub fn value_or_wait(&self) -> Option<DataValue> {
        self.value().or_else(|| {
            crate::device_queue::wait();
            self.value()
        })
    }

    /// The value as a CPU tensor (a scalar becomes a 0-dim tensor), waiting for a scheduled
    /// run that fills it; errors on a placeholder nothing fills, or whose run failed.
    pub fn tensor(&self) -> Result<Tensor> {
        match self.value_or_wait() {
            Some(DataValue::Tensor(t)) => Ok(t),
            Some(DataValue::Scalar(s)) => Tensor::scalar_tensor(s),
            None => Err(self.missing()),
        }
    }

    /// The error for reading data that has no value: in flight (a placeholder), or lost (donated
    /// to an execution that failed).
    pub(crate) fn missing(&self) -> Error {
        if let Some(e) = self
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            return e;
        }
        if self.lost.load(Ordering::Relaxed) {
            Error::runtime(
                "Trying to access lazy tensor data that was donated to an execution that failed: \
                 the failed run may have written it in place, so its value is lost (keep another \
                 reference to a tensor whose old value must survive a failing step)",
            )
        } else {
            Error::runtime("Trying to access data while an async operation is in flight")
        }
    }

    /// Marks donated data whose execution failed as lost (see [`DeviceData::tensor`]).
    pub(crate) fn mark_lost(&self) {
        self.lost.store(true, Ordering::Relaxed);
    }

    /// Records the error of the asynchronous run that was to fill this placeholder.
    pub(crate) fn fail(&self, e: Error) {
        *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
    }

    /// Fills a placeholder (LTC's `Assign`).
    pub fn assign(&self, v: DataValue) {
        *self.value.lock().unwrap_or_else(PoisonError::into_inner) = Some(v);
    }

    /// Drops the value of data nobody else holds (`d` is the last handle), leaving the
    /// empty handle to be freed elsewhere.
    pub(crate) fn free_value_if_unshared(d: &mut Arc<DeviceData>) {
        if let Some(d) = Arc::get_mut(d) {
            drop(
                d.value
                    .get_mut()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(),
            );
        }
    }

    /// Empties the data again (an execution failed after placeholders were installed).
    pub(crate) fn clear(&self) {
        *self.value.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Capacity of the scalar data cache (`torch_lazy_device_data_cache_size`).
pub const DEVICE_DATA_CACHE_SIZE: usize = 128;

/// A scalar's kind and bits (floats by their bits: -0.0 and NaN payloads stay apart).
pub(crate) type CacheKey = (u8, u64);

/// One cached scalar: its data and, once asked for, the device-data leaf over it.
struct CacheEntry {
    key: CacheKey,
    data: Arc<DeviceData>,
    leaf: Option<Arc<Node>>,
}

static SCALAR_CACHE: Mutex<Vec<CacheEntry>> = Mutex::new(Vec::new());

/// The cache key of `s`.
pub(crate) fn scalar_key(s: &Scalar) -> CacheKey {
    match s {
        Scalar::Bool(b) => (0, u64::from(*b)),
        Scalar::Int(i) => (1, *i as u64),
        Scalar::Float(f) => (2, f.to_bits()),
    }
}

/// Runs `f` on the cache entry of `s` (moved to the front; a miss counts
/// `DeviceDataCacheMiss` and creates the entry).
fn with_entry<R>(s: &Scalar, f: impl FnOnce(&mut CacheEntry) -> R) -> R {
    let key = scalar_key(s);
    let mut cache = SCALAR_CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    match cache.iter().position(|e| e.key == key) {
        // Most recently used first; rotating moves only the entries before it.
        Some(i) => cache[..=i].rotate_right(1),
        None => {
            metrics::counter_add("DeviceDataCacheMiss", 1);
            cache.insert(
                0,
                CacheEntry {
                    key,
                    data: DeviceData::from_scalar(*s),
                    leaf: None,
                },
            );
            cache.truncate(DEVICE_DATA_CACHE_SIZE);
        }
    }
    f(&mut cache[0])
}

/// The device data of scalar `s` from the per-device LRU cache (key: dtype and content bytes),
/// so equal values share one parameter; a miss counts `DeviceDataCacheMiss`.
pub fn scalar_data(s: &Scalar) -> Arc<DeviceData> {
    with_entry(s, |e| Arc::clone(&e.data))
}

/// The device-data leaf of scalar `s`. Without IR reuse it is cached with the data, so every
/// use of a value shares one leaf node (one parameter either way: parameters are deduplicated
/// by handle) and tracing allocates and hashes no leaf per scalar argument. With IR reuse on,
/// the trie decides (`trie::leaf`), as for any device data.
pub fn scalar_leaf(s: &Scalar) -> Arc<Node> {
    if crate::trie::reuse_ir() {
        return crate::trie::leaf(scalar_data(s));
    }
    // The calling thread's last few leaves first, without the cache's lock: a traced step
    // uses a handful of values over and over. A leaf found here may have left the shared
    // cache meanwhile; it is still the same value's one leaf and parameter.
    const FRONT: usize = 8;
    thread_local! {
        static RECENT: RefCell<Vec<(CacheKey, Arc<Node>)>> = const { RefCell::new(Vec::new()) };
    }
    let key = scalar_key(s);
    let Ok(leaf) = RECENT.with(|cell| {
        most_recent(&mut cell.borrow_mut(), key, FRONT, || {
            Ok::<_, std::convert::Infallible>(with_entry(s, |e| {
                Arc::clone(
                    e.leaf
                        .get_or_insert_with(|| Arc::new(Node::device_data(Arc::clone(&e.data)))),
                )
            }))
        })
    });
    leaf
}

/// A per-thread front of the last `keep` values made for scalar keys: the value of `key` if
/// `recent` has it, else `make`'s, remembered in place of the oldest.
pub(crate) fn most_recent<T: Clone, E>(
    recent: &mut Vec<(CacheKey, T)>,
    key: CacheKey,
    keep: usize,
    make: impl FnOnce() -> std::result::Result<T, E>,
) -> std::result::Result<T, E> {
    if let Some((_, v)) = recent.iter().find(|(k, _)| *k == key) {
        return Ok(v.clone());
    }
    let v = make()?;
    if recent.len() >= keep {
        recent.remove(0);
    }
    recent.push((key, v.clone()));
    Ok(v)
}
