"""The small names scripts touch first: constants, finfo/iinfo, promotion,
tensor predicates, print options, global flags, assert_close, the
distributions, the device stand-ins (accelerator, backends, onnx), Variable,
the profiler and the Tensor's new_* and memory no-ops."""

import math
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import cygrad
from cygrad.autograd import gradcheck

torch = pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parent.parent


# --- constants and dtype queries ----------------------------------------------------

def test_constants():
    assert cygrad.inf == math.inf and math.isnan(cygrad.nan)
    assert cygrad.pi == torch.pi and cygrad.e == torch.e
    assert cygrad.newaxis is None
    assert cygrad.zeros(2, 3)[:, cygrad.newaxis].shape == (2, 1, 3)


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_finfo_matches_torch(name):
    got, want = cygrad.finfo(getattr(cygrad, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal",
                 "resolution", "dtype"):
        assert getattr(got, attr) == getattr(want, attr), attr
    assert repr(got) == repr(want)


def test_finfo_default_and_errors():
    assert cygrad.finfo().dtype == "float32"
    with pytest.raises(TypeError, match="floating point"):
        cygrad.finfo(cygrad.int64)
    with pytest.raises(TypeError, match="integer"):
        cygrad.iinfo(cygrad.float32)
    with pytest.raises(TypeError, match="bool"):
        cygrad.iinfo(cygrad.bool)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    got, want = cygrad.iinfo(getattr(cygrad, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(got, attr) == getattr(want, attr)
    assert repr(got) == repr(want)


DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
          "float64"]


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_promote_types_and_can_cast_match_torch(a, b):
    got = cygrad.promote_types(getattr(cygrad, a), getattr(cygrad, b))
    want = torch.promote_types(getattr(torch, a), getattr(torch, b))
    assert str(want) == f"torch.{got}"
    assert cygrad.can_cast(getattr(cygrad, a), getattr(cygrad, b)) == \
        torch.can_cast(getattr(torch, a), getattr(torch, b))


RESULT_TYPE = [
    (lambda m: m.tensor([1, 2]), 1.0), (lambda m: m.tensor([1], dtype=m.int8),
                                        lambda m: m.tensor(1.0, dtype=m.float64)),
    (lambda m: m.tensor([True]), lambda m: m.tensor(1, dtype=m.int8)),
    (lambda m: m.tensor([True]), 5), (lambda m: m.tensor(1, dtype=m.int8), 5.0),
    (lambda m: m.tensor(1, dtype=m.int8), lambda m: m.tensor(5)),
    (lambda m: m.tensor([1.0], dtype=m.float16), 2.0),
    (lambda m: m.tensor([1.0], dtype=m.float16), lambda m: m.tensor(1.0,
                                                                    dtype=m.float64)),
    (lambda m: m.tensor([1], dtype=m.int32), lambda m: m.tensor([1.0],
                                                                dtype=m.float16)),
    (2, 3.0), (True, 2), (True, False),
]


@pytest.mark.parametrize("a,b", RESULT_TYPE)
def test_result_type_matches_torch(a, b):
    def arg(m, x):
        return x(m) if callable(x) else x
    got = cygrad.result_type(arg(cygrad, a), arg(cygrad, b))
    want = torch.result_type(arg(torch, a), arg(torch, b))
    assert str(want) == f"torch.{got}"


def test_tensor_predicates():
    x = cygrad.ones(2, 3)
    assert cygrad.numel(x) == 6 and cygrad.is_floating_point(x)
    assert not cygrad.is_floating_point(cygrad.ones(2, dtype=cygrad.int64))
    assert not cygrad.is_complex(x)
    assert cygrad.is_nonzero(cygrad.tensor([1.0]))
    assert not cygrad.is_nonzero(cygrad.tensor(0))
    for bad, phrase in ((cygrad.tensor([1.0, 2.0]), "more than one value"),
                        (cygrad.tensor([]), "no values")):
        with pytest.raises(RuntimeError, match=phrase):
            cygrad.is_nonzero(bad)
    with pytest.raises(TypeError):
        cygrad.numel([1, 2])


# --- print options ----------------------------------------------------------------

@pytest.fixture
def printopts():
    yield
    cygrad.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


PRINT_CASES = [
    ({"precision": 2}, lambda m: m.tensor([1.23456, 2.5])),
    ({"sci_mode": True}, lambda m: m.tensor([1.23456, 2.5])),
    ({"sci_mode": False}, lambda m: m.tensor([1e-8, 2.5e9])),
    ({"threshold": 5, "edgeitems": 1}, lambda m: m.arange(10.0)),
    ({"profile": "short"}, lambda m: m.arange(2000.0)),
    ({"profile": "short"}, lambda m: m.tensor([1.23456])),
    ({"linewidth": 30}, lambda m: m.arange(20.0)),
    ({"precision": 6}, lambda m: m.tensor([1 / 3, 2.0])),
    ({}, lambda m: m.tensor([1.0, 2000.0])),
    ({}, lambda m: m.arange(2000.0)),
    ({"profile": "full"}, lambda m: m.arange(1200.0)),
    # columns are as wide as the nonzero finite values: 0, nan and inf overhang
    ({}, lambda m: m.tensor([1.0, math.nan])),
    ({}, lambda m: m.tensor([1.0, -math.inf])),
    ({}, lambda m: m.tensor([[0.0, math.nan], [2.0, 3.0]])),
    ({}, lambda m: m.tensor([0.1, 22.5, -math.inf, 0.0])),
    # rows wrap at (linewidth - indent) // (width + 2) elements, deeper rows
    # indented one more; summarised rows and blocks of every rank
    ({}, lambda m: m.arange(20.0).reshape(1, 20) / 7),
    ({}, lambda m: m.arange(60.0).reshape(3, 4, 5) / 7 - 4),
    ({}, lambda m: m.arange(2000.0).reshape(10, 200) / 3),
    ({}, lambda m: m.arange(3000).reshape(30, 100)),
    ({}, lambda m: m.arange(1200.0).reshape(3, 4, 100)),
    ({"sci_mode": True, "precision": 2}, lambda m: m.arange(20.0).reshape(1, 20) / 7),
    ({"linewidth": 120}, lambda m: m.arange(2000.0).reshape(10, 200) / 3),
    ({}, lambda m: m.tensor([[1e-5, 1.0], [2.0, 3.0]])),
    ({}, lambda m: m.tensor([True, False])),
    # a suffix that would pass the line width goes to a line of its own
    ({}, lambda m: (m.arange(15.0) / 7).requires_grad_()),
    ({}, lambda m: (m.arange(16.0) / 7).requires_grad_() * 2),
]


@pytest.mark.parametrize("opts,make", PRINT_CASES)
def test_set_printoptions_repr_matches_torch(printopts, opts, make):
    cygrad.set_printoptions(**opts)
    torch.set_printoptions(**opts)
    assert repr(make(cygrad)) == repr(make(torch))


def _random_print_case(rng):
    """A random tensor for the print comparison: shapes that wrap and
    summarise, magnitudes that switch to scientific notation, ints, bools,
    float16, infinities and negative zeros."""
    nd = int(rng.integers(0, 4))
    shape = tuple(int(s) for s in rng.integers(1, 30 if nd <= 2 else 9, nd))
    kind = int(rng.integers(0, 6))
    if kind == 0:
        a = rng.standard_normal(shape).astype(np.float32)
    elif kind == 1:
        a = rng.standard_normal(shape) * 10.0 ** int(rng.integers(-6, 10))
    elif kind == 2:
        a = rng.integers(-10**6, 10**6, shape)
    elif kind == 3:
        a = rng.random(shape) > 0.5
    elif kind == 4:
        a = np.where(rng.random(shape) > 0.8, np.inf,
                     np.round(rng.standard_normal(shape) * 4) / 2).astype(np.float32)
    else:
        a = rng.standard_normal(shape).astype(np.float16)
    if a.dtype.kind == "f" and a.size and rng.random() < 0.2:
        a.flat[0] = -0.0
    return a


@pytest.mark.parametrize("opts", [{}, {"precision": 2}, {"sci_mode": True},
                                  {"sci_mode": False}, {"linewidth": 120},
                                  {"edgeitems": 2, "threshold": 50}, {"profile": "short"},
                                  {"precision": 6, "linewidth": 60}])
@pytest.mark.parametrize("grad", [False, True])
def test_print_layout_matches_torch_on_random_tensors(printopts, opts, grad):
    # rows wrap where torch wraps them (elements per line from the width),
    # suffixes (dtype=..., requires_grad=True) move to a new line when the
    # last line is full, summaries are formatted from the shown values only
    cygrad.set_printoptions(**opts)
    torch.set_printoptions(**opts)
    rng = np.random.default_rng(len(str(opts)) + grad)
    for _ in range(150):
        a = _random_print_case(rng)
        rg = grad and a.dtype.kind == "f"
        want = str(torch.tensor(a, requires_grad=rg))
        got = str(cygrad.tensor(a, requires_grad=rg)).replace("cygrad.", "torch.")
        assert got == want, f"{a.dtype} {a.shape}"


DTYPE_PRINT_CASES = [
    lambda m: m.arange(30.0, dtype=m.float64).reshape(2, 15) / 7,
    lambda m: (m.arange(30.0, dtype=m.float64).reshape(2, 15) / 7).requires_grad_(),
    lambda m: m.arange(12.0, dtype=m.float16).reshape(2, 2, 3) / 3,
    lambda m: m.tensor([1, -2, 30000], dtype=m.int16),
    lambda m: m.zeros(2, 0, dtype=m.int64),
    lambda m: m.zeros(0, dtype=m.float64),
]


@pytest.mark.parametrize("make", DTYPE_PRINT_CASES)
@pytest.mark.parametrize("default", ["float32", "float64"])
def test_repr_with_dtype_matches_torch(make, default):
    """The dtype is printed unless it is the default one (or int64, bool);
    lines break where torch's do although ``cygrad.`` is a letter longer."""
    cygrad.set_default_dtype(getattr(cygrad, default))
    torch.set_default_dtype(getattr(torch, default))
    try:
        got, want = repr(make(cygrad)), repr(make(torch))
    finally:
        cygrad.set_default_dtype(cygrad.float32)
        torch.set_default_dtype(torch.float32)
    assert got.replace("cygrad.", "torch.") == want


def test_str_of_a_parameter_says_parameter():
    """print(p) shows what repr(p) does, for tensors and their subclasses."""
    t = cygrad.nn.Parameter(cygrad.ones(2))
    assert str(t) == repr(t) == str(torch.nn.Parameter(torch.ones(2)))
    assert str(cygrad.ones(2)) == str(torch.ones(2))


def test_printoptions_profile_then_override(printopts):
    cygrad.set_printoptions(profile="short", precision=5)
    assert cygrad.get_printoptions()["precision"] == 5
    assert cygrad.get_printoptions()["edgeitems"] == 2
    with pytest.raises(ValueError):
        cygrad.set_printoptions(profile="long")


# --- flags ------------------------------------------------------------------------

def test_deterministic_and_matmul_precision_flags():
    assert not cygrad.are_deterministic_algorithms_enabled()
    cygrad.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert cygrad.are_deterministic_algorithms_enabled()
        assert cygrad.is_deterministic_algorithms_warn_only_enabled()
    finally:
        cygrad.use_deterministic_algorithms(False)
    assert cygrad.get_float32_matmul_precision() == "highest"
    cygrad.set_float32_matmul_precision("high")
    try:
        assert cygrad.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="no effect"):
            cygrad.set_float32_matmul_precision("bad")
        assert cygrad.get_float32_matmul_precision() == "high"
    finally:
        cygrad.set_float32_matmul_precision("highest")


# --- testing.assert_close ---------------------------------------------------------

def _message(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 - both libraries' exceptions
        return type(e).__name__, str(e).replace("torch.", "cygrad.")
    return None


def T(m, data, **kw):
    return m.tensor(data, **kw)


ASSERT_CASES = [
    lambda m: m.testing.assert_close(T(m, [1.0, 2.0, 3.0]), T(m, [1.0, 2.5, 3.1])),
    lambda m: m.testing.assert_close(T(m, [1.0, 2.0]), T(m, [1.0, 2.0], dtype=m.float64)),
    lambda m: m.testing.assert_close(T(m, [1.0, 2.0]), T(m, [1.0, 2.0],
                                                         dtype=m.float64),
                                     check_dtype=False),
    lambda m: m.testing.assert_close(T(m, [1.0, 2.0]), T(m, [1.0, 2.0, 3.0])),
    lambda m: m.testing.assert_close(T(m, [1.0, math.nan]), T(m, [1.0, math.nan])),
    lambda m: m.testing.assert_close(T(m, [1.0, math.nan]), T(m, [1.0, math.nan]),
                                     equal_nan=True),
    lambda m: m.testing.assert_close(T(m, [1, 2]), T(m, [1, 3])),
    lambda m: m.testing.assert_close(1.0, 1.0 + 1e-9),
    lambda m: m.testing.assert_close(1, 2),
    lambda m: m.testing.assert_close([T(m, 1.0), T(m, 2.0)], [T(m, 1.0), T(m, 2.1)]),
    lambda m: m.testing.assert_close({"a": T(m, 1.0)}, {"a": T(m, 1.5)}),
    lambda m: m.testing.assert_close(T(m, [1.0]), T(m, [1.1]), rtol=0.2),
    lambda m: m.testing.assert_close(T(m, [[1.0, 2.0], [3.0, 4.0]]),
                                     T(m, [[1.0, 2.0], [3.0, 5.0]]), msg="custom"),
    lambda m: m.testing.assert_close(T(m, [1.0, math.inf]), T(m, [1.0, math.inf])),
    lambda m: m.testing.assert_close(T(m, [1.0, math.inf]), T(m, [1.0, -math.inf])),
    lambda m: m.testing.assert_close(T(m, [True]), T(m, [False])),
    lambda m: m.testing.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.1])),
    lambda m: m.testing.assert_close(T(m, [[0.0, 0.0], [1, 2]]),
                                     T(m, [[0.0, 1e-3], [1, 4]])),
    lambda m: m.testing.assert_close(T(m, [1.0, 2.0]),
                                     T(m, [1.0, 2.0]).requires_grad_()),
    lambda m: m.testing.assert_close(T(m, [1.0], dtype=m.float16),
                                     T(m, [1.001], dtype=m.float16)),
    lambda m: m.testing.assert_close(T(m, [1.0]), T(m, [1.0 + 1e-6]), rtol=0, atol=0),
    lambda m: m.testing.assert_close([T(m, [1.0]), {"b": [T(m, 2.0), T(m, 3.0)]}],
                                     [T(m, [1.0]), {"b": [T(m, 2.0), T(m, 3.5)]}]),
    lambda m: m.testing.assert_close(T(m, [1.0]), T(m, [1.1]),
                                     msg=lambda s: "wrapped: " + s.splitlines()[0]),
]


