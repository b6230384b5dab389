#!/bin/bash
# Runs inside the flux-view image's rootfs and plays the operator's contract with it: the flux-view
# init container copies the view and /opt/software into the shared volume, an application
# container (here: the same rootfs without /opt) copies the software back to /opt/software and
# runs Flux from the copied view. Then a single broker must start, run a job and have Fluxion.
set -euo pipefail

# The image as a mounted view reads it (read-only, nothing can be recompiled and kept): the Python
# that every broker runs at start-up (flux modprobe) must load Flux's bytecode as it is
# (pyc_timestamps.ts), not recompile stale bytecode in every process.
set -- /opt/views/._view/*
mountedPython=$(find "$1" -maxdepth 2 -type d -path "$1/lib/python3*" | head -n 1)
stale="$(PYTHONPATH="$mountedPython/site-packages" python3 -v -c 'import flux.modprobe' 2>&1 |
  grep -E "bytecode is stale|could not create" || true)"
[ -z "$stale" ] || {
  echo "the view's Python bytecode is stale in the image: $stale" >&2
  exit 1
}
echo "mounted view: Flux's bytecode is valid"

shared=/mnt/flux
mkdir -p "$shared/view"

# flux-view init container (flux-view-init.ts)
set -- /opt/views/._view/*
view="$1"
cp -R "$view"/* "$shared/view"
cp -R /opt/software "$shared/"

# application container (view-environment.ts), in an image without Flux
rm -rf /opt/software /opt/views /opt/view
cp -R "$shared/software" /opt/software
viewroot="$shared/view"
export PATH="$PATH:$viewroot/bin"
foundroot=$(find "$viewroot" -maxdepth 2 -type d -path "$viewroot/lib/python3*" | head -n 1)
[ -n "$foundroot" ] || {
  echo "no lib/python3* directory in the view" >&2
  exit 1
}
export PYTHONPATH="$foundroot/site-packages"
echo "view Python root: $foundroot"

flux version
python3 -c 'import flux, fluxion; print("python: flux and fluxion import")'
flux python -c 'import fluxion; print("flux python: fluxion imports")'
dangling="$(find /opt/software "$viewroot" -xtype l)"
[ -z "$dangling" ] || {
  echo "dangling links: $dangling" >&2
  exit 1
}
ls "$viewroot/etc/flux/rc1.d"
# A single-broker instance: its size, its resources, its modules, a job through the scheduler.
flux start flux getattr size
flux start sh -c 'flux resource list && flux module list' | tee /tmp/modules
grep -q sched-fluxion-qmanager /tmp/modules
grep -q sched-fluxion-resource /tmp/modules
flux start flux run -N1 -n1 echo "job ran"
echo "flux-view check passed"
