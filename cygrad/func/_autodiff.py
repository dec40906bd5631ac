"""torch.func's differentiation transforms on cygrad's reverse-mode engine:
``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``,
``hessian``, ``linearize`` and ``functionalize``.

Each transform runs the function on aliases of the differentiated inputs
that require grad and asks the engine for the derivative.  Transforms nest
(``jacfwd(jacrev(f))``, ``vmap(grad(f))``, ``grad(grad(f))``) because a
transform records the graph of its derivative whenever someone outside may
differentiate it: when it runs inside another transform, or when one of its
inputs requires grad.  At the top level, on inputs that do not require grad,
the results are plain tensors, as torch.func's are.  (One difference: a
tensor that requires grad and is only closed over, not passed, at the top
level gets no gradient through the result.)

Forward mode (``jvp``, ``jacfwd``) is the double-vjp trick of
``cygrad.autograd.functional``: exact, at the cost of two backward passes.
Arguments may be nested tuples, lists and dicts of tensors (a model's
parameter dict): derivatives come back in the same structure.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from cygrad._kernels import engine as _engine
from cygrad._kernels.engine import TensorBase
from cygrad.autograd import higher as _higher
from cygrad.autograd.backprop import grad as _autograd_grad
from cygrad.autograd.grad_mode import enable_grad

from . import _pytree

__all__ = ["functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev",
           "jvp", "linearize", "vjp"]

_levels = threading.local()


def _depth() -> int:
    return getattr(_levels, "depth", 0)


@contextlib.contextmanager
def _level():
    """Marks a transform running: transforms inside it keep their graphs."""
    _levels.depth = _depth() + 1
    try:
        with enable_grad():
            yield
    finally:
        _levels.depth -= 1


def _keep_graph(leaves) -> bool:
    """Whether the derivative must itself be differentiable."""
    if _depth() > 0:
        return True
    return _engine.is_grad_enabled() and any(
        isinstance(t, TensorBase) and t._requires_grad for t in leaves)


def _check_tensors(leaves):
    for t in leaves:
        if not isinstance(t, TensorBase):
            raise ValueError(f"Thing passed to transform API must be Tensor, got "
                             f"{type(t)}")


def _track(leaves, keep):
    """Aliases of ``leaves`` that require grad: differentiable views of the
    originals when the graph is kept and they require grad, fresh leaves
    otherwise."""
    out = []
    for x in leaves:
        if keep and x._requires_grad:
            out.append(x.view_as(x))
        else:
            t = _engine._alias(x)
            t.requires_grad_(True)      # torch's error for an integer tensor
            out.append(t)
    return out


def _release(tree, keep):
    """Detach the tensors of ``tree`` unless the graph is kept."""
    if keep:
        return tree
    leaves, spec = _pytree.flatten(tree)
    return _pytree.unflatten(
        [_engine._alias(x) if isinstance(x, TensorBase) else x for x in leaves], spec)


def _zeros_like(x):
    return _engine._wrap(np.zeros(x._arr.shape, x._arr.dtype))


def _grads(outputs, inputs, cotangents, keep):
    """d(sum <outputs, cotangents>)/d inputs, zeros for unused inputs."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o._requires_grad]
    if pairs:
        gs = _autograd_grad(tuple(p[0] for p in pairs), tuple(inputs),
                            tuple(p[1] for p in pairs), retain_graph=True,
                            create_graph=keep, allow_unused=True)
    else:
        gs = (None,) * len(inputs)
    return [_zeros_like(x) if g is None else g for g, x in zip(gs, inputs)]


# --- argnums --------------------------------------------------------------------------

def _check_argnums(argnums, nargs):
    """The normalized argnums (an int or a tuple of ints)."""
    def one(a):
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: "
                               f"{type(a)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        return a % nargs

    if isinstance(argnums, tuple):
        if len(argnums) == 0:
            raise RuntimeError("argnums must be non-empty")
        norm = tuple(one(a) for a in argnums)
        if len(set(norm)) != len(norm):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return norm
    if not isinstance(argnums, int) or isinstance(argnums, bool):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: "
                           f"{type(argnums)}")
    return one(argnums)


def _diff_args(args, argnums):
    """The differentiated part of ``args``: one argument or a tuple of them."""
    if isinstance(argnums, int):
        return args[argnums]
    return tuple(args[i] for i in argnums)


def _replace_args(args, argnums, new):
    args = list(args)
    if isinstance(argnums, int):
        args[argnums] = new
    else:
        for i, v in zip(argnums, new):
            args[i] = v
    return tuple(args)


def _split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    return out


# --- grad -----------------------------------------------------------------------------

