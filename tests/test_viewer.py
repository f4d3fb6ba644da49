"""attn.viz.viewer on the Python side: the embedded payload, escaping, defaults, errors, save and repr.

The browser side (sliders, hover, colours) is tested in tests/browser; here the page is only parsed as text.
"""

import json
import math
import re
import shutil
import subprocess
import tomllib
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn.viz import viewer
from attn.viz.viewer import AttentionView, attention_viewer

DATA = re.compile(r"<script type='application/json' class='av-data'>(.*?)</script>", re.S)
EVIL = "</script><img src=x onerror=alert(1)>"


def payload(view):
    """The JSON embedded in the fragment, decoded (json.loads undoes the \\u003c escapes)."""
    found = DATA.findall(view.html)
    assert len(found) == 1, "exactly one data script"
    return json.loads(found[0])


def view_id(view):
    (found,) = re.findall(r"<div class='attn-viewer' id='(attn-viewer-[0-9a-f]{16})'>", view.html)
    return found


def softmax_weights(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * 2).softmax(-1).to(dtype)


def expected_flat(w, n_axes):
    """round(weight * 1e4) in the documented order, spelled out with loops: axes..., rows, cols."""
    w = w.double()
    lead, (Tq, Tk) = tuple(w.shape[:n_axes]), tuple(w.shape[n_axes:])
    out = []
    for index in _product(lead):
        for i in range(Tq):
            for j in range(Tk):
                out.append(round(float(w[(*index, i, j)]) * 1e4))
    return out


def _product(sizes):
    if not sizes:
        return [()]
    return [(k, *rest) for k in range(sizes[0]) for rest in _product(sizes[1:])]


# ---------------------------------------------------------------------------------------------- the payload


def test_payload_round_trips_a_non_square_matrix_with_two_axes_and_ticks():
    L, H, Tq, Tk = 2, 3, 4, 5
    w = softmax_weights(L, H, Tq, Tk)
    rows, cols = ["die", "Katze", "schläft", "."], ["the", "cat", "is", "asleep", "."]
    view = attention_viewer(
        w, rows, cols, axes=("layer", "head"), ticks={"layer": ["L0", "L1"], "head": ["a", "b", "c"]}
    )
    assert isinstance(view, AttentionView)
    d = payload(view)
    assert d["scale"] == 10_000 and d["decimals"] == 4
    assert d["axes"] == [{"name": "layer", "ticks": ["L0", "L1"]}, {"name": "head", "ticks": ["a", "b", "c"]}]
    (x,) = d["examples"]
    assert x["rows"] == rows and x["cols"] == cols
    assert all(isinstance(v, int) for v in x["w"])
    assert x["w"] == expected_flat(w, 2)
    # the renderer's indexing: offset = (layer * H + head) * Tq * Tk, then i * Tk + j
    for layer, head, i, j in [(0, 0, 0, 0), (1, 2, 3, 4), (0, 1, 2, 3), (1, 0, 3, 0)]:
        v = x["w"][(layer * H + head) * Tq * Tk + i * Tk + j]
        assert v == round(float(w[layer, head, i, j]) * 1e4)
        assert abs(v / d["scale"] - float(w[layer, head, i, j])) <= 0.5e-4 + 1e-9


def test_payload_round_trips_ragged_examples():
    ws = [softmax_weights(2, 3, 4, seed=1), softmax_weights(2, 5, 2, seed=2), softmax_weights(2, 1, 1, seed=3)]
    rows = [["a", "b", "c"], ["p", "q", "r", "s", "t"], ["z"]]
    cols = [["1", "2", "3", "4"], ["x", "y"], ["only"]]
    view = attention_viewer(ws, rows, cols, axes=["hop"], ticks={"hop": ["first", "second"]})
    d = payload(view)
    assert d["axes"] == [{"name": "hop", "ticks": ["first", "second"]}]
    assert len(d["examples"]) == 3
    for x, w, r, c in zip(d["examples"], ws, rows, cols, strict=True):
        assert x["rows"] == r and x["cols"] == c
        assert len(x["w"]) == w.numel()
        assert x["w"] == expected_flat(w, 1)


