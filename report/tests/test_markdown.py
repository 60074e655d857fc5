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
    assert "Machine: AMD EPYC 7B13" in md and "remedy: `sysctl -w fs.mqueue.msg_max=64`" in md
    tables = _tables(md)
    assert "Answers" in tables  # the first screen (the runtime switches here), before the suites
    del tables["Answers"]
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
