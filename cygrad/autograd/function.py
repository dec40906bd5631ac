"""``Function``: user-defined differentiable operations (PyTorch's API).

Built-in non-elementwise ops (reductions, matmul, shape ops) are Functions
too, so user code and built-ins share one engine.  The ``ctx`` passed to
``forward``/``backward`` *is* the graph node, as in PyTorch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cygrad._kernels.engine import FunctionNode, function_apply

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    _T = TypeVar("_T", bound=Callable[..., Any])

__all__ = ["Function", "FunctionCtx", "once_differentiable"]

FunctionCtx = FunctionNode


class _FunctionMeta(type):
    """Gives each Function subclass its own node class, named ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        node_attrs = {"_forward_cls": cls}
        if "_node_name" not in attrs and cls.__module__.partition(".")[0] != "cygrad":
            # a user's Function: its node prints with the module it lives in,
            # as torch's ``<torch.autograd.function.ExpBackward object at ...>``
            node_attrs["__repr__"] = _user_node_repr
        node_name = attrs.get("_node_name", name + "Backward")
        cls._backward_cls = type(node_name, (FunctionNode,), node_attrs)


def _user_node_repr(node):
    return f"<{type(node).__module__}.{node.name()} object at {hex(id(node))}>"


class Function(metaclass=_FunctionMeta):
    """Base class of custom autograd operations.

    Subclasses define static ``forward(ctx, *args)`` and
    ``backward(ctx, *grad_outputs)`` and are called with ``Cls.apply(*args)``.
    ``forward`` runs with grad mode off.  ``backward`` returns one gradient
    per ``forward`` argument (``None`` for non-tensors or inputs that need no
    gradient); it runs with grad mode on only under ``create_graph=True``, so
    writing it with cygrad ops makes it twice differentiable.

    ``ctx`` offers ``save_for_backward``, ``saved_tensors`` (checked against
    in-place changes), ``needs_input_grad``, ``mark_non_differentiable``,
    ``mark_dirty``, ``set_materialize_grads`` and arbitrary attributes.
    """

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply() takes no keyword arguments")
        return function_apply(cls, cls._backward_cls, args)


def once_differentiable(fn: _T) -> _T:
    """Mark a backward as not differentiable: under create_graph it runs with
    grad mode off, so its results carry no history (as PyTorch's decorator)."""
    import functools

    from .grad_mode import no_grad

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)
    return wrapper
