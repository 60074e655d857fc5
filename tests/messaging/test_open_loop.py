"""Open-loop load (pattern=rate) end to end, held against what queueing theory says it must show.

The transport is messaging/shm_spsc with spinning sides on two CPUs (no wake-ups: its own latency
is a few microseconds), made into a single server with a deterministic service time by the
`queue` fault hook (in virtual time) or the `slow` one (a busy-wait after each receive). Then:
  - Poisson arrivals make it an M/D/1 queue: the mean wait must be Wq = rho / (2 mu (1 - rho))
    within 10% at rho 0.5 and 0.8;
  - a sender that stalls S every P shows in the corrected p99.9 as the analytic value, while the
    raw latency (from the actual send) does not see it: coordinated omission, corrected;
  - a rate above capacity is saturated (never a latency), by either rule;
  - rate=auto finds a capacity below the service rate and records the curve it walked; its bound
    is 3 x the unloaded p99 by default, stated as its basis, and an explicit slo_p99_us wins;
  - every point records its pacing floor (the pacing loop alone, before the run), ordered, and
    harness/pacing shows the floor alone;
  - bad values are usage errors (exit 2) before any work.

Run by ctest (messaging.open_loop) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q tests/messaging/test_open_loop.py
"""
import json
import math
import os
import re
import subprocess
import tempfile

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")
D_NS = 100_000  # the slow hook's busy-wait per message (~10k/s)
Q_NS = 50_000  # the queue hook's service time (20k/s; waits of 50 and 200 us at rho 0.5 and 0.8)
RING = ["messaging/shm_spsc", "-p", "wait=spin", "-p", "placement=cross", "-p", "size=64"]

needs_binary = pytest.mark.skipif(not BINARY, reason="IPCLAB_BIN is not set (ctest sets it)")
# Both sides spin: on one CPU they would take turns by time slices, and no queue model holds.
needs_two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                                    reason="needs 2 CPUs for the two spinning sides; "
                                           f"this process may use {len(os.sched_getaffinity(0))}")


def run(args, fault=None, duration=1.0, warmup=0.2):
    env = {k: v for k, v in os.environ.items() if k != "IPCLAB_FAULT"}
    if fault:
        env["IPCLAB_FAULT"] = fault
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        p = subprocess.run([BINARY, "run", *args, "--duration", str(duration), "--warmup", str(warmup),
                            "--repetitions", "1", "--json", out],
                           env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        recs = [r for r in json.load(open(out))["benchmarks"] if r["run_type"] == "iteration"]
    assert len(recs) == 1 and recs[0]["status"] == "ok", recs
    recs[0]["stderr"] = p.stderr
    return recs[0]


def consumer_lateness_ns(r):
    """The queue hook's own lateness, from its line on stderr (core/run/fault.hpp): how long after
    their virtual completion and their send, on average, the consumer got the window's messages done."""
    m = re.search(r"fault queue: (\d+) messages of the window, done (\d+) ns late on average", r["stderr"])
    assert m and int(m.group(1)) > 0, r["stderr"]
    return float(m.group(2))


def wait_idle(seconds=20):
    """Until the CPUs are 90% idle over 2 s (scripts/wait-idle.sh), at most `seconds`: work the
    machine does beside a run (a build's write-back, another test's leftovers) takes the spinning
    consumer away unseen by the sender's lateness, so a missed attempt is retried on a quiet
    machine where one can be had."""
    subprocess.run(["bash", os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "wait-idle.sh"),
                    "90", str(seconds)], timeout=seconds + 10)


def rate_run(rate, extra=(), fault=None, duration=1.0):
    return run([*RING, "-p", "pattern=rate", "-p", f"rate={rate}", *extra], fault=fault, duration=duration)


def md1_wait_ns(rho, mu):
    return rho / (2 * mu * (1 - rho)) * 1e9


