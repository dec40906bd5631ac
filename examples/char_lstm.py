"""A character-level LSTM on a short bundled story, then sampling from it.

``examples/data/lighthouse.txt`` (written for this project) is the whole
corpus.  Embedding -> LSTM(batch_first) -> Linear predicts the next
character of random 32-character windows; cross-entropy, Adam and
``clip_grad_norm_``.  Afterwards the model continues a prompt one character
at a time, carrying the LSTM state, each character drawn from the softmax
of the logits divided by a temperature.

    python examples/char_lstm.py [--steps N] [--temperature T]
"""

import argparse
import os
import time
from typing import Any

import numpy as np

import cygrad as torch
from cygrad import nn

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--temperature", type=float, default=0.6)
args = parser.parse_args()

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "data", "lighthouse.txt")) as f:
    text = f.read()
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = np.array([stoi[c] for c in text], dtype=np.int64)
vocab, context, batch = len(chars), 32, 16
print(f"corpus: {len(text)} characters, vocabulary {vocab}")

torch.manual_seed(0)
rng = np.random.default_rng(0)


class CharLSTM(nn.Module):
    def __init__(self, vocab: int, emb: int = 32, hidden: int = 128) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor,
                state: Any = None) -> tuple[torch.Tensor, Any]:
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


model = CharLSTM(vocab)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
start = time.perf_counter()
for step in range(args.steps + 1):
    idx = rng.integers(0, len(data) - context - 1, batch)
    x = torch.tensor(np.stack([data[i:i + context] for i in idx]))
    y = torch.tensor(np.stack([data[i + 1:i + context + 1] for i in idx]))
    logits, _ = model(x)
    loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 50 == 0:
        print(f"step {step:4d}  loss {loss.item():.3f}  "
              f"({time.perf_counter() - start:.1f}s)")


def draw(probs: torch.Tensor) -> int:
    """One index from ``probs`` (torch.multinomial when cygrad has it)."""
    if hasattr(torch, "multinomial"):
        return int(torch.multinomial(probs, 1).item())
    p = probs.numpy().astype(np.float64)
    return int(rng.choice(len(p), p=p / p.sum()))


model.eval()
prompt = "The keeper "
out = list(prompt)
with torch.no_grad():
    logits, state = model(torch.tensor([[stoi[c] for c in prompt]]))
    for _ in range(200):
        probs = torch.softmax(logits[0, -1] / args.temperature, 0)
        nxt = draw(probs)
        out.append(chars[nxt])
        logits, state = model(torch.tensor([[nxt]]), state)
print("final loss:", f"{loss.item():.3f}")
print("sample:")
print("".join(out))
