"""``torch.nn.utils.stateless``: the pre-2.0 home of ``functional_call``
(deprecated in torch for ``torch.func.functional_call``, which it calls)."""

import warnings

from cygrad.func import functional_call as _functional_call

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``cygrad.func.functional_call``, with torch's deprecation warning."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of "
                  "PyTorch 2.0 and will be removed in a future version of PyTorch. "
                  "Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
