"""Every page of the built book in headless Chromium with the network blocked: no console error, no external
request; math typeset, saved widgets drawn, attention viewers and bertviz views drawn and answering the mouse.

Screenshots of the chapters and a page-weight table go to ``_build/screenshots/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from browser_utils import check_viewer, opened, page_weight
from notebook_utils import ROOT
from playwright.sync_api import TimeoutError as PlaywrightTimeout

MAX_PAGE_BYTES = 3_000_000  # a page's own HTML and images; and all it loads on a first visit, gzipped
SCREENSHOTS = ROOT / "_build" / "screenshots"


def book_pages() -> list[str]:
    """Every page the book builds: the table of contents, the redirecting index, search and the index."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        files += [chapter["file"] for chapter in part["chapters"]]
    return ["index.html", *(f"{f}.html" for f in files), "search.html", "genindex.html"]


PAGES = book_pages()
WEIGHTS: dict[str, dict[str, int]] = {}


@pytest.fixture(scope="module")
def base(built_book, serve):
    return serve(built_book)


@pytest.fixture(scope="module", autouse=True)
def weight_report():
    """After the module: the page-weight table, printed and saved as _build/screenshots/page-weight.md."""
    yield
    if not WEIGHTS:
        return
    lines = [
        "| page | HTML + images | all files loaded | all files, gzip | requests |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for page, w in WEIGHTS.items():
        lines.append(
            f"| {page} | {w['own'] / 1e3:.0f} kB | {w['total'] / 1e3:.0f} kB | {w['gzip'] / 1e3:.0f} kB "
            f"| {w['requests']} |"
        )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "page-weight.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))


def test_every_built_page_is_checked(built_book):
    built = {
        p.relative_to(built_book).as_posix()
        for p in built_book.rglob("*.html")
        if not p.relative_to(built_book).parts[0].startswith("_")
    }
    assert built == set(PAGES)


def _check_math(page, path: str) -> None:
    math = page.evaluate(
        """() => { const nodes = [...document.querySelectorAll('.math')];
        return [nodes.length, nodes.filter(n => n.querySelector('mjx-container')).length,
                document.querySelectorAll('mjx-merror').length]; }"""
    )
    total, typeset, errors = math
    if path.startswith("notebooks/"):
        assert total > 0, "a chapter without formulas: the check below would be vacuous"
    assert typeset == total, f"{total - typeset} of {total} formulas not typeset"
    assert errors == 0, f"{errors} TeX errors"


def _check_widgets(page) -> int:
    """Each saved widget is drawn from its state, with the kernel note above it; returns how many."""
    views = page.evaluate(
        """() => [...document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')]
        .map(s => { const drawn = s.previousElementSibling, note = drawn && drawn.previousElementSibling;
          return [!!(drawn && drawn.querySelector('.jupyter-widgets') && drawn.getBoundingClientRect().height > 20),
                  !!(note && note.classList.contains('attn-kernel-note'))]; })"""
    )
    for k, (drawn, noted) in enumerate(views):
        assert drawn, f"widget {k} is an empty box"
        assert noted, f"widget {k} has no saved-state note"
    images = page.evaluate(
        "() => [...document.querySelectorAll('.jupyter-widgets img')].map(i => i.complete && i.naturalWidth)"
    )
    assert all(images), f"widget images not drawn: {images}"
    live = page.evaluate(
        """() => [...document.querySelectorAll('.attn-kernel-note + .widget-subarea')]
        .flatMap(w => [...w.querySelectorAll('input, select, textarea, button')])
        .filter(c => getComputedStyle(c).pointerEvents !== 'none').length"""
    )
    assert live == 0, f"{live} controls of saved widgets still look usable"
    return len(views)


def check_bertviz(page, view_id: str) -> None:
    """bertviz's head view drew its tokens and lines, and hovering a token changes what is shown."""
    counts = page.evaluate(
        "(id) => { const e = document.getElementById(id); return [e.querySelectorAll('svg text').length,"
        " e.querySelectorAll('svg line').length]; }",
        view_id,
    )
    assert counts[0] > 0 and counts[1] > 0, f"{view_id}: {counts[0]} tokens, {counts[1]} lines"
    fingerprint = (
        "(id) => { const e = document.getElementById(id); return e.querySelectorAll('*').length + ':' +"
        " [...e.querySelectorAll('line, rect, text')].map(n => [n.getAttribute('stroke-opacity'),"
        " n.getAttribute('style'), n.getAttribute('opacity')].join('|')).join(';'); }"
    )
    before = page.evaluate(fingerprint, view_id)
    page.locator(f"#{view_id} #left text").nth(1).hover(force=True)
    changed = f"([id, before]) => ({fingerprint})(id) !== before"
    try:
        page.wait_for_function(changed, arg=[view_id, before], timeout=5_000)
    except PlaywrightTimeout:
        raise AssertionError(f"{view_id}: hovering a token changed nothing") from None


# Whatever in a chapter's cells is wider than the column, or scrolls sideways: code lines longer than the column,
# unwrapped output, a figure, table, widget or view sticking out. Each offender as "what: its width / the room".
# Library source folded by attn.book.show.show_source is exempt: it keeps the library's 120 columns and scrolls.
SIDEWAYS = """() => {
  const found = [];
  const name = e => e.tagName.toLowerCase() + (e.className && typeof e.className === 'string'
    ? '.' + e.className.trim().split(/\\s+/).slice(0, 2).join('.') : '');
  for (const cell of document.querySelectorAll('div.cell')) {
    const room = cell.getBoundingClientRect();
    const label = cell.querySelector('.cell_input pre') ? cell.querySelector('.cell_input pre').textContent.slice(0, 40)
      : '(output only)';
    for (const e of cell.querySelectorAll('*')) {
      if (e.closest('details.attn-source')) continue;  // library code (120 columns) scrolls inside its folded box
      const box = e.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue;
      const scrolls = ['auto', 'scroll'].includes(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1;
      const sticksOut = box.right > room.right + 1 || box.left < room.left - 1;
      if (scrolls || sticksOut) {
        found.push(`${name(e)} in the cell "${label}": ${scrolls ? e.scrollWidth : Math.round(box.width)} px`
          + ` for ${scrolls ? e.clientWidth : Math.round(room.width)} px` + (e.tagName === 'PRE'
          ? `: "${e.textContent.split('\\n').reduce((a, l) => l.length > a.length ? l : a, '').slice(0, 90)}"` : ''));
      }
    }
  }
  return found;
}"""


@pytest.mark.parametrize("path", PAGES)
def test_page_offline_and_interactive(built_book, base, browser, path):
    with opened(browser, base, path) as visit:
        page = visit.page
        if path == "index.html":
            assert page.url == base + "book/intro.html", "the index does not lead to the first page"
        assert visit.external == [], f"external requests: {visit.external}"
        assert visit.errors == [], "\n".join(visit.errors)
        assert visit.failed == [], f"failed local requests: {visit.failed}"
        _check_math(page, path)
        saved = (built_book / path).read_text().count('type="application/vnd.jupyter.widget-view+json"')
        assert _check_widgets(page) == saved
        viewers = page.locator(".attn-viewer")
        for k in range(viewers.count()):
            check_viewer(page, viewers.nth(k))
        for view_id in page.evaluate("() => [...document.querySelectorAll('[id^=bertviz-]')].map(e => e.id)"):
            check_bertviz(page, view_id)
        assert visit.dialogs == [], f"the page opened dialogs: {visit.dialogs}"
        if path.startswith("notebooks/"):  # at the book's default width (the 1280 px window), nothing scrolls sideways
            sideways = page.evaluate(SIDEWAYS)
            assert sideways == [], f"{len(sideways)} things wider than the column:\n" + "\n".join(sideways[:20])
        assert visit.external == [], f"external requests after interaction: {visit.external}"
        weight = WEIGHTS[path] = page_weight(built_book, visit.local)
        assert weight["own"] <= MAX_PAGE_BYTES, f"{path}: {weight['own']} bytes of HTML and images"
        assert weight["gzip"] <= MAX_PAGE_BYTES, f"{path}: {weight['gzip']} bytes to transfer (gzip), first visit"
        if path.startswith("notebooks/"):
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            name = re.sub(r"\W", "_", Path(path).stem)
            page.screenshot(path=str(SCREENSHOTS / f"{name}.jpg"), full_page=True, type="jpeg", quality=60)


def test_chapters_show_attention_views(built_book):
    """The chapters with interactive attention views really have them, so the checks above are not vacuous."""
    for chapter in ("01_softmax", "02_alignment", "03_memory_networks", "04_memory_that_writes", "05_self_attention",
                    "06_multi_head", "07_positions", "08_transformer", "09_images", "10_pretraining",
                    "11_pretrained", "12_scale", "13_explain"):  # fmt: skip
        assert "class='attn-viewer'" in (built_book / f"notebooks/{chapter}.html").read_text(), chapter
    for chapter in ("06_multi_head", "08_transformer", "11_pretrained"):
        assert 'id="bertviz-' in (built_book / f"notebooks/{chapter}.html").read_text(), chapter
