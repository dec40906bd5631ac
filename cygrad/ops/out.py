"""torch's ``out=`` keyword: ``torch.mul(a, b, out=c)`` writes into ``c``.

The functions ``cygrad.<op>`` take ``out=`` as torch's do; Tensor methods do
not (torch's don't either).  ``write_out`` is the one rule, shared by the
compiled table functions (the engine calls it when ``out`` is given) and
by ``accepting_out``, which wraps the Python-level ops:

- the inputs must not require gradients while grad mode is on (torch:
  "functions with out=... arguments don't support automatic
  differentiation"), checked before anything is computed;
- the result's dtype must be castable to ``out``'s (no float into an
  integer tensor, nothing but bool into a bool one);
- an ``out`` of another shape is resized, with torch's warning unless it
  was empty; ``out`` is returned.
"""

import functools
import warnings

from cygrad._kernels.engine import TensorBase, is_grad_enabled
from cygrad.ops.inplace import copy_
from cygrad.ops.registry import _no_grad

_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}


def check_out(name, out, args):
    """Refuse ``out`` before the op runs (wrong type, autograd)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if not isinstance(o, TensorBase) and not isinstance(out, (tuple, list)):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not "
                            f"{type(o).__name__}")
    flat = [t for a in (*args, *outs)
            for t in (a if isinstance(a, (tuple, list)) else (a,))]
    if is_grad_enabled() and any(
            isinstance(a, TensorBase) and a.requires_grad for a in flat):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad.")


def _write_one(out, result):
    src, dst = result._arr.dtype, out._arr.dtype
    if _KIND_RANK.get(src.kind, 3) > _KIND_RANK.get(dst.kind, 3):
        raise RuntimeError(f"result type {_torch_name(src)} can't be cast to the "
                           f"desired output type {_torch_name(dst)}")
    if tuple(out._arr.shape) != tuple(result._arr.shape):
        if out._arr.size:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out._arr.shape)}, which does not match the required output "
                f"shape {list(result._arr.shape)}. This behavior is deprecated, and in "
                "a future release outputs will not be resized unless they have zero "
                "elements.", UserWarning, stacklevel=4)
        out.data = result.detach().to(out.dtype)
        return out
    with _no_grad():
        copy_(out, result)
    return out


def _torch_name(dt):
    names = {"float32": "Float", "float64": "Double", "float16": "Half",
             "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
             "uint8": "Byte", "bool": "Bool"}
    return names.get(str(dt), str(dt))


def write_out(name, result, out):
    """Write ``result`` (a Tensor or a tuple of them) into ``out``; return ``out``."""
    if isinstance(out, (tuple, list)) and not isinstance(result, TensorBase):
        results = tuple(result)
        if len(results) != len(out):
            raise TypeError(f"{name}(): expected out to be a tuple of {len(results)} "
                            f"Tensors, got {len(out)}")
        for o, r in zip(out, results):
            _write_one(o, r)
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    if not isinstance(result, TensorBase):
        raise TypeError(f"{name}(): out= given, but the op returns "
                        f"{type(result).__name__}")
    if not isinstance(out, TensorBase):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not "
                        f"{type(out).__name__}")
    return _write_one(out, result)


def accepting_out(name, fn):
    """``fn`` with torch's ``out=`` keyword (for ops written in Python)."""
    @functools.wraps(fn)
    def function(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        check_out(name, out, (*args, *kwargs.values()))
        return write_out(name, fn(*args, **kwargs), out)
    return function


def public(spec):
    """The function ``cygrad.<spec.name>``: ops written in Python take
    ``out=`` through ``accepting_out``; views and reshapes do not take it (as
    in torch), and the compiled table functions take it themselves.  One
    function per op (``torch.functional.einsum is torch.einsum``)."""
    fn = spec.fn
    if spec.kind in ("shape", "view") or type(fn) is not type(accepting_out):
        return fn
    if getattr(spec, "_public", None) is None:
        spec._public = accepting_out(spec.name, fn)
    return spec._public


def engine_out(name, fn, args, out):
    """The engine's ``out=`` hook: ``fn(*args)`` written into ``out``."""
    check_out(name, out, args)
    return write_out(name, fn(*args), out)
