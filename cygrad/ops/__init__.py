"""Every differentiable op of cygrad, registered in ``OPS``.

Elementwise ops are the rows of the op table (``_kernels/optable.py``),
registered in one loop by ``elementwise``.  Every other op is a ``Function``
class in the module of its family, with its ``backward`` written once
against the ``xp`` namespace of ``registry``.  Importing this package
attaches the Tensor methods; ``engine_hooks()`` gives what the compiled
engine needs of this layer, which ``cygrad/__init__.py`` installs.

Modules, each importing only those before it: ``registry``, ``select``,
``elementwise``, ``linalg``, ``indexing``, ``shape``, ``pieces``,
``reductions``, ``cumulative``, ``sorting``, ``inplace``, ``decomp``,
``scatter``, ``masking``, ``closeness`` (isclose, allclose, equal), ``storage``
(resize_, apply_), ``out``
(the ``out=`` keyword of the functions ``cygrad.<op>``); then the composites
of torch's long tail: ``mathextra`` (frac, copysign, fmax, comparison
aliases...), ``special`` (the gamma and Bessel families, ndtr, xlogy),
``arrange`` (tensor_split, rot90, diff, atleast_*, the scatters,
as_strided...), ``stats`` (nansum, quantile, cummax, cov...),
``linalg_extra`` (inner, addr, matrix_exp, cholesky_solve...), ``triangular``
(triangular solves and LU), ``linalg_tail`` (lstsq, matrix_rank,
cond, the ``_ex`` forms...), ``ldl`` (LDL^T), ``numdiff`` (torch.gradient), ``misc``
(small Tensor methods and torch functions) and ``window`` (hann_window...).
"""

from cygrad.ops import (
    closeness,
    cumulative,
    decomp,
    elementwise,
    indexing,
    inplace,
    linalg,
    masking,
    pieces,
    reductions,
    registry,
    scatter,
    select,
    shape,
    sorting,
    storage,
)
from cygrad.ops import (  # the long tail, after the ops they compose
    arrange,
    linalg_extra,
    mathextra,
    misc,
    special,
    stats,
    triangular,
    linalg_tail,
    ldl,
    numdiff,
    window,
)
from cygrad.ops.elementwise import _graph_rules, compare, logical_not
from cygrad.ops.inplace import _view_aware_inplace, copy_, full_like_const, setitem
from cygrad.ops.linalg import _matmul_graph_backward, mm
from cygrad.ops.out import engine_out, public
from cygrad.ops.reductions import std
from cygrad.ops.registry import OPS, OpSpec, half_cast, half_function, op, sum_to_shape
from cygrad.ops.select import Where, clip
from cygrad.ops.shape import cast, expand, t

__all__ = [
    "OPS",
    "OpSpec",
    "Where",
    "cast",
    "clip",
    "compare",
    "copy_",
    "engine_hooks",
    "full_like_const",
    "logical_not",
    "mm",
    "op",
    "public",
    "setitem",
    "std",
    "sum_to_shape",
    "t",
]

# Importing each family attaches its Tensor methods.
FAMILIES = (registry, select, elementwise, linalg, indexing, shape, pieces, reductions,
            cumulative, sorting, inplace, decomp, scatter, masking, closeness,
            storage, mathextra, special, arrange, stats, linalg_extra, misc, window,
            triangular, linalg_tail, ldl, numdiff)

# Every registered op (and alias) as ``cygrad.ops.<name>``.
for _spec in OPS.values():
    for _name in (_spec.name,) + _spec.aliases:
        globals().setdefault(_name, _spec.fn)
        __all__.append(_name)
del _spec, _name


def engine_hooks():
    """The Python pieces the compiled engine calls, for ``engine.install``."""
    unary, binary = _graph_rules()
    return {"graph_unary": unary, "graph_binary": binary,
            "graph_sum_to": sum_to_shape, "graph_matmul": _matmul_graph_backward,
            "graph_expand": expand, "graph_put_basic": indexing._put_basic_graph,
            "graph_softmax": reductions._softmax_grad_tensors,
            "inplace_views": _view_aware_inplace,
            "write_out": engine_out,
            "half_cast": half_cast, "half_function": half_function}
