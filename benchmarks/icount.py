"""Instructions per step of the core benchmark loops, for callgrind.

Timings on a shared 2-core machine move by up to 2x; instruction counts do
not.  Run one case twice under valgrind, with N and M steps, and divide the
difference of the totals by M - N (imports and warm-up cancel out)::

    for n in 20 220; do
      PYTHONHASHSEED=0 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
      valgrind --tool=callgrind --callgrind-out-file=cg.$n \\
        python -m benchmarks.icount small $n 2>&1 | grep Collected
    done

``PYTHONHASHSEED`` is fixed because string hashes decide collisions in
CPython's type-attribute cache, which moved the per-step count of the
``small`` case by up to 12% between runs; OpenMP threads waiting on a
spin loop count too, hence one thread.  Cases: ``chain`` (100 scalar
``tanh(y * w + b)`` steps, forward and backward), ``small`` (bench_core's
16-element step), ``linreg`` (one epoch of the tutorial's linear
regression), ``mlp`` (a 2-64-64-2 MLP step with cross-entropy and Adam, batch
128), ``adam`` (one Adam step over 12 64x64 and 12 64-element tensors).
"""

import sys

import numpy as np

import cygrad as T


def make(case):
    rng = np.random.default_rng(1)
    f32 = np.float32
    if case == "chain":
        x = T.tensor(0.5, requires_grad=True)
        w = T.tensor(0.9, requires_grad=True)
        b = T.tensor(0.1, requires_grad=True)

        def step():
            w.grad = None
            b.grad = None
            y = x
            for _ in range(100):
                y = T.tanh(y * w + b)
            y.backward()
    elif case == "small":
        a = T.tensor(rng.standard_normal(16).astype(f32), requires_grad=True)
        c = T.tensor(rng.standard_normal(16).astype(f32), requires_grad=True)

        def step():
            out = ((a * c + a).relu() * 2.0).sum()
            out.backward()
            a.grad = None
            c.grad = None
    elif case == "linreg":
        X = T.rand(100, 1) * 10
        y = 2 * X + 1
        w = T.tensor([0.0], requires_grad=True)
        b = T.tensor([0.0], requires_grad=True)

        def step():
            nonlocal w, b
            loss = ((w * X + b - y) ** 2).mean()
            loss.backward()
            with T.no_grad():
                w -= 0.01 * w.grad
                b -= 0.01 * b.grad
            w.grad.zero_()
            b.grad.zero_()
    elif case == "mlp":
        nn = T.nn
        model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64),
                              nn.ReLU(), nn.Linear(64, 2))
        opt = T.optim.Adam(model.parameters(), lr=1e-3)
        X = T.randn(128, 2)
        labels = T.randint(0, 2, (128,))
        loss_fn = nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            loss_fn(model(X), labels).backward()
            opt.step()
    elif case == "adam":
        ps = [T.nn.Parameter(T.randn(64, 64)) for _ in range(12)]
        ps += [T.nn.Parameter(T.randn(64)) for _ in range(12)]
        for p in ps:
            p.grad = T.randn(*p.shape)
        opt = T.optim.Adam(ps, lr=1e-3)
        step = opt.step
    else:
        raise SystemExit(f"unknown case {case!r}: chain, small, linreg, mlp, adam")
    return step


def main(argv):
    case, n = argv[0], int(argv[1])
    T.set_num_threads(1)
    step = make(case)
    for _ in range(3):
        step()
    for _ in range(n):
        step()


if __name__ == "__main__":
    main(sys.argv[1:])
