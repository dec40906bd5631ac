# The kernels of optim2.pyx compiled for CPUs with AVX2, as optim_avx2.pyx is
# for optim.pyx: wider divide/sqrt units, no -mfma, so the same bits.
# cygrad.optim._kernels imports it only when the CPU reports AVX2.

include "optim2.pyx"
