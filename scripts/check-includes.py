#!/usr/bin/env python3
"""The include direction of src/core: its rooms stand in the order src/core/README.md's table
gives (lowest first), and a file may include only files of its own room or of a lower one; no
file of core includes the mechanisms, the CLI or the runtime, and no include cycle joins files
of core. Every file of core lies in a room of the table. Prints one line per violation and
exits 1; exits 0 saying how many includes it checked.

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


def main():
    tree = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems, checked = check(tree)
    for p in problems:
        print(f"check-includes: {p}")
    if problems:
        return 1
    print(f"check-includes: {checked} includes of src/core checked: every one within its room or below")
    return 0


if __name__ == "__main__":
    sys.exit(main())
