"""NumPy references for cygrad's ops, and the table of op cases the tests walk.

Every case is one call written against a module ``m`` (``cygrad`` or
``torch``: the APIs match, so the same lambda runs on both), the shapes of
its tensor inputs, the interval their values are drawn from (away from kinks
and poles), and a NumPy reference computed in float64.

The op table's rows (``cygrad/_kernels/optable.py``) give their own cases:
every shape of ``UNARY_SHAPES`` or ``BINARY_SHAPES`` on the row's domain,
against the row's reference.  ``CASES[name]`` lists the cases of the
registry entry ``OPS[name]``;
``test_ops.py`` fails when an op in ``OPS`` has no case, so a new op cannot
land untested.
"""

import cases_reduce
import numpy as np
from breadth_ops import NAMES as BREADTH_NAMES
from linalg_cases import cases as _linalg_cases

from cygrad._kernels import optable

UNARY_SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 4), (0, 3)]
BINARY_SHAPES = [
    ((), ()),
    ((5,), ()),
    ((), (4,)),
    ((3, 1), (1, 4)),
    ((5,), (2, 5)),
    ((2, 3, 4), (3, 4)),
    ((0, 3), (1, 3)),
]


class Case:
    """One way of calling an op: ``fn(m, *tensors)``.

    ``ref(*arrays)`` is the NumPy value (None: no reference, torch only).
    ``grad`` is False for ops without a gradient (comparisons, argmax).
    """

    def __init__(self, fn, shapes, ref=None, domain=(-2.0, 2.0), grad=True,
                 ids=None, dtypes=("float32", "float64")):
        self.fn = fn
        self.shapes = shapes
        self.ref = ref
        self.domain = domain
        self.grad = grad
        self.ids = ids
        self.dtypes = dtypes

    def __repr__(self):
        return self.ids or "x".join(str(list(s)) for s in self.shapes)


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def _logsumexp(x, axis=None, keepdims=False):
    if x.size == 0:
        return np.full(np.sum(x, axis=axis, keepdims=keepdims).shape, -np.inf)
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _unary_call(m, name, x):
    """``m.<name>(x)``; the activation rows live in torch's nn.functional."""
    if name == "gelu_tanh":
        return m.nn.functional.gelu(x, approximate="tanh")
    fn = getattr(m, name, None) or getattr(m.nn.functional, name)
    return fn(x)


def _unary_cases(row):
    return [Case(lambda m, x, _n=row.name: _unary_call(m, _n, x), (s,), row.ref,
                 row.domain[0]) for s in UNARY_SHAPES]


def _binary_cases(row):
    dom = list(row.domain)
    cases = [Case(lambda m, a, b, _n=row.name: getattr(m, _n)(a, b), s, row.ref, dom)
             for s in BINARY_SHAPES]
    if not row.number_other:
        return cases
    # The method form with a Python scalar.
    cases.append(Case(lambda m, a, _n=row.name: getattr(a, _n)(1.5), ((3, 4),),
                      lambda a, _r=row.ref: _r(a, 1.5), (max(dom[0][0], 0.3), 2.0),
                      ids="method-scalar"))
    return cases


