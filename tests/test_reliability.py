"""Errors in the middle of backward leave every leaf's ``.grad`` as it was and,
with ``retain_graph=True``, the graph usable; grad mode and engine state are
restored whatever the exception."""

import numpy as np
import pytest

import cygrad


class Boom(Exception):
    pass


def _boom(*args):
    raise Boom("boom")


def _leaves():
    a = cygrad.tensor([0.5, -1.0, 2.0], dtype=cygrad.float64, requires_grad=True)
    b = cygrad.tensor(
        [[1.0, 2.0, 3.0], [0.1, 0.2, 0.3]], dtype=cygrad.float64, requires_grad=True
    )
    c = cygrad.tensor(1.5, dtype=cygrad.float64, requires_grad=True)
    return a, b, c


def _graph(a, b, c, mid_hook=None, fn=None):
    """A diamond-ish graph touching every leaf through several paths."""
    h = (a * b).tanh() + c * a
    if mid_hook is not None:
        h.register_hook(mid_hook)
    u = h.exp().sum(dim=1)
    v = (b @ a.reshape(3, 1)).reshape(2) * c
    if fn is not None:
        v = fn.apply(v)
    return (u * v).sum() + (a * a).sum()


def _reference_grads():
    a, b, c = _leaves()
    _graph(a, b, c).backward()
    return [t.grad.numpy().copy() for t in (a, b, c)]


def _grads(ts):
    return [None if t.grad is None else t.grad.numpy().copy() for t in ts]


def _same(g1, g2):
    for x, y in zip(g1, g2):
        if x is None or y is None:
            assert x is None and y is None
        else:
            np.testing.assert_array_equal(x, y)


class RaisingFunction(cygrad.autograd.Function):
    """Identity whose backward raises while ``armed``."""

    armed = True

    @staticmethod
    def forward(ctx, x):
        return cygrad.from_numpy(x._arr.copy())

    @staticmethod
    def backward(ctx, grad):
        if RaisingFunction.armed:
            raise Boom("function backward")
        return grad


def _prefill(ts, fill):
    if fill:
        for k, t in enumerate(ts):
            t.grad = cygrad.full(t.shape, 10.0 * (k + 1), dtype=cygrad.float64)


WHERE = ["leaf hook a", "leaf hook c", "mid hook", "function"]


def _arm(where, a, b, c):
    """Install the failure; return (graph kwargs, disarm callable).

    (Post-accumulate hooks run after every .grad is summed, as in torch, so
    one that raises leaves the sums in place; not tested here.)
    """
    kwargs = {}
    handles = []
    if where == "leaf hook a":
        handles.append(a.register_hook(_boom))
    elif where == "leaf hook c":
        handles.append(c.register_hook(_boom))
    elif where == "mid hook":
        state = {"on": True}

        def hook(g):
            if state["on"]:
                raise Boom("mid")

        kwargs["mid_hook"] = hook
        handles.append(state)
    elif where == "function":
        RaisingFunction.armed = True
        kwargs["fn"] = RaisingFunction

    def disarm():
        for h in handles:
            if isinstance(h, dict):
                h["on"] = False
            else:
                h.remove()
        RaisingFunction.armed = False

    if where == "function":
        kwargs["fn"] = RaisingFunction
    return kwargs, disarm


@pytest.mark.parametrize("fill", [False, True], ids=["grad None", "grad set"])
@pytest.mark.parametrize("where", WHERE)
def test_error_mid_backward_leaves_grads_and_graph(where, fill):
    want = _reference_grads()
    a, b, c = _leaves()
    _prefill((a, b, c), fill)
    before = _grads((a, b, c))
    kwargs, disarm = _arm(where, a, b, c)
    try:
        loss = _graph(a, b, c, **kwargs)
        with pytest.raises(Boom):
            loss.backward(retain_graph=True)
        # Every leaf's .grad is as before: not partially accumulated.
        _same(before, _grads((a, b, c)))
        assert cygrad.is_grad_enabled()
        # The graph is intact: backward again (failure removed) gives exactly
        # the reference gradients on top of what was there.
        disarm()
        loss.backward()
    finally:
        RaisingFunction.armed = True
    for got, ref, prev in zip(_grads((a, b, c)), want, before):
        np.testing.assert_allclose(got, ref + (0 if prev is None else prev), rtol=1e-13)


