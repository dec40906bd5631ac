"""``nn.utils.prune``: masks, state dicts, forward values and gradients step
by step against torch on the same model (the deterministic methods), the
random methods' counts, ``remove``/``is_pruned``, and bad input."""

import numpy as np
import pytest

import cygrad
from cygrad import nn
from cygrad.nn.utils import prune


def _models(torch):
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(64, 5)).double()
    c = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(),
                      nn.Linear(64, 5)).double()
    c.load_state_dict({k: cygrad.tensor(v.numpy()) for k, v in t.state_dict().items()})
    return t, c


STEPS = [
    lambda P, m, lib: P.l1_unstructured(m[0], "weight", amount=0.3),
    lambda P, m, lib: P.l1_unstructured(m[0], "weight", amount=5),
    lambda P, m, lib: P.ln_structured(m[0], "weight", amount=1, n=2, dim=0),
    lambda P, m, lib: P.ln_structured(m[3], "weight", amount=0.4, n=1, dim=1),
    lambda P, m, lib: P.ln_structured(m[3], "weight", amount=1, n=float("inf"), dim=0),
    lambda P, m, lib: P.custom_from_mask(
        m[3], "bias", mask=lib.tensor([1.0, 0, 1, 0, 1], dtype=lib.float64)),
    lambda P, m, lib: P.global_unstructured(
        [(m[0], "weight"), (m[3], "weight"), (m[0], "bias")],
        pruning_method=P.L1Unstructured, amount=0.25),
    lambda P, m, lib: P.l1_unstructured(
        m[0], "bias", amount=1, importance_scores=lib.tensor([3.0, 1, 2, 4],
                                                            dtype=lib.float64)),
    lambda P, m, lib: P.identity(m[3], "bias"),
]


