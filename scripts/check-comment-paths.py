#!/usr/bin/env python3
"""Every path a comment names exists: the tree's comments point readers at files and rooms
(`core/plan/estimate.hpp`, `docs/methodology.md`), and a room that moved leaves them pointing at
nothing. Reads the comments of the tracked C++, Rust, Go, Python, shell and CMake files and checks
each path that starts with a folder of this repository (src/, core/, mechanisms/, cli/, docs/,
tests/, scripts/, report/, runtime/, peers/): relative to the repository, or to src/ for core/,
mechanisms/ and cli/ (as the includes name them). `runtime/` and `peers/` name suites too
(`runtime/switch_ipcrt` is a benchmark), so under them only a path with a file's extension is a
path. A module may be named without its extension (`core/plan/estimate`). A path with a placeholder (`docs/results/<suite>.md`, `*`) is checked up to it.

Usage: scripts/check-comment-paths.py [ROOT]   (exit 1 with one line per stale path)
Test: core.comment_paths (tests/CMakeLists.txt), and tests/harness/test_check_comment_paths.py.
"""
import io
import re
import subprocess
import tokenize
import sys
from pathlib import Path

FOLDERS = ("src/", "core/", "mechanisms/", "cli/", "docs/", "tests/", "scripts/", "report/", "runtime/", "peers/")
UNDER_SRC = ("core/", "mechanisms/", "cli/")
SUITE_NAMES_TOO = ("runtime/", "peers/")
PATH = re.compile(r"(?<![\w./<-])((?:" + "|".join(re.escape(f) for f in FOLDERS) + r")[\w./-]*[\w/])")
SLASH_COMMENT = (".cpp", ".hpp", ".h", ".rs", ".go")
HASH_COMMENT = (".py", ".sh", ".cmake")


def comments(path: Path, text: str):
    """(line number, comment text) of each line that holds a comment. C-like files: what follows
    `//`, and the lines of a `/* */` block; Python: its comment tokens; shell and CMake: what follows
    `#` (a `#` inside a string is taken for a comment too, which at worst checks a path that is not
    in one)."""
    if path.suffix == ".py":  # Python's own tokenizer: a `#` inside a string is no comment
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT:
                    yield tok.start[0], tok.string
        except (tokenize.TokenError, SyntaxError):
            pass
        return
    slash = path.suffix in SLASH_COMMENT
    in_block = False
    for n, line in enumerate(text.splitlines(), 1):
        if slash:
            if in_block:
                yield n, line
                in_block = "*/" not in line
                continue
            if "/*" in line and "*/" not in line.split("/*", 1)[1]:
                in_block = True
                yield n, line.split("/*", 1)[1]
                continue
            if "//" in line:
                yield n, line.split("//", 1)[1]
        elif "#" in line:
            yield n, line.split("#", 1)[1]


def stale(root: Path, comment: str):
    """The paths `comment` names that do not exist under `root`."""
    for m in PATH.finditer(comment):
        p = m.group(1).rstrip(".")
        if p.startswith(SUITE_NAMES_TOO) and not re.search(r"\.\w+$", p):
            continue
        where = [root / p] + ([root / "src" / p] if p.startswith(UNDER_SRC) else [])
        # A module is named without its extension (core/plan/estimate: its .hpp and .cpp).
        if not any(w.exists() or any(w.parent.glob(w.name + ".*")) for w in where):
            yield p


def tracked(root: Path):
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True).stdout
    for name in out.decode().split("\0"):
        p = Path(name)
        if name and (p.suffix in SLASH_COMMENT + HASH_COMMENT or p.name == "CMakeLists.txt"):
            yield p


def main(argv):
    root = Path(argv[1] if len(argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
    bad = []
    for rel in tracked(root):
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for n, comment in comments(rel, text):
            bad += [f"{rel}:{n}: a comment names {p}, which does not exist" for p in stale(root, comment)]
    for line in bad:
        print(line)
    if bad:
        print(f"{len(bad)} stale path(s): name the file where it is now, or drop the path", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
