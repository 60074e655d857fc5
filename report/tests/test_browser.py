"""Real-browser check: headless Chromium (Debian's `chromium`, scripts/setup.sh installs it) loads
the report as a reader would: no script error, no chart that failed to load or drew nothing, and
the page before the full tables at most about 8 screens at 1400 px wide. The screenshot stays
under pytest's base temp dir (screenshots/) and its path is printed; `inspect(..., screenshot=)`
takes the whole page."""

import base64
import io
import re

import pytest

import fixtures
from ipclab_report.browser import inspect
from ipclab_report.model import anchor
from ipclab_report.screenshot import find_chromium, screenshot

SCREENS = 8          # the page before the full tables, in screens of SCREEN px at WIDTH px wide
SCREEN, WIDTH = 900, 1400
MIN_INK = 0.0002     # the share of a chart's pixels in colour below which it drew nothing


@pytest.fixture(scope="module")
def browser():
    path = find_chromium()
    if path is None:
        pytest.skip("chromium is not installed (apt-get install chromium, or set IPCLAB_CHROMIUM)")
    return path


def _pixels(png):
    import matplotlib.image as mpimg

    return mpimg.imread(str(png))


def test_the_report_loads_without_error_and_every_chart_draws(browser, report_html, capsys):
    seen = inspect(str(report_html), WIDTH, SCREEN)
    with capsys.disabled():
        print(f"\nreport: {seen['height']} px, {seen['before_tables']:.0f} px before the full tables")
    assert seen["errors"] == []
    charts = seen["charts"]
    assert len(charts) >= len(fixtures.SUITES)
    for c in charts:
        assert c["complete"] and c["natural"] > 0, f"{c['alt']}: the image did not load"
        assert c["ink"] is not None and c["ink"] > MIN_INK, f"{c['alt']}: an empty chart ({c['ink']})"
        assert c["hidden"] or c["height"] > 100, f"{c['alt']}: laid out {c['height']:.0f} px high"
    assert seen["before_tables"] <= SCREENS * SCREEN


def test_the_check_sees_a_script_error_and_an_empty_chart(browser, tmp_path):
    """The browser check can fail: a page with a console error, an exception and a chart of bare
    axes is caught on all three."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.set_xlabel("x (ns)")
    buf = io.BytesIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    uri = "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode()
    page = tmp_path / "bad.html"
    page.write_text(f'<!doctype html><figure><img alt="bare" src="{uri}"></figure>'
                    '<script>console.error("boom"); no_such_function();</script>')
    seen = inspect(str(page), WIDTH, SCREEN)
    assert any("boom" in e for e in seen["errors"]) and any("no_such_function" in e for e in seen["errors"])
    assert seen["charts"][0]["ink"] <= MIN_INK


def test_report_renders_in_chromium(browser, report_html, tmp_path_factory, capsys):
    shots = tmp_path_factory.getbasetemp() / "screenshots"
    shots.mkdir(exist_ok=True)
    top = screenshot(str(report_html), str(shots / "report.png"), 1280, 2000)
    with capsys.disabled():
        print(f"\nscreenshot: {top}")
    img = _pixels(top)
    assert img.shape[0] == 2000 and img.shape[1] == 1280
    rgb = img[..., :3]
    assert rgb.std() > 0.05, f"{top} looks blank"
    # not one flat colour: plenty of distinct rows of content
    assert (rgb.std(axis=(1, 2)) > 0.01).mean() > 0.3
    html = report_html.read_text()
    ids = set(re.findall(r'<section id="([^"]+)"', html))
    assert {anchor(s) for s in fixtures.SUITES} | {"environment"} <= ids


def test_screenshot_command(browser, report_html, tmp_path, capsys):
    from ipclab_report.cli import main

    out = tmp_path / "shot.png"
    assert main(["screenshot", str(report_html), str(out), "--height", "900"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert _pixels(out).shape[:2] == (900, 1280)
