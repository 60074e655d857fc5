"""Load an HTML file in headless Chromium and read what a reader would see: the script errors it
raised, the page's height at a given width, and every chart (<figure> image) as drawn. Chromium is
driven over its DevTools protocol on a pipe (`--remote-debugging-pipe`: fds 3 and 4, messages
ending in NUL), so nothing beyond Debian's chromium and the standard library is needed."""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import tempfile
import time

from .screenshot import find_chromium
from .util import UsageError

# Run in the page once it has loaded: its height, the height before the full tables (the section
# #tables; in a report that interleaves them, the height without each "All results" table), and
# per chart whether its image decoded, the size it was laid out at and the share of its pixels in
# colour (ink: the series are drawn in colour, axes, grid and labels in grey, so a chart with no
# mark on it has none).
_MEASURE = """(() => {
  const h = document.documentElement.scrollHeight;
  // the share of an image's pixels in colour: the marks it drew (axes, grid and text are grey)
  const ink = img => {
    if (!img.naturalWidth) return 0;
    const c = document.createElement('canvas');
    c.width = Math.min(img.naturalWidth, 800); c.height = Math.round(c.width * img.naturalHeight / img.naturalWidth);
    const g = c.getContext('2d'); g.fillStyle = '#fff'; g.fillRect(0, 0, c.width, c.height);
    g.drawImage(img, 0, 0, c.width, c.height);
    let d;
    try { d = g.getImageData(0, 0, c.width, c.height).data; } catch (e) { return null; }  // not ours to read
    let n = 0;
    for (let i = 0; i < d.length; i += 4)
      if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 40) n++;
    return n / (d.length / 4);
  };
  // the full tables: each suite's "All results" heading and the table under it
  let tables = 0;
  for (const h3 of document.querySelectorAll('h3')) {
    if (h3.textContent.trim().startsWith('All results')) {
      let e = h3; const top = e.getBoundingClientRect().top;
      while (e.nextElementSibling) e = e.nextElementSibling;
      tables += e.getBoundingClientRect().bottom - top;
    }
  }
  const end = document.getElementById('tables');   // where the full tables begin, when they are gathered
  const before = end ? end.getBoundingClientRect().top + window.scrollY : h - tables;
  const charts = [...document.querySelectorAll('figure img')].map(img => ({
    alt: img.alt, complete: img.complete, natural: img.naturalWidth,
    width: img.getBoundingClientRect().width, height: img.getBoundingClientRect().height,
    hidden: img.closest('details') !== null && !img.closest('details').open, ink: ink(img)}));
  return JSON.stringify({height: h, before_tables: before, charts: charts});
})()"""


class _Pipe:
    def __init__(self, proc, write_fd, read_fd):
        self.proc, self.w, self.r = proc, write_fd, read_fd
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError("chromium did not answer in time")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed its DevTools pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=30.0):
        want = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError(f"chromium: {method}: {msg['error'].get('message')}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method, timeout=60.0):
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read(deadline)
            if msg.get("method") == method:
                return msg
            self.events.append(msg)


def _errors(events) -> list:
    """The script errors and error-level console messages among the events received."""
    out = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("exception: " + str(d.get("exception", {}).get("description") or d.get("text")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description", "")))
                                                               for a in p.get("args", [])))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append("log: " + str(p["entry"].get("text")))
    return out


def inspect(html_path: str, width: int = 1400, height: int = 900, screenshot: str | None = None,
            timeout: float = 60.0) -> dict:
    """Load `html_path` at `width` x `height` and return {height, before_tables, charts, errors}
    (charts: one dict per figure image: alt, complete, natural width, laid-out width and height,
    hidden behind a closed <details>). `screenshot`: also write the whole page there as a PNG."""
    browser = find_chromium()
    if browser is None:
        raise UsageError("no Chromium found; install it (apt-get install chromium) or set IPCLAB_CHROMIUM")
    if not os.path.isfile(html_path):
        raise UsageError(f"{html_path}: no such file; pass an HTML report written by `report -o`")
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()
    with tempfile.TemporaryDirectory(prefix="ipclab-chromium-") as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", "--disable-dev-shm-usage", "--remote-debugging-pipe",
               f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"]

        def fds():   # in the child: its fd 3 reads what we write, its fd 4 writes what we read
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)   # out of the way of 3 and 4
            os.dup2(r, 3)
            os.dup2(w, 4)

        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, preexec_fn=fds, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        pipe = _Pipe(proc, to_chrome_w, from_chrome_r)
        try:
            target = pipe.call("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
            sid = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                pipe.call(f"{domain}.enable", session=sid)
            pipe.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                             "deviceScaleFactor": 1, "mobile": False}, session=sid)
            pipe.call("Page.navigate", {"url": "file://" + os.path.abspath(html_path)}, session=sid)
            pipe.wait_event("Page.loadEventFired", timeout=timeout)
            got = pipe.call("Runtime.evaluate", {"expression": _MEASURE, "returnByValue": True},
                            session=sid, timeout=timeout)
            out = json.loads(got["result"]["value"])
            if screenshot:
                shot = pipe.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                            "clip": {"x": 0, "y": 0, "width": width,
                                                                     "height": out["height"], "scale": 1}},
                                 session=sid, timeout=timeout)
                with open(screenshot, "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
            out["errors"] = _errors(pipe.events)
            try:
                pipe.call("Browser.close", timeout=5)
            except RuntimeError:
                pass
            return out
        finally:
            os.close(to_chrome_w)
            os.close(from_chrome_r)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
