"""Grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``.

The mode itself is a C thread-local in the engine, so each thread has its own
and new threads start with grad enabled, as in PyTorch.  Each class works as
a context manager and as a decorator.
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import TYPE_CHECKING, Any

from cygrad._kernels.engine import _set_grad_mode, is_grad_enabled

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal, TypeVar

    from typing_extensions import Self

    _F = TypeVar("_F", bound=Callable[..., Any])

__all__ = [
    "enable_grad",
    "inference_mode",
    "is_inference_mode_enabled",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
]


class _GradModeContext:
    """Base: subclasses set ``_mode``; usable as ``with`` and as a decorator."""

    _mode = True

    def __new__(cls, fn: Any = None) -> Self:
        # ``@no_grad`` without parentheses: decorate ``fn`` directly.
        if callable(fn) and not isinstance(fn, _GradModeContext):
            return cls()(fn)
        return super().__new__(cls)

    def __init__(self, fn: Any = None) -> None:
        pass

    def __enter__(self) -> Self:
        self._prev = _set_grad_mode(self._mode)
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _set_grad_mode(self._prev)
        return False

    def clone(self) -> _GradModeContext:
        return self.__class__()

    def __call__(self, fn: _F) -> _F:
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    with self.clone():
                        response = gen.send(request)
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):
    """Disable gradient recording: results have ``requires_grad=False``.

    Also usable as ``@no_grad`` (without parentheses) on a function.
    """

    _mode = False


class enable_grad(_GradModeContext):
    """Enable gradient recording (e.g. inside ``no_grad``)."""

    _mode = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode to ``mode``: a plain call, a context manager or a decorator.

    As a plain call it takes effect immediately (like PyTorch); leaving a
    ``with`` block restores the previous mode.
    """

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._prev = _set_grad_mode(self._mode)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _set_grad_mode(self._prev)
        return False

    def clone(self) -> _GradModeContext:
        # A decorated function's calls must not re-apply the plain-call effect.
        return _Scoped(self._mode)

    def __call__(self, fn: _F) -> _F:
        _set_grad_mode(self._prev)
        return super().__call__(fn)


class _Scoped(_GradModeContext):
    def __init__(self, mode: bool) -> None:
        self._mode = mode


_inference = threading.local()


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` (per thread)."""
    return getattr(_inference, "on", False)


class inference_mode(_GradModeContext):
    """``inference_mode(mode=True)``: grad mode off while ``mode`` holds.

    As torch, ``inference_mode(False)`` turns grad mode *on* (even inside
    ``no_grad``) and inference mode off.  cygrad has no separate inference
    tensors: results are ordinary tensors that do not require grad.
    Usable as a context manager and as a decorator, with or without
    parentheses.
    """

    def __new__(cls, mode: Any = True) -> Self:
        if callable(mode) and not isinstance(mode, _GradModeContext):
            return cls()(mode)
        return object.__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)
        self._mode = not self.mode

    def __enter__(self) -> Any:
        self._prev_inference = is_inference_mode_enabled()
        _inference.on = self.mode
        return super().__enter__()

    def __exit__(self, *exc: object) -> Literal[False]:
        _inference.on = self._prev_inference
        return super().__exit__(*exc)

    def clone(self) -> _GradModeContext:
        return self.__class__(self.mode)
