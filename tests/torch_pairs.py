"""Helpers of the module tests that compare a cygrad function with torch's
on the same arrays: the tensor pairs, the closeness check and the forward +
input-gradient check (importing this skips the test module without torch)."""

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")

TOL = {np.float64: 1e-10, np.float32: 1e-5}


def pair(arr, dtype=np.float64, grad=True):
    """The same values as a cygrad and a torch tensor."""
    a = np.asarray(arr, dtype=dtype)
    return (cygrad.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad))


def close(c, t, tol, nan=False):
    np.testing.assert_allclose(np.asarray(c.detach().numpy()), t.detach().numpy(),
                               rtol=tol, atol=tol, equal_nan=nan)


def check(fc, ft, arrays, dtype=np.float64, seed=0, nan=False):
    """Forward values and input gradients of fc (cygrad) and ft (torch);
    ``nan``: NaN where torch has NaN counts as equal."""
    tol = TOL[dtype]
    pairs = [pair(a, dtype) for a in arrays]
    yc = fc(*[p[0] for p in pairs])
    yt = ft(*[p[1] for p in pairs])
    close(yc, yt, tol, nan)
    g = np.random.default_rng(seed).standard_normal(tuple(yt.shape)).astype(dtype)
    (yc * cygrad.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    for c, t in pairs:
        close(c.grad, t.grad, tol, nan)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)
