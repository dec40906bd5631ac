"""isclose / allclose / equal against torch: values, dtypes, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
PAIRS = [
    ([1.0, 2.0, 3.0], [1.0, 2.00001, 3.1]),
    ([INF, -INF, NAN, 1.0, INF], [INF, INF, NAN, INF, 1.0]),
    ([0.0, -0.0, 1e-9, 1e-7], [1e-9, 0.0, 0.0, 0.0]),
]


@pytest.mark.parametrize("a, b", PAIRS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, {"equal_nan": True}, {"rtol": 0.1, "atol": 0.0},
                                {"rtol": 0.0, "atol": 1e-8}])
def test_isclose_and_allclose_match_torch(a, b, dtype, kw):
    got = cygrad.isclose(cygrad.tensor(a, dtype=getattr(cygrad, dtype)),
                         cygrad.tensor(b, dtype=getattr(cygrad, dtype)), **kw)
    want = torch.isclose(torch.tensor(a, dtype=getattr(torch, dtype)),
                         torch.tensor(b, dtype=getattr(torch, dtype)), **kw)
    assert got.dtype == cygrad.bool
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert cygrad.tensor(a).allclose(cygrad.tensor(b), **kw) == torch.allclose(
        torch.tensor(a), torch.tensor(b), **kw)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=6), st.integers(0, 3),
       st.floats(0, 2))
def test_integer_and_broadcast_cases_match_torch(vals, shift, atol):
    a = np.array(vals)
    b = (a + shift).reshape(-1, 1)
    got = cygrad.isclose(cygrad.tensor(a), cygrad.tensor(b), atol=atol).numpy()
    want = torch.isclose(torch.tensor(a), torch.tensor(b), atol=atol).numpy()
    np.testing.assert_array_equal(got, want)


def test_equal_needs_the_same_shape_and_values():
    for m in (cygrad, torch):
        assert m.equal(m.ones(2), m.ones(2, dtype=m.float64))
        assert m.equal(m.ones(2, dtype=m.long), m.ones(2))
        assert not m.equal(m.ones(2), m.ones(3))
        assert not m.equal(m.ones(2), m.ones(1, 2))
        assert not m.equal(m.tensor([NAN]), m.tensor([NAN]))
        assert m.ones(2).equal(m.ones(2))


def test_errors_as_torch():
    a = cygrad.ones(2)
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        cygrad.isclose(a, cygrad.ones(2, dtype=cygrad.float64))
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        cygrad.allclose(a, cygrad.ones(2, dtype=cygrad.float64))
    with pytest.raises(TypeError, match=r"argument 'other' \(position 2\) must be Tensor"):
        cygrad.isclose(a, 1.0)
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        cygrad.isclose(a, a, rtol=-1)
    with pytest.raises(RuntimeError, match="must match the size"):
        cygrad.isclose(a, cygrad.ones(3))
