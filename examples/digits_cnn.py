"""A small CNN on scikit-learn's 8x8 digits: two conv blocks with batch norm,
dropout and max pooling, trained with Adam.

Each block is Conv2d(3x3, padding 1) -> BatchNorm2d -> ReLU -> MaxPool2d(2);
the head is Flatten -> Dropout(0.25) -> Linear.  1797 images, 1400 for
training, the rest held out; the script prints the test accuracy (about 98%)
and the time.  scikit-learn ships the data (nothing is downloaded); without
it the script says so and exits cleanly.  ``nn.Dropout`` belongs to another
part of issue 18: on a build that lacks it the head trains without dropout
and the script says so.

    python examples/digits_cnn.py [--epochs N]
"""

import argparse
import sys
import time

import numpy as np

import cygrad
from cygrad import nn, optim

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=15)
args = parser.parse_args()

try:
    from sklearn.datasets import load_digits
except ImportError:
    print(
        "scikit-learn is not installed: skipping the digits CNN example "
        "(pip install scikit-learn)"
    )
    sys.exit(0)

digits = load_digits()
X = (digits.images / 16.0).astype(np.float32)[:, None]  # (1797, 1, 8, 8)
y = digits.target.astype(np.int64)
rng = np.random.default_rng(0)
order = rng.permutation(len(X))
X, y = X[order], y[order]
n_train = 1400
X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]

if hasattr(nn, "Dropout"):
    dropout: nn.Module = nn.Dropout(0.25)
else:
    print("nn.Dropout is not in this cygrad build: the head trains without it")
    dropout = nn.Identity()

cygrad.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), dropout, nn.Linear(32 * 2 * 2, 10),
)
opt = optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()
print(model)

start = time.perf_counter()
for epoch in range(1, args.epochs + 1):
    model.train()
    perm = rng.permutation(n_train)
    total = 0.0
    for i in range(0, n_train, 64):
        idx = perm[i : i + 64]
        if len(idx) < 2:
            continue  # batch norm needs two values per channel
        logits = model(cygrad.from_numpy(X_train[idx]))
        loss = loss_fn(logits, cygrad.from_numpy(y_train[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
    if epoch % 5 == 0 or epoch == 1:
        print(f"epoch {epoch:2d}: loss = {total / n_train:.4f}")

model.eval()  # batch norm switches to its running statistics
with cygrad.no_grad():
    pred = model(cygrad.from_numpy(X_test)).numpy().argmax(axis=1)
accuracy = float((pred == y_test).mean())
print(
    f"test accuracy: {accuracy:.3f} on {len(y_test)} held-out digits "
    f"({time.perf_counter() - start:.1f} s)"
)
