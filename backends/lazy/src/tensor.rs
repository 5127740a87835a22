//! `LazyTensor` (B.2): the payload of an inner lazy tensor (an IR value, device data, or an
//! eager copy), and the live-tensor registry the executor syncs at `mark_step`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use switchyard_core::tensor::{Geometry, PayloadParts, dense_key_set};
use switchyard_core::{Device, DeviceType, Error, Result, Tensor};
use switchyard_functionalize as functionalize;

use crate::data::DeviceData;
use crate::ir::{Output, Shape};
use crate::metrics;

/// The state of a lazy tensor; at least one field is set.
#[derive(Default)]
pub(crate) struct LazyState {
    /// A pending computation (or a device-data leaf).
    pub(crate) ir: Option<Output>,
    /// Materialised data (or a placeholder being filled).
    pub(crate) handle: Option<Arc<DeviceData>>,
    /// An eager CPU copy of the value (from `empty`, or a move to the device).
    pub(crate) tensor_data: Option<Tensor>,
}

/// The payload of an inner lazy tensor (LTC's `LazyTensor::Data`).
pub struct LazyTensor {
    id: u64,
    /// Its slot in the registry.
    slot: usize,
    device: Device,
    state: Mutex<LazyState>,
    generation: AtomicU64,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The live-tensor registry: a slab of weak references with a free list, so creating and
/// dropping a tensor (every traced operator does both) is a push or pop, not a tree update;
/// `live_tensors` sorts by id when `mark_step` asks.
struct Registry {
    slots: Vec<Option<Weak<LazyTensor>>>,
    free: Vec<usize>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    slots: Vec::new(),
    free: Vec::new(),
});

impl Drop for LazyTensor {
    fn drop(&mut self) {
        let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = registry.slots.get_mut(self.slot) {
            *slot = None;
            registry.free.push(self.slot);
        }
        drop(registry);
        static DESTROYED: metrics::Counter = metrics::Counter::new("DestroyLtcTensor");
        DESTROYED.inc();
    }
}

impl LazyTensor {
    /// Unique id (from 1).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// How many times an IR value was assigned (from 1).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, LazyState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The IR value (LTC's `GetIrValue`): the pending IR; else a device-data leaf for the data
    /// handle; else the eager copy as device data (the tensor then holds it as its handle).
    pub fn ir_value(&self) -> Result<Output> {
        let mut st = self.state();
        if let Some(ir) = &st.ir {
            crate::trie::revisit(&ir.node);
            return Ok(ir.clone());
        }
        let data = match (&st.handle, &st.tensor_data) {
            (Some(h), _) => Arc::clone(h),
            (None, Some(t)) => {
                let d = DeviceData::from_tensor(t.clone());
                st.handle = Some(Arc::clone(&d));
                d
            }
            (None, None) => {
                return Err(Error::runtime(
                    "internal error: a lazy tensor with neither IR nor data",
                ));
            }
        };
        let ir = Output {
            node: crate::trie::leaf(data),
            index: 0,
        };
        st.ir = Some(ir.clone());
        Ok(ir)
    }

    /// [`LazyTensor::ir_value`] of `t`, this payload's tensor. A tensor resized from outside
    /// the backend (an out= argument resized by `resize_output`, which changes the geometry
    /// only) first gets a value of its new shape: zeros, as its old elements are not kept
    /// (PyTorch leaves them uninitialised).
    pub fn ir_value_of(&self, t: &Tensor) -> Result<Output> {
        // The common case in one lock, nothing copied but the value: a pending IR of `t`'s
        // sizes.
        {
            let st = self.state();
            if st.handle.is_none()
                && let Some(ir) = &st.ir
                && t.with_sizes(|s| ir.shape().sizes.as_slice() == s)
            {
                crate::trie::revisit(&ir.node);
                return Ok(ir.clone());
            }
        }
        let sizes = t.sizes();
        if self.shape().sizes != sizes {
            let g = t.geometry();
            let fresh = switchyard_ops::op::empty_strided::call(
                g.sizes(),
                g.strides(),
                Some(t.dtype()),
                None,
                Some(Device::CPU),
                None,
            )?;
            self.set_tensor_data(fresh);
        }
        self.ir_value()
    }

    /// The shape of the current value.
    pub fn shape(&self) -> Shape {
        let st = self.state();
        if let Some(h) = &st.handle {
            return h.shape.clone();
        }
        if let Some(ir) = &st.ir {
            return ir.shape().clone();
        }
        st.tensor_data.as_ref().map_or_else(
            || Shape::contiguous(switchyard_core::ScalarType::Float, &[]),
            Shape::of,
        )
    }

