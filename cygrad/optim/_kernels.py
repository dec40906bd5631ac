"""The optimizer kernels (``k``: optim.pyx, ``k2``: optim2.pyx): the AVX2
builds when this CPU has AVX2.

``CYGRAD_NO_AVX2=1`` forces the baseline build (both give the same bits).
"""

import os


def _cpu_has_avx2():
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
    except ImportError:  # NumPy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as feats
        except ImportError:
            return False
    return bool(feats.get("AVX2", False))


if _cpu_has_avx2() and os.environ.get("CYGRAD_NO_AVX2", "0") == "0":
    from cygrad._kernels import optim2_avx2 as k2
    from cygrad._kernels import optim_avx2 as k
else:
    from cygrad._kernels import optim as k
    from cygrad._kernels import optim2 as k2

__all__ = ["k", "k2"]
