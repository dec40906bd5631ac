"""``affine_grid`` and ``grid_sample`` (spatial transformers).

``affine_grid`` is a composite: a constant base grid of normalised
coordinates (with a column of ones) times each ``theta`` transposed, so its
gradient and every higher one come from the matmul.

``grid_sample`` is one node (``_GridSample``) on ``cygrad._kernels.grid``:
the forward samples every channel at the grid points, the backward scatters
the incoming gradient into the input's gradient and sums the grid's (the
source-index rules, padding modes and kernels are in the kernel's module
doc).  When the backward itself must be recorded (``create_graph=True``),
it is written in Tensor ops on the taps the kernel exports (``grid_axes``):
per axis, each weight is ``w + dw * (g - g.detach())``, which has the
kernel's value and, the weights being linear along each axis between kinks
(bilinear) or constant (nearest), its exact derivatives of every order.  Bicubic weights are cubic, so, as in torch, their double
backward is not implemented.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from cygrad._kernels import grid as _kg
from cygrad.autograd.function import Function
from cygrad.autograd.grad_mode import is_grad_enabled
from cygrad.creation import from_numpy, linspace
from cygrad.ops.shape import stack

from ._functional_conv import _check_real, _size_str

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cygrad._tensor import Tensor

__all__ = [
    "GRID_SAMPLE_INTERPOLATION_MODES",
    "GRID_SAMPLE_PADDING_MODES",
    "affine_grid",
    "grid_sample",
]

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False "
    "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
    "See the documentation of grid_sample for details."
)


def _align(align_corners):
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


# ---------------------------------------------------------------------------
# affine_grid


def _base_axis(steps, align_corners, dtype):
    """Normalised coordinates of ``steps`` points: -1..1 through the corner
    centres (``align_corners``) or the pixel centres of [-1, 1] (otherwise).

    Rounded as torch's: its ``linspace`` in ``dtype``, then times ``steps - 1``
    and divided by ``steps`` in ``dtype`` (grid_sample's gradient on an
    identity grid depends on which side of a pixel centre each point falls).
    """
    if steps <= 1:
        return np.zeros(1, dtype=dtype)
    axis = linspace(-1.0, 1.0, steps, dtype=dtype)._arr
    if not align_corners:
        axis = axis * dtype.type(steps - 1) / dtype.type(steps)
    return axis


def affine_grid(theta: Tensor, size: Sequence[int],
                align_corners: bool | None = None) -> Tensor:
    """Sampling grid of affine maps, for ``grid_sample``.

    Parameters
    ----------
    theta : Tensor
        ``(N, 2, 3)`` affine matrices for a 4-d ``size`` ``(N, C, H, W)``, or
        ``(N, 3, 4)`` for a 5-d ``size`` ``(N, C, D, H, W)``; floating.
    size : sequence of int
        The output size the grid is for.
    align_corners : bool, optional
        Whether -1 and 1 are the centres of the corner pixels (True) or their
        outer edges (False, the default; None warns as torch does).

    Returns
    -------
    Tensor
        ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) points ``theta @ (x, y[, z], 1)``
        of theta's dtype, differentiable in ``theta``.
    """
    align = _align(align_corners)
    if not theta.is_floating_point():
        raise ValueError(
            f"Expected theta to have floating point type, but got {theta.dtype}"
        )
    size = tuple(int(s) for s in size)
    if len(size) == 4:
        rows, cols, label = 2, 3, "2D affine matrices of shape Nx2x3"
    elif len(size) == 5:
        rows, cols, label = 3, 4, "3D affine matrices of shape Nx3x4"
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
            f"transforms, respectively. Got size {size}."
        )
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (rows, cols):
        raise ValueError(
            f"Expected a batch of {label} for size {size}. Got {theta.shape}."
        )
    spatial = size[2:]
    if align and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size "
            "grids when align_corners=True. This is not an intended use case of "
            "affine_grid. See the documentation of affine_grid for details.",
            UserWarning, stacklevel=2)
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"[{size[0]}, {cols}] but got: [{theta.shape[0]}, {cols}]."
        )
    dtype = np.dtype(theta.dtype)
    # the last axis of theta's input is (x, y[, z], 1): x runs along the width
    axes = [_base_axis(s, align, dtype) for s in reversed(spatial)]
    mesh = list(np.meshgrid(*axes[::-1], indexing="ij"))[::-1]
    base = np.stack(mesh + [np.ones(spatial, dtype=dtype)], axis=-1)
    base = from_numpy(np.ascontiguousarray(base.reshape(-1, cols)))
    grid = base @ theta.transpose(1, 2)
    return grid.reshape((size[0],) + spatial + (rows,))


# ---------------------------------------------------------------------------
# grid_sample


def _geometry(x_shape):
    """(d, h, w) of an (N, C, H, W) or (N, C, D, H, W) input."""
    spatial = tuple(x_shape[2:])
    return (1,) + spatial if len(spatial) == 2 else spatial


def _points(grid_shape):
    return int(np.prod(grid_shape[1:-1], dtype=np.int64))


def _sample_arrays(xa, ga, mode, padding, align):
    n, c = xa.shape[:2]
    nd = xa.ndim - 2
    d, h, w = _geometry(xa.shape)
    x3 = np.ascontiguousarray(xa).reshape(n, c, d * h * w)
    g3 = np.ascontiguousarray(ga).reshape(n, _points(ga.shape), nd)
    out = np.empty((n, c, g3.shape[1]), dtype=xa.dtype)
    _kg.grid_fwd(x3, g3, d, h, w, mode, padding, align, out)
    return out.reshape((n, c) + tuple(ga.shape[1:-1]))


def _grad_arrays(ga_out, xa, ga, mode, padding, align, need_x, need_grid):
    n, c = xa.shape[:2]
    nd = xa.ndim - 2
    d, h, w = _geometry(xa.shape)
    x3 = np.ascontiguousarray(xa).reshape(n, c, d * h * w)
    g3 = np.ascontiguousarray(ga).reshape(n, _points(ga.shape), nd)
    go = np.ascontiguousarray(ga_out, dtype=xa.dtype).reshape(n, c, g3.shape[1])
    gx = np.empty_like(x3) if need_x else None
    gg = np.empty_like(g3) if need_grid else None
    _kg.grid_bwd(go, x3, g3, d, h, w, mode, padding, align, gx, gg)
    return (None if gx is None else gx.reshape(xa.shape),
            None if gg is None else gg.reshape(ga.shape))


def _outer(ws):
    """(N, P, T) products of per-axis tap weights ``ws`` = [wx, wy(, wz)],
    each (N, P, 4): the flat tap order is (z,) y, x."""
    out = ws[1].unsqueeze(-1) * ws[0].unsqueeze(-2)
    if len(ws) == 3:
        out = ws[2].unsqueeze(-1).unsqueeze(-1) * out.unsqueeze(-3)
    n, p = out.shape[:2]
    return out.reshape(n, p, -1)


def _grad_graph(grad, x, grid, mode, padding, align, need_x, need_grid):
    """The gradients for ``x`` and ``grid`` as differentiable Tensor ops.

    Per axis the taps' weights are ``w + dw * (g - g0)`` (``g0`` the grid's
    values, so the value is the kernel's ``w``) and their derivatives the
    constants ``dw``: exact to every order for the piecewise-linear
    (bilinear) and constant (nearest) weights.  With ``vals`` the gathered
    taps, ``grad_x`` scatter-adds ``grad * W`` and the grid's gradient along
    axis ``a`` is ``sum_c sum_taps grad * vals * dW/dg_a``."""
    n, c = x.shape[:2]
    nd = x.ndim - 2
    d, h, w = _geometry(x.shape)
    ga = np.ascontiguousarray(grid.detach()._arr).reshape(n, _points(grid.shape), nd)
    p = ga.shape[1]
    idx = np.empty((n, p, nd, 4), dtype=np.intp)
    wt = np.empty((n, p, nd, 4))
    dwt = np.empty((n, p, nd, 4))
    _kg.grid_axes(ga, d, h, w, mode, padding, align, idx, wt, dwt)
    dt = ga.dtype
    delta = (grid.reshape(n, p, nd) - from_numpy(ga)).unsqueeze(-1)
    weights = from_numpy(wt.astype(dt)) + from_numpy(dwt.astype(dt)) * delta
    ws = [weights[:, :, a] for a in range(nd)]
    dws = [from_numpy(np.ascontiguousarray(dwt[:, :, a]).astype(dt))
           for a in range(nd)]
    flat = idx[:, :, 1, :, None] * w + idx[:, :, 0, None, :]
    valid = (idx[:, :, 1, :, None] >= 0) & (idx[:, :, 0, None, :] >= 0)
    if nd == 3:
        flat = idx[:, :, 2, :, None, None] * (h * w) + flat[:, :, None]
        valid = (idx[:, :, 2, :, None, None] >= 0) & valid[:, :, None]
    taps = 4 ** nd
    mask = from_numpy(valid.reshape(n, p, taps).astype(dt))
    flat = np.where(valid, flat, 0).reshape(n, 1, p * taps).astype(np.int64)
    index = from_numpy(np.ascontiguousarray(np.broadcast_to(flat, (n, c, p * taps))))
    g = grad.reshape(n, c, p, 1)
    gx = gg = None
    if need_x:
        contrib = (g * (_outer(ws) * mask).unsqueeze(1)).reshape(n, c, p * taps)
        gx = x.new_zeros((n, c, d * h * w)).scatter_add(2, index, contrib)
        gx = gx.reshape(x.shape)
    if need_grid:
        vals = x.reshape(n, c, d * h * w).gather(2, index).reshape(n, c, p, taps)
        gv = (g * vals).sum(1) * mask
        parts = [(gv * _outer(ws[:a] + [dws[a]] + ws[a + 1:])).sum(-1)
                 for a in range(nd)]
        gg = stack(parts, -1).reshape(grid.shape)
    return gx, gg


class _GridSample(Function):
    """``y[n, c, p] = sum_taps w(grid[n, p]) x[n, c, tap]``;  grad_x scatters
    ``g * w`` to the taps, grad_grid = ``sum_c g * sum_taps x[tap] dw/dgrid``."""

    _node_name = "GridSampler2DBackward0"

    @staticmethod
    def forward(ctx, x, grid, mode, padding, align):
        ctx.save_for_backward(x, grid)
        ctx.args = (mode, padding, align)
        return from_numpy(_sample_arrays(x._arr, grid._arr, mode, padding, align))

    @staticmethod
    def backward(ctx, grad):
        x, grid = ctx.saved_tensors
        mode, padding, align = ctx.args
        need_x, need_grid = ctx.needs_input_grad[:2]
        if not is_grad_enabled():
            gx, gg = _grad_arrays(grad._arr, x._arr, grid._arr, mode, padding, align,
                                  need_x, need_grid)
            return (None if gx is None else from_numpy(gx),
                    None if gg is None else from_numpy(gg), None, None, None)
        if mode == GRID_SAMPLE_INTERPOLATION_MODES["bicubic"]:
            gx, gg = _GridSampleBicubicGrad.apply(grad, x, grid, padding, align,
                                                  need_x, need_grid)
            return (gx if need_x else None, gg if need_grid else None,
                    None, None, None)
        gx, gg = _grad_graph(grad, x, grid, mode, padding, align, need_x, need_grid)
        return gx, gg, None, None, None


class _GridSample3D(_GridSample):
    _node_name = "GridSampler3DBackward0"


class _GridSampleBicubicGrad(Function):
    """Bicubic grid_sample's gradients, recorded but not differentiable
    (torch has no double backward for them either)."""

    _node_name = "GridSampler2DBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, x, grid, padding, align, need_x, need_grid):
        gx, gg = _grad_arrays(grad._arr, x._arr, grid._arr, 2, padding, align, True,
                              True)
        return from_numpy(gx), from_numpy(gg)

    @staticmethod
    def backward(ctx, grad_x, grad_grid):
        raise RuntimeError(
            "grid_sample: the double backward of mode='bicubic' is not implemented "
            "(torch has none either); use mode='bilinear' for second derivatives"
        )


def _check_grid_sample(input, grid, mode):
    shape_in, shape_g = _size_str(input.shape), _size_str(grid.shape)
    if input.ndim < 1 or grid.ndim < 1 or input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but "
            f"got input with sizes {shape_in} and grid with sizes {shape_g}"
        )
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.ndim - 2} in last "
            f"dimension, but got grid with sizes {shape_g}"
        )
    for i in range(2, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, "
                f"but input has sizes {shape_in} with dimension {i} being empty"
            )
    want = 4 if input.ndim == 4 else 5
    if input.ndim != want or grid.ndim != want:
        raise RuntimeError(
            f"grid_sampler(): expected {want}D input and grid with same number of "
            f"dimensions, but got input with sizes {shape_in} and grid with sizes "
            f"{shape_g}"
        )
    if want == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D "
                           "input")
    _check_real(grid, input)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` at the points of ``grid``.

    Parameters
    ----------
    input : Tensor
        ``(N, C, H, W)`` or ``(N, C, D, H, W)``, float32 or float64.
    grid : Tensor
        ``(N, Ho, Wo, 2)`` or ``(N, Do, Ho, Wo, 3)`` points, input's dtype; the
        last axis is ``(x, y[, z])`` along width, height, depth, with -1 and 1
        the input's edges (``align_corners=False``, the default; None warns)
        or its corner pixels' centres (``align_corners=True``).
    mode : {'bilinear', 'nearest', 'bicubic'}
        Interpolation; 'bicubic' (cubic convolution, A = -0.75) is 4-d only;
        'nearest' rounds half to even.
    padding_mode : {'zeros', 'border', 'reflection'}
        Values outside the input: zero, the nearest edge value, or the input
        reflected about its edges.

    Returns
    -------
    Tensor
        ``(N, C, Ho, Wo)`` (or ``(N, C, Do, Ho, Wo)``), differentiable in
        ``input`` and ``grid`` (the grid's gradient is zero for 'nearest' and
        takes the right-hand side at the kinks of 'bilinear').  Double
        backward: 'bilinear' and 'nearest'.
    """
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' "
            f"or 'bicubic', but got: '{mode}'"
        )
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
            f"'border', or 'reflection', but got: '{padding_mode}'"
        )
    align = _align(align_corners)
    _check_grid_sample(input, grid, mode)
    fn = _GridSample if input.ndim == 4 else _GridSample3D
    return fn.apply(input, grid, GRID_SAMPLE_INTERPOLATION_MODES[mode],
                    GRID_SAMPLE_PADDING_MODES[padding_mode], align)