@pytest.mark.parametrize("i", range(len(ASSERT_CASES)))
def test_assert_close_matches_torch(i):
    assert _message(lambda: ASSERT_CASES[i](cygrad)) == \
        _message(lambda: ASSERT_CASES[i](torch))


def test_assert_close_type_mismatch_is_typeerror():
    with pytest.raises(TypeError, match="No comparison pair"):
        cygrad.testing.assert_close(cygrad.tensor(1.0), 1.0)


def test_assert_allclose_is_deprecated_and_lenient():
    with pytest.warns(FutureWarning):
        cygrad.testing.assert_allclose(cygrad.tensor([1.0]), [1.00001])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in (lambda m: m.testing.assert_allclose(T(m, [1.0]), T(m, [1.1])),
                   lambda m: m.testing.assert_allclose(T(m, [1.0, math.nan]),
                                                       [1.0, math.nan])):
            assert _message(lambda: fn(cygrad)) == _message(lambda: fn(torch))


# --- distributions ----------------------------------------------------------------

def test_distributions_match_torch_values():
    for m in (cygrad, torch):
        m.manual_seed(0)
    cases = [
        lambda m: m.distributions.Categorical(probs=m.tensor([[0.2, 0.8], [0.5, 0.5]]))
        .log_prob(m.tensor([0, 1])),
        lambda m: m.distributions.Categorical(probs=m.tensor([[0.2, 0.8], [0.5, 0.5]]))
        .entropy(),
        lambda m: m.distributions.Categorical(logits=m.tensor([1.0, 2.0, 3.0])).probs,
        lambda m: m.distributions.Normal(m.tensor([0.0, 1.0]), 2.0)
        .log_prob(m.tensor([0.5, -1.0])),
        lambda m: m.distributions.Normal(0.0, m.tensor([1.0, 3.0])).entropy(),
        lambda m: m.distributions.Bernoulli(logits=m.tensor([0.3, -2.0]))
        .log_prob(m.tensor([1.0, 0.0])),
        lambda m: m.distributions.Bernoulli(probs=m.tensor([0.3, 0.9])).entropy(),
        lambda m: m.distributions.Uniform(0.0, m.tensor([2.0, 4.0]))
        .log_prob(m.tensor([0.5, 3.0])),
        lambda m: m.distributions.Uniform(1.0, 3.0).entropy(),
        lambda m: m.distributions.Multinomial(10, probs=m.tensor([0.2, 0.3, 0.5]))
        .log_prob(m.tensor([3.0, 4.0, 3.0])),
        lambda m: m.distributions.Multinomial(4, logits=m.tensor([0.0, -math.inf, 1.0]))
        .log_prob(m.tensor([2.0, 0.0, 2.0])),
    ]
    for case in cases:
        np.testing.assert_allclose(case(cygrad).numpy(), case(torch).numpy(),
                                   rtol=1e-6, atol=1e-6)


