"""The small torch.nn modules over existing functional forms (Fold, Unfold,
PairwiseDistance, CosineSimilarity, ChannelShuffle) against torch: reprs,
values and gradients, and channel_shuffle's errors."""

import numpy as np
import pytest

import cygrad
from cygrad.autograd import gradcheck

torch = pytest.importorskip("torch")

CASES = [
    (lambda m: m.nn.ChannelShuffle(3), [(2, 6, 3, 2)]),
    (lambda m: m.nn.ChannelShuffle(2), [(2, 4, 5)]),
    (lambda m: m.nn.Unfold(2, padding=1, stride=2), [(2, 3, 5, 4)]),
    (lambda m: m.nn.Unfold((2, 3), dilation=(1, 2)), [(1, 2, 5, 7)]),
    (lambda m: m.nn.Fold((4, 5), 2), [(2, 12, 12)]),
    (lambda m: m.nn.Fold(3, 2, padding=1), [(1, 8, 16)]),
    (lambda m: m.nn.PairwiseDistance(p=1.5, keepdim=True), [(4, 5), (4, 5)]),
    (lambda m: m.nn.PairwiseDistance(), [(3, 4), (1, 4)]),
    (lambda m: m.nn.CosineSimilarity(dim=0), [(4, 5), (4, 5)]),
    (lambda m: m.nn.CosineSimilarity(), [(2, 3, 4), (2, 3, 4)]),
]


@pytest.mark.parametrize("build,shapes", CASES)
def test_module_matches_torch(build, shapes):
    rng = np.random.default_rng(len(shapes) + shapes[0][-1])
    arrays = [rng.standard_normal(s) for s in shapes]
    got = []
    for m in (cygrad, torch):
        mod = build(m)
        ts = [m.tensor(a, requires_grad=True) for a in arrays]
        y = mod(*ts)
        w = np.random.default_rng(3).standard_normal(tuple(y.shape))
        (y * m.tensor(w)).sum().backward()
        got.append((repr(mod), y.detach().numpy(), [t.grad.numpy() for t in ts]))
    (rc, yc, gc), (rt, yt, gt) = got
    assert rc == rt
    np.testing.assert_allclose(yc, yt, rtol=1e-12, atol=1e-12)
    for a, b in zip(gc, gt, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_channel_shuffle_gradcheck_and_closed_form():
    x = cygrad.tensor(np.arange(6.0).reshape(1, 6, 1), requires_grad=True)
    out = cygrad.nn.functional.channel_shuffle(x, 2)
    assert out.reshape(-1).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert gradcheck(lambda t: cygrad.nn.functional.channel_shuffle(t, 3), [x])


@pytest.mark.parametrize("shape,groups", [((2, 3), 1), ((1, 5, 2), 2), ((1, 4, 2), 0)])
def test_channel_shuffle_errors_as_torch(shape, groups):
    with pytest.raises(RuntimeError) as want:
        torch.nn.functional.channel_shuffle(torch.rand(*shape), groups)
    with pytest.raises(RuntimeError) as got:
        cygrad.nn.functional.channel_shuffle(cygrad.rand(*shape), groups)
    assert str(got.value) == str(want.value)
