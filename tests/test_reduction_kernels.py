"""The row kernels of reductions.pyx and cross-entropy of loss.pyx against NumPy.

The kernels run vectorized helpers (a polynomial exp, 8-lane sums, a 4-vector
max) whose main loops take blocks of 8 or 16 elements and leave a scalar
tail, so every check runs on row lengths around those block sizes as well as
on long rows, in float32 and float64, against float64 NumPy references.
"""

import numpy as np
import pytest

from cygrad._kernels import loss as L
from cygrad._kernels import reductions as R

DTYPES = [np.float32, np.float64]
TOL = {
    np.float32: {"rtol": 1e-5, "atol": 1e-6},
    np.float64: {"rtol": 1e-12, "atol": 1e-14},
}
# around the block sizes of the helpers: 8 (sums, exp), 16 (float max)
LENGTHS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000]


def _rows(dtype, n, rows=5, scale=3.0, seed=0):
    rng = np.random.default_rng(seed + n)
    return (scale * rng.standard_normal((rows, n))).astype(dtype)


def _softmax64(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _lse64(x):
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_accuracy_over_the_whole_range(dtype):
    # logsumexp_bwd with lse = 0 and g = 1 is exp(x) itself, for x <= 0.
    lo = -87.0 if dtype == np.float32 else -708.0
    x = np.linspace(lo, 0.0, 100_003).astype(dtype)[None, :]
    out = np.empty_like(x)
    R.logsumexp_bwd(x, np.zeros(1, dtype), np.ones(1, dtype), out)
    want = np.exp(x.astype(np.float64))
    rel = np.abs(out - want) / want
    assert rel.max() < (4e-7 if dtype == np.float32 else 1e-15)


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_underflow_is_zero_and_nan_stays(dtype):
    x = np.array(
        [[-1e30, -np.inf, -800.0, -100.0, -90.0, np.nan, 0.0, -1.0, -np.inf]], dtype
    )
    out = np.empty_like(x)
    R.logsumexp_bwd(x, np.zeros(1, dtype), np.ones(1, dtype), out)
    want = np.exp(x.astype(np.float64)).astype(dtype)
    small = np.finfo(dtype).tiny
    # below the smallest normal number the result is flushed to 0
    np.testing.assert_array_equal(out[0, :3], 0)
    assert np.isnan(out[0, 5]) and out[0, 6] == 1 and out[0, 8] == 0
    for got, w in zip(out[0, 3:5], want[0, 3:5]):
        assert got == 0 if w < small else abs(got - w) <= 1e-6 * w


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("given_max", [False, True])
def test_softmax_and_log_softmax_rows(dtype, n, given_max):
    x = _rows(dtype, n)
    rowmax = x.max(axis=1) if given_max else None
    y = np.empty_like(x)
    R.softmax_fwd(x, y, False, rowmax)
    np.testing.assert_allclose(y, _softmax64(x), **TOL[dtype])
    ly = np.empty_like(x)
    R.softmax_fwd(x, ly, True, rowmax)
    np.testing.assert_allclose(ly, np.log(_softmax64(x)), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_softmax_backward_rows(dtype, n):
    x = _rows(dtype, n)
    g = _rows(dtype, n, seed=1)
    p = _softmax64(x)
    g64 = g.astype(np.float64)
    y = p.astype(dtype)
    out = np.empty_like(x)
    R.softmax_bwd(y, g, out, False)
    want = p * (g64 - (g64 * p).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(out, want, **TOL[dtype])
    R.softmax_bwd(np.log(p).astype(dtype), g, out, True)
    want = g64 - p * g64.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out, want, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_logsumexp_rows(dtype, n):
    x = _rows(dtype, n)
    out = np.empty(x.shape[0], dtype)
    R.logsumexp_fwd(x, out, None)
    np.testing.assert_allclose(out, _lse64(x), **TOL[dtype])
    g = _rows(dtype, x.shape[0], rows=1, seed=2)[0]
    grad = np.empty_like(x)
    R.logsumexp_bwd(x, out, g, grad)
    want = g[:, None].astype(np.float64) * _softmax64(x)
    np.testing.assert_allclose(grad, want, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 5, 16, 17, 40])
@pytest.mark.parametrize("where", [0, "mid", -1])
def test_nan_anywhere_in_a_row_gives_nan(dtype, n, where):
    x = _rows(dtype, n, rows=3)
    pos = n // 2 if where == "mid" else where
    x[1, pos] = np.nan
    y = np.empty_like(x)
    R.softmax_fwd(x, y, False, None)
    assert np.isnan(y[1]).all()
    assert not np.isnan(y[[0, 2]]).any()
    lse = np.empty(3, dtype)
    R.logsumexp_fwd(x, lse, None)
    assert np.isnan(lse[1]) and not np.isnan(lse[[0, 2]]).any()
    per = np.empty(3, dtype)
    L.cross_entropy_fwd(x, np.zeros(3, np.int64), np.empty(0, dtype), -100, per, lse)
    assert np.isnan(per[1]) and not np.isnan(per[[0, 2]]).any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_infinite_entries(dtype):
    inf = np.inf
    x = np.array(
        [
            [-inf, 0.0, 1.0] + [-inf] * 20,  # -inf entries get exactly 0
            [1e4, 0.0, -1e4] + [0.0] * 20,  # huge logits stay finite
        ],
        dtype,
    )
    y = np.empty_like(x)
    R.softmax_fwd(x, y, False, None)
    assert (y[0, 3:] == 0).all() and y[0, 0] == 0
    np.testing.assert_allclose(y, _softmax64(x), **TOL[dtype])
    lse = np.empty(2, dtype)
    R.logsumexp_fwd(x, lse, None)
    np.testing.assert_allclose(lse, _lse64(x), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c", [1, 2, 7, 8, 9, 16, 17, 100, 1000])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_rows(dtype, c, weighted):
    n = 6
    rng = np.random.default_rng(c)
    x = (2 * rng.standard_normal((n, c))).astype(dtype)
    t = rng.integers(0, c, n).astype(np.int64)
    t[2] = -100  # ignored row
    w = rng.uniform(0.5, 2.0, c).astype(dtype) if weighted else np.empty(0, dtype)
    per = np.empty(n, dtype)
    lse = np.empty(n, dtype)
    total, wsum = L.cross_entropy_fwd(x, t, w, -100, per, lse)
    keep = t != -100
    ts = np.where(keep, t, 0)
    wr = np.where(keep, w.astype(np.float64)[ts] if weighted else 1.0, 0.0)
    want_lse = _lse64(x)
    want = wr * (want_lse - x.astype(np.float64)[np.arange(n), ts])
    np.testing.assert_allclose(lse, want_lse, **TOL[dtype])
    np.testing.assert_allclose(per, want, **TOL[dtype])
    np.testing.assert_allclose(total, want.sum(), **TOL[dtype])
    assert wsum == pytest.approx(wr.sum(), rel=1e-6)
    grad = np.full((n, c), np.nan, dtype)
    g = np.array([0.25], dtype)
    L.cross_entropy_bwd(x, t, w, -100, lse, g, grad)
    onehot = np.zeros((n, c))
    onehot[np.arange(n), ts] = 1
    want_grad = 0.25 * wr[:, None] * (_softmax64(x) - onehot)
    np.testing.assert_allclose(grad, want_grad, **TOL[dtype])
    assert (grad[2] == 0).all()


def test_cross_entropy_huge_logits_do_not_overflow():
    x = np.array([[1e4, 0.0, -1e4], [-1e4, 1e4, 1e4]], np.float32)
    t = np.array([0, 2], np.int64)
    per = np.empty(2, np.float32)
    lse = np.empty(2, np.float32)
    L.cross_entropy_fwd(x, t, np.empty(0, np.float32), -100, per, lse)
    np.testing.assert_allclose(per, [0.0, np.log(2.0)], atol=1e-6)
    grad = np.empty_like(x)
    L.cross_entropy_bwd(
        x, t, np.empty(0, np.float32), -100, lse, np.ones(1, np.float32), grad
    )
    # lse is kept in the input's dtype: float32's ulp at 1e4 is 1e-3, which
    # bounds the error of exp(x - lse) here (torch's is smaller).
    np.testing.assert_allclose(grad, [[0, 0, 0], [0, 0.5, -0.5]], atol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, *LENGTHS])
def test_sum_rows(dtype, n):
    x = _rows(dtype, n)
    out = np.empty(x.shape[0], dtype)
    R.sum_fwd(x, out)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("is_min", [False, True])
def test_extreme_rows_match_numpy(dtype, n, is_min):
    # small integers: many ties, and the first index of a tie must win
    x = np.random.default_rng(n).integers(-3, 4, (7, n)).astype(dtype)
    vals = np.empty(7, dtype)
    idx = np.empty(7, np.int64)
    R.extreme_dim_fwd(x, vals, idx, is_min)
    want = x.argmin(axis=1) if is_min else x.argmax(axis=1)
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(vals, x[np.arange(7), want])
    g = np.arange(1, 8, dtype=dtype)
    out = np.full_like(x, np.nan)
    R.extreme_dim_bwd(idx, g, out)
    expect = np.zeros_like(x)
    expect[np.arange(7), want] = g
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 5, 16, 17, 40])
@pytest.mark.parametrize("is_min", [False, True])
def test_extreme_rows_nan_and_inf(dtype, n, is_min):
    x = _rows(dtype, n, rows=4)
    x[0, n // 2] = np.nan  # the first NaN wins (torch)
    x[0, n - 1] = np.nan
    x[1, n - 1] = np.inf
    x[2, 0] = -np.inf
    x[3, :] = -np.inf
    vals = np.empty(4, dtype)
    idx = np.empty(4, np.int64)
    R.extreme_dim_fwd(x, vals, idx, is_min)
    assert np.isnan(vals[0]) and idx[0] == n // 2
    want = x[1:].argmin(axis=1) if is_min else x[1:].argmax(axis=1)
    np.testing.assert_array_equal(idx[1:], want)
    np.testing.assert_array_equal(vals[1:], x[np.arange(1, 4), want])


def test_extreme_rows_reject_bad_input():
    x = np.zeros((2, 0), np.float32)
    with pytest.raises(ValueError):
        R.extreme_dim_fwd(x, np.empty(2, np.float32), np.empty(2, np.int64))
    with pytest.raises(IndexError):
        R.extreme_dim_bwd(
            np.array([0, 3]), np.ones(2, np.float32), np.empty((2, 3), np.float32)
        )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 7, 8, 9, 1023, 1024, 1025, 3000])
