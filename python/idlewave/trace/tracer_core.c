/* idlewave PMPI tracer: the recording runtime.
 *
 * This file is not compiled on its own: gen_tracer.py pastes it into the
 * generated tracer after the configuration it derived from the MPI's mpi.h
 * (IW_NFUNCS, iw_names[], IW_HAVE_* switches) and before the wrappers, which
 * call the iw_* functions below. The file format is docs/trace-format.md
 * (version 2); every field written here follows that document.
 *
 * Cost model: a wrapper takes two clock readings, one hash lookup for its
 * communicator (usually a one-entry cache hit), one for a request, and appends
 * 48 bytes to an in-memory buffer. No malloc on that path for calls with at
 * most IW_SMALL requests or members; the buffer goes to the file with write()
 * when full, and records already written are patched with pwrite(). */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- format */

/* ops and flags: generated from src/trace/ops.txt, the table the readers share */
#include "iw_ops.h"

/* creation kinds (comm_new tag) */
enum {
    K_SPLIT = 1, K_SPLIT_TYPE, K_DUP, K_IDUP, K_CREATE, K_CREATE_GROUP, K_CART_CREATE, K_CART_SUB,
    K_GRAPH_CREATE, K_DIST_GRAPH_CREATE, K_DIST_GRAPH_CREATE_ADJACENT, K_INTERCOMM_CREATE,
    K_INTERCOMM_MERGE, K_FIRST_SEEN
};

typedef struct {
    uint16_t op, flags;
    uint32_t comm;
    int32_t peer, tag;
    uint64_t bytes, req;
    double t0, t1;
} iw_rec;
typedef char iw_rec_is_48_bytes[sizeof(iw_rec) == 48 ? 1 : -1];

#define IW_HEADER 64
#define IW_NOCOMM UINT32_MAX
#define IW_NONE (-1)     /* peer/tag: MPI_ANY_SOURCE / MPI_ANY_TAG / none */
#define IW_NOTAG 0       /* the tag of records that have none (init, collectives, completions of sends ...) */
#define IW_PROCNULL (-2) /* peer: MPI_PROC_NULL */
#define IW_SMALL 64      /* requests, members or values handled on the stack */

/* ----------------------------------------------------------------- state */

static int iw_on;           /* between MPI_Init and MPI_Finalize, with an open file */
static int iw_threaded;     /* MPI_THREAD_MULTIPLE: take iw_mu around bookkeeping */
static pthread_mutex_t iw_mu = PTHREAD_MUTEX_INITIALIZER;
/* Recursion guard: MPI calls made inside a wrapped call (by the MPI library,
 * by a Fortran binding that calls the C one, or by the tracer itself) go
 * straight to the implementation instead of being recorded twice. */
static __thread int iw_depth __attribute__((tls_model("initial-exec")));
static int iw_fd = -1;
static int iw_rank, iw_size;
static char *iw_buf;        /* records not yet written; iw_buf[0] is at file offset iw_flushed */
static size_t iw_len, iw_cap;
static uint64_t iw_flushed = IW_HEADER;
static uint64_t iw_nrec;
static uint64_t iw_last = UINT64_MAX; /* file offset of the last record, for poll merging */
static uint64_t iw_next_req = 1;      /* request ids: never 0, never reused */
static uint32_t iw_next_comm = 1;     /* communicator ids: 0 is MPI_COMM_WORLD, never reused */
static MPI_Group iw_world_group = MPI_GROUP_NULL;
/* Per wrapped function: calls and seconds inside; footer slot assigned at the
 * first call, so the footer lists only the functions this rank called and an
 * `other` record's tag is that slot. */
static uint64_t iw_calls[IW_NFUNCS];
static double iw_secs[IW_NFUNCS];
static int32_t iw_slot[IW_NFUNCS]; /* slot + 1; 0 = not called yet */
static int iw_order[IW_NFUNCS];
static int iw_nslots;

#define IW_ACTIVE() (iw_on && !iw_depth)
#define IW_LOCK() do { if (iw_threaded) pthread_mutex_lock(&iw_mu); } while (0)
#define IW_UNLOCK() do { if (iw_threaded) pthread_mutex_unlock(&iw_mu); } while (0)

/* CLOCK_MONOTONIC, also usable before MPI_Init. */
static inline double iw_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Timestamps are MPI_Wtime() values: the monotonic clock plus an offset
 * measured against MPI_Wtime at MPI_Init (to within ~20 ns; Open MPI's
 * MPI_Wtime is that same clock). Reading it directly saves a call into the
 * MPI library on every timestamp, two per wrapped call.
 *
 * IDLEWAVE_TRACE_CLOCK=cpu (header field `clock` = IW_CLOCK_CPU): a virtual
 * clock per thread that starts at the wall time of the thread's first
 * timestamp, advances by the thread's CPU time (CLOCK_THREAD_CPUTIME_ID)
 * between calls and by the wall clock inside them. The replay's computation
 * (next call's t0 minus the previous call's t1) is then the CPU time of each
 * gap, which ranks sharing cores do not inflate, and each call keeps its
 * wall-clock duration. Wrappers take t0 = iw_enter() and t1 = iw_leave(t0);
 * iw_now() is the time outside a call (records made by the bookkeeping). */
enum { IW_CLOCK_WALL = 0, IW_CLOCK_CPU = 1 };
static int iw_clock;
static double iw_wtime_offset;
/* The tracer's own time after each call (recording, buffer flushes) is taken
 * out of the timeline, so the computation the replay sees is the program's,
 * not the program's plus the tracer's: a code that polls MPI millions of
 * times would otherwise replay tens of percent slower than it runs.
 * IDLEWAVE_TRACE_OVERHEAD=keep leaves it in (the raw wall clock). The total
 * removed goes to the footer (`tracer_s`). Process-wide, in nanoseconds, so
 * that the threads of one rank keep one timeline. */
static int iw_remove_overhead = 1;
static int64_t iw_hidden_ns;
typedef struct { double v, cpu, wall_in; int started; } iw_vclock;
static __thread iw_vclock iw_vc __attribute__((tls_model("initial-exec")));

static inline double iw_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Takes `ns` of the tracer's time out of the timeline (atomically only when
 * threads may call MPI at once: a locked add per call is measurable). */
static inline void iw_hide(int64_t ns) {
    if (iw_threaded) __atomic_fetch_add(&iw_hidden_ns, ns, __ATOMIC_RELAXED);
    else iw_hidden_ns += ns;
}

/* A run of failed polls (a loop of MPI_Test until a message comes) reads no
 * clock after its first: a clock reading costs about 30 ns on a small virtual
 * machine, where a failed MPI_Testany costs 16 ns, and two readings per poll
 * made such a loop 5-6 times slower traced. The first failed poll is timed
 * as any call and opens the run (iw_streak); the next ones only count
 * themselves into its poll record; the first clock reading after them (the
 * next call's entry, or any record the bookkeeping makes) closes it: the
 * poll record ends there, as it would have ended at the last poll's return
 * plus the few ns between that and the next call. The tracer's own time in
 * the run (a few ns per poll) stays in the poll record, which the replay
 * charges as computation. With the wall clock and one thread calling MPI
 * at a time only (iw_fast_polls). */
static int iw_fast_polls, iw_streak, iw_streak_idx, iw_last_idx;
static double iw_streak_from; /* the first poll's end: the run's time from there is added to its call's seconds */
static void iw_end_streak(double t);

/* The clock, without closing a run of polls (the tracer's own readings). */
static inline double iw_clock_now(void) {
    if (iw_clock == IW_CLOCK_WALL)
        return iw_mono() + iw_wtime_offset - 1e-9 * (double)__atomic_load_n(&iw_hidden_ns, __ATOMIC_RELAXED);
    if (!iw_vc.started) {
        iw_vc.v = iw_mono() + iw_wtime_offset;
        iw_vc.cpu = iw_cpu();
        iw_vc.started = 1;
        return iw_vc.v;
    }
    return iw_vc.v + (iw_cpu() - iw_vc.cpu);
}

static inline double iw_now(void) {
    double t = iw_clock_now();
    if (iw_streak) iw_end_streak(t);
    return t;
}

static inline double iw_enter(void) {
    double t = iw_now();
    if (iw_clock != IW_CLOCK_WALL) iw_vc.wall_in = iw_mono();
    return t;
}

static double iw_read_s; /* what one clock read costs (iw_calibrate) */

static inline double iw_leave(double t0) {
    if (iw_clock == IW_CLOCK_WALL) {
        double t1 = iw_clock_now();
        if (!iw_remove_overhead) return t1;
        /* the end of t0's read and the start of this one are the tracer's */
        double d = t1 - t0 < iw_read_s ? t1 - t0 : iw_read_s;
        if (d > 0) iw_hide((int64_t)(d * 1e9));
        return t1 - d;
    }
    double t1 = t0 + (iw_mono() - iw_vc.wall_in);
    iw_vc.v = t1;
    iw_vc.cpu = iw_cpu();
    return t1;
}

/* The end of a wrapper. The tracer's time from t1 on is the rest of t1's
 * read, its bookkeeping and the start of the next call's t0 read: one read
 * and the bookkeeping. A clock read here would cost as much again, so one
 * call in IW_SAMPLE reads it and measures the bookkeeping (a flush has
 * already taken itself out); the others take the median of the last
 * IW_KEPT samples, none before IW_FIRST samples (a cold first call must not
 * be taken for every call). With the CPU clock the next gap's CPU time
 * starts here instead. */
#define IW_SAMPLE 32
#define IW_KEPT 8
#define IW_FIRST 3
static __thread unsigned iw_calls_seen __attribute__((tls_model("initial-exec")));
static __thread unsigned iw_samples __attribute__((tls_model("initial-exec")));
static __thread double iw_sampled[IW_KEPT] __attribute__((tls_model("initial-exec")));
static __thread double iw_bookkeeping_s __attribute__((tls_model("initial-exec")));

static int iw_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void iw_bookkeeping_sample(double b) {
    iw_sampled[iw_samples++ % IW_KEPT] = b;
    unsigned n = iw_samples < IW_KEPT ? iw_samples : IW_KEPT;
    if (n < IW_FIRST) return;
    double v[IW_KEPT];
    memcpy(v, iw_sampled, n * sizeof v[0]);
    qsort(v, n, sizeof v[0], iw_cmp_double);
    iw_bookkeeping_s = v[n / 2];
}

static inline void iw_tracer_spent(double t1) {
    if (!iw_remove_overhead) return;
    if (iw_clock == IW_CLOCK_WALL) {
        double spent = iw_read_s + iw_bookkeeping_s;
        if (iw_calls_seen++ % IW_SAMPLE == 0) {
            double now = iw_clock_now(), b = now - t1 - iw_read_s; /* this read's own cost is the tracer's too */
            iw_bookkeeping_sample(b > 0 ? b : 0);
            spent = (now - t1) + iw_read_s;
        }
        iw_hide((int64_t)(spent * 1e9));
    } else {
        double cpu = iw_cpu();
        iw_hide((int64_t)((cpu - iw_vc.cpu) * 1e9));
        iw_vc.cpu = cpu;
    }
}

