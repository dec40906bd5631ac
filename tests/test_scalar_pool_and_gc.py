"""The per-op savings of the compiled core must be invisible to users.

- Dead tensors' 0-d float arrays, and the 0-d gradients the backward
  engine made and dropped, are reused by later ops (a pool in ``engine``):
  an array anyone else can still see is never reused.
- Tensors made by compiled ops start untracked by the cyclic collector; any
  attribute or hook that could close a cycle tracks them again, so cycles
  through tensors are still collected.
- Dead tensors and elementwise nodes go to free lists and come back as new
  objects: no attribute, weak reference, hook or graph link survives reuse.
"""

import gc
import weakref

import numpy as np
import pytest

import cygrad
from cygrad._kernels import engine


def _chain(x, w, b, n):
    y = x
    for _ in range(n):
        y = cygrad.tanh(y * w + b)
    return y


def _chain_numpy(x, w, b, n):
    """Value and (d/dw, d/db) of the chain, by hand."""
    xs = [x]
    for _ in range(n):
        xs.append(np.tanh(xs[-1] * w + b))
    g, gw, gb = 1.0, 0.0, 0.0
    for k in range(n, 0, -1):
        g = g * (1 - xs[k] * xs[k])
        gw += g * xs[k - 1]
        gb += g
        g = g * w
    return xs[-1], gw, gb


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reused_scalars_give_the_same_values_and_grads(dtype):
    x = cygrad.tensor(dtype(0.5))
    w = cygrad.tensor(dtype(0.8), requires_grad=True)
    b = cygrad.tensor(dtype(0.1), requires_grad=True)
    assert x.dtype == w.dtype == dtype
    first = _chain(x, w, b, 300)
    del first
    idx = 0 if dtype == np.float32 else 1
    held, cap = engine._scalar_pool_size()[idx]
    assert held > 0 and cap >= held  # the dead graph's arrays wait for reuse
    second = _chain(x, w, b, 300)
    assert engine._scalar_pool_size()[idx][0] < held  # ... and were reused
    second.backward()
    want, gw, gb = _chain_numpy(0.5, 0.8, 0.1, 300)  # float64 reference
    rel = 1e-5 if dtype == np.float32 else 1e-12
    assert second.dtype == dtype
    assert second.item() == pytest.approx(want, rel=rel)
    assert w.grad.item() == pytest.approx(gw, rel=10 * rel)
    assert b.grad.item() == pytest.approx(gb, rel=10 * rel)


def test_an_array_still_visible_elsewhere_is_never_reused():
    a = cygrad.tensor(np.float32(2.0))
    t = a * 3.0
    kept = t.numpy()  # the tensor's own array (no grad: no copy)
    view = t.numpy()[...]
    arr_for_weakref = (a * 5.0)
    wr_target = arr_for_weakref.numpy()
    wr = weakref.ref(wr_target)
    del t, arr_for_weakref, wr_target
    # Churn through many scalar ops: none may write into the arrays above.
    for k in range(2000):
        _ = a * float(k)
    assert kept == np.float32(6.0)
    assert view == np.float32(6.0)
    assert wr() is None or wr() == np.float32(10.0)


def test_backward_hands_its_dropped_scalar_gradients_to_the_pool():
    x = cygrad.tensor(np.float32(0.5))
    w = cygrad.tensor(np.float32(0.8), requires_grad=True)
    b = cygrad.tensor(np.float32(0.1), requires_grad=True)
    y = _chain(x, w, b, 200)
    before = engine._scalar_pool_size()[0][0]
    y.backward()
    assert engine._scalar_pool_size()[0][0] > before
    want, gw, gb = _chain_numpy(0.5, 0.8, 0.1, 200)
    assert w.grad.item() == pytest.approx(gw, rel=1e-4)
    assert b.grad.item() == pytest.approx(gb, rel=1e-4)


def _churn(a, n=2000):
    """Many scalar ops and backward passes: they draw on the pool."""
    for k in range(n):
        (a * float(k)).tanh().backward()


def test_gradients_users_hold_are_never_reused():
    a = cygrad.tensor(np.float32(0.3), requires_grad=True)
    w = cygrad.tensor(np.float32(0.8), requires_grad=True)
    h = a * w
    h.retain_grad()
    m = h.tanh()
    m.retain_grad()
    seen = []
    m.register_hook(lambda g: seen.append(g))          # a hook keeps g
    z = (m * 2.0 + 1.0).sin()
    z.backward()
    got = [h.grad.item(), m.grad.item(), seen[0].item(), a.grad.item()]
    grads = cygrad.autograd.grad((w * w * 3.0).tanh(), w)
    held = grads[0].item()
    _churn(cygrad.tensor(np.float32(1.5), requires_grad=True))
    assert [h.grad.item(), m.grad.item(), seen[0].item(), a.grad.item()] == got
    assert grads[0].item() == held
    dz = np.cos(2 * np.tanh(0.24) + 1) * 2
    assert m.grad.item() == pytest.approx(dz, rel=1e-5)
    assert h.grad.item() == pytest.approx(dz * (1 - np.tanh(0.24) ** 2), rel=1e-5)


def test_a_user_gradient_passed_to_backward_is_never_reused():
    x = cygrad.tensor(np.float32(2.0), requires_grad=True)
    g = cygrad.tensor(np.float32(3.0))
    arr = g.numpy()
    (x * x).backward(g)
    (x + 1.0).backward(gradient=cygrad.tensor(np.float32(1.0)))
    _churn(cygrad.tensor(np.float32(0.5), requires_grad=True))
    assert arr == np.float32(3.0) and g.item() == 3.0
    assert x.grad.item() == pytest.approx(13.0)


