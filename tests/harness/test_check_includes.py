"""scripts/check-includes.py: the rooms of src/core and the direction of their includes, on this
tree and on made-up trees that break each rule."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-includes.py")


def run(tree):
    return subprocess.run([sys.executable, SCRIPT, str(tree)], capture_output=True, text=True, timeout=60)


def make_tree(tmp_path, files):
    core = tmp_path / "src" / "core"
    core.mkdir(parents=True)
    (core / "README.md").write_text(textwrap.dedent("""\
        | # | room | owns |
        |--:|---|---|
        | 1 | `base/` | the bottom |
        | 2 | `top/` | the top |
        """))
    for rel, text in files.items():
        p = core / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_this_tree_keeps_every_include_within_its_room_or_below():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "includes of src/core checked" in r.stdout


def test_an_include_down_the_rooms_passes(tmp_path):
    tree = make_tree(tmp_path, {"base/a.hpp": "#pragma once\n", "top/b.cpp": '#include "core/base/a.hpp"\n'})
    r = run(tree)
    assert r.returncode == 0, r.stdout


def test_an_include_that_climbs_fails_naming_both_rooms(tmp_path):
    tree = make_tree(tmp_path, {"base/a.cpp": '#include "core/top/b.hpp"\n', "top/b.hpp": "#pragma once\n"})
    r = run(tree)
    assert r.returncode == 1
    assert "core/base/a.cpp includes core/top/b.hpp" in r.stdout and "not top/ (room 2)" in r.stdout


def test_core_never_includes_a_mechanism(tmp_path):
    tree = make_tree(tmp_path, {"top/b.cpp": '#include "mechanisms/messaging/common.hpp"\n'})
    r = run(tree)
    assert r.returncode == 1 and "core builds on nothing above it" in r.stdout


def test_a_file_outside_every_room_fails(tmp_path):
    tree = make_tree(tmp_path, {"loose.cpp": "int x;\n", "misc/c.hpp": "#pragma once\n"})
    r = run(tree)
    assert r.returncode == 1
    assert "core/loose.cpp: not in a room" in r.stdout and "core/misc/c.hpp: not in a room" in r.stdout


def test_an_include_cycle_within_a_room_fails(tmp_path):
    tree = make_tree(tmp_path, {"base/a.cpp": '#include "core/base/b.hpp"\n', "base/a.hpp": "#pragma once\n",
                                "base/b.cpp": '#include "core/base/a.hpp"\n', "base/b.hpp": "#pragma once\n"})
    r = run(tree)
    assert r.returncode == 1 and "include cycle: core/base/a -> core/base/b -> core/base/a" in r.stdout


def add_mechanisms(tree, files, readme=None):
    m = tree / "src" / "mechanisms"
    for rel, text in files.items():
        p = m / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    if readme is not None:
        (m / "README.md").write_text(readme)
    return tree


SHARED = textwrap.dedent("""\
    | shared header | what it holds | included by |
    |---|---|---|
    | `messaging/common.hpp` | the parameters | bulk, libs |
    | `go_peers.hpp` | the Go peers | echo |
    """)


def test_this_tree_crosses_suites_only_through_declared_shared_headers():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout
    assert "includes of the mechanisms checked: across suites only through shared headers" in r.stdout
    assert "  bulk: messaging/common.hpp" in r.stdout, r.stdout


def test_a_suite_may_include_its_own_and_what_is_declared_shared_with_it(tmp_path):
    tree = add_mechanisms(make_tree(tmp_path, {}), {
        "messaging/common.hpp": "#pragma once\n",
        "messaging/pipe.cpp": '#include "mechanisms/messaging/common.hpp"\n',
        "bulk/pipe.cpp": '#include "mechanisms/messaging/common.hpp"\n',
        "echo/go.cpp": '#include "mechanisms/go_peers.hpp"\n',
        "go_peers.hpp": "#pragma once\n"}, SHARED)
    r = run(tree)
    assert r.returncode == 0, r.stdout
    assert "  bulk: messaging/common.hpp\n  echo: go_peers.hpp" in r.stdout, r.stdout


def test_another_suites_header_not_declared_or_not_for_this_suite_fails(tmp_path):
    tree = add_mechanisms(make_tree(tmp_path, {}), {
        "messaging/pipe.hpp": "#pragma once\n",
        "bulk/pipe.cpp": '#include "mechanisms/messaging/pipe.hpp"\n',
        "echo/x.cpp": '#include "mechanisms/messaging/common.hpp"\n',
        "runtime/go.cpp": '#include "mechanisms/go_peers.hpp"\n'}, SHARED)
    r = run(tree)
    assert r.returncode == 1
    assert ("mechanisms/bulk/pipe.cpp includes mechanisms/messaging/pipe.hpp: another suite's code, not declared "
            "shared in src/mechanisms/README.md") in r.stdout, r.stdout
    assert "mechanisms/echo/x.cpp includes mechanisms/messaging/common.hpp: another suite's code, declared shared " \
           "with bulk, libs only" in r.stdout, r.stdout
    assert "mechanisms/runtime/go.cpp includes mechanisms/go_peers.hpp: another suite's code, declared shared " \
           "with echo only" in r.stdout, r.stdout
