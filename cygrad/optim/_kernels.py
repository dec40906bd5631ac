"""The optimizer kernels (``k``: optim.pyx, ``k2``: optim2.pyx): the AVX2
builds when this CPU has AVX2 (read by ``cygrad._kernels.cpu``), else the
baseline builds.

``CYGRAD_NO_SIMD=1`` (or the older ``CYGRAD_NO_AVX2=1``) forces the baseline
(both give the same bits); off x86-64 the AVX2 builds do not exist.
"""

import os

from cygrad._kernels import cpu as _cpu


def _cpu_has_avx2():
    return _cpu.cpu_has_avx2()


if _cpu.use_avx2_modules() and os.environ.get("CYGRAD_NO_AVX2", "0") == "0":
    from cygrad._kernels import optim2_avx2 as k2
    from cygrad._kernels import optim_avx2 as k
else:
    from cygrad._kernels import optim as k
    from cygrad._kernels import optim2 as k2

__all__ = ["k", "k2"]
