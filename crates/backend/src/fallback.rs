//! The boxed CPU fallback (PyTorch's `at::native::cpu_fallback`, reference note
//! `dispatcher.md` §8): runs any operator on the CPU for a backend that has no kernel for it.
//!
//! What it needs to know about the operator (which arguments hold tensors, which are written,
//! which argument each mutable return aliases, whether it is a view) comes from the
//! [`SchemaFacts`] the dispatcher computed when the schema was defined, so a call walks only
//! the tensor arguments, never the schema.
//!
//! One call:
//! 1. every defined tensor argument (plain, optional, inside `Tensor[]` and `Tensor?[]`) goes
//!    to the CPU in **one** call of the batched `aten::_to_cpu(Tensor[])` operator, which a
//!    backend can implement to transfer everything at once; absent optionals stay absent;
//!    arguments sharing memory with a written argument go as one piece of their storage and
//!    become views of its CPU copy, so that the CPU kernel sees the aliasing (its overlap
//!    checks, its reads of what it wrote); `Device` arguments become `cpu` and the last one is
//!    remembered as the target device;
//! 2. the operator runs at the CPU key (below autograd: the fallback sits at a backend key);
//! 3. every written argument (`Tensor(a!)`, also inside lists) gets the CPU result copied back
//!    with `_copy_from_and_resize`;
//! 4. returns that alias a written argument are replaced by the original device tensor, other
//!    tensor returns are moved to the target device (the `Device` argument, else the device of
//!    the first tensor argument that is not a 0-dim CPU tensor, a scalar going with tensors of
//!    any device).
//!
//! View operators cannot fall back: a copy on another device cannot share storage with its
//! base. By default they are refused with an error before anything is transferred;
//! [`FallbackOptions::error_on_views`] `= false` gives PyTorch's default instead (a warning and
//! a copy).

use switchyard_core::{
    BackendComponent, Device, DispatchKey, DispatchKeySet, Error, IValue, Result, Stack, Tensor,
};
use switchyard_dispatch::warnings::warn;
use switchyard_dispatch::{
    OpSignature, Operator, OperatorHandle, ReturnAlias, SchemaFacts, TensorArgumentKind,
    call_boxed_typed,
};
use switchyard_ops::op;

/// How [`cpu_fallback_with`] behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FallbackOptions {
    /// Refuse view operators with an error (the default). With `false`, a view operator
    /// warns and returns a copy on the target device, as PyTorch's fallback does by default.
    pub error_on_views: bool,
    /// The key the operator runs at; must have the CPU backend component (`CPU`, or e.g.
    /// `QuantizedCPU`).
    pub cpu_key: DispatchKey,
}

impl Default for FallbackOptions {
    fn default() -> Self {
        FallbackOptions {
            error_on_views: true,
            cpu_key: DispatchKey::CPU,
        }
    }
}

/// The boxed CPU fallback with the default [`FallbackOptions`]. Its signature is that of a
/// boxed kernel, so a backend registers it (or a function that logs and then calls it) with
/// `Library::fallback(Kernel::boxed(cpu_fallback))` at its key.
pub fn cpu_fallback(op: &OperatorHandle, _ks: DispatchKeySet, stack: &mut Stack) -> Result<()> {
    cpu_fallback_with(op, stack, FallbackOptions::default())
}

/// Where one element of the batched transfer came from.
#[derive(Clone, Copy)]
struct Slot {
    /// Argument index.
    argument: usize,
    /// Position inside a `Tensor[]` / `Tensor?[]` argument.
    element: Option<usize>,
}

