"""Markdown summary: the same per-suite tables as the HTML report, for issues and READMEs.

Whatever a result file says (hostnames, kernel, environment, mechanism and parameter names, errors,
warnings) reaches Markdown through text(), code() or prose() only: a renderer shows it and runs
nothing. pages.py writes its pages with the same three."""

from __future__ import annotations

import re

from .answers import COST_NOTE
from .model import all_warnings, build, machine_line

# HTML that would make a tag or an attribute, as entities.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
# Markdown's code spans and links or images ([text](url), ![alt](url)), and a table's cell border.
_BACKSLASHED = "\\`[]|"
# A scheme that runs or embeds rather than links (javascript:alert(1)): a zero-width space after its
# name, so that no renderer that links bare URLs takes it for one; what a reader sees is the same.
_SCRIPT_SCHEME = re.compile(r"(?i)\b(javascript|vbscript|data|file)(\s*:)")
_ZWSP = "\u200b"


def _one_line(value) -> str:
    return str(value).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def text(value) -> str:
    """`value`, text from a result file, as Markdown that shows it as it is and makes nothing of it:
    no HTML (<, >, &, " as entities), no code span, link or image (`, [, ], and \\ itself, escaped
    with a backslash), no table cell border (|), no script link (javascript:, vbscript:, data:,
    file:), on one line. Parentheses, * and _ stay as they are: without a [ or a < they make no
    link, and names such as unix_stream stay readable in the file."""
    out = []
    for ch in _one_line(value):
        if ch in _ENTITIES:
            out.append(_ENTITIES[ch])
        elif ch in _BACKSLASHED:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return _SCRIPT_SCHEME.sub(lambda m: m.group(1) + _ZWSP + m.group(2), "".join(out))


def _codeable(s: str) -> bool:
    """Whether a code span can carry `s` as it is: not blank, no space at either end, no backtick,
    and nothing a reader of the file could take for markup (HTML's <, >, &, ", a script link)."""
    return bool(s.strip()) and s == s.strip() and not any(c in s for c in '`<>&"') and not _SCRIPT_SCHEME.search(s)


def code(value, in_table: bool = True) -> str:
    """`value` (a benchmark name, a command) as a code span, which every renderer shows literally;
    in a table its | escaped, as a table needs even there. A value a code span cannot carry
    (_codeable) is written as text() instead."""
    s = _one_line(value)
    if not _codeable(s):
        return text(s)
    return "`" + (s.replace("|", "\\|") if in_table else s) + "`"


_BACKTICKS = re.compile(r"`+")


def _code_spans(s: str):
    """The code spans of `s` as CommonMark reads them: a run of n backticks opens one, the next run
    of exactly n closes it (a lone run closes nothing). (start, end, content) each, in order."""
    runs = list(_BACKTICKS.finditer(s))
    spans, i = [], 0
    while i < len(runs):
        opener = runs[i]
        closer = next((j for j in range(i + 1, len(runs)) if len(runs[j].group()) == len(opener.group())), None)
        if closer is None:
            i += 1
            continue
        content = s[opener.end():runs[closer].start()]
        if len(content) > 2 and content[0] == " " and content[-1] == " " and content.strip():
            content = content[1:-1]  # CommonMark strips one space each side when both are there
        spans.append((opener.start(), runs[closer].end(), content))
        i = closer + 1
    return spans


