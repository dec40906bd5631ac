"""Exercise 3: polynomial regression with autograd.

Fits ``y = a0 + a1 x + a2 x^2 + a3 x^3`` to noisy samples of a cubic, using
the powers of ``x`` as features and ``optim.Adam``.  ``--plot`` shows the fit.

    python examples/polynomial_regression.py [--plot]
"""

import argparse

import numpy as np

import cygrad
from cygrad import optim

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--plot", action="store_true")
args = parser.parse_args()

cygrad.manual_seed(0)
true = [1.0, -2.0, 0.5, 1.5]
x = cygrad.linspace(-1.5, 1.5, 120).reshape(-1, 1)
y = true[0] + true[1] * x + true[2] * x**2 + true[3] * x**3
y = y + 0.2 * cygrad.randn(120, 1)

features = cygrad.cat([x**k for k in range(4)], dim=1)  # (120, 4)
coef = cygrad.zeros(4, 1, requires_grad=True)
opt = optim.Adam([coef], lr=0.05)

for step in range(1500):
    loss = ((features @ coef - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 300 == 0:
        print(f"step {step:4d}: loss = {loss.item():.5f}")

fitted = coef.detach().numpy().ravel()
ls = np.linalg.lstsq(
    features.numpy().astype(np.float64), y.numpy().astype(np.float64), rcond=None
)[0].ravel()
print("fitted coefficients:       ", np.round(fitted, 3))
print("least-squares coefficients:", np.round(ls, 3))
print("true coefficients:         ", true)

if args.plot:
    import matplotlib.pyplot as plt

    xs = x.numpy().ravel()
    plt.scatter(xs, y.numpy().ravel(), s=10, label="data")
    plt.plot(xs, (features @ coef).detach().numpy().ravel(), "r-", label="fit")
    plt.legend()
    plt.title("Polynomial regression with cygrad")
    plt.show()