def test_payload_keeps_other_dtypes_and_exact_values():
    w = torch.tensor([[0.0, 1.0, 0.25], [0.12344, 0.12346, 0.75310]], dtype=torch.float64)
    x = payload(attention_viewer(w, ["a", "b"], ["x", "y", "z"], distributions=False))["examples"][0]
    assert x["w"] == [0, 10_000, 2_500, 1_234, 1_235, 7_531]
    half = softmax_weights(3, 3).half()
    x = payload(attention_viewer(half, ["a", "b", "c"]))["examples"][0]
    assert x["w"] == expected_flat(half, 0)
    grad = softmax_weights(2, 2).requires_grad_()
    x = payload(attention_viewer(grad, ["a", "b"]))["examples"][0]
    assert x["w"] == expected_flat(grad.detach(), 0)


# ---------------------------------------------------------------------------------------------- defaults


def test_defaults():
    w = softmax_weights(3, 2, 2)
    d = payload(attention_viewer(w, ["a", "b"], axes=["head"]))
    (x,) = d["examples"]
    assert x["cols"] == x["rows"] == ["a", "b"]  # key_tokens defaults to query_tokens
    assert d["axes"] == [{"name": "head", "ticks": ["1", "2", "3"]}]
    assert x["name"] == ""
    assert d["names"] == ["query", "key"] and d["title"] == "" and d["vmax"] == 1.0
    d = payload(attention_viewer(softmax_weights(2, 2), ["a", "b"]))
    assert d["axes"] == []


def test_default_ticks_for_one_axis_and_given_ticks_for_the_other():
    d = payload(
        attention_viewer(softmax_weights(2, 4, 2, 2), ["a", "b"], axes=("layer", "head"), ticks={"head": "wxyz"})
    )
    assert d["axes"] == [{"name": "layer", "ticks": ["1", "2"]}, {"name": "head", "ticks": ["w", "x", "y", "z"]}]
    d = payload(attention_viewer(softmax_weights(3, 2, 2), ["a", "b"], axes=["epoch"], ticks={"epoch": [1, 10, 100]}))
    assert d["axes"][0]["ticks"] == ["1", "10", "100"]  # ticks are shown as text


def test_default_example_names_and_shared_tokens():
    ws = [softmax_weights(2, 2, seed=1), softmax_weights(2, 2, seed=2)]
    d = payload(attention_viewer(ws, ["the", "cat"]))  # one flat list is shared by both examples
    assert [x["name"] for x in d["examples"]] == ["the cat", "the cat"]
    assert all(x["rows"] == x["cols"] == ["the", "cat"] for x in d["examples"])
    d = payload(attention_viewer(ws, [["a", "b"], ["c", "d"]], [["x", "y"], ["z", "w"]]))
    assert [x["name"] for x in d["examples"]] == ["a b", "c d"]  # named after the query tokens
    d = payload(attention_viewer(ws, [["a", "b"], ["c", "d"]], examples=["first", "second"]))
    assert [x["name"] for x in d["examples"]] == ["first", "second"]
    assert d["examples"][1]["cols"] == ["c", "d"]


def test_names_title_and_vmax_are_carried():
    w = softmax_weights(2, 3)
    d = payload(attention_viewer(w, ["a", "b"], ["x", "y", "z"], names=("target", "source"), title="T", vmax=0.5))
    assert d["names"] == ["target", "source"] and d["title"] == "T" and d["vmax"] == 0.5
    assert payload(attention_viewer(w, ["a", "b"], ["x", "y", "z"], vmax=None))["vmax"] is None
    assert payload(attention_viewer(w, ["a", "b"], ["x", "y", "z"], vmax=3))["vmax"] == 3


# ---------------------------------------------------------------------------------------------- escaping and the id


