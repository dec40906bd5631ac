"""Cases of the indexing helpers (``cygrad/ops/scatter.py`` and
``masking.py``) for the op-registry walk of ``reference.py``: one call each
(``fn(m, *tensors)``), with a NumPy reference."""

import numpy as np

from reference import Case

_IDX = np.array([[0, 2, 2], [1, 0, 3], [3, 3, 1]])
_MASK = np.array([[True, False, True, False], [False, True, True, False],
                  [True, True, False, False]])


def _i(m, v):
    return m.tensor(np.asarray(v), dtype=m.int64)


def _put(x, dim, idx, vals, add):
    out = x.copy()
    mesh = list(np.ix_(*[np.arange(n) for n in idx.shape]))
    mesh[dim] = idx
    if add:
        np.add.at(out, tuple(mesh), vals)
    else:
        out[tuple(mesh)] = vals
    return out


def indexing_cases():
    c = {}
    c["gather"] = [Case(lambda m, x: x.gather(1, _i(m, _IDX)), ((3, 4),),
                        lambda x: np.take_along_axis(x, _IDX, 1))]
    c["take_along_dim"] = [Case(lambda m, x: m.take_along_dim(x, _i(m, _IDX), 1),
                                ((3, 4),), lambda x: np.take_along_axis(x, _IDX, 1))]
    c["take"] = [Case(lambda m, x: m.take(x, _i(m, [[0, 11], [5, 5]])), ((3, 4),),
                      lambda x: x.reshape(-1)[[[0, 11], [5, 5]]])]
    c["scatter"] = [Case(lambda m, x, s: x.scatter(0, _i(m, [[2, 0, 1, 0]]), s),
                         ((3, 4), (1, 4)),
                         lambda x, s: _put(x, 0, np.array([[2, 0, 1, 0]]), s, False))]
    c["scatter_add"] = [Case(lambda m, x, s: x.scatter_add(1, _i(m, _IDX), s),
                             ((3, 4), (3, 3)),
                             lambda x, s: _put(x, 1, _IDX, s, True))]
    c["scatter_reduce"] = [Case(lambda m, x, s: x.scatter_reduce(1, _i(m, _IDX), s,
                                                                 "sum"),
                                ((3, 4), (3, 3)),
                                lambda x, s: _put(x, 1, _IDX, s, True))]
    c["index_select"] = [Case(lambda m, x: x.index_select(1, _i(m, [3, 0, 3])),
                              ((3, 4),), lambda x: x[:, [3, 0, 3]])]
    c["index_add"] = [Case(lambda m, x, s: x.index_add(0, _i(m, [2, 2]), s),
                           ((3, 4), (2, 4)),
                           lambda x, s: x + np.array([[0], [0], [1]]) * s.sum(0))]
    c["index_copy"] = [Case(lambda m, x, s: x.index_copy(1, _i(m, [3, 0]), s),
                            ((3, 4), (3, 2)),
                            lambda x, s: np.concatenate(
                                [s[:, 1:], x[:, 1:3], s[:, :1]], 1))]
    c["index_fill"] = [Case(lambda m, x: x.index_fill(0, _i(m, [1]), 2.5), ((3, 4),),
                            lambda x: np.where(np.arange(3)[:, None] == 1, 2.5, x))]
    c["index_put"] = [Case(lambda m, x, v: x.index_put((_i(m, [0, 2]),), v),
                           ((3, 4), (4,)),
                           lambda x, v: np.stack([v, x[1], v]))]
    c["masked_fill"] = [Case(lambda m, x: x.masked_fill(m.tensor(_MASK), -1.0),
                             ((3, 4),), lambda x: np.where(_MASK, -1.0, x)),
                        Case(lambda m, x, v: x.masked_fill(m.tensor(_MASK[0]), v),
                             ((3, 4), ()), lambda x, v: np.where(_MASK[0], v, x),
                             ids="0-d value")]
    c["masked_select"] = [Case(lambda m, x: x.masked_select(m.tensor(_MASK)),
                               ((3, 4),), lambda x: x[_MASK])]
    c["masked_scatter"] = [Case(lambda m, x, s: x.masked_scatter(m.tensor(_MASK), s),
                                ((3, 4), (7,)),
                                lambda x, s: _masked_scatter(x, s))]
    c["nonzero"] = [Case(lambda m, x: m.nonzero(x > 0), ((3, 4),),
                         lambda x: np.argwhere(x > 0), grad=False)]
    c["argwhere"] = [Case(lambda m, x: m.argwhere(x > 0), ((3, 4),),
                          lambda x: np.argwhere(x > 0), grad=False)]
    c["searchsorted"] = [
        Case(lambda m, x: m.searchsorted(m.tensor([-1.0, 0.0, 1.0], dtype=x.dtype), x),
             ((3, 4),), lambda x: np.searchsorted([-1.0, 0.0, 1.0], x), grad=False)]
    c["bucketize"] = [Case(lambda m, x: m.bucketize(x, m.tensor([-1.0, 0.0, 1.0],
                                                                dtype=x.dtype),
                                                    right=True), ((3, 4),),
                           lambda x: np.searchsorted([-1.0, 0.0, 1.0], x, "right"),
                           grad=False)]
    c["tril"] = [Case(lambda m, x: x.tril(), ((3, 4),), lambda x: np.tril(x)),
                 Case(lambda m, x: m.tril(x, -1), ((2, 3, 3),),
                      lambda x: np.tril(x, -1))]
    c["triu"] = [Case(lambda m, x: x.triu(1), ((4, 3),), lambda x: np.triu(x, 1))]
    c["tril_indices"] = [Case(lambda m, x: m.tril_indices(3, 4, 1), ((1,),),
                              lambda x: np.stack(np.tril_indices(3, 1, 4)),
                              grad=False)]
    c["triu_indices"] = [Case(lambda m, x: m.triu_indices(3, 3, -1), ((1,),),
                              lambda x: np.stack(np.triu_indices(3, -1, 3)),
                              grad=False)]
    c["diagonal"] = [Case(lambda m, x: x.diagonal(1), ((3, 4),),
                          lambda x: np.diagonal(x, 1)),
                     Case(lambda m, x: m.diagonal(x, -1, 0, 2), ((3, 2, 4),),
                          lambda x: np.diagonal(x, -1, 0, 2))]
    c["diag_embed"] = [Case(lambda m, x: m.diag_embed(x), ((2, 3),),
                            lambda x: np.stack([np.diag(r) for r in x]))]
    c["diag"] = [Case(lambda m, x: m.diag(x, 1), ((3,),), lambda x: np.diag(x, 1)),
                 Case(lambda m, x: x.diag(), ((3, 4),), lambda x: np.diag(x))]
    c["trace"] = [Case(lambda m, x: m.trace(x), ((3, 4),), lambda x: np.trace(x))]
    c["select"] = [Case(lambda m, x: x.select(1, -1), ((3, 4),), lambda x: x[:, -1])]
    c["put"] = [Case(lambda m, x, s: x.put(_i(m, [0, 5]), s), ((3, 4), (2,)),
                     lambda x, s: _flat_put(x, [0, 5], s))]
    return c


def _flat_put(x, idx, s):
    out = x.copy().reshape(-1)
    out[idx] = s
    return out.reshape(x.shape)


def _masked_scatter(x, s):
    out = x.copy()
    out[_MASK] = s[:_MASK.sum()]
    return out
