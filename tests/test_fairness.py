"""attn.book.fairness: what each side of a comparison got, shown as text (for nbval) and as HTML."""

import pytest

from attn.book.fairness import Arm, show_arms

ARMS = [
    Arm("decayed sum", 0, 0, "N = 4 … 64", "γ ∈ {0.8, 0.9, 0.95}", "γ = 0.9 (held-out recall)"),
    Arm("delta rule", 0, 1200, "N = 4 … 64", "β ∈ {0.25, 0.5, 1}", "β = 0.5 (held-out recall)"),
]


def test_the_table_is_aligned_text_with_one_row_per_arm():
    text = str(show_arms(ARMS))
    lines = text.splitlines()
    assert lines[0].split(" | ")[0].strip() == "arm" and "setting chosen" in lines[0]
    assert set(lines[1]) <= {"-", "+"}
    assert lines[2].startswith("decayed sum") and lines[3].startswith("delta rule ")
    assert "1,200" in lines[3]
    assert len({line.index("|") for line in (lines[0], lines[2], lines[3])}) == 1  # aligned columns


def test_the_html_escapes_names_and_scrolls_in_its_own_box():
    table = show_arms([Arm("<b>x</b>", 1, 1, "d", "s", "c"), ARMS[0]])
    bundle = table._repr_mimebundle_()
    assert bundle["text/plain"] == str(table)
    assert "&lt;b&gt;x&lt;/b&gt;" in bundle["text/html"] and "<b>x</b>" not in bundle["text/html"]
    assert "overflow-x:auto" in bundle["text/html"]


@pytest.mark.parametrize(
    ("arms", "match"),
    [
        ([ARMS[0]], "at least two sides"),
        ([ARMS[0], ("delta", 0)], "must be Arm records"),
        ([ARMS[0], Arm("b", 0, 0, "d", " ", "c")], "arm 'b': say which settings were searched"),
    ],
)
def test_a_malformed_comparison_is_a_value_error(arms, match):
    with pytest.raises(ValueError, match=match):
        show_arms(arms)
