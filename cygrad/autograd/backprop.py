"""``backward`` and ``grad``: entry points of the compiled engine."""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._kernels import engine as _engine
from cygrad._kernels.engine import TensorBase
from cygrad.creation import zeros_like

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from cygrad._tensor import Tensor

__all__ = ["backward", "grad"]

# Whether the running backward pass serves every leaf (torch's "checkpoint
# valid"): false inside autograd.grad and backward(inputs=...), and inside
# anything they call, so that the reentrant checkpoint, which can only hand
# its parameters' gradients to .grad, refuses them as torch does.
_pass = threading.local()


def _is_checkpoint_valid() -> bool:
    """False while a pass that computes chosen inputs' gradients runs."""
    return getattr(_pass, "all_leaves", True)


@contextlib.contextmanager
def _part_of_running_pass() -> Iterator[None]:
    """A pass started in the block (directly, not by what it calls) is part
    of the one running: a checkpoint's recomputation, differentiated inside
    a node's backward, keeps the running pass's rule instead of its own."""
    prev = getattr(_pass, "inherit", False)
    _pass.inherit = True
    try:
        yield
    finally:
        _pass.inherit = prev


@contextlib.contextmanager
def _keeping_graphs(keep: bool) -> Iterator[None]:
    """While ``keep``, a pass whose ``retain_graph`` is left at None keeps
    the graph: vmap runs its function once per element, where torch runs
    one batched pass, so every element but the last must leave the graph
    it differentiates for the next (nested vmaps keep it while any does)."""
    prev = getattr(_pass, "keep", False)
    _pass.keep = prev or keep
    try:
        yield
    finally:
        _pass.keep = prev


def _default_retain(create_graph: bool) -> bool:
    return create_graph or getattr(_pass, "keep", False)


def _run(outputs, seeds, retain_graph, create_graph, inputs, accumulate):
    prev = _is_checkpoint_valid()
    inherit = getattr(_pass, "inherit", False)
    _pass.all_leaves = prev and (inputs is None or inherit)
    _pass.inherit = False
    try:
        return _engine.run_backward(outputs, seeds, retain_graph, create_graph,
                                    inputs, accumulate)
    finally:
        _pass.all_leaves = prev
        _pass.inherit = inherit


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, TensorBase):
        return (x,)
    return tuple(x)


def _root_grads(outputs, grad_outputs, create_graph):
    """One seed gradient per output: ones for scalars, else the user's."""
    seeds = []
    for i, out in enumerate(outputs):
        g = None if grad_outputs is None else grad_outputs[i]
        if not isinstance(out, TensorBase):
            raise TypeError(f"backward: outputs must be Tensors, got "
                            f"{type(out).__name__} at index {i}")
        if not out._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a "
                "grad_fn")
        arr = out._arr
        if g is None:
            if arr.size != 1:
                raise RuntimeError(
                    "grad can be implicitly created only for scalar outputs (this "
                    f"output has shape {list(arr.shape)}; pass gradient=... with "
                    "that shape)")
            if arr.dtype.kind != "f":
                raise RuntimeError("grad can be implicitly created only for real "
                                   "scalar outputs")
            seed = np.ones(arr.shape, arr.dtype)
        else:
            if not isinstance(g, TensorBase):
                from cygrad.creation import tensor
                g = tensor(g, dtype=arr.dtype)
            if tuple(g._arr.shape) != tuple(arr.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of "
                    f"{list(g._arr.shape)} and output[{i}] has a shape of "
                    f"{list(arr.shape)}.")
            if create_graph:
                seeds.append(g if g._arr.dtype == arr.dtype else g.to(arr.dtype))
                continue
            seed = g._arr
            if seed.dtype != arr.dtype:
                seed = seed.astype(arr.dtype)
        seeds.append(_engine._wrap(seed) if create_graph else seed)
    return tuple(seeds)


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Any = None, grad_variables: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves.

    ``grad_tensors``: one gradient per tensor (None allowed for scalars).
    ``inputs``: if given, only these tensors accumulate ``.grad``.
    """
    outputs = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    grads = _as_tuple(grad_tensors) if grad_tensors is not None else None
    if grads is not None and len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    if retain_graph is None:
        retain_graph = _default_retain(create_graph)
    seeds = _root_grads(outputs, grads, create_graph)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        captured = _run(outputs, seeds, retain_graph, create_graph, inputs, True)
        # Non-leaf inputs get their gradient as .grad too (torch's rule).
        for t, g in zip(inputs, captured):
            if t._grad_fn is not None and g is not None:
                g = g if create_graph else _engine._wrap(np.array(g))
                t._grad = g if t._grad is None else t._grad + g
        return
    _run(outputs, seeds, retain_graph, create_graph, None, True)


def grad(outputs: Tensor | Sequence[Tensor], inputs: Any, grad_outputs: Any = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool | None = None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated).

    ``.grad`` of every tensor is left untouched.  An input not reached by the
    graph raises unless ``allow_unused=True`` (then its gradient is None, or
    zeros with ``materialize_grads=True``).
    """
    if is_grads_batched:
        raise NotImplementedError(
            "grad(is_grads_batched=True) is not supported; use "
            "cygrad.autograd.jacobian or loop over the batch of grad_outputs")
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    for i, t in enumerate(ins):
        if not isinstance(t, TensorBase):
            raise TypeError(f"grad: inputs must be Tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError(
                f"One of the differentiated Tensors does not require grad (index {i})")
    gos = _as_tuple(grad_outputs) if grad_outputs is not None else None
    if gos is not None and len(gos) != len(outs):
        raise RuntimeError(
            f"grad requires one grad_output per output: got {len(gos)} for "
            f"{len(outs)} outputs")
    if retain_graph is None:
        retain_graph = _default_retain(create_graph)
    seeds = _root_grads(outs, gos, create_graph)
    captured = _run(outs, seeds, retain_graph, create_graph, ins, False)
    result = []
    for i, g in enumerate(captured):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have "
                    "been used in the graph. Set allow_unused=True if this is the "
                    "desired behavior.")
            if materialize_grads:
                g = zeros_like(ins[i])
        result.append(g)
    return tuple(result)
