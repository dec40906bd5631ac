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


FACTORIES = [
    ("zeros", lambda m, **k: m.zeros(2, 3, **k)),
    ("ones", lambda m, **k: m.ones(3, **k)),
    ("full", lambda m, **k: m.full((2, 2), 3, **k)),
    ("arange", lambda m, **k: m.arange(5, **k)),
    ("linspace", lambda m, **k: m.linspace(0, 1, 5, **k)),
    ("logspace", lambda m, **k: m.logspace(0, 2, 3, **k)),
    ("eye", lambda m, **k: m.eye(3, **k)),
]


@pytest.mark.parametrize("name", [f[0] for f in FACTORIES])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("size", [0, 4])
def test_factories_write_into_out_in_its_dtype(name, dtype, size):
    """``torch.zeros(2, 3, out=c)``: the values in c's dtype, c resized
    silently, c itself returned."""
    make = dict(FACTORIES)[name]
    seen = []
    for m in (cygrad, torch):
        out = m.zeros(size, dtype=getattr(m, dtype))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = make(m, out=out)
        assert res is out
        seen.append((out.numpy(), str(out.dtype).split(".")[-1],
                     [str(x.message).split(" (Triggered")[0] for x in w]))
    np.testing.assert_array_equal(seen[0][0], seen[1][0])
    assert seen[0][1:] == seen[1][1:]


@pytest.mark.parametrize("name", ["arange", "linspace", "logspace"])
def test_ranges_keep_the_shape_of_an_out_of_the_same_size(name):
    for m in (cygrad, torch):
        out = m.zeros(5, 1)
        args = (0, 5) if name == "arange" else (0, 4, 5)
        assert getattr(m, name)(*args, out=out).shape == (5, 1)
    assert cygrad.zeros(5, out=cygrad.zeros(5, 1)).shape == (5,)


def test_random_factories_fill_out():
    for make in (lambda m, o: m.rand(2, 2, out=o), lambda m, o: m.randn(3, out=o),
                 lambda m, o: m.randint(0, 5, (4,), out=o),
                 lambda m, o: m.randperm(6, out=o)):
        for m in (cygrad, torch):
            out = m.zeros(0, dtype=m.float64)
            assert make(m, out) is out and out.dtype == m.float64
        assert tuple(out.shape) == tuple(make(cygrad, cygrad.zeros(0)).shape)
    perm = cygrad.randperm(6, out=cygrad.zeros(1, dtype=cygrad.long))
    assert sorted(perm.tolist()) == list(range(6))


def test_factory_out_errors_as_torch():
    for m in (cygrad, torch):
        with pytest.raises(RuntimeError, match="dtype Double does not match dtype of "
                                               r"out parameter \(Float\)"):
            m.ones(2, dtype=m.float64, out=m.zeros(2))
        with pytest.raises(RuntimeError, match="functions with out=... arguments "
                                               "don't support automatic"):
            m.ones(2, out=m.zeros(2, requires_grad=True))
        with pytest.raises(TypeError, match="argument 'out' must be Tensor, not list"):
            m.zeros(2, out=[1])
        out = m.empty(0)
        assert m.zeros(2, out=out, requires_grad=True) is out and out.requires_grad


@pytest.mark.parametrize("call", [
    lambda m: m.rand(2, dtype=m.int64), lambda m: m.rand(2, dtype=m.bool),
    lambda m: m.randn(2, dtype=m.int32),
    lambda m: m.rand(2, out=m.zeros(2, dtype=m.long)),
    lambda m: m.rand_like(m.zeros(2, dtype=m.uint8)),
    lambda m: m.randn_like(m.zeros(2, dtype=m.int64))])
def test_float_samplers_refuse_integer_dtypes(call):
    with pytest.raises(NotImplementedError) as want:
        call(torch)
    with pytest.raises(NotImplementedError) as got:
        call(cygrad)
    assert str(got.value) == str(want.value)