def test_tokens_and_title_are_escaped_yet_survive_decoding():
    w = softmax_weights(2, 3, 2, 2)
    tokens = [EVIL, "a & b"]
    view = attention_viewer(
        w,
        tokens,
        ["<k>", "&amp;"],
        axes=["<h>", "ax"],
        ticks={"<h>": ["<1>", "2"]},
        names=("<q>", "k"),
        examples=["<ex>"],
        title="<b>bold</b> & co",
    )
    html = view.html
    assert view._repr_html_() == html
    for raw in ["</script><img", "<img", "<b>", "<k>", "<h>", "<1>", "<q>", "<ex>", "&amp;", "a & b"]:
        assert raw not in html
    assert html.count("</script>") == 2  # the data script and the renderer, nothing closed early by a token
    assert html.count("<script") == 2
    data = DATA.findall(html)[0]
    assert "<" not in data and ">" not in data and "&" not in data
    assert "\\u003c/script\\u003e" in data
    d = json.loads(data)
    assert d["title"] == "<b>bold</b> & co"
    assert d["examples"][0]["rows"] == tokens and d["examples"][0]["cols"] == ["<k>", "&amp;"]
    assert d["examples"][0]["name"] == "<ex>" and d["names"] == ["<q>", "k"]
    assert d["axes"][0] == {"name": "<h>", "ticks": ["<1>", "2"]}


def test_element_id_is_deterministic():
    w = softmax_weights(2, 2, 3)
    a = attention_viewer(w, ["a", "b"], ["x", "y", "z"], axes=["head"])
    b = attention_viewer(w.clone(), ["a", "b"], ["x", "y", "z"], axes=["head"])
    assert a.html == b.html and view_id(a) == view_id(b)
    # the renderer falls back to looking itself up by the same id
    assert f"document.querySelectorAll('[id=\"{view_id(a)}\"]')" in a.html
    w2 = w.clone()
    w2[1, 0, 2] += 0.01
    c = attention_viewer(w2, ["a", "b"], ["x", "y", "z"], axes=["head"], distributions=False)
    assert view_id(c) != view_id(a)
    d = attention_viewer(w, ["a", "b"], ["x", "y", "z"], axes=["head"], title="other")
    assert view_id(d) != view_id(a)


# ---------------------------------------------------------------------------------------------- errors


def test_token_count_must_match_the_matrix():
    w = softmax_weights(3, 4)
    with pytest.raises(
        ValueError, match=r"weights\[0\] \(shape \(3, 4\)\).*query_tokens has 3 and key_tokens 3.*\(3, 4\)"
    ):
        attention_viewer(w, ["a", "b", "c"])  # key_tokens defaults to the 3 query tokens
    with pytest.raises(
        ValueError, match=r"query_tokens has 2 and key_tokens 4 tokens.*do not match \(Tq, Tk\) = \(3, 4\)"
    ):
        attention_viewer(w, ["a", "b"], ["w", "x", "y", "z"])
    ws = [softmax_weights(2, 2), softmax_weights(3, 2)]
    with pytest.raises(ValueError, match=r"weights\[1\] \(shape \(3, 2\)\).*query_tokens has 2"):
        attention_viewer(ws, [["a", "b"], ["c", "d"]], ["x", "y"])


def test_dimensions_must_match_axes():
    with pytest.raises(ValueError, match=r"weights\[0\] \(shape \(2, 3, 3\)\) must have 4 dimensions"):
        attention_viewer(softmax_weights(2, 3, 3), ["a", "b", "c"], axes=("layer", "head"))
    with pytest.raises(ValueError, match=r"weights\[0\] \(shape \(2, 3, 3\)\) must have 2 dimensions"):
        attention_viewer(softmax_weights(2, 3, 3), ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"weights\[0\] \(shape \(3,\)\) must have 2 dimensions"):
        attention_viewer(torch.ones(3), ["a"])
    ws = [softmax_weights(2, 2, 2), softmax_weights(2, 2)]
    with pytest.raises(ValueError, match=r"weights\[1\] \(shape \(2, 2\)\) must have 3 dimensions"):
        attention_viewer(ws, ["a", "b"], axes=["head"])


def test_examples_must_share_axis_sizes():
    ws = [softmax_weights(2, 3, 2, 2), softmax_weights(2, 4, 2, 2)]
    with pytest.raises(ValueError, match=r"weights\[1\] \(shape \(2, 4, 2, 2\)\) has axis sizes \(2, 4\).*\(2, 3\)"):
        attention_viewer(ws, ["a", "b"], axes=("layer", "head"))


