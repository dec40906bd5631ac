"""Weight averaging (torch's ``torch.optim.swa_utils``): SWA and EMA models,
the SWA learning-rate schedule, and recomputing normalisation statistics.

The averages are updated in place on the arrays, under no grad, in the
parameters' dtype, with torch's formulas: the running mean
``avg + (p - avg) / (n + 1)``; the multi-tensor forms are ATen's ``lerp``.
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from cygrad._tensor import Tensor
from cygrad.autograd.grad_mode import no_grad
from cygrad.creation import from_numpy, get_default_dtype, tensor
from cygrad.nn.module import Module
from cygrad.nn.modules.batchnorm import _BatchNorm
from cygrad.nn.parameter import Parameter

from ._lr_base import LRScheduler, per_group

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from cygrad._typing import Device
    from cygrad.optim.optimizer import Optimizer

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _lerp_(start, end, weight):
    """ATen's ``start.lerp_(end, weight)`` on arrays, in start's dtype."""
    w = start.dtype.type(weight)
    if abs(w) < 0.5:
        start += w * (end - start)
    else:
        start[...] = end - (end - start) * (start.dtype.type(1) - w)


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] "
            "range."
        )


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[..., Any]:
    """In place over lists of tensors: ``ema = lerp(ema, p, 1 - decay)``
    (integer tensors: ``ema * decay + p * (1 - decay)``)."""
    _check_decay(decay)

    def ema_update(ema_params, current_params, num_averaged):
        for ema, cur in zip(ema_params, current_params):
            if ema._arr.dtype.kind == "f":
                _lerp_(ema._arr, cur._arr.astype(ema._arr.dtype, copy=False), 1 - decay)
            else:
                ema._arr[...] = ema._arr * decay + cur._arr * (1 - decay)
            ema._bump_version()

    return ema_update


def get_swa_multi_avg_fn() -> Callable[..., Any]:
    """In place over lists of tensors: ``avg = lerp(avg, p, 1 / (n + 1))``."""

    def swa_update(averaged_params, current_params, num_averaged):
        if isinstance(num_averaged, Tensor):
            # torch: 1 / (n + 1) of an integer tensor is a default-dtype tensor
            dt = np.dtype(get_default_dtype()).type
            n = int(num_averaged._arr)
            weight = float(dt(1) / dt(n + 1))
        else:
            n = num_averaged
            weight = 1 / (n + 1)
        for avg, cur in zip(averaged_params, current_params):
            if avg._arr.dtype.kind == "f":
                _lerp_(avg._arr, cur._arr.astype(avg._arr.dtype, copy=False), weight)
            else:
                avg._arr[...] = avg._arr + (cur._arr - avg._arr) / (n + 1)
            avg._bump_version()

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[..., Any]:
    """``(ema, p, n) -> decay * ema + (1 - decay) * p``."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[..., Any]:
    """``(avg, p, n) -> avg + (p - avg) / (n + 1)``: the running mean."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _deepcopy_module(model):
    """A deep copy of ``model`` whose parameters and buffers are new arrays
    (cygrad tensors refuse to be pickled, so they are copied by hand)."""
    memo = {}
    for p in itertools.chain(model.parameters(), model.buffers()):
        if p is None or id(p) in memo:
            continue
        arr = from_numpy(np.array(p._arr, copy=True))
        if isinstance(p, Parameter):
            memo[id(p)] = Parameter(arr, requires_grad=p.requires_grad)
        else:
            memo[id(p)] = arr
    return copy.deepcopy(model, memo)


class AveragedModel(Module):
    r"""A copy of ``model`` whose parameters are an average of ``model``'s over
    the calls of :meth:`update_parameters` (torch's ``AveragedModel``).

    The first call copies; later calls apply ``multi_avg_fn`` to all
    parameters at once, or ``avg_fn`` to each, or, by default, the running
    mean ``avg + (p - avg) / (n + 1)`` (SWA).  ``get_ema_multi_avg_fn(decay)``
    gives an exponential moving average.  With ``use_buffers=True`` buffers
    are averaged too; otherwise they are copied from ``model`` at each update.
    ``n_averaged`` is an int64 buffer.

    Parameters
    ----------
    model : Module
    device : ignored
        Accepted so torch code runs unchanged (cygrad runs on the CPU).
    avg_fn : callable ``(averaged, current, n) -> Tensor``, optional
    multi_avg_fn : callable ``(averaged_list, current_list, n) -> None``, optional
    use_buffers : bool, default False

    Raises
    ------
    AssertionError
        If both ``avg_fn`` and ``multi_avg_fn`` are given (as torch).
    """

    def __init__(self, model: Module, device: Device | None = None, avg_fn: Any = None,
                 multi_avg_fn: Any = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = _deepcopy_module(model)
        self.register_buffer("n_averaged", tensor(0, dtype=np.int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters into the average."""
        if self.use_buffers:
            ours = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            ours = list(self.parameters())
            theirs = list(model.parameters())
        pairs = list(zip(ours, theirs))
        n = int(self.n_averaged._arr)
        with no_grad():
            if n == 0:
                for avg, cur in pairs:
                    avg._arr[...] = cur._arr
                    avg._bump_version()
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(
                    [a for a, _ in pairs], [c.detach() for _, c in pairs],
                    self.n_averaged,
                )
            else:
                fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for avg, cur in pairs:
                    new = fn(avg.detach(), cur.detach(), self.n_averaged)
                    avg._arr[...] = new._arr
                    avg._bump_version()
            if not self.use_buffers:
                for b_ours, b_model in zip(self.module.buffers(), model.buffers()):
                    b_ours._arr[...] = b_model._arr
                    b_ours._bump_version()
        self.n_averaged._arr[()] = n + 1
        self.n_averaged._bump_version()


def update_bn(loader: Iterable[Any], model: Module,
              device: Device | None = None) -> None:
    """Recompute the running statistics of ``model``'s batch-norm layers with
    one pass over ``loader`` (torch's ``update_bn``).

    Every such layer's statistics are reset and its ``momentum`` set to None
    (a cumulative average over the batches) for the pass, then restored; the
    model runs in training mode and goes back to its mode afterwards.  A
    loader item that is a list or tuple contributes its first element.
    ``device`` is ignored.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    try:
        with no_grad():
            for batch in loader:
                if isinstance(batch, (list, tuple)):
                    batch = batch[0]
                model(batch)
    finally:
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    r"""Anneal each group's rate to ``swa_lr`` over ``anneal_epochs`` epochs, then
    hold it (torch's ``SWALR``).

    At epoch ``t``, with ``a = anneal(min(1, t / anneal_epochs))`` (``cos``:
    ``(1 - cos(pi x)) / 2``; ``linear``: ``x``), ``lr = swa_lr * a + lr0 * (1 -
    a)``, where ``lr0`` is recovered from the current rate and the previous
    ``a``, as torch does, so that other changes to the rate persist.

    Raises
    ------
    ValueError
        An unknown ``anneal_strategy``, or ``anneal_epochs`` not an integer
        >= 0 (torch's messages).
    """

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float],
                 anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        swa_lrs = per_group("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(
                "anneal_strategy must be one of 'cos' or 'linear', instead got "
                f"{anneal_strategy}"
            )
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(
                f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}"
            )
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: Any) -> float:
        if self._anneal_strategy == "cos":
            return (1 - math.cos(math.pi * t)) / 2
        return t

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        self._warn_if_called_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [
            self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
            for group in self.optimizer.param_groups
        ]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [
            group["swa_lr"] * alpha + lr * (1 - alpha)
            for group, lr in zip(self.optimizer.param_groups, prev_lrs)
        ]
