"""What does torch.nn actually do?  A walk from raw tensors to a CNN on
scikit-learn's 8x8 digits, after PyTorch's tutorial "What is torch.nn
really?", retold in our own words.

Each step trains the same kind of classifier and prints its validation loss
and accuracy, replacing one piece of hand-written code by the library piece
that does the same job:

1. tensors only: weights with requires_grad, log-softmax and the negative
   log-likelihood written by hand, the update step under no_grad;
2. torch.nn.functional: F.cross_entropy replaces log-softmax + NLL;
3. nn.Module and nn.Parameter: the model holds its weights;
4. nn.Linear: the layer holds the matrix product and its initialisation;
5. torch.optim: optimizer.step() / zero_grad() replace the update loop;
6. TensorDataset and DataLoader: batching and shuffling;
7. a validation set and fit() / get_data() functions;
8. a CNN: Conv2d, ReLU, AdaptiveAvgPool2d in nn.Sequential, with a Lambda
   module to reshape, and a wrapped DataLoader that does the preprocessing
   (no ReLU on the last convolution: with ten channels a class whose
   logits a ReLU zeroes everywhere stops learning).

The script uses only PyTorch's API: change the import line below to
``import torch`` and it runs on PyTorch unchanged.  scikit-learn ships the
data (nothing is downloaded); without it the script says so and exits.

    python examples/nn_really.py [--epochs N]
"""

import argparse
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

import cygrad as torch

nn = torch.nn
F = torch.nn.functional
optim = torch.optim
TensorDataset = torch.utils.data.TensorDataset
DataLoader = torch.utils.data.DataLoader
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=4)
args = parser.parse_args()

try:
    from sklearn.datasets import load_digits
except ImportError:
    print("scikit-learn is not installed: skipping the torch.nn walk-through "
          "(pip install scikit-learn)")
    sys.exit(0)

# -- the data: 1797 grey 8x8 images flattened to 64 features in [0, 1] ----------

digits = load_digits()
images = (digits.images.reshape(len(digits.images), -1) / 16.0).astype(np.float32)
labels = digits.target.astype(np.int64)
order = np.random.default_rng(0).permutation(len(images))
images, labels = images[order], labels[order]
n_train = 1400
x_train, y_train, x_valid, y_valid = map(
    torch.tensor, (images[:n_train], labels[:n_train], images[n_train:],
                   labels[n_train:]))
n, c = x_train.shape
print(f"train {tuple(x_train.shape)}, valid {tuple(x_valid.shape)}, "
      f"labels {int(y_train.min())}..{int(y_train.max())}")

torch.manual_seed(0)
bs = 64
lr = 0.5
epochs = args.epochs


def accuracy(out: torch.Tensor, yb: torch.Tensor) -> float:
    return (torch.argmax(out, dim=1) == yb).float().mean().item()


def report(step: int, model_fn: Callable[[torch.Tensor], Any], loss_fn: LossFn) -> None:
    with torch.no_grad():
        out = model_fn(x_valid)
        print(f"step {step}: valid loss {loss_fn(out, y_valid).item():.4f}, "
              f"accuracy {accuracy(out, y_valid):.3f}")


# -- 1. tensors only ------------------------------------------------------------
# Xavier-style start: weights ~ N(0, 1/64); requires_grad_ after the scaling so
# that the scaling is not recorded.

weights = torch.randn(64, 10) / math.sqrt(64)
weights.requires_grad_()
bias = torch.zeros(10, requires_grad=True)


def log_softmax(x: torch.Tensor) -> torch.Tensor:
    return x - x.exp().sum(-1).log().unsqueeze(-1)


def model_by_hand(xb: torch.Tensor) -> torch.Tensor:
    return log_softmax(xb @ weights + bias)