@needs_binary
@needs_two_cpus
def test_poisson_arrivals_on_a_deterministic_server_wait_as_m_d_1():
    # The `queue` hook makes the consumer a single server of service time Q in virtual time, fed
    # with the messages' intended send times: message k is done at max(its intended time, k-1's
    # done) + Q, and received then (or when it arrives, if later). So mu = 1/Q exactly and, for
    # each message, its corrected latency lies between its M/D/1 wait + Q (it cannot come back
    # earlier) and that plus the sender's lateness, the consumer's (the hook's own: how long after
    # both its virtual completion and its send it got a message done) and the ring's hand-over (it
    # cannot come back later). The mean wait the harness shows is bracketed by the mean corrected
    # latency less Q, and that less the mean scheduling error, the consumer's mean lateness and the
    # hand-over; M/D/1's Wq must lie within the bracket, give or take 10%. On a quiet machine (sides
    # that keep their schedule to a few microseconds) the bracket is a few percent wide; a machine
    # that takes either side away for milliseconds widens it by exactly the lateness measured.
    mu = 1e9 / Q_NS

    def run_at(rho, duration):
        # Up to three runs for one that kept up: a loaded machine's outage late in a window can lift
        # its last quarters' latency into the backlog rule (seen once, at rho 0.05, right after a
        # build); a queue that cannot keep up saturates every run.
        saturations = []
        for _ in range(3):
            r = rate_run(round(rho * mu), ["-p", "arrivals=poisson", "-p", "queue_depth=65536"],
                         fault=f"queue:shm_spsc:{Q_NS}", duration=duration)
            if not r["extra"]["rate"]["saturated"]:
                break
            saturations.append(r["extra"]["rate"]["saturation"])
        else:
            pytest.fail(f"rho {rho}: saturated in three runs: {saturations}")
        assert r["latency_ns"]["mean"] >= r["extra"]["rate"]["raw_ns"]["mean"]
        return r["latency_ns"]["mean"], r["extra"]["rate"]["sched_error_ns"]["mean"], consumer_lateness_ns(r)

    # The hand-over (ring and receive), from a nearly idle server.
    low = 0.05
    corr, late, taken = run_at(low, 1.0)
    assert corr >= Q_NS + md1_wait_ns(low, mu) * 0.5, corr
    handover = max(0.0, corr - late - taken - Q_NS - md1_wait_ns(low, mu))
    # Up to three attempts per load, each judged whole: an outage the sender's lateness does not
    # show (the consumer's, or the hand-over's) can lift one run's bracket above theory; a wrong
    # queue or clock misses every time.
    for rho in (0.5, 0.8):
        want = md1_wait_ns(rho, mu)
        misses = []
        for _ in range(3):
            corr, late, taken = run_at(rho, 4.0)
            # The machine taking the consumer away delays the messages due meanwhile, beyond the
            # queue: the hook measures that (`taken`), as the sender's lateness is measured.
            high, lowest = corr - Q_NS, corr - Q_NS - late - taken - handover
            print(f"rho {rho}: Wq in [{lowest:.0f}, {high:.0f}] ns (sender lateness {late:.0f} ns, "
                  f"consumer {taken:.0f} ns), M/D/1 says {want:.0f} ns")
            if 0.9 * lowest <= want <= 1.1 * high:
                break
            misses.append(f"[{lowest:.0f}, {high:.0f}]")
            wait_idle()
        else:
            pytest.fail(f"rho {rho}: Wq in {', '.join(misses)} ns over three runs, M/D/1 says {want:.0f} ns")


@needs_binary
@needs_two_cpus
def test_a_periodic_sender_stall_shows_in_the_corrected_latency_not_the_raw():
    stall_ms, every_ms, rate = 10, 90, 20_000
    # A machine that takes the sender away for milliseconds of its own (this test's VM does, a few
    # times a second) can stack such an outage on an injected stall and move the p99.9 by as much:
    # up to three attempts, each judged whole; a wrong measure fails them all.
    misses = []
    for _ in range(3):
        r = rate_run("20k", ["-p", "queue_depth=4096"], fault=f"stall:shm_spsc:producer:{stall_ms}:{every_ms}")
        if r["latency_ns"] is None:  # a loaded machine kept the sender from its schedule: no figure
            misses.append(f"saturated ({r['extra']['rate']['saturation']})")
            continue
        # Stalls at every_ms, 2 every_ms, ... inside the window: each delays the messages due during
        # it by S - x (x uniform over the stall), a fraction f of all, so P(delay > x) = f (1 - x / S).
        stalls = math.floor(r["wall_s"] * 1000 / every_ms)
        f = stalls * stall_ms * 1e-3 * rate / r["ops"]
        want = stall_ms * 1e6 * (1 - 0.001 / f)
        corrected, raw = r["latency_ns"]["p999"], r["extra"]["rate"]["raw_ns"]["p999"]
        raw_max = r["extra"]["rate"]["raw_ns"]["max"]
        assert corrected > 0.9 * want, f"corrected p99.9 {corrected} ns misses the stalls (analytic {want:.0f} ns)"
        # The raw latency is from the actual send, after the stall: what is left is the ring's, and
        # the consumer's own outages. On a busy machine (a CPU hog beside it, issue 50) the consumer
        # is taken away for scheduler slices of milliseconds, which both figures carry: measured
        # with a hog on one CPU, corrected 13.3-16.8 ms and raw 4.0-7.5 ms against 9.9 analytic.
        # So the corrected figure must hold the stall in full and at most the consumer's worst
        # outage besides (the raw maximum: on an idle machine a few microseconds, so within 5% of
        # the analytic value there), and the raw figure must miss at least half of the stall.
        if 0.95 * want <= corrected <= 1.05 * want + raw_max and raw <= corrected - 0.5 * want:
            return
        misses.append(f"corrected {corrected} ns, raw {raw} ns (max {raw_max} ns)")
    pytest.fail(f"never corrected p99.9 from 0.95 x the analytic {want:.0f} ns to 1.05 x it plus the raw "
                f"maximum, with raw p99.9 at least half the stall under it: {'; '.join(misses)}")


