#!/usr/bin/env bash
# The many-core run: what ipclab says about a machine's shape, measured on a real machine with many
# CPUs when one is at hand for a few minutes. From the `make bundle` tarball alone (nothing
# installed there; python3 only for the example servers, which skip without it), in under 10
# minutes on a 16-CPU machine, it prints Markdown: the machine (`ipclab env`), `ipclab topo` with its
# cache-line heatmap, the waits same and cross CPU, the placement classes and `--cpu-matrix class`,
# and the scaling grids the presets derive from the CPU count (pingpong pairs, shm_mpmc producers,
# servers and echo reactors, up to every core). Every result file stays in OUT_DIR.
#   scripts/many-core.sh BUNDLE.tar.gz OUT_DIR [--dry-run]
# --dry-run: unpack and print each step's plan and estimate, run nothing.
# docs/results/many-core.md is this script's output, committed with the machine named.
set -euo pipefail

fail() { echo "many-core: $*" >&2; exit 2; }
[ $# -ge 2 ] || fail "usage: many-core.sh BUNDLE.tar.gz OUT_DIR [--dry-run]"
bundle=$1 out=$2 dry=${3:-}
[ -z "$dry" ] || [ "$dry" = --dry-run ] || fail "unknown option '$dry'; the third argument is --dry-run or nothing"
[ -f "$bundle" ] || fail "no bundle at '$bundle'; make one with \`make bundle\` (build/bundle/ipclab-bundle.tar.gz)"
[ ! -e "$out" ] || fail "$out exists; name a new folder for this run's results"
[ -d "$(dirname -- "$out")" ] || fail "no folder $(dirname -- "$out") for $out; create it first"

[ -n "$dry" ] || mkdir -m 0700 -- "$out"
top=$(mktemp -d "${TMPDIR:-/tmp}/ipclab-many-core.XXXXXX")
trap 'rm -rf -- "$top"' EXIT
tar -C "$top" -xzf "$bundle"
ipclab=$top/ipclab/bin/ipclab
cpus=$(nproc)

step() {  # step NAME TITLE ARGS...: one `ipclab run`, its Markdown table printed under TITLE
  local name=$1 title=$2
  shift 2
  echo
  echo "## $title"
  echo
  echo "\`ipclab run $*\`"
  echo
  if [ -n "$dry" ]; then
    "$ipclab" run "$@" --dry-run 2>&1 | sed 's/^/    /'
    return
  fi
  local start=$SECONDS rc=0
  "$ipclab" run "$@" --json "$out/$name.json" --markdown "$out/$name.md" >"$out/$name.console" \
    2>"$out/$name.stderr" || rc=$?
  # The table and what is constant in it; its heading and the machine's warnings are said once, above.
  if [ -f "$out/$name.md" ]; then
    awk '/^# ipclab results/ {next} /^Warnings:/ {skip=1; next} skip && /^$/ {skip=0; next} !skip' "$out/$name.md"
  fi
  # What the run said besides its tables: failures, and anything unexpected.
  grep -v '^progress: \|^wrote \|^warning: ' "$out/$name.stderr" | sed 's/^/    /' || true
  echo
  echo "($name: exit $rc, $((SECONDS - start)) s)"
}

echo "# ipclab on $cpus CPUs: the many-core run"
echo
echo "Made by \`scripts/many-core.sh\` from the bundle $(basename -- "$bundle") (commit $(cat "$top/ipclab/share/git-sha")),"
echo "$(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start."
echo
echo '```'
"$ipclab" env 2>&1
echo '```'
echo
echo "## Topology and the cache-line round trip between CPUs"
echo
echo '```'
if [ -n "$dry" ]; then "$ipclab" topo --no-measure 2>&1; else "$ipclab" topo 2>&1; fi
echo '```'
[ -n "$dry" ] || "$ipclab" topo --json >"$out/topo.json" 2>/dev/null || true

quick=(--duration 0.3 --warmup 0.05 --repetitions 3)
step waits "The waits, same CPU and across CPUs (64 B round trips)" \
  messaging/shm_spsc pingpong/thread -p pattern=roundtrip -p size=64 -p wait=spin,spin_yield,futex,adaptive \
  -p placement=same,cross "${quick[@]}"
step classes "The placement classes (64 B round trips, spinning): each a pair of that relation, or skipped with the reason" \
  messaging/shm_spsc pingpong/thread -p pattern=roundtrip -p size=64 -p wait=spin \
  -p placement=smt,llc,cross_llc,cross_numa "${quick[@]}"
step matrix "--cpu-matrix class: one pair per class" \
  messaging/shm_spsc -p pattern=roundtrip -p size=64 -p wait=spin --cpu-matrix class "${quick[@]}"
step pingpong "Scaling: pingpong pairs (the quick preset's grid for $cpus CPUs)" \
  pingpong/thread -p wait=spin,adaptive_futex --preset quick --repetitions 2
step mpmc "Scaling: shm_mpmc producers and consumers (the quick preset's grid for $cpus CPUs)" \
  messaging/shm_mpmc -p pattern=throughput --preset quick --repetitions 2
step servers "Scaling: server reactors (the quick preset's grid for $cpus CPUs)" \
  servers/epoll_reuseport -p pattern=closed -p concurrency=100 --preset quick --repetitions 2
step echo "Scaling: echo reactors (the quick preset's grid for $cpus CPUs)" \
  echo/epoll echo/uring -p connections=64 --preset quick --repetitions 2
echo
echo "Results: $out (JSON, Markdown, the console and stderr of each step)."