def test_axes_must_be_distinct_names():
    with pytest.raises(ValueError, match=r"axes must be distinct names"):
        attention_viewer(softmax_weights(2, 2, 2, 2), ["a", "b"], axes=("head", "head"))
    with pytest.raises(ValueError, match=r"axes must be distinct names"):
        attention_viewer(softmax_weights(2, 2, 2), ["a", "b"], axes=(0,))


def test_ticks_must_name_known_axes_and_have_the_right_length():
    w = softmax_weights(2, 3, 2, 2)
    with pytest.raises(ValueError, match=r"ticks names \['hop'\], which are not in axes \['layer', 'head'\]"):
        attention_viewer(w, ["a", "b"], axes=("layer", "head"), ticks={"hop": ["1", "2"]})
    with pytest.raises(ValueError, match=r"ticks names \['head'\].*not in axes \[\]"):
        attention_viewer(softmax_weights(2, 2), ["a", "b"], ticks={"head": ["1"]})
    with pytest.raises(ValueError, match=r"ticks\['head'\] has 2 labels, but the head axis has size 3"):
        attention_viewer(w, ["a", "b"], axes=("layer", "head"), ticks={"head": ["x", "y"]})
    with pytest.raises(ValueError, match=r"ticks\['layer'\] has 3 labels, but the layer axis has size 2"):
        attention_viewer(w, ["a", "b"], axes=("layer", "head"), ticks={"layer": ["x", "y", "z"]})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_weights_must_be_finite(bad):
    w = softmax_weights(2, 2, 3)
    w[1, 1, 2] = bad
    with pytest.raises(ValueError, match=r"weights\[0\] \(shape \(2, 2, 3\)\) has complex, non-finite or huge"):
        attention_viewer(w, ["a", "b"], ["x", "y", "z"], axes=["head"])
    with pytest.raises(ValueError, match=r"weights\[1\] \(shape \(2, 2, 3\)\) has complex, non-finite or huge"):
        attention_viewer([softmax_weights(2, 2, 3), w], ["a", "b"], ["x", "y", "z"], axes=["head"])


def test_complex_weights_are_rejected():
    with pytest.raises(ValueError, match=r"weights\[0\].*complex"):
        attention_viewer(torch.ones(2, 2, dtype=torch.complex64), ["a", "b"])


@pytest.mark.parametrize("vmax", [0, 0.0, -1.0, math.nan, math.inf, "1", [1.0], torch.tensor(1.0)])
def test_vmax_must_be_a_positive_number_or_none(vmax):
    with pytest.raises(ValueError, match=r"vmax must be a positive number or None"):
        attention_viewer(softmax_weights(2, 2), ["a", "b"], vmax=vmax)


@pytest.mark.parametrize("names", [("query",), ("a", "b", "c"), ("a", 1), (None, "b"), []])
def test_names_must_be_two_strings(names):
    with pytest.raises(ValueError, match=r"names must be two strings"):
        attention_viewer(softmax_weights(2, 2), ["a", "b"], names=names)


def test_examples_must_name_each_tensor():
    ws = [softmax_weights(2, 2, seed=1), softmax_weights(2, 2, seed=2)]
    with pytest.raises(ValueError, match=r"examples must be 2 names \(one per weights tensor\), got \['only one'\]"):
        attention_viewer(ws, ["a", "b"], examples=["only one"])
    with pytest.raises(ValueError, match=r"examples must be 2 names"):
        attention_viewer(ws, ["a", "b"], examples=["x", "y", "z"])
    with pytest.raises(ValueError, match=r"examples must be 2 names"):
        attention_viewer(ws, ["a", "b"], examples=["x", 2])
    with pytest.raises(ValueError, match=r"examples must be 1 names"):
        attention_viewer(ws[0], ["a", "b"], examples=[])


