"""Exercise 1: a neural network for binary classification with autograd only.

No ``nn.Module``, no optimizer: the weights are plain tensors with
``requires_grad=True``, the loss is written out, and the update runs in place
under ``no_grad()``.  Two Gaussian blobs in the plane, a 2-16-1 tanh network,
full-batch gradient descent.

    python examples/binary_classification.py
"""

import numpy as np

import cygrad

cygrad.manual_seed(0)
rng = np.random.default_rng(0)

# data: two blobs, labels 0 and 1
n = 400
centers = np.array([[-1.0, -1.0], [1.0, 1.0]])
labels = rng.integers(0, 2, n)
points = centers[labels] + 0.7 * rng.standard_normal((n, 2))
X = cygrad.tensor(points, dtype=cygrad.float32)
y = cygrad.tensor(labels.reshape(-1, 1), dtype=cygrad.float32)

# parameters of a 2-16-1 network
W1 = (cygrad.randn(2, 16) * 0.5).requires_grad_()
b1 = cygrad.zeros(16, requires_grad=True)
W2 = (cygrad.randn(16, 1) * 0.5).requires_grad_()
b2 = cygrad.zeros(1, requires_grad=True)
params = [W1, b1, W2, b2]

lr = 0.5
for epoch in range(201):
    hidden = (X @ W1 + b1).tanh()
    p = (hidden @ W2 + b2).sigmoid()
    # binary cross-entropy, clamped away from log(0)
    eps = 1e-7
    loss = -(y * (p + eps).log() + (1 - y) * (1 - p + eps).log()).mean()

    loss.backward()
    with cygrad.no_grad():
        for t in params:
            t -= lr * t.grad
            t.grad.zero_()

    if epoch % 40 == 0:
        acc = ((p.detach() > 0.5).numpy() == (y.numpy() > 0.5)).mean()
        print(f"epoch {epoch:3d}: loss = {loss.item():.4f}, accuracy = {acc:.3f}")

with cygrad.no_grad():
    p = ((X @ W1 + b1).tanh() @ W2 + b2).sigmoid()
accuracy = float(((p.numpy() > 0.5) == (y.numpy() > 0.5)).mean())
print(f"final accuracy: {accuracy:.3f}")
