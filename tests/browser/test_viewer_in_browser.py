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


def test_keys_stay_in_the_viewer_and_the_matrix_reads_as_a_grid_and_a_table(tmp_path, serve, browser):
    """Notebook hosts take plain keys as shortcuts (JupyterLab listens on the document): keys typed in the viewer
    must not reach the document, Ctrl combinations must. Assistive technology gets a grid with header cells, the
    sliders' tick labels and a table of the numbers; a slider keeps the chosen cell."""
    weights = softmax(3, 2, 3, seed=6)
    view = attention_viewer(weights, ["a", "b"], ["x", "y", "z"], axes=["step"], ticks={"step": ["25", "50", "75"]})
    spy = "<script>window.seen = []; document.addEventListener('keydown', e => seen.push(e.key));</script>"
    with opened(browser, serve(tmp_path), write_page(tmp_path, "keys.html", spy + view.html)) as visit:
        page = visit.page
        viewer = page.locator(".attn-viewer")
        slider = viewer.locator("input.av-axis")
        assert slider.get_attribute("aria-valuetext") == "step 25"
        grid = viewer.locator(".av-grid")
        grid.focus()
        for key in ("ArrowDown", "ArrowDown", "ArrowRight", "d", "d"):  # cell (1, 1); "d d" deletes a cell in Lab
            grid.press(key)
        slider.focus()
        slider.press("ArrowRight")
        assert page.evaluate("seen") == [], "keys typed in the viewer reached the document"
        slider.press("Control+s")
        slider.press("Shift+Enter")  # runs the cell in JupyterLab
        assert page.evaluate("seen") == ["Control", "s", "Enter"], "Ctrl+S and Shift+Enter must pass"
        assert slider.input_value() == "1" and slider.get_attribute("aria-valuetext") == "step 50"
        # the chosen cell survives the slider, with the weight of the new step
        assert (
            viewer.locator(".av-readout").text_content()
            == f"query \u201c\u2068b\u2069\u201d (2) \u2192 key \u201c\u2068y\u2069\u201d (2): {weights[1, 1, 1]:.4f}"
        )
        assert grid.get_attribute("role") == "grid"
        active = grid.get_attribute("aria-activedescendant")
        assert page.locator(f"#{active}").get_attribute("title") == viewer.locator(".av-readout").text_content()
        roles = grid.evaluate("g => [...g.children].map(r => r.getAttribute('role') + ':' + r.children.length)")
        assert roles == ["row:4", "row:4", "row:4"]
        assert viewer.locator("[role=rowheader]").all_text_contents() == ["a", "b"]
        # the numbers as a table, for the current step
        viewer.locator("button.av-show").click()
        table = viewer.locator("table.av-table")
        assert table.is_visible()
        assert table.locator("th[scope=col]").all_text_contents() == ["x", "y", "z"]
        assert table.locator("td").all_text_contents() == [f"{v:.4f}" for v in weights[1].flatten().tolist()]
        slider.fill("2")
        assert table.locator("td").all_text_contents() == [f"{v:.4f}" for v in weights[2].flatten().tolist()]
        viewer.locator("button.av-show").click()
        assert not table.is_visible()
        assert visit.errors == []


RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: without isolation it reverses everything after it on the line


def test_a_right_to_left_override_in_a_token_stays_inside_it(tmp_path, serve, browser):
    """A token with a bidi override reversed the hover readout (0.1234 read as 4321.0): every token is isolated."""
    weights = torch.tensor([[0.1234, 0.8766]])
    view = attention_viewer(weights, [f"ab{RLO}cd"], ["x", f"{RLO}y"])
    view.save(tmp_path / "bidi.html")
    with opened(browser, serve(tmp_path), "bidi.html") as visit:
        page = visit.page
        assert visit.errors == []
        page.locator(".av-cell").first.hover()
        readout = page.locator(".av-readout")
        text = readout.text_content()
        assert text.endswith("0.1234") and "\u2068ab" + RLO + "cd\u2069" in text, text
        # the digits are drawn left to right: "0" left of "4"
        xs = page.evaluate(
            """(el) => { const node = el.firstChild, t = node.textContent, at = t.lastIndexOf('0.1234');
              const x = i => { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
                               return r.getBoundingClientRect().left; };
              return [x(at), x(at + 5)]; }""",
            readout.element_handle(),
        )
        assert xs[0] < xs[1], xs
        styles = page.evaluate(
            "[...document.querySelectorAll('.av-row,.av-col')].map(e => getComputedStyle(e).unicodeBidi)"
        )
        assert set(styles) == {"isolate"}, styles
