/* CG_SIMD_FN: one C helper compiled twice on x86-64, once for AVX2 + FMA
   (a per-function target attribute, so the module itself is built for the
   baseline and no -m flag is needed) and once for the baseline, with a
   dispatcher that calls the AVX2 copy when this CPU has AVX2 and FMA
   (__builtin_cpu_supports) and CYGRAD_NO_SIMD is unset or "0".  The choice
   is made once, when the module is loaded (cg_simd_init below), so one
   wheel runs on any x86-64 and CYGRAD_NO_SIMD=1 runs the portable loops on
   an AVX2 machine (the tests run both ways).  Elsewhere (aarch64, other
   compilers) the helper is compiled once, plainly, and the compiler's own
   vectorizer serves the target.

   Use:  CG_SIMD_FN(ret, name, (params), (args), { body })
   The body may hold commas but no preprocessor directive.  An earlier
   version used GCC's target_clones, whose ifunc resolver runs during
   relocation and cannot be steered by the environment. */
#ifndef CG_SIMD_H
#define CG_SIMD_H
#include <stdlib.h>

#if defined(__GNUC__) && defined(__x86_64__) && !defined(CG_PORTABLE_ONLY)
#define CG_SIMD_X86 1
/* 1 when the AVX2 + FMA copies run in this module; set at load. */
static int cg_simd_v3 = 0;

__attribute__((constructor)) static void cg_simd_init(void) {
    const char *off = getenv("CYGRAD_NO_SIMD");
    __builtin_cpu_init();
    cg_simd_v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                 && !(off != NULL && off[0] != '\0' && !(off[0] == '0' && off[1] == '\0'));
}

/* The CPU has AVX2 (the *_avx2 modules need no more), whatever
   CYGRAD_NO_SIMD says. */
static inline int cg_cpu_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

#define CG_SIMD_FN(ret, name, params, args, ...)                          \
    __attribute__((target("avx2,fma"))) static ret name##_v3 params       \
        __VA_ARGS__                                                       \
    static ret name##_v0 params __VA_ARGS__                               \
    static inline ret name params {                                       \
        return cg_simd_v3 ? name##_v3 args : name##_v0 args;              \
    }
#else
#define CG_SIMD_X86 0
static int cg_simd_v3 = 0;
static inline int cg_cpu_avx2(void) { return 0; }
#define CG_SIMD_FN(ret, name, params, args, ...) static ret name params __VA_ARGS__
#endif

/* Which copies this module runs: 1 = AVX2 + FMA, 0 = portable. */
static inline int cg_simd_level(void) { return cg_simd_v3; }

#endif
