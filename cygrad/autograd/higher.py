"""Functional higher-order helpers on top of ``grad``: jacobian, hessian, vjp,
jvp, vhp, hvp (the semantics of ``torch.autograd.functional``).

Every helper runs ``func`` on fresh aliases of ``inputs`` that require grad,
so the user's tensors and their ``.grad`` are never touched.  With
``create_graph=False`` the results are detached; with ``create_graph=True``
they are differentiable, also with respect to the original ``inputs`` when
those require grad.  ``strict=True`` raises when an output is independent of
an input instead of returning zeros.

Forward-mode products (``jvp``, ``hvp``) use the double-vjp trick: for a
dummy ``u`` that requires grad, ``w(u) = J^T u`` is linear in ``u``, and the
vjp of ``w`` with ``v`` is ``J v``.  It costs two backward passes and needs
the backward to be differentiable, which every cygrad op is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._kernels import engine as _engine
from cygrad._kernels.engine import TensorBase
from cygrad.ops.shape import reshape, stack

from .backprop import grad as _grad
from .grad_mode import enable_grad

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


# --- argument handling -----------------------------------------------------------------

def _as_tuple(x, arg_name, fn_name):
    """(tuple of Tensors, whether ``x`` was a tuple); raises on non-Tensors."""
    is_tuple = isinstance(x, (tuple, list))
    xs = tuple(x) if is_tuple else (x,)
    for i, el in enumerate(xs):
        if not isinstance(el, TensorBase):
            if is_tuple:
                raise TypeError(
                    f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                    f"tuple of Tensors but the value at index {i} has type "
                    f"{type(el).__name__}.")
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                f"tuple of Tensors but the given {arg_name} has type "
                f"{type(el).__name__}.")
    return xs, is_tuple


def _tuple_postprocess(res, to_unpack):
    """Undo ``_as_tuple``: one level (bool) or two levels ((outer, inner))."""
    if isinstance(to_unpack, tuple):
        outer, inner = to_unpack
        if not inner:
            res = tuple(r[0] for r in res)
        if not outer:
            res = res[0]
        return res
    return res if to_unpack else res[0]


def _preprocess(inputs, create_graph, need_graph):
    """Aliases of ``inputs`` that require grad (differentiable ones under
    create_graph when the input itself requires grad)."""
    out = []
    for x in inputs:
        if create_graph and x._requires_grad:
            out.append(x.reshape(x._arr.shape))       # keeps x's history
        else:
            t = _engine._alias(x)
            t._requires_grad = bool(need_graph)
            out.append(t)
    return tuple(out)


def _postprocess(xs, create_graph):
    """Detach results unless the caller wants a graph."""
    if create_graph:
        return xs
    if isinstance(xs, tuple):
        return tuple(_postprocess(x, False) for x in xs)
    if xs is None:
        return None
    return _engine._alias(xs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got "
                f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v._arr.shape) != tuple(el_other._arr.shape):
            prepend = f"Entry {i} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {list(el_other._arr.shape)} "
                f"but got {list(el_v._arr.shape)}.")


def _check_requires_grad(tensors, kind, strict):
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input "
                f"{i}. This is not allowed in strict mode.")
        if not t._requires_grad:
            if kind == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to "
                    f"input {i} is independent of the input. This is not allowed in "
                    "strict mode. You should ensure that your function is "
                    "thrice differentiable and that the hessian depends on the "
                    "inputs.")
            if kind == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the "
                    f"user-provided function with respect to input {i} is "
                    "independent of the input. This is not allowed in strict mode. "
                    "You should ensure that your function is twice differentiable "
                    "and that the jacobian depends on the inputs (this would be "
                    "violated by a linear function for example).")
            if kind == "grad_inputs":
                raise RuntimeError(
                    f"The gradient with respect to input {i} is independent of the "
                    "inputs of the user-provided function. This is not allowed in "
                    "strict mode.")
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require "
                "gradients. The outputs must be computed in a differentiable manner "
                "from the input when running in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False,
                   retain_graph=None):
    """``grad`` that tolerates outputs without grad (their vjp is zero) and
    returns None for unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    outs, gos = [], []
    for o, g in zip(outputs, grad_outputs):
        if o is not None and o._requires_grad:
            outs.append(o)
            gos.append(g)
    if not outs:
        return (None,) * len(inputs)
    return _grad(tuple(outs), inputs, tuple(gos), retain_graph=retain_graph,
                 create_graph=create_graph, allow_unused=True)


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """None -> zeros (non-strict) or an error (strict)."""
    res = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(
                        f"The output of the user-provided function is independent "
                        f"of input {i}. This is not allowed in strict mode.")
                if stage == "back_trick":
                    raise RuntimeError(
                        f"The gradient with respect to the input is independent of "
                        f"entry {i} in the grad_outputs when using the double "
                        "backward trick to compute forward mode gradients. This is "
                        "not allowed in strict mode.")
                if stage == "double_back":
                    raise RuntimeError(
                        f"The jacobian of the user-provided function is independent "
                        f"of input {i}. This is not allowed in strict mode.")
                raise RuntimeError(
                    f"The hessian of the user-provided function is independent of "
                    f"entry {i} in the grad_jacobian. This is not allowed in strict "
                    "mode as it prevents from using the double backward trick to "
                    "replace forward mode AD.")
            g = _engine._wrap(np.zeros(ref._arr.shape, ref._arr.dtype))
        res.append(g)
    return tuple(res)


