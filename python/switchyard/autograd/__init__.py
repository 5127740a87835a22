"""``switchyard.autograd``: reverse-mode automatic differentiation, as ``torch.autograd``.

``backward`` and ``grad`` normalise their arguments as PyTorch's do and run the Rust engine
(``switchyard-autograd``) with the GIL released; Python hooks re-acquire it. The grad modes
(``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``) are thread-local.
"""

from .. import _C
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = [
    "backward",
    "enable_grad",
    "grad",
    "inference_mode",
    "no_grad",
    "set_grad_enabled",
]


def _as_tuple(tensors):
    if isinstance(tensors, _C.Tensor):
        return (tensors,)
    return tuple(tensors)


def _tensor_or_tensors_to_tuple(tensors, length):
    if tensors is None:
        return (None,) * length
    if isinstance(tensors, _C.Tensor):
        return (tensors,)
    return tuple(tensors)


def backward(
    tensors,
    grad_tensors=None,
    retain_graph=None,
    create_graph=False,
    grad_variables=None,
    inputs=None,
):
    """Accumulates into the leaves' ``.grad`` the gradients of ``tensors`` (each a scalar,
    or given its gradient in ``grad_tensors``). ``inputs`` restricts accumulation to those
    tensors; ``retain_graph`` (default ``create_graph``) keeps the graph for another pass."""
    if grad_variables is not None:
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError(
                "'grad_tensors' and 'grad_variables' (deprecated) arguments both passed to "
                "backward(). Please only use 'grad_tensors'."
            )
    if inputs is not None and len(_as_tuple(inputs)) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = _as_tuple(tensors)
    inputs = () if inputs is None else _as_tuple(inputs)
    grads = _tensor_or_tensors_to_tuple(grad_tensors, len(tensors))[: len(tensors)]
    _C._backward(tensors, grads, retain_graph, create_graph, inputs)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """The gradients of ``outputs`` with respect to ``inputs``, as a tuple; ``.grad`` is not
    touched. An input the outputs do not use is an error unless ``allow_unused`` (then its
    gradient is ``None``, or zeros with ``materialize_grads``)."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True is not supported by switchyard")
    t_outputs = _as_tuple(outputs)
    t_inputs = _as_tuple(inputs)
    grads = _tensor_or_tensors_to_tuple(grad_outputs, len(t_outputs))[: len(t_outputs)]
    result = _C._grad(t_outputs, t_inputs, grads, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        from .. import zeros

        result = tuple(
            g if g is not None else zeros(*i.shape, dtype=i.dtype, device=i.device)
            for g, i in zip(result, t_inputs)
        )
    return result
