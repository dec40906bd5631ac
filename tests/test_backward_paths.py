"""Every op's backward runs two ways: on the kernel path (grad mode off
inside backward: compiled nodes and NumPy arrays) and on the create_graph
path (the same rule over Tensors, recorded).  Both must give the same
gradients, for every case of every registered op."""

import numpy as np
import pytest
from reference import CASES

import cygrad


def _cases():
    for name, cases in CASES.items():
        for i, case in enumerate(cases):
            if case.grad and not any(0 in s for s in case.shapes):
                yield pytest.param(name, case, id=f"{name}-{case!r}-{i}")


def _grads(case, arrays, seed, create_graph):
    xs = [cygrad.tensor(a, requires_grad=True) for a in arrays]
    out = case.fn(cygrad, *xs)
    return cygrad.autograd.grad(out, xs, cygrad.tensor(seed.astype(out.dtype)),
                                create_graph=create_graph, allow_unused=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,case", list(_cases()))
def test_kernel_and_create_graph_backwards_agree(name, case, dtype):
    rng = np.random.default_rng(7)
    doms = case.domain if isinstance(case.domain, list) else [case.domain] * len(
        case.shapes)
    arrays = [rng.uniform(lo, hi, size=s).astype(dtype)
              for s, (lo, hi) in zip(case.shapes, doms)]
    shape = case.fn(cygrad, *[cygrad.tensor(a) for a in arrays]).shape
    seed = rng.standard_normal(shape)
    fast = _grads(case, arrays, seed, create_graph=False)
    graph = _grads(case, arrays, seed, create_graph=True)
    tol = {"rtol": 1e-12, "atol": 1e-13} if dtype == np.float64 else \
        {"rtol": 2e-6, "atol": 1e-6}
    for f, g in zip(fast, graph):
        assert (f is None) == (g is None)
        if f is None:
            continue
        assert f.dtype == g.dtype and f.shape == g.shape
        assert not f.requires_grad
        np.testing.assert_allclose(f.numpy(), g.detach().numpy(), **tol)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("write", ["base", "view"])
def test_overwritten_region_gets_zero_even_for_inf_and_nan(create_graph, write):
    # torch zeroes the region (no g * mask: inf * 0 would be NaN).
    x = cygrad.zeros(4, dtype=cygrad.float64, requires_grad=True)
    y = x * 1.0
    target = y if write == "base" else y.view(2, 2)[0]
    if write == "base":
        target[1:3] = cygrad.tensor([5.0, 6.0], dtype=cygrad.float64)
    else:
        target[1:] = cygrad.tensor([5.0], dtype=cygrad.float64)
    g = cygrad.tensor([1.0, float("inf"), float("nan"), 2.0], dtype=cygrad.float64)
    (gx,) = cygrad.autograd.grad(y, x, g, create_graph=create_graph)
    want = [1.0, 0.0, 0.0, 2.0] if write == "base" else [1.0, 0.0, float("nan"), 2.0]
    np.testing.assert_array_equal(gx.detach().numpy(), want)
