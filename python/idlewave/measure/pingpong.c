/* The timed loops of `idlewave measure pingpong` and `multipair`, in C so
   that no interpreter overhead enters the measured latency (mpi4py adds
   about 0.4 µs per call, which a C application does not pay). Loaded with
   ctypes into the mpi4py worker: the same process, the same MPI library.

   Buffers. With `slots` = 1 every message of a loop uses the same buffer,
   which stays in the cache: the usual ping-pong. With more, message i uses
   slot i (round robin, `stride` bytes apart) of a region much larger than
   the last-level cache, so that each message's data comes from memory, as
   an application's buffers often do (`measure pingpong --set span_bytes=`).
   The slot cursor persists across calls: the next loop starts where the
   last one stopped, so repetitions do not find their slots in the cache. */
#include <mpi.h>
#include <stddef.h>

static long iw_next_slot = 0;

/* The offset of the next message's slot, advancing the cursor. */
static size_t iw_slot(long slots, long stride) {
    if (slots <= 1)
        return 0;
    long s = iw_next_slot < slots ? iw_next_slot : 0; /* (the last loop's slots may have been smaller) */
    iw_next_slot = s + 1 >= slots ? 0 : s + 1;
    return (size_t)s * (size_t)stride;
}

/* One-way time of `iterations` round trips between this rank and `peer`
   over MPI_COMM_WORLD; role 0 sends first. Sends from `send`, receives into
   `recv` (the same buffer in the usual ping-pong), each at the message's slot. */
double iw_pingpong(int role, int peer, char *send, char *recv, int bytes, int iterations, long slots, long stride) {
    double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; i++) {
        size_t at = iw_slot(slots, stride);
        if (role == 0) {
            MPI_Send(send + at, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
            MPI_Recv(recv + at, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(recv + at, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(send + at, bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * iterations);
}

/* Time per exchange of `iterations` simultaneous exchanges with `peer`
   (both ranks call it): each sends `bytes` from `send` and receives
   `bytes` into `recv`, a distinct buffer, in one MPI_Sendrecv. The time
   of one message each way when both go at once, which on a shared-memory
   transport includes the CPU's copying of both. */
double iw_exchange(int peer, const char *send, char *recv, int bytes, int iterations, long slots, long stride) {
    double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; i++) {
        size_t at = iw_slot(slots, stride);
        MPI_Sendrecv(send + at, bytes, MPI_BYTE, peer, 8, recv + at, bytes, MPI_BYTE, peer, 8, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    }
    return (MPI_Wtime() - t0) / iterations;
}
