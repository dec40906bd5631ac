"""``cygrad.compile`` and ``cygrad.compiler``: cygrad's kernels are already
compiled, so ``compile(model)`` returns the model itself (and
``compile(fn)`` the function, also as a decorator with or without
arguments): the same numbers as the uncompiled program, as torch promises
for its compiled one.  ``Module.compile()`` does nothing."""

__all__ = ["compile", "disable", "is_compiling"]


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor",
            mode=None, options=None, disable=False):
    """``model`` unchanged; without ``model``, a decorator that returns its
    argument unchanged."""
    if model is None:
        return lambda fn: fn
    return model


def disable(fn=None, recursive=True, *, reason=None):
    """The function itself (there is no compiler to keep away from it)."""
    if fn is None:
        return lambda f: f
    return fn


def is_compiling():
    return False
