"""``vmap``: a function of one example mapped over a batch dimension.

cygrad has no batched tensors: ``vmap`` calls the function once per batch
element on slices (``x.select(in_dim, b)``, views of the inputs) and stacks
the results along ``out_dims``.  Values, shapes, gradients (the slices and
the stack are differentiable) and errors are torch's; the cost is that of a
Python loop, ``batch size`` calls of the function, where torch runs one
batched call.  Code that would not vmap in torch (``.item()``, data-dependent
control flow) runs here, one example at a time.

``randomness``: "different" draws fresh numbers for each element (the loop
does that anyway); "same" restarts the default generator at the same state
for every element; "error" (the default) raises when the function draws
from the default generator.  ``chunk_size`` is accepted and checked; the
elements always run one at a time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from cygrad._kernels.engine import TensorBase
from cygrad.autograd.backprop import _keeping_graphs
from cygrad.autograd.grad_mode import no_grad
from cygrad.creation import default_generator, zeros
from cygrad.ops.shape import stack

from . import _pytree

__all__ = ["vmap"]


def _fname(func):
    return getattr(func, "__name__", repr(func))


def _check_in_dims(in_dims, fname):
    if isinstance(in_dims, (int, tuple)) and not isinstance(in_dims, bool):
        return
    if in_dims is None:
        return
    raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): expected "
                     "`in_dims` to be int or a (potentially nested) tuple matching "
                     f"the structure of inputs, got: {type(in_dims)}.")


def _batch_inputs(args, in_dims, fname):
    """(leaves of args, spec, normalized in_dim per leaf, batch size)."""
    if not args:
        raise ValueError(f"vmap({fname})(<inputs>): got no inputs. Maybe you forgot "
                         "to add inputs, or you are trying to vmap over a function "
                         "with no inputs. The latter is unsupported.")
    leaves, spec = _pytree.flatten(args)
    prefix = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    dims = None
    if len(prefix) == len(args):
        dims = _pytree.broadcast_prefix(prefix, args)
    if dims is None:
        raise ValueError(
            f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
            "compatible with the structure of `inputs`. in_dims has structure "
            f"{_pytree.spec_repr(_pytree.flatten(in_dims)[1])} but inputs has "
            f"structure {_pytree.spec_repr(spec)}.")
    sizes, norm = [], []
    for x, d in zip(leaves, dims):
        if d is None:
            norm.append(None)
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(
                f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): in_dims must be "
                f"an int or None for each input, got {type(d)}.")
        if not isinstance(x, TensorBase):
            raise ValueError(
                f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                f"for an input but the input is of type {type(x)}. We cannot vmap "
                "over non-Tensor arguments, please use None as the respective "
                "in_dim")
        nd = x._arr.ndim
        if not -nd <= d < nd:
            raise ValueError(
                f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} "
                f"for some input, but that input is a Tensor of dimensionality {nd} "
                f"so expected in_dim to satisfy -{nd} <= in_dim < {nd}.")
        d %= nd
        norm.append(d)
        sizes.append(x._arr.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the "
                         f"mapped dimension, got sizes {sizes} for the mapped "
                         "dimension")
    return leaves, spec, norm, sizes[0]


def _example(leaves, dims, b):
    """The inputs of batch element ``b`` (None: a stand-in of zeros, for an
    empty batch)."""
    out = []
    for x, d in zip(leaves, dims):
        if d is None:
            out.append(x)
        elif b is None:
            shape = x._arr.shape[:d] + x._arr.shape[d + 1:]
            out.append(zeros(shape, dtype=x.dtype))
        else:
            out.append(x.select(d, b))
    return out


def _stack_outputs(results, out_dims, fname, batch):
    """Stack each output leaf of the per-element results along its out_dim."""
    first_leaves, spec = _pytree.flatten(results[0])
    if isinstance(out_dims, tuple) and not isinstance(results[0], tuple):
        dims = None
    elif isinstance(out_dims, tuple):
        dims = _pytree.broadcast_prefix(out_dims, results[0])
    else:
        dims = [out_dims] * len(first_leaves)
    if dims is None:
        raise ValueError(
            f"vmap({fname}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
            "compatible with the structure of `outputs`. out_dims has structure "
            f"{_pytree.spec_repr(_pytree.flatten(out_dims)[1])} but outputs has "
            f"structure {_pytree.spec_repr(spec)}.")
    columns = [_pytree.flatten(r)[0] for r in results]
    out = []
    for k, (leaf, d) in enumerate(zip(first_leaves, dims)):
        if d is None:
            out.append(leaf)
            continue
        if not isinstance(leaf, TensorBase):
            raise ValueError(f"vmap({fname}, ...): `{fname}` must only return "
                             f"Tensors, got type {type(leaf)}. Did you mean to set "
                             "out_dims= to None for output?")
        nd = leaf._arr.ndim + 1
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-nd}, {nd - 1}], but got {d})")
        if batch == 0:
            shape = list(leaf._arr.shape)
            shape.insert(d % nd, 0)
            out.append(zeros(shape, dtype=leaf.dtype))
        else:
            out.append(stack([c[k] for c in columns], dim=d))
    return _pytree.unflatten(out, spec)


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0,
         randomness: str = "error", *, chunk_size: int | None = None
         ) -> Callable[..., Any]:
    """``func`` over one example -> a function over a batch of examples.

    Parameters
    ----------
    func : callable
        Takes tensors (or nested tuples/lists/dicts of them) of one example.
    in_dims : int, None or a tuple matching the positional arguments
        The batch dimension of each input (None: not batched, passed whole to
        every call); nested tuples, lists and dicts match nested arguments,
        and an int covers a whole subtree.  Keyword arguments are never
        batched.
    out_dims : int, None or a tuple matching the outputs
        Where the batch dimension goes in each output (None: the output is
        not batched; the first element's is returned).
    randomness : {"error", "different", "same"}
    chunk_size : int, optional
        Accepted for torch's sake; elements run one at a time.

    Returns
    -------
    callable
        Its outputs have the structure of ``func``'s, with a batch dimension.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', "
                           f"'different', or 'same'. Got {randomness}")
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    fname = _fname(func)
    _check_in_dims(in_dims, fname)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        leaves, spec, dims, batch = _batch_inputs(args, in_dims, fname)
        state = default_generator.get_state()
        results = []
        if batch == 0:
            with no_grad():
                example = _pytree.unflatten(_example(leaves, dims, None), spec)
                results.append(func(*example, **kwargs))
        for b in range(batch):
            if randomness == "same":
                default_generator.set_state(state)
            example = _pytree.unflatten(_example(leaves, dims, b), spec)
            with _keeping_graphs(b < batch - 1):
                results.append(func(*example, **kwargs))
            if randomness == "error" and b == 0 and not _same_state(state):
                raise RuntimeError(
                    "vmap: called random operation while in randomness error mode. "
                    "Please either use the 'same' or 'different' randomness flags "
                    "on vmap or perform the randomness operation out of vmap")
        return _stack_outputs(results, out_dims, fname, batch)

    return wrapper


def _same_state(state):
    return bool((default_generator.get_state()._arr == state._arr).all())
