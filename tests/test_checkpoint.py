"""cygrad.utils.checkpoint against torch.utils.checkpoint: the same weights
(copied through state dicts) and inputs give the same outputs and the same
input and parameter gradients, in float64, for both variants; warnings and
errors have torch's types and key phrases.  Dropout is checked against an
un-checkpointed cygrad run with the same seed (the generators differ from
torch's)."""

import collections
import gc
import warnings
import weakref

import numpy as np
import pytest

import cygrad
from cygrad.utils import checkpoint as ckpt

BOTH = pytest.mark.parametrize("reentrant", [True, False], ids=["reentrant",
                                                              "non_reentrant"])


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def _close(a, b, tol=1e-12):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def _mlp(lib, dropout=0.0):
    lib.manual_seed(0)
    nn = lib.nn
    layers = [nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.GELU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers += [nn.Linear(8, 3)]
    return nn.Sequential(*layers).double()


def _twins(torch, build):
    """The torch module and a cygrad one with the same weights."""
    tm, cm = build(torch), build(cygrad)
    cm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return tm, cm


def _x(shape=(5, 4), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _grads(module, *inputs):
    return [t.grad for t in inputs] + [p.grad for p in module.parameters()]


def _assert_same(cygrad_values, torch_values, tol=1e-12):
    assert len(cygrad_values) == len(torch_values)
    for c, t in zip(cygrad_values, torch_values):
        assert (c is None) == (t is None)
        if c is not None:
            _close(c, t, tol)


# --- outputs and gradients ---------------------------------------------------------


@BOTH
def test_mlp_block_matches_torch(torch, reentrant):
    tm, cm = _twins(torch, _mlp)
    results = []
    for lib, m in ((torch, tm), (cygrad, cm)):
        x = lib.tensor(_x(), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(m, x, use_reentrant=reentrant)
        (out ** 2).sum().backward()
        results.append([out] + _grads(m, x))
    _assert_same(results[1], results[0])
    assert all(g is not None for g in results[1])


@BOTH
def test_grad_fn_names(torch, reentrant):
    x = cygrad.tensor(_x(), requires_grad=True)
    out = ckpt.checkpoint(lambda a: a.sin(), x, use_reentrant=reentrant)
    name = type(out.grad_fn).__name__
    if reentrant:     # torch's own node; the non-reentrant one is cygrad's
        tx = torch.tensor(_x(), requires_grad=True)
        tout = torch.utils.checkpoint.checkpoint(torch.sin, tx, use_reentrant=True)
        assert name == type(tout.grad_fn).__name__ == "CheckpointFunctionBackward"
    else:
        assert name == "CheckpointBackward"


@BOTH
def test_dropout_masks_are_replayed(reentrant):
    m = _mlp(cygrad, dropout=0.5)
    x = cygrad.tensor(_x((16, 4)), requires_grad=True)

    def run(checkpointed, preserve=True):
        m.zero_grad()
        x.grad = None
        cygrad.manual_seed(7)
        if checkpointed:
            out = ckpt.checkpoint(m, x, use_reentrant=reentrant,
                                  preserve_rng_state=preserve)
        else:
            out = m(x)
        (out ** 2).sum().backward()
        after = cygrad.rand(3)          # the generator moved on as one forward
        return [out, after] + _grads(m, x)

    plain, checked = run(False), run(True)
    for a, b in zip(plain, checked):
        np.testing.assert_array_equal(_np(a), _np(b))
    # without the saved state the recomputation draws other masks
    loose = run(True, preserve=False)
    np.testing.assert_array_equal(_np(loose[0]), _np(plain[0]))
    assert not np.array_equal(_np(loose[3]), _np(plain[3]))


@BOTH
@pytest.mark.parametrize("segments", [1, 2, 3, 5])
def test_checkpoint_sequential_matches_torch(torch, reentrant, segments):
    def build(lib):
        lib.manual_seed(1)
        nn = lib.nn
        return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 6), nn.Tanh(),
                             nn.Linear(6, 5), nn.Sigmoid()).double()

    tm, cm = _twins(torch, build)
    results = []
    for lib, m in ((torch, tm), (cygrad, cm)):
        x = lib.tensor(_x(seed=segments), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint_sequential(
            m, segments, x, use_reentrant=reentrant)
        (out ** 3).sum().backward()
        results.append([out] + _grads(m, x))
    _assert_same(results[1], results[0])


def test_checkpoint_sequential_takes_a_list_and_preserve_rng_state(torch):
    results = []
    for lib in (torch, cygrad):
        fns = [lib.sin, lib.exp, lambda t: t * 3, lib.tanh]
        x = lib.tensor(_x(seed=4), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint_sequential(
            fns, 2, x, use_reentrant=False, preserve_rng_state=False)
        out.sum().backward()
        results.append([out, x.grad])
    _assert_same(results[1], results[0])


def test_keyword_and_nested_arguments_match_torch(torch):
    pair = collections.namedtuple("pair", "a b")
    results = []
    for lib in (torch, cygrad):
        x, y, z = (lib.tensor(_x(seed=s), requires_grad=True) for s in (1, 2, 3))

        def f(p, items, scale=1.0, bias=None):
            return {"out": (p.a * p.b).tanh() * scale + bias, "n": 3,
                    "rest": [items[0].exp(), "s"]}

        r = lib.utils.checkpoint.checkpoint(f, pair(x, y), [z], scale=2.0, bias=z,
                                           use_reentrant=False)
        assert r["n"] == 3 and r["rest"][1] == "s"
        (r["out"] ** 2).sum().backward(retain_graph=True)
        r["rest"][0].sum().backward()
        results.append([r["out"], r["rest"][0], x.grad, y.grad, z.grad])
    _assert_same(results[1], results[0])


@BOTH
def test_several_outputs_match_torch(torch, reentrant):
    tm, cm = _twins(torch, _mlp)
    results = []
    for lib, m in ((torch, tm), (cygrad, cm)):
        x = lib.tensor(_x(), requires_grad=True)

        def f(a):
            h = m(a)
            return h.exp(), 7, h.sum(dim=1)

        u, seven, v = lib.utils.checkpoint.checkpoint(f, x, use_reentrant=reentrant)
        assert seven == 7
        ((u ** 2).sum() + (v * 3).sum()).backward()
        results.append([u, v] + _grads(m, x))
    _assert_same(results[1], results[0])


@BOTH
def test_an_output_left_out_of_the_loss(torch, reentrant):
    results = []
    for lib in (torch, cygrad):
        x = lib.tensor(_x(), requires_grad=True)
        u, v = lib.utils.checkpoint.checkpoint(lambda a: (a.sin(), a.cos()), x,
                                               use_reentrant=reentrant)
        u.sum().backward()
        results.append([u, v, x.grad])
    _assert_same(results[1], results[0])


@BOTH
def test_input_not_requiring_grad(torch, reentrant):
    tm, cm = _twins(torch, _mlp)
    results = []
    for lib, m in ((torch, tm), (cygrad, cm)):
        x = lib.tensor(_x())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = lib.utils.checkpoint.checkpoint(m, x, use_reentrant=reentrant)
        messages = [str(w.message) for w in caught]
        assert ("None of the inputs have requires_grad=True. Gradients will be None"
                in messages) is reentrant
        assert out.requires_grad is (not reentrant)
        if not reentrant:
            (out ** 2).sum().backward()
        results.append([out] + [p.grad for p in m.parameters()])
    _assert_same(results[1], results[0])
    if not reentrant:
        assert all(g is not None for g in results[1])


def test_an_input_without_grad_next_to_one_with(torch):
    results = []
    for lib in (torch, cygrad):
        for reentrant in (True, False):
            x = lib.tensor(_x(), requires_grad=True)
            c = lib.tensor(_x(seed=9))
            out = lib.utils.checkpoint.checkpoint(lambda a, b: (a * b).exp(), x, c,
                                                  use_reentrant=reentrant)
            out.sum().backward()
            results.append([out, x.grad])
    _assert_same(results[2] + results[3], results[0] + results[1])


@BOTH
def test_parameters_used_inside_and_outside(torch, reentrant):
    """The same layer inside the region and after it: the recomputation's
    backward must not disturb the pass that is running (it runs nested)."""
    def build(lib):
        lib.manual_seed(2)
        return lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.Linear(3, 3)).double()

    tm, cm = _twins(torch, build)
    results = []
    for lib, m in ((torch, tm), (cygrad, cm)):
        x = lib.tensor(_x((2, 3)), requires_grad=True)
        first, second = m[0], m[1]
        y = lib.utils.checkpoint.checkpoint(lambda a: second(first(a)), first(x),
                                            use_reentrant=reentrant)
        first(y).sum().backward()
        results.append(_grads(m, x))
    _assert_same(results[1], results[0])


def test_captured_non_leaf_tensor(torch):
    """A closure reads a tensor with a history, also used after the region."""
    results = []
    for lib in (torch, cygrad):
        x = lib.tensor(_x(), requires_grad=True)
        h0 = lib.tensor(_x(seed=5), requires_grad=True)
        h = h0.exp()
        out = lib.utils.checkpoint.checkpoint(lambda a: (a * h).sin(), x,
                                              use_reentrant=False)
        (out.sum() + (h * 3).sum()).backward()
        results.append([out, x.grad, h0.grad])
    _assert_same(results[1], results[0])


def test_captured_non_leaf_tensor_reentrant():
    """torch's reentrant variant fails here (it backpropagates through h's
    graph twice); cygrad's gives the gradient of the same computation
    without a checkpoint."""
    def run(checkpointed):
        x = cygrad.tensor(_x(), requires_grad=True)
        h0 = cygrad.tensor(_x(seed=5), requires_grad=True)
        h = h0.exp()
        f = lambda a: (a * h).sin()        # noqa: E731
        out = ckpt.checkpoint(f, x, use_reentrant=True) if checkpointed else f(x)
        (out.sum() + (h * 3).sum()).backward()
        return [out, x.grad, h0.grad]

    _assert_same(run(True), run(False))


def test_unreachable_captured_tensor_raises():
    holder = type("Holder", (), {})
    obj = root = holder()
    for _ in range(8):                   # deeper than the search goes
        obj.inner = holder()
        obj = obj.inner
    x = cygrad.tensor(_x(), requires_grad=True)
    obj.t = x * 2

    def f(a):
        o = root
        while hasattr(o, "inner"):
            o = o.inner
        return (a * o.t).sum()

    out = ckpt.checkpoint(f, x, use_reentrant=False)
    with pytest.raises(ckpt.CheckpointError, match="pass it to checkpoint"):
        out.backward()


def test_parameter_hooks_run_once(torch):
    results = []
    for lib in (torch, cygrad):
        w = lib.tensor(_x((4, 4)), requires_grad=True)
        calls = []
        w.register_hook(lambda g: calls.append(1) or g * 2)
        for reentrant in (True, False):
            w.grad = None
            x = lib.tensor(_x(), requires_grad=True)
            out = lib.utils.checkpoint.checkpoint(lambda a: (a @ w).sin(), x,
                                                  use_reentrant=reentrant)
            out.sum().backward()
            results.append(w.grad)
        assert len(calls) == 2
    _assert_same(results[2:], results[:2])


@BOTH
def test_batch_norm_running_stats_match_torch(torch, reentrant):
    def build(lib):
        lib.manual_seed(3)
        return lib.nn.Sequential(lib.nn.Linear(4, 4), lib.nn.BatchNorm1d(4)).double()

    tm, cm = _twins(torch, build)
    for lib, m in ((torch, tm), (cygrad, cm)):
        x = lib.tensor(_x((6, 4)), requires_grad=True)
        lib.utils.checkpoint.checkpoint(m, x, use_reentrant=reentrant).sum().backward()
    for k, v in tm.state_dict().items():
        _close(cm.state_dict()[k], v)


# --- autograd.grad, inputs=, higher order --------------------------------------------


def test_autograd_grad_and_double_backward_match_torch(torch):
    tm, cm = _twins(torch, _mlp)
    results = []
    for lib, m in ((torch, tm), (cygrad, cm)):
        x = lib.tensor(_x(), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(m, x, use_reentrant=False)
        g, = lib.autograd.grad((out ** 2).sum(), x, create_graph=True)
        second = lib.autograd.grad((g ** 2).sum(), [x] + list(m.parameters()))
        results.append([g, *second])
    _assert_same(results[1], results[0], tol=1e-11)


def test_third_derivative_matches_torch(torch):
    results = []
    for lib in (torch, cygrad):
        y = lib.tensor([0.3, -0.7, 1.1], dtype=lib.float64, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lambda a: (a.sin() * a).sum(), y,
                                              use_reentrant=False)
        g1, = lib.autograd.grad(out, y, create_graph=True)
        g2, = lib.autograd.grad(g1.sum(), y, create_graph=True)
        g3, = lib.autograd.grad(g2.sum(), y)
        results.append([g1, g2, g3])
    _assert_same(results[1], results[0])


def test_integer_argument_and_output_with_higher_order(torch):
    results = []
    for lib in (torch, cygrad):
        x = lib.tensor(_x((2, 3)), requires_grad=True)
        idx = lib.tensor([2, 0])

        def f(a, i):
            return (a[:, i].sin() ** 2, i * 2)

        out, doubled = lib.utils.checkpoint.checkpoint(f, x, idx, use_reentrant=False)
        assert doubled.tolist() == [4, 0] and not doubled.requires_grad
        g1, = lib.autograd.grad(out.sum(), x, create_graph=True)
        g2, = lib.autograd.grad((g1 ** 2).sum(), x, create_graph=True)
        g3, = lib.autograd.grad(g2.sum(), x)
        results.append([out, g1, g2, g3])
    _assert_same(results[1], results[0])


def test_backward_with_inputs_non_reentrant(torch):
    tm, cm = _twins(torch, _mlp)
    results = []
    for lib, m in ((torch, tm), (cygrad, cm)):
        x = lib.tensor(_x(), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(m, x, use_reentrant=False)
        out.sum().backward(inputs=[x])
        results.append(_grads(m, x))
    _assert_same(results[1], results[0])
    assert results[1][0] is not None and all(g is None for g in results[1][1:])


@pytest.mark.parametrize("call", ["grad", "inputs"])
def test_reentrant_refuses_grad_and_inputs(torch, call):
    for lib in (torch, cygrad):
        x = lib.tensor(_x(), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lib.sin, x, use_reentrant=True).sum()
        with pytest.raises(RuntimeError, match="When use_reentrant=True, "
                           r"torch.utils.checkpoint is incompatible with .grad\(\)"):
            if call == "grad":
                lib.autograd.grad(out, x)
            else:
                out.backward(inputs=[x])


@pytest.mark.parametrize("outer_reentrant", [True, False])
@pytest.mark.parametrize("inner_reentrant", [True, False])
def test_nested_checkpoints_match_torch(torch, outer_reentrant, inner_reentrant):
    results = []
    for lib in (torch, cygrad):
        w = lib.tensor(_x((4, 4)), requires_grad=True)
        x = lib.tensor(_x(), requires_grad=True)
        cp = lib.utils.checkpoint.checkpoint

        def outer(a):
            inner = cp(lambda b: (b * 2).exp(), a, use_reentrant=inner_reentrant)
            return inner @ w

        cp(outer, x, use_reentrant=outer_reentrant).tanh().sum().backward()
        results.append([x.grad, w.grad])
    _assert_same(results[1], results[0])


@BOTH
def test_retain_graph_and_a_second_backward(torch, reentrant):
    results = []
    for lib in (torch, cygrad):
        x = lib.tensor(_x(), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lambda a: a.exp() * a, x,
                                              use_reentrant=reentrant).sum()
        out.backward(retain_graph=True)
        out.backward()
        results.append(x.grad)
        with pytest.raises(RuntimeError, match="Trying to backward through the graph "
                           "a second time"):
            out.backward()
    _assert_same(results[1:], results[:1])


@BOTH
def test_in_place_change_of_an_input_is_caught(torch, reentrant):
    for lib in (torch, cygrad):
        x = lib.tensor(_x(), requires_grad=True)
        xc = x * 1
        out = lib.utils.checkpoint.checkpoint(lambda a: (a * a).sum(), xc,
                                              use_reentrant=reentrant)
        with lib.no_grad():
            xc.add_(1)
        with pytest.raises(RuntimeError, match="one of the variables needed for "
                           "gradient computation has been modified by an inplace"):
            out.backward()


@BOTH
def test_under_no_grad(torch, reentrant):
    for lib in (torch, cygrad):
        x = lib.tensor(_x(), requires_grad=True)
        with lib.no_grad():
            out = lib.utils.checkpoint.checkpoint(lambda a: a * 2, x,
                                                  use_reentrant=reentrant)
        assert not out.requires_grad
        _close(out, lib.tensor(_x() * 2))


def test_region_activations_are_freed():
    kept = []

    def f(a):
        t = a.exp()
        kept.append(weakref.ref(t))
        return t.sin()

    x = cygrad.tensor(_x(), requires_grad=True)
    out = ckpt.checkpoint(f, x, use_reentrant=False)
    gc.collect()
    assert kept[0]() is None           # the intermediate did not outlive the call
    out.sum().backward()
    np.testing.assert_allclose(_np(x.grad), np.cos(np.exp(_x())) * np.exp(_x()),
                               rtol=1e-12)


# --- warnings and errors -----------------------------------------------------------


def _outcome(fn):
    """("warns", messages) or (exception type name, message)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn()
        except Exception as e:          # noqa: BLE001  (compared across libraries)
            return type(e).__name__, str(e)
    return "warns", [(w.category.__name__, str(w.message)) for w in caught]


def test_use_reentrant_omitted_warns_and_means_reentrant(torch):
    for lib in (torch, cygrad):
        x = lib.tensor(_x(), requires_grad=True)
        with pytest.warns(UserWarning, match="the use_reentrant parameter should be "
                          "passed explicitly") as caught:
            out = lib.utils.checkpoint.checkpoint(lib.sin, x)
        assert str(caught[0].message).startswith("torch.utils.checkpoint: ")
        assert type(out.grad_fn).__name__ == "CheckpointFunctionBackward"
        with pytest.warns(UserWarning, match="the use_reentrant parameter should be "
                          "passed explicitly") as caught:
            lib.utils.checkpoint.checkpoint_sequential([lib.sin, lib.cos], 2, x)
        assert str(caught[0].message).startswith(
            "torch.utils.checkpoint.checkpoint_sequential: ")


CASES = {
    "kwargs_reentrant": lambda lib, x: lib.utils.checkpoint.checkpoint(
        lib.sin, x, use_reentrant=True, foo=1, bar=2),
    "context_fn_reentrant": lambda lib, x: lib.utils.checkpoint.checkpoint(
        lib.sin, x, use_reentrant=True, context_fn=lambda: None),
    "debug_reentrant": lambda lib, x: lib.utils.checkpoint.checkpoint(
        lib.sin, x, use_reentrant=True, debug=True),
    "debug_and_context_fn": lambda lib, x: lib.utils.checkpoint.checkpoint(
        lib.sin, x, use_reentrant=False, debug=True, context_fn=lambda: None),
    "determinism_check": lambda lib, x: lib.utils.checkpoint.checkpoint(
        lib.sin, x, use_reentrant=False, determinism_check="all"),
    "sequential_kwargs": lambda lib, x: lib.utils.checkpoint.checkpoint_sequential(
        [lib.sin], 1, x, use_reentrant=False, foo=1, bar=2),
    "no_output_requires_grad": lambda lib, x: lib.utils.checkpoint.checkpoint(
        lambda a: a.detach() * 2, x, use_reentrant=True).sum().backward(),
    "detach_variable_list": lambda lib, x: lib.utils.checkpoint.detach_variable([x]),
    "forward_error": lambda lib, x: lib.utils.checkpoint.checkpoint(
        lambda a: a.view(7), x, use_reentrant=False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_errors_match_torch(torch, case):
    got = []
    for lib in (torch, cygrad):
        got.append(_outcome(lambda: CASES[case](lib, lib.tensor(
            _x(), requires_grad=True))))
    (t_kind, t_msg), (c_kind, c_msg) = got
    assert c_kind == t_kind
    if case == "forward_error":        # the function's own error, passed through
        return
    assert c_msg == t_msg


def test_context_fn_runs_forward_and_recomputation(torch):
    import contextlib

    for lib in (torch, cygrad):
        log = []

        @contextlib.contextmanager
        def mark(name):
            log.append(name + " in")
            try:         # torch leaves its recomputation early, by an exception
                yield
            finally:
                log.append(name + " out")

        x = lib.tensor(_x(), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(
            lib.exp, x, use_reentrant=False,
            context_fn=lambda: (mark("forward"), mark("recompute")))
        assert log == ["forward in", "forward out"]
        out.sum().backward()
        assert log == ["forward in", "forward out", "recompute in", "recompute out"]


def test_context_fn_swallowing_an_error(torch):
    class Swallow:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return True

    for lib in (torch, cygrad):
        x = lib.tensor(_x(), requires_grad=True)
        with pytest.raises(RuntimeError, match="the forward context provided by "
                           "context_fn suppressed an exception"):
            lib.utils.checkpoint.checkpoint(
                lambda a: a.view(7), x, use_reentrant=False,
                context_fn=lambda: (Swallow(), Swallow()))


def _changing(lib, kind):
    """A checkpointed output whose recomputation differs from its forward."""
    state = {"n": 4, "deep": True}

    def f(a):
        b = a[:, :state["n"]].sin()
        return (b.sin() if state["deep"] else b).sum()

    x = lib.tensor(_x(), requires_grad=True)
    out = lib.utils.checkpoint.checkpoint(f, x, use_reentrant=False)
    if kind == "shape":
        state["n"] = 2
    else:
        state["deep"] = False
    return out


@pytest.mark.parametrize("kind,phrase", [
    ("shape", "torch.utils.checkpoint: Recomputed values for the following "
              "tensors have different metadata than during the forward pass."),
    ("count", "torch.utils.checkpoint: A different number of tensors was saved "
              "during the original forward and recomputation."),
])
def test_recomputation_that_differs(torch, kind, phrase):
    for lib in (torch, cygrad):
        out = _changing(lib, kind)
        with pytest.raises(lib.utils.checkpoint.CheckpointError) as info:
            out.backward()
        assert isinstance(info.value, RuntimeError)
        assert str(info.value).startswith(phrase)


def test_debug_lists_the_operations():
    with ckpt.set_checkpoint_debug_enabled(True):
        out = _changing(cygrad, "shape")
    with pytest.raises(ckpt.CheckpointError) as info:
        out.backward()
    text = str(info.value)
    assert "Operations of the original forward" in text
    assert "Operations of the recomputation" in text
    assert text.count("SinBackward0") >= 4
    out = _changing(cygrad, "shape")   # the override ended with the block
    with pytest.raises(ckpt.CheckpointError) as info:
        out.backward()
    assert "Operations of the recomputation" not in str(info.value)
    assert "debug=True" in str(info.value)


def test_determinism_check_none_skips_the_comparison():
    state = {"scale": 2.0, "n": 4}

    def f(a):
        return (a[:, :state["n"]] * state["scale"]).sin().sum()

    x = cygrad.tensor(_x(), requires_grad=True)
    out = ckpt.checkpoint(f, x, use_reentrant=False, determinism_check="none")
    state["n"] = 3
    out.backward()                      # no error: the check was turned off
    expected = np.zeros_like(_x())
    expected[:, :3] = 2.0 * np.cos(2.0 * _x()[:, :3])
    np.testing.assert_allclose(_np(x.grad), expected, rtol=1e-12)


# --- the small names and the package ------------------------------------------------


def test_detach_variable_and_check_backward_validity(torch):
    for lib in (torch, cygrad):
        x = lib.tensor(_x(), requires_grad=True)
        a, b, c = lib.utils.checkpoint.detach_variable((x, 3, lib.tensor(_x())))
        assert a.requires_grad and a.is_leaf and a is not x and b == 3
        assert not c.requires_grad
        _close(a, x)
        with pytest.warns(UserWarning, match="None of the inputs have "
                          "requires_grad=True. Gradients will be None"):
            lib.utils.checkpoint.check_backward_validity((c, 3))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.utils.checkpoint.check_backward_validity((x, 3))


def test_noop_context_fn():
    a, b = ckpt.noop_context_fn()
    with a, b:
        pass


def test_module_is_registered():
    import importlib

    assert cygrad.utils.checkpoint is importlib.import_module("cygrad.utils.checkpoint")
    from cygrad.utils.checkpoint import checkpoint, checkpoint_sequential

    assert checkpoint is ckpt.checkpoint
    assert checkpoint_sequential is ckpt.checkpoint_sequential
    for name in ckpt.__all__:
        assert hasattr(ckpt, name), name
    assert issubclass(ckpt.CheckpointError, RuntimeError)


def test_public_names_are_torchs(torch):
    import torch.utils.checkpoint as tc

    assert set(ckpt.__all__) <= set(tc.__all__)