def test_distribution_shapes_and_samples():
    D = cygrad.distributions
    c = D.Categorical(probs=cygrad.tensor([[0.2, 0.8], [0.5, 0.5]]))
    assert c.batch_shape == (2,) and c.event_shape == ()
    assert c.sample().shape == (2,) and c.sample((3,)).shape == (3, 2)
    cygrad.manual_seed(1)
    draws = D.Categorical(probs=cygrad.tensor([0.1, 0.6, 0.3])).sample((30000,))
    np.testing.assert_allclose(np.bincount(draws.numpy(), minlength=3) / 30000,
                               [0.1, 0.6, 0.3], atol=0.01)
    n = D.Normal(cygrad.tensor([0.0, 1.0]), 2.0)
    s = n.sample((20000,))
    assert s.shape == (20000, 2) and not s.requires_grad
    np.testing.assert_allclose(s.numpy().mean(0), [0.0, 1.0], atol=0.05)
    np.testing.assert_allclose(s.numpy().std(0), [2.0, 2.0], atol=0.05)
    b = D.Bernoulli(probs=cygrad.full((20000,), 0.3)).sample()
    assert abs(b.numpy().mean() - 0.3) < 0.015
    u = D.Uniform(-1.0, 3.0).sample((20000,)).numpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1) < 0.03
    mm = D.Multinomial(7, probs=cygrad.tensor([0.2, 0.8])).sample((5,))
    assert mm.shape == (5, 2) and np.all(mm.numpy().sum(-1) == 7)


