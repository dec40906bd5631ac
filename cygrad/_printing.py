"""How a Tensor's repr prints: torch's options and profiles
(``set_printoptions``) and its layout, which ``tensor_repr`` follows so that
printed tensors read the same character for character: every element padded
to the widest of the (summarised) elements, ``(linewidth - indent) //
(width + 2)`` elements per line, rows of an n-d tensor separated by n-1
newlines, and the trailing ``dtype=``/``grad_fn=`` moved to a line of their
own when the last line would pass the line width."""

import math
import types

import numpy as np

from cygrad import dtypes as _dt

__all__ = ["PRINT_OPTS", "get_printoptions", "set_printoptions", "tensor_repr"]

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


# --- the layout -----------------------------------------------------------------

def _summarized(arr, e):
    """The elements that size the columns of a summarised tensor: the first
    and last ``e`` along every dimension longer than ``2 e``."""
    for axis, n in enumerate(arr.shape):
        if n > 2 * e:
            arr = np.take(arr, list(range(e)) + list(range(n - e, n)), axis=axis)
    return arr


class _Cells:
    """One element's text, padded to the common width.  Floats choose one
    style for the whole tensor from the nonzero finite values: scientific
    when their magnitudes span more than 1e3, pass 1e8 or fall below 1e-4
    (or as ``sci_mode`` says), else integers as ``3.`` and others with
    ``precision`` decimals.  Without such values: ``0.``, ``nan``, ``inf``."""

    def __init__(self, arr):
        p = PRINT_OPTS.precision
        self.floating = arr.dtype.kind == "f"
        self.int_mode, self.sci, self.width = True, False, 1
        if not self.floating:
            self.width = max((len(str(v)) for v in arr.ravel().tolist()), default=1)
        else:
            flat = arr.ravel().astype(np.float64)
            vals = flat[np.isfinite(flat) & (flat != 0)]
            if vals.size:
                mags = np.abs(vals)
                lo, hi = mags.min(), mags.max()
                self.int_mode = bool(np.all(vals == np.ceil(vals)))
                self.sci = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
                            if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode)
                vals = vals.tolist()
                if self.sci:
                    width = max(len(f"{v:.{p}e}") for v in vals)
                elif self.int_mode:
                    width = max(len(f"{v:.0f}") for v in vals) + 1
                else:
                    width = max(len(f"{v:.{p}f}") for v in vals)
                self.width = max(self.width, width)

    def __call__(self, v):
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci:
                text = f"{v:{self.width}.{p}e}"
            elif self.int_mode:
                text = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
            else:
                text = f"{v:.{p}f}"
        else:
            text = str(v)
        return text.rjust(self.width)


def _vector(arr, indent, summarize, cell):
    e = PRINT_OPTS.edgeitems
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (cell.width + 2)))
    if summarize and not e:
        items = ["..."]
    elif summarize and arr.shape[0] > 2 * e:
        items = ([cell(v) for v in arr[:e].tolist()] + [" ..."]
                 + [cell(v) for v in arr[-e:].tolist()])
    else:
        items = [cell(v) for v in arr.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _block(arr, indent, summarize, cell):
    if arr.ndim == 0:
        return cell(arr.item())
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, cell)
    e, n = PRINT_OPTS.edgeitems, arr.shape[0]
    if summarize and n > 2 * e:
        shown = [*range(e), None, *range(n - e, n)]
    else:
        shown = range(n)
    rows = ["..." if i is None else _block(arr[i], indent + 1, summarize, cell)
            for i in shown]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def tensor_repr(arr, default_dtype, tail=(), name="tensor"):
    """``tensor(...)`` for the array ``arr``; ``tail``: the suffixes after the
    dtype (``grad_fn=<...>`` or ``requires_grad=True``); ``name``: a user's
    Tensor subclass prints under its own name, as in torch."""
    prefix = f"{name}("
    indent = len(prefix)
    suffixes = []
    dtype_suffix = f"dtype=cygrad.{_dt.name(arr.dtype)}"
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if arr.dtype != default_dtype:
            suffixes.append(dtype_suffix)
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(arr.shape)}")
        if arr.dtype not in (default_dtype, np.int64, np.bool_):
            suffixes.append(dtype_suffix)
        if arr.dtype == np.float16:
            arr = arr.astype(np.float32)
        summarize = arr.size > PRINT_OPTS.threshold
        cell = _Cells(_summarized(arr, PRINT_OPTS.edgeitems) if summarize else arr)
        body = _block(arr, indent, summarize, cell)
    text = prefix + body
    last = len(text) - text.rfind("\n") + 1
    parts = [text]
    for suffix in (*suffixes, *tail):
        # measured as torch spells it (``dtype=torch.float64``, one character
        # shorter), so that lines break where torch's do
        n = len(suffix.replace("=cygrad.", "=torch."))
        if last + n + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + n
        else:
            parts.append(", " + suffix)
            last += n + 2
    return "".join(parts) + ")"
