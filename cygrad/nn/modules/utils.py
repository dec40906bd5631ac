"""The argument helpers custom layers import from
``torch.nn.modules.utils``: ``_pair(3) == (3, 3)``, ``_pair((1, 2)) ==
(1, 2)``, and their 1-, 3- and 4-entry forms."""

import collections.abc
import itertools

__all__: list[str] = []


def _ntuple(n, name="parse"):
    """A function that repeats a scalar ``n`` times and keeps an iterable
    as a tuple of its items."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(itertools.repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """Each entry of ``t`` ``n`` times, in reverse order: ``F.pad``'s order
    for per-dimension padding, ``((1, 2), 2) -> (2, 2, 1, 1)``."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """``out_size`` with each None taken from the matching trailing entry of
    ``defaults`` (an adaptive pool's output size given as ``(None, 7)``)."""
    if isinstance(out_size, (int, float)) and not isinstance(out_size, bool):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    tail = defaults[-len(out_size):]
    return [v if v is not None else d for v, d in zip(out_size, tail)]
