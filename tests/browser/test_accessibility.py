"""Accessibility of every page of the built book: axe-core's WCAG 2.0/2.1 A and AA rules in Chromium, offline.

No critical or serious violation may come from the book's own code; third-party ones that the book cannot fix would
go in ``ALLOWED``, each with its reason (none is needed with axe-core 4.12.1). Every ``<img>`` needs a real text
alternative (not a path). The per-page table goes to ``_build/screenshots/accessibility.md``.

axe-core is the copy bundled by the PyPI package axe-playwright-python (requirements.txt), injected into the page
from disk: nothing is fetched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import axe_playwright_python
import pytest
from browser_utils import ALL_DRAWN, open_page, opened
from notebook_utils import ROOT
from test_book_pages import book_pages

AXE_JS = Path(axe_playwright_python.__file__).with_name("axe.min.js")
AXE_OPTIONS = {
    "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
    # WCAG 2.5.3 (label in name; axe calls the rule experimental): the theme's search and colour-mode buttons
    # failed it (book/_templates overrides them).
    "rules": {"label-content-name-mismatch": {"enabled": True}},
    "resultTypes": ["violations"],
}
IMPACTS = ("critical", "serious", "moderate", "minor")
FAILING = ("critical", "serious")
REPORT = ROOT / "_build" / "screenshots" / "accessibility.md"


@dataclass(frozen=True)
class Allowed:
    """A violation the book cannot fix: ``rule`` on nodes whose axe target matches ``target`` (a regular
    expression), on pages matching ``pages`` (a regular expression), and why."""

    rule: str
    target: str
    pages: str
    reason: str

    def covers(self, rule: str, target: str, page: str) -> bool:
        return rule == self.rule and bool(re.search(self.target, target)) and bool(re.fullmatch(self.pages, page))


# Third-party violations that the book cannot fix. None left with axe-core 4.12.1: the theme's buttons are overridden
# (book/_templates), bertviz's menus labelled and docutils' reference roles rewritten (book/_ext/offline_book.py),
# ipywidgets' saved controls disabled and their slider handles named (book/assets/attn-widgets.js). bertviz's
# colour-only heads, which axe cannot see, are pointed to the book's own viewer.
ALLOWED: list[Allowed] = []

PATH_LIKE_ALT = re.compile(r"\.(?:png|jpe?g|gif|svg|webp|bmp)\s*$|/_images/|[0-9a-f]{16,}", re.IGNORECASE)


def run_axe(page) -> list[dict]:
    """axe-core's violations on the page as it is drawn now (one run over the whole document)."""
    page.add_script_tag(path=str(AXE_JS))
    return page.evaluate("async (options) => (await window.axe.run(document, options)).violations", AXE_OPTIONS)


def bad_image_alts(page) -> list[str]:
    """``<img>`` elements without a text alternative, with an empty one (unless hidden from assistive technology)
    or with a file name or path as their alt."""
    images = page.evaluate(
        """() => [...document.querySelectorAll('img')].map(i => [i.getAttribute('alt'), i.getAttribute('src') || '',
          ['presentation', 'none'].includes(i.getAttribute('role')) || !!i.closest('[aria-hidden="true"]')])"""
    )
    bad = []
    for alt, src, hidden in images:
        if alt is None:
            bad.append(f"no alt: {src[:80]}")
        elif not alt.strip() and not hidden:
            bad.append(f"empty alt: {src[:80]}")
        elif PATH_LIKE_ALT.search(alt):
            bad.append(f"alt is a path ({alt[:80]!r}): {src[:80]}")
    return bad


def live_saved_controls(page) -> list[str]:
    """Controls of saved ipywidgets panels (no kernel behind them) that the keyboard can still reach or edit."""
    return page.evaluate(
        """() => [...document.querySelectorAll('.attn-kernel-note + .widget-subarea *')]
        .filter(e => (e.tabIndex >= 0 && !e.disabled && e.matches('input, select, textarea, button, [tabindex]')
                      && !e.matches('.widget-html-content[role="group"]'))  // a plot's box, which scrolls by keys
                     || e.isContentEditable)
        .map(e => e.outerHTML.slice(0, 120))"""
    )


