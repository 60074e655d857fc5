"""The CPU topology of a run (`cpu.topology` in a result's context, or a saved `ipclab topo --json`)
and its measured cache-line round trip between CPUs (`c2c`), read into what the report draws and
says: the CPUs in domain order, the measured pairs, the classes, and the pairs that behave as SMT
siblings though sysfs does not say they share a core.

Every piece is checked: a pair naming a CPU the topology does not list, a round trip that is not a
positive number, a pair given twice are left out and said so (`C2C.ignored`), never a crash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .stats import median
from .util import UsageError, brief, is_number, read_regular

RELATIONS = ["smt", "llc", "cross_llc", "cross_numa"]   # as sysfs relates two CPUs, closest first


@dataclass
class Cpu:
    cpu: int
    package: int | None = None
    node: int | None = None
    llc: int | None = None
    core: int | None = None


@dataclass
class Pair:
    a: int
    b: int
    ns: float
    cls: int | None = None
    relation: str | None = None


@dataclass
class C2C:
    """A measured matrix: `cpus` in domain order (package, NUMA node, LLC, core, number), `pairs`
    those that name two listed CPUs and a positive round trip, `siblings` the pairs that behave
    as SMT siblings, `ignored` why each piece left out was left out."""

    cpus: list
    pairs: list
    sampled: bool = False
    siblings: list = field(default_factory=list)
    ignored: list = field(default_factory=list)


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def read_cpus(topology) -> dict:
    """cpu number -> Cpu of the topology's `cpus` list; entries without a CPU number are left out."""
    out = {}
    items = topology.get("cpus") if isinstance(topology, dict) else None
    for c in items if isinstance(items, list) else []:
        n = _int(c.get("cpu")) if isinstance(c, dict) else None
        if n is not None and n >= 0 and n not in out:
            out[n] = Cpu(n, *(_int(c.get(k)) for k in ("package", "node", "llc", "core")))
    return out


def relation(a: Cpu | None, b: Cpu | None):
    """How sysfs relates two CPUs (the harness's topo::relation); None when a field is missing."""
    if a is None or b is None or None in (a.package, a.core, a.llc, a.node, b.package, b.core, b.llc, b.node):
        return None
    if a.package == b.package and a.core == b.core:
        return "smt"
    if a.llc == b.llc:
        return "llc"
    return "cross_llc" if a.node == b.node else "cross_numa"


def layout(ids, cpus: dict):
    """(`ids` in domain order, boundaries): the CPUs of one package, node and LLC side by side, so
    that a domain is a block of the heatmap; a boundary is (index, "llc" | "node") where the CPU at
    index starts another LLC, or another NUMA node or package. CPUs the topology does not list come
    last, by number, without boundaries."""
    known = sorted((i for i in set(ids) if i in cpus),
                   key=lambda i: tuple(-1 if v is None else v for v in
                                       (cpus[i].package, cpus[i].node, cpus[i].llc, cpus[i].core, i)))
    order = known + sorted(i for i in set(ids) if i not in cpus)
    bounds = []
    for k in range(1, len(known)):
        p, c = cpus[known[k - 1]], cpus[known[k]]
        if (p.package, p.node) != (c.package, c.node):
            bounds.append((k, "node"))
        elif p.llc != c.llc:
            bounds.append((k, "llc"))
    return order, bounds


def read(topology):
    """The measured matrix of a topology object, or None when it carries none (no `c2c` object)."""
    if not isinstance(topology, dict) or not isinstance(topology.get("c2c"), dict):
        return None
    c2c = topology["c2c"]
    cpus = read_cpus(topology)
    ignored = []

    def check(p, what):
        """(a, b, ns) of one pair object, or None with the reason in `ignored`."""
        if not isinstance(p, dict):
            ignored.append(f"{what} {brief(json.dumps(p), 40)}: not an object")
            return None
        a, b, ns = _int(p.get("a")), _int(p.get("b")), p.get("c2c_ns")
        name = f"{what} {brief(p.get('a'), 20)}–{brief(p.get('b'), 20)}"
        if a is None or b is None or a == b:
            ignored.append(f"{name}: not two CPU numbers")
        elif cpus and (a not in cpus or b not in cpus):
            missing = ", ".join(str(c) for c in (a, b) if c not in cpus)
            ignored.append(f"{name}: CPU {missing} is not in the topology's CPUs")
        elif not is_number(ns):
            ignored.append(f"{name}: round trip {brief(json.dumps(ns), 30)} is not a number")
        elif ns <= 0:
            ignored.append(f"{name}: not measured (round trip {ns:g} ns)")
        else:
            return a, b, float(ns)
        return None

    pairs, seen = [], set()
    items = c2c.get("pairs")
    if not isinstance(items, list):
        ignored.append("pairs: not a list")
        items = []
    for p in items:
        got = check(p, "pair")
        if got is None:
            continue
        a, b, ns = got
        if frozenset((a, b)) in seen:
            ignored.append(f"pair {a}–{b}: given twice (the first kept)")
            continue
        seen.add(frozenset((a, b)))
        rel = p.get("relation")
        cls = _int(p.get("class"))
        pairs.append(Pair(a, b, ns, cls if cls is not None and cls >= 0 else None,
                          rel if isinstance(rel, str) and rel else relation(cpus.get(a), cpus.get(b))))
    rel_of = {frozenset((p.a, p.b)): p.relation for p in pairs}
    siblings = []
    hidden = c2c.get("behaves_as_smt_siblings", [])
    for p in hidden if isinstance(hidden, list) else []:
        got = check(p, "SMT-like pair")
        if got is not None:
            a, b, ns = got
            siblings.append(Pair(a, b, ns, relation=rel_of.get(frozenset((a, b)),
                                                                relation(cpus.get(a), cpus.get(b)))))
    if not isinstance(hidden, list):
        ignored.append("behaves_as_smt_siblings: not a list")
    ids = set(cpus) or {c for p in pairs for c in (p.a, p.b)}
    order, _ = layout(ids, cpus)
    return C2C(cpus=order, pairs=pairs, sampled=c2c.get("sampled") is True, siblings=siblings,
               ignored=ignored)


