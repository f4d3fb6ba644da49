"""Chapter 11's live view (attn.viz.live_view) in Chromium: the reader's sentence tokenized and run by ONNX Runtime
Web from a static folder over HTTP, every other request blocked; the tokens and all 72 heads' weights must be those
of attn's Bert in Python, and nothing the reader types may run.

The pages are the built book's (``built_book``, served from its html folder as any static host would): chapter 11,
where the view teaches, and chapters 6 and 13, which show it too; the model is the one the book's build exported
(``book/_ext/live_model.py``, ``attn.pretrained.export_onnx``) and the runtime the vendored onnxruntime-web.

The chapters embed the view as their saved outputs were made. To test live.js, live.css or live.py as they are now
against a book built earlier, set ``ATTN_LIVE_PAGE_FROM_CODE=1``: the pages are then a copy of the built book made
of symbolic links, in which the pages that show the view have it written anew by ``live_view()``.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import axe_playwright_python
import numpy as np
import pytest
import torch
from browser_utils import check_viewer, opened

from attn.pretrained import ModelNotInstalledError, encode, load_bert, load_tokenizer, model_dir
from attn.viz import live_view
from attn.viz.live import LIVE_FOLDER, MAX_CHARS, ORT_FOLDER, PYTHON

ROOT = Path(__file__).resolve().parents[2]
AXE_JS = Path(axe_playwright_python.__file__).with_name("axe.min.js")
AXE_OPTIONS = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}
PAGE = "notebooks/11_pretrained.html"  # the chapter that teaches the model; 6 and 13 show it too
ALSO = ("notebooks/06_multi_head.html", "notebooks/13_explain.html")
TOLERANCE = 1e-4  # max abs difference of an attention weight, browser vs torch
STATE = "document.querySelector('.attn-live').dataset"
WASM = "ort-wasm-simd-threaded.wasm"  # the runtime's WebAssembly, which live.js downloads itself (with progress)
# A saved live view in a built page: live_view()'s style, container and two scripts, as the notebook output holds them.
SAVED_VIEW = re.compile(
    r"<style>\n(?:(?!<style>).)*?<div class='attn-live' id='attn-live-[0-9a-f]{16}'>.*?</div>"
    r"<script>.*?</script><script>(.*?)</script>",
    re.S,
)


def unavailable(reason: str) -> None:
    if os.environ.get("ATTN_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def page_html(content_root: str | None, body: str) -> str:
    root = "" if content_root is None else f' data-content_root="{content_root}"'
    head = "<head><meta charset='utf-8'><title>live</title></head>"
    return f"<!doctype html><html{root}>{head}<body>{body}</body></html>"


def with_the_current_view(page: str) -> str:
    """``page`` (a built page's HTML) with each saved live view replaced by what ``live_view()`` writes now for the
    same sentence."""

    def anew(saved: re.Match) -> str:
        script = saved.group(1)
        start = script.index("var CONFIG = ") + len("var CONFIG = ")
        sentence = json.JSONDecoder().raw_decode(script[start:])[0]["sentence"]
        return live_view(sentence).html

    out, n = SAVED_VIEW.subn(anew, page)
    assert n == page.count("<div class='attn-live'"), "a saved live view that SAVED_VIEW does not match"
    return out


def copy_with_the_current_view(book: Path, folder: Path) -> Path:
    """``folder``: ``book`` as symbolic links, except the pages that show the live view, written with it anew."""
    pages = [p for p in book.rglob("*.html") if "<div class='attn-live'" in p.read_text(encoding="utf-8")]
    assert pages, f"no page of {book} shows the live view"
    rewritten = {p.relative_to(book) for p in pages}
    holding = {parent for p in rewritten for parent in p.parents}  # the folders on the way to them, "." included

    def copy(relative: Path) -> None:
        for entry in sorted((book / relative).iterdir()):
            at = relative / entry.name
            if at in holding:
                (folder / at).mkdir()
                copy(at)
            elif at in rewritten:
                (folder / at).write_text(with_the_current_view(entry.read_text(encoding="utf-8")), encoding="utf-8")
            else:
                (folder / at).symlink_to(entry)

    copy(Path("."))
    return folder


@pytest.fixture(scope="session")
def live_site(built_book, tmp_path_factory) -> Path:
    """The built book (its html folder), with the live model its build exported (book/_ext/live_model.py); with
    ``ATTN_LIVE_PAGE_FROM_CODE=1``, a copy of it whose live views are written by the code as it is now."""
    try:
        model_dir()
    except ModelNotInstalledError as e:
        unavailable(str(e))
    if not (built_book / LIVE_FOLDER / "manifest.json").is_file():
        pytest.fail(f"the book was built without {LIVE_FOLDER}: book/_ext/live_model.py did not export the model")
    if os.environ.get("ATTN_LIVE_PAGE_FROM_CODE") == "1":
        return copy_with_the_current_view(built_book, tmp_path_factory.mktemp("book-with-the-current-live-view"))
    return built_book


@pytest.fixture(scope="session")
def reference(live_site):
    """attn's Bert and tokenizer (truncated where the page's model stops), and the manifest."""
    manifest = json.loads((live_site / LIVE_FOLDER / "manifest.json").read_text())
    tokenizer = load_tokenizer()
    tokenizer.enable_truncation(manifest["max_tokens"])
    return load_bert(), tokenizer, manifest


PACK = """(root) => {  // the page's weights as one little-endian float32 buffer, base64: (layer, head, query, key)
  const a = root.attnLive.attention, L = a.length, H = a[0].length, T = a[0][0].length;
  const all = new Float32Array(L * H * T * T); let n = 0;
  for (const layer of a) for (const head of layer) for (const row of head) { all.set(row, n); n += T; }
  const bytes = new Uint8Array(all.buffer); let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return {tokens: root.attnLive.tokens, ids: root.attnLive.ids, truncated: root.attnLive.truncated,
          shape: [L, H, T, T], weights: btoa(s), timing: root.attnLive.timing};
}"""


def read(page, text: str, runs: int) -> dict:
    """Type ``text``, press the button, wait for run number ``runs``; the page's result."""
    live = page.locator(".attn-live")
    live.locator("textarea.al-text").fill(text)
    live.locator("button.al-go").click()
    page.wait_for_function(f"{STATE}.runs === '{runs}' || {STATE}.state === 'error'", timeout=120_000)
    assert live.get_attribute("data-state") == "ready", live.locator(".al-status").text_content()
    out = live.evaluate(PACK)
    out["weights"] = np.frombuffer(base64.b64decode(out["weights"]), dtype="<f4").reshape(out["shape"])
    return out


