"""Race every optimizer of cygrad.optim on the Rosenbrock function and a small MLP.

Each optimizer starts from the same point with a learning rate suited to it
(the usual defaults where they work), runs a fixed budget of steps, and the
table reports where it got and how long it took.  L-BFGS gets a closure
and far fewer steps, since each of its steps runs up to 20 iterations.  With
matplotlib installed the loss curves and the Rosenbrock paths are drawn to
``optimizers_rosenbrock.png`` and ``optimizers_mlp.png``.

    python examples/optimizers.py [--steps N] [--no-plots]
"""

import argparse
import math
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

import cygrad
from cygrad import nn, optim

# name -> (Rosenbrock options, MLP options)
# (final loss, distance to (1, 1), seconds, path, losses) and (final loss,
# seconds, losses)
RosenbrockRun = tuple[float, float, float, NDArray[np.float64], list[float]]
MLPRun = tuple[float, float, list[float]]
RACE: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "SGD": ({"lr": 1e-3, "momentum": 0.9}, {"lr": 0.1, "momentum": 0.9}),
    "Adam": ({"lr": 5e-2}, {"lr": 1e-2}),
    "AdamW": ({"lr": 5e-2}, {"lr": 1e-2}),
    "NAdam": ({"lr": 5e-2}, {"lr": 1e-2}),
    "RAdam": ({"lr": 3e-3}, {"lr": 1e-2}),  # its first steps are plain momentum
    "Adamax": ({"lr": 1e-1}, {"lr": 2e-2}),
    "RMSprop": ({"lr": 1e-2}, {"lr": 3e-3}),
    "Adagrad": ({"lr": 5e-1}, {"lr": 5e-2}),
    "Adadelta": ({"lr": 10.0}, {"lr": 1.0}),
    "Rprop": ({"lr": 1e-2}, {"lr": 1e-3}),
    "ASGD": ({"lr": 1e-3}, {"lr": 0.1}),
    "Adafactor": ({"lr": 5e-2}, {"lr": 1e-2}),
    "LBFGS": ({"line_search_fn": "strong_wolfe"}, {"line_search_fn": "strong_wolfe"}),
}
LBFGS_STEPS = 10
START = (-1.5, 2.0)


def rosenbrock(p: cygrad.Tensor) -> cygrad.Tensor:
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x * x) ** 2


def race_rosenbrock(name: str, options: dict[str, Any], steps: int) -> RosenbrockRun:
    p = cygrad.tensor(list(START), dtype=cygrad.float64, requires_grad=True)
    opt = getattr(optim, name)([p], **options)
    path = [p.detach().numpy().copy()]
    losses: list[float] = []

    def closure() -> cygrad.Tensor:
        opt.zero_grad()
        loss = rosenbrock(p)
        loss.backward()
        return loss

    start = time.perf_counter()
    for _ in range(LBFGS_STEPS if name == "LBFGS" else steps):
        loss = opt.step(closure) if name == "LBFGS" else (closure(), opt.step())[0]
        losses.append(loss.item())
        path.append(p.detach().numpy().copy())
    elapsed = time.perf_counter() - start
    final = rosenbrock(p).item()
    distance = float(np.hypot(*(p.detach().numpy() - 1.0)))
    return final, distance, elapsed, np.array(path), losses


def mlp_data(n: int = 256, seed: int = 0) -> tuple[cygrad.Tensor, cygrad.Tensor]:
    """y = sin(3 x0) * cos(2 x1) on random points of [-1, 1]^2."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    y = (np.sin(3 * x[:, :1]) * np.cos(2 * x[:, 1:])).astype(np.float32)
    return cygrad.from_numpy(x), cygrad.from_numpy(y)


def race_mlp(name: str, options: dict[str, Any], steps: int, x: cygrad.Tensor,
             y: cygrad.Tensor) -> MLPRun:
    cygrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                          nn.Linear(32, 1))
    opt = getattr(optim, name)(model.parameters(), **options)
    loss_fn = nn.MSELoss()
    losses: list[float] = []

    def closure() -> cygrad.Tensor:
        opt.zero_grad()
        loss: cygrad.Tensor = loss_fn(model(x), y)
        loss.backward()
        return loss

    start = time.perf_counter()
    for _ in range(LBFGS_STEPS if name == "LBFGS" else steps):
        loss = opt.step(closure) if name == "LBFGS" else (closure(), opt.step())[0]
        losses.append(loss.item())
    elapsed = time.perf_counter() - start
    with cygrad.no_grad():
        final = loss_fn(model(x), y).item()
    return final, elapsed, losses


def plot(results: dict[str, RosenbrockRun], mlp_results: dict[str, MLPRun]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plots)")
        return
    fig, (ax_path, ax_loss) = plt.subplots(1, 2, figsize=(12, 5))
    xs, ys = np.meshgrid(np.linspace(-2, 2, 200), np.linspace(-1, 3, 200))
    zs = (1 - xs) ** 2 + 100 * (ys - xs**2) ** 2
    ax_path.contour(xs, ys, np.log10(zs + 1e-3), levels=30, cmap="Greys", alpha=0.5)
    for name, (_, _, _, path, losses) in results.items():
        ax_path.plot(path[:, 0], path[:, 1], lw=1, label=name)
        ax_loss.semilogy(np.maximum(losses, 1e-16), lw=1, label=name)
    ax_path.plot([1], [1], "k*", ms=12)
    ax_path.set(title="Rosenbrock paths", xlim=(-2, 2), ylim=(-1, 3))
    ax_loss.set(title="Rosenbrock loss", xlabel="step")
    ax_loss.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig("optimizers_rosenbrock.png", dpi=120)
    fig, ax = plt.subplots(figsize=(7, 5))
    for name, (_, _, losses) in mlp_results.items():
        ax.semilogy(losses, lw=1, label=name)
    ax.set(title="MLP training loss", xlabel="step")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig("optimizers_mlp.png", dpi=120)
    print("wrote optimizers_rosenbrock.png and optimizers_mlp.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args()

    results: dict[str, RosenbrockRun] = {}
    mlp_results: dict[str, MLPRun] = {}
    x, y = mlp_data()
    print(f"{'optimizer':10s} {'rosenbrock loss':>16s} {'dist to (1,1)':>14s} "
          f"{'ms':>7s} {'mlp loss':>10s} {'ms':>7s}")
    for name, (ros_opts, mlp_opts) in RACE.items():
        results[name] = race_rosenbrock(name, ros_opts, args.steps)
        mlp_results[name] = race_mlp(name, mlp_opts, args.steps, x, y)
        final, dist, t_ros = results[name][:3]
        mlp_final, t_mlp = mlp_results[name][:2]
        print(f"{name:10s} {final:16.3e} {dist:14.3e} {t_ros * 1e3:7.1f} "
              f"{mlp_final:10.4f} {t_mlp * 1e3:7.1f}")
    best = min(results, key=lambda n: results[n][0])
    best_mlp = min(mlp_results, key=lambda n: mlp_results[n][0])
    print(f"closest to the Rosenbrock minimum: {best}; lowest MLP loss: {best_mlp}")
    assert all(math.isfinite(r[0]) for r in results.values())
    if not args.no_plots:
        plot(results, mlp_results)


if __name__ == "__main__":
    main()