static void iw_calibrate(void) {
    double best = 1e30;
    for (int i = 0; i < 16; i++) {
        double m0 = iw_mono(), w = PMPI_Wtime(), m1 = iw_mono();
        if (m1 - m0 < best) { best = m1 - m0; iw_wtime_offset = w - 0.5 * (m0 + m1); }
    }
    /* one read's cost: the median step between back-to-back reads */
    enum { N = 255 };
    double step[N], prev = iw_mono();
    for (int i = 0; i < N; i++) {
        double t = iw_mono();
        step[i] = t - prev;
        prev = t;
    }
    qsort(step, N, sizeof step[0], iw_cmp_double);
    iw_read_s = step[N / 2];
}

static void iw_warn(const char *what) {
    fprintf(stderr, "idlewave tracer (rank %d): %s\n", iw_rank, what);
}

/* ------------------------------------------------ memory: checked, always */

#define IW_OOM_EXIT 71 /* EX_OSERR */
static void iw_flush(int keep_poll);

/* Out of memory: one line and a non-zero exit, never a trace that silently
 * lost records. What the buffer holds goes to the file first; the header
 * stays incomplete, which readers report. */
static void iw_out_of_memory(size_t n) {
    static int dying;
    if (!dying) {
        dying = 1;
        fprintf(stderr, "idlewave tracer (rank %d): out of memory (allocating %zu bytes): the trace is incomplete; exiting\n",
                iw_rank, n);
        fflush(stderr);
        if (iw_on) { iw_on = 0; iw_flush(0); }
    }
    _exit(IW_OOM_EXIT);
}

/* Every allocation of the tracer (tracer_core.c and the generated wrappers)
 * goes through these. */
static void *iw_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) iw_out_of_memory(n);
    return p;
}

static void *iw_xcalloc(size_t k, size_t n) {
    void *p = calloc(k ? k : 1, n ? n : 1);
    if (!p) iw_out_of_memory(k * n);
    return p;
}

static void *iw_xrealloc(void *q, size_t n) {
    void *p = realloc(q, n ? n : 1);
    if (!p) iw_out_of_memory(n);
    return p;
}

/* ------------------------------------------------ the MPI it was built for */

/* gen_tracer.py defines what it found at generation: the MPI's name and
 * version (from mpi.h's macros), the mpicc, the libmpi a program built by
 * that mpicc loads, and the directories (real paths) of that MPI's
 * libraries. */
#ifndef IW_BUILT_FAMILY
#define IW_BUILT_FAMILY ""
#define IW_BUILT_VERSION ""
#define IW_BUILT_MPICC ""
#define IW_BUILT_LIBRARY ""
static const char *const iw_built_dirs[] = {NULL};
#endif

#define IW_MISMATCH_EXIT 78 /* EX_CONFIG */
#define IW_QUIET_EXIT_DELAY_S 3 /* the speaking process's head start */
static char iw_ran_library[PATH_MAX]; /* the libmpi this process calls (real path) */

/* The process that speaks for the job: rank 0 in the launcher's environment,
 * or any process when no launcher says. */
static int iw_speaks(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return strcmp(v, "0") == 0;
    }
    return 1;
}

/* A shared object of an MPI implementation (by its file name; the same list
 * as gen_tracer.MPI_LIBRARY_PREFIXES). */
static int iw_mpi_object(const char *path) {
    static const char *const prefixes[] = {"libmpi.", "libmpi_", "libmpi-", "libmpich", "libmpifort", "libmpicxx",
                                           "libopen-pal.", "libopen-rte.", "libpmpi", NULL};
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    for (int i = 0; prefixes[i]; i++)
        if (!strncmp(b, prefixes[i], strlen(prefixes[i]))) return 1;
    return 0;
}

/* The directory of a file's real path. */
static void iw_real_dir(const char *path, char *out, size_t n) {
    char r[PATH_MAX];
    if (!realpath(path, r)) snprintf(r, sizeof r, "%s", path);
    char *slash = strrchr(r, '/');
    if (slash == r) slash[1] = 0;
    else if (slash) *slash = 0;
    snprintf(out, n, "%s", r);
}

static int iw_in_built_dirs(const char *dir, const char *fallback) {
    if (!iw_built_dirs[0]) return !strcmp(dir, fallback);
    for (int i = 0; iw_built_dirs[i]; i++)
        if (!strcmp(dir, iw_built_dirs[i])) return 1;
    return 0;
}

typedef struct { const char *home; char path[PATH_MAX], dir[PATH_MAX]; } iw_stray;

/* dl_iterate_phdr: the first MPI object loaded from outside the MPI's directories. */
static int iw_find_stray(struct dl_phdr_info *info, size_t size, void *data) {
    iw_stray *s = data;
    (void)size;
    if (s->path[0] || !info->dlpi_name || !info->dlpi_name[0] || !iw_mpi_object(info->dlpi_name)) return 0;
    char dir[PATH_MAX];
    iw_real_dir(info->dlpi_name, dir, sizeof dir);
    if (!iw_in_built_dirs(dir, s->home)) {
        snprintf(s->path, sizeof s->path, "%s", info->dlpi_name);
        snprintf(s->dir, sizeof s->dir, "%s", dir);
    }
    return 0;
}

/* The running library's name: the first line of MPI_Get_library_version up
 * to its first comma, blanks squeezed ("Open MPI v4.1.4", "MPICH Version: 4.1"). */
static void iw_running_name(char *out, size_t n) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
    int len = 0;
#if MPI_VERSION >= 3
    PMPI_Get_library_version(v, &len); /* allowed before MPI_Init since MPI-3 */
#endif
    size_t k = 0;
    for (int i = 0; i < len && v[i] && v[i] != '\n' && v[i] != ',' && k + 1 < n; i++) {
        int blank = isspace((unsigned char)v[i]);
        if (blank && (k == 0 || out[k - 1] == ' ')) continue;
        out[k++] = blank ? ' ' : v[i];
    }
    while (k && out[k - 1] == ' ') k--;
    out[k] = 0;
    if (!k) snprintf(out, n, "an MPI library");
}

/* `idlewave trace build --mpicc ...` for the MPI whose libraries are in
 * `dir`: its mpicc if it is at ../bin or ../../bin (lib/<multiarch>). */
static void iw_suggest_mpicc(const char *dir, char *out, size_t n) {
    char d[PATH_MAX], c[PATH_MAX + 16];
    snprintf(d, sizeof d, "%s", dir);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(d, '/');
        if (!slash || slash == d) break;
        *slash = 0;
        snprintf(c, sizeof c, "%s/bin/mpicc", d);
        if (!access(c, X_OK)) { snprintf(out, n, "%s", c); return; }
    }
    snprintf(out, n, "<the mpicc of the application's MPI>");
}

static void iw_built_name(char *out, size_t n) {
    if (IW_BUILT_FAMILY[0]) snprintf(out, n, "%s%s%s", IW_BUILT_FAMILY, IW_BUILT_VERSION[0] ? " " : "", IW_BUILT_VERSION);
    else snprintf(out, n, "the MPI of %s", IW_BUILT_MPICC[0] ? IW_BUILT_MPICC : "its mpicc");
}

/* The processes that do not speak exit a little later: a launcher aborts the
 * job at the first non-zero exit and would kill the speaking process before
 * its line is out. */
static void iw_mismatch_exit(void) {
    if (!iw_speaks()) sleep(IW_QUIET_EXIT_DELAY_S);
    _exit(IW_MISMATCH_EXIT);
}

/* One line for the job (from the process that speaks for it), then every
 * process exits: never a run that looks traced and is not. */
static void iw_refuse(const char *running, const char *suggest_for) {
    if (iw_speaks()) {
        char built[256], cc[PATH_MAX + 64];
        iw_built_name(built, sizeof built);
        iw_suggest_mpicc(suggest_for, cc, sizeof cc);
        fprintf(stderr,
                "idlewave tracer: built for %s at %s; running with %s. No trace is written: build the tracer with the "
                "application's MPI: idlewave trace build --mpicc %s\n",
                built, iw_built_dirs[0] ? iw_built_dirs[0] : "(unknown)", running, cc);
        fflush(stderr);
    }
    iw_mismatch_exit();
}

/* Before MPI_Init: the libmpi the tracer calls must be the one it was built
 * for, and no other MPI's library may be loaded beside it (a Fortran
 * application of one MPI with a tracer of another pulls in both). */
static void iw_check_libraries(void) {
    Dl_info di;
    char dir[PATH_MAX] = "";
    if (dladdr((void *)&PMPI_Init, &di) && di.dli_fname) {
        if (!realpath(di.dli_fname, iw_ran_library)) snprintf(iw_ran_library, sizeof iw_ran_library, "%s", di.dli_fname);
        iw_real_dir(di.dli_fname, dir, sizeof dir);
    }
    char running[MPI_MAX_LIBRARY_VERSION_STRING + 2 * PATH_MAX + 256];
    if (dir[0] && !iw_in_built_dirs(dir, dir)) {
        char name[MPI_MAX_LIBRARY_VERSION_STRING + 1];
        iw_running_name(name, sizeof name);
        snprintf(running, sizeof running, "%s at %s", name, dir);
        iw_refuse(running, dir);
    }
    iw_stray s;
    memset(&s, 0, sizeof s);
    s.home = dir;
    dl_iterate_phdr(iw_find_stray, &s);
    if (s.path[0]) {
        snprintf(running, sizeof running, "two MPIs in one process: that one, which the tracer loaded, and the "
                 "application's at %s (%s)", s.dir, s.path);
        iw_refuse(running, s.dir);
    }
}

/* MPI_Init from Fortran through a binding the tracer does not wrap (see
 * gen_tracer.fortran_guards): another MPI's (refused as such), else one the
 * generator did not find. */
static void iw_fortran_unwrapped(void) {
    iw_check_libraries();
    if (iw_speaks()) {
        char built[256], cc[PATH_MAX + 64], dir[PATH_MAX] = "";
        Dl_info di;
        void *real = dlsym(RTLD_DEFAULT, "pmpi_init_");
        if (real && dladdr(real, &di) && di.dli_fname) iw_real_dir(di.dli_fname, dir, sizeof dir);
        iw_built_name(built, sizeof built);
        iw_suggest_mpicc(dir[0] ? dir : (iw_built_dirs[0] ? iw_built_dirs[0] : "/"), cc, sizeof cc);
        fprintf(stderr,
                "idlewave tracer: the application calls MPI from Fortran%s%s, but this tracer (built for %s with %s) "
                "wraps no Fortran binding: none was found beside that mpicc. No trace is written: build the tracer "
                "with the application's MPI: idlewave trace build --mpicc %s\n",
                dir[0] ? " through " : "", dir[0] ? di.dli_fname : "", built, IW_BUILT_MPICC[0] ? IW_BUILT_MPICC : "its mpicc",
                cc);
        fflush(stderr);
    }
    iw_mismatch_exit();
}