/// The boxed CPU fallback: runs `op` with the arguments on top of `stack` on the CPU and leaves
/// its returns there, as described in the module documentation.
pub fn cpu_fallback_with(
    op: &OperatorHandle,
    stack: &mut Stack,
    options: FallbackOptions,
) -> Result<()> {
    if options.cpu_key.to_backend_component() != BackendComponent::CPU {
        return Err(Error::runtime(format!(
            "Expected CPU backend DispatchKey but got {}",
            options.cpu_key.name()
        )));
    }
    let facts = op.require_schema_facts()?;
    let base = stack
        .len()
        .checked_sub(facts.num_arguments)
        .ok_or_else(|| {
            Error::runtime(format!(
                "internal error: {} needs {} arguments but the stack holds {}",
                op.name(),
                facts.num_arguments,
                stack.len()
            ))
        })?;
    let target = target_device(&facts, &stack[base..]);
    if facts.is_view() && options.error_on_views {
        return Err(Error::not_implemented(view_message(op, target)));
    }

    // 1. Everything to the CPU in one batched transfer.
    let mut slots: Vec<Slot> = Vec::new();
    let mut batch: Vec<Tensor> = Vec::new();
    for arg in &facts.tensor_arguments {
        match &stack[base + arg.index] {
            IValue::Tensor(t) => {
                slots.push(Slot {
                    argument: arg.index,
                    element: None,
                });
                batch.push(t.clone());
            }
            IValue::TensorList(list) => {
                for (j, t) in list.iter().enumerate() {
                    slots.push(Slot {
                        argument: arg.index,
                        element: Some(j),
                    });
                    batch.push(t.clone());
                }
            }
            IValue::OptionalTensorList(list) => {
                for (j, t) in list.iter().enumerate() {
                    if let Some(t) = t {
                        slots.push(Slot {
                            argument: arg.index,
                            element: Some(j),
                        });
                        batch.push(t.clone());
                    }
                }
            }
            // An absent `Tensor?` (or anything the schema did not promise) stays as it is.
            _ => {}
        }
    }
    // The originals of the written arguments, to copy the results back into.
    let written: Vec<(usize, IValue)> = facts
        .tensor_arguments
        .iter()
        .filter(|a| a.is_write)
        .map(|a| (a.index, stack[base + a.index].clone()))
        .collect();
    if !batch.is_empty() {
        let is_written: Vec<bool> = slots
            .iter()
            .map(|s| {
                facts
                    .tensor_arguments
                    .iter()
                    .any(|a| a.index == s.argument && a.is_write)
            })
            .collect();
        let (transfer, sources) = plan_transfer(&batch, &is_written)?;
        let on_cpu = op::_to_cpu::call(&transfer)?;
        if on_cpu.len() != transfer.len() {
            return Err(Error::runtime(format!(
                "_to_cpu returned {} tensors for {} inputs",
                on_cpu.len(),
                transfer.len()
            )));
        }
        for ((slot, source), t) in slots.iter().zip(&sources).zip(&batch) {
            let cpu = match *source {
                Source::Own(k) => on_cpu[k].clone(),
                Source::Piece { piece, start } => {
                    let g = t.geometry();
                    on_cpu[piece].as_strided_view(
                        g.sizes(),
                        g.strides(),
                        g.storage_offset() - start,
                    )?
                }
            };
            put(&mut stack[base + slot.argument], slot.element, cpu)?;
        }
    }
    for &i in &facts.device_arguments {
        if let IValue::Device(_) = stack[base + i] {
            stack[base + i] = IValue::Device(Device::CPU);
        }
    }
    let cpu_written: Vec<IValue> = written
        .iter()
        .map(|(i, _)| stack[base + i].clone())
        .collect();

    // 2. Run on the CPU.
    op.redispatch_boxed(DispatchKeySet::from_key(options.cpu_key), stack)?;

    // 3. Mutations reach the originals.
    for ((_, original), cpu) in written.iter().zip(&cpu_written) {
        copy_back(cpu, original)?;
    }

    // 4. Returns: aliases of written arguments are the originals; the rest go to the target.
    let first_return = stack
        .len()
        .checked_sub(facts.num_returns)
        .ok_or_else(|| Error::runtime(format!("{} left too few returns", op.name())))?;
    for (j, ret) in facts.returns.iter().enumerate() {
        let slot = &mut stack[first_return + j];
        match ret.alias {
            ReturnAlias::MutatedArgument(i) => {
                // A mutable return aliases a written argument, whose original `written` kept.
                let original = written
                    .iter()
                    .find(|(k, _)| *k == i)
                    .map(|(_, v)| v.clone())
                    .filter(|_| matches!(slot, IValue::Tensor(_) | IValue::TensorList(_)));
                *slot = original.ok_or_else(|| invalid_alias(op, &ret.text))?;
            }
            ReturnAlias::UnmatchedWrite => return Err(invalid_alias(op, &ret.text)),
            ReturnAlias::View | ReturnAlias::Fresh => {
                if ret.alias == ReturnAlias::View {
                    warn(view_message(op, target));
                }
                if let Some(device) = target {
                    move_to(slot, device)?;
                }
            }
        }
    }
    Ok(())
}

