"""Bad input is refused up front: exit code 2, one line on stderr ("ipclab: ..." naming the fix),
nothing on stdout, nothing created in TMPDIR or in the working folder. A table of hostile command
lines, each run in its own sandbox (the `lab` fixture), and a few good ones that must still run,
so that a binary refusing everything fails here too.

    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q -p no:cacheprovider tests/fault/test_bad_input.py
"""
import json
import os
import re
import subprocess

import pytest

from conftest import BINARY, usable_nodes

ALLOWED = sorted(os.sched_getaffinity(0))
A = str(ALLOWED[0])  # a CPU this process may use
B = str(ALLOWED[1]) if len(ALLOWED) > 1 else None  # a second one, when there is one
NOT_HERE = str(next(c for c in range(1024) if c not in ALLOWED))  # a CPU number not allowed here
QUICK = ["--duration", "0.05", "--warmup", "0", "--repetitions", "1"]


ONE_NODE = len(usable_nodes()) < 2
MISSING_NODE = next(n for n in range(7, 4096) if not os.path.exists(f"/sys/devices/system/node/node{n}"))
on_one_node = pytest.mark.skipif(not ONE_NODE, reason="a machine of several NUMA nodes has a node to choose")
on_several_nodes = pytest.mark.skipif(ONE_NODE, reason="a machine of one NUMA node refuses this for that first")


def run(lab, args, timeout=60):
    """Runs ipclab with `args` (str or bytes: bytes reach argv unchanged) in the sandbox."""
    return subprocess.run([BINARY, *args], cwd=lab.work, env=lab.env(), capture_output=True,
                          timeout=timeout)


def case(id_, *args, expect=None, marks=()):
    """One bad command line; `expect` is text the error line must contain (the fix it names)."""
    return pytest.param(list(args), expect, id=id_, marks=marks)