def test_pruning_sequence_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune as tprune
    t, c = _models(torch)
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6))
    for i, step in enumerate(STEPS):
        step(tprune, t, torch)
        step(prune, c, cygrad)
        tsd, csd = t.state_dict(), c.state_dict()
        assert list(csd) == list(tsd), i
        for k in tsd:
            np.testing.assert_array_equal(csd[k].numpy(), tsd[k].numpy(), err_msg=k)
        ty, cy = t(torch.tensor(x)), c(cygrad.tensor(x))
        (ty * ty).sum().backward()
        (cy * cy).sum().backward()
        np.testing.assert_allclose(cy.detach().numpy(), ty.detach().numpy(),
                                   rtol=1e-10, atol=1e-12)
        for mod in (0, 3):
            name = "weight_orig" if hasattr(t[mod], "weight_orig") else "weight"
            np.testing.assert_allclose(getattr(c[mod], name).grad.numpy(),
                                       getattr(t[mod], name).grad.numpy(),
                                       rtol=1e-10, atol=1e-12)
        t.zero_grad()
        c.zero_grad()
    for name in ("weight", "bias"):
        tprune.remove(t[0], name)
        prune.remove(c[0], name)
    assert list(c.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        np.testing.assert_array_equal(c.state_dict()[k].numpy(), v.numpy())
    assert isinstance(c[0].weight, nn.Parameter)
    assert prune.is_pruned(c) and tprune.is_pruned(t)
    prune.remove(c[3], "weight")
    prune.remove(c[3], "bias")
    assert not prune.is_pruned(c)


def test_pruned_weight_is_orig_times_mask_and_gets_no_gradient_where_masked():
    m = nn.Linear(4, 3)
    prune.l1_unstructured(m, "weight", amount=0.5)
    mask = m.weight_mask.numpy()
    assert mask.sum() == 6
    np.testing.assert_array_equal(m.weight.detach().numpy(),
                                  m.weight_orig.detach().numpy() * mask)
    m(cygrad.randn(2, 4)).sum().backward()
    assert np.all(m.weight_orig.grad.numpy()[mask == 0] == 0)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    # the hook recomputes the weight from a changed original
    with cygrad.no_grad():
        m.weight_orig.mul_(2)
    m(cygrad.randn(1, 4))
    np.testing.assert_array_equal(m.weight.detach().numpy(),
                                  m.weight_orig.detach().numpy() * mask)


@pytest.mark.parametrize("amount", (0, 0.3, 4, 12))
def test_random_unstructured_prunes_the_right_count(amount):
    m = nn.Linear(4, 3)
    prune.random_unstructured(m, "weight", amount=amount)
    want = amount if isinstance(amount, int) else round(amount * 12)
    assert int((m.weight_mask.numpy() == 0).sum()) == want


def test_random_structured_prunes_whole_channels():
    m = nn.Conv2d(2, 6, 3)
    prune.random_structured(m, "weight", amount=0.5, dim=0)
    per_channel = m.weight_mask.numpy().reshape(6, -1)
    assert sorted(per_channel.min(1) == per_channel.max(1)) == [True] * 6
    assert int((per_channel.max(1) == 0).sum()) == 3
    # pruning again chooses among the surviving channels only
    prune.random_structured(m, "weight", amount=1, dim=0)
    assert int((m.weight_mask.numpy().reshape(6, -1).max(1) == 0).sum()) == 4
    assert isinstance(next(iter(m._forward_pre_hooks.values())),
                      prune.PruningContainer)


def test_random_methods_choose_torchs_entries_after_the_same_seed():
    # each draw is torch's (rand_like of the tensor, rand of the channels),
    # so a seeded run zeroes the very entries torch's does, also when a
    # second pruning chooses among the survivors through the container
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune as tprune
    masks = []
    for lib, P in ((torch, tprune), (cygrad, prune)):
        lib.manual_seed(3)
        m = lib.nn.Conv2d(3, 6, 3)
        P.random_unstructured(m, "weight", amount=0.3)
        P.random_unstructured(m, "weight", amount=7)
        P.random_structured(m, "weight", amount=2, dim=0)
        P.random_structured(m, "weight", amount=0.5, dim=1)
        P.random_unstructured(m, "bias", amount=0.5)
        lin = lib.nn.Linear(5, 4).double()
        P.random_unstructured(lin, "weight", amount=0.4)
        masks.append([m.weight_mask.numpy(), m.bias_mask.numpy(),
                      lin.weight_mask.numpy(), lib.rand(3).numpy()])
    for want, got in zip(*masks):
        np.testing.assert_array_equal(got, want)


def test_prune_method_and_container_api():
    t = cygrad.tensor([[0.5, -2.0], [1.0, 0.1]])
    pruned = prune.L1Unstructured(amount=2).prune(t)
    np.testing.assert_array_equal(pruned.numpy(), [[0.0, -2.0], [1.0, 0.0]])
    mask = prune.LnStructured(amount=1, n=1, dim=0).compute_mask(
        t, default_mask=cygrad.ones(2, 2))
    np.testing.assert_array_equal(mask.numpy(), [[1.0, 1.0], [0.0, 0.0]])
    m = nn.Linear(2, 2)
    prune.l1_unstructured(m, "weight", 1)
    prune.l1_unstructured(m, "weight", 1)
    hook = next(iter(m._forward_pre_hooks.values()))
    assert len(hook) == 2 and isinstance(hook[0], prune.L1Unstructured)


BAD = [
    (lambda P, m: P.l1_unstructured(m, "weight", amount=-1), ValueError,
     "should either be a float in the range"),
    (lambda P, m: P.l1_unstructured(m, "weight", amount=1.5), ValueError,
     "should either be a float in the range"),
    (lambda P, m: P.l1_unstructured(m, "weight", amount="half"), TypeError,
     "Invalid type for amount"),
    (lambda P, m: P.l1_unstructured(m, "weight", amount=100), ValueError,
     "should be smaller than the number of parameters to prune"),
    (lambda P, m: P.remove(m, "weight"), ValueError, "has to be pruned before"),
    (lambda P, m: P.ln_structured(m, "weight", amount=1, n=2, dim=5), IndexError,
     "Invalid index 5"),
    (lambda P, m: P.l1_unstructured(m, "nope", amount=1), AttributeError, "nope"),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input(i):
    fn, exc, phrase = BAD[i]
    with pytest.raises(exc, match=phrase):
        fn(prune, nn.Linear(3, 2))


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input_is_bad_for_torch_too(i):
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune as tprune
    fn, exc, phrase = BAD[i]
    with pytest.raises(exc, match=phrase):
        fn(tprune, torch.nn.Linear(3, 2))
