"""The base of every learning-rate scheduler (torch's ``LRScheduler``)."""

from __future__ import annotations

import warnings
from typing import Any

from .optimizer import Optimizer

__all__ = ["LRScheduler", "group_values", "per_group"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def per_group(name, optimizer, value):
    """``value`` as one entry per parameter group (a list must have one each)."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(value)} values, param_groups has "
                f"{len(optimizer.param_groups)}."
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


def group_values(optimizer, key):
    """``[group[key] for group in optimizer.param_groups]``."""
    return [group[key] for group in optimizer.param_groups]


def _mark_optimizer_steps(optimizer):
    """Record on ``optimizer`` that its ``step`` ran (for the order warning),
    with a step post-hook registered once per optimizer."""
    if optimizer.__dict__.get("_lr_sched_hooked"):
        return
    optimizer._lr_sched_hooked = True

    def mark(opt, args, kwargs):
        opt._opt_called = True

    optimizer.register_step_post_hook(mark)


class LRScheduler:
    """Base class: keeps ``base_lrs``, ``last_epoch`` and ``get_last_lr()``.

    A scheduler owns the ``lr`` of every parameter group of one optimizer.
    Build it after the optimizer; call ``scheduler.step()`` after
    ``optimizer.step()`` (the first ``scheduler.step()`` warns, as torch's,
    if the optimizer has not stepped yet).  Subclasses compute the new rates
    in ``get_lr()`` from the groups' current ones, as torch does (so several
    schedulers can be chained and the sequences equal torch's to the last
    bit); many also have the closed form ``_get_closed_form_lr()`` used by
    the deprecated ``step(epoch)``.

    Parameters
    ----------
    optimizer : Optimizer
    last_epoch : int, default -1
        The index of the last epoch; -1 starts a fresh schedule (and records
        each group's ``initial_lr``).  Resuming needs ``initial_lr`` in the
        groups (a loaded optimizer state has it).
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] "
                        "when resuming scheduler with last_epoch >= 0"
                    )
        self.base_lrs = group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _mark_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The rates of the current ``last_epoch`` (called by :meth:`step`)."""
        raise NotImplementedError

    def _warn_if_called_outside_step(self):
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please "
                "use `get_last_lr()`.",
                UserWarning,
                stacklevel=3,
            )

    def get_last_lr(self) -> list[float]:
        """The rates the last :meth:`step` set, one per parameter group."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or, deprecated, jump to ``epoch``) and set the rates."""
        if self._step_count == 1:
            if "step" in self.optimizer.__dict__:
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning "
                    "rate scheduler initialization. Please, make sure to call "
                    "`optimizer.step()` before `lr_scheduler.step()`. See more "
                    "details at https://pytorch.org/docs/stable/optim.html"
                    "#how-to-adjust-learning-rate",
                    UserWarning,
                    stacklevel=2,
                )
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before "
                    "`optimizer.step()`. In PyTorch 1.1.0 and later, you should call "
                    "them in the opposite order: `optimizer.step()` before "
                    "`lr_scheduler.step()`.  Failure to do this will result in "
                    "PyTorch skipping the first value of the learning rate schedule. "
                    "See more details at https://pytorch.org/docs/stable/optim.html"
                    "#how-to-adjust-learning-rate",
                    UserWarning,
                    stacklevel=2,
                )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = group_values(self.optimizer, "lr")

    def _group_lrs(self):
        return group_values(self.optimizer, "lr")

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (plain Python values)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`."""
        self.__dict__.update(state_dict)
