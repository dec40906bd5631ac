"""Train two small models end to end: ``python -m cygrad.demo``.

1. The autograd tutorial's linear regression (``y = 2x + 1`` plus noise),
   with plain autograd and ``optim.SGD``.
2. An MLP classifier trained with ``optim.Adam`` on two interleaved spirals
   it generates, with one progress line per epoch.
3. PNG plots (fitted line, loss curves, decision boundary) in ``--out`` when
   matplotlib is installed.

Nothing is downloaded.  Runs in a few seconds.
"""

import argparse
import math
import os
import sys
import time

import numpy as np

import cygrad
from cygrad import nn, optim

__all__ = ["fit_line", "main", "make_spirals", "train_classifier"]


def make_spirals(n, noise=0.04, turns=1.5, seed=0):
    """Two interleaved spirals in the plane.

    Returns
    -------
    X : ndarray (n, 2) float64, roughly in [-1, 1]
    y : ndarray (n,) int64, the arm (0 or 1) of each point
    """
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    r = rng.uniform(0.1, 1.0, n)
    theta = 2 * math.pi * turns * r + math.pi * y
    X = np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1)
    X += noise * rng.standard_normal((n, 2))
    return X, y.astype(np.int64)


def fit_line(epochs=200, lr=0.01, seed=42, dtype=cygrad.float32, log=print):
    """The tutorial's linear regression, with ``optim.SGD`` doing the update.

    Returns a dict with the fitted ``w``, ``b``, the loss per epoch, the
    least-squares solution, and the data.
    """
    cygrad.manual_seed(seed)
    X = cygrad.rand(100, 1, dtype=dtype) * 10
    y = 2 * X + 1 + cygrad.randn(100, 1, dtype=dtype)
    w = cygrad.tensor([0.0], dtype=dtype, requires_grad=True)
    b = cygrad.tensor([0.0], dtype=dtype, requires_grad=True)
    opt = optim.SGD([w, b], lr=lr)
    losses = []
    for epoch in range(epochs):
        y_pred = w * X + b
        loss = ((y_pred - y) ** 2).mean()
        losses.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if epoch % 20 == 0:
            log(
                f"  epoch {epoch:3d}: w = {w.item():.4f}, b = {b.item():.4f}, "
                f"loss = {loss.item():.4f}"
            )
    xs = X.numpy().astype(np.float64).ravel()
    ys = y.numpy().astype(np.float64).ravel()
    w_ls, b_ls = np.polyfit(xs, ys, 1)
    return {
        "w": w.item(),
        "b": b.item(),
        "losses": losses,
        "w_ls": float(w_ls),
        "b_ls": float(b_ls),
        "X": xs,
        "y": ys,
    }


def _accuracy(model, X, y):
    with cygrad.no_grad():
        pred = model(X).numpy().argmax(axis=1)
    return float((pred == y).mean())


def train_classifier(
    epochs=40,
    seed=0,
    dtype=cygrad.float32,
    batch_size=64,
    lr=0.01,
    hidden=64,
    n=1200,
    log=print,
):
    """An MLP (2-hidden-hidden-2, ReLU) trained with Adam on two spirals.

    Returns a dict with the model, the per-epoch loss and accuracy, the test
    accuracy, and the data.
    """
    cygrad.manual_seed(seed)
    X_all, y_all = make_spirals(n, seed=seed)
    n_train = n * 3 // 4
    X_train, y_train = X_all[:n_train].astype(dtype), y_all[:n_train]
    X_test, y_test = X_all[n_train:].astype(dtype), y_all[n_train:]
    model = nn.Sequential(
        nn.Linear(2, hidden, dtype=dtype),
        nn.ReLU(),
        nn.Linear(hidden, hidden, dtype=dtype),
        nn.ReLU(),
        nn.Linear(hidden, 2, dtype=dtype),
    )
    opt = optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)
    xt_test = cygrad.from_numpy(X_test)
    xt_train = cygrad.from_numpy(X_train)
    losses, accs = [], []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        order = rng.permutation(n_train)
        total, steps = 0.0, 0
        for i in range(0, n_train, batch_size):
            idx = order[i : i + batch_size]
            xb = cygrad.from_numpy(np.ascontiguousarray(X_train[idx]))
            yb = cygrad.from_numpy(np.ascontiguousarray(y_train[idx]))
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            steps += 1
        rate = steps / (time.perf_counter() - start)
        losses.append(total / n_train)
        accs.append(_accuracy(model, xt_train, y_train))
        log(
            f"  epoch {epoch:3d}/{epochs}  loss {losses[-1]:.4f}  "
            f"accuracy {100 * accs[-1]:5.1f}%  {rate:7.0f} steps/s"
        )
    test_acc = _accuracy(model, xt_test, y_test)
    return {
        "model": model,
        "losses": losses,
        "accuracies": accs,
        "test_accuracy": test_acc,
        "train_accuracy": accs[-1] if accs else 0.0,
        "X": X_all,
        "y": y_all,
    }


