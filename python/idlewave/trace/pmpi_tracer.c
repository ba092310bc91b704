/* idlewave PMPI tracer: LD_PRELOAD it under mpiexec; every rank writes
 * $IDLEWAVE_TRACE_DIR/rank-<r>.iwt (default ./idlewave-trace), a header and
 * one 48-byte record per MPI call (see python/idlewave/trace/format.py).
 * Peers and roots are world ranks; bytes are count x type size. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum {
    OP_INIT = 1, OP_FINALIZE, OP_SEND, OP_RECV, OP_ISEND, OP_IRECV, OP_SENDRECV_SEND, OP_SENDRECV_RECV,
    OP_PROBE, OP_IPROBE, OP_MPROBE, OP_MRECV, OP_WAIT, OP_TEST,
    OP_BARRIER = 32, OP_BCAST, OP_REDUCE, OP_ALLREDUCE, OP_GATHER, OP_SCATTER, OP_ALLGATHER, OP_ALLTOALL,
    OP_IBARRIER = 48, OP_IBCAST, OP_IREDUCE, OP_IALLREDUCE, OP_IGATHER, OP_ISCATTER, OP_IALLGATHER, OP_IALLTOALL,
    OP_COMM_SPLIT = 64, OP_COMM_DUP, OP_CART_CREATE, OP_COMM_FREE, OP_COMM_MEMBER
};

typedef struct {
    uint8_t op, flags;
    uint16_t comm;
    int32_t peer, tag, root;
    uint64_t bytes, req;
    double t0, t1;
} rec_t; /* 48 bytes */

#define MAX_COMMS 1024
static rec_t *buf;
static size_t nrec, cap;
static FILE *out;
static int world_rank = -1;
static MPI_Comm comms[MAX_COMMS];
static int *to_world[MAX_COMMS];
static int ncomms;

static void flush_records(void) {
    if (out && nrec) fwrite(buf, sizeof(rec_t), nrec, out);
    nrec = 0;
}

static void add(uint8_t op, uint16_t comm, int peer, int tag, int root, uint64_t bytes, uint64_t req, double t0, double t1) {
    if (!out) return;
    if (nrec == cap) flush_records();
    rec_t *r = &buf[nrec++];
    r->op = op; r->flags = 0; r->comm = comm; r->peer = peer; r->tag = tag; r->root = root;
    r->bytes = bytes; r->req = req; r->t0 = t0; r->t1 = t1;
}

static uint64_t req_id(MPI_Request r) { uint64_t v = 0; memcpy(&v, &r, sizeof(r) < 8 ? sizeof(r) : 8); return v; }

static uint16_t comm_id(MPI_Comm c) {
    for (int i = 0; i < ncomms; i++) if (comms[i] == c) return (uint16_t)i;
    if (ncomms == MAX_COMMS) return 0xffff;
    int n; PMPI_Comm_size(c, &n);
    MPI_Group g, wg; PMPI_Comm_group(c, &g); PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *local = malloc(sizeof(int) * n); int *world = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) local[i] = i;
    PMPI_Group_translate_ranks(g, n, local, wg, world);
    PMPI_Group_free(&g); PMPI_Group_free(&wg); free(local);
    comms[ncomms] = c; to_world[ncomms] = world;
    /* A communicator's members (world ranks, in its rank order), so that a
     * replay can run its collectives and match its messages. */
    if (ncomms > 0) {
        double t = PMPI_Wtime();
        for (int i = 0; i < n; i++) add(OP_COMM_MEMBER, (uint16_t)ncomms, world[i], i, -1, 0, 0, t, t);
    }
    return (uint16_t)ncomms++;
}

static int world_of(MPI_Comm c, int r) {
    if (r < 0) return r; /* MPI_ANY_SOURCE, MPI_PROC_NULL */
    uint16_t id = comm_id(c);
    return id == 0xffff ? r : to_world[id][r];
}

static uint64_t nbytes(MPI_Count count, MPI_Datatype t) {
    if (t == MPI_DATATYPE_NULL) return 0;
    int s; PMPI_Type_size(t, &s); return (uint64_t)count * (uint64_t)s;
}

