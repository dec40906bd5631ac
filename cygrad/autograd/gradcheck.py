"""Numerical checks of gradients: ``gradcheck`` and ``gradgradcheck``.

Both compare the gradients computed by the engine with central differences
``(f(x + eps) - f(x - eps)) / (2 * eps)`` evaluated in float64.

Two modes:

- *full*: the whole Jacobian of every output with respect to every input,
  one backward pass per output element and two forward passes per input
  element.  A mismatch names the input, the output, the element of each and
  both values.
- *fast* (random projection, for big inputs): for unit random vectors ``u``
  (per output) and ``v`` (per input) it compares the scalar ``u^T J v``: the
  analytical side from one vector-Jacobian product per output, the numerical
  side from one directional difference per input.  A mismatch is then
  located element by element when the pair is small enough.  Being one
  projection, it is less sensitive than the full check: an error confined to
  one entry of a large Jacobian may fall within ``rtol`` of the projection.

Inputs that require grad and are not float64 are checked on float64 copies,
with a warning: with ``eps=1e-6`` a float32 difference quotient is noise.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._kernels import engine as _engine
from cygrad._kernels.engine import TensorBase

from .backprop import grad as _grad

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]

# Auto mode switches to the random projection when the full Jacobian would
# cost more than this many function evaluations (forward + backward passes).
_FAST_MIN_EVALS = 2048
# In fast mode a failing (input, output) pair is located element by element
# when its Jacobian has at most this many entries.
_LOCATE_MAX_ENTRIES = 1 << 16


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree.

    Attributes: ``input_index``, ``output_index``, ``input_element`` and
    ``output_element`` (index tuples, or None for a projected check),
    ``numerical``, ``analytical`` (floats).
    """

    def __init__(self, msg, input_index=None, output_index=None, input_element=None,
                 output_element=None, numerical=None, analytical=None):
        super().__init__(msg)
        self.input_index = input_index
        self.output_index = output_index
        self.input_element = input_element
        self.output_element = output_element
        self.numerical = numerical
        self.analytical = analytical


# --- inputs and outputs -----------------------------------------------------------------

def _as_tuple(x):
    if isinstance(x, TensorBase):
        return (x,), False
    if isinstance(x, (tuple, list)):
        return tuple(x), True
    return (x,), False


def _prepare_inputs(inputs, fn_name):
    """Float64 leaf copies of the differentiable inputs; others pass through."""
    prepared = []
    diff = []
    for i, x in enumerate(inputs):
        if not isinstance(x, TensorBase) or not x._requires_grad:
            prepared.append(x)
            continue
        arr = x._arr
        if arr.dtype != np.float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision "
                f"floating point ({arr.dtype}). {fn_name} checks it on a float64 "
                "copy: finite differences with eps=1e-6 are meaningless in single "
                "precision.", UserWarning, stacklevel=3)
        t = _engine._wrap(np.array(arr, dtype=np.float64), True)
        prepared.append(t)
        diff.append(i)
    if not diff:
        raise ValueError(
            f"{fn_name} expects at least one input tensor to require gradient, "
            "but none of them have requires_grad=True.")
    return prepared, diff


def _outputs(func, args):
    out = func(*args)
    outs, _ = _as_tuple(out)
    return outs


def _float_outputs(outs):
    """Indices of the outputs that take part in the check (float tensors)."""
    return [k for k, o in enumerate(outs)
            if isinstance(o, TensorBase) and o._arr.dtype.kind == "f"]


def _output_values(func, args, keep):
    outs = _outputs(func, args)
    return [np.array(outs[k]._arr, dtype=np.float64) for k in keep]


# --- Jacobians ---------------------------------------------------------------------------

def _numerical_columns(func, args, keep, i, eps, directions):
    """d outputs / d input i along each direction: list over directions of lists
    over outputs of float64 arrays (output-shaped)."""
    x = args[i]
    arr = x._arr
    orig = arr.copy()
    cols = []
    try:
        for d in directions:
            np.add(orig, eps * d, out=arr)
            plus = _output_values(func, args, keep)
            np.subtract(orig, eps * d, out=arr)
            minus = _output_values(func, args, keep)
            cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
    finally:
        arr[...] = orig
    return cols


def _unit_directions(shape):
    """One-hot arrays of ``shape``, one per element, in C order."""
    n = int(np.prod(shape, dtype=np.int64))
    for k in range(n):
        d = np.zeros(n)
        d[k] = 1.0
        yield d.reshape(shape)


def _numerical_jacobian(func, args, keep, i, eps):
    """Per kept output: array (out numel, in numel) of d out / d input i."""
    shape = args[i]._arr.shape
    cols = _numerical_columns(func, args, keep, i, eps, _unit_directions(shape))
    n_in = len(cols)
    jac = []
    for k in range(len(keep)):
        m = cols[0][k].size if n_in else 0
        j = np.zeros((m, n_in))
        for c in range(n_in):
            j[:, c] = cols[c][k].ravel()
        jac.append(j)
    return jac


