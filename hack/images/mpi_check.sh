#!/bin/bash
# Runs inside the mpi image's rootfs: both MPI compiler wrappers build a program that runs as a
# singleton (no PMI), the MPICH one links the PyPI libmpi, and lmp has REAXFF and runs melt.
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
ldd /tmp/hello-mpich | grep -q '/opt/mpich/lib/libmpi.so.12'
ldd /tmp/hello-openmpi | grep -q 'libmpi.so.40'
echo "openmpi: $(OMPI_MCA_plm=isolated /tmp/hello-openmpi)"
echo "mpich: $(/tmp/hello-mpich)"
mpichversion.mpich | head -n 1
lmp -h | grep -q -w REAXFF
cd /usr/share/lammps/examples/reaxff/HNS
test -f in.reaxc.hns
cd /usr/share/lammps/examples/melt
lmp -in in.melt -log none -nocite -var x 1 | grep 'Total wall time'
echo "mpi check passed"
