"""resize_, resize, resize_as_, apply_ and the ranges (arange, linspace,
logspace) and the fill values of full against torch."""


import itertools

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("start, sizes", [(6, (2, 3)), (6, (2, 2)), (4, (4,)),
                                          (3, ((1, 3),)), (6, (3, 2))])
def test_resize_keeps_the_leading_elements_like_torch(start, sizes):
    a = cygrad.arange(float(start))
    b = torch.arange(float(start))
    assert a.resize_(*sizes) is a
    b.resize_(*sizes)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_growing_keeps_the_old_elements_in_front():
    a = cygrad.arange(3.0).resize_(5)
    assert tuple(a.shape) == (5,)
    np.testing.assert_array_equal(a.numpy()[:3], [0.0, 1.0, 2.0])


def test_resize_refuses_tensors_that_require_grad_and_warns_when_not_in_place():
    for m in (cygrad, torch):
        x = m.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="cannot resize variables that require "
                                               "grad"):
            x.resize_(2)
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            r = m.arange(4.0).resize(2, 2)
        assert tuple(r.shape) == (2, 2)
    a = cygrad.zeros(1)
    a.resize_as_(cygrad.ones(2, 3))
    assert tuple(a.shape) == (2, 3)


def test_apply_maps_every_element_in_place():
    for m in (cygrad, torch):
        t = m.arange(6.0).reshape(2, 3)
        v = t[:, ::2]
        assert v.apply_(lambda x: x * 10 + 1) is v
        np.testing.assert_array_equal(t.numpy(), [[1, 1, 21], [31, 4, 51]])
        with pytest.raises(RuntimeError, match="Can't call apply_"):
            m.ones(2, requires_grad=True).apply_(abs)


def test_apply_bumps_the_version():
    t = cygrad.ones(3)
    v = t._version
    t.apply_(lambda x: x)
    assert t._version > v


@pytest.mark.parametrize("kw", [dict(), dict(base=2.0), dict(dtype="float64"),
                                dict(dtype="int64"), dict(base=0.5)])
def test_logspace_matches_torch(kw):
    kc = {k: getattr(cygrad, v) if k == "dtype" else v for k, v in kw.items()}
    kt = {k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()}
    got = cygrad.logspace(-1, 3, 7, **kc)
    want = torch.logspace(-1, 3, 7, **kt)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


RANGE_CALLS = [
    lambda m, d: m.arange(-8.0, 8.0, 0.1, dtype=d),
    lambda m, d: m.arange(0.0, 1.0, 0.1, dtype=d),
    lambda m, d: m.arange(1.5, 100.2, 0.37, dtype=d),
    lambda m, d: m.arange(5.0, -3.0, -0.3, dtype=d),
    lambda m, d: m.arange(0, 2 * np.pi, 0.1, dtype=d),
    lambda m, d: m.linspace(-np.pi, np.pi, 2000, dtype=d),
    lambda m, d: m.linspace(0.0, 2 * np.pi, 25, dtype=d),
    lambda m, d: m.linspace(3, -2.7, 999, dtype=d),
    lambda m, d: m.linspace(0.1, 7.3, 37, dtype=d),
    lambda m, d: m.linspace(1.5, 1.5, 1, dtype=d),
    lambda m, d: m.logspace(-5, 5, 1000, dtype=d),
    lambda m, d: m.logspace(0.1, 7.3, 37, base=2.0, dtype=d),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("call", RANGE_CALLS)
def test_ranges_have_torchs_bits(call, dtype):
    """torch's kernels fuse their multiply-adds (and arange writes a vector
    of lanes at a time); ``linspace(-pi, pi, 2000)`` is bit for bit torch's."""
    got = call(cygrad, getattr(cygrad, dtype)).numpy()
    want = call(torch, getattr(torch, dtype)).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("threads", [1, 2])
def test_long_arange_splits_as_torchs_threads(threads):
    """Above 32768 elements torch's arange runs one chunk per thread, each
    starting its own registers; with the same thread count the bits agree."""
    before = (cygrad.get_num_threads(), torch.get_num_threads())
    try:
        cygrad.set_num_threads(threads)
        torch.set_num_threads(threads)
        for call in [lambda m: m.arange(0.0, 50.0, 0.001),
                     lambda m: m.arange(0.0, 150.0, 0.0013, dtype=m.float64)]:
            np.testing.assert_array_equal(call(cygrad).numpy(), call(torch).numpy())
    finally:
        cygrad.set_num_threads(before[0])
        torch.set_num_threads(before[1])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
def test_random_ranges_have_torchs_bits(dtype):
    """arange and linspace from random ends, steps and lengths (the compiled
    fills, one fma per value, for float32/float64; float16 in NumPy)."""
    r = np.random.default_rng(5)
    for _ in range(60):
        a, b = sorted(r.uniform(-100, 100, 2))
        step, n = float(r.uniform(0.001, 3)), int(r.integers(2, 3000))
        calls = [lambda m: m.linspace(a, b, n, dtype=getattr(m, dtype))]
        if dtype != "int64":
            calls.append(lambda m: m.arange(a, b, step, dtype=getattr(m, dtype)))
        for call in calls:
            np.testing.assert_array_equal(call(cygrad).numpy(), call(torch).numpy())


def test_integer_linspace_truncates_as_torch():
    for args in [(0, 10, 4), (-7, 9, 6), (3, -2.7, 9)]:
        np.testing.assert_array_equal(
            cygrad.linspace(*args, dtype=cygrad.int64).numpy(),
            torch.linspace(*args, dtype=torch.int64).numpy())


@pytest.mark.parametrize("call", [
    lambda m: m.arange(0, -1, 1.0), lambda m: m.arange(5, 1),
    lambda m: m.arange(0, 1, 0),
    lambda m: m.arange(0, float("inf")), lambda m: m.linspace(0, 1, -1),
    lambda m: m.logspace(0, 1, -2)])
def test_range_errors_as_torch(call):
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(cygrad)
    assert str(got.value) == str(want.value)


FILL_VALUES = [-1, -255, -256, 255, 256, 2 ** 31, 2 ** 63, -2 ** 63, 2 ** 64, 3.5, -0.5,
               300.0, 1e40, 70000, 65504, float("nan"), float("inf"), True, 2 ** 70]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64", "float16",
                                   "float32", "float64", "bool"])
def test_fill_values_convert_as_torchs(dtype):
    """full / full_like: a value the dtype cannot hold raises torch's error
    (type and message), a negative int wraps into uint8 from -255, the rest
    fill with torch's values (a one-element float16 takes any value)."""
    for value, n in itertools.product(FILL_VALUES, (1, 2)):
        for make in (lambda m: m.full((n,), value, dtype=getattr(m, dtype)),
                     lambda m: m.full_like(m.zeros(n, dtype=getattr(m, dtype)), value)):
            try:
                want = make(torch).tolist()
            except Exception as e:      # noqa: BLE001 (torch's error is the reference)
                with pytest.raises(type(e)) as got:
                    make(cygrad)
                assert str(got.value) == str(e), (value, dtype)
                continue
            np.testing.assert_array_equal(np.array(make(cygrad).tolist(), float),
                                          np.array(want, float), err_msg=f"{value}")