def _vjp(out, diff_args, u):
    """J^T u for every differentiable input (zeros where unused)."""
    if not out._requires_grad:
        return [np.zeros(a._arr.shape) for a in diff_args]
    seed = _engine._wrap(np.asarray(u, dtype=out._arr.dtype).reshape(out._arr.shape))
    gs = _grad((out,), diff_args, (seed,), retain_graph=True, allow_unused=True)
    return [np.zeros(a._arr.shape) if g is None else
            np.array(g._arr, dtype=np.float64) for a, g in zip(diff_args, gs)]


def _analytical_jacobian(outs, keep, diff_args):
    """[k][j]: array (out numel, in numel) of d out_k / d diff input j."""
    jac = []
    for k in keep:
        out = outs[k]
        m = out._arr.size
        rows = [np.zeros((m, a._arr.size)) for a in diff_args]
        for r in range(m):
            u = np.zeros(m)
            u[r] = 1.0
            for j, g in enumerate(_vjp(out, diff_args, u)):
                rows[j][r, :] = g.ravel()
        jac.append(rows)
    return jac


# --- comparison and messages -------------------------------------------------------------

def _worst(a, n, atol, rtol):
    """Index of the worst violation of |a - n| <= atol + rtol |n|, or None."""
    excess = np.abs(a - n) - (atol + rtol * np.abs(n))
    bad = ~(excess <= 0)              # NaN counts as a failure
    if not bad.any():
        return None
    excess = np.where(np.isnan(excess), np.inf, excess)
    return np.unravel_index(int(np.argmax(np.where(bad, excess, -np.inf))), a.shape)


def _fail(raise_exception, err):
    if raise_exception:
        raise err
    return False


def _element_error(i, k, out_elem, in_elem, num, ana, n_bad, what="Jacobian"):
    msg = (
        f"{what} mismatch for output {k} with respect to input {i}: at output "
        f"element {out_elem}, input element {in_elem}, numerical={num:.10g} but "
        f"analytical={ana:.10g} (difference {ana - num:.3g}; {n_bad} element(s) out "
        "of tolerance).")
    return GradcheckError(msg, input_index=i, output_index=k,
                          input_element=in_elem, output_element=out_elem,
                          numerical=num, analytical=ana)


def _compare_full(num, ana, i, k, out_shape, in_shape, atol, rtol, what="Jacobian"):
    """None if ``num`` and ``ana`` agree, else a GradcheckError at the worst entry."""
    where = _worst(ana, num, atol, rtol)
    if where is None:
        return None
    r, c = where
    n_bad = int(np.sum(~(np.abs(ana - num) <= atol + rtol * np.abs(num))))
    out_elem = tuple(int(v) for v in np.unravel_index(r, out_shape)) if out_shape \
        else ()
    in_elem = tuple(int(v) for v in np.unravel_index(c, in_shape)) if in_shape else ()
    return _element_error(i, k, out_elem, in_elem, float(num[r, c]),
                          float(ana[r, c]), n_bad, what)


# --- the two modes -----------------------------------------------------------------------

def _check_full(func, args, diff, keep, outs, eps, atol, rtol, what):
    diff_args = [args[i] for i in diff]
    ana = _analytical_jacobian(outs, keep, diff_args)
    for j, i in enumerate(diff):
        num = _numerical_jacobian(func, args, keep, i, eps)
        for kk, k in enumerate(keep):
            err = _compare_full(num[kk], ana[kk][j], i, k, outs[k]._arr.shape,
                                args[i]._arr.shape, atol, rtol, what)
            if err is not None:
                return err
    return None


def _check_fast(func, args, diff, keep, outs, eps, atol, rtol, what, rng):
    diff_args = [args[i] for i in diff]
    us = []
    for k in keep:
        u = rng.standard_normal(outs[k]._arr.shape)
        us.append(u / max(np.linalg.norm(u), 1e-300))
    vs = []
    for a in diff_args:
        v = rng.standard_normal(a._arr.shape)
        vs.append(v / max(np.linalg.norm(v), 1e-300))
    # Analytical: <J_kj^T u_k, v_j>
    ana = np.zeros((len(keep), len(diff)))
    for kk, k in enumerate(keep):
        for j, g in enumerate(_vjp(outs[k], diff_args, us[kk])):
            ana[kk, j] = float(np.sum(g * vs[j]))
    for j, i in enumerate(diff):
        col = _numerical_columns(func, args, keep, i, eps, [vs[j]])[0]
        for kk, k in enumerate(keep):
            num = float(np.sum(col[kk] * us[kk]))
            a = ana[kk, j]
            if abs(a - num) <= atol + rtol * abs(num):
                continue
            n_entries = outs[k]._arr.size * args[i]._arr.size
            if n_entries <= _LOCATE_MAX_ENTRIES:
                located = _locate(func, args, keep, outs, kk, k, j, i, eps, atol,
                                  rtol, what)
                if located is not None:
                    return located
            msg = (
                f"{what} mismatch for output {k} with respect to input {i} "
                f"(random projection u^T J v, fast mode): numerical={num:.10g} but "
                f"analytical={a:.10g}. The Jacobian has {n_entries} entries, too "
                "many to locate the element; rerun with fast_mode=False on smaller "
                "inputs to get it.")
            return GradcheckError(msg, input_index=i, output_index=k,
                                  numerical=num, analytical=a)
    return None


