"""Exercise 5: SGD with momentum and Adam written by hand, next to ``cygrad.optim``.

Both hand-written update rules follow PyTorch's formulas.  Each runs for 50
steps on the Rosenbrock function from the same start, beside the library
optimizer; the trajectories agree to float rounding.

    python examples/optimizers_by_hand.py
"""

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

import cygrad
from cygrad import optim


def rosenbrock(p: cygrad.Tensor) -> cygrad.Tensor:
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x**2) ** 2


def sgd_momentum_by_hand(p: cygrad.Tensor, state: dict[str, Any], lr: float = 1e-3,
                         momentum: float = 0.9) -> None:
    """buf = g on the first step, then momentum * buf + g;  p -= lr * buf."""
    g = p.grad
    buf = state.get("buf")
    buf = g.clone() if buf is None else momentum * buf + g
    state["buf"] = buf
    p -= lr * buf


def adam_by_hand(p: cygrad.Tensor, state: dict[str, Any], lr: float = 1e-2,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
    """Bias-corrected first and second moments; eps after the corrected sqrt."""
    b1, b2 = betas
    g = p.grad
    t = state["t"] = state.get("t", 0) + 1
    m = state["m"] = b1 * state.get("m", 0 * g) + (1 - b1) * g
    v = state["v"] = b2 * state.get("v", 0 * g) + (1 - b2) * g * g
    bc1, bc2 = 1 - b1**t, 1 - b2**t
    p -= (lr / bc1) * m / (v.sqrt() / math.sqrt(bc2) + eps)


def run(update: Callable[[cygrad.Tensor, dict[str, Any]], None],
        make_optimizer: Callable[[list[cygrad.Tensor]], optim.Optimizer],
        steps: int = 50) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    start = [-1.5, 2.0]
    p_hand = cygrad.tensor(start, dtype=cygrad.float64, requires_grad=True)
    p_lib = cygrad.tensor(start, dtype=cygrad.float64, requires_grad=True)
    opt = make_optimizer([p_lib])
    state: dict[str, Any] = {}
    worst = 0.0
    for _ in range(steps):
        rosenbrock(p_hand).backward()
        with cygrad.no_grad():
            update(p_hand, state)
        p_hand.grad = None

        opt.zero_grad()
        rosenbrock(p_lib).backward()
        opt.step()
        diff = (p_hand.detach() - p_lib.detach()).abs().max().item()
        worst = max(worst, diff)
    return p_hand.detach().numpy(), p_lib.detach().numpy(), worst


Update = Callable[[cygrad.Tensor, dict[str, Any]], None]
MakeOptimizer = Callable[[list[cygrad.Tensor]], optim.Optimizer]
RACES: list[tuple[str, Update, MakeOptimizer]] = [
    (
        "SGD momentum=0.9",
        sgd_momentum_by_hand,
        lambda ps: optim.SGD(ps, lr=1e-3, momentum=0.9),
    ),
    ("Adam", adam_by_hand, lambda ps: optim.Adam(ps, lr=1e-2)),
]
for name, update, make in RACES:
    hand, lib, worst = run(update, make)
    print(
        f"{name:17s} by hand: {hand.round(6)}  cygrad.optim: {lib.round(6)}  "
        f"max difference over 50 steps: {worst:.1e}"
    )
