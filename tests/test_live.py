"""attn.viz.live on the Python side: the fragment live_view() returns (self-contained, nothing from another site,
the reader's text escaped), its scripts valid JavaScript, its style scoped, the tokenizer's tables current.

The page itself (tokenizer, model, viewer, hostile text) is tested in Chromium: tests/browser/test_live_in_browser.py
and tests/browser/test_wordpiece_in_browser.py.
"""

import json
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

import pytest

import attn.viz
from attn.viz import live
from attn.viz.live import live_view

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node (Node.js) is not installed: the JavaScript is not checked")
EVIL = "</script><img src=x onerror=alert(1)><!-- &amp; \u2028"
SCRIPTS = re.compile(r"<script>(.*?)</script>", re.S)


def asset(name: str) -> str:
    return resources.files("attn.viz").joinpath(name).read_text(encoding="utf-8")


def config(view) -> dict:
    """The JSON object live.js was given (json.loads undoes the \\u003c escapes)."""
    script = SCRIPTS.findall(view.html)[-1]
    start = script.index("var CONFIG = ") + len("var CONFIG = ")
    return json.JSONDecoder().raw_decode(script[start:])[0]


def test_the_fragment_is_self_contained_and_names_no_other_site():
    html = live_view().html
    # no element loads anything by itself: the only resources are fetched by the script, relative to the book
    markup = SCRIPTS.sub("<script></script>", html)
    assert not re.search(r"""\b(src|href|srcset|action|poster|data)\s*=""", markup)
    assert "@import" not in html and "url(" not in html
    assert re.findall(r"\.src = [^;]*", html) == ['.src = ORT + "ort.wasm.min.js"']  # the runtime, from _static
    # the only address written out is the local server a reader starts for a book opened from disk
    assert set(re.findall(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<)]*", html)) == {"http://localhost:8000/"}
    c = config(live_view())
    assert c["live"] == live.LIVE_FOLDER == "_static/live/" and c["ort"] == live.ORT_FOLDER
    assert not c["live"].startswith("/") and not c["ort"].startswith("/")  # under the page's content root
    assert (ROOT / "book" / "assets" / "vendor" / "onnxruntime-web" / "ort.wasm.min.js").is_file()  # _static/vendor


def test_the_fragment_is_style_container_and_two_scripts_with_the_markers_filled_in():
    view = live_view("A first sentence.")
    (view_id,) = re.findall(r"<div class='attn-live' id='(attn-live-[0-9a-f]{16})'>", view.html)
    assert view.html.startswith("<style>\n" + asset("viewer.css") + asset("live.css") + "</style>")
    wordpiece, script = SCRIPTS.findall(view.html)
    assert wordpiece == asset("wordpiece.js").removesuffix("\n")
    assert live.ID_MARKER not in view.html and live.CONFIG_MARKER not in view.html
    assert script.count(view_id) == 1
    c = config(view)
    assert c["sentence"] == "A first sentence." and c["max_chars"] == live.MAX_CHARS
    # the viewer's renderer, colours filled in, its id marker left for the live view to fill per drawing
    assert c["viewer_id_marker"] in c["viewer"] and "__VIRIDIS_STOPS__" not in c["viewer"]
    assert c["viewer"].startswith("(function () {")
    assert live_view("A first sentence.").html == view.html  # the same output every run (saved notebooks)
    assert live_view("Another.").html != view.html
    assert "live view" in repr(view)


def test_the_readers_text_cannot_end_the_script():
    view = live_view(EVIL)
    assert config(view)["sentence"] == EVIL
    for body in SCRIPTS.findall(view.html):
        assert "</script" not in body.lower() and "<!--" not in body and "\u2028" not in body
    assert view.html.count("<script>") == 2 and view.html.count("</script>") == 2


def test_checks_at_the_door():
    with pytest.raises(ValueError, match="sentence must be a string"):
        live_view(3)
    with pytest.raises(ValueError, match="characters; the box takes"):
        live_view("x" * (live.MAX_CHARS + 1))
    assert attn.viz.live_view is live_view and "live_view" in attn.viz.__all__


def test_the_files_are_declared_package_data():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert set(pyproject["tool"]["setuptools"]["package-data"]["attn.viz"]) >= {"live.css", "live.js", "wordpiece.js"}


@needs_node
def test_the_scripts_are_valid_javascript(tmp_path):
    for name in ("live.js", "wordpiece.js"):
        done = subprocess.run([NODE, "--check", str(resources.files("attn.viz").joinpath(name))], capture_output=True)
        assert done.returncode == 0, done.stderr.decode()
    for k, body in enumerate(SCRIPTS.findall(live_view(EVIL).html) + [config(live_view())["viewer"]]):
        (tmp_path / f"{k}.js").write_text(body, encoding="utf-8")
        done = subprocess.run([NODE, "--check", str(tmp_path / f"{k}.js")], capture_output=True)
        assert done.returncode == 0, done.stderr.decode()


def test_the_style_is_scoped_to_the_live_view():
    css = re.sub(r"/\*.*?\*/", "", asset("live.css"), flags=re.S)
    # a media query holds rules like the others (the narrow screen's smaller thumbnails): checked as they are
    media = re.compile(r"@media\s*\([a-z-]+\s*:\s*\d+px\)\s*\{((?:[^{}]+\{[^{}]*\})*)\s*\}")
    assert media.search(css), "no narrow-screen rules"
    css = media.sub(lambda m: m.group(1), css)
    rules = re.findall(r"([^{}]+)\{([^{}]*)\}", css)
    assert rules and re.sub(r"([^{}]+)\{([^{}]*)\}", "", css).strip() == "", "text outside a rule, or nesting"
    for selectors, body in rules:
        for selector in selectors.split(","):
            assert selector.strip().startswith(".attn-live"), f"{selector.strip()!r} would style the whole page"
        assert all(re.fullmatch(r"[a-z-]+\s*:\s*\S.*", d.strip(), re.S) for d in body.split(";") if d.strip())


def test_the_tokenizers_character_tables_are_those_of_the_installed_library():
    """wordpiece.js's tables, read off ``tokenizers`` (book/wordpiece_tables.py), are current."""
    sys.path.insert(0, str(ROOT / "book"))
    try:
        import wordpiece_tables
    finally:
        sys.path.remove(str(ROOT / "book"))
    script = asset("wordpiece.js")
    assert wordpiece_tables.current(script) == wordpiece_tables.block(), "run python book/wordpiece_tables.py"
