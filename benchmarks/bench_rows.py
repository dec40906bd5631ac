"""Reductions along one axis of medium tensors against torch's: sums, means
and maxima over the last dim of short rows (10 elements, where a call per
row costs more than the row) and of long ones (1,000), sums over the first
dim (a batch), the full vector norm.  100,000 float32 elements each, no
autograd; ``test_agree`` checks the values (float32 sums to rounding).

    python -m benchmarks.bench_rows        # interleaved rounds, median ratios
"""

import numpy as np
import pytest

from benchmarks import SIDES, interleaved, need, pick, run, sides_agree, tag

ROWS = {"short": pick((10000, 10), (40, 10)), "long": pick((100, 1000), (4, 40))}


def _cases(T):
    x = {k: T.tensor(np.random.default_rng(0).standard_normal(s).astype(np.float32))
         for k, s in ROWS.items()}
    return {
        "sum(-1) short rows": lambda: x["short"].sum(-1),
        "sum(-1) long rows": lambda: x["long"].sum(-1),
        "sum(0) short rows": lambda: x["short"].sum(0),
        "mean(0) long rows": lambda: x["long"].mean(0),
        "max(-1) short rows": lambda: x["short"].max(-1).values,
        "amax(-1) short rows": lambda: x["short"].amax(-1),
        "amax(-1) long rows": lambda: x["long"].amax(-1),
        "norm": lambda: x["long"].norm(),
    }


NAMES = ("sum(-1) short rows", "sum(-1) long rows", "sum(0) short rows",
         "mean(0) long rows", "max(-1) short rows", "amax(-1) short rows",
         "amax(-1) long rows", "norm")


def case(lib, name):
    return _cases(need(lib))[name]


@pytest.mark.parametrize("lib", SIDES)
@pytest.mark.parametrize("name", NAMES)
def test_rows(benchmark, name, lib):
    tag(benchmark, f"rows-{name}", lib, target="cygrad <= 1.0x torch")
    run(benchmark, case(lib, name))


@pytest.mark.parametrize("name", NAMES)
def test_agree(name):
    sides_agree(case, name, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    import benchmarks.conftest as _conf  # the same thread policy as the suite

    _conf._apply_threads(__import__("benchmarks").requested_threads())
    interleaved(NAMES, case)
