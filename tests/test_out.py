"""The ``out=`` keyword of the functions ``cygrad.<op>``, against torch."""

import warnings

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")

A = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
B = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
CASES = [
    ("matmul", lambda m: (m.tensor(A), m.tensor(B))),
    ("mul", lambda m: (m.tensor(A), m.tensor(A))),
    ("exp", lambda m: (m.tensor(A),)),
    ("add", lambda m: (m.tensor(A), 2.0)),
    ("cat", lambda m: ([m.tensor(A), m.tensor(A)],)),
]


def _call(m, name, out):
    return getattr(m, name)(*dict(CASES)[name](m), out=out)


@pytest.mark.parametrize("name", [c[0] for c in CASES])
@pytest.mark.parametrize("start", ["empty", "right", "wrong"])
def test_out_is_written_resized_and_returned_like_torch(name, start):
    got, want = {}, {}
    for m, box in ((cygrad, got), (torch, want)):
        shape = {"empty": (0,), "right": None, "wrong": (5,)}[start]
        if shape is None:
            shape = tuple(getattr(m, name)(*dict(CASES)[name](m)).shape)
        out = m.zeros(shape)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = _call(m, name, out)
        box["same"] = res is out
        box["value"] = out.numpy().copy()
        box["warned"] = any("resized" in str(x.message) for x in w)
    assert got["same"] and want["same"]
    np.testing.assert_allclose(got["value"], want["value"], rtol=1e-6)
    assert got["warned"] == want["warned"]


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_out_refuses_inputs_that_require_grad_before_computing(name):
    x = cygrad.tensor(A, requires_grad=True)
    out = cygrad.full((2, 3), 7.0)
    args = {"matmul": (x, cygrad.tensor(B)), "mul": (x, x), "exp": (x,),
            "add": (x, 2.0), "cat": ([x, x],)}[name]
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        getattr(cygrad, name)(*args, out=out)
    assert (out.numpy() == 7).all()
    with cygrad.no_grad():
        getattr(cygrad, name)(*args, out=out)


def test_a_float_result_cannot_go_into_an_integer_out():
    for m in (cygrad, torch):
        out = m.zeros(2, 2, dtype=m.long)
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                               "desired output type Long"):
            m.mul(m.ones(2, 2), 0.5, out=out)
    out = cygrad.zeros(2, 2, dtype=cygrad.float64)
    cygrad.matmul(cygrad.ones(2, 2), cygrad.ones(2, 2), out=out)
    assert out.dtype == cygrad.float64 and (out.numpy() == 2).all()


def test_out_must_be_a_tensor():
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not list"):
        cygrad.matmul(cygrad.ones(2, 2), cygrad.ones(2, 2), out=[])


def test_tuple_results_fill_a_tuple_of_outs():
    x = [[1.0, 3.0], [2.0, 0.0]]
    v, i = cygrad.empty(0), cygrad.empty(0, dtype=cygrad.long)
    res = cygrad.max(cygrad.tensor(x), 1, out=(v, i))
    assert res.values is v and res.indices is i
    tv, ti = torch.max(torch.tensor(x), 1)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
