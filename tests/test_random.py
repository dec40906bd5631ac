"""Random sampling: the distributions are torch's (moments, chi-square
against the exact probabilities, with fixed seeds), a seed reproduces its
numbers, the generator state round-trips through a uint8 tensor, and bad
arguments raise torch's errors before anything is drawn."""

import math

import numpy as np
import pytest

import cygrad

# chi-square critical values at p = 0.001
CHI2_001 = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52, 9: 27.88}


def chi2(counts, probs):
    counts = np.asarray(counts, np.float64)
    expected = counts.sum() * np.asarray(probs, np.float64)
    return float(((counts - expected) ** 2 / expected).sum())


def gen(seed=0):
    return cygrad.Generator().manual_seed(seed)


# --- multinomial ------------------------------------------------------------------

def test_multinomial_with_replacement_follows_the_weights():
    w = cygrad.tensor([1.0, 2.0, 3.0, 4.0])
    draws = cygrad.multinomial(w, 40000, replacement=True, generator=gen(1))
    assert draws.dtype == cygrad.int64 and draws.shape == (40000,)
    counts = np.bincount(draws.numpy(), minlength=4)
    assert chi2(counts, w.numpy() / w.numpy().sum()) < CHI2_001[3]


def test_multinomial_rows_and_zero_weights():
    w = cygrad.tensor([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
    draws = cygrad.multinomial(w, 1000, True, generator=gen(2)).numpy()
    assert draws.shape == (2, 1000)
    assert set(draws[0]) == {1}
    assert set(draws[1]) <= {0, 2} and abs((draws[1] == 0).mean() - 0.5) < 0.06


def test_multinomial_without_replacement_never_repeats_and_is_sequential():
    w = cygrad.tensor([5.0, 3.0, 1.0, 1.0])
    first = []
    for s in range(4000):
        d = cygrad.multinomial(w, 4, generator=gen(s)).tolist()
        assert sorted(d) == [0, 1, 2, 3]
        first.append(d[0])
    counts = np.bincount(first, minlength=4)
    assert chi2(counts, [0.5, 0.3, 0.1, 0.1]) < CHI2_001[3]
    # the second draw given the first is category 0: renormalised weights
    second = [cygrad.multinomial(w, 2, generator=gen(s)).tolist() for s in range(4000)]
    after0 = [b for a, b in second if a == 0]
    c = np.bincount(after0, minlength=4)[1:]
    assert chi2(c, [0.6, 0.2, 0.2]) < CHI2_001[2]


def test_multinomial_method_and_seed_reproducible():
    w = cygrad.tensor([0.2, 0.8])
    cygrad.manual_seed(5)
    a = w.multinomial(10, True)
    cygrad.manual_seed(5)
    b = cygrad.multinomial(w, 10, replacement=True)
    assert a.tolist() == b.tolist()


@pytest.mark.parametrize("args,exc,phrase", [
    (([1.0, -1.0], 1), RuntimeError, ("probability tensor contains either `inf`, "
     "`nan` or element < 0")),
    (([1.0, float("nan")], 1), RuntimeError, "probability tensor contains"),
    (([0.0, 0.0], 1), RuntimeError, ("invalid multinomial distribution (sum of "
     "probabilities <= 0)")),
    (([1.0, 1.0], 3), RuntimeError, ("cannot sample n_sample > prob_dist.size(-1) "
     "samples without replacement")),
    (([1.0, 1.0], 0), RuntimeError, "cannot sample n_sample <= 0 samples"),
])
def test_multinomial_errors_match_torch(args, exc, phrase):
    data, n = args
    with pytest.raises(exc) as got:
        cygrad.multinomial(cygrad.tensor(data), n)
    assert phrase in str(got.value)
    torch = pytest.importorskip("torch")
    with pytest.raises(exc) as want:
        torch.multinomial(torch.tensor(data), n)
    assert phrase in str(want.value)


def test_multinomial_rejects_int_and_3d():
    with pytest.raises(RuntimeError, match="floating-point"):
        cygrad.multinomial(cygrad.tensor([1, 2]), 1)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        cygrad.multinomial(cygrad.ones(2, 2, 2), 1)


# --- randperm, randint_like ---------------------------------------------------------

def test_randperm_is_a_uniform_permutation():
    perms = [tuple(cygrad.randperm(3, generator=gen(s)).tolist()) for s in range(6000)]
    keys = sorted(set(perms))
    assert len(keys) == 6
    counts = [perms.count(k) for k in keys]
    assert chi2(counts, [1 / 6] * 6) < CHI2_001[5]
    p = cygrad.randperm(10, dtype=cygrad.float32)
    assert p.dtype == cygrad.float32 and sorted(p.tolist()) == list(range(10))
    with pytest.raises(RuntimeError, match="negative dimension"):
        cygrad.randperm(-1)


def test_randint_like():
    x = cygrad.zeros(2000, dtype=cygrad.float64)
    r = cygrad.randint_like(x, 3, 7, generator=gen(3))
    assert r.dtype == cygrad.float64 and r.shape == x.shape
    assert set(r.numpy().tolist()) == {3.0, 4.0, 5.0, 6.0}
    r = cygrad.randint_like(x, 2)
    assert set(r.numpy().tolist()) <= {0.0, 1.0}


# --- normal, bernoulli, poisson -----------------------------------------------------

def test_normal_overloads_shapes_dtypes_and_moments():
    m = cygrad.full((20000,), 3.0)
    x = cygrad.normal(m, 2.0, generator=gen(4)).numpy()
    assert abs(x.mean() - 3.0) < 0.05 and abs(x.std() - 2.0) < 0.05
    y = cygrad.normal(-1.0, cygrad.full((20000,), 0.5), generator=gen(5)).numpy()
    assert abs(y.mean() + 1.0) < 0.02 and abs(y.std() - 0.5) < 0.02
    z = cygrad.normal(cygrad.zeros(3, 1), cygrad.ones(4))
    assert z.shape == (3, 4)
    w = cygrad.normal(0.0, 1.0, size=(2, 3))
    assert w.shape == (2, 3) and w.dtype == cygrad.float32
    assert cygrad.normal(0.0, 1.0, (2,), dtype=cygrad.float64).dtype == cygrad.float64
    assert cygrad.normal(cygrad.zeros(3, dtype=cygrad.float64), 1.0).dtype == \
        cygrad.float64


def test_normal_errors_and_zero_gradient_like_torch():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        cygrad.normal(0.0, -1.0, (2,))
    with pytest.raises(RuntimeError, match="normal expects all elements of std"):
        cygrad.normal(cygrad.zeros(3), -cygrad.ones(3))
    mean = cygrad.zeros(3, requires_grad=True)
    std = cygrad.ones(3, requires_grad=True)
    y = cygrad.normal(mean, std)
    assert y.requires_grad
    y.sum().backward()
    assert mean.grad.tolist() == [0.0] * 3 and std.grad.tolist() == [0.0] * 3


def test_bernoulli_tensor_and_p():
    p = cygrad.tensor([0.1, 0.5, 0.9], dtype=cygrad.float64).expand(20000, 3)
    b = cygrad.bernoulli(p.contiguous(), generator=gen(6))
    assert b.dtype == cygrad.float64
    np.testing.assert_allclose(b.numpy().mean(0), [0.1, 0.5, 0.9], atol=0.015)
    c = cygrad.bernoulli(cygrad.zeros(20000), 0.25, generator=gen(7))
    assert abs(c.numpy().mean() - 0.25) < 0.015
    assert cygrad.zeros(3).bernoulli().tolist() == [0.0] * 3
    with pytest.raises(RuntimeError):
        cygrad.bernoulli(cygrad.tensor([1.5]))
    with pytest.raises(NotImplementedError):
        cygrad.bernoulli(cygrad.tensor([1, 0]))


def test_poisson_moments_and_errors():
    rate = cygrad.full((20000,), 4.0)
    x = cygrad.poisson(rate, generator=gen(8)).numpy()
    assert abs(x.mean() - 4.0) < 0.06 and abs(x.var() - 4.0) < 0.15
    assert np.all(x == np.round(x))
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        cygrad.poisson(-cygrad.ones(2))


# --- generator state -----------------------------------------------------------------

def test_rng_state_round_trips_as_a_byte_tensor():
    cygrad.manual_seed(11)
    cygrad.rand(3)
    state = cygrad.get_rng_state()
    assert state.dtype == cygrad.uint8 and state.ndim == 1
    a = cygrad.randn(5).tolist()
    cygrad.set_rng_state(state)
    assert cygrad.randn(5).tolist() == a
    assert cygrad.initial_seed() == 11
    g = gen(3)
    s = g.get_state()
    first = cygrad.rand(4, generator=g).tolist()
    g.set_state(s)
    assert cygrad.rand(4, generator=g).tolist() == first


def test_rng_state_errors_like_torch():
    with pytest.raises(TypeError, match="ByteTensor"):
        cygrad.set_rng_state(cygrad.zeros(3))
    with pytest.raises(TypeError, match="ByteTensor"):
        cygrad.set_rng_state([1, 2])


def test_seeding_reproduces_every_sampler():
    def draw():
        cygrad.manual_seed(123)
        x = cygrad.empty(6)
        return [cygrad.randperm(5).tolist(), cygrad.normal(0.0, 1.0, (3,)).tolist(),
                x.normal_().tolist(), x.uniform_(-1, 1).tolist(),
                x.random_(0, 10).tolist(), x.exponential_().tolist(),
                x.geometric_(0.3).tolist(), x.cauchy_().tolist(),
                x.log_normal_().tolist(), x.bernoulli_(0.3).tolist(),
                cygrad.multinomial(cygrad.ones(4), 2).tolist()]
    assert draw() == draw()


# --- in-place samplers --------------------------------------------------------------

N = 40000


def test_inplace_moments():
    x = cygrad.empty(N, dtype=cygrad.float64)
    g = gen(9)
    v = x.normal_(2.0, 3.0, generator=g).numpy()
    assert abs(v.mean() - 2) < 0.05 and abs(v.std() - 3) < 0.05
    v = x.uniform_(-2.0, 4.0, generator=g).numpy()
    assert v.min() >= -2 and v.max() < 4 and abs(v.mean() - 1) < 0.03
    assert abs(v.var() - 3.0) < 0.05                  # (b - a)^2 / 12
    v = x.exponential_(2.0, generator=g).numpy()
    assert v.min() >= 0 and abs(v.mean() - 0.5) < 0.01
    v = x.geometric_(0.25, generator=g).numpy()
    assert v.min() >= 1 and abs(v.mean() - 4.0) < 0.08
    v = x.log_normal_(0.0, 0.5, generator=g).numpy()
    assert abs(np.log(v).mean()) < 0.01 and abs(np.log(v).std() - 0.5) < 0.01
    v = x.cauchy_(1.0, 2.0, generator=g).numpy()
    assert abs(np.median(v) - 1.0) < 0.05
    q = np.percentile(v, [25, 75])
    np.testing.assert_allclose(q, [-1.0, 3.0], atol=0.1)   # median -+ sigma
    v = x.bernoulli_(0.3, generator=g).numpy()
    assert set(np.unique(v)) <= {0.0, 1.0} and abs(v.mean() - 0.3) < 0.01


def test_random_ranges():
    g = gen(10)
    v = cygrad.empty(N).random_(3, 8, generator=g).numpy()
    counts = np.bincount(v.astype(int))[3:]
    assert len(counts) == 5 and chi2(counts, [0.2] * 5) < CHI2_001[4]
    v = cygrad.empty(1000).random_(5, generator=g).numpy()
    assert set(np.unique(v)) <= {0, 1, 2, 3, 4}
    v = cygrad.empty(1000).random_(generator=g).numpy()
    assert v.min() >= 0 and v.max() <= 2 ** 24 and np.all(v == np.round(v))
    v = cygrad.empty(1000, dtype=cygrad.int8).random_(generator=g).numpy()
    assert v.min() >= 0 and v.max() <= 127
    v = cygrad.empty(100, dtype=cygrad.bool).random_(generator=g).numpy()
    assert set(np.unique(v)) == {False, True}
    v = cygrad.empty(1000, dtype=cygrad.int64).random_(-3, None, generator=g)
    assert v.numpy().min() >= -3


@pytest.mark.parametrize("call,exc,phrase", [
    (lambda: cygrad.zeros(3).random_(5, 2), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    (lambda: cygrad.zeros(3).uniform_(2, 1), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    (lambda: cygrad.zeros(3).normal_(0, -1), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    (lambda: cygrad.zeros(3).exponential_(-1), RuntimeError,
     "exponential_ expects lambda > 0.0, but found lambda=-1"),
    (lambda: cygrad.zeros(3).bernoulli_(2.0), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=2"),
    (lambda: cygrad.zeros(3).geometric_(0), RuntimeError,
     "geometric_ expects p to be in (0, 1), but got p=0"),
    (lambda: cygrad.zeros(3, dtype=cygrad.int64).normal_(), NotImplementedError,
     "normal_kernel_cpu"),
    (lambda: cygrad.zeros(3, dtype=cygrad.int64).exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution"),
])
def test_inplace_errors_match_torch(call, exc, phrase):
    with pytest.raises(exc) as e:
        call()
    assert phrase in str(e.value)


def test_inplace_follows_the_inplace_rules():
    w = cygrad.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.normal_()
    with cygrad.no_grad():
        w.normal_()            # init-style use, as nn.init does
    assert w.is_leaf and w.requires_grad and np.all(w.detach().numpy() != 0)
    x = cygrad.zeros(4)
    v0 = x._version
    out = x.uniform_()
    assert out is x and x._version > v0
    row = cygrad.zeros(2, 3)
    row[0].fill_(0).normal_()
    assert np.all(row.numpy()[1] == 0) and np.all(row.numpy()[0] != 0)


def test_inplace_sampler_on_nonleaf_gives_zero_gradient():
    a = cygrad.ones(3, requires_grad=True)
    b = a * 2
    b.uniform_()
    (b * 3).sum().backward()
    assert a.grad.tolist() == [0.0, 0.0, 0.0]


def test_geometric_and_random_keep_integer_dtypes():
    x = cygrad.zeros(5, dtype=cygrad.int64)
    assert x.geometric_(0.5).dtype == cygrad.int64 and x.numpy().min() >= 1


def test_uniform_keyword_names():
    v = cygrad.empty(100).uniform_(**{"from": 5.0, "to": 6.0}).numpy()
    assert v.min() >= 5 and v.max() < 6
    assert math.isfinite(float(v.sum()))


def test_generator_takes_torch_device_argument():
    assert cygrad.Generator(device="cpu").initial_seed() == \
        cygrad.Generator().initial_seed()
    assert cygrad.Generator(cygrad.device("cpu")).manual_seed(3).initial_seed() == 3
    assert cygrad.Generator(7).initial_seed() == 7
    assert str(cygrad.Generator().device) == "cpu"
    with pytest.raises(AssertionError):
        cygrad.Generator("cuda")