def _all_cases():
    c = {}
    for row in optable.UNARY:
        c[row.name] = _unary_cases(row)
    for row in optable.BINARY:
        c[row.name] = _binary_cases(row)
    # x ** 2 takes square's kernels: the operator form, integer and float 2.
    c["pow"] += [
        Case(lambda m, a: a ** 2, ((3, 4),), np.square, ids="pow-2"),
        Case(lambda m, a: m.pow(a, 2.0), ((5,),), np.square, ids="pow-2.0"),
    ]
    c["add"].append(Case(lambda m, a, b: m.add(a, b, alpha=2.5), ((3, 4), (4,)),
                         lambda a, b: a + 2.5 * b, ids="alpha"))
    c["sub"].append(Case(lambda m, a, b: m.sub(a, b, alpha=-0.5), ((3, 4), (4,)),
                         lambda a, b: a + 0.5 * b, ids="alpha"))
    c["pow"].append(Case(lambda m, a: a ** 3, ((3, 4),), lambda a: a ** 3,
                         ids="int-exponent"))
    c["pow"].append(Case(lambda m, b: 2.0 ** b, ((3, 4),), lambda b: 2.0 ** b,
                         ids="scalar-base"))
    for n, uf in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                  ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
        c[n] = [Case(lambda m, a, b, _n=n: getattr(m, _n)(a, b), s, uf, grad=False)
                for s in BINARY_SHAPES]
        c[n].append(Case(lambda m, a, _n=n: getattr(a, _n)(0.25), ((3, 4),),
                         lambda a, _u=uf: _u(a, 0.25), grad=False, ids="scalar"))
    c["isclose"] = [Case(lambda m, a, b: m.isclose(a, b, rtol=0.3, atol=0.05), s,
                         lambda a, b: np.abs(a - b) <= 0.05 + 0.3 * np.abs(b), grad=False)
                    for s in BINARY_SHAPES]
    c["clamp"] = [
        Case(lambda m, x: m.clamp(x, -0.5, 0.7), (s,), lambda x: np.clip(x, -0.5, 0.7))
        for s in UNARY_SHAPES
    ] + [
        Case(lambda m, x: m.clamp(x, min=0.1), ((3, 4),), lambda x: np.maximum(x, 0.1),
             ids="min-only"),
        Case(lambda m, x: x.clamp(max=-0.2), ((3, 4),), lambda x: np.minimum(x, -0.2),
             ids="max-only"),
        Case(lambda m, x: m.clamp(x, 0.5, -0.5), ((3, 4),),
             lambda x: np.full_like(x, -0.5), ids="min>max"),
        Case(lambda m, x, lo, hi: m.clamp(x, lo, hi), ((3, 4), (4,), (3, 1)),
             lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), ids="tensor-bounds"),
    ]
    c["clone"] = [Case(lambda m, x: m.clone(x) * 1.0, (s,), lambda x: x)
                  for s in UNARY_SHAPES]
    c["contiguous"] = [Case(lambda m, x: x.t().contiguous() * 1.0, ((3, 4),),
                            lambda x: x.T)]
    c["sum"] = _reduce_cases("sum", np.sum)
    c["mean"] = _reduce_cases("mean", np.mean, empty=False)
    c["var"] = [
        Case(lambda m, x: m.var(x), ((5,),), lambda x: np.var(x, ddof=1)),
        Case(lambda m, x: m.var(x, 1), ((3, 4),), lambda x: np.var(x, 1, ddof=1)),
        Case(lambda m, x: m.var(x, (0, 2), keepdim=True), ((2, 3, 4),),
             lambda x: np.var(x, (0, 2), ddof=1, keepdims=True)),
        Case(lambda m, x: x.var(0, unbiased=False), ((3, 4),),
             lambda x: np.var(x, 0)),
        Case(lambda m, x: m.var(x, -1, correction=2), ((2, 6),),
             lambda x: np.var(x, -1, ddof=2)),
        Case(lambda m, x: m.var(x, 0), ((4, 1, 3),), lambda x: np.var(x, 0, ddof=1)),
    ]
    c["logsumexp"] = [
        Case(lambda m, x: m.logsumexp(x, 0), ((5,),), lambda x: _logsumexp(x, 0)),
        Case(lambda m, x: m.logsumexp(x, 1), ((3, 4),), lambda x: _logsumexp(x, 1)),
        Case(lambda m, x: x.logsumexp(0, keepdim=True), ((3, 4),),
             lambda x: _logsumexp(x, 0, True)),
        Case(lambda m, x: m.logsumexp(x, (0, 2)), ((2, 3, 4),),
             lambda x: _logsumexp(x, (0, 2))),
        Case(lambda m, x: m.logsumexp(x * 100, -1), ((3, 4),),
             lambda x: _logsumexp(x * 100, -1), ids="large"),
        Case(lambda m, x: m.logsumexp(x, 1), ((3, 0),), lambda x: _logsumexp(x, 1),
             ids="empty"),
    ]
    c["softmax"] = _softmax_cases("softmax", _softmax)
    c["log_softmax"] = _softmax_cases("log_softmax", _log_softmax)
    for n, f, af in (("max", np.max, np.argmax), ("min", np.min, np.argmin)):
        c[n] = [
            Case(lambda m, x, _n=n: getattr(m, _n)(x), (s,), f)
            for s in ((), (5,), (3, 4), (2, 3, 4))
        ] + [
            Case(lambda m, x, _n=n: getattr(m, _n)(x, 1)[0], ((3, 4),),
                 lambda x, _f=f: _f(x, 1), ids="dim-values"),
            Case(lambda m, x, _n=n: getattr(m, _n)(x, 0, keepdim=True).values,
                 ((2, 3, 4),), lambda x, _f=f: _f(x, 0, keepdims=True),
                 ids="keepdim-values"),
            Case(lambda m, x, _n=n: getattr(m, _n)(x, -1)[1], ((3, 4),),
                 lambda x, _f=af: _f(x, -1), grad=False, ids="dim-indices"),
            Case(lambda m, a, b, _n=n: getattr(m, _n)(a, b), ((3, 1), (1, 4)),
                 np.maximum if n == "max" else np.minimum, ids="binary"),
        ]
    c["argmax"] = [Case(lambda m, x: m.argmax(x), ((3, 4),),
                        lambda x: np.argmax(x), grad=False),
                   Case(lambda m, x: x.argmax(1, keepdim=True), ((3, 4),),
                        lambda x: np.argmax(x, 1)[:, None], grad=False)]
    c["argmin"] = [Case(lambda m, x: m.argmin(x), ((3, 4),),
                        lambda x: np.argmin(x), grad=False),
                   Case(lambda m, x: x.argmin(0), ((3, 4),),
                        lambda x: np.argmin(x, 0), grad=False)]
    c["matmul"] = [
        Case(lambda m, a, b: m.matmul(a, b), s, np.matmul)
        for s in (((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)),
                  ((2, 3, 4), (4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)),
                  ((2, 1, 3, 4), (5, 4, 2)), ((0, 4), (4, 3)), ((3, 0), (0, 2)))
    ] + [Case(lambda m, a, b: a @ b, ((3, 4), (4, 2)), np.matmul, ids="operator")]
    c["where"] = [
        Case(lambda m, a, b: m.where(a > 0, a, b), s,
             lambda a, b: np.where(a > 0, a, b)) for s in BINARY_SHAPES
    ] + [Case(lambda m, a: m.where(a > 0, a, 0.0), ((3, 4),),
              lambda a: np.where(a > 0, a, 0.0), ids="scalar-other")]
    c.update(_shape_cases())
    return c


