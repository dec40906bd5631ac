"""Diagnostics: messages that name the user's line (issue 5).

Each test runs a realistic user program (the tutorials' mistakes among them)
and checks PyTorch's key phrase first, then the culprit's ``file:line`` in
this file.  Lines are found by the ``# <- name`` markers, so editing the file
does not break the tests.
"""

import gc
import warnings

import numpy as np
import pytest

import cygrad
from cygrad import nn, optim
from cygrad.autograd import (
    explain,
    get_debug_level,
    graph_stats,
    retain_grads,
    set_debug_level,
)

with open(__file__) as _f:
    _SRC = _f.read().splitlines()


def line(name):
    """Line number of the statement marked ``# <- name`` in this file."""
    hits = [i + 1 for i, s in enumerate(_SRC) if s.rstrip().endswith(f"# <- {name}")]
    assert len(hits) == 1, name
    return hits[0]


def at(name):
    return f"{__file__}:{line(name)}"


@pytest.fixture(autouse=True)
def _default_level():
    prev = set_debug_level(1)
    yield
    set_debug_level(prev)


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        fn()
    return [w for w in rec if issubclass(w.category, UserWarning)]


# --- mutation sites in the version error -----------------------------------------------


def test_version_error_names_the_inplace_op_and_its_line():
    x = cygrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.sigmoid()  # saves its output
    y.mul_(2)  # <- mutate
    with pytest.raises(RuntimeError) as ei:
        y.sum().backward()
    msg = str(ei.value)
    assert msg.startswith(
        "one of the variables needed for gradient computation has been modified "
        "by an inplace operation"
    )
    assert "is at version 1; expected version 0 instead" in msg
    assert f"modified by mul_ at {at('mutate')}, version 0 -> 1" in msg


def test_version_error_through_augmented_assignment_on_an_input():
    w = cygrad.tensor([0.5, -1.0], requires_grad=True)
    h = w * 3
    z = h * h  # saves h
    h += 1  # <- iadd
    with pytest.raises(RuntimeError) as ei:
        z.sum().backward()
    msg = str(ei.value)
    assert msg.startswith("one of the variables needed for gradient computation")
    assert f"modified by add_ at {at('iadd')}" in msg


def test_version_error_through_a_detached_alias():
    x = cygrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.detach().zero_()  # <- detached-write
    with pytest.raises(RuntimeError) as ei:
        y.sum().backward()
    msg = str(ei.value)
    assert msg.startswith("one of the variables needed for gradient computation")
    assert at("detached-write") in msg


def test_writes_to_unsaved_tensors_record_nothing():
    x = cygrad.tensor([1.0, 2.0])  # never saved by a node
    x.add_(1)
    assert x._ver.last_write is None
    w = cygrad.tensor([1.0], requires_grad=True)
    _ = w * x  # now x is saved
    x.add_(1)
    assert x._ver.last_write is not None


def test_inplace_on_leaf_says_how_to_update_parameters():
    x = cygrad.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError) as ei:
        x += 1  # <- leaf-inplace
    msg = str(ei.value)
    assert msg.startswith(
        "a leaf Variable that requires grad is being used in an in-place operation."
    )
    assert f"add_ on a leaf of shape (1,) at {at('leaf-inplace')}" in msg
    assert "with cygrad.no_grad():" in msg and "cygrad.optim" in msg


# --- why is .grad None ------------------------------------------------------------------


def test_tutorial_nonleaf_grad_warning_names_the_line_and_the_leaf():
    # autograd-internals: a = tensor(5.0, requires_grad=True) * 0.1 ...
    a = cygrad.tensor(5.0, requires_grad=True) * 0.1  # <- scaled
    b = cygrad.tensor(2.0, requires_grad=True)
    c = a + b
    c.backward()
    got = _warnings_of(lambda: a.grad)
    assert len(got) == 1
    msg = str(got[0].message)
    assert msg.startswith(
        "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"
    )
    assert f"`a` was made by `mul` at {at('scaled')}" in msg
    assert "a.retain_grad()" in msg


def test_tutorial_training_loop_rebinding_w_names_the_update_line():
    # autograd-internals: `w = w + 0.1 * w.grad` makes w a non-leaf.
    a = cygrad.tensor(2.0)
    w = cygrad.tensor(3.0, requires_grad=True)
    b = cygrad.tensor(2.0, requires_grad=True)
    seen = []
    for _ in range(2):
        c = a * w + b
        c.backward()
        got = _warnings_of(lambda: w.grad)  # noqa: B023 (called at once)
        if got:
            seen.append(str(got[0].message))
            break
        w = w + 0.1 * w.grad  # <- rebind
    assert len(seen) == 1
    assert seen[0].startswith("The .grad attribute of a Tensor that is not a leaf")
    assert f"`w` was made by `add` at {at('rebind')}" in seen[0]