/* Whether `text` holds `word` with no digit or dot on either side. */
static int iw_has_version(const char *text, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        char before = p == text ? ' ' : p[-1], after = p[n];
        if (!isdigit((unsigned char)before) && before != '.' && !isdigit((unsigned char)after) && after != '.') return 1;
    }
    return 0;
}

/* After MPI_Init: the library's version is the one of the mpi.h the tracer was
 * generated from. */
static void iw_check_version(void) {
    if (!IW_BUILT_VERSION[0]) return;
    char v[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
    int len = 0;
    PMPI_Get_library_version(v, &len);
    if ((!IW_BUILT_FAMILY[0] || strstr(v, IW_BUILT_FAMILY)) && iw_has_version(v, IW_BUILT_VERSION)) return;
    char name[MPI_MAX_LIBRARY_VERSION_STRING + 1], dir[PATH_MAX], running[MPI_MAX_LIBRARY_VERSION_STRING + PATH_MAX + 8];
    iw_running_name(name, sizeof name);
    iw_real_dir(iw_ran_library[0] ? iw_ran_library : IW_BUILT_LIBRARY, dir, sizeof dir);
    snprintf(running, sizeof running, "%s at %s", name, dir);
    iw_refuse(running, dir);
}

/* IDLEWAVE_TRACE_CLOCK: wall (the default) or cpu. */
static void iw_choose_clock(void) {
    const char *o = getenv("IDLEWAVE_TRACE_OVERHEAD");
    iw_remove_overhead = 1;
    if (o && !strcasecmp(o, "keep")) iw_remove_overhead = 0;
    else if (o && *o && strcasecmp(o, "remove") && iw_speaks()) {
        fprintf(stderr, "idlewave tracer: IDLEWAVE_TRACE_OVERHEAD=%s is neither remove nor keep: removing it\n", o);
        fflush(stderr);
    }
    const char *c = getenv("IDLEWAVE_TRACE_CLOCK");
    iw_clock = IW_CLOCK_WALL;
    if (!c || !*c || !strcasecmp(c, "wall")) return;
    if (!strcasecmp(c, "cpu")) { iw_clock = IW_CLOCK_CPU; return; }
    if (iw_speaks()) {
        fprintf(stderr, "idlewave tracer: IDLEWAVE_TRACE_CLOCK=%s is neither wall nor cpu: timing with the wall clock\n", c);
        fflush(stderr);
    }
}

/* A handle (pointer in Open MPI, int in MPICH) as a 64-bit key. */
#define IW_KEY(h) iw_key(&(h), sizeof(h))
static inline uint64_t iw_key(const void *h, size_t n) {
    uint64_t k = 0;
    memcpy(&k, h, n < 8 ? n : 8);
    return k;
}

static inline void iw_count_call(int idx) {
    if (!iw_slot[idx]) { iw_order[iw_nslots] = idx; iw_slot[idx] = ++iw_nslots; }
    iw_calls[idx]++;
    iw_last_idx = idx;
}

static void iw_count(int idx, double t0, double t1) {
    iw_count_call(idx);
    iw_secs[idx] += t1 - t0;
}

/* ------------------------------------------------------------- hash maps */

/* Open addressing with linear probing and backward-shift deletion (no
 * tombstones, so heavy create/free churn does not degrade lookups). _put
 * finds or inserts; _add always inserts, so one key can hold several entries,
 * found oldest first by _get and _del (deletion shifts entries back without
 * reordering entries of one key). */
#define IW_MAP(NAME, V)                                                                        \
    typedef struct { uint64_t key; int used; V val; } NAME##_e;                                \
    typedef struct { NAME##_e *e; size_t cap, n; } NAME##_t;                                   \
    static size_t NAME##_home(const NAME##_t *m, uint64_t k) {                                 \
        k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33;                                \
        return (size_t)k & (m->cap - 1);                                                       \
    }                                                                                          \
    static V *NAME##_get(NAME##_t *m, uint64_t k) {                                            \
        if (!m->cap) return NULL;                                                              \
        for (size_t i = NAME##_home(m, k);; i = (i + 1) & (m->cap - 1)) {                      \
            if (!m->e[i].used) return NULL;                                                    \
            if (m->e[i].key == k) return &m->e[i].val;                                         \
        }                                                                                      \
    }                                                                                          \
    static V *NAME##_put(NAME##_t *m, uint64_t k);                                             \
    static V *NAME##_add(NAME##_t *m, uint64_t k);                                             \
    static void NAME##_grow(NAME##_t *m) {                                                     \
        NAME##_t old = *m;                                                                     \
        m->cap = old.cap ? old.cap * 2 : 64; m->n = 0;                                         \
        m->e = iw_xcalloc(m->cap, sizeof(NAME##_e));                                           \
        /* from an empty slot on, so entries of one key keep their order */                    \
        size_t s = 0;                                                                          \
        while (s < old.cap && old.e[s].used) s++;                                              \
        for (size_t i = 1; i <= old.cap; i++) {                                                \
            NAME##_e *o = &old.e[(s + i) & (old.cap - 1)];                                     \
            if (old.cap && o->used) *NAME##_add(m, o->key) = o->val;                           \
        }                                                                                      \
        free(old.e);                                                                           \
    }                                                                                          \
    /* a new (zeroed) slot for k, after any earlier ones with the same key */                  \
    static V *NAME##_add(NAME##_t *m, uint64_t k) {                                            \
        if (2 * (m->n + 1) > m->cap) NAME##_grow(m);                                           \
        size_t i = NAME##_home(m, k);                                                          \
        while (m->e[i].used) i = (i + 1) & (m->cap - 1);                                       \
        m->e[i].used = 1; m->e[i].key = k; memset(&m->e[i].val, 0, sizeof(V)); m->n++;        \
        return &m->e[i].val;                                                                   \
    }                                                                                          \
    /* the value slot for k, new (zeroed) or existing */                                       \
    static V *NAME##_put(NAME##_t *m, uint64_t k) {                                            \
        if (2 * (m->n + 1) > m->cap) NAME##_grow(m);                                           \
        size_t i = NAME##_home(m, k);                                                          \
        for (; m->e[i].used; i = (i + 1) & (m->cap - 1))                                       \
            if (m->e[i].key == k) return &m->e[i].val;                                         \
        m->e[i].used = 1; m->e[i].key = k; memset(&m->e[i].val, 0, sizeof(V)); m->n++;        \
        return &m->e[i].val;                                                                   \
    }                                                                                          \
    static void NAME##_del(NAME##_t *m, uint64_t k) {                                          \
        if (!m->cap) return;                                                                   \
        size_t i = NAME##_home(m, k);                                                          \
        for (; m->e[i].used && m->e[i].key != k; i = (i + 1) & (m->cap - 1)) {}                \
        if (!m->e[i].used) return;                                                             \
        m->e[i].used = 0; m->n--;                                                              \
        for (size_t j = (i + 1) & (m->cap - 1); m->e[j].used; j = (j + 1) & (m->cap - 1)) {    \
            size_t h = NAME##_home(m, m->e[j].key);                                            \
            /* move j back to the hole at i unless its home lies cyclically in (i, j] */       \
            if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {                  \
                m->e[i] = m->e[j]; m->e[j].used = 0; i = j;                                    \
            }                                                                                  \
        }                                                                                      \
    }

/* ------------------------------------------------------------ the buffer */

static void iw_write_all(const char *p, size_t n, uint64_t off) {
    while (n) {
        ssize_t w = pwrite(iw_fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            iw_warn("cannot write the trace file (disk full?): tracing stops here");
            iw_on = 0;
            return;
        }
        p += w; n -= (size_t)w; off += (uint64_t)w;
    }
}

/* Writes the buffer to the file. A trailing poll record stays in the buffer
 * so that the next failed poll can still extend it in memory. */
static void iw_flush(int keep_poll) {
    double t = iw_mono();
    size_t n = iw_len;
    if (keep_poll && iw_last != UINT64_MAX && iw_last >= iw_flushed
        && ((iw_rec *)(iw_buf + (iw_last - iw_flushed)))->op == OP_POLL)
        n = (size_t)(iw_last - iw_flushed);
    if (n) iw_write_all(iw_buf, n, iw_flushed);
    memmove(iw_buf, iw_buf + n, iw_len - n);
    iw_len -= n;
    iw_flushed += n;
    if (iw_remove_overhead && iw_clock == IW_CLOCK_WALL) /* the tracer's time, taken out at once */
        iw_hide((int64_t)((iw_mono() - t) * 1e9));
}

/* Room for `need` bytes at the end of the buffer. */
static char *iw_reserve(size_t need) {
    if (iw_len + need > iw_cap) iw_flush(1);
    if (iw_len + need > iw_cap) {
        size_t cap = iw_cap;
        while (iw_len + need > cap) cap *= 2;
        iw_buf = iw_xrealloc(iw_buf, cap);
        iw_cap = cap;
    }
    return iw_buf + iw_len;
}

/* Appends a record; returns its file offset. */
static uint64_t iw_add(int op, int flags, uint32_t comm, int32_t peer, int32_t tag, uint64_t bytes, uint64_t req,
                       double t0, double t1) {
    iw_rec *r = (iw_rec *)iw_reserve(sizeof(iw_rec));
    r->op = (uint16_t)op; r->flags = (uint16_t)flags; r->comm = comm; r->peer = peer; r->tag = tag;
    r->bytes = bytes; r->req = req; r->t0 = t0; r->t1 = t1;
    uint64_t pos = iw_flushed + iw_len;
    iw_len += sizeof(iw_rec);
    iw_nrec++;
    iw_last = pos;
    return pos;
}

/* Appends a record followed by its payload of n u64 values. */
static uint64_t iw_add_payload(int op, int flags, uint32_t comm, int32_t peer, int32_t tag, uint64_t bytes,
                               uint64_t req, double t0, double t1, const uint64_t *vals, uint64_t n) {
    iw_reserve(sizeof(iw_rec) + 8 + 8 * n);
    uint64_t pos = iw_add(op, flags | F_PAYLOAD, comm, peer, tag, bytes, req, t0, t1);
    memcpy(iw_buf + iw_len, &n, 8);
    memcpy(iw_buf + iw_len + 8, vals, 8 * n);
    iw_len += 8 + 8 * n;
    return pos;
}

/* Rewrites peer/tag (when set_peer) and ORs flags into the record at `pos`,
 * in the buffer or, if it was written already, in the file. */
static void iw_patch(uint64_t pos, int flags, int set_peer, int32_t peer, int32_t tag) {
    iw_rec r, *p = &r;
    int in_file = pos < iw_flushed;
    if (in_file) {
        if (pread(iw_fd, &r, sizeof r, (off_t)pos) != (ssize_t)sizeof r) return;
    } else {
        p = (iw_rec *)(iw_buf + (pos - iw_flushed));
    }
    p->flags |= (uint16_t)flags;
    if (set_peer) { p->peer = peer; p->tag = tag; }
    if (in_file) iw_write_all((const char *)&r, sizeof r, pos);
}