BAD = [
    # Commands and their own arguments.
    case("no-command"),
    case("unknown-command", "frobnicate", expect="unknown command 'frobnicate'"),
    case("unknown-command-newline", b"fr\nob", expect="'fr\\nob'"),
    case("unknown-command-non-utf8", b"\xff", expect="'\\xff'"),
    case("unknown-option-before-command", "--frobnicate"),
    case("unknown-option-run", "run", "harness/null", "--frobnicate"),
    case("unknown-option-list", "list", "--frobnicate"),
    case("unknown-option-env", "env", "--frobnicate"),
    case("env-extra-argument", "env", "extra"),
    case("env-json-twice", "env", "--json", "--json", expect="--json"),
    case("list-unknown-suite", "list", "nosuchsuite", expect="unknown suite 'nosuchsuite'"),
    case("list-empty-suite", "list", "", expect="empty suite"),
    case("list-two-suites", "list", "messaging", "echo"),
    case("list-suite-escape-sequence", "list", "\x1b[31m", expect="'\\x1b[31m'"),
    case("list-suite-non-utf8", "list", b"mess\xffaging", expect="\\xff"),
    case("list-suite-mechanism", "list", "messaging/pipe", expect="unknown suite"),
    # Filters.
    case("filter-unknown-suite", "run", "nosuchsuite", expect="no benchmark matches 'nosuchsuite'"),
    case("filter-empty", "run", "", expect="empty filter"),
    case("filter-newline", "run", "harness/nu\nll", expect="'harness/nu\\nll'"),
    case("filter-trailing-newline", "run", "harness/null\n", expect="control characters"),
    case("filter-tab", "run", "harness\t", expect="control characters"),
    case("filter-carriage-return", "run", "harness/null\rmessaging", expect="\\r"),
    case("filter-escape-sequence", "run", "\x1b[2J", expect="\\x1b"),
    case("filter-delete", "run", "harness/null\x7f", expect="\\x7f"),
    case("filter-c1-next-line", "run", "harness/\u0085null", expect="\\u{0085}"),
    case("filter-line-separator", "run", "harness/\u2028null", expect="\\u{2028}"),
    case("filter-non-utf8", "run", b"\xff\xfe", expect="'\\xff\\xfe'"),
    case("filter-overlong-utf8", "run", b"harness/\xc0\xafnull", expect="\\xc0\\xaf"),
    case("filter-utf16-surrogate", "run", b"harness/\xed\xa0\x80", expect="\\xed\\xa0\\x80"),
    case("filter-truncated-utf8", "run", b"harness/\xe2\x82", expect="\\xe2\\x82"),
    case("filter-suite-prefix", "run", "messag", expect="no benchmark matches"),
    case("filter-good-and-unknown", "run", "harness/null", "nosuch", expect="'nosuch'"),
    case("filter-glob-matching-nothing", "run", "zz*", expect="'zz*'"),
    case("filter-broken-glob", "run", "[", expect="'['"),
    # --preset.
    case("preset-unknown", "run", "harness/null", "--preset", "huge", expect="--preset 'huge'"),
    case("preset-empty", "run", "harness/null", "--preset", "", expect="--preset ''"),
    case("preset-capitalised", "run", "harness/null", "--preset", "Quick", expect="quick or full"),
    case("preset-twice", "run", "harness/null", "--preset", "quick", "--preset", "full", expect="--preset"),
    case("preset-missing-value", "run", "harness/null", "--preset"),
    # --duration.
    case("duration-negative", "run", "harness/null", "--duration", "-1", expect="--duration '-1'"),
    case("duration-text", "run", "harness/null", "--duration", "abc", expect="--duration 'abc'"),
    case("duration-empty", "run", "harness/null", "--duration", "", expect="--duration ''"),
    case("duration-empty-equals", "run", "harness/null", "--duration="),
    case("duration-zero", "run", "harness/null", "--duration", "0", expect="0.001"),
    case("duration-1e-300", "run", "harness/null", "--duration", "1e-300", expect="1 ms"),
    case("duration-below-1ms", "run", "harness/null", "--duration", "0.0009", expect="0.001"),
    case("duration-nan", "run", "harness/null", "--duration", "nan", expect="--duration 'nan'"),
    case("duration-inf", "run", "harness/null", "--duration", "inf", expect="--duration 'inf'"),
    case("duration-minus-inf", "run", "harness/null", "--duration", "-inf", expect="--duration"),
    case("duration-overflows-double", "run", "harness/null", "--duration", "1e309", expect="--duration"),
    case("duration-over-an-hour", "run", "harness/null", "--duration", "3601", expect="3600"),
    case("duration-unknown-unit", "run", "harness/null", "--duration", "0.5x", expect="--duration '0.5x'"),
    case("duration-unit-alone", "run", "harness/null", "--duration", "ms", expect="--duration 'ms'"),
    case("duration-unit-over-an-hour", "run", "harness/null", "--duration", "61m", expect="3600"),
    case("duration-leading-space", "run", "harness/null", "--duration", " 0.5", expect="--duration ' 0.5'"),
    case("duration-trailing-space", "run", "harness/null", "--duration", "0.5 ", expect="--duration"),
    case("duration-hex-float", "run", "harness/null", "--duration", "0x1p-2", expect="--duration"),
    case("duration-decimal-comma", "run", "harness/null", "--duration", "0,5", expect="--duration"),
    case("duration-twice", "run", "harness/null", "--duration", "1", "--duration", "2", expect="--duration"),
    case("duration-missing-value", "run", "harness/null", "--duration"),
    # --warmup.
    case("warmup-empty", "run", "harness/null", "--warmup", "", expect="--warmup ''"),
    case("warmup-negative", "run", "harness/null", "--warmup", "-0.1", expect="--warmup"),
    case("warmup-nan", "run", "harness/null", "--warmup", "nan", expect="--warmup"),
    case("warmup-inf", "run", "harness/null", "--warmup", "inf", expect="--warmup"),
    case("warmup-over-limit", "run", "harness/null", "--warmup", "601", expect="600"),
    case("warmup-junk", "run", "harness/null", "--warmup", "0.1x", expect="--warmup"),
    # --repetitions.
    case("repetitions-empty", "run", "harness/null", "--repetitions", "", expect="--repetitions ''"),
    case("repetitions-zero", "run", "harness/null", "--repetitions", "0", expect="1 to 1000"),
    case("repetitions-negative", "run", "harness/null", "--repetitions", "-1", expect="--repetitions"),
    case("repetitions-over-limit", "run", "harness/null", "--repetitions", "1001", expect="1 to 1000"),
    case("repetitions-overflow", "run", "harness/null", "--repetitions", "99999999999999999999", expect="--repetitions"),
    case("repetitions-wraps-int", "run", "harness/null", "--repetitions", "4294967297", expect="--repetitions"),
    case("repetitions-fraction", "run", "harness/null", "--repetitions", "1.5", expect="--repetitions"),
    case("repetitions-hex", "run", "harness/null", "--repetitions", "0x10", expect="--repetitions"),
    case("repetitions-plus-sign", "run", "harness/null", "--repetitions", "+3", expect="--repetitions"),
    case("repetitions-leading-space", "run", "harness/null", "--repetitions", " 1", expect="--repetitions"),
    case("repetitions-exponent", "run", "harness/null", "--repetitions", "1e2", expect="--repetitions"),
    # --cpus.
    case("cpus-empty", "run", "harness/null", "--cpus", "", expect="--cpus is empty"),
    case("cpus-junk-range", "run", "harness/null", "--cpus", "0-x", expect="'x' is not a CPU number"),
    case("cpus-not-here", "run", "harness/null", "--cpus", NOT_HERE, expect=f"CPU {NOT_HERE} is not available"),
    case("cpus-far-away", "run", "harness/null", "--cpus", "999", expect="CPU 999 is not available"),
    case("cpus-huge-range", "run", "harness/null", "--cpus", "0-2147483647", expect="CPU 2147483647 is not available"),
    case("cpus-overflowing-number", "run", "harness/null", "--cpus", "0-99999999999999999999", expect="not a CPU number"),
    case("cpus-cpu-setsize", "run", "harness/null", "--cpus", "1024", expect="not available"),
    case("cpus-reversed-range", "run", "harness/null", "--cpus", f"{B}-{A}" if B else "3-1", expect="--cpus"),
    case("cpus-duplicate", "run", "harness/null", "--cpus", f"{A},{A}", expect=f"CPU {A} is listed twice"),
    case("cpus-duplicate-in-range", "run", "harness/null", "--cpus", f"{A},{A}-{A}", expect="listed twice"),
    case("cpus-negative", "run", "harness/null", "--cpus", "-1", expect="CPU -1 is not available"),
    case("cpus-trailing-comma", "run", "harness/null", "--cpus", f"{A},", expect="empty element"),
    case("cpus-leading-comma", "run", "harness/null", "--cpus", f",{A}", expect="empty element"),
    case("cpus-leading-space", "run", "harness/null", "--cpus", f" {A}", expect="not a CPU number"),
    case("cpus-plus-sign", "run", "harness/null", "--cpus", f"+{A}", expect="not a CPU number"),
    case("cpus-double-dash", "run", "harness/null", "--cpus", f"{A}--1", expect="not available"),
    case("cpus-hex", "run", "harness/null", "--cpus", "0x0", expect="not a CPU number"),
    case("cpus-open-range", "run", "harness/null", "--cpus", f"{A}-", expect="not a CPU number"),
    case("cpus-twice", "run", "harness/null", "--cpus", A, "--cpus", A, expect="--cpus"),
    case("cpus-control-character", "run", "harness/null", "--cpus", f"{A}\n", expect="\\n"),
    # Placements that the CPUs given cannot hold.
    case("cross-on-one-cpu", "run", "messaging/pipe", "--cpus", A, "-p", "placement=cross",
         expect="placement cross needs 2 distinct CPUs"),
    case("cross-on-the-same-cpu-twice", "run", "messaging/pipe", "--cpus", f"{A},{A}", "-p", "placement=cross",
         expect="listed twice"),
    case("c2c-default-cross-on-one-cpu", "run", "anchors/c2c", "--cpus", A, expect="nothing to run"),
    case("futex-cross-on-one-cpu", "run", "anchors/futex", "--cpus", A, "-p", "placement=same,cross",
         expect="placement cross needs 2"),
    case("pingpong-cross-on-one-cpu", "run", "pingpong/thread", "--cpus", A, "-p", "placement=cross",
         expect="placement cross needs 2"),
    case("servers-default-cross-on-one-cpu", "run", "servers/epoll_lt", "--cpus", A, expect="nothing to run"),
    # The quick preset's messaging grid is same and cross: on one CPU it keeps its same-CPU points;
    # cross asked for in so many words is refused.
    case("messaging-quick-cross-on-one-cpu", "run", "messaging/pipe", "--preset", "quick", "--cpus", A,
         "-p", "placement=cross", expect="placement cross"),
    case("placement-unknown", "run", "messaging/pipe", "-p", "placement=diagonal", expect="same|cross|unpinned"),
    case("placement-not-offered", "run", "harness/null", "-p", "placement=cross", expect="same|unpinned"),
    # -p: shape.
    case("param-without-equals", "run", "messaging/pipe", "-p", "size", expect="-p name=value"),
    case("param-empty-name", "run", "messaging/pipe", "-p", "=1", expect="-p name=value"),
    case("param-empty-value", "run", "messaging/pipe", "-p", "size=", expect="-p name=value"),
    case("param-empty-grid-element", "run", "messaging/pipe", "-p", "size=64,,1K", expect="empty value"),
    case("param-trailing-comma", "run", "messaging/pipe", "-p", "size=64,", expect="empty value"),
    case("param-leading-comma", "run", "messaging/pipe", "-p", "size=,64", expect="empty value"),
    case("param-unknown", "run", "messaging/pipe", "-p", "nosuch=1", expect="unknown parameter 'nosuch'"),
    case("param-of-another-suite", "run", "harness/null", "-p", "size=64", expect="unknown parameter 'size'"),
    case("param-name-with-newline", "run", "messaging/pipe", "-p", "si\nze=64", expect="'si\\nze'"),
    case("param-missing-value", "run", "messaging/pipe", "-p"),
    case("param-grid-too-large", "run", "messaging/pipe", "-p", "size=" + ",".join(map(str, range(1, 201))),
         "-p", "latency_sample=" + ",".join(map(str, range(1, 101))), expect="20000 combinations"),
    case("param-grid-overflowing", "run", "messaging/pipe",
         *[a for k in range(6) for a in ("-p", "size=" + ",".join(map(str, range(k * 10000 + 1, k * 10000 + 10001))))],
         expect="combinations"),
    case("param-bad-for-one-of-two-filters", "run", "harness/null", "messaging/pipe", "-p", "size=abc",
         expect="parameter 'size'"),
    # Sizes and integers (messaging/pipe size: 1..65536 bytes).
    case("size-text", "run", "messaging/pipe", "-p", "size=abc", expect="parameter 'size': 'abc'"),
    case("size-suffix-wraps-around", "run", "messaging/pipe", "-p", "size=18014398509481985K",
         expect="'18014398509481985K' is not a size"),
    case("size-over-int64", "run", "messaging/pipe", "-p", "size=9223372036854775808", expect="is not a size"),
    case("size-gib-overflow", "run", "messaging/pipe", "-p", "size=9999999999G", expect="is not a size"),
    case("size-negative", "run", "messaging/pipe", "-p", "size=-1", expect="from 1 to 65536"),
    case("size-negative-with-suffix", "run", "messaging/pipe", "-p", "size=-1K", expect="from 1 to 65536"),
    case("size-zero", "run", "messaging/pipe", "-p", "size=0", expect="from 1 to 65536"),
    case("size-over-the-limit", "run", "messaging/pipe", "-p", "size=1G", expect="from 1 to 65536"),
    case("size-just-over-the-limit", "run", "messaging/pipe", "-p", "size=65537", expect="from 1 to 65536"),
    case("size-unknown-suffix", "run", "messaging/pipe", "-p", "size=12x", expect="'12x'"),
    case("size-terabyte-suffix", "run", "messaging/pipe", "-p", "size=1T", expect="'1T'"),
    case("size-fraction", "run", "messaging/pipe", "-p", "size=1.5K", expect="'1.5K'"),
    case("size-leading-space", "run", "messaging/pipe", "-p", "size= 64", expect="' 64'"),
    case("size-trailing-space", "run", "messaging/pipe", "-p", "size=64 ", expect="'64 '"),
    case("size-plus-sign", "run", "messaging/pipe", "-p", "size=+64", expect="'+64'"),
    case("size-hex", "run", "messaging/pipe", "-p", "size=0x40", expect="'0x40'"),
    case("size-exponent", "run", "messaging/pipe", "-p", "size=1e3", expect="'1e3'"),
    case("size-double-suffix", "run", "messaging/pipe", "-p", "size=1KK", expect="'1KK'"),
    case("size-bad-in-grid", "run", "messaging/pipe", "-p", "size=64,abc", expect="'abc'"),
    case("size-non-utf8", "run", "messaging/pipe", "-p", b"size=6\xff4", expect="\\xff"),
    # messaging.
    case("messaging-mode-not-allowed", "run", "messaging/pipe", "-p", "mode=fibers", expect="threads|processes"),
    case("messaging-mode-control-character", "run", "messaging/pipe", "-p", "mode=thr\x01eads", expect="\\x01"),
    case("messaging-pattern-unknown", "run", "messaging/pipe", "-p", "pattern=broadcast", expect="throughput|roundtrip"),
    case("messaging-throughput-size-4", "run", "messaging/pipe", "-p", "pattern=throughput", "-p", "size=4",
         expect="size >= 24"),
    case("messaging-producers-zero", "run", "messaging/shm_mpmc", "-p", "producers=0", expect="from 1 to 16"),
    case("messaging-producers-over", "run", "messaging/shm_mpmc", "-p", "producers=17", expect="from 1 to 16"),
    case("messaging-roundtrip-unequal", "run", "messaging/shm_mpmc", "-p", "producers=2", "-p", "consumers=1",
         expect="producers = consumers"),
    case("messaging-latency-sample-negative", "run", "messaging/pipe", "-p", "latency_sample=-1", expect="latency_sample"),
    case("messaging-queue-depth-zero", "run", "messaging/posix_mq", "-p", "queue_depth=0", expect="queue_depth"),
    case("messaging-bool-maybe", "run", "messaging/pipe", "-p", "random=maybe", expect="a boolean"),
    case("messaging-bool-two", "run", "messaging/pipe", "-p", "nonblocking=2", expect="a boolean"),
    # pingpong.
    case("pingpong-wait-unknown", "run", "pingpong/thread", "-p", "wait=bogus", expect="adaptive_sem"),
    case("pingpong-pairs-zero", "run", "pingpong/thread", "-p", "pairs=0", expect="pairs"),
    case("pingpong-round-trips-negative", "run", "pingpong/thread", "-p", "round_trips=-5", expect="round_trips"),
    case("pingpong-spin-limit-over", "run", "pingpong/thread", "-p", "spin_limit=100000001", expect="spin_limit"),
    case("pingpong-pairs-over-max", "run", "pingpong/thread", "-p", "pairs=65", expect="from 1 to 64"),
    # memory= (where shared memory lives, core/machine/numa.hpp): refused against the machine's nodes.
    case("memory-writer-one-node", "run", "messaging/shm_spsc", "-p", "memory=writer",
         expect="nothing to choose; use memory=first_touch or memory=node:0", marks=on_one_node),
    case("memory-reader-one-node", "run", "pingpong/thread", "-p", "placement=same", "-p", "memory=reader",
         expect="memory=reader chooses among NUMA nodes", marks=on_one_node),
    case("memory-interleave-one-node", "run", "bulk/shm_bulk", "-p", "memory=interleave",
         expect="memory=interleave chooses among NUMA nodes", marks=on_one_node),
    case("memory-writer-unpinned", "run", "pingpong/thread", "-p", "memory=writer",
         expect="placement=unpinned pins no side", marks=on_several_nodes),
    case("memory-node-missing", "run", "messaging/shm_mpmc", "-p", f"memory=node:{MISSING_NODE}",
         expect=f"this machine has no NUMA node {MISSING_NODE}"),
    case("memory-node-not-a-number", "run", "messaging/shm_spsc", "-p", "memory=node:one",
         expect="node:N with N a whole number"),
    case("memory-unknown", "run", "messaging/shm_spsc", "-p", "memory=remote",
         expect="first_touch|writer|reader|interleave|node:N"),
    case("memory-no-shared-memory", "run", "messaging/pipe", "-p", "memory=node:0",
         expect="unknown parameter 'memory'"),
    case("memory-memfd-seal", "run", "bulk/memfd", "-p", "handoff=seal", "-p", "memory=node:0",
         expect="applies only with handoff=ring"),
    # echo.
    case("echo-connections-zero", "run", "echo/epoll", "-p", "connections=0", expect="connections"),
    case("echo-connections-over", "run", "echo/epoll", "-p", "connections=4097", expect="connections"),
    case("echo-size-zero", "run", "echo/epoll", "-p", "size=0", expect="parameter 'size'"),
    case("echo-client-unknown", "run", "echo/epoll", "-p", "client=threads", expect="epoll|uring"),
    case("echo-client-non-utf8", "run", "echo/epoll", "-p", b"client=ep\xffoll", expect="\\xff"),
    case("echo-uring-wait-nr-zero", "run", "echo/uring", "-p", "wait_nr=0", expect="wait_nr"),
    case("echo-peer-relative-server", "run", "echo/peer", "-p", "server=echo_server.py", expect="absolute path"),
    case("echo-rate-zero", "run", "echo/epoll", "-p", "pattern=rate", "-p", "rate=0", expect="rate"),
    case("echo-rate-non-numeric", "run", "echo/epoll", "-p", "pattern=rate", "-p", "rate=abc", expect="rate"),
    case("echo-rate-without-pattern", "run", "echo/epoll", "-p", "rate=10k", expect="pattern=rate"),
    case("echo-slo-without-auto", "run", "echo/epoll", "-p", "pattern=rate", "-p", "rate=10k", "-p",
         "slo_p99_us=50", expect="rate=auto"),
    case("echo-rate-with-client", "run", "echo/epoll", "-p", "pattern=rate", "-p", "client=uring",
         expect="pattern=closed"),
    case("echo-reactors-on-one-reactor-server", "run", "echo/asio", "-p", "reactors=2", expect="use reactors=1"),
    case("echo-reactors-over-connections", "run", "echo/epoll", "-p", "reactors=2", "-p", "connections=1",
         expect="connections >= 2"),
    case("echo-reactors-over", "run", "echo/epoll", "-p", "reactors=33", expect="reactors"),
    # servers.
    case("servers-concurrency-zero", "run", "servers/epoll_lt", "-p", "concurrency=0", expect="concurrency"),
    case("servers-connect-timeout-huge", "run", "servers/epoll_lt", "-p", "connect_timeout_ms=99999999999999999",
         expect="from 1 to 3600000"),
    case("servers-session-timeout-zero", "run", "servers/epoll_lt", "-p", "session_timeout_ms=0",
         expect="session_timeout_ms"),
    case("servers-backlog-negative", "run", "servers/epoll_lt", "-p", "backlog=-1", expect="backlog"),
    case("servers-threads-zero", "run", "servers/threads_mutex_accept", "-p", "threads=0", expect="threads"),
    case("servers-reactors-on-one-reactor-model", "run", "servers/epoll_lt", "-p", "reactors=2",
         expect="use reactors=1"),
    case("servers-reactors-by-class", "run", "servers/epoll_reuseport", "-p", "reactors=2", "-p", "placement=smt",
         expect="placement=cross, same or unpinned"),
    case("servers-reactors-zero", "run", "servers/epoll_reuseport", "-p", "reactors=0", expect="reactors"),
    case("servers-reactors-over", "run", "servers/epoll_reuseport", "-p", "reactors=257", expect="reactors"),
    # fileio (refused while planning, before any test file is made).
    case("fileio-qd-zero", "run", "fileio/psync", "-p", "qd=0", expect="from 1 to 128"),
    case("fileio-qd-over", "run", "fileio/psync", "-p", "qd=129", expect="from 1 to 128"),
    case("fileio-pattern-unknown", "run", "fileio/psync", "-p", "pattern=backwards", expect="seq|rand"),
    case("fileio-file-size-below-minimum", "run", "fileio/psync", "-p", "file_size=1K", expect="file_size"),
    case("fileio-file-size-over", "run", "fileio/psync", "-p", "file_size=2048G", expect="file_size"),
    case("fileio-variant-unknown", "run", "fileio/ipcrt", "-p", "variant=bogus", expect="variant"),
    case("fileio-cache-unknown", "run", "fileio/psync", "-p", "cache=cold", expect="drop|warm"),
    # runtime.
    case("runtime-n-zero", "run", "runtime/channel_ipcrt", "-p", "n=0", expect="parameter 'n'"),
    case("runtime-n-over", "run", "runtime/channel_ipcrt", "-p", "n=2147483648000", expect="parameter 'n'"),
    case("runtime-capacity-negative", "run", "runtime/channel_ipcrt", "-p", "capacity=-1", expect="capacity"),
    case("runtime-pairs-zero", "run", "runtime/channel_pairs_ipcrt", "-p", "pairs=0", expect="pairs"),
    case("runtime-drive-unknown", "run", "runtime/switch_asio", "-p", "drive=detached",
         expect="use one of block_on|spawned"),
    case("runtime-tasks-zero", "run", "runtime/switch_many_asio", "-p", "tasks=0", expect="tasks"),
    case("runtime-tasks-over-n", "run", "runtime/switch_many_asio", "-p", "n=10", "-p", "tasks=64",
         expect="pick tasks <= n"),
    # cachecalc.
    case("cachecalc-delay-negative", "run", "cachecalc/serial", "-p", "delay_us=-1", expect="delay_us"),
    case("cachecalc-delay-over", "run", "cachecalc/serial", "-p", "delay_us=1000001", expect="delay_us"),
    case("cachecalc-idle-poll-over", "run", "cachecalc/sharded", "-p", "idle_poll_us=100001", expect="idle_poll_us"),
    case("cachecalc-param-of-another-mechanism", "run", "cachecalc/calc_only", "-p", "delay_us=8",
         expect="unknown parameter 'delay_us'"),
    case("cachecalc-calc-unknown", "run", "cachecalc/calc_only", "-p", "calc=fast", expect="reference|lean"),
    case("cachecalc-timer-in-plain-threads", "run", "cachecalc/std_mutex", "-p", "delay_kind=timer",
         expect="devzero|sleep"),
    case("cachecalc-blocking-delay-on-one-thread", "run", "cachecalc/ipcrt", "-p", "delay_kind=devzero",
         expect="use one of timer"),
    case("cachecalc-pool-unknown", "run", "cachecalc/threadpool", "-p", "pool=forever",
         expect="per_iteration|per_run"),
    # --interleave and its seed.
    case("seed-without-interleave", "run", "harness/null", *QUICK, "--seed", "7", expect="add --interleave"),
    case("seed-not-a-number", "run", "harness/null", *QUICK, "--interleave", "--seed", "x", expect="--seed 'x'"),
    case("seed-negative", "run", "harness/null", *QUICK, "--interleave", "--seed", "-1", expect="--seed '-1'"),
    case("seed-empty", "run", "harness/null", *QUICK, "--interleave", "--seed", "", expect="--seed ''"),
    case("interleave-twice", "run", "harness/null", *QUICK, "--interleave", "--interleave"),
    # --repetitions auto and its bounds.
    case("repetitions-auto-typo", "run", "harness/null", "--repetitions", "Auto", expect="or auto"),
    case("ci-target-without-auto", "run", "harness/null", *QUICK, "--ci-target", "5",
         expect="add --repetitions auto"),
    case("max-repetitions-without-auto", "run", "harness/null", *QUICK, "--max-repetitions", "9",
         expect="add --repetitions auto"),
    case("ci-target-zero", "run", "harness/null", "--repetitions", "auto", "--ci-target", "0",
         expect="--ci-target '0'"),
    case("ci-target-negative", "run", "harness/null", "--repetitions", "auto", "--ci-target", "-2",
         expect="--ci-target '-2'"),
    case("ci-target-nan", "run", "harness/null", "--repetitions", "auto", "--ci-target", "nan",
         expect="--ci-target 'nan'"),
    case("ci-target-over-100", "run", "harness/null", "--repetitions", "auto", "--ci-target", "101",
         expect="up to 100"),
    case("max-repetitions-below-minimum", "run", "harness/null", "--repetitions", "auto", "--max-repetitions",
         "2", expect="from 5 to 1000"),
    case("max-repetitions-fraction", "run", "harness/null", "--repetitions", "auto", "--max-repetitions",
         "7.5", expect="--max-repetitions '7.5'"),
    # Result paths (refused before the run, so no result is lost after it).
    case("json-empty", "run", "harness/null", *QUICK, "--json", "", expect="--json needs a file name"),
    case("csv-empty", "run", "harness/null", *QUICK, "--csv", "", expect="--csv needs a file name"),
    case("markdown-empty", "run", "harness/null", *QUICK, "--markdown", "", expect="--markdown needs a file name"),
    case("out-empty", "run", "harness/null", *QUICK, "--out", "", expect="--out needs a folder name"),
    case("json-folder-missing", "run", "harness/null", *QUICK, "--json", "/nonexistent/r.json", expect="create it first"),
    case("json-names-a-folder", "run", "harness/null", *QUICK, "--json", ".", expect="names a folder"),
    case("json-special-file", "run", "harness/null", *QUICK, "--json", "/dev/null", expect="not a regular file"),
    case("csv-special-file", "run", "harness/null", *QUICK, "--csv", "/dev/zero", expect="not a regular file"),
    case("json-non-utf8", "run", "harness/null", *QUICK, "--json", b"r\xff.json", expect="not plain UTF-8"),
    case("json-newline", "run", "harness/null", *QUICK, "--json", "r\n.json", expect="not plain UTF-8"),
    case("markdown-escape-sequence", "run", "harness/null", *QUICK, "--markdown", "\x1b[2Jr.md", expect="plain UTF-8"),
    case("out-is-a-file", "run", "harness/null", *QUICK, "--out", "/dev/null", expect="not a folder"),
    case("out-parent-missing", "run", "harness/null", *QUICK, "--out", "/nonexistent/out", expect="create it first"),
    case("out-non-utf8", "run", "harness/null", *QUICK, "--out", b"out\xfe", expect="plain UTF-8"),
    case("fileio-dir-missing", "run", "fileio/psync", "-p", "dir=/nonexistent/dir", expect="not an existing folder"),
    case("fileio-dir-is-a-file", "run", "fileio/psync", "-p", "dir=/etc/hostname", expect="not an existing folder"),
    case("fileio-file-size-not-64k", "run", "fileio/psync", "-p", "file_size=100K", expect="multiple of 64 KiB"),
    case("fileio-direct-on-tmpfs", "run", "fileio/libaio", "-p", "dir=/dev/shm", expect="tmpfs"),
    # --antagonist (docs/noise.md; its parser's every error: tests/harness/antagonist_test.cpp).
    case("antagonist-unknown-kind", "run", "harness/null", *QUICK, "--antagonist", "disk", expect="unknown KIND 'disk'"),
    case("antagonist-unknown-where", "run", "harness/null", *QUICK, "--antagonist", "cpu@far",
         expect="unknown WHERE 'far'"),
    case("antagonist-level-over", "run", "harness/null", *QUICK, "--antagonist", "cpu:200", expect="from 1 to 100"),
    case("antagonist-level-of-a-kind-without", "run", "harness/null", *QUICK, "--antagonist", "membw:2",
         expect="membw takes no LEVEL"),
    case("antagonist-with-remote", "run", "messaging/tcp", "--remote", "h", "--antagonist", "cpu",
         expect="drop --antagonist"),
    # --remote and its companions (docs/remote.md): refused before ssh is started.
    case("remote-ssh-option-alone", "run", "messaging/tcp", "--ssh-option", "-p 2222", expect="add --remote"),
    case("remote-ipclab-alone", "run", "messaging/tcp", "--remote-ipclab", "/opt/ipclab", expect="--remote-ipclab applies"),
    case("remote-address-alone", "run", "messaging/tcp", "--remote-address", "10.0.0.2", expect="--remote-address applies"),
    case("remote-role-alone", "run", "echo/epoll", "--remote-role", "client", expect="--remote-role applies"),
    case("remote-role-unknown", "run", "echo/epoll", "--remote", "h", "--remote-role", "both", expect="server"),
    case("remote-role-client-of-messaging", "run", "messaging/tcp", "-p", "pattern=roundtrip", "--remote", "h",
         "--remote-role", "client", expect="drop --remote-role"),
    case("remote-empty-host", "run", "messaging/tcp", "-p", "pattern=roundtrip", "--remote", "", expect="--remote ''"),
    case("remote-host-like-an-option", "run", "messaging/tcp", "-p", "pattern=roundtrip", "--remote",
         "-oProxyCommand=touch x", expect="give a host"),
    case("remote-address-not-ipv4", "run", "messaging/tcp", "-p", "pattern=roundtrip", "--remote", "h",
         "--remote-address", "h2", expect="IPv4"),
    case("remote-address-unspecified", "run", "messaging/tcp", "-p", "pattern=roundtrip", "--remote", "h",
         "--remote-address", "0.0.0.0", expect="an unspecified address"),
    case("remote-address-loopback", "run", "messaging/tcp", "-p", "pattern=roundtrip", "--remote", "h",
         "--remote-address", "127.0.0.1", expect="a loopback address"),
    case("remote-address-multicast", "run", "messaging/tcp", "-p", "pattern=roundtrip", "--remote", "h",
         "--remote-address", "224.0.0.1", expect="a multicast address"),
    case("remote-address-broadcast", "run", "messaging/tcp", "-p", "pattern=roundtrip", "--remote", "h",
         "--remote-address", "255.255.255.255", expect="a broadcast address"),
    case("remote-cpu-matrix", "run", "messaging/tcp", "-p", "pattern=roundtrip", "--remote", "h",
         "--cpu-matrix", "every", expect="drop --cpu-matrix"),
    case("remote-empty-ssh-option", "run", "messaging/tcp", "-p", "pattern=roundtrip", "--remote", "h",
         "--ssh-option", " ", expect="--ssh-option ''"),
    case("remote-mechanism-cannot-cross", "run", "messaging/pipe", "-p", "pattern=roundtrip", "--remote", "h",
         expect="cannot cross hosts"),
    case("remote-processes-not-yet", "run", "messaging/udp", "-p", "pattern=rate", "-p", "rate=1000", "-p",
         "mode=processes", "--remote", "h", expect="mode=threads"),
    case("remote-reservoir-not-there", "run", "messaging/udp", "-p", "pattern=throughput", "-p",
         "latency_reservoir=100", "--remote", "h", expect="latency_reservoir=0"),
    case("remote-processes", "run", "messaging/tcp", "-p", "pattern=throughput", "-p", "mode=processes",
         "--remote", "h", expect="mode=threads"),
    case("remote-echo-asio-not-yet", "run", "echo/asio", "-p", "pattern=rate", "-p", "rate=1000", "--remote", "h",
         expect="cannot cross hosts"),
    # An option's value after '=' left empty: never the next argument taken as its value.
    case("json-equals-empty", "run", "--json=", "messaging/pipe", expect="--json has an empty value"),
    case("budget-equals-empty", "run", "harness/null", "--budget=", "--dry-run", expect="--budget has an empty value"),
    case("out-equals-empty-last", "run", "harness/null", *QUICK, "--out=", expect="--out has an empty value"),
    case("advise-rate-equals-empty", "advise", "--rate=", "--size", "64", expect="--rate has an empty value"),
    # advise: the bound it is over, named.
    case("advise-rate-over-the-bound", "advise", "--rate", "1e12", expect="--rate '1e12': at most 100M"),
    # anchors.
    case("anchors-latency-sample-negative", "run", "anchors/c2c", "-p", "latency_sample=-1", expect="latency_sample"),
]


