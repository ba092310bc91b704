/* The measurements of `idlewave measure KIND --mpicc PATH`, as one C MPI
   program: built with the application's own mpicc and run under its own
   launcher, so that what is measured is the MPI library the application
   uses (mpi4py is bound to the one MPI it was built with).

   Usage (written by idlewave/measure/native.py, never by hand):

       kernels KIND key=value ... out=DIR [expect=RANK/SIZE]

   KIND is pingpong, multipair, kernels or noise. Every parameter of the kind
   is given: Python fills the defaults from kernels.py, the one place they
   are defined. Each kind ports its function in kernels.py step by step (the
   noise kind ports src/noisemeter.rs), so the two paths measure the same
   thing. Rank 0 creates DIR and writes plain CSV and machine.tsv into it;
   Python turns them into the Parquet files and machine.json of the mpi4py
   path.
   `expect` is the rank and size a user's launcher gave the Python process
   that started this program: a program that does not join that job (it
   loaded another MPI library than the launcher's) stops instead of
   measuring a job of one rank. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* iw_pingpong and iw_exchange, the timed round trips and exchanges: the very
   loops the mpi4py path loads with ctypes, so that both paths time messages
   the same way. */
#include "pingpong.c"

/* Starts every message for the user, so that Python can find them among
   the launcher's own messages. */
#define PREFIX "idlewave kernels: "

static int rank, nranks;
static int n_args;
static char **args;
static const char *outdir;
/* Every rank's processor name, MPI_MAX_PROCESSOR_NAME bytes each. */
static char *hosts;

/* ------------------------------------------------------------------ */
/* Errors. A usage error is the same on every rank (all read the same
   arguments), so every rank leaves cleanly and rank 0 says why; anything
   else (memory, files) may hit one rank only and aborts the job. */

static void usage_error(const char *fmt, ...) {
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fputs(PREFIX, stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    MPI_Finalize();
    exit(2);
}

static void fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PREFIX "rank %d: ", rank);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        fatal("out of memory (%zu x %zu bytes)", n, size);
    return p;
}

static FILE *open_out(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        fatal("cannot write %s", path);
    return f;
}

static void close_out(FILE *f) {
    if (f && fclose(f) != 0)
        fatal("could not finish writing a result file (disk full?)");
}

/* ------------------------------------------------------------------ */
/* Arguments: key=value. */

static const char *arg_or(const char *key, const char *fallback) {
    size_t n = strlen(key);
    for (int i = 0; i < n_args; i++)
        if (strncmp(args[i], key, n) == 0 && args[i][n] == '=')
            return args[i] + n + 1;
    return fallback;
}

static const char *arg(const char *key) {
    const char *v = arg_or(key, NULL);
    if (!v)
        usage_error("missing argument %s=", key);
    return v;
}

/* A whole number of at least `least`. */
static long long arg_whole(const char *key, long long least) {
    char *end;
    long long v = strtoll(arg(key), &end, 10);
    if (*end != '\0' || v < least)
        usage_error("%s: a whole number >= %lld is expected", key, least);
    return v;
}

static long long arg_int(const char *key) { return arg_whole(key, 1); }

static double arg_double(const char *key) {
    char *end;
    double v = strtod(arg(key), &end);
    if (*end != '\0')
        usage_error("%s: a number is expected", key);
    return v;
}

