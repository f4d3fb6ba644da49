"""Chapter 11's pretrained BERT in the reader's browser: type a sentence, see every head's attention.

``live_view`` returns a self-contained HTML fragment (shown in a notebook, kept in the static book) with a text
box and a button. In the built book, on the reader's first request, the page loads ONNX Runtime Web and the
exported model from the book's own ``_static`` folder (nothing from another site; no server, no kernel),
tokenizes the sentence with BERT's WordPiece in JavaScript (``wordpiece.js``, the ids of
:func:`attn.pretrained.encode`), runs the model and draws all 6 x 12 heads as thumbnails and the chosen one in
the book's attention viewer (``viewer.js``, the renderer of :func:`attn.viz.attention_viewer`). The model stays
loaded for the next sentence.

The files it reads, relative to the page's ``data-content_root`` (which Sphinx sets on every page):
``_static/live/`` (``manifest.json``, the model it names and ``vocab.txt``) and
``_static/vendor/onnxruntime-web/`` (``ort.wasm.min.js``, its loader and its WebAssembly, which the page downloads
itself to count it in the progress; book/vendor.py). A page without ``data-content_root`` (a live notebook) says
that the model runs in the online book and shows the same in Python; a page opened from disk (``file:``) says how
to serve the folder, since browsers do not let such a page load files.

Like the viewer, the style and script are package data (``live.css``, ``live.js``, ``wordpiece.js``, listed in
pyproject.toml) that reach the page verbatim, with two markers in live.js filled in: ``__LIVE_ID__`` (the
container's id) and ``__LIVE_CONFIG__`` (a JSON object: the sentence in the box, the folders, the viewer's
script).
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources

from attn._checks import check, checked
from attn.viz import viewer
from attn.viz.viewer import AttentionView

__all__ = ["LIVE_FOLDER", "ORT_FOLDER", "MAX_CHARS", "live_view"]

LIVE_FOLDER = "_static/live/"  # manifest.json, the model and vocab.txt, under the page's content root
ORT_FOLDER = "_static/vendor/onnxruntime-web/"  # ONNX Runtime Web (book/vendor.py)
MAX_CHARS = 20_000  # characters the text box takes at most (the model reads attn.pretrained.MAX_TOKENS tokens)
ID_MARKER = "__LIVE_ID__"
CONFIG_MARKER = "__LIVE_CONFIG__"
DEFAULT_SENTENCE = "The dog barked because it was hungry."
MODEL = "all-MiniLM-L6-v2"
_FALLBACK = "Run this cell (or trust the notebook) to show the live model: it is drawn by JavaScript."
# What a reader in a live notebook runs instead (chapter 11's own calls).
PYTHON = """from attn.pretrained import load_bert, load_tokenizer, read
from attn.viz import attention_viewer
import torch

bert, tokenizer = load_bert(), load_tokenizer()
attention, tokens = read(bert, tokenizer, "Type your sentence here.")
attention_viewer(torch.stack([w[0] for w in attention]), tokens, axes=["layer", "head"])"""


def _asset(name: str) -> str:
    return resources.files("attn.viz").joinpath(name).read_text(encoding="utf-8")


_STYLE = "<style>\n" + _asset("viewer.css") + _asset("live.css") + "</style>"
_WORDPIECE = _asset("wordpiece.js")
_VIEWER = _asset("viewer.js")  # the renderer of attention_viewer, run for each sentence
_LIVE = _asset("live.js")
for _marker in (ID_MARKER, CONFIG_MARKER):
    if _marker not in _LIVE:
        raise RuntimeError(f"attn/viz/live.js lacks the marker {_marker}, which live_view fills in")


def _script_json(value: object) -> str:
    """JSON that cannot end a <script> element early: <, > and & as JSON unicode escapes."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _live_view_args(sentence: str = DEFAULT_SENTENCE) -> None:
    check(isinstance(sentence, str), lambda: f"sentence must be a string, got {type(sentence).__name__}")
    check(len(sentence) <= MAX_CHARS, lambda: f"sentence has {len(sentence)} characters; the box takes {MAX_CHARS}")


@checked(_live_view_args)
def live_view(sentence: str = DEFAULT_SENTENCE) -> AttentionView:
    """The live view of all-MiniLM-L6-v2's attention, run in the reader's browser; ``sentence`` starts in the box.

    It works in the built book served over HTTP (any static host, or ``python -m http.server --directory
    _build/html``); elsewhere it says why not and what to do instead.
    """
    config = {
        "sentence": sentence,
        "max_chars": MAX_CHARS,
        "live": LIVE_FOLDER,
        "ort": ORT_FOLDER,
        "model": MODEL,
        "python": PYTHON,
        "decimals": viewer.DECIMALS,
        "stops": viewer.VIRIDIS,
        # the viewer's renderer, its colours filled in; the live view fills in the id of each container it draws
        "viewer": _VIEWER.replace(viewer.STOPS_MARKER, json.dumps(viewer.VIRIDIS)).removesuffix("\n"),
        "viewer_id_marker": viewer.ID_MARKER,
    }
    payload = _script_json(config)
    view_id = "attn-live-" + hashlib.sha256(payload.encode()).hexdigest()[:16]
    script = _LIVE.replace(ID_MARKER, view_id).replace(CONFIG_MARKER, payload).removesuffix("\n")
    html = (
        f"{_STYLE}<div class='attn-live' id='{view_id}'><em class='al-fallback'>{_FALLBACK}</em></div>"
        f"<script>{_WORDPIECE.removesuffix(chr(10))}</script><script>{script}</script>"
    )
    return AttentionView(html, f"live view of {MODEL}, run in the browser")