def _check_strict_graph(grads, strict, create_graph):
    """strict + create_graph: a constant gradient cannot be differentiated."""
    if not (strict and create_graph):
        return
    for i, g in enumerate(grads):
        if g is not None and not g._requires_grad:
            raise RuntimeError(
                f"The jacobian of the user-provided function is independent of "
                f"input {i}. This is not allowed in strict mode when "
                "create_graph=True.")


# --- vjp / jvp --------------------------------------------------------------------------

def vjp(func: Callable[..., Any], inputs: Any, v: Any = None,
        create_graph: bool = False, strict: bool = False) -> Any:
    """Vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``.

    Parameters
    ----------
    func : callable
        Tensors in, a Tensor or a tuple of Tensors out.
    inputs : Tensor or tuple of Tensors
    v : Tensor or tuple of Tensors, optional
        Shaped like the outputs; may be None only for a one-element output.
    create_graph : bool
        Make the results differentiable.
    strict : bool
        Raise when an output is independent of an input (else zeros).

    Returns
    -------
    (func_output, vjp)
        ``vjp`` is shaped like ``inputs`` (a Tensor or a tuple).
    """
    with enable_grad():
        ins, is_in_tuple = _as_tuple(inputs, "inputs", "vjp")
        ins = _preprocess(ins, create_graph, True)
        outputs = func(*ins)
        outs, is_out_tuple = _as_tuple(outputs, "outputs of the user-provided "
                                       "function", "vjp")
        _check_requires_grad(outs, "outputs", strict)
        if v is not None:
            vs, _ = _as_tuple(v, "v", "vjp")
            _validate_v(vs, outs, is_out_tuple)
        else:
            if len(outs) != 1 or outs[0]._arr.size != 1:
                raise RuntimeError(
                    "The vector v can only be None if the user-provided function "
                    "returns a single Tensor with a single element.")
            vs = (None,)
        grads = _autograd_grad(outs, ins, vs, create_graph=create_graph)
        _check_strict_graph(grads, strict, create_graph)
        res = _fill_in_zeros(grads, ins, strict, create_graph, "back")
    return (_tuple_postprocess(_postprocess(outs, create_graph), is_out_tuple),
            _tuple_postprocess(_postprocess(res, create_graph), is_in_tuple))


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None,
        create_graph: bool = False, strict: bool = False) -> Any:
    """Jacobian-vector product ``J v`` of ``func`` at ``inputs`` (double-vjp trick).

    ``v`` is shaped like ``inputs`` (None only for a one-element input).
    Returns ``(func_output, jvp)`` with ``jvp`` shaped like the outputs.
    """
    with enable_grad():
        ins, is_in_tuple = _as_tuple(inputs, "inputs", "jvp")
        ins = _preprocess(ins, create_graph, True)
        if v is not None:
            vs, _ = _as_tuple(v, "v", "jvp")
            _validate_v(vs, ins, is_in_tuple)
        else:
            if len(ins) != 1 or ins[0]._arr.size != 1:
                raise RuntimeError(
                    "The vector v can only be None if the input to the "
                    "user-provided function is a single Tensor with a single "
                    "element.")
            vs = (None,)
        outputs = func(*ins)
        outs, is_out_tuple = _as_tuple(outputs, "outputs of the user-provided "
                                       "function", "jvp")
        _check_requires_grad(outs, "outputs", strict)
        # u: a dummy cotangent per output; w(u) = J^T u is linear in u.
        us = tuple(_engine._wrap(np.zeros(o._arr.shape, o._arr.dtype), True)
                   for o in outs)
        w = _autograd_grad(outs, ins, us, create_graph=True)
        _check_requires_grad(w, "grad_inputs", strict)
        seeds = tuple(
            vv if vv is not None else _engine._wrap(np.ones(i._arr.shape,
                                                            i._arr.dtype))
            for vv, i in zip(vs, ins))
        w_used = [(wi, s) for wi, s in zip(w, seeds)
                  if wi is not None and wi._requires_grad]
        if w_used:
            jv = _grad(tuple(x[0] for x in w_used), us, tuple(x[1] for x in w_used),
                       create_graph=create_graph, allow_unused=True)
        else:
            jv = (None,) * len(us)
        _check_strict_graph(jv, strict, create_graph)
        res = _fill_in_zeros(jv, outs, strict, create_graph, "back_trick")
    return (_tuple_postprocess(_postprocess(outs, create_graph), is_out_tuple),
            _tuple_postprocess(_postprocess(res, create_graph), is_out_tuple))