/// Where the CPU copy of one tensor argument comes from.
#[derive(Clone, Copy)]
enum Source {
    /// Element `k` of the transfer: the argument itself.
    Own(usize),
    /// A view of element `piece` of the transfer, a piece of the argument's storage starting at
    /// element `start` of it.
    Piece { piece: usize, start: i64 },
}

/// The tensors to move to the CPU for the arguments `batch` (`is_written[i]`: argument `i` is
/// written), and where each argument's CPU copy comes from.
///
/// Arguments are moved one by one, except where the memory they share matters to the CPU
/// kernel: a written argument sharing its storage with another argument (`x[1:].add_(x[:2])`,
/// `add(a, b, out=a)`), or with elements sharing memory (an expanded view). Those arguments
/// travel as one piece of their storage, the elements from the first any of them reaches to
/// the last, and become views of its CPU copy with their own strides and offsets: the CPU
/// kernel then sees the aliasing eager sees on a device, makes its memory-overlap checks and
/// reads what it has written where eager would. (PyTorch's `cpu_fallback` copies every
/// argument separately, so a mutation through one of them is not seen through the others
/// during the call, and the overlap errors never come.) Arguments of different dtypes on one
/// storage, and CPU arguments, travel as they are.
fn plan_transfer(batch: &[Tensor], is_written: &[bool]) -> Result<(Vec<Tensor>, Vec<Source>)> {
    use switchyard_ops::meta::index_support::has_internal_overlap;
    let on_device = |t: &Tensor| !t.is_cpu() && t.has_storage() && t.numel() > 0;
    let shares = |a: &Tensor, b: &Tensor| a.is_alias_of(b) && on_device(a) && on_device(b);
    // The piece each argument travels in, if any: the index of the first argument of its group.
    let mut group: Vec<Option<usize>> = vec![None; batch.len()];
    for (i, t) in batch.iter().enumerate() {
        if !is_written[i] || group[i].is_some() || !on_device(t) {
            continue;
        }
        let members: Vec<usize> = (0..batch.len())
            .filter(|&j| group[j].is_none() && shares(&batch[j], t))
            .collect();
        let needed = members.len() > 1 || has_internal_overlap(t) == Some(true);
        let one_dtype = members.iter().all(|&j| batch[j].dtype() == t.dtype());
        if needed && one_dtype {
            let first = members[0];
            for j in members {
                group[j] = Some(first);
            }
        }
    }
    let mut transfer = Vec::with_capacity(batch.len());
    let mut sources = Vec::with_capacity(batch.len());
    for (i, t) in batch.iter().enumerate() {
        match group[i] {
            None => {
                sources.push(Source::Own(transfer.len()));
                transfer.push(t.clone());
            }
            Some(first) if first == i => {
                let (start, end) = (0..batch.len())
                    .filter(|&j| group[j] == Some(first))
                    .map(|j| element_span(&batch[j]))
                    .fold((i64::MAX, i64::MIN), |(s, e), (a, b)| (s.min(a), e.max(b)));
                sources.push(Source::Piece {
                    piece: transfer.len(),
                    start,
                });
                transfer.push(t.as_strided_view(&[end - start], &[1], start)?);
            }
            Some(first) => {
                let Source::Piece { piece, start } = sources[first] else {
                    return Err(Error::runtime("internal error: a fallback piece vanished"));
                };
                sources.push(Source::Piece { piece, start });
            }
        }
    }
    Ok((transfer, sources))
}

/// The storage elements `[first, last + 1)` a tensor with at least one element reaches.
fn element_span(t: &Tensor) -> (i64, i64) {
    let g = t.geometry();
    let (mut first, mut last) = (g.storage_offset(), g.storage_offset());
    for (&size, &stride) in g.sizes().iter().zip(g.strides()) {
        let reach = (size - 1) * stride;
        if reach < 0 {
            first += reach;
        } else {
            last += reach;
        }
    }
    (first, last + 1)
}

