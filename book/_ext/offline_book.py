"""Sphinx extension: the built book loads nothing from the internet, and a saved widget says it is saved.

- bertviz's views (saved in the notebooks as they run in Jupyter) ask for require.js, d3 and jQuery from
  cdnjs; each page's body is rewritten to the copies vendored in ``book/assets/vendor`` (see
  ``book/vendor.py``). MathJax and the ipywidgets manager are pointed there by ``_config.yml``.
- Any other external resource left in a page's body (a script, image, frame, stylesheet or icon, or a CSS
  ``url()``/``@import``; found by parsing the HTML) or a CDN named anywhere in it is a build warning, so
  ``jupyter-book build -W`` fails on it.
- sphinx-thebe's loader, which names unpkg, is dropped while the "live code" button is off.
- Above every ipywidgets panel (rendered from its saved state; no kernel runs behind the static page), a
  note says so and links to launch the chapter in Binder or Colab.
- Figures (a chapter's saved PNG outputs, drawn at a CSS size of ``W`` by ``H`` px): their height follows their
  width when the column is narrower than ``W`` (MyST-NB writes both as fixed sizes, which squashed every wide
  figure on a phone), and they keep at least 80 % of ``W`` (their 10-px labels at 8 px or more), scrolling inside
  their own box on a phone (``attn-book.css``); so do the schematics (SVGs). ``tests/browser/test_reading.py``
  checks both widths.
- Accessibility (WCAG 2.1 AA, checked by tests/browser/test_accessibility.py): bertviz's menus get their visible
  words as labels and its view a pointer to the book's own viewer (bertviz tells heads apart by colour only); the
  references' entries become list items of their list (docutils marks them ``doc-biblioentry``, a role that is
  deprecated and not allowed in a list); the theme's search and colour-mode buttons, whose names lacked their
  visible text, are overridden in ``book/_templates``.
"""

from __future__ import annotations

import html
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# CDN address -> path under _static (require paths carry no ".js").
CDN_TO_VENDOR = {
    "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js": "vendor/requirejs/require.js",
    "https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min": "vendor/d3/d3.min",
    "https://cdnjs.cloudflare.com/ajax/libs/jquery/2.0.0/jquery.min": "vendor/jquery/jquery.min",
}
_EXTERNAL = re.compile(r"^\s*(?:https?:)?//", re.IGNORECASE)
_CSS_URL = re.compile(r"""(?:url\(\s*|@import\s+)['"]?((?:https?:)?//[^'")\s]+)""", re.IGNORECASE)


