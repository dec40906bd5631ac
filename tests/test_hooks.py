"""Tensor hooks: order, replacement, removal, leaves and non-leaves,
post-accumulate hooks, hooks under autograd.grad and create_graph."""

import numpy as np
import pytest

import cygrad
from cygrad.autograd import Function


def leaf(values, dtype=cygrad.float64):
    return cygrad.tensor(values, dtype=dtype, requires_grad=True)


def test_non_leaf_hooks_run_in_order_and_chain_replacements():
    x = leaf([1.0, 2.0])
    y = x * 2
    log = []
    y.register_hook(lambda g: log.append(("h1", g.tolist())) or g * 10)
    y.register_hook(lambda g: log.append(("h2", g.tolist())) or g + 1)
    (y * y).sum().backward()
    assert log == [("h1", [4.0, 8.0]), ("h2", [40.0, 80.0])]
    np.testing.assert_allclose(x.grad.numpy(), [82.0, 162.0])


def test_retained_grad_sees_the_value_after_all_hooks():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.register_hook(lambda g: g * 10)
    y.retain_grad()
    y.register_hook(lambda g: g + 1)          # registered after retain_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [41.0, 81.0])


def test_leaf_hook_replaces_the_accumulated_gradient():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()) or g * 0 + 7)
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]]
    np.testing.assert_allclose(x.grad.numpy(), [7.0, 7.0])


def test_hook_returning_none_observes_only():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    (x * x).sum().backward()
    np.testing.assert_allclose(seen[0], [2.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_handle_remove_and_context_manager():
    x = leaf([1.0, 2.0])
    h = x.register_hook(lambda g: g * 0 + 7)
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [7.0, 7.0])
    h.remove()
    h.remove()                                # idempotent
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [10.0, 10.0])

    y = leaf([1.0])
    with y.register_hook(lambda g: g * 100):
        (y * 1).sum().backward()
    (y * 1).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [101.0])


def test_removing_one_of_several_hooks_keeps_the_others_in_order():
    x = leaf([1.0])
    y = x * 1
    log = []
    y.register_hook(lambda g: log.append("a"))
    hb = y.register_hook(lambda g: log.append("b"))
    y.register_hook(lambda g: log.append("c"))
    hb.remove()
    y.sum().backward()
    assert log == ["a", "c"]


def test_hook_fires_once_with_the_summed_gradient_on_fan_out():
    x = leaf([1.0, 2.0])
    calls = []
    x.register_hook(lambda g: calls.append(g.tolist()))
    (x * x + x).sum().backward()
    assert calls == [[3.0, 5.0]]

    y = x * 2
    calls.clear()
    y.register_hook(lambda g: calls.append(g.tolist()))
    (y.exp() + y).sum().backward()
    np.testing.assert_allclose(calls[0], np.exp([2.0, 4.0]) + 1)


def test_non_leaf_hook_changes_what_reaches_the_leaves():
    x = leaf([1.0, 2.0])
    y = x.tanh()
    y.register_hook(lambda g: g * 0)
    (y * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_hook_on_one_output_of_a_multi_output_function():
    class Split(Function):
        @staticmethod
        def forward(ctx, x):
            return cygrad.from_numpy(x._arr * 2), cygrad.from_numpy(x._arr * 3)

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    x = leaf([1.0])
    a, b = Split.apply(x)
    b.register_hook(lambda g: g * 100)
    (a + b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0 + 300.0])


def test_post_accumulate_grad_hook_sees_the_new_grad():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0], [6.0, 6.0]]


def test_post_accumulate_grad_hook_runs_after_tensor_hooks_and_can_step():
    w = leaf([1.0, 2.0])
    order = []
    w.register_hook(lambda g: order.append("tensor") or g * 2)

    def sgd_in_hook(t):
        order.append("post")
        with cygrad.no_grad():
            t.sub_(t.grad * 0.5)
        t.grad = None

    w.register_post_accumulate_grad_hook(sgd_in_hook)
    (w * w).sum().backward()
    assert order == ["tensor", "post"]
    # grad = 2 * (2w) = 4w; w <- w - 0.5 * 4w = -w
    np.testing.assert_allclose(w.detach().numpy(), [-1.0, -2.0])
    assert w.grad is None


