"""Documentation pages from one result file: a Markdown page per suite, and a headline table.

A page says it is generated and from which files, names the machine and the run (the result's
context), then shows the tables its suite's readers choose on (TABLES), each followed by the
hand-written text under the table's id in <pages>/notes/<suite>.md, so that regenerating keeps
the text. The headline table (the main transports at one message size) replaces what lies
between a README's REFERENCE_BEGIN and REFERENCE_END lines. Nothing on a page comes from
anywhere but the result and the notes: the same inputs give the same bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from .load import summaries
from .markdown import cell
from .model import build_text, env_table, load_text, warnings
from .plots import _hashable, dims_of
from .util import (UsageError, fmt_bytes_param, fmt_memory, fmt_number, fmt_si, fmt_time_ns,
                   is_number, write_atomic)

REFERENCE_BEGIN = "<!-- reference:begin -->"
REFERENCE_END = "<!-- reference:end -->"
NOTES = "notes"           # the hand-written text: <pages>/notes/<suite>.md
INTRO = "intro"           # the notes' section that goes under the page's title
BYTE_PARAMS = ("size", "file_size")
# The environment a reader needs to place the figures (model.ENV_ROWS has more).
PAGE_ENV = ("CPU", "cores", "online CPUs", "caches", "memory", "kernel", "virtualization", "governor",
            "compiler", "libraries", "ipclab", "date", "load average", "run", "command line")


# --- the figures ---------------------------------------------------------------------------------

def _rate(key="ops_per_s"):
    return lambda r: fmt_si(r.rate(key), "/s")


def _pct(p):
    return lambda r: fmt_time_ns(r.latency(p))


def _extra_ns(key):
    return lambda r: fmt_time_ns(r.num("extra", key))


def _extra_number(key):
    return lambda r: fmt_number(r.num("extra", key))


def _connect(p):
    return lambda r: fmt_time_ns(r.num("extra", "connect_ns", p))


def _ratio(key):
    """echo/ab's b/a ratios: the median over the pairs of slices, [p10, p90]."""
    def text(r):
        m, lo, hi = (r.num("extra", key, k) for k in ("median", "p10", "p90"))
        if m is None:
            return "—"
        return f"{m:.3f}" + (f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else "")
    return text


def _time(r):
    return fmt_time_ns(r.time_per_op_ns)


def _cpu(r):
    return fmt_time_ns(r.num("cpu", "per_op_ns"))


def _ctx(r):
    v = r.num("cpu", "ctx_per_op")
    return f"{v:.2f}" if v is not None else "—"


def _mib(r):
    return fmt_number(r.rate("MiB_per_s"))


def _mb(r):
    b = r.rate("bytes_per_s")
    return fmt_number(b / 1e6 if b is not None else None)


def _fairness(r):
    v = r.num("extra", "fairness")
    return f"{v:.2f}" if v is not None else "—"


def _is(dim, value):
    return lambda r: r.dim(dim) == value


def _bench(r):
    """runtime's benchmark: switch_ipcrt -> switch, channel_pairs_go -> channel_pairs."""
    m = r.mechanism
    return "channel_pairs" if m.startswith("channel_pairs_") else m.split("_")[0]


@dataclass(frozen=True)
class Table:
    """One table of a page. Its rows are the suite's records that `where` accepts; the first
    column names the benchmark (`name`, under `label`); the parameters that vary follow; then one
    column per metric, or with `across`, one column per value of that parameter (and metric)."""

    id: str                      # the notes' section that goes under it
    title: str
    metrics: tuple               # (header, record -> text)
    where: Callable = lambda r: True
    label: str = "mechanism"
    name: Callable = lambda r: r.mechanism
    across: str | None = None


GENERIC_METRICS = (("time/op", _time), ("rate", _rate()), ("p50", _pct("p50")), ("p99", _pct("p99")),
                   ("CPU/op", _cpu), ("ctx/op", _ctx))


def _runtime_table(bench, title):
    return Table(bench, title, (("time/op", _time), ("CPU/op", _cpu), ("ctx/op", _ctx)),
                 where=lambda r: _bench(r) == bench, label="runtime",
                 name=lambda r: r.mechanism[len(bench) + 1:])


