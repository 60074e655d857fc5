"""Synthetic result files for every suite, following docs/json-schema.md (schema version 1).

Deterministic (seeded), small enough to keep the tests light, and written independently of
ipclab_report so that the tests check the reader against the contract, not against itself.
Run as a script to write a set of files: `python3 tests/fixtures.py OUT_DIR`.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import sys

SUB_BUCKETS = 128

SUITES = ["messaging", "pingpong", "servers", "echo", "runtime", "fileio", "cachecalc", "anchors",
          "experimental"]


def bucket_low(v: int, sb: int = SUB_BUCKETS) -> int:
    """Lowest value of v's bucket in the log-linear histogram of the contract."""
    if v < 2 * sb:
        return v
    k = v.bit_length() - 1
    width = (1 << k) // sb
    return (v // width) * width


def latency_block(samples, kind, sb=SUB_BUCKETS):
    counts = {}
    for s in samples:
        b = bucket_low(max(1, int(s)), sb)
        counts[b] = counts.get(b, 0) + 1
    values = sorted(counts)
    cs = [counts[v] for v in values]
    total = sum(cs)

    def pct(q):
        acc = 0
        for v, c in zip(values, cs):
            acc += c
            if acc >= total * q / 100:
                return v
        return values[-1]

    return {"kind": kind, "count": total, "mean": sum(samples) / total, "min": min(samples),
            "max": max(samples), "p50": pct(50), "p90": pct(90), "p95": pct(95), "p99": pct(99),
            "p999": pct(99.9), "histogram": {"sub_buckets": sb, "values": values, "counts": cs}}


def name_of(suite, mechanism, params):
    return "/".join([suite, mechanism] + [f"{k}:{v}" for k, v in params.items()])


# Each spec: (suite, mechanism, params, base ns/op, bytes per op, latency kind | None, cpu factor,
#             extra(rng, pairs) -> dict, status, error)

def _specs():
    out = []
    base = {"pipe": 1900, "unix_stream": 2300, "mq": 2600, "shm_spsc_futex": 600, "udp": 3100}
    for mech, t in base.items():
        for placement in ("same", "cross"):
            for size in (64, 256, 1024, 4096, 8192):
                params = {"mode": "throughput", "size": size, "producers": 1, "consumers": 1,
                          "placement": placement}
                ns = t * (1 + size / 6000) * (0.7 if placement == "cross" else 1.0)
                status, err = "ok", None
                if mech == "udp" and size == 8192:
                    status, err = "failed", "integrity: 37 messages lost"
                out.append(("messaging", mech, params, ns, size, "one_way", 1.6 if placement == "cross" else 1.0,
                            None, status, err))
    for wait, t in {"spin": 180, "futex": 4200, "adaptive_futex": 350, "adaptive_sem": 420}.items():
        for guest in ("thread", "process"):
            for pairs in (1, 2, 3, 4, 8):
                ns = t * (1 + 0.35 * max(0, pairs - 2)) * (1.1 if guest == "process" else 1.0)
                out.append(("pingpong", guest, {"wait": wait, "pairs": pairs, "slot_bytes": 64},
                            ns, 0, "rtt", 2.0 if wait == "spin" else 1.1, "pingpong", "ok", None))
    for model, t in {"blocking": 900_000, "threads": 310_000, "select": 150_000, "poll": 120_000,
                     "epoll_lt": 60_000, "epoll_et": 58_000, "epoll_reuseport": 41_000,
                     "io_uring": 39_000}.items():
        out.append(("servers", model, {"clients": 2000, "threads": 5} if model == "threads" else {"clients": 2000},
                    t, 0, "session", 0.8, "servers", "ok", None))
    out.append(("servers", "asio", {"clients": 2000}, 0, 0, None, 0, None, "skipped",
                "Asio not found at build time (install libasio-dev)"))
    for mech, t in {"epoll": 21000, "io_uring": 17000, "io_uring_fixed": 15500}.items():
        for conns in (1, 4, 16, 64):
            out.append(("echo", mech, {"size": 1024, "connections": conns}, t / min(conns, 8) ** 0.8,
                        2048, "rtt", 0.9, "echo", "ok", None))
    # named as the suite names them: <operation>_<runtime>, the runtime's name itself with an underscore
    for rt, t in {"ipcrt": 38, "asio": 95, "tokio_ct": 52, "go": 240}.items():
        for bench, k in (("spawn", 1.0), ("switch", 0.45)):
            for n in (131072, 524288, 2097152):
                out.append(("runtime", f"{bench}_{rt}", {"n": n}, t * k * (1 + 0.03 * math.log2(n / 131072)),
                            0, "batch_mean", 1.0, None, "ok", None))
    for eng, t in {"psync": 95_000, "libaio": 60_000, "liburing": 52_000, "ipcrt": 50_000}.items():
        for pattern, bs in (("rand", 4096), ("seq", 65536)):
            for qd in (1, 4, 16, 64):
                ns = t * (bs / 4096) ** 0.35 / min(qd, 16) ** 0.75
                out.append(("fileio", eng, {"pattern": pattern, "bs": bs, "qd": qd}, ns, bs, "io",
                            0.3, None, "ok", None))
    out.append(("fileio", "ipcrt", {"pattern": "rand", "bs": 4096, "qd": 16, "variant": "iopoll"}, 0, 0,
                None, 0, None, "skipped", "IOPOLL not supported by this device (virtio-blk); use an NVMe device"))
    for var, t, cpu in (("serial", 9.1e6, 0.05), ("sleep", 9.3e6, 0.1), ("std_threads", 1.7e6, 1.2),
                        ("thread_pool", 1.2e6, 1.5), ("asio_strand", 1.1e6, 1.7), ("ipcrt", 0.9e6, 0.9),
                        ("sharded", 0.6e6, 1.9)):
        for delay in (8, 64):
            out.append(("cachecalc", var, {"tasks": 1000, "delay_us": delay}, t * (delay / 8) ** 0.5, 0,
                        None, cpu, None, "ok", None))
    for anchor, t in (("null", 2.1), ("getpid", 48), ("clock_gettime", 19), ("futex_wake", 160)):
        out.append(("anchors", anchor, {}, t, 0, None, 1.0, None, "ok", None))
    out.append(("experimental", "quantum", {"qubits": 3}, 1234, 0, "op", 1.0, None, "ok", None))
    out.append(("experimental", "wormhole", {"radius": 7}, 4321, 0, None, 1.0, None, "ok", None))
    return out


def _extra(kind, rng, params, ops):
    if kind == "pingpong":
        pairs = params["pairs"]
        per = [ops / pairs * rng.uniform(0.85, 1.0) for _ in range(pairs)]
        return {"per_pair_ops": per, "total_ops": sum(per), "fairness": min(per) / max(per)}
    if kind == "servers":
        return {"processed": ops, "rejected": int(ops * rng.uniform(0, 0.02)), "lost": 0,
                "connect_p99_ns": 90_000, "server_cpu_per_session_ns": rng.uniform(20_000, 40_000)}
    if kind == "echo":
        return {"server_cpu_per_echo_ns": rng.uniform(8_000, 10_000)}
    return {}


def context(hostname="lab1", kernel="6.1.0-18-amd64", date="2024-05-01T10:00:00Z", load=(0.4, 0.3, 0.2)):
    return {
        "ipclab_version": "0.1.0", "git_sha": "f0414cd", "command_line": "ipclab run --preset quick --json r.json",
        "date": date, "hostname": hostname,
        "cpu": {"model": "AMD EPYC 7B13", "logical_cpus": 2, "physical_cores": 1, "smt": True,
                "caches": {"L1d": 32768, "L2": 524288, "L3": 33554432}, "online": "0-1"},
        "memory_bytes": 8 << 30, "kernel": kernel, "virtualization": "kvm", "governor": None,
        "load_avg": list(load), "mitigations": {"spectre_v2": "Mitigation: Retpolines", "meltdown": "Not affected"},
        "limits": {"mq_msg_max": 10, "mq_msgsize_max": 8192, "rlimit_msgqueue": 819200,
                   "rlimit_nofile": 1048576, "rlimit_memlock": 8388608, "somaxconn": 4096},
        "io_uring": {"available": True, "features": ["SINGLE_ISSUER", "DEFER_TASKRUN"]},
        "compiler": "g++ 12.2.0", "build_type": "Release", "build_flags": "-O2 -g",
        "libraries": {"liburing": "2.3", "asio": "1.24"}, "preset": "quick", "repetitions": 3,
        "duration_s": 0.5, "warmup_s": 0.1,
        "warnings": [
            {"message": "running in a virtual machine (kvm): timings include hypervisor noise",
             "remedy": "run on bare metal for publishable numbers"},
            {"message": "mq msg_max is 10: queue depth capped from 64 to 10",
             "remedy": "sysctl -w fs.mqueue.msg_max=64"},
        ],
        "future_context_key": {"ignored": True},
    }


def make_result(suites=None, repetitions=3, aggregates=True, seed=1, speed=None, noise=0.02,
                hostname="lab1", kernel="6.1.0-18-amd64", date="2024-05-01T10:00:00Z", samples=600):
    """A schema-1 result document. `speed` maps a benchmark name (or prefix) to a time factor."""
    rng = random.Random(seed)
    speed = speed or {}
    suites = set(suites or SUITES)
    benchmarks = []
    for spec in _specs():
        if spec[0] not in suites:
            continue
        name = name_of(*spec[:3])
        factor = next((f for k, f in speed.items() if name.startswith(k)), 1.0)
        iters = iterations(spec, rng, repetitions=repetitions, factor=factor, noise=noise, samples=samples)
        benchmarks += iters
        if aggregates:
            benchmarks.append(_aggregate(iters))
    return {"schema_version": 1, "context": context(hostname, kernel, date), "benchmarks": benchmarks}


def iterations(spec, rng, *, repetitions=3, factor=1.0, noise=0.02, samples=600, name=None, placement=None,
               extra=None):
    """The iteration records of one spec (suite, mechanism, params, base ns/op, bytes per op, latency
    kind | None, cpu factor, extra kind, status, error) as `make_result` makes them; `name`,
    `placement` and `extra` (merged into the record's extra) replace what the spec would give."""
    suite, mech, params, ns, bpo, kind, cpuf, extra_kind, status, err = spec
    name = name or name_of(suite, mech, params)
    iters = []
    for rep in range(repetitions):
        rec = {"name": name, "suite": suite, "mechanism": mech, "params": dict(params),
               "run_type": "iteration", "repetition": rep, "status": status, "error": err,
               "unknown_future_field": [1, 2, 3]}
        if status == "skipped":
            iters.append(rec)
            continue
        t = ns * factor * (1 + rng.gauss(0, noise))
        ops = max(1, int(0.5e9 / t)) if t < 0.5e9 else 1
        wall = ops * t / 1e9
        user = wall * cpuf * 0.6
        sys_ = wall * cpuf * 0.4
        ctx_vol = int(ops * rng.uniform(0.05, 0.4))
        rates = {"ops_per_s": ops / wall}
        if bpo:
            rates["bytes_per_s"] = ops * bpo / wall
            rates["MiB_per_s"] = rates["bytes_per_s"] / (1 << 20)
        if suite == "pingpong":
            rates["system_effective_ops"] = ops / wall
            rates["total_ops"] = ops / wall * 1.04
        lost = 37 if status == "failed" else 0
        rec.update({
            "ops": ops, "bytes": ops * bpo, "wall_s": wall, "time_per_op_ns": t, "rates": rates,
            "latency_ns": (latency_block([rng.lognormvariate(math.log(t * 1.3), 0.35) for _ in range(samples)], kind)
                           if kind else None),
            "cpu": {"user_s": user, "sys_s": sys_, "per_op_ns": (user + sys_) * 1e9 / ops,
                    "ctx_vol": ctx_vol, "ctx_invol": 3, "ctx_per_op": (ctx_vol + 3) / ops},
            "placement": placement or {
                "layout": params.get("placement", "unpinned"), "cpus": "0,1",
                "sides": [{"role": "producer", "index": 0, "pinned": [0], "observed": [0]},
                          {"role": "consumer", "index": 0,
                           "pinned": [1 if params.get("placement") == "cross" else 0],
                           "observed": [1 if params.get("placement") == "cross" else 0]}]},
            "integrity": {"sent": ops + lost, "received": ops, "lost": lost, "duplicated": 0, "corrupt": 0},
            "extra": {**_extra(extra_kind, rng, params, ops), **(extra or {})},
            "kernel": _kernel(ops, 4 if mech == "pipe" else 2, ctx_vol + 3),
        })
        if suite == "messaging" and status == "ok":
            # shm_spsc_futex cross-CPU runs at two levels, as the reference's shm ping-pong does
            rec["series"] = _series(rng, ops, wall, mech == "shm_spsc_futex" and params.get("placement") == "cross")
        iters.append(rec)
    return iters


def _series(rng, ops, wall, bimodal):
    """20 slices of the window; `bimodal`: the later half at a third of the rate."""
    t = [round(wall * 1e9 * k / 20) for k in range(21)]
    weights = [(1 if not bimodal or k < 10 else 1 / 3) * rng.uniform(0.97, 1.03) for k in range(20)]
    counts = [int(ops * w / sum(weights)) for w in weights]
    counts[0] += ops - sum(counts)
    rates = [c / ((b - a) / 1e9) for c, a, b in zip(counts, t, t[1:])]
    return {"slices": 20, "t_ns": t, "ops": counts, "rate_per_s": rates, "p50_ns": [None] * 20,
            "p99_ns": [None] * 20, "flags": ["bimodal"] if bimodal else []}


def _kernel(ops, syscalls_per_op, ctx):
    totals = {"context_switches": ctx, "cpu_migrations": 0, "page_faults": 12, "syscalls": ops * syscalls_per_op + 40}
    return {"scope": "window", "totals": totals, "per_op": {k: v / ops for k, v in totals.items()},
            "hardware_unavailable": "no hardware PMU"}


def _aggregate(iters):
    first = iters[0]
    agg = {k: first[k] for k in ("name", "suite", "mechanism", "params", "status", "error")}
    agg.update(run_type="aggregate", aggregate_name="median", repetition=len(iters))
    if first["status"] == "skipped":
        return agg
    times = [r["time_per_op_ns"] for r in iters]
    mid = sorted(range(len(iters)), key=lambda i: times[i])[(len(iters) - 1) // 2]
    for k in ("ops", "bytes", "wall_s", "time_per_op_ns"):
        agg[k] = statistics.median(r[k] for r in iters)
    for group in ("rates", "cpu"):
        agg[group] = {k: statistics.median(r[group][k] for r in iters) for k in first[group]}
    # As the harness (statistics.cpp): every latency figure the median of the repetitions' own, the
    # kind and histogram the median repetition's.
    lat = iters[mid]["latency_ns"]
    if isinstance(lat, dict):
        lat = dict(lat)
        for k, v in iters[mid]["latency_ns"].items():
            if k not in ("kind", "histogram") and isinstance(v, (int, float)):
                lat[k] = statistics.median(r["latency_ns"][k] for r in iters)
    agg["latency_ns"] = lat
    agg["extra"] = iters[mid]["extra"]
    agg["placement"] = iters[mid]["placement"]
    agg["integrity"] = {k: sum(r["integrity"][k] for r in iters) for k in first["integrity"]}
    if "series" in first:
        agg["flags"] = sorted({f for r in iters for f in r["series"]["flags"]})
    if "kernel" in first:
        agg["kernel"] = {"scope": first["kernel"]["scope"],
                         "per_op": {k: statistics.median(r["kernel"]["per_op"][k] for r in iters)
                                    for k in first["kernel"]["per_op"]}}
    m = statistics.median(times)
    sd = statistics.stdev(times) if len(times) > 1 else 0.0
    agg["ci"] = {"level": 0.95, "method": "bootstrap-percentile", "time_per_op_ns": [m * 0.99, m * 1.01]}
    agg["spread"] = {"metric": "time_per_op_ns", "min": min(times), "max": max(times), "stddev": sd,
                     "cv": sd / m, "values": times}
    return agg


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)
    return str(path)


if __name__ == "__main__":
    import os

    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "lab1.json"), make_result())
    write(os.path.join(out, "lab2.json"), make_result(seed=2, hostname="lab2", kernel="6.8.0-31-generic",
                                                      date="2024-05-02T09:30:00Z", aggregates=False,
                                                      speed={"messaging/pipe": 0.8, "fileio/psync": 1.3}))
    print(out)


