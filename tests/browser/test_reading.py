"""Every page of the built book read as a reader reads it: at the default desktop width (1280 px) and on a phone
(390 px), in headless Chromium with the network blocked.

It fails on what a reader would trip over: a display equation cut off (wider than its box, with nothing that
scrolls), a display equation that needs scrolling at the desktop width, TeX source shown as text (a formula that
markdown broke up), anything that makes the page wider than the screen, a chapter figure shown so much narrower
than it was drawn that its text shrinks below 8 px (on a phone a wide figure scrolls in its own box instead) or
squashed (its height not following its width), and printed output whose lines are wider than their box at the
desktop width (they would wrap mid-line, and a table lose its columns: results meant as tables are HTML tables and
library code is folded and highlighted, by attn.book.show). Screenshots of every chapter at both widths go to
``_build/screenshots/reading/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_utils import open_page
from test_book_pages import PAGES

WIDTHS = {"desktop": 1280, "phone": 390}
SCREENSHOTS = Path(__file__).resolve().parents[2] / "_build" / "screenshots" / "reading"
FIGURE_TEXT_PX = 10  # matplotlib's smallest label in the chapters: 10 pt at 72 dpi, drawn at twice that (retina)
SCHEMATIC_TEXT_PX = 11  # the schematics' smallest text (book/diagrams.py), in an SVG drawn at its own size
MIN_TEXT_PX = 8

READ = """() => {
  const out = {clipped: [], inline: [], scrolling: [], tex: [], wide: [], shrunk: [], wrapped: [], schematics: []};
  const text = e => e.textContent.replace(/\\s+/g, ' ').trim().slice(0, 60);
  const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  for (const m of document.querySelectorAll('mjx-container[display="true"]')) {
    const math = m.querySelector('mjx-math');
    if (!math) continue;
    const need = math.getBoundingClientRect().width;
    let box = m, scroller = null;
    for (let e = m; e && e !== document.body; e = e.parentElement) {
      if (scrolls(e)) { scroller = e; break; }
    }
    if (need > m.clientWidth + 1) {
      if (scroller) out.scrolling.push(`${Math.round(need)} px in ${scroller.clientWidth} px: ${text(m)}`);
      else out.clipped.push(`${Math.round(need)} px in ${m.clientWidth} px: ${text(m)}`);
    }
  }
  const article = document.querySelector('article') || document.body;
  // an inline formula does not break: one wider than what is left of its line runs past the column (clipped)
  const column = article.getBoundingClientRect().right;
  for (const m of article.querySelectorAll('mjx-container:not([display="true"])')) {
    const r = m.getBoundingClientRect();
    if (!r.width || r.right <= column + 1) continue;
    let inScroller = false;  // a table that scrolls in its own box carries its formulas along
    for (let e = m.parentElement; e && e !== article; e = e.parentElement) {
      if (scrolls(e)) { inScroller = true; break; }
    }
    if (!inScroller) out.inline.push(`${Math.round(r.right - column)} px past: ${text(m)}`);
  }
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement.closest('mjx-container, script, style, pre, code, .cell_output, .highlight, textarea')) {
      continue;
    }
    const t = n.textContent;
    if (/\\\\(frac|sqrt|text|mathrm|begin|end|sum|left|right|alpha|top)\\b|\\$[^$\\s][^$]*[\\\\_^{]/.test(t)) {
      out.tex.push(t.trim().slice(0, 80));
    }
  }
  const vw = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > vw + 1) {
    out.wide.push(`the page is ${document.documentElement.scrollWidth} px wide for ${vw} px`);
    for (const e of article.querySelectorAll('*')) {
      const r = e.getBoundingClientRect();
      if (r.width === 0 || r.right <= vw + 1) continue;
      let contained = false;
      for (let p = e.parentElement; p && p !== article; p = p.parentElement) {
        if (getComputedStyle(p).overflowX !== 'visible' && p.getBoundingClientRect().right <= vw + 1) {
          contained = true; break;
        }
      }
      if (!contained && !e.closest('.bd-sidebar-primary, .bd-sidebar-secondary')) {
        out.wide.push(`${e.tagName.toLowerCase()} reaching ${Math.round(r.right)} px: ${text(e)}`);
        if (out.wide.length > 6) break;
      }
    }
  }
  for (const pre of article.querySelectorAll('.cell_output pre')) {
    if (pre.closest('details.attn-source')) continue;  // library code scrolls inside its own folded box
    const was = pre.style.whiteSpace;
    pre.style.whiteSpace = 'pre';
    const need = pre.scrollWidth, room = pre.clientWidth;
    pre.style.whiteSpace = was;
    if (need > room + 1) {
      const line = pre.textContent.split('\\n').reduce((a, l) => l.length > a.length ? l : a, '');
      out.wrapped.push(`${need} px in ${room} px: ${line.slice(0, 70)}`);
    }
  }
  for (const img of article.querySelectorAll('.cell_output img')) {
    if (!img.naturalWidth || !img.getBoundingClientRect().width) continue;
    // the figure's size on the page as written (MyST-NB: style width; a panel: width), else half its pixels
    const styled = /(?:^|;)\\s*width:\\s*([\\d.]+)px/.exec(img.getAttribute('style') || '');
    const drawn = styled ? Number(styled[1])
      : img.getAttribute('width') ? Number(img.getAttribute('width')) : img.naturalWidth / 2;
    const r = img.getBoundingClientRect();
    const squash = (r.height / r.width) / (img.naturalHeight / img.naturalWidth);
    out.shrunk.push([r.width / drawn, Math.round(drawn), (img.alt || '').slice(0, 40), squash]);
  }
  for (const img of article.querySelectorAll('img[src$=".svg"]')) {  // the schematics (book/diagrams.py)
    if (!img.naturalWidth || !img.getBoundingClientRect().width) continue;
    out.schematics.push([img.getBoundingClientRect().width / img.naturalWidth, img.naturalWidth,
                         (img.alt || '').slice(0, 40)]);
  }
  return out;
}"""


@pytest.fixture(scope="module")
def base(built_book, serve):
    return serve(built_book)


@pytest.mark.parametrize("width", WIDTHS, ids=list(WIDTHS))
@pytest.mark.parametrize("path", PAGES)
def test_page_reads_well(built_book, base, browser, path, width):
    visit = open_page(browser, base, path, viewport=(WIDTHS[width], 900))
    try:
        found = visit.page.evaluate(READ)
        if path.startswith("notebooks/"):  # what a reader sees at this width, kept for people to look at
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shot = SCREENSHOTS / f"{path.split('/')[-1].removesuffix('.html')}-{WIDTHS[width]}.jpg"
            visit.page.screenshot(path=str(shot), full_page=True, type="jpeg", quality=50)
    finally:
        visit.page.context.close()
    assert found["clipped"] == [], "display equations cut off:\n" + "\n".join(found["clipped"])
    assert found["inline"] == [], "inline formulas running past the column:\n" + "\n".join(found["inline"])
    if width == "desktop":
        assert found["scrolling"] == [], "display equations wider than the column:\n" + "\n".join(found["scrolling"])
    assert found["tex"] == [], "TeX shown as text:\n" + "\n".join(found["tex"])
    assert found["wide"] == [], "\n".join(found["wide"])
    if width == "desktop":
        assert found["wrapped"] == [], "printed lines wider than their box:\n" + "\n".join(found["wrapped"])
    small = [
        f"a figure drawn {drawn} px wide shown at {scale:.0%}: its text at {FIGURE_TEXT_PX * scale:.1f} px ({alt})"
        for scale, drawn, alt, _ in found["shrunk"]
        if FIGURE_TEXT_PX * scale < MIN_TEXT_PX
    ]
    small += [
        f"a schematic {drawn} px wide shown at {scale:.0%}: its text at {SCHEMATIC_TEXT_PX * scale:.1f} px ({alt})"
        for scale, drawn, alt in found["schematics"]
        if SCHEMATIC_TEXT_PX * scale < MIN_TEXT_PX
    ]
    assert small == [], "\n".join(small)
    squashed = [f"a figure {drawn} px wide drawn {squash:.2f} times as tall as it is ({alt})"
                for _, drawn, alt, squash in found["shrunk"] if abs(squash - 1) > 0.03]  # fmt: skip
    assert squashed == [], "\n".join(squashed)


def test_the_checks_see_what_they_check(built_book, base, browser):
    """The checks above are not vacuous: on a chapter page they find display equations, figures and text."""
    visit = open_page(browser, base, "notebooks/05_self_attention.html", viewport=(390, 900))
    try:
        counts = visit.page.evaluate(
            "() => [document.querySelectorAll('mjx-container[display=\"true\"]').length,"
            " document.querySelectorAll('article .cell_output img').length]"
        )
        # a formula wider than a phone's column scrolls inside its own box: the page does not widen
        visit.page.evaluate(
            "() => { const d = document.createElement('div'); d.className = 'math notranslate nohighlight';"
            " d.innerHTML = '$$' + 'x + '.repeat(60) + 'x$$'; document.querySelector('article').prepend(d);"
            " const o = document.createElement('div'); o.className = 'cell_output';"
            " o.innerHTML = '<pre>' + 'a wrapped line '.repeat(12) + '</pre>'; d.after(o);"
            " return MathJax.typesetPromise([d]); }"
        )
        # a figure with a fixed height, as MyST-NB writes it before the book's rewrite: shrunk and squashed
        visit.page.evaluate(
            "() => { const o = document.createElement('div'); o.className = 'cell_output';"
            " const i = [...document.querySelectorAll('article .cell_output img')]"
            ".sort((a, b) => b.naturalWidth - a.naturalWidth)[0];"
            " const [w, h] = [i.naturalWidth / 2, i.naturalHeight / 2];"
            ' o.innerHTML = `<img src="${i.src}" alt="injected" style="width: ${w}px; height: ${h}px;">`;'
            " document.querySelector('article').prepend(o); return o.firstChild.decode(); }"
        )
        # an inline formula longer than a phone's line, inside a paragraph of prose
        visit.page.evaluate(
            "() => { const p = document.createElement('p');"
            " p.innerHTML = 'so <span class=\"math notranslate nohighlight\">\\\\(' + 'y + '.repeat(40)"
            " + 'y\\\\)</span> holds'; document.querySelector('article').prepend(p);"
            " return MathJax.typesetPromise([p]); }"
        )
        found = visit.page.evaluate(READ)
    finally:
        visit.page.context.close()
    assert counts[0] >= 2 and counts[1] >= 3, counts
    assert len(found["inline"]) == 1 and "y+y+y" in found["inline"][0], found["inline"]
    assert found["clipped"] == [] and len(found["scrolling"]) >= 1, found
    assert found["wide"] == [], found["wide"]
    # a printed line wider than its box is found (here on a phone; the test asks it at the desktop width)
    assert any("a wrapped line" in w for w in found["wrapped"]), found["wrapped"]
    injected = [(scale, squash) for scale, _, alt, squash in found["shrunk"] if alt == "injected"]
    assert injected and injected[0][0] < 0.8 and injected[0][1] > 1.03, found["shrunk"]
