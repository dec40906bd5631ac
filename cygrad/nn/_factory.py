"""``nn.factory_kwargs``: merge ``device``/``dtype``/``memory_format`` given
directly and inside ``factory_kwargs`` (torch's helper for module
constructors)."""

from __future__ import annotations

from typing import Any

__all__ = ["factory_kwargs"]

_SIMPLE = ("device", "dtype", "memory_format")


def factory_kwargs(kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """One dict of the factory arguments in ``kwargs`` (TypeError for any
    other key, or for one given both ways)."""
    if kwargs is None:
        return {}
    unexpected = set(kwargs) - set(_SIMPLE) - {"factory_kwargs"}
    if unexpected:
        raise TypeError(f"unexpected kwargs {unexpected}")
    out = dict(kwargs.get("factory_kwargs", {}))
    for key in _SIMPLE:
        if key in kwargs:
            if key in out:
                raise TypeError(f"{key} specified twice, in **kwargs and in "
                                "factory_kwargs")
            out[key] = kwargs[key]
    return out
