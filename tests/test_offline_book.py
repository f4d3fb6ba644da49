"""The static book's offline set-up: vendored JavaScript intact and wired in, the Sphinx extension's rewrites."""

import hashlib
import re
import sys
from types import SimpleNamespace

import pytest
import yaml
from notebook_utils import ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import offline_book  # noqa: E402

VENDOR = ROOT / "book" / "assets" / "vendor"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def test_vendored_files_match_their_manifest():
    lines = (VENDOR / "MANIFEST.txt").read_text().splitlines()
    pinned = [line for line in lines if line.startswith("# ")]
    assert {line.split()[1] for line in pinned} == {
        "requirejs@2.3.8", "d3@5.7.0", "jquery@2.2.4", "@jupyter-widgets/html-manager@1.0.15", "mathjax@3.2.2",
        "onnxruntime-web@1.30.0",
    }  # fmt: skip
    listed = dict(reversed(line.split("  ", 1)) for line in lines if not line.startswith("#"))
    present = {p.relative_to(VENDOR).as_posix() for p in VENDOR.rglob("*") if p.is_file() and p.name != "MANIFEST.txt"}
    assert set(listed) == present
    for name, digest in listed.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name


def test_the_book_points_at_the_vendored_files():
    sphinx = CONFIG["sphinx"]["config"]
    static = [ROOT / p for p in sphinx["html_static_path"]]
    assert all(p.is_dir() and p.name != "_static" for p in static)  # Jupyter Book would add every .js under _static
    assert not (ROOT / "_static").exists()

    def served(path: str) -> bool:
        return any((p / path).is_file() for p in static)

    assert served(sphinx["mathjax_path"])
    assert all(served(path) for path in sphinx["nb_ipywidgets_js"])
    assert all(served(path if path.endswith(".js") else path + ".js") for path in offline_book.CDN_TO_VENDOR.values())
    assert CONFIG["sphinx"]["local_extensions"] == {"offline_book": "book/_ext", "live_model": "book/_ext"}


def fake_app(launch=None):
    options = {
        "repository_url": "https://github.com/org/book",
        "repository_branch": "main",
        "path_to_docs": "",
        "launch_buttons": launch
        if launch is not None
        else {"binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com"},
    }
    return SimpleNamespace(config=SimpleNamespace(html_theme_options=options))


def test_launch_links_name_the_chapter():
    links = dict(offline_book.launch_links(fake_app(), "notebooks/02_alignment"))
    assert links == {
        "Binder": "https://mybinder.org/v2/gh/org/book/main?urlpath=lab/tree/notebooks/02_alignment.ipynb",
        "Colab": "https://colab.research.google.com/github/org/book/blob/main/notebooks/02_alignment.ipynb",
    }
    assert offline_book.launch_links(fake_app(launch={}), "notebooks/02_alignment") == []


def page_context(body, scripts=()):
    return {"body": body, "pathto": lambda path, resource: "../" + path, "script_files": list(scripts)}


def test_rewrite_points_bertviz_at_the_vendored_copies_and_notes_saved_widgets():
    body = (
        '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"></script>'
        "<script>require.config({paths: {d3: 'https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min',"
        " jquery: 'https://cdnjs.cloudflare.com/ajax/libs/jquery/2.0.0/jquery.min'}})</script>"
        '<script type="application/vnd.jupyter.widget-view+json">{"model_id": "x"}</script>'
        '<a href="https://example.org/paper">a link is not a resource</a>'
    )
    context = page_context(body)
    offline_book.rewrite_page(fake_app(), "notebooks/06_multi_head", "page.html", context, None)
    out = context["body"]
    assert "cdnjs" not in out
    assert '<script src="../_static/vendor/requirejs/require.js">' in out
    assert "d3: '../_static/vendor/d3/d3.min'" in out and "jquery: '../_static/vendor/jquery/jquery.min'" in out
    note = out.index("attn-kernel-note")
    assert note < out.index("widget-view+json")
    assert "notebooks/06_multi_head.ipynb" in out[note:]