static void open_trace(void) {
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    int size; PMPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *dir = getenv("IDLEWAVE_TRACE_DIR");
    if (!dir || !*dir) dir = "idlewave-trace";
    mkdir(dir, 0777);
    char path[4096]; snprintf(path, sizeof path, "%s/rank-%d.iwt", dir, world_rank);
    out = fopen(path, "wb");
    if (!out) { fprintf(stderr, "idlewave tracer: cannot write %s\n", path); return; }
    cap = 1 << 16; buf = malloc(cap * sizeof(rec_t));
    char magic[8] = {'I', 'W', 'T', 'R', 'A', 'C', 'E', '1'};
    int32_t hdr[2] = {world_rank, size};
    fwrite(magic, 1, 8, out); fwrite(hdr, sizeof hdr, 1, out);
    comm_id(MPI_COMM_WORLD); /* id 0 */
}

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv); double t = PMPI_Wtime();
    open_trace(); add(OP_INIT, 0, -1, 0, -1, 0, 0, t, t); return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided); double t = PMPI_Wtime();
    open_trace(); add(OP_INIT, 0, -1, 0, -1, 0, 0, t, t); return rc;
}

int MPI_Finalize(void) {
    double t = PMPI_Wtime();
    add(OP_FINALIZE, 0, -1, 0, -1, 0, 0, t, t);
    flush_records();
    if (out) { fclose(out); out = NULL; }
    return PMPI_Finalize();
}

#define T0 double t0 = PMPI_Wtime()
#define T1 double t1 = PMPI_Wtime()

int MPI_Send(const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c) {
    T0; int rc = PMPI_Send(b, n, t, dst, tag, c); T1;
    add(OP_SEND, comm_id(c), world_of(c, dst), tag, -1, nbytes(n, t), 0, t0, t1); return rc;
}
int MPI_Ssend(const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c) {
    T0; int rc = PMPI_Ssend(b, n, t, dst, tag, c); T1;
    add(OP_SEND, comm_id(c), world_of(c, dst), tag, -1, nbytes(n, t), 0, t0, t1); return rc;
}
int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st) {
    MPI_Status s; if (st == MPI_STATUS_IGNORE) st = &s;
    T0; int rc = PMPI_Recv(b, n, t, src, tag, c, st); T1;
    int got; PMPI_Get_count(st, t, &got);
    add(OP_RECV, comm_id(c), world_of(c, st->MPI_SOURCE), st->MPI_TAG, -1, nbytes(got, t), 0, t0, t1); return rc;
}
int MPI_Isend(const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c, MPI_Request *r) {
    T0; int rc = PMPI_Isend(b, n, t, dst, tag, c, r); T1;
    add(OP_ISEND, comm_id(c), world_of(c, dst), tag, -1, nbytes(n, t), req_id(*r), t0, t1); return rc;
}
int MPI_Irecv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *r) {
    T0; int rc = PMPI_Irecv(b, n, t, src, tag, c, r); T1;
    add(OP_IRECV, comm_id(c), world_of(c, src), tag, -1, nbytes(n, t), req_id(*r), t0, t1); return rc;
}
int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype st_, int dst, int stag, void *rb, int rn, MPI_Datatype rt,
                 int src, int rtag, MPI_Comm c, MPI_Status *st) {
    MPI_Status s; if (st == MPI_STATUS_IGNORE) st = &s;
    T0; int rc = PMPI_Sendrecv(sb, sn, st_, dst, stag, rb, rn, rt, src, rtag, c, st); T1;
    int got; PMPI_Get_count(st, rt, &got);
    add(OP_SENDRECV_SEND, comm_id(c), world_of(c, dst), stag, -1, nbytes(sn, st_), 0, t0, t1);
    add(OP_SENDRECV_RECV, comm_id(c), world_of(c, st->MPI_SOURCE), st->MPI_TAG, -1, nbytes(got, rt), 0, t0, t1);
    return rc;
}
int MPI_Probe(int src, int tag, MPI_Comm c, MPI_Status *st) {
    T0; int rc = PMPI_Probe(src, tag, c, st); T1;
    add(OP_PROBE, comm_id(c), world_of(c, src), tag, -1, 0, 0, t0, t1); return rc;
}
int MPI_Iprobe(int src, int tag, MPI_Comm c, int *flag, MPI_Status *st) {
    T0; int rc = PMPI_Iprobe(src, tag, c, flag, st); T1;
    add(OP_IPROBE, comm_id(c), world_of(c, src), tag, -1, 0, 0, t0, t1); return rc;
}
int MPI_Mprobe(int src, int tag, MPI_Comm c, MPI_Message *m, MPI_Status *st) {
    T0; int rc = PMPI_Mprobe(src, tag, c, m, st); T1;
    add(OP_MPROBE, comm_id(c), world_of(c, src), tag, -1, 0, 0, t0, t1); return rc;
}
int MPI_Mrecv(void *b, int n, MPI_Datatype t, MPI_Message *m, MPI_Status *st) {
    MPI_Status s; if (st == MPI_STATUS_IGNORE) st = &s;
    T0; int rc = PMPI_Mrecv(b, n, t, m, st); T1;
    int got; PMPI_Get_count(st, t, &got);
    add(OP_MRECV, 0, st->MPI_SOURCE, st->MPI_TAG, -1, nbytes(got, t), 0, t0, t1); return rc;
}

