"""Two helpers torch keeps in ``torch.nn.functional`` that scripts import:
``boolean_dispatch`` (one function that runs one of two implementations by
a bool argument, as ``max_pool2d``'s ``return_indices``) and
``assert_int_or_pair``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["assert_int_or_pair", "boolean_dispatch"]


def boolean_dispatch(arg_name: str, arg_index: int, default: bool,
                     if_true: Callable[..., Any], if_false: Callable[..., Any],
                     module_name: str | None, func_name: str) -> Callable[..., Any]:
    """A function calling ``if_true`` or ``if_false`` by the bool argument
    ``arg_name`` (by keyword, else at position ``arg_index``, else
    ``default``)."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        else:
            flag = default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    if if_true.__doc__ is None and if_false.__doc__ is not None:
        fn.__doc__ = if_false.__doc__
    else:
        fn.__doc__ = if_true.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    fn.__name__ = fn.__qualname__ = func_name
    return fn


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    """AssertionError ``message.format(arg_name)`` unless ``arg`` is an int
    or has two entries."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
