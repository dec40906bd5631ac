/* Stacks of small matrix products, C[b] = A[b] @ B[b] (bmm.pyx).
 *
 * NumPy's matmul of a stack calls BLAS once per matrix, and for the small
 * matrices of attention heads (32 x 16 @ 16 x 32) each call costs ~1.3 us,
 * mostly BLAS's setup: 64 of them took 88 us, torch's bmm 65.  Here one C
 * loop runs the whole stack: B[b] is copied once into a zero-padded,
 * row-major panel (any strides, a transposed view included), then each
 * block of 4 rows x 2 vectors of C is accumulated in registers over k, A's
 * entries broadcast from wherever they lie (any strides).
 *
 * Each C entry is one running sum over k in order (acc += a * b, which the
 * AVX2 + FMA copy contracts into an FMA): deterministic, and as accurate as
 * BLAS's blocked sums at these depths.  The batch is up to two levels (the
 * caller merges contiguous batch dimensions), each with its own strides for
 * A and B (0 for a broadcast operand); C is C-contiguous (B1, B2, M, N).
 * The panel ``pack`` holds K * round_up(N, 2 * lanes) elements. */
#ifndef CG_BMM_H
#define CG_BMM_H
#include <string.h>
#include "cg_simd.h"

typedef float cg_bmm_vf __attribute__((vector_size(32)));
typedef double cg_bmm_vd __attribute__((vector_size(32)));

#define CG_BMM_DEF(S, T, V)                                                     \
CG_SIMD_FN(void, cg_bmm_##S, (const T *A, const T *B, T *C, T *pack,            \
        Py_ssize_t B1, Py_ssize_t B2, Py_ssize_t M, Py_ssize_t N, Py_ssize_t K, \
        Py_ssize_t sa1, Py_ssize_t sa2, Py_ssize_t sam, Py_ssize_t sak,         \
        Py_ssize_t sb1, Py_ssize_t sb2, Py_ssize_t sbk, Py_ssize_t sbn),        \
        (A, B, C, pack, B1, B2, M, N, K, sa1, sa2, sam, sak, sb1, sb2, sbk, sbn), { \
    const Py_ssize_t L = (Py_ssize_t)(sizeof(V) / sizeof(T));                   \
    const Py_ssize_t Np = (N + 2 * L - 1) / (2 * L) * (2 * L);                  \
    const T *packed = NULL;                                                     \
    Py_ssize_t b1, b2, i0, j0, k, r, j;                                         \
    for (b1 = 0; b1 < B1; b1++)                                                 \
        for (b2 = 0; b2 < B2; b2++) {                                           \
            const T *a = A + b1 * sa1 + b2 * sa2;                               \
            const T *b = B + b1 * sb1 + b2 * sb2;                               \
            T *c = C + (b1 * B2 + b2) * M * N;                                  \
            if (b != packed) {        /* a broadcast B is packed once */        \
                for (k = 0; k < K; k++) {                                       \
                    T *row = pack + k * Np;                                     \
                    for (j = 0; j < N; j++) row[j] = b[k * sbk + j * sbn];      \
                    for (; j < Np; j++) row[j] = 0;                             \
                }                                                               \
                packed = b;                                                     \
            }                                                                   \
            for (i0 = 0; i0 < M; i0 += 4) {                                     \
                Py_ssize_t rows = M - i0 < 4 ? M - i0 : 4;                      \
                const T *ar = a + i0 * sam;                                     \
                for (j0 = 0; j0 < Np; j0 += 2 * L) {                            \
                    V acc[4][2];                                                \
                    T out[2 * (sizeof(V) / sizeof(T))];                         \
                    Py_ssize_t w = N - j0 < 2 * L ? N - j0 : 2 * L;             \
                    for (r = 0; r < 4; r++)   /* not memset: a rep stos */      \
                        acc[r][0] = acc[r][1] = (V){0};                         \
                    if (rows == 4) {                                            \
                        for (k = 0; k < K; k++) {                               \
                            V p0, p1;                                           \
                            memcpy(&p0, pack + k * Np + j0, sizeof(V));         \
                            memcpy(&p1, pack + k * Np + j0 + L, sizeof(V));     \
                            T x0 = ar[k * sak], x1 = ar[sam + k * sak];         \
                            T x2 = ar[2 * sam + k * sak], x3 = ar[3 * sam + k * sak]; \
                            acc[0][0] += x0 * p0; acc[0][1] += x0 * p1;         \
                            acc[1][0] += x1 * p0; acc[1][1] += x1 * p1;         \
                            acc[2][0] += x2 * p0; acc[2][1] += x2 * p1;         \
                            acc[3][0] += x3 * p0; acc[3][1] += x3 * p1;         \
                        }                                                       \
                    } else {                                                    \
                        for (k = 0; k < K; k++) {                               \
                            V p0, p1;                                           \
                            memcpy(&p0, pack + k * Np + j0, sizeof(V));         \
                            memcpy(&p1, pack + k * Np + j0 + L, sizeof(V));     \
                            for (r = 0; r < rows; r++) {                        \
                                T x = ar[r * sam + k * sak];                    \
                                acc[r][0] += x * p0;                            \
                                acc[r][1] += x * p1;                            \
                            }                                                   \
                        }                                                       \
                    }                                                           \
                    for (r = 0; r < rows; r++) {                                \
                        T *dst = c + (i0 + r) * N + j0;                         \
                        if (w == 2 * L) {     /* constant sizes: inlined */     \
                            memcpy(dst, &acc[r][0], sizeof(V));                 \
                            memcpy(dst + L, &acc[r][1], sizeof(V));             \
                        } else {                                                \
                            memcpy(out, &acc[r][0], sizeof(V));                 \
                            memcpy(out + L, &acc[r][1], sizeof(V));             \
                            for (j = 0; j < w; j++) dst[j] = out[j];            \
                        }                                                       \
                    }                                                           \
                }                                                               \
            }                                                                   \
        }                                                                       \
})

CG_BMM_DEF(f, float, cg_bmm_vf)
CG_BMM_DEF(d, double, cg_bmm_vd)

#endif