def build_warnings(body: str, monkeypatch) -> list[str]:
    """The warnings the extension logs while it rewrites a page with this body."""
    warnings = []
    monkeypatch.setattr(offline_book.logger, "warning", lambda *args, **kw: warnings.append(args[0] % args[1:]))
    offline_book.rewrite_page(fake_app(), "page", "page.html", page_context(body), None)
    return warnings


@pytest.mark.parametrize(
    "body",
    [
        '<script src="https://cdn.example.com/lib.js"></script>',
        '<img alt="x" src="//images.example.com/a.png">',
        '<link rel="stylesheet" href="https://fonts.example.com/a.css">',
        '<iframe src="http://example.com/embed"></iframe>',
        "<script>var url = 'https://unpkg.com/some/thing.js';</script>",
        '<link href="https://cdn.example.com/a.css" rel="stylesheet">',
        '<link rel="alternate stylesheet" href="https://cdn.example.com/b.css">',
        '<link rel="icon" href="https://cdn.example.com/favicon.ico">',
        '<img src="local.png" srcset="local.png 1x, https://cdn.example.com/big.png 2x">',
        '<object data="https://cdn.example.com/movie.swf"></object>',
        '<input type="image" src="https://cdn.example.com/button.png">',
        "<style>@import 'https://cdn.example.com/more.css'; p { background: url(//cdn.example.com/bg.png) }</style>",
        '<div style="background-image: url(https://cdn.example.com/bg.png)"></div>',
    ],
)
def test_any_external_resource_left_is_a_warning(body, monkeypatch):
    warnings = build_warnings(body, monkeypatch)
    assert warnings and re.search(r"example\.com|unpkg", warnings[0])


def test_unused_thebe_loader_is_dropped():
    thebe = SimpleNamespace(filename=None, attributes={"body": 'const THEBE_JS_URL = "https://unpkg.com/thebe"'})
    loader = SimpleNamespace(filename="sphinx-thebe.js", attributes={})
    keep = SimpleNamespace(filename="doctools.js", attributes={})
    context = page_context("<p>text</p>", [thebe, loader, keep])
    offline_book.rewrite_page(fake_app(), "page", "page.html", context, None)
    assert context["script_files"] == [keep]
    context = page_context("<p>text</p>", [thebe, loader, keep])
    offline_book.rewrite_page(fake_app(launch={"thebe": True}), "page", "page.html", context, None)
    assert len(context["script_files"]) == 3


@pytest.mark.parametrize(
    "body",
    [
        '<a href="https://example.org/paper">a link a reader may follow</a>',
        '<img data-src="https://example.org/lazy.png" src="../_images/local.png">',
        '<script src="../_static/vendor/requirejs/require.js"></script>',
        "<p>the text https://example.org/ mentions an address</p>",
    ],
)
def test_links_and_local_files_are_not_warned_about(body, monkeypatch):
    warnings = build_warnings(body, monkeypatch)
    assert warnings == []


def test_rewrite_labels_bertviz_menus_points_to_the_viewer_and_lists_references():
    body = (
        '<div id="bertviz-0a1b"><span>Layer: <select id="layer"></select>\n'
        'Attention: <select id="filter"><option value="0">Encoder</option>\n</select></span></div>'
        "<div class='attn-viewer' id='attn-viewer-42'></div>"
        '<div role="list" class="citation-list"><div class="citation" id="id1" role="doc-biblioentry"></div></div>'
    )
    context = page_context(body)
    offline_book.rewrite_page(fake_app(), "notebooks/08_transformer", "page.html", context, None)
    out = context["body"]
    assert '<label>Layer: <select id="layer"></select></label>' in out
    assert re.search(r'<label>Attention: <select id="filter">.*</select></label>', out, re.DOTALL)
    assert out.index('class="attn-bertviz-note"') < out.index('id="bertviz-0a1b"')
    assert '<a href="#attn-viewer-42">' in out
    assert 'role="doc-biblioentry"' not in out and 'role="listitem"' in out
