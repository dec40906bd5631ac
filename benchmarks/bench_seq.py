"""Sequence-model training steps: cygrad vs torch, one group per case, one
thread each.

Groups:
``seq-char_lstm``   one training step of Embedding(65, 32) -> LSTM(32, 128,
                    batch_first) -> Linear(128, 65), batch 16, length 32:
                    cross-entropy, backward, clip_grad_norm_(1.0), Adam
                    (issue 19 target: <= 0.5x torch)
``seq-lstm_cell``   one LSTMCell(64, 64) step at batch 1 with autograd on
                    (issue 19 target: <= 0.2x torch)
``seq-gpt_encoder`` one training step of a 2-block pre-norm GPT built from
                    nn.TransformerEncoderLayer(64, 4, 256, gelu, causal mask),
                    token and position embeddings, vocabulary 65, context
                    32, batch 16, AdamW (issue 19 target: <= 0.7x torch)
``seq-gpt_handwritten`` the same GPT with hand-written blocks, as nanoGPT-style
                    scripts write them: q/k/v Linears, ``masked_fill`` with a
                    ``tril`` buffer, softmax, a 64 -> 256 -> 64 GELU MLP
                    (issue 19 target: <= 0.7x torch)

No NumPy column: a hand-written LSTM or transformer backward is a second
implementation, not a baseline of autograd overhead.  Both libraries start
from the same weights and inputs; ``test_agree_*`` checks they give the
same losses and parameters after a few steps.

    pytest benchmarks/bench_seq.py --benchmark-only        # timings
    pytest benchmarks/bench_seq.py --benchmark-disable     # fast check
    python -m benchmarks.bench_seq   # alternating rounds, median ratios
"""

import importlib

import numpy as np
import pytest

from benchmarks import need, pick, round_robin, run, tag, to_numpy

F32 = np.float32
LIBS = ("cygrad", "torch")
VOCAB, EMB, HID = 65, 32, 128
BATCH, LENGTH = pick(16, 2), pick(32, 4)
TARGETS = {"char_lstm": 0.5, "lstm_cell": 0.2, "gpt_encoder": 0.7,
           "gpt_handwritten": 0.7}


def _load_seeded(T, model, seed):
    """The same U(-0.1, 0.1) weights in either library (parameter order)."""
    rng = np.random.default_rng(seed)
    with T.no_grad():
        for p in model.parameters():
            p.copy_(T.tensor(rng.uniform(-0.1, 0.1, tuple(p.shape)).astype(F32)))


def _tokens(T, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, VOCAB, (BATCH, LENGTH)).astype(np.int64)
    y = rng.integers(0, VOCAB, (BATCH, LENGTH)).astype(np.int64)
    return T.tensor(x), T.tensor(y)


