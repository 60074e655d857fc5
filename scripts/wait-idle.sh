#!/bin/bash
# Waits until the machine is idle enough to measure: at least IDLE% (default 90) of every CPU's
# time idle over a 2-second window (from /proc/stat, so a build that just ended counts as soon as
# it stops, not a minute later as in the load average). Gives up after MAX seconds (default 60),
# saying so on stderr; exits 0 either way, since measuring on a busy machine is the user's call
# (every record keeps the load it ran at) — unless IDLE_REQUIRED=1, when a machine still busy
# after MAX seconds exits 1 (`make reference`: a reference is made alone or not at all).
#
#   scripts/wait-idle.sh [IDLE_PERCENT] [MAX_SECONDS]
set -u
want=${1:-90}
max=${2:-60}
required=${IDLE_REQUIRED:-0}
case "$want$max" in *[!0-9]*) echo "wait-idle: give whole numbers, e.g. scripts/wait-idle.sh 90 60" >&2; exit 2 ;; esac
sample() { awk '/^cpu / { idle = $5 + $6; total = 0; for (i = 2; i <= NF; i++) total += $i; print idle, total }' /proc/stat; }
start=$SECONDS
while :; do
  read -r i0 t0 < <(sample)
  sleep 2
  read -r i1 t1 < <(sample)
  pct=$(( (t1 > t0) ? 100 * (i1 - i0) / (t1 - t0) : 100 ))
  if [ "$pct" -ge "$want" ]; then
    [ $((SECONDS - start)) -gt 2 ] && echo "wait-idle: the CPUs are ${pct}% idle after $((SECONDS - start)) s; measuring" >&2
    exit 0
  fi
  if [ $((SECONDS - start)) -ge "$max" ] && [ "$required" = 1 ]; then
    echo "wait-idle: the CPUs are only ${pct}% idle after ${max} s (other work is running: see top); stop it and retry" >&2
    exit 1
  fi
  if [ $((SECONDS - start)) -ge "$max" ]; then
    echo "wait-idle: the CPUs are only ${pct}% idle after ${max} s (other work is running: see top); measuring anyway, and the records keep the load" >&2
    exit 0
  fi
done
