"""Markdown summary: the same per-suite tables as the HTML report, for issues and READMEs."""

from __future__ import annotations

from .model import all_warnings, build, machine_line


def cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(files) -> str:
    report = build(files, with_plots=False)
    out = ["# ipclab results", ""]
    for f in files:
        prefix = f"**{cell(f.tag)}** ({cell(f.label)}): " if report.multi else "Machine: "
        out.append(f"{prefix}{cell(machine_line(f))}" + ("  " if report.multi else ""))
    out.append("")
    for msg, remedy, tags in all_warnings(files):
        who = f" ({', '.join(tags) if len(tags) < len(files) else 'every run'})" if report.multi else ""
        out.append(f"- ⚠ {cell(msg)}{who}" + (f" — remedy: `{cell(remedy)}`" if remedy else ""))
    if out[-1] != "":
        out.append("")
    if report.answers:
        out += ["## Answers", ""]
        for a in report.answers:
            out += [f"**{cell(a.question)}** Ranked by {cell(a.ranked_by)}"
                    + (f"; every row: {cell(a.measured)}." if a.measured else "."), ""]
            out.append("| " + " | ".join(a.columns) + " |")
            out.append("|" + "|".join(":--" if c in ("name", "run") else "--:" for c in a.columns) + "|")
            for r in a.rows:
                out.append("| " + " | ".join(cell(f"`{r[c]}`" if c == "name" else r[c]) for c in a.columns) + " |")
            out.append("")
    for s in report.suites:
        # The registry's columns (those of the console and of `ipclab run --markdown`), the run's after
        # the name when several files are compared; figures right-aligned.
        fmt = {c["key"]: c["format"] for c in s.column_defs}
        out += [f"## {s.name}", ""]
        out.append("| " + " | ".join(s.columns) + " |")
        out.append("|" + "|".join(":--" if fmt.get(c, "name") in ("name", "status") else "--:" for c in s.columns) + "|")
        for r in s.rows:
            cells = []
            for c in s.columns:
                v = r[c]
                if fmt.get(c) == "name":
                    v = f"`{v}`"
                elif fmt.get(c) == "status" and v != "ok":
                    v = f"**{v.upper()}**" + (f": {r['error']}" if r["error"] else "")
                cells.append(cell(v))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
        if s.capacity:
            out += [f"Capacity under a latency bound ({s.name}):", ""]
            out.append("| " + " | ".join(s.capacity_columns) + " |")
            out.append("|" + "|".join(":--" if c in ("name", "run") else "--:" for c in s.capacity_columns) + "|")
            for r in s.capacity:
                out.append("| " + " | ".join(cell(f"`{r[c]}`" if c == "name" else len(r[c]) if c == "trials" else r[c])
                                             for c in s.capacity_columns) + " |")
            out.append("")
    return "\n".join(out)