def cells(m: C2C) -> dict:
    """(row CPU, column CPU) -> round trip ns, both ways round: the matrix is symmetric."""
    out = {}
    for p in m.pairs:
        out[(p.a, p.b)] = out[(p.b, p.a)] = p.ns
    return out


def _ns(v) -> str:
    return f"{v:.1f} ns"


def _by(pairs, key):
    groups = {}
    for p in pairs:
        groups.setdefault(key(p), []).append(p)
    return groups


def _relation_order(r):
    return (RELATIONS.index(r) if r in RELATIONS else len(RELATIONS), str(r))


def classes_text(m: C2C) -> str:
    """The classes, fastest first, with the median round trip of each and the sysfs relations
    among its pairs; then the median per sysfs relation."""
    parts = []
    classes = _by([p for p in m.pairs if p.cls is not None], lambda p: p.cls)
    for cls in sorted(classes):
        ps = classes[cls]
        rels = _by(ps, lambda p: p.relation or "unknown")
        mix = ", ".join(f"{r} {len(rels[r])}" for r in sorted(rels, key=_relation_order))
        parts.append(f"class {cls}: {_ns(median([p.ns for p in ps]))} over {len(ps)} pair"
                     f"{'s' if len(ps) != 1 else ''} ({mix})")
    out = []
    if parts:
        out.append("Classes, fastest first (median round trip): " + "; ".join(parts) + ".")
    rels = _by([p for p in m.pairs if p.relation], lambda p: p.relation)
    if rels:
        out.append("By sysfs relation: " + "; ".join(
            f"{r} {_ns(median([p.ns for p in rels[r]]))} ({len(rels[r])} pair{'s' if len(rels[r]) != 1 else ''})"
            for r in sorted(rels, key=_relation_order)) + ".")
    return " ".join(out)


def siblings_warning(m: C2C) -> str:
    """The warning naming every pair that behaves as SMT siblings, with its round trip and the
    median of the pairs sysfs relates the same way; "" when there is none."""
    if not m.siblings:
        return ""
    rels = _by([p for p in m.pairs if p.relation], lambda p: p.relation)
    shown = []
    for p in m.siblings:
        typical = median([q.ns for q in rels.get(p.relation, [])])
        shown.append(f"CPUs {p.a} and {p.b}: {_ns(p.ns)}" + (
            f" (sysfs: {p.relation}, whose median is {_ns(typical)})" if p.relation and typical is not None else ""))
    return ("Pairs that behave as SMT siblings though sysfs does not say they share a core — " +
            "; ".join(shown) + ". Placement by class (smt, llc, …) follows sysfs and does not see this.")


def load_saved(path: str) -> dict:
    """A saved `ipclab topo --json` with its measured matrix; any problem is a UsageError."""
    fix = "pass the output of `ipclab topo --json` (measured: without --no-measure)"
    try:
        doc = json.loads(read_regular(path, "--topology", fix))
    except FileNotFoundError:
        raise UsageError(f"--topology {brief(path)}: no such file; {fix}") from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise UsageError(f"--topology {brief(path)} is not JSON; {fix}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cpus"), list):
        raise UsageError(f"--topology {brief(path)} is not a topology (no \"cpus\" list); {fix}")
    if not isinstance(doc.get("c2c"), dict):
        raise UsageError(f"--topology {brief(path)} has no measured matrix (no \"c2c\"); {fix}")
    return doc
