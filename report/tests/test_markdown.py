import json
import os
import re

import fixtures
from ipclab_report.cli import main
from ipclab_report import registry

# The columns of every result table, as the built ipclab defines them (output/columns.cpp).
COLUMNS = [c["key"] for c in registry.from_binary()["columns"]]


def _tables(md):
    """suite -> list of table lines."""
    out, cur = {}, None
    for line in md.splitlines():
        if line.startswith("## "):
            cur = line[3:]
            out[cur] = []
        elif cur and line.startswith("|"):
            out[cur].append(line)
    return out


def test_markdown_single_file_shape(tmp_path):
    doc = fixtures.make_result(samples=30)
    res = fixtures.write(tmp_path / "r.json", doc)
    md_path = tmp_path / "s.md"
    assert main(["report", res, "-o", str(tmp_path / "r.html"), "--markdown", str(md_path)]) == 0
    md = md_path.read_text()
    assert md.startswith("# ipclab results\n")
    assert "Machine: AMD EPYC 7B13" in md and "remedy: sysctl -w fs.mqueue.msg_max=64" in md
    tables = _tables(md)
    assert "Answers" in tables  # the first screen (the runtime switches here), before the suites
    del tables["Answers"]
    # After the suites, what the flags their rows show mean (the fixture's two-level series): no table.
    assert list(tables)[-1] == "What the flags mean, and what to do" and not tables.pop(list(tables)[-1])
    # The registry's order (that of `ipclab list`), then a suite it does not name.
    assert list(tables) == ["anchors", "cachecalc", "echo", "fileio", "messaging", "pingpong", "runtime",
                            "servers", "experimental"]
    names = {b["name"] for b in doc["benchmarks"]}
    mechs = {f'{b["suite"]}/{b["mechanism"]}' for b in doc["benchmarks"]}
    rows = 0
    for suite, lines in tables.items():
        assert lines[0] == "| " + " | ".join(COLUMNS) + " |"
        assert set(lines[1].strip("|").split("|")) <= {":--", "--:"}
        for ln in lines[2:]:
            cells = [c.strip() for c in ln.strip().strip("|").split(" | ")]
            assert len(cells) == len(COLUMNS), ln
            # The console's short name: suite/mechanism, then the parameters that vary (k:v, by blanks).
            short = cells[0].strip("`")
            assert short.startswith(suite + "/") and short.split(" ")[0] in mechs, short
            rows += 1
    assert rows == len(names)
    skipped = next(ln for ln in tables["servers"] if "servers/asio" in ln)
    assert "**SKIPPED**: Asio not found" in skipped and "| — |" in skipped


def test_markdown_side_by_side(results, report_html):
    md = report_html.with_suffix(".md").read_text()
    tables = _tables(md)
    assert tables["anchors"][0] == "| name | run | " + " | ".join(COLUMNS[1:]) + " |"
    lab1 = [ln for ln in tables["anchors"] if "| `anchors/null` |" in ln]
    assert len(lab1) == 2 and "lab1" in lab1[0] and "lab2" in lab1[1]


def test_pipes_are_escaped(tmp_path):
    doc = fixtures.make_result(suites=["anchors"], samples=10)
    for b in doc["benchmarks"]:
        if b["name"] == "anchors/getpid":
            b.update(status="failed", error="bad | pipe")
    res = fixtures.write(tmp_path / "r.json", doc)
    assert main(["report", res, "-o", str(tmp_path / "r.html"), "--markdown", str(tmp_path / "s.md")]) == 0
    assert "**FAILED**: bad \\| pipe" in (tmp_path / "s.md").read_text()


HOSTILE = {
    "hostname": "<script>alert(1)</script>",
    "kernel": '"><img src=x onerror=alert(2)>',
    "remote": "the remote side on lab9: <script>alert(3)</script>",
    "link": "[click](javascript:alert(4))",
    "iframe": "<iframe src=javascript:alert(5)>",
    "image": "![x](javascript:alert(6))",
    "code": "`</code><svg onload=alert(7)>`",
    "pipe": "a | b",
}
# What must never reach an output as it is: markup a renderer would run, a link it would follow
# (an unescaped ](javascript...: the link syntax), a code span broken out of.
RAW = [re.escape(x) for x in ("<script", "<img", "<iframe", "<svg", "javascript:", "onerror=alert(2)>")] + [
    r"(?<!\\)\]\(\s*javascript", r"(?<!\\)`</code>"]


