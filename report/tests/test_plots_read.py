"""Charts made for their suites (issue 36, "Plots a person reads"): the runtime suite as small
multiples of bars, bulk as GiB/s and CPU per MiB against the size, short labels with the full name
in the data table, a distinct look for every series."""

import random
import re

import pytest

import fixtures
from ipclab_report import plots
from ipclab_report.cli import main
from ipclab_report.model import anchor

KiB, MiB = 1 << 10, 1 << 20
SIZES = (64 * KiB, MiB, 16 * MiB)
# GiB/s of each bulk series at each size, and its CPU (user, sys) in µs per MiB.
BULK = {("memfd", "ring"): (6.0, 12.0, 9.0), ("memfd", "seal"): (2.0, 5.0, 7.0),
        ("pipe", None): (1.5, 2.5, 1.0), ("shm_bulk", None): (4.0, 8.0, 3.0)}


def section(html, suite):
    return re.search(rf'<section id="{anchor(suite)}" class="suite">(.*?)</section>', html, re.S).group(1)


def _bulk_doc():
    rng = random.Random(5)
    benchmarks = []
    for (mech, handoff), gibs in BULK.items():
        for pattern in ("throughput", "roundtrip"):
            for placement in ("same", "cross"):
                for size, g in zip(SIZES, gibs):
                    params = {"pattern": pattern, "size": size, "mode": "threads", "placement": placement,
                              "verify": "full"} | ({"handoff": handoff} if handoff else {})
                    ns = size / (g * (1 << 30)) * 1e9
                    bulk = {"GiB_per_s": g if placement == "same" else g / 2, "cpu_user_us_per_MiB": 10.0 * g,
                            "cpu_sys_us_per_MiB": 100.0 + size / MiB}
                    spec = ("bulk", mech, params, ns, size, None, 1.0, None, "ok", None)
                    iters = fixtures.iterations(spec, rng, repetitions=3, samples=20, extra={"bulk": bulk})
                    benchmarks += iters + [fixtures._aggregate(iters)]
    return {"schema_version": 1, "context": fixtures.context(), "benchmarks": benchmarks}


@pytest.fixture(scope="module")
def bulk(tmp_path_factory, draw):
    d = tmp_path_factory.mktemp("bulk")
    res = fixtures.write(d / "b.json", _bulk_doc())
    out = d / "b.html"
    rc, drawn = draw(lambda: main(["report", res, "-o", str(out)]))
    assert rc == 0
    return out.read_text(), drawn


def test_bulk_draws_gib_per_s_against_the_size_on_a_log2_axis_in_kib_and_mib(bulk):
    html, drawn = bulk
    panels = drawn["Bulk throughput: GiB/s vs size"]
    assert [p["title"] for p in panels] == ["placement = same", "placement = cross"]
    for p in panels:
        assert p["xscale"] == "log" and p["xticks"] == list(SIZES)
        assert [t.replace("\u2009", " ") for t in p["xticklabels"]] == ["64 KiB", "1 MiB", "16 MiB"]
        # one line per mechanism and variant, through the records' own GiB/s
        lines = {label: (xs, ys) for label, xs, ys in p["lines"]}
        assert set(lines) == {"memfd, handoff=ring", "memfd, handoff=seal", "pipe", "shm_bulk"}
        half = 1 if p["title"].endswith("same") else 2
        for (mech, handoff), gibs in BULK.items():
            xs, ys = lines[mech + (f", handoff={handoff}" if handoff else "")]
            assert xs == list(SIZES) and ys == pytest.approx([g / half for g in gibs])


def test_bulk_draws_cpu_per_mib_and_round_trips_and_no_generic_chart(bulk):
    html, drawn = bulk
    for p in drawn["Bulk CPU per MiB moved vs size"]:
        lines = {label: ys for label, _, ys in p["lines"]}
        # user + sys, µs per MiB, drawn in ns
        assert lines["pipe"] == pytest.approx([(10.0 * g + 100.0 + s / MiB) * 1e3
                                               for g, s in zip(BULK[("pipe", None)], SIZES)])
    assert len(drawn["Bulk round trip vs size"]) == 2
    body = section(html, "bulk")
    assert 'alt="Time per operation' not in body  # every record is in a chart made for it