def _locate(func, args, keep, outs, kk, k, j, i, eps, atol, rtol, what):
    """Full comparison of one (output, input) pair after a failed projection."""
    diff_arg = args[i]
    out = outs[k]
    m = out._arr.size
    ana = np.zeros((m, diff_arg._arr.size))
    for r in range(m):
        u = np.zeros(m)
        u[r] = 1.0
        ana[r, :] = _vjp(out, [diff_arg], u)[0].ravel()
    num = _numerical_jacobian(func, args, keep, i, eps)[kk]
    return _compare_full(num, ana, i, k, out._arr.shape, diff_arg._arr.shape, atol,
                         rtol, what)


def _run_check(func, inputs, eps, atol, rtol, raise_exception, fast_mode, fn_name,
               what="Jacobian", seed=0):
    inputs, _ = _as_tuple(inputs)
    args, diff = _prepare_inputs(inputs, fn_name)
    outs = _outputs(func, args)
    keep = _float_outputs(outs)
    if not keep:
        raise ValueError(f"{fn_name}: the function returned no floating point "
                         "Tensor output to check")
    n_in = sum(args[i]._arr.size for i in diff)
    n_out = sum(outs[k]._arr.size for k in keep)
    if fast_mode is None:
        fast_mode = 2 * n_in + n_out > _FAST_MIN_EVALS
    if fast_mode:
        err = _check_fast(func, args, diff, keep, outs, eps, atol, rtol, what,
                          np.random.default_rng(seed))
    else:
        err = _check_full(func, args, diff, keep, outs, eps, atol, rtol, what)
    if err is not None:
        return _fail(raise_exception, err)
    return True


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6,
              atol: float = 1e-5, rtol: float = 1e-3, raise_exception: bool = True,
              fast_mode: bool | None = None, seed: int = 0) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against central differences.

    Parameters
    ----------
    func : callable
        Takes the inputs, returns a Tensor or a tuple of Tensors.
    inputs : Tensor or tuple
        The point of the check.  Tensors with ``requires_grad=True`` are the
        differentiated inputs (checked on float64 copies, with a warning when
        they are not float64); other arguments pass through unchanged.
    eps : float
        Step of the central differences.
    atol, rtol : float
        Each entry must satisfy ``|analytical - numerical| <= atol + rtol *
        |numerical|``.
    raise_exception : bool
        Raise ``GradcheckError`` on a mismatch (default) or return False.
    fast_mode : bool or None
        True: compare random projections ``u^T J v`` only; False: the full
        Jacobian; None (default): fast when the full Jacobian would take more
        than 2048 function evaluations.
    seed : int
        Seed of the random projections (fast mode).

    Returns
    -------
    bool
        True when the gradients agree.

    Raises
    ------
    GradcheckError
        Naming the input index, output index, element of each and both values.
    """
    return _run_check(func, inputs, eps, atol, rtol, raise_exception, fast_mode,
                      "gradcheck", seed=seed)


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Any = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, fast_mode: bool | None = None,
                  seed: int = 0) -> bool:
    """Check second derivatives: ``gradcheck`` of the first-order gradients.

    The checked function maps ``(inputs, grad_outputs)`` to
    ``grad(func(inputs), inputs, grad_outputs, create_graph=True)``, so both
    the Hessian-like part and the linearity in ``grad_outputs`` are verified.
    ``grad_outputs`` default to random float64 tensors of the outputs' shapes.
    Arguments and errors as in ``gradcheck``; in an error, output k is the
    gradient with respect to the k-th differentiable input, and inputs
    numbered past ``len(inputs)`` are the grad_outputs.
    """
    inputs, _ = _as_tuple(inputs)
    args, diff = _prepare_inputs(inputs, "gradgradcheck")
    outs = _outputs(func, args)
    keep = [k for k in _float_outputs(outs) if outs[k]._requires_grad]
    if not keep:
        raise ValueError("gradgradcheck: no output of the function requires grad")
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        gos = [_engine._wrap(rng.standard_normal(outs[k]._arr.shape), True)
               for k in keep]
    else:
        given, _ = _as_tuple(grad_outputs)
        if len(given) != len(keep):
            raise ValueError(f"gradgradcheck: expected {len(keep)} grad_outputs, got "
                             f"{len(given)}")
        gos = [_engine._wrap(np.array(g._arr, dtype=np.float64), True) for g in given]
    n_args = len(args)

    def first_derivatives(*xs):
        ins = xs[:n_args]
        vs = xs[n_args:]
        o = _outputs(func, ins)
        roots = [o[k] for k in keep]
        gs = _grad(tuple(roots), tuple(ins[i] for i in diff), tuple(vs),
                   create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return _run_check(first_derivatives, tuple(args) + tuple(gos), eps, atol, rtol,
                      raise_exception, fast_mode, "gradgradcheck",
                      what="Second-order (gradgrad) Jacobian", seed=seed)
