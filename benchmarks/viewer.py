"""attn's attention viewer against bertviz's head view in headless Chromium, and the built book's page weights.

Prints, measured in one run (network blocked, the vendored JavaScript served locally):

1. for BERT-sized attention (6 layers x 12 heads of ``(T, T)`` softmax weights, one sentence), attn's
   ``attention_viewer`` against bertviz's ``head_view`` on the same weights: the fragment's size, the time
   from navigation until it has drawn, the time to redraw for another head (attn) or layer (bertviz), timed
   in the page, and the JavaScript heap in use after drawing, each the median over fresh loads; ratios are
   attn / bertviz;
2. (when ``_build/html`` exists, i.e. after ``make book``) every page of the book: its own HTML and images, all
   files it loads (raw and gzipped, as a server would send them) and the time until the network is idle.

    .venv/bin/python benchmarks/viewer.py [--quick] [--loads N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from common import ROOT

sys.path[:0] = [str(ROOT / "tests" / "browser"), str(ROOT / "book" / "_ext")]
from browser_utils import CHROMIUM_FLAGS, chromium_path, open_page, page_weight, start_server  # noqa: E402
from offline_book import CDN_TO_VENDOR  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from attn.viz import attention_viewer  # noqa: E402

PAGE = "<!doctype html><html><head><meta charset='utf-8'></head><body>{}</body></html>"
SWITCH_ATTN = """() => { const r = document.querySelector("input.av-axis[data-axis='head']"), times = [];
  for (let k = 0; k < 20; k++) { const t = performance.now(); r.value = (k % (+r.max)) + 1;
    r.dispatchEvent(new Event('input')); times.push(performance.now() - t); }
  times.sort((a, b) => a - b); return times[10]; }"""
SWITCH_BERTVIZ = """() => { const s = document.querySelector('select#layer'), times = [];
  for (let k = 0; k < 20; k++) { const t = performance.now(); s.value = String((k + 1) % s.options.length);
    s.dispatchEvent(new Event('change')); times.push(performance.now() - t); }
  times.sort((a, b) => a - b); return times[10]; }"""


def bertviz_html(weights: torch.Tensor, tokens: list[str]) -> str:
    """bertviz's head view as a fragment, its CDN addresses pointed at the vendored copies (as the book does)."""
    from bertviz import head_view

    html = head_view(tuple(w[None] for w in weights), tokens, html_action="return").data
    for url, local in CDN_TO_VENDOR.items():
        html = html.replace(url, "_static/" + local)
    return html


def measure(browser, base: str, name: str, drawn: str, switch: str, loads: int) -> dict[str, float]:
    """Medians over fresh loads: ms from navigation until drawn, ms per redraw, MiB of JavaScript heap."""
    draw_ms, switch_ms, heap, errors = [], [], [], []
    for _ in range(loads):
        context = browser.new_context(service_workers="block")
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base) else route.abort())
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        start = time.perf_counter()
        page.goto(base + name, wait_until="commit")
        page.wait_for_function(drawn, polling="raf")
        draw_ms.append((time.perf_counter() - start) * 1e3)
        switch_ms.append(page.evaluate(switch))
        heap.append(page.evaluate("() => performance.memory ? performance.memory.usedJSHeapSize : 0") / 2**20)
        context.close()
        assert not errors, errors
    return {"draw": statistics.median(draw_ms), "switch": statistics.median(switch_ms), "heap": statistics.median(heap)}


def viewer_table(browser, serve, sizes: list[int], loads: int) -> None:
    print(f"\n1. attention_viewer vs bertviz head_view, 6 layers x 12 heads, median of {loads} loads\n")
    header = f"{'T':>4} {'view':9} {'KiB':>8} {'draw ms':>8} {'switch ms':>10} {'heap MiB':>9}"
    print(header + f" {'KiB ratio':>10} {'draw ratio':>11} {'switch ratio':>13}")
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        shutil.copytree(ROOT / "book" / "assets" / "vendor", folder / "_static" / "vendor")
        base = serve(folder)
        for T in sizes:
            g = torch.Generator().manual_seed(T)
            weights = torch.randn(6, 12, T, T, generator=g).softmax(-1)  # (L, H, T, T)
            tokens = [f"tok{i}" for i in range(T)]
            pages = {
                "attn": attention_viewer(weights, tokens, axes=["layer", "head"]).html,
                "bertviz": bertviz_html(weights, tokens),
            }
            rows = {}
            for view, html in pages.items():
                (folder / f"{view}{T}.html").write_text(PAGE.format(html))
                drawn = (
                    f"() => document.querySelectorAll('.av-cell').length === {T * T}"
                    if view == "attn"
                    else "() => document.querySelectorAll('svg line').length > 0"
                )
                switch = SWITCH_ATTN if view == "attn" else SWITCH_BERTVIZ
                rows[view] = {"kib": len(html.encode()) / 1024, **measure(browser, base, f"{view}{T}.html", drawn,
                                                                          switch, loads)}  # fmt: skip
            for view, r in rows.items():
                line = f"{T:>4} {view:9} {r['kib']:>8.1f} {r['draw']:>8.0f} {r['switch']:>10.2f} {r['heap']:>9.1f}"
                if view == "attn":
                    b = rows["bertviz"]
                    line += f" {r['kib'] / b['kib']:>10.2f} {r['draw'] / b['draw']:>11.2f}"
                    line += f" {r['switch'] / max(b['switch'], 1e-3):>13.2f}"
                print(line)


def book_table(browser, serve) -> None:
    html = ROOT / "_build" / "html"
    if not (html / "book" / "intro.html").is_file():
        print("\n2. page weights: skipped, build the book first (make book)")
        return
    print("\n2. the built book's pages, first visit, nothing cached\n")
    print(f"{'page':36} {'own kB':>8} {'all kB':>8} {'gzip kB':>8} {'requests':>9} {'load ms':>8}")
    base = serve(html)
    pages = sorted(
        p.relative_to(html).as_posix() for p in html.rglob("*.html") if not p.relative_to(html).parts[0].startswith("_")
    )
    for page in pages:
        start = time.perf_counter()
        visit = open_page(browser, base, page)
        ms = (time.perf_counter() - start) * 1e3
        w = page_weight(html, visit.local)
        visit.page.context.close()
        print(f"{page:36} {w['own'] / 1e3:>8.0f} {w['total'] / 1e3:>8.0f} {w['gzip'] / 1e3:>8.0f} "
              f"{w['requests']:>9} {ms:>8.0f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small size, two loads, no book table")
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    executable = chromium_path()
    if executable is None:
        raise SystemExit("Chromium is needed (apt-get install chromium)")
    servers = []

    def serve(folder: Path) -> str:
        servers.append(start_server(folder))
        return f"http://127.0.0.1:{servers[-1].server_port}/"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        viewer_table(browser, serve, [12] if args.quick else [12, 32, 64], 2 if args.quick else args.loads)
        if not args.quick:
            book_table(browser, serve)
        browser.close()
    for server in servers:
        server.shutdown()


if __name__ == "__main__":
    main()
