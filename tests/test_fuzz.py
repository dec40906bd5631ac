"""Fuzzing: random expression graphs, values and gradients vs torch and vs
finite differences.

A program is a list of steps over a pool of tensors that starts with 1-3
leaves of mutually broadcastable shapes.  Steps: elementwise unary and
binary ops (broadcasting), reductions, shape ops and views, indexing,
matmul, clone/detach, in-place ops with grad on clones and on views of
clones, and in-place ops under ``no_grad`` on any pool member (which may make
backward raise the version error; torch must agree).  The loss is a weighted
sum of every floating pool member.  The same program runs in cygrad and in
torch; values, leaf gradients and whether an error is raised must agree.
Without torch, smooth programs are checked against central differences.

Examples per run: the hypothesis profile's ``max_examples`` (30 in CI, "ci"
profile, derandomized) times ``SCALE`` for the torch test;
``HYPOTHESIS_PROFILE=fuzz`` runs 2000 per test.
"""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import cygrad
from cygrad._kernels import optable

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

SCALE = 4
BASE = settings().max_examples
SETTINGS = {"deadline": None, "suppress_health_check": list(HealthCheck)}

UNARY = {
    "exp": lambda L, x: x.exp(),
    "tanh": lambda L, x: x.tanh(),
    "sin": lambda L, x: x.sin(),
    "cos": lambda L, x: x.cos(),
    "sigmoid": lambda L, x: x.sigmoid(),
    "relu": lambda L, x: x.relu(),
    "abs": lambda L, x: x.abs(),
    "neg": lambda L, x: -x,
    "sqrt": lambda L, x: (x * x + 0.25).sqrt(),
    "log": lambda L, x: (x * x + 0.5).log(),
    "square": lambda L, x: x**2,
    "cube": lambda L, x: x**3,
    "rpow": lambda L, x: 1.5 ** x.tanh(),
    "scalar ops": lambda L, x: (2.0 - x) * 0.5 + 1 / (x * x + 1.0),
    "clamp": lambda L, x: x.clamp(-0.5, 0.7),
}
SMOOTH_UNARY = [
    "exp",
    "tanh",
    "sin",
    "cos",
    "sigmoid",
    "neg",
    "sqrt",
    "log",
    "square",
    "cube",
    "rpow",
    "scalar ops",
]

BINARY = {
    "add": lambda L, a, b: a + b,
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / (b * b + 0.5),
    "pow": lambda L, a, b: (a * a + 0.5) ** b.tanh(),
    "maximum": lambda L, a, b: L.maximum(a, b),
    "minimum": lambda L, a, b: L.minimum(a, b),
    "where": lambda L, a, b: L.where(a > b, a, b * 2),
}
SMOOTH_BINARY = ["add", "sub", "mul", "div", "pow"]


def _squash(x, domain):
    # Any value into the open interval (lo, hi) of a row's domain, smoothly.
    lo, hi = domain
    return x.sigmoid() * (hi - lo) + lo


# The activation rows: torch has them in nn.functional only.
for _name in ("silu", "gelu", "mish", "softsign", "selu", "hardsigmoid", "hardswish",
              "relu6", "logsigmoid", "tanhshrink"):
    UNARY[_name] = lambda L, x, _n=_name: getattr(L.nn.functional, _n)(x)
UNARY["gelu_tanh"] = lambda L, x: L.nn.functional.gelu(x, approximate="tanh")
SMOOTH_UNARY += ["silu", "gelu", "gelu_tanh", "mish", "logsigmoid", "tanhshrink"]

# Every other row of the op table joins, its inputs squashed into its domain.
# Rows with a kink or a step (clamp_min at a == b, floor at integers) join
# the general programs only: hypothesis draws equal leaves and round numbers
# on purpose, so "hit with probability zero" does not hold for it.
_KINK = re.compile(r"\b(keep|pick|floor|ceil|trunc|rint|round|sign|fabs|abs|relu|"
                   r"remainder|floor_divide|fmod|maximum|minimum)\b")


def _smooth(row):
    return not any(_KINK.search(e) for e in (row.fwd,) + tuple(row.grads))


for _row in optable.UNARY:
    if _row.name not in UNARY:
        UNARY[_row.name] = (lambda L, x, _r=_row:
                            getattr(L, _r.name)(_squash(x, _r.domain[0])))
        if _smooth(_row):
            SMOOTH_UNARY.append(_row.name)
for _row in optable.BINARY:
    if _row.name not in BINARY:
        BINARY[_row.name] = (lambda L, a, b, _r=_row: getattr(L, _r.name)(
            _squash(a, _r.domain[0]), _squash(b, _r.domain[1])))
        if _smooth(_row):
            SMOOTH_BINARY.append(_row.name)


def _bshape(a, b):
    try:
        return np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        return None