/* A comma-separated list of whole numbers >= 1; returns how many. */
static int arg_ints(const char *key, long long **out) {
    const char *s = arg(key);
    int n = 1;
    for (const char *c = s; *c; c++)
        n += *c == ',';
    *out = xcalloc((size_t)n, sizeof **out);
    for (int i = 0; i < n; i++) {
        char *end;
        (*out)[i] = strtoll(s, &end, 10);
        if ((*end != ',' && *end != '\0') || (*out)[i] < 1)
            usage_error("%s: whole numbers >= 1, separated by commas, are expected", key);
        s = end + 1;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Helpers shared by the kinds (kernels.py: busy, _sizes). */

/* Spin for `seconds`; with requests, test them between `chunks` pieces
   (chunks - 1 tests), as an application polls progress while computing. */
static void busy(double seconds, MPI_Request *reqs, int nreqs, int chunks) {
    double end = MPI_Wtime() + seconds;
    for (int k = 0; k < chunks; k++) {
        double stop = MPI_Wtime() + (end - MPI_Wtime()) / (chunks - k);
        while (MPI_Wtime() < stop) {
        }
        if (reqs && k + 1 < chunks) {
            int flag;
            MPI_Testall(nreqs, reqs, &flag, MPI_STATUSES_IGNORE);
        }
    }
}

static const char *host_of(int r) { return hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME; }

/* ------------------------------------------------------------------ */
/* pingpong: kernels.py `pingpong` (Krylov paper §5.2). Rank 0 and its first
   partner on the same node, then on another node where there is one: per
   size, a warm-up, then per test a barrier, a delay to clear the network and
   `iterations` round trips, `reps` times (pingpong.csv); then the same with
   `iterations` simultaneous exchanges, both ranks sending at once
   (exchange.csv). */

static void run_pingpong(void) {
    long long max_bytes = arg_int("max_bytes"), reps = arg_int("reps"), iterations = arg_int("iterations");
    long long span_bytes = arg_whole("span_bytes", 0);
    double delay_s = arg_double("delay_s");
    if (nranks < 2)
        usage_error("pingpong needs at least 2 ranks");
    /* partners from the processor names, as kernels.py's _partners */
    const char *link_names[2] = {"on_node", "off_node"};
    int peers[2] = {-1, -1};
    for (int r = 1; r < nranks; r++) {
        int same = strcmp(host_of(r), host_of(0)) == 0;
        if (same && peers[0] < 0)
            peers[0] = r;
        if (!same && peers[1] < 0)
            peers[1] = r;
    }
    /* the buffers: max_bytes each, or regions of span_bytes whose slots the messages cycle through (pingpong.c) */
    size_t region = (size_t)(span_bytes > max_bytes ? span_bytes : max_bytes);
    char *buf = xcalloc(region, 1), *recvbuf = xcalloc(region, 1);
    if (span_bytes > 0) { /* written, so that every page is there (calloc's may all map one zero page) */
        memset(buf, 1, region);
        memset(recvbuf, 2, region);
    }
    FILE *files[2] = {NULL, NULL}; /* 0: the ping-pong, 1: the exchange */
    if (rank == 0) {
        files[0] = open_out("pingpong.csv");
        files[1] = open_out("exchange.csv");
        for (int x = 0; x < 2; x++)
            fprintf(files[x], "link,size_bytes,rep,time_s\n");
    }
    for (int l = 0; l < 2; l++) {
        int peer = peers[l];
        if (peer < 0)
            continue;
        int role = rank == 0 ? 0 : rank == peer ? 1 : -1;
        int other = role == 0 ? peer : 0;
        for (long long size = 1; size <= max_bytes; size *= 2) {
            long stride = (long)((size + 63) / 64 * 64);
            long slots = span_bytes > 0 ? (long)(region / (size_t)stride) : 1;
            for (int x = 0; x < 2; x++) {
                if (role >= 0) { /* warm-up */
                    if (x == 0)
                        iw_pingpong(role, other, buf, span_bytes > 0 ? recvbuf : buf, (int)size, 2, slots, stride);
                    else
                        iw_exchange(other, buf, recvbuf, (int)size, 2, slots, stride);
                }
                for (long long rep = 0; rep < reps; rep++) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    busy(delay_s, NULL, 0, 1);
                    if (role >= 0) {
                        double t = x == 0 ? iw_pingpong(role, other, buf, span_bytes > 0 ? recvbuf : buf, (int)size,
                                                        (int)iterations, slots, stride)
                                          : iw_exchange(other, buf, recvbuf, (int)size, (int)iterations, slots, stride);
                        if (role == 0)
                            fprintf(files[x], "%s,%lld,%lld,%.17g\n", link_names[l], size, rep, t);
                    }
                }
            }
        }
    }
    close_out(files[0]);
    close_out(files[1]);
    free(buf);
    free(recvbuf);
}

/* ------------------------------------------------------------------ */
/* multipair: kernels.py `multipair`. 1 .. P/2 simultaneous pairs
   (i, i + P/2); the slowest pair's one-way time per test. */

static void run_multipair(void) {
    long long max_bytes = arg_int("max_bytes"), min_bytes = arg_int("min_bytes");
    long long reps = arg_int("reps"), iterations = arg_int("iterations");
    double delay_s = arg_double("delay_s");
    int half = nranks / 2;
    if (half < 1)
        usage_error("multipair needs at least 2 ranks");
    char *buf = xcalloc((size_t)max_bytes, 1);
    FILE *f = rank == 0 ? open_out("multipair.csv") : NULL;
    if (f)
        fprintf(f, "pairs,size_bytes,rep,time_s\n");
    int i = rank < half ? rank : rank - half; /* the pair this rank belongs to */
    int role = rank < half ? 0 : 1;
    int peer = rank < half ? rank + half : rank - half;
    for (int pairs = 1; pairs <= half; pairs++) {
        for (long long size = 1; size <= max_bytes; size *= 2) {
            if (size < min_bytes)
                continue;
            for (long long rep = 0; rep < reps; rep++) {
                MPI_Barrier(MPI_COMM_WORLD);
                busy(delay_s, NULL, 0, 1);
                double t = 0.0, worst = 0.0;
                if (i < pairs)
                    t = iw_pingpong(role, peer, buf, buf, (int)size, (int)iterations, 1, 0);
                MPI_Reduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
                if (f)
                    fprintf(f, "%d,%lld,%lld,%.17g\n", pairs, size, rep, worst);
            }
        }
    }
    close_out(f);
    free(buf);
}

/* ------------------------------------------------------------------ */
/* kernels: kernels.py `kernels` (Krylov paper §3.1). Blocking and
   nonblocking allreduce and 3-D halo exchange between two busy-waits, the
   first overlappable; time per iteration, the slowest rank's. */

static void record(FILE *f, const char *kernel, const char *mode, long long size, long long n, long long rep, double t,
                   double overlap_s, double trailing_s) {
    double worst = 0.0;
    MPI_Reduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (f)
        fprintf(f, "%s,%s,%lld,%lld,%lld,%.17g,%.17g,%.17g\n", kernel, mode, size, n, rep, worst, overlap_s, trailing_s);
}

static void run_kernels(void) {
    long long *sizes, *halo_n;
    int n_sizes = arg_ints("sizes", &sizes), n_halo = arg_ints("halo_n", &halo_n);
    double overlap_s = arg_double("overlap_s"), trailing_s = arg_double("trailing_s");
    long long iterations = arg_int("iterations"), reps = arg_int("reps"), test_chunks = arg_int("test_chunks");
    static const char *modes[2] = {"blocking", "nonblocking"};
    FILE *f = rank == 0 ? open_out("kernels.csv") : NULL;
    if (f)
        fprintf(f, "kernel,mode,size_bytes,n,rep,time_s,overlap_s,trailing_s\n");

    for (int s = 0; s < n_sizes; s++) {
        long long count = sizes[s] / 8 > 1 ? sizes[s] / 8 : 1; /* doubles */
        double *a = xcalloc((size_t)count, sizeof *a), *b = xcalloc((size_t)count, sizeof *b);
        for (long long k = 0; k < count; k++)
            a[k] = 1.0;
        MPI_Request req;
        MPI_Allreduce(a, b, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* warm-up: connections, buffers */
        MPI_Iallreduce(a, b, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int m = 0; m < 2; m++) {
            for (long long rep = 0; rep < reps; rep++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (long long it = 0; it < iterations; it++) {
                    if (m == 0) {
                        MPI_Allreduce(a, b, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                        busy(overlap_s, NULL, 0, 1);
                    } else {
                        MPI_Iallreduce(a, b, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
                        busy(overlap_s, &req, 1, (int)test_chunks);
                        MPI_Wait(&req, MPI_STATUS_IGNORE);
                    }
                    busy(trailing_s, NULL, 0, 1);
                }
                record(f, "allreduce", modes[m], sizes[s], 0, rep, (MPI_Wtime() - t0) / (double)iterations, overlap_s,
                       trailing_s);
            }
        }
        free(a);
        free(b);
    }

    for (int h = 0; h < n_halo; h++) {
        long long n = halo_n[h];
        /* the grid of MPI_Dims_create, not periodic, not reordered (mpi4py's Create_cart defaults) */
        int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0};
        MPI_Dims_create(nranks, 3, dims);
        MPI_Comm cart;
        MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
        int peers[6], np = 0;
        for (int d = 0; d < 3; d++) {
            int src, dst;
            MPI_Cart_shift(cart, d, 1, &src, &dst);
            if (src != MPI_PROC_NULL)
                peers[np++] = src;
            if (dst != MPI_PROC_NULL)
                peers[np++] = dst;
        }
        size_t face = (size_t)(n * n);
        double *send = xcalloc(face * (size_t)np, sizeof *send), *recv = xcalloc(face * (size_t)np, sizeof *recv);
        for (size_t k = 0; k < face * (size_t)np; k++)
            send[k] = 1.0;
        MPI_Request reqs[12];
        /* receives first, then sends, as kernels.py posts them */
#define POST_HALO()                                                                                   \
    do {                                                                                              \
        for (int p = 0; p < np; p++)                                                                  \
            MPI_Irecv(recv + face * p, (int)face, MPI_DOUBLE, peers[p], 3, cart, &reqs[p]);           \
        for (int p = 0; p < np; p++)                                                                  \
            MPI_Isend(send + face * p, (int)face, MPI_DOUBLE, peers[p], 3, cart, &reqs[np + p]);      \
    } while (0)
        POST_HALO(); /* warm-up */
        MPI_Waitall(2 * np, reqs, MPI_STATUSES_IGNORE);
        for (int m = 0; m < 2; m++) {
            for (long long rep = 0; rep < reps; rep++) {
                MPI_Barrier(cart);
                double t0 = MPI_Wtime();
                for (long long it = 0; it < iterations; it++) {
                    POST_HALO();
                    if (m == 0) {
                        MPI_Waitall(2 * np, reqs, MPI_STATUSES_IGNORE);
                        busy(overlap_s, NULL, 0, 1);
                    } else {
                        busy(overlap_s, reqs, 2 * np, (int)test_chunks);
                        MPI_Waitall(2 * np, reqs, MPI_STATUSES_IGNORE);
                    }
                    busy(trailing_s, NULL, 0, 1);
                }
                record(f, "halo", modes[m], 8 * n * n, n, rep, (MPI_Wtime() - t0) / (double)iterations, overlap_s,
                       trailing_s);
            }
        }
#undef POST_HALO
        free(send);
        free(recv);
        MPI_Comm_free(&cart);
    }
    close_out(f);
    free(sizes);
    free(halo_n);
}

/* ------------------------------------------------------------------ */
/* noise: kernels.py `noise`, whose two loops are src/noisemeter.rs
   (`selfish`, `fwq`), ported here line by line. The clock is
   CLOCK_MONOTONIC, which Rust's Instant reads on Linux. */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Selfish detours: spin reading the clock; every gap above the threshold
   is time the CPU was taken away. Pairs (start since the start, length)
   in ns, appended to *out (2 values each); returns how many pairs. */
static size_t selfish(uint64_t duration, uint64_t threshold, uint64_t **out) {
    size_t n = 0, cap = 1024;
    *out = xcalloc(2 * cap, sizeof **out);
    uint64_t start = now_ns(), last = start;
    for (;;) {
        uint64_t now = now_ns();
        uint64_t gap = now - last;
        if (gap > threshold) {
            if (n == cap) {
                cap *= 2;
                uint64_t *grown = realloc(*out, 2 * cap * sizeof **out);
                if (!grown)
                    fatal("out of memory recording detours");
                *out = grown;
            }
            (*out)[2 * n] = last - start;
            (*out)[2 * n + 1] = gap;
            n++;
        }
        last = now;
        if (now - start >= duration)
            return n;
    }
}

/* Fixed work quanta: the time of `work` steps of a linear congruential
   recurrence, `samples` times. `volatile` keeps the compiler from folding
   the loop away, as Rust's black_box does (both keep x in memory). */
static void fwq(uint64_t work, size_t samples, uint64_t *ns) {
    for (size_t s = 0; s < samples; s++) {
        uint64_t t0 = now_ns();
        volatile uint64_t x = 1;
        for (uint64_t i = 0; i < work; i++)
            x = x * 6364136223846793005ull + i;
        ns[s] = now_ns() - t0;
    }
}

static void run_noise(void) {
    double duration_s = arg_double("duration_s");
    long long threshold_ns = arg_int("threshold_ns"), fwq_work = arg_int("fwq_work"), fwq_samples = arg_int("fwq_samples");
    if (!(duration_s > 0.0))
        usage_error("duration must be positive");
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t *detours;
    size_t found = selfish((uint64_t)(duration_s * 1e9 + 0.5), (uint64_t)threshold_ns, &detours);
    uint64_t *quanta = xcalloc((size_t)fwq_samples, sizeof *quanta);
    fwq((uint64_t)fwq_work, (size_t)fwq_samples, quanta);

    /* rank 0 gathers every rank's detours (variable counts) and quanta */
    int mine = (int)(2 * found);
    int *counts = rank == 0 ? xcalloc((size_t)nranks, sizeof *counts) : NULL;
    int *displs = rank == 0 ? xcalloc((size_t)nranks, sizeof *displs) : NULL;
    MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    uint64_t *all = NULL;
    if (rank == 0) {
        long long total = 0;
        for (int r = 0; r < nranks; r++) {
            displs[r] = (int)total;
            total += counts[r];
        }
        all = xcalloc((size_t)total, sizeof *all);
    }
    MPI_Gatherv(detours, mine, MPI_UINT64_T, all, counts, displs, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    uint64_t *all_quanta = rank == 0 ? xcalloc((size_t)fwq_samples * (size_t)nranks, sizeof *all_quanta) : NULL;
    MPI_Gather(quanta, (int)fwq_samples, MPI_UINT64_T, all_quanta, (int)fwq_samples, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *f = open_out("detours.csv");
        fprintf(f, "rank,start_ns,duration_ns\n");
        for (int r = 0; r < nranks; r++)
            for (int k = 0; k < counts[r]; k += 2)
                fprintf(f, "%d,%llu,%llu\n", r, (unsigned long long)all[displs[r] + k],
                        (unsigned long long)all[displs[r] + k + 1]);
        close_out(f);
        f = open_out("fwq.csv");
        fprintf(f, "rank,sample,ns\n");
        for (int r = 0; r < nranks; r++)
            for (long long s = 0; s < fwq_samples; s++)
                fprintf(f, "%d,%lld,%llu\n", r, s, (unsigned long long)all_quanta[(size_t)r * (size_t)fwq_samples + (size_t)s]);
        close_out(f);
    }
    free(detours);
    free(quanta);
    free(counts);
    free(displs);
    free(all);
    free(all_quanta);
}

/* ------------------------------------------------------------------ */
/* What machine.json records about this MPI: machine.tsv, key<TAB>value. */

static void write_machine(void) {
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len, major, minor;
    MPI_Get_library_version(library, &len);
    library[strcspn(library, "\n")] = '\0'; /* the first line names library and version */
    MPI_Get_version(&major, &minor);
    FILE *f = open_out("machine.tsv");
    fprintf(f, "mpi_library\t%s\n", library);
    fprintf(f, "mpi_version\t%d.%d\n", major, minor);
    /* the headers it was compiled with: a run that loads another library
       (LD_LIBRARY_PATH, another launcher's environment) shows as a mismatch */
#if defined(OMPI_MAJOR_VERSION)
    fprintf(f, "mpi_header\tOpen MPI v%d.%d.%d\n", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
    fprintf(f, "mpi_header\tMPICH Version: %s\n", MPICH_VERSION);
#else
    fprintf(f, "mpi_header\tMPI %d.%d\n", MPI_VERSION, MPI_SUBVERSION);
#endif
    fprintf(f, "wtick_s\t%.17g\n", MPI_Wtick());
    fprintf(f, "cpu_count\t%ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    for (int r = 0; r < nranks; r++)
        fprintf(f, "host\t%d\t%s\n", r, host_of(r));
    close_out(f);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 2)
        usage_error("usage: %s pingpong|multipair|kernels|noise key=value ... out=DIR", argv[0]);
    n_args = argc - 2;
    args = argv + 2;

    const char *expect = arg_or("expect", NULL);
    if (expect) {
        int want_rank = -1, want_size = -1;
        if (sscanf(expect, "%d/%d", &want_rank, &want_size) != 2 || want_rank != rank || want_size != nranks) {
            /* each process on its own: such a process is not part of the launcher's job */
            fprintf(stderr,
                    PREFIX "the launcher started this process as rank %d of %d, but the MPI library it loaded made it "
                    "rank %d of %d: it did not join the launcher's job; start idlewave with the launcher of the MPI "
                    "that --mpicc belongs to\n",
                    want_rank, want_size, rank, nranks);
            MPI_Finalize();
            return 3;
        }
    }
    outdir = arg("out");

    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len;
    MPI_Get_processor_name(name, &len);
    hosts = xcalloc((size_t)nranks, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);

    /* Rank 0 creates the directory for its files only now, after every
       rank has joined: under a user's launcher each rank's Python checks the
       output directory before it starts this program, and a new entry in it
       must not race with that check. */
    if (rank == 0 && mkdir(outdir, 0777) != 0)
        fatal("cannot create %s", outdir);

    const char *kind = argv[1];
    if (strcmp(kind, "pingpong") == 0)
        run_pingpong();
    else if (strcmp(kind, "multipair") == 0)
        run_multipair();
    else if (strcmp(kind, "kernels") == 0)
        run_kernels();
    else if (strcmp(kind, "noise") == 0)
        run_noise();
    else
        usage_error("unknown kind %s (pingpong, multipair, kernels, noise)", kind);
    if (rank == 0)
        write_machine();
    free(hosts);
    MPI_Finalize();
    return 0;
}
