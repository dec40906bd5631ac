"""``cygrad.cuda``: what scripts ask before choosing a device.  cygrad has
no GPU, so ``is_available()`` is False and ``device_count()`` 0, as on a
CPU-only torch; the seeding and cache calls do nothing, as there; anything
that needs a GPU raises torch's AssertionError with a sentence that says
cygrad runs on the CPU."""

from __future__ import annotations

from typing import Any

from cygrad.amp import GradScaler as _GradScaler
from cygrad.amp import autocast as _autocast

__all__ = [
    "current_device",
    "device_count",
    "empty_cache",
    "get_device_name",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "synchronize",
    "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "reset_max_memory_allocated",
    "set_device", "get_device_capability", "get_device_properties", "Event", "Stream",
    "amp",
]


def _no_gpu(what):
    raise AssertionError(f"{what}: cygrad runs on the CPU only (torch's CPU build "
                         "says 'Torch not compiled with CUDA enabled')")


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def manual_seed(seed: int) -> None:
    """Without a GPU there is nothing to seed (torch ignores it too)."""


def manual_seed_all(seed: int) -> None:
    """Without a GPU there is nothing to seed (torch ignores it too)."""


def empty_cache() -> None:
    """Without a GPU there is no cache to empty."""


def synchronize(device: Any = None) -> None:
    _no_gpu("cuda.synchronize()")


def current_device() -> int:
    _no_gpu("cuda.current_device()")


def get_device_name(device: Any = None) -> None:
    _no_gpu("cuda.get_device_name()")


# Memory statistics: there is no GPU memory, so every count is 0 (torch's CPU
# build answers 0 too); resetting them does nothing.
def memory_allocated(device: Any = None) -> None:
    return 0


def max_memory_allocated(device: Any = None) -> None:
    return 0


def memory_reserved(device: Any = None) -> None:
    return 0


def max_memory_reserved(device: Any = None) -> None:
    return 0


def reset_peak_memory_stats(device: Any = None) -> None:
    """Nothing to reset without a GPU."""


def reset_max_memory_allocated(device: Any = None) -> None:
    """Nothing to reset without a GPU."""


def set_device(device: Any) -> None:
    _no_gpu("cuda.set_device()")


def get_device_capability(device: Any = None) -> None:
    _no_gpu("cuda.get_device_capability()")


def get_device_properties(device: Any = None) -> None:
    _no_gpu("cuda.get_device_properties()")


class Event:
    """A CUDA event: there is no GPU stream to record on."""

    def __init__(self, *args, **kwargs):
        _no_gpu("cuda.Event()")


class Stream:
    """A CUDA stream: there is no GPU to queue work on."""

    def __init__(self, *args, **kwargs):
        _no_gpu("cuda.Stream()")


class _Amp:
    """``cuda.amp``: torch's older spellings of ``amp.autocast("cuda")`` and
    ``amp.GradScaler("cuda")`` (disabled with torch's warning: no GPU)."""

    @staticmethod
    def autocast(enabled=True, dtype=None, cache_enabled=True):
        return _autocast("cuda", dtype=dtype, enabled=enabled,
                        cache_enabled=cache_enabled)

    @staticmethod
    def GradScaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                   growth_interval=2000, enabled=True):
        return _GradScaler("cuda", init_scale, growth_factor, backoff_factor,
                          growth_interval, enabled)


amp = _Amp()
