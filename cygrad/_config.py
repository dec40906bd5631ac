"""Global switches scripts set at start-up: deterministic algorithms and
the float32 matmul precision.  cygrad's CPU kernels are deterministic and
always multiply float32 in float32 (BLAS), so both are recorded and
reported back, and change no result."""

import warnings

__all__ = [
    "are_deterministic_algorithms_enabled", "get_float32_matmul_precision",
    "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
    "use_deterministic_algorithms",
]

_state = {"deterministic": False, "warn_only": False, "matmul_precision": "highest"}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record the flag (cygrad has no nondeterministic kernel to refuse)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be "
                        f"bool, not {type(mode).__name__}")
    _state["deterministic"] = mode
    _state["warn_only"] = bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _state["warn_only"]


def set_float32_matmul_precision(precision):
    """``"highest"``, ``"high"`` or ``"medium"``: recorded (no effect on the
    CPU); any other value warns and changes nothing, as torch."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; "
                      "the current set_float32_matmul_precision call has no effect.",
                      UserWarning, stacklevel=2)
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _state["matmul_precision"]
