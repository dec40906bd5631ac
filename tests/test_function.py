"""Custom autograd Functions: ctx API, errors naming the Function, in-place rules."""

import numpy as np
import pytest

import cygrad
from cygrad.autograd import Function, gradcheck, gradgradcheck, once_differentiable


def t64(values, requires_grad=True):
    return cygrad.tensor(values, dtype=cygrad.float64, requires_grad=requires_grad)


# --- Functions used below -----------------------------------------------------------

class Exp(Function):
    """exp that saves its output: grad = g * out."""

    @staticmethod
    def forward(ctx, x):
        out = cygrad.from_numpy(np.exp(x._arr))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


class StraightThroughSign(Function):
    """sign(x) forward; the gradient passes through where |x| <= 1 (clipped STE)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cygrad.from_numpy(np.sign(x._arr))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x.abs() <= 1).to(grad.dtype)


class ScaleBy(Function):
    """x * c with a Python number c (a non-tensor argument)."""

    @staticmethod
    def forward(ctx, x, c):
        ctx.c = c                      # arbitrary attribute on ctx
        return cygrad.from_numpy(x._arr * c)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.c, None


class MulAdd(Function):
    """x * y + z; records needs_input_grad."""

    seen = None

    @staticmethod
    def forward(ctx, x, y, z):
        ctx.save_for_backward(x, y)
        return cygrad.from_numpy(x._arr * y._arr + z._arr)

    @staticmethod
    def backward(ctx, grad):
        MulAdd.seen = ctx.needs_input_grad
        x, y = ctx.saved_tensors
        gx = grad * y if ctx.needs_input_grad[0] else None
        gy = grad * x if ctx.needs_input_grad[1] else None
        gz = grad if ctx.needs_input_grad[2] else None
        return gx, gy, gz


class AddOneInPlace(Function):
    """x += 1 in place, declared with mark_dirty."""

    @staticmethod
    def forward(ctx, x):
        x._arr += 1
        x._bump_version()
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class AddOneInPlaceUndeclared(Function):
    """x += 1 in place without mark_dirty: must be refused."""

    @staticmethod
    def forward(ctx, x):
        x._arr += 1
        x._bump_version()
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class SortValues(Function):
    """(sorted values, indices); the indices are non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        idx = np.argsort(x._arr, kind="stable")
        ctx.idx = idx
        i = cygrad.from_numpy(idx.astype(np.int64))
        ctx.mark_non_differentiable(i)
        return cygrad.from_numpy(x._arr[idx]), i

    @staticmethod
    def backward(ctx, grad, grad_idx):
        out = np.zeros_like(grad._arr)
        out[ctx.idx] = grad._arr
        return cygrad.from_numpy(out)


class TwoOutputs(Function):
    """(2x, 3x); records the gradients it receives."""

    received = None

    @staticmethod
    def forward(ctx, x):
        return cygrad.from_numpy(x._arr * 2), cygrad.from_numpy(x._arr * 3)

    @staticmethod
    def backward(ctx, g1, g2):
        TwoOutputs.received = (g1, g2)
        parts = [g * k for g, k in ((g1, 2), (g2, 3)) if g is not None]
        return parts[0] + parts[1] if len(parts) == 2 else parts[0]


