"""Screenshots of one trace in the Phoenix UI, taken by headless Chromium over the DevTools protocol.

Runs in Phoenix's venv (.venv-traces, for `websockets`); `run.py screenshot` calls it with the
trace's spans. For each span given, it opens Phoenix's own link to that span (the trace's tree,
that span selected, its attributes beside it), widens the tree so the span names are readable,
waits until the attributes are drawn, and writes a PNG.

Chromium gets a fresh profile and every switch that stops its calls home (background networking,
component updates, sync, QUIC), and a resolver that answers no name at all: the page is on
127.0.0.1, so a request for anything else fails instead of leaving the machine.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-breakpad", "--hide-scrollbars", "--force-device-scale-factor=1",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
)
# Tall enough for the whole tree of a semantic_search (28 spans) without scrolling, wide enough
# for the tree and for the attribute table's longest keys beside it.
WIDTH, HEIGHT = 1920, 1680
# Where the span tree's right edge goes: wide enough for nested span names and their timing
# bars, leaving the details about 1000 px for the attribute table.
TREE_RIGHT_EDGE_PX = 900
# The attribute table's Key column (320 px by default): room for `codecompass.<service>.<longest>`.
KEY_COLUMN_PX = 430
# The trace panel slides over the project's spans table: pulled left, it has the page.
TRACE_PANEL_LEFT_PX = 60
PAGE_TIMEOUT_S = 60.0
CHROMIUM_START_S = 30.0


class DevTools:
    """One page target of a Chromium over its DevTools websocket (commands answered in order)."""

    def __init__(self, socket: ClientConnection) -> None:
        self._socket = socket
        self._ids = itertools.count(1)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        self._socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self._socket.recv(timeout=PAGE_TIMEOUT_S))
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, what: str) -> Any:
        deadline = time.monotonic() + PAGE_TIMEOUT_S
        while not (value := self.evaluate(expression)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the page did not show {what} within {PAGE_TIMEOUT_S:.0f} s")
            time.sleep(0.25)
        return value

    def drag(self, start: tuple[float, float], end: tuple[float, float]) -> None:
        # `buttons` is the held buttons' mask: without it a move is a hover, not a drag.
        mouse = {"button": "left", "buttons": 1}
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=start[0], y=start[1])
        self.call("Input.dispatchMouseEvent", type="mousePressed", x=start[0], y=start[1], clickCount=1, **mouse)
        for step in range(1, 11):
            x = start[0] + (end[0] - start[0]) * step / 10
            self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=end[1], **mouse)
        self.call("Input.dispatchMouseEvent", type="mouseReleased", x=end[0], y=end[1], clickCount=1,
                  button="left", buttons=0)
        # Away from the handle, whose hover highlight would show in the picture.
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=0, y=end[1])


def start_chromium(profile: Path) -> tuple[subprocess.Popen, str]:
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("chromium is not installed; `make traces-screenshot` installs it (apt-get install chromium)")
    # A session of its own: Chromium's helper processes go with it (stop_chromium).
    process = subprocess.Popen([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                f"--window-size={WIDTH},{HEIGHT}", "--remote-debugging-port=0", "about:blank"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    # Chromium writes the port it chose, then the browser's websocket path, into this file.
    active = profile / "DevToolsActivePort"
    deadline = time.monotonic() + CHROMIUM_START_S
    while not (active.exists() and len(active.read_text().split()) == 2):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            sys.exit("chromium did not open its DevTools port")
        time.sleep(0.1)
    port = active.read_text().split()[0]
    return process, port


def page_socket(port: str) -> str:
    from urllib.request import urlopen

    with urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
        pages = [t for t in json.load(response) if t.get("type") == "page"]
    return pages[0]["webSocketDebuggerUrl"]


# Phoenix's resize handles, found by where they stand: the trace panel's left edge (a tall
# separator from the page's top, beside the spans table) and the handle between the span tree and
# the span's details (the leftmost tall one below the trace's header).
_HANDLE = """(() => {
  const tall = [...document.querySelectorAll('[role=separator]')].map(h => h.getBoundingClientRect())
    .filter(r => r.height > 300 && r.width < 40).filter(r => %s);
  tall.sort((a, b) => a.left - b.left);
  return tall.length ? [tall[0].left + tall[0].width / 2, tall[0].top + tall[0].height / 2] : null;
})()"""
TRACE_PANEL_EDGE = _HANDLE % "r.top < 100 && r.left > 100"
TREE_EDGE = _HANDLE % "r.top >= 100"
# The attribute table's Key column: its left edge and its resizer's middle.
_KEY_COLUMN = """(() => {
  const th = [...document.querySelectorAll('th')]
    .find(h => h.textContent.trim() === 'Key' && h.querySelector('.resizer'));
  if (!th) return null;
  const r = th.getBoundingClientRect(), handle = th.querySelector('.resizer').getBoundingClientRect();
  return [r.left, handle.left + handle.width / 2, handle.top + handle.height / 2];
})()"""


def shoot(page: DevTools, url: str, span_name: str, out: Path) -> None:
    page.call("Page.navigate", url=url)
    # The selected span's name heads the details, and its attribute rows are drawn.
    page.wait_for(f"""(() => {{
      const text = document.body ? document.body.innerText : '';
      return text.includes('Attributes') && [...document.querySelectorAll('h1,h2,h3,span,div')]
        .some(e => e.childElementCount === 0 && e.textContent === {json.dumps(span_name)})
        && text.includes('codecompass.');
    }})()""", f"the span {span_name} and its attributes")
    # Phoenix's own navigation adds nothing to a trace: folded away, the trace gets its width.
    page.evaluate("document.querySelector('button[aria-label=\"Collapse side navigation\"]')?.click()")
    time.sleep(0.5)
    # The layout persists between pages, so each handle goes to one place, not a distance.
    edge = page.evaluate(TRACE_PANEL_EDGE)
    if edge is not None:
        page.drag((edge[0], edge[1]), (TRACE_PANEL_LEFT_PX, edge[1]))
        time.sleep(0.5)
    handle = page.wait_for(TREE_EDGE, "the tree's resize handle")
    page.drag((handle[0], handle[1]), (TREE_RIGHT_EDGE_PX, handle[1]))
    time.sleep(0.5)
    column = page.wait_for(_KEY_COLUMN, "the attribute table")
    page.drag((column[1], column[2]), (column[0] + KEY_COLUMN_PX, column[2]))
    page.evaluate("window.getSelection().removeAllRanges()")
    time.sleep(1.0)  # the panel re-lays out its rows after the drag
    shot = page.call("Page.captureScreenshot", format="png")
    out.write_bytes(base64.b64decode(shot["data"]))
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB)", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="Phoenix's UI, e.g. http://127.0.0.1:6006")
    parser.add_argument("--shot", action="append", required=True, metavar="SPAN_NAME=SPAN_ID=PNG",
                        help="a span to select and the file to write (repeatable)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codecompass-chromium-") as profile:
        process, port = start_chromium(Path(profile))
        try:
            with connect(page_socket(port), max_size=64 * 1024 * 1024) as socket:
                page = DevTools(socket)
                page.call("Page.enable")
                page.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1,
                          mobile=False)
                for shot in args.shot:
                    name, span_id, png = shot.split("=", 2)
                    shoot(page, f"{args.base_url}/redirects/spans/{span_id}", name, Path(png))
        finally:
            stop_chromium(process)
    return 0


def stop_chromium(process: subprocess.Popen) -> None:
    """The browser and its helpers (its process group), before their profile folder is removed."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass
    # The helpers exit a moment after the browser; their profile files with them.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
