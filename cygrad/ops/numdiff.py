"""``torch.gradient``: derivatives estimated by finite differences, one
tensor per differentiated dim, made of slices and scaled sums (so autograd
runs through them).

Inside, second-order central differences; for coordinates ``x`` with steps
h1 = x[i] - x[i-1], h2 = x[i+1] - x[i] (uneven spacing) the estimate is
exact for quadratics:
    f'(x_i) ~ (-h2 / (h1 (h1 + h2))) f[i-1] + ((h2 - h1) / (h1 h2)) f[i]
              + (h1 / (h2 (h1 + h2))) f[i+1].
At the two ends, one-sided differences of first order (``edge_order=1``)
or second order (``edge_order=2``: the same quadratic fit through the
first or last three points).  Steps come from ``spacing``: one number for
every dim, a number per dim, or a coordinate tensor per dim.
"""

import numbers

import numpy as np

from cygrad._kernels.engine import TensorBase, _wrap
from cygrad.creation import get_default_dtype
from cygrad.ops.registry import _canon_dim, op
from cygrad.ops.shape import cat

__all__ = ["gradient"]


def _steps(spacing, dims, n_dims):
    """One entry per differentiated dim: a float (even steps) or a float64
    array of coordinates."""
    if spacing is None:
        return [1.0] * len(dims)
    if isinstance(spacing, numbers.Number):
        return [float(spacing)] * len(dims)
    if isinstance(spacing, TensorBase):
        raise TypeError("gradient(): argument 'spacing' must be a number or a "
                        "tuple of numbers or tensors, not Tensor")
    spacing = list(spacing)
    if len(spacing) != len(dims):
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar or it's "
            "spacing and dim arguments to have the same length, but got a spacing "
            f"argument of length {len(spacing)} and a dim argument of length "
            f"{n_dims}.")
    out = []
    for s in spacing:
        if isinstance(s, TensorBase):
            if s._arr.ndim != 1:
                raise RuntimeError("torch.gradient expected each element of spacing "
                                   "to have one dimension, but got an element with "
                                   f"{s._arr.ndim} dimensions!")
            out.append(np.asarray(s._arr, np.float64))
        else:
            out.append(float(s))
    return out


def _take(t, d, start, stop):
    return t.narrow(d, start, stop - start)


def _along(values, d, nd, dtype):
    """Coefficients laid along dim ``d`` (broadcast over the others)."""
    return _wrap(np.asarray(values, dtype).reshape([-1 if i == d else 1
                                                    for i in range(nd)]))


def _one_dim(f, d, step, edge_order):
    """The derivative of ``f`` along ``d``."""
    n = f._arr.shape[d]
    nd = f._arr.ndim
    dtype = f._arr.dtype
    if isinstance(step, float):
        h = step
        inner = (_take(f, d, 2, n) - _take(f, d, 0, n - 2)) / (2 * h)
        if edge_order == 1:
            left = (_take(f, d, 1, 2) - _take(f, d, 0, 1)) / h
            right = (_take(f, d, n - 1, n) - _take(f, d, n - 2, n - 1)) / h
        else:
            left = (-1.5 * _take(f, d, 0, 1) + 2 * _take(f, d, 1, 2)
                    - 0.5 * _take(f, d, 2, 3)) / h
            right = (0.5 * _take(f, d, n - 3, n - 2) - 2 * _take(f, d, n - 2, n - 1)
                     + 1.5 * _take(f, d, n - 1, n)) / h
        return cat([left, inner, right], d)
    dx = np.diff(step)
    h1, h2 = dx[:-1], dx[1:]
    a = _along(-h2 / (h1 * (h1 + h2)), d, nd, dtype)
    b = _along((h2 - h1) / (h1 * h2), d, nd, dtype)
    c = _along(h1 / (h2 * (h1 + h2)), d, nd, dtype)
    inner = (a * _take(f, d, 0, n - 2) + b * _take(f, d, 1, n - 1)
             + c * _take(f, d, 2, n))
    if edge_order == 1:
        left = (_take(f, d, 1, 2) - _take(f, d, 0, 1)) / float(dx[0])
        right = (_take(f, d, n - 1, n) - _take(f, d, n - 2, n - 1)) / float(dx[-1])
    else:
        p, q = float(dx[0]), float(dx[1])
        left = (-(2 * p + q) / (p * (p + q)) * _take(f, d, 0, 1)
                + (p + q) / (p * q) * _take(f, d, 1, 2)
                - p / (q * (p + q)) * _take(f, d, 2, 3))
        p, q = float(dx[-2]), float(dx[-1])
        right = (q / (p * (p + q)) * _take(f, d, n - 3, n - 2)
                 - (p + q) / (p * q) * _take(f, d, n - 2, n - 1)
                 + (2 * q + p) / (q * (p + q)) * _take(f, d, n - 1, n))
    return cat([left, inner, right], d)


@op("gradient", kind="shape")
def gradient(input, *, spacing=None, dim=None, edge_order=1):
    """The derivative of ``input`` along each dim in ``dim`` (default all),
    by finite differences (module docstring): a tuple of tensors of
    ``input``'s shape, floating (integer input gives the default dtype)."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and "
                           "edge_order=2.")
    nd = input._arr.ndim
    if dim is None:
        dims = list(range(nd))
    elif isinstance(dim, numbers.Integral):
        dims = [_canon_dim(dim, nd)]
    else:
        dims = [_canon_dim(x, nd) for x in dim]
        if len(set(dims)) != len(dims):
            dup = next(x for x in dims if dims.count(x) > 1)
            raise RuntimeError(f"dim {dup} appears multiple times in the list of "
                               "dims")
    steps = _steps(spacing, dims, len(dims))
    for d in dims:
        if input._arr.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at "
                               "least edge_order+1")
    f = input if input._arr.dtype.kind == "f" else input.to(get_default_dtype())
    return tuple(_one_dim(f, d, s, edge_order) for d, s in zip(dims, steps))
