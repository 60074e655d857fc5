#!/bin/bash
# The open-loop part of the reference (`make reference` runs it after the quick preset): latency
# against offered load and the capacity under a latency bound, for messaging, echo and servers.
# It measures: run it on the reference machine, with nothing else running.
#
#   scripts/open-loop.sh IPCLAB OUT_DIR   writes OUT_DIR/open-loop-{messaging,messaging-same,echo-capacity,echo,servers}.json
set -euo pipefail
cd "$(dirname "$0")/.."

ipclab=${1:?usage: scripts/open-loop.sh IPCLAB OUT_DIR}
out=${2:?usage: scripts/open-loop.sh IPCLAB OUT_DIR}
if [ ! -d "$out" ]; then
  echo "open-loop.sh: $out is not a folder; create it first" >&2
  exit 2
fi
for f in messaging messaging-same echo-capacity echo servers; do
  if [ -e "$out/open-loop-$f.json" ]; then
    echo "open-loop.sh: $out/open-loop-$f.json exists; name a new folder" >&2
    exit 2
  fi
done
point=(--repetitions 1 --duration 1 --warmup 0.2)

# messaging: each transport at 64 B and 4 KiB, sender and receiver on two CPUs, the sender
# spin-paced on its own; a curve of fixed rates and the capacity at p99 <= 3 x the transport's own
# unloaded p99 (slo_p99_us's default: a fixed bound says nothing where the machine's wake-ups
# alone exceed it).
"$ipclab" run messaging/pipe messaging/unix_stream messaging/eventfd messaging/posix_mq messaging/tcp \
  messaging/udp messaging/shm_spsc messaging/mutex_cv \
  -p pattern=rate -p rate=1k,10k,50k,100k,200k,auto -p size=64,4K \
  -p placement=cross -p wait=futex,adaptive "${point[@]}" --json "$out/open-loop-messaging.json"

# The same capacities with both sides on one CPU, the sender sleeping between sends: a wake-up
# on the same CPU costs microseconds where a cross-CPU one costs tens to hundreds on a VM.
"$ipclab" run messaging/pipe messaging/unix_stream messaging/eventfd messaging/posix_mq messaging/tcp \
  messaging/udp messaging/shm_spsc messaging/mutex_cv \
  -p pattern=rate -p rate=auto -p size=64,4K -p placement=same -p pace=sleep \
  -p wait=futex,adaptive "${point[@]}" --json "$out/open-loop-messaging-same.json"

# echo: epoll's capacity — the highest rate it serves without saturating (a bound of 100 ms; on a
# VM whose idle CPUs wake in milliseconds a tight bound may be met at no rate at all) — then epoll,
# io_uring and Asio at 25, 50 and 75% of it, interleaved in one run so that the three see the
# same machine.
"$ipclab" run echo/epoll -p pattern=rate -p rate=auto -p slo_p99_us=100000 "${point[@]}" \
  --json "$out/open-loop-echo-capacity.json"
loads=$(python3 - "$out/open-loop-echo-capacity.json" <<'EOF'
import json, sys
recs = [r for r in json.load(open(sys.argv[1]))["benchmarks"] if r["run_type"] == "iteration"]
cap = recs[0]["extra"]["capacity"]["capacity_per_s"]
if not cap:
    sys.exit("open-loop.sh: echo/epoll served no rate unsaturated; nothing to load the servers at")
print(",".join(str(max(10, round(cap * f))) for f in (0.25, 0.5, 0.75)))
EOF
)
"$ipclab" run echo/epoll echo/uring echo/asio -p pattern=rate -p rate="$loads" --interleave "${point[@]}" \
  --json "$out/open-loop-echo.json"

# servers: sessions (connect, request, reply, close) arriving at a rate, up to and past each
# model's capacity (as echo's: the highest rate served unsaturated).
"$ipclab" run servers/poll servers/epoll_et servers/uring \
  -p pattern=rate -p rate=1k,2k,5k,10k,20k,40k,auto -p slo_p99_us=100000 "${point[@]}" \
  --json "$out/open-loop-servers.json"
