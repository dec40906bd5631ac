"""median and kthvalue's compiled selection (select.rank_rows): the index a
stable ascending sort (NaN last) puts at the rank (kthvalue), or a row's
first NaN (median), ties in index order, -0.0 equal to 0.0; and the sort that
takes the rows the selection gives up on."""

import numpy as np
import pytest

import cygrad
from cygrad._kernels import select as _S
from cygrad.ops import sorting


def _reference(a, rank, nan_first=True):
    idx = np.argsort(a, axis=1, kind="stable")[:, rank]
    if not nan_first:
        return idx
    nan = np.isnan(a)
    return np.where(nan.any(1), np.argmax(nan, 1), idx)


def _rows(kind, rows, n, rng):
    if kind == "normal":
        return rng.standard_normal((rows, n))
    if kind == "few values":
        return rng.integers(0, 4, (rows, n)).astype(float)
    if kind == "descending":
        return np.sort(rng.standard_normal((rows, n)), 1)[:, ::-1]
    if kind == "nan and signed zeros":
        x = rng.integers(-2, 3, (rows, n)).astype(float)
        x[x == 0] = np.where(rng.random((x == 0).sum()) < 0.5, -0.0, 0.0)
        x[rng.random((rows, n)) < 0.05] = np.nan
        return x
    if kind == "infinities":
        return rng.choice([-np.inf, np.inf, 1.0, -1.0], (rows, n))
    return np.tile(np.arange(n) % 7, (rows, 1)).astype(float)    # sawtooth


KINDS = ["normal", "few values", "descending", "nan and signed zeros", "infinities",
         "sawtooth"]


@pytest.mark.parametrize("nan_first", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", KINDS)
def test_rank_rows_is_the_stable_sorts_index(kind, dtype, nan_first):
    rng = np.random.default_rng(KINDS.index(kind))
    for n in (1, 2, 15, 16, 17, 100, 1001):
        a = np.ascontiguousarray(_rows(kind, 3, n, rng), dtype=dtype)
        for rank in sorted({0, (n - 1) // 2, n - 1, int(rng.integers(0, n))}):
            out = np.empty(3, np.int64)
            _S.rank_rows(a, rank, nan_first, out)
            assert (out >= 0).all()
            np.testing.assert_array_equal(out, _reference(a, rank, nan_first))


def test_rank_rows_checks_its_arguments():
    a = np.zeros((2, 5), np.float32)
    with pytest.raises(ValueError):
        _S.rank_rows(a, 5, True, np.empty(2, np.int64))
    with pytest.raises(ValueError):
        _S.rank_rows(a, 0, True, np.empty(3, np.int64))


def test_rows_the_selection_gives_up_on_are_sorted(monkeypatch):
    """Rows left at -1 (out of partition budget) take the stable sort."""
    real = _S.rank_rows

    class GivesUp:
        @staticmethod
        def rank_rows(rows, rank, nan_first, out):
            real(rows, rank, nan_first, out)
            out[::2] = -1

    monkeypatch.setattr(sorting, "_S", GivesUp)
    x = np.random.default_rng(0).integers(0, 5, (6, 40)).astype(np.float32)
    x[1, 3] = x[2, :5] = np.nan
    for k in (7, 38):
        got = cygrad.kthvalue(cygrad.tensor(x), k, dim=1)
        np.testing.assert_array_equal(got.indices.numpy(), _reference(x, k - 1, False))
        np.testing.assert_array_equal(got.values.numpy(), np.sort(x, 1)[:, k - 1])
    got = cygrad.median(cygrad.tensor(x), dim=1)
    np.testing.assert_array_equal(got.indices.numpy(), _reference(x, 19))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_median_and_kthvalue_match_torch(dim):
    """median: ties by index order, a row's first NaN wins (torch's indices).
    kthvalue: NaN is the largest value; its indices among ties are torch's
    selection order, not specified, so the values are compared, and the
    indices on distinct values."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    ties = rng.integers(0, 6, (9, 11, 7)).astype(np.float32)
    distinct = rng.permutation(9 * 11 * 7).reshape(9, 11, 7).astype(np.float32)
    for x in (ties, distinct):
        x[2, 3, 4] = x[5, 6, 1] = np.nan
        ours, theirs = cygrad.median(cygrad.tensor(x), dim), torch.median(torch.tensor(x), dim)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        for k in (1, 3, x.shape[dim]):
            ours = cygrad.kthvalue(cygrad.tensor(x), k, dim)
            theirs = torch.kthvalue(torch.tensor(x), k, dim)
            np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
            if x is distinct:
                np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
    assert np.isnan(cygrad.median(cygrad.tensor(ties)).item())
