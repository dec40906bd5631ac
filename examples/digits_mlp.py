"""An MNIST-style digits classifier: ``nn`` + ``optim.Adam`` on scikit-learn's digits.

scikit-learn ships the 8x8 digits data set (1797 images), so nothing is
downloaded.  Without scikit-learn the script says so and exits cleanly.
A 64-128-10 MLP, cross-entropy, Adam, 20 epochs of mini-batches of 128.

    python examples/digits_mlp.py [--epochs N]
"""

import argparse
import sys
import time

import numpy as np

import cygrad
from cygrad import nn, optim

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=20)
args = parser.parse_args()

try:
    from sklearn.datasets import load_digits
except ImportError:
    print(
        "scikit-learn is not installed: skipping the digits example "
        "(pip install scikit-learn)"
    )
    sys.exit(0)

digits = load_digits()
X = (digits.data / 16.0).astype(np.float32)
y = digits.target.astype(np.int64)
rng = np.random.default_rng(0)
order = rng.permutation(len(X))
X, y = X[order], y[order]
n_train = 1400
X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]

cygrad.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
print(model)

start = time.perf_counter()
for epoch in range(1, args.epochs + 1):
    perm = rng.permutation(n_train)
    total = 0.0
    for i in range(0, n_train, 128):
        idx = perm[i : i + 128]
        logits = model(cygrad.from_numpy(X_train[idx]))
        loss = loss_fn(logits, cygrad.from_numpy(y_train[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
    if epoch % 5 == 0 or epoch == 1:
        print(f"epoch {epoch:2d}: loss = {total / n_train:.4f}")

model.eval()
with cygrad.no_grad():
    pred = model(cygrad.from_numpy(X_test)).numpy().argmax(axis=1)
accuracy = float((pred == y_test).mean())
print(
    f"test accuracy: {accuracy:.3f} on {len(y_test)} held-out digits "
    f"({time.perf_counter() - start:.1f} s)"
)
