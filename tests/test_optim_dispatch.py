"""The optimizer kernels' SIMD copies (cg_optim.h): every level this CPU runs
gives the same bits, the environment variables pick the level, and the old
whole-module ``*_avx2`` builds are gone."""

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from optim_torch import cygrad_params, problem, run_cygrad
from test_optim_adaptive import GRIDS, combos

from cygrad import optim
from cygrad._kernels import cpu
from cygrad._kernels import optim as k
from cygrad._kernels import optim2 as k2
from cygrad.optim import _kernels

LOADED = (k.simd_level(), k2.simd_level())
LEVELS = list(range(LOADED[0] + 1))  # the copies this CPU (and env) allows
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def restore_level():
    yield
    k.set_simd_level(LOADED[0])
    k2.set_simd_level(LOADED[1])


def test_one_module_per_kernel_file_and_no_avx2_copies():
    assert _kernels.k is k and _kernels.k2 is k2
    for name in ("optim_avx2", "optim2_avx2"):
        assert importlib.util.find_spec(f"cygrad._kernels.{name}") is None


def test_modules_run_the_level_the_cpu_module_reports():
    # both read the CPU and CYGRAD_SIMD / CYGRAD_NO_SIMD when they load
    if os.environ.get("CYGRAD_NO_AVX2", "0") in ("", "0"):
        assert LOADED == (cpu.simd_level(), cpu.simd_level())
    else:
        assert LOADED == (0, 0)


def test_set_simd_level_never_exceeds_what_was_allowed_at_load(restore_level):
    assert k.set_simd_level(5) == LOADED[0]
    assert k.set_simd_level(-3) == 0 and k.simd_level() == 0
    assert k2.set_simd_level(0) == 0 and k2.simd_level() == 0
    assert k.set_simd_level(LOADED[0]) == LOADED[0]


def _trajectory(name, kw, dtype, level):
    k.set_simd_level(level)
    k2.set_simd_level(level)
    # odd lengths: every vector loop's remainder runs too
    p0, mats = problem(dtype, shapes=[(1037,), (6,), (40, 3), (2, 5, 7)])
    ps = cygrad_params(p0)
    return run_cygrad(getattr(optim, name)(ps, **kw), ps, mats, 25, skip=(1,))


def _grid(name):
    # the defaults-most and the options-most combinations, and one between
    kws = list(combos(name))
    return [kws[0], kws[len(kws) // 2], kws[-1]]


@pytest.mark.skipif(len(LEVELS) < 2, reason="this CPU (or env) runs one SIMD level")
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", list(GRIDS))
def test_every_simd_level_gives_the_same_bits(restore_level, name, dtype):
    for kw in _grid(name):
        runs = [_trajectory(name, kw, dtype, level) for level in LEVELS]
        for level, run in zip(LEVELS[1:], runs[1:]):
            for step, (a, b) in enumerate(zip(runs[0], run)):
                for x, y in zip(a, b):
                    np.testing.assert_array_equal(
                        x, y, err_msg=f"{name}({kw}) level {level} vs 0, step {step}")


@pytest.mark.skipif(len(LEVELS) < 2, reason="this CPU (or env) runs one SIMD level")
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_clip_grad_kernels_give_the_same_bits_at_every_level(restore_level, dtype):
    x = np.random.default_rng(1).standard_normal(1037).astype(dtype)
    got = []
    for level in LEVELS:
        k.set_simd_level(level)
        y = x.copy()
        k.scale(y, 0.3)
        z = x.copy()
        k.clamp(z, -0.5, 0.25)
        got.append((k.vector_norm(x, 2.0), y, z))
    for norm, y, z in got[1:]:
        assert norm == got[0][0]
        np.testing.assert_array_equal(y, got[0][1])
        np.testing.assert_array_equal(z, got[0][2])


def _level_in_subprocess(**env):
    code = ("from cygrad.optim import _kernels as m;"
            "print(m.k.simd_level(), m.k2.simd_level())")
    full = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in ("CYGRAD_SIMD", "CYGRAD_NO_SIMD", "CYGRAD_NO_AVX2"):
        full.pop(name, None)
    full.update(env)
    out = subprocess.run([sys.executable, "-c", code], env=full, check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    return tuple(int(v) for v in out.split())


def test_environment_variables_pick_the_level():
    widest = _level_in_subprocess()
    assert widest[0] == widest[1] and widest[0] >= LOADED[0]
    assert _level_in_subprocess(CYGRAD_NO_SIMD="1") == (0, 0)
    assert _level_in_subprocess(CYGRAD_NO_AVX2="1") == (0, 0)
    capped = min(widest[0], 1)
    assert _level_in_subprocess(CYGRAD_SIMD="avx2") == (capped, capped)
