/* Stacks of small matrix products, C[b] = A[b] @ B[b] (bmm.pyx).
 *
 * NumPy's matmul of a stack calls BLAS once per matrix, and for the small
 * matrices of attention heads (32 x 16 @ 16 x 32) each call costs ~1.3 us,
 * mostly BLAS's setup: 64 of them took 88 us, torch's bmm 65.  Here one C
 * loop runs the whole stack: B[b] with contiguous rows a multiple of two
 * vectors long is read in place; any other B is copied once into a
 * zero-padded, row-major panel (a transposed view by register transposes,
 * other strides element by element); then each block of 4 rows x 2
 * vectors of C is accumulated in registers over k, A's entries broadcast
 * from wherever they lie (any strides).
 *
 * Each C entry is one running sum over k in order (acc += a * b, which the
 * AVX2 + FMA copy contracts into an FMA): deterministic, and as accurate as
 * BLAS's blocked sums at these depths.  The batch is up to two levels (the
 * caller merges contiguous batch dimensions), each with its own strides for
 * A and B (0 for a broadcast operand); C is C-contiguous (B1, B2, M, N).
 * The panel ``pack`` holds K * round_up(N, 2 * lanes) elements.  A B
 * narrower than one vector (N < lanes: matrix-vector and batched dot
 * products) skips the panel: padding it to 2 * lanes columns made
 * 10000 products of 1 x 64 @ 64 x 1 cost 3 ms (torch's bmm: about 1). */
#ifndef CG_BMM_H
#define CG_BMM_H
#include <string.h>
#include "cg_simd.h"

typedef float cg_bmm_vf __attribute__((vector_size(32)));
typedef double cg_bmm_vd __attribute__((vector_size(32)));

#if defined(__GNUC__) && !defined(__clang__)
#define CG_BMM_INLINE static inline __attribute__((always_inline))
#else
#define CG_BMM_INLINE static inline
#endif
#define CG_BMM_SH(a, b, ...) __builtin_shufflevector((a), (b), __VA_ARGS__)

/* The panel of B = X^T where X's rows (N of them, ``sx`` apart) hold K
   contiguous elements (the transposed view in q @ k^T and dY @ V^T):
   pack[k][j] = x[j * sx + k], padded with zeros to Np columns.  Blocks of
   L x L (L = the vector's lanes: 8 floats, 4 doubles) are transposed in
   registers, so each X row is read as vectors; the element-wise gather it
   replaces read a new cache line per element and cost a third of q @ k^T
   at 64 x 32 x 16 x 32.  TRANSPOSE(r, c) turns the rows r[0..L-1] into the
   columns c[0..L-1]. */
#define CG_BMM_PACK_T(S, T, V, TRANSPOSE)                                       \
CG_BMM_INLINE void cg_bmm_pack_t_##S(const T *x, Py_ssize_t sx, T *pack,        \
                                     Py_ssize_t Np, Py_ssize_t K, Py_ssize_t N) { \
    const Py_ssize_t L = (Py_ssize_t)(sizeof(V) / sizeof(T));                   \
    Py_ssize_t j0, k0, j, k;                                                    \
    for (j0 = 0; j0 + L <= N; j0 += L) {                                        \
        for (k0 = 0; k0 + L <= K; k0 += L) {                                    \
            V r[8], c[8];                                                       \
            for (j = 0; j < L; j++)                                             \
                memcpy(&r[j], x + (j0 + j) * sx + k0, sizeof(V));               \
            TRANSPOSE(r, c);                                                    \
            for (k = 0; k < L; k++)                                             \
                memcpy(pack + (k0 + k) * Np + j0, &c[k], sizeof(V));            \
        }                                                                       \
        for (k = k0; k < K; k++)                                                \
            for (j = j0; j < j0 + L; j++)                                       \
                pack[k * Np + j] = x[j * sx + k];                               \
    }                                                                           \
    for (k = 0; k < K; k++) {                                                   \
        for (j = j0; j < N; j++)                                                \
            pack[k * Np + j] = x[j * sx + k];                                   \
        for (; j < Np; j++)                                                     \
            pack[k * Np + j] = 0;                                               \
    }                                                                           \
}

/* 8 x 8 floats: pairs interleaved, then pairs of pairs, then the halves */
#define CG_BMM_T8(r, c) do {                                                    \
        cg_bmm_vf t_[8], u_[8];                                                 \
        int q_;                                                                 \
        for (q_ = 0; q_ < 8; q_ += 2) {                                         \
            t_[q_] = CG_BMM_SH(r[q_], r[q_ + 1], 0, 8, 1, 9, 4, 12, 5, 13);     \
            t_[q_ + 1] = CG_BMM_SH(r[q_], r[q_ + 1], 2, 10, 3, 11, 6, 14, 7, 15); \
        }                                                                       \
        for (q_ = 0; q_ < 8; q_ += 4) {                                         \
            u_[q_] = CG_BMM_SH(t_[q_], t_[q_ + 2], 0, 1, 8, 9, 4, 5, 12, 13);   \
            u_[q_ + 1] = CG_BMM_SH(t_[q_], t_[q_ + 2], 2, 3, 10, 11, 6, 7, 14, 15); \
            u_[q_ + 2] = CG_BMM_SH(t_[q_ + 1], t_[q_ + 3], 0, 1, 8, 9, 4, 5, 12, 13); \
            u_[q_ + 3] = CG_BMM_SH(t_[q_ + 1], t_[q_ + 3], 2, 3, 10, 11, 6, 7, 14, 15); \
        }                                                                       \
        /* u_[0..3]: columns 0-3 of rows 0-3 (low half), 4-7 (high half);    \
           u_[4..7]: the same for rows 4-7 */                                   \
        for (q_ = 0; q_ < 4; q_++) {                                            \
            c[q_] = CG_BMM_SH(u_[q_], u_[q_ + 4], 0, 1, 2, 3, 8, 9, 10, 11);    \
            c[q_ + 4] = CG_BMM_SH(u_[q_], u_[q_ + 4], 4, 5, 6, 7, 12, 13, 14, 15); \
        }                                                                       \
    } while (0)