@st.composite
def programs(draw, smooth=False, max_steps=8):
    shapes = draw(
        hnp.mutually_broadcastable_shapes(
            num_shapes=draw(st.integers(1, 3)),
            min_dims=0,
            max_dims=3,
            min_side=1,
            max_side=4,
        )
    ).input_shapes
    elems = st.floats(-2, 2, allow_nan=False, width=64)
    arrays = [draw(hnp.arrays(np.float64, s, elements=elems)) for s in shapes]
    kinds = ["unary", "binary", "reduce", "shape"]
    if not smooth:
        kinds += [
            "index",
            "matmul",
            "clone",
            "detach",
            "inplace",
            "view_inplace",
            "nograd_inplace",
        ]
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(kinds))
        i = draw(st.integers(0, 63))
        j = draw(st.integers(0, 63))
        if kind == "unary":
            arg = draw(st.sampled_from(SMOOTH_UNARY if smooth else list(UNARY)))
        elif kind == "binary":
            arg = draw(st.sampled_from(SMOOTH_BINARY if smooth else list(BINARY)))
        elif kind == "reduce":
            arg = (
                draw(
                    st.sampled_from(
                        ["sum", "mean", "sum_all", "softmax", "logsumexp"]
                        if not smooth
                        else ["sum", "mean", "sum_all"]
                    )
                ),
                draw(st.integers(0, 5)),
                draw(st.booleans()),
            )
        elif kind == "shape":
            arg = (
                draw(
                    st.sampled_from(
                        [
                            "flat",
                            "permute",
                            "transpose",
                            "unsqueeze",
                            "squeeze",
                            "expand",
                        ]
                    )
                ),
                draw(st.integers(0, 5)),
            )
        elif kind in ("inplace", "view_inplace", "nograd_inplace"):
            arg = (
                draw(
                    st.sampled_from(["add_", "mul_", "sub_", "div_", "add_t", "mul_t"])
                ),
                draw(st.floats(0.5, 2.0, width=64)),
            )
        else:
            arg = draw(st.integers(0, 5))
        steps.append((kind, i, j, arg))
    seed = draw(st.integers(0, 2**16))
    weights = list(np.random.default_rng(seed).uniform(-1, 1, 32))
    return arrays, steps, weights


def _pick(pool, i, floating=True):
    cands = [t for t in pool if (not floating) or t.dtype in FLOATS]
    return cands[i % len(cands)]


FLOATS = set()


def _apply(L, pool, step, dtype):
    """Run one program step with library L, appending its result(s) to pool."""
    kind, i, j, arg = step
    x = pool[i % len(pool)]
    y = pool[j % len(pool)]
    nd = x.dim()
    if kind == "unary":
        out = UNARY[arg](L, x)
    elif kind == "binary":
        if _bshape(x, y) is None:
            y = x
        out = BINARY[arg](L, x, y)
    elif kind == "reduce":
        op, d, keep = arg
        if op == "sum_all" or nd == 0:
            out = x.sum()
        elif op == "sum":
            out = x.sum(dim=d % nd, keepdim=keep)
        elif op == "mean":
            out = x.mean(dim=d % nd, keepdim=keep)
        elif op == "softmax":
            out = x.softmax(dim=d % nd)
        else:
            out = x.logsumexp(dim=d % nd, keepdim=keep)
    elif kind == "shape":
        op, d = arg
        if op == "flat":
            out = x.reshape(-1).reshape(tuple(x.shape))
        elif op == "permute" and nd:
            perm = list(range(nd))
            perm = perm[d % nd :] + perm[: d % nd]
            out = x.permute(*perm)
        elif op == "transpose" and nd:
            out = x.transpose(0, nd - 1)
        elif op == "unsqueeze":
            out = x.unsqueeze(d % (nd + 1))
        elif op == "squeeze":
            out = x.squeeze()
        elif op == "expand":
            out = x.unsqueeze(0).expand(2, *x.shape)
        else:
            out = x * 1.0
    elif kind == "index":
        if nd == 0 or x.shape[0] == 0:
            out = x * 1.0
        else:
            k = x.shape[0]
            sel = [
                slice(None, None, -1),
                slice(1, None),
                arg % k,
                [arg % k, 0, arg % k],
            ][arg % 4]
            out = x[sel]
    elif kind == "matmul":
        a = x if nd >= 1 else x.reshape(1)
        b = L.tensor(
            np.linspace(-1, 1, a.shape[-1] * 3)
            .reshape(a.shape[-1], 3)
            .astype(dtype)
        )
        out = a @ b
    elif kind == "clone":
        out = x.clone()
    elif kind == "detach":
        out = x.detach() * 2
    elif kind in ("inplace", "view_inplace", "nograd_inplace"):
        op, c = arg
        if kind == "nograd_inplace":
            target = x
        else:
            target = x.clone()
        dst = target
        if kind == "view_inplace" and nd:
            dst = target.transpose(0, nd - 1) if arg[1] > 1.2 else target[0]
        other = y if op.endswith("_t") else c
        if op.endswith("_t"):
            if _bshape(dst, other) != tuple(dst.shape):
                other = c
            op = op[:-2] + "_"
        if kind == "nograd_inplace":
            with L.no_grad():
                getattr(dst, op)(other)
        else:
            getattr(dst, op)(other)
        out = target
        if dst is not target:
            pool.append(dst)
    pool.append(out)


