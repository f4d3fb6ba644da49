"""Helpers for the browser tests: find Chromium, open a page with the network blocked, record what it did."""

from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import json
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from playwright.sync_api import TimeoutError as PlaywrightTimeout

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Belt and braces beside the request router below: no host name resolves except the local server.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("ATTN_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@dataclass
class Visit:
    """What a page did while it loaded: requests, failures, console output."""

    page: object
    local: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


ALL_DRAWN = """() =>
  [...document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')]
    .every(s => s.previousElementSibling && s.previousElementSibling.querySelector('.jupyter-widgets'))
  && [...document.querySelectorAll('[id^="bertviz-"]')].every(e => e.querySelector('svg line'))
  && [...document.querySelectorAll('.attn-viewer')].every(e => e.dataset.drawn)"""


def open_page(browser, base: str, path: str, *, viewport=(1280, 900)) -> Visit:
    """Open ``base + path`` in a fresh context; every request outside ``base`` is aborted and recorded."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, service_workers="block")
    page = context.new_page()
    visit = Visit(page)

    def route(route):
        url = route.request.url
        if url.startswith(base):
            visit.local.append(url)
            route.continue_()
        elif url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:
            visit.external.append(url)
            route.abort()

    def on_console(message):
        if message.type == "error":
            visit.errors.append(f"console: {message.text} ({message.location.get('url', '')})")
        elif message.type == "warning":
            visit.warnings.append(message.text)

    def on_dialog(dialog):
        visit.dialogs.append(dialog.message)
        dialog.dismiss()

    context.route("**/*", route)
    page.on("console", on_console)
    page.on("pageerror", lambda error: visit.errors.append(f"page error: {error}"))
    page.on("dialog", on_dialog)
    page.on("response", lambda r: r.status >= 400 and visit.failed.append(f"{r.status} {r.url}"))
    page.on("requestfailed", lambda r: r.url.startswith(base) and visit.failed.append(f"failed {r.url}"))
    page.goto(base + path, wait_until="load")
    if path == "index.html":  # the book's index redirects to its first page
        page.wait_for_url("**/book/intro.html")
    page.wait_for_load_state("networkidle")
    # MathJax 3 typesets after it starts; saved widgets, bertviz and attn's viewers draw after the load event.
    page.evaluate("async () => { if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; } }")
    with contextlib.suppress(PlaywrightTimeout):  # the page's checks then say what did not draw
        page.wait_for_function(ALL_DRAWN, timeout=30_000)
    return visit


@contextlib.contextmanager
def opened(browser, base: str, path: str) -> Iterator[Visit]:
    """``open_page``, then close the page's browser context however the block ends."""
    visit = open_page(browser, base, path)
    try:
        yield visit
    finally:
        visit.page.context.close()


def page_weight(folder: Path, urls: list[str]) -> dict[str, int]:
    """Bytes a page loaded from ``folder``: its own (HTML and images), all files, all files gzipped."""
    files = {}
    for url in urls:
        local = folder / urlparse(url).path.lstrip("/")
        if local.is_file():
            files[local] = local.read_bytes()
    return {
        "own": sum(len(b) for f, b in files.items() if f.suffix == ".html" or "_images" in f.parts),
        "total": sum(len(b) for b in files.values()),
        "gzip": sum(len(gzip.compress(b, 6)) for b in files.values()),
        "requests": len(urls),
    }


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def start_server(folder: Path) -> http.server.ThreadingHTTPServer:
    """A local HTTP server for ``folder`` on a free port, in a daemon thread (``server_port`` tells which)."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def expected_readout(data: dict, example: int, pos: list[int], i: int, j: int) -> str:
    """The readout the viewer must show for cell (i, j), computed from its embedded data."""
    x = data["examples"][example]
    nq, nk, offset = len(x["rows"]), len(x["cols"]), 0
    for axis, p in zip(data["axes"], pos, strict=True):
        offset = offset * len(axis["ticks"]) + p
    value = x["w"][offset * nq * nk + i * nk + j] / data["scale"]
    q, k = data["names"]
    # each token between Unicode isolates (FSI ... PDI): right-to-left text in one stays inside it
    iso = "\u2068{}\u2069".format
    row, col = iso(x["rows"][i]), iso(x["cols"][j])
    return f"{q} \u201c{row}\u201d ({i + 1}) \u2192 {k} \u201c{col}\u201d ({j + 1}): {value:.4f}"


def check_viewer(page, viewer) -> None:
    """Cells drawn, hovering reads out the embedded weight, every slider and the example menu redraw it."""
    data = json.loads(viewer.locator("script.av-data").text_content())
    pos = [0] * len(data["axes"])
    example = 0

    def hover_and_check(i: int, j: int) -> None:
        x = data["examples"][example]
        cells = viewer.locator(".av-cell")
        assert cells.count() == len(x["rows"]) * len(x["cols"])
        cells.nth(i * len(x["cols"]) + j).hover()
        assert viewer.locator(".av-readout").text_content() == expected_readout(data, example, pos, i, j)

    rows, cols = len(data["examples"][0]["rows"]), len(data["examples"][0]["cols"])
    grid = viewer.locator(".av-grid")
    # Park the mouse in the page's corner first: focusing scrolls the grid into view, and a pointer left over one of
    # its cells (from the previous viewer's hover checks) would pick that cell before the first key press.
    page.mouse.move(0, 0)
    grid.focus()
    for key in ("ArrowDown", "ArrowRight", "ArrowDown"):  # the first press shows cell (0, 0)
        grid.press(key)
    i, j = min(1, rows - 1), min(1, cols - 1)
    assert viewer.locator(".av-readout").text_content() == expected_readout(data, example, pos, i, j)
    hover_and_check(0, 0)
    hover_and_check(rows - 1, cols - 1)
    for a, axis in enumerate(data["axes"]):
        if len(axis["ticks"]) > 1:
            before = viewer.locator(".av-cell").evaluate_all("cs => cs.map(c => c.style.background).join()")
            viewer.locator(f"input.av-axis[data-axis='{axis['name']}']").fill(str(len(axis["ticks"]) - 1))
            pos[a] = len(axis["ticks"]) - 1
            after = viewer.locator(".av-cell").evaluate_all("cs => cs.map(c => c.style.background).join()")
            assert before != after, f"moving the {axis['name']} slider did not redraw"
            hover_and_check(rows - 1, 0)
    if len(data["examples"]) > 1:
        example = len(data["examples"]) - 1
        viewer.locator("select.av-example").select_option(str(example))
        x = data["examples"][example]
        hover_and_check(len(x["rows"]) - 1, len(x["cols"]) - 1)
