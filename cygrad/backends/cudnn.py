"""``cygrad.backends.cudnn``: flags accepted and kept (cygrad has no cuDNN)."""

import contextlib

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True, fp32_precision="none", depthwise_kernel="auto"):
    """Set ``enabled``, ``benchmark``, ``deterministic`` and ``allow_tf32``
    for the block (torch's defaults, so a bare ``flags()`` turns them off)
    and restore them after; the other arguments are accepted and unused."""
    names = ("enabled", "benchmark", "deterministic", "allow_tf32")
    saved = {n: globals()[n] for n in names}
    globals().update(enabled=enabled, benchmark=benchmark, deterministic=deterministic,
                     allow_tf32=allow_tf32)
    try:
        yield
    finally:
        globals().update(saved)