/* Sets the req field of the record at `pos`, in the buffer or in the file. */
static void iw_patch_req(uint64_t pos, uint64_t req) {
    if (pos >= iw_flushed) { ((iw_rec *)(iw_buf + (pos - iw_flushed)))->req = req; return; }
    iw_write_all((const char *)&req, sizeof req, pos + offsetof(iw_rec, req));
}

/* The trailing record, if it is a poll still in the buffer. */
static iw_rec *iw_trailing_poll(void) {
    if (iw_last == UINT64_MAX || iw_last < iw_flushed) return NULL;
    iw_rec *p = (iw_rec *)(iw_buf + (iw_last - iw_flushed));
    return p->op == OP_POLL ? p : NULL;
}

/* A failed poll: extends the previous record if it is a poll, else starts
 * one; and opens a run of polls (iw_streak). */
static void iw_poll(uint64_t req, uint32_t comm, double t0, double t1) {
    iw_rec *p = iw_trailing_poll();
    if (p) { p->bytes++; p->t1 = t1; }
    else iw_add(OP_POLL, 0, comm, IW_NONE, IW_NOTAG, 1, req, t0, t1);
    if (iw_fast_polls) { iw_streak = 1; iw_streak_from = t1; iw_streak_idx = iw_last_idx; }
}

/* A failed poll inside a run (no clock read): counted into the run's
 * record. 0 if there is none to count into (the caller then times and
 * records the call as any). */
static int iw_streak_poll(int idx) {
    iw_rec *p = iw_trailing_poll();
    if (!p) { iw_streak = 0; return 0; }
    p->bytes++;
    iw_count_call(idx);
    return 1;
}

/* Closes the run of polls at `t`, the first clock reading after it. */
static void iw_end_streak(double t) {
    iw_streak = 0;
    iw_rec *p = iw_trailing_poll();
    if (!p || t < p->t1) return;
    p->t1 = t;
    iw_secs[iw_streak_idx] += t - iw_streak_from;
}

/* -------------------------------------------------------- communicators */

typedef struct iw_comm {
    uint32_t id;
    int refs;            /* the handle map holds one, each outstanding request one */
    int inter;
    int me;              /* this process's rank in it */
    int n, rn;           /* local and remote group sizes */
    int *world, *rworld; /* rank -> world rank; NULL world = identity (MPI_COMM_WORLD) */
    int nbr_known, nin, nout;
    int *nbr;            /* neighbour world ranks: nin sources, then nout destinations */
} iw_comm;

IW_MAP(iw_cmap, iw_comm *)
static iw_cmap_t iw_comms;
static iw_comm iw_world = {0, 1, 0, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL};
static uint64_t iw_cache_key; /* one-entry lookup cache */
static iw_comm *iw_cache;

static void iw_comm_unref(iw_comm *cm) {
    if (!cm || cm == &iw_world || --cm->refs > 0) return;
    free(cm->world); free(cm->rworld); free(cm->nbr); free(cm);
}

/* World ranks of a group's members (MPI_UNDEFINED for processes outside
 * MPI_COMM_WORLD, e.g. spawned ones, is recorded as -1). */
static int *iw_group_world(MPI_Group g, int n) {
    int *local = iw_xcalloc((size_t)n + 1, sizeof(int)), *world = iw_xcalloc((size_t)n + 1, sizeof(int));
    for (int i = 0; i < n; i++) local[i] = i;
    PMPI_Group_translate_ranks(g, n, local, iw_world_group, world);
    for (int i = 0; i < n; i++) if (world[i] == MPI_UNDEFINED) world[i] = IW_NONE;
    free(local);
    return world;
}

/* Emits comm_new and comm_member records for a communicator just registered. */
static void iw_comm_records(iw_comm *cm, uint32_t parent, int kind, MPI_Comm c, int topo_ok, double t0, double t1) {
    int flags = cm->inter ? F_INTERCOMM : 0;
    int status = MPI_UNDEFINED;
    if (topo_ok && !cm->inter) PMPI_Topo_test(c, &status);
    if (status == MPI_CART) { /* payload [ndims, dims..., periods...] */
        int nd = 0;
        PMPI_Cartdim_get(c, &nd);
        int small[3 * IW_SMALL], *a = nd <= IW_SMALL ? small : iw_xmalloc(sizeof(int) * 3 * (size_t)nd);
        uint64_t vsmall[1 + 2 * IW_SMALL], *v = nd <= IW_SMALL ? vsmall : iw_xmalloc(8 * (1 + 2 * (size_t)nd));
        PMPI_Cart_get(c, nd, a, a + nd, a + 2 * nd);
        v[0] = (uint64_t)nd;
        for (int i = 0; i < 2 * nd; i++) v[1 + i] = (uint64_t)(int64_t)a[i];
        iw_add_payload(OP_COMM_NEW, flags, parent, (int32_t)cm->id, kind, 0, 0, t0, t1, v, 1 + 2 * (uint64_t)nd);
        if (a != small) free(a);
        if (v != vsmall) free(v);
    } else {
        iw_add(OP_COMM_NEW, flags, parent, (int32_t)cm->id, kind, 0, 0, t0, t1);
    }
    for (int i = 0; i < cm->n; i++) iw_add(OP_COMM_MEMBER, 0, cm->id, cm->world ? cm->world[i] : i, i, 0, 0, t1, t1);
    for (int i = 0; i < cm->rn; i++) iw_add(OP_COMM_MEMBER, F_REMOTE, cm->id, cm->rworld[i], i, 0, 0, t1, t1);
}

/* Registers handle c under a fresh id (replacing whatever a reused handle
 * meant before). `like` (dup/idup) gives the members without touching c,
 * which idup forbids until its request completes. */
static iw_comm *iw_comm_register(MPI_Comm c, const iw_comm *like) {
    iw_comm *cm = iw_xcalloc(1, sizeof *cm);
    cm->id = iw_next_comm++;
    cm->refs = 1;
    if (like) {
        cm->inter = like->inter; cm->me = like->me; cm->n = like->n; cm->rn = like->rn;
        cm->world = iw_xmalloc(sizeof(int) * (size_t)(cm->n ? cm->n : 1));
        for (int i = 0; i < cm->n; i++) cm->world[i] = like->world ? like->world[i] : i;
        if (cm->rn) { cm->rworld = iw_xmalloc(sizeof(int) * (size_t)cm->rn); memcpy(cm->rworld, like->rworld, sizeof(int) * (size_t)cm->rn); }
    } else {
        MPI_Group g;
        PMPI_Comm_test_inter(c, &cm->inter);
        PMPI_Comm_size(c, &cm->n);
        PMPI_Comm_rank(c, &cm->me);
        PMPI_Comm_group(c, &g);
        cm->world = iw_group_world(g, cm->n);
        PMPI_Group_free(&g);
        if (cm->inter) {
            PMPI_Comm_remote_size(c, &cm->rn);
            PMPI_Comm_remote_group(c, &g);
            cm->rworld = iw_group_world(g, cm->rn);
            PMPI_Group_free(&g);
        }
    }
    uint64_t k = IW_KEY(c);
    iw_comm **slot = iw_cmap_put(&iw_comms, k);
    if (*slot) iw_comm_unref(*slot); /* a stale entry: the handle was freed where we could not see it */
    *slot = cm;
    if (iw_cache_key == k) iw_cache = NULL;
    return cm;
}

/* The communicator's record; NULL for MPI_COMM_NULL. A handle never seen
 * before (MPI_COMM_SELF, one made inside a library) is registered as "first
 * seen" with its members. */
static iw_comm *iw_comm_get(MPI_Comm c) {
    if (c == MPI_COMM_WORLD) return &iw_world;
    if (c == MPI_COMM_NULL) return NULL;
    uint64_t k = IW_KEY(c);
    if (iw_cache && iw_cache_key == k) return iw_cache;
    iw_comm **p = iw_cmap_get(&iw_comms, k);
    iw_comm *cm = p ? *p : NULL;
    if (!cm) {
        double t = iw_now();
        cm = iw_comm_register(c, NULL);
        iw_comm_records(cm, IW_NOCOMM, K_FIRST_SEEN, c, 1, t, t);
    }
    iw_cache_key = k; iw_cache = cm;
    return cm;
}

static inline uint32_t iw_cid(const iw_comm *cm) { return cm ? cm->id : IW_NOCOMM; }

/* A peer rank of a point-to-point call as a world rank; on an
 * intercommunicator peers are in the remote group. */
static int32_t iw_peer(const iw_comm *cm, int r) {
    if (r == MPI_ANY_SOURCE) return IW_NONE;
    if (r == MPI_PROC_NULL) return IW_PROCNULL;
    if (!cm || r < 0) return IW_NONE;
    if (cm->inter) return r < cm->rn ? cm->rworld[r] : IW_NONE;
    if (!cm->world) return r;
    return r < cm->n ? cm->world[r] : IW_NONE;
}

/* The root of a rooted collective as a world rank (intercommunicators: MPI_ROOT
 * is this process, MPI_PROC_NULL the root group's other members). */
static int32_t iw_root(const iw_comm *cm, int root) {
    if (cm && cm->inter && root == MPI_ROOT) return iw_rank;
    return iw_peer(cm, root);
}

static inline int32_t iw_tag(int tag) { return tag == MPI_ANY_TAG ? IW_NONE : tag; }

static inline int iw_my_rank(const iw_comm *cm) { return cm ? cm->me : 0; }

/* comm_new + members for a communicator created by a wrapped call. */
static void iw_comm_created(int kind, MPI_Comm parent, MPI_Comm c, double t0, double t1) {
    iw_comm *pc = iw_comm_get(parent);
    if (c == MPI_COMM_NULL) { iw_add(OP_COMM_NEW, 0, iw_cid(pc), IW_NONE, kind, 0, 0, t0, t1); return; }
    iw_comm *cm = iw_comm_register(c, NULL);
    iw_comm_records(cm, iw_cid(pc), kind, c, 1, t0, t1);
}

/* Dup and idup: the members are the parent's (idup's comm is not usable yet). */
static void iw_comm_duped(int kind, MPI_Comm parent, MPI_Comm c, double t0, double t1) {
    iw_comm *pc = iw_comm_get(parent);
    if (c == MPI_COMM_NULL || !pc) { iw_comm_created(kind, parent, c, t0, t1); return; }
    iw_comm *cm = iw_comm_register(c, pc);
    iw_comm_records(cm, pc->id, kind, c, kind != K_IDUP, t0, t1);
}

/* Comm_free / Comm_disconnect: cm was looked up before the call. */
static void iw_comm_freed(MPI_Comm handle, iw_comm *cm, double t0, double t1) {
    if (!cm) return;
    iw_add(OP_COMM_FREE, 0, cm->id, IW_NONE, IW_NOTAG, 0, 0, t0, t1);
    if (cm == &iw_world) return;
    uint64_t k = IW_KEY(handle);
    iw_comm **p = iw_cmap_get(&iw_comms, k);
    if (p && *p == cm) { iw_cmap_del(&iw_comms, k); iw_comm_unref(cm); }
    if (iw_cache_key == k) iw_cache = NULL;
}

