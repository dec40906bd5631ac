"""Learning-rate schedulers (torch's ``torch.optim.lr_scheduler``).

A scheduler owns the ``lr`` (and, for the cyclic ones, the momentum) of
every parameter group of one optimizer.  Build it after the optimizer; call
``scheduler.step()`` once per epoch (per batch for CyclicLR and OneCycleLR),
after ``optimizer.step()``.  Each scheduler computes the new rate from the
group's current one, as torch does (so that several can be chained, and so
that the sequences equal torch's to the last bit), and most also have the
closed form ``_get_closed_form_lr()`` used by the deprecated ``step(epoch)``.

This module holds the base (from ``_lr_base``) and the schedulers that follow
a formula of the epoch; the cyclic ones live in ``_lr_cyclic`` and
ReduceLROnPlateau in ``_lr_plateau``, all re-exported here.
"""

from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter
from typing import TYPE_CHECKING, Any

from ._lr_base import LRScheduler, group_values
from ._lr_cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from ._lr_plateau import ReduceLROnPlateau

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from cygrad.optim.optimizer import Optimizer

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]


def _lambdas(optimizer, lr_lambda):
    """One callable per parameter group (torch's checks and messages)."""
    if isinstance(lr_lambda, (list, tuple)):
        if len(lr_lambda) != len(optimizer.param_groups):
            raise ValueError(
                f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                f"{len(lr_lambda)}"
            )
        fns = list(lr_lambda)
    else:
        fns = [lr_lambda] * len(optimizer.param_groups)
    for fn in fns:
        if not callable(fn):
            raise TypeError(
                f"lr_lambda should be a function, but got {type(fn).__name__}"
            )
    return fns


class _LambdaState:
    """state_dict of a scheduler with ``lr_lambdas``: a callable object's
    ``__dict__`` is saved (a plain function: None), as torch saves it."""

    def state_dict(self):
        state = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("optimizer", "lr_lambdas")
        }
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        saved = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, attrs in zip(self.lr_lambdas, saved):
            if attrs is not None:
                fn.__dict__.update(attrs)


class LambdaLR(_LambdaState, LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)``; one function, or one per group.

    Raises
    ------
    ValueError
        If a list of functions does not have one per parameter group.
    TypeError
        If one is not callable.
    """

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_called_outside_step()
        return [
            base_lr * fn(self.last_epoch)
            for fn, base_lr in zip(self.lr_lambdas, self.base_lrs)
        ]


class MultiplicativeLR(_LambdaState, LRScheduler):
    """``lr = lr * lr_lambda(epoch)`` every epoch after the first.

    Raises
    ------
    ValueError, TypeError
        As :class:`LambdaLR`.
    """

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_called_outside_step()
        if self._is_initial:
            return self._group_lrs()
        return [
            group["lr"] * fn(self.last_epoch)
            for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups)
        ]


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs.

    Closed form: ``base_lr * gamma ** (epoch // step_size)``.
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_called_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [
            base_lr * self.gamma ** (self.last_epoch // self.step_size)
            for base_lr in self.base_lrs
        ]


class MultiStepLR(LRScheduler):
    """Multiply the rate by ``gamma`` at each milestone epoch (repeats count).

    Closed form: ``base_lr * gamma ** (number of milestones <= epoch)``.
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int],
                 gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_called_outside_step()
        if self.last_epoch not in self.milestones:
            return self._group_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [
            base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
            for base_lr in self.base_lrs
        ]


