/* The timed loops of `idlewave measure pingpong` and `multipair`, in C so
   that no interpreter overhead enters the measured latency (mpi4py adds
   about 0.4 µs per call, which a C application does not pay). Loaded with
   ctypes into the mpi4py worker: the same process, the same MPI library. */
#include <mpi.h>

/* One-way time of `iterations` round trips between this rank and `peer`
   over MPI_COMM_WORLD; role 0 sends first. */
double iw_pingpong(int role, int peer, void *buf, int bytes, int iterations) {
    double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; i++) {
        if (role == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * iterations);
}

/* Time per exchange of `iterations` simultaneous exchanges with `peer`
   (both ranks call it): each sends `bytes` from `sendbuf` and receives
   `bytes` into `recvbuf`, a distinct buffer, in one MPI_Sendrecv. The time
   of one message each way when both go at once, which on a shared-memory
   transport includes the CPU's copying of both. */
double iw_exchange(int peer, const void *sendbuf, void *recvbuf, int bytes, int iterations) {
    double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; i++)
        MPI_Sendrecv(sendbuf, bytes, MPI_BYTE, peer, 8, recvbuf, bytes, MPI_BYTE, peer, 8, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    return (MPI_Wtime() - t0) / iterations;
}
