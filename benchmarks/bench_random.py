"""torch's random stream: the samplers against torch's own (cygrad's rng.pyx).

Each case seeds both libraries alike and draws the same tensor, so the two
sides produce the same numbers (``test_agree`` checks it bit for bit): the
ratio is the cost of the same work.  ``rand``/``randn``/``randint``/``randperm``
and a dropout mask at 131,072 elements (a (32, 64, 64) activation), and the
small draws of sampling loops (``randn(3)``, ``multinomial`` of one sample
from 65 categories), where per-call overhead counts.

    python -m benchmarks.bench_random      # interleaved rounds, median ratios
"""

import numpy as np
import pytest

from benchmarks import need, pick, run, tag, to_numpy

N = pick(131072, 64)
SHAPE = pick((32, 64, 64), (4, 4, 4))
SIDES = ("cygrad", "torch")     # NumPy has no torch stream to compare


def _cases(T):
    probs = T.softmax(T.linspace(-2.0, 2.0, 65), 0)
    x = T.ones(SHAPE)
    return {
        "rand": lambda: T.rand(N),
        "randn": lambda: T.randn(N),
        "randn-f64": lambda: T.randn(N, dtype=T.float64),
        "randint": lambda: T.randint(0, 1000, (N,)),
        "randperm": lambda: T.randperm(N),
        "dropout": lambda: T.nn.functional.dropout(x, 0.1, True),
        "randn-3": lambda: T.randn(3),
        "multinomial-1-of-65": lambda: T.multinomial(probs, 1),
    }


NAMES = ("rand", "randn", "randn-f64", "randint", "randperm", "dropout", "randn-3",
         "multinomial-1-of-65")


def case(lib, name):
    T = need(lib)
    T.manual_seed(0)
    return _cases(T)[name]


@pytest.mark.parametrize("lib", SIDES)
@pytest.mark.parametrize("name", NAMES)
def test_sampler(benchmark, name, lib):
    step = case(lib, name)
    tag(benchmark, f"random-{name}", lib, shape=[N], target="cygrad <= 1.0x torch")
    run(benchmark, step)


@pytest.mark.parametrize("name", NAMES)
def test_agree(name):
    got = {}
    for lib in SIDES:
        try:
            got[lib] = to_numpy(case(lib, name)())
        except pytest.skip.Exception:
            continue
    if len(got) == 2:
        np.testing.assert_array_equal(got["cygrad"], got["torch"], err_msg=name)


def interleaved(names, make, rounds=9):
    """Print, per case of ``names``, the median time of ``make(lib, name)()``
    for cygrad and torch, run in alternation round after round, and the
    median of the per-round ratios (process time)."""
    import time

    print(f"{'case':24s} {'cygrad':>10s} {'torch':>10s} {'ratio':>7s}")
    for name in names:
        steps = {lib: make(lib, name) for lib in SIDES}
        for fn in steps.values():
            fn()
        t0 = time.process_time()
        steps["torch"]()
        reps = max(1, int(0.05 / max(time.process_time() - t0, 1e-6)))
        times = {lib: [] for lib in SIDES}
        for _ in range(rounds):
            for lib in SIDES:
                t0 = time.process_time()
                for _ in range(reps):
                    steps[lib]()
                times[lib].append((time.process_time() - t0) / reps)
        ratios = [a / b for a, b in zip(times["cygrad"], times["torch"], strict=True)]
        print(f"{name:24s} {np.median(times['cygrad']) * 1e6:8.1f}us "
              f"{np.median(times['torch']) * 1e6:8.1f}us {np.median(ratios):6.2f}x")


if __name__ == "__main__":
    import benchmarks.conftest as _conf  # the same thread policy as the suite

    _conf._apply_threads(__import__("benchmarks").requested_threads())
    interleaved(NAMES, case)