def check_against_python(out: dict, text: str, reference) -> None:
    bert, tokenizer, manifest = reference
    expected = encode(tokenizer, text)
    assert out["tokens"] == expected.tokens[0]
    assert out["ids"] == expected.ids[0].tolist()
    with torch.no_grad():
        attention = torch.stack([w[0] for w in bert(expected.ids).attention]).numpy()  # (L, H, T, T)
    T = expected.ids.shape[1]
    assert out["weights"].shape == attention.shape == (manifest["layers"], manifest["heads"], T, T)
    diff = float(np.abs(out["weights"] - attention).max())
    assert diff <= TOLERANCE, f"max abs difference {diff:.2e} for {text[:40]!r}"


RECORD = """(root) => {  // every text the status line and the progress counter show, in order
  window.shown = [];
  const note = n => { const t = n.textContent; if (t && t !== window.shown[window.shown.length - 1]) shown.push(t); };
  for (const cls of [".al-status", ".al-loaded", ".al-message"]) {
    const n = root.querySelector(cls);
    new MutationObserver(() => note(n)).observe(n, {childList: true, characterData: true, subtree: true});
  }
}"""


def at_limit(limit: int) -> str:
    """A text of exactly ``limit`` tokens with [CLS] and [SEP]: whole sentences, then single-piece words."""
    tokenizer = load_tokenizer()
    tokenizer.no_truncation()
    sentence = "The old lighthouse keeper watched the storm roll in over the grey water. "
    text = ""
    while len(encode(tokenizer, text + sentence).tokens[0]) <= limit:
        text += sentence
    while len(encode(tokenizer, text + " the").tokens[0]) <= limit:
        text += " the"
    return text


