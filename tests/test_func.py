"""``cygrad.func`` (torch.func) against torch on the same inputs: the
differentiation transforms and their nesting, vmap's dims and errors,
functional_call, stack_module_state, and the per-sample-gradient and
ensembling patterns of torch's tutorials."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cygrad
from cygrad.autograd import gradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
TOL = dict(rtol=1e-10, atol=1e-10)


def arr(*shape):
    return RNG.standard_normal(shape)


def run(fn, *arrays):
    """fn(module, *tensors) on cygrad and on torch; results as NumPy trees."""
    out = []
    for m in (cygrad, torch):
        res = fn(m, *[m.tensor(a) for a in arrays])
        out.append(to_np(res))
    return out


def to_np(tree):
    if isinstance(tree, dict):
        return {k: to_np(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(to_np(v) for v in tree)
    if hasattr(tree, "detach"):
        return tree.detach().numpy()
    return tree


def assert_tree(a, b, tol=TOL):
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b)
        for k in a:
            assert_tree(a[k], b[k], tol)
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            assert_tree(x, y, tol)
    elif isinstance(a, np.ndarray):
        assert a.shape == b.shape, (a.shape, b.shape)
        np.testing.assert_allclose(a, b, **tol)
    else:
        assert a == b


def same(fn, *arrays, tol=TOL):
    a, b = run(fn, *arrays)
    assert_tree(a, b, tol)


def raises_like(fn, *arrays):
    """fn raises the same exception type with the same message in both."""
    errs = []
    for m in (cygrad, torch):
        with pytest.raises(Exception) as info:
            fn(m, *[m.tensor(a) for a in arrays])
        errs.append(info.value)
    assert type(errs[0]).__name__ == type(errs[1]).__name__, errs
    assert str(errs[0]).replace("cygrad", "torch") == str(errs[1]), errs


# --- grad, grad_and_value -------------------------------------------------------------

def f3(m, x):
    return (x.sin() * x ** 2).sum()


def test_grad_matches_torch():
    same(lambda m, x: m.func.grad(lambda x: f3(m, x))(x), arr(4, 3))
    same(lambda m, x: m.func.grad_and_value(lambda x: f3(m, x))(x), arr(5))


def test_grad_argnums_and_aux():
    def f(m, x, y):
        return (x * y.exp()).sum(), {"y2": y * 2}
    for nums in (0, 1, -1, (0, 1), (1, 0)):
        same(lambda m, x, y: m.func.grad(lambda a, b: f(m, a, b), argnums=nums,
                                         has_aux=True)(x, y), arr(3), arr(3))
    same(lambda m, x, y: m.func.grad_and_value(lambda a, b: f(m, a, b), 1,
                                               has_aux=True)(x, y), arr(3), arr(3))


def test_grad_over_dicts_lists_and_kwargs():
    def f(m, p, x, scale=1.0):
        return ((p["w"] @ x + p["b"][0]) ** 2).sum() * scale
    same(lambda m, w, b, x: m.func.grad(lambda p, x: f(m, p, x, scale=3.0))(
        {"w": w, "b": [b]}, x), arr(2, 3), arr(2), arr(3))


def test_grad_of_constant_is_zeros_and_result_is_plain():
    same(lambda m, x: m.func.grad(lambda x: m.tensor(1.0, dtype=x.dtype))(x), arr(3))
    x = cygrad.tensor(arr(3))
    g = cygrad.func.grad(lambda x: (x * x).sum())(x)
    assert not g.requires_grad and g.grad_fn is None


def test_grad_under_no_grad():
    with cygrad.no_grad():
        g = cygrad.func.grad(lambda x: (x ** 3).sum())(cygrad.tensor([1.0, 2.0]))
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])


@pytest.mark.parametrize("call", [
    lambda m, x: m.func.grad(lambda x: x)(x),
    lambda m, x: m.func.grad(lambda x: 1.0)(x),
    lambda m, x: m.func.grad(lambda x: x.sum(), has_aux=True)(x),
    lambda m, x: m.func.grad(lambda x: x.sum(), argnums=2)(x),
    lambda m, x: m.func.grad(lambda x: x.sum(), argnums=(0, 0))(x),
    lambda m, x: m.func.grad(lambda x: x.sum(), argnums=1.5)(x),
    lambda m, x: m.func.grad(lambda x: x.sum())(3.0),
    lambda m, x: m.func.grad(lambda x: x.sum())(),
], ids=["not-scalar", "not-tensor", "no-aux", "argnum-range", "argnum-twice",
        "argnum-type", "float-input", "no-input"])
def test_grad_errors(call):
    raises_like(call, arr(3))


def test_grad_of_grad_and_penalty():
    # second derivative, and a gradient penalty differentiated by backward
    same(lambda m, x: m.func.grad(lambda x: m.func.grad(
        lambda y: (y ** 4).sum())(x).sum())(x), arr(4))
    outs = []
    for m in (cygrad, torch):
        x = m.tensor(arr(4) if not outs else outs[0][2], requires_grad=True)
        g = m.func.grad(lambda x: (x.sin() * x).sum())(x)
        assert g.requires_grad
        (g ** 2).sum().backward()
        outs.append((g.detach().numpy(), x.grad.numpy(), x.detach().numpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], **TOL)
    np.testing.assert_allclose(outs[0][1], outs[1][1], **TOL)


def test_grad_closure_inside_grad():
    # d/dx [x * d/dy (x*y)|_{y=x}] = d/dx x^2 = 2x
    same(lambda m, x: m.func.grad(lambda x: (x * m.func.grad(
        lambda y: (x * y).sum())(x)).sum())(x), arr(3))


# --- vjp, jvp -------------------------------------------------------------------------

def test_vjp_matches_torch():
    def fn(m, x, y, v):
        out, vjp_fn = m.func.vjp(lambda a, b: (a * b, a.exp()), x, y)
        return out, vjp_fn((v, v)), vjp_fn((v * 2, v))
    same(fn, arr(3), arr(3), arr(3))

    def aux(m, x, v):
        out, vjp_fn, a = m.func.vjp(lambda p: ({"s": p["x"].sin()}, p["x"] + 1),
                                    {"x": x}, has_aux=True)
        return out, vjp_fn({"s": v}), a
    same(aux, arr(2, 2), arr(2, 2))


@pytest.mark.parametrize("call", [
    lambda m, x: m.func.vjp(lambda x: x * 2, x)[1](m.ones(4, dtype=x.dtype)),
    lambda m, x: m.func.vjp(lambda x: x * 2, x)[1]((m.ones(3, dtype=x.dtype),)),
    lambda m, x: m.func.vjp(lambda x: 3, x),
    lambda m, x: m.func.vjp(lambda x: x, 3),
], ids=["shape", "structure", "int-output", "int-input"])
def test_vjp_errors(call):
    raises_like(call, arr(3))


def test_jvp_matches_torch():
    same(lambda m, x, t: m.func.jvp(lambda x: x.sin() * x, (x,), (t,)), arr(4), arr(4))
    same(lambda m, x, y, t, u: m.func.jvp(lambda a, b: {"p": a @ b, "q": [a.exp()]},
                                          (x, y), (t, u)),
         arr(2, 3), arr(3), arr(2, 3), arr(3))
    same(lambda m, x, t: m.func.jvp(lambda x: (x.tanh(), x.cos()), (x,), (t,),
                                    has_aux=True), arr(3), arr(3))


@pytest.mark.parametrize("call", [
    lambda m, x: m.func.jvp(lambda x: x, x, x),
    lambda m, x: m.func.jvp(lambda x: x, (x,), (x, x)),
    lambda m, x: m.func.jvp(lambda x: x, (x,), (m.ones(4, dtype=x.dtype),)),
    lambda m, x: m.func.jvp(lambda x: x, (x,), [x]),
    lambda m, x: m.func.jvp(lambda x: x, (), ()),
], ids=["not-tuple", "structure", "size", "list", "empty"])
def test_jvp_errors(call):
    raises_like(call, arr(3))


def test_linearize_and_functionalize():
    same(lambda m, x, t: m.func.linearize(lambda x: x.sin(), x)[1](t), arr(3), arr(3))

    def f(x):
        y = x.clone()
        y.mul_(2)
        return y
    same(lambda m, x: m.func.functionalize(f)(x), arr(3))


# --- jacrev, jacfwd, hessian ----------------------------------------------------------

@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobians(jac):
    same(lambda m, x: getattr(m.func, jac)(lambda x: x.sin() * x.sum())(x), arr(3))
    same(lambda m, x, y: getattr(m.func, jac)(
        lambda a, b: (a * b, a.sum()), argnums=(0, 1))(x, y), arr(3), arr(3))
    same(lambda m, x, y: getattr(m.func, jac)(
        lambda p: {"o": p["x"] @ p["y"]}, has_aux=False)({"x": x, "y": y}),
        arr(2, 3), arr(3, 2))
    same(lambda m, x: getattr(m.func, jac)(lambda x: (x.exp(), x * 2),
                                           has_aux=True)(x), arr(2, 2))


@pytest.mark.parametrize("compose", ["hessian", "rev-rev", "fwd-fwd", "rev-fwd"])
def test_hessians(compose):
    def f(x):
        return (x.sin() * x ** 3).sum()

    def h(m, x):
        F = m.func
        if compose == "hessian":
            return F.hessian(f)(x)
        outer, inner = {"rev-rev": (F.jacrev, F.jacrev),
                        "fwd-fwd": (F.jacfwd, F.jacfwd),
                        "rev-fwd": (F.jacrev, F.jacfwd)}[compose]
        return outer(inner(f))(x)
    same(h, arr(4))


def test_hessian_argnums():
    same(lambda m, x, y: m.func.hessian(lambda a, b: (a * b.exp()).sum(),
                                        argnums=(0, 1))(x, y), arr(2), arr(2))


@pytest.mark.parametrize("call", [
    lambda m, x: m.func.jacrev(lambda x: 3)(x),
    lambda m, x: m.func.jacrev(lambda x: x)(3.0),
    lambda m, x: m.func.jacfwd(lambda x: x, randomness="bad")(x),
], ids=["int-output", "float-input", "randomness"])
def test_jacobian_errors(call):
    raises_like(call, arr(3))


# --- vmap -----------------------------------------------------------------------------

def test_vmap_dims():
    same(lambda m, x, y: m.func.vmap(lambda a, b: a @ b, in_dims=(0, None))(x, y),
         arr(5, 3), arr(3))
    same(lambda m, x: m.func.vmap(lambda a: a.sum(0), in_dims=1)(x), arr(3, 4, 2))
    same(lambda m, x: m.func.vmap(lambda a: a * 2, in_dims=-1, out_dims=1)(x),
         arr(3, 4, 2))
    same(lambda m, x: m.func.vmap(lambda a: a, out_dims=-1)(x), arr(2, 3))
    same(lambda m, x: m.func.vmap(lambda a: (a, a.sum()), out_dims=(1, 0))(x),
         arr(2, 3))
    same(lambda m, x: m.func.vmap(lambda a: {"a": a, "b": [a * 2]})(x), arr(3))
    same(lambda m, x: m.vmap(lambda a: a.sum())(x), arr(0, 3))


def test_vmap_nested_inputs_and_kwargs():
    def f(p, xs, scale=1.0):
        return (p["w"] * xs[0] + xs[1]) * scale
    same(lambda m, w, x, y: m.func.vmap(f, in_dims=({"w": None}, [0, 1]))(
        {"w": w}, [x, y], scale=2.0), arr(3), arr(4, 3), arr(3, 4))
    same(lambda m, w, x: m.func.vmap(lambda p, x: p[0] * x, in_dims=(None, 0))(
        (w,), x), arr(3), arr(5, 3))


def test_vmap_nested_vmap_and_out_none():
    same(lambda m, x, y: m.func.vmap(m.func.vmap(lambda a, b: a * b,
                                                 in_dims=(0, None)),
                                     in_dims=(None, 0))(x, y), arr(3), arr(4))
    same(lambda m, x, y: m.func.vmap(lambda a, b: (a + 1, b), in_dims=(0, None),
                                     out_dims=(0, None))(x, y), arr(3, 2), arr(2))


def test_vmap_gradient_flows():
    outs = []
    for m in (cygrad, torch):
        x = m.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        w = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
        y = m.func.vmap(lambda a, b: (a.sin() * b).sum(), in_dims=(0, None))(x, w)
        (y * m.tensor([1.0, -2.0], dtype=m.float64)).sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    assert_tree(tuple(outs[0]), tuple(outs[1]))


def test_vmap_randomness():
    x = cygrad.zeros(4)
    with pytest.raises(RuntimeError, match="called random operation while in "
                       "randomness error mode"):
        cygrad.vmap(lambda a: a + cygrad.rand(()))(x)
    same_ = cygrad.vmap(lambda a: a + cygrad.rand(()), randomness="same")(x)
    assert len(set(same_.tolist())) == 1
    diff = cygrad.vmap(lambda a: a + cygrad.rand(()), randomness="different")(x)
    assert len(set(diff.tolist())) == 4
    chunked = cygrad.vmap(lambda a: a * 2, chunk_size=3)(cygrad.arange(5.0))
    assert chunked.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


@pytest.mark.parametrize("call", [
    lambda m, x: m.vmap(lambda x, y: x + y)(x, m.ones(4, dtype=x.dtype)),
    lambda m, x: m.vmap(lambda x, y: x + y, in_dims=(0,))(x, x),
    lambda m, x: m.vmap(lambda x, y: x + y, in_dims=(None, None))(x, x),
    lambda m, x: m.vmap(lambda x: x, in_dims=2)(x),
    lambda m, x: m.vmap(lambda x: x, in_dims=0)(3),
    lambda m, x: m.vmap(lambda x: 3, in_dims=0)(x),
    lambda m, x: m.vmap(lambda x: x, randomness="foo")(x),
    lambda m, x: m.vmap(lambda x: x, chunk_size=0)(x),
    lambda m, x: m.vmap(lambda x: x.sum(), out_dims=1)(x),
    lambda m, x: m.vmap(lambda x: x, in_dims="a")(x),
    lambda m, x: m.vmap(lambda x: x, in_dims=[0])(x),
    lambda m, x: m.vmap(lambda x: x)(),
    lambda m, x: m.vmap(lambda x: (x, 2))(x),
], ids=["sizes", "in-dims-structure", "nothing-batched", "in-dim-range",
        "non-tensor", "int-output", "randomness", "chunk", "out-dim-range",
        "in-dims-type", "in-dims-list", "no-inputs", "int-in-tuple"])
def test_vmap_errors(call):
    raises_like(call, arr(3))


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3), data=st.data())
def test_vmap_any_dims(shape, data):
    nd = len(shape)
    in_dim = data.draw(st.integers(-nd, nd - 1))
    out_dim = data.draw(st.integers(-nd, nd - 1))
    a = RNG.standard_normal(shape)
    same(lambda m, x: m.vmap(lambda t: t.exp() * 2, in_dims=in_dim,
                             out_dims=out_dim)(x), a)


# --- functional_call, stack_module_state ----------------------------------------------

def net(m, seed=0):
    m.manual_seed(seed)
    lin = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.Tanh(), m.nn.Linear(4, 2)).double()
    rng = np.random.default_rng(seed)
    lin.load_state_dict({k: m.tensor(rng.standard_normal(tuple(v.shape)))
                         for k, v in lin.state_dict().items()})
    return lin


def test_functional_call_matches_torch_and_restores():
    w = arr(4, 3)

    def fn(m, x, w):
        model = net(m)
        before = model[0].weight
        out = m.func.functional_call(model, {"0.weight": w}, (x,))
        out2 = m.func.functional_call(model, ({"0.weight": w}, {"2.bias": w[0, :2]}),
                                      x)
        assert model[0].weight is before
        return out, out2
    same(fn, arr(5, 3), w)


def test_functional_call_buffers_kwargs_and_grads():
    def fn(m, x, mean):
        bn = m.nn.BatchNorm1d(3).double().eval()
        out = m.func.functional_call(bn, {"running_mean": mean}, args=(),
                                     kwargs={"input": x})
        assert bn.running_mean.abs().sum().item() == 0.0
        return out
    same(fn, arr(4, 3), arr(3))
    # gradients reach the substituted tensors, not the module's
    outs, x = [], arr(2, 3)
    for m in (cygrad, torch):
        model = net(m)
        p = {k: v.detach().clone().requires_grad_(True)
             for k, v in model.named_parameters()}
        m.func.functional_call(model, p, m.tensor(x)).sum().backward()
        assert all(v.grad is None for v in model.parameters())
        outs.append({k: v.grad.numpy() for k, v in p.items()})
    assert_tree(outs[0], outs[1])


class Tied:
    @staticmethod
    def make(m):
        class T(m.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = m.nn.Linear(2, 2)
                self.b = m.nn.Linear(2, 2)
                self.b.weight = self.a.weight

            def forward(self, x):
                return self.b(self.a(x))
        m.manual_seed(0)
        t = T().double()
        t.load_state_dict({k: m.ones(tuple(v.shape), dtype=m.float64) * 0.5
                           for k, v in t.state_dict().items()})
        return t


@pytest.mark.parametrize("case", ["tie", "untie", "both", "strict-missing",
                                  "strict-unexpected", "duplicate"])
def test_functional_call_tied_and_strict(case):
    w = arr(2, 2)

    def fn(m, x, w):
        t = Tied.make(m)
        F = m.func.functional_call
        if case == "tie":
            return F(t, {"b.weight": w}, x)
        if case == "untie":
            return F(t, {"b.weight": w}, x, tie_weights=False)
        if case == "both":
            return F(t, {"a.weight": w, "b.weight": w * 1}, x)
        if case == "strict-missing":
            return F(t, {"a.weight": w}, x, strict=True)
        if case == "strict-unexpected":
            return F(t, {"a.weight": w, "a.bias": w[0], "b.bias": w[1], "foo": w}, x,
                     strict=True)
        return F(t, ({"a.weight": w}, {"a.weight": w}), x)
    if case in ("tie", "untie"):
        same(fn, arr(2), w)
    else:
        raises_like(fn, arr(2), w)


def test_stack_module_state_and_ensemble():
    x = arr(5, 3)

    def fn(m, x):
        models = [net(m, s) for s in range(3)]
        params, buffers = m.func.stack_module_state(models)
        assert all(v.is_leaf and v.requires_grad for v in params.values())
        base = net(m, 9)

        def call(p, b, x):
            return m.func.functional_call(base, (p, b), (x,))
        return params, m.vmap(call, in_dims=(0, 0, None))(params, buffers, x)
    same(fn, x)


@pytest.mark.parametrize("models", ["empty", "modes", "classes", "shapes"])
def test_stack_module_state_errors(models):
    def fn(m, x):
        ms = {"empty": [], "modes": [m.nn.Linear(2, 2), m.nn.Linear(2, 2).eval()],
              "classes": [m.nn.Linear(2, 2), m.nn.Tanh()],
              "shapes": [m.nn.Linear(2, 2), m.nn.Linear(2, 3)]}[models]
        return m.func.stack_module_state(ms)
    raises_like(fn, arr(1))


# --- the tutorials --------------------------------------------------------------------

def per_sample_grads(m, data, targets):
    model = net(m)
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss(params, buffers, sample, target):
        pred = m.func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return m.nn.functional.cross_entropy(pred, target.unsqueeze(0))
    return m.func.vmap(m.func.grad(loss), in_dims=(None, None, 0, 0))(
        params, buffers, data, targets)


def test_per_sample_gradients_tutorial():
    targets = RNG.integers(0, 2, 6)
    data = arr(6, 3)
    a = to_np(per_sample_grads(cygrad, cygrad.tensor(data), cygrad.tensor(targets)))
    b = to_np(per_sample_grads(torch, torch.tensor(data), torch.tensor(targets)))
    assert_tree(a, b)
    # each row is the gradient of that sample's loss alone
    model = net(cygrad)
    loss = cygrad.nn.functional.cross_entropy(model(cygrad.tensor(data[2:3])),
                                              cygrad.tensor(targets[2:3]))
    loss.backward()
    np.testing.assert_allclose(a["0.weight"][2], model[0].weight.grad.numpy(), **TOL)


def test_transforms_gradcheck():
    x = cygrad.tensor(arr(3), requires_grad=True)
    assert gradcheck(lambda x: cygrad.func.grad(lambda y: (y.sin() * y).sum())(x), (x,))
    assert gradcheck(lambda x: cygrad.func.jacrev(lambda y: y.exp() * y[0])(x), (x,))
    assert gradcheck(lambda x: cygrad.vmap(lambda y: y.tanh() * 3)(x), (x,))


def test_replace_all_batch_norm_modules_and_vmap():
    x = arr(4, 5, 3)

    def fn(m, x):
        m.manual_seed(0)
        model = m.nn.Sequential(m.nn.Linear(3, 3), m.nn.BatchNorm1d(3)).double()
        model.load_state_dict({k: m.tensor(np.full(tuple(v.shape), 0.3))
                               if v.is_floating_point() else v
                               for k, v in model.state_dict().items()})
        assert m.func.replace_all_batch_norm_modules_(model) is model
        assert model[1].running_mean is None and not model[1].track_running_stats
        assert list(dict(model.named_buffers())) == []
        return m.vmap(model)(x)
    same(fn, x)


def test_nn_utils_stateless_functional_call():
    model = net(cygrad)
    x = cygrad.tensor(arr(2, 3))
    with pytest.warns(FutureWarning, match="torch.nn.utils.stateless.functional_call"
                      "` is deprecated"):
        out = cygrad.nn.utils.stateless.functional_call(model, {}, (x,))
    np.testing.assert_allclose(out.detach().numpy(), model(x).detach().numpy())


def test_grad_of_integer_input_raises_like_torch():
    for m in (cygrad, torch):
        with pytest.raises(RuntimeError, match="only Tensors of floating point dtype "
                           "can require gradients"):
            m.func.grad(lambda x: x.sum())(m.tensor([1, 2]))


def _cycles_made_by(fn):
    """(result, number of objects the cycle collector had to free) of a
    second fn() (the first may import and cache)."""
    import gc
    fn()
    gc.collect()
    gc.disable()
    try:
        out = fn()
        return out, gc.collect()
    finally:
        gc.enable()


def test_transforms_and_multi_dot_free_their_graphs_without_the_cycle_collector():
    # per-sample gradients under timeit (which turns the collector off) must
    # not pile up: flatten/unflatten and multi_dot make no reference cycles
    # (the per_sample_grads tutorial grew to 23 GB when they did)
    x, w = arr(6, 3), arr(3)
    a, b, c = arr(2, 4), arr(4, 5), arr(5, 3)
    got = []
    for m in (cygrad, torch):
        def f(w, x, m=m):
            return (m.tanh(x * w)).sum()
        per_sample = m.func.vmap(m.func.grad(f), in_dims=(None, 0))
        tw, tx = m.tensor(w), m.tensor(x)
        res, freed = _cycles_made_by(lambda: per_sample(tw, tx))
        chain, freed_chain = _cycles_made_by(lambda: m.linalg.multi_dot(
            [m.tensor(a), m.tensor(b), m.tensor(c)]))
        if m is cygrad:       # (torch's functorch leaves a few small cycles)
            assert (freed, freed_chain) == (0, 0)
        got.append((res.numpy(), chain.numpy()))
    for mine, theirs in zip(*got):
        np.testing.assert_allclose(mine, theirs, **TOL)


def test_vmap_over_autograd_grad_of_an_outside_graph_frees_it_once():
    # the vmap recipe's jacobian: one batched pass in torch, one pass per
    # element here, so each but the last keeps the graph for the next one
    x0, v0 = arr(5), arr(2, 3, 5)
    got = []
    for m in (cygrad, torch):
        x = m.tensor(x0, requires_grad=True)
        y = x ** 2 * m.sin(x)
        jac = m.vmap(lambda v: m.autograd.grad(y, x, v)[0])(m.eye(5, dtype=m.float64))
        with pytest.raises(RuntimeError, match="backward through the graph a second"):
            m.autograd.grad(y, x, m.ones(5, dtype=m.float64))
        z = (x * x).sum() * x          # nested: the outer vmap keeps it too
        inner = m.vmap(m.vmap(lambda v: m.autograd.grad(z, x, v)[0]))(
            m.tensor(v0))
        got.append((jac.numpy(), inner.numpy()))
    for mine, theirs in zip(*got):
        np.testing.assert_allclose(mine, theirs, **TOL)
