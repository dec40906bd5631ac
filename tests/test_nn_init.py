"""nn.init's remaining initialisers (closed-form properties and torch's
deterministic outputs), the fan helper and calculate_gain against torch, and
the default initialisation of the layers issue 18 adds."""

import math

import numpy as np
import pytest

import cygrad
from cygrad import nn
from cygrad.nn import init

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3, 3)])
def test_orthogonal(shape):
    w = init.orthogonal_(cygrad.empty(*shape, dtype=cygrad.float64), gain=2.0)
    m = w.numpy().reshape(shape[0], -1) / 2.0
    small = min(m.shape)
    gram = m @ m.T if m.shape[0] == small else m.T @ m
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-12)


@pytest.mark.parametrize("shape, dtype", [((3, 5), "float32"), ((5, 3), "float64"),
                                          ((4, 2, 3, 3), "float32"), ((6, 6), "float64")])
def test_orthogonal_and_sparse_match_torch_after_the_same_seed(shape, dtype):
    # torch's draws (the normal block, then one randperm per column for
    # sparse_), so the values match and the generator ends where torch's does
    got, want = [], []
    for lib, out in ((cygrad, got), (torch, want)):
        lib.manual_seed(5)
        dt = getattr(lib, dtype)
        out.append(lib.nn.init.orthogonal_(lib.empty(*shape, dtype=dt), gain=1.5))
        out.append(lib.nn.init.sparse_(lib.empty(7, 4, dtype=dt), 0.4, std=0.3))
        out.append(lib.rand(3))
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=tol, atol=tol)
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
    np.testing.assert_array_equal(got[2].numpy(), want[2].numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(8, 3), (3, 8), (40, 40), (4, 2, 3, 3)])
def test_orthogonal_matches_torch_after_the_same_seed(shape, dtype):
    """bentrevett's sentiment LSTM runs ``nn.init.orthogonal_`` on every
    weight: the matrices and the stream after them must be torch's."""
    got = []
    for m in (cygrad, torch):
        m.manual_seed(3)
        w = m.empty(*shape, dtype=getattr(m, dtype))
        m.nn.init.orthogonal_(w, gain=1.5)
        got.append((w.numpy(), m.rand(2).tolist()))
    tol = 1e-5 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=0, atol=tol)
    assert got[0][1] == got[1][1]


def test_trunc_normal_bounds_and_moments():
    cygrad.manual_seed(0)
    w = init.trunc_normal_(cygrad.empty(200_000, dtype=cygrad.float64), mean=1.0,
                           std=2.0, a=0.0, b=3.0)
    x = w.numpy()
    assert x.min() >= 0.0 and x.max() <= 3.0
    t = torch.empty(2_000_000, dtype=torch.float64)
    torch.nn.init.trunc_normal_(t, mean=1.0, std=2.0, a=0.0, b=3.0)
    assert abs(x.mean() - t.mean().item()) < 0.01
    assert abs(x.std() - t.std().item()) < 0.01


def test_sparse_eye_dirac():
    w = init.sparse_(cygrad.empty(10, 6), sparsity=0.3, std=0.5)
    zeros = (w.numpy() == 0).sum(axis=0)
    assert np.all(zeros == math.ceil(0.3 * 10))
    for shape in ((3, 5), (5, 3)):
        np.testing.assert_array_equal(
            init.eye_(cygrad.empty(*shape)).numpy(),
            torch.nn.init.eye_(torch.empty(*shape)).numpy())
    for shape, groups in (((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((2, 2, 1, 3, 3), 1)):
        np.testing.assert_array_equal(
            init.dirac_(cygrad.empty(*shape), groups).numpy(),
            torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(cygrad.empty(3))
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        init.dirac_(cygrad.empty(3, 3))
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(cygrad.empty(3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.sparse_(cygrad.empty(3, 3, 3), 0.5)


def test_fans_and_gains_match_torch():
    for shape in ((3, 4), (8, 2, 3, 3), (5, 6, 7)):
        assert init._calculate_fan_in_and_fan_out(cygrad.empty(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    for nl, p in (("linear", None), ("conv1d", None), ("conv2d", None),
                  ("conv3d", None), ("conv_transpose1d", None),
                  ("conv_transpose2d", None), ("conv_transpose3d", None),
                  ("sigmoid", None), ("tanh", None), ("relu", None),
                  ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)):
        assert init.calculate_gain(nl, p) == torch.nn.init.calculate_gain(nl, p)
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("gelu")


def test_default_inits_of_new_layers():
    e = nn.Embedding(3000, 4).weight.detach().numpy()
    assert abs(e.std() - 1) < 0.03
    assert np.all(nn.PReLU(3).weight.detach().numpy() == 0.25)
    b = nn.Bilinear(16, 3, 200).bias.detach().numpy()
    assert abs(b).max() <= 0.25 and abs(b).max() > 0.23
    lz = nn.LazyLinear(50)
    lz(cygrad.ones(1, 400))
    w = lz.weight.detach().numpy()
    assert abs(w).max() <= 1 / 20 and abs(w).max() > 0.045
