"""Which language does a surname come from?  A character RNN on a bundled list.

``examples/data/surnames.txt`` holds 30 common surnames for each of eight
languages (assembled for this project).  Each name is a sequence of
one-hot letters; a batch of names of different lengths goes through
``nn.RNN`` as one ``PackedSequence`` (``pack_sequence``), and the last
hidden state of every name feeds a linear classifier.  Cross-entropy, Adam;
accuracy on held-out names is printed as training goes.

    python examples/name_classifier.py [--epochs N]
"""

import argparse
import os
import time

import numpy as np
import numpy.typing as npt

import cygrad as torch
from cygrad import nn
from cygrad.nn.utils.rnn import pack_sequence

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=30)
args = parser.parse_args()

HERE = os.path.dirname(os.path.abspath(__file__))
pairs = []
with open(os.path.join(HERE, "data", "surnames.txt")) as f:
    for line in f:
        if line.strip() and not line.startswith("#"):
            lang, name = line.strip().split(",")
            pairs.append((lang, name.lower()))
languages = sorted({lang for lang, _ in pairs})
letters = sorted({c for _, name in pairs for c in name})
print(f"{len(pairs)} surnames, {len(languages)} languages, {len(letters)} letters")


def one_hot(name: str) -> torch.Tensor:
    x = np.zeros((len(name), len(letters)), dtype=np.float32)
    x[np.arange(len(name)), [letters.index(c) for c in name]] = 1
    return torch.tensor(x)


rng = np.random.default_rng(0)
order = rng.permutation(len(pairs))
n_val = len(pairs) // 5
val, train = order[:n_val], order[n_val:]
seqs = [one_hot(name) for _, name in pairs]
labels = np.array([languages.index(lang) for lang, _ in pairs], dtype=np.int64)

torch.manual_seed(0)


class NameRNN(nn.Module):
    def __init__(self, n_in: int, hidden: int, n_out: int) -> None:
        super().__init__()
        self.rnn = nn.RNN(n_in, hidden, num_layers=1)
        self.out = nn.Linear(hidden, n_out)

    def forward(self, names: list[torch.Tensor]) -> torch.Tensor:
        packed = pack_sequence(names, enforce_sorted=False)
        _, h = self.rnn(packed)  # h: (layers, batch, hidden), in the input order
        scores: torch.Tensor = self.out(h[-1])
        return scores


model = NameRNN(len(letters), 64, len(languages))
opt = torch.optim.Adam(model.parameters(), lr=5e-3)


def accuracy(idx: npt.NDArray[np.int64]) -> float:
    with torch.no_grad():
        pred = model([seqs[i] for i in idx]).numpy().argmax(1)
    return float((pred == labels[idx]).mean())


start = time.perf_counter()
for epoch in range(args.epochs + 1):
    perm = rng.permutation(train)
    for b in range(0, len(perm), 32):
        idx = perm[b:b + 32]
        loss = nn.functional.cross_entropy(model([seqs[i] for i in idx]),
                                           torch.tensor(labels[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch % 5 == 0:
        print(f"epoch {epoch:3d}  loss {loss.item():.3f}  train acc "
              f"{accuracy(train):.2f}  val acc {accuracy(val):.2f}  "
              f"({time.perf_counter() - start:.1f}s)")
print(f"final train accuracy: {accuracy(train):.3f}")
print(f"final val accuracy: {accuracy(val):.3f}")
for name in ("nakagawa", "schumacher", "rossetti", "petrovsky"):
    with torch.no_grad():
        probs = torch.softmax(model([one_hot(name)]), 1)[0].numpy()
    print(f"{name:12s} -> {languages[int(probs.argmax())]} ({probs.max():.2f})")
