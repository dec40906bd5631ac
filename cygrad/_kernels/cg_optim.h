/* The optimizers' update loops (called by optim.pyx and optim2.pyx), one
 * set per dtype: cg_<name>_f for float32, cg_<name>_d for float64.
 *
 * Every loop is a CG_SIMD_FN (cg_simd.h): compiled for AVX-512, for AVX2 +
 * FMA and for the baseline in one module, the widest copy the CPU runs
 * chosen at load.  This replaced the whole-module -mavx2 copies of
 * optim.pyx and optim2.pyx (0.7 MB installed, and no AVX-512).  Adam,
 * RMSprop and Adagrad spend their time in the divide/sqrt unit, whose
 * throughput grows with the vector width; SGD is bound by memory.
 *
 * Bits: every SIMD level gives the same results, bit for bit.  Each
 * operation is rounded as torch's single-tensor path (foreach=False)
 * rounds it, in its order: IEEE division and sqrt (no reciprocal
 * estimates), an explicit CG_O_FMA exactly where ATen's kernel has one
 * (add with alpha, addcmul, lerp: the instruction in the SIMD copies, the
 * C library's fma in the portable one), and no other contraction of
 * a * b + c, which the AVX2 + FMA and AVX-512 copies would otherwise do
 * under GCC's default -ffp-contract=fast.  Given IEEE square roots the
 * updates are then torch's bit for bit (tests/test_optim_torch_bits.py).
 * setup.py compiles the modules that include this header with
 * -ffp-contract=off; the pragma below says the same to clang, and
 * CG_OPTIM_NO_CONTRACT guards against a build that forgets the flag. */
#ifndef CG_OPTIM_H
#define CG_OPTIM_H

#include <math.h>
#include <stddef.h>
#include "cg_math.h"
#include "cg_simd.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__) && !defined(CG_OPTIM_NO_CONTRACT)
#error "cg_optim.h needs -ffp-contract=off and -DCG_OPTIM_NO_CONTRACT (see setup.py)"
#endif

/* CG_O_AVX2_FN: like CG_SIMD_FN but with the AVX2 + FMA and portable copies
   only; an AVX-512 CPU runs the AVX2 one.  For Adam, whose loop is bound
   by the divide/sqrt unit: on this Xeon its 512-bit divisions and square
   roots deliver no more elements per cycle than the 256-bit ones and the
   wide copy ran slower (10 x 100,000 float32 in cache: 0.85 ms vs 0.61 ms;
   benchmarks.bench_optim --suite, large Adam: 0.87x vs 0.82x torch fused,
   medians of two runs each). */
#if CG_SIMD_X86
#define CG_O_AVX2_FN(ret, name, params, args, ...)                        \
    __attribute__((target("avx2,fma"))) static ret name##_v3 params       \
        __VA_ARGS__                                                       \
    static ret name##_v0 params __VA_ARGS__                               \
    static inline ret name params {                                       \
        return cg_simd_v3 ? name##_v3 args : name##_v0 args;              \
    }
#else
#define CG_O_AVX2_FN(ret, name, params, args, ...) static ret name params __VA_ARGS__
#endif

#define T float
#define S f
#define CG_O_SQRT sqrtf
#define CG_O_FABS fabsf
#define CG_O_FMA fmaf
#include "cg_optim_t.h"
#undef T
#undef S
#undef CG_O_SQRT
#undef CG_O_FABS
#undef CG_O_FMA

#define T double
#define S d
#define CG_O_SQRT sqrt
#define CG_O_FABS fabs
#define CG_O_FMA fma
#include "cg_optim_t.h"
#undef T
#undef S
#undef CG_O_SQRT
#undef CG_O_FABS
#undef CG_O_FMA

#endif