class ResourceFinder(HTMLParser):
    """External addresses a browser fetches while it loads the HTML (not links a reader may follow)."""

    FETCHED = {
        "script": ("src",), "img": ("src", "srcset"), "iframe": ("src",), "source": ("src", "srcset"),
        "video": ("src", "poster"), "audio": ("src",), "embed": ("src",), "object": ("data",),
        "input": ("src",), "track": ("src",), "frame": ("src",),
    }  # fmt: skip
    LINK_RELS = {"stylesheet", "icon", "preload", "modulepreload", "prefetch", "manifest", "apple-touch-icon"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        names = self.FETCHED.get(tag, ())
        if tag == "link" and self.LINK_RELS & set(values.get("rel", "").lower().split()):
            names = ("href",)
        for name in names:
            candidates = (
                [c.split()[0] for c in values.get(name, "").split(",") if c.strip()]
                if name == "srcset"
                else [values.get(name, "")]
            )
            self.found += [url.strip() for url in candidates if _EXTERNAL.match(url)]
        self.found += _CSS_URL.findall(values.get("style", ""))
        self._style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._style = False

    def handle_data(self, data: str) -> None:
        if self._style:
            self.found += _CSS_URL.findall(data)


def external_resources(html: str) -> list[str]:
    """Addresses on other hosts that loading ``html`` would fetch."""
    finder = ResourceFinder()
    finder.feed(html)
    finder.close()
    return finder.found


_CDN_HOSTS = re.compile(r"(?:https?:)?//(?:cdnjs\.cloudflare\.com|cdn\.jsdelivr\.net|unpkg\.com)/[^\"' )]*")
_WIDGET_VIEW = '<script type="application/vnd.jupyter.widget-view+json">'


def launch_links(app: Sphinx, pagename: str) -> list[tuple[str, str]]:
    """(label, url) of the Binder and Colab launchers for a notebook page, from the book's configuration."""
    options = app.config.html_theme_options
    repository = options.get("repository_url", "").rstrip("/")
    buttons = options.get("launch_buttons", {})
    if not repository.startswith("https://github.com/"):
        return []
    org_repo = repository.removeprefix("https://github.com/")
    branch = options.get("repository_branch", "main")
    path = "/".join(p for p in (options.get("path_to_docs", "").strip("/"), pagename + ".ipynb") if p)
    links = []
    if buttons.get("binderhub_url"):
        interface = "lab/tree" if buttons.get("notebook_interface", "jupyterlab") == "jupyterlab" else "tree"
        binder = buttons["binderhub_url"].rstrip("/")
        links.append(("Binder", f"{binder}/v2/gh/{org_repo}/{branch}?urlpath={interface}/{path}"))
    if buttons.get("colab_url"):
        links.append(("Colab", f"{buttons['colab_url'].rstrip('/')}/github/{org_repo}/blob/{branch}/{path}"))
    return links


def kernel_note(links: list[tuple[str, str]]) -> str:
    """The note shown above a saved widget in the static book."""
    launch = " · ".join(f'<a href="{html.escape(url)}">{html.escape(label)}</a>' for label, url in links)
    return (
        '<div class="attn-kernel-note" role="note"><strong>Saved state.</strong> This panel shows the values it was '
        "saved with; its controls need a running Python kernel. Launch the chapter"
        + (f" ({launch})" if launch else "")
        + " or run it locally with <code>make lab</code>.</div>"
    )


_BERTVIZ_MENU = re.compile(r'(Layer|Attention): (<select id="(?:layer|filter)">.*?</select>)', re.DOTALL)
_BERTVIZ_VIEW = re.compile(r'<div id="bertviz-[0-9a-f]+"')
_VIEWER_ID = re.compile(r"""class=['"]attn-viewer['"][^>]*?\bid=['"]([\w-]+)['"]""")


def accessible_bertviz(body: str) -> str:
    """Label bertviz's menus with the words before them; above each view, point to the next attn viewer."""
    body = _BERTVIZ_MENU.sub(r"<label>\1: \2</label>", body)

    def note(match: re.Match) -> str:
        viewer = _VIEWER_ID.search(body, match.end())
        target = f'<a href="#{viewer.group(1)}">attention viewer below</a>' if viewer else "attention viewer"
        return (
            '<p class="attn-bertviz-note">This bertviz view needs a mouse and tells heads apart by colour only. '
            f"The book's {target} works with the keyboard and reads out each weight as a number.</p>" + match.group(0)
        )

    return _BERTVIZ_VIEW.sub(note, body)


_SIZED_FIGURE = re.compile(r'(<img\b[^>]*?\bstyle=")width: (\d+(?:\.\d+)?)px; height: (\d+(?:\.\d+)?)px;"')
LEGIBLE_SHARE = 0.8  # a figure is never shown under 80 % of its drawn width: its smallest text stays >= 8 px


def legible_figures(body: str) -> str:
    """Each figure MyST-NB sized (``width: W px; height: H px``): its height follows its width, and it is never
    narrower than ``LEGIBLE_SHARE`` of ``W`` (its box scrolls instead; attn-book.css)."""

    def size(match: re.Match) -> str:
        width, height = float(match.group(2)), float(match.group(3))
        return (
            f"{match.group(1)}width: {match.group(2)}px; height: auto; aspect-ratio: {match.group(2)} / "
            f'{match.group(3)}; min-width: {math.ceil(LEGIBLE_SHARE * width)}px;"'
            if width > 0 and height > 0
            else match.group(0)
        )

    return _SIZED_FIGURE.sub(size, body)


_SCHEMATIC = re.compile(r'<p>(<img\b[^>]*\bsrc="[^"]*_images/[^"/]+\.svg"[^>]*>)</p>')


def legible_schematics(body: str) -> str:
    """A schematic (an SVG of book/diagrams.py, alone in its paragraph) keeps its text at 8 px or more on a phone:
    its paragraph scrolls sideways, and takes the keyboard's focus so that keys scroll it (attn-book.css)."""
    return _SCHEMATIC.sub(
        r'<p class="attn-schematic" tabindex="0" role="group" aria-label="schematic (scrolls sideways on a narrow'
        r' screen)">\1</p>',
        body,
    )


_TABLE_BOX = '<div class="pst-scrollable-table-container">'


def focusable_tables(body: str) -> str:
    """The theme's box around a prose table scrolls when the table is wider than a phone: keys can scroll it."""
    return body.replace(
        _TABLE_BOX,
        '<div class="pst-scrollable-table-container" tabindex="0" role="group"'
        ' aria-label="table (scrolls sideways on a narrow screen)">',
    )


def drop_unused_thebe(app: Sphinx, context: dict[str, Any]) -> None:
    """Without a "live code" button (``launch_buttons.thebe``), sphinx-thebe's scripts, which name unpkg, go."""
    if app.config.html_theme_options.get("launch_buttons", {}).get("thebe"):
        return
    context["script_files"] = [
        script
        for script in context.get("script_files", [])
        if "THEBE_JS_URL" not in getattr(script, "attributes", {}).get("body", "")
        and not str(getattr(script, "filename", script) or "").endswith("sphinx-thebe.js")
    ]


def rewrite_page(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Point CDN addresses in the page body at the vendored copies; warn about any external resource left."""
    drop_unused_thebe(app, context)
    body = context.get("body")
    if not body:
        return
    for url, local in CDN_TO_VENDOR.items():
        body = body.replace(url, context["pathto"]("_static/" + local, 1))
    if _WIDGET_VIEW in body:
        body = body.replace(_WIDGET_VIEW, kernel_note(launch_links(app, pagename)) + _WIDGET_VIEW)
    body = accessible_bertviz(body)
    body = legible_figures(body)
    body = legible_schematics(body)
    body = focusable_tables(body)
    body = body.replace('role="doc-biblioentry"', 'role="listitem"')  # inside docutils' <div role="list">
    context["body"] = body
    for url in external_resources(body):
        logger.warning("%s: loads an external resource: %s", pagename, url, location=pagename)
    for match in _CDN_HOSTS.finditer(body):
        logger.warning("%s: references a CDN: %s", pagename, match.group(0), location=pagename)


def add_templates(app: Sphinx, config: Any) -> None:
    """book/_templates overrides theme templates (two buttons' accessible names): first in the path, before the
    folders of components that the themes add."""
    config.templates_path = [str(Path(__file__).resolve().parents[1] / "_templates"), *config.templates_path]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", add_templates)
    app.connect("html-page-context", rewrite_page)
    app.add_css_file("attn-book.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