    /// Replaces the value with IR `v` (LTC's `SetIrValue`): data and eager copy dropped.
    pub fn set_ir_value(&self, v: Output) {
        let mut st = self.state();
        st.handle = None;
        st.tensor_data = None;
        st.ir = Some(v);
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// Replaces the value with eager data `t` (LTC's `UpdateFromTensor` without sync).
    pub fn set_tensor_data(&self, t: Tensor) {
        let mut st = self.state();
        st.handle = None;
        st.ir = None;
        st.tensor_data = Some(t);
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// The value as a CPU tensor, executing what is pending (LTC's `ToTensor`). The result is
    /// the device's buffer: callers copy before handing it out.
    pub fn to_tensor(self: &Arc<Self>) -> Result<Tensor> {
        {
            let st = self.state();
            if let Some(t) = &st.tensor_data {
                return Ok(t.clone());
            }
            if let Some(h) = &st.handle
                && h.value().is_some()
            {
                return h.tensor();
            }
        }
        crate::executor::sync_tensors(std::slice::from_ref(self), false)?;
        let st = self.state();
        match &st.handle {
            Some(h) => h.tensor(),
            None => Err(Error::runtime(
                "internal error: a synced lazy tensor has no data",
            )),
        }
    }
}

/// The live lazy tensors, sorted by id (LTC's live-tensor registry).
pub(crate) fn live_tensors() -> Vec<Arc<LazyTensor>> {
    let mut live: Vec<Arc<LazyTensor>> = {
        let registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        registry
            .slots
            .iter()
            .flatten()
            .filter_map(Weak::upgrade)
            .collect()
    };
    live.sort_unstable_by_key(|t| t.id);
    live
}

fn new_lazy(device: Device, state: LazyState) -> Arc<LazyTensor> {
    let lt = Arc::new_cyclic(|weak| {
        let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = match registry.free.pop() {
            Some(slot) => {
                registry.slots[slot] = Some(weak.clone());
                slot
            }
            None => {
                registry.slots.push(Some(weak.clone()));
                registry.slots.len() - 1
            }
        };
        LazyTensor {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            slot,
            device,
            state: Mutex::new(state),
            generation: AtomicU64::new(1),
        }
    });
    static CREATED: metrics::Counter = metrics::Counter::new("CreateLtcTensor");
    CREATED.inc();
    lt
}

fn tensor_of(lt: Arc<LazyTensor>, shape: &Shape) -> Result<Tensor> {
    let geometry = Geometry::new(&shape.sizes, &shape.strides, 0)?;
    let device = lt.device;
    Ok(Tensor::from_payload_parts(PayloadParts {
        payload: lt,
        geometry: &geometry,
        dtype: shape.dtype,
        device,
        key_set: dense_key_set(device),
        version: None,
    }))
}

/// A new inner lazy tensor computing `ir` (LTC's `Create(ir_value, device)`).
pub fn create_from_ir(ir: Output, device: Device) -> Result<Tensor> {
    let shape = ir.shape().clone();
    let lt = new_lazy(
        device,
        LazyState {
            ir: Some(ir),
            ..LazyState::default()
        },
    );
    tensor_of(lt, &shape)
}

/// A new inner lazy tensor holding eager CPU tensor `t` as its value (not copied).
pub fn create_from_tensor(t: Tensor, device: Device) -> Result<Tensor> {
    let shape = Shape::of(&t);
    let lt = new_lazy(
        device,
        LazyState {
            tensor_data: Some(t),
            ..LazyState::default()
        },
    );
    tensor_of(lt, &shape)
}

/// The lazy payload of `t`, unwrapping a functional wrapper first (synced) (LTC's
/// `TryGetLtcTensor`).
pub fn try_get_ltc_tensor(t: &Tensor) -> Result<Option<(Tensor, Arc<LazyTensor>)>> {
    let inner = if functionalize::is_functional(t) {
        functionalize::sync(t)?;
        functionalize::from_functional(t)?
    } else {
        t.clone()
    };
    if inner.device().kind() != DeviceType::Lazy {
        return Ok(None);
    }
    let Some(payload) = inner.payload() else {
        return Ok(None);
    };
    match Arc::clone(payload).downcast::<LazyTensor>() {
        Ok(lt) => Ok(Some((inner, lt))),
        Err(_) => Ok(None),
    }
}

/// The lazy payload of `t` or "Input tensor is not a lazy tensor" (LTC's `GetLtcTensor`).
pub fn get_ltc_tensor(t: &Tensor) -> Result<Arc<LazyTensor>> {
    try_get_ltc_tensor(t)?
        .map(|(_, lt)| lt)
        .ok_or_else(|| Error::runtime(format!("Input tensor is not a lazy tensor: {}", t.device())))
}

/// The CPU value of `lt` as a new tensor nobody else holds.
pub(crate) fn value_copy(lt: &Arc<LazyTensor>) -> Result<Tensor> {
    let t = lt.to_tensor()?;
    switchyard_ops::op::clone::call(&t, None)
}
