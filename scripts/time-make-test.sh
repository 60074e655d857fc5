#!/usr/bin/env bash
# Times each phase of `make test` the way CI runs it: a fresh copy of this tree (committed files
# plus local changes), empty build directories, no compiler cache. On a machine shared with other
# builds the wall time is inflated, so the idle estimate of a phase is its CPU time (user+sys)
# spread over the 2 cores; the test phases, which mostly wait or run one test at a time, are also
# shown with their wall time. Usage: scripts/time-make-test.sh [OUT_DIR [PHASE...]] (default
# build-time/, every phase). Naming phases re-copies the tree into OUT_DIR's existing copy and
# runs only those (their build directories are not cleared: clear them first for a cold build).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$src/build-time}")
cores=$(nproc)

shift || true
only=("$@")
if [ ${#only[@]} -eq 0 ]; then
  rm -rf "$out"
  mkdir -p "$out"
  git clone -q --shared "$src" "$out/ipclab"
fi
(cd "$src" && git ls-files -z -m -o --exclude-standard | { grep -zv '^build' || true; } | tar -c --null -T - -f -) |
  tar -x -C "$out/ipclab"
cd "$out/ipclab"
unset CMAKE_CXX_COMPILER_LAUNCHER CMAKE_C_COMPILER_LAUNCHER

table="$out/phases.txt"
[ ${#only[@]} -gt 0 ] && [ -f "$table" ] ||
  printf '%-13s %8s %8s %8s %10s\n' phase wall_s user_s sys_s cpu/${cores}_s >"$table"
phase() {  # name, then the make arguments
  local name=$1; shift
  if [ ${#only[@]} -gt 0 ] && [[ " ${only[*]} " != *" $name "* ]]; then return; fi
  echo "== $name: make $*  (load $(cut -d' ' -f1-3 /proc/loadavg))"
  /usr/bin/time -f '%e %U %S' -o "$out/$name.time" make "$@" >"$out/$name.log" 2>&1 || {
    tail -30 "$out/$name.log"; echo "phase $name failed (log: $out/$name.log)"; exit 1; }
  read -r wall user sys <"$out/$name.time"
  printf '%-13s %8.1f %8.1f %8.1f %10.1f\n' "$name" "$wall" "$user" "$sys" \
    "$(echo "($user + $sys) / $cores" | bc -l)" | tee -a "$table"
}

make setup >"$out/setup-first.log" 2>&1   # a machine set up once already: time the check only
[ ${#only[@]} -gt 0 ] || rm -f build/.setup-done
phase setup        setup
phase build        build
phase test-release -o build test-release
phase asan         asan
phase test-asan    -o asan test-asan
phase tsan         tsan
phase test-tsan    -o tsan test-tsan
phase pytest       test-report
[ ${#only[@]} -gt 0 ] || awk 'NR>1 {w+=$2; c+=$5} END {printf "%-13s %8.1f %8s %8s %10.1f\n", "total", w, "", "", c}' \
  "$table" | tee -a "$table"
echo "load at the end: $(cat /proc/loadavg)" | tee -a "$table"

# The most expensive compile steps of each build, from ninja's own log.
for d in build/release build/asan build/tsan; do
  [ -f "$d/.ninja_log" ] || continue
  echo "== slowest steps in $d (s, wall under the load above)"
  awk -F'\t' 'NR>1 {printf "%7.1f %s\n", ($2-$1)/1000, $4}' "$d/.ninja_log" | sort -rn | sed -n 1,12p  # sed reads it all: head would end sort with SIGPIPE (exit 141 under pipefail)
done | tee "$out/slowest.txt"
