/* CG_CLONES: compile a C helper twice, for x86-64-v3 (AVX2 + FMA) and for
   the baseline; the loader picks one per machine (GCC target_clones, an
   ifunc), so the wheel stays portable (no -march flag) and AVX2 machines
   get 8 floats per instruction.  GCC < 12 has no x86-64-v3 clone, so it gets
   AVX2 without FMA.  Elsewhere the helpers are compiled once, plainly. */
#ifndef CG_SIMD_H
#define CG_SIMD_H
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#if __GNUC__ >= 12
#define CG_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CG_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#else
#define CG_CLONES
#endif
#endif
