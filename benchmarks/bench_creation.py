"""Creation functions against torch's: the per-call cost of the small
tensors a training loop makes (``zeros`` for a state, ``tensor`` from a
list, ``arange`` for positions, ``full``, ``eye``), and the ranges at
100,000 elements, where the values' arithmetic counts (``arange`` and
``linspace`` write torch's bits; ``test_agree`` checks every case value
for value).

    python -m benchmarks.bench_creation    # interleaved rounds, median ratios
"""

import pytest

from benchmarks import SIDES, interleaved, need, pick, run, sides_agree, tag

N = pick(100000, 64)
DATA = [float(i) / 7 for i in range(pick(1000, 16))]


def _cases(T):
    return {
        "zeros-3": lambda: T.zeros(3),
        "zeros-2x3": lambda: T.zeros(2, 3),
        "ones-5-float64": lambda: T.ones(5, dtype=T.float64),
        "full-2x2": lambda: T.full((2, 2), 3.0),
        "eye-3": lambda: T.eye(3),
        "tensor-list-3": lambda: T.tensor([1.0, 2.0, 3.0]),
        "tensor-list-1000": lambda: T.tensor(DATA),
        "arange-10": lambda: T.arange(10),
        "arange-float-100k": lambda: T.arange(float(N)),
        "linspace-5": lambda: T.linspace(0, 1, 5),
        "linspace-100k": lambda: T.linspace(-3.0, 7.0, N),
    }


NAMES = ("zeros-3", "zeros-2x3", "ones-5-float64", "full-2x2", "eye-3", "tensor-list-3",
         "tensor-list-1000", "arange-10", "arange-float-100k", "linspace-5",
         "linspace-100k")


def case(lib, name):
    return _cases(need(lib))[name]


@pytest.mark.parametrize("lib", SIDES)
@pytest.mark.parametrize("name", NAMES)
def test_create(benchmark, name, lib):
    tag(benchmark, f"create-{name}", lib, target="cygrad <= 1.0x torch")
    run(benchmark, case(lib, name))


@pytest.mark.parametrize("name", NAMES)
def test_agree(name):
    sides_agree(case, name)


if __name__ == "__main__":
    import benchmarks.conftest as _conf  # the same thread policy as the suite

    _conf._apply_threads(__import__("benchmarks").requested_threads())
    interleaved(NAMES, case)
