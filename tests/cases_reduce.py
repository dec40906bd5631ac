"""Op cases of the reductions, scans, sorting and shape ops of issue 17 (the
same ``Case`` form as ``reference.py``, which merges them into ``CASES``),
and their second-order samples for ``test_higher_order.py``.

Inputs are drawn uniform in (-2, 2), so ties have probability zero here;
ties, NaN, zeros in products and the named tuples are tested in
``test_reductions_torch.py`` and ``test_shape_torch.py``.
"""

import numpy as np


def cases(Case):
    """``{name: [Case, ...]}`` built with ``reference.Case``."""
    c = {}
    c.update(_reduction_cases(Case))
    c.update(_sorting_cases(Case))
    c.update(_shape_cases(Case))
    return c


def _lower_median(x, axis=None):
    if axis is None:
        return np.sort(x.reshape(-1))[(x.size - 1) // 2]
    return np.take(np.sort(x, axis), (x.shape[axis] - 1) // 2, axis)


def _reduction_cases(Case):
    c = {}
    c["std"] = [
        Case(lambda m, x: m.std(x), ((5,),), lambda x: np.std(x, ddof=1)),
        Case(lambda m, x: x.std(1), ((3, 4),), lambda x: np.std(x, 1, ddof=1)),
        Case(lambda m, x: m.std(x, (0, 2), keepdim=True), ((2, 3, 4),),
             lambda x: np.std(x, (0, 2), ddof=1, keepdims=True)),
        Case(lambda m, x: x.std(0, unbiased=False), ((3, 4),), lambda x: np.std(x, 0)),
        Case(lambda m, x: m.std(x, -1, correction=2), ((2, 6),),
             lambda x: np.std(x, -1, ddof=2)),
    ]
    c["var_mean"] = [Case(lambda m, x: m.var_mean(x, 1)[0] * m.var_mean(x, 1)[1],
                          ((3, 4),), lambda x: np.var(x, 1, ddof=1) * np.mean(x, 1))]
    c["std_mean"] = [
        Case(lambda m, x: m.std_mean(x, 0, keepdim=True)[0]
             + 2 * m.std_mean(x, 0, keepdim=True)[1], ((3, 4),),
             lambda x: np.std(x, 0, ddof=1, keepdims=True)
             + 2 * np.mean(x, 0, keepdims=True)),
        Case(lambda m, x: m.std_mean(x)[0], ((5,),), lambda x: np.std(x, ddof=1))]
    for n, f in (("amax", np.max), ("amin", np.min)):
        c[n] = [
            Case(lambda m, x, _n=n: getattr(m, _n)(x), ((3, 4),), f),
            Case(lambda m, x, _n=n: getattr(m, _n)(x, 1), ((3, 4),),
                 lambda x, _f=f: _f(x, 1), ids="dim"),
            Case(lambda m, x, _n=n: getattr(x, _n)((0, 2), keepdim=True),
                 ((2, 3, 4),), lambda x, _f=f: _f(x, (0, 2), keepdims=True),
                 ids="tuple-keepdim"),
            Case(lambda m, x, _n=n: getattr(m, _n)(x), ((),), f, ids="0-d"),
        ]
    c["all"] = [Case(lambda m, x: m.all(x > 0), ((3, 4),), lambda x: np.all(x > 0),
                     grad=False),
                Case(lambda m, x: (x > -1.5).all(1), ((3, 4),),
                     lambda x: np.all(x > -1.5, 1), grad=False),
                Case(lambda m, x: m.all(x > -1, (0, 2), keepdim=True), ((2, 3, 4),),
                     lambda x: np.all(x > -1, (0, 2), keepdims=True), grad=False)]
    c["any"] = [Case(lambda m, x: m.any(x > 1.5), ((3, 4),), lambda x: np.any(x > 1.5),
                     grad=False),
                Case(lambda m, x: (x > 1).any(-1, keepdim=True), ((3, 4),),
                     lambda x: np.any(x > 1, -1, keepdims=True), grad=False)]
    c["count_nonzero"] = [
        Case(lambda m, x: m.count_nonzero(x > 0), ((3, 4),),
             lambda x: np.count_nonzero(x > 0), grad=False),
        Case(lambda m, x: (x > 0).count_nonzero(0), ((3, 4),),
             lambda x: np.count_nonzero(x > 0, 0), grad=False),
        Case(lambda m, x: m.count_nonzero(x > 0, (0, 2)), ((2, 3, 4),),
             lambda x: np.count_nonzero(x > 0, (0, 2)), grad=False)]
    c["norm"] = [
        Case(lambda m, x: m.norm(x), ((3, 4),), lambda x: np.linalg.norm(x)),
        Case(lambda m, x: x.norm(dim=1), ((3, 4),), lambda x: np.linalg.norm(x, axis=1),
             ids="dim"),
        Case(lambda m, x: x.norm(1, dim=0, keepdim=True), ((3, 4),),
             lambda x: np.abs(x).sum(0, keepdims=True), ids="p1"),
        Case(lambda m, x: m.norm(x, float("inf"), 1), ((3, 4),),
             lambda x: np.abs(x).max(1), ids="inf"),
        Case(lambda m, x: m.norm(x, -float("inf")), ((3, 4),),
             lambda x: np.abs(x).min(), ids="-inf"),
        Case(lambda m, x: m.norm(x, 3, (0, 2)), ((2, 3, 4),),
             lambda x: (np.abs(x) ** 3).sum((0, 2)) ** (1 / 3), ids="p3"),
        Case(lambda m, x: x.norm("fro", (0, 1)), ((3, 4),),
             lambda x: np.linalg.norm(x), ids="fro"),
    ]
    c["cumsum"] = [
        Case(lambda m, x: m.cumsum(x, 0), ((5,),), lambda x: np.cumsum(x, 0)),
        Case(lambda m, x: x.cumsum(1), ((3, 4),), lambda x: np.cumsum(x, 1)),
        Case(lambda m, x: m.cumsum(x, dim=-1), ((2, 3, 4),),
             lambda x: np.cumsum(x, -1)),
        Case(lambda m, x: m.cumsum(x, 0), ((0, 3),), lambda x: np.cumsum(x, 0),
             ids="empty"),
    ]
    c["cumprod"] = [
        Case(lambda m, x: m.cumprod(x, 0), ((5,),), lambda x: np.cumprod(x, 0)),
        Case(lambda m, x: x.cumprod(1), ((3, 4),), lambda x: np.cumprod(x, 1)),
        Case(lambda m, x: m.cumprod(x, dim=0), ((2, 3, 4),),
             lambda x: np.cumprod(x, 0)),
    ]
    c["prod"] = [
        Case(lambda m, x: m.prod(x), ((5,),), np.prod),
        Case(lambda m, x: x.prod(1), ((3, 4),), lambda x: np.prod(x, 1)),
        Case(lambda m, x: m.prod(x, -1, keepdim=True), ((2, 3, 4),),
             lambda x: np.prod(x, -1, keepdims=True)),
        Case(lambda m, x: m.prod(x), ((),), np.prod, ids="0-d"),
        Case(lambda m, x: m.prod(x, 0), ((0, 3),), lambda x: np.prod(x, 0),
             ids="empty"),
    ]
    return c


def _sorting_cases(Case):
    c = {}
    c["sort"] = [
        Case(lambda m, x: m.sort(x).values, ((5,),), np.sort),
        Case(lambda m, x: x.sort(0)[0], ((3, 4),), lambda x: np.sort(x, 0)),
        Case(lambda m, x: m.sort(x, 1, descending=True).values, ((2, 3, 4),),
             lambda x: -np.sort(-x, 1), ids="descending"),
        Case(lambda m, x: m.sort(x, -1)[1], ((3, 4),),
             lambda x: np.argsort(x, -1), grad=False, ids="indices"),
    ]
    c["argsort"] = [
        Case(lambda m, x: m.argsort(x), ((3, 4),), lambda x: np.argsort(x, -1),
             grad=False),
        Case(lambda m, x: x.argsort(0, descending=True), ((3, 4),),
             lambda x: np.argsort(-x, 0), grad=False)]
    c["msort"] = [Case(lambda m, x: m.msort(x), ((3, 4),), lambda x: np.sort(x, 0))]
    c["topk"] = [
        Case(lambda m, x: m.topk(x, 2).values, ((3, 4),),
             lambda x: -np.sort(-x, -1)[:, :2]),
        Case(lambda m, x: x.topk(3, dim=0, largest=False)[0], ((5, 2),),
             lambda x: np.sort(x, 0)[:3], ids="smallest"),
        Case(lambda m, x: m.topk(x, 1).indices, ((3, 4),),
             lambda x: np.argmax(x, -1)[:, None], grad=False, ids="indices"),
    ]
    c["kthvalue"] = [
        Case(lambda m, x: m.kthvalue(x, 2).values, ((3, 4),),
             lambda x: np.sort(x, -1)[:, 1]),
        Case(lambda m, x: x.kthvalue(3, 0, keepdim=True)[0], ((5, 2),),
             lambda x: np.sort(x, 0)[2:3]),
    ]
    c["median"] = [
        Case(lambda m, x: m.median(x), ((3, 4),), _lower_median),
        Case(lambda m, x: m.median(x), ((5,),), _lower_median, ids="odd"),
        Case(lambda m, x: x.median(1).values, ((3, 4),),
             lambda x: _lower_median(x, 1), ids="dim"),
        Case(lambda m, x: m.median(x, 0, keepdim=True)[0], ((5, 2),),
             lambda x: _lower_median(x, 0)[None], ids="keepdim"),
    ]
    # Distinct values: every count is 1, so the mode is the minimum.
    c["mode"] = [Case(lambda m, x: m.mode(x).values, ((3, 4),), lambda x: x.min(-1)),
                 Case(lambda m, x: x.mode(0)[0], ((3, 4),), lambda x: x.min(0))]
    c["unique"] = [
        Case(lambda m, x: m.unique((x > 0).long() + (x > 1).long()), ((3, 4),),
             lambda x: np.unique((x > 0).astype(int) + (x > 1)), grad=False),
        Case(lambda m, x: m.unique(x), ((6,),), np.unique, grad=False, ids="float"),
    ]
    c["bincount"] = [
        Case(lambda m, x: m.bincount(((x + 2) * 2).long().reshape(-1)), ((3, 4),),
             lambda x: np.bincount(((x + 2) * 2).astype(int).reshape(-1)),
             grad=False),
        Case(lambda m, x: m.bincount((x > 0).long(), minlength=4), ((6,),),
             lambda x: np.bincount((x > 0).astype(int), minlength=4), grad=False,
             ids="minlength"),
    ]
    c["histc"] = [
        Case(lambda m, x: m.histc(x, 4, -2, 2), ((3, 4),),
             lambda x: np.histogram(x, 4, (-2, 2))[0], grad=False),
        Case(lambda m, x: x.histc(5), ((20,),),
             lambda x: np.histogram(x, 5)[0], grad=False, ids="data-range"),
    ]
    c["histogram"] = [
        Case(lambda m, x: m.histogram(x, 4, range=(-2.0, 2.0)).hist, ((3, 4),),
             lambda x: np.histogram(x, 4, (-2, 2))[0], grad=False),
        Case(lambda m, x: x.histogram(3, density=True)[0], ((20,),),
             lambda x: np.histogram(x, 3, density=True)[0], grad=False,
             ids="density"),
    ]
    return c


def _pieces_sum(m, parts, dim):
    return m.cat([p * (i + 1) for i, p in enumerate(parts)], dim)


def _np_pieces_sum(parts, dim):
    return np.concatenate([p * (i + 1) for i, p in enumerate(parts)], dim)


def _shape_cases(Case):
    c = {}
    c["movedim"] = [
        Case(lambda m, x: m.movedim(x, 0, -1), ((2, 3, 4),),
             lambda x: np.moveaxis(x, 0, -1)),
        Case(lambda m, x: x.moveaxis((0, 1), (2, 0)), ((2, 3, 4),),
             lambda x: np.moveaxis(x, (0, 1), (2, 0))),
    ]
    c["broadcast_to"] = [Case(lambda m, x: m.broadcast_to(x, (2, 3, 4)), ((3, 1),),
                              lambda x: np.broadcast_to(x, (2, 3, 4)))]
    c["broadcast_tensors"] = [
        Case(lambda m, a, b: m.broadcast_tensors(a, b)[0] * 2
             + m.broadcast_tensors(a, b)[1], ((3, 1), (4,)),
             lambda a, b: a * 2 + b)]
    c["flip"] = [Case(lambda m, x: m.flip(x, (0, 2)), ((2, 3, 4),),
                      lambda x: np.flip(x, (0, 2))),
                 Case(lambda m, x: x.flip(-1), ((5,),), lambda x: x[::-1])]
    c["fliplr"] = [Case(lambda m, x: m.fliplr(x), ((3, 4),), np.fliplr)]
    c["flipud"] = [Case(lambda m, x: x.flipud(), ((3, 4),), np.flipud)]
    c["roll"] = [
        Case(lambda m, x: m.roll(x, 2), ((3, 4),), lambda x: np.roll(x, 2)),
        Case(lambda m, x: x.roll((1, -2), (0, 2)), ((2, 3, 4),),
             lambda x: np.roll(x, (1, -2), (0, 2))),
        Case(lambda m, x: m.roll(x, 5, 1), ((3, 4),), lambda x: np.roll(x, 5, 1)),
    ]
    c["split"] = [
        Case(lambda m, x: _pieces_sum(m, m.split(x, 2, 1), 1), ((3, 5),),
             lambda x: _np_pieces_sum(np.split(x, [2, 4], 1), 1)),
        Case(lambda m, x: _pieces_sum(m, x.split([1, 3]), 0), ((4, 2),),
             lambda x: _np_pieces_sum(np.split(x, [1]), 0), ids="sizes"),
    ]
    c["chunk"] = [Case(lambda m, x: _pieces_sum(m, m.chunk(x, 3, -1), -1), ((2, 7),),
                       lambda x: _np_pieces_sum(np.split(x, [3, 6], -1), -1))]
    c["unbind"] = [Case(lambda m, x: m.stack([p * (i + 1) for i, p in
                                              enumerate(m.unbind(x, 1))], 0),
                        ((2, 3),), lambda x: x.T * np.arange(1, 4)[:, None])]
    c["narrow"] = [Case(lambda m, x: m.narrow(x, 1, 1, 2), ((3, 4),),
                        lambda x: x[:, 1:3]),
                   Case(lambda m, x: x.narrow(0, -2, 2), ((3, 4),), lambda x: x[1:])]
    c["hstack"] = [Case(lambda m, a, b: m.hstack([a, b]), ((3, 2), (3, 4)),
                        lambda a, b: np.hstack([a, b])),
                   Case(lambda m, a, b: m.hstack((a, b)), ((3,), ()),
                        lambda a, b: np.hstack([a, b]), ids="1-d")]
    c["vstack"] = [Case(lambda m, a, b: m.vstack([a, b]), ((4,), (2, 4)),
                        lambda a, b: np.vstack([a, b]))]
    c["dstack"] = [Case(lambda m, a, b: m.dstack([a, b]), ((3,), (1, 3)),
                        lambda a, b: np.dstack([a, b]))]
    c["tile"] = [Case(lambda m, x: m.tile(x, (2, 1, 3)), ((3, 4),),
                      lambda x: np.tile(x, (2, 1, 3))),
                 Case(lambda m, x: x.tile((2,)), ((3, 4),), lambda x: np.tile(x, 2))]
    c["repeat_interleave"] = [
        Case(lambda m, x: m.repeat_interleave(x, 2), ((3, 2),),
             lambda x: np.repeat(x, 2)),
        Case(lambda m, x: x.repeat_interleave(3, dim=1), ((3, 2),),
             lambda x: np.repeat(x, 3, 1)),
        Case(lambda m, x: m.repeat_interleave(x, m.tensor([2, 0, 1]), dim=0),
             ((3, 2),), lambda x: np.repeat(x, [2, 0, 1], 0), ids="tensor"),
    ]
    c["meshgrid"] = [
        Case(lambda m, a, b: m.stack(m.meshgrid(a, b, indexing="ij")), ((3,), (4,)),
             lambda a, b: np.stack(np.meshgrid(a, b, indexing="ij"))),
        Case(lambda m, a, b: m.stack(m.meshgrid(a, b, indexing="xy")) * 2,
             ((3,), (4,)),
             lambda a, b: np.stack(np.meshgrid(a, b, indexing="xy")) * 2, ids="xy"),
    ]
    return c


def samples(cygrad):
    """Second-order samples ``{name: [(label, fn, shapes)]}``."""
    return {
        "std": [("dim", lambda x: cygrad.std(x, 1), [(3, 4)])],
        "var_mean": [("dim", lambda x: cygrad.var_mean(x, 0)[0]
                      * cygrad.var_mean(x, 0)[1], [(3, 4)])],
        "std_mean": [("all", lambda x: cygrad.std_mean(x)[0] ** 2, [(3, 4)])],
        "amax": [("dim", lambda x: cygrad.amax(x, 1) ** 2, [(3, 4)])],
        "amin": [("all", lambda x: cygrad.amin(x) ** 2, [(3, 4)])],
        "norm": [("p2", lambda x: x.norm(dim=1), [(3, 4)]),
                 ("p3", lambda x: x.norm(3), [(3, 4)])],
        "cumsum": [("dim", lambda x: cygrad.cumsum(x, 1) ** 2, [(3, 4)])],
        "cumprod": [("dim", lambda x: cygrad.cumprod(x, 1), [(3, 4)])],
        "prod": [("dim", lambda x: cygrad.prod(x, 0), [(3, 4)])],
        "sort": [("dim", lambda x: cygrad.sort(x, 1).values ** 2, [(3, 4)])],
        "msort": [("dim0", lambda x: cygrad.msort(x) ** 2, [(3, 4)])],
        "topk": [("k2", lambda x: cygrad.topk(x, 2).values ** 2, [(3, 4)])],
        "kthvalue": [("k2", lambda x: cygrad.kthvalue(x, 2).values ** 2, [(3, 4)])],
        "median": [("all", lambda x: cygrad.median(x) ** 2, [(3, 4)])],
        "mode": [("dim", lambda x: cygrad.mode(x).values ** 2, [(3, 4)])],
        "movedim": [("m", lambda x: cygrad.movedim(x, 0, 1) ** 2, [(3, 4)])],
        "broadcast_to": [("b", lambda x: cygrad.broadcast_to(x, (2, 3, 4)) ** 2,
                          [(3, 1)])],
        "broadcast_tensors": [("b", lambda a, b: cygrad.broadcast_tensors(a, b)[0]
                               * b, [(3, 1), (4,)])],
        "flip": [("f", lambda x: cygrad.flip(x, (0,)) * x, [(3, 4)])],
        "fliplr": [("f", lambda x: cygrad.fliplr(x) * x, [(3, 4)])],
        "flipud": [("f", lambda x: cygrad.flipud(x) * x, [(3, 4)])],
        "roll": [("r", lambda x: cygrad.roll(x, 1, 1) * x, [(3, 4)])],
        "split": [("s", lambda x: cygrad.cat([p * p * (i + 1) for i, p in
                                              enumerate(cygrad.split(x, 2, 1))], 1),
                   [(3, 5)])],
        "chunk": [("c", lambda x: cygrad.cat([p * p * (i + 1) for i, p in
                                              enumerate(cygrad.chunk(x, 2))]),
                   [(3, 4)])],
        "unbind": [("u", lambda x: cygrad.stack([p * p * (i + 1) for i, p in
                                                 enumerate(cygrad.unbind(x, 1))]),
                    [(3, 4)])],
        "narrow": [("n", lambda x: cygrad.narrow(x, 1, 1, 2) ** 2, [(3, 4)])],
        "hstack": [("h", lambda a, b: cygrad.hstack([a, b]) ** 2, [(3, 2), (3, 1)])],
        "vstack": [("v", lambda a, b: cygrad.vstack([a, b]) ** 2, [(4,), (2, 4)])],
        "dstack": [("d", lambda a, b: cygrad.dstack([a, b]) ** 2, [(3,), (1, 3)])],
        "tile": [("t", lambda x: cygrad.tile(x, (2, 2)) ** 2, [(3, 4)])],
        "repeat_interleave": [("r", lambda x: cygrad.repeat_interleave(x, 2, 0) ** 2,
                               [(3, 4)])],
        "meshgrid": [("m", lambda a, b: cygrad.meshgrid(a, b, indexing="ij")[0]
                      * cygrad.meshgrid(a, b, indexing="ij")[1], [(3,), (4,)])],
    }
