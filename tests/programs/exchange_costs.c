/* What one call costs on 2 ranks, four ways taken in alternation so that a
   machine whose speed changes over seconds slows all four alike
   (docs/validation.md, "Why ... miss"):
     sendrecv          MPI_Sendrecv of BYTES with the other rank
     alltoall          MPI_Alltoall of BYTES per rank (2·BYTES per buffer)
     sendrecv+memcpy   the sendrecv, then a memcpy of BYTES (what Open MPI's
                       2-rank alltoall does: the exchange, then its own block)
     pingpong          half a round trip of BYTES (the one-way time `idlewave
                       measure pingpong` fits)
   Each is timed over blocks of 500 calls, 200 blocks in turn; the minimum,
   quartiles and median per call are printed. BUFFERS pairs of send and
   receive buffers are used in turn: 1 keeps them in the cache, thousands
   (4096 × 42 KiB at BYTES = 21168) send from memory, as an application whose
   data is out of the cache does.

   mpicc -O2 exchange_costs.c -o exchange_costs
   mpiexec -n 2 ./exchange_costs BYTES BUFFERS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCKS = 200, CALLS = 500, KINDS = 4 };
static const char *NAMES[KINDS] = {"sendrecv", "alltoall", "sendrecv+memcpy", "pingpong (one way)"};

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void call(int kind, int rank, char *send, char *recv, int bytes) {
    int other = 1 - rank;
    switch (kind) {
    case 0:
        MPI_Sendrecv(send, bytes, MPI_BYTE, other, 0, recv, bytes, MPI_BYTE, other, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    case 1:
        MPI_Alltoall(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case 2:
        MPI_Sendrecv(send, bytes, MPI_BYTE, other, 0, recv, bytes, MPI_BYTE, other, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        memcpy(recv + bytes, send + bytes, (size_t)bytes);
        break;
    default:
        if (rank == 0) {
            MPI_Send(send, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(recv, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(recv, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(send, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bytes = argc > 1 ? atoi(argv[1]) : 0, buffers = argc > 2 ? atoi(argv[2]) : 0;
    if (size != 2 || bytes < 1 || buffers < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n 2 %s BYTES BUFFERS (BYTES, BUFFERS >= 1)\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    char **send = malloc(sizeof *send * (size_t)buffers), **recv = malloc(sizeof *recv * (size_t)buffers);
    for (int i = 0; i < buffers; i++) {
        send[i] = malloc(2 * (size_t)bytes);
        recv[i] = malloc(2 * (size_t)bytes);
        if (!send[i] || !recv[i]) {
            fprintf(stderr, "out of memory at buffer %d\n", i);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(send[i], 1, 2 * (size_t)bytes);
        memset(recv[i], 0, 2 * (size_t)bytes);
    }
    static double per_call[KINDS][BLOCKS];
    for (int b = 0; b < BLOCKS; b++)
        for (int k = 0; k < KINDS; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < CALLS; i++)
                call(k, rank, send[i % buffers], recv[i % buffers], bytes);
            per_call[k][b] = (MPI_Wtime() - t0) / CALLS / (k == 3 ? 2 : 1) * 1e6;
        }
    if (rank == 0)
        for (int k = 0; k < KINDS; k++) {
            qsort(per_call[k], BLOCKS, sizeof(double), by_value);
            printf("%d B, %d buffers, %-19s min %.3f  p25 %.3f  median %.3f  p75 %.3f us per call\n", bytes, buffers,
                   NAMES[k], per_call[k][0], per_call[k][BLOCKS / 4], per_call[k][BLOCKS / 2], per_call[k][3 * BLOCKS / 4]);
        }
    MPI_Finalize();
    return 0;
}
