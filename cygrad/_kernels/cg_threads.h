/* The thread pool's C side (see threads.pyx). */
#ifndef CG_THREADS_H
#define CG_THREADS_H

#include <pthread.h>
/* GNU OpenMP's thread pool does not survive fork(): a child that opens
   a parallel region after its parent ran one waits forever for workers
   that were never copied.  The child handler turns threading off there
   (torch does the same). */
static int cg_team_used = 0, cg_after_fork = 0;
static void cg_mark_used(void) { cg_team_used = 1; }
static void cg_child(void) { if (cg_team_used) cg_after_fork = 1; }
static int cg_watch_fork(void) { return pthread_atfork(NULL, NULL, cg_child); }
/* Regions running now, from any Python thread: a second one would put
   more threads than cores to work, so it runs its blocks serially. */
static int cg_active = 0;
static int cg_enter(void) {
    if (__atomic_fetch_add(&cg_active, 1, __ATOMIC_ACQ_REL) == 0) return 1;
    __atomic_fetch_sub(&cg_active, 1, __ATOMIC_ACQ_REL);
    return 0;
}
static void cg_leave(void) { __atomic_fetch_sub(&cg_active, 1, __ATOMIC_ACQ_REL); }
#include <time.h>
/* CPU time of the calling thread (s): the work of a block, without the
   time the thread spent waiting for a core. */
static double cg_cpu_now(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0.0;
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
#ifdef _OPENMP
#include <omp.h>
static int cg_in_parallel(void) { return omp_in_parallel(); }
static double cg_now(void) { return omp_get_wtime(); }
#define CG_OPENMP 1
#else
static int cg_in_parallel(void) { return 0; }
static double cg_now(void) { return 0.0; }
#define CG_OPENMP 0
#endif

#endif
