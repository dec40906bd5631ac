"""Tensor.register_post_accumulate_grad_hook fires as soon as a leaf's .grad is
final, in the middle of backward (DistributedDataParallel's gradient-ready
signal): order and timing against torch, observed through a Function whose
backward runs later."""

import numpy as np
import pytest

import cygrad
from cygrad.autograd import Function

torch = pytest.importorskip("torch")


def _probe_cls(lib, log):
    """An identity Function that logs when its backward runs."""
    base = lib.autograd.Function

    class Probe(base):
        @staticmethod
        def forward(ctx, x, name):
            ctx.name = name
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            log.append(("probe", ctx.name))
            return grad, None

    return Probe


def _run(lib, build, n_leaves=3):
    log = []
    probe = _probe_cls(lib, log).apply
    leaves = [lib.tensor([1.0 + i, 2.0 - i], dtype=lib.float64, requires_grad=True)
              for i in range(n_leaves)]
    for i, t in enumerate(leaves):
        t.register_post_accumulate_grad_hook(
            lambda t, i=i: log.append(("post", i, t.grad.tolist())))
    build(probe, *leaves).sum().backward()
    return log, [t.grad.tolist() for t in leaves]


GRAPHS = {
    # w used last in forward: its grad is final before the probe runs
    "leaf_first_operand": lambda p, w, x, v: w * p(x * v, "a"),
    "leaf_second_operand": lambda p, w, x, v: p(x * v, "a") * w,
    # w used twice: final only after the probed path delivered its share
    "leaf_used_twice": lambda p, w, x, v: w * p(w * x, "a") + v,
    "chain_of_probes": lambda p, w, x, v: p(p(w * x, "inner") * v, "outer"),
    "diamond": lambda p, w, x, v: p(w * x, "l") * p(w + v, "r"),
    "sum_of_layers": lambda p, w, x, v: p(p(x.exp(), "e") * w, "m") + v * v,
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_post_hooks_fire_when_ready_in_torch_order(name):
    got, grads = _run(cygrad, GRAPHS[name])
    want, want_grads = _run(torch, GRAPHS[name])
    assert got == want
    np.testing.assert_allclose(grads, want_grads, rtol=1e-12)


def test_mlp_parameters_fire_in_reverse_order_of_use_like_torch():
    order = {}
    for lib in (cygrad, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.ReLU(),
                                  lib.nn.Linear(5, 3), lib.nn.Tanh(),
                                  lib.nn.Linear(3, 2))
        seen = []
        for pname, p in model.named_parameters():
            p.register_post_accumulate_grad_hook(
                lambda t, pname=pname, seen=seen: seen.append(pname))
        x = lib.ones(6, 4)
        model(x).sum().backward()
        order[lib.__name__] = seen
    # torch's Linear is addmm(bias, x, W.t()), cygrad's one node: within a
    # layer the two may differ, the layers come in the same (reverse) order
    layers = {lib: [n.split(".")[0] for n in seen] for lib, seen in order.items()}
    assert layers["cygrad"] == layers["torch"] == ["4", "4", "2", "2", "0", "0"]
    assert sorted(order["cygrad"]) == sorted(order["torch"])


def test_hook_runs_before_a_later_node_of_the_same_backward():
    log = []
    probe = _probe_cls(cygrad, log).apply
    w = cygrad.tensor([2.0], requires_grad=True)
    x = cygrad.tensor([3.0], requires_grad=True)
    w.register_post_accumulate_grad_hook(lambda t: log.append(("w", t.grad.item())))
    (w * probe(x, "x")).sum().backward()
    assert log == [("w", 3.0), ("probe", "x")]


def test_tensor_hook_then_grad_then_post_hook_once_per_backward():
    w = cygrad.tensor([1.0, 2.0], dtype=cygrad.float64, requires_grad=True)
    log = []
    w.register_hook(lambda g: log.append(("pre", g.tolist())) or g * 2)
    w.register_post_accumulate_grad_hook(lambda t: log.append(("post",
                                                               t.grad.tolist())))
    (w * w + w * 3).sum().backward()
    (w * 3).sum().backward()
    assert log == [("pre", [5.0, 7.0]), ("post", [10.0, 14.0]),
                   ("pre", [3.0, 3.0]), ("post", [16.0, 20.0])]


def test_removed_hook_does_not_fire():
    w = cygrad.tensor([1.0], requires_grad=True)
    calls = []
    h = w.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    (w * 2).sum().backward()
    h.remove()
    (w * 2).sum().backward()
    assert calls == [1]
    np.testing.assert_allclose(w.grad.numpy(), [4.0])


def test_backward_inputs_fires_only_the_requested_leaves():
    for lib in (cygrad, torch):
        a = lib.tensor([1.0], requires_grad=True)
        b = lib.tensor([2.0], requires_grad=True)
        seen = []
        a.register_post_accumulate_grad_hook(lambda t, s=seen: s.append("a"))
        b.register_post_accumulate_grad_hook(lambda t, s=seen: s.append("b"))
        (a * b).sum().backward(inputs=[b])
        assert seen == ["b"], lib.__name__
        assert a.grad is None


def test_create_graph_gives_a_differentiable_grad_in_the_hook():
    w = cygrad.tensor([3.0], dtype=cygrad.float64, requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.requires_grad))
    (w ** 3).sum().backward(create_graph=True)
    assert seen == [True]
    (g,) = cygrad.autograd.grad(w.grad.sum(), w)
    np.testing.assert_allclose(g.numpy(), [18.0])


def test_leaves_without_post_hooks_still_wait_for_the_whole_backward():
    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            raise ValueError("boom")

    w = cygrad.tensor([2.0], requires_grad=True)
    x = cygrad.tensor([3.0], requires_grad=True)
    with pytest.raises(ValueError, match="boom"):
        (w * Boom.apply(x)).sum().backward()
    assert w.grad is None and x.grad is None
    # with a post hook, w is finished (and its hook called) before Boom runs,
    # as torch does
    called = []
    w.register_post_accumulate_grad_hook(lambda t: called.append(t.grad.item()))
    with pytest.raises(ValueError, match="boom"):
        (w * Boom.apply(x)).sum().backward()
    assert called == [3.0] and x.grad is None