# --- jacobian / hessian --------------------------------------------------------------------

def _onehot(ref, k):
    arr = np.zeros(ref._arr.size, ref._arr.dtype)
    arr[k] = 1
    return _engine._wrap(arr.reshape(ref._arr.shape))


def _stack_rows(rows, out_shape, in_shape, dtype, create_graph):
    """Rows (one per output element, each input-shaped) -> out_shape + in_shape."""
    shape = tuple(out_shape) + tuple(in_shape)
    if not rows:
        return _engine._wrap(np.zeros(shape, dtype))
    if create_graph and any(r._requires_grad for r in rows):
        return reshape(stack(rows), shape)
    return _engine._wrap(np.stack([np.asarray(r._arr) for r in rows]).reshape(shape))


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False,
             strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``.

    Parameters
    ----------
    func : callable
        Tensors in, a Tensor or a tuple of Tensors out.
    inputs : Tensor or tuple of Tensors
    create_graph : bool
        Make the Jacobian differentiable (hessians, gradient penalties).
    strict : bool
        Raise when an output is independent of an input (else zeros).
    vectorize : bool
        Accepted for compatibility; rows are always computed one by one.
    strategy : {"reverse-mode", "forward-mode"}
        Rows by vector-Jacobian products (one backward per output element)
        or columns by Jacobian-vector products (double-vjp trick, one per
        input element): pick the side with fewer elements.

    Returns
    -------
    Tensor or tuple
        For output i and input j, a Tensor of shape
        ``outputs[i].shape + inputs[j].shape``; nested tuples follow the
        tuple-ness of the outputs (outer) and the inputs (inner).
    """
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or '
                         f'"reverse-mode". Got {strategy!r}.')
    with enable_grad():
        ins, is_in_tuple = _as_tuple(inputs, "inputs", "jacobian")
        ins = _preprocess(ins, create_graph, True)
        outputs = func(*ins)
        outs, is_out_tuple = _as_tuple(outputs, "outputs of the user-provided "
                                       "function", "jacobian")
        _check_requires_grad(outs, "outputs", strict)
        if strategy == "forward-mode":
            jac = _jacobian_forward(outs, ins, create_graph, strict)
        else:
            jac = _jacobian_reverse(outs, ins, create_graph, strict)
    return _tuple_postprocess(_postprocess(jac, create_graph),
                              (is_out_tuple, is_in_tuple))


def _jacobian_reverse(outs, ins, create_graph, strict):
    jac = []
    for i, out in enumerate(outs):
        rows = [[] for _ in ins]
        for k in range(out._arr.size):
            if out._requires_grad:
                gs = _grad((out,), ins, (_onehot(out, k),), retain_graph=True,
                           create_graph=create_graph, allow_unused=True)
            else:
                gs = (None,) * len(ins)
            for j, (g, x) in enumerate(zip(gs, ins)):
                if g is None:
                    if strict:
                        raise RuntimeError(
                            f"Output {i} of the user-provided function is "
                            f"independent of input {j}. This is not allowed in "
                            "strict mode.")
                    g = _engine._wrap(np.zeros(x._arr.shape, x._arr.dtype))
                elif strict and create_graph and not g._requires_grad:
                    raise RuntimeError(
                        f"The jacobian of the user-provided function is "
                        f"independent of input {j}. This is not allowed in strict "
                        "mode when create_graph=True.")
                rows[j].append(g)
        jac.append(tuple(
            _stack_rows(rows[j], out._arr.shape, x._arr.shape, x._arr.dtype,
                        create_graph) for j, x in enumerate(ins)))
    return tuple(jac)


def _jacobian_forward(outs, ins, create_graph, strict):
    us = tuple(_engine._wrap(np.zeros(o._arr.shape, o._arr.dtype), True)
               for o in outs)
    w = _autograd_grad(outs, ins, us, create_graph=True)
    cols = [[[] for _ in ins] for _ in outs]     # [i][j] -> columns
    for j, x in enumerate(ins):
        wj = w[j]
        for k in range(x._arr.size):
            if wj is None or not wj._requires_grad:
                gs = (None,) * len(outs)
            else:
                gs = _grad((wj,), us, (_onehot(x, k),), retain_graph=True,
                           create_graph=create_graph, allow_unused=True)
            for i, (g, o) in enumerate(zip(gs, outs)):
                if g is None:
                    if strict:
                        raise RuntimeError(
                            f"Output {i} of the user-provided function is "
                            f"independent of input {j}. This is not allowed in "
                            "strict mode.")
                    g = _engine._wrap(np.zeros(o._arr.shape, o._arr.dtype))
                cols[i][j].append(g)
    jac = []
    for i, o in enumerate(outs):
        row = []
        for j, x in enumerate(ins):
            # Stack columns as (in elems, out...) then move input axes last.
            stacked = _stack_rows(cols[i][j], x._arr.shape, o._arr.shape,
                                  o._arr.dtype, create_graph)
            nin, nout = x._arr.ndim, o._arr.ndim
            perm = tuple(range(nin, nin + nout)) + tuple(range(nin))
            if stacked._requires_grad:
                row.append(stacked.permute(perm).contiguous())
            else:
                row.append(_engine._wrap(np.ascontiguousarray(
                    np.transpose(stacked._arr, perm))))
        jac.append(tuple(row))
    return tuple(jac)


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False,
            strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar ``func`` at ``inputs``.

    ``func`` must return a single Tensor with one element.  For a single
    input the result has shape ``inputs.shape + inputs.shape``; for a tuple,
    ``H[i][j]`` has shape ``inputs[i].shape + inputs[j].shape``.
    """
    ins, is_in_tuple = _as_tuple(inputs, "inputs", "hessian")

    def ensure_single_output(out):
        _, is_tuple = _as_tuple(out, "outputs of the user-provided function",
                                "hessian")
        if is_tuple or not isinstance(out, TensorBase):
            raise RuntimeError(
                "The function given to hessian should return a single Tensor")
        if out._arr.size != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should "
                "contain a single element")
        return out.reshape(())

    def jac_func(*xs):
        out = ensure_single_output(func(*xs))
        _check_requires_grad((out,), "outputs", strict)
        gs = _autograd_grad((out,), xs, create_graph=True)
        _check_requires_grad(gs, "jacobian", strict)
        return _fill_in_zeros(gs, xs, strict, True, "double_back")

    res = jacobian(jac_func, ins, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_in_tuple, is_in_tuple))