@needs_binary
@needs_two_cpus
def test_a_rate_above_capacity_is_saturated_by_either_rule():
    fault = f"slow:shm_spsc:{D_NS}"  # ~10k/s
    # A short ring holds the sender back: it cannot send what its schedule makes due.
    held = rate_run("30k", ["-p", "queue_depth=64"], fault=fault)
    assert held["extra"]["rate"]["saturated"]
    assert "achieved" in held["extra"]["rate"]["saturation"]
    assert held["extra"]["rate"]["achieved_per_s"] < 0.5 * 30_000
    # A ring deep enough for the whole run lets the sender keep its schedule: the queue grows.
    deep = rate_run("30k", ["-p", "queue_depth=65536"], fault=fault)
    assert deep["extra"]["rate"]["saturated"]
    assert "backlog grew" in deep["extra"]["rate"]["saturation"], deep["extra"]["rate"]["saturation"]
    for r in (held, deep):
        assert r["latency_ns"] is None and r["extra"]["rate"]["raw_ns"] is None, "never a latency figure"
    # Well below capacity, neither rule fires.
    fine = rate_run("2k", ["-p", "queue_depth=64"], fault=fault)
    assert not fine["extra"]["rate"]["saturated"], fine["extra"]["rate"]
    assert fine["latency_ns"]["count"] == fine["ops"]


@needs_binary
@needs_two_cpus
def test_rate_auto_finds_a_capacity_below_the_service_rate():
    mu = 1e9 / (D_NS / 2)  # an upper bound: the hook's service time alone
    # What a busy machine holds (a CPU hog beside it, issue 50): a side that shares its CPU is taken
    # away for a scheduler slice (ms) at a time, so it serves about half as fast, and the bound
    # must stay clear of those pauses. A bound of 20 ms: well above a few slices, well below what
    # a queue past its capacity builds in a trial. With fixed arrivals (D/D/1) nothing queues below
    # the capacity, and above it a trial's backlog grows by (rate - mu) per second: one just above
    # mu still meets 20 ms in a 0.6 s trial, hence the upper bound of 1.05 mu. The lower bound is
    # what half a CPU, and a search a spoiled trial misleads, still clears: 0.15 mu (measured with
    # a hog on one CPU and builds running: 0.19-0.50 mu; idle: 0.77-0.99 mu).
    # Up to three searches, each judged whole: a trial the machine spoils (a side taken away past
    # the bound) ends a search low; a wrong search misses every time.
    found = []
    for _ in range(3):
        r = run([*RING, "-p", "pattern=rate", "-p", "rate=auto", "-p", "slo_p99_us=20000", "-p", "queue_depth=4096"],
                fault=f"slow:shm_spsc:{D_NS // 2}")
        cap = r["extra"]["capacity"]
        assert cap["slo_p99_us"] == 20000 and cap["slo_basis"] == "given"
        if 0.15 * mu < cap["capacity_per_s"] < 1.05 * mu:
            break
        found.append(cap["capacity_per_s"])
    else:
        pytest.fail(f"capacities {found} /s over three searches, outside ({0.15 * mu:.0f}, {1.05 * mu:.0f})")
    trials = cap["trials"]
    assert any(t["meets_slo"] for t in trials) and any(not t["meets_slo"] for t in trials)
    # The record is the confirming run (the last entry of the walk, full length).
    assert trials[-1]["requested_per_s"] == r["extra"]["rate"]["requested_per_s"]
    if cap["confirmed"]:
        assert cap["capacity_per_s"] == trials[-1]["requested_per_s"]
        assert r["latency_ns"]["p99"] <= 20_000_000


def assert_ordered(lat):
    assert lat["count"] > 0, lat
    assert lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"], lat