def test_bce_and_mse_kernels_across_chunks(dtype, n):
    # the kernels run 1024-element chunks; logits span the whole range
    rng = np.random.default_rng(n)
    x = np.concatenate(
        [[-100.0, -30.0, -1e-8, 0.0, 1e-8, 30.0, 100.0], 8 * rng.standard_normal(n)]
    )[:n].astype(dtype)
    y = rng.uniform(0, 1, n).astype(dtype)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    out = np.empty(n, dtype)
    total = L.bce_logits_fwd(x, y, out)
    want = np.maximum(x64, 0) - x64 * y64 + np.log1p(np.exp(-np.abs(x64)))
    np.testing.assert_allclose(out, want, **TOL[dtype])
    assert total == pytest.approx(want.sum(), rel=TOL[dtype]["rtol"])
    for g in (np.array([0.5], dtype), rng.standard_normal(n).astype(dtype)):
        gx = np.empty(n, dtype)
        L.bce_logits_bwd(x, y, g, gx)
        sig = 0.5 * (1 + np.tanh(x64 / 2))
        np.testing.assert_allclose(gx, g * (sig - y64), **TOL[dtype])
        L.mse_bwd(x, y, g, gx)
        np.testing.assert_allclose(gx, 2 * g * (x64 - y64), **TOL[dtype])
    total = L.mse_fwd(x, y, out)
    np.testing.assert_allclose(out, (x64 - y64) ** 2, **TOL[dtype])
    assert total == pytest.approx(((x64 - y64) ** 2).sum(), rel=TOL[dtype]["rtol"])


