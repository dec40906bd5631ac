/* CG_SIMD_FN: one C helper compiled three times on x86-64: for AVX-512
   (F/VL/BW/DQ, with FMA), for AVX2 + FMA (per-function target attributes,
   so the module itself is built for the baseline and no -m flag is
   needed), and for the baseline, with a dispatcher that calls the widest
   copy this CPU runs (__builtin_cpu_supports).  The choice is made once,
   when the module is loaded (cg_simd_init below), so one wheel runs on any
   x86-64.  CYGRAD_NO_SIMD=1 runs the portable loops and CYGRAD_SIMD=avx2
   caps the choice at AVX2 (the tests run every level a CPU has).
   Elsewhere (aarch64, other compilers) the helper is compiled once,
   plainly, and the compiler's own vectorizer serves the target.

   Use:  CG_SIMD_FN(ret, name, (params), (args), { body })
   The body may hold commas but no preprocessor directive.  An earlier
   version used GCC's target_clones, whose ifunc resolver runs during
   relocation and cannot be steered by the environment. */
#ifndef CG_SIMD_H
#define CG_SIMD_H
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__) && !defined(CG_PORTABLE_ONLY)
#define CG_SIMD_X86 1
/* The copies that run in this module, set at load: 2 = AVX-512, 1 = AVX2 +
   FMA, 0 = portable. */
static int cg_simd_v3 = 0;

static int cg_env_set(const char *name) {
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' && !(v[0] == '0' && v[1] == '\0');
}

__attribute__((constructor)) static void cg_simd_init(void) {
    const char *cap = getenv("CYGRAD_SIMD");
    __builtin_cpu_init();
    if (cg_env_set("CYGRAD_NO_SIMD"))
        cg_simd_v3 = 0;
    else if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
             && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")
             && __builtin_cpu_supports("fma")
             && !(cap != NULL && strcmp(cap, "avx2") == 0))
        cg_simd_v3 = 2;
    else
        cg_simd_v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* The CPU has AVX2 (the *_avx2 modules need no more), whatever
   CYGRAD_NO_SIMD says. */
static inline int cg_cpu_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

#define CG_SIMD_FN(ret, name, params, args, ...)                          \
    __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"))) \
        static ret name##_v4 params __VA_ARGS__                           \
    __attribute__((target("avx2,fma"))) static ret name##_v3 params       \
        __VA_ARGS__                                                       \
    static ret name##_v0 params __VA_ARGS__                               \
    static inline ret name params {                                       \
        return cg_simd_v3 == 2 ? name##_v4 args                           \
             : cg_simd_v3 ? name##_v3 args : name##_v0 args;              \
    }
#else
#define CG_SIMD_X86 0
static int cg_simd_v3 = 0;
static inline int cg_cpu_avx2(void) { return 0; }
#define CG_SIMD_FN(ret, name, params, args, ...) static ret name params __VA_ARGS__
#endif

/* Which copies this module runs: 2 = AVX-512, 1 = AVX2 + FMA, 0 = portable. */
static inline int cg_simd_level(void) { return cg_simd_v3; }

#endif
