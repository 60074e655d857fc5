"""scripts/check-comment-paths.py: every path a comment names exists, on this tree and on made-up
trees (a git repository each, since the check reads the tracked files)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-comment-paths.py")


def run(tree):
    return subprocess.run([sys.executable, SCRIPT, str(tree)], capture_output=True, text=True, timeout=120)


def make_repo(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    return tmp_path


def test_this_tree_names_only_paths_that_exist():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_moved_room_is_named_with_file_and_line(tmp_path):
    repo = make_repo(tmp_path, {
        "src/core/plan/estimate.hpp": "#pragma once\n",
        "docs/methodology.md": "",
        "src/cli/run.cpp": "// the model (core/plan/estimate), docs/methodology.md\n"
                           "int x;  // was core/estimate\n"
                           "/* a block that names\n   core/runner.hpp as it was */\n",
        "tests/t.py": 's = "#include core/gone.hpp"  # a string is no comment\n# scripts/gone.sh\n',
        "scripts/s.sh": "# runtime/switch_ipcrt is a benchmark, runtime/gone.cpp a file\n",
    })
    r = run(repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "scripts/s.sh:1: a comment names runtime/gone.cpp, which does not exist",
        "src/cli/run.cpp:2: a comment names core/estimate, which does not exist",
        "src/cli/run.cpp:4: a comment names core/runner.hpp, which does not exist",
        "tests/t.py:2: a comment names scripts/gone.sh, which does not exist",
    ], r.stdout
    assert "4 stale path(s)" in r.stderr