@pytest.mark.parametrize("dtype", DTYPES)
def test_bce_kernels_at_infinities_and_nan(dtype):
    x = np.array([-np.inf, np.inf, np.nan, 0.0], dtype)
    y = np.array([0.0, 1.0, 0.5, 0.5], dtype)
    gx = np.empty(4, dtype)
    L.bce_logits_bwd(x, y, np.ones(1, dtype), gx)
    np.testing.assert_array_equal(gx[[0, 1, 3]], [0.0, 0.0, 0.0])
    assert np.isnan(gx[2])


# --- the bias kernels of reduce.pyx: a column sum (the gradient) and a row add


def _column_sums_in_order(x):
    """Each column summed in double, row after row (the kernel's order)."""
    acc = np.zeros(x.shape[-1])
    for row in x.reshape(-1, x.shape[-1]):
        acc = acc + row.astype(np.float64)
    return acc.astype(x.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", [1, 3, 4, 5, 8, 13, 512])
@pytest.mark.parametrize("k", [2, 7, 8, 9, 64, 65, 256])
def test_bias_gradient_sum_is_the_running_double_sum(dtype, rows, k):
    """On one thread each column is one running sum in double, in row order,
    at every SIMD level (more threads add per-block partials)."""
    import cygrad
    from cygrad._kernels.reduce import sum_to_shape

    x = _rows(dtype, k, rows=rows, seed=rows)
    saved = cygrad.get_num_threads()
    cygrad.set_num_threads(1)
    try:
        np.testing.assert_array_equal(sum_to_shape(x, (k,)), _column_sums_in_order(x))
        x3 = x.reshape(1, rows, k)
        np.testing.assert_array_equal(sum_to_shape(x3, (k,)), _column_sums_in_order(x))
    finally:
        cygrad.set_num_threads(saved)
    np.testing.assert_allclose(sum_to_shape(x, (k,)), x.astype(np.float64).sum(0),
                               **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (5, 1), (3, 7), (4, 8, 9), (512, 64), (2, 3, 65)])