def test_three_sentences_give_the_tokens_and_weights_of_attns_bert(live_site, reference, serve, browser):
    bert, tokenizer, manifest = reference
    size = f"{manifest['bytes'] / 1e6:.1f} MB"
    both = f"{(manifest['bytes'] + (live_site / ORT_FOLDER / WASM).stat().st_size) / 1e6:.1f} MB"  # model, runtime
    with opened(browser, serve(live_site), PAGE) as visit:
        page, live = visit.page, visit.page.locator(".attn-live")
        status = live.locator(".al-status")
        assert status.text_content().startswith(f"The model ({size}) loads only when you ask")
        assert live.get_by_label("Your sentence").evaluate("e => e.tagName") == "TEXTAREA"  # labelled
        assert live.get_by_role("button", name="Show its attention").count() == 1
        assert status.get_attribute("aria-live") == "polite"
        assert not any(u.endswith(manifest["model"]) for u in visit.local), "the model loaded before it was asked for"
        live.evaluate(RECORD)

        sentences = [
            "The unaffable hyperparameters resisted tokenization.",  # words split into pieces
            "Le café était naïve, disait Ångström.",  # accents, stripped as BERT's tokenizer strips them
            at_limit(manifest["max_tokens"]),  # as long as the model reads
        ]
        for k, text in enumerate(sentences, 1):
            out = read(page, text, k)
            check_against_python(out, text, reference)
            assert not out["truncated"]
            assert live.locator(".al-thumb").count() == manifest["layers"] * manifest["heads"]
            assert live.locator(".av-row").all_text_contents() == out["tokens"]
            assert status.text_content().startswith(f"Done: {len(out['tokens'])} tokens, the model ran in")
            if k == 1:
                assert any(t.startswith("##") for t in out["tokens"])
                assert {"download_ms", "session_ms", "load_ms", "run_ms"} <= set(out["timing"])
            if k == 2:
                assert "cafe" in out["tokens"] and "naive" in out["tokens"] and "##strom" in out["tokens"]
            if k == 3:
                assert len(out["tokens"]) == manifest["max_tokens"]
        shown = page.evaluate("window.shown")
        assert f"Loading the model ({size}) and its runtime\u2026" in shown
        # one counter for the model and the runtime's WebAssembly, which live.js hands to ONNX Runtime
        assert any(t.endswith(f" of {both}") and t != f"{both} of {both}" for t in shown), "no progress was shown"
        assert f"{both} of {both}" in shown
        assert "Preparing the model\u2026" in shown
        assert sum(u.endswith("/" + manifest["model"]) for u in visit.local) == 1, "the model loaded more than once"
        assert sum(u.endswith("/" + WASM) for u in visit.local) == 1, "the WebAssembly loaded more than once"
        assert visit.errors == [] and visit.external == [] and visit.failed == [] and visit.dialogs == []


def test_heads_are_chosen_by_thumbnail_keyboard_and_slider(live_site, reference, serve, browser):
    _, _, manifest = reference
    heads = manifest["heads"]
    with opened(browser, serve(live_site), PAGE) as visit:
        page, live = visit.page, visit.page.locator(".attn-live")
        out = read(page, "The dog barked because it was hungry.", 1)
        viewer = live.locator(".attn-viewer")
        layer_slider, head_slider = viewer.locator("input[data-axis=layer]"), viewer.locator("input[data-axis=head]")
        thumbs = live.locator(".al-thumb")

        def chosen() -> tuple[int, int]:
            pressed = live.locator(".al-thumb[aria-pressed=true]")
            assert pressed.count() == 1 and pressed.get_attribute("tabindex") == "0"
            at = (int(pressed.get_attribute("data-layer")), int(pressed.get_attribute("data-head")))
            assert (int(layer_slider.input_value()), int(head_slider.input_value())) == at
            assert pressed.get_attribute("aria-label") == f"layer {at[0] + 1}, head {at[1] + 1}"
            return at

        def shows(layer: int, head: int) -> None:  # the large view draws that head's weights
            i, j = 1, len(out["tokens"]) - 1
            title = viewer.locator(".av-cell").nth(i * len(out["tokens"]) + j).get_attribute("title")
            assert title.endswith(f": {out['weights'][layer, head, i, j]:.4f}")

        assert chosen() == (0, 0)
        assert live.locator(".al-thumb[tabindex='-1']").count() == manifest["layers"] * heads - 1
        thumbs.nth(2 * heads + 4).click()  # layer 3, head 5
        assert chosen() == (2, 4)
        shows(2, 4)
        thumbs.nth(2 * heads + 4).press("ArrowRight")
        assert chosen() == (2, 5)
        page.keyboard.press("ArrowDown")  # the focus moved with the choice
        assert chosen() == (3, 5)
        page.keyboard.press("End")
        assert chosen() == (3, heads - 1)
        page.keyboard.press("Home")
        assert chosen() == (3, 0)
        shows(3, 0)
        head_slider.fill("7")  # the viewer's own slider moves the thumbnails' choice
        assert chosen() == (3, 7)
        # the choice survives the next sentence
        out = read(page, "A second sentence, shorter.", 2)
        assert chosen() == (3, 7)
        shows(3, 7)
        thumbs.first.click()
        assert chosen() == (0, 0)
        check_viewer(page, viewer)  # hover, arrow keys, sliders: the book's viewer as everywhere else (from 0, 0)
        assert chosen() == (manifest["layers"] - 1, heads - 1)  # it left both sliders at their last tick
        assert visit.errors == [] and visit.external == []
        # axe-core's WCAG A and AA rules on the drawn view (as tests/browser/test_accessibility.py runs them; axe
        # re-reads the theme's stylesheets itself and asks for an @import at the wrong address: errors not counted)
        page.add_script_tag(path=str(AXE_JS))
        found = page.evaluate(
            "async (o) => (await axe.run(document.querySelector('.attn-live'), o)).violations", AXE_OPTIONS
        )
        assert [(v["id"], v["impact"]) for v in found if v["impact"] in ("critical", "serious")] == []
        assert visit.external == []


