#!/bin/bash
# Runs inside the mpi image's rootfs: both MPI compiler wrappers build a program, the MPICH one
# links the PyPI libmpi and runs as a singleton (no PMI; OpenMPI's singleton needs a daemon it
# cannot start in this chroot, and runs under Flux on the real nodes instead), and lmp has REAXFF
# and runs the HNS and melt inputs.
set -euo pipefail
cat >/tmp/hello.c <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  int rank, size, sum;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d of %d sum %d\n", rank, size, sum);
  MPI_Finalize();
  return 0;
}
C
mpicc.openmpi -O2 -o /tmp/hello-openmpi /tmp/hello.c
mpicc.mpich -O2 -o /tmp/hello-mpich /tmp/hello.c
# Never a reader that stops early (grep -q, head): under pipefail the writer's SIGPIPE fails the
# check whenever it is still writing, which depends on the machine's load.
ldd /tmp/hello-mpich | grep '/opt/mpich/lib/libmpi.so.12' >/dev/null
ldd /tmp/hello-openmpi | grep 'libmpi.so.40' >/dev/null
mpich="$(/tmp/hello-mpich)"
[ "$mpich" = "rank 0 of 1 sum 0" ] || {
  echo "MPICH singleton printed: $mpich" >&2
  exit 1
}
mpichversion.mpich | sed -n 1p
lmp -h | grep -w REAXFF >/dev/null
cd /opt/lammps/examples/reaxff/HNS
lmp -v x 1 -v y 1 -v z 1 -in in.reaxc.hns -log none -nocite | grep 'Total wall time'
cd /usr/share/lammps/examples/melt
lmp -in in.melt -log none -nocite | grep 'Total wall time'
echo "mpi check passed"
