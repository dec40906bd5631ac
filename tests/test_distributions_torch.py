"""Every distribution against torch.distributions on the same parameters:
the deterministic methods (log_prob, cdf, icdf, entropy, perplexity, mean,
mode, variance, stddev, enumerate_support), the shapes and flags, expand,
and the gradients of those methods with respect to the parameters.

The cases are ``tests/dist_cases.py``.  float64 agrees to 1e-10 relative,
float32 to 1e-5.  Where torch raises (a method it does not implement, a
value it refuses), cygrad raises the same exception type.
"""

import numpy as np
import pytest
from dist_cases import CASES
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import cygrad

torch = pytest.importorskip("torch")

TOLS = {"float64": dict(rtol=1e-10, atol=1e-12),
        "float32": dict(rtol=1e-5, atol=1e-5)}
METHODS = ("log_prob", "cdf", "icdf", "entropy", "perplexity", "mean", "mode",
           "variance", "stddev")


def _params(m, case, dtype, grad):
    out = {}
    for k, v in case.params.items():
        rg = grad and k not in case.fixed
        out[k] = m.tensor(v, dtype=getattr(m, dtype), requires_grad=rg)
    return out


def _value(m, case, dtype):
    v = case.value
    if case.id.startswith("Categorical"):
        return m.tensor(v)
    return m.tensor(v, dtype=getattr(m, dtype))


def _evaluate(m, case, dtype, method, grad=False):
    """(result array or exception type, {param: grad array}) of one method."""
    P = _params(m, case, dtype, grad)
    try:
        d = case.build(m.distributions, P)
        if method in ("log_prob", "cdf"):
            out = getattr(d, method)(_value(m, case, dtype))
        elif method == "icdf":
            shape = tuple(d.batch_shape)
            q = np.broadcast_to(case.q.reshape((-1,) + (1,) * len(shape)),
                                (len(case.q),) + shape) if shape else case.q
            out = d.icdf(m.tensor(q, dtype=getattr(m, dtype)))
        elif method in ("entropy", "perplexity"):
            out = getattr(d, method)()
        else:
            out = getattr(d, method)
    except Exception as e:          # compared by type with torch's
        return type(e), {}
    grads = {}
    if grad and out.requires_grad:
        w = np.random.default_rng(0).uniform(0.5, 1.5, size=tuple(out.shape))
        finite = np.isfinite(out.detach().numpy())
        w = np.where(finite, w, 0.0)
        keep = m.tensor(finite)
        try:
            (out.masked_fill(~keep, 0) * m.tensor(w, dtype=out.dtype)).sum().backward()
        except Exception as e:      # a derivative torch does not have either
            return out.detach().numpy(), type(e)
        grads = {k: (None if t.grad is None else t.grad.numpy())
                 for k, t in P.items() if t.requires_grad}
        for k in case.grad_tril:
            grads[k] = np.tril(grads[k])
    return out.detach().numpy(), grads


def _same(a, b, tol):
    if isinstance(b, type):
        assert isinstance(a, type) and issubclass(a, b.__base__ if b.__name__ ==
                                                  "_LinAlgError" else b), (a, b)
        return
    assert not isinstance(a, type), f"cygrad raised {a}, torch gave values"
    assert a.shape == b.shape, (a.shape, b.shape)
    if b.dtype == bool or np.issubdtype(b.dtype, np.integer):
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_values_match_torch(case, method, dtype):
    tol = dict(TOLS[dtype])
    if dtype == "float64":
        tol["rtol"] = case.tol64
    ours, _ = _evaluate(cygrad, case, dtype, method)
    theirs, _ = _evaluate(torch, case, dtype, method)
    if case.id == "GeneralizedPareto" and dtype == "float64" and theirs is \
            RuntimeError:
        # torch 2.13 compares float64 parameters with a float32 zero there
        # ("Double did not match Float"); cygrad computes in float64.  Check
        # against torch's float32 result instead.
        theirs, _ = _evaluate(torch, case, "float32", method)
        tol = TOLS["float32"]
    _same(ours, theirs, tol)