def resize_listeners(page) -> int:
    """How many "resize" listeners the page's window holds (Chromium's DevTools protocol)."""
    cdp = page.context.new_cdp_session(page)
    try:
        window = cdp.send("Runtime.evaluate", {"expression": "window"})["result"]["objectId"]
        listeners = cdp.send("DOMDebugger.getEventListeners", {"objectId": window})["listeners"]
        return sum(listener["type"] == "resize" for listener in listeners)
    finally:
        cdp.detach()


def test_on_a_phone_four_sentences_fit_keep_one_viewer_and_the_focus(live_site, reference, serve, browser):
    _, _, manifest = reference
    with opened(browser, serve(live_site), PAGE) as visit:
        page, live = visit.page, visit.page.locator(".attn-live")
        page.set_viewport_size({"width": 360, "height": 740})
        button = live.locator("button.al-go")
        before = resize_listeners(page)  # the theme's, and those of the chapter's own viewers
        sentences = ["The dog barked because it was hungry.", "A second one.", "Then a third, longer.", "Four."]
        for k, text in enumerate(sentences, 1):
            live.locator("textarea.al-text").fill(text)
            button.click()
            if k == 1:  # loading: the button says it is busy, and a second press starts nothing
                assert live.get_attribute("data-state") == "loading"
                assert button.get_attribute("aria-disabled") == "true" and not button.is_enabled()
                button.click(force=True)  # Playwright waits for an aria-disabled button: press it anyway
            page.wait_for_function(f"{STATE}.runs === '{k}' || {STATE}.state === 'error'", timeout=120_000)
            assert live.get_attribute("data-state") == "ready", live.locator(".al-status").text_content()
            # the button keeps the focus it had (a disabled button would have dropped it)
            assert button.get_attribute("aria-disabled") == "false"
            assert page.evaluate("document.activeElement.classList.contains('al-go')")
            # the viewer's script, run once per sentence, left one viewer and one "resize" listener on window
            assert live.locator(".attn-viewer").count() == 1
            assert live.evaluate("r => r.attnLive.viewerListeners") == 1
            assert resize_listeners(page) == before + 1
            # 12 columns of thumbnails fit a phone's width: nothing in the view scrolls sideways
            for part in (".attn-live", ".attn-live .al-heads"):
                width = page.evaluate(f"(e => [e.scrollWidth, e.clientWidth])(document.querySelector('{part}'))")
                assert width[0] <= width[1], f"{part} is {width[0]} px wide in {width[1]} px"
        assert live.locator(".al-thumb").count() == manifest["layers"] * manifest["heads"]
        assert sum(u.endswith("/" + manifest["model"]) for u in visit.local) == 1
        assert visit.errors == [] and visit.external == [] and visit.failed == []


EVIL = "<script>alert(1)</script><img src=x onerror=alert(1)> <u>bold</u> &amp; \u202eevil\u202c"


