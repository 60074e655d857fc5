#!/usr/bin/env bash
# Alternates anchors/c2c with the spinning round trips it is the yardstick for (messaging
# shm_spsc, pipe, pingpong slots), so that each ratio compares points taken next to each other:
# on a VM the host may move the vCPUs between sibling hyperthreads and separate cores mid-run.
# Usage: scripts/c2c_interleave.sh path/to/ipclab [rounds] [outdir]
set -euo pipefail
ipclab=${1:?usage: c2c_interleave.sh path/to/ipclab [rounds] [outdir]}
rounds=${2:-4}
out=${3:-$(mktemp -d)}
mkdir -p "$out"
common=(--repetitions 1 --duration 0.5 --warmup 0.1)
for i in $(seq 1 "$rounds"); do
  "$ipclab" run anchors/c2c -p placement=cross "${common[@]}" --json "$out/c2c-$i.json" >/dev/null
  "$ipclab" run messaging/shm_spsc -p pattern=pingpong -p size=64 -p placement=cross \
    -p wait=spin,adaptive -p latency_sample=8 "${common[@]}" --json "$out/spsc-$i.json" >/dev/null
  "$ipclab" run messaging/pipe -p pattern=pingpong -p size=64 -p placement=cross "${common[@]}" \
    --json "$out/pipe-$i.json" >/dev/null
  "$ipclab" run pingpong/thread pingpong/process -p wait=spin -p pairs=1 -p placement=cross \
    "${common[@]}" --json "$out/pp-$i.json" >/dev/null
done
echo "load: $(cat /proc/loadavg); results in $out; ns per round trip:"
python3 - "$out" "$rounds" <<'PY'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
for i in range(1, rounds + 1):
    row = {}
    for f in ("c2c", "spsc", "pipe", "pp"):
        for b in json.load(open(f"{out}/{f}-{i}.json"))["benchmarks"]:
            if b["run_type"] == "iteration":
                wait = b["params"].get("wait")
                row[b["mechanism"] + (f"/{wait}" if wait else "")] = b["time_per_op_ns"]
    c2c = row.get("c2c")
    cells = [f"{k}={v:.0f}" + (f" ({v / c2c:.2f}x)" if c2c and k != "c2c" else "") for k, v in row.items()]
    print(f"round {i}: " + "  ".join(cells))
PY
