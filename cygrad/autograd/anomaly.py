"""Anomaly mode: find the op whose backward produced NaN.

With anomaly detection on, the engine checks every backward node's results;
the first NaN raises ``RuntimeError("Function 'LogBackward0' returned nan
values in its 0th output. The forward call that created it ran at
file:line.")`` — PyTorch's sentence, then the user's line of the forward op
(PyTorch prints a separate traceback warning instead).  The check costs one
``isnan`` pass per gradient, so it is off by default.
"""

import functools
import warnings

from cygrad._kernels import engine as _engine

__all__ = ["detect_anomaly", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
           "set_anomaly_enabled", "set_detect_anomaly"]

# set_anomaly_enabled(True, check_nan=False): anomaly mode is on but has
# nothing to check (the engine's check is the NaN one), so only this flag
# records it, for is_anomaly_enabled.
_on_without_nan = False
_raised_level = None      # the debug level set_anomaly_enabled replaced


def is_anomaly_enabled():
    """True while anomaly detection is on."""
    return _engine.is_anomaly_enabled() or _on_without_nan


def is_anomaly_check_nan_enabled():
    """True while anomaly detection checks backward results for NaN."""
    return _engine.is_anomaly_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    """torch's global switch of anomaly mode (``set_detect_anomaly`` without
    the scope); the forward line of a failing op is recorded while it is on."""
    global _on_without_nan, _raised_level
    on = bool(enabled) and bool(check_nan)
    _engine._set_anomaly(on)
    _on_without_nan = bool(enabled) and not check_nan
    if on and _raised_level is None and _engine._get_debug_level() <= 0:
        _raised_level = _engine._set_debug_level(1)
    elif not on and _raised_level is not None:
        _engine._set_debug_level(_raised_level)
        _raised_level = None


class detect_anomaly:
    """Context manager and decorator that turns anomaly detection on.

    Parameters
    ----------
    check_nan : bool, default True
        Raise when a backward node returns NaN.

    Creation sites are needed to name the forward line, so the debug level is
    raised to 1 inside the scope if it was 0.
    """

    def __init__(self, check_nan=True):
        self.check_nan = bool(check_nan)
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the "
            "runtime and should only be enabled for debugging.",
            UserWarning, stacklevel=2)

    def __enter__(self):
        self._prev = _engine._set_anomaly(self.check_nan)
        self._prev_level = None
        if _engine._get_debug_level() <= 0:
            self._prev_level = _engine._set_debug_level(1)
        return self

    def __exit__(self, *exc):
        _engine._set_anomaly(self._prev)
        if self._prev_level is not None:
            _engine._set_debug_level(self._prev_level)
        return False

    def __call__(self, fn):
        check_nan = self.check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scope = detect_anomaly(check_nan)
            with scope:
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off.

    Takes effect at once when called; used as a context manager, leaving the
    ``with`` block restores the previous setting.

    Parameters
    ----------
    mode : bool
    check_nan : bool, default True
    """

    def __init__(self, mode, check_nan=True):
        on = bool(mode) and bool(check_nan)
        self._prev = _engine._set_anomaly(on)
        self._prev_level = None
        if on and _engine._get_debug_level() <= 0:
            self._prev_level = _engine._set_debug_level(1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _engine._set_anomaly(self._prev)
        if self._prev_level is not None:
            _engine._set_debug_level(self._prev_level)
        return False