def test_hostile_long_and_empty_text(live_site, reference, serve, browser):
    bert, tokenizer, manifest = reference
    with opened(browser, serve(live_site), PAGE) as visit:
        page, live = visit.page, visit.page.locator(".attn-live")
        message = live.locator(".al-message")
        assert message.get_attribute("role") == "alert"  # refusals are announced
        # empty: refused before anything loads
        for empty in ("", "   \n\t "):
            live.locator("textarea.al-text").fill(empty)
            live.locator("button.al-go").click()
            assert message.text_content() == "Type a sentence first: the box is empty."
            assert message.is_visible()
        assert not any(u.endswith(manifest["model"]) for u in visit.local)
        # markup is text: shown as tokens, never parsed, nothing runs
        out = read(page, EVIL, 1)
        check_against_python(out, EVIL, reference)
        assert ["<", "script", ">"] == out["tokens"][1:4]
        assert live.locator("img, u").count() == 0
        assert live.locator(".av-row").all_text_contents() == out["tokens"]
        assert live.locator(".av-col").all_text_contents() == out["tokens"]
        assert message.text_content() == ""
        # longer than the box takes: cut, and said so; a shorter text takes the message away
        box = live.locator("textarea.al-text")
        box.fill("words " * (MAX_CHARS // 5))
        assert box.evaluate("b => b.value.length") == MAX_CHARS
        assert message.text_content() == f"The box takes at most {MAX_CHARS:,} characters: the rest was cut."
        assert message.is_visible()
        box.fill("words")
        assert message.text_content() == ""
        # longer than the model reads: cut, and said so
        long = " ".join(["naïveté", "unaffable", "words"] * 200)
        out = read(page, long, 2)
        check_against_python(out, long, reference)
        assert out["truncated"] and len(out["tokens"]) == manifest["max_tokens"]
        untruncated = load_tokenizer()
        untruncated.no_truncation()
        total = len(untruncated.encode(long).tokens)
        assert message.is_visible()
        assert message.text_content() == (
            f"Only the first {manifest['max_tokens']} tokens are shown: your text has {total} word pieces with "
            f"[CLS] and [SEP], and the model reads at most {manifest['max_tokens']}."
        )
        # nothing the tokenizer keeps
        live.locator("textarea.al-text").fill("\x00\x01\u200b\ufeff")
        live.locator("button.al-go").click()
        page.wait_for_function(f"{STATE}.state === 'ready' && document.querySelector('.al-message').textContent")
        assert message.text_content().startswith("Nothing to read")
        assert live.get_attribute("data-runs") == "2"
        # the padding token, typed: refused (the model's graph has no mask to hide it)
        live.locator("textarea.al-text").fill("The [PAD] token.")
        live.locator("button.al-go").click()
        page.wait_for_function(
            f"{STATE}.state === 'ready' && document.querySelector('.al-message').textContent.startsWith('[PAD]')"
        )
        assert message.text_content() == (
            "[PAD] is the padding token, which the model never reads: take it out of the text."
        )
        assert message.is_visible()
        assert live.get_attribute("data-runs") == "2"
        assert visit.errors == [] and visit.external == [] and visit.dialogs == []


def test_where_the_model_cannot_run_the_view_says_what_to_do(live_site, tmp_path, serve, browser):
    # a live notebook: no content root, no _static folder
    (tmp_path / "kernel.html").write_text(page_html(None, live_view().html), encoding="utf-8")
    # a book built without the model
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "bare.html").write_text(page_html("../", live_view().html), encoding="utf-8")
    base = serve(tmp_path)
    with opened(browser, base, "kernel.html") as visit:
        live = visit.page.locator(".attn-live")
        assert live.locator(".al-status").text_content().startswith("The live model runs in the online book")
        assert live.locator("pre.al-python").text_content() == PYTHON
        assert not live.locator("form").is_visible()
        assert visit.local == [base + "kernel.html"] and visit.errors == []
    with opened(browser, base, "notebooks/bare.html") as visit:
        live = visit.page.locator(".attn-live")
        visit.page.wait_for_function(f"{STATE}.state === 'unavailable'")
        assert live.locator(".al-status").text_content().startswith("This copy of the book has no live model")
        assert live.locator("pre.al-python").text_content() == PYTHON
        assert not live.locator("form").is_visible()
    # opened from disk: the browser blocks the model, the page says how to serve the folder
    context = browser.new_context()
    try:
        page = context.new_page()
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto((live_site / PAGE).as_uri())
        status = page.locator(".attn-live .al-status").text_content()
        assert "opened from a file" in status and "blocks" in status
        assert f"python -m http.server --directory {live_site}" in status
        assert "python -m http.server --directory _build/html" in status
        assert f"http://localhost:8000/{PAGE}" in status
        assert not page.locator(".attn-live form").is_visible()
        assert requests[0] == (live_site / PAGE).as_uri()
        assert not any(LIVE_FOLDER in u or "onnxruntime-web" in u for u in requests), "it tried to load the model"
    finally:
        context.close()


def test_chapters_6_and_13_show_the_view_idle_until_asked(live_site, reference, serve, browser):
    _, _, manifest = reference
    for path in ALSO:
        with opened(browser, serve(live_site), path) as visit:
            live = visit.page.locator(".attn-live")
            assert live.count() == 1
            status = live.locator(".al-status")
            visit.page.wait_for_function("document.querySelector('.attn-live .al-status').textContent.includes('MB')")
            assert status.text_content().startswith(f"The model ({manifest['bytes'] / 1e6:.1f} MB) loads only when")
            assert not any(u.endswith(manifest["model"]) for u in visit.local)
            assert visit.errors == [] and visit.external == []
