"""``set_printoptions``: how a Tensor's repr prints (torch's options and
profiles).  ``_tensor.py`` reads ``PRINT_OPTS`` each time it formats."""

import math
import types

__all__ = ["PRINT_OPTS", "get_printoptions", "set_printoptions"]

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

PRINT_OPTS = types.SimpleNamespace(sci_mode=None, **_PROFILES["default"])


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print.

    Parameters
    ----------
    precision : int, digits after the decimal point (default 4).
    threshold : number of elements above which a tensor is summarised (1000).
    edgeitems : items shown at each end of a summarised dimension (3).
    linewidth : characters per line (80).
    profile : ``"default"``, ``"short"`` or ``"full"``: sets the four above;
        the explicit arguments then override it.
    sci_mode : True forces scientific notation, False forbids it, None (the
        default, reset by every call as in torch) chooses by the values.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of "
                             f"{sorted(_PROFILES)}, got {profile!r}")
        for k, v in _PROFILES[profile].items():
            setattr(PRINT_OPTS, k, v)
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current options, as a dict (torch's name)."""
    return dict(vars(PRINT_OPTS))
