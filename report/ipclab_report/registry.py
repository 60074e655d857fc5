"""The C++ registry, as `ipclab list --json` prints it and a result's context carries it (`registry`,
written by `ipclab run`): the suites in their order, the columns of their tables, the plots they
name and the parameters they scale over, the mechanisms and their parameters. The report holds no
list of suites of its own: its pages, their order, their tables and their plots come from here, so
that a new suite or parameter appears with no edit of this package.

A result file older than the registry in the context is read with the registry of the ipclab that
runs the report (`ipclab report` names itself in IPCLAB_BIN)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field

from . import figures
from .util import UsageError, fmt_si, fmt_time_ns

_from_binary = {}


def from_binary() -> dict:
    """`ipclab list --json` of the binary IPCLAB_BIN names (once per binary)."""
    exe = os.environ.get("IPCLAB_BIN")
    if not exe:
        raise UsageError("a result file carries no registry (it predates it) and IPCLAB_BIN names no ipclab; "
                         "run the report as `ipclab report`, which gives it its own")
    if exe not in _from_binary:
        try:
            p = subprocess.run([exe, "list", "--json"], capture_output=True, text=True, timeout=60)
            _from_binary[exe] = json.loads(p.stdout) if p.returncode == 0 else None
        except (OSError, ValueError, subprocess.SubprocessError):
            _from_binary[exe] = None
        if _from_binary[exe] is None:
            raise UsageError(f"IPCLAB_BIN={exe}: `list --json` gave no registry; point it at a built ipclab")
    return _from_binary[exe]


def _doc(rf) -> dict:
    reg = rf.context.get("registry") if isinstance(rf.context, dict) else None
    return reg if isinstance(reg, dict) and isinstance(reg.get("suites"), list) else from_binary()


@dataclass
class Registry:
    """The registries of several result files as one: suites in the order the files give them
    (the first file's, then each later file's new ones), each suite's columns, each parameter's type."""

    order: list = field(default_factory=list)
    columns_of: dict = field(default_factory=dict)     # suite -> [column]
    param_types: dict = field(default_factory=dict)    # (suite, mechanism, parameter) -> type
    common: list = field(default_factory=list)         # every table's columns: those of a suite no registry names
    plots_of: dict = field(default_factory=dict)       # suite -> [plot name], where a registry names them
    scaling_of: dict = field(default_factory=dict)     # suite -> [parameter it scales over]
    declared: dict = field(default_factory=dict)       # suite -> its entry, where it declares its page

    def add(self, doc: dict):
        self.common = self.common or list(doc.get("columns") or [])
        for s in doc.get("suites") or []:
            if not (isinstance(s, dict) and isinstance(s.get("name"), str)):
                continue
            if s["name"] not in self.order:
                self.order.append(s["name"])
                self.columns_of[s["name"]] = list(s.get("columns") or [])
            if isinstance(s.get("plots"), list) and s["name"] not in self.plots_of:
                self.plots_of[s["name"]] = list(s["plots"])
                self.scaling_of[s["name"]] = list(s.get("scaling") or [])
            if isinstance(s.get("tables"), list) and s["name"] not in self.declared:
                self.declared[s["name"]] = s
        for m in doc.get("mechanisms") or []:
            for p in m.get("params") or [] if isinstance(m, dict) else []:
                self.param_types.setdefault((m.get("suite"), m.get("name"), p.get("name")), p.get("type"))

    def ordered(self, names) -> list:
        """`names` in the registry's order; a suite no registry names after them, by name."""
        names = list(dict.fromkeys(names))
        return [s for s in self.order if s in names] + sorted(n for n in names if n not in self.order)

    def columns(self, suite) -> list:
        return self.columns_of.get(suite) or self.common

    def param_type(self, suite, mechanism, param):
        return self.param_types.get((suite, mechanism, param))

    def plots(self, suite) -> list:
        """The names of the plots the suite's readers expect, in order; none: the generic chart."""
        return self.plots_of.get(suite, [])

    def scaling(self, suite) -> list:
        """The parameters the suite scales over."""
        return self.scaling_of.get(suite, [])

    def tables(self, suite) -> tuple:
        """The tables of the suite's page (figures.Table), as its entry declares them; none: only
        the generic table."""
        try:
            return figures.tables_of(self.declared.get(suite, {}).get("tables") or [])
        except figures.DeclarationError as e:
            raise UsageError(f"suite {suite}: its registry's table names {e}, which this report does not know; "
                             "run the report of the same ipclab (`ipclab report`)") from None

    def answers(self, name) -> list:
        """The suites that declare the answer `name` (answers.ANSWERS), in the registry's order."""
        return [s for s in self.order if name in (self.declared.get(s, {}).get("answers") or [])]

    def beside(self, suite) -> str:
        """The suite whose records the suite's own are set beside; "" for none."""
        return self.declared.get(suite, {}).get("beside") or ""

    def with_flag(self, flag) -> list:
        """The suites whose entry sets `flag` (headline: the README's table; floors: the machine's floors)."""
        return [s for s in self.order if self.declared.get(s, {}).get(flag) is True]

    def add_plots_of_binary(self):
        """The plots, scaling and page declarations of each suite whose registry predates them (a
        result written before suites named them), from the ipclab that runs the report, when there
        is one."""
        if all(s in self.plots_of and s in self.declared for s in self.order):
            return
        try:
            doc = from_binary()
        except UsageError:
            return
        self.add({"suites": [s for s in doc.get("suites") or [] if isinstance(s, dict) and s.get("name") in self.order]})


def of(files) -> Registry:
    reg = Registry()
    for f in files:
        reg.add(_doc(f))
    reg.add_plots_of_binary()
    return reg


def merged_doc(files):
    """One registry document of the files that carry one (a reduce merging parts of one run): each
    suite and mechanism once, in the files' order; None when none carries one."""
    docs = [f.context["registry"] for f in files if isinstance(f.context.get("registry"), dict)]
    if not docs:
        return None
    suites = {s.get("name"): s for d in reversed(docs) for s in d.get("suites") or []}
    mechs = {(m.get("suite"), m.get("name")): m for d in reversed(docs) for m in d.get("mechanisms") or []}
    order = list(dict.fromkeys(s.get("name") for d in docs for s in d.get("suites") or []))
    morder = list(dict.fromkeys((m.get("suite"), m.get("name")) for d in docs for m in d.get("mechanisms") or []))
    return {"suites": [suites[n] for n in order], "mechanisms": [mechs[k] for k in morder]}


def figure(column: dict, r) -> str:
    """A figure column's cell for record `r`, as the column's format words it; — without a figure."""
    fmt = column.get("format")
    if fmt == "kind":  # latency_ns.kind, as the registry's column words it (its `texts`)
        k = r.get(*column.get("value") or ["-"])
        return (column.get("texts") or {}).get(k, k) if isinstance(k, str) and k else "—"
    v = r.num(*column.get("value") or ["-"])
    if fmt in ("time", "whole_ns"):  # whole_ns: a latency's whole nanoseconds, 3 digits at most ("1 ns")
        return fmt_time_ns(v)
    if fmt == "rate":
        return fmt_si(v, "/s")
    return f"{v:.2f}" if v is not None else "—"


def size_text(v) -> str:
    """Bytes as the shortest text ipclab reads back (params.hpp size_text): 1024 -> 1K, 1000 -> 1000."""
    for shift, suffix in ((30, "G"), (20, "M"), (10, "K")):
        if isinstance(v, int) and v and v % (1 << shift) == 0:
            return f"{v >> shift}{suffix}"
    return str(v)