def test_explain_leaf():
    w = cygrad.tensor([1.0, 2.0], requires_grad=True)
    text = explain(w)
    assert text.startswith("`w` is a leaf tensor of shape (2,) that requires grad")
    assert "w.grad is None now" in text
    (w * 2).sum().backward()
    assert "w.grad holds a gradient of shape (2,)" in explain(w)


def test_explain_non_leaf_names_op_line_and_leaf():
    w = cygrad.tensor([1.0, 2.0], requires_grad=True)
    h = w * 2  # <- h-made
    text = explain(h)
    assert text.startswith(
        f"`h` is a non-leaf tensor of shape (2,): it was made by "
        f"`mul` (MulBackward0) at {at('h-made')} from leaf `w`"
    )
    assert "use w.grad, or call h.retain_grad() before backward()" in text
    h.retain_grad()
    assert "It retains its gradient" in explain(h)


def test_explain_tensor_made_under_no_grad():
    w = cygrad.tensor([1.0, 2.0], requires_grad=True)
    with cygrad.no_grad():
        z = (w * 2).sum()  # <- nograd
    assert not z.requires_grad
    text = explain(z)
    assert text.startswith("`z` does not require grad: it was made under no_grad")
    assert at("nograd") in text


def test_explain_detached_copy():
    w = cygrad.tensor([1.0, 2.0], requires_grad=True)
    y = w * 3
    d = y.detach()  # <- detached
    text = explain(d)
    assert text.startswith(
        f"`d` is a detached copy made by .detach() at {at('detached')}"
    )
    d.requires_grad_()
    assert "It began as a detached copy" in explain(d)


def test_tutorial_detach_example_explains_the_failed_backward():
    # autograd-basics: z = y.detach() * 3; z.backward() raises in PyTorch.
    x = cygrad.tensor(2.0, requires_grad=True)
    y = x * x
    d = y.detach()  # <- detach-call
    z = d * 3  # <- detach-use
    with pytest.raises(RuntimeError) as ei:
        z.backward()
    assert str(ei.value).startswith("element 0 of tensors does not require grad and "
                                    "does not have a grad_fn")
    assert x.grad is None
    text = explain(z)
    assert text.startswith(f"`z` does not require grad: it was computed at "
                           f"{at('detach-use')} from a detached copy made by "
                           f".detach() at {at('detach-call')}")
    w = z.exp().sum()                    # the origin follows further ops
    assert at("detach-call") in explain(w)


def test_explain_tensor_not_requiring_grad():
    x = cygrad.ones(3)
    text = explain(x)
    assert text.startswith(
        "`x` does not require grad: it was created with requires_grad=False"
    )
    assert "x.requires_grad_()" in text
    idx = cygrad.tensor([1, 2])
    assert "only floating point tensors can require gradients" in explain(idx)


def test_explain_names_module_parameters():
    model = nn.Linear(3, 2)
    out = model(cygrad.randn(4, 3))
    assert "leaf `model.weight`" in explain(out)


def test_no_grad_code_without_grad_inputs_records_nothing():
    x = cygrad.ones(3)
    with cygrad.no_grad():
        y = x * 2 + 1
    assert y._origin is None


# --- retain_grads scope ------------------------------------------------------------------


def test_retain_grads_scope_keeps_every_intermediate():
    x = cygrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    with retain_grads():
        h = x * 2
        r = h.relu()
        loss = r.sum()
        loss.backward()
    np.testing.assert_allclose(loss.grad.numpy(), 1.0)
    np.testing.assert_allclose(r.grad.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(h.grad.numpy(), [1.0, 0.0, 1.0])
    assert h.retains_grad and r.retains_grad
    assert not x.retains_grad  # leaves are unaffected
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.0, 2.0])
    # Outside the scope, intermediates behave as usual again.
    h2 = x * 2
    h2.sum().backward()
    seen = []
    got = _warnings_of(lambda: seen.append(h2.grad))
    assert seen == [None] and len(got) == 1


def test_retain_grads_as_decorator_and_nested():
    x = cygrad.tensor([1.0, 2.0], requires_grad=True)

    @retain_grads()
    def step():
        h = x.exp()
        h.sum().backward()
        return h

    h = step()
    np.testing.assert_allclose(h.grad.numpy(), 1.0)
    with retain_grads():
        with retain_grads():
            pass
        k = x * 1  # still inside the outer scope
    assert k.retains_grad


# --- backward twice: the stale graph diagnosis ---------------------------------------------


