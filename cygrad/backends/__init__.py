"""``cygrad.backends``: the flags scripts read or set (``cudnn.deterministic``,
``mps.is_available()``).  cygrad's CPU kernels are deterministic and use
none of these backends; the flags are kept so such scripts run unchanged."""

import types

__all__ = ["cuda", "cudnn", "mps"]

mps = types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
cudnn = types.SimpleNamespace(enabled=True, benchmark=False, deterministic=False,
                              allow_tf32=True, is_available=lambda: False,
                              version=lambda: None)
cuda = types.SimpleNamespace(is_built=lambda: False,
                             matmul=types.SimpleNamespace(allow_tf32=False))
