"""float32 activations in float lanes (cg_math.h's cg_*f_fast, elementwise.pyx.tp's
LANES): accuracy against float64 over every float magnitude (a sample of all bit
patterns: subnormals, huge values, inf, NaN), forward and backward, at every SIMD
level the CPU has (each level runs in its own process: the level is chosen when a
module loads), the same bits at every level, and strided loops (portable build)
equal to the unit-stride ones.  Also layer norm's row helpers (cg_norm.h) at
every level against a float64 NumPy layer norm, forward and all gradients.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.special import expit, ndtr

import cygrad
import cygrad.nn.functional as F

F32 = np.float32
ULP = 2.0 ** -24                      # half an ULP of 1, relative
# the forwards' bounds, in float32 ULPs of the correctly rounded value
BOUND = {"exp": 2, "sigmoid": 3, "tanh": 3, "silu": 4, "gelu": 8}
FWD = {"exp": cygrad.exp, "sigmoid": cygrad.sigmoid, "tanh": cygrad.tanh,
       "silu": F.silu, "gelu": F.gelu}
REF = {"exp": np.exp, "sigmoid": expit, "tanh": np.tanh,
       "silu": lambda v: v * expit(v), "gelu": lambda v: v * ndtr(v)}
# derivatives (float64) and the sum of the magnitudes of their terms, which
# bounds the rounding error of a float evaluation (gelu' crosses 0 at -0.75)
DERIV = {
    "silu": lambda v: expit(v) * (1 + v * expit(-v)),
    "gelu": lambda v: ndtr(v) + v * np.exp(-0.5 * v * v) / np.sqrt(2 * np.pi),
}
SCALE = {
    "silu": lambda v: expit(v) * (1 + np.abs(v) * expit(-v)),
    "gelu": lambda v: ndtr(v) + np.abs(v) * np.exp(-0.5 * v * v) / np.sqrt(2 * np.pi),
}
LEVELS = {"portable": {"CYGRAD_NO_SIMD": "1"}, "avx2": {"CYGRAD_SIMD": "avx2"},
          "default": {}}


def _inputs():
    """Every 4099th float bit pattern (all magnitudes, both signs, subnormals,
    inf and NaN), a dense sweep of [-20, 20], and special values, each also
    alone in an ordinary block of 256 (the kernels fall back per block)."""
    allbits = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38,
                        -1e-38, 2.0 ** -12, -(2.0 ** -12), 3e-4, 0.0625, 0.5, 1.0,
                        9.0, 10.0, -10.0, 12.99, -12.99, 13.0, -13.0, 14.0, -14.0,
                        86.9, -86.9, 87.0, -87.0, 88.7, -88.7, 89.0, -104.0, 1e30,
                        -1e30, 3.4e38, -3.4e38], F32)
    rng = np.random.default_rng(0)
    mixed = rng.standard_normal(256 * len(special)).astype(F32)
    mixed[::256] = special
    return np.concatenate([allbits.view(F32), np.linspace(-20, 20, 200_001, dtype=F32),
                           special, mixed])


def _grad(name, x, g):
    t = cygrad.tensor(x, requires_grad=True)
    FWD[name](t).backward(cygrad.tensor(g))
    return t.grad.numpy()


def _outputs():
    """Every forward, and silu's and gelu's gradients (g = 1 and random g)."""
    x = _inputs()
    g = np.random.default_rng(1).standard_normal(x.size).astype(F32)
    out = {}
    with np.errstate(all="ignore"):
        for name, f in FWD.items():
            out[name] = f(cygrad.tensor(x)).numpy()
        for name in DERIV:
            out[name + "_bwd1"] = _grad(name, x, np.ones_like(x))
            out[name + "_bwdg"] = _grad(name, x, g)
    for dt in (np.float32, np.float64):
        name = np.dtype(dt).name
        out.update({f"ln_{name}_{k}": v for k, v in _layer_norm(dt).items()})
    return out


def _ln_inputs(dtype):
    # row lengths around the 16-lane blocks (tails), an offset mean
    rng = np.random.default_rng(4)
    cases = []
    for d in (1, 15, 16, 37, 203):
        arrays = (rng.standard_normal((9, d)) * 3 + 5, rng.standard_normal((9, d)),
                  rng.standard_normal(d), rng.standard_normal(d))
        cases.append(tuple(a.astype(dtype) for a in arrays))
    return cases


def _layer_norm(dtype):
    """layer_norm (cg_norm.h's row helpers) forward and gradients."""
    out = {}
    for i, arrays in enumerate(_ln_inputs(dtype)):
        x, g, w, b = (cygrad.tensor(a, requires_grad=True) for a in arrays)
        y = F.layer_norm(x, (x.shape[1],), w, b, 1e-5)
        y.backward(g.detach())
        out.update({f"{i}_y": y.detach().numpy(), f"{i}_dx": x.grad.numpy(),
                    f"{i}_dw": w.grad.numpy(), f"{i}_db": b.grad.numpy()})
    return out


def _layer_norm_ref(x, g, w, b):
    x, g, w, b = (a.astype(np.float64) for a in (x, g, w, b))
    m = x.mean(1, keepdims=True)
    rs = 1 / np.sqrt(((x - m) ** 2).mean(1, keepdims=True) + 1e-5)
    xh = (x - m) * rs
    gw = g * w
    dx = rs * (gw - gw.mean(1, keepdims=True) - xh * (gw * xh).mean(1, keepdims=True))
    return {"y": xh * w + b, "dx": dx, "dw": (g * xh).sum(0), "db": g.sum(0)}


def _level_outputs(level, tmp):
    """_outputs() computed in a fresh process at the given SIMD level."""
    path = os.path.join(tmp, f"{level}.npz")
    env = {k: v for k, v in os.environ.items()
           if k not in ("CYGRAD_NO_SIMD", "CYGRAD_SIMD")}
    env.update(LEVELS[level])
    here = os.path.dirname(__file__)
    code = (f"import numpy as np, sys; sys.path.insert(0, {here!r}); "
            "import test_f32_math as t; from cygrad._kernels import cpu; "
            f"o = t._outputs(); np.savez({path!r}, level=cpu.simd_level(), **o)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(cygrad.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=root)
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


@pytest.fixture(scope="module")
def levels(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("f32"))
    return {level: _level_outputs(level, tmp) for level in LEVELS}


def _ulps(got, want):
    def ordered(a):
        i = a.astype(F32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    d = np.abs(ordered(got) - ordered(want))
    return np.where(np.isnan(got) & np.isnan(want), 0, d)


def test_levels_ran_as_asked(levels):
    from cygrad._kernels import cpu
    assert int(levels["portable"]["level"]) == 0
    if cpu.cpu_has_avx2():
        assert int(levels["avx2"]["level"]) == 1
    default = int(levels["default"]["level"])
    assert default >= int(levels["avx2"]["level"])
    # the default child runs without the level variables; this process may
    # have them (CI runs the suite under CYGRAD_NO_SIMD=1 too)
    if not any(os.environ.get(k) for k in ("CYGRAD_NO_SIMD", "CYGRAD_SIMD")):
        assert default == cpu.simd_level()


@pytest.mark.parametrize("level", list(LEVELS))
@pytest.mark.parametrize("name", list(FWD))
def test_forward_within_a_few_ulps_of_float64(levels, level, name):
    x = _inputs()
    got = levels[level][name]
    with np.errstate(all="ignore"):
        want = REF[name](x.astype(np.float64)).astype(F32)
    u = _ulps(got, want)
    assert u.max() <= BOUND[name], (name, x[u > BOUND[name]][:5],
                                    got[u > BOUND[name]][:5], want[u > BOUND[name]][:5])
    # NaN where the reference has one, and the reference's signs of zero
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    num = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]))