def _plots(out, line, clf, dtype):
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out, exist_ok=True)
    paths = []

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.scatter(line["X"], line["y"], s=12, label="data")
    xs = np.linspace(0, 10, 100)
    ax.plot(
        xs,
        line["w"] * xs + line["b"],
        "r-",
        lw=2,
        label=f"fit: y = {line['w']:.3f} x + {line['b']:.3f}",
    )
    ax.plot(xs, line["w_ls"] * xs + line["b_ls"], "k--", lw=1, label="least squares")
    ax.set(title="Linear regression with cygrad autograd", xlabel="x", ylabel="y")
    ax.legend()
    paths.append(os.path.join(out, "linear_regression.png"))
    fig.savefig(paths[-1], dpi=100, bbox_inches="tight")
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    axes[0].plot(line["losses"])
    axes[0].set(
        title="Linear regression (SGD)", xlabel="epoch", ylabel="MSE", yscale="log"
    )
    axes[1].plot(range(1, len(clf["losses"]) + 1), clf["losses"], label="loss")
    axes[1].set(
        title="Spiral classifier (Adam)",
        xlabel="epoch",
        ylabel="cross-entropy",
        yscale="log",
    )
    acc_ax = axes[1].twinx()
    acc_ax.plot(
        range(1, len(clf["accuracies"]) + 1),
        [100 * a for a in clf["accuracies"]],
        "C1",
        label="train accuracy",
    )
    acc_ax.set(ylabel="accuracy (%)", ylim=(40, 101))
    axes[1].legend(handles=axes[1].lines + acc_ax.lines, loc="center right")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    paths.append(os.path.join(out, "loss_curves.png"))
    fig.savefig(paths[-1], dpi=100, bbox_inches="tight")
    plt.close(fig)

    X, y = clf["X"], clf["y"]
    gx, gy = np.meshgrid(np.linspace(-1.2, 1.2, 200), np.linspace(-1.2, 1.2, 200))
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1).astype(dtype)
    with cygrad.no_grad():
        logits = clf["model"](cygrad.from_numpy(grid)).numpy()
    zz = logits.argmax(axis=1).reshape(gx.shape)
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.contourf(
        gx, gy, zz, levels=[-0.5, 0.5, 1.5], colors=["#9ecae1", "#fdae6b"], alpha=0.6
    )
    ax.scatter(X[:, 0], X[:, 1], c=y, cmap="coolwarm", s=8, edgecolors="none")
    ax.set(
        title=f"Decision boundary (test accuracy {100 * clf['test_accuracy']:.1f}%)",
        aspect="equal",
    )
    paths.append(os.path.join(out, "decision_boundary.png"))
    fig.savefig(paths[-1], dpi=100, bbox_inches="tight")
    plt.close(fig)
    return paths


MAX_SEED = 2**31 - 1


def _check_args(parser, args):
    """Refuse a bad option before anything trains (argparse's usage error,
    exit status 2), rather than fail when the plots are written."""
    if args.epochs < 1:
        parser.error(f"argument --epochs: must be at least 1, got {args.epochs}")
    if args.line_epochs < 1:
        parser.error(
            f"argument --line-epochs: must be at least 1, got {args.line_epochs}"
        )
    if not 0 <= args.seed <= MAX_SEED:
        parser.error(
            f"argument --seed: must be between 0 and {MAX_SEED}, got {args.seed}"
        )
    if args.no_plots:
        return
    out = args.out
    if os.path.exists(out):
        if not os.path.isdir(out):
            parser.error(f"argument --out: {out!r} exists and is not a folder")
        target = out
    else:
        target = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(target):
            parser.error(
                f"argument --out: {out!r} is a folder the demo would create, "
                f"but its parent {target!r} does not exist"
            )
    if not os.access(target, os.W_OK | os.X_OK):
        parser.error(f"argument --out: {target!r} is not writable")


def main(argv=None):
    """Run the demo; return a dict of results (used by the tests)."""
    parser = argparse.ArgumentParser(
        prog="python -m cygrad.demo",
        description="Train a linear regression and a spiral classifier with cygrad.",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=40,
        help="epochs of the spiral classifier (default 40)",
    )
    parser.add_argument(
        "--line-epochs",
        type=int,
        default=200,
        help="epochs of the linear regression (default 200, the tutorial's)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        default="float32",
        help="floating dtype of data and parameters (default float32)",
    )
    parser.add_argument(
        "--out",
        default=os.path.join(".", "cygrad-demo"),
        help="folder for the PNG plots (default ./cygrad-demo/)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the plots")
    args = parser.parse_args(argv)
    _check_args(parser, args)
    dtype = np.dtype(args.dtype)
    t0 = time.perf_counter()

    print(f"cygrad demo (dtype {dtype}, seed {args.seed})")
    print("\n[1/3] Linear regression y = 2x + 1 + noise: autograd + optim.SGD, lr 0.01")
    line = fit_line(epochs=args.line_epochs, seed=42 + args.seed, dtype=dtype)
    print(
        f"  fitted: w = {line['w']:.4f}, b = {line['b']:.4f}   "
        f"(least squares: w = {line['w_ls']:.4f}, b = {line['b_ls']:.4f}; "
        "b converges slowly at lr 0.01)"
    )

    print(
        "\n[2/3] MLP 2-64-64-2 (ReLU) on two interleaved spirals: "
        "CrossEntropyLoss + optim.Adam"
    )
    clf = train_classifier(epochs=args.epochs, seed=args.seed, dtype=dtype)
    print(
        f"  final accuracy: train {100 * clf['train_accuracy']:.1f}%, "
        f"test {100 * clf['test_accuracy']:.1f}%"
    )

    print("\n[3/3] Plots")
    paths = None if args.no_plots else _plots(args.out, line, clf, dtype)
    if args.no_plots:
        print("  skipped (--no-plots)")
    elif paths is None:
        print("  matplotlib is not installed: no plots (pip install matplotlib)")
    else:
        print(f"  wrote {len(paths)} PNG files to {os.path.abspath(args.out)}:")
        for p in paths:
            print(f"    {os.path.basename(p)}")
    print(f"\ndone in {time.perf_counter() - t0:.1f} s")
    return {"line": line, "classifier": clf, "plots": paths or []}


if __name__ == "__main__":
    main()
    sys.exit(0)