def char_lstm_step(lib):
    T = need(lib, "nn.Embedding", "nn.LSTM", "optim.Adam", "nn.utils.clip_grad_norm_")
    nn = importlib.import_module(f"{lib}.nn")
    emb, lstm, head = nn.Embedding(VOCAB, EMB), nn.LSTM(EMB, HID, batch_first=True), \
        nn.Linear(HID, VOCAB)
    model = nn.ModuleList([emb, lstm, head])
    _load_seeded(T, model, 0)
    params = list(model.parameters())
    opt = importlib.import_module(f"{lib}.optim").Adam(params, lr=1e-3)
    x, y = _tokens(T, 1)

    def step():
        out, _ = lstm(emb(x))
        loss = nn.functional.cross_entropy(head(out).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return [loss, *params]

    return step


def char_lstm_products():
    """The char-LSTM step's matrix products alone, in NumPy (its BLAS): the
    input projection of all steps, the recurrent product of each step forward
    and backward, the head's forward and two gradients, and the weight and
    input gradients.  What no LSTM implementation on this BLAS can go below
    (``python -m benchmarks.bench_seq`` prints it beside torch's step)."""
    rng = np.random.default_rng(0)

    def rand(*shape):
        return rng.standard_normal(shape).astype(F32)

    gates = 4 * HID
    h, w_hh, g = rand(BATCH, HID), rand(HID, gates), rand(BATCH, gates)
    x, w_ih = rand(BATCH * LENGTH, EMB), rand(EMB, gates)
    out, w_out, g_out = rand(BATCH * LENGTH, HID), rand(HID, VOCAB), \
        rand(BATCH * LENGTH, VOCAB)
    g_all = rand(BATCH * LENGTH, gates)

    def step():
        x @ w_ih
        for _ in range(LENGTH):
            h @ w_hh
        out @ w_out
        g_out @ w_out.T
        out.T @ g_out
        for _ in range(LENGTH):
            g @ w_hh.T
        g_all.T @ out
        g_all.T @ x
        g_all @ w_ih.T

    return step


def lstm_cell_step(lib):
    T = need(lib, "nn.LSTMCell")
    nn = importlib.import_module(f"{lib}.nn")
    cell = nn.LSTMCell(64, 64)
    _load_seeded(T, cell, 2)
    rng = np.random.default_rng(3)
    x, h, c = (T.tensor(rng.standard_normal((1, 64)).astype(F32)) for _ in range(3))

    def step():
        return list(cell(x, (h, c)))

    return step


def _gpt_step(T, nn, lib, blocks, run_block, seed):
    """A 2-block GPT training step around ``blocks``: token and position
    embeddings, ``run_block(block, h)`` per block, final LayerNorm, head,
    cross-entropy, AdamW (the lib's own classes, seeded weights)."""
    d = 64
    tok, pos = nn.Embedding(VOCAB, d), nn.Embedding(LENGTH, d)
    norm, head = nn.LayerNorm(d), nn.Linear(d, VOCAB)
    model = nn.ModuleList([tok, pos, blocks, norm, head])
    _load_seeded(T, model, seed)
    params = list(model.parameters())
    opt = importlib.import_module(f"{lib}.optim").AdamW(params, lr=1e-3)
    x, y = _tokens(T, seed + 1)
    positions = T.tensor(np.arange(LENGTH, dtype=np.int64))

    def step():
        h = tok(x) + pos(positions)
        for b in blocks:
            h = run_block(b, h)
        logits = head(norm(h))
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return [loss, *params]

    return step


def gpt_encoder_step(lib):
    T = need(lib, "nn.Embedding", "nn.TransformerEncoderLayer", "optim.AdamW")
    nn = importlib.import_module(f"{lib}.nn")
    blocks = nn.ModuleList([
        nn.TransformerEncoderLayer(64, 4, 256, dropout=0.0, activation="gelu",
                                   batch_first=True, norm_first=True)
        for _ in range(2)])
    mask = T.tensor(np.triu(np.full((LENGTH, LENGTH), -np.inf, F32), 1))
    return _gpt_step(T, nn, lib, blocks,
                     lambda b, h: b(h, src_mask=mask, is_causal=True), 4)


def _handwritten_block(T, nn, d, heads):
    """One pre-norm GPT block written out by hand (the lib's own classes)."""
    F = nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.query, self.key, self.value = (nn.Linear(d, d) for _ in range(3))
            self.proj = nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.register_buffer("tril", T.tril(T.ones(LENGTH, LENGTH)))

        def attend(self, x):
            b, t, _ = x.shape
            hs = d // heads
            q, k, v = (lin(x).view(b, t, heads, hs).transpose(1, 2)
                       for lin in (self.query, self.key, self.value))
            w = (q @ k.transpose(-2, -1)) * hs ** -0.5
            w = F.softmax(w.masked_fill(self.tril[:t, :t] == 0, float("-inf")), dim=-1)
            return self.proj((w @ v).transpose(1, 2).contiguous().view(b, t, d))

        def forward(self, x):
            x = x + self.attend(self.ln1(x))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    return Block()


def gpt_handwritten_step(lib):
    T = need(lib, "nn.Embedding", "nn.LayerNorm", "optim.AdamW", "tril")
    nn = importlib.import_module(f"{lib}.nn")
    blocks = nn.ModuleList([_handwritten_block(T, nn, 64, 4) for _ in range(2)])
    return _gpt_step(T, nn, lib, blocks, lambda b, h: b(h), 6)


CASES = {"char_lstm": char_lstm_step, "lstm_cell": lstm_cell_step,
         "gpt_encoder": gpt_encoder_step, "gpt_handwritten": gpt_handwritten_step}


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name", list(CASES))
def test_seq_step(benchmark, lib, name):
    step = CASES[name](lib)
    step()
    tag(benchmark, f"seq-{name}", lib, batch=BATCH, length=LENGTH,
        target={"torch": TARGETS[name]}, target_source="#19")
    run(benchmark, step)


@pytest.mark.parametrize("name", list(CASES))
def test_agree_seq_step(name):
    outs = {}
    for lib in LIBS:
        step = CASES[name](lib)
        for _ in range(3):
            result = step()
        outs[lib] = [to_numpy(r) for r in result]
    for i, (got, want) in enumerate(zip(outs["cygrad"], outs["torch"], strict=True)):
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=1e-3, atol=1e-5,
                                   err_msg=f"{name}: output {i} differs")


def _interleaved(rounds=9):
    """cygrad and torch in alternation round after round; median ratios.
    Before the char-LSTM row, its floor: the step's products alone in NumPy
    (``char_lstm_products``) against torch's whole step."""
    print(f"{'case':20s} {'cygrad':>10s} {'torch':>10s} {'ratio':>7s}")
    for name, make in CASES.items():
        if name == "char_lstm":
            round_robin("char_lstm products",
                        {"cygrad": char_lstm_products(), "torch": make("torch")}, rounds,
                        "ms", 20)
        round_robin(name, {lib: make(lib) for lib in LIBS}, rounds,
                    "us" if name == "lstm_cell" else "ms", 20)


if __name__ == "__main__":
    import benchmarks.conftest as _conf  # the same thread policy as the suite

    _conf._apply_threads(__import__("benchmarks").requested_threads())
    _interleaved()
