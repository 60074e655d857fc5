import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import fixtures  # noqa: E402

# The registry of a result file that carries none (the fixtures' files): the built ipclab's, as
# `ipclab report` gives it (report/ipclab_report/registry.py).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("IPCLAB_BIN", os.path.join(REPO, "build", "release", "ipclab"))
if not os.access(os.environ["IPCLAB_BIN"], os.X_OK):
    pytest.exit(f"{os.environ['IPCLAB_BIN']} is not built: the report reads its registry; run `make build` first "
                "(or set IPCLAB_BIN)", returncode=2)


@pytest.fixture(scope="session")
def results(tmp_path_factory):
    """Two realistic result files: lab1 with the harness's aggregates, lab2 with iterations only."""
    d = tmp_path_factory.mktemp("results")
    lab1 = fixtures.write(d / "lab1.json", fixtures.make_result(samples=300))
    lab2 = fixtures.write(d / "lab2.json", fixtures.make_result(
        seed=2, hostname="lab2", kernel="6.8.0-31-generic", date="2024-05-02T09:30:00Z",
        aggregates=False, samples=300, speed={"messaging/pipe": 0.8}))
    return lab1, lab2


@pytest.fixture(scope="session")
def report_html(results, tmp_path_factory):
    from ipclab_report.cli import main

    out = tmp_path_factory.mktemp("report") / "report.html"
    md = out.with_suffix(".md")
    assert main(["report", *results, "-o", str(out), "--markdown", str(md)]) == 0
    return out


@pytest.fixture(scope="session")
def draw():
    """draw(fn) -> (fn's result, what the plots drew while it ran): {figure title: [one dict per axes:
    title (or the left one), lines [(label, xs, ys)] (helper lines too: an axvline's xs are [x, x]),
    styles [(colour, marker)] of those lines, images (the masked arrays shown), bars [(category,
    width)] of a one-series bar chart, dots [(category, x)] of a one-series dot chart (bars on a log
    axis), xlabel, ylabel, errorbars (how many error-bar sets), xticks and their labels, xscale, visible]}.
    The figure's title is its suptitle, else its first axes'."""
    from ipclab_report import plots

    def run(fn):
        drawn = {}
        original = plots._svg_uri

        def keep(fig):
            title = fig._suptitle.get_text() if fig._suptitle else fig.axes[0].get_title()
            drawn[title] = [{"title": ax.get_title() or ax.get_title(loc="left"), "xscale": ax.get_xscale(),
                             "xticks": list(ax.get_xticks()),
                             "xticklabels": [t.get_text() for t in ax.get_xticklabels()],
                             "visible": ax.get_visible(),
                             "lines": [(ln.get_label(), list(ln.get_xdata()), list(ln.get_ydata()))
                                       for ln in ax.get_lines()],
                             "styles": [(ln.get_color(), ln.get_marker()) for ln in ax.get_lines()],
                             "images": [im.get_array() for im in ax.get_images()],
                             "bars": [(t.get_text(), p.get_width()) for t, p in zip(ax.get_yticklabels(), ax.patches)],
                             "dots": [(t.get_text(), x)
                                      for t, x in zip(ax.get_yticklabels(), ax.get_lines()[0].get_xdata())]
                             if ax.get_lines() and not ax.patches and ax.get_yticklabels() else [],
                             "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                             "errorbars": len(ax.containers)}
                            for ax in fig.axes if ax.get_label() != "<colorbar>"]
            return original(fig)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(plots, "_svg_uri", keep)
            result = fn()
        return result, drawn
    return run