def _hostile_result(tmp_path):
    """A real result (data/dev-result.json) whose every text a Markdown renderer could run: the
    context's hostname, kernel, CPU model, compiler, libraries, virtualisation, command line and
    warnings; a mechanism's name and a parameter's value; the error a remote side sent back."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "dev-result.json")) as f:
        doc = json.load(f)
    ctx = doc["context"]
    ctx.update(hostname=HOSTILE["hostname"], kernel=HOSTILE["kernel"], compiler=HOSTILE["iframe"],
               command_line="ipclab run " + HOSTILE["code"], virtualization=HOSTILE["link"],
               libraries={"evil": HOSTILE["image"]},
               warnings=[{"message": HOSTILE["link"], "remedy": HOSTILE["iframe"]},
                         {"message": HOSTILE["image"] + " " + HOSTILE["code"], "remedy": HOSTILE["code"]},
                         {"message": "load is high", "remedy": "stop other work (see `top`) and re-run"}])
    ctx["cpu"]["model"] = HOSTILE["image"]
    first = next(b["name"] for b in doc["benchmarks"] if b["suite"] == "messaging")
    for b in doc["benchmarks"]:
        if b["name"] == first:
            b.update(status="failed", error=HOSTILE["remote"])
        if b["mechanism"] == "posix_mq":  # a name and a value from the file
            b["mechanism"] = "mq" + HOSTILE["iframe"]
            b["params"]["queue_depth"] = HOSTILE["link"]
            b["name"] = b["name"].replace("/posix_mq/", "/mq" + HOSTILE["iframe"] + "/") + "/x:" + HOSTILE["pipe"]
    return fixtures.write(tmp_path / "hostile.json", doc)


def test_untrusted_strings_reach_markdown_and_pages_escaped(tmp_path):
    """Hostnames, kernel, environment, warnings, names, parameter values and a remote side's error
    are written so that no renderer runs them: no tag, no link, no broken-out code span, in the
    Markdown summary, in every page of --pages and in the README's table. They stay readable: the
    text is all there, its markup characters escaped. (All of it went out raw but for |.)"""
    res = _hostile_result(tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- reference:begin -->\n<!-- reference:end -->\n")
    pages = tmp_path / "pages"
    assert main(["report", res, "--markdown", str(tmp_path / "s.md"), "-o", str(tmp_path / "r.html")]) == 0
    assert main(["report", res, "--pages", str(pages), "--readme", str(readme)]) == 0
    outputs = {"summary": (tmp_path / "s.md").read_text(), "README": readme.read_text()}
    outputs.update({p.name: p.read_text() for p in pages.glob("*.md")})
    for name, md in outputs.items():
        for raw in RAW:
            assert not re.search(raw, md), (name, raw, [ln for ln in md.splitlines() if re.search(raw, ln)][:3])
    summary, page = outputs["summary"], outputs["messaging.md"]
    assert "Machine: !\\[x\\](javascript\u200b:alert(6))" in summary
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in summary and "**FAILED**: the remote side on lab9:" in summary
    assert "| kernel | &quot;&gt;&lt;img src=x onerror=alert(2)&gt; |" in page
    assert "- \\[click\\](javascript\u200b:alert(4)) — remedy: &lt;iframe src=javascript\u200b:alert(5)&gt;" in page
    # ordinary text as it was: names, the harness's own code spans, parentheses
    assert "| `messaging/shm_spsc" in summary and "| shm_spsc" in page
    assert "- load is high — remedy: stop other work (see `top`) and re-run" in page
    assert "remedy: stop other work (see `top`) and re-run" in summary
    # the HTML report escapes them too (jinja2's autoescape)
    html = (tmp_path / "r.html").read_text()
    for raw in ("<script>alert", "<img src=x", "<iframe", "<svg onload", 'href="javascript'):
        assert raw not in html, raw
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_text_code_and_prose_escape_markup_and_keep_ordinary_text():
    from ipclab_report.markdown import code, prose, text

    assert text('<a href="x">&</a>') == "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
    assert text("[t](u) ![i](u) `c` a|b \\ x") == "\\[t\\](u) !\\[i\\](u) \\`c\\` a\\|b \\\\ x"
    assert text("JavaScript:alert(1) data:x vbscript :y") == \
        "JavaScript\u200b:alert(1) data\u200b:x vbscript\u200b :y"
    assert text("line one\nline two") == "line one line two"
    plain = "unix_stream (34 benchmarks), 2 cores / 4 CPUs: p99 *high*"
    assert text(plain) == plain
    assert code("messaging/pipe size:64") == "`messaging/pipe size:64`"
    assert code("a|b") == "`a\\|b`" and code("a|b", in_table=False) == "`a|b`"
    assert code("x`y") == "x\\`y" and code("<b>") == "&lt;b&gt;" and code("javascript:x") == "javascript\u200b:x"
    assert prose("stop (see `top`) and `<b>`") == "stop (see `top`) and \\`&lt;b&gt;\\`"


def _parsed_tables(md):
    """The tables of `md` as markdown-it (CommonMark and GFM tables) reads them: each a list of rows,
    each row its cells' text (the header row first)."""
    from markdown_it import MarkdownIt

    tables, row = [], None
    for t in MarkdownIt("commonmark").enable("table").parse(md):
        if t.type == "table_open":
            tables.append([])
        elif t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append(t.content)
        elif t.type == "tr_close":
            tables[-1].append(row)
            row = None
    return tables