@pytest.mark.parametrize("where", ["leaf hook a", "mid hook", "function"])
def test_error_mid_autograd_grad_changes_nothing(where):
    a, b, c = _leaves()
    _prefill((a, b, c), True)
    before = _grads((a, b, c))
    kwargs, disarm = _arm(where, a, b, c)
    try:
        loss = _graph(a, b, c, **kwargs)
        with pytest.raises(Boom):
            cygrad.autograd.grad(loss, (a, b, c), retain_graph=True)
        _same(before, _grads((a, b, c)))
        disarm()
        ga, gb, gc = cygrad.autograd.grad(loss, (a, b, c))
    finally:
        RaisingFunction.armed = True
    _same(before, _grads((a, b, c)))
    ref = _reference_grads()
    for g, r in zip((ga, gb, gc), ref):
        np.testing.assert_allclose(g.numpy(), r, rtol=1e-13)


def test_error_mid_create_graph_backward_restores_grad_mode():
    a, b, c = _leaves()
    loss = _graph(a, b, c, mid_hook=_boom)
    for mode in (True, False):
        cygrad.set_grad_enabled(mode)
        try:
            with pytest.raises(Boom):
                cygrad.autograd.backward(loss, retain_graph=True, create_graph=True)
            assert cygrad.is_grad_enabled() is mode
        finally:
            cygrad.set_grad_enabled(True)
    assert a.grad is None and b.grad is None and c.grad is None


def test_error_without_retain_graph_then_clear_error_not_crash():
    """Without retain_graph the buffers of nodes already run are freed (as in
    torch): retrying raises the backward-twice error, never crashes, and the
    leaves stay untouched."""
    a, b, c = _leaves()
    RaisingFunction.armed = True
    loss = _graph(a, b, c, fn=RaisingFunction)
    with pytest.raises(Boom):
        loss.backward()
    RaisingFunction.armed = False
    try:
        try:
            loss.backward()
        except RuntimeError as e:
            assert "second time" in str(e)
        else:
            pass  # nothing had been freed on the failing path
    finally:
        RaisingFunction.armed = True
    assert all(t.grad is None for t in (a, b, c)) or all(
        t.grad is not None for t in (a, b, c)
    )


def test_version_error_mid_backward_changes_nothing():
    a, b, c = _leaves()
    _prefill((a, b, c), True)
    before = _grads((a, b, c))
    h = a.exp()
    loss = (h * b).sum() + (c * a).sum()
    with cygrad.no_grad():
        h.mul_(2)  # exp saved its output
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward(retain_graph=True)
    _same(before, _grads((a, b, c)))


def test_keyboard_interrupt_in_hook_restores_state():
    a, b, c = _leaves()

    def interrupt(g):
        raise KeyboardInterrupt

    h = c.register_hook(interrupt)
    loss = _graph(a, b, c)
    with pytest.raises(KeyboardInterrupt):
        loss.backward(retain_graph=True)
    assert cygrad.is_grad_enabled()
    assert a.grad is None and b.grad is None and c.grad is None
    h.remove()
    loss.backward()
    _same(_grads((a, b, c)), _reference_grads())


def test_hook_returning_wrong_things_changes_nothing():
    for bad, exc in (
        (lambda g: cygrad.ones(7, dtype=cygrad.float64), RuntimeError),
        (lambda g: 3.0, TypeError),
        (lambda g: g.numpy(), TypeError),
    ):
        a, b, c = _leaves()
        _prefill((a, b, c), True)
        before = _grads((a, b, c))
        h = a.register_hook(bad)
        loss = _graph(a, b, c)
        with pytest.raises(exc):
            loss.backward(retain_graph=True)
        _same(before, _grads((a, b, c)))
        h.remove()
        loss.backward()


def test_many_failed_backwards_do_not_corrupt_engine_state():
    """Failures interleaved with successes across graphs sharing leaves: the
    successful ones always give the reference gradients."""
    ref = _reference_grads()
    a, b, c = _leaves()
    RaisingFunction.armed = True
    try:
        for k in range(20):
            a.grad = b.grad = c.grad = None
            if k % 3 == 0:
                bad = _graph(a, b, c, fn=RaisingFunction)
                with pytest.raises(Boom):
                    bad.backward()
                assert a.grad is None
            else:
                _graph(a, b, c).backward()
                _same(_grads((a, b, c)), ref)
    finally:
        RaisingFunction.armed = True


def test_retain_graph_many_times_is_stable():
    a, b, c = _leaves()
    loss = _graph(a, b, c)
    for _ in range(50):
        loss.backward(retain_graph=True)
    ref = _reference_grads()
    for got, r in zip(_grads((a, b, c)), ref):
        np.testing.assert_allclose(got, 50 * r, rtol=1e-12)
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
