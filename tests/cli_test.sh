#!/usr/bin/env bash
# CLI behaviour on bad result paths: exit 2, exactly one line on stderr that says what to do, no
# result file written, no IPC object left behind. And the good paths: list, env, exit codes.
set -u
IPCLAB=${1:?usage: cli_test.sh path/to/ipclab}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# ipclab keeps what a run makes on disk (its run folder: FIFOs, journal) in TMPDIR: a private one
# here, so that what the runs below leave can be listed exactly.
export TMPDIR="$tmp/tmpdir"
mkdir -m 700 "$TMPDIR"
fails=0; passed=0

expect_usage_error() {  # description, then the arguments
  local what=$1; shift
  "$IPCLAB" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local lines; lines=$(grep -v '^warning: ' "$tmp/err" | wc -l)
  if [ $rc -ne 2 ] || [ "$lines" -ne 1 ]; then
    echo "FAIL: $what: exit $rc, $lines stderr lines:"; cat "$tmp/err"; fails=$((fails+1))
  else
    passed=$((passed+1)); echo "ok: $what -> $(grep -v '^warning: ' "$tmp/err")"
  fi
}

# The bad-input table (options, parameters, filters, CPUs) is tests/fault/test_bad_input.py;
# here only the result-file checks.
expect_usage_error "unwritable json"          run harness/null --duration 0.01 --json /nonexistent/dir/x.json

# No result file may be written by a failed invocation.
"$IPCLAB" run messaging/pipe -p size=abc --json "$tmp/never.json" 2>/dev/null
if [ -e "$tmp/never.json" ]; then echo "FAIL: result written on usage error"; fails=$((fails+1)); else passed=$((passed+1)); fi

# Good paths.
if "$IPCLAB" list >/dev/null && "$IPCLAB" list messaging | grep -q "messaging/pipe"; then passed=$((passed+1)); else echo "FAIL: list"; fails=$((fails+1)); fi
if "$IPCLAB" env --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "warnings" in d and "limits" in d'; then passed=$((passed+1)); else echo "FAIL: env --json"; fails=$((fails+1)); fi
"$IPCLAB" run harness/null --duration 0.02 --warmup 0 --repetitions 2 --json "$tmp/r.json" --csv "$tmp/r.csv" --markdown "$tmp/r.md" >/dev/null 2>&1
rc=$?
if [ $rc -eq 0 ] && python3 -c "import json; d=json.load(open('$tmp/r.json')); assert d['schema_version']==1 and len(d['benchmarks'])==3" \
   && [ "$(wc -l <"$tmp/r.csv")" -eq 4 ] && grep -q '| `harness/null' "$tmp/r.md"; then passed=$((passed+1)); else echo "FAIL: run writes json/csv/md (rc $rc)"; fails=$((fails+1)); fi
# --csv appends under the same header.
"$IPCLAB" run harness/null --duration 0.02 --warmup 0 --repetitions 1 --csv "$tmp/r.csv" >/dev/null 2>&1
if [ "$(wc -l <"$tmp/r.csv")" -eq 5 ] && [ "$(grep -c '^name,' "$tmp/r.csv")" -eq 1 ]; then passed=$((passed+1)); else echo "FAIL: csv append"; fails=$((fails+1)); fi
# A different column set cannot be appended.
expect_usage_error "csv with other columns" run messaging/pipe --duration 0.02 --warmup 0 --repetitions 1 --csv "$tmp/r.csv"

# The console names a benchmark by its mechanism and the parameters that vary in the run: the two
# sizes asked for, not latency_sample (one value); the full names stay in the JSON.
"$IPCLAB" run messaging/pipe -p size=64,1K --duration 0.02 --warmup 0 --repetitions 1 --json "$tmp/sizes.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && grep -q '^messaging/pipe size:64 ' "$tmp/out" && grep -q '^messaging/pipe size:1K ' "$tmp/out" \
   && ! grep -q latency_sample "$tmp/out" && grep -q '"messaging/pipe/.*latency_sample:0' "$tmp/sizes.json"; then
  passed=$((passed+1))
