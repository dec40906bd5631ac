"""nn.utils against torch: weight_norm and spectral_norm (parametrizations
and the legacy hooks) with state dicts copied across, register_parametrization,
parameters_to_vector / vector_to_parameters, clip_grad_value_."""

import warnings

import numpy as np
import pytest

import cygrad
from cygrad import nn
from cygrad.nn.utils import parametrize

torch = pytest.importorskip("torch")


def _copy(tm, cm):
    cm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})


def _compare(tm, cm, shape, tol=1e-10, steps=2):
    rng = np.random.default_rng(0)
    for _ in range(steps):
        x = rng.standard_normal(shape)
        tx, cx = torch.tensor(x, requires_grad=True), cygrad.tensor(x, requires_grad=True)
        a, b = tm(tx), cm(cx)
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=tol)
        (a ** 2).sum().backward()
        (b ** 2).sum().backward()
        np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), atol=tol)
    tp, cp = dict(tm.named_parameters()), dict(cm.named_parameters())
    assert list(tp) == list(cp)
    for k in tp:
        np.testing.assert_allclose(cp[k].grad.numpy(), tp[k].grad.numpy(), atol=tol,
                                   err_msg=k)
    for k, v in tm.state_dict().items():       # buffers moved by power iteration too
        np.testing.assert_allclose(cm.state_dict()[k].numpy(), v.numpy(), atol=tol,
                                   err_msg=k)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrized_weight_norm(dim):
    pw = torch.nn.utils.parametrizations.weight_norm
    tm = pw(torch.nn.Linear(4, 3).double(), dim=dim)
    cm = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3).double(), dim=dim)
    assert list(cm.state_dict()) == list(tm.state_dict())
    assert repr(cm) == repr(tm)
    _copy(tm, cm)
    _compare(tm, cm, (5, 4))


def test_parametrized_weight_norm_conv_and_assign():
    tm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv2d(2, 3, 3).double())
    cm = nn.utils.parametrizations.weight_norm(nn.Conv2d(2, 3, 3).double())
    _copy(tm, cm)
    _compare(tm, cm, (2, 2, 5, 5))
    w = np.random.default_rng(1).standard_normal((3, 2, 3, 3))
    with torch.no_grad():
        tm.weight = torch.tensor(w)
    with cygrad.no_grad():
        cm.weight = cygrad.tensor(w)
    np.testing.assert_allclose(cm.weight.detach().numpy(), w, atol=1e-12)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(cm.state_dict()[k].numpy(), v.numpy(), atol=1e-12)


@pytest.mark.parametrize("train", [True, False])
def test_parametrized_spectral_norm(train):
    tm = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(5, 4).double())
    cm = nn.utils.parametrizations.spectral_norm(nn.Linear(5, 4).double())
    assert list(cm.state_dict()) == list(tm.state_dict()) and repr(cm) == repr(tm)
    _copy(tm, cm)
    tm.train(train)
    cm.train(train)
    _compare(tm, cm, (3, 5), steps=3)
    s = np.linalg.svd(cm.weight.detach().numpy(), compute_uv=False)
    assert s[0] < 1.05


def test_spectral_norm_conv_transpose_uses_dim_1():
    tm = torch.nn.utils.parametrizations.spectral_norm(
        torch.nn.ConvTranspose2d(2, 3, 3).double())
    cm = nn.utils.parametrizations.spectral_norm(nn.ConvTranspose2d(2, 3, 3).double())
    assert cm.parametrizations.weight[0].dim == 1
    _copy(tm, cm)
    _compare(tm, cm, (1, 2, 4, 4))


def test_legacy_weight_norm_and_spectral_norm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tm = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3).double())
        cm = nn.utils.weight_norm(nn.Linear(4, 3).double())
    assert list(cm.state_dict()) == list(tm.state_dict()) == ["bias", "weight_g",
                                                               "weight_v"]
    _copy(tm, cm)
    _compare(tm, cm, (5, 4))
    nn.utils.remove_weight_norm(cm)
    torch.nn.utils.remove_weight_norm(tm)
    assert list(cm.state_dict()) == list(tm.state_dict())
    _compare(tm, cm, (5, 4))
    tm = torch.nn.utils.spectral_norm(torch.nn.Linear(4, 3).double())
    cm = nn.utils.spectral_norm(nn.Linear(4, 3).double())
    assert list(cm.state_dict()) == list(tm.state_dict())
    _copy(tm, cm)
    _compare(tm, cm, (5, 4), steps=3)
    nn.utils.remove_spectral_norm(cm)
    torch.nn.utils.remove_spectral_norm(tm)
    assert list(cm.state_dict()) == list(tm.state_dict())
    _compare(tm, cm, (5, 4))


def test_register_parametrization_custom():
    def build(lib):
        class Symmetric(lib.nn.Module):
            def forward(self, x):
                return (x + x.t()) * 0.5

        class Scale(lib.nn.Module):
            def forward(self, x):
                return x * 3.0

            def right_inverse(self, x):
                return x / 3.0
        m = lib.nn.Linear(3, 3).double()
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Symmetric())
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Scale())
        return m
    tm, cm = build(torch), build(cygrad)
    assert list(cm.state_dict()) == list(tm.state_dict()) and repr(cm) == repr(tm)
    _copy(tm, cm)
    _compare(tm, cm, (2, 3))
    assert parametrize.is_parametrized(cm, "weight")
    w = cm.weight.detach().numpy()
    np.testing.assert_allclose(w, w.T)
    with parametrize.cached():
        assert cm.weight is cm.weight
    parametrize.remove_parametrizations(cm, "weight")
    assert type(cm) is nn.Linear and list(cm.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(cm.weight.detach().numpy(), w)
    with pytest.raises(ValueError, match="does not have a parameter"):
        parametrize.register_parametrization(nn.Linear(2, 2), "nope", nn.Identity())


def test_parameters_to_vector_round_trip():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    v = nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (11,)
    (v * cygrad.arange(11.0)).sum().backward()
    np.testing.assert_allclose(m[0].weight.grad.numpy().ravel(), np.arange(6.0))
    nn.utils.vector_to_parameters(cygrad.arange(11.0), m.parameters())
    np.testing.assert_allclose(m[1].bias.detach().numpy(), [10.0])
    assert m[0].weight.shape == (2, 3) and m[0].weight.requires_grad
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters([1.0], m.parameters())


def test_clip_grad_value_matches_torch():
    g = np.random.default_rng(2).standard_normal((4, 5)) * 3
    tp, cp = torch.nn.Parameter(torch.zeros(4, 5)), nn.Parameter(cygrad.zeros(4, 5))
    tp.grad, cp.grad = torch.tensor(g, dtype=torch.float32), cygrad.tensor(
        g.astype(np.float32))
    torch.nn.utils.clip_grad_value_([tp], 1.5)
    nn.utils.clip_grad_value_([cp], 1.5)
    np.testing.assert_array_equal(cp.grad.numpy(), tp.grad.numpy())