def test_normal_rsample_and_log_prob_gradients():
    D = cygrad.distributions
    loc = cygrad.tensor([0.5, -1.0], dtype=cygrad.float64, requires_grad=True)
    scale = cygrad.tensor([2.0, 0.5], dtype=cygrad.float64, requires_grad=True)
    cygrad.manual_seed(3)
    x = D.Normal(loc, scale).rsample()
    eps = ((x - loc) / scale).detach()
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(scale.grad.numpy(), eps.numpy())
    v = cygrad.tensor([1.0, 0.0], dtype=cygrad.float64)
    assert gradcheck(lambda m, s: D.Normal(m, s).log_prob(v), [loc, scale])
    lg = cygrad.tensor([0.1, 0.2, 0.7], dtype=cygrad.float64, requires_grad=True)
    assert gradcheck(lambda t: D.Categorical(logits=t).log_prob(cygrad.tensor(1)),
                     [lg])
    assert gradcheck(lambda t: D.Categorical(logits=t).entropy(), [lg])


def test_distribution_validation_errors_like_torch():
    D = cygrad.distributions
    for call in (lambda d, m: d.Categorical(probs=m.tensor([-0.1, 1.1])),
                 lambda d, m: d.Normal(0.0, -1.0),
                 lambda d, m: d.Categorical(),
                 lambda d, m: d.Categorical(probs=m.tensor([0.5, 0.5]))
                 .log_prob(m.tensor([0, 5])),
                 lambda d, m: d.Uniform(0.0, 2.0).log_prob(m.tensor(3.0)),
                 lambda d, m: d.Bernoulli(probs=m.tensor([0.5])).log_prob(
                     m.tensor([0.5]))):
        with pytest.raises(ValueError):
            call(torch.distributions, torch)
        with pytest.raises(ValueError):
            call(D, cygrad)
    assert D.Uniform(0.0, 2.0, validate_args=False).log_prob(
        cygrad.tensor(3.0)).item() == -math.inf
    import cygrad.distributions.categorical as cat_mod
    import cygrad.distributions.multinomial as mult_mod
    assert cat_mod.Categorical is D.Categorical
    assert mult_mod.Multinomial is D.Multinomial