else
  echo "FAIL: console rows name what varies (rc $rc):"; cat "$tmp/out" "$tmp/err"; fails=$((fails+1))
fi

# The report names a benchmark as the console does (one rule: output/names.cpp and the report's
# tables.short_names, the sizes' type from the registry the result carries).
if [ $rc -eq 0 ] && PYTHONPATH="$(dirname "$0")/../report" IPCLAB_BIN="$IPCLAB" python3 - "$tmp/sizes.json" "$tmp/out" <<'PY'
import sys
from ipclab_report import registry
from ipclab_report.load import load, summaries
from ipclab_report.tables import short_names
rf = load(sys.argv[1])
assert rf.context["registry"]["suites"][0]["name"] == "messaging", "the run's registry in its context"
names = sorted(short_names(summaries(rf), registry.of([rf])).values())
rows = [ln for ln in open(sys.argv[2]) if ln.startswith("messaging/")]
assert names == ["messaging/pipe size:1K", "messaging/pipe size:64"], names
assert len(rows) == 2 and all(any(r.startswith(n + " ") for r in rows) for n in names), (names, rows)
PY
then passed=$((passed+1)); else echo "FAIL: the report's short names are the console's"; fails=$((fails+1)); fi

# `list --json`: the registry the report reads — every suite of `list`, every mechanism of `list
# SUITE`, each parameter with its type, default and help, each suite with its table's columns.
"$IPCLAB" list --json >"$tmp/registry.json" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && python3 - "$tmp/registry.json" "$IPCLAB" <<'PY'
import json, subprocess, sys
reg = json.load(open(sys.argv[1]))
index = subprocess.run([sys.argv[2], "list"], capture_output=True, text=True, check=True).stdout
suites = [s["name"] for s in reg["suites"]]
listed = [ln.split()[0] for ln in index.splitlines() if ln[:1].isalpha() and not ln.startswith("`")]
assert suites == listed, (suites, listed)
for s in reg["suites"]:
    assert [c["key"] for c in s["columns"]] == [c["key"] for c in reg["columns"]] and s["columns"], s["name"]
    detail = subprocess.run([sys.argv[2], "list", s["name"]], capture_output=True, text=True, check=True).stdout
    full = sorted(ln.split()[0] for ln in detail.splitlines() if ln.startswith(s["name"] + "/"))
    assert full == sorted(f"{s['name']}/{m}" for m in s["mechanisms"]), (full, s["mechanisms"])
mechs = [f"{m['suite']}/{m['name']}" for m in reg["mechanisms"]]
assert sorted(mechs) == sorted(f"{s['name']}/{m}" for s in reg["suites"] for m in s["mechanisms"])
for m in reg["mechanisms"]:
    for p in m["params"]:
        assert p["type"] in ("int", "size", "double", "string", "bool", "rate") and isinstance(p["default"], str) \
            and p["help"], (m["name"], p)
PY
then passed=$((passed+1)); else echo "FAIL: list --json (rc $rc)"; cat "$tmp/err"; fails=$((fails+1)); fi
expect_usage_error "list --json of an unknown suite" list nosuchsuite --json

# A run whose integrity check fails exits 1 and names the benchmark and the reason.
IPCLAB_FAULT=corrupt:20 "$IPCLAB" run messaging/pipe --duration 0.05 --warmup 0 --repetitions 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "FAILED messaging/pipe/.*corrupt" "$tmp/err"; then passed=$((passed+1)); else echo "FAIL: corrupt run: exit $rc"; cat "$tmp/err"; fails=$((fails+1)); fi

# Nothing left in TMPDIR by the runs above but ipclab's (empty) state folder. (They make no kernel
# objects: tests/fault checks /dev/shm, /dev/mqueue and SysV queues for the runs that do.)
left=$(find "$TMPDIR" -mindepth 1 ! -path "$TMPDIR/ipclab-$(id -u)")
if [ -n "$left" ]; then echo "FAIL: left in TMPDIR: $left"; fails=$((fails+1)); else passed=$((passed+1)); fi

echo "cli: $passed passed, $fails failed"
[ $fails -eq 0 ]