/* Completions: one OP_WAIT/OP_TEST record per completed request; for a
 * receive the status gives the actual source. */
static void completed(uint8_t op, uint64_t req, MPI_Status *st, double t0, double t1) {
    int src = st ? st->MPI_SOURCE : -1;
    add(op, 0, src, st ? st->MPI_TAG : 0, -1, 0, req, t0, t1);
}
int MPI_Wait(MPI_Request *r, MPI_Status *st) {
    MPI_Status s; if (st == MPI_STATUS_IGNORE) st = &s;
    uint64_t id = req_id(*r);
    T0; int rc = PMPI_Wait(r, st); T1; completed(OP_WAIT, id, st, t0, t1); return rc;
}
int MPI_Test(MPI_Request *r, int *flag, MPI_Status *st) {
    MPI_Status s; if (st == MPI_STATUS_IGNORE) st = &s;
    uint64_t id = req_id(*r);
    T0; int rc = PMPI_Test(r, flag, st); T1;
    if (*flag) completed(OP_TEST, id, st, t0, t1); else add(OP_TEST, 0, -1, 0, -1, 0, 0, t0, t1);
    return rc;
}
static MPI_Status *statuses(int n, MPI_Status *given, MPI_Status **owned) {
    *owned = NULL;
    if (given != MPI_STATUSES_IGNORE) return given;
    *owned = malloc(sizeof(MPI_Status) * (n > 0 ? n : 1)); return *owned;
}
int MPI_Waitall(int n, MPI_Request *r, MPI_Status *sts) {
    MPI_Status *own; MPI_Status *st = statuses(n, sts, &own);
    uint64_t *ids = malloc(sizeof(uint64_t) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++) ids[i] = req_id(r[i]);
    T0; int rc = PMPI_Waitall(n, r, st); T1;
    for (int i = 0; i < n; i++) completed(OP_WAIT, ids[i], &st[i], t0, t1);
    free(ids); free(own); return rc;
}
int MPI_Testall(int n, MPI_Request *r, int *flag, MPI_Status *sts) {
    MPI_Status *own; MPI_Status *st = statuses(n, sts, &own);
    uint64_t *ids = malloc(sizeof(uint64_t) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++) ids[i] = req_id(r[i]);
    T0; int rc = PMPI_Testall(n, r, flag, st); T1;
    if (*flag) for (int i = 0; i < n; i++) completed(OP_TEST, ids[i], &st[i], t0, t1);
    else add(OP_TEST, 0, -1, 0, -1, 0, 0, t0, t1);
    free(ids); free(own); return rc;
}
int MPI_Waitany(int n, MPI_Request *r, int *idx, MPI_Status *st) {
    MPI_Status s; if (st == MPI_STATUS_IGNORE) st = &s;
    uint64_t *ids = malloc(sizeof(uint64_t) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++) ids[i] = req_id(r[i]);
    T0; int rc = PMPI_Waitany(n, r, idx, st); T1;
    if (*idx != MPI_UNDEFINED) completed(OP_WAIT, ids[*idx], st, t0, t1);
    free(ids); return rc;
}
int MPI_Testany(int n, MPI_Request *r, int *idx, int *flag, MPI_Status *st) {
    MPI_Status s; if (st == MPI_STATUS_IGNORE) st = &s;
    uint64_t *ids = malloc(sizeof(uint64_t) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++) ids[i] = req_id(r[i]);
    T0; int rc = PMPI_Testany(n, r, idx, flag, st); T1;
    if (*flag && *idx != MPI_UNDEFINED) completed(OP_TEST, ids[*idx], st, t0, t1); else add(OP_TEST, 0, -1, 0, -1, 0, 0, t0, t1);
    free(ids); return rc;
}
static int somefn(int test, int n, MPI_Request *r, int *outc, int *idx, MPI_Status *sts) {
    MPI_Status *own; MPI_Status *st = statuses(n, sts, &own);
    uint64_t *ids = malloc(sizeof(uint64_t) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++) ids[i] = req_id(r[i]);
    T0; int rc = test ? PMPI_Testsome(n, r, outc, idx, st) : PMPI_Waitsome(n, r, outc, idx, st); T1;
    if (*outc == MPI_UNDEFINED || *outc == 0) add(test ? OP_TEST : OP_WAIT, 0, -1, 0, -1, 0, 0, t0, t1);
    else for (int i = 0; i < *outc; i++) completed(test ? OP_TEST : OP_WAIT, ids[idx[i]], &st[i], t0, t1);
    free(ids); free(own); return rc;
}
int MPI_Waitsome(int n, MPI_Request *r, int *outc, int *idx, MPI_Status *st) { return somefn(0, n, r, outc, idx, st); }
int MPI_Testsome(int n, MPI_Request *r, int *outc, int *idx, MPI_Status *st) { return somefn(1, n, r, outc, idx, st); }

