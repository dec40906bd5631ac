"""The optimizer kernels (``k``: optim.pyx, ``k2``: optim2.pyx).

Each module holds every update loop three times (AVX-512, AVX2 + FMA and
portable, ``cygrad/_kernels/cg_optim.h``) and runs the widest copy this CPU
has, unless ``CYGRAD_SIMD=avx2`` caps it or ``CYGRAD_NO_SIMD=1`` forces the
portable one; all three give the same bits.  The older ``CYGRAD_NO_AVX2=1``
still forces the portable copies, here in the optimizers only.
"""

import os

from cygrad._kernels import optim as k
from cygrad._kernels import optim2 as k2

if os.environ.get("CYGRAD_NO_AVX2", "0") not in ("", "0"):
    k.set_simd_level(0)
    k2.set_simd_level(0)

__all__ = ["k", "k2"]