TABLES = {
    "messaging": (
        Table("throughput", "Throughput: producers send as fast as consumers take",
              (("messages/s", _rate()), ("MiB/s", _mib), ("one-way p50", _pct("p50")),
               ("one-way p99", _pct("p99")), ("CPU/message", _cpu), ("ctx/message", _ctx)),
              where=_is("pattern", "throughput")),
        Table("pingpong", "Ping-pong: one request in flight, echoed back",
              (("round trips/s", _rate()), ("RTT p50", _pct("p50")), ("RTT p99", _pct("p99")),
               ("CPU/round trip", _cpu), ("ctx/round trip", _ctx)),
              where=_is("pattern", "pingpong")),
    ),
    "pingpong": (
        Table("ops", "System effective OPS: round trips of all pairs per second of wall time",
              (("", _rate("system_effective_ops")),), label="guest", across="pairs"),
        Table("fairness", "Fairness: the slowest pair's rate over the fastest's",
              (("", _fairness),), where=lambda r: is_number(r.dim("pairs")) and r.dim("pairs") > 1,
              label="guest", across="pairs"),
        Table("one_pair", "One pair: round trip, CPU and context switches",
              (("RTT p50", _pct("p50")), ("RTT p99", _pct("p99")), ("time/round trip", _time),
               ("CPU/round trip", _cpu), ("ctx/round trip", _ctx)),
              where=_is("pairs", 1), label="guest"),
    ),
    "servers": (
        Table("sessions", "Sessions: every client connects at once, makes its requests and closes",
              (("processed", _extra_number("processed")), ("rejected", _extra_number("rejected")),
               ("lost", _extra_number("lost")), ("sessions/s", _rate("sessions_per_s")),
               ("session p50", _pct("p50")), ("session p99", _pct("p99")), ("connect p50", _connect("p50")),
               ("connect p99", _connect("p99")), ("server CPU/session", _extra_ns("server_cpu_per_session_ns"))),
              label="server"),
    ),
    "echo": (
        Table("servers", "Echo servers: one message in flight per connection",
              (("echoes/s", _rate()), ("RTT p50", _pct("p50")), ("RTT p99", _pct("p99")),
               ("server CPU/echo", _extra_ns("server_cpu_per_echo_ns")),
               ("client CPU/echo", _extra_ns("client_cpu_per_echo_ns"))),
              where=lambda r: r.mechanism != "ab", label="server"),
        Table("ab", "Two servers loaded in alternating slices of one run (echo/ab)",
              (("pairs of slices", _extra_number("pairs")), ("echoes/s b/a [p10, p90]", _ratio("rate_ratio_b_over_a")),
               ("server CPU/echo b/a [p10, p90]", _ratio("cpu_per_echo_ratio_b_over_a")),
               ("a: echoes/s", lambda r: fmt_si(r.num("extra", "a", "echoes_per_s"), "/s")),
               ("b: echoes/s", lambda r: fmt_si(r.num("extra", "b", "echoes_per_s"), "/s"))),
              where=lambda r: r.mechanism == "ab", label="a → b",
              name=lambda r: f"{r.dim('a')} → {r.dim('b')}"),
    ),
    "fileio": tuple(
        Table(pattern, title,
              (("IOs/s", _rate()), ("MB/s", _mb), ("p50", _pct("p50")), ("p99", _pct("p99")), ("CPU/IO", _cpu)),
              where=_is("pattern", pattern), label="engine")
        for pattern, title in (("rand", "Random 4 KiB reads"), ("seq", "Sequential 64 KiB reads"))),
    "runtime": (
        _runtime_table("switch", "Switch: a task yields and is resumed"),
        _runtime_table("spawn", "Spawn and join a task"),
        _runtime_table("channel", "Channel: a message from one task to another"),
        _runtime_table("channel_pairs", "Channel pairs: many producer/consumer pairs on one thread"),
        _runtime_table("timer", "Timer: arm and fire"),
    ),
    "cachecalc": (
        Table("iteration", "An iteration: 1000 tasks of calc, delay, calc",
              (("wall/iteration", _time), ("CPU/iteration", _cpu))),
    ),
    "anchors": (
        Table("anchors", "Floors: a null system call, a futex wake round trip, a cache line between CPUs",
              (("time/op", _time), ("p50", _pct("p50")), ("p99", _pct("p99")), ("CPU/op", _cpu), ("ctx/op", _ctx))),
    ),
}
OTHER = "other"           # the suite's records no table above took (a new mechanism, an unknown suite)


def table_ids(suite) -> list:
    return [t.id for t in TABLES.get(suite, ())] + [OTHER]


# --- which parameters are columns ----------------------------------------------------------------