# --- open-loop records (pattern=rate): the contract of issue 21 (docs/json-schema.md) --------------

RATES = {"10k": 10_000, "50k": 50_000, "100k": 100_000, "200k": 200_000}
# mechanism -> (capacity per second, unloaded one-way latency ns): a point at or above the capacity
# is saturated.
OPEN_LOOP = {"messaging": ({"pipe": (150_000, 4_000), "shm_spsc": (400_000, 900)}, "one_way", ("producer", "consumer")),
             "echo": ({"epoll": (120_000, 20_000)}, "rtt", ("client", "server"))}


def _rate_extra(rng, requested, cap, lat_ns, kind, seed, samples, slow=1.0):
    """(latency_ns, extra.rate, achieved) of one open-loop point; M/D/1-like growth of the wait."""
    rho = requested / cap
    saturated = rho >= 1.0
    achieved = min(requested, cap) * (1 - rng.uniform(0, 0.002)) if not saturated else cap * 0.97
    sched = latency_block([rng.uniform(50, 400) for _ in range(samples)], "sched_error")
    if saturated:
        short = (achieved - requested) / requested * 100
        return None, {"requested_per_s": float(requested), "achieved_per_s": achieved, "arrivals": "poisson",
                      "pace": "spin", "seed": seed, "saturated": True,
                      "saturation": f"achieved {achieved:.0f}/s of {requested:.0f}/s requested ({short:.1f}%)",
                      "backlog_growth_us": 3200.0, "raw_ns": None, "sched_error_ns": sched}, achieved
    mean = lat_ns * slow * (1 + rho / (2 * (1 - rho)))
    corrected = [rng.lognormvariate(math.log(mean), 0.3) for _ in range(samples)]
    raw = [c * 0.85 for c in corrected]
    return latency_block(corrected, kind), {
        "requested_per_s": float(requested), "achieved_per_s": achieved, "arrivals": "poisson", "pace": "spin",
        "seed": seed, "saturated": False, "saturation": "", "backlog_growth_us": rng.uniform(-0.5, 0.5),
        "raw_ns": latency_block(raw, kind), "sched_error_ns": sched}, achieved


