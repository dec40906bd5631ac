"""The optimizer API around the update rules: step hooks, every optimizer's
construction, groups and skipping of parameters without gradients."""

import numpy as np
import pytest

import cygrad
from cygrad import optim
from cygrad.optim import optimizer as optimizer_module

ALL = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax",
       "Adadelta", "Rprop", "ASGD"]


def param(value=1.0):
    return cygrad.tensor([value, -value], dtype=cygrad.float64, requires_grad=True)


def with_grad(p, g=0.5):
    p.grad = cygrad.tensor([g, g], dtype=cygrad.float64)
    return p


def test_step_hooks_run_in_torchs_order_and_remove():
    p = with_grad(param())
    opt = optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", a[0] is o)))
    g1 = optimizer_module.register_optimizer_step_pre_hook(
        lambda o, a, k: calls.append(("global pre",))
    )
    g2 = optimizer_module.register_optimizer_step_post_hook(
        lambda o, a, k: calls.append(("global post",))
    )
    try:
        opt.step()
    finally:
        g1.remove()
        g2.remove()
    assert calls == [("global pre",), ("pre", True), ("post", True), ("global post",)]
    h1.remove()
    h2.remove()
    calls.clear()
    opt.step()
    assert calls == []


def test_pre_hook_may_replace_the_arguments():
    p = with_grad(param())
    opt = optim.SGD([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": lambda: 7}))
    assert opt.step() == 7


def test_pre_hook_returning_something_else_is_refused():
    p = with_grad(param())
    opt = optim.Adam([p])
    opt.register_step_pre_hook(lambda o, a, k: 3)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, -1.0])


def test_hooks_run_once_for_a_subclass_calling_super_step():
    class Counting(optim.SGD):
        def step(self, closure=None):
            self.count = getattr(self, "count", 0) + 1
            return super().step(closure)

    p = with_grad(param())
    opt = Counting([p], lr=0.1)
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    opt.step()
    assert calls == [1] and opt.count == 1


def test_lbfgs_has_step_hooks():
    p = param()
    opt = optim.LBFGS([p], max_iter=2)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append(len(a) + len(k)))

    def closure():
        with_grad(p)
        return cygrad.tensor(1.0)

    opt.step(closure)
    assert seen == [2]  # the optimizer and the closure


def test_hooks_match_torchs_calls():
    torch = pytest.importorskip("torch")
    records = []
    for lib, p in ((cygrad, with_grad(param())),
                   (torch, torch.nn.Parameter(torch.ones(2, dtype=torch.float64)))):
        if lib is torch:
            p.grad = torch.full((2,), 0.5, dtype=torch.float64)
        opt = lib.optim.Adam([p], lr=0.1)
        rec = []

        def hook(o, a, k, rec=rec):
            rec.append((len(a), a[0] is o, k))

        opt.register_step_pre_hook(hook)
        opt.register_step_post_hook(hook)
        opt.step()
        records.append(rec)
    assert records[0] == records[1]


@pytest.mark.parametrize("name", ALL)
def test_every_optimizer_skips_parameters_without_grad(name):
    p, q = with_grad(param()), param(2.0)
    opt = getattr(optim, name)([p, q], lr=0.1)
    opt.step()
    assert q not in opt.state or name == "Adagrad"
    np.testing.assert_array_equal(q.detach().numpy(), [2.0, -2.0])
    assert not np.array_equal(p.detach().numpy(), [1.0, -1.0])


@pytest.mark.parametrize("name", ALL)
def test_every_optimizer_exported_and_named_like_torch(name):
    torch = pytest.importorskip("torch")
    assert getattr(optim, name).__name__ == getattr(torch.optim, name).__name__
    p = with_grad(param())
    opt = getattr(optim, name)([p])
    opt.add_param_group({"params": [with_grad(param(3.0))], "lr": 0.5})
    assert [g["lr"] for g in opt.param_groups][1] == 0.5
    opt.step()
    assert name in repr(opt)


@pytest.mark.parametrize("name", ALL + ["Adafactor", "Muon"])
def test_a_bad_gradient_anywhere_changes_nothing(name):
    """Every parameter is checked before any is updated, across groups."""
    shape = (2, 2)
    good = cygrad.ones(*shape, dtype=cygrad.float64, requires_grad=True)
    bad = cygrad.ones(*shape, dtype=cygrad.float64, requires_grad=True)
    good.grad = cygrad.ones(*shape, dtype=cygrad.float64)
    bad.grad = cygrad.ones(*shape, dtype=cygrad.float64)
    bad.grad._arr = np.ones(shape, np.float32)  # swapped behind the setter's back
    opt = getattr(optim, name)([{"params": [good]}, {"params": [bad]}], lr=0.1)
    state_before = {k: sorted(v) for k, v in opt.state.items()}
    with pytest.raises(TypeError, match="gradient of dtype float32"):
        opt.step()
    np.testing.assert_array_equal(good.detach().numpy(), 1.0)
    assert {k: sorted(v) for k, v in opt.state.items()} == state_before
    if name == "Adagrad":
        assert opt.state[good]["step"].item() == 0


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad",
                                  "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
                                  "Rprop"])
def test_param_group_keys_in_torchs_order(name):
    """``print(optimizer.state_dict())`` lists a group's options in torch's
    order (the state_dict recipe prints it)."""
    torch = pytest.importorskip("torch")
    got = getattr(optim, name)([cygrad.nn.Parameter(cygrad.ones(1))], lr=0.1)
    want = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(1))], lr=0.1)
    assert list(got.param_groups[0]) == list(want.param_groups[0])
    assert list(got.state_dict()["param_groups"][0]) == list(
        want.state_dict()["param_groups"][0])


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_repr_matches_torch_with_several_groups(name):
    """``print(optimizer)``: sorted options per group, groups separated by a
    blank line (nanoGPT prints its two-group AdamW)."""
    torch = pytest.importorskip("torch")
    reprs = []
    for m, o in ((cygrad, optim), (torch, torch.optim)):
        ps = [m.nn.Parameter(m.ones(1)) for _ in range(3)]
        opt = getattr(o, name)([{"params": ps[:1], "weight_decay": 0.1},
                                {"params": ps[1:2]}, {"params": ps[2:], "lr": 0.5}],
                               lr=0.1)
        reprs.append(repr(opt))
    assert reprs[0] == reprs[1]