#define COLL(op, call, c, root, bytes) do { T0; int rc = call; T1; \
    add(op, comm_id(c), (root) >= 0 ? world_of(c, root) : -1, 0, (root) >= 0 ? world_of(c, root) : -1, bytes, 0, t0, t1); \
    return rc; } while (0)
#define ICOLL(op, call, c, root, bytes, r) do { T0; int rc = call; T1; \
    add(op, comm_id(c), -1, 0, (root) >= 0 ? world_of(c, root) : -1, bytes, req_id(*(r)), t0, t1); \
    return rc; } while (0)

int MPI_Barrier(MPI_Comm c) { COLL(OP_BARRIER, PMPI_Barrier(c), c, -1, 0); }
int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c) { COLL(OP_BCAST, PMPI_Bcast(b, n, t, root, c), c, root, nbytes(n, t)); }
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c) { COLL(OP_REDUCE, PMPI_Reduce(s, r, n, t, o, root, c), c, root, nbytes(n, t)); }
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c) { COLL(OP_ALLREDUCE, PMPI_Allreduce(s, r, n, t, o, c), c, -1, nbytes(n, t)); }
int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c) { COLL(OP_GATHER, PMPI_Gather(s, sn, st, r, rn, rt, root, c), c, root, nbytes(sn, st)); }
int MPI_Scatter(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c) { COLL(OP_SCATTER, PMPI_Scatter(s, sn, st, r, rn, rt, root, c), c, root, nbytes(rn, rt)); }
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c) { COLL(OP_ALLGATHER, PMPI_Allgather(s, sn, st, r, rn, rt, c), c, -1, nbytes(sn, st)); }
int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c) { COLL(OP_ALLTOALL, PMPI_Alltoall(s, sn, st, r, rn, rt, c), c, -1, nbytes(sn, st)); }
int MPI_Ibarrier(MPI_Comm c, MPI_Request *q) { ICOLL(OP_IBARRIER, PMPI_Ibarrier(c, q), c, -1, 0, q); }
int MPI_Ibcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *q) { ICOLL(OP_IBCAST, PMPI_Ibcast(b, n, t, root, c, q), c, root, nbytes(n, t), q); }
int MPI_Ireduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c, MPI_Request *q) { ICOLL(OP_IREDUCE, PMPI_Ireduce(s, r, n, t, o, root, c, q), c, root, nbytes(n, t), q); }
int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c, MPI_Request *q) { ICOLL(OP_IALLREDUCE, PMPI_Iallreduce(s, r, n, t, o, c, q), c, -1, nbytes(n, t), q); }
int MPI_Igather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c, MPI_Request *q) { ICOLL(OP_IGATHER, PMPI_Igather(s, sn, st, r, rn, rt, root, c, q), c, root, nbytes(sn, st), q); }
int MPI_Iscatter(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c, MPI_Request *q) { ICOLL(OP_ISCATTER, PMPI_Iscatter(s, sn, st, r, rn, rt, root, c, q), c, root, nbytes(rn, rt), q); }
int MPI_Iallgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c, MPI_Request *q) { ICOLL(OP_IALLGATHER, PMPI_Iallgather(s, sn, st, r, rn, rt, c, q), c, -1, nbytes(sn, st), q); }
int MPI_Ialltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c, MPI_Request *q) { ICOLL(OP_IALLTOALL, PMPI_Ialltoall(s, sn, st, r, rn, rt, c, q), c, -1, nbytes(sn, st), q); }

int MPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm *n) {
    T0; int rc = PMPI_Comm_split(c, color, key, n); T1;
    add(OP_COMM_SPLIT, comm_id(c), *n == MPI_COMM_NULL ? -1 : comm_id(*n), color, key, 0, 0, t0, t1); return rc;
}
int MPI_Comm_dup(MPI_Comm c, MPI_Comm *n) {
    T0; int rc = PMPI_Comm_dup(c, n); T1;
    add(OP_COMM_DUP, comm_id(c), comm_id(*n), 0, -1, 0, 0, t0, t1); return rc;
}
int MPI_Cart_create(MPI_Comm c, int nd, const int dims[], const int periods[], int reorder, MPI_Comm *n) {
    T0; int rc = PMPI_Cart_create(c, nd, dims, periods, reorder, n); T1;
    add(OP_CART_CREATE, comm_id(c), *n == MPI_COMM_NULL ? -1 : comm_id(*n), nd, -1, 0, 0, t0, t1); return rc;
}

#if defined(MPI_VERSION) && MPI_VERSION >= 4
/* MPI 4 large-count variants (mpi4py on MPICH calls these). */
int MPI_Send_c(const void *b, MPI_Count n, MPI_Datatype t, int dst, int tag, MPI_Comm c) {
    T0; int rc = PMPI_Send_c(b, n, t, dst, tag, c); T1;
    add(OP_SEND, comm_id(c), world_of(c, dst), tag, -1, nbytes(n, t), 0, t0, t1); return rc;
}
int MPI_Recv_c(void *b, MPI_Count n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st) {
    MPI_Status s; if (st == MPI_STATUS_IGNORE) st = &s;
    T0; int rc = PMPI_Recv_c(b, n, t, src, tag, c, st); T1;
    MPI_Count got; PMPI_Get_count_c(st, t, &got);
    add(OP_RECV, comm_id(c), world_of(c, st->MPI_SOURCE), st->MPI_TAG, -1, nbytes(got, t), 0, t0, t1); return rc;
}
int MPI_Isend_c(const void *b, MPI_Count n, MPI_Datatype t, int dst, int tag, MPI_Comm c, MPI_Request *r) {
    T0; int rc = PMPI_Isend_c(b, n, t, dst, tag, c, r); T1;
    add(OP_ISEND, comm_id(c), world_of(c, dst), tag, -1, nbytes(n, t), req_id(*r), t0, t1); return rc;
}
int MPI_Irecv_c(void *b, MPI_Count n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *r) {
    T0; int rc = PMPI_Irecv_c(b, n, t, src, tag, c, r); T1;
    add(OP_IRECV, comm_id(c), world_of(c, src), tag, -1, nbytes(n, t), req_id(*r), t0, t1); return rc;
}
int MPI_Bcast_c(void *b, MPI_Count n, MPI_Datatype t, int root, MPI_Comm c) { COLL(OP_BCAST, PMPI_Bcast_c(b, n, t, root, c), c, root, nbytes(n, t)); }
int MPI_Allreduce_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op o, MPI_Comm c) { COLL(OP_ALLREDUCE, PMPI_Allreduce_c(s, r, n, t, o, c), c, -1, nbytes(n, t)); }
int MPI_Reduce_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c) { COLL(OP_REDUCE, PMPI_Reduce_c(s, r, n, t, o, root, c), c, root, nbytes(n, t)); }
#endif