def run(L, arrays, steps, weights, dtype):
    """Run a program with library L (cygrad or torch).

    Returns (values, leaf grads, error-kind) where error-kind is None or
    'backward' (an exception from backward, e.g. the version check).
    """
    leaves = [L.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    pool = list(leaves)
    for step in steps:
        _apply(L, pool, step, dtype)
    total = None
    for k, t in enumerate(pool):
        if not t.requires_grad or t.dtype not in FLOATS:
            continue
        term = (t * weights[k % len(weights)]).sum()
        total = term if total is None else total + term
    values = [t.detach().numpy().copy() for t in pool]
    error = None
    if total is not None:
        try:
            total.backward()
        except RuntimeError as e:
            error = ("backward", str(e)[:200])
    grads = [None if t.grad is None else t.grad.numpy().copy() for t in leaves]
    return values, grads, error


if torch is not None:
    FLOATS.update({torch.float32, torch.float64})
FLOATS.update({np.dtype(np.float32), np.dtype(np.float64)})

TOL = {
    np.float64: {"rtol": 1e-9, "atol": 1e-10},
    np.float32: {"rtol": 2e-4, "atol": 2e-5},
}


def _compare(prog, dtype):
    arrays, steps, weights = prog
    note(f"shapes {[a.shape for a in arrays]}, steps {steps}")
    ours = theirs = None
    try:
        theirs = run(torch, arrays, steps, weights, dtype)
    except (RuntimeError, IndexError, ValueError) as e:
        # torch refuses the program in forward: cygrad must refuse it too.
        note(f"torch forward error: {e}")
        if "some elements of the input tensor and the written-to tensor" in str(e):
            # Deliberate difference: an in-place source that overlaps its
            # destination (x.add_(x[0])) is copied first in cygrad, refused
            # by torch.
            run(cygrad, arrays, steps, weights, dtype)
            return
        with pytest.raises((RuntimeError, IndexError, ValueError)):
            run(cygrad, arrays, steps, weights, dtype)
        return
    ours = run(cygrad, arrays, steps, weights, dtype)
    vo, go, eo = ours
    vt, gt, et = theirs
    note(f"errors: cygrad {eo}, torch {et}")
    assert (eo is None) == (et is None), (eo, et)
    assert len(vo) == len(vt)
    tol = TOL[dtype]
    with np.errstate(all="ignore"):
        for k, (a, b) in enumerate(zip(vo, vt)):
            assert a.shape == b.shape, (k, a.shape, b.shape)
            np.testing.assert_allclose(
                a, b, equal_nan=True, err_msg=f"value {k}", **tol
            )
        if eo is None:
            for k, (a, b) in enumerate(zip(go, gt)):
                if a is None or b is None:
                    assert a is None and b is None, (k, a, b)
                    continue
                assert a.shape == b.shape and a.dtype == b.dtype
                np.testing.assert_allclose(
                    a, b, equal_nan=True, err_msg=f"grad of leaf {k}", **tol
                )


@pytest.mark.skipif(torch is None, reason="torch not installed")
@settings(max_examples=BASE * SCALE, **SETTINGS)
@given(prog=programs())
def test_random_graphs_match_torch_float64(prog):
    _compare(prog, np.float64)


@pytest.mark.skipif(torch is None, reason="torch not installed")
@settings(max_examples=BASE, **SETTINGS)
@given(prog=programs(max_steps=5))
def test_random_graphs_match_torch_float32(prog):
    _compare(prog, np.float32)


@settings(max_examples=BASE, **SETTINGS)
@given(prog=programs(smooth=True, max_steps=5))
def test_smooth_random_graphs_match_finite_differences(prog):
    """Without any oracle library: central differences in float64."""
    arrays, steps, weights = prog
    values, grads, error = run(cygrad, arrays, steps, weights, np.float64)
    assert error is None
    assume(all(np.all(np.isfinite(v)) and np.all(np.abs(v) < 1e6) for v in values))

    def loss(*xs):
        return _forward_only(xs, steps, weights)

    eps = 1e-6
    for k, a in enumerate(arrays):
        num = np.zeros_like(a)
        flat = a.reshape(-1)
        for e in range(flat.size):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[k].reshape(-1)[e] += eps
            minus[k].reshape(-1)[e] -= eps
            num.reshape(-1)[e] = (loss(*plus) - loss(*minus)) / (2 * eps)
        np.testing.assert_allclose(
            grads[k], num, rtol=1e-4, atol=1e-5, err_msg=f"leaf {k}"
        )


def _forward_only(arrays, steps, weights):
    """The loss of a smooth program as a float, without autograd."""
    pool = [cygrad.tensor(a) for a in arrays]
    for step in steps:
        _apply(cygrad, pool, step, np.float64)
    total = 0.0
    for k, t in enumerate(pool):
        total += float((t * weights[k % len(weights)]).sum().item())
    return total
