"""Exercise 2: linear regression with several input features.

``y = X @ w_true + b_true + noise`` with 3 features; the model is a weight
vector and a bias trained by autograd and ``optim.SGD``.  The result is
compared with NumPy's least-squares solution.

    python examples/multi_feature_regression.py
"""

import numpy as np

import cygrad
from cygrad import optim

cygrad.manual_seed(0)
w_true = cygrad.tensor([[2.0], [-3.0], [0.5]])
b_true = 1.0
X = cygrad.rand(200, 3) * 4 - 2
y = X @ w_true + b_true + 0.1 * cygrad.randn(200, 1)

w = cygrad.zeros(3, 1, requires_grad=True)
b = cygrad.zeros(1, requires_grad=True)
opt = optim.SGD([w, b], lr=0.1)

for epoch in range(300):
    loss = ((X @ w + b - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if epoch % 50 == 0:
        print(f"epoch {epoch:3d}: loss = {loss.item():.5f}")

A = np.hstack([X.numpy(), np.ones((200, 1), np.float32)]).astype(np.float64)
coef = np.linalg.lstsq(A, y.numpy().astype(np.float64), rcond=None)[0].ravel()
print("fitted w =", np.round(w.detach().numpy().ravel(), 4), f"b = {b.item():.4f}")
print("least squares w =", np.round(coef[:3], 4), f"b = {coef[3]:.4f}")
print("true w = [ 2.  -3.   0.5] b = 1.0")
err = max(np.abs(w.detach().numpy().ravel() - coef[:3]).max(), abs(b.item() - coef[3]))
print(f"max difference from least squares: {err:.2e}")
