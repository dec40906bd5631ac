"""``cygrad.backends.cuda``: flags accepted and kept (cygrad has no CUDA)."""

import types

matmul = types.SimpleNamespace(
    allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
    allow_bf16_reduced_precision_reduction=True)


def is_built():
    return False


# Scaled-dot-product-attention flags: the ones sdpa_kernel sets
# (cygrad/nn/_sdp.py says what they change on a CPU).
from cygrad.nn import _sdp
from cygrad.nn.attention import (  # noqa: F401
    SDPAParams,
    can_use_efficient_attention,
    can_use_flash_attention,
)


def _flag(backend):
    def enable(enabled: bool) -> None:
        _sdp.set_enabled(backend, bool(enabled))

    def is_enabled() -> bool:
        return _sdp.is_enabled(backend)

    return enable, is_enabled


enable_flash_sdp, flash_sdp_enabled = _flag(_sdp.SDPBackend.FLASH_ATTENTION)
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _flag(
    _sdp.SDPBackend.EFFICIENT_ATTENTION)
enable_math_sdp, math_sdp_enabled = _flag(_sdp.SDPBackend.MATH)
enable_cudnn_sdp, cudnn_sdp_enabled = _flag(_sdp.SDPBackend.CUDNN_ATTENTION)


def is_flash_attention_available() -> bool:
    """False: flash attention here means torch's CUDA kernel."""
    return False


def can_use_cudnn_attention(params: SDPAParams, debug: bool = False) -> bool:
    """False: torch's answer without CUDA."""
    return False
