"""attn's attention viewer, saved as a standalone page, in headless Chromium with the network blocked."""

import json

import torch
from browser_utils import check_viewer, opened

from attn.viz import attention_viewer

EVIL = "</script><img src=x onerror=alert(1)>"


def write_page(folder, name: str, body: str) -> str:
    (folder / name).write_text(f"<!doctype html><meta charset='utf-8'><body>{body}</body>")
    return name


def softmax(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).softmax(-1)


def test_hostile_tokens_are_text(tmp_path, serve, browser):
    view = attention_viewer(
        softmax(2, 3, 4), ["a", EVIL, "<u>bold</u>"], ["w", "x", "&amp;", "y"], axes=["head"], title=EVIL
    )
    view.save(tmp_path / "evil.html")
    with opened(browser, serve(tmp_path), "evil.html") as visit:
        page = visit.page
        assert visit.errors == [] and visit.external == []
        assert page.locator("img").count() == 0 and page.locator("u").count() == 0
        assert page.locator(".av-row").all_text_contents() == ["a", EVIL, "<u>bold</u>"]
        assert page.locator(".av-col").all_text_contents() == ["w", "x", "&amp;", "y"]
        assert page.locator(".av-title").text_content() == EVIL
        check_viewer(page, page.locator(".attn-viewer"))
        assert visit.dialogs == []


def test_ragged_examples_non_square_and_several_viewers(tmp_path, serve, browser):
    first = attention_viewer(
        [softmax(3, 2, 5, seed=1), softmax(3, 4, 2, seed=2)],
        [["je", "suis"], ["a", "b", "c", "d"]],
        [["I", "am", "a", "cat", "."], ["p", "q"]],
        axes=["epoch"],
        ticks={"epoch": ["1", "10", "20"]},
        names=("output", "input"),
    )
    second = attention_viewer(softmax(2, 3, 3, seed=3), list("xyz"), axes=["hop"], vmax=None)
    with opened(browser, serve(tmp_path), write_page(tmp_path, "two.html", first.html + second.html)) as visit:
        page = visit.page
        assert visit.errors == [] and visit.external == []
        viewers = page.locator(".attn-viewer")
        assert viewers.count() == 2
        check_viewer(page, viewers.nth(0))
        check_viewer(page, viewers.nth(1))
        # the second uses each matrix's own maximum for the brightest colour
        assert viewers.nth(1).locator(".av-vmax").text_content() != "1"


def test_script_run_from_head_and_identical_viewers(tmp_path, serve, browser):
    """Hosts like classic Notebook run an output's script from a new <script> in <head>: the viewer still finds
    its container by id, and two identical viewers on one page both draw."""
    view = attention_viewer(softmax(2, 3, 3, seed=4), list("abc"), axes=["head"])
    fragment = view.html
    body, script = fragment[: fragment.rindex("<script>")], fragment[fragment.rindex("<script>") + 8 : -9]
    evaluate = (
        "<script>function run(code) { var s = document.createElement('script'); s.text = code;"
        " document.head.appendChild(s).parentNode.removeChild(s); }</script>"
    )
    page_html = f"{evaluate}{body}{body}<script>run({json.dumps(script)}); run({json.dumps(script)});</script>"
    with opened(browser, serve(tmp_path), write_page(tmp_path, "head.html", page_html)) as visit:
        page = visit.page
        assert visit.errors == []
        viewers = page.locator(".attn-viewer")
        assert viewers.count() == 2
        for k in range(2):
            check_viewer(page, viewers.nth(k))


def test_large_and_all_zero_matrices_with_their_own_maximum(tmp_path, serve, browser):
    big = attention_viewer(softmax(400, 400, seed=5), [f"q{i}" for i in range(400)], [f"k{i}" for i in range(400)],
                           vmax=None)  # fmt: skip
    zero = attention_viewer(torch.zeros(2, 3), ["a", "b"], ["x", "y", "z"], vmax=None)
    with opened(browser, serve(tmp_path), write_page(tmp_path, "big.html", big.html + zero.html)) as visit:
        page = visit.page
        assert visit.errors == []
        viewers = page.locator(".attn-viewer")
        assert viewers.nth(0).locator(".av-cell").count() == 400 * 400
        assert viewers.nth(1).locator(".av-vmax").text_content() == "0.0001"  # the smallest step, not 0
        check_viewer(page, viewers.nth(1))
