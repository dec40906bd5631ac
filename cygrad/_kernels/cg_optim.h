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
 * Bits: every SIMD level gives the same results, bit for bit, as the
 * scalar loops always have.  Each operation is rounded on its own, in
 * the order torch's single-tensor path (foreach=False) performs it:
 * IEEE division and sqrt (no reciprocal estimates), and no contraction
 * of a * b + c into an FMA, which the AVX2 + FMA and AVX-512 copies would
 * otherwise do under GCC's default -ffp-contract=fast (it moved float64
 * trajectories off torch's by far more than the 1e-12 the tests allow).
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

#define T float
#define S f
#define CG_O_SQRT sqrtf
#define CG_O_FABS fabsf
#include "cg_optim_t.h"
#undef T
#undef S
#undef CG_O_SQRT
#undef CG_O_FABS

#define T double
#define S d
#define CG_O_SQRT sqrt
#define CG_O_FABS fabs
#include "cg_optim_t.h"
#undef T
#undef S
#undef CG_O_SQRT
#undef CG_O_FABS

#endif
