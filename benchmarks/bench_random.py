"""torch's random stream: the samplers against torch's own (cygrad's rng.pyx).

Each case seeds both libraries alike and draws the same tensor, so the two
sides produce the same numbers (``test_agree`` checks it bit for bit): the
ratio is the cost of the same work.  ``rand``/``randn``/``randint``/``randperm``
and a dropout mask at 131,072 elements (a (32, 64, 64) activation), and the
small draws of sampling loops (``randn(3)``, ``multinomial`` of one sample
from 65 categories), where per-call overhead counts.

    python -m benchmarks.bench_random      # interleaved rounds, median ratios
"""

import pytest

from benchmarks import SIDES, interleaved, need, pick, run, sides_agree, tag

N = pick(131072, 64)
SHAPE = pick((32, 64, 64), (4, 4, 4))


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
    sides_agree(case, name)


if __name__ == "__main__":
    import benchmarks.conftest as _conf  # the same thread policy as the suite

    _conf._apply_threads(__import__("benchmarks").requested_threads())
    interleaved(NAMES, case)