def _value(dim, v) -> str:
    if dim in BYTE_PARAMS and is_number(v):
        text = fmt_bytes_param(v)  # 64, 8Ki
        return f"{text[:-2]} {text[-2:]}B" if text[-2:] in ("Ki", "Mi", "Gi") else f"{text} B"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


@dataclass
class Layout:
    columns: list            # parameters shown as columns: they vary, and most rows have them
    extras: dict             # mechanism -> parameters that vary within it, shown after its name
    fixed: dict              # parameter -> value, the same in every row
    sparse: dict             # parameter -> {value: [mechanisms]}: only some rows have it, constant per mechanism


def layout(recs, skip=()) -> Layout:
    """Only the parameters that vary become columns: one that every row has, or most rows have and
    that tells rows of one mechanism apart (— where a row lacks it). The rest follow the mechanism's
    name where they vary within it, and are listed under the table where they do not."""
    out = Layout([], {}, {}, {})
    for d in dims_of(recs):
        if d == "mechanism" or d in skip:
            continue
        having = [r for r in recs if r.dim(d) is not None]
        values = list(dict.fromkeys(_hashable(r.dim(d)) for r in having))
        per_mech = {}
        for r in having:
            per_mech.setdefault(r.mechanism, []).append(_hashable(r.dim(d)))
        within = any(len(set(vs)) > 1 for vs in per_mech.values())
        if len(values) == 1 and len(having) == len(recs):
            out.fixed[d] = values[0]
        elif len(values) > 1 and (within or len(having) == len(recs)) and 2 * len(having) > len(recs):
            out.columns.append(d)
        else:
            for m, vs in per_mech.items():
                if len(set(vs)) > 1:
                    out.extras.setdefault(m, []).append(d)
                else:
                    out.sparse.setdefault(d, {}).setdefault(vs[0], []).append(m)
    return out


def _row_name(t: Table, lay: Layout, r) -> str:
    return " ".join([t.name(r)] + [f"{d}:{_value(d, r.dim(d))}" for d in lay.extras.get(r.mechanism, [])
                                   if r.dim(d) is not None])


