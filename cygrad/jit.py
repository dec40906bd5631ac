"""``cygrad.jit``: the TorchScript entry points that eager programs call.

cygrad has no TorchScript compiler: its kernels are compiled already, and a
program runs as Python.  ``script(obj)`` therefore returns ``obj`` itself
and ``trace(fn, example_inputs)`` runs ``fn`` once on the inputs (so an
error surfaces where torch's tracer would meet it) and returns ``fn``; the
decorators (``ignore``, ``unused``, ``export``, ``interface``) return what
they decorate, ``is_scripting()``/``is_tracing()`` are False, ``fork`` runs
its call at once; like torch 2.13's, each entry point that compiles, runs
or saves warns ``DeprecationWarning``.  The numbers are the eager program's, as torch promises
for its scripted one.  One difference: a traced function keeps its Python
control flow (torch's trace freezes the branch the example took).

``save(module, f)`` writes the whole module with ``cygrad.save`` and
``load(f)`` reads it back (the module's class must be importable); a
TorchScript archive written by torch holds compiled TorchScript code, which
cygrad cannot run, and ``load`` says so.
"""

import typing
import warnings
import zipfile

from cygrad import serialization as _serialization

__all__ = ["Final", "Future", "ScriptFunction", "ScriptModule", "annotate", "export",
           "fork", "freeze", "ignore", "interface", "is_scripting", "is_tracing",
           "load", "optimize_for_inference", "save", "script", "script_method",
           "trace", "trace_module", "unused", "wait"]

Final = typing.Final


def _deprecated(name):
    # torch 2.13 deprecates its TorchScript entry points; so does this module
    warnings.warn(f"`jit.{name}` is deprecated, as torch's: call the module or "
                  "function as it is (cygrad.compile is the identity)",
                  DeprecationWarning, stacklevel=3)


class ScriptModule:
    """Never instantiated: ``isinstance(m, jit.ScriptModule)`` is False for
    every cygrad module, as for an unscripted torch module."""


class ScriptFunction:
    """Never instantiated (see ``ScriptModule``)."""


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``obj`` itself: a module, function or class runs eagerly."""
    _deprecated("script")
    if obj is None:
        raise RuntimeError("script(): expected a function, class or nn.Module")
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True,
          check_inputs=None, check_tolerance=1e-5, strict=True,
          _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """``func`` itself, after one call on ``example_inputs`` (a tensor or a
    tuple of them) or ``example_kwarg_inputs`` (a dict)."""
    _deprecated("trace")
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("trace(): example_inputs or example_kwarg_inputs is "
                           "required to run the function once")
    if example_kwarg_inputs is not None:
        func(**example_kwarg_inputs)
    else:
        args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
        func(*args)
    return func


def trace_module(mod, inputs, **kwargs):
    """``mod`` itself, after calling each named method once on its inputs
    (``{"forward": x}``)."""
    _deprecated("trace_module")
    for name, args in inputs.items():
        getattr(mod, name)(*(args if isinstance(args, tuple) else (args,)))
    return mod


def _passthrough(fn=None, **kwargs):
    if fn is None:
        return lambda f: f
    return fn


ignore = unused = _passthrough


def export(fn):
    return fn


def interface(obj):
    return obj


def script_method(fn):
    return fn


def is_scripting():
    return False


def is_tracing():
    return False


def annotate(the_type, the_value):
    """``the_value`` (the type is for TorchScript's compiler)."""
    return the_value


class Future:
    """The result of ``fork``: the call has run already; ``wait()`` returns
    its value (or raises its exception)."""

    def __init__(self, fn, args, kwargs):
        try:
            self._value, self._error = fn(*args, **kwargs), None
        except Exception as e:  # noqa: BLE001  (raised again by wait)
            self._value, self._error = None, e

    def wait(self):
        if self._error is not None:
            raise self._error
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    _deprecated("fork")
    return Future(func, args, kwargs)


def wait(future):
    _deprecated("wait")
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """``mod`` itself; torch freezes only modules in eval mode, and so
    refuses a training one."""
    _deprecated("freeze")
    if getattr(mod, "training", False):
        raise RuntimeError("Freezing is currently only implemented for modules in "
                           "eval mode. Please call .eval() on your module before "
                           "freezing.")
    return mod


def optimize_for_inference(mod, other_methods=None):
    """``mod`` itself, in eval mode."""
    _deprecated("optimize_for_inference")
    return mod.eval()


def save(m, f, _extra_files=None):
    """Write module ``m`` whole (``cygrad.save``; not a TorchScript archive)."""
    _deprecated("save")
    _serialization.save(m, f)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Read a module written by ``save`` (its class must be importable)."""
    _deprecated("load")
    if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__"):
        with open(f, "rb") as fh:
            return _load(fh)
    return _load(f)


def _load(f):
    start = f.tell()
    if zipfile.is_zipfile(f):
        f.seek(start)
        names = zipfile.ZipFile(f).namelist()
        if any("/code/" in n or n.startswith("code/") for n in names):
            raise RuntimeError(
                "jit.load: this is a TorchScript archive (torch.jit.save): it holds "
                "compiled TorchScript code, which cygrad cannot run. Save the "
                "model's state_dict with torch.save, convert it to NumPy arrays "
                "and load it into the cygrad module instead")
    f.seek(start)
    return _serialization.load(f, weights_only=False)