/* Neighbours of a process topology (computed once per communicator), in the
 * order neighbourhood collectives use: Cartesian, per dimension the -1 then
 * the +1 neighbour; graphs as MPI_Graph_neighbors / MPI_Dist_graph_neighbors. */
static void iw_neighbours(iw_comm *cm, MPI_Comm c) {
    if (cm->nbr_known) return;
    cm->nbr_known = 1;
    int status = MPI_UNDEFINED, *in = NULL, *out = NULL, nin = 0, nout = 0;
    PMPI_Topo_test(c, &status);
    if (status == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(c, &nd);
        nin = nout = 2 * nd;
        in = iw_xmalloc(sizeof(int) * (size_t)(nin + 1));
        for (int d = 0; d < nd; d++) PMPI_Cart_shift(c, d, 1, &in[2 * d], &in[2 * d + 1]);
        out = in;
    } else if (status == MPI_GRAPH) {
        int me;
        PMPI_Comm_rank(c, &me);
        PMPI_Graph_neighbors_count(c, me, &nin);
        nout = nin;
        in = iw_xmalloc(sizeof(int) * (size_t)(nin + 1));
        PMPI_Graph_neighbors(c, me, nin, in);
        out = in;
    } else if (status == MPI_DIST_GRAPH) {
        int weighted = 0;
        PMPI_Dist_graph_neighbors_count(c, &nin, &nout, &weighted);
        in = iw_xmalloc(sizeof(int) * (size_t)(nin + 1));
        out = iw_xmalloc(sizeof(int) * (size_t)(nout + 1));
        int *wi = iw_xmalloc(sizeof(int) * (size_t)(nin + 1)), *wo = iw_xmalloc(sizeof(int) * (size_t)(nout + 1));
        PMPI_Dist_graph_neighbors(c, nin, in, weighted ? wi : MPI_UNWEIGHTED, nout, out, weighted ? wo : MPI_UNWEIGHTED);
        free(wi); free(wo);
    }
    cm->nin = nin; cm->nout = nout;
    cm->nbr = iw_xmalloc(sizeof(int) * (size_t)(nin + nout + 1));
    for (int i = 0; i < nin; i++) cm->nbr[i] = iw_peer(cm, in[i]);
    for (int i = 0; i < nout; i++) cm->nbr[nin + i] = iw_peer(cm, out[i]);
    if (out != in) free(out);
    free(in);
}

/* ------------------------------------------------------------- requests */

enum { R_SEND = 1, R_RECV, R_COLL, R_OTHER };

typedef struct {
    uint64_t id;
    uint64_t pos;        /* the posting record (irecv, recv_init, ...) */
    uint64_t start_pos;  /* persistent: the record of the current start */
    iw_comm *comm;       /* referenced while outstanding */
    int32_t peer, tag;   /* as posted (world rank / -1) */
    uint8_t kind, wild, persistent, active, cancel;
} iw_req;

IW_MAP(iw_rmap, iw_req)
static iw_rmap_t iw_reqs;

/* A new request: registered under a fresh id; returns the id. */
static uint64_t iw_req_new(MPI_Request r, int kind, iw_comm *cm, int32_t peer, int32_t tag, int wild, int persistent,
                           uint64_t pos) {
    if (r == MPI_REQUEST_NULL) return 0;
    /* Several outstanding requests can share a handle: Open MPI returns one
     * static, already complete request for sends finished at once (Ibsend,
     * small Isend) and receives from MPI_PROC_NULL. Completions take them
     * oldest first. */
    iw_req *e = iw_rmap_add(&iw_reqs, IW_KEY(r));
    e->id = iw_next_req++;
    e->pos = pos; e->start_pos = UINT64_MAX;
    e->comm = cm;
    if (cm) cm->refs++;
    e->peer = peer; e->tag = tag;
    e->kind = (uint8_t)kind; e->wild = (uint8_t)wild; e->persistent = (uint8_t)persistent;
    e->active = !persistent; e->cancel = 0;
    return e->id;
}

/* Comm_idup: the comm_new record names the request its wait completes
 * (its req field), so that no wait in the trace names a request no record posted. */
static void iw_comm_iduped(MPI_Comm parent, MPI_Comm c, MPI_Request r, double t0, double t1) {
    iw_comm *pc = iw_comm_get(parent); /* (a parent first seen here has its records first) */
    uint64_t at = iw_flushed + iw_len;  /* where iw_comm_duped's comm_new goes */
    iw_comm_duped(K_IDUP, parent, c, t0, t1);
    uint64_t id = iw_req_new(r, R_COLL, pc, IW_NONE, IW_NOTAG, 0, 0, UINT64_MAX);
    if (id) iw_patch_req(at, id);
}

static void iw_req_drop(MPI_Request r, iw_req *e) {
    iw_comm_unref(e->comm);
    iw_rmap_del(&iw_reqs, IW_KEY(r));
}

/* The record to patch when a receive completes: the start for persistent ones. */
static inline uint64_t iw_req_target(const iw_req *e) { return e->persistent ? e->start_pos : e->pos; }

/* Records the completion of request r (its handle before the call) by a
 * wait or test call: resolves wildcards and cancellation in the posting record. */
static void iw_done(int op, MPI_Request r, const MPI_Status *st, double t0, double t1) {
    if (r == MPI_REQUEST_NULL) return;
    iw_req *e = iw_rmap_get(&iw_reqs, IW_KEY(r));
    if (!e) { /* made where we could not see it (e.g. a generalized request) */
        iw_add(op, 0, IW_NOCOMM, IW_NONE, IW_NOTAG, 0, iw_next_req++, t0, t1);
        return;
    }
    if (e->persistent && !e->active) return; /* an inactive persistent request: nothing completed */
    int cancelled = 0, flags = 0;
    int32_t peer = IW_NONE, tag = IW_NOTAG;
    if (e->cancel && st) PMPI_Test_cancelled(st, &cancelled);
    if (cancelled) {
        flags = F_CANCELLED;
        if (iw_req_target(e) != UINT64_MAX) iw_patch(iw_req_target(e), F_CANCELLED, 0, 0, 0);
    } else if (e->kind == R_RECV && st) {
        peer = iw_peer(e->comm, st->MPI_SOURCE);
        tag = iw_tag(st->MPI_TAG);
        if (e->wild && iw_req_target(e) != UINT64_MAX) iw_patch(iw_req_target(e), 0, 1, peer, tag);
    }
    iw_add(op, flags, iw_cid(e->comm), peer, tag, 0, e->id, t0, t1);
    if (e->persistent) { e->active = 0; e->cancel = 0; }
    else iw_req_drop(r, e);
}

/* Completions of Waitall/Testall (all n) or Waitsome/Testsome (idx given). */
static void iw_done_many(int op, int n, const int *idx, const MPI_Request *snap, const MPI_Status *sts, double t0,
                         double t1) {
    for (int i = 0; i < n; i++) {
        int j = idx ? idx[i] : i;
        iw_done(op, snap[j], &sts[i], t0, t1);
    }
}

/* A failed Test/Testall/Testany/Testsome/Request_get_status: a poll naming
 * the first active request polled. */
static void iw_poll_req(int n, const MPI_Request *reqs, double t0, double t1) {
    for (int i = 0; i < n; i++) {
        if (reqs[i] == MPI_REQUEST_NULL) continue;
        iw_req *e = iw_rmap_get(&iw_reqs, IW_KEY(reqs[i]));
        if (e) { iw_poll(e->id, iw_cid(e->comm), t0, t1); return; }
    }
    iw_poll(0, IW_NOCOMM, t0, t1);
}

static void iw_start(MPI_Request r, double t0, double t1) {
    if (r == MPI_REQUEST_NULL) return;
    iw_req *e = iw_rmap_get(&iw_reqs, IW_KEY(r));
    if (!e) { /* a persistent request made where we could not see it */
        iw_req_new(r, R_OTHER, NULL, IW_NONE, IW_NOTAG, 0, 1, UINT64_MAX);
        e = iw_rmap_get(&iw_reqs, IW_KEY(r));
    }
    e->persistent = 1; e->active = 1; e->cancel = 0;
    int flags = e->wild == 3 ? F_ANY_SOURCE | F_ANY_TAG : e->wild == 1 ? F_ANY_SOURCE : e->wild == 2 ? F_ANY_TAG : 0;
    e->start_pos = iw_add(OP_START, flags, iw_cid(e->comm), e->peer, e->tag, 0, e->id, t0, t1);
}

/* A wildcard receive whose completion the trace will never show. */
static void iw_unresolved(const iw_req *e) {
    if (e->kind == R_RECV && e->wild && (!e->persistent || e->active) && iw_req_target(e) != UINT64_MAX)
        iw_patch(iw_req_target(e), F_UNRESOLVED, 0, 0, 0);
}

static void iw_request_free(MPI_Request r, double t0, double t1) {
    iw_req *e = r == MPI_REQUEST_NULL ? NULL : iw_rmap_get(&iw_reqs, IW_KEY(r));
    iw_add(OP_REQUEST_FREE, 0, e ? iw_cid(e->comm) : IW_NOCOMM, IW_NONE, IW_NOTAG, 0, e ? e->id : 0, t0, t1);
    if (!e) return;
    iw_unresolved(e);
    iw_req_drop(r, e);
}

static void iw_cancel(MPI_Request r, double t0, double t1) {
    iw_req *e = r == MPI_REQUEST_NULL ? NULL : iw_rmap_get(&iw_reqs, IW_KEY(r));
    iw_add(OP_CANCEL, 0, e ? iw_cid(e->comm) : IW_NOCOMM, IW_NONE, IW_NOTAG, 0, e ? e->id : 0, t0, t1);
    if (e) e->cancel = 1;
}

/* ---------------------------------------------------------- point to point */

static uint64_t iw_bytes(int64_t count, MPI_Datatype t) {
    if (t == MPI_DATATYPE_NULL || count <= 0) return 0;
#if MPI_VERSION >= 3
    MPI_Count s = 0;
    PMPI_Type_size_x(t, &s);
#else
    int s = 0;
    PMPI_Type_size(t, &s);
#endif
    return s > 0 ? (uint64_t)count * (uint64_t)s : 0;
}

/* Bytes a status says were received (count of `t`; falls back to bytes). */
static uint64_t iw_status_bytes(const MPI_Status *st, MPI_Datatype t) {
    int n = 0;
    if (t != MPI_DATATYPE_NULL) {
        PMPI_Get_count(st, t, &n);
        if (n != MPI_UNDEFINED) return iw_bytes(n, t);
    }
#if MPI_VERSION >= 3
    MPI_Count b = 0;
    PMPI_Get_elements_x(st, MPI_BYTE, &b);
    return b > 0 ? (uint64_t)b : 0;
#else
    PMPI_Get_count(st, MPI_BYTE, &n);
    return n > 0 ? (uint64_t)n : 0;
#endif
}