@pytest.mark.parametrize("weights", [[], (), [[0.5, 0.5], [0.5, 0.5]], "weights", None, 1.0, [torch.ones(2, 2), 1]])
def test_weights_must_be_a_tensor_or_a_non_empty_list_of_them(weights):
    with pytest.raises(ValueError, match=r"weights must be a tensor \(\.\.\., Tq, Tk\) or a non-empty list"):
        attention_viewer(weights, ["a", "b"])


def test_tokens_must_be_lists_of_strings():
    w = softmax_weights(2, 2)
    with pytest.raises(ValueError, match=r"query_tokens must be a list of strings.*got str"):
        attention_viewer(w, "ab")
    with pytest.raises(ValueError, match=r"key_tokens must be a list of strings.*got str"):
        attention_viewer(w, ["a", "b"], "xy")
    with pytest.raises(ValueError, match=r"query_tokens must be a list of strings.*got NoneType"):
        attention_viewer(w, None)
    with pytest.raises(ValueError, match=r"query_tokens must be a list of strings or 1 lists of strings"):
        attention_viewer(w, [1, 2])
    ws = [softmax_weights(2, 2, seed=1), softmax_weights(2, 2, seed=2)]
    with pytest.raises(ValueError, match=r"query_tokens must be a list of strings or 2 lists of strings"):
        attention_viewer(ws, [["a", "b"]])  # one list of lists for two examples
    with pytest.raises(ValueError, match=r"key_tokens must be a list of strings or 2 lists of strings"):
        attention_viewer(ws, ["a", "b"], [["a", "b"], "xy"])  # a str where a list of tokens belongs


# ---------------------------------------------------------------------------------------------- save and repr


def test_save_writes_a_standalone_page_and_refuses_to_overwrite(tmp_path):
    view = attention_viewer(softmax_weights(2, 2, 3), [EVIL, "b"], ["x", "y", "z"], axes=["head"], title="ü")
    path = tmp_path / "viewer.html"
    assert view.save(path) == path
    page = path.read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html>")
    assert "<meta charset='utf-8'>" in page and page.rstrip().endswith("</html>")
    assert view.html in page and "<img" not in page
    assert json.loads(DATA.findall(page)[0]) == payload(view)
    other = attention_viewer(softmax_weights(2, 2, seed=5), ["p", "q"])
    with pytest.raises(FileExistsError, match=r"overwrite=True"):
        other.save(path)
    assert path.read_text(encoding="utf-8") == page
    with pytest.raises(FileExistsError):
        other.save(str(path), overwrite=False)
    assert path.read_text(encoding="utf-8") == page
    assert other.save(str(path), overwrite=True) == path
    replaced = path.read_text(encoding="utf-8")
    assert other.html in replaced and view.html not in replaced


def test_repr_is_short_and_names_examples_and_axes():
    view = attention_viewer(softmax_weights(2, 3, 4, 4), list("abcd"), axes=("layer", "head"))
    text = repr(view)
    assert text.startswith("AttentionView(1 example, layer 2 × head 3, ") and text.endswith(" KiB)")
    assert len(text) < 100 and "\n" not in text
    ws = [softmax_weights(5, 30, 30, seed=k) for k in range(3)]
    text = repr(attention_viewer(ws, [f"t{i}" for i in range(30)], axes=["hop"]))
    assert text.startswith("AttentionView(3 examples, hop 5, ") and len(text) < 100
    assert repr(attention_viewer(softmax_weights(2, 2), ["a", "b"])).startswith("AttentionView(1 example, ")


# ---------------------------------------------------------------------------------------------- properties


@st.composite
def softmax_cases(draw):
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    Tq, Tk = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    n = math.prod(lead) * Tq * Tk
    logits = draw(st.lists(st.floats(-30, 30, allow_nan=False), min_size=n, max_size=n))
    return torch.tensor(logits, dtype=torch.float32).reshape(*lead, Tq, Tk).softmax(-1), len(lead)


