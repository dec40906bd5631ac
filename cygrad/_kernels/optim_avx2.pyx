# The kernels of optim.pyx compiled for CPUs with AVX2 (setup.py passes
# -mavx2 to this module, on x86-64 only): Adam's loop is bound
# by the divide/sqrt unit, which AVX2 doubles (measured: 104 -> 55 us per
# 100,000 float32 elements).  No -mfma, so the results stay bit-identical to
# optim.pyx.  cygrad.optim._kernels imports this module only when the CPU
# reports AVX2; any other machine runs optim.pyx.

include "optim.pyx"
