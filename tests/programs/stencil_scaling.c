/* A 2-D halo exchange on MPI_Dims_create's periodic grid, with a world
   allreduce, in weak scaling (argv[1] = "weak": a 120×120 block per rank) or
   strong scaling ("strong": a 720×720 domain shared by the ranks). A halo
   message carries the block's face, the computation is proportional to its
   area. argv[2] = 1: the number of iterations grows with the grid, 2 + its
   first extent (as a solver's iterations grow with the domain's width);
   argv[2] = 2: on an even number of ranks every iteration ends with a
   barrier, a change of structure that no rule fits. argv[3] = 1: each send
   carries up to 10 doubles more, by rank and iteration (sizes that depend on
   the data, as in molecular dynamics); receives are posted for the most. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
static double out[4][720], in[4][720];
static volatile double sink;
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int p, me; MPI_Comm_size(MPI_COMM_WORLD, &p); MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int strong = !strcmp(argv[1], "strong"), change = argc > 2 ? atoi(argv[2]) : 0, jitter = argc > 3 && atoi(argv[3]);
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Dims_create(p, 2, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    int nx = strong ? 720 / dims[0] : 120, ny = strong ? 720 / dims[1] : 120;
    int iterations = change == 1 ? 2 + dims[0] : 4;
    for (int it = 0; it < iterations; it++) {
        double acc = 0;
        for (long i = 0; i < 400L * nx * ny; i++) acc += 1e-9 * (double)(i & 1023);
        sink = acc;
        MPI_Request q[8];
        int n = 0;
        for (int d = 0; d < 2; d++) {
            int lo, hi, face = d == 0 ? ny : nx;  /* crossing dimension d: the other dimension's extent */
            int extra = jitter ? (me * 7 + it * 3 + d) % 11 : 0, most = jitter ? 250 : face;  /* 250 ≥ any face + extra */
            MPI_Cart_shift(grid, d, 1, &lo, &hi);
            MPI_Irecv(in[2 * d], most, MPI_DOUBLE, lo, d, grid, &q[n++]);
            MPI_Irecv(in[2 * d + 1], most, MPI_DOUBLE, hi, 10 + d, grid, &q[n++]);
            MPI_Isend(out[2 * d], face + extra, MPI_DOUBLE, hi, d, grid, &q[n++]);
            MPI_Isend(out[2 * d + 1], face + extra, MPI_DOUBLE, lo, 10 + d, grid, &q[n++]);
        }
        MPI_Waitall(n, q, MPI_STATUSES_IGNORE);
        double x = me, y;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, grid);
        if (change == 2 && p % 2 == 0) MPI_Barrier(grid);
    }
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