@pytest.mark.parametrize("method", ["log_prob", "entropy", "cdf", "mean",
                                    "variance"])
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_gradients_match_torch(case, method):
    ours, g_ours = _evaluate(cygrad, case, "float64", method, grad=True)
    theirs, g_theirs = _evaluate(torch, case, "float64", method, grad=True)
    if isinstance(theirs, type):
        return                      # the values test checks the exception
    assert not isinstance(ours, type), ours
    if isinstance(g_theirs, type):
        assert g_ours is g_theirs
        return
    assert g_ours.keys() == g_theirs.keys()
    for k in g_theirs:
        if g_theirs[k] is None:
            assert g_ours[k] is None or not np.any(g_ours[k]), k
            continue
        np.testing.assert_allclose(g_ours[k], g_theirs[k], rtol=1e-9, atol=1e-11,
                                   err_msg=f"grad of {k}")


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_shapes_flags_and_support_match_torch(case):
    dists = [case.build(m.distributions, _params(m, case, "float64", False))
             for m in (cygrad, torch)]
    ours, theirs = dists
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample
    assert ours.has_enumerate_support == theirs.has_enumerate_support
    assert type(ours.support).__name__ == type(theirs.support).__name__
    assert ours.support.event_dim == theirs.support.event_dim
    assert ours.support.is_discrete == theirs.support.is_discrete
    assert repr(ours).split("(")[0] == repr(theirs).split("(")[0]
    for shape in ((), (5,), (2, 1)):
        s = ours.sample(shape)
        t = theirs.sample(shape)
        assert tuple(s.shape) == tuple(t.shape)
        assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert not s.requires_grad
        if ours.has_rsample:
            assert tuple(ours.rsample(shape).shape) == tuple(t.shape)
    if theirs.has_enumerate_support:
        for expand in (True, False):
            res = []
            for d in (ours, theirs):
                try:
                    res.append(d.enumerate_support(expand).numpy())
                except NotImplementedError as e:
                    res.append(type(e))
            _same(*res, TOLS["float64"])


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_expand_matches_torch(case):
    # GeneralizedPareto: see test_values_match_torch
    dtype = "float32" if case.id == "GeneralizedPareto" else "float64"
    res = []
    for m in (cygrad, torch):
        d = case.build(m.distributions, _params(m, case, dtype, False))
        e = d.expand((4,) + tuple(d.batch_shape))
        v = _value(m, case, dtype)
        out = [tuple(e.batch_shape), tuple(e.event_shape),
               tuple(e.sample().shape)]
        try:
            out.append(e.log_prob(v).numpy())
        except Exception as exc:
            out.append(type(exc))
        res.append(out)
    for a, b in zip(*res):
        if isinstance(b, np.ndarray):
            _same(a, b, TOLS[dtype])
        else:
            assert a == b


def test_every_torch_distribution_has_a_case():
    names = {c.id.split("-")[0] for c in CASES}
    for name in torch.distributions.__all__:
        obj = getattr(torch.distributions, name)
        if isinstance(obj, type) and issubclass(obj, torch.distributions.Distribution) \
                and name not in ("Distribution", "ExponentialFamily"):
            assert name in names, name


# --- broadcasting, with hypothesis -----------------------------------------------

_BROADCAST = {
    "Normal": (lambda D, a, b: D.Normal(a, b.abs() + 0.5), lambda v: v),
    "Gamma": (lambda D, a, b: D.Gamma(a.abs() + 0.3, b.abs() + 0.5),
              lambda v: v.abs() + 0.1),
    "Beta": (lambda D, a, b: D.Beta(a.abs() + 0.3, b.abs() + 0.3),
             lambda v: v.sigmoid()),
    "StudentT": (lambda D, a, b: D.StudentT(a.abs() + 0.5, b), lambda v: v),
    "Laplace": (lambda D, a, b: D.Laplace(a, b.abs() + 0.5), lambda v: v),
    "Binomial": (lambda D, a, b: D.Binomial(a.abs().round() + 3, logits=b),
                 lambda v: v.abs().round().clamp(max=3)),
}


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(sorted(_BROADCAST)),
       shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3),
       seed=st.integers(0, 2 ** 16))
def test_broadcast_parameters_and_values_match_torch(name, shapes, seed):
    """Parameters of shapes that broadcast together, and a value of a third
    shape that broadcasts with them: the batch shape, log_prob's shape and
    values, and the gradients agree with torch."""
    make, to_value = _BROADCAST[name]
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes.input_shapes]
    res = []
    for m in (cygrad, torch):
        a, b = (m.tensor(x, dtype=m.float64, requires_grad=True)
                for x in arrays[:2])
        d = make(m.distributions, a, b)
        v = to_value(m.tensor(arrays[2], dtype=m.float64))
        lp = d.log_prob(v)
        lp.sum().backward()
        res.append((tuple(d.batch_shape), lp.detach().numpy(), a.grad.numpy(),
                    b.grad.numpy() if b.grad is not None else None))
    (s1, *xs1), (s2, *xs2) = res
    assert s1 == s2
    for x1, x2 in zip(xs1, xs2):
        if x2 is None:
            assert x1 is None or not np.any(x1)
        else:
            assert x1.shape == x2.shape
            np.testing.assert_allclose(x1, x2, rtol=1e-10, atol=1e-12)


def test_every_torch_module_path_exists_with_its_names():
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(torch.distributions.__path__):
        theirs = importlib.import_module(f"torch.distributions.{info.name}")
        ours = importlib.import_module(f"cygrad.distributions.{info.name}")
        for name in getattr(theirs, "__all__", []):
            assert hasattr(ours, name), f"cygrad.distributions.{info.name}.{name}"