def test_add_bias_adds_the_row_to_every_row(dtype, shape):
    from cygrad._kernels.reduce import add_bias

    out = _rows(dtype, shape[-1], rows=int(np.prod(shape[:-1])), seed=1).reshape(shape)
    bias = _rows(dtype, shape[-1], rows=1, seed=2)[0]
    want = out + bias
    assert add_bias(out, bias) is True
    np.testing.assert_array_equal(out, want)


def test_add_bias_refuses_what_it_cannot_add_and_leaves_it_alone():
    from cygrad._kernels.reduce import add_bias

    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    cases = [
        (base.copy()[:, ::2], np.ones(3, np.float32)),          # not contiguous
        (base.copy(), np.ones(6, np.float64)),                  # dtypes differ
        (base.copy(), np.ones(5, np.float32)),                  # wrong length
        (base.copy(), np.ones((1, 6), np.float32)),             # bias not 1-D
        (base.astype(np.int64), np.ones(6, np.int64)),          # not float
        (base.astype(">f4"), np.ones(6, ">f4")),                # byte-swapped
        (np.zeros((4, 0), np.float32), np.ones(0, np.float32)),  # empty row
    ]
    for out, bias in cases:
        before = out.copy()
        assert add_bias(out, bias) is False
        np.testing.assert_array_equal(out, before)
    frozen = base.copy()
    frozen.flags.writeable = False
    assert add_bias(frozen, np.ones(6, np.float32)) is False
    shared = base.copy().reshape(-1)
    assert add_bias(shared[:6].reshape(1, 6), shared[:6]) is False   # overlap
    np.testing.assert_array_equal(shared, base.reshape(-1))


def test_sums_read_byte_swapped_arrays_by_value():
    from cygrad._kernels.reduce import sum_all, sum_to_shape

    for dt in (">f4", ">f8"):
        x = np.arange(12, dtype=dt).reshape(3, 4)
        np.testing.assert_array_equal(sum_to_shape(x, (4,)), x.sum(0))
        np.testing.assert_array_equal(sum_to_shape(x, (1,)), [66.0])
        assert float(sum_all(x)) == 66.0