def make_rate_result(seed=1, repetitions=2, samples=200, slow=None, capacity=None, hostname="lab1"):
    """A result with open-loop points of messaging and echo (10k..200k/s, 200k saturating pipe and
    epoll) and one capacity search (messaging/pipe rate=auto, slo 50 us). `slow` maps a mechanism
    to a latency factor, `capacity` to a capacity factor (a factor < 1 can saturate a point)."""
    rng = random.Random(seed)
    slow, capacity = slow or {}, capacity or {}
    benchmarks = []
    for suite, (mechs, kind, roles) in OPEN_LOOP.items():
        for mech, (cap, lat_ns) in mechs.items():
            cap *= capacity.get(mech, 1.0)
            points = [({"rate": text}, rps) for text, rps in RATES.items()]
            if suite == "messaging" and mech == "pipe":
                points.append(({"rate": "auto", "slo_p99_us": 50}, None))
            for extra_params, rps in points:
                params = {"pattern": "rate", **extra_params, "arrivals": "poisson", "pace": "spin", "seed": seed,
                          "size": 64}
                name = name_of(suite, mech, params)
                iters = []
                for rep in range(repetitions):
                    trials = None
                    if rps is None:  # capacity search: bisection over short trials, then the found rate
                        trials, lo, hi = [], 1000.0, 400_000.0
                        for req in [1000.0, 400_000.0] + [None] * 5:
                            req = req if req is not None else round((lo + hi) / 2, -3)
                            lat, rx, ach = _rate_extra(rng, req, cap, lat_ns, kind, seed, 50, slow.get(mech, 1.0))
                            meets = lat is not None and lat["p99"] <= 50_000
                            trials.append({"requested_per_s": req, "achieved_per_s": ach,
                                           **{f"{p}_us": (lat[p] / 1e3 if lat else None) for p in ("p50", "p99", "p999")},
                                           "saturated": rx["saturated"], "meets_slo": meets, "duration_s": 0.05})
                            if req not in (1000.0, 400_000.0):
                                lo, hi = (req, hi) if meets else (lo, req)
                        found = max((t["requested_per_s"] for t in trials if t["meets_slo"]), default=0.0)
                        lat, rx, ach = _rate_extra(rng, found or 1000.0, cap, lat_ns, kind, seed, samples,
                                                   slow.get(mech, 1.0))
                    else:
                        lat, rx, ach = _rate_extra(rng, rps, cap, lat_ns, kind, seed, samples, slow.get(mech, 1.0))
                    wall = 0.5
                    ops = int(ach * wall)
                    cpu_s = {role: wall * (0.3 + 0.5 * ach / cap) * (1.0 if i == 0 else 0.7)
                             for i, role in enumerate(roles)}
                    total = sum(cpu_s.values())
                    extra = {"rate": rx, "cpu_by_role": {role: {"user_s": s * 0.7, "sys_s": s * 0.3,
                                                                "per_op_ns": s * 1e9 / ops}
                                                         for role, s in cpu_s.items()}}
                    if trials is not None:
                        extra["capacity"] = {"slo_p99_us": 50.0, "slo_basis": "given", "capacity_per_s": found,
                                             "confirmed": lat is not None and lat["p99"] <= 50_000, "trials": trials}
                    iters.append({
                        "name": name, "suite": suite, "mechanism": mech, "params": dict(params),
                        "run_type": "iteration", "repetition": rep, "status": "ok", "error": None,
                        "ops": ops, "bytes": ops * 64, "wall_s": wall, "time_per_op_ns": wall * 1e9 / ops,
                        "rates": {"ops_per_s": ops / wall, "bytes_per_s": ops * 64 / wall,
                                  "MiB_per_s": ops * 64 / wall / (1 << 20)},
                        "latency_ns": lat,
                        "cpu": {"user_s": total * 0.7, "sys_s": total * 0.3, "per_op_ns": total * 1e9 / ops,
                                "ctx_vol": ops // 10, "ctx_invol": 3, "ctx_per_op": (ops // 10 + 3) / ops},
                        "placement": {"layout": "cross", "cpus": "0,1",
                                      "sides": [{"role": roles[0], "index": 0, "pinned": [0], "observed": [0]},
                                                {"role": roles[1], "index": 0, "pinned": [1], "observed": [1]}]},
                        "integrity": {"sent": ops, "received": ops, "lost": 0, "duplicated": 0, "corrupt": 0},
                        "extra": extra,
                    })
                benchmarks += iters
                benchmarks.append(_aggregate(iters))
    return {"schema_version": 1, "context": context(hostname=hostname), "benchmarks": benchmarks}


# --- CPU topology and its measured cache-line round trip (`ipclab topo --json`, issue 34) ---------

C2C_NS = {"smt": 20.0, "llc": 60.0, "cross_llc": 120.0, "cross_numa": 250.0}


def _relation(a, b):
    """How sysfs relates two CPUs of make_topology (the contract's relation, written out here)."""
    if a["package"] == b["package"] and a["core"] == b["core"]:
        return "smt"
    if a["llc"] == b["llc"]:
        return "llc"
    return "cross_llc" if a["node"] == b["node"] else "cross_numa"


def make_topology(cores=4, smt=True, llcs=2, packages=1, hidden=((1, 2, 25.0),), sampled_per_relation=None,
                  measure=True, seed=1):
    """A topology as `ipclab topo --json` prints it: `cores` cores over `packages` packages (one NUMA
    node each) and `llcs` last-level caches, CPU c and c + cores SMT siblings when `smt`. Round trips
    C2C_NS by sysfs relation, ±3 %; `hidden` (a, b, ns) pairs measured like SMT siblings and listed
    as such; `sampled_per_relation`: measure only the first N pairs of each relation (sampled)."""
    rng = random.Random(seed)
    n = cores * (2 if smt else 1)
    per_llc, per_pkg = cores // llcs, cores // packages
    cpus = []
    for c in range(n):
        core = c % cores
        cpus.append({"cpu": c, "package": core // per_pkg, "node": core // per_pkg, "core": core,
                     "llc": core // per_llc, "siblings": sorted({core, core + cores} if smt else {core})})
    doc = {"packages": packages, "nodes": packages, "llcs": llcs, "cores": cores, "smt": smt, "cpus": cpus}
    if not measure:
        return doc
    special = {(a, b): ns for a, b, ns in hidden}
    pairs, taken = [], {}
    for a in range(n):
        for b in range(a + 1, n):
            rel = _relation(cpus[a], cpus[b])
            if sampled_per_relation is not None and (a, b) not in special:
                if taken.get(rel, 0) >= sampled_per_relation:
                    continue
                taken[rel] = taken.get(rel, 0) + 1
            ns = special.get((a, b), C2C_NS[rel] * rng.uniform(0.97, 1.03))
            pairs.append({"a": a, "b": b, "c2c_ns": round(ns, 1), "relation": rel})
    # classes: a figure more than 1.5 times the previous one starts the next class
    bounds = sorted({p["c2c_ns"] for p in pairs})
    cls, k = {}, 0
    for i, v in enumerate(bounds):
        if i and v > 1.5 * bounds[i - 1]:
            k += 1
        cls[v] = k
    for p in pairs:
        p["class"] = cls[p["c2c_ns"]]
    doc["c2c"] = {"pairs": pairs, "sampled": sampled_per_relation is not None, "classes": k + 1,
                  "behaves_as_smt_siblings": [{"a": a, "b": b, "c2c_ns": ns} for a, b, ns in hidden]}
    return doc


def with_topology(doc, topology, allowed=None):
    """`doc` (a result) with `topology` as its context's cpu.topology and `allowed` as cpu.allowed."""
    doc["context"]["cpu"]["topology"] = topology
    if allowed is not None:
        doc["context"]["cpu"]["allowed"] = allowed
    return doc


# --- CPU matrices (`ipclab run --cpu-matrix`): one run of a benchmark per CPU pair ----------------

def _matrix_records(rng, mech, params, ns, pair, mode, topology, cpu_class=None, status="ok", error=None):
    a, b = pair
    cpus = {c["cpu"]: c for c in topology["cpus"]}
    rel = _relation(cpus[a], cpus[b])
    params = dict(params, cpus=f"{a},{b}")
    name = name_of("pingpong", mech, {k: v for k, v in params.items() if k != "cpus"}) + f"/cpus={a},{b}"
    placement = {"layout": "cross", "cpus": [a, b], "pair": [a, b], "c2c_ns": C2C_NS[rel],
                 "sides": [{"role": "ping", "index": 0, "pinned": [a], "observed": [a]},
                           {"role": "pong", "index": 0, "pinned": [b], "observed": [b]}]}
    extra = {"cpu_matrix": mode}
    if cpu_class:
        extra["cpu_class"] = cpu_class
    # the round trip grows with the distance, as the cache line's does
    spec = ("pingpong", mech, params, ns * C2C_NS[rel] / 60, 0, "rtt", 2.0, "pingpong", status, error)
    iters = iterations(spec, rng, repetitions=2, samples=60, name=name, placement=placement, extra=extra)
    return iters + [_aggregate(iters)]


def make_cpu_matrix_result(seed=1, topology=None):
    """Pingpong records of `ipclab run --cpu-matrix` on make_topology(cores=2, llcs=1) (CPUs 0-3, 0/2
    and 1/3 SMT siblings): thread and process with wait=spin on every pair (process failed on 1,3),
    thread with wait=futex on one pair per class (smt 0,2; llc 0,1), and ordinary thread wait=spin
    records over pairs 1, 2, 4 beside them."""
    rng = random.Random(seed)
    topology = topology or make_topology(cores=2, llcs=1, hidden=())
    benchmarks = []
    ids = [c["cpu"] for c in topology["cpus"]]
    every = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]]
    for mech, ns in (("thread", 400), ("process", 900)):
        for pair in every:
            failed = mech == "process" and pair == (1, 3)
            benchmarks += _matrix_records(rng, mech, {"wait": "spin", "pairs": 1}, ns, pair, "every_pair", topology,
                                          status="failed" if failed else "ok",
                                          error="pong side did not answer within 10 s" if failed else None)
    for cls, pair in (("smt", (0, 2)), ("llc", (0, 1))):
        benchmarks += _matrix_records(rng, "thread", {"wait": "futex", "pairs": 1}, 5000, pair, "per_class", topology,
                                      cpu_class=cls)
    for pairs in (1, 2, 4):
        iters = iterations(("pingpong", "thread", {"wait": "spin", "pairs": pairs, "slot_bytes": 64},
                            180 * pairs ** 0.3, 0, "rtt", 2.0, "pingpong", "ok", None), rng,
                           repetitions=2, samples=60)
        benchmarks += iters + [_aggregate(iters)]
    doc = {"schema_version": 1, "context": context(), "benchmarks": benchmarks}
    return with_topology(doc, topology, allowed=ids)


# --- scaling: the number of workers -----------------------------------------------------------------

def make_scaling_result(seed=1, allowed=(0, 1, 2, 3)):
    """Records that vary a scaling dimension: messaging mpmc over producers = consumers 1, 2, 4, 8;
    echo over reactors 1, 2, 4; servers over reactors 1, 2, 4 and threads 1, 2, 4, 8; runtime over
    pairs 1, 2, 4, 8; cpu.allowed = `allowed`."""
    rng = random.Random(seed)
    specs = []
    for mech, t in (("shm_mpmc", 300), ("posix_mq", 2600)):
        for n in (1, 2, 4, 8):
            specs.append(("messaging", mech, {"mode": "throughput", "size": 64, "producers": n, "consumers": n},
                          t / min(n, 2), 64, "one_way", 1.0 * n, None, "ok", None))
    for mech, t in (("epoll", 21000), ("io_uring", 17000)):
        for n in (1, 2, 4):
            specs.append(("echo", mech, {"size": 1024, "connections": 64, "reactors": n}, t / n ** 0.8, 2048, "rtt",
                          0.9, "echo", "ok", None))
    for n in (1, 2, 4):
        specs.append(("servers", "epoll_reactors", {"clients": 2000, "reactors": n}, 60_000 / n, 0, "session", 0.8,
                      "servers", "ok", None))
    for n in (1, 2, 4, 8):
        specs.append(("servers", "threads_mutex_accept", {"clients": 2000, "threads": n}, 90_000 / min(n, 4) ** 0.7,
                      0, "session", 0.8, "servers", "ok", None))
    for rt, t in (("ipcrt", 38), ("go", 240)):
        for n in (1, 2, 4, 8):
            specs.append(("runtime", f"channel_pairs_{rt}", {"pairs": n, "n": 131072}, t / min(n, 2), 0,
                          "batch_mean", 1.0, None, "ok", None))
    benchmarks = []
    for spec in specs:
        iters = iterations(spec, rng, repetitions=2, samples=60)
        benchmarks += iters + [_aggregate(iters)]
    doc = {"schema_version": 1, "context": context(), "benchmarks": benchmarks}
    doc["context"]["cpu"]["allowed"] = list(allowed)
    return doc