def _reduce_cases(name, ref, empty=True):
    cases = [
        Case(lambda m, x, _n=name: getattr(m, _n)(x), (s,), ref)
        for s in ((), (5,), (3, 4), (2, 3, 4))
    ] + [
        Case(lambda m, x, _n=name: getattr(m, _n)(x, 1), ((3, 4),),
             lambda x, _r=ref: _r(x, 1), ids="dim"),
        Case(lambda m, x, _n=name: getattr(x, _n)(-1, keepdim=True), ((2, 3, 4),),
             lambda x, _r=ref: _r(x, -1, keepdims=True), ids="keepdim"),
        Case(lambda m, x, _n=name: getattr(m, _n)(x, (0, 2)), ((2, 3, 4),),
             lambda x, _r=ref: _r(x, (0, 2)), ids="tuple"),
    ]
    if empty:
        cases.append(Case(lambda m, x, _n=name: getattr(m, _n)(x, 0), ((0, 3),),
                          lambda x, _r=ref: _r(x, 0), ids="empty"))
    return cases


def _softmax_cases(name, ref):
    return [
        Case(lambda m, x, _n=name: getattr(m, _n)(x, 0), ((5,),),
             lambda x, _r=ref: _r(x, 0)),
        Case(lambda m, x, _n=name: getattr(m, _n)(x, 1), ((3, 4),),
             lambda x, _r=ref: _r(x, 1)),
        Case(lambda m, x, _n=name: getattr(x, _n)(0), ((3, 4),),
             lambda x, _r=ref: _r(x, 0), ids="dim0"),
        Case(lambda m, x, _n=name: getattr(m, _n)(x, 1), ((2, 3, 4),),
             lambda x, _r=ref: _r(x, 1), ids="middle"),
        Case(lambda m, x, _n=name: getattr(m, _n)(x * 100, -1), ((3, 4),),
             lambda x, _r=ref: _r(x * 100, -1), ids="large"),
        Case(lambda m, x, _n=name: getattr(m, _n)(x, 0), ((0, 3),),
             lambda x, _r=ref: _r(x, 0) if x.size else x, ids="empty"),
    ]