# --- devices, backends, onnx ------------------------------------------------------

def test_accelerator_and_cuda_stand_ins():
    assert cygrad.accelerator.is_available() is False
    assert cygrad.accelerator.current_accelerator() is None
    assert cygrad.accelerator.device_count() == 0
    with pytest.raises(RuntimeError, match="none is available"):
        cygrad.accelerator.current_device_index()
    cygrad.cuda.manual_seed(1)
    cygrad.cuda.manual_seed_all(1)
    cygrad.cuda.empty_cache()
    # torch's CPU build raises here too (scripts guard it with is_available())
    with pytest.raises(AssertionError):
        cygrad.cuda.synchronize()
    x = cygrad.zeros(2)
    assert x.is_cuda is False and x.is_mps is False and x.is_xpu is False
    with cygrad.accelerator.device_index(None):
        pass
    with pytest.raises(RuntimeError, match="none is available"):
        with cygrad.accelerator.device_index(0):
            pass


def test_default_backend_for_device_is_torchs():
    import cygrad.distributed as dist
    torch = pytest.importorskip("torch")
    for d in ("cpu", "cuda:1", "mps", "xpu"):
        want = torch.distributed.get_default_backend_for_device(d)
        assert dist.get_default_backend_for_device(d) == want
        assert dist.get_default_backend_for_device(cygrad.device(d)) == want
    with pytest.raises(ValueError, match="not registered for device : meta"):
        dist.get_default_backend_for_device("meta")
    # what it gives for the CPU is a backend init_process_group takes
    assert dist.Backend(dist.get_default_backend_for_device("cpu")) == "gloo"


def test_backends_import_as_modules_and_keep_flags():
    from cygrad.backends import cudnn
    assert cudnn is cygrad.backends.cudnn
    old = cudnn.benchmark
    cudnn.benchmark = True
    try:
        assert cygrad.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = old
    assert cygrad.backends.cudnn.enabled is True
    assert isinstance(cygrad.backends.cudnn.deterministic, bool)
    assert cygrad.backends.mps.is_available() is False
    assert cygrad.backends.mps.is_built() is False
    assert cygrad.backends.cuda.matmul.allow_tf32 is False


