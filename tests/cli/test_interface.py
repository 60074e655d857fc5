"""The interface a person types at (issue 52): `--version` says what was built and how, every
`--help` fits the terminal and shows examples, every option of time reads one syntax, and
`list SUITE` says each parameter once."""
import json
import os
import re
import subprocess
import sys

import pytest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ipclab_fixture import ipclab_command  # noqa: E402,F401  (the fixture: run ipclab in a sandbox)


@pytest.fixture
def lab(ipclab_command):
    return ipclab_command


def test_version_names_the_build(lab):
    r = lab("--version")
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert lab("version").stdout == r.stdout
    fields = dict(re.match(r"(\w[\w ]*?)\s{2,}(.*)", l).groups() for l in r.stdout.splitlines()[1:])
    assert re.fullmatch(r"ipclab \d+\.\d+\.\d+", r.stdout.splitlines()[0]), r.stdout
    assert set(fields) == {"commit", "build type", "compiler", "flags"}, r.stdout
    # The values CMake configured (tests/CMakeLists.txt passes them), and the commit of this tree.
    assert fields["build type"] == os.environ.get("IPCLAB_EXPECT_BUILD_TYPE", fields["build type"])
    assert fields["compiler"] == os.environ.get("IPCLAB_EXPECT_COMPILER", fields["compiler"])
    for flag in os.environ.get("IPCLAB_EXPECT_FLAGS", "").split():
        assert flag in fields["flags"].split(), (flag, fields["flags"])
    # A commit of this repository (the one built from: a binary built before the last commit names
    # an older one), "-dirty" when the tree had changes, or "unknown" outside a git checkout.
    assert re.fullmatch(r"[0-9a-f]{12}(-dirty)?|unknown", fields["commit"]), fields["commit"]
    inside = subprocess.run(["git", "-C", SOURCE, "rev-parse", "HEAD"], capture_output=True).returncode == 0
    if inside:
        sha = fields["commit"].split("-")[0]
        assert subprocess.run(["git", "-C", SOURCE, "cat-file", "-e", f"{sha}^{{commit}}"]).returncode == 0, sha


COMMANDS = [[], ["run"], ["advise"], ["list"], ["env"], ["topo"], ["version"], ["report"], ["compare"], ["ab"],
            ["history"]]
WITH_EXAMPLES = [[], ["run"], ["advise"], ["list"], ["report"], ["compare"], ["ab"], ["history"]]


@pytest.mark.parametrize("columns", [None, 60, 100])
def test_every_help_fits_the_terminal(lab, columns):
    width = columns or 80  # not a terminal, no COLUMNS: 80
    for cmd in COMMANDS:
        r = lab(*cmd, "--help", columns=columns)
        assert r.returncode == 0, (cmd, r.stderr)
        long = [l for l in r.stdout.splitlines() if len(l) > width]
        assert not long, (cmd, width, long)
        if cmd in WITH_EXAMPLES:
            assert re.search(r"^Examples:\n  ipclab ", r.stdout, re.M), (cmd, r.stdout)
            assert re.search(r"^  ipclab " + (cmd[0] if cmd else r"\w+"), r.stdout, re.M), (cmd, r.stdout)


def test_run_help_lists_every_option_whole(lab):
    # Wrapping moves words to the next line, never drops them.
    narrow = " ".join(lab("run", "--help", columns=60).stdout.split())
    wide = " ".join(lab("run", "--help", columns=400).stdout.split())
    assert narrow == wide


def budget_line(r):
    return [l for l in r.stderr.splitlines() if l.startswith("budget ")]


@pytest.mark.parametrize("same", [["60", "60s", "1m"], ["90", "90s", "1.5m"], ["3600", "60m", "1h"]])
def test_run_budget_reads_seconds_with_or_without_a_unit(lab, same):
    seen = []
    for value in same:
        r = lab("run", "harness/null", "--budget", value, "--dry-run")
        assert r.returncode == 0, (value, r.stderr)
        seen.append(re.sub(r"^budget \S+", "budget", r.stdout, flags=re.M))
    assert seen[0] == seen[1] == seen[2]


