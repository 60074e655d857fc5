"""The agreement table of `ipclab agree`, from its document (the --json file): on the console and
in Markdown, the same rows. Per point: the tool's figure and ipclab's (medians of the rounds, each
saying what it is), the paired ratio ipclab / tool with its 95% interval, the band and whether the
ratio lies within it."""

from __future__ import annotations

from ..util import text_table

HEAD = ["point", "tool's figure", "ipclab's figure", "ipclab / tool [95% CI]", "band", "agrees", "notes"]


def fmt_figure(v, unit: str) -> str:
    if v is None:
        return "—"
    if unit in ("IOPS", "msg/s"):
        return f"{v / 1000:.1f}k {unit}"
    return f"{v:.2f} {unit}"


def row(p: dict) -> list:
    ratio = "—" if p["ratio"] is None else f"{p['ratio']:.2f} [{p['ci'][0]:.2f}, {p['ci'][1]:.2f}]"
    agrees = "—" if p["within"] is None else ("within" if p["within"] else "OUTSIDE")
    notes = "; ".join(n for n in (p.get("error") and f"failed: {p['error']}", p.get("notes")) if n)
    return [p["point"], f"{fmt_figure(p['tool_median'], p['unit'])} {p['tool_is']}",
            f"{fmt_figure(p['ipclab_median'], p['unit'])} {p['ipclab_is']}", ratio,
            f"±{p['band'] * 100:g}%", agrees, notes]


def heading(t: dict, doc: dict) -> str:
    return (f"{t['tool']} ({t['version'] or 'version unknown'}): {t['method']}. Medians of {doc['rounds']} "
            f"paired rounds (ipclab for about {doc['seconds']:g} s, then the tool for about {t['tool_seconds']:g} s); CPUs "
            f"{','.join(map(str, doc['cpus']))}; ratio: the median of the rounds' ipclab / tool, its 95% "
            "interval by the bootstrap" + (f"; engines with {' '.join(doc['engine_params'])}"
                                           if t["tool"] == "fio" and doc.get("engine_params") else ""))


def console(doc: dict) -> str:
    lines = [f"# ipclab agree, {doc['when']}; load {doc['load'][0]:.2f} before, {doc['load'][1]:.2f} after"]
    for t in doc["tools"]:
        lines += ["", "# " + heading(t, doc)]
        lines += text_table(HEAD, [row(p) for p in t["points"]], right=(3,))
    lines += [f"# {s['tool']}: skipped: {s['reason']}" for s in doc["skipped"]]
    return "\n".join(lines) + "\n"


def markdown(doc: dict) -> str:
    def md(cells):  # a '|' inside a cell would end it
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    lines = [f"ipclab agree, {doc['when']}; load {doc['load'][0]:.2f} before, {doc['load'][1]:.2f} after; "
             f"`{doc['command']}`"]
    for t in doc["tools"]:
        lines += ["", heading(t, doc) + ".", "", md(HEAD), "|---|--:|--:|--:|--:|---|---|"]
        lines += [md(row(p)) for p in t["points"]]
    if doc["skipped"]:
        lines += ["", "Skipped:"] + [f"- {s['tool']}: {s['reason']}" for s in doc["skipped"]]
    return "\n".join(lines) + "\n"