def test_summary_is_markdown_whose_tables_keep_their_shape(tmp_path):
    """summary.md read by a CommonMark parser: every table row has its header's cells, sys/op is left
    out where no record has kernel counters (not a column of — in every row), and a remedy is prose
    whose code spans survive a backtick inside them (a longer fence) and whose plain words stay words."""
    from markdown_it import MarkdownIt

    doc = fixtures.make_result(samples=10)
    for b in doc["benchmarks"]:
        b.pop("kernel", None)
    doc["context"]["warnings"] = [
        {"message": "queues are capped", "remedy": "run `` sysctl -w a=`b` `` (as root), then re-run"},
        {"message": "virtualised", "remedy": "compare only runs from the same machine"},
    ]
    res = fixtures.write(tmp_path / "r.json", doc)
    assert main(["report", res, "-o", str(tmp_path / "r.html"), "--markdown", str(tmp_path / "s.md")]) == 0
    md = (tmp_path / "s.md").read_text()
    tables = _parsed_tables(md)
    assert len(tables) >= 9  # the answers and a table per suite
    for t in tables:
        assert all(len(r) == len(t[0]) for r in t), t[0]
    suites = [t for t in tables if "time/op" in t[0]]
    assert suites and all("latency" in t[0] and "p50" in t[0] for t in suites), "the latency's kind beside it"
    assert not any("sys/op" in t[0] for t in tables), "no record here has kernel counters: no column of —"
    codes = [c.content for t in MarkdownIt("commonmark").parse(md) if t.type == "inline"
             for c in t.children or [] if c.type == "code_inline"]
    assert "sysctl -w a=`b`" in codes, codes
    assert "compare only runs from the same machine" not in codes, "prose is no code span"
    assert "remedy: compare only runs from the same machine" in md


def test_prose_keeps_code_spans_whole_whatever_backticks_they_hold():
    from ipclab_report.markdown import prose

    assert prose("run ``a`b`` now") == "run ``a`b`` now"
    assert prose("see `top`, a lone ` tick") == "see `top`, a lone \\` tick"
    assert prose("`` `x` ``") == "`` `x` ``"


def test_what_moved_since_the_last_comparable_run_is_said(tmp_path):
    """The run's comparison with the store (extra.since on its summaries) reaches summary.md and the
    page: the run compared with once, each benchmark that moved with its size and interval, and a
    count of the others; a benchmark within its band is not listed by name."""
    doc = fixtures.make_result(samples=50)
    aggs = [b for b in doc["benchmarks"]
            if b.get("run_type") == "aggregate" and (b.get("aggregate_name") or "median") == "median"]
    base = {"run_id": "r-1", "date": "2026-11-28T10:02:00Z", "git_sha": "abc123def456", "kernel": "Linux 6.18.44",
            "median": 412.0, "n": 5}
    aggs[0].setdefault("extra", {})["since"] = {"verdict": "slower", "metric": "time/op", "ratio": 1.104, "ci": [1.071, 1.136],
                                 "p": 0.008, "band": 0.05, "band_source": "threshold", "median": 455.0, "n": 5,
                                 "base": base}
    for b in aggs[1:]:
        b.setdefault("extra", {})["since"] = {"verdict": "no change", "metric": "time/op", "ratio": 1.01, "ci": [0.98, 1.03],
                               "p": 0.5, "band": 0.05, "median": 1.0, "n": 5, "base": base}
    src = fixtures.write(tmp_path / "r.json", doc)
    md, page = tmp_path / "s.md", tmp_path / "r.html"
    assert main(["report", str(src), "--markdown", str(md), "-o", str(page)]) == 0
    text = md.read_text()
    assert "## Since the last comparable run in the store (2026-11-28 10:02 UTC, abc123def456, Linux 6.18.44)" in text
    assert f"`{aggs[0]['name']}`: slower: time/op +10.4% \\[+7.1%, +13.6%\\], 412 ns → 455 ns" in text
    assert f"- {len(aggs) - 1} of {len(aggs)} benchmarks: no change beyond their noise band" in text
    assert aggs[1]["name"] not in text.split("## Since")[1].split("##")[0]
    html = page.read_text()
    assert 'id="since"' in html and "slower: time/op +10.4%" in html
