"""Hypothesis strategies shared by the op tests."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

DTYPES = (np.float32, np.float64)


def finite(dtype, lo=-3.0, hi=3.0):
    """Finite floats of ``dtype`` in [lo, hi]."""
    width = 32 if np.dtype(dtype) == np.float32 else 64
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=width)


@st.composite
def broadcast_pair(draw, dtype=np.float64, lo=-3.0, hi=3.0, max_dims=3, max_side=4):
    """Two arrays whose shapes broadcast (sizes 0 and 1 included)."""
    shapes = draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=max_dims, min_side=0, max_side=max_side))
    a, b = shapes.input_shapes
    el = finite(dtype, lo, hi)
    return (draw(hnp.arrays(dtype, a, elements=el)),
            draw(hnp.arrays(dtype, b, elements=el)))


@st.composite
def array_and_dims(draw, dtype=np.float64, min_side=1, max_dims=4, lo=-3.0, hi=3.0):
    """An array and a reduction ``dim``: None, an int, or a tuple of ints
    (negative ones included)."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=max_dims, min_side=min_side,
                                  max_side=4))
    x = draw(hnp.arrays(dtype, shape, elements=finite(dtype, lo, hi)))
    nd = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return x, None
    if kind == "int":
        return x, draw(st.integers(-nd, nd - 1))
    dims = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    neg = draw(st.booleans())
    return x, tuple(d - nd if neg else d for d in dims)


@st.composite
def index_for(draw, shape):
    """A torch-style index for ``shape``: ints, slices with positive steps,
    None, Ellipsis, or one integer-array index (repeats allowed)."""
    parts = []
    for dim, n in enumerate(shape):
        kind = draw(st.sampled_from(["int", "slice", "full", "array"] if n else
                                    ["slice", "full"]))
        if kind == "int":
            parts.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            step = draw(st.one_of(st.none(), st.integers(1, 3)))
            parts.append(slice(start, stop, step))
        elif kind == "full":
            parts.append(slice(None))
        else:
            if any(isinstance(p, list) for p in parts):
                parts.append(slice(None))
            else:
                parts.append(draw(st.lists(st.integers(-n, n - 1), min_size=1,
                                           max_size=5)))
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), None)
    if parts and draw(st.booleans()):
        k = draw(st.integers(0, len(parts) - 1))
        if not isinstance(parts[k], list) and all(p is not Ellipsis for p in parts):
            parts[k:] = [Ellipsis] if all(not isinstance(p, list) for p in parts[k:]) \
                else parts[k:]
    return tuple(parts)
