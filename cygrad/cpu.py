"""``cygrad.cpu``: torch.cpu's device module.  The CPU is cygrad's one
device, so it is always available, there is one of it, and its streams and
events are already in order (every op has finished when it returns): the
synchronization calls return at once, as torch's do on the CPU."""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any

from cygrad.amp import GradScaler as _GradScaler
from cygrad.amp import autocast as _autocast

__all__ = ["Event", "Stream", "StreamContext", "amp", "current_device",
           "current_stream", "device_count", "is_available", "is_initialized",
           "set_device", "stream", "synchronize"]


def is_available() -> bool:
    """Always True."""
    return True


def is_initialized() -> bool:
    """Always True."""
    return True


def device_count() -> int:
    """Always 1."""
    return 1


def current_device() -> str:
    """``"cpu"``."""
    return "cpu"


def set_device(device: Any) -> None:
    """Accepted and ignored (there is one CPU device), as torch."""


def synchronize(device: Any = None) -> None:
    """Returns at once: CPU work is finished when an op returns."""


class Stream:
    """torch.cpu.Stream: a stand-in; CPU ops run in order as called."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream: Stream) -> None:
        pass

    def wait_event(self, event: Event) -> None:
        pass

    def record_event(self, event: Event | None = None) -> Event:
        return Event() if event is None else event


class Event:
    """torch.cpu.Event: always complete."""

    def query(self) -> bool:
        return True

    def record(self, stream: Stream | None = None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream: Stream | None = None) -> None:
        pass


_current = Stream()


def current_stream(device: Any = None) -> Stream:
    """The one CPU stream."""
    return _current


class StreamContext(contextlib.AbstractContextManager):
    """``with stream(s):``: nothing to switch on the CPU."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream

    def __enter__(self) -> StreamContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def stream(stream: Stream | None) -> StreamContext:
    """A context manager that selects ``stream`` (a no-op on the CPU)."""
    return StreamContext(stream)


def get_capabilities() -> dict[str, Any]:
    """What cygrad knows of the CPU: its logical core count (torch also
    lists the instruction-set extensions, which cygrad does not probe)."""
    return {"num_logical_cores": os.cpu_count()}


class _Amp:
    """``cpu.amp``: torch's older spellings of ``amp.autocast("cpu")`` and
    ``amp.GradScaler("cpu")``, with torch's deprecation warnings."""

    @staticmethod
    def autocast(enabled: bool = True, dtype: Any = None,
                 cache_enabled: bool = True) -> Any:
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        return _autocast("cpu", dtype=dtype, enabled=enabled,
                         cache_enabled=cache_enabled)

    @staticmethod
    def GradScaler(init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                   backoff_factor: float = 0.5, growth_interval: int = 2000,
                   enabled: bool = True) -> Any:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please "
                      "use `torch.amp.GradScaler('cpu', args...)` instead.",
                      FutureWarning, stacklevel=2)
        return _GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                           backoff_factor=backoff_factor,
                           growth_interval=growth_interval, enabled=enabled)


amp = _Amp()