class ExponentialLR(LRScheduler):
    """Multiply the rate by ``gamma`` every epoch: ``base_lr * gamma ** epoch``."""

    def __init__(self, optimizer: Optimizer, gamma: float,
                 last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_called_outside_step()
        if self._is_initial:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    r"""Cosine annealing from the base rate down to ``eta_min`` over ``T_max`` epochs.

    Closed form ``eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2``;
    like torch, each step applies it as a ratio to the current rate (so other
    changes to the rate persist), and past ``T_max`` the rate rises again.
    """

    def __init__(self, optimizer: Optimizer, T_max: float, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_called_outside_step()
        t, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._group_lrs()
        if self._step_count == 1 and t > 0:
            return [
                eta_min + (base_lr - eta_min) * (1 + math.cos(t * math.pi / T)) / 2
                for base_lr in self.base_lrs
            ]
        if (t - 1 - T) % (2 * T) == 0:
            return [
                lr + (base_lr - eta_min) * (1 - math.cos(math.pi / T)) / 2
                for base_lr, lr in zip(self.base_lrs, self._group_lrs())
            ]
        return [
            (1 + math.cos(math.pi * t / T))
            / (1 + math.cos(math.pi * (t - 1) / T))
            * (lr - eta_min)
            + eta_min
            for lr in self._group_lrs()
        ]

    def _get_closed_form_lr(self):
        return [
            self.eta_min
            + (base_lr - self.eta_min)
            * (1 + math.cos(math.pi * self.last_epoch / self.T_max))
            / 2
            for base_lr in self.base_lrs
        ]


class ConstantLR(LRScheduler):
    """``base_lr * factor`` for the first ``total_iters`` epochs, then ``base_lr``.

    Raises
    ------
    ValueError
        ``"Constant multiplicative factor expected to be between 0 and 1."``
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError(
                "Constant multiplicative factor expected to be between 0 and 1."
            )
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_called_outside_step()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._group_lrs()]
        if self.last_epoch != self.total_iters:
            return self._group_lrs()
        return [lr * (1.0 / self.factor) for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [
            base_lr
            * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
            for base_lr in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """The factor goes linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs (applied as a ratio to the current rate, as torch).

    Raises
    ------
    ValueError
        torch's messages for a start factor not in ``(0, 1]`` or an end factor
        not in ``[0, 1]``.
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and "
                "less or equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(
                "Ending multiplicative factor expected to be between 0 and 1."
            )
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_called_outside_step()
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._group_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._group_lrs()
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * delta
        )
        return [lr * ratio for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [
            base_lr
            * (
                self.start_factor
                + (self.end_factor - self.start_factor)
                * min(self.total_iters, self.last_epoch)
                / self.total_iters
            )
            for base_lr in self.base_lrs
        ]


class PolynomialLR(LRScheduler):
    """``base_lr * (1 - min(epoch, total_iters) / total_iters) ** power``
    (applied as a ratio to the current rate, as torch)."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        self._warn_if_called_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._group_lrs()
        factor = (
            (1.0 - self.last_epoch / self.total_iters)
            / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return [lr * factor for lr in self._group_lrs()]

    def _get_closed_form_lr(self):
        return [
            base_lr
            * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
            ** self.power
            for base_lr in self.base_lrs
        ]


def _check_schedulers(kind, optimizer, schedulers):
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(
                f"{kind} at index {i} should have `optimizer` as its attribute."
            )
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{kind} does not support `ReduceLROnPlateau` scheduler as it "
                "requires additional kwargs to be specified when calling `step`, "
                f"but got one at index {i} in the given schedulers sequence."
            )
        if optimizer != scheduler.optimizer:
            raise ValueError(
                f"{kind} expects all schedulers to belong to the same optimizer, but "
                f"got scheduler {type(scheduler).__name__} at index {i} has "
                f"{scheduler.optimizer}, which is different from "
                f"{type(optimizer).__name__}."
            )


class _Composite:
    """state_dict of a scheduler of schedulers: each one's own state dict."""

    def state_dict(self):
        state = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("optimizer", "_schedulers")
        }
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        saved = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, s in zip(self._schedulers, saved):
            scheduler.load_state_dict(s)


class SequentialLR(_Composite, LRScheduler):
    """Run ``schedulers[i]`` from ``milestones[i - 1]`` on; each starts afresh
    (from ``initial_lr``, at its epoch 0) when its milestone is reached.

    Raises
    ------
    ValueError
        No scheduler, a ReduceLROnPlateau, schedulers of another optimizer, or
        not one milestone fewer than schedulers (torch's messages).
    """

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[Any],
                 milestones: Iterable[int], last_epoch: int = -1) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler, but got no "
                "scheduler."
            )
        _check_schedulers(type(self).__name__, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be "
                "one more than the number of milestone points, but got number of "
                f"schedulers {len(schedulers)} and the number of milestones to be "
                f"equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # undo the steps the schedulers took when they were built, and start
        # the first one again from the initial rates
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo(self, scheduler):
        if hasattr(scheduler, "_schedulers"):
            for s in scheduler._schedulers:
                self._undo(s)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    def step(self) -> None:
        """One epoch of the scheduler whose milestone has been reached."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite, LRScheduler):
    """Step every scheduler in turn each epoch (their factors compose).

    Raises
    ------
    ValueError
        No scheduler, a ReduceLROnPlateau or schedulers of another optimizer.
    """

    def __init__(self, schedulers: Sequence[Any],
                 optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be "
                "chained, but got no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(type(self).__name__, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        """One epoch of every scheduler, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = group_values(self._schedulers[-1].optimizer, "lr")