static inline int iw_wild(int src, int tag) { return (src == MPI_ANY_SOURCE ? 1 : 0) | (tag == MPI_ANY_TAG ? 2 : 0); }
static inline int iw_wild_flags(int w) { return (w & 1 ? F_ANY_SOURCE : 0) | (w & 2 ? F_ANY_TAG : 0); }

/* Send, Ssend, Rsend, Bsend; the send half of Sendrecv. */
static void iw_send(int op, int flags, int64_t count, MPI_Datatype t, int dest, int tag, MPI_Comm c, double t0,
                    double t1) {
    iw_comm *cm = iw_comm_get(c);
    iw_add(op, flags, iw_cid(cm), iw_peer(cm, dest), tag, iw_bytes(count, t), 0, t0, t1);
}

/* Recv, the receive half of Sendrecv, Mrecv: source and tag from the status. */
static void iw_recvd(int op, int src, int tag, MPI_Datatype t, MPI_Comm c, const MPI_Status *st, double t0, double t1) {
    iw_comm *cm = iw_comm_get(c);
    iw_add(op, iw_wild_flags(iw_wild(src, tag)), iw_cid(cm), iw_peer(cm, st->MPI_SOURCE), iw_tag(st->MPI_TAG),
           iw_status_bytes(st, t), 0, t0, t1);
}

/* Nonblocking and persistent point-to-point posts: record + request. */
static void iw_post(int op, int flags, int64_t count, MPI_Datatype t, int peer, int tag, MPI_Comm c, MPI_Request r,
                    int is_recv, int persistent, double t0, double t1) {
    iw_comm *cm = iw_comm_get(c);
    int wild = is_recv ? iw_wild(peer, tag) : 0;
    int32_t wp = iw_peer(cm, peer), wt = is_recv ? iw_tag(tag) : tag;
    uint64_t pos = iw_add(op, flags | iw_wild_flags(wild), iw_cid(cm), wp, wt, iw_bytes(count, t), 0, t0, t1);
    uint64_t id = iw_req_new(r, is_recv ? R_RECV : R_SEND, cm, wp, wt, wild, persistent, pos);
    ((iw_rec *)(iw_buf + (pos - iw_flushed)))->req = id;
}

/* Probe, a successful Iprobe or Improbe, Mprobe: source and tag from the status. */
IW_MAP(iw_mmap, iw_comm *)
static iw_mmap_t iw_msgs; /* message handle -> its communicator, for Mrecv/Imrecv */

static void iw_probed(int op, int src, int tag, MPI_Comm c, const MPI_Status *st, const MPI_Message *msg, double t0,
                      double t1) {
    iw_comm *cm = iw_comm_get(c);
    iw_add(op, iw_wild_flags(iw_wild(src, tag)), iw_cid(cm), iw_peer(cm, st->MPI_SOURCE), iw_tag(st->MPI_TAG),
           iw_status_bytes(st, MPI_BYTE), 0, t0, t1);
    if (msg && *msg != MPI_MESSAGE_NULL && *msg != MPI_MESSAGE_NO_PROC && cm) {
        iw_comm **slot = iw_mmap_put(&iw_msgs, IW_KEY(*msg));
        if (*slot) iw_comm_unref(*slot);
        *slot = cm;
        cm->refs++;
    }
}

/* The communicator a matched message came from, forgotten here: the caller
 * owns the reference the message held and drops it with iw_comm_unref. */
static iw_comm *iw_message_comm(MPI_Message m) {
    iw_comm **p = iw_mmap_get(&iw_msgs, IW_KEY(m));
    if (!p) return NULL;
    iw_comm *cm = *p;
    iw_mmap_del(&iw_msgs, IW_KEY(m));
    return cm;
}

static void iw_mrecvd(MPI_Message m, MPI_Datatype t, const MPI_Status *st, double t0, double t1) {
    iw_comm *cm = iw_message_comm(m);
    iw_add(OP_MRECV, 0, iw_cid(cm), iw_peer(cm, st->MPI_SOURCE), iw_tag(st->MPI_TAG), iw_status_bytes(st, t), 0, t0,
           t1);
    iw_comm_unref(cm);
}

static void iw_imrecv(MPI_Message m, int64_t count, MPI_Datatype t, MPI_Request r, double t0, double t1) {
    iw_comm *cm = iw_message_comm(m);
    uint64_t pos = iw_add(OP_IMRECV, 0, iw_cid(cm), IW_NONE, IW_NONE, iw_bytes(count, t), 0, t0, t1);
    uint64_t id = iw_req_new(r, R_RECV, cm, IW_NONE, IW_NONE, 3, 0, pos);
    ((iw_rec *)(iw_buf + (pos - iw_flushed)))->req = id;
    iw_comm_unref(cm);
}

/* ---------------------------------------------------------- collectives */

/* Up to IW_SMALL u64 values on the caller's stack, more on the heap. */
typedef struct { uint64_t small[2 * IW_SMALL + 2]; uint64_t *v; } iw_vals;
static uint64_t *iw_vals_get(iw_vals *b, size_t n) {
    b->v = n <= sizeof b->small / 8 ? b->small : iw_xmalloc(8 * (n ? n : 1));
    return b->v;
}
static void iw_vals_free(iw_vals *b) { if (b->v != b->small) free(b->v); }

/* The i-th datatype of an alltoallw type array, C or Fortran. */
static inline MPI_Datatype iw_type_at(const void *types, int i, int fortran) {
    return fortran ? PMPI_Type_f2c(((const MPI_Fint *)types)[i]) : ((const MPI_Datatype *)types)[i];
}

/* One collective record; `req` registers the request of a nonblocking or
 * persistent one (NULL for blocking). */
static void iw_coll_rec(int op, iw_comm *cm, int32_t root, uint64_t bytes, const MPI_Request *req, int persistent,
                        const uint64_t *vals, uint64_t n, double t0, double t1) {
    int flags = cm && cm->inter ? F_INTERCOMM : 0;
    uint64_t pos = vals ? iw_add_payload(op, flags, iw_cid(cm), root, 0, bytes, 0, t0, t1, vals, n)
                        : iw_add(op, flags, iw_cid(cm), root, 0, bytes, 0, t0, t1);
    if (req) {
        uint64_t id = iw_req_new(*req, R_COLL, cm, IW_NONE, IW_NOTAG, 0, persistent, pos);
        uint64_t *p = (uint64_t *)(iw_buf + (pos - iw_flushed) + 24);
        *p = id;
    }
}

static void iw_coll(int op, MPI_Comm c, int root, uint64_t bytes, const MPI_Request *req, int persistent, double t0,
                    double t1) {
    iw_comm *cm = iw_comm_get(c);
    iw_coll_rec(op, cm, root == IW_NONE ? IW_NONE : iw_root(cm, root), bytes, req, persistent, NULL, 0, t0, t1);
}

/* Members a vector collective's count arrays cover. */
static int iw_members(const iw_comm *cm, int remote) {
    if (!cm) return 0;
    if (cm->inter && remote) return cm->rn;
    return cm->n ? cm->n : iw_size;
}

static int iw_is_root(const iw_comm *cm, int root) {
    if (cm && cm->inter) return root == MPI_ROOT;
    return root == iw_my_rank(cm);
}

