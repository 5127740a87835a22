//! Backend data (B.7.7, B.7.8): what a device-data leaf holds. Device memory is host memory, so
//! data is a CPU tensor or a scalar; a placeholder is data not yet filled by an execution.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use switchyard_core::{Error, Result, Scalar, Tensor};

use crate::ir::{Shape, scalar_dtype};
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
}

static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

impl DeviceData {
    fn new(shape: Shape, value: Option<DataValue>) -> Arc<DeviceData> {
        Arc::new(DeviceData {
            handle: NEXT_HANDLE.fetch_add(1, Ordering::Relaxed),
            shape,
            value: Mutex::new(value),
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

    /// The value as a CPU tensor (a scalar becomes a 0-dim tensor); errors on a placeholder.
    pub fn tensor(&self) -> Result<Tensor> {
        match self.value() {
            Some(DataValue::Tensor(t)) => Ok(t),
            Some(DataValue::Scalar(s)) => Tensor::scalar_tensor(s),
            None => Err(Error::runtime(
                "Trying to access data while an async operation is in flight",
            )),
        }
    }

    /// Fills a placeholder (LTC's `Assign`).
    pub fn assign(&self, v: DataValue) {
        *self.value.lock().unwrap_or_else(PoisonError::into_inner) = Some(v);
    }

    /// Empties the data again (an execution failed after placeholders were installed).
    pub(crate) fn clear(&self) {
        *self.value.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Capacity of the scalar data cache (`torch_lazy_device_data_cache_size`).
pub const DEVICE_DATA_CACHE_SIZE: usize = 128;

type CacheKey = (u8, u64);

static SCALAR_CACHE: Mutex<Vec<(CacheKey, Arc<DeviceData>)>> = Mutex::new(Vec::new());

fn scalar_key(s: &Scalar) -> CacheKey {
    match s {
        Scalar::Bool(b) => (0, u64::from(*b)),
        Scalar::Int(i) => (1, *i as u64),
        Scalar::Float(f) => (2, f.to_bits()),
    }
}

/// The device data of scalar `s` from the per-device LRU cache (key: dtype and content bytes),
/// so equal values share one parameter; a miss counts `DeviceDataCacheMiss`.
pub fn scalar_data(s: &Scalar) -> Arc<DeviceData> {
    let key = scalar_key(s);
    let mut cache = SCALAR_CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(i) = cache.iter().position(|(k, _)| *k == key) {
        let entry = cache.remove(i);
        let data = Arc::clone(&entry.1);
        cache.insert(0, entry);
        return data;
    }
    metrics::counter_add("DeviceDataCacheMiss", 1);
    let data = DeviceData::from_scalar(*s);
    cache.insert(0, (key, Arc::clone(&data)));
    cache.truncate(DEVICE_DATA_CACHE_SIZE);
    data
}
