#!/bin/bash
# The libs grid behind docs/results/libs.md: every library at 64 B, 4 KiB and 64 KiB, one CPU and
# two, both patterns, as threads and as processes, together with the transports each is set beside
# (extra.baseline: unix_stream, tcp, shm_spsc wait=futex|spin), run at the same sitting and reduced
# into one file. Libraries whose threads do not survive fork (nng, gRPC, iceoryx) run processes in
# ipclab runs of their own. It measures: run it with nothing else running.
#
#   scripts/libs-grid.sh IPCLAB OUTDIR      (writes OUTDIR/libs-*.json and OUTDIR/libs.json, reduced)
set -euo pipefail
ipclab=${1:?usage: libs-grid.sh IPCLAB OUTDIR}
out=${2:?usage: libs-grid.sh IPCLAB OUTDIR}
mkdir -p "$out"
grid=(-p size=64,4K,64K --repetitions 3 --duration 0.5 --warmup 0.1)
n=0
run() {  # run NAME ARGS...: one ipclab run of the grid into OUTDIR/libs-NN-NAME.json
  local name=$1
  shift
  n=$((n + 1))
  "$ipclab" run "$@" "${grid[@]}" --json "$out/libs-$(printf %02d $n)-$name.json"
}
libs=$("$ipclab" list libs | awk '/^libs\// { print $1 }')
# Threads: every library and the kernel transports, then shared memory with both ways of waiting
# (spinning only across two CPUs: on one, each side spins out the other's time slice).
# shellcheck disable=SC2086  # one word per mechanism
run threads $libs messaging/unix_stream messaging/tcp --preset quick -p mode=threads -p producers=1 -p consumers=1 -p placement=same,cross
run threads-shm messaging/shm_spsc --preset quick -p producers=1 -p consumers=1 -p wait=futex -p mode=threads -p placement=same,cross
run threads-spin libs/iceoryx messaging/shm_spsc --preset quick -p producers=1 -p consumers=1 -p wait=spin -p placement=cross -p mode=threads
# Processes: each library in a run of its own (the preset leaves inproc out there), then the baselines.
for lib in $libs; do
  run "processes-${lib#libs/}" "$lib" --preset quick -p mode=processes -p placement=same,cross
done
run processes-kernel messaging/unix_stream messaging/tcp --preset quick -p mode=processes -p producers=1 -p consumers=1 -p placement=same,cross
run processes-shm messaging/shm_spsc --preset quick -p producers=1 -p consumers=1 -p wait=futex -p mode=processes -p placement=same,cross
run processes-spin libs/iceoryx messaging/shm_spsc --preset quick -p producers=1 -p consumers=1 -p wait=spin -p placement=cross -p mode=processes
"$ipclab" report "$out"/libs-*.json --reduce "$out/libs.json"
