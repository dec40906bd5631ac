"""BatchNorm1d/2d, LayerNorm, GroupNorm, RMSNorm: closed forms, torch
module-to-module (state_dict both ways, train and eval, running statistics
over several steps), gradcheck/gradgradcheck in float64, hypothesis over
shapes, bad input that changes nothing."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad
from cygrad import nn
from cygrad.autograd import gradcheck, gradgradcheck
from cygrad.nn import functional as F

TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=1e-5, atol=1e-5)}


def _t(a, requires_grad=False):
    return cygrad.tensor(np.asarray(a), requires_grad=requires_grad)


# ---------------------------------------------------------------------------
# closed forms (no torch needed)


def test_batch_norm_training_closed_form_and_running_stats():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5)) * 2 + 1
    bn = nn.BatchNorm1d(3, momentum=0.3).double()
    y = bn(_t(x)).detach().numpy()
    mean = x.mean(axis=(0, 2), keepdims=True)
    var = x.var(axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-5), **TOL[np.float64])
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.3 * mean.ravel(),
                               **TOL[np.float64])
    unbiased = x.var(axis=(0, 2), ddof=1)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.7 + 0.3 * unbiased,
                               **TOL[np.float64])
    assert int(bn.num_batches_tracked.item()) == 1
    bn.eval()
    z = bn(_t(x)).detach().numpy()
    np.testing.assert_allclose(
        z, (x - bn.running_mean.numpy()[:, None]) /
        np.sqrt(bn.running_var.numpy()[:, None] + 1e-5), **TOL[np.float64])
    assert int(bn.num_batches_tracked.item()) == 1  # eval does not count


def test_batch_norm_momentum_none_is_a_cumulative_average():
    rng = np.random.default_rng(1)
    bn = nn.BatchNorm2d(2, momentum=None).double()
    batches = [rng.standard_normal((3, 2, 2, 2)) + i for i in range(4)]
    for b in batches:
        bn(_t(b))
    means = [b.mean(axis=(0, 2, 3)) for b in batches]
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean(means, axis=0),
                               **TOL[np.float64])
    assert int(bn.num_batches_tracked.item()) == 4


def test_layer_norm_rows_have_zero_mean_unit_variance():
    x = np.random.default_rng(2).standard_normal((3, 4, 5)) * 3 + 2
    y = F.layer_norm(_t(x), (4, 5), eps=0.0).numpy().reshape(3, -1)
    np.testing.assert_allclose(y.mean(axis=1), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=1), 1, rtol=1e-10)


def test_group_norm_is_layer_norm_of_each_group():
    x = np.random.default_rng(3).standard_normal((2, 6, 3, 2))
    y = F.group_norm(_t(x), 3).numpy()
    want = F.layer_norm(_t(x.reshape(2, 3, 12)), 12).numpy().reshape(x.shape)
    np.testing.assert_allclose(y, want, **TOL[np.float64])


def test_rms_norm_closed_form():
    x = np.random.default_rng(4).standard_normal((3, 7))
    w = np.random.default_rng(5).standard_normal(7)
    y = F.rms_norm(_t(x), 7, _t(w), eps=1e-6).numpy()
    np.testing.assert_allclose(
        y, x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w,
        **TOL[np.float64])


GRAD_CASES = {
    "batch_norm_train": (lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
                         (3, 2, 4)),
    "batch_norm_train_4d": (lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
                            (2, 2, 3, 2)),
    "batch_norm_eval": (lambda x, w, b: F.batch_norm(
        x, _t([0.1, -0.2]), _t([1.5, 0.7]), w, b, False), (3, 2, 4)),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (2, 4), w.reshape(1, 2)
                                                 .expand(4, 2).T.contiguous(),
                                                 b.reshape(2, 1).expand(2, 4)
                                                 .contiguous()), (3, 2, 4)),
    "group_norm": (lambda x, w, b: F.group_norm(x, 1, w, b), (3, 2, 4)),
    "rms_norm": (lambda x, w, b: F.rms_norm(x, (4,), (w.sum() * x[0, 0] * 0 + 1.0)
                                            * cygrad.ones(4, dtype=cygrad.float64),
                                            1e-5) + b.sum(), (3, 2, 4)),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_norm_gradcheck_and_gradgradcheck(name):
    fn, shape = GRAD_CASES[name]
    rng = np.random.default_rng(6)
    xs = [_t(rng.standard_normal(shape), True), _t(rng.standard_normal(2) + 1, True),
          _t(rng.standard_normal(2), True)]
    assert gradcheck(fn, xs)
    assert gradgradcheck(fn, xs)


def test_norm_gradgradcheck_with_affine_params():
    rng = np.random.default_rng(7)
    x = _t(rng.standard_normal((2, 3, 4)), True)
    w = _t(rng.standard_normal(4), True)
    b = _t(rng.standard_normal(4), True)
    assert gradgradcheck(lambda x, w, b: F.layer_norm(x, 4, w, b), [x, w, b])
    assert gradgradcheck(lambda x, w: F.rms_norm(x, 4, w), [x, w])
    wc = _t(rng.standard_normal(3), True)
    bc = _t(rng.standard_normal(3), True)
    assert gradgradcheck(lambda x, w, b: F.group_norm(x, 3, w, b), [x, wc, bc])


# ---------------------------------------------------------------------------
# against torch


def _load_from_torch(tmod, cmod):
    cmod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})


def _step(torch, tmod, cmod, x, dtype, check_grads=True):
    tol = TOL[dtype]
    tx = torch.tensor(x, requires_grad=True)
    cx = cygrad.tensor(x, requires_grad=True)
    ty, cy = tmod(tx), cmod(cx)
    np.testing.assert_allclose(cy.detach().numpy(), ty.detach().numpy(), **tol)
    if not check_grads:
        return
    g = np.random.default_rng(11).standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(g))
    cy.backward(cygrad.tensor(g))
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), **tol)
    tp = dict(tmod.named_parameters())
    for name, p in cmod.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp[name].grad.numpy(), **tol,
                                   err_msg=name)
        p.grad = None
        tp[name].grad = None


def _buffers_equal(tmod, cmod, dtype):
    tb = dict(tmod.named_buffers())
    cb = dict(cmod.named_buffers())
    assert sorted(tb) == sorted(cb)
    for k in tb:
        np.testing.assert_allclose(cb[k].numpy(), tb[k].numpy(), **TOL[dtype],
                                   err_msg=k)


BN_CASES = [
    ("BatchNorm2d", dict(num_features=3), (4, 3, 5, 4)),
    ("BatchNorm2d", dict(num_features=3, momentum=None), (4, 3, 2, 3)),
    ("BatchNorm2d", dict(num_features=3, affine=False), (2, 3, 3, 3)),
    ("BatchNorm2d", dict(num_features=3, track_running_stats=False), (2, 3, 3, 3)),
    ("BatchNorm1d", dict(num_features=4, eps=1e-3, momentum=0.5), (6, 4)),
    ("BatchNorm1d", dict(num_features=4), (3, 4, 7)),
    ("BatchNorm2d", dict(num_features=3, bias=False), (2, 3, 2, 2)),
]


# the instance norms and BatchNorm3d take the same test
INSTANCE_CASES = [
    ("InstanceNorm1d", dict(num_features=3), (4, 3, 7)),
    ("InstanceNorm1d", dict(num_features=3, affine=True), (3, 6)),  # unbatched
    ("InstanceNorm2d", dict(num_features=3, affine=True, track_running_stats=True),
     (2, 3, 5, 4)),
    ("InstanceNorm2d", dict(num_features=3, track_running_stats=True, momentum=0.3),
     (3, 4, 4)),  # unbatched
    ("InstanceNorm2d", dict(num_features=3, track_running_stats=True, momentum=None),
     (2, 3, 2, 3)),
    ("InstanceNorm3d", dict(num_features=2, affine=True, bias=False), (2, 2, 2, 3, 2)),
    ("BatchNorm3d", dict(num_features=3), (2, 3, 2, 3, 2)),
]


@pytest.mark.parametrize("cls,kw,shape", BN_CASES + INSTANCE_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_batch_norm_modules_match_torch(cls, kw, shape, dtype):
    torch = pytest.importorskip("torch")
    tdt = torch.float64 if dtype == np.float64 else torch.float32
    tmod = getattr(torch.nn, cls)(**kw).to(tdt)
    cmod = getattr(nn, cls)(**kw).to(dtype)
    assert repr(cmod) == repr(tmod)
    with torch.no_grad():  # non-trivial affine parameters
        if tmod.weight is not None:
            tmod.weight.uniform_(0.5, 1.5)
        if tmod.bias is not None:
            tmod.bias.uniform_(-0.5, 0.5)
    _load_from_torch(tmod, cmod)
    rng = np.random.default_rng(12)
    for i in range(3):  # train: running statistics move step by step
        _step(torch, tmod, cmod, (rng.standard_normal(shape) * 2 + i).astype(dtype),
              dtype)
        _buffers_equal(tmod, cmod, dtype)
    tmod.eval()
    cmod.eval()
    _step(torch, tmod, cmod, rng.standard_normal(shape).astype(dtype), dtype)
    _buffers_equal(tmod, cmod, dtype)
    # and back: the cygrad state dict loads into torch
    tmod2 = getattr(torch.nn, cls)(**kw).to(tdt)
    tmod2.load_state_dict({k: torch.tensor(v.numpy()) for k, v in
                           cmod.state_dict().items()})
    assert list(cmod.state_dict()) == list(tmod.state_dict())
    _buffers_equal(tmod2, cmod, dtype)


ROW_CASES = [
    ("LayerNorm", dict(normalized_shape=5), (3, 5)),
    ("LayerNorm", dict(normalized_shape=(3, 4)), (2, 5, 3, 4)),
    ("LayerNorm", dict(normalized_shape=4, elementwise_affine=False), (2, 3, 4)),
    ("LayerNorm", dict(normalized_shape=4, bias=False), (2, 3, 4)),
    ("GroupNorm", dict(num_groups=2, num_channels=6), (2, 6, 3, 4)),
    ("GroupNorm", dict(num_groups=3, num_channels=3, affine=False), (4, 3, 5)),
    ("GroupNorm", dict(num_groups=1, num_channels=4, eps=1e-3), (2, 4)),
    ("GroupNorm", dict(num_groups=2, num_channels=4, bias=False), (2, 4, 3)),
    ("RMSNorm", dict(normalized_shape=6), (3, 6)),
    ("RMSNorm", dict(normalized_shape=(2, 3), eps=1e-4), (4, 2, 3)),
    ("RMSNorm", dict(normalized_shape=3, elementwise_affine=False), (2, 3)),
]


@pytest.mark.parametrize("cls,kw,shape", ROW_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_norm_modules_match_torch(cls, kw, shape, dtype):
    torch = pytest.importorskip("torch")
    tdt = torch.float64 if dtype == np.float64 else torch.float32
    tmod = getattr(torch.nn, cls)(**kw).to(tdt)
    cmod = getattr(nn, cls)(**kw).to(dtype)
    assert repr(cmod) == repr(tmod)
    with torch.no_grad():
        for p in tmod.parameters():
            p.uniform_(-1.5, 1.5)
    _load_from_torch(tmod, cmod)
    assert list(cmod.state_dict()) == list(tmod.state_dict())
    x = (np.random.default_rng(13).standard_normal(shape) * 2 + 0.5).astype(dtype)
    _step(torch, tmod, cmod, x, dtype)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 4), groups=st.integers(1, 3), cg=st.integers(1, 3),
       length=st.integers(1, 5), seed=st.integers(0, 1000))
def test_hypothesis_group_and_layer_norm_vs_torch(n, groups, cg, length, seed):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    c = groups * cg
    x = rng.standard_normal((n, c, length)) * 3
    w, b = rng.standard_normal(c), rng.standard_normal(c)
    for cfn, tfn, is_bn in (
        (lambda t, w, b: F.group_norm(t, groups, w, b),
         lambda t, w, b: torch.nn.functional.group_norm(t, groups, w, b), False),
        (lambda t, w, b: F.layer_norm(t, (length,)),
         lambda t, w, b: torch.nn.functional.layer_norm(t, (length,)), False),
        (lambda t, w, b: F.batch_norm(t, None, None, w, b, True),
         lambda t, w, b: torch.nn.functional.batch_norm(t, None, None, w, b, True),
         True),
    ):
        if n * length * (1 if is_bn else cg) == 1:
            continue  # one value per channel: an error in both (tested below)
        tx = torch.tensor(x, requires_grad=True)
        ty = tfn(tx, torch.tensor(w), torch.tensor(b))
        cx = _t(x, True)
        cy = cfn(cx, _t(w), _t(b))
        np.testing.assert_allclose(cy.detach().numpy(), ty.detach().numpy(),
                                   rtol=1e-9, atol=1e-9)
        g = rng.standard_normal(x.shape)
        ty.backward(torch.tensor(g))
        cy.backward(_t(g))
        np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=1e-8,
                                   atol=1e-8)


# ---------------------------------------------------------------------------
# bad input: torch's exception types and messages, state unchanged


def test_batch_norm_bad_input_changes_nothing():
    bn = nn.BatchNorm2d(3)
    before = {k: v.numpy().copy() for k, v in bn.state_dict().items()}
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        bn(cygrad.randn(2, 3, 5))
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements "
                                           "not 3"):
        bn(cygrad.randn(2, 4, 5, 5))
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when "
                                         r"training, got input size "
                                         r"cygrad.Size\(\[1, 3, 1, 1\]\)"):
        bn(cygrad.randn(1, 3, 1, 1))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(cygrad.randn(2, 3, 5, 5))
    for k, v in bn.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k], err_msg=k)


def test_row_norm_bad_input():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected "
                                           r"input with shape \[\*, 5\], but got input "
                                           r"of size\[2, 4\]"):
        nn.LayerNorm(5)(cygrad.randn(2, 4))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3, 5\], expected "
                                           r"input with shape \[\*, 3, 5\]"):
        nn.LayerNorm((3, 5))(cygrad.randn(2, 4, 5))
    with pytest.raises(ValueError, match=r"num_channels \(5\) must be divisible by "
                                         r"num_groups \(2\)"):
        nn.GroupNorm(2, 5)
    with pytest.raises(RuntimeError, match=r"Expected weight to be a vector of size "
                                           r"equal to the number of channels in input, "
                                           r"but got weight of shape \[4\] and input "
                                           r"of shape \[2, 6, 3\]"):
        nn.GroupNorm(2, 4)(cygrad.randn(2, 6, 3))
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*5\]"):
        nn.RMSNorm(5)(cygrad.randn(2, 4))


def test_norm_error_types_match_torch():
    torch = pytest.importorskip("torch")
    cases = [
        lambda M: M.nn.BatchNorm2d(3)(M.randn(2, 4, 5, 5)),
        lambda M: M.nn.BatchNorm2d(3)(M.randn(2, 3, 5)),
        lambda M: M.nn.BatchNorm1d(3)(M.randn(1, 3)),
        lambda M: M.nn.LayerNorm(5)(M.randn(2, 4)),
        lambda M: M.nn.GroupNorm(2, 5),
        lambda M: M.nn.GroupNorm(2, 4)(M.randn(2, 6, 3)),
        lambda M: M.nn.RMSNorm(5)(M.randn(2, 4)),
        lambda M: M.nn.GroupNorm(2, 2)(M.randn(1, 2)),
    ]
    for case in cases:
        with pytest.raises(Exception) as te:
            case(torch)
        with pytest.raises(Exception) as ce:
            case(cygrad)
        assert type(ce.value) is type(te.value), (ce.value, te.value)


def test_empty_batch_like_torch():
    torch = pytest.importorskip("torch")
    bn, tbn = nn.BatchNorm1d(4), torch.nn.BatchNorm1d(4)
    x = cygrad.zeros(0, 4, 3, requires_grad=True)
    y = bn(x)
    ty = tbn(torch.zeros(0, 4, 3))
    assert tuple(y.shape) == tuple(ty.shape) == (0, 4, 3)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 4, 3)
    for name, buf in tbn.named_buffers():  # kept, and the batch counted, as torch
        np.testing.assert_array_equal(getattr(bn, name).numpy(), buf.numpy())
    assert tuple(F.layer_norm(cygrad.zeros(0, 5), 5).shape) == (0, 5)


def test_instance_norm_functional_gradcheck():
    rng = np.random.default_rng(5)
    x = _t(rng.standard_normal((2, 3, 4)), True)
    w = _t(rng.uniform(0.5, 1.5, 3), True)
    b = _t(rng.standard_normal(3), True)
    assert gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), [x, w, b])
    assert gradgradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                         [x, w, b])


def test_instance_norm_closed_form_and_running_stats():
    x = np.arange(12.0).reshape(2, 2, 3) ** 1.5
    out = F.instance_norm(cygrad.tensor(x)).numpy()
    mu = x.mean(-1, keepdims=True)
    want = (x - mu) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    rm, rv = cygrad.zeros(2, dtype=cygrad.float64), cygrad.ones(2, dtype=cygrad.float64)
    F.instance_norm(cygrad.tensor(x), rm, rv, momentum=0.5)
    np.testing.assert_allclose(rm.numpy(), 0.5 * x.mean(-1).mean(0), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.5 + 0.5 * x.var(-1, ddof=1).mean(0),
                               rtol=1e-12)


def test_instance_norm_bad_input():
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.InstanceNorm2d(3)(cygrad.randn(2, 3))
    with pytest.raises(ValueError, match=r"dim=1 to match num_features \(3\)"):
        nn.InstanceNorm1d(3, affine=True)(cygrad.randn(2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(cygrad.randn(2, 4, 5))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(cygrad.randn(2, 3, 1))
    with pytest.raises(RuntimeError, match="running_mean should contain 3"):
        F.instance_norm(cygrad.randn(2, 3, 4), cygrad.zeros(2), cygrad.ones(3))
    with pytest.raises(ValueError, match="expected 5D input"):
        nn.BatchNorm3d(3)(cygrad.randn(2, 3, 4, 4))
