"""``cygrad.testing``: ``assert_close`` (and the deprecated
``assert_allclose``), with torch's defaults and messages.

Two values are close when ``|actual - expected| <= atol + rtol * |expected|``
elementwise (infinities equal when they have the same sign; NaN equal only
with ``equal_nan``).  Default tolerances by dtype (torch's table):

=========  ========  ======
dtype      rtol      atol
=========  ========  ======
float16    1e-3      1e-5
float32    1.3e-6    1e-5
float64    1e-7      1e-7
integers   0         0
=========  ========  ======

Tensors, NumPy arrays, Python numbers, and sequences and mappings of them
(compared item by item) are accepted; a failure raises AssertionError that
names the mismatched elements and the greatest absolute and relative
differences, as torch's.

``make_tensor`` draws test tensors of a dtype and range (torch's defaults).
"""

import collections.abc
import numbers
import warnings

import numpy as np

from cygrad import _memory_format as _mf
from cygrad import creation as _random
from cygrad import dtypes as _dt
from cygrad._device import check_device
from cygrad._kernels.engine import TensorBase, _wrap
from cygrad.creation import as_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]

_TOLS = {
    np.dtype(np.float16): (1e-3, 1e-5),
    np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
}
# assert_allclose's older table
_OLD_TOLS = {
    np.dtype(np.float16): (1e-3, 1e-3),
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float64): (1e-5, 1e-8),
}


class _Mismatch(Exception):
    """A failed comparison: ``kind`` is the exception class to raise."""

    def __init__(self, kind, text):
        super().__init__(text)
        self.kind = kind
        self.text = text


def _tolerances(dtype, rtol, atol, table):
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or "
                         f"omitted, but got no {missing}.")
    if rtol is not None:
        return float(rtol), float(atol)
    return table.get(np.dtype(dtype), (0.0, 0.0))


def _dtype_name(d):
    return f"cygrad.{_dt.name(d)}" if d in _dt.SUPPORTED else str(d)


def _fmt_index(idx):
    if len(idx) == 1:
        return f"({int(idx[0])},)"
    return "(" + ", ".join(str(int(i)) for i in idx) + ")"


def _diffs(a, e):
    """|a - e| and |a - e| / |e| in a float dtype (ints: the default float)."""
    kind = np.result_type(a, e)
    work = kind if kind.kind == "f" else np.dtype(np.float32)
    af, ef = a.astype(work), e.astype(work)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(af - ef)
        same_inf = np.isinf(af) & np.isinf(ef) & (np.sign(af) == np.sign(ef))
        abs_diff = np.where(same_inf, 0, abs_diff)
        rel_diff = abs_diff / np.abs(ef)
        rel_diff = np.where(abs_diff == 0, 0, rel_diff)
    return af, ef, abs_diff, rel_diff


def _close_mask(af, ef, abs_diff, rtol, atol, equal_nan):
    with np.errstate(all="ignore"):
        ok = abs_diff <= atol + rtol * np.abs(ef)     # NaN anywhere: False
    inf = np.isinf(af) | np.isinf(ef)
    ok = np.where(inf, af == ef, ok)
    return ok | (np.isnan(af) & np.isnan(ef)) if equal_nan else ok


def _compare_arrays(a, e, rtol, atol, equal_nan, scalar, identifier):
    exact = rtol == 0 and atol == 0
    word = "equal" if exact else "close"
    if scalar and np.result_type(a, e).kind == "f":
        # torch computes a scalar's differences in Python floats
        a, e = a.astype(np.float64), e.astype(np.float64)
    af, ef, abs_diff, rel_diff = _diffs(a, e)
    ok = _close_mask(af, ef, abs_diff, rtol, atol, equal_nan)
    if ok.all():
        return
    allowed_abs = "" if exact else f" (up to {atol:g} allowed)"
    allowed_rel = "" if exact else f" (up to {rtol:g} allowed)"

    def num(v, integral):
        return str(int(v)) if integral and np.isfinite(v) else repr(float(v))

    integral = np.result_type(a, e).kind in "biu"
    if scalar:
        av, ev = a.reshape(()).item(), e.reshape(()).item()
        text = (f"Scalars are not {word}!\n\nExpected {ev} but got {av}.\n"
                f"Absolute difference: {num(abs_diff.reshape(()), integral)}"
                f"{allowed_abs}\nRelative difference: "
                f"{float(rel_diff.reshape(()))!r}{allowed_rel}")
    else:
        bad = ~ok
        n_bad, n = int(bad.sum()), bad.size
        # NaN differences rank highest, as torch's report shows them
        ad = np.where(np.isnan(abs_diff), np.inf, abs_diff)
        rd = np.where(np.isnan(rel_diff), np.inf, rel_diff)
        ia = np.unravel_index(int(np.argmax(np.where(bad, ad, -1))), a.shape)
        ir = np.unravel_index(int(np.argmax(np.where(bad, rd, -1))), a.shape)
        text = (f"{identifier} are not {word}!\n\n"
                f"Mismatched elements: {n_bad} / {n} ({100.0 * n_bad / n:.1f}%)\n"
                f"Greatest absolute difference: {num(abs_diff[ia], integral)} at index "
                f"{_fmt_index(ia)}{allowed_abs}\n"
                f"Greatest relative difference: {float(rel_diff[ir])!r} at index "
                f"{_fmt_index(ir)}{allowed_rel}")
    raise _Mismatch(AssertionError, text)