/* 4 x 4 doubles: pairs interleaved, then the halves */
#define CG_BMM_T4(r, c) do {                                                    \
        cg_bmm_vd t0_ = CG_BMM_SH(r[0], r[1], 0, 4, 2, 6);                      \
        cg_bmm_vd t1_ = CG_BMM_SH(r[0], r[1], 1, 5, 3, 7);                      \
        cg_bmm_vd t2_ = CG_BMM_SH(r[2], r[3], 0, 4, 2, 6);                      \
        cg_bmm_vd t3_ = CG_BMM_SH(r[2], r[3], 1, 5, 3, 7);                      \
        c[0] = CG_BMM_SH(t0_, t2_, 0, 1, 4, 5);                                 \
        c[1] = CG_BMM_SH(t1_, t3_, 0, 1, 4, 5);                                 \
        c[2] = CG_BMM_SH(t0_, t2_, 2, 3, 6, 7);                                 \
        c[3] = CG_BMM_SH(t1_, t3_, 2, 3, 6, 7);                                 \
    } while (0)

CG_BMM_PACK_T(f, float, cg_bmm_vf, CG_BMM_T8)
CG_BMM_PACK_T(d, double, cg_bmm_vd, CG_BMM_T4)

#define CG_BMM_DEF(S, T, V)                                                     \
CG_SIMD_FN(void, cg_bmm_##S, (const T *A, const T *B, T *C, T *pack,            \
        Py_ssize_t B1, Py_ssize_t B2, Py_ssize_t M, Py_ssize_t N, Py_ssize_t K, \
        Py_ssize_t sa1, Py_ssize_t sa2, Py_ssize_t sam, Py_ssize_t sak,         \
        Py_ssize_t sb1, Py_ssize_t sb2, Py_ssize_t sbk, Py_ssize_t sbn),        \
        (A, B, C, pack, B1, B2, M, N, K, sa1, sa2, sam, sak, sb1, sb2, sbk, sbn), { \
    const Py_ssize_t L = (Py_ssize_t)(sizeof(V) / sizeof(T));                   \
    const Py_ssize_t Np = (N + 2 * L - 1) / (2 * L) * (2 * L);                  \
    const T *packed = NULL, *panel = pack;                                      \
    Py_ssize_t ps = Np;                                                         \
    Py_ssize_t b1, b2, i0, j0, k, r, j;                                         \
    for (b1 = 0; b1 < B1; b1++)                                                 \
        for (b2 = 0; b2 < B2; b2++) {                                           \
            const T *a = A + b1 * sa1 + b2 * sa2;                               \
            const T *b = B + b1 * sb1 + b2 * sb2;                               \
            T *c = C + (b1 * B2 + b2) * M * N;                                  \
            if (N < L) {    /* narrow B (x @ v): plain sums, no padded panel */ \
                for (r = 0; r < M; r++)                                         \
                    for (j = 0; j < N; j++) {                                   \
                        T s = 0;                                                \
                        for (k = 0; k < K; k++)                                 \
                            s += a[r * sam + k * sak] * b[k * sbk + j * sbn];   \
                        c[r * N + j] = s;                                       \
                    }                                                           \
                continue;                                                       \
            }                                                                   \
            if (sbn == 1 && N == Np) {  /* rows of B serve as the panel */   \
                panel = b;                                                      \
                ps = sbk;                                                       \
            } else if (b != packed) { /* a broadcast B is packed once */        \
                if (sbk == 1)         /* B^T of rows: transposed in blocks */   \
                    cg_bmm_pack_t_##S(b, sbn, pack, Np, K, N);                  \
                else                                                            \
                    for (k = 0; k < K; k++) {                                   \
                        T *row = pack + k * Np;                                 \
                        for (j = 0; j < N; j++) row[j] = b[k * sbk + j * sbn];  \
                        for (; j < Np; j++) row[j] = 0;                         \
                    }                                                           \
                packed = b;                                                     \
                panel = pack;                                                   \
                ps = Np;                                                        \
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
                            memcpy(&p0, panel + k * ps + j0, sizeof(V));        \
                            memcpy(&p1, panel + k * ps + j0 + L, sizeof(V));    \
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
                            memcpy(&p0, panel + k * ps + j0, sizeof(V));        \
                            memcpy(&p1, panel + k * ps + j0 + L, sizeof(V));    \
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
