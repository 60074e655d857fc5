"""Real-browser check: headless Chromium renders the report; the PNG must not be blank.

The screenshots stay under pytest's base temp dir (screenshots/) and their paths are printed.
"""

import re

import pytest

import fixtures
from ipclab_report.model import anchor
from ipclab_report.screenshot import find_chromium, screenshot


@pytest.fixture(scope="module")
def browser():
    path = find_chromium()
    if path is None:
        pytest.skip("chromium is not installed (apt-get install chromium, or set IPCLAB_CHROMIUM)")
    return path


def _pixels(png):
    import matplotlib.image as mpimg

    return mpimg.imread(str(png))


def test_report_renders_in_chromium(browser, report_html, tmp_path_factory, capsys):
    shots = tmp_path_factory.getbasetemp() / "screenshots"
    shots.mkdir(exist_ok=True)
    top = screenshot(str(report_html), str(shots / "report.png"), 1280, 2000)
    full = screenshot(str(report_html), str(shots / "report-full.png"), 1280, 12000)
    with capsys.disabled():
        print(f"\nscreenshots: {top}\n             {full}")
    for png, height in ((top, 2000), (full, 12000)):
        img = _pixels(png)
        assert img.shape[0] == height and img.shape[1] == 1280
        rgb = img[..., :3]
        assert rgb.std() > 0.05, f"{png} looks blank"
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
