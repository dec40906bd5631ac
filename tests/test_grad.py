"""autograd.grad and autograd.backward: semantics and torch's messages."""

import numpy as np
import pytest

import cygrad
from cygrad.autograd import backward, grad


def leaf(values, dtype=cygrad.float64):
    return cygrad.tensor(values, dtype=dtype, requires_grad=True)


# --- grad ------------------------------------------------------------------------------

def test_grad_returns_gradients_and_leaves_grad_untouched():
    x = leaf([1.0, 2.0])
    (g,) = grad((x * x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    assert x.grad is None
    assert not g.requires_grad

    x.grad = cygrad.tensor([5.0, 5.0], dtype=cygrad.float64)
    grad((x * x).sum(), x)
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0])


def test_grad_does_not_touch_other_leaves():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (gx,) = grad((x * w).sum(), x)
    np.testing.assert_allclose(gx.numpy(), [3.0, 4.0])
    assert w.grad is None and x.grad is None


def test_grad_with_respect_to_several_inputs_and_a_non_leaf():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    h = x * w
    gh, gx, gw = grad((h.tanh()).sum(), (h, x, w))
    d = 1 - np.tanh([3.0, 8.0]) ** 2
    np.testing.assert_allclose(gh.numpy(), d)
    np.testing.assert_allclose(gx.numpy(), d * [3.0, 4.0])
    np.testing.assert_allclose(gw.numpy(), d * [1.0, 2.0])


def test_grad_of_the_same_input_twice():
    x = leaf([1.0, 2.0])
    g1, g2 = grad((x * 3).sum(), [x, x])
    np.testing.assert_allclose(g1.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(g2.numpy(), [3.0, 3.0])


def test_unreachable_input_error_and_allow_unused():
    x, y = leaf([1.0, 2.0]), leaf([3.0])
    with pytest.raises(RuntimeError, match=r"The differentiated Tensor at index 1 "
                       r"appears to not have been used in the graph\. Set "
                       r"allow_unused=True if this is the desired behavior\."):
        grad((x * 2).sum(), [x, y])
    gx, gy = grad((x * 2).sum(), [x, y], allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), [2.0, 2.0])
    assert gy is None
    gx, gy = grad((x * 2).sum(), [x, y], allow_unused=True, materialize_grads=True)
    np.testing.assert_array_equal(gy.numpy(), [0.0])


def test_input_that_does_not_require_grad_is_an_error():
    x = leaf([1.0])
    z = cygrad.tensor([1.0])
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does "
                       "not require grad"):
        grad((x * 2).sum(), [z])


def test_grad_outputs_vector_jacobian_product():
    x = leaf([1.0, 2.0, 3.0])
    v = cygrad.tensor([1.0, 0.5, -2.0], dtype=cygrad.float64)
    (g,) = grad(x ** 2, x, grad_outputs=v)
    np.testing.assert_allclose(g.numpy(), 2 * np.array([1.0, 2.0, 3.0]) * [1, 0.5, -2])


def test_grad_outputs_for_several_outputs_with_none_for_a_scalar():
    x = leaf([1.0, 2.0])
    (g,) = grad([(x * 2).sum(), x * 3], x,
                grad_outputs=[None, cygrad.tensor([1.0, 10.0], dtype=cygrad.float64)])
    np.testing.assert_allclose(g.numpy(), [5.0, 32.0])


def test_grad_outputs_shape_mismatch_and_missing_for_non_scalar():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has "
                       r"a shape of .*3.* and output\[0\] has a shape of .*2"):
        grad(x * 2, x, grad_outputs=cygrad.ones(3, dtype=cygrad.float64))
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for "
                       "scalar outputs"):
        grad(x * 2, x)


def test_grad_outputs_of_another_dtype_are_cast():
    x = leaf([1.0, 2.0], dtype=cygrad.float32)
    (g,) = grad(x * 2, x, grad_outputs=cygrad.ones(2, dtype=cygrad.float64))
    assert g.dtype == cygrad.float32
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0])


def test_grad_frees_the_graph_unless_retained():
    x = leaf([1.0, 2.0])
    out = (x * x).sum()
    grad(out, x, retain_graph=True)
    (g,) = grad(out, x)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a "
                       "second time"):
        grad(out, x)


