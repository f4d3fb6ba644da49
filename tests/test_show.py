"""attn.book.show: result tables and library source, as text (for nbval) and as HTML (for the online book)."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

import attn
from attn.blocks import MultiHeadAttention
from attn.book.show import show_source, table


def test_a_table_is_aligned_text_and_an_escaped_html_table():
    t = table(["model", "parameters"], [["ViT", 20388], ["<b>CNN</b>", 7]], caption="what each got")
    assert str(t).splitlines() == [
        "what each got",
        "model      | parameters",
        "-----------+-----------",
        "ViT        | 20,388",
        "<b>CNN</b> | 7",
    ]
    bundle = t._repr_mimebundle_()
    assert bundle["text/plain"] == str(t)
    page = bundle["text/html"]
    assert page.count("<tr>") == 3 and "<caption>what each got</caption>" in page
    assert "&lt;b&gt;CNN&lt;/b&gt;" in page and "<b>CNN</b>" not in page


@given(st.lists(st.lists(st.text(alphabet="ab |", max_size=6), min_size=3, max_size=3), max_size=5))
def test_every_text_row_is_as_wide_as_the_widest_cell_allows(rows):
    lines = str(table(["x", "y", "z"], rows)).splitlines()
    assert len(lines) == len(rows) + 2
    widest = len(lines[1])  # the rule spans every column
    assert all(len(line) <= widest for line in lines)


def test_a_table_names_what_is_wrong():
    with pytest.raises(ValueError, match=r"row 1 has 1 cells but the header has 2 columns"):
        table(["a", "b"], [[1, 2], [3]])
    with pytest.raises(ValueError, match="header must name"):
        table([], [])
    with pytest.raises(ValueError, match="caption must be a string"):
        table(["a"], [[1]], caption=3)


@pytest.mark.parametrize("obj", [attn.scaled_dot_product_attention, MultiHeadAttention.forward, MultiHeadAttention])
def test_source_is_the_library_code_with_its_name_and_lines(obj):
    shown = show_source(obj)
    lines, first = inspect.getsourcelines(obj)
    assert str(shown) == "".join(lines).rstrip("\n")
    assert shown.name == obj.__qualname__ and shown.file.startswith("attn/") and shown.file.endswith(".py")
    assert shown.where == f"{shown.file}, lines {first}-{first + len(lines) - 1}"
    page = shown._repr_mimebundle_()["text/html"]
    assert page.startswith("<details class='attn-source'><summary>") and "open" not in page.split(">")[0]
    assert f"<code>{obj.__qualname__}</code>" in page and 'class="highlight"' in page


def test_source_of_what_has_none_is_refused():
    with pytest.raises(ValueError, match="obj must be a function, method or class with source"):
        show_source(len)


def _documented(x):
    """A docstring
    on two lines."""

    y = x + 1  # the body's first line
    return y


def _undocumented(
    x,
):
    return x


@pytest.mark.parametrize(
    ("obj", "first_line"),
    [(_documented, "    y = x + 1  # the body's first line"), (_undocumented, "    return x"),
     (MultiHeadAttention.forward, None)],
)  # fmt: skip
def test_a_body_is_what_follows_the_signature_and_docstring_shown_open(obj, first_line):
    shown = show_source(obj, body=True)
    lines, first = inspect.getsourcelines(obj)
    body = str(shown).split("\n")
    assert body[0].strip() and "".join(lines).rstrip("\n").endswith(str(shown))
    if first_line is not None:
        assert body[0] == first_line
    assert '"""' not in str(shown) and "def " not in body[0]
    assert lines[shown.first - first].rstrip("\n") == body[0]  # its line numbers are the body's
    assert shown._repr_mimebundle_()["text/html"].startswith("<details class='attn-source' open><summary>")


def test_a_body_flag_must_be_a_bool():
    with pytest.raises(ValueError, match="body must be True or False"):
        show_source(_documented, body="yes")
