"""The random stream is torch's: after the same seed every sampler gives
torch's numbers and leaves the generator in torch's state.

The first tests need no torch: MT19937's reference outputs and the
recipes' values for seed 0.  The rest compare with torch draw for draw.
"""

import numpy as np
import pytest

import cygrad
from cygrad._kernels.rng import MT


def test_seed_zero_first_floats_are_the_mt19937_words_scaled():
    # MT19937 seeded with 0 by the reference initialisation: first words
    # 2357136044, 2546248239, 3071714933; rand keeps their low 24 bits
    g = MT(0)
    assert [g.u32() for _ in range(3)] == [2357136044, 2546248239, 3071714933]
    cygrad.manual_seed(0)
    want = np.array([w & 0xFFFFFF for w in (2357136044, 2546248239, 3071714933)],
                    np.float32) / np.float32(2 ** 24)
    np.testing.assert_array_equal(cygrad.rand(3).numpy(), want)


def test_state_round_trips_and_continues_the_stream():
    cygrad.manual_seed(123)
    cygrad.randn(3)                       # leaves a cached normal behind
    state = cygrad.get_rng_state()
    assert state.shape == (5056,) and state.dtype == cygrad.uint8
    a = cygrad.randn(40).numpy(), cygrad.randn(3).numpy()
    cygrad.set_rng_state(state)
    b = cygrad.randn(40).numpy(), cygrad.randn(3).numpy()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(RuntimeError, match="size 5056"):
        cygrad.set_rng_state(cygrad.zeros(45, dtype=cygrad.uint8))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        cygrad.set_rng_state(cygrad.zeros(5056, dtype=cygrad.uint8))


def test_generators_are_independent_and_cloned_state_repeats():
    g = cygrad.Generator().manual_seed(7)
    h = g.clone_state()
    cygrad.manual_seed(1)
    first = cygrad.rand(5, generator=g).numpy()
    np.testing.assert_array_equal(cygrad.rand(5, generator=h).numpy(), first)
    assert g.initial_seed() == 7


def test_copies_and_pickles_carry_the_state_and_draw_on_their_own():
    import copy
    import pickle

    g = cygrad.Generator().manual_seed(3)
    cygrad.rand(5, generator=g)
    want = cygrad.rand(4, generator=g.clone_state()).numpy()
    for h in (copy.copy(g), copy.deepcopy(g), pickle.loads(pickle.dumps(g))):
        assert h is not g and h.initial_seed() == 3
        np.testing.assert_array_equal(cygrad.rand(4, generator=h).numpy(), want)
    # none of the copies advanced g
    np.testing.assert_array_equal(cygrad.rand(4, generator=g).numpy(), want)


# --- against torch ------------------------------------------------------------