/// The device returns go to: the last `Device` argument, else the device of the first tensor
/// argument, else that of the first element of the first non-empty tensor list.
fn target_device(facts: &SchemaFacts, args: &[IValue]) -> Option<Device> {
    let from_device_arg = facts
        .device_arguments
        .iter()
        .rev()
        .find_map(|&i| match args.get(i) {
            Some(IValue::Device(d)) => Some(*d),
            _ => None,
        });
    let first_tensor = |skip_cpu_scalars: bool| {
        facts
            .tensor_arguments
            .iter()
            .find_map(|a| match args.get(a.index) {
                Some(IValue::Tensor(t))
                    if matches!(
                        a.kind,
                        TensorArgumentKind::Tensor | TensorArgumentKind::OptionalTensor
                    ) && !(skip_cpu_scalars && t.is_cpu() && t.dim() == 0) =>
                {
                    Some(t.device())
                }
                _ => None,
            })
    };
    // A 0-dim CPU tensor (a wrapped scalar, `bitwise_and.Scalar_Tensor`'s `self`) goes with
    // tensors of any device, as in TensorIterator: it does not pick the device. (PyTorch's
    // `cpu_fallback` takes the first tensor argument's device, and would put such a result
    // on the CPU.)
    from_device_arg
        .or_else(|| first_tensor(true))
        .or_else(|| first_tensor(false))
        .or_else(|| {
            facts
                .tensor_arguments
                .iter()
                .find_map(|a| match args.get(a.index) {
                    Some(IValue::TensorList(list)) => list.first().map(Tensor::device),
                    _ => None,
                })
        })
}

/// Stores `t` at `element` of the list in `slot`, or as `slot` itself.
fn put(slot: &mut IValue, element: Option<usize>, t: Tensor) -> Result<()> {
    let missing = || Error::runtime("internal error: a fallback slot vanished");
    match (slot, element) {
        (slot @ IValue::Tensor(_), None) => *slot = IValue::Tensor(t),
        (IValue::TensorList(list), Some(j)) => *list.get_mut(j).ok_or_else(missing)? = t,
        (IValue::OptionalTensorList(list), Some(j)) => {
            *list.get_mut(j).ok_or_else(missing)? = Some(t);
        }
        _ => return Err(missing()),
    }
    Ok(())
}

/// Copies the CPU value of a written argument back into the original (resizing it).
fn copy_back(cpu: &IValue, original: &IValue) -> Result<()> {
    match (cpu, original) {
        (IValue::Tensor(c), IValue::Tensor(o)) => {
            op::_copy_from_and_resize::call(c, o)?;
        }
        (IValue::TensorList(cs), IValue::TensorList(os)) => {
            for (c, o) in cs.iter().zip(os) {
                op::_copy_from_and_resize::call(c, o)?;
            }
        }
        (IValue::OptionalTensorList(cs), IValue::OptionalTensorList(os)) => {
            for (c, o) in cs.iter().zip(os) {
                if let (Some(c), Some(o)) = (c, o) {
                    op::_copy_from_and_resize::call(c, o)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Moves a returned tensor (or every tensor of a returned list) to `device`.
fn move_to(value: &mut IValue, device: Device) -> Result<()> {
    let to = |t: &Tensor| -> Result<Tensor> {
        if t.device() == device {
            return Ok(t.clone());
        }
        op::_to_copy::call(t, None, None, Some(device), None, false, None)
    };
    match value {
        IValue::Tensor(t) => *t = to(t)?,
        IValue::TensorList(list) => {
            for t in list.iter_mut() {
                *t = to(t)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn view_message(op: &OperatorHandle, target: Option<Device>) -> String {
    let device = target.map_or_else(|| "<none>".to_owned(), |d| d.to_string());
    format!(
        "The operator {} appears to be a view operator, but it has no implementation for the backend \"{device}\". View operators don't support falling back to run on the CPU, since the tensor's storage cannot be shared across devices.",
        op.name()
    )
}

fn invalid_alias(op: &OperatorHandle, ret: &str) -> Error {
    Error::runtime(format!(
        "The operator {} appears to have invalid alias information. Found a return tensor argument with a mismatched mutable alias: {ret}",
        op.name()
    ))
}

/// Runs operator `O` through `fallback` (a boxed function like [`cpu_fallback`], or a backend's
/// wrapper of it) from a typed kernel: how a backend kernel defers to the fallback for inputs
/// it does not handle, naming the operator by type (`call_fallback::<op::addmm>(..)`), never
/// by string. In-place and out= operators give back their mutated arguments.
pub fn call_fallback<O: Operator>(
    fallback: fn(&OperatorHandle, DispatchKeySet, &mut Stack) -> Result<()>,
    args: <O as OpSignature>::Args<'_>,
) -> Result<<O as OpSignature>::Output> {
    let handle = O::typed_handle()?.handle();
    call_boxed_typed::<O>(fallback, &handle, DispatchKeySet::EMPTY, args)
}