def _shape_cases():
    c = {}
    c["reshape"] = [
        Case(lambda m, x: m.reshape(x, (4, 3)) * 1.0, ((3, 4),),
             lambda x: x.reshape(4, 3)),
        Case(lambda m, x: x.reshape(-1, 2), ((2, 3, 4),), lambda x: x.reshape(-1, 2)),
        Case(lambda m, x: x.t().reshape(12), ((3, 4),), lambda x: x.T.reshape(12),
             ids="copy"),
        Case(lambda m, x: x.reshape(()), ((1,),), lambda x: x.reshape(())),
    ]
    c["view"] = [Case(lambda m, x: x.view(2, 6), ((3, 4),), lambda x: x.reshape(2, 6)),
                 Case(lambda m, x: x.view(-1), ((2, 3, 4),), lambda x: x.reshape(-1))]
    c["permute"] = [Case(lambda m, x: x.permute(2, 0, 1), ((2, 3, 4),),
                         lambda x: x.transpose(2, 0, 1)),
                    Case(lambda m, x: m.permute(x, (1, 0)), ((3, 4),), lambda x: x.T)]
    c["transpose"] = [Case(lambda m, x: m.transpose(x, 0, 2), ((2, 3, 4),),
                           lambda x: x.swapaxes(0, 2)),
                      Case(lambda m, x: x.transpose(-1, 0), ((3, 4),), lambda x: x.T)]
    c["expand"] = [Case(lambda m, x: x.expand(3, 4), ((3, 1),),
                        lambda x: np.broadcast_to(x, (3, 4))),
                   Case(lambda m, x: x.expand(2, -1, 4), ((3, 1),),
                        lambda x: np.broadcast_to(x, (2, 3, 4)))]
    c["squeeze"] = [Case(lambda m, x: x.squeeze(), ((3, 1, 4, 1),),
                         lambda x: x.squeeze()),
                    Case(lambda m, x: m.squeeze(x, 1), ((3, 1, 4),),
                         lambda x: x.squeeze(1)),
                    Case(lambda m, x: x.squeeze(0), ((3, 4),), lambda x: x,
                         ids="no-op")]
    c["unsqueeze"] = [Case(lambda m, x: x.unsqueeze(0), ((3, 4),), lambda x: x[None]),
                      Case(lambda m, x: m.unsqueeze(x, -1), ((3, 4),),
                           lambda x: x[..., None])]
    c["flatten"] = [Case(lambda m, x: x.flatten(), ((2, 3, 4),),
                         lambda x: x.reshape(-1)),
                    Case(lambda m, x: m.flatten(x, 1), ((2, 3, 4),),
                         lambda x: x.reshape(2, 12)),
                    Case(lambda m, x: x.flatten(), ((),), lambda x: x.reshape(1))]
    c["cat"] = [
        Case(lambda m, a, b: m.cat([a, b]), ((2, 3), (4, 3)),
             lambda a, b: np.concatenate([a, b])),
        Case(lambda m, a, b: m.cat((a, b), dim=-1), ((2, 3), (2, 1)),
             lambda a, b: np.concatenate([a, b], -1)),
        Case(lambda m, a, b, c: m.cat([a, b, c], 1), ((2, 0, 4), (2, 3, 4), (2, 1, 4)),
             lambda a, b, c: np.concatenate([a, b, c], 1), ids="three-with-empty"),
    ]
    c["stack"] = [
        Case(lambda m, a, b: m.stack([a, b]), ((2, 3), (2, 3)),
             lambda a, b: np.stack([a, b])),
        Case(lambda m, a, b: m.stack([a, b], dim=-1), ((2, 3), (2, 3)),
             lambda a, b: np.stack([a, b], -1)),
        Case(lambda m, a, b: m.stack((a, b), 0), ((), ()),
             lambda a, b: np.stack([a, b]), ids="0-d"),
    ]
    c["getitem"] = [
        Case(lambda m, x: x[1], ((3, 4),), lambda x: x[1]),
        Case(lambda m, x: x[:, 1:4:2], ((3, 5),), lambda x: x[:, 1:4:2]),
        Case(lambda m, x: x[None, ..., -1], ((2, 3, 4),), lambda x: x[None, ..., -1]),
        Case(lambda m, x: x[[0, 2, 0, 0]], ((3, 4),), lambda x: x[[0, 2, 0, 0]],
             ids="repeated"),
        Case(lambda m, x: x[:, [1, 1, 3]], ((3, 4),), lambda x: x[:, [1, 1, 3]]),
        Case(lambda m, x: x[x > 0], ((3, 4),), lambda x: x[x > 0], ids="mask"),
        Case(lambda m, x: x[[0, 2], [1, 1]], ((3, 4),), lambda x: x[[0, 2], [1, 1]],
             ids="pairs"),
    ]
    c.update(_indexing_cases())
    return c


