"""Embedding, EmbeddingBag, F.embedding and F.one_hot against torch."""

import numpy as np
import pytest

import cygrad
import cygrad.nn.functional as F
from cygrad import nn
from cygrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")


def _pair(num=7, dim=3, dtype=np.float64, **kw):
    tm = torch.nn.Embedding(num, dim, dtype=getattr(torch, np.dtype(dtype).name), **kw)
    cm = nn.Embedding(num, dim, dtype=dtype, **kw)
    cm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return tm, cm


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-5)])
@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}, {"padding_idx": -1},
                                {"scale_grad_by_freq": True},
                                {"max_norm": 1.0}, {"max_norm": 0.5, "norm_type": 1.0},
                                {"padding_idx": 0, "scale_grad_by_freq": True}])
def test_embedding_matches_torch(kw, dtype, tol):
    tm, cm = _pair(dtype=dtype, **kw)
    idx = np.array([[0, 2, 2, 6], [1, 2, 0, 5]])
    a, b = tm(torch.tensor(idx)), cm(cygrad.tensor(idx))
    g = np.random.default_rng(0).standard_normal(a.shape).astype(dtype)
    a.backward(torch.tensor(g))
    b.backward(cygrad.tensor(g))
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=tol)
    np.testing.assert_allclose(cm.weight.detach().numpy(), tm.weight.detach().numpy(),
                               atol=tol)
    np.testing.assert_allclose(cm.weight.grad.numpy(), tm.weight.grad.numpy(), atol=tol)


def test_embedding_repr_and_init():
    assert repr(nn.Embedding(5, 3, padding_idx=-1, max_norm=1.0, norm_type=1.0,
                             scale_grad_by_freq=True)) == repr(
        torch.nn.Embedding(5, 3, padding_idx=-1, max_norm=1.0, norm_type=1.0,
                           scale_grad_by_freq=True))
    e = nn.Embedding(2000, 8, padding_idx=3)
    w = e.weight.detach().numpy()
    assert np.all(w[3] == 0)
    assert abs(w.std() - 1) < 0.05 and abs(w.mean()) < 0.05
    assert e.padding_idx == 3 and list(e.state_dict()) == ["weight"]


def test_from_pretrained_freeze():
    t = cygrad.tensor(np.arange(6.0).reshape(3, 2))
    e = nn.Embedding.from_pretrained(t)
    assert not e.weight.requires_grad
    assert e(cygrad.tensor([2])).tolist() == [[4.0, 5.0]]
    e2 = nn.Embedding.from_pretrained(t, freeze=False, padding_idx=0)
    assert e2.weight.requires_grad and e2.weight[0].tolist() == [0.0, 1.0]
    with pytest.raises(AssertionError):
        nn.Embedding.from_pretrained(cygrad.ones(3))


def test_embedding_gradcheck():
    w = cygrad.tensor(np.random.default_rng(1).standard_normal((5, 3)),
                      requires_grad=True)
    idx = cygrad.tensor([[0, 4, 4], [1, 1, 3]])
    # padding_idx and scale_grad_by_freq are not true gradients (by design,
    # as torch), so only the plain lookup is checked numerically.
    assert gradcheck(lambda w: F.embedding(idx, w), (w,))
    assert gradgradcheck(lambda w: F.embedding(idx, w) ** 2, (w,))


def test_embedding_bad_input_before_any_work():
    w = cygrad.randn(5, 3, requires_grad=True)
    before = w.detach().numpy().copy()
    with pytest.raises(RuntimeError, match="'indices'.*Long, Int.*Float"):
        F.embedding(cygrad.tensor([1.0]), w)
    for bad in ([5], [-1], [0, 9]):
        with pytest.raises(IndexError, match="index out of range in self.*index"):
            F.embedding(cygrad.tensor(bad), w, max_norm=0.1)
    np.testing.assert_array_equal(w.detach().numpy(), before)
    with pytest.raises(AssertionError, match="Padding_idx"):
        nn.Embedding(5, 3, padding_idx=5)
    with pytest.raises(AssertionError, match="Padding_idx"):
        nn.Embedding(5, 3, padding_idx=-6)
    assert F.embedding(cygrad.tensor(np.array([1], np.int32)), w).shape == (1, 3)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 2])
