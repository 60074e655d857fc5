#!/usr/bin/env bash
# ipclab --remote beside sockperf ping-pong across a veth pair between two network namespaces,
# with and without netem delay (issue 38's acceptance figures; docs/remote.md). Where the kernel has
# no netem, the delayed rows go over a second link between the namespaces, tests/remote/delay_wire.c
# (two TUN devices and a program that holds each packet for the delay; built here with cc). Sets up the two
# namespaces, the veth pair, sshd in the far namespace (generated host and client keys, its own
# port, a generated known_hosts) and tears all of it down on every exit. Needs root, iproute2,
# openssh-server and sockperf (scripts/setup.sh installs them). Prints tables: round-trip medians beside
# sockperf, echo at 16 and 64 connections, servers under 10,000 clients — both ways round (the
# server there, then --remote-role client: the clients there) — the libraries over tcp beside
# messaging/tcp, bulk/zerocopy, and the open loop.
#
#   scripts/remote-vs-sockperf.sh [IPCLAB] [DURATION_S] [REPETITIONS] [DELAY_US]
#   e.g. scripts/remote-vs-sockperf.sh build/release/ipclab 5 5 200
set -euo pipefail

IPCLAB=$(readlink -f "${1:-build/release/ipclab}")
DURATION=${2:-5}
REPS=${3:-5}
DELAY_US=${4:-200}
SIZE=64

[ "$(id -u)" -eq 0 ] || { echo "remote-vs-sockperf: run as root (network namespaces)" >&2; exit 2; }
[ -x "$IPCLAB" ] || { echo "remote-vs-sockperf: no ipclab at $IPCLAB; build it (make build)" >&2; exit 2; }
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
for t in ip tc ssh ssh-keygen sockperf python3 "$SSHD"; do
  command -v "$t" >/dev/null || { echo "remote-vs-sockperf: $t is missing; run scripts/setup.sh" >&2; exit 2; }
done

tag="$$$(printf '%03x' $((RANDOM % 4096)))"
NEAR=ipcls${tag}n FAR=ipcls${tag}f VNEAR=vs${tag}a VFAR=vs${tag}b
NET="10.$((16 + RANDOM % 230)).$((RANDOM % 250))"
NEAR_IP=$NET.1 FAR_IP=$NET.2
PORT=$((20000 + RANDOM % 30000)) SPORT=$((PORT + 1))
WORK=$(mktemp -d /tmp/ipclab-remote-vs-sockperf.XXXXXX)
WIRE_NEAR_IP=$NET.5 WIRE_FAR_IP=$NET.6
made_ns=() made_run_sshd=0 sshd_pid="" wire_pid=""