def _as_array(x):
    if isinstance(x, TensorBase):
        return x._arr, True
    if isinstance(x, np.ndarray):
        return x, True
    return None, False


def _pair(actual, expected, rtol, atol, equal_nan, check_dtype, table, path):
    a_arr, a_is = _as_array(actual)
    e_arr, e_is = _as_array(expected)
    if a_is or e_is:
        if not (a_is and e_is) or type(actual) is not type(expected) and not (
                isinstance(actual, TensorBase) and isinstance(expected, TensorBase)):
            raise _Mismatch(TypeError, f"No comparison pair was able to handle "
                            f"inputs of type {type(actual)} and {type(expected)}.")
        if a_arr.shape != e_arr.shape:
            if isinstance(actual, TensorBase):
                from_shape = f"cygrad.Size({list(a_arr.shape)}) != " \
                             f"cygrad.Size({list(e_arr.shape)})"
            else:
                from_shape = f"{a_arr.shape} != {e_arr.shape}"
            raise _Mismatch(AssertionError, f"The values for attribute 'shape' do not "
                            f"match: {from_shape}.")
        if check_dtype and a_arr.dtype != e_arr.dtype:
            raise _Mismatch(AssertionError, f"The values for attribute 'dtype' do not "
                            f"match: {_dtype_name(a_arr.dtype)} != "
                            f"{_dtype_name(e_arr.dtype)}.")
        d = a_arr.dtype if a_arr.dtype == e_arr.dtype else np.result_type(a_arr,
                                                                          e_arr)
        r, t = _tolerances(d, rtol, atol, table)
        _compare_arrays(a_arr, e_arr, r, t, equal_nan, a_arr.ndim == 0,
                        "Tensor-likes")
        return
    if isinstance(actual, numbers.Number) and isinstance(expected, numbers.Number):
        if isinstance(actual, complex) or isinstance(expected, complex):
            raise _Mismatch(TypeError, "cygrad.testing compares real numbers only")
        fl = isinstance(actual, float) or isinstance(expected, float)
        d = np.dtype(np.float64) if fl else np.dtype(np.int64)
        r, t = _tolerances(d, rtol, atol, table)
        _compare_arrays(np.asarray(actual, d), np.asarray(expected, d), r, t,
                        equal_nan, True, "Scalars")
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(
            expected, collections.abc.Mapping):
        if set(actual) != set(expected):
            raise _Mismatch(AssertionError, f"The keys of the mappings do not match:\n"
                            f"{sorted(map(repr, actual))} != "
                            f"{sorted(map(repr, expected))}")
        for k in actual:
            _pair(actual[k], expected[k], rtol, atol, equal_nan, check_dtype, table,
                  path + [repr(k)])
        return
    seqs = (collections.abc.Sequence,)
    if isinstance(actual, seqs) and isinstance(expected, seqs) and not isinstance(
            actual, str) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: "
                            f"{len(actual)} != {len(expected)}")
        for i, (x, y) in enumerate(zip(actual, expected)):
            _pair(x, y, rtol, atol, equal_nan, check_dtype, table, path + [str(i)])
        return
    if actual is None and expected is None:
        return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of "
                    f"type {type(actual)} and {type(expected)}.")


def _run(actual, expected, rtol, atol, equal_nan, check_dtype, msg, table):
    path = []
    try:
        _pair(actual, expected, rtol, atol, equal_nan, check_dtype, table, path)
    except _Mismatch as m:
        text = m.text
        where = _failure_path(actual, expected, rtol, atol, equal_nan, check_dtype,
                              table)
        if where:
            text += f"\n\nThe failure occurred for item {where}"
        if msg is not None:
            text = msg(text) if callable(msg) else str(msg)
        raise m.kind(text) from None


