// The MPI programs the real-node MPI scenarios compile inside their MiniClusters, and the recipe
// that writes and compiles one in `commands.pre`: a quoted heredoc, so that the shell expands
// nothing in the source (the operator writes `pre` into the script as it is).

/**
 * Every rank prints its rank, the world size, its host, the MPI_Allreduce sum of all ranks and
 * the token it received from its left neighbour in a ring (MPI_Sendrecv): with n ranks the sum
 * is n(n-1)/2 and rank r receives (r-1+n) % n.
 */
export const RING_C = `#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int rank, size, sum, token;
  char host[256];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  gethostname(host, sizeof host);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 0, &token, 1, MPI_INT,
               (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  printf("rank %d of %d on %s: allreduce %d ring %d\\n", rank, size, host, sum, token);
  MPI_Finalize();
  return 0;
}
`;

/** What RING_C prints on every rank of a run of `size` ranks, by rank. */
export function ringLine(rank: number, size: number): RegExp {
  const sum = (size * (size - 1)) / 2;
  const left = (rank + size - 1) % size;
  return new RegExp(`^rank ${rank} of ${size} on \\S+: allreduce ${sum} ring ${left}$`, "m");
}

/**
 * Ranks on one node share one window (MPI_Win_allocate_shared) of argv[1] MiB per rank, in the
 * node's shared memory (/dev/shm), each fills its part, and every rank reads every other rank's
 * part after a barrier: "shm ok" with the total, or a crash (SIGBUS) when /dev/shm is too small.
 */
export const SHM_C = `#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
  int rank, size, bad = 0, total_bad;
  MPI_Comm node;
  MPI_Win win;
  char *mine;
  MPI_Init(&argc, &argv);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &rank);
  MPI_Comm_size(node, &size);
  MPI_Aint bytes = (MPI_Aint)atoi(argv[1]) * 1024 * 1024;
  MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, node, &mine, &win);
  memset(mine, 'a' + rank, bytes);
  MPI_Barrier(node);
  for (int r = 0; r < size; r++) {
    MPI_Aint len;
    int unit;
    char *theirs;
    MPI_Win_shared_query(win, r, &len, &unit, &theirs);
    if (len != bytes || theirs[0] != 'a' + r || theirs[len - 1] != 'a' + r) bad++;
  }
  MPI_Allreduce(&bad, &total_bad, 1, MPI_INT, MPI_SUM, node);
  if (rank == 0) {
    printf("shm %s: %d ranks x %s MiB = %d MiB shared\\n", total_bad ? "BAD" : "ok", size, argv[1],
           size * atoi(argv[1]));
  }
  MPI_Win_free(&win);
  MPI_Finalize();
  return total_bad != 0;
}
`;

/** Rank 1 calls MPI_Abort(3) while the others wait in a barrier that never completes. */
export const ABORT_C = `#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 1) {
    printf("rank 1 calls MPI_Abort\\n");
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  printf("rank %d passed the barrier\\n", rank);
  MPI_Finalize();
  return 0;
}
`;

/** Shell for `commands.pre`: writes `source` to /tmp/<name>.c and compiles it to /tmp/<name>. */
export function compileRecipe(name: string, source: string, compiler: string): string {
  return [
    `cat > /tmp/${name}.c <<'MPI_SOURCE'`,
    source.trimEnd(),
    "MPI_SOURCE",
    `${compiler} -O2 -o /tmp/${name} /tmp/${name}.c`,
    "",
  ].join("\n");
}