def _code_fenced(s: str) -> str:
    """`s` as one code span whatever backticks it holds: fenced by one backtick more than its longest
    run of them (CommonMark), padded by a space where it starts or ends with one."""
    fence = "`" * (max((len(m.group()) for m in _BACKTICKS.finditer(s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return fence + pad + s + pad + fence


def prose(value) -> str:
    """text(), but the code spans the harness writes in its warnings and remedies ("see `top`", a
    command holding a backtick in a longer fence) stay code spans, each fenced anew so that a backtick
    inside never ends it early, where it holds nothing a reader could take for markup; any other
    backtick is escaped."""
    s = _one_line(value)
    out, pos = [], 0
    for start, end, content in _code_spans(s):
        if content.strip() and not any(c in content for c in '<>&"') and not _SCRIPT_SCHEME.search(content):
            out += [text(s[pos:start]), _code_fenced(content)]
            pos = end
    out.append(text(s[pos:]))
    return "".join(out)


def _row(cells) -> str:
    return "| " + " | ".join(cells) + " |"


def render(files) -> str:
    report = build(files, with_plots=False)
    out = ["# ipclab results", ""]
    for f in files:
        prefix = f"**{text(f.tag)}** ({text(f.label)}): " if report.multi else "Machine: "
        out.append(f"{prefix}{text(machine_line(f))}" + ("  " if report.multi else ""))
    out.append("")
    for msg, remedy, tags in all_warnings(files):
        who = f" ({text(', '.join(tags)) if len(tags) < len(files) else 'every run'})" if report.multi else ""
        # Prose whatever it holds: the commands in it are the code spans it marks.
        remedy = prose(remedy)
        out.append(f"- ⚠ {prose(msg)}{who}" + (f" — remedy: {remedy}" if remedy else ""))
    if out[-1] != "":
        out.append("")
    if report.answers:
        out += ["## Answers", "", text(COST_NOTE), ""]
        for a in report.answers:
            out += [f"**{text(a.question)}** Ranked by {text(a.ranked_by)}"
                    + (f"; every row: {text(a.measured)}." if a.measured else "."), ""]
            out.append(_row(text(c) for c in a.columns))
            out.append("|" + "|".join(":--" if c in ("name", "run") else "--:" for c in a.columns) + "|")
            for r in a.rows:
                out.append(_row(code(r[c]) if c == "name" else text(r[c]) for c in a.columns))
            out.append("")
            if a.left_out:
                out += [f"Not in this ranking: {text('; '.join(a.left_out))}.", ""]
    for s in report.suites:
        # The registry's columns (those of the console and of `ipclab run --markdown`), the run's after
        # the name when several files are compared; figures right-aligned.
        fmt = {c["key"]: c["format"] for c in s.column_defs}
        # A column only runs with an option have figures for (its `needs`: sys/op, --kernel-counters)
        # is left out where no row has one.
        needs = {c["key"] for c in s.column_defs if c.get("needs")}
        shown = [c for c in s.columns if c not in needs or any(r[c] != "—" for r in s.rows)]
        out += [f"## {text(s.name)}", ""]
        out.append(_row(text(c) for c in shown))
        out.append("|" + "|".join(":--" if fmt.get(c, "name") in ("name", "status") else "--:" for c in shown) + "|")
        for r in s.rows:
            cells = []
            for c in shown:
                v = r[c]
                if fmt.get(c) == "name":
                    cells.append(code(v))
                elif fmt.get(c) == "status" and v != "ok":
                    cells.append(f"**{text(str(v).upper())}**" + (f": {text(r['error'])}" if r["error"] else ""))
                else:
                    cells.append(text(v))
            out.append(_row(cells))
        out.append("")
        if s.capacity:
            out += [f"Capacity under a latency bound ({text(s.name)}):", ""]
            out.append(_row(text(c) for c in s.capacity_columns))
            out.append("|" + "|".join(":--" if c in ("name", "run") else "--:" for c in s.capacity_columns) + "|")
            for r in s.capacity:
                out.append(_row(code(r[c]) if c == "name" else text(len(r[c]) if c == "trials" else r[c])
                                for c in s.capacity_columns))
            out.append("")
    if report.since:
        out += [f"## {text(report.since.heading)}", ""]
        for name, line in report.since.lines:
            out.append(f"- {code(name, in_table=False)}: {text(line)}")
        if report.since.unchanged:
            n = report.since.judged
            out.append(f"- {report.since.unchanged} of {n} benchmark{'s' if n != 1 else ''}: no change beyond "
                       f"{'its' if report.since.unchanged == 1 else 'their'} noise band")
        out.append("")
    if report.flags:
        out += ["## What the flags mean, and what to do", ""]
        for f in report.flags:
            where = f", {f.points} point{'s' if f.points != 1 else ''}" if f.points else ""
            out.append(f"- **{text(f.word)}** ({code(f.id, in_table=False)}{where}): "
                       + (f"{prose(f.meaning)} — " if f.meaning else "") + f"what to do: {prose(f.remedy)}")
        out.append("")
    return "\n".join(out)
