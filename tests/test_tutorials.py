"""Every program of the two tutorials in ../shared/seeds, with cygrad as torch.

The printed values are the mathematically correct ones (see the seeds'
README: e's gradient with respect to a is 21, the detach example raises).
"""

import warnings

import numpy as np
import pytest

import cygrad as torch


# --- autograd-basics.txt ---------------------------------------------------------

def test_forward_backward_polynomial():
    x = torch.tensor([5.0], requires_grad=True)
    z = x**2 + 2*x + 1
    assert z.item() == 36.0
    z.backward()
    assert x.grad.item() == 12.0


def test_computational_graph_e():
    a = torch.tensor([2.0], requires_grad=True)
    b = torch.tensor([3.0], requires_grad=True)
    c = a + b
    d = a * b
    e = c * d
    assert (a.item(), b.item(), c.item(), d.item(), e.item()) == (2, 3, 5, 6, 30)
    e.backward()
    assert a.grad.item() == 21.0      # b*(a+b) + a*b, not the tutorial's 15
    assert b.grad.item() == 16.0


def test_gradient_accumulation_and_zeroing():
    x = torch.tensor([1.0], requires_grad=True)
    seen = []
    for _ in range(3):
        y = x * 2
        y.backward()
        seen.append(x.grad.item())
    assert seen == [2.0, 4.0, 6.0]
    x.grad.zero_()
    assert x.grad.item() == 0.0
    seen = []
    for _ in range(3):
        y = x * 2
        y.backward()
        seen.append(x.grad.item())
        x.grad.zero_()
    assert seen == [2.0, 2.0, 2.0]


def test_detach_example_raises_and_leaves_grad_none():
    x = torch.tensor([2.0], requires_grad=True)
    y = x * 2
    z = y.detach() * 3
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require "
                                           "grad and does not have a grad_fn"):
        z.backward()
    assert x.grad is None


def test_no_grad_example():
    x = torch.tensor([2.0], requires_grad=True)
    with torch.no_grad():
        y = x * 2
        z = y * 3
    assert z.requires_grad is False
    assert z.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        z.backward()


def _tutorial_regression(n_epochs, learning_rate=0.01, seed=42):
    torch.manual_seed(seed)
    X = torch.rand(100, 1) * 10
    y = 2 * X + 1 + torch.randn(100, 1)
    w = torch.tensor([0.0], requires_grad=True)
    b = torch.tensor([0.0], requires_grad=True)
    losses = []
    for epoch in range(n_epochs):
        y_pred = w * X + b
        loss = ((y_pred - y) ** 2).mean()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w -= learning_rate * w.grad
            b -= learning_rate * b.grad
            w.grad.zero_()
            b.grad.zero_()
    return X, y, w, b, losses


def test_linear_regression_200_epochs_fits_loosely():
    X, y, w, b, losses = _tutorial_regression(200)
    assert w.is_leaf and b.is_leaf and w.requires_grad
    assert abs(w.item() - 2) < 0.1
    assert 0.5 < b.item() < 1.5
    assert losses[-1] < losses[0] / 5
    assert all(np.diff(losses[5:]) <= 1e-6)     # monotone once it settles


def test_linear_regression_converges_to_least_squares():
    X, y, w, b, _ = _tutorial_regression(6000, learning_rate=0.02)
    A = np.hstack([X.numpy().astype(np.float64), np.ones((100, 1))])
    (w_ls, b_ls), *_ = np.linalg.lstsq(A, y.numpy().astype(np.float64), rcond=None)
    assert w.item() == pytest.approx(w_ls.item(), abs=2e-3)
    assert b.item() == pytest.approx(b_ls.item(), abs=1e-2)


def test_linear_regression_plotting_calls():
    X, y, w, b, _ = _tutorial_regression(20)
    x_range = torch.linspace(0, 10, 100).reshape(-1, 1)
    y_pred = w * x_range + b
    assert y_pred.detach().numpy().shape == (100, 1)
    assert X.numpy().shape == (100, 1)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that "
                                           "requires grad"):
        y_pred.numpy()


def test_inplace_pitfall_on_leaf():
    x = torch.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is "
                                           "being used in an in-place operation."):
        x += 1
    assert x.item() == 1.0 and x._version == 0
    x = x + 1
    assert x.item() == 2.0 and not x.is_leaf


def test_setting_requires_grad():
    a = torch.tensor([1.0])
    a.requires_grad = True
    assert a.requires_grad
    b = torch.tensor([2.0], requires_grad=True)
    b.requires_grad = False
    assert not b.requires_grad
    b.requires_grad_(True)
    assert b.requires_grad


def test_grad_is_none_before_backward():
    x = torch.tensor([1.0], requires_grad=True)
    assert x.grad is None


# --- autograd-internals.txt --------------------------------------------------------

def test_first_program_typeerror_on_nonleaf_grad():
    a = torch.tensor(5.0, requires_grad=True) * 0.1
    b = torch.tensor(2.0, requires_grad=True)
    c = a + b
    c.backward()
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is "
                                         "not a leaf Tensor is being accessed"):
        with pytest.raises(TypeError, match="unsupported operand type"):
            a += + 0.1 * a.grad


def test_first_program_fixed():
    a = torch.tensor(5.0) * 0.1
    b = torch.tensor(2.0, requires_grad=True)
    a.requires_grad = True
    c = a + b
    c.backward()
    with torch.no_grad():
        a += + 0.1 * a.grad
    assert a.is_leaf and a.requires_grad
    assert a.item() == pytest.approx(0.6)
    assert a.grad.item() == 1.0
    assert b.grad.item() == 1.0


def test_rebinding_training_loop_fails_on_second_iteration():
    a = torch.tensor(2.0)
    w = torch.tensor(3.0, requires_grad=True)
    b = torch.tensor(2.0, requires_grad=True)
    iterations = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(TypeError):
            for _ in range(10):
                c = a * w + b
                c.backward()
                w = w + 0.1 * w.grad
                iterations += 1
    assert iterations == 1
    assert not w.is_leaf


def test_no_grad_inplace_loop_keeps_w_a_leaf():
    a = torch.tensor(2.0)
    w = torch.tensor(3.0, requires_grad=True)
    b = torch.tensor(2.0, requires_grad=True)
    for _ in range(10):
        c = a * w + b
        c.backward()
        with torch.no_grad():
            w += 0.1 * w.grad
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    # grads accumulate 2, 4, ..., 20 (never zeroed): w = 3 + 0.1 * 110
    assert w.grad.item() == 20.0
    assert w.item() == pytest.approx(14.0)
    assert b.grad.item() == 10.0
    assert w._version == 10


def test_leaf_rules_from_the_notes():
    x = torch.tensor([1.0, 2.0])
    assert x.is_leaf and not x.requires_grad
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert y.is_leaf and not y.requires_grad
    z = w * 2
    assert not z.is_leaf and z.requires_grad
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags "
                                           "of leaf variables"):
        z.requires_grad = False
