"""A 2-layer GPT that learns to make up names, trained on a bundled list.

``examples/data/names.txt`` (279 first names) is joined into one stream,
names separated by ``.``; 90% of the names train, 10% validate.  The model
is token + position embeddings, two pre-norm ``nn.TransformerEncoderLayer``
blocks (d_model 64, 4 heads, a 64 -> 256 -> 64 GELU MLP) under a causal mask,
a final LayerNorm and a linear head: a GPT in everything but name.  AdamW.
The train and validation losses are printed, plotted to a PNG when
matplotlib is installed, and the model then writes new names.

    python examples/tiny_gpt.py [--steps N] [--plot PATH]
"""

import argparse
import os
import tempfile
import time

import numpy as np
from numpy.typing import NDArray

import cygrad as torch
from cygrad import nn

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--plot", default=os.path.join(tempfile.gettempdir(),
                                                   "tiny_gpt_loss.png"))
args = parser.parse_args()

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "data", "names.txt")) as f:
    names = [ln.strip() for ln in f if ln.strip()]
rng = np.random.default_rng(0)
rng.shuffle(names)
n_val = len(names) // 10
chars = ["."] + sorted({c for n in names for c in n})
stoi = {c: i for i, c in enumerate(chars)}


def stream(words: list[str]) -> NDArray[np.int64]:
    return np.array([stoi[c] for c in "." + ".".join(words) + "."], dtype=np.int64)


train_data, val_data = stream(names[n_val:]), stream(names[:n_val])
vocab, context, batch, d_model = len(chars), 16, 16, 64
print(f"{len(names)} names ({len(names) - n_val} train, {n_val} val), "
      f"vocabulary {vocab}")


def get_batch(data: NDArray[np.int64]) -> tuple[torch.Tensor, torch.Tensor]:
    idx = rng.integers(0, len(data) - context - 1, batch)
    x = np.stack([data[i:i + context] for i in idx])
    y = np.stack([data[i + 1:i + context + 1] for i in idx])
    return torch.tensor(x), torch.tensor(y)


class TinyGPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList([
            nn.TransformerEncoderLayer(d_model, 4, 4 * d_model, dropout=0.0,
                                       activation="gelu", batch_first=True,
                                       norm_first=True)
            for _ in range(2)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        h = self.tok(x) + self.pos(torch.arange(t))
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        for block in self.blocks:
            h = block(h, src_mask=mask, is_causal=True)
        logits: torch.Tensor = self.head(self.norm(h))
        return logits


def loss_of(model: nn.Module, data: NDArray[np.int64]) -> torch.Tensor:
    x, y = get_batch(data)
    return nn.functional.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))


torch.manual_seed(0)
model = TinyGPT()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
train_curve: list[tuple[int, float]] = []
val_curve: list[tuple[int, float]] = []
start = time.perf_counter()
for step in range(args.steps + 1):
    loss = loss_of(model, train_data)
    opt.zero_grad()
    loss.backward()
    opt.step()
    train_curve.append((step, loss.item()))
    if step % 50 == 0:
        with torch.no_grad():
            val = float(np.mean([loss_of(model, val_data).item() for _ in range(4)]))
        val_curve.append((step, val))
        print(f"step {step:4d}  train loss {loss.item():.3f}  val loss {val:.3f}  "
              f"({time.perf_counter() - start:.1f}s)")
print(f"final train loss: {train_curve[-1][1]:.3f}")
print(f"final val loss: {val_curve[-1][1]:.3f}")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: no loss plot")
else:
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(*zip(*train_curve), label="train", alpha=0.7)
    ax.plot(*zip(*val_curve), "o-", label="validation")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.plot)
    print(f"loss curves written to {args.plot}")


def draw(probs: torch.Tensor) -> int:
    """One index from ``probs`` (torch.multinomial when cygrad has it)."""
    if hasattr(torch, "multinomial"):
        return int(torch.multinomial(probs, 1).item())
    p = probs.numpy().astype(np.float64)
    return int(rng.choice(len(p), p=p / p.sum()))


model.eval()
print("samples:")
with torch.no_grad():
    for _ in range(8):
        ids = [0]
        while len(ids) < 20:
            x = torch.tensor([ids[-context:]])
            probs = torch.softmax(model(x)[0, -1], 0)
            ids.append(draw(probs))
            if ids[-1] == 0:
                break
        print("  " + "".join(chars[i] for i in ids[1:]).rstrip("."))
