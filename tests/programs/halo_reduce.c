/* A small program for `idlewave validate`: per iteration a compute phase
   (a spin of argv[2] µs of thread CPU time), a ring halo exchange with both
   neighbours (Irecv, Isend, Waitall; argv[3] doubles), an allreduce of 8
   doubles and an alltoall of 64 doubles per pair; argv[1] iterations. */
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int iterations = argc > 1 ? atoi(argv[1]) : 50;
    double spin = (argc > 2 ? atof(argv[2]) : 500.0) * 1e-6;
    int halo = argc > 3 ? atoi(argv[3]) : 4096;
    int p, me;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    double *out = calloc(2 * (size_t)halo, sizeof(double)), *in = calloc(2 * (size_t)halo, sizeof(double));
    double *a2a_out = calloc(64 * (size_t)p, sizeof(double)), *a2a_in = calloc(64 * (size_t)p, sizeof(double));
    double x[8] = {0}, y[8];
    int left = (me + p - 1) % p, right = (me + 1) % p;
    for (int it = 0; it < iterations; it++) {
        for (double t0 = cpu_now(); cpu_now() - t0 < spin;)
            x[0] += 1e-9;
        MPI_Request q[4];
        MPI_Irecv(in, halo, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(in + halo, halo, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &q[1]);
        MPI_Isend(out, halo, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &q[2]);
        MPI_Isend(out + halo, halo, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &q[3]);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        MPI_Allreduce(x, y, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Alltoall(a2a_out, 64, MPI_DOUBLE, a2a_in, 64, MPI_DOUBLE, MPI_COMM_WORLD);
    }
    free(out); free(in); free(a2a_out); free(a2a_in);
    MPI_Finalize();
    return 0;
}
