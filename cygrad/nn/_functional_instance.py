"""``instance_norm``: each (sample, channel) slice of (N, C, *) input
normalised by its own mean and biased variance.

It is batch norm of the input viewed as (1, N*C, *): the running statistics
and affine parameters are repeated N times for that call, and the running
statistics then take the mean over the N samples of what batch norm wrote
(so each moves by ``momentum`` toward the samples' average statistics, as
torch's do)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cygrad.autograd.grad_mode import no_grad

from ._functional_norm import batch_norm

if TYPE_CHECKING:
    from cygrad._tensor import Tensor

__all__ = ["instance_norm"]


def _verify_spatial_size(shape):
    spatial = 1
    for s in shape[2:]:
        spatial *= s
    if spatial == 1:
        raise ValueError(
            "Expected more than 1 spatial element when training, got input size "
            f"cygrad.Size({list(shape)})")


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: Any = True,
                  momentum: float | None = 0.1, eps: float = 1e-5) -> Tensor:
    """Instance normalisation of (N, C, *) input (torch's ``F.instance_norm``).

    ``use_input_stats=False`` normalises by ``running_mean``/``running_var``
    instead (both must then be given).

    Raises
    ------
    ValueError
        Fewer than 2 dimensions, or one spatial element per slice while
        ``use_input_stats``.
    RuntimeError
        Running statistics or affine parameters of the wrong size.
    """
    if input.ndim < 2:
        raise ValueError(
            f"instance_norm: expected at least 2D input (got {input.ndim}D input)")
    shape = tuple(input.shape)
    if use_input_stats:
        _verify_spatial_size(shape)
    n, c = shape[0], shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError(
            "Expected running_mean and running_var to be defined when "
            "use_input_stats is false")
    rep_mean = None if running_mean is None else running_mean.detach().repeat(n)
    rep_var = None if running_var is None else running_var.detach().repeat(n)
    out = batch_norm(
        input.reshape((1, n * c) + shape[2:]), rep_mean, rep_var,
        None if weight is None else weight.repeat(n),
        None if bias is None else bias.repeat(n),
        bool(use_input_stats), momentum, eps)
    if use_input_stats:
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(rep_mean.reshape(n, c).mean(0))
            if running_var is not None:
                running_var.copy_(rep_var.reshape(n, c).mean(0))
    return out.reshape(shape)
