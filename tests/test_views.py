"""Views: storage and version counter are shared with the base, and writes
through a view (or into a base that has views) differentiate as torch's do.

Each scenario is one program written against ``m`` (torch or cygrad) and
checked for equal values and gradients."""

import numpy as np
import pytest

import cygrad

torch = pytest.importorskip("torch")

VIEWS = [
    lambda x: x.view(6, 4), lambda x: x.reshape(4, 6), lambda x: x.flatten(),
    lambda x: x.unsqueeze(1), lambda x: x[None].squeeze(0), lambda x: x.transpose(0, 2),
    lambda x: x.permute(1, 2, 0), lambda x: x[:, 1], lambda x: x[1:, ::2],
    lambda x: x[..., None, 0], lambda x: x.T, lambda x: x[0].t(),
    lambda x: x[:, :1].expand(2, 5, 4), lambda x: x.view(-1)[3:9],
]


@pytest.mark.parametrize("i", range(len(VIEWS)))
def test_views_share_storage_and_version(i):
    x = cygrad.arange(24.0).reshape(2, 3, 4)
    v = VIEWS[i](x)
    assert np.shares_memory(v.numpy(), x.numpy())
    assert v._base is x._base if x._base is not None else v._base is x
    ver = x._version
    with cygrad.no_grad():
        x.mul_(2)
    assert v._version == x._version == ver + 1
    np.testing.assert_array_equal(v.numpy(), VIEWS[i](torch.arange(24.0).reshape(
        2, 3, 4) * 2).numpy())


def test_writing_through_a_view_changes_the_base():
    x = cygrad.zeros(3, 4)
    v = x[1]
    v[2] = 7.0
    v2 = x.t()
    v2[0, 2] = 5.0
    assert x[1, 2].item() == 7.0 and x[2, 0].item() == 5.0
    assert x._version == v._version == 2


def test_reshape_of_a_non_contiguous_tensor_copies():
    x = cygrad.arange(6.0).reshape(2, 3).t()
    y = x.reshape(6)
    assert not np.shares_memory(y.numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(6)


def _setup(m, seed=0):
    rng = np.random.default_rng(seed)
    a = m.tensor(rng.uniform(-1, 1, (3, 4)), requires_grad=True)
    w = m.tensor(rng.uniform(-1, 1, (4,)), requires_grad=True)
    return a, w


def _p1(m, a, w):   # write a row through a basic-index view
    b = a * 1
    v = b[1]
    v.mul_(w)
    return (b * b).sum()


def _p2(m, a, w):   # setitem of a tensor into a non-leaf
    b = a * 2
    b[0] = w
    return (b ** 3).sum()


def _p3(m, a, w):   # setitem through a transposed view
    b = a.clone()
    v = b.t()
    v[1, 2] = (w * 3).sum()
    return (b * b).sum() + (v ** 3).sum()


def _p4(m, a, w):   # other views created before the write are used after it
    b = a * 1
    v1 = b[0]
    v2 = b[:, 1]
    v1.add_(w)
    return (v2 * v2).sum() + (b ** 2).sum()


def _p5(m, a, w):   # view of a view
    b = a * 1
    v = b[1:][0]
    v[...] = w * w
    return (b.exp()).sum()


def _p6(m, a, w):   # augmented assignment with an advanced index
    b = a * 1
    b[[0, 2]] += w
    return (b * b).sum()


def _p7(m, a, w):   # in-place on the base, then a view made before it is read
    b = a * 1
    v = b[2]
    b.mul_(3)
    return (v * w).sum()


def _p8(m, a, w):   # a mask write through a view, with broadcasting
    b = a * 1
    v = b[:, 1:]
    v[v > 0] = 0.5
    return (b * a).sum() + (v * v).sum()


def _p9(m, a, w):   # clamp_ through a view
    b = a * 1
    v = b[:2]
    v.clamp_(-0.3, 0.3)
    return (b * w).sum()


def _p10(m, a, w):  # copy_ into a view, and writing into a leaf not requiring grad
    z = m.zeros(3, 4, dtype=a.dtype)
    z[1].copy_(w)
    z[2, :2] = a[0, :2] * 2
    return (z * a).sum()


def _p11(m, a, w):  # write through an unsqueezed/reshaped view
    b = a * 1
    v = b.reshape(2, 6)
    v[1, 1:3] = w[:2]
    u = b.unsqueeze(0)
    u[0, 0, 0] = w[3] * 2
    return (b * b * b).sum()


def _p12(m, a, w):  # views regenerated: a view of the result sees the new history
    b = a.exp()
    c = b * 1
    t = c.t()
    c[0, 0] = w.sum()
    return (t * t).sum() + b.sum()


PROGRAMS = [_p1, _p2, _p3, _p4, _p5, _p6, _p7, _p8, _p9, _p10, _p11, _p12]


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.__name__)
def test_gradient_through_view_writes_matches_torch(prog):
    res = []
    for m in (torch, cygrad):
        a, w = _setup(m)
        loss = prog(m, a, w)
        loss.backward()
        res.append((loss.item(), a.grad.numpy().copy(),
                    None if w.grad is None else w.grad.numpy().copy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-10, atol=1e-12)
    if res[0][2] is None:
        assert res[1][2] is None or not np.any(res[1][2])
    else:
        np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-10, atol=1e-12)


def test_view_write_gradients_pass_gradcheck():
    from cygrad.autograd import gradcheck
    a, w = _setup(cygrad)
    for prog in PROGRAMS:
        assert gradcheck(lambda u, z, _p=prog: _p(cygrad, u, z), (a, w))


def test_in_place_on_a_view_of_a_leaf_is_refused():
    for m in (torch, cygrad):
        a = m.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that "
                                               "requires grad is being used in an "
                                               "in-place operation"):
            a[1:].add_(1.0)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            a[0] = 2.0
        with m.no_grad():
            a[0] = 2.0
            a[1:].mul_(3)
        assert a.tolist() == [2.0, 3.0, 3.0] and a.is_leaf and a.requires_grad


def test_writing_into_an_expanded_view_is_refused():
    for m in (torch, cygrad):
        b = m.ones(3, 1, requires_grad=True) * 1
        v = b.expand(3, 4)
        with pytest.raises(RuntimeError, match="more than one element of the "
                                               "written-to tensor refers to a single "
                                               "memory location"):
            v.add_(1.0)


def test_saved_tensor_overwritten_through_a_view_is_caught():
    a = cygrad.ones(4, requires_grad=True)
    y = a.exp()
    s = (y * 1).sum() + y.sum()
    y[1:3].mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (s + y.sum()).backward()


def _p13(m, a, w):  # augmented assignment through a basic index (getitem, iadd, setitem)
    b = a * 1
    b[1:] += w
    b[0, 1:3] *= 2
    return (b * b).sum()


def test_augmented_assignment_through_a_basic_index_matches_torch():
    res = []
    for m in (torch, cygrad):
        a, w = _setup(m)
        _p13(m, a, w).backward()
        res.append((a.grad.numpy().copy(), w.grad.numpy().copy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)


def _p14(m, a, w):  # zero_ and fill_ (with a tensor value) through views
    b = a * 1
    b[0].zero_()
    b[:, 1].fill_(w.sum())
    return (b * b * a).sum()


def test_zero_and_fill_through_views_match_torch():
    res = []
    for m in (torch, cygrad):
        a, w = _setup(m)
        _p14(m, a, w).backward()
        res.append((a.grad.numpy().copy(), w.grad.numpy().copy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)