def lines_of(stderr: bytes):
    return [l for l in stderr.decode("utf-8", "replace").splitlines() if not l.startswith("warning: ")]


@pytest.mark.parametrize("args, expect", BAD)
def test_bad_input_is_refused_up_front(lab, args, expect):
    r = run(lab, args)
    err = lines_of(r.stderr)
    assert r.returncode == 2, (r.returncode, err)
    assert len(err) == 1, err
    assert err[0].startswith("ipclab: "), err
    # Escaped, not raw: the message is printable text whatever the input held.
    assert err[0].isprintable() and "\ufffd" not in err[0], err
    if expect is not None:
        assert expect in err[0], err
    assert r.stdout == b"", r.stdout[:500]
    assert lab.leftovers() == []
    assert sorted(os.listdir(lab.work)) == []


def test_the_table_is_large_and_its_cases_distinct():
    ids = [p.id for p in BAD]
    assert len(ids) == len(set(ids))
    assert len({tuple(map(repr, p.values[0])) for p in BAD}) == len(BAD)
    assert len(BAD) >= 100


# Good input that must still run: the checks above refuse bad input, not everything.
GOOD = [
    pytest.param(["run", "harness/null", *QUICK], id="null"),
    pytest.param(["run", "harness/null", *QUICK, "--cpus", A], id="null-one-cpu"),
    pytest.param(["run", "harness/null", *QUICK, "--cpus", f"{A}-{A}"], id="null-cpu-range"),
    pytest.param(["run", "harness/null", "-p", "placement=same,unpinned", *QUICK], id="null-grid"),
    pytest.param(["run", "messaging/pipe", "-p", "size=1K", "-p", "pattern=roundtrip", *QUICK], id="pipe-size-suffix"),
    pytest.param(["run", "messaging/pipe", "-p", "size=64K", *QUICK], id="pipe-size-at-the-limit"),
    pytest.param(["run", "echo/epoll", "-p", "pattern=rate", "-p", "rate=2k,1500", "-p", "size=64", *QUICK],
                 id="echo-rate-grid"),
    pytest.param(["run", "echo/epoll", "-p", "reactors=2", *QUICK], id="echo-reactors-two"),
    pytest.param(["run", "messaging/shm_spsc", "-p", f"memory=first_touch,node:{usable_nodes()[0]}", *QUICK],
                 id="shm-memory-first-touch-and-a-node-here"),
] + ([pytest.param(["run", "messaging/pipe", "-p", "placement=cross", "--cpus", f"{A},{B}", *QUICK],
                   id="pipe-cross-on-two-cpus"),
      pytest.param(["run", "servers/epoll_reuseport", "-p", "reactors=2", "-p", "concurrency=100", "--cpus", f"{A},{B}",
                    *QUICK], id="servers-reactors-two")] if B else [])