def _failure_path(actual, expected, rtol, atol, equal_nan, check_dtype, table):
    """``[1]['a']``: where inside nested containers the first failure is."""
    def walk(a, e, prefix):
        if isinstance(a, collections.abc.Mapping) and isinstance(
                e, collections.abc.Mapping) and set(a) == set(e):
            items = [(k, a[k], e[k], f"[{k!r}]") for k in a]
        elif (isinstance(a, collections.abc.Sequence) and isinstance(
                e, collections.abc.Sequence) and not isinstance(a, str)
              and len(a) == len(e)):
            items = [(i, x, y, f"[{i}]") for i, (x, y) in enumerate(zip(a, e))]
        else:
            return None
        for _, x, y, label in items:
            try:
                _pair(x, y, rtol, atol, equal_nan, check_dtype, table, [])
            except _Mismatch:
                deeper = walk(x, y, prefix + label)
                return deeper if deeper else prefix + label
        return None

    return walk(actual, expected, "")


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True,
                 check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError unless ``actual`` and ``expected`` are close.

    Parameters
    ----------
    actual, expected : tensors, NumPy arrays, numbers, or sequences/mappings
        of them (compared item by item, same structure).
    rtol, atol : float, optional; give both or neither (defaults by dtype,
        see the module docstring).
    equal_nan : bool; NaN compares equal to NaN.
    check_dtype : bool; the dtypes must match (else the values are compared
        in their promoted dtype).
    msg : str or callable, optional; replaces the message (a callable gets
        the generated message and returns the one to raise).

    Raises
    ------
    AssertionError : values, shapes or dtypes differ (the message names the
        mismatched elements and the greatest absolute and relative
        differences with their indices).
    TypeError : the inputs are of types that cannot be compared.
    ValueError : only one of rtol and atol given.
    """
    _run(actual, expected, rtol, atol, equal_nan, check_dtype, msg, _TOLS)


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated (as in torch): ``assert_close`` with ``expected`` converted
    to ``actual``'s kind, no dtype check, NaN equal by default and the older
    default tolerances (float32: rtol 1e-4, atol 1e-5)."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will "
                  "be removed in a future release. Please use "
                  "`torch.testing.assert_close()` instead.", FutureWarning,
                  stacklevel=2)
    if not isinstance(actual, TensorBase):
        actual = as_tensor(actual)
    if not isinstance(expected, TensorBase):
        expected = as_tensor(expected, dtype=actual._arr.dtype)
    if (rtol is None) != (atol is None):
        _tolerances(None, rtol, atol, _OLD_TOLS)
    if rtol is None:
        d = np.result_type(actual._arr, expected._arr)
        rtol, atol = _OLD_TOLS.get(d, (0.0, 0.0))
    _run(actual, expected, rtol, atol, equal_nan, False, msg or None, _OLD_TOLS)


# --- make_tensor ----------------------------------------------------------------------

def _bounds(dtype, low, high):
    """[low, high) for the dtype: torch's defaults (-9 and 9 or 10), clamped
    to the dtype's range."""
    if dtype.kind == "f":
        lo, hi = (-9 if low is None else low), (9 if high is None else high)
        info = np.finfo(dtype)
    else:
        lo, hi = (-9 if low is None else low), (10 if high is None else high)
        info = np.iinfo(dtype)
    if any(isinstance(v, float) and np.isnan(v) for v in (lo, hi)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={lo} and "
                         f"high={hi}")
    lo, hi = max(lo, info.min), min(hi, info.max)
    if dtype.kind == "f" and lo == hi:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for "
                      "floating or complex types is deprecated since 2.1 and will be "
                      "removed in 2.3. Use `torch.full(...)` instead.", FutureWarning,
                      stacklevel=3)
    elif lo >= hi:
        raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
    return lo, hi


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of random values for tests, as torch.testing.make_tensor.

    Parameters
    ----------
    *shape : ints, or one sequence of ints
    dtype, device : the tensor's dtype; the device must be the CPU
    low, high : floats, optional
        Values are drawn uniformly from [low, high) (integers: [low, high));
        defaults -9 and 9 (floats) or 10 (integers), clamped to the dtype.
    requires_grad : bool
        Floating dtypes only.
    noncontiguous : bool
        Same values, in a strided (non-contiguous) view.
    exclude_zero : bool
        Zeros become 1 (integers) or the dtype's smallest normal number.
    memory_format : cygrad memory format, optional

    The numbers come from cygrad's default generator, so they differ from
    torch's for the same seed.
    """
    from_shape = shape[0] if len(shape) == 1 and not isinstance(
        shape[0], numbers.Integral) else shape
    size = tuple(int(s) for s in from_shape)
    check_device(device)
    d = _dt.to_numpy(dtype)
    if requires_grad and d.kind != "f":
        raise ValueError("`requires_grad=True` is not supported for boolean and "
                         f"integral dtypes, but got dtype={_dtype_name(d)}")
    rng = _random.default_generator._rng
    if d == np.bool_:
        arr = rng.integers(0, 2, size).astype(np.bool_)
    elif d.kind == "f":
        lo, hi = _bounds(d, low, high)
        arr = rng.uniform(lo, hi, size).astype(d)
    else:
        lo, hi = _bounds(d, low, high)
        arr = rng.integers(int(np.ceil(lo)), int(np.ceil(hi)), size).astype(d)
    if exclude_zero and d != np.bool_:
        arr[arr == 0] = 1 if d.kind != "f" else np.finfo(d).tiny
    if noncontiguous and arr.size > 1:
        wide = np.repeat(arr, 2, axis=-1)
        arr = wide[..., ::2]
    elif memory_format is not None:
        arr = _mf.as_format(arr, memory_format, copy=False)
    t = _wrap(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t
