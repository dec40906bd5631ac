"""``cygrad.backends.cuda``: flags accepted and kept (cygrad has no CUDA)."""

import types

matmul = types.SimpleNamespace(
    allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
    allow_bf16_reduced_precision_reduction=True)


def is_built():
    return False