@pytest.mark.parametrize("args", GOOD)
def test_good_input_runs(lab, args):
    r = run(lab, args)
    assert r.returncode == 0, lines_of(r.stderr)
    # A row's status is "ok", with what casts doubt on it after (a CI, flags): "ok ±1.2%, non-steady".
    rows = [l for l in r.stdout.decode().splitlines() if re.search(r"  ok( ±[0-9.]+%)?(, .*)?$", l)]
    assert rows, r.stdout.decode()


def test_the_old_pattern_name_runs_as_roundtrip(lab):
    # pattern=pingpong was the round trips' name before the pingpong suite took it: still
    # accepted, and recorded under the new name, so that old command lines keep working.
    r = run(lab, ["run", "messaging/pipe", "-p", "pattern=pingpong", *QUICK, "--json", "r.json"])
    assert r.returncode == 0, lines_of(r.stderr)
    records = json.loads((lab.work / "r.json").read_text())["benchmarks"]
    assert records
    for b in records:
        assert b["params"]["pattern"] == "roundtrip", b["params"]
        assert "/pattern:roundtrip/" in b["name"], b["name"]
        assert "pingpong" not in b["name"], b["name"]


def test_good_input_at_the_bounds_is_not_a_usage_error(lab):
    # 1 ms is the shortest duration; a run that short may find no whole batch (exit 1), but it runs.
    r = run(lab, ["run", "harness/null", "--duration", "0.001", "--warmup", "0", "--repetitions", "1"])
    assert r.returncode in (0, 1), lines_of(r.stderr)
    assert b"harness/null" in r.stdout