def test_grad_with_create_graph_retains_by_default():
    x = leaf([1.0, 2.0])
    out = (x ** 3).sum()
    (g,) = grad(out, x, create_graph=True)
    (g_again,) = grad(out, x)                   # graph kept by create_graph
    np.testing.assert_allclose(g_again.numpy(), g.detach().numpy())


def test_grad_inside_no_grad_still_differentiates_the_recorded_graph():
    x = leaf([1.0, 2.0])
    out = (x * x).sum()
    with cygrad.no_grad():
        (g,) = grad(out, x)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


def test_retained_non_leaf_grad_is_filled_by_grad_as_in_torch():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    grad((y * y).sum(), x)
    np.testing.assert_allclose(y.grad.numpy(), [4.0, 8.0])
    assert x.grad is None


def test_grads_batched_is_refused_clearly():
    x = leaf([1.0])
    with pytest.raises(NotImplementedError, match="is_grads_batched"):
        grad(x * 2, x, grad_outputs=cygrad.ones(3, 1), is_grads_batched=True)


# --- backward ----------------------------------------------------------------------------

def test_backward_of_several_roots_with_grad_tensors():
    x = leaf([1.0, 2.0])
    backward([(x * 2).sum(), x * 3],
             [None, cygrad.tensor([1.0, 10.0], dtype=cygrad.float64)])
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 32.0])


def test_backward_accumulates_across_calls():
    x = leaf([1.0, 2.0])
    (x * 2).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 6.0])


def test_backward_count_and_shape_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        backward([(x * 2).sum(), x * 3], [None])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for "
                       "scalar outputs"):
        backward([x * 3])
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 3).backward(cygrad.ones(3, dtype=cygrad.float64))
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require "
                       "grad and does not have a grad_fn"):
        cygrad.tensor([1.0]).sum().backward()


def test_backward_inputs_accumulates_only_into_chosen_leaves():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0])
    backward((x * w).sum(), inputs=(x,))
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0])


def test_backward_inputs_with_a_non_leaf_sets_its_grad():
    x = leaf([1.0, 2.0])
    a = x * 2
    (a * a).sum().backward(inputs=[a])
    np.testing.assert_allclose(a.grad.numpy(), [4.0, 8.0])
    assert x.grad is None


def test_backward_empty_inputs_is_an_error():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` "
                       "cannot be empty"):
        (x * 2).sum().backward(inputs=[])


def test_broadcasting_gradients_are_summed_to_input_shapes():
    a = leaf(np.ones((3, 1)))
    b = leaf(np.ones((1, 4)))
    ga, gb = grad((a * b * 2).sum(), (a, b))
    assert ga.shape == (3, 1) and gb.shape == (1, 4)
    np.testing.assert_allclose(ga.numpy(), np.full((3, 1), 8.0))
    np.testing.assert_allclose(gb.numpy(), np.full((1, 4), 6.0))


def test_diamond_graph():
    x = leaf([0.5, -1.0])
    a = x.exp()
    b = a * x
    c = a + b
    (g,) = grad(c.sum(), x)
    xv = np.array([0.5, -1.0])
    np.testing.assert_allclose(g.numpy(), np.exp(xv) * (2 + xv))


def test_grad_and_backward_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    xv, wv, vv = rng.standard_normal(4), rng.standard_normal((4, 3)), \
        rng.standard_normal(3)

    def run(lib, tensor):
        x = tensor(xv, requires_grad=True)
        w = tensor(wv, requires_grad=True)
        h = (x @ w).tanh()
        gx, gw = lib.autograd.grad(h * h, (x, w), grad_outputs=tensor(vv),
                                   retain_graph=True)
        lib.autograd.backward([h.sum(), (x * x).sum()], inputs=[x])
        return gx.numpy(), gw.numpy(), x.grad.numpy(), w.grad

    c = run(cygrad, lambda v, requires_grad=False: cygrad.tensor(
        v, dtype=cygrad.float64, requires_grad=requires_grad))
    t = run(torch, lambda v, requires_grad=False: torch.tensor(
        v, dtype=torch.float64, requires_grad=requires_grad))
    for a, b in zip(c[:3], t[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert c[3] is None and t[3] is None