def test_post_accumulate_grad_hook_not_called_by_autograd_grad():
    x = leaf([1.0])
    called = []
    x.register_post_accumulate_grad_hook(lambda t: called.append(1))
    cygrad.autograd.grad((x * 3).sum(), x)
    assert called == []
    assert x.grad is None


def test_hook_registration_errors():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that "
                       "doesn't require gradient"):
        cygrad.tensor([1.0]).register_hook(lambda g: g)
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be "
                       "registered on non-leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_hook_returning_a_non_tensor_is_an_error():
    x = leaf([1.0, 2.0])
    x.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="expected Tensor, but hook returned 'int'"):
        (x * 2).sum().backward()
    assert x.grad is None


def test_hook_changing_shape_or_dtype_is_an_error():
    x = leaf([1.0, 2.0])
    h = x.register_hook(lambda g: cygrad.ones(3, dtype=cygrad.float64))
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        (x * 2).sum().backward()
    h.remove()
    y = x * 2
    y.register_hook(lambda g: g.to(cygrad.float32))
    with pytest.raises(RuntimeError, match="has changed the type of value"):
        (y * 2).sum().backward()


def test_leaf_hook_applies_to_autograd_grad_result_and_leaves_grad_alone():
    x = leaf([1.0, 2.0])
    x.register_hook(lambda g: g * 100)
    (g,) = cygrad.autograd.grad((x * 3).sum(), x)
    np.testing.assert_allclose(g.numpy(), [300.0, 300.0])
    assert x.grad is None


def test_hooks_of_unneeded_leaves_do_not_run_under_grad():
    x, y = leaf([1.0]), leaf([2.0])
    called = []
    y.register_hook(lambda g: called.append("y"))
    cygrad.autograd.grad((x * y).sum(), x)
    assert called == []


def test_backward_inputs_runs_hooks_of_listed_leaves_only():
    x, y = leaf([1.0]), leaf([2.0])
    called = []
    x.register_hook(lambda g: called.append("x") or g * 10)
    y.register_hook(lambda g: called.append("y"))
    (x * y).sum().backward(inputs=[x])
    assert called == ["x"]
    np.testing.assert_allclose(x.grad.numpy(), [20.0])
    assert y.grad is None


def test_hook_gets_a_differentiable_gradient_under_create_graph():
    x = leaf([1.0, 2.0])
    flags = []
    x.register_hook(lambda g: flags.append(g.requires_grad))
    (g,) = cygrad.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert flags == [True]
    (gg,) = cygrad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0])


def test_hook_replacement_is_differentiated_under_create_graph():
    # y = x**2; hook scales dy by x (a differentiable replacement); d/dx of
    # the resulting first derivative sum(2x * x) = 4x.
    x = leaf([1.0, 3.0])
    y = x ** 2
    y.register_hook(lambda g: g * x)
    (g,) = cygrad.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [2.0, 18.0])
    (gg,) = cygrad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [4.0, 12.0])


def test_node_prehook_replaces_output_gradients():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.grad_fn.register_prehook(lambda grads: (grads[0] * 2,))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


def test_hooks_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib, make):
        x = make([0.5, -1.0, 2.0])
        w = make([1.5, 0.25, -0.5])
        log = []
        h = lib_hooks(lib, x, w, log)
        loss = ((x * w).tanh() * x).sum()
        loss.backward()
        h.remove()
        loss2 = (x * w).sum()
        loss2.backward()
        return x.grad.numpy(), w.grad.numpy(), log

    def lib_hooks(lib, x, w, log):
        x.register_hook(lambda g: log.append(np.round(g.detach().numpy(), 12)))
        return w.register_hook(lambda g: g * 2)

    cx, cw, clog = run(cygrad, lambda v: cygrad.tensor(v, dtype=cygrad.float64,
                                                       requires_grad=True))
    tx, tw, tlog = run(torch, lambda v: torch.tensor(v, dtype=torch.float64,
                                                     requires_grad=True))
    np.testing.assert_allclose(cx, tx, rtol=1e-12)
    np.testing.assert_allclose(cw, tw, rtol=1e-12)
    assert len(clog) == len(tlog) == 2
    for a, b in zip(clog, tlog):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_prehook_on_a_leafs_accumulate_grad_runs_once():
    x = leaf([1.0, 2.0])
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad"
    calls = []
    acc.register_prehook(lambda grads: calls.append(1) or (grads[0] * 10,))
    y.sum().backward()
    assert len(calls) == 1
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 20.0])