def test_duration_and_warmup_read_the_same_syntax(lab):
    plans = []
    for d, w in (("0.25", "0.1"), ("250ms", "100ms"), ("0.25s", "0.1s")):
        r = lab("run", "harness/null", "--duration", d, "--warmup", w, "--repetitions", "1", "--plan")
        assert r.returncode == 0, r.stderr
        plans.append([json.loads(l)["estimate_s"] for l in r.stdout.splitlines()])
    assert plans[0] == plans[1] == plans[2] and plans[0][0] == pytest.approx(0.25 + 0.1 + 0.05)


@pytest.mark.parametrize("bare,unit", [("2", "2s"), ("3", "3s")])
def test_advise_budget_reads_the_same_syntax_and_names_the_least_it_needs(lab, bare, unit):
    # Too short for every transport: refused before any work, the same way however it is written,
    # naming the budget that would do (not a syntax error: the help's range and the check agree).
    a, b = lab("advise", "--budget", bare), lab("advise", "--budget", unit)
    assert a.returncode == b.returncode == 2, (a.stderr, b.stderr)
    err = [l for l in a.stderr.splitlines() if not l.startswith("warning: ")]
    assert len(err) == 1 and re.match(rf"ipclab: --budget {unit}: \d+ candidates x 3 repetitions need at least "
                                      r"(\d+)s; give --budget \1s or more", err[0]), err
    assert a.stderr == b.stderr


@pytest.mark.parametrize("value", ["5x", "m", "2h", "none", "0.5"])
def test_advise_budget_out_of_syntax_or_range_is_refused(lab, value):
    r = lab("advise", "--budget", value)
    err = [l for l in r.stderr.splitlines() if not l.startswith("warning: ")]
    assert r.returncode == 2 and len(err) == 1, err
    assert err[0].startswith(f"ipclab: --budget '{value}': give a time from 1s to 1h") and "5m" in err[0], err


def test_list_suite_says_each_line_once(lab):
    registry = json.loads(lab("list", "--json").stdout)
    for suite in registry["suites"]:
        out = lab("list", suite["name"]).stdout
        # Its items: a mechanism's line, its help, or a parameter (-p) with the lines that
        # continue it; none twice (a parameter several mechanisms take is said once, naming them).
        items, kinds = [], []
        for line in out.splitlines():
            kind = ("param" if line.startswith("  -p ") else "head" if not line.startswith(" ")
                    else "help" if kinds and kinds[-1] == "head" and not line.startswith(" " * 5) else "more")
            if kind == "more" and items:
                items[-1] += " " + line.strip()
            else:
                items.append(line)
                kinds.append(kind)
        items = [" ".join(i.split()) for i in items if i.strip()]
        repeated = {i for i in items if items.count(i) > 1}
        assert not repeated, (suite["name"], sorted(repeated)[:5])
        # Every mechanism is listed, and every parameter of each appears: its own under it, or in
        # the shared list naming it (every mechanism, all but some, or only some).
        text = " ".join(out.split())
        for m in (m for m in registry["mechanisms"] if m["suite"] == suite["name"]):
            assert re.search(rf"^{suite['name']}/{m['name']}  \[", out, re.M), m["name"]
            for p in m["params"]:
                assert f"-p {p['name']}={p['default']}" in text, (m["name"], p["name"])


@pytest.mark.parametrize("verb", ["report", "compare", "ab", "history", "agree"])
def test_the_python_commands_get_every_argument_as_typed(lab, tmp_path, monkeypatch, verb):
    """report, compare, ab, history and agree live in the Python package report/: ipclab lists each
    in its help and execs `python -m ipclab_report VERB` with every argument as typed (--help and
    options ipclab does not know included), naming itself in IPCLAB_BIN; the exit code is Python's."""
    assert re.search(rf"^  {verb}\s+\S", lab("--help", columns=200).stdout, re.M), verb
    fake = tmp_path / "fake-python"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" "IPCLAB_BIN=$IPCLAB_BIN"\nexit 3\n')
    fake.chmod(0o755)
    monkeypatch.setenv("IPCLAB_PYTHON", str(fake))
    r = lab(verb, "--help", "--no-such-option", "a b")
    assert r.returncode == 3 and not r.stderr, r.stderr
    binary = os.path.realpath(os.environ["IPCLAB_BIN"])
    assert r.stdout.splitlines() == ["-m", "ipclab_report", verb, "--help", "--no-such-option", "a b",
                                     f"IPCLAB_BIN={binary}"], r.stdout
