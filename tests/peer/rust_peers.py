#!/usr/bin/env python3
"""Each Rust peer answers a tiny run of each of its benches through ipclab with a valid, verified
record: every runtime/, echo/ and fileio/ mechanism of Tokio, Monoio and Compio must come back ok
(not skipped: this test exists only when the peers were built), with operations counted, clean
integrity counters, and a latency of its kind (runtime: batch means, fileio: per read). Then each
fileio peer, given a file of zeros, must count every block corrupt.
Usage: rust_peers.py IPCLAB PEER_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import time

ipclab, peer_dir = sys.argv[1], sys.argv[2]
RUNTIMES = ["tokio_ct", "tokio_mt", "monoio", "compio"]
RUNS = [
    ["run", *[f"runtime/*_{rt}" for rt in RUNTIMES], "-p", "n=256", "-p", "pairs=3"],
    # drive=spawned (the default is block_on) on one runtime of each kind; n=250 over tasks=64
    # leaves switch_many 192 switches (3 per task).
    ["run", *[f"runtime/{b}_{rt}" for rt in ["monoio", "tokio_mt"] for b in ["switch", "switch_many", "channel"]],
     "-p", "n=250", "-p", "drive=spawned"],
    ["run", *[f"echo/{rt}" for rt in RUNTIMES], "-p", "connections=4"],
    ["run", "fileio/tokio", "fileio/monoio", "fileio/compio", "-p", "file_size=4M",
     "-p", "pattern=seq,rand", "-p", "variant=buffered,direct", "-p", "qd=4"],
]
WANT = {"runtime": 8 * len(RUNTIMES) + 6, "echo": len(RUNTIMES), "fileio": 3 * 4}
KIND = {"runtime": "batch_mean", "fileio": "io"}

problems, seen = [], {}
with tempfile.TemporaryDirectory() as tmp:
    for i, args in enumerate(RUNS):
        out = os.path.join(tmp, f"{i}.json")
        # echo's window must hold an echo of a multi-threaded runtime on a loaded 2-vCPU machine:
        # 0.05 s once held none there.
        duration = "0.2" if args[1].startswith("echo/") else "0.05"
        proc = subprocess.run([ipclab, *args, "--duration", duration, "--warmup", "0.01",
                               "--repetitions", "1", "--json", out],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            problems.append(f"{' '.join(args)}: exit {proc.returncode}: {proc.stderr[-500:]}")
            if not os.path.exists(out):
                continue
        for b in json.load(open(out))["benchmarks"]:
            seen[b["suite"]] = seen.get(b["suite"], 0) + 1
            i = b["integrity"]
            if b["status"] != "ok":
                problems.append(f'{b["name"]}: {b["status"]}: {b["error"]}')
            elif b["ops"] <= 0 or b["wall_s"] <= 0 or i["received"] <= 0:
                problems.append(f'{b["name"]}: nothing measured or verified')
            elif i["lost"] or i["duplicated"] or i["corrupt"]:
                problems.append(f'{b["name"]}: integrity {i}')
            elif b["mechanism"].startswith("channel") and ("futures" in b["mechanism"]) != (
                    b["extra"].get("channel") == "futures::channel::mpsc"):
                problems.append(f'{b["name"]}: ran on {b["extra"].get("channel")}')
            elif b["suite"] == "runtime" and "drive" in b["params"] and b["extra"].get("drive") != b["params"]["drive"]:
                problems.append(f'{b["name"]}: the peer ran drive={b["extra"].get("drive")}')
            # n as the peer ran it: grown by the harness until its window held --duration (extra.sized).
            elif b["mechanism"].startswith("switch_many") and b["ops"] != b["extra"].get(
                    "sized", {}).get("n_ran", b["params"]["n"]) // 64 * 64:
                problems.append(f'{b["name"]}: {b["ops"]} switches, not n rounded down to a multiple of tasks')
            elif b["suite"] == "fileio" and not ("file" in b["extra"] and "engine" in b["extra"]):
                problems.append(f'{b["name"]}: extra lacks the harness\'s or the peer\'s fields')
            # The latency and its kind: each read's at the queue depth (io; every measured read),
            # or the runtime benches' batch means per op, whose mean is the time per op within the
            # rounding of each batch to whole ns (the record's figures against each other).
            elif b["suite"] in KIND and (b.get("latency_ns") or {}).get("kind") != KIND[b["suite"]]:
                problems.append(f'{b["name"]}: latency_ns {b.get("latency_ns")}, not of kind {KIND[b["suite"]]}')
            elif b["suite"] in KIND and not (b["latency_ns"]["count"] > 0 and b["latency_ns"]["histogram"]["counts"]):
                problems.append(f'{b["name"]}: an empty latency histogram')
            elif b["suite"] == "fileio" and b["latency_ns"]["count"] != b["ops"]:
                problems.append(f'{b["name"]}: {b["latency_ns"]["count"]} latencies of {b["ops"]} reads')
            elif b["suite"] == "runtime" and not (
                    (per_op := b["wall_s"] * 1e9 / b["ops"]) / 2 - 1 <= b["latency_ns"]["mean"] <= 2 * per_op + 1):
                problems.append(f'{b["name"]}: batch means average {b["latency_ns"]["mean"]} ns, '
                                f'time per op {per_op:.1f} ns')
    # The peers' own verification must be able to fail: a file of zeros is all corrupt blocks.
    zeros = os.path.join(tmp, "zeros.dat")
    with open(zeros, "wb") as f:
        f.write(bytes(1 << 20))
    for rt in ["tokio", "monoio", "compio"]:
        # Driven as the harness drives it (PeerPhases): `ready`, then `measure` and `stop` on stdin.
        proc = subprocess.Popen([os.path.join(peer_dir, f"ipclab-peer-{rt}"), "--bench=fileio",
                                 f"--file={zeros}", "--file_bytes=1048576", "--variant=buffered", "--qd=2"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = proc.stdout.readline()
        proc.stdin.write("measure\n")
        proc.stdin.flush()
        time.sleep(0.05)
        out, err = proc.communicate("stop\n", timeout=60)
        i = json.loads(out)["integrity"] if proc.returncode == 0 and ready == "ready\n" else {}
        if not i.get("received") or i["corrupt"] != i["received"]:
            problems.append(f"{rt}: zeros read as {i or (ready + err)[-300:]}, not all corrupt")
if seen != WANT:
    problems.append(f"records per suite {seen}, expected {WANT}")
for p in problems:
    print("RUST PEERS FAILURE:", p)
print(f"rust peers: {sum(seen.values())} records, {len(problems)} problems")
sys.exit(1 if problems else 0)
