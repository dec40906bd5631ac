"""x ** k for a Python number k on 2,000 elements (issue 17 item 7).

torch computes the exponents 0, 1, 2, 3, -1, -2, 0.5 and -0.5 by their own
formulas (x * x * x, sqrt, 1 / x, ...) and every other exponent by pow;
cygrad takes the same special kernels (``optable.POWERS``), so the special
cases must cost no more than torch's (the target); a general exponent (2.5,
4, -3, 1.7) runs the ``pow_scalar`` row (cg_pow.h's vectorized pow; torch
runs SLEEF's).  One group per exponent and dtype: cygrad, NumPy's ``x ** k``
and torch, forward only (the op's own time at this size is the per-call
overhead plus the kernel); the general exponents also at 10^6 elements,
where the kernel alone counts.  ``test_agree`` checks the three agree.
"""

import numpy as np
import pytest

from benchmarks import LIBS, need, pick, run, tag, to_numpy

N = pick(2000, 16)
BIG = pick(1_000_000, 64)
EXPONENTS = (3, 2, 0.5, -1, -2, -0.5, 0, 1, 2.5, 4, -3, 1.7)
GENERAL = (2.5, 4, -3, 1.7)
DTYPES = ("float32", "float64")


def _data(dtype, n=N):
    return np.random.default_rng(0).uniform(0.1, 2.0, n).astype(dtype)


def case(lib, k, dtype, n=N):
    x = _data(dtype, n)
    if lib == "numpy":
        return lambda: x ** k
    T = need(lib)
    t = T.tensor(x)
    return lambda: t ** k


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", EXPONENTS)
def test_scalar_pow(benchmark, k, dtype, lib):
    step = case(lib, k, dtype)
    tag(benchmark, f"pow-{k}-{dtype}-{N}", lib, shape=[N],
        target="cygrad <= 1.0x torch")
    run(benchmark, step)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", GENERAL)
def test_scalar_pow_large(benchmark, k, dtype, lib):
    step = case(lib, k, dtype, BIG)
    tag(benchmark, f"pow-{k}-{dtype}-{BIG}", lib, shape=[BIG],
        target="cygrad <= 1.0x torch")
    run(benchmark, step)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", EXPONENTS)
def test_agree(k, dtype):
    want = to_numpy(case("numpy", k, dtype)())
    for lib in ("cygrad", "torch"):
        try:
            got = to_numpy(case(lib, k, dtype)())
        except pytest.skip.Exception:
            continue
        np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == "float32"
                                   else 1e-14, err_msg=lib)