def test_cudnn_flags_set_and_restore_as_torchs():
    torch = pytest.importorskip("torch")
    seen = []
    names = ("enabled", "benchmark", "deterministic", "allow_tf32")
    for lib in (cygrad, torch):
        c = lib.backends.cudnn
        kept = {n: getattr(c, n) for n in names}   # other tests set them
        for n, v in zip(names, (True, False, True, True)):
            setattr(c, n, v)
        before = (c.enabled, c.benchmark, c.deterministic, c.allow_tf32)
        with c.flags(allow_tf32=False) as got:
            inside = (c.enabled, c.benchmark, c.deterministic, c.allow_tf32)
        with c.flags(enabled=True, benchmark=True, deterministic=True):
            inside += (c.enabled, c.benchmark, c.deterministic, c.allow_tf32)
        with pytest.raises(KeyError):
            with c.flags(deterministic=True):
                raise KeyError("body fails")
        seen.append((before, inside, got,
                     (c.enabled, c.benchmark, c.deterministic, c.allow_tf32)))
        for n, v in kept.items():
            setattr(c, n, v)
    assert seen[0] == seen[1]


def test_tensor_type_prints_and_pickles_as_the_package_name():
    torch = pytest.importorskip("torch")
    import pickle
    assert repr(type(cygrad.zeros(1))) == repr(type(torch.zeros(1))).replace(
        "torch", "cygrad")
    assert cygrad.Tensor.__module__ == "cygrad"
    assert pickle.loads(pickle.dumps(cygrad.Tensor)) is cygrad.Tensor
    t = pickle.loads(pickle.dumps(cygrad.tensor([1.5, -2.0])))
    np.testing.assert_array_equal(t.numpy(), [1.5, -2.0])


def test_onnx_imports_and_export_refuses_clearly():
    code = ("import cygrad as torch\nimport cygrad.onnx\n"
            "try:\n    torch.onnx.export(None, (), 'm.onnx')\n"
            "except NotImplementedError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert "cygrad does not export ONNX" in out


# --- Variable, profiler -----------------------------------------------------------

def test_variable_returns_a_tensor():
    V = cygrad.autograd.Variable
    v = V(cygrad.ones(2), requires_grad=True)
    assert type(v) is cygrad.Tensor and v.requires_grad and v.is_leaf
    w = V(cygrad.ones(2))
    assert not w.requires_grad and isinstance(w, V)
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    with pytest.raises(TypeError):
        V([1, 2])


def test_variable_is_a_new_leaf_over_the_same_storage():
    """``Variable(x, requires_grad=True)`` leaves ``x`` alone (the NLP
    tutorial prints ``x.requires_grad`` after it); a Variable of a tensor
    with history or of a Parameter is a plain leaf that sees x's writes."""
    for m in (cygrad, torch):
        x = m.ones(2)
        v = m.autograd.Variable(x, requires_grad=True)
        assert v is not x and not x.requires_grad and v.requires_grad
        x.add_(1)
        assert v.tolist() == [2.0, 2.0]
        y = m.ones(2, requires_grad=True) * 2
        w = m.autograd.Variable(y)
        assert w.grad_fn is None and not w.requires_grad and w.is_leaf
        assert type(m.autograd.Variable(m.nn.Parameter(m.ones(1)))) is m.Tensor


def test_profiler_records_ops_and_ranges():
    P = cygrad.autograd.profiler
    x = cygrad.randn(20, 20)

    @P.record_function("decorated")
    def f():
        return x.exp()

    with P.profile() as prof:
        with P.record_function("block"):
            for _ in range(3):
                x.matmul(x).sum()
        f()
    avgs = {a.key: a for a in prof.key_averages()}
    assert avgs["cygrad::matmul"].count == 3 and avgs["cygrad::sum"].count == 3
    assert avgs["block"].count == 1 and avgs["decorated"].count == 1
    # nesting: the block's total covers its ops, its self time excludes them
    assert avgs["block"].cpu_time_total >= avgs["cygrad::matmul"].cpu_time_total
    assert avgs["block"].self_cpu_time_total < avgs["block"].cpu_time_total
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
    assert "cygrad::matmul" in table and "# of Calls" in table
    assert "Self CPU time total" in table
    # outside the profile nothing is recorded and methods are restored
    assert cygrad.Tensor.matmul is cygrad.OPS["matmul"].fn
    with P.record_function("nothing"):
        x.sum()
    assert len(prof.events()) == len(list(prof.events()))


def test_profiler_chrome_trace(tmp_path):
    import json
    P = cygrad.autograd.profiler
    with P.profile() as prof, P.record_function("r"):
        cygrad.ones(3).sum()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert {"r", "cygrad::sum"} <= {e["name"] for e in events}


# --- Tensor.new_*, memory no-ops --------------------------------------------------

def test_new_methods_match_torch():
    for m in (cygrad, torch):
        x = m.zeros(2, dtype=m.float64)
        got = [x.new_tensor([1, 2]), x.new_full((2,), 3), x.new_zeros(2, 3),
               x.new_ones((2, 3)), x.new_empty([1]), x.new_zeros(2, dtype=m.int64),
               x.new_zeros(()), x.new_ones(m.Size([2, 1]))]
        shapes = [tuple(t.shape) for t in got]
        dtypes = [str(t.dtype).replace("torch.", "") for t in got]
        if m is cygrad:
            mine = (shapes, dtypes, got[0].tolist(), got[1].tolist(), got[3].tolist())
        else:
            theirs = (shapes, dtypes, got[0].tolist(), got[1].tolist(), got[3].tolist())
    assert mine == theirs
    with pytest.raises(TypeError, match="must be tuple of ints"):
        cygrad.zeros(2).new_full(2, 3)
    y = cygrad.zeros(1).new_zeros(2, requires_grad=True)
    assert y.requires_grad and y.is_leaf
    src = cygrad.tensor([1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="copy construct"):
        c = cygrad.zeros(1).new_tensor(src)
    assert not c.requires_grad


def test_memory_no_ops():
    x = cygrad.zeros(3)
    assert x.pin_memory() is x and x.is_pinned() is False
    assert x.share_memory_() is x
    lin = cygrad.nn.Linear(2, 2)
    assert lin.share_memory() is lin


def test_empty_strided_like_torch():
    for m in (cygrad, torch):
        x = m.empty_strided((2, 3), (1, 2), dtype=m.float64)
        assert x.stride() == (1, 2) and not x.is_contiguous() and x.shape == (2, 3)
        x.fill_(2.0)
        assert x.sum().item() == 12.0
        for bad in (((2, 3), (1,)), ((2, 3), (-1, 2))):
            with pytest.raises(RuntimeError):
                m.empty_strided(*bad)
    assert cygrad.empty_strided((0, 3), (3, 1)).shape == (0, 3)


def test_random_module_names_and_fork_rng():
    cygrad.manual_seed(3)
    with cygrad.random.fork_rng():
        a = cygrad.rand(3)
    assert cygrad.rand(3).tolist() == a.tolist()
    assert cygrad.random.initial_seed() == 3
    cygrad.random.manual_seed(4)
    assert cygrad.initial_seed() == 4


# --- bool operands of ``-`` -------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "t - 2.5", "2.5 - t", "t - 1", "m.sub(t, 1)", "m.rsub(t, 1)", "x - True",
    "True - x", "x - t", "t - m.tensor([1, 2])", "x.clone().sub_(t)", "t.clone().sub_(1)",
    "t - t",
])
def test_subtraction_refuses_any_bool_operand_as_torch(expr):
    def run(m):
        env = {"m": m, "t": m.tensor([True, False]), "x": m.tensor([1.0, 2.0])}
        with pytest.raises(RuntimeError) as info:
            eval(expr, env)
        return str(info.value)
    assert run(cygrad) == run(torch)


