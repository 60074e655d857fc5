"""Render an HTML file to a PNG with headless Chromium (the same code the browser test uses)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from .util import UsageError

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """$IPCLAB_CHROMIUM, else the first Chromium-like browser on PATH."""
    env = os.environ.get("IPCLAB_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(html_path: str, png_path: str, width: int = 1280, height: int = 2000,
               timeout: float = 120.0) -> str:
    """Screenshot `html_path` into `png_path` (atomically); returns png_path."""
    browser = find_chromium()
    if browser is None:
        raise UsageError("no Chromium found; install it (apt-get install chromium) or set IPCLAB_CHROMIUM")
    if not os.path.isfile(html_path):
        raise UsageError(f"{html_path}: no such file; pass an HTML report written by `report -o`")
    out_dir = os.path.dirname(os.path.abspath(png_path))
    if not os.path.isdir(out_dir):
        raise UsageError(f"output directory {out_dir} does not exist; create it first")
    fd, tmp_png = tempfile.mkstemp(prefix=".tmp-", suffix=".png", dir=out_dir)
    os.close(fd)
    with tempfile.TemporaryDirectory(prefix="ipclab-chromium-") as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--hide-scrollbars", "--disable-dev-shm-usage",
               f"--user-data-dir={profile}", f"--window-size={width},{height}",
               f"--screenshot={tmp_png}", "file://" + os.path.abspath(html_path)]
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=timeout, text=True)
        except subprocess.TimeoutExpired:
            os.unlink(tmp_png)
            raise RuntimeError(f"chromium did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0 or os.path.getsize(tmp_png) == 0:
        os.unlink(tmp_png)
        tail = (proc.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"chromium exited {proc.returncode}: {tail[0]}")
    os.replace(tmp_png, png_path)
    return png_path