def _target(node: dict) -> str:
    return " ".join(str(t) for t in node["target"])


PAGES = book_pages()
TABLE: dict[str, str] = {}


@pytest.fixture(scope="module")
def base(built_book, serve):
    return serve(built_book)


@pytest.fixture(scope="module", autouse=True)
def accessibility_report():
    """After the module: the per-page table, printed and saved as _build/screenshots/accessibility.md."""
    yield
    if not TABLE:
        return
    lines = [
        "Nodes (rules) per impact; axe-core's WCAG 2.0/2.1 A and AA rules; allowed: third-party, see ALLOWED.",
        "",
        "| page | critical | serious | moderate | minor | allowed | failing | bad image alts | live saved controls |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(TABLE[page] for page in PAGES if page in TABLE),
    ]
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))


@pytest.mark.parametrize("path", PAGES)
def test_page_accessible(built_book, base, browser, path):
    with opened(browser, base, path) as visit:
        assert visit.page.evaluate(ALL_DRAWN), f"{path}: widgets, bertviz or viewers not drawn: axe would check less"
        violations = run_axe(visit.page)
        images = bad_image_alts(visit.page)
        live = live_saved_controls(visit.page)
    failing, allowed = [], 0
    for violation in violations:
        for node in violation["nodes"]:
            if violation["impact"] not in FAILING:
                continue
            if any(a.covers(violation["id"], _target(node), path) for a in ALLOWED):
                allowed += 1
                continue
            summary = " ".join(node.get("failureSummary", "").split())
            failing.append(
                f"{violation['impact']} {violation['id']} at {_target(node)} ({node['html'][:100]}): {summary[:300]}"
            )
    counts = []
    for impact in IMPACTS:
        matching = [v for v in violations if v["impact"] == impact]
        counts.append(f"{sum(len(v['nodes']) for v in matching)} ({len(matching)})")
    TABLE[path] = f"| {path} | {' | '.join(counts)} | {allowed} | {len(failing)} | {len(images)} | {len(live)} |"
    assert not failing, f"{len(failing)} accessibility violations on {path}:\n" + "\n".join(failing)
    assert not images, f"images without a real text alternative on {path}:\n" + "\n".join(images)
    assert not live, f"saved panels' controls that the keyboard still reaches on {path}:\n" + "\n".join(live)


SCROLL_ON_A_PHONE = {"notebooks/04_memory_that_writes.html", "notebooks/13_explain.html"}  # a panel's plot, tables


@pytest.mark.parametrize("path", PAGES)
def test_page_accessible_on_a_phone(built_book, base, browser, path):
    """At 390 px wide figures, panels, tables and viewers scroll inside their boxes: each such box is reachable by
    keys (axe's scrollable-region-focusable), and the rest of axe's rules hold there too."""
    visit = open_page(browser, base, path, viewport=(390, 900))
    try:
        assert visit.page.evaluate(ALL_DRAWN), f"{path}: widgets, bertviz or viewers not drawn: axe would check less"
        scrolled = visit.page.evaluate(
            "() => [...document.querySelectorAll('.widget-html-content, a.image-reference')]"
            ".filter(e => e.scrollWidth > e.clientWidth + 1).length"
        )
        violations = run_axe(visit.page)
    finally:
        visit.page.context.close()
    if path in SCROLL_ON_A_PHONE:
        assert scrolled >= 1, f"{path}: no box scrolls at 390 px, so the check would see none"
    failing = [
        f"{v['impact']} {v['id']} at {_target(n)} ({n['html'][:100]})"
        for v in violations
        if v["impact"] in FAILING
        for n in v["nodes"]
        if not any(a.covers(v["id"], _target(n), path) for a in ALLOWED)
    ]
    assert not failing, "\n".join(failing)