def test_torch_functional_module():
    """``import torch.functional as F`` (the models tutorial): torch's
    functions defined there, the same objects as ``cygrad.<name>``."""
    import cygrad.functional as CF
    for name in CF.__all__:
        assert name in torch.functional.__all__
        assert getattr(CF, name) is getattr(cygrad, name)
    x = [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_allclose(
        CF.einsum("ij,jk->ik", cygrad.tensor(x), cygrad.tensor(x)).numpy(),
        torch.functional.einsum("ij,jk->ik", torch.tensor(x), torch.tensor(x)).numpy())


def _printed_by_both(code):
    """What ``code`` prints in a fresh process, with ``{m}`` as cygrad, then
    as torch (warnings fire once per process)."""
    return [subprocess.run([sys.executable, "-c", code.format(m=m)], capture_output=True,
                           text=True, cwd=str(ROOT)).stdout for m in ("cygrad", "torch")]


def test_float_of_a_tensor_requiring_grad_warns_once_as_torch():
    """float() and complex() of a tensor that requires grad warn once per
    process (torch's TORCH_WARN_ONCE); int() and item() never do."""
    code = ("import warnings, {m} as t\n"
            "warnings.simplefilter('always')\n"
            "x = t.tensor(2.5, requires_grad=True)\n"
            "int(x); x.item(); f'{{x:.1f}}'\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    float(x); float(x * 2); complex(x)\n"
            "print(len(w), str(w[0].message).split(' (Triggered')[0] if w else '')\n")
    out = _printed_by_both(code)
    assert out[0] == out[1] and out[0].startswith("1 Converting a tensor with")


@pytest.mark.parametrize("make", [
    "t.tensor([a, a])", "t.tensor([[1.0, 2.0], a])", "t.tensor([[a]], dtype=t.float64)",
    "t.as_tensor((a,))", "t.Tensor([a])", "t.FloatTensor([a])",
    "t.tensor([np.float64(1.5)])", "t.tensor(a)", "t.tensor([1.0, 2.0])"])
def test_tensor_from_a_list_of_arrays_warns_once_as_torch(make):
    """rasbt's char-RNN builds ``torch.tensor(text_chunks)`` from a list of
    arrays; torch warns once per process (NumPy scalars and a bare array do not
    count), at the caller's line."""
    code = ("import warnings, numpy as np, {m} as t\n"
            "a = np.ones(2)\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            f"    x = {make}\n"
            f"    y = {make}\n"
            "print(x.tolist(), [(str(r.message).split(' (Triggered')[0], r.filename)\n"
            "                   for r in w])\n")
    out = _printed_by_both(code)
    assert out[0] == out[1] and out[0]


def test_float_of_a_tensor_requiring_grad_is_silent_under_no_grad():
    """Under no_grad torch does not warn and keeps its one warning for later
    (LBFGS reads the closure's loss with float() inside its no_grad step)."""
    code = ("import warnings, {m} as t\n"
            "x = t.tensor(2.5, requires_grad=True) * 2\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    with t.no_grad():\n"
            "        float(x); complex(x)\n"
            "    n = len(w)\n"
            "    float(x)\n"
            "print(n, len(w))\n")
    out = _printed_by_both(code)
    assert out[0] == out[1] == "0 1\n"


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_factories_take_size_as_a_keyword(name):
    """``torch.rand(size=(1, 1, 28, 28))`` (d2l's LeNet chapter)."""
    for m in (cygrad, torch):
        t = getattr(m, name)(size=(1, 2, 3), dtype=m.float64)
        assert tuple(t.shape) == (1, 2, 3) and t.dtype == m.float64
        with pytest.raises(TypeError):     # the wording differs for rand/randn
            getattr(m, name)(2, size=(3,))


def test_tensor_and_size_types_print_under_the_package_name():
    """``type(batch["ids"])`` prints <class 'torch.Tensor'> in torch (bentrevett's
    seq2seq notebooks show it); cygrad's says 'cygrad.Tensor', and pickles
    still find the classes."""
    import pickle
    for make in (lambda m: m.ones(2), lambda m: m.ones(2).shape):
        want = repr(type(make(torch))).replace("torch", "cygrad")
        got = make(cygrad)
        assert repr(type(got)) == want
        assert type(pickle.loads(pickle.dumps(got))) is type(got)


@pytest.mark.parametrize("name,extra", [
    ("zeros_like", {}), ("ones_like", {}), ("full_like", {"fill_value": 2.5}),
    ("empty_like", {}), ("rand_like", {}), ("randn_like", {})])
def test_like_factories_take_input_as_a_keyword(name, extra):
    """``torch.zeros_like(input=x)`` (mrdbourke's PyTorch fundamentals)."""
    shapes = []
    for m in (cygrad, torch):
        m.manual_seed(0)
        x = m.ones(2, 3, dtype=m.float64)
        t = getattr(m, name)(input=x, dtype=m.float32, **extra)
        assert t.dtype == m.float32
        shapes.append(tuple(t.shape))
        if name != "empty_like":
            shapes.append(t.tolist())
    assert shapes[: len(shapes) // 2] == shapes[len(shapes) // 2:]


@pytest.mark.parametrize("name,args", [
    ("ones", (2, 3)), ("zeros", ((2,),)), ("full", ((2,), 1.5)), ("arange", (4,)),
    ("linspace", (0, 1, 3)), ("eye", (2,)), ("randn", (3,)), ("randint", (5, (3,))),
    ("empty", (2,))])
def test_factories_take_torch_layout_and_pin_memory(name, args):
    torch = pytest.importorskip("torch")
    for kw, ckw in ((dict(layout=torch.strided), dict(layout=cygrad.strided)),
                    (dict(layout=None), dict(layout=None)),
                    (dict(pin_memory=False), dict(pin_memory=False))):
        torch.manual_seed(0)
        cygrad.manual_seed(0)
        ref = getattr(torch, name)(*args, **kw)
        got = getattr(cygrad, name)(*args, **ckw)
        assert list(got.shape) == list(ref.shape)
        if name != "empty":
            np.testing.assert_array_equal(got.numpy(), ref.numpy())
    with pytest.raises(RuntimeError, match="pin_memory=True requires a CUDA"):
        torch.ones(2, pin_memory=True)
    with pytest.raises(RuntimeError, match="pin_memory=True requires a CUDA"):
        getattr(cygrad, name)(*args, pin_memory=True)
    with pytest.raises(TypeError):
        cygrad.tensor([1.0], layout=cygrad.strided)