def grad_and_value(func: Callable[..., Any], argnums: Any = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """``func`` -> a function returning ``(gradient, value)`` of ``func``.

    Parameters
    ----------
    func : callable
        Returns a 0-d Tensor (or ``(tensor, aux)`` with ``has_aux``).
    argnums : int or tuple of ints
        Which positional arguments to differentiate; each may be a nested
        tuple/list/dict of Tensors.
    has_aux : bool
        ``func`` returns ``(output, aux)``; aux is passed through.

    Returns
    -------
    callable
        ``(*args, **kwargs) -> (grad, value)`` or ``((grad, (value, aux)))``
        with ``has_aux``; ``grad`` mirrors the argument (a tuple over
        ``argnums`` when that is a tuple).
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        api = "grad_and_value(f)(*args)"
        nums = _check_argnums(argnums, len(args))
        leaves, spec = _pytree.flatten(_diff_args(args, nums))
        _check_tensors(leaves)
        keep = _keep_graph(leaves)
        with _level():
            tracked = _track(leaves, keep)
            out = func(*_replace_args(args, nums, _pytree.unflatten(tracked, spec)),
                       **kwargs)
            out, aux = _split_aux(out, has_aux, api)
            if not isinstance(out, TensorBase):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, "
                                   f"got {type(out)}")
            if out._arr.ndim != 0:
                raise RuntimeError(
                    f"{api}: Expected f(*args) to return a scalar Tensor, got "
                    f"tensor with {out._arr.ndim} dims. Maybe you wanted to use "
                    "the vjp or jacrev APIs instead?")
            gs = _grads([out], tracked, [None], keep)
        g = _pytree.unflatten(_release(gs, keep), spec)
        value = _release(out, keep)
        if has_aux:
            return g, (value, _release(aux, keep))
        return g, value

    return wrapper


def grad(func: Callable[..., Any], argnums: Any = 0,
         has_aux: bool = False) -> Callable[..., Any]:
    """``func`` -> its gradient function (``grad_and_value`` without the
    value): ``grad(f)(x)`` is df/dx for a 0-d output; with ``has_aux`` it
    returns ``(grad, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


# --- vjp / jvp ------------------------------------------------------------------------

def _output_leaves(out, api):
    leaves, spec = _pytree.flatten(out)
    for t in leaves:
        if not isinstance(t, TensorBase):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, "
                               f"got unsupported type {type(t)}")
    return leaves, spec


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns the
    vector-Jacobian product for each primal, as a tuple.

    ``cotangents`` has the structure of the output; ``vjp_fn`` may be called
    any number of times.  With ``has_aux`` the result is
    ``(output, vjp_fn, aux)``.
    """
    api = "vjp(f, *primals)"
    leaves, spec = _pytree.flatten(primals)
    _check_tensors(leaves)
    keep = _keep_graph(leaves)
    with _level():
        tracked = _track(leaves, keep)
        out = func(*_pytree.unflatten(tracked, spec))
        out, aux = _split_aux(out, has_aux, api)
        out_leaves, out_spec = _output_leaves(out, api)

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        ct_leaves, ct_spec = _pytree.flatten(cotangents)
        if _pytree.spec_repr(ct_spec) != _pytree.spec_repr(out_spec):
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree "
                "structure of outputs to the function. cotangents: "
                f"{_pytree.spec_pprint(ct_spec)}, primal output: "
                f"{_pytree.spec_pprint(out_spec)}")
        _check_tensors(ct_leaves)
        for i, (c, o) in enumerate(zip(ct_leaves, out_leaves)):
            if tuple(c._arr.shape) != tuple(o._arr.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of "
                    f"torch.Size({list(c._arr.shape)}) and output[{i}] has a shape "
                    f"of torch.Size({list(o._arr.shape)}).")
        again = keep if create_graph is None else create_graph
        again = again or _keep_graph(ct_leaves)
        with _level():
            gs = _grads(out_leaves, tracked, ct_leaves, again)
        return tuple(_pytree.unflatten(_release(gs, again), spec))

    value = _release(out, keep)
    if has_aux:
        return value, vjp_fn, _release(aux, keep)
    return value, vjp_fn


def _check_primals(primals, tangents, api):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should "
                           "be valid to call f(*primals).")
    p_leaves, p_spec = _pytree.flatten(primals)
    t_leaves, t_spec = _pytree.flatten(tangents)
    if _pytree.spec_repr(p_spec) != _pytree.spec_repr(t_spec):
        raise RuntimeError(
            f"{api}: Expected primals and tangents to have the same python "
            "structure. For example, if primals is a tuple of 3 tensors, tangents "
            f"also must be. Got primals with structure {_pytree.spec_repr(p_spec)} "
            f"and tangents with structure {_pytree.spec_repr(t_spec)}")
    if not p_leaves:
        raise RuntimeError(f"{api}: Expected primals to contain at least one Tensor.")
    _check_tensors(p_leaves)
    _check_tensors(t_leaves)
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p._arr.shape) != tuple(t._arr.shape):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than "
                "that of the original Tensor, this is not supported. Tensor is of "
                f"size {list(p._arr.shape)} while the given forward gradient is of "
                f"size {list(t._arr.shape)}.")
    return p_leaves, p_spec, t_leaves


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *,
        strict: bool = False, has_aux: bool = False) -> Any:
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product.

    ``primals`` is a tuple (of tensors or nested containers of them) and
    ``tangents`` has its structure; the result has the output's structure.
    Computed by the double-vjp trick (two backward passes).  With
    ``has_aux``: ``(output, jvp_out, aux)``.
    """
    api = "jvp(f, primals, tangents)"
    p_leaves, p_spec, t_leaves = _check_primals(primals, tangents, api)
    keep = _keep_graph(p_leaves + t_leaves)
    aux_box = []
    out_box = []

    def flat_func(*xs):
        out = func(*_pytree.unflatten(list(xs), p_spec))
        out, aux = _split_aux(out, has_aux, api)
        leaves, spec = _output_leaves(out, "jvp(f, primals, tangents)")
        out_box.append(spec)
        aux_box.append(aux)
        return tuple(leaves)

    with _level():
        outs, jv = _higher.jvp(flat_func, tuple(p_leaves), tuple(t_leaves),
                               create_graph=keep, strict=strict)
    out_spec = out_box[0]
    value = _pytree.unflatten(_release(list(outs), keep), out_spec)
    res = _pytree.unflatten(_release(list(jv), keep), out_spec)
    if has_aux:
        return value, res, _release(aux_box[0], keep)
    return value, res


def linearize(func: Callable[..., Any], *primals: Any) -> Any:
    """``(func(*primals), jvp_fn)`` with ``jvp_fn(*tangents)`` the
    Jacobian-vector product at ``primals`` (each call runs ``jvp`` again)."""
    value = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return _release(value, _keep_graph(_pytree.flatten(primals)[0])), jvp_fn


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable:
    """``func`` itself: cygrad runs every function eagerly with its in-place
    updates as written, which already gives the values and gradients a
    functionalized program computes."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid "
                           f"argument for remove={remove}. Valid options are:\n"
                           "     remove='mutations': all inplace and out= "
                           "operators will be removed from the program, and "
                           "replaced with their out-of-place equivalents.\n"
                           "     remove='mutations_and_views': In addition to the "
                           "above, all aliasing operators {view} will be replaced "
                           "with their non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


# --- Jacobians ------------------------------------------------------------------------

def _jacobian(func, argnums, has_aux, forward, api):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        leaves, spec = _pytree.flatten(_diff_args(args, nums))
        _check_tensors(leaves)
        keep = _keep_graph(leaves)
        with _level():
            tracked = _track(leaves, keep)
            out = func(*_replace_args(args, nums, _pytree.unflatten(tracked, spec)),
                       **kwargs)
            out, aux = _split_aux(out, has_aux, api)
            out_leaves, out_spec = _output_leaves(out, "vjp(f, *primals)")
            if forward:
                jac = _higher._jacobian_forward(tuple(out_leaves), tuple(tracked),
                                                keep, False)
            else:
                jac = _higher._jacobian_reverse(tuple(out_leaves), tuple(tracked),
                                                keep, False)
        # one tree like the differentiated arguments per output leaf
        per_out = [_pytree.unflatten(_release(list(row), keep), spec) for row in jac]
        res = _pytree.unflatten(per_out, out_spec)
        if has_aux:
            return res, _release(aux, keep)
        return res

    return wrapper


def jacrev(func: Callable[..., Any], argnums: Any = 0, *, has_aux: bool = False,
           chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable[..., Any]:
    """``func`` -> its Jacobian function, by reverse mode (one backward per
    output element).

    For output leaf ``o`` and differentiated input leaf ``x`` the block has
    shape ``o.shape + x.shape``; blocks nest as the output (outer) and the
    arguments at ``argnums`` (inner).  ``chunk_size`` is accepted: rows are
    always computed one at a time.
    """
    if chunk_size is not None and not (isinstance(chunk_size, int)
                                       and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, False, "jacrev(f)(*args)")


def jacfwd(func: Callable[..., Any], argnums: Any = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:
    """``func`` -> its Jacobian function, by forward mode (one Jacobian-vector
    product per input element, each by the double-vjp trick); the same
    layout as ``jacrev``."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', "
                           f"'different', or 'same'. Got {randomness}")
    return _jacobian(func, argnums, has_aux, True, "jacfwd(f)(*args)")


def hessian(func: Callable[..., Any], argnums: Any = 0) -> Callable[..., Any]:
    """``func`` -> its Hessian function: ``jacfwd(jacrev(func, argnums),
    argnums)``; for one input ``x`` of a 0-d output the result has shape
    ``x.shape + x.shape``."""
    return jacfwd(jacrev(func, argnums), argnums)