@needs_binary
@pytest.mark.parametrize("pace", ["spin", "sleep", "busy"])
def test_every_point_records_its_pacing_floor_beside_its_scheduling_error(pace):
    r = run(["messaging/pipe", "-p", "pattern=rate", "-p", "rate=5k", "-p", f"pace={pace}"], duration=0.3, warmup=0.05)
    x = r["extra"]["rate"]
    floor = x["pacing_floor"]
    assert floor["pace"] == pace and floor["rate_per_s"] == 5000 and floor["duration_s"] >= 0.1
    assert_ordered(floor["lateness_ns"])
    assert ("margin_ns" in floor) == (pace == "spin")
    if pace == "spin":  # the margin is the wake-up calibration's p99.9, measured here
        assert_ordered(floor["wakeup_ns"])
        assert floor["margin_ns"] == floor["wakeup_ns"]["p999"]
    assert isinstance(x["sched_error_over_floor"], bool)
    assert x["sched_error_ns"]["count"] > 0


@needs_binary
def test_harness_pacing_shows_the_floor_alone():
    r = run(["harness/pacing", "-p", "rate=20k", "-p", "pace=spin"], duration=0.3, warmup=0.05)
    assert r["latency_ns"]["kind"] == "sched_error"
    assert_ordered(r["latency_ns"])
    # One lateness per paced wait of the window: about the rate times the window, none skipped.
    assert 0.5 * 20_000 * r["wall_s"] <= r["latency_ns"]["count"] == r["ops"] <= 1.1 * 20_000 * r["wall_s"] + 1
    assert_ordered(r["extra"]["rate"]["pacing_floor"]["lateness_ns"])


@needs_binary
def test_rate_auto_derives_its_bound_from_the_unloaded_p99_unless_given():
    base = ["messaging/pipe", "-p", "pattern=rate", "-p", "rate=auto"]
    # The pipe's capacity on a loaded machine may be anywhere: the fault hook bounds it (~5k/s),
    # so the search is short.
    derived = run(base, fault="slow:pipe:200000", duration=0.2, warmup=0.05)["extra"]["capacity"]
    unloaded = derived["unloaded"]
    assert unloaded["rate_per_s"] <= 1000 and unloaded["p99_us"] > 0
    assert derived["slo_p99_us"] == pytest.approx(3 * unloaded["p99_us"])
    assert derived["slo_basis"].startswith("3 x unloaded p99 (")
    # Its first trial is the unloaded one, which meets the bound by construction.
    assert derived["trials"][0]["requested_per_s"] == unloaded["rate_per_s"] and derived["trials"][0]["meets_slo"]
    given = run([*base, "-p", "slo_p99_us=100000"], fault="slow:pipe:200000", duration=0.2, warmup=0.05)
    assert given["params"]["slo_p99_us"] == 100000
    cap = given["extra"]["capacity"]
    assert cap["slo_basis"] == "given" and cap["slo_p99_us"] == 100000 and cap["unloaded"] is None


@needs_binary
@pytest.mark.parametrize("args, says", [
    (["-p", "rate=0"], "rate per second"),
    (["-p", "rate=abc"], "rate per second"),
    (["-p", "rate=-5"], "rate per second"),
    (["-p", "arrivals=bursty"], "fixed|poisson"),
    (["-p", "slo_p99_us=20"], "rate=auto"),
    (["-p", "rate=auto", "-p", "slo_p99_us=fast"], "unloaded"),
    (["-p", "rate=auto", "-p", "slo_p99_us=0"], "unloaded"),
    (["-p", "pace=yield"], "spin"),
    (["-p", "size=24"], "size >= 32"),
])
def test_bad_values_are_usage_errors(args, says):
    p = subprocess.run([BINARY, "run", "messaging/pipe", "-p", "pattern=rate", *args, "--duration", "0.05"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], p.stderr


@needs_binary
@pytest.mark.parametrize("args, says", [(["-p", "rate=auto"], "rate"), (["-p", "rate=0"], "rate"),
                                        (["-p", "pace=yield"], "spin")])
def test_harness_pacing_bad_values_are_usage_errors(args, says):
    p = subprocess.run([BINARY, "run", "harness/pacing", *args, "--duration", "0.05"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], p.stderr


@needs_binary
def test_rate_parameters_without_pattern_rate_are_usage_errors():
    p = subprocess.run([BINARY, "run", "messaging/pipe", "-p", "rate=10k", "--duration", "0.05"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "add -p pattern=rate" in p.stderr, p.stderr