@given(softmax_cases())
def test_decoded_softmax_weights_are_close_and_rows_sum_to_one(case):
    w, n_axes = case
    *lead, Tq, Tk = w.shape
    axes = ["layer", "head"][:n_axes]
    d = payload(attention_viewer(w, [f"q{i}" for i in range(Tq)], [f"k{j}" for j in range(Tk)], axes=axes))
    assert [len(a["ticks"]) for a in d["axes"]] == lead
    decoded = torch.tensor(d["examples"][0]["w"], dtype=torch.float64).reshape(w.shape) / d["scale"]
    assert (decoded - w.double()).abs().max() <= 0.5e-4 + 1e-9
    assert ((decoded.sum(-1) - 1).abs() <= Tk * 0.5e-4 + 1e-6).all()


@given(st.lists(st.text(max_size=12), min_size=1, max_size=4), st.text(max_size=20))
def test_any_text_survives_and_never_reaches_the_page_raw(tokens, title):
    n = len(tokens)
    view = attention_viewer(torch.full((n, n), 1 / n), tokens, title=title)
    data = DATA.findall(view.html)
    assert len(data) == 1 and not set("<>&") & set(data[0])
    d = json.loads(data[0])
    assert d["examples"][0]["rows"] == tokens and d["title"] == title


def test_inputs_the_page_could_not_show_are_refused():
    w = softmax_weights(2, 2)
    with pytest.raises(ValueError, match=r"huge"):
        attention_viewer(torch.tensor([[1e16, 0.0], [0.0, 1.0]]), ["a", "b"])
    with pytest.raises(ValueError, match=r"vmax must be a positive number or None, got True"):
        attention_viewer(w, ["a", "b"], vmax=True)
    with pytest.raises(ValueError, match=r"names must be two strings"):
        attention_viewer(w, ["a", "b"], names="qk")
    with pytest.raises(ValueError, match=r"names must be two strings"):
        attention_viewer(w, ["a", "b"], names=None)
    with pytest.raises(ValueError, match=r"examples must be 2 names"):
        attention_viewer([w, w], ["a", "b"], examples="ab")
    with pytest.raises(ValueError, match=r"examples must be 2 names"):
        attention_viewer([w, w], ["a", "b"], examples=5)
    with pytest.raises(ValueError, match=r"axes must be a list of names"):
        attention_viewer(softmax_weights(4, 2, 2), ["a", "b"], axes="head")
    with pytest.raises(ValueError, match=r"weights\[0\] \(shape \(0, 2, 2\)\) is empty"):
        attention_viewer(torch.zeros(0, 2, 2), ["a", "b"], axes=["head"])
    with pytest.raises(ValueError, match=r"is empty"):
        attention_viewer(torch.zeros(2, 0), ["a", "b"], [])


def test_vmax_accepts_any_real_number():
    view = attention_viewer(softmax_weights(2, 2), ["a", "b"], vmax=np.float32(0.5))
    assert payload(view)["vmax"] == 0.5


def test_rows_must_be_distributions_unless_declared_otherwise():
    usage = torch.tensor([[0.2, 0.9], [0.5, 0.0]])  # a memory's usage over two steps: not attention
    with pytest.raises(ValueError, match=r"weights\[0\] \(shape \(2, 2\)\).*distributions=False"):
        attention_viewer(usage, ["t1", "t2"], ["row 1", "row 2"])
    with pytest.raises(ValueError, match="not distributions"):
        attention_viewer(torch.tensor([[1.5, -0.5]]), ["q"], ["a", "b"])
    view = attention_viewer(usage, ["t1", "t2"], ["row 1", "row 2"], distributions=False)
    assert payload(view)["distributions"] is False
    assert "distributions" not in payload(attention_viewer(torch.tensor([[0.0, 0.0], [0.25, 0.75]]), ["a", "b"]))
    with pytest.raises(ValueError, match="distributions must be True or False"):
        attention_viewer(usage, ["t1", "t2"], distributions="no")


# ------------------------------------------------------------------ the style and renderer as package data

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node (Node.js) is not installed: the JavaScript is not checked")


def asset(name):
    """viewer.css or viewer.js as the package ships it (package data, read like the viewer reads it)."""
    return resources.files("attn.viz").joinpath(name).read_text(encoding="utf-8")