class Cube(Function):
    """x**3 with a backward written in cygrad ops (so twice differentiable)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cygrad.from_numpy(x._arr ** 3)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


class CubeOnce(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cygrad.from_numpy(x._arr ** 3)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


# --- basics -----------------------------------------------------------------------------

def test_exp_saving_output_forward_backward_and_node_name():
    x = t64([0.5, -1.0, 2.0])
    y = Exp.apply(x)
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "ExpBackward"
    np.testing.assert_allclose(y.detach().numpy(), np.exp([0.5, -1.0, 2.0]))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, -1.0, 2.0]))


def test_exp_saving_output_twice_differentiable():
    x = t64([0.3, -0.7])
    assert gradcheck(Exp.apply, (x,))
    assert gradgradcheck(Exp.apply, (x,))
    (g,) = cygrad.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    (gg,) = cygrad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.exp([0.3, -0.7]))


def test_saved_output_modified_in_place_is_caught():
    x = t64([1.0, 2.0])
    y = Exp.apply(x)
    with cygrad.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_input_modified_in_place_is_caught_with_versions():
    x = t64([1.0, 2.0])
    a = x * 1            # non-leaf that MulAdd saves
    out = MulAdd.apply(a, x, x)
    a.add_(1.0)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        out.sum().backward()


def test_straight_through_estimator():
    x = t64([-2.0, -0.5, 0.0, 0.3, 1.5])
    y = StraightThroughSign.apply(x)
    np.testing.assert_array_equal(y.detach().numpy(), np.sign(x.detach().numpy()))
    (y * t64([1.0, 2.0, 3.0, 4.0, 5.0], False)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 3.0, 4.0, 0.0])


def test_non_tensor_argument_passes_through_and_ctx_attributes():
    x = t64([1.0, 2.0])
    y = ScaleBy.apply(x, 2.5)
    assert y.grad_fn.c == 2.5
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.5, 2.5])
    assert gradcheck(lambda v: ScaleBy.apply(v, -1.5), (t64([0.1, 0.2]),))


def test_needs_input_grad_and_none_gradients():
    x, y = t64([1.0, 2.0]), t64([3.0, 4.0], requires_grad=False)
    z = t64([0.5, 0.5])
    MulAdd.apply(x, y, z).sum().backward()
    assert MulAdd.seen == (True, False, True)
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])
    assert y.grad is None
    np.testing.assert_allclose(z.grad.numpy(), [1.0, 1.0])


def test_backward_returning_none_leaves_grad_unset():
    class FirstOnly(Function):
        @staticmethod
        def forward(ctx, a, b):
            return cygrad.from_numpy(a._arr * b._arr)

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    a, b = t64([1.0, 2.0]), t64([3.0, 4.0])
    FirstOnly.apply(a, b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 1.0])
    assert b.grad is None


def test_apply_without_grad_builds_no_graph():
    x = t64([1.0, 2.0])
    with cygrad.no_grad():
        y = Exp.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    y2 = Exp.apply(t64([1.0], requires_grad=False))
    assert not y2.requires_grad


def test_apply_rejects_keyword_arguments():
    with pytest.raises(TypeError, match="keyword"):
        ScaleBy.apply(t64([1.0]), c=2.0)


def test_forward_runs_with_grad_mode_off():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(cygrad.is_grad_enabled())
            return x * 2          # cygrad op inside forward: records nothing

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = t64([1.0])
    y = Probe.apply(x)
    assert seen == [False]
    assert y.grad_fn.name() == "ProbeBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])


# --- errors that name the Function -------------------------------------------------------

def test_wrong_number_of_gradients_names_the_function():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return cygrad.from_numpy(x._arr * y._arr)

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"(?i)function BadBackward returned an "
                       r"incorrect number of gradients \(expected 2, got 1\)"):
        Bad.apply(x, x).sum().backward()


def test_extra_none_gradients_are_allowed():
    class Extra(Function):
        @staticmethod
        def forward(ctx, x):
            return cygrad.from_numpy(x._arr * 2)

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None, None

    x = t64([1.0])
    Extra.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])


def test_wrong_gradient_shape_names_the_function():
    class Bad2(Function):
        @staticmethod
        def forward(ctx, x):
            return cygrad.from_numpy(x._arr * 2)

        @staticmethod
        def backward(ctx, grad):
            return cygrad.ones(5, dtype=cygrad.float64)

    x = t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"Function Bad2Backward returned an invalid "
                       r"gradient at index 0 - got \[5\] but expected shape "
                       r"compatible with \[2\]"):
        Bad2.apply(x).sum().backward()


def test_broadcastable_gradient_is_reduced_to_input_shape():
    class Wide(Function):
        @staticmethod
        def forward(ctx, x):
            return cygrad.from_numpy(x._arr * 2)

        @staticmethod
        def backward(ctx, grad):
            return cygrad.ones(3, 2, dtype=cygrad.float64)

    x = t64([1.0, 2.0])
    Wide.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_gradient_for_non_tensor_argument_is_an_error():
    class Bad3(Function):
        @staticmethod
        def forward(ctx, x, c):
            return cygrad.from_numpy(x._arr * c)

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(RuntimeError, match="Bad3Backward returned a gradient different "
                       "than None at position 2"):
        Bad3.apply(t64([1.0]), 2.0).sum().backward()


def test_second_backward_through_freed_saved_tensors_raises():
    x = t64([1.0, 2.0])
    y = Exp.apply(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a "
                       "second time"):
        y.backward()


def test_retain_graph_keeps_saved_tensors():
    x = t64([1.0, 2.0])
    y = Exp.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]))


# --- mark_dirty / mark_non_differentiable / materialize -----------------------------------

def test_mark_dirty_rebases_history_onto_the_function():
    x = t64([1.0, 2.0])
    a = x * 3
    b = AddOneInPlace.apply(a)
    assert b is a
    assert a.grad_fn.name() == "AddOneInPlaceBackward"
    np.testing.assert_allclose(a.detach().numpy(), [4.0, 7.0])
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_mark_dirty_output_is_freed_without_the_garbage_collector():
    # The node must not hold the tensor it rebased (a cycle kept every
    # iteration's graph alive until gc ran: ``out += r; relu_(out)``).
    import gc
    import weakref

    x = t64([1.0, 2.0])
    gc.disable()
    try:
        a = AddOneInPlace.apply(x * 3)
        node = weakref.ref(a)
        del a
        assert node() is None
        b = x * 3
        b += x
        b = cygrad.nn.functional.relu(b, inplace=True)
        b = weakref.ref(b)
        assert b() is None
    finally:
        gc.enable()


def test_in_place_input_change_without_mark_dirty_is_refused():
    x = t64([1.0, 2.0])
    a = x * 3
    with pytest.raises(RuntimeError, match="without ctx.mark_dirty"):
        AddOneInPlaceUndeclared.apply(a)
    # also outside autograd: the refusal does not depend on requires_grad
    with pytest.raises(RuntimeError, match="mark_dirty"):
        AddOneInPlaceUndeclared.apply(t64([1.0], requires_grad=False))


def test_mark_dirty_on_a_leaf_that_requires_grad_is_refused():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        AddOneInPlace.apply(t64([1.0, 2.0]))


def test_mark_non_differentiable_output():
    x = t64([3.0, 1.0, 2.0])
    v, i = SortValues.apply(x)
    assert v.requires_grad
    assert not i.requires_grad and i.grad_fn is None
    np.testing.assert_array_equal(i.numpy(), [1, 2, 0])
    (v * t64([1.0, 10.0, 100.0], False)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [100.0, 1.0, 10.0])


def test_unused_output_gets_zero_gradient_by_default():
    x = t64([1.0, 2.0])
    o1, _ = TwoOutputs.apply(x)
    o1.sum().backward()
    _, g2 = TwoOutputs.received
    np.testing.assert_array_equal(g2.numpy(), [0.0, 0.0])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_set_materialize_grads_false_passes_none():
    class Lazy(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return cygrad.from_numpy(x._arr * 2), cygrad.from_numpy(x._arr * 3)

        @staticmethod
        def backward(ctx, g1, g2):
            TwoOutputs.received = (g1, g2)
            return g1 * 2

    x = t64([1.0])
    o1, _ = Lazy.apply(x)
    o1.sum().backward()
    assert TwoOutputs.received[1] is None


def test_returning_an_input_unchanged_gives_a_new_tensor():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = t64([1.0, 2.0])
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and not y.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


# --- higher order through Functions --------------------------------------------------------

def test_function_backward_in_cygrad_ops_is_twice_differentiable():
    x = t64([0.5, -1.5, 2.0])
    (g,) = cygrad.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
    (gg,) = cygrad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy())
    assert gradgradcheck(Cube.apply, (x,))


def test_once_differentiable_backward_has_no_history():
    x = t64([0.5, -1.5])
    (g,) = cygrad.autograd.grad(CubeOnce.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), 3 * x.detach().numpy() ** 2)
    assert not g.requires_grad


def test_backward_sees_grad_mode_only_under_create_graph():
    modes = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            return cygrad.from_numpy(x._arr * 1)

        @staticmethod
        def backward(ctx, grad):
            modes.append(cygrad.is_grad_enabled())
            return grad

    x = t64([1.0])
    Probe.apply(x).sum().backward()
    cygrad.autograd.grad(Probe.apply(x).sum(), x, create_graph=True)
    assert modes == [False, True]


# --- against torch -------------------------------------------------------------------------

def test_custom_functions_match_torch():
    torch = pytest.importorskip("torch")

    class TExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, grad):
            (out,) = ctx.saved_tensors
            return grad * out

    class TSTE(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sign()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * (x.abs() <= 1).to(grad.dtype)

    vals = np.array([-1.7, -0.4, 0.2, 0.9, 1.3])
    w = np.array([0.5, -1.0, 2.0, 3.0, -0.25])
    xc = t64(vals)
    xt = torch.tensor(vals, requires_grad=True)
    lc = (StraightThroughSign.apply(Exp.apply(xc) - 1.5) * t64(w, False)).sum()
    lt = (TSTE.apply(TExp.apply(xt) - 1.5) * torch.tensor(w)).sum()
    lc.backward()
    lt.backward()
    np.testing.assert_allclose(lc.item(), lt.item())
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-12)

    # second order through the saved output, against torch
    xc = t64(vals)
    xt = torch.tensor(vals, requires_grad=True)
    (gc,) = cygrad.autograd.grad((Exp.apply(xc) ** 2).sum(), xc, create_graph=True)
    (gt,) = torch.autograd.grad((TExp.apply(xt) ** 2).sum(), xt, create_graph=True)
    (ggc,) = cygrad.autograd.grad((gc * gc).sum(), xc)
    (ggt,) = torch.autograd.grad((gt * gt).sum(), xt)
    np.testing.assert_allclose(ggc.numpy(), ggt.numpy(), rtol=1e-12)


def test_in_place_tensor_ops_inside_forward_follow_the_mark_dirty_rule():
    class AddOne(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)                  # a cygrad in-place op: bumps the version
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    class AddOneUndeclared(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = t64([1.0, 2.0])
    a = x * 2
    assert AddOne.apply(a) is a
    (a * a).sum().backward()             # a = 2x + 1: d/dx sum(a^2) = 4a
    np.testing.assert_allclose(x.grad.numpy(), [12.0, 20.0])
    with pytest.raises(RuntimeError, match="AddOneUndeclared.forward modified its "
                       "input 0 in place without ctx.mark_dirty"):
        AddOneUndeclared.apply(x * 2)


def test_a_users_function_node_prints_with_its_module_as_torch():
    """``print(y.grad_fn)`` of a custom Function: torch's
    ``<torch.autograd.function.ExpBackward object at ...>`` (here the module
    is cygrad's); the tensor's repr says ``grad_fn=<ExpBackward>``."""
    torch = pytest.importorskip("torch")
    seen = []
    for m in (cygrad, torch):
        class Exp(m.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @staticmethod
            def backward(ctx, g):
                return g

        y = Exp.apply(m.ones(1, requires_grad=True))
        seen.append((repr(y.grad_fn).split(" object")[0].replace("cygrad.", "torch."),
                     str(y), y.grad_fn.name()))
    assert seen[0] == seen[1]
    # cygrad's own Functions print as torch's built-in nodes
    out = cygrad.nn.functional.linear(cygrad.ones(2, 2, requires_grad=True),
                                      cygrad.ones(2, 2))
    assert repr(out.grad_fn).startswith("<MmBackward0 object at")


def _nested_pass_grads(T, how):
    """A Function whose backward starts a pass of its own through a leaf
    (W) that the running pass still owes a gradient to."""
    W = T.tensor([2.0, -1.0], dtype=T.float64, requires_grad=True)
    x = T.tensor([1.5, 0.5], dtype=T.float64, requires_grad=True)

    class Inner(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1.0

        @staticmethod
        def backward(ctx, g):
            with T.enable_grad():
                y = (W * W * 3.0).sum()
            if how == "backward":
                y.backward()
            else:
                (gw,) = T.autograd.grad(y, (W,))
                g = g + gw
            return g

    out = (Inner.apply(x * W) * W).sum() + (x * W).sum()
    out.backward()
    return W.grad.numpy(), x.grad.numpy()


@pytest.mark.parametrize("how", ["backward", "grad"])
def test_a_pass_started_inside_backward_keeps_the_running_pass_gradients(how):
    torch = pytest.importorskip("torch")
    got = _nested_pass_grads(cygrad, how)
    want = _nested_pass_grads(torch, how)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-14)