def test_results_of_compiled_ops_start_untracked():
    a = cygrad.tensor([1.0, 2.0], requires_grad=True)
    y = a * 2.0 + 1.0
    assert not gc.is_tracked(y)


@pytest.mark.parametrize(
    "close_cycle",
    [
        lambda t: setattr(t, "me", t),
        lambda t: setattr(t, "box", [t]),
    ],
    ids=["attribute", "list attribute"],
)
def test_cycles_through_tensors_are_still_collected(close_cycle):
    a = cygrad.tensor([1.0, 2.0], requires_grad=True)
    t = a * 2.0
    close_cycle(t)
    assert gc.is_tracked(t)
    wr = weakref.ref(t)
    del t
    gc.collect()
    assert wr() is None


def test_leaf_hook_cycle_is_collected():
    a = cygrad.tensor([1.0, 2.0], requires_grad=True)
    a.register_hook(lambda g, a=a: g)
    assert gc.is_tracked(a)
    wr = weakref.ref(a)
    del a
    gc.collect()
    assert wr() is None


def test_retained_grad_cycle_is_collected():
    # t.grad set by the engine (retain_grad) tracks t as well.
    a = cygrad.tensor([1.0, 2.0], requires_grad=True)
    t = a * 2.0
    t.retain_grad()
    t.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [1.0, 1.0])
    t.grad.owner = t  # a cycle t -> grad -> t
    wr = weakref.ref(t)
    del t
    gc.collect()
    assert wr() is None


# --- free lists -----------------------------------------------------------


def _freelists_or_skip():
    sizes = engine._freelist_sizes()
    if -1 in sizes:
        pytest.skip("free lists are CPython 3.11 only")
    return sizes


def test_dead_graphs_fill_the_free_lists_and_new_graphs_take_from_them():
    _freelists_or_skip()
    x, w, b = (cygrad.tensor(np.float32(v), requires_grad=r)
               for v, r in ((0.5, False), (0.8, True), (0.1, True)))
    _chain(x, w, b, 300)             # raises the caps (they grow on misses)
    engine._clear_caches()
    assert engine._freelist_sizes() == (0, 0, 0)
    y = _chain(x, w, b, 300)
    del y
    tensors, nodes, versions = engine._freelist_sizes()
    assert tensors >= 300 and nodes == 900 and versions >= 300
    y = _chain(x, w, b, 300)
    assert engine._freelist_sizes()[1] == 0      # every node came from the list
    y.backward()
    want, gw, gb = _chain_numpy(0.5, 0.8, 0.1, 300)
    np.testing.assert_allclose(y.item(), want, rtol=1e-5)
    np.testing.assert_allclose(w.grad.item(), gw, rtol=1e-4)
    np.testing.assert_allclose(b.grad.item(), gb, rtol=1e-4)


def test_a_reused_tensor_carries_nothing_of_its_previous_life():
    _freelists_or_skip()
    engine._clear_caches()
    a = cygrad.tensor([1.0, 2.0], requires_grad=True)
    old = a * 3
    old.retain_grad()
    old.note = "mine"                # an attribute in the instance dict
    old.register_hook(lambda g: g * 2)
    ref = weakref.ref(old)
    old_id = id(old)
    old.sum().backward()
    del old
    assert ref() is None
    assert engine._freelist_sizes()[0] >= 1
    five = cygrad.tensor([5.0, 6.0])
    made = [five + 1 for _ in range(8)]
    reused = [t for t in [five, *made] if id(t) == old_id]
    assert reused, "the dead tensor's memory was not reused"
    new = reused[0]
    assert not hasattr(new, "note") and new.__dict__ == {}
    assert new.grad_fn is None and new.grad is None
    assert not new.requires_grad and new.is_leaf
    assert new._version == 0
    assert weakref.ref(new)() is new and ref() is None
    assert new.numpy().tolist() in ([5.0, 6.0], [6.0, 7.0])
    assert gc.is_tracked(new) is False   # as any fresh tensor


def test_subclasses_are_never_taken_into_the_free_list():
    _freelists_or_skip()

    class MyTensor(cygrad.Tensor):
        pass

    data = cygrad.zeros(3)
    engine._clear_caches()
    t = MyTensor.__new__(MyTensor)
    del t
    p = cygrad.nn.Parameter(data)
    del p
    assert engine._freelist_sizes()[0] == 0
    del data
    assert engine._freelist_sizes()[0] == 1      # the plain tensor


def test_a_reused_node_is_a_fresh_node():
    _freelists_or_skip()
    engine._clear_caches()
    a = cygrad.tensor([1.0, -2.0], requires_grad=True)
    y = (a * a).relu()
    y.grad_fn.register_prehook(lambda g: None)
    first = y.grad_fn
    first_id, name = id(first), first.name()
    del y, first
    b = cygrad.tensor([3.0], requires_grad=True)
    z = b.exp()
    assert id(z.grad_fn) in (first_id, id(z.grad_fn))
    assert z.grad_fn.name() == "ExpBackward0" != name
    assert len(z.grad_fn.next_functions) == 1
    assert z.grad_fn.next_functions[0][0].variable is b
    z.backward()
    np.testing.assert_allclose(b.grad.numpy(), np.exp([3.0]), rtol=1e-6)