/* Count-array helpers, once for int counts and once for MPI-4 MPI_Count ones. */
#define IW_COUNT_HELPERS(SUF, CT)                                                                         \
    static void iw_fill##SUF(uint64_t *out, const CT *counts, int n, MPI_Datatype t) {                    \
        for (int i = 0; i < n; i++) out[i] = iw_bytes(counts[i], t);                                      \
    }                                                                                                     \
    static void iw_fillw##SUF(uint64_t *out, const CT *counts, int n, const void *types, int f) {         \
        for (int i = 0; i < n; i++) out[i] = iw_bytes(counts[i], iw_type_at(types, i, f));                \
    }                                                                                                     \
    /* gatherv: send bytes; at the root, receive bytes per member */                                      \
    static void iw_gatherv##SUF(int op, const void *sb, int64_t sc, MPI_Datatype st, const CT *rc,        \
                                MPI_Datatype rt, int root, MPI_Comm c, const MPI_Request *req, int pers,   \
                                double t0, double t1) {                                                    \
        iw_comm *cm = iw_comm_get(c);                                                                     \
        int me = iw_my_rank(cm), isroot = iw_is_root(cm, root), n = iw_members(cm, 1);                    \
        uint64_t bytes = sb == MPI_IN_PLACE ? iw_bytes(rc[me], rt) : (cm && cm->inter && root == MPI_ROOT) \
                                                                         ? 0 : iw_bytes(sc, st);           \
        iw_vals b; uint64_t *v = isroot ? iw_vals_get(&b, (size_t)n) : NULL;                              \
        if (v) iw_fill##SUF(v, rc, n, rt);                                                                \
        iw_coll_rec(op, cm, iw_root(cm, root), bytes, req, pers, v, v ? (uint64_t)n : 0, t0, t1);         \
        if (v) iw_vals_free(&b);                                                                          \
    }                                                                                                     \
    /* scatterv: receive bytes; at the root, send bytes per member */                                     \
    static void iw_scatterv##SUF(int op, const CT *sc, MPI_Datatype st, const void *rb, int64_t rc,       \
                                 MPI_Datatype rt, int root, MPI_Comm c, const MPI_Request *req, int pers,  \
                                 double t0, double t1) {                                                   \
        iw_comm *cm = iw_comm_get(c);                                                                     \
        int me = iw_my_rank(cm), isroot = iw_is_root(cm, root), n = iw_members(cm, 1);                    \
        uint64_t bytes = rb == MPI_IN_PLACE ? iw_bytes(sc[me], st) : (cm && cm->inter && root == MPI_ROOT) \
                                                                         ? 0 : iw_bytes(rc, rt);           \
        iw_vals b; uint64_t *v = isroot ? iw_vals_get(&b, (size_t)n) : NULL;                              \
        if (v) iw_fill##SUF(v, sc, n, st);                                                                \
        iw_coll_rec(op, cm, iw_root(cm, root), bytes, req, pers, v, v ? (uint64_t)n : 0, t0, t1);         \
        if (v) iw_vals_free(&b);                                                                          \
    }                                                                                                     \
    /* allgatherv: send bytes; receive bytes per member */                                                \
    static void iw_allgatherv##SUF(int op, const void *sb, int64_t sc, MPI_Datatype st, const CT *rc,     \
                                   MPI_Datatype rt, MPI_Comm c, const MPI_Request *req, int pers,          \
                                   double t0, double t1) {                                                 \
        iw_comm *cm = iw_comm_get(c);                                                                     \
        int n = iw_members(cm, 1);                                                                        \
        uint64_t bytes = sb == MPI_IN_PLACE ? iw_bytes(rc[iw_my_rank(cm)], rt) : iw_bytes(sc, st);         \
        iw_vals b; uint64_t *v = iw_vals_get(&b, (size_t)n);                                              \
        iw_fill##SUF(v, rc, n, rt);                                                                       \
        iw_coll_rec(op, cm, IW_NONE, bytes, req, pers, v, (uint64_t)n, t0, t1);                           \
        iw_vals_free(&b);                                                                                 \
    }                                                                                                     \
    /* alltoallv/w: total send bytes; send then receive bytes per member (types: w only) */               \
    static void iw_alltoallv##SUF(int op, const void *sb, const CT *sc, const void *st, const CT *rc,     \
                                  const void *rt, int w, int f, MPI_Comm c, const MPI_Request *req,        \
                                  int pers, double t0, double t1) {                                        \
        iw_comm *cm = iw_comm_get(c);                                                                     \
        int n = iw_members(cm, 1);                                                                        \
        iw_vals b; uint64_t *v = iw_vals_get(&b, 2 * (size_t)n);                                          \
        if (w) iw_fillw##SUF(v + n, rc, n, rt, f); else iw_fill##SUF(v + n, rc, n, *(const MPI_Datatype *)rt); \
        if (sb == MPI_IN_PLACE) memcpy(v, v + n, 8 * (size_t)n);                                          \
        else if (w) iw_fillw##SUF(v, sc, n, st, f);                                                       \
        else iw_fill##SUF(v, sc, n, *(const MPI_Datatype *)st);                                           \
        uint64_t total = 0;                                                                               \
        for (int i = 0; i < n; i++) total += v[i];                                                        \
        iw_coll_rec(op, cm, IW_NONE, total, req, pers, v, 2 * (uint64_t)n, t0, t1);                       \
        iw_vals_free(&b);                                                                                 \
    }                                                                                                     \
    /* reduce_scatter: total bytes; receive bytes per member */                                           \
    static void iw_reduce_scatter##SUF(int op, const CT *rc, MPI_Datatype t, MPI_Comm c,                  \
                                       const MPI_Request *req, int pers, double t0, double t1) {           \
        iw_comm *cm = iw_comm_get(c);                                                                     \
        int n = iw_members(cm, 0);                                                                        \
        iw_vals b; uint64_t *v = iw_vals_get(&b, (size_t)n);                                              \
        iw_fill##SUF(v, rc, n, t);                                                                        \
        uint64_t total = 0;                                                                               \
        for (int i = 0; i < n; i++) total += v[i];                                                        \
        iw_coll_rec(op, cm, IW_NONE, total, req, pers, v, (uint64_t)n, t0, t1);                           \
        iw_vals_free(&b);                                                                                 \
    }                                                                                                     \
    /* neighbourhood collectives: [nin, nout, sources, destinations, recv bytes, send bytes] */           \
    static void iw_neighbor##SUF(int op, const CT *sc, int64_t sc1, const void *st, const CT *rc,        \
                                 int64_t rc1, const void *rt, int w, int f, MPI_Comm c,                    \
                                 const MPI_Request *req, int pers, double t0, double t1) {                 \
        iw_comm *cm = iw_comm_get(c);                                                                     \
        if (!cm) return;                                                                                  \
        iw_neighbours(cm, c);                                                                             \
        int nin = cm->nin, nout = cm->nout;                                                               \
        iw_vals b; uint64_t *v = iw_vals_get(&b, 2 + 2 * (size_t)(nin + nout));                           \
        v[0] = (uint64_t)nin; v[1] = (uint64_t)nout;                                                      \
        for (int i = 0; i < nin + nout; i++) v[2 + i] = (uint64_t)(int64_t)cm->nbr[i];                    \
        uint64_t *rv = v + 2 + nin + nout, *sv = rv + nin, total = 0;                                     \
        for (int i = 0; i < nin; i++)                                                                     \
            rv[i] = iw_bytes(rc ? rc[i] : rc1, w ? iw_type_at(rt, i, f) : *(const MPI_Datatype *)rt);     \
        for (int i = 0; i < nout; i++)                                                                    \
            total += sv[i] = iw_bytes(sc ? sc[i] : sc1, w ? iw_type_at(st, i, f) : *(const MPI_Datatype *)st); \
        /* allgather(v) and alltoall record the bytes sent to each neighbour */                           \
        uint64_t bytes = sc ? total : iw_bytes(sc1, *(const MPI_Datatype *)st);                           \
        iw_coll_rec(op, cm, IW_NONE, bytes, req, pers, v, 2 + 2 * (uint64_t)(nin + nout), t0, t1);        \
        iw_vals_free(&b);                                                                                 \
    }
IW_COUNT_HELPERS(, int)
#ifdef IW_HAVE_LARGE_COUNT
IW_COUNT_HELPERS(_c, MPI_Count)
#endif

/* ------------------------------------------------------------------- other */

/* A call the replay does not model: tag = its footer slot. A request it
 * returns is registered so its completion names it; a communicator it
 * returns (spawn, connect, create_from_group ...) is registered as first seen. */
static void iw_other(int idx, MPI_Comm c, const MPI_Request *req, const MPI_Comm *newcomm, double t0, double t1) {
    iw_comm *cm = c == MPI_COMM_NULL ? NULL : iw_comm_get(c);
    uint64_t pos = iw_add(OP_OTHER, 0, iw_cid(cm), IW_NONE, iw_slot[idx] - 1, 0, 0, t0, t1);
    if (req && *req != MPI_REQUEST_NULL) {
        uint64_t id = iw_req_new(*req, R_OTHER, cm, IW_NONE, IW_NOTAG, 0, 0, pos);
        ((iw_rec *)(iw_buf + (pos - iw_flushed)))->req = id;
    }
    if (newcomm && *newcomm != MPI_COMM_NULL) {
        iw_comm *nc = iw_comm_register(*newcomm, NULL);
        iw_comm_records(nc, iw_cid(cm), K_FIRST_SEEN, *newcomm, 1, t1, t1);
    }
}

/* --------------------------------------------------------- init, finalize */

/* The trace directory and any missing parents, private to the user (0700,
 * less the umask): traces show what a program did and when. A directory
 * that exists keeps its permissions. */
#define IW_DIR_MODE 0700
#define IW_FILE_MODE 0600
static void iw_mkdirs(char *path) {
    for (char *p = path + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(path, IW_DIR_MODE); *p = '/'; }
    mkdir(path, IW_DIR_MODE);
}

/* The trace directory (IDLEWAVE_TRACE_DIR, else ./idlewave-trace). */
static const char *iw_trace_dir(void) {
    const char *dir = getenv("IDLEWAVE_TRACE_DIR");
    return dir && *dir ? dir : "idlewave-trace";
}

/* The longest IDLEWAVE_TRACE_DIR: its rank files' paths, <dir>/rank-<r>.iwt
 * for any int r, must fit in PATH_MAX (terminating NUL included). A longer
 * one would be cut short, so it is refused instead. */
#define IW_RANK_NAME_MAX (sizeof "/rank-2147483647.iwt" - 1)
#define IW_DIR_MAX ((size_t)PATH_MAX - 1 - IW_RANK_NAME_MAX)

/* Before MPI_Init: a trace directory too long to hold the rank files is one
 * line for the job and a non-zero exit from every process (as a mismatched
 * MPI is, iw_refuse). */
static void iw_check_trace_dir(void) {
    size_t n = strlen(iw_trace_dir());
    if (n <= IW_DIR_MAX) return;
    if (iw_speaks()) {
        fprintf(stderr,
                "idlewave tracer: IDLEWAVE_TRACE_DIR is %zu characters long; the limit is %zu (its files, "
                "<dir>/rank-<r>.iwt, must fit in PATH_MAX = %d). No trace is written: choose a shorter directory\n",
                n, IW_DIR_MAX, PATH_MAX);
        fflush(stderr);
    }
    iw_mismatch_exit();
}

/* A rank file that cannot be written: one line from the process that
 * speaks for the job, the others say theirs after its head start (by then a
 * launcher has usually ended the job on the first exit, so a trace directory
 * every rank fails on gives one line), and a non-zero exit: a rank that runs
 * on untraced would leave a trace that cannot be replayed, found out only
 * afterwards. */
#define IW_CANTCREAT_EXIT 73 /* EX_CANTCREAT */
static void iw_cannot_write(const char *path, const char *why) {
    int speaks = iw_speaks();
    if (!speaks) sleep(IW_QUIET_EXIT_DELAY_S);
    fprintf(stderr, "idlewave tracer (rank %d): cannot write %s: %s. No trace is written\n", iw_rank, path, why);
    fflush(stderr);
    _exit(IW_CANTCREAT_EXIT);
}

/* Opens this rank's file for writing: never through a symbolic link
 * (O_NOFOLLOW), only a regular file with no other name (a hard link's
 * other name would be overwritten too), created private to the user. The
 * file is truncated only after those checks. */
static int iw_create(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, IW_FILE_MODE);
    if (fd < 0) {
        char why[256];
        if (errno == ELOOP) {
            struct stat l;
            if (!lstat(path, &l) && S_ISLNK(l.st_mode)) {
                iw_cannot_write(path, "it is a symbolic link, and the tracer does not write through links (remove it)");
            }
        }
        snprintf(why, sizeof why, "%s", strerror(errno));
        iw_cannot_write(path, why);
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        iw_cannot_write(path, "it exists and is not a regular file (remove it)");
    }
    if (st.st_nlink > 1) {
        close(fd);
        iw_cannot_write(path, "it is a hard link to another file, which the tracer would overwrite (remove it)");
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    if (ftruncate(fd, 0)) {
        char why[256];
        snprintf(why, sizeof why, "%s", strerror(errno));
        close(fd);
        iw_cannot_write(path, why);
    }
    return fd;
}

static void iw_atexit(void) {
    /* MPI_Finalize never came (exit without it, MPI_Abort): keep what we have;
     * the header stays unpatched, which readers report. */
    if (iw_on) { iw_flush(0); iw_on = 0; }
}

