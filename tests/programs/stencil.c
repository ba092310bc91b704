/* A halo-exchange stencil on a 2-D or 3-D process grid: argv = ndims,
   periodic (0/1), by_hand (0: MPI_Cart_create; 1: neighbours computed by
   hand on MPI_COMM_WORLD with MPI_Comm_split rows). Face sizes differ per
   dimension; a world allreduce, a row allreduce and a row bcast follow. */
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>
static double in[6][4096], out[6][4096];
static int wrap(int x, int n, int per) { return x < 0 || x >= n ? (per ? (x + n) % n : -1) : x; }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int nd = atoi(argv[1]), per = atoi(argv[2]), by_hand = atoi(argv[3]);
    int p, me; MPI_Comm_size(MPI_COMM_WORLD, &p); MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int dims[3] = {0, 0, 0}, periods[3] = {per, per, per}, c[3] = {0, 0, 0};
    MPI_Dims_create(p, nd, dims);
    MPI_Comm grid = MPI_COMM_WORLD, row;
    if (!by_hand) {
        MPI_Cart_create(MPI_COMM_WORLD, nd, dims, periods, 0, &grid);
        int remain[3] = {0, 0, 0}; remain[nd - 1] = 1;
        MPI_Cart_sub(grid, remain, &row);
    } else {
        MPI_Comm_split(MPI_COMM_WORLD, me / dims[nd - 1], me, &row);
    }
    for (int d = nd - 1, r = me; d >= 0; d--) { c[d] = r % dims[d]; r /= dims[d]; }
    for (int it = 0; it < 3; it++) {
        MPI_Request q[12]; int n = 0;
        for (int d = 0; d < nd; d++) {
            int lo, hi;
            if (!by_hand) MPI_Cart_shift(grid, d, 1, &lo, &hi);
            else {
                int s = 1; for (int k = d + 1; k < nd; k++) s *= dims[k];
                int l = wrap(c[d] - 1, dims[d], per), h = wrap(c[d] + 1, dims[d], per);
                lo = l < 0 ? MPI_PROC_NULL : me + (l - c[d]) * s;
                hi = h < 0 ? MPI_PROC_NULL : me + (h - c[d]) * s;
            }
            int count = 100 * (d + 1);
            MPI_Irecv(in[2 * d], count, MPI_DOUBLE, lo, d, grid, &q[n++]);
            MPI_Irecv(in[2 * d + 1], count, MPI_DOUBLE, hi, 10 + d, grid, &q[n++]);
            MPI_Isend(out[2 * d], count, MPI_DOUBLE, hi, d, grid, &q[n++]);
            MPI_Isend(out[2 * d + 1], count, MPI_DOUBLE, lo, 10 + d, grid, &q[n++]);
        }
        MPI_Waitall(n, q, MPI_STATUSES_IGNORE);
        usleep(2000);
        double x = me, y;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, grid);
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, row);
        MPI_Bcast(&y, 1, MPI_DOUBLE, 0, row);
    }
    MPI_Comm_free(&row);
    if (!by_hand) MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
