"""Sphinx extension: the built book loads nothing from the internet, and a saved widget says it is saved.

- bertviz's views (saved in the notebooks as they run in Jupyter) ask for require.js, d3 and jQuery from
  cdnjs; each page's body is rewritten to the copies vendored in ``book/assets/vendor`` (see
  ``book/vendor.py``). MathJax and the ipywidgets manager are pointed there by ``_config.yml``.
- Any other external resource left in a page (a ``src`` of a script, image or frame, or a stylesheet link)
  is a build warning, so ``jupyter-book build -W`` fails on it.
- sphinx-thebe's loader, which names unpkg, is dropped while the "live code" button is off.
- Above every ipywidgets panel (rendered from its saved state; no kernel runs behind the static page), a
  note says so and links to launch the chapter in Binder or Colab.
"""

from __future__ import annotations

import html
import re
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
# A tag that makes the browser fetch its src/href when the page loads.
_EXTERNAL_RESOURCE = re.compile(
    r"<(script|img|iframe|source|video|audio|embed|link\b[^>]*\brel=[\"']?(?:stylesheet|preload|modulepreload))"
    r"\b[^>]*\b(?:src|href)=[\"']?((?:https?:)?//[^\"' >]+)",
    re.IGNORECASE,
)
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
    context["body"] = body
    for match in _EXTERNAL_RESOURCE.finditer(body):
        logger.warning("%s: loads an external resource: %s", pagename, match.group(2), location=pagename)
    for match in _CDN_HOSTS.finditer(body):
        logger.warning("%s: references a CDN: %s", pagename, match.group(0), location=pagename)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", rewrite_page)
    app.add_css_file("attn-book.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
