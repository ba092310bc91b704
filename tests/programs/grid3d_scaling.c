/* A 3-D halo code on MPI_Dims_create's periodic grid, in weak (argv[1] =
   "weak": a 24×24×24 block per rank) or strong scaling ("strong": a 96³
   domain shared by the ranks), with sub-communicators from MPI_Cart_sub
   (rows along x), a broadcast from the row's last rank, an allgatherv whose
   counts follow the coordinate, a reduce to the last world rank and an
   allreduce. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
static double out[6][96 * 96], in[6][96 * 96], row_buf[96 * 96], gath[8 * 96 * 96];
static volatile double sink;
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int p, me; MPI_Comm_size(MPI_COMM_WORLD, &p); MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int strong = !strcmp(argv[1], "strong");
    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
    MPI_Dims_create(p, 3, dims);
    MPI_Comm grid, row;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &grid);
    int keep[3] = {1, 0, 0};
    MPI_Cart_sub(grid, keep, &row);
    int rn, rme; MPI_Comm_size(row, &rn); MPI_Comm_rank(row, &rme);
    int n[3];
    for (int d = 0; d < 3; d++) n[d] = strong ? 96 / dims[d] : 24;
    int counts[64], displs[64];
    for (int i = 0; i < rn; i++) { counts[i] = 64 + i; displs[i] = i == 0 ? 0 : displs[i - 1] + counts[i - 1]; }
    for (int it = 0; it < 3; it++) {
        double acc = 0;
        for (long i = 0; i < 1500L * n[0] * n[1] * n[2]; i++) acc += 1e-9 * (double)(i & 1023);
        sink = acc;
        MPI_Request q[12];
        int k = 0;
        for (int d = 0; d < 3; d++) {
            int lo, hi, face = n[(d + 1) % 3] * n[(d + 2) % 3];
            MPI_Cart_shift(grid, d, 1, &lo, &hi);
            MPI_Irecv(in[2 * d], face, MPI_DOUBLE, lo, d, grid, &q[k++]);
            MPI_Irecv(in[2 * d + 1], face, MPI_DOUBLE, hi, 10 + d, grid, &q[k++]);
            MPI_Isend(out[2 * d], face, MPI_DOUBLE, hi, d, grid, &q[k++]);
            MPI_Isend(out[2 * d + 1], face, MPI_DOUBLE, lo, 10 + d, grid, &q[k++]);
        }
        MPI_Waitall(k, q, MPI_STATUSES_IGNORE);
        MPI_Bcast(row_buf, n[1] * n[2], MPI_DOUBLE, rn - 1, row);
        MPI_Allgatherv(row_buf, counts[rme], MPI_DOUBLE, gath, counts, displs, MPI_DOUBLE, row);
        double x = me, y;
        MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, p - 1, MPI_COMM_WORLD);
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Comm_free(&row);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
