#!/usr/bin/env python3
"""Smoke test: every registered benchmark runs once, briefly, with its default parameters, and
its record has the shape of docs/json-schema.md. Skipped is fine (a feature the machine lacks),
failed is not."""
import json
import os
import subprocess
import sys
import tempfile

ipclab = sys.argv[1]
RECORD_KEYS = {"name", "suite", "mechanism", "params", "run_type", "repetition", "status", "error",
               "ops", "bytes", "wall_s", "time_per_op_ns", "rates", "latency_ns", "cpu",
               "placement", "integrity", "extra"}
CPU_KEYS = {"user_s", "sys_s", "per_op_ns", "ctx_vol", "ctx_invol", "ctx_per_op",
            "steal_s", "steal_per_op_ns", "steal_share", "steal_cpus", "irq_s", "softirq_s", "run_queue_wait_s",
            "run_queue_wait_per_op_ns"}
INTEGRITY_KEYS = {"sent", "received", "lost", "duplicated", "corrupt"}
LAT_KEYS = {"kind", "count", "mean", "min", "p50", "p90", "p99", "p999", "max", "histogram"}

problems = []
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "smoke.json")
    proc = subprocess.run([ipclab, "run", "--duration", "0.05", "--warmup", "0.01",
                           "--repetitions", "1", "--json", out],
                          capture_output=True, text=True, timeout=840)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode not in (0, 1):
        sys.exit(f"ipclab run exited {proc.returncode}")
    doc = json.load(open(out))
    # A disk can pause for longer than a 50 ms window, or than the 1 s stall limit: this VM's virtio
    # disk does, most of all right after much writing (a fresh clone's build). A file IO point that
    # failed so, and only that, is measured once again with a window of 0.5 s, and must then be ok;
    # any other failure stands.
    def device_paused(b):
        return b["suite"] == "fileio" and b["status"] == "failed" and (
            b["error"] == "no operation completed in the measured window" or b["error"].startswith("stalled:"))
    for i, b in enumerate(doc["benchmarks"]):
        if device_paused(b):
            again = os.path.join(tmp, f"again{i}.json")
            params = [a for k, v in b["params"].items() for a in ("-p", f"{k}={v}")]
            print(f'{b["name"]}: {b["error"]}; measured again with a 0.5 s window')
            subprocess.run([ipclab, "run", f'{b["suite"]}/{b["mechanism"]}', *params, "--duration", "0.5",
                            "--warmup", "0.05", "--repetitions", "1", "--json", again],
                           capture_output=True, text=True, timeout=120)
            [doc["benchmarks"][i]] = json.load(open(again))["benchmarks"] if os.path.exists(again) else [b]
    # `ipclab list` is an index of suites (a row each, continuation lines indented, a closing hint
    # in backquotes); `ipclab list SUITE` names each mechanism, SUITE/NAME, at the start of a line
    # of its own (after the parameters its mechanisms share).
    def listed(*args):
        return subprocess.run([ipclab, "list", *args], capture_output=True, text=True, check=True).stdout
    suites = [line.split()[0] for line in listed().splitlines()
              if line and not line[0].isspace() and not line.startswith("`")]
    mechanisms = {line.split()[0] for suite in suites for line in listed(suite).splitlines()
                  if line.startswith(suite + "/")}

assert doc["schema_version"] == 1
for key in ("cpu", "kernel", "load_avg", "limits", "git_sha", "command_line", "warnings"):
    if key not in doc["context"]:
        problems.append(f"context lacks {key}")
seen = set()
skipped = 0
for b in doc["benchmarks"]:
    seen.add(f'{b["suite"]}/{b["mechanism"]}')
    missing = RECORD_KEYS - b.keys()
    if missing:
        problems.append(f'{b["name"]}: missing {sorted(missing)}')
        continue
    if b["status"] == "skipped":
        print(f'skipped {b["name"]}: {b["error"]}')
        skipped += 1
        continue
    if b["status"] != "ok":
        problems.append(f'{b["name"]}: {b["status"]}: {b["error"]}')
        continue
    if not b["name"].startswith(f'{b["suite"]}/{b["mechanism"]}'):
        problems.append(f'{b["name"]}: name does not start with suite/mechanism')
    if b["ops"] <= 0 or b["wall_s"] <= 0:
        problems.append(f'{b["name"]}: no operations measured')
    if CPU_KEYS - b["cpu"].keys() or INTEGRITY_KEYS - b["integrity"].keys():
        problems.append(f'{b["name"]}: cpu or integrity incomplete')
    steal = b["cpu"].get("steal_share")  # null only on a kernel without the figure
    if steal is None or not (0 <= steal <= 1 and b["cpu"]["steal_s"] >= 0 and b["cpu"]["steal_cpus"]):
        problems.append(f'{b["name"]}: steal out of range: {b["cpu"]}')
    if "layout" not in b["placement"] or "sides" not in b["placement"]:
        problems.append(f'{b["name"]}: placement incomplete')
    lat = b["latency_ns"]
    if lat is not None:
        if LAT_KEYS - lat.keys():
            problems.append(f'{b["name"]}: latency incomplete')
        elif not (lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"]):
            problems.append(f'{b["name"]}: latency percentiles out of order')
        elif sum(lat["histogram"]["counts"]) != lat["count"]:
            problems.append(f'{b["name"]}: histogram counts do not add up to count')
    series = b.get("series")
    if series is not None:
        # docs/json-schema.md: 20 slices, 21 boundaries up to the window's length, ops adding up.
        if len(series["t_ns"]) != series["slices"] + 1 or len(series["ops"]) != series["slices"]:
            problems.append(f'{b["name"]}: series of the wrong length')
        elif sum(series["ops"]) != b["ops"]:
            problems.append(f'{b["name"]}: series ops add up to {sum(series["ops"])}, not {b["ops"]}')
        elif sorted(series["t_ns"]) != series["t_ns"] or not isinstance(series["flags"], list):
            problems.append(f'{b["name"]}: series boundaries out of order or flags not a list')
for m in sorted(mechanisms - seen):
    problems.append(f"{m}: listed but produced no record")

for p in problems:
    print("SMOKE FAILURE:", p)
passed = len(doc["benchmarks"]) - skipped - sum(1 for b in doc["benchmarks"] if b.get("status") == "failed")
print(f"smoke: {len(doc['benchmarks'])} records from {len(seen)} mechanisms: {passed} ok, {skipped} skipped "
      f"(each named above with its reason), {len(problems)} problems")
sys.exit(1 if problems else 0)