def nll(logp: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return -logp[torch.arange(target.shape[0]), target].mean()


for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        xb, yb = x_train[i * bs:(i + 1) * bs], y_train[i * bs:(i + 1) * bs]
        loss = nll(model_by_hand(xb), yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
report(1, model_by_hand, nll)

# -- 2. torch.nn.functional ------------------------------------------------------
# cross_entropy = log_softmax + nll in one (and one fused kernel here).

loss_func = F.cross_entropy


def model_functional(xb: torch.Tensor) -> torch.Tensor:
    return xb @ weights + bias


report(2, model_functional, loss_func)

# -- 3. nn.Module and nn.Parameter ----------------------------------------------


class DigitsLogistic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.randn(64, 10) / math.sqrt(64))
        self.bias = nn.Parameter(torch.zeros(10))

    def forward(self, xb: torch.Tensor) -> torch.Tensor:
        return xb @ self.weights + self.bias


def fit_by_hand(model: nn.Module) -> None:
    for epoch in range(epochs):
        for i in range((n - 1) // bs + 1):
            xb, yb = x_train[i * bs:(i + 1) * bs], y_train[i * bs:(i + 1) * bs]
            loss = loss_func(model(xb), yb)
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= p.grad * lr
                model.zero_grad()


model: nn.Module = DigitsLogistic()
fit_by_hand(model)
report(3, model, loss_func)

# -- 4. nn.Linear ---------------------------------------------------------------


class DigitsLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(64, 10)

    def forward(self, xb: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.lin(xb)
        return out


model = DigitsLinear()
fit_by_hand(model)
report(4, model, loss_func)

# -- 5. torch.optim -------------------------------------------------------------


def get_model() -> tuple[nn.Module, optim.SGD]:
    model = DigitsLinear()
    return model, optim.SGD(model.parameters(), lr=lr)


model, opt = get_model()
for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        xb, yb = x_train[i * bs:(i + 1) * bs], y_train[i * bs:(i + 1) * bs]
        loss = loss_func(model(xb), yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
report(5, model, loss_func)

# -- 6. Dataset and DataLoader --------------------------------------------------

train_ds = TensorDataset(x_train, y_train)
train_dl: Iterable[Any] = DataLoader(train_ds, batch_size=bs, shuffle=True)
model, opt = get_model()
for epoch in range(epochs):
    for xb, yb in train_dl:
        loss = loss_func(model(xb), yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
report(6, model, loss_func)

# -- 7. validation, fit() and get_data() ------------------------------------------
# model.train() / model.eval() matter once layers such as dropout or batch
# norm appear; the validation set needs no gradients and can use bigger batches.


def loss_batch(model: nn.Module, loss_func: LossFn, xb: torch.Tensor, yb: torch.Tensor,
               opt: optim.Optimizer | None = None) -> tuple[float, int]:
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs: int, model: nn.Module, loss_func: LossFn, opt: optim.Optimizer,
        train_dl: Iterable[Any], valid_dl: Iterable[Any], step: int) -> None:
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb)
                                 for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        print(f"step {step}, epoch {epoch}: valid loss {val_loss:.4f}")


def get_data(train_ds: torch.utils.data.Dataset[Any],
             valid_ds: torch.utils.data.Dataset[Any],
             bs: int) -> tuple[DataLoader[Any], DataLoader[Any]]:
    return (DataLoader(train_ds, batch_size=bs, shuffle=True),
            DataLoader(valid_ds, batch_size=bs * 2))


valid_ds = TensorDataset(x_valid, y_valid)
valid_dl: Iterable[Any]
train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
model, opt = get_model()
fit(epochs, model, loss_func, opt, train_dl, valid_dl, 7)
report(7, model, loss_func)

# -- 8. a CNN: nn.Sequential, a Lambda layer, a wrapped DataLoader ---------------


class Lambda(nn.Module):
    def __init__(self, func: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.func = func

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.func(x)


class WrappedDataLoader:
    """Applies ``func`` to every batch of ``dl``."""

    def __init__(self, dl: DataLoader[Any], func: Callable[..., Any]) -> None:
        self.dl = dl
        self.func = func

    def __len__(self) -> int:
        return len(self.dl)

    def __iter__(self) -> Iterator[Any]:
        for b in self.dl:
            yield self.func(*b)


def preprocess(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.view(-1, 1, 8, 8), y


train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
train_dl = WrappedDataLoader(train_dl, preprocess)
valid_dl = WrappedDataLoader(valid_dl, preprocess)

model = nn.Sequential(
    nn.Conv2d(1, 16, kernel_size=3, stride=1, padding=1), nn.ReLU(),
    nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=1), nn.ReLU(),
    nn.Conv2d(32, 10, kernel_size=3, stride=2, padding=1),
    nn.AdaptiveAvgPool2d(1),
    Lambda(lambda x: x.view(x.size(0), -1)),
)
print(model)
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
fit(epochs * 3, model, loss_func, opt, train_dl, valid_dl, 8)
model.eval()
with torch.no_grad():
    out = model(x_valid.view(-1, 1, 8, 8))
    print(f"CNN valid accuracy: {accuracy(out, y_valid):.3f}")