def test_graph_carried_across_iterations_says_detach():
    cell = nn.Linear(3, 3)
    opt = optim.SGD(cell.parameters(), lr=0.01)
    h = cygrad.zeros(1, 3)
    with pytest.raises(RuntimeError) as ei:
        for _ in range(3):
            opt.zero_grad()
            h = cygrad.tanh(cell(h) + 1)  # <- carried
            loss = h.sum()
            loss.backward()
            opt.step()
    msg = str(ei.value)
    assert msg.startswith("Trying to backward through the graph a second time")
    assert "retain_graph=True" in msg
    assert "built before the last optimizer.step() or zero_grad()" in msg
    assert f"a tensor of shape (1, 3) made by `tanh` at {at('carried')}" in msg
    assert ".detach()" in msg and "rather than retain_graph=True" in msg


def test_plain_second_backward_has_no_stale_hint():
    x = cygrad.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([x], lr=0.1)
    y = (x * x).sum()  # <- twice
    opt.zero_grad()  # after the forward: still one graph
    y.backward()
    with pytest.raises(RuntimeError) as ei:
        y.backward()
    msg = str(ei.value)
    assert msg.startswith("Trying to backward through the graph a second time")
    assert at("twice") in msg
    assert "optimizer.step()" not in msg


def test_carried_state_with_detach_trains():
    cell = nn.Linear(3, 3)
    opt = optim.SGD(cell.parameters(), lr=0.01)
    h = cygrad.zeros(1, 3)
    for _ in range(3):
        opt.zero_grad()
        h = cygrad.tanh(cell(h) + 1)
        h.sum().backward()
        opt.step()
        h = h.detach()


# --- leak warning ----------------------------------------------------------------------------


def _regression():
    model = nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.01)
    x, y = cygrad.randn(16, 3), cygrad.randn(16, 1)
    return model, opt, x, y


def test_loop_accumulating_the_loss_tensor_warns_once():
    model, opt, x, y = _regression()

    def train():
        total_loss = 0.0
        for _ in range(6):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()  # <- step
            total_loss += loss  # <- leak
        return total_loss

    got = [w for w in _warnings_of(train) if "optimizer.step()" in str(w.message)]
    assert len(got) == 1
    assert (got[0].filename, got[0].lineno) == (__file__, line("step"))
    msg = str(got[0].message)
    assert "graphs of earlier iterations are still alive" in msg
    assert f"made by `add` at {at('leak')}" in msg
    assert "loss.item()" in msg


def test_loop_keeping_losses_in_a_list_warns_once():
    model, opt, x, y = _regression()

    def train():
        history = []
        for _ in range(5):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()  # <- kept
            loss.backward()
            opt.step()
            history.append(loss)

    got = [w for w in _warnings_of(train) if "optimizer.step()" in str(w.message)]
    assert len(got) == 1
    assert at("kept") in str(got[0].message)


def test_correct_loop_never_warns():
    model, opt, x, y = _regression()

    def train():
        total_loss = 0.0
        last = None
        for _ in range(8):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            total_loss += loss.item()
            last = model(x).sum()  # one graph kept for later is fine
        return total_loss, last

    got = [w for w in _warnings_of(train) if "optimizer.step()" in str(w.message)]
    assert got == []


# --- graph_stats ---------------------------------------------------------------------------------


def test_graph_stats_counts_live_nodes_and_saved_bytes():
    gc.collect()
    base = graph_stats()
    w = cygrad.randn(100, 100, requires_grad=True)
    h = (w * w).exp()  # MulBackward0 saves w (once), ExpBackward0 y
    loss = h.sum()
    s = graph_stats()
    assert s.nodes - base.nodes == 3
    assert s.saved_bytes - base.saved_bytes == 2 * 100 * 100 * 4
    one = graph_stats(loss)
    assert one.nodes == 3 and one.saved_bytes == 2 * 100 * 100 * 4
    assert one.by_op["MulBackward0"] == (1, 40000)
    assert "3 live graph nodes" in str(one)
    loss.backward()
    assert graph_stats(loss).saved_bytes == 0  # freed by backward
    del h, loss
    gc.collect()
    assert graph_stats().nodes == base.nodes


# --- debug level --------------------------------------------------------------------------------


def test_debug_level_zero_records_nothing_and_keeps_wording():
    assert get_debug_level() == 1
    set_debug_level(0)
    x = cygrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    assert y.grad_fn._site is None
    y.add_(1)
    with pytest.raises(RuntimeError) as ei:
        y.sum().backward()
    msg = str(ei.value)
    assert msg.startswith("one of the variables needed for gradient computation")
    assert __file__ not in msg
    with pytest.raises(ValueError):
        set_debug_level(-1)