def _indexing_cases():
    from reference_indexing import indexing_cases   # it imports Case from here
    return indexing_cases()


def _math_cases():
    """The math ops outside the op table, and x ** k's special exponents."""
    c = {}
    lt0 = lambda x: x < 0  # noqa: E731 - where log(x) is NaN
    c["isnan"] = [Case(lambda m, x: m.isnan(m.log(x)), (s,), lt0, grad=False)
                  for s in UNARY_SHAPES]
    # 1 / floor(x) is infinite for 0 <= x < 1.
    c["isinf"] = [Case(lambda m, x: (1 / x.floor()).isinf(), (s,),
                       lambda x: (x >= 0) & (x < 1), grad=False) for s in UNARY_SHAPES]
    c["isfinite"] = [Case(lambda m, x: m.isfinite(m.log(x) / x.floor()), ((3, 4),),
                          lambda x: x >= 1, grad=False)]
    c["nan_to_num"] = [
        Case(lambda m, x: m.nan_to_num(x), ((3, 4),), lambda x: x),
        Case(lambda m, x: m.nan_to_num(m.log(x), nan=0.5), ((3, 4),),
             lambda x: np.where(x > 0, np.log(np.abs(x)), 0.5), ids="nan"),
        Case(lambda m, x: (x / x.floor()).nan_to_num(posinf=7.0, neginf=-7.0),
             ((3, 4),), lambda x: np.where((x >= 0) & (x < 1), 7.0,
                                           x / np.where(np.floor(x) == 0, 1,
                                                        np.floor(x))),
             grad=False, ids="inf"),  # x / 0's own gradient is NaN
    ]
    for n, uf in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                  ("logical_xor", np.logical_xor)):
        c[n] = [Case(lambda m, a, b, _n=n: getattr(m, _n)(a > 0, b), s,
                     lambda a, b, _u=uf: _u(a > 0, b != 0), grad=False)
                for s in BINARY_SHAPES]
    c["logical_not"] = [Case(lambda m, x: m.logical_not(x > 0), (s,), lambda x: x <= 0,
                             grad=False) for s in UNARY_SHAPES]
    for n, uf in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                  ("bitwise_xor", np.bitwise_xor)):
        c[n] = [Case(lambda m, a, b, _n=n: getattr(m, _n)(a > 0, b > 0.5), s,
                     lambda a, b, _u=uf: _u(a > 0, b > 0.5), grad=False)
                for s in BINARY_SHAPES]
    c["lerp"] = [
        Case(lambda m, a, b: m.lerp(a, b, 0.3), s, lambda a, b: a + 0.3 * (b - a))
        for s in BINARY_SHAPES
    ] + [
        Case(lambda m, a, b: a.lerp(b, 0.8), ((3, 4), (4,)),
             lambda a, b: a + 0.8 * (b - a), ids="large-weight"),
        Case(lambda m, a, b, w: m.lerp(a, b, w), ((3, 4), (4,), (3, 1)),
             lambda a, b, w: a + w * (b - a), [(-2.0, 2.0), (-2.0, 2.0), (-0.5, 1.5)],
             ids="tensor-weight"),
    ]
    c["addcmul"] = [
        Case(lambda m, a, b, d: m.addcmul(a, b, d), ((3, 4), (4,), (3, 1)),
             lambda a, b, d: a + b * d),
        Case(lambda m, a, b, d: a.addcmul(b, d, value=-0.5), ((2, 3), (2, 3), ()),
             lambda a, b, d: a - 0.5 * b * d, ids="value"),
    ]
    c["addcdiv"] = [
        Case(lambda m, a, b, d: m.addcdiv(a, b, d), ((3, 4), (4,), (3, 1)),
             lambda a, b, d: a + b / d, [(-2.0, 2.0), (-2.0, 2.0), (0.5, 2.0)]),
        Case(lambda m, a, b, d: a.addcdiv(b, d, value=2.5), ((2, 3), (2, 3), ()),
             lambda a, b, d: a + 2.5 * b / d, [(-2.0, 2.0), (-2.0, 2.0), (0.5, 2.0)],
             ids="value"),
    ]
    # x ** k with the exponents torch special-cases (their own kernels).
    for k in (0, 1, 3, 3.0, -1, -2, 0.5, -0.5):
        c.setdefault("pow", []).append(
            Case(lambda m, a, _k=k: a ** _k, ((3, 4),), lambda a, _k=k: a ** _k,
                 (0.3, 2.0), ids=f"special-exponent-{k}"))
    c["pow"].append(Case(lambda m, a: a ** 3, ((3, 4),), lambda a: a ** 3,
                         ids="cube-negative-base"))
    c["pow"].append(Case(lambda m, a: m.pow(a, -2), ((3, 4),), lambda a: a ** -2.0,
                         (-2.0, -0.3), ids="recip-square-negative-base"))
    c["div"] = [
        Case(lambda m, a, b: m.div(a, b, rounding_mode="trunc"), s,
             lambda a, b: np.trunc(a / b), [(-3.0, 3.0), (0.5, 3.0)], ids="trunc")
        for s in BINARY_SHAPES[:3]
    ] + [
        Case(lambda m, a, b: m.div(a, b, rounding_mode="floor"), s,
             lambda a, b: np.floor_divide(a, b), [(-3.0, 3.0), (0.5, 3.0)],
             ids="floor") for s in BINARY_SHAPES[:3]
    ] + [
        Case(lambda m, a: a % 1.5, ((3, 4),), lambda a: np.remainder(a, 1.5),
             ids="mod-operator"),
        Case(lambda m, a: 2.5 // a, ((3, 4),), lambda a: np.floor_divide(2.5, a),
             (0.5, 3.0), ids="rfloordiv-operator"),
    ]
    return c


CASES = _all_cases()
CASES.update(_linalg_cases(Case))
CASES.update(cases_reduce.cases(Case))   # reductions, sorting, shape ops (issue 17)
for _name, _cases in _math_cases().items():
    CASES.setdefault(_name, []).extend(_cases)

# Registry entries that are tested elsewhere, with the reason.
# ops whose results are Python values, tested in their own files
ELSEWHERE = {"allclose": "test_closeness.py", "equal": "test_closeness.py"}
# the long tail of torch's API, checked against torch in test_api_breadth.py
ELSEWHERE.update(dict.fromkeys(BREADTH_NAMES, "test_api_breadth.py"))
# triangular solves and LU, checked against torch in test_linalg_more.py
ELSEWHERE.update(dict.fromkeys(["triangular_solve", "lu_unpack", "lu", "lu_solve"],
                               "test_linalg_more.py"))
ELSEWHERE["gradient"] = "test_misc_names.py"