CASES = {
    "rand": lambda t: t.rand(3, 5),
    "rand f64": lambda t: t.rand(7, dtype=t.float64),
    "rand f16": lambda t: t.rand(20, dtype=t.float16),
    "randn 3": lambda t: t.randn(3),
    "randn 40": lambda t: t.randn(40),
    "randn 100003": lambda t: t.randn(100003),
    "randn f64": lambda t: t.randn(1001, dtype=t.float64),
    "randn f64 small": lambda t: t.randn(5, dtype=t.float64),
    "randint": lambda t: t.randint(0, 100, (50,)),
    "randint wide": lambda t: t.randint(-5, 2 ** 40, (50,)),
    "randperm": lambda t: t.randperm(1000),
    "normal ff": lambda t: t.normal(2.0, 3.0, size=(40,)),
    "normal tt": lambda t: t.normal(t.zeros(20), t.ones(20) * 2),
    "normal tf": lambda t: t.normal(t.arange(20.), 0.5),
    "bernoulli probs": lambda t: t.bernoulli(t.full((30,), 0.3)),
    "bernoulli p": lambda t: t.bernoulli(t.zeros(30), p=0.3),
    "multinomial 1": lambda t: t.multinomial(t.tensor([0.1, 0.2, 0.3, 0.4]), 1),
    "multinomial rows": lambda t: t.multinomial(t.tensor([[0.1, 0.2, 0.3, 0.4],
                                                          [1.0, 0, 2, 3]]), 1),
    "multinomial without": lambda t: t.multinomial(t.tensor([0.1, 0.2, 0.3, 0.4]), 3),
    "multinomial with": lambda t: t.multinomial(t.tensor([0.1, 0.2, 0.3, 0.4]), 20,
                                                replacement=True),
    "normal_": lambda t: t.empty(5, 4).normal_(1, 2),
    "normal_ transposed": lambda t: t.empty(5, 4).t().normal_(1, 2),
    "uniform_": lambda t: t.empty(7, 3).uniform_(-1, 3),
    "uniform_ f64": lambda t: t.empty(7, 3, dtype=t.float64).uniform_(-1, 3),
    "random_ int64": lambda t: t.empty(10, dtype=t.int64).random_(),
    "random_ float": lambda t: t.empty(10).random_(),
    "random_ to": lambda t: t.empty(10, dtype=t.int32).random_(5),
    "random_ from to": lambda t: t.empty(10).random_(2, 9),
    "bernoulli_": lambda t: t.empty(20).bernoulli_(0.7),
    "bernoulli_ tensor": lambda t: t.empty(20).bernoulli_(t.rand(20)),
    "exponential_": lambda t: t.empty(20).exponential_(3),
    "exponential_ f64": lambda t: t.empty(20, dtype=t.float64).exponential_(0.5),
    "randn_like": lambda t: t.randn_like(t.zeros(30)),
    "randint_like": lambda t: t.randint_like(t.zeros(30), 5, 10),
    "Linear": lambda t: t.nn.Linear(30, 20).weight,
    "Conv2d bias": lambda t: t.nn.Conv2d(3, 8, 3).bias,
    "Embedding": lambda t: t.nn.Embedding(65, 32).weight,
    "LSTM": lambda t: t.nn.LSTM(8, 16).weight_hh_l0,
    "TransformerEncoderLayer": lambda t: t.nn.TransformerEncoderLayer(16, 4, 32)
    .linear2.weight,
    "xavier_normal_": lambda t: t.nn.init.xavier_normal_(t.empty(10, 20)),
    "kaiming_uniform_": lambda t: t.nn.init.kaiming_uniform_(t.empty(10, 20)),
    "trunc_normal_ narrow": lambda t: t.nn.init.trunc_normal_(t.empty(10, 20), std=0.02),
    "trunc_normal_ tail": lambda t: t.nn.init.trunc_normal_(t.empty(10, 20), 1.0, 1.0,
                                                            1.5, 3.0),
    "dropout": lambda t: t.nn.functional.dropout(t.ones(64, 33), 0.3),
    "rrelu": lambda t: t.nn.functional.rrelu(t.linspace(-2, 1, 50), 0.1, 0.3, True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_numbers_as_torch(name):
    torch = pytest.importorskip("torch")
    cygrad.manual_seed(11)
    torch.manual_seed(11)
    ours = CASES[name](cygrad).detach().numpy()
    theirs = CASES[name](torch).detach().numpy()
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(cygrad.get_rng_state().numpy(),
                                  torch.get_rng_state().numpy())


def test_a_torch_state_continues_here():
    torch = pytest.importorskip("torch")
    torch.manual_seed(99)
    torch.randn(7)
    cygrad.set_rng_state(cygrad.tensor(torch.get_rng_state().numpy()))
    np.testing.assert_array_equal(cygrad.randn(9).numpy(), torch.randn(9).numpy())


def test_data_loader_shuffles_in_torchs_order():
    torch = pytest.importorskip("torch")
    from cygrad.utils.data import DataLoader, TensorDataset

    def batches(t, loader, dataset):
        t.manual_seed(0)
        dl = loader(dataset(t.arange(20.0)), batch_size=6, shuffle=True)
        return [b.tolist() for _ in range(2) for (b,) in dl]

    assert batches(cygrad, DataLoader, TensorDataset) == batches(
        torch, torch.utils.data.DataLoader, torch.utils.data.TensorDataset)


def _seeded_training(t):
    """A seeded script end to end: data, initial weights, shuffles, dropout
    masks and Adam steps all come from the seed."""
    t.manual_seed(0)
    x = t.randn(256, 10)
    y = (x[:, :3].sum(1) > 0).long()
    loader = t.utils.data.DataLoader(t.utils.data.TensorDataset(x, y), batch_size=32,
                                     shuffle=True)
    model = t.nn.Sequential(t.nn.Linear(10, 64), t.nn.ReLU(), t.nn.Dropout(0.2),
                            t.nn.Linear(64, 2))
    opt = t.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(2):
        for xb, yb in loader:
            loss = t.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def test_a_seeded_training_script_follows_torchs_losses():
    torch = pytest.importorskip("torch")
    import torch.utils.data  # noqa: F401  (the submodule the script reaches)

    np.testing.assert_allclose(_seeded_training(cygrad), _seeded_training(torch),
                               rtol=1e-5, atol=1e-6)
