"""What one call of an everyday op costs, at the sizes of small models' steps.

A training step of a makemore-sized model is hundreds of calls on arrays of
a few thousand elements, where the fixed cost of a call (argument parsing,
dispatch, the result tensor, the graph node) weighs as much as the loop.  Each
case here is one call, written once against ``T`` (cygrad or torch), on
inputs that need a gradient where the op is usually differentiated, so the
node is built as in training; backward is not run.  ``test_agree_call``
checks that both give the same values.

``python -m benchmarks.bench_calls`` prints the cases interleaved (round
after round, median ratios), the form the per-call tables of RESULTS.md use.
"""

import numpy as np
import pytest

from benchmarks import SIDES, interleaved, need, pick, run, sides_agree, tag

F32 = np.float32
SMALL, LARGE = pick(1_000, 16), pick(100_000, 64)


def _data(n, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(F32)


def _leaf(T, a):
    return T.tensor(a, requires_grad=True)


def _reduce(op, n):
    def build(T):
        x = _leaf(T, _data(n))
        return lambda: getattr(x, op)()
    return build


def _clamp(n):
    def build(T):
        x = _leaf(T, _data(n))
        return lambda: T.clamp(x, -0.5, 0.5)
    return build


def _lerp(n):
    def build(T):
        x, y = _leaf(T, _data(n)), _leaf(T, _data(n, 1))
        return lambda: T.lerp(x, y, 0.3)
    return build


def _addcmul(n):
    def build(T):
        s, a, b = (_leaf(T, _data(n, k)) for k in range(3))
        return lambda: T.addcmul(s, a, b, value=0.1)
    return build


def _embedding_rows(T):
    """``C[Xb]``: makemore's lookup of 32 x 3 token rows in a 27 x 10 table."""
    rng = np.random.default_rng(0)
    table = _leaf(T, rng.standard_normal((27, 10)).astype(F32))
    idx = T.tensor(rng.integers(0, 27, (32, 3)))
    return lambda: table[idx]


def _pick_targets(T):
    """``logits[T.arange(32), Y]``: the log-likelihood of each target."""
    rng = np.random.default_rng(0)
    logits = _leaf(T, rng.standard_normal((32, 27)).astype(F32))
    y = T.tensor(rng.integers(0, 27, 32))
    return lambda: logits[T.arange(32), y]


def _square(op):
    def build(T):
        x = _leaf(T, _data(64 * 64).reshape(64, 64))
        return lambda: getattr(T, op)(x)
    return build


def _median(T):
    x = _leaf(T, _data(SMALL))
    return lambda: x.median()


def _kthvalue(T):
    x = _leaf(T, _data(32 * 32).reshape(32, 32))
    return lambda: T.kthvalue(x, 5, 1).values


def _joined(op):
    def build(T):
        parts = [_leaf(T, _data(256, k).reshape(16, 16)) for k in range(4)]
        return lambda: getattr(T, op)(parts)
    return build


def _logits(T):
    """A makemore-sized batch of logits, (32, 27), that needs a gradient."""
    return _leaf(T, _data(32 * 27).reshape(32, 27))


def _column(T):
    x = _logits(T)
    return lambda: x[:, 0]


def _row(T):
    x = _logits(T)
    return lambda: x[3]


def _method(name, *args, **kwargs):
    def build(T):
        x = _logits(T)
        return lambda: getattr(x, name)(*args, **kwargs)
    return build


def _max_values(T):
    x = _logits(T)
    return lambda: x.max(1).values


def _softmax(T):
    x = _logits(T)
    return lambda: T.nn.functional.softmax(x, 1)


def _cross_entropy(T):
    x = _logits(T)
    y = T.tensor(np.random.default_rng(0).integers(0, 27, 32))
    return lambda: T.nn.functional.cross_entropy(x, y)


CASES = {
    f"prod_{SMALL}": _reduce("prod", SMALL),
    f"prod_{LARGE}": _reduce("prod", LARGE),
    f"argmax_{SMALL}": _reduce("argmax", SMALL),
    f"min_{SMALL}": _reduce("min", SMALL),
    f"clamp_{LARGE}": _clamp(LARGE),
    f"lerp_{SMALL}": _lerp(SMALL),
    f"lerp_{LARGE}": _lerp(LARGE),
    f"addcmul_{SMALL}": _addcmul(SMALL),
    f"addcmul_{LARGE}": _addcmul(LARGE),
    "embedding_rows": _embedding_rows,
    "pick_targets": _pick_targets,
    "tril_64x64": _square("tril"),
    "triu_64x64": _square("triu"),
    "diag_64x64": _square("diag"),
    f"median_{SMALL}": _median,
    "kthvalue_32x32": _kthvalue,
    "cat_4x16x16": _joined("cat"),
    "stack_4x16x16": _joined("stack"),
    "column_32x27": _column,
    "row_32x27": _row,
    "sum_dim1_32x27": _method("sum", 1),
    "mean_dim0_keepdim_32x27": _method("mean", 0, keepdim=True),
    "max_dim1_32x27": _max_values,
    "view_flat_32x27": _method("view", -1),
    "clamp_min_32x27": _method("clamp", 0),
    "softmax_32x27": _softmax,
    "cross_entropy_32x27": _cross_entropy,
}


def make(lib, name):
    return CASES[name](need(lib))


@pytest.mark.parametrize("lib", SIDES)
@pytest.mark.parametrize("name", list(CASES))
def test_call(benchmark, lib, name):
    step = make(lib, name)
    step()
    tag(benchmark, f"call-{name}", lib)
    run(benchmark, step)


@pytest.mark.parametrize("name", list(CASES))
def test_agree_call(name):
    sides_agree(make, name, rtol=1e-6, atol=1e-6)


if __name__ == "__main__":
    import benchmarks.conftest as _conf  # the same thread policy as the suite

    _conf._apply_threads(__import__("benchmarks").requested_threads())
    interleaved(list(CASES), make)
