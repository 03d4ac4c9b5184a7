/* The scaling model's link, measured (docs/distributed.md, "Measured
 * speed"): under mpirun -np 2, rank 0 and rank 1 exchange a buffer of S
 * bytes back and forth (ping-pong) `reps` times; half the round trip is the
 * one-way time, S over it the bandwidth beta, a 1-byte message's the
 * latency alpha. Prints "bytes seconds GB/s" per size, then alpha.
 *   mpirun -np 2 build/mpi_bandwidth [MB] [reps] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* One-way seconds of an n-byte message, the best of reps round trips. */
static double one_way(char *buf, int n, int reps, int rank) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
        t = (MPI_Wtime() - t) / 2;
        if (t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int mb = argc > 1 ? atoi(argv[1]) : 16, reps = argc > 2 ? atoi(argv[2]) : 20;
    char *buf = calloc((size_t)mb << 20, 1);
    if (size != 2 || !buf || mb < 1) {
        if (rank == 0) fprintf(stderr, "mpi_bandwidth: run with mpirun -np 2; MB >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int n = 1 << 16; n <= mb << 20; n *= 4) {
        double t = one_way(buf, n, reps, rank);
        if (rank == 0) printf("%d %.6f %.3f\n", n, t, n / t / 1e9);
    }
    double alpha = one_way(buf, 1, reps * 10, rank);
    if (rank == 0) printf("latency %.2f us\n", alpha * 1e6);
    free(buf);
    MPI_Finalize();
    return 0;
}
