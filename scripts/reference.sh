#!/bin/bash
# The reference result behind docs/results/ and the README's table (`make reference`): first
# `make bench`'s own run (the default preset, as `ipclab run` runs it), reduced in
# docs/reference/bench.json, which makes the README's table, so that a user's `make bench` sets
# beside it row by row; then the quick preset over every suite but bulk and libs and the open-loop curves (scripts/open-loop.sh), reduced
# to their medians in docs/reference/result.json; the bulk suite's grid apart, in
# docs/reference/bulk.json (its 64 MiB messages need longer windows than the quick preset's
# 0.25 s); the libs grid apart, with the transports each library is set beside, in
# docs/reference/libs.json (scripts/libs-grid.sh); then the pages and the README's table
# regenerated from them. It measures: run it on the reference machine, with
# nothing else running. The full result stays in results/reference-<UTC time>/ (not committed).
#
#   scripts/reference.sh [IPCLAB]      (default build/release/ipclab)
set -euo pipefail
cd "$(dirname "$0")/.."

ipclab=${1:-build/release/ipclab}
if [ ! -x "$ipclab" ]; then
  echo "reference.sh: $ipclab is not built; run \`make build\` (or pass the ipclab binary)" >&2
  exit 2
fi
reference=docs/reference/result.json
out=results/reference-$(date -u +%Y%m%dT%H%M%SZ)
# Alone or not at all: refused while other work keeps the CPUs busy (each record keeps its load).
if ! IDLE_REQUIRED=1 bash scripts/wait-idle.sh 90 300; then
  echo "reference.sh: the machine is busy; $reference and the pages are unchanged" >&2
  exit 2
fi

mkdir -p results docs/reference
mkdir "$out"  # a new folder: nothing of an earlier run is overwritten

rc=0
# make bench's run, as it runs it (no option: the default preset and its budget).
"$ipclab" run --json "$out/bench.json" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "reference.sh: ipclab run (make bench's run) exited with $rc (see above); $reference and the pages are unchanged" >&2
  exit "$rc"
fi
suites=$("$ipclab" list | awk '/^[a-z]/ { split($1, a, "/"); print a[1] }' | sort -u | grep -vx -e bulk -e libs)
# shellcheck disable=SC2086  # one word per suite
"$ipclab" run $suites --preset quick --json "$out/full.json" || rc=$?
if [ "$rc" -ne 0 ]; then
  # A failed benchmark must not become the reference: the earlier one stays.
  echo "reference.sh: ipclab run exited with $rc (see above); $reference and the pages are unchanged" >&2
  exit "$rc"
fi
# The open-loop curves and capacities (scripts/open-loop.sh), merged into the same reference.
bash scripts/open-loop.sh "$ipclab" "$out" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "reference.sh: scripts/open-loop.sh exited with $rc (see above); $reference and the pages are unchanged" >&2
  exit "$rc"
fi
# The bulk grid: every mechanism at 64 KiB-64 MiB, one CPU and two, both patterns.
"$ipclab" run bulk --preset quick -p size=64K,1M,16M,64M -p placement=same,cross --repetitions 3 \
  --duration 0.5 --warmup 0.2 --json "$out/bulk.json" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "reference.sh: the bulk grid exited with $rc (see above); $reference and the pages are unchanged" >&2
  exit "$rc"
fi
# The libs grid: every library beside its baselines, threads and processes.
bash scripts/libs-grid.sh "$ipclab" "$out/libs" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "reference.sh: the libs grid exited with $rc (see above); $reference and the pages are unchanged" >&2
  exit "$rc"
fi
"$ipclab" report "$out/full.json" "$out"/open-loop-*.json --reduce "$reference"
cp "$out/libs/libs.json" docs/reference/libs.json
"$ipclab" report "$out/bulk.json" --reduce docs/reference/bulk.json
"$ipclab" report "$out/bench.json" --reduce docs/reference/bench.json
"$ipclab" report docs/reference/bench.json --pages docs/results --readme README.md
"$ipclab" report "$reference" --pages docs/results
"$ipclab" report docs/reference/bulk.json --pages docs/results
"$ipclab" report docs/reference/libs.json --pages docs/results --suites libs
echo "reference: $reference (full result: $out/full.json); review and commit $reference, docs/reference/bench.json, docs/reference/bulk.json, docs/reference/libs.json, docs/results/ and README.md"