def run_node(*args, stdin=None):
    done = subprocess.run([NODE, *args], input=stdin, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"node {' '.join(args)} failed:\n{done.stderr}"
    return done.stdout


def test_style_and_script_are_declared_package_data():
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert set(pyproject["tool"]["setuptools"]["package-data"]["attn.viz"]) >= {"viewer.css", "viewer.js"}
    assert asset("viewer.css").strip() and asset("viewer.js").strip()


def test_the_files_reach_the_page_verbatim_with_only_the_markers_filled_in():
    view = attention_viewer(softmax_weights(2, 3), ["a", "b"], ["x", "y", "z"])
    css, js = asset("viewer.css"), asset("viewer.js")
    assert viewer.ID_MARKER in js and viewer.STOPS_MARKER in js
    assert viewer.ID_MARKER not in view.html and viewer.STOPS_MARKER not in view.html
    filled = js.replace(viewer.ID_MARKER, view_id(view)).replace(viewer.STOPS_MARKER, json.dumps(viewer.VIRIDIS))
    assert view.html.startswith(f"<style>\n{css}</style><div class='attn-viewer'")
    assert view.html.endswith(f"</div><script>{filled.removesuffix(chr(10))}</script>")


@needs_node
def test_viewer_js_is_valid_javascript(tmp_path):
    """node --check parses viewer.js as it is stored (its markers are identifiers) and as a page gets it."""
    run_node("--check", str(resources.files("attn.viz").joinpath("viewer.js")))
    view = attention_viewer(
        [softmax_weights(2, 2, 2), softmax_weights(2, 3, 3, seed=1)],
        [["a", "b"], ["c", "d", "e"]],
        axes=["head"],
        title=EVIL,
    )
    (script,) = re.findall(r"<script>(\(function.*?)</script>", view.html, re.S)
    (tmp_path / "rendered.js").write_text(script, encoding="utf-8")
    run_node("--check", str(tmp_path / "rendered.js"))


@needs_node
def test_the_colour_ramp_interpolates_viridis_in_javascript():
    """The script's colour(t), run by node: the stops at 0, 1/2 and 1, halfway between two stops, clamped."""
    js = asset("viewer.js").replace(viewer.STOPS_MARKER, json.dumps(viewer.VIRIDIS))
    start = js.index("var stops =")
    end = js.index("\n}\n", js.index("function colour(t)")) + 3  # the stops, then colour (no DOM needed)
    probes = [0, 1, 0.5, 1 / 16, -1, 2]
    out = run_node("-", stdin=js[start:end] + f"console.log(JSON.stringify({json.dumps(probes)}.map(colour)));")
    rgb = [tuple(int(viewer.VIRIDIS[k][i : i + 2], 16) for i in (1, 3, 5)) for k in (0, 1, 4, 8)]
    halfway = tuple(math.floor((a + b) / 2 + 0.5) for a, b in zip(rgb[0], rgb[1], strict=True))  # Math.round
    expected = [rgb[0], rgb[3], rgb[2], halfway, rgb[0], rgb[3]]
    assert json.loads(out) == [f"rgb({r},{g},{b})" for r, g, b in expected]


def test_viewer_css_parses_into_rules_scoped_to_the_viewer():
    """Balanced braces, no nesting, every rule a selector on .attn-viewer with property: value declarations."""
    css = re.sub(r"/\*.*?\*/", "", asset("viewer.css"), flags=re.S)
    depth = 0
    for ch in css:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert 0 <= depth <= 1, "a closing brace without an opening one, or nested braces"
    assert depth == 0, "an unclosed brace"
    rules = re.findall(r"([^{}]+)\{([^{}]*)\}", css)
    assert rules and re.sub(r"([^{}]+)\{([^{}]*)\}", "", css).strip() == "", "text outside a rule"
    for selectors, body in rules:
        for selector in selectors.split(","):
            assert selector.strip().startswith(".attn-viewer"), f"{selector.strip()!r} would style the whole page"
        declarations = [d.strip() for d in body.split(";") if d.strip()]
        assert declarations, f"empty rule {selectors.strip()}"
        for d in declarations:
            assert re.fullmatch(r"[a-z-]+\s*:\s*\S.*", d, re.S), f"{d!r} in {selectors.strip()} is not property: value"