@pytest.mark.parametrize("two_d", [False, True])
def test_embedding_bag_matches_torch(mode, pad, two_d):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((6, 4))
    if two_d:
        idx, off = np.array([[1, 2, 2], [5, 0, 3]]), None
    else:
        idx, off = np.array([1, 2, 2, 5, 0, 3, 2]), np.array([0, 2, 2, 5])
    tw, cw = torch.tensor(w, requires_grad=True), cygrad.tensor(w, requires_grad=True)
    to = None if off is None else torch.tensor(off)
    co = None if off is None else cygrad.tensor(off)
    a = torch.nn.functional.embedding_bag(torch.tensor(idx), tw, to, mode=mode,
                                          padding_idx=pad)
    b = F.embedding_bag(cygrad.tensor(idx), cw, co, mode=mode, padding_idx=pad)
    g = rng.standard_normal(a.shape)
    a.backward(torch.tensor(g))
    b.backward(cygrad.tensor(g))
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(cw.grad.numpy(), tw.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_embedding_bag_float32_sums_and_means_round_as_torch(seed):
    """Bags add their rows in input order and a mean divides by its count:
    the same float32 bits as torch, and the same weight gradient."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((10, 4)).astype(np.float32)
    inp = rng.integers(0, 10, 40)
    off = np.sort(rng.choice(np.arange(1, 40), 5, replace=False))
    off = np.concatenate([[0], off])
    for mode in ("sum", "mean", "max"):
        out, grads = [], []
        for T, FF in ((torch, torch.nn.functional), (cygrad, F)):
            W = T.tensor(w, requires_grad=True)
            o = FF.embedding_bag(T.tensor(inp), W, T.tensor(off), mode=mode)
            (o * T.arange(o.numel(), dtype=T.float32).reshape(o.shape)).sum().backward()
            out.append(o.detach().numpy())
            grads.append(W.grad.numpy())
        np.testing.assert_array_equal(out[1], out[0], err_msg=mode)
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, err_msg=mode)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_gradgradcheck(mode):
    w = cygrad.randn(6, 3, dtype=cygrad.float64, requires_grad=True)
    idx, off = cygrad.tensor([1, 2, 2, 5, 0, 1]), cygrad.tensor([0, 2, 2, 5])
    assert gradgradcheck(lambda w: F.embedding_bag(idx, w, off, mode=mode), (w,))


def test_embedding_bag_module_and_weights():
    tm = torch.nn.EmbeddingBag(6, 3, mode="sum", dtype=torch.float64)
    cm = nn.EmbeddingBag(6, 3, mode="sum", dtype=np.float64)
    cm.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    assert repr(cm) == repr(tm)
    idx, off = np.array([0, 1, 4, 5]), np.array([0, 1, 3])
    psw = np.array([0.5, 2.0, -1.0, 3.0])
    a = tm(torch.tensor(idx), torch.tensor(off), torch.tensor(psw))
    b = cm(cygrad.tensor(idx), cygrad.tensor(off), cygrad.tensor(psw))
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=1e-12)
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        F.embedding_bag(cygrad.tensor(idx), cm.weight, cygrad.tensor(off),
                        mode="max", per_sample_weights=cygrad.tensor(psw))
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(cygrad.tensor([[1]]), cm.weight, cygrad.tensor([0]))
    with pytest.raises(ValueError, match="mode has to be one of"):
        F.embedding_bag(cygrad.tensor(idx), cm.weight, cygrad.tensor(off), mode="x")


def test_one_hot():
    t = np.array([[0, 3], [1, 1]])
    for n in (-1, 5):
        a = torch.nn.functional.one_hot(torch.tensor(t), n)
        b = F.one_hot(cygrad.tensor(t), n)
        assert b.dtype == cygrad.int64
        np.testing.assert_array_equal(b.numpy(), a.numpy())
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(cygrad.tensor([1.0]))
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(cygrad.tensor([-1]))
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(cygrad.tensor([3]), 3)