def _table_lines(header, align, rows):
    return ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join(align) + "|"] + [
        "| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def render_table(t: Table, recs) -> list:
    """The table's lines, the parameters it holds fixed, and its records that have no figures."""
    lay = layout(recs, skip=(t.across,) if t.across else ())
    ident = [t.label] + lay.columns

    def key(r):
        return [_row_name(t, lay, r)] + [_value(d, r.dim(d)) if r.dim(d) is not None else "—" for d in lay.columns]

    if t.across:
        values = list(dict.fromkeys(r.dim(t.across) for r in recs))
        if all(is_number(v) for v in values):
            values.sort()
        heads = [f"{h} {t.across} {_value(t.across, v)}".strip() for v in values for h, _ in t.metrics]
        rows = {}
        for r in recs:
            row = rows.setdefault(tuple(key(r)), {})
            for h, f in t.metrics:
                row[(r.dim(t.across), h)] = f(r) if r.ok else "—"
        body = [list(k) + [cells.get((v, h), "—") for v in values for h, _ in t.metrics] for k, cells in rows.items()]
    else:
        heads = [h for h, _ in t.metrics]
        body = [key(r) + [f(r) if r.ok else "—" for _, f in t.metrics] for r in recs]
    lines = _table_lines(ident + heads, [":--"] * len(ident) + ["--:"] * len(heads), body) + [""]
    if lay.fixed:
        lines.append("The same in every row: " + ", ".join(f"{d} {_value(d, v)}" for d, v in lay.fixed.items()) + ".")
    if lay.sparse:
        lines.append("Where a mechanism has them: " + "; ".join(
            f"{d} " + ", ".join(f"{_value(d, v)} ({', '.join(ms)})" for v, ms in vals.items())
            for d, vals in lay.sparse.items()) + ".")
    if lay.fixed or lay.sparse:
        lines.append("")
    bad = [r for r in recs if not r.ok]
    if bad:
        lines.append("Not measured:")
        for r in bad:
            where = [c for c in key(r) if c != "—"] + (
                [f"{t.across} {_value(t.across, r.dim(t.across))}"] if t.across else [])
            lines.append(f"- {cell(' '.join(where))}: **{r.status}** — {cell(r.error or 'no reason given')}")
        lines.append("")
    return lines


# --- notes ---------------------------------------------------------------------------------------

def parse_notes(text: str, path: str, known) -> dict:
    """'## <id>' headings cut the notes into the text of each table (and INTRO); what precedes the
    first heading is for the notes' own readers and is not copied."""
    out, cur = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            cur = line[3:].strip()
            if cur not in known:
                raise UsageError(f"{path}: section '## {cur}' names no table of this suite; "
                                 f"use one of {', '.join(known)}")
            if cur in out:
                raise UsageError(f"{path}: section '## {cur}' appears twice; merge the two")
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return {k: "\n".join(v).strip() for k, v in out.items()}


def read_notes(pages_dir: str, suite: str) -> dict:
    path = os.path.join(pages_dir, NOTES, f"{suite}.md")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: cannot read ({e}); fix or remove the notes file") from None
    return parse_notes(text, path, [INTRO] + table_ids(suite))


# --- the page ------------------------------------------------------------------------------------

def _link(path, start) -> str:
    rel = os.path.relpath(path, start).replace(os.sep, "/")
    return f"[`{rel}`]({rel})"


def placement_text(recs) -> str:
    """Where the sides ran, as each record recorded it: 'cross: producer on CPU 0, consumer on CPU 1'."""
    seen = {}
    for r in recs:
        layout_ = r.get("placement", "layout") or r.dim("placement") or "unrecorded"
        sides = r.get("placement", "sides") if isinstance(r.get("placement", "sides"), list) else []
        pins = []
        for s in sides:
            if isinstance(s, dict) and s.get("pinned"):
                text = f"{s.get('role', 'side')} on CPU {','.join(str(c) for c in s['pinned'])}"
                if text not in pins:
                    pins.append(text)
        desc = f"{layout_}: " + (", ".join(pins) if pins else "no side pinned, the scheduler places them")
        seen[desc] = seen.get(desc, 0) + 1
    if len(seen) == 1:
        return next(iter(seen))
    return "; ".join(f"{d} ({n} benchmarks)" for d, n in seen.items())


def render_page(rf, suite: str, recs, notes: dict, page_dir: str) -> str:
    ctx = rf.context
    out = [f"<!-- Generated by `ipclab report --pages` from {os.path.relpath(rf.path, page_dir)} and "
           f"{NOTES}/{suite}.md: edit those and regenerate; edits to this file are lost. -->",
           f"# {suite}: results", "",
           f"*Generated by `ipclab report --pages` from {_link(rf.path, page_dir)}; the text comes from "
           f"{_link(os.path.join(page_dir, NOTES, suite + '.md'), page_dir)}. "
           "Every figure is the median over the run's repetitions.*", ""]
    if notes.get(INTRO):
        out += [notes[INTRO], ""]
    out += ["## Machine and run", ""]
    env = [(k, v[0]) for k, v in env_table([rf]) if k in PAGE_ENV]
    env.append(("placement", placement_text(recs)))
    out += _table_lines(["", ""], [":--", ":--"], env) + [""]
    ws = warnings(rf)
    if ws:
        out.append("Warnings the run recorded:")
        out += [f"- {cell(m)}" + (f" — remedy: {cell(rem)}" if rem else "") for m, rem in ws]
        out.append("")
    taken = set()
    for t in TABLES.get(suite, ()) + (Table(OTHER, "Other benchmarks" if suite in TABLES else "Benchmarks",
                                            GENERIC_METRICS),):
        rows = [r for r in recs if t.where(r)] if t.id != OTHER else [r for r in recs if id(r) not in taken]
        if not rows:
            continue
        taken |= {id(r) for r in rows}
        out += [f"## {t.title}", ""] + render_table(t, rows)
        if notes.get(t.id):
            out += [notes[t.id], ""]
    return "\n".join(out).rstrip("\n") + "\n"


# --- the README's headline table -----------------------------------------------------------------

def machine_text(ctx) -> str:
    """The machine in one sentence: CPU, CPUs, memory, kernel, virtualisation, compiler and build."""
    cpu = ctx.get("cpu") if isinstance(ctx.get("cpu"), dict) else {}
    parts = [str(cpu.get("model") or "unknown CPU")]
    if cpu.get("logical_cpus") is not None:
        smt = {True: ", SMT", False: ", no SMT"}.get(cpu.get("smt"), "")
        parts.append(f"{cpu['logical_cpus']} CPUs ({cpu.get('physical_cores', '?')} cores{smt})")
    if is_number(ctx.get("memory_bytes")):
        parts.append(fmt_memory(ctx["memory_bytes"]))
    parts += [str(ctx[k]) for k in ("kernel", "virtualization") if ctx.get(k)]
    if build_text(ctx):
        parts.append(build_text(ctx))
    return ", ".join(parts)


def headline(rf, readme_dir: str, pages_dir: str) -> str:
    """The main transports at the smallest message size: round trip and one-way throughput."""
    msgs = [r for r in summaries(rf) if r.suite == "messaging" and r.ok]
    pp = [r for r in msgs if r.dim("pattern") == "pingpong" and is_number(r.dim("size"))]
    if not pp:
        raise UsageError(f"{rf.path} has no messaging ping-pong result for the README's table; "
                         "run the messaging suite (the quick preset does)")
    size = min(r.dim("size") for r in pp)
    pp = [r for r in pp if r.dim("size") == size]
    tp = {tuple(sorted((k, _hashable(v)) for k, v in r.params.items() if k != "pattern")) + (r.mechanism,): r
          for r in msgs if r.dim("pattern") == "throughput"}
    lay = layout(pp)
    t = Table("", "", ())
    rows = []
    for r in pp:
        other = tp.get(tuple(sorted((k, _hashable(v)) for k, v in r.params.items() if k != "pattern")) + (r.mechanism,))
        rows.append([_row_name(t, lay, r)] + [_value(d, r.dim(d)) for d in lay.columns] + [
            _pct("p50")(r), _pct("p99")(r), _rate()(other) if other else "—", _cpu(other) if other else "—"])
    ctx = rf.context
    fixed = ", ".join(f"{d} {_value(d, v)}" for d, v in lay.fixed.items() if d not in ("size", "pattern"))
    out = [f"<!-- Generated by `ipclab report --pages --readme` from {os.path.relpath(rf.path, readme_dir)}: "
           "edits between the reference markers are lost. -->",
           f"{_value('size', size)} messages; round trip: one request in flight, echoed back; throughput: "
           "one side sends as fast as the other takes. Medians of the run's repetitions.", ""]
    out += _table_lines(["transport"] + lay.columns + ["round trip p50", "round trip p99", "messages/s",
                                                     "CPU/message"],
                        [":--"] * (1 + len(lay.columns)) + ["--:"] * 4, rows) + [""]
    out += [f"Machine: {cell(machine_text(ctx))}; load average {load_text(ctx) or 'unrecorded'} at the start.", "",
            f"Run: `{cell(ctx.get('command_line') or 'unrecorded')}`"
            + (f" ({', '.join(f'{k} {ctx[k]}' for k in ('preset', 'repetitions') if ctx.get(k) is not None)})"
               if ctx.get("preset") or ctx.get("repetitions") else "")
            + (f"; the same in every row: {fixed}" if fixed else "") + ".", "",
            f"Every suite, and the machine in full: {_link(pages_dir, readme_dir)}."]
    return "\n".join(out) + "\n"


def replace_reference(text: str, block: str, path: str) -> str:
    """`text` with what lies between its REFERENCE_BEGIN and REFERENCE_END lines replaced by `block`."""
    lines = text.split("\n")
    begins = [i for i, ln in enumerate(lines) if ln.strip() == REFERENCE_BEGIN]
    ends = [i for i, ln in enumerate(lines) if ln.strip() == REFERENCE_END]
    if len(begins) != 1 or len(ends) != 1 or begins[0] > ends[0]:
        raise UsageError(f"{path} needs one line {REFERENCE_BEGIN} and, after it, one line {REFERENCE_END}; "
                         "put them where the reference table goes")
    return "\n".join(lines[:begins[0] + 1] + block.rstrip("\n").split("\n") + lines[ends[0]:])


# --- writing -------------------------------------------------------------------------------------

def write_pages(rf, pages_dir: str, readme: str | None = None) -> list:
    """Every page (and the README's table) rendered first, then written: bad notes or markers stop
    the command before any file changes. Returns the paths written."""
    if not os.path.isdir(pages_dir):
        raise UsageError(f"--pages {pages_dir} is not a folder; create it or name another")
    recs = summaries(rf)
    suites = list(dict.fromkeys(r.suite for r in recs))
    out = {}
    for suite in suites:
        srecs = [r for r in recs if r.suite == suite]
        out[os.path.join(pages_dir, f"{suite}.md")] = render_page(rf, suite, srecs, read_notes(pages_dir, suite),
                                                                  pages_dir)
    if readme:
        try:
            with open(readme, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"--readme {readme}: cannot read ({e}); name the README to update") from None
        readme_dir = os.path.dirname(os.path.abspath(readme))
        out[readme] = replace_reference(text, headline(rf, readme_dir, pages_dir), readme)
    for path, text in out.items():
        write_atomic(path, text)
    return list(out)