@pytest.mark.parametrize("level", list(LEVELS))
@pytest.mark.parametrize("name", list(DERIV))
def test_backward_within_a_few_ulps_of_float64(levels, level, name):
    x = _inputs()
    g = np.random.default_rng(1).standard_normal(x.size).astype(F32)
    fin = np.abs(x) < 1e30            # (inf * 0 and friends: NaN both ways)
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)
        for tag, gg in (("_bwd1", np.ones_like(x)), ("_bwdg", g)):
            got = levels[level][name + tag].astype(np.float64)
            want = gg * DERIV[name](x64)
            scale = np.abs(gg) * SCALE[name](x64)
            # 8 half-ULPs of the terms, or a subnormal's worth
            err = np.abs(got - want)[fin]
            tol = np.maximum(8 * ULP * scale[fin], 1e-44)
            bad = err > tol
            assert not bad.any(), (name, tag, x[fin][bad][:5], got[fin][bad][:5],
                                   want[fin][bad][:5])
        want_nan = np.isnan(DERIV[name](x64))
    np.testing.assert_array_equal(np.isnan(levels[level][name + "_bwd1"]), want_nan)


def test_every_level_gives_the_same_bits(levels):
    # the lane kernels are compiled without FMA contraction (layer norm's
    # helpers are not: their sums may differ in the last bits)
    for key in levels["portable"]:
        if key == "level" or key.startswith("ln_"):
            continue
        for level in ("avx2", "default"):
            np.testing.assert_array_equal(levels[level][key].view(np.int32),
                                          levels["portable"][key].view(np.int32),
                                          err_msg=f"{key} at {level}")