@pytest.mark.parametrize("args", [["list"], ["list", "messaging"], ["env"], ["env", "--json"]],
                         ids=["list", "list-suite", "env", "env-json"])
def test_list_and_env_still_answer(lab, args):
    r = run(lab, args)
    assert r.returncode == 0, lines_of(r.stderr)
    assert r.stdout


def test_list_is_an_index_and_list_suite_the_detail(lab):
    index = run(lab, ["list"]).stdout.decode().splitlines()
    suites = [l.split()[0] for l in index if l and not l.startswith(" ") and not l.startswith("`")]
    for want in ("messaging", "pingpong", "servers", "echo", "runtime", "fileio", "libs", "bulk", "anchors"):
        assert want in suites, index
    assert len(index) < 80, len(index)  # an index, not every parameter
    assert not any(re.search(r"-p \w+=", l) for l in index), index  # no parameter lines
    assert "ipclab list SUITE" in index[-1], index[-1]
    detail = run(lab, ["list", "messaging"]).stdout.decode()
    assert "messaging/pipe" in detail and "-p size=" in detail, detail[:500]


def test_env_is_a_table_a_person_reads(lab):
    # Words, not JSON: no braces, brackets or quotes; a row per label, continuation lines indented
    # under the values; the topology with its measured round trip.
    out = run(lab, ["env"]).stdout.decode()
    lines = out.splitlines()
    rows = [l for l in lines if not l.startswith("warning:")]
    assert not any(c in out for c in '{}[]"'), out
    labels = [l[:13].strip() for l in rows if not l.startswith(" ")]
    for want in ("CPU", "Topology", "Caches", "Load average", "Limits", "io_uring", "Libraries", "Build"):
        assert want in labels, labels
    assert all(l.startswith(" " * 13) for l in rows if l.startswith(" ")), rows
    topo = next(l for l in rows if l.startswith("Topology"))
    assert "package" in topo, topo
    if len(os.sched_getaffinity(0)) > 1:
        assert "cache-line round trip" in out and " ns " in out, out
