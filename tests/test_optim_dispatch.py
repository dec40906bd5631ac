"""The AVX2 build of the optimizer kernels gives the same bits as the baseline."""

import numpy as np
import pytest

import cygrad
from cygrad._kernels import optim as baseline
from cygrad.optim import _kernels

avx2 = pytest.importorskip("cygrad._kernels.optim_avx2")


def test_dispatch_picks_a_kernel_module():
    assert _kernels.k in (baseline, avx2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "RMSprop", "Adagrad"])
def test_avx2_build_matches_baseline_bit_for_bit(monkeypatch, name, dtype):
    if not _kernels._cpu_has_avx2():
        pytest.skip("this CPU has no AVX2")
    opts = {"Adam": dict(lr=1e-2, weight_decay=0.1, amsgrad=True),
            "AdamW": dict(lr=1e-2), "SGD": dict(lr=1e-2, momentum=0.9,
                                                  nesterov=True),
            "RMSprop": dict(lr=1e-2, centered=True, momentum=0.5),
            "Adagrad": dict(lr=1e-2, lr_decay=0.01)}[name]
    results = []
    for mod in (baseline, avx2):
        # AdamW runs Adam's kernel.
        module = __import__(f"cygrad.optim.{name.lower().replace('adamw', 'adam')}",
                            fromlist=["_k"])
        monkeypatch.setattr(module, "_k", mod)
        rng = np.random.default_rng(0)
        p = cygrad.tensor(rng.standard_normal(1037).astype(dtype), requires_grad=True)
        opt = getattr(cygrad.optim, name)([p], **opts)
        for i in range(25):
            p.grad = cygrad.tensor(np.sin(np.arange(1037) * 0.01 + i).astype(dtype))
            opt.step()
        results.append(p.detach().numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])