@pytest.mark.parametrize("name", list(FWD))
def test_strided_equals_contiguous_bitwise(name):
    x = _inputs()[-40_000:]
    g = np.random.default_rng(2).standard_normal(x.size).astype(F32)
    both = np.stack([x, -x], axis=1)
    with np.errstate(all="ignore"):
        contiguous = FWD[name](cygrad.tensor(x)).numpy()
        strided = FWD[name](cygrad.tensor(both)[:, 0]).numpy()
        np.testing.assert_array_equal(strided.view(np.int32), contiguous.view(np.int32))
        if name in DERIV:
            gs = np.stack([g, g], axis=1)
            t = cygrad.tensor(both, requires_grad=True)
            FWD[name](t[:, 0]).backward(cygrad.tensor(gs)[:, 0])
            np.testing.assert_array_equal(t.grad.numpy()[:, 0].view(np.int32),
                                          _grad(name, x, g).view(np.int32))


def test_one_element_equals_the_loop():
    # 0-d tensors take the element function directly
    x = np.array([-12.5, -3.3, -0.75, -1e-5, 0.3, 2.2, 40.0], F32)
    for name, f in FWD.items():
        loop = f(cygrad.tensor(x)).numpy()
        for i, v in enumerate(x):
            one = f(cygrad.tensor(v)).numpy()
            assert one.view(np.int32) == loop[i:i + 1].view(np.int32)[0], (name, v)


def test_float32_matches_torch_forward_and_grad():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x0 = (rng.standard_normal((64, 256)) * 4).astype(F32)
    g0 = rng.standard_normal((64, 256)).astype(F32)
    tf = {"exp": torch.exp, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
          "silu": torch.nn.functional.silu, "gelu": torch.nn.functional.gelu}
    for name, f in FWD.items():
        xc = cygrad.tensor(x0, requires_grad=True)
        xt = torch.tensor(x0, requires_grad=True)
        yc, yt = f(xc), tf[name](xt)
        np.testing.assert_allclose(yc.detach().numpy(), yt.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
        yc.backward(cygrad.tensor(g0))
        yt.backward(torch.tensor(g0))
        np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)


@pytest.mark.parametrize("level", list(LEVELS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_rows_at_every_level(levels, level, dtype):
    tol = 2e-5 if dtype == np.float32 else 1e-10
    name = np.dtype(dtype).name
    for i, arrays in enumerate(_ln_inputs(dtype)):
        want = _layer_norm_ref(*arrays)
        for k, v in want.items():
            got = levels[level][f"ln_{name}_{i}_{k}"]
            assert got.dtype == dtype
            np.testing.assert_allclose(got, v, rtol=tol, atol=tol,
                                       err_msg=f"{level} {name} row {i} {k}")