static void iw_open(double t) {
    PMPI_Comm_rank(MPI_COMM_WORLD, &iw_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &iw_size);
    PMPI_Comm_group(MPI_COMM_WORLD, &iw_world_group);
    iw_world.n = iw_size;
    iw_world.me = iw_rank;
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    iw_threaded = provided == MPI_THREAD_MULTIPLE;
    iw_fast_polls = iw_clock == IW_CLOCK_WALL && !iw_threaded;
    MPI_Comm parent = MPI_COMM_NULL;
    PMPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        /* a process made by MPI_Comm_spawn: its rank files would replace its
         * parents' (the spawn itself is in their traces, as not modelled) */
        iw_warn("a spawned process (MPI_Comm_spawn) is not traced");
        return;
    }
    const char *dir = iw_trace_dir();
    char path[PATH_MAX];
    /* (iw_check_trace_dir refused a longer directory before MPI_Init: never cut short) */
    int n = snprintf(path, sizeof path, "%s/rank-%d.iwt", dir, iw_rank);
    if (n < 0 || (size_t)n >= sizeof path) iw_cannot_write(dir, "the path of its rank file is longer than PATH_MAX");
    snprintf(path, sizeof path, "%s", dir);
    iw_mkdirs(path);
    snprintf(path, sizeof path, "%s/rank-%d.iwt", dir, iw_rank);
    iw_fd = iw_create(path);
    char h[IW_HEADER] = {0};
    int32_t rs[2] = {iw_rank, iw_size};
    uint64_t unset = UINT64_MAX;
    memcpy(h, "IWTRACE2", 8);
    memcpy(h + 8, rs, 8);
    memcpy(h + 16, &unset, 8);
    memcpy(h + 24, &unset, 8);
    memcpy(h + 32, &t, 8);
    uint32_t clock_code = (uint32_t)iw_clock;
    memcpy(h + 40, &clock_code, 4);
    iw_cap = (size_t)4 << 20;
    iw_buf = iw_xmalloc(iw_cap);
    iw_on = 1;
    iw_write_all(h, sizeof h, 0);
    atexit(iw_atexit);
    iw_add(OP_INIT, 0, 0, IW_NONE, IW_NOTAG, 0, 0, t, t);
}

/* Right before MPI_Init or MPI_Init_thread. */
static void iw_starting(void) {
    iw_check_libraries();
    iw_check_trace_dir();
}

/* Right after MPI_Init or MPI_Init_thread (t0: iw_mono() before it). */
static void iw_started(int idx, double t0) {
    double spent = iw_mono() - t0;
    iw_check_version();
    iw_choose_clock();
    iw_vc.started = 0;
    iw_calibrate();
    iw_open(iw_now());
    if (!iw_on) return;
    iw_count(idx, 0, spent);
}

/* Outstanding wildcard receives at MPI_Finalize: never resolved. */
static void iw_mark_unresolved(void) {
    for (size_t i = 0; i < iw_reqs.cap; i++)
        if (iw_reqs.e[i].used) iw_unresolved(&iw_reqs.e[i].val);
}

static void iw_footer(void) {
    char ver[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
    int len = 0;
    PMPI_Get_library_version(ver, &len);
    while (len > 0 && (ver[len - 1] == '\n' || ver[len - 1] == ' ' || ver[len - 1] == 0)) len--;
    const char *info[][2] = {{"built_for", NULL}, {"built_for_library", IW_BUILT_LIBRARY},
                             {"built_with_mpicc", IW_BUILT_MPICC}, {"ran_with_library", iw_ran_library},
                             {"tracer_overhead", iw_remove_overhead ? "removed" : "kept"}, {"tracer_s", NULL},
                             {"clock_read_s", NULL}};
    char built[256], tracer_s[32], read_s[32];
    iw_built_name(built, sizeof built);
    info[0][1] = built;
    snprintf(tracer_s, sizeof tracer_s, "%.9f", 1e-9 * (double)__atomic_load_n(&iw_hidden_ns, __ATOMIC_RELAXED));
    info[5][1] = tracer_s;
    snprintf(read_s, sizeof read_s, "%.9f", iw_read_s);
    info[6][1] = read_s;
    size_t ninfo = sizeof info / sizeof info[0];
    size_t cap = 20 + (size_t)len + (size_t)iw_nslots * (2 + 64 + 16), n = 0;
    for (int s = 0; s < iw_nslots; s++) cap += strlen(iw_names[iw_order[s]]);
    for (size_t i = 0; i < ninfo; i++) cap += 6 + strlen(info[i][0]) + strlen(info[i][1]);
    char *f = iw_xmalloc(cap);
    uint32_t u32 = (uint32_t)len;
    memcpy(f, "IWFOOT02", 8); n = 8;
    memcpy(f + n, &u32, 4); n += 4;
    memcpy(f + n, ver, (size_t)len); n += (size_t)len;
    u32 = (uint32_t)iw_nslots;
    memcpy(f + n, &u32, 4); n += 4;
    for (int s = 0; s < iw_nslots; s++) {
        int i = iw_order[s];
        uint16_t nl = (uint16_t)strlen(iw_names[i]);
        memcpy(f + n, &nl, 2); n += 2;
        memcpy(f + n, iw_names[i], nl); n += nl;
        memcpy(f + n, &iw_calls[i], 8); n += 8;
        memcpy(f + n, &iw_secs[i], 8); n += 8;
    }
    /* what the tracer was built for and ran with: (key, value) strings */
    u32 = (uint32_t)ninfo;
    memcpy(f + n, &u32, 4); n += 4;
    for (size_t i = 0; i < ninfo; i++) {
        uint16_t kl = (uint16_t)strlen(info[i][0]);
        uint32_t vl = (uint32_t)strlen(info[i][1]);
        memcpy(f + n, &kl, 2); n += 2;
        memcpy(f + n, info[i][0], kl); n += kl;
        memcpy(f + n, &vl, 4); n += 4;
        memcpy(f + n, info[i][1], vl); n += vl;
    }
    uint64_t off = iw_flushed;
    iw_write_all(f, n, off);
    free(f);
    iw_write_all((const char *)&iw_nrec, 8, 16);
    iw_write_all((const char *)&off, 8, 24);
}

static void iw_close(int idx, double t0) {
    if (!iw_on) return;
    iw_mark_unresolved();
    double t1 = iw_leave(t0);
    iw_add(OP_FINALIZE, 0, 0, IW_NONE, IW_NOTAG, 0, 0, t0, t1);
    iw_count(idx, t0, t1);
    iw_flush(0);
    if (iw_on) iw_footer();
    iw_on = 0;
    close(iw_fd);
    iw_fd = -1;
    if (iw_world_group != MPI_GROUP_NULL) PMPI_Group_free(&iw_world_group);
}

/* MPI_Abort: what is buffered goes to the file before the job dies. */
static void iw_abort(int idx, MPI_Comm c, double t0) {
    if (!iw_on) return;
    iw_count(idx, t0, t0);
    iw_other(idx, c, NULL, NULL, t0, t0);
    iw_flush(0);
}

/* ---------------------------------------------------------------- Fortran */

#ifdef IW_FORTRAN
/* The real Fortran binding, found at the first call (so the C-only build and
 * C programs never need the Fortran library): the next definition after ours,
 * else any. `names` lists the symbol's manglings, preferred first. */
typedef void (*iw_ffn)();
static iw_ffn iw_resolve(const char *const *names) {
    for (int pass = 0; pass < 2; pass++)
        for (const char *const *n = names; *n; n++) {
            void *f = dlsym(pass ? RTLD_DEFAULT : RTLD_NEXT, *n);
            if (f) return (iw_ffn)f;
        }
    fprintf(stderr, "idlewave tracer: the Fortran MPI binding %s was not found\n", names[0]);
    abort();
}

/* Fortran's special addresses, as C sees them (Open MPI: common blocks with
 * every mangling; MPICH: MPIR_F_MPI_IN_PLACE holds the address). */
static void *iw_f_in_place[6];
static MPI_Fint *iw_f_status_ignore[8], *iw_f_statuses_ignore[8];
static int iw_f_known;

static void iw_fortran_constants(void) {
    if (iw_f_known) return;
    const char *inplace[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place", "mpi_fortran_in_place__",
                             "MPI_FORTRAN_IN_PLACE", NULL};
    const char *ignore[] = {"mpi_fortran_status_ignore_", "mpi_fortran_status_ignore", "mpi_fortran_status_ignore__",
                            "MPI_FORTRAN_STATUS_IGNORE", NULL};
    int n = 0;
    for (int i = 0; inplace[i]; i++) { void *p = dlsym(RTLD_DEFAULT, inplace[i]); if (p) iw_f_in_place[n++] = p; }
    void **mpich = dlsym(RTLD_DEFAULT, "MPIR_F_MPI_IN_PLACE");
    if (mpich && *mpich) iw_f_in_place[n++] = *mpich;
    n = 0;
    iw_f_status_ignore[n++] = MPI_F_STATUS_IGNORE;
#ifdef MPI_F08_STATUS_IGNORE
    iw_f_status_ignore[n++] = MPI_F08_STATUS_IGNORE;
#endif
    for (int i = 0; ignore[i]; i++) { void *p = dlsym(RTLD_DEFAULT, ignore[i]); if (p) iw_f_status_ignore[n++] = p; }
    const char *ignores[] = {"mpi_fortran_statuses_ignore_", "mpi_fortran_statuses_ignore",
                             "mpi_fortran_statuses_ignore__", "MPI_FORTRAN_STATUSES_IGNORE", NULL};
    n = 0;
    iw_f_statuses_ignore[n++] = MPI_F_STATUSES_IGNORE;
#ifdef MPI_F08_STATUSES_IGNORE
    iw_f_statuses_ignore[n++] = MPI_F08_STATUSES_IGNORE;
#endif
    for (int i = 0; ignores[i]; i++) { void *p = dlsym(RTLD_DEFAULT, ignores[i]); if (p) iw_f_statuses_ignore[n++] = p; }
    iw_f_known = 1;
}

/* A Fortran buffer as the recorder compares it (MPI_IN_PLACE or anything). */
static const void *iw_fbuf(const void *b) {
    iw_fortran_constants();
    for (int i = 0; i < 6 && iw_f_in_place[i]; i++) if (b == iw_f_in_place[i]) return MPI_IN_PLACE;
    return b;
}

static int iw_fstatus_ignored(const MPI_Fint *st) {
    iw_fortran_constants();
    if (!st) return 1;
    for (int i = 0; i < 8 && iw_f_status_ignore[i]; i++) if (st == iw_f_status_ignore[i]) return 1;
    return 0;
}

static int iw_fstatuses_ignored(const MPI_Fint *st) {
    iw_fortran_constants();
    if (!st) return 1;
    for (int i = 0; i < 8 && iw_f_statuses_ignore[i]; i++) if (st == iw_f_statuses_ignore[i]) return 1;
    return 0;
}

/* A Fortran status is MPI_F_STATUS_SIZE integers; C's struct is the same
 * size in Open MPI and MPICH (a margin for safety). */
#define IW_FSTATUS ((int)((sizeof(MPI_Status) + sizeof(MPI_Fint) - 1) / sizeof(MPI_Fint)) + 2)
/* the distance between statuses in a Fortran status array */
#ifdef MPI_F_STATUS_SIZE
#define IW_FSTRIDE MPI_F_STATUS_SIZE
#else
#define IW_FSTRIDE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif

/* Handle arrays converted on the stack up to IW_SMALL entries. */
#define IW_FREQS(name, fname, n)                                                                     \
    MPI_Request name##_small[IW_SMALL], *name = (n) <= IW_SMALL ? name##_small                        \
                                                              : iw_xmalloc(sizeof(MPI_Request) * (size_t)(n)); \
    for (int iw_i = 0; iw_i < (n); iw_i++) name[iw_i] = PMPI_Request_f2c((fname)[iw_i])
#define IW_FREE_SMALL(name) do { if (name != name##_small) free(name); } while (0)
#endif