cleanup() {
  [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null && wait "$sshd_pid" 2>/dev/null || true
  [ -n "$wire_pid" ] && kill "$wire_pid" 2>/dev/null && wait "$wire_pid" 2>/dev/null || true  # its TUN devices go with it
  for ns in "${made_ns[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  [ "$made_run_sshd" = 1 ] && rmdir /run/sshd 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

for ns in "$NEAR" "$FAR"; do ip netns add "$ns"; made_ns+=("$ns"); ip -n "$ns" link set lo up; done
ip link add "$VNEAR" netns "$NEAR" type veth peer name "$VFAR" netns "$FAR"
ip -n "$NEAR" addr add "$NEAR_IP/30" dev "$VNEAR"; ip -n "$NEAR" link set "$VNEAR" up
ip -n "$FAR" addr add "$FAR_IP/30" dev "$VFAR"; ip -n "$FAR" link set "$VFAR" up

mkdir -m 700 "$WORK/keys" "$WORK/rtmp" "$WORK/ltmp"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/keys/host"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/keys/client"
cp "$WORK/keys/client.pub" "$WORK/keys/authorized_keys"
echo "[$FAR_IP]:$PORT $(cut -d' ' -f1,2 "$WORK/keys/host.pub")" >"$WORK/keys/known_hosts"
cat >"$WORK/sshd_config" <<EOF
Port $PORT
ListenAddress $FAR_IP
HostKey $WORK/keys/host
AuthorizedKeysFile $WORK/keys/authorized_keys
PidFile $WORK/sshd.pid
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
StrictModes no
SetEnv TMPDIR=$WORK/rtmp
EOF
[ -d /run/sshd ] || { mkdir -m 755 /run/sshd; made_run_sshd=1; }
ip netns exec "$FAR" "$SSHD" -D -e -f "$WORK/sshd_config" 2>"$WORK/sshd.log" &
sshd_pid=$!
for _ in $(seq 100); do ip netns exec "$FAR" ss -Hltn | grep -q ":$PORT " && break; sleep 0.05; done

SSH_OPTS=(--ssh-option "-p $PORT" --ssh-option "-i $WORK/keys/client" --ssh-option "-F /dev/null"
          --ssh-option "-o IdentitiesOnly=yes" --ssh-option "-o UserKnownHostsFile=$WORK/keys/known_hosts"
          --ssh-option "-o StrictHostKeyChecking=yes")

DATA_IP=$FAR_IP  # where the data path goes: the veth pair, or the delay wire's far end
delay() {  # delay US (0: none) on both ends of the pair, or on the wire
  # The wire polls without sleeping throughout its rows, so that they all cross it at one cost.
  if [ -n "$wire_pid" ]; then echo "$DELAY spin" >&7; return; fi
  for pair in "$NEAR $VNEAR" "$FAR $VFAR"; do
    set -- $pair
    if [ "$DELAY" = 0 ]; then tc -n "$1" qdisc del dev "$2" root 2>/dev/null || true
    else tc -n "$1" qdisc replace dev "$2" root netem delay "${DELAY}us"; fi
  done
}

ipclab_p50() {  # ipclab_p50 MECH → median round trip (µs) of the repetitions' medians
  local out="$WORK/r.json"
  TMPDIR=$WORK/ltmp ip netns exec "$NEAR" "$IPCLAB" run "messaging/$1" -p pattern=roundtrip -p size=$SIZE -p placement=same --cpus "$CPU" \
    --duration "$DURATION" --repetitions "$REPS" --json "$out" --remote "root@$FAR_IP" "${SSH_OPTS[@]}" \
    --remote-address "$DATA_IP" --remote-ipclab "$IPCLAB" >/dev/null 2>"$WORK/ipclab.err" ||
    { cat "$WORK/ipclab.err" >&2; echo nan; return; }
  python3 - "$out" <<'EOF'
import json, statistics, sys
recs = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
for r in recs:
    if r["status"] != "ok":
        print(f"ipclab: {r['name']}: {r['status']}: {r.get('error')}", file=sys.stderr)
ok = [r["latency_ns"]["p50"] for r in recs if r["status"] == "ok"]
print(f'{statistics.median(ok) / 1000:.1f}' if ok else "nan")
EOF
}

CPU=$(taskset -pc $$ | sed 's/.*: *//; s/[,-].*//')  # the first CPU this script may use: both clients run there

sockperf_p50() {  # sockperf_p50 tcp|udp → median round trip (µs), --full-rtt
  local proto=(); [ "$1" = tcp ] && proto=(--tcp)
  ip netns exec "$FAR" sockperf server -i "$DATA_IP" -p "$SPORT" "${proto[@]}" >/dev/null 2>&1 &
  local srv=$! secs
  secs=$(python3 -c "import math; print(max(1, math.ceil(float('$DURATION'))))")  # sockperf -t: whole seconds
  sleep 0.5
  local meds=()
  for _ in $(seq "$REPS"); do
    # Its client where ipclab's (placement=same: the first CPU); both servers unpinned. sockperf's
    # sides wait in epoll_wait before each receive (its default iomux), ipclab's block in the receive.
    meds+=("$(ip netns exec "$NEAR" taskset -c "$CPU" sockperf ping-pong -i "$DATA_IP" -p "$SPORT" "${proto[@]}" -m $SIZE \
      -t "$secs" --full-rtt 2>&1 | sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p')")
  done
  kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null || true
  printf '%s\n' "${meds[@]}" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}

rows() {  # rows LINK DELAY...: ipclab beside sockperf over the current data path at each delay
  for DELAY in "${@:2}"; do
    delay
    for proto in tcp udp; do
      a=$(ipclab_p50 "$proto")
      b=$(sockperf_p50 "$proto")
      d=$(python3 -c "a,b=float('$a'),float('${b:-nan}'); print(f'{100*(a-b)/b:+.1f}')" 2>/dev/null || echo nan)
      printf '%-6s %-6s %-5s %14s %16s %8s\n' "$1" "${DELAY}us" "$proto" "$a" "${b:-nan}" "$d"
    done
  done
  DELAY=0; delay
}

printf '%-6s %-6s %-5s %14s %16s %8s\n' link delay proto "ipclab p50 µs" "sockperf p50 µs" "diff %"
if ip netns exec "$NEAR" tc qdisc replace dev "$VNEAR" root netem delay 1us 2>/dev/null; then
  ip netns exec "$NEAR" tc qdisc del dev "$VNEAR" root
  rows veth 0 "$DELAY_US"
else
  rows veth 0
  if command -v cc >/dev/null && cc -O2 -o "$WORK/delay_wire" "$(dirname "$0")/../tests/remote/delay_wire.c"; then
    mkfifo "$WORK/wire.ctl"
    exec 7<>"$WORK/wire.ctl"
    # On the last CPU this script may use (the clients run on the first).
    last=$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')
    taskset -c "$last" "$WORK/delay_wire" "$NEAR" "wt${tag}a" "$FAR" "wt${tag}b" 0 <&7 >"$WORK/wire.out" 2>&1 &
    wire_pid=$!
    for _ in $(seq 100); do grep -q ready "$WORK/wire.out" && break; sleep 0.05; done
    ip -n "$NEAR" addr add "$WIRE_NEAR_IP/30" dev "wt${tag}a"; ip -n "$NEAR" link set "wt${tag}a" up
    ip -n "$FAR" addr add "$WIRE_FAR_IP/30" dev "wt${tag}b"; ip -n "$FAR" link set "wt${tag}b" up
    echo "(tc netem is not in this kernel: the delayed rows go over tests/remote/delay_wire.c, $(cat "$WORK/wire.out"))"
    DATA_IP=$WIRE_FAR_IP
    rows wire 0 "$DELAY_US"
    DATA_IP=$FAR_IP
    # Gone before echo and servers: it polls a CPU of its own while it runs.
    kill "$wire_pid"; wait "$wire_pid" 2>/dev/null || true; wire_pid=""
  else
    echo "(tc netem is not in this kernel and cc is missing for the delay wire: no delayed rows)"
  fi
fi

remote_run() {  # remote_run OUT ARGS...: ipclab run ARGS with the far namespace as the remote host
  local out=$1; shift
  TMPDIR=$WORK/ltmp ip netns exec "$NEAR" "$IPCLAB" run "$@" --duration "$DURATION" --repetitions "$REPS" \
    --json "$out" --remote "root@$FAR_IP" "${SSH_OPTS[@]}" --remote-ipclab "$IPCLAB" >/dev/null 2>"$WORK/ipclab.err" ||
    tail -3 "$WORK/ipclab.err" >&2
}

echo_table() {  # echo_table JSON: echoes/s, the server's CPU per echo, p50 per server and connections
  python3 - "$1" <<'PY'
import json, statistics, sys
from collections import defaultdict
recs = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
by = defaultdict(list)
for r in recs:
    by[(r["mechanism"], r["params"]["connections"])].append(r)
print(f'{"server":<8} {"conns":>5} {"echoes/s":>12} {"server CPU/echo ns":>19} {"p50 µs":>8} {"failed":>6}')
for (m, c), rs in sorted(by.items(), key=lambda kv: (kv[0][0], int(kv[0][1]))):
    ok = [r for r in rs if r["status"] == "ok"]
    med = lambda f: statistics.median(f(r) for r in ok) if ok else float("nan")
    print(f'{m:<8} {c:>5} {med(lambda r: r["rates"]["echoes_per_s"]):>12.0f} '
          f'{med(lambda r: r["extra"]["server_cpu_per_echo_ns"]):>19.0f} '
          f'{med(lambda r: r["latency_ns"]["p50"]) / 1000:>8.1f} {len(rs) - len(ok):>6}')
PY
}

servers_table() {  # servers_table JSON: processed, rejected, lost per repetition
  python3 - "$1" <<'PY'
import json, sys
recs = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
print(f'{"server":<9} {"rep":>3} {"processed":>9} {"rejected":>8} {"lost":>6} {"status":>7}')
for r in recs:
    x = r["extra"]
    print(f'{r["mechanism"]:<9} {r["repetition"]:>3} {x.get("processed", r["ops"]):>9} {x.get("rejected", "?"):>8} '
          f'{x.get("lost", r["integrity"]["lost"]):>6} {r["status"]:>7}')
PY
}

echo
echo "echo across the pair (server in the far namespace, measured there; medians of $REPS repetitions):"
remote_run "$WORK/echo.json" echo/epoll echo/uring -p connections=16,64
echo_table "$WORK/echo.json"
echo
echo "echo the other way round (--remote-role client: the clients in the far namespace, the server here, measured here):"
remote_run "$WORK/echo_rev.json" echo/epoll echo/uring -p connections=16,64 --remote-role client
echo_table "$WORK/echo_rev.json"

echo
echo "servers across the pair (10,000 clients from the near namespace, the server in the far one):"
remote_run "$WORK/servers.json" servers/epoll_et servers/uring -p concurrency=10000
servers_table "$WORK/servers.json"
echo
echo "servers the other way round (--remote-role client: 10,000 clients from the far namespace, the server here):"
remote_run "$WORK/servers_rev.json" servers/epoll_et servers/uring -p concurrency=10000 --remote-role client
servers_table "$WORK/servers_rev.json"

runs_table() {  # runs_table JSON: ops/s, MiB/s and one-way latency per benchmark, medians of the repetitions
  python3 - "$1" <<'PY'
import json, statistics, sys
from collections import defaultdict
path = sys.argv[1]
recs = [b for b in json.load(open(path))["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
by = defaultdict(list)
for r in recs:
    by[r["name"]].append(r)
print(f'{"benchmark":<80} {"ops/s":>10} {"MiB/s":>9} {"p50 µs":>8} {"p99 µs":>8} {"± µs":>6} {"failed":>6}')
for name, rs in by.items():
    ok = [r for r in rs if r["status"] == "ok"]
    med = lambda f: statistics.median(f(r) for r in ok) if ok else float("nan")
    lat = lambda q: med(lambda r: (r["latency_ns"] or {}).get(q, float("nan")) / 1000)
    unc = med(lambda r: r["extra"].get("one_way", {}).get("uncertainty_ns", float("nan")) / 1000)
    short = "/".join(p for p in name.split("/") if not p.startswith((
        "mode:", "placement:", "latency_", "random:", "nonblocking:", "consumers:", "producers:", "verify:",
        "arrivals:", "pace:", "seed:", "message:", "buffers:")))
    print(f'{short[:80]:<80} {med(lambda r: r["rates"].get("ops_per_s", 0)):>10.0f} '
          f'{med(lambda r: r["rates"].get("MiB_per_s", 0)):>9.1f} {lat("p50"):>8.1f} {lat("p99"):>8.1f} '
          f'{unc:>6.1f} {len(rs) - len(ok):>6}')
print()
PY
}

echo
echo "the libraries over tcp across the pair, beside messaging/tcp (64 B; medians of $REPS repetitions):"
remote_run "$WORK/libs.json" messaging/tcp libs/zmq libs/nng libs/grpc -p endpoint=tcp -p pattern=roundtrip,throughput \
  -p size=64
runs_table "$WORK/libs.json"
echo "bulk/zerocopy across the pair (socket=tcp, its default sizes):"
remote_run "$WORK/bulk.json" bulk/zerocopy -p socket=tcp -p send=copy,msg_zerocopy,uring_send_zc -p pattern=throughput
runs_table "$WORK/bulk.json"
echo "the open loop across the pair (messaging/tcp and libs/zmq at 10,000/s; one-way latency from the intended send time):"
remote_run "$WORK/rate.json" messaging/tcp libs/zmq -p endpoint=tcp -p pattern=rate -p rate=10k -p size=64
runs_table "$WORK/rate.json"