def _hessian_setup(func, inputs, v, create_graph, strict, name):
    """Shared start of vhp/hvp: inputs, vectors, the scalar output and its
    gradient recorded for a second differentiation (call under enable_grad)."""
    ins, is_in_tuple = _as_tuple(inputs, "inputs", name)
    ins = _preprocess(ins, create_graph, True)
    vs = _hessian_v(v, ins, is_in_tuple, name)
    out = _scalar_output(func(*ins), name)
    _check_requires_grad((out,), "outputs", strict)
    jac = _autograd_grad((out,), ins, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return ins, is_in_tuple, vs, out, jac


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None,
        create_graph: bool = False, strict: bool = False) -> Any:
    """Vector-Hessian product ``v^T H`` of a scalar ``func``.

    Returns ``(func_output, vhp)`` with ``vhp`` shaped like ``inputs``.
    """
    with enable_grad():
        ins, is_in_tuple, vs, out, jac = _hessian_setup(
            func, inputs, v, create_graph, strict, "vhp")
        used = [(g, s) for g, s in zip(jac, vs) if g is not None and g._requires_grad]
        if used:
            res = _grad(tuple(x[0] for x in used), ins, tuple(x[1] for x in used),
                        create_graph=create_graph, allow_unused=True)
        else:
            res = (None,) * len(ins)
        res = _fill_in_zeros(res, ins, strict, create_graph, "double_back")
    return (_postprocess(out, create_graph),
            _tuple_postprocess(_postprocess(res, create_graph), is_in_tuple))


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None,
        create_graph: bool = False, strict: bool = False) -> Any:
    """Hessian-vector product ``H v`` of a scalar ``func`` (double-vjp trick:
    exact for non-symmetric second derivatives too).

    Returns ``(func_output, hvp)`` with ``hvp`` shaped like ``inputs``.
    """
    with enable_grad():
        ins, is_in_tuple, vs, out, jac = _hessian_setup(
            func, inputs, v, create_graph, strict, "hvp")
        # u: dummy cotangent of the gradient; w(u) = H^T u, then vjp with v.
        us = tuple(_engine._wrap(np.zeros(x._arr.shape, x._arr.dtype), True)
                   for x in ins)
        used = [(g, u) for g, u in zip(jac, us) if g is not None and g._requires_grad]
        if used:
            w = _grad(tuple(x[0] for x in used), ins, tuple(x[1] for x in used),
                      create_graph=True, allow_unused=True)
        else:
            w = (None,) * len(ins)
        w_used = [(wi, s) for wi, s in zip(w, vs)
                  if wi is not None and wi._requires_grad]
        if w_used:
            res = _grad(tuple(x[0] for x in w_used), us, tuple(x[1] for x in w_used),
                        create_graph=create_graph, allow_unused=True)
        else:
            res = (None,) * len(us)
        res = _fill_in_zeros(res, ins, strict, create_graph, "double_back_trick")
    return (_postprocess(out, create_graph),
            _tuple_postprocess(_postprocess(res, create_graph), is_in_tuple))


def _hessian_v(v, ins, is_in_tuple, fn_name):
    if v is not None:
        vs, _ = _as_tuple(v, "v", fn_name)
        _validate_v(vs, ins, is_in_tuple)
        return vs
    if len(ins) != 1 or ins[0]._arr.size != 1:
        raise RuntimeError("The vector v can only be None if the input to the "
                           "user-provided function is a single Tensor with a "
                           "single element.")
    return (_engine._wrap(np.ones(ins[0]._arr.shape, ins[0]._arr.dtype)),)


def _scalar_output(out, fn_name):
    if isinstance(out, (tuple, list)) or not isinstance(out, TensorBase):
        raise RuntimeError(
            f"The function given to {fn_name} should return a single Tensor")
    if out._arr.size != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should "
            "contain a single element")
    return out
