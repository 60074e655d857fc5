#!/usr/bin/env python3
"""The include direction of src/core: its rooms stand in the order src/core/README.md's table
gives (lowest first), and a file may include only files of its own room or of a lower one; no
file of core includes the mechanisms, the CLI or the runtime, and no include cycle joins files
of core. Every file of core lies in a room of the table. A suite of src/mechanisms includes
another suite's code only through a header src/mechanisms/README.md declares shared with it.
Prints one line per violation and exits 1; exits 0 saying how many includes it checked and which
shared headers each suite includes.

Usage: scripts/check-includes.py [SOURCE_TREE]   (default: this script's tree)"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r'^\|\s*(\d+)\s*\|\s*`([a-z_]+)/`\s*\|', re.M)


def rooms(core):
    """The rooms in order (README's table: | n | `room/` | ... |)."""
    with open(os.path.join(core, "README.md"), encoding="utf-8") as f:
        rows = ROW.findall(f.read())
    order = [name for _, name in sorted(rows, key=lambda r: int(r[0]))]
    if not order:
        sys.exit(f"check-includes: no room table in {core}/README.md")
    return {name: rank for rank, name in enumerate(order)}


def core_files(core):
    for folder, _, names in os.walk(core):
        for n in sorted(names):
            if n.endswith((".hpp", ".cpp", ".h")):
                yield os.path.relpath(os.path.join(folder, n), os.path.dirname(core))


def check(tree):
    core = os.path.join(tree, "src", "core")
    rank = rooms(core)
    problems, graph, checked = [], {}, 0
    for rel in core_files(core):  # rel: "core/<room>/<file>"
        parts = rel.split("/")
        if len(parts) != 3 or parts[1] not in rank:
            problems.append(f"{rel}: not in a room of src/core/README.md's table; move it into one")
            continue
        room = parts[1]
        with open(os.path.join(tree, "src", rel), encoding="utf-8") as f:
            text = f.read()
        graph[rel] = []
        for inc in INCLUDE.findall(text):
            checked += 1
            top = inc.split("/")[0]
            if top in ("mechanisms", "cli", "ipcrt"):
                problems.append(f"{rel} includes {inc}: core builds on nothing above it")
                continue
            if top != "core":
                continue
            ip = inc.split("/")
            if len(ip) != 3 or ip[1] not in rank:
                problems.append(f"{rel} includes {inc}, which is in no room")
                continue
            graph[rel].append(inc)
            if rank[ip[1]] > rank[room]:
                problems.append(f"{rel} includes {inc}: {room}/ (room {rank[room] + 1}) may include "
                                f"only its own room and those below it, not {ip[1]}/ (room {rank[ip[1]] + 1})")
    problems += cycles(graph)
    return problems, checked


def cycles(graph):
    """One line per include cycle among core's files (a .cpp and its own .hpp are one file)."""
    def unit(f):
        return f.rsplit(".", 1)[0]
    edges = {}
    for f, incs in graph.items():
        edges.setdefault(unit(f), set()).update(unit(i) for i in incs if unit(i) != unit(f))
    out, state, stack = [], {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                loop = stack[stack.index(v):] + [v]
                out.append("include cycle: " + " -> ".join(loop) + "; move what both need below both")
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2
    for u in sorted(edges):
        if u not in state:
            visit(u)
    return out


SHARED_ROW = re.compile(r'^\|\s*`([\w./]+\.hpp)`\s*\|[^|]*\|\s*([\w ,]+?)\s*\|\s*$', re.M)


def shared_headers(mechanisms):
    """src/mechanisms/README.md's table of shared headers: {header under mechanisms/: {suites}}."""
    try:
        with open(os.path.join(mechanisms, "README.md"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return {}
    return {h: {s.strip() for s in users.split(",") if s.strip()} for h, users in SHARED_ROW.findall(text)}


def check_mechanisms(tree):
    """A suite's file includes another suite's code (or a header directly in src/mechanisms) only
    through a header src/mechanisms/README.md declares shared with that suite. Returns the
    problems, the includes checked, and {suite: {shared header it includes}}."""
    mechanisms = os.path.join(tree, "src", "mechanisms")
    shared = shared_headers(mechanisms)
    problems, checked, used = [], 0, {}
    if not os.path.isdir(mechanisms):
        return problems, checked, used
    for folder, _, names in os.walk(mechanisms):
        rel_folder = os.path.relpath(folder, mechanisms)
        for n in sorted(names):
            if not n.endswith((".hpp", ".cpp", ".h")):
                continue
            rel = os.path.normpath(os.path.join("mechanisms", rel_folder, n))
            suite = rel.split("/")[1] if rel.count("/") >= 2 else None  # None: a shared top-level file
            with open(os.path.join(folder, n), encoding="utf-8") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                ip = inc.split("/")
                if ip[0] != "mechanisms":
                    continue
                checked += 1
                target = "/".join(ip[1:])
                if suite is None or (len(ip) > 2 and ip[1] == suite):
                    continue  # its own suite's, or a shared top-level file's own include
                if suite in shared.get(target, ()):
                    used.setdefault(suite, set()).add(target)
                    continue
                why = ("not declared shared" if target not in shared
                       else f"declared shared with {', '.join(sorted(shared[target]))} only")
                problems.append(f"{rel} includes {inc}: another suite's code, {why} in src/mechanisms/README.md; "
                                f"declare it there (what it holds, which suites include it) or move what both need "
                                f"into core")
    return problems, checked, used


def main():
    tree = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems, checked = check(tree)
    more, checked_m, used = check_mechanisms(tree)
    problems += more
    for p in problems:
        print(f"check-includes: {p}")
    if problems:
        return 1
    print(f"check-includes: {checked} includes of src/core checked: every one within its room or below")
    print(f"check-includes: {checked_m} includes of the mechanisms checked: across suites only through shared "
          f"headers" + "".join(f"\n  {s}: {', '.join(sorted(h))}" for s, h in sorted(used.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
