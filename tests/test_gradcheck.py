"""gradcheck / gradgradcheck: pass on correct gradients, fail loudly and
precisely on wrong ones, in full and random-projection (fast) modes."""

import warnings

import numpy as np
import pytest

import cygrad
from cygrad.autograd import (
    Function,
    GradcheckError,
    gradcheck,
    gradgradcheck,
    once_differentiable,
)


def leaf(values, dtype=cygrad.float64):
    return cygrad.tensor(values, dtype=dtype, requires_grad=True)


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cygrad.from_numpy(x._arr ** 2)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x


class WrongSquare(Function):
    """Deliberately wrong: d/dx x**2 taken as 3x, and only at element 2 of a
    flat input (so the error has one precise location)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cygrad.from_numpy(x._arr ** 2)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        scale = np.full(x.shape, 2.0)
        scale.reshape(-1)[2] = 3.0
        return grad * x * cygrad.from_numpy(scale)


class SquareWrongSecondOrder(Function):
    """First derivative right (2x), but written with a detached x, so its own
    derivative with respect to x is lost (0 instead of 2 grad)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cygrad.from_numpy(x._arr ** 2)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x.detach()


class SquareOnce(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cygrad.from_numpy(x._arr ** 2)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x


def test_passes_on_correct_functions_and_builtins():
    x = leaf([[0.3, -1.2], [2.0, 0.7]])
    assert gradcheck(Square.apply, (x,))
    assert gradcheck(lambda a: (a @ a.t()).tanh().sum(0), (x,))
    assert gradcheck(Square.apply, x)                 # a bare Tensor is accepted


def test_raises_on_a_wrong_backward_naming_input_output_element_and_values():
    x = leaf([[0.5, -1.0], [1.5, 2.0]])
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongSquare.apply, (x,))
    err = info.value
    assert isinstance(err, RuntimeError)
    assert (err.input_index, err.output_index) == (0, 0)
    assert err.input_element == (1, 0) and err.output_element == (1, 0)
    np.testing.assert_allclose(err.numerical, 2 * 1.5, rtol=1e-6)
    np.testing.assert_allclose(err.analytical, 3 * 1.5, rtol=1e-12)
    msg = str(err)
    for part in ("output 0", "input 0", "(1, 0)", "numerical=3 ", "analytical=4.5"):
        assert part in msg, (part, msg)


def test_raise_exception_false_returns_false():
    x = leaf([0.5, -1.0, 1.5])
    assert gradcheck(WrongSquare.apply, (x,), raise_exception=False) is False
    assert gradcheck(Square.apply, (x,), raise_exception=False) is True


def test_names_the_right_input_and_output_among_several():
    a, b = leaf([0.5, 1.0, 1.5]), leaf([2.0, -1.0])

    def f(u, c, v):
        return (u * c).sum() * v, WrongSquare.apply(u)

    with pytest.raises(GradcheckError) as info:
        gradcheck(f, (a, 3.0, b))                     # 3.0: non-tensor argument
    assert info.value.output_index == 1
    assert info.value.input_index == 0
    assert info.value.input_element == (2,)


def test_unused_input_and_output_without_grad_are_fine():
    a, b = leaf([0.5, 1.0]), leaf([2.0])

    def f(u, v):
        return u * 2, cygrad.ones(3, dtype=cygrad.float64)

    assert gradcheck(f, (a, b))


def test_warns_for_non_float64_inputs_and_checks_in_float64():
    x = leaf([0.5, -1.0, 1.5], dtype=cygrad.float32)
    with pytest.warns(UserWarning, match="not a double precision"):
        assert gradcheck(lambda a: a.exp() * a, (x,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradcheck(lambda a: a.exp(), (leaf([0.5]),))  # float64: no warning


def test_inputs_and_their_grads_are_left_alone():
    x = leaf([0.5, -1.0])
    before = x.detach().numpy().copy()
    gradcheck(lambda a: (a * a).sum(), (x,))
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x.grad is None


def test_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="requires_grad=True"):
        gradcheck(lambda a: a * 2, (cygrad.tensor([1.0], dtype=cygrad.float64),))


def test_flags_a_kink():
    # relu'(0) = 0 by convention; the central difference sees 1/2.
    x = leaf([0.0, 1.0])
    with pytest.raises(GradcheckError, match="input element \\(0,\\)"):
        gradcheck(lambda a: a.relu(), (x,))


def test_tolerances_are_respected():
    x = leaf([1.0])

    class SlightlyOff(Function):
        @staticmethod
        def forward(ctx, a):
            return cygrad.from_numpy(a._arr * 2)

        @staticmethod
        def backward(ctx, grad):
            return grad * 2.01

    with pytest.raises(GradcheckError):             # 0.01 > 1e-5 + 1e-3 * 2
        gradcheck(SlightlyOff.apply, (x,))
    assert gradcheck(SlightlyOff.apply, (x,), rtol=1e-2)
    assert gradcheck(SlightlyOff.apply, (x,), atol=2e-2, rtol=0)


# --- fast mode (random projections) ---------------------------------------------------------

def test_fast_mode_is_automatic_for_big_inputs_and_passes():
    rng = np.random.default_rng(0)
    x = leaf(rng.standard_normal((40, 50)))           # full mode: 4000+ passes
    w = leaf(rng.standard_normal((50, 3)))
    assert gradcheck(lambda a, b: (a @ b).tanh(), (x, w))


def test_fast_mode_catches_a_wrong_backward_on_a_big_input():
    rng = np.random.default_rng(1)
    x = leaf(rng.standard_normal(3000))
    with pytest.raises(GradcheckError, match="random projection"):
        gradcheck(WrongSquare.apply, (x,))


def test_fast_mode_on_small_inputs_locates_the_element():
    x = leaf([0.5, -1.0, 1.5, 2.5])
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongSquare.apply, (x,), fast_mode=True)
    assert info.value.input_element == (2,)
    assert gradcheck(Square.apply, (x,), fast_mode=True)


# --- gradgradcheck ----------------------------------------------------------------------------

def test_gradgradcheck_passes_on_twice_differentiable_functions():
    x = leaf([0.3, -0.8, 1.4])
    assert gradgradcheck(Square.apply, (x,))
    assert gradgradcheck(lambda a: (a.sin() * a.exp()).sum(), (x,))
    v = cygrad.tensor([1.0, -2.0, 0.5], dtype=cygrad.float64)
    assert gradgradcheck(lambda a: a.tanh() * a, (x,), grad_outputs=(v,))


def test_gradgradcheck_catches_a_wrong_second_order_term():
    x = leaf([0.3, -0.8, 1.4])
    assert gradcheck(SquareWrongSecondOrder.apply, (x,))       # first order fine
    with pytest.raises(GradcheckError, match="gradgrad") as info:
        gradgradcheck(SquareWrongSecondOrder.apply, (x,))
    assert info.value.output_index == 0


def test_gradgradcheck_fails_on_once_differentiable():
    x = leaf([0.3, -0.8])
    with pytest.raises(GradcheckError):
        gradgradcheck(SquareOnce.apply, (x,))


def test_agrees_with_torch_gradcheck_verdicts():
    torch = pytest.importorskip("torch")

    class TWrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x

    vals = np.array([0.5, -1.0, 1.5])
    xt = torch.tensor(vals, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: a ** 3, (xt,))
    assert gradcheck(lambda a: a ** 3, (leaf(vals),))
    assert not torch.autograd.gradcheck(TWrong.apply, (xt,), raise_exception=False)
    assert not gradcheck(WrongSquare.apply, (leaf(vals),), raise_exception=False)