def test_runtime_is_one_panel_per_operation_with_a_bar_per_runtime_fastest_first(tmp_path, draw):
    doc = fixtures.make_result(suites=["runtime"], samples=20)
    res = fixtures.write(tmp_path / "r.json", doc)
    rc, drawn = draw(lambda: main(["report", res, "-o", str(tmp_path / "r.html")]))
    assert rc == 0
    panels = [p for p in drawn["Time per operation by operation and runtime"] if p["visible"]]
    assert [p["title"] for p in panels] == ["spawn", "switch"]
    want = {(b["mechanism"], b["params"]["n"]): b["time_per_op_ns"] for b in doc["benchmarks"]
            if b["run_type"] == "aggregate"}
    for p in panels:
        names = [name for name, _ in p["bars"]]
        assert sorted(names) == ["asio", "go", "ipcrt", "tokio_ct"]   # tokio_ct: one runtime, not "ct"
        widths = [w for _, w in p["bars"]]
        assert widths == sorted(widths)
        # n held at its most common value (each once here: the first, 131072)
        assert widths == pytest.approx([want[(f"{p['title']}_{name}", 131072)] for name in names])
    assert "Held at the most common value per operation: n=131072" in (tmp_path / "r.html").read_text()


def test_operation_and_runtime_are_read_off_the_names():
    names = ["channel_ipcrt", "channel_tokio_ct", "channel_tokio_mt", "channel_compio", "channel_futures_compio",
             "channel_pairs_futures_compio", "channel_pairs_compio", "channel_pairs_ipcrt", "spawn_ipcrt",
             "spawn_tokio_ct", "spawn_compio", "switch_many_go", "switch_go", "spawn_go"]
    got = plots.split_operation(names)
    assert got["channel_tokio_ct"] == ("channel", "tokio_ct")
    assert got["channel_futures_compio"] == ("channel_futures", "compio")
    assert got["channel_pairs_futures_compio"] == ("channel_pairs_futures", "compio")
    assert got["channel_pairs_ipcrt"] == ("channel_pairs", "ipcrt")
    assert got["switch_many_go"] == ("switch_many", "go")
    assert plots.split_operation(["spawn_asio", "spawn_ipcrt"]) == {"spawn_asio": ("spawn", "asio"),
                                                                    "spawn_ipcrt": ("spawn", "ipcrt")}


def test_a_peer_servers_long_parameters_are_no_label_and_stay_in_the_data_table(tmp_path, draw):
    doc = fixtures.make_result(suites=["servers"], samples=20)
    rng = random.Random(2)
    path = "/home/someone/src/ipclab/tests/servers/servers_server.py"
    for clients in (100, 1000):
        spec = ("servers", "peer", {"clients": clients, "address": "stdout", "server": path, "server_args": "none"},
                200_000, 0, "session", 0.8, "servers", "ok", None)
        iters = fixtures.iterations(spec, rng, repetitions=3, samples=50)
        doc["benchmarks"] += iters + [fixtures._aggregate(iters)]
    res = fixtures.write(tmp_path / "s.json", doc)
    rc, drawn = draw(lambda: main(["report", res, "-o", str(tmp_path / "s.html")]))
    assert rc == 0
    lat = drawn["Session latency percentiles per server model"][0]
    assert lat["xscale"] == "log" and not lat["bars"]   # a log axis gets dots, never bars
    labels = [name for name, _ in lat["dots"]]
    assert "peer clients:100" in labels and "peer clients:1000" in labels
    assert not any(path in label or "server_args" in label for label in labels)
    html = (tmp_path / "s.html").read_text()
    assert f'title="servers/peer/clients:100/address:stdout/server:{path}/server_args:none"' in html
    # lost is 0 for every model: said under the chart, not drawn as empty bars
    assert "Zero on every bar, so not drawn: lost." in section(html, "servers")


def test_every_series_has_its_own_colour_and_marker():
    assert len({plots.style(i) for i in range(60)}) == 60
    assert plots.style(len(plots.PALETTE))[0] == plots.style(0)[0]  # the colours come round again...
    assert plots.style(len(plots.PALETTE))[1] != plots.style(0)[1]  # ...with another marker


def test_fifteen_transports_are_fifteen_looks(tmp_path, draw):
    rng = random.Random(4)
    benchmarks = []
    for i in range(15):
        for size in (64, 8192):
            spec = ("messaging", f"transport{i:02d}", {"pattern": "throughput", "size": size}, 1000 + 100 * i,
                    size, None, 1.0, None, "ok", None)
            iters = fixtures.iterations(spec, rng, repetitions=1, samples=20)
            benchmarks += iters + [fixtures._aggregate(iters)]
    res = fixtures.write(tmp_path / "m.json", {"schema_version": 1, "context": fixtures.context(),
                                               "benchmarks": benchmarks})
    rc, drawn = draw(lambda: main(["report", res, "-o", str(tmp_path / "m.html")]))
    assert rc == 0
    styles = drawn["Messages per second vs message size"][0]["styles"]
    assert len(styles) == 15 and len(set(styles)) == 15
