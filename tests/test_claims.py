"""attn.book.claims: a chapter's claims about a trained model are bounds, checked in code, failing by name."""

import math

import nbformat
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn.book.claims import METADATA_KEY, Claim, ClaimError, claim, recorded_claims


def test_a_claim_that_holds_shows_the_bound_and_this_runs_value(capsys):
    claim("held-out exact match", 0.965, at_least=0.9, fmt=".1%")
    claim("loss on the repeats", torch.tensor(0.34), at_most=1.0, fmt=".2f")
    claim("answer", "yellow", equals="yellow")
    claim("the greedy translation equals the reference", True)
    claim("spread", np.float32(3.0), at_least=1, at_most=5, fmt=".1f")
    assert capsys.readouterr().out.splitlines() == [
        "✓ held-out exact match ≥ 90.0% (this run: 96.5%)",
        "✓ loss on the repeats ≤ 1.00 (this run: 0.34)",
        "✓ answer: 'yellow'",
        "✓ the greedy translation equals the reference",
        "✓ spread ≥ 1.0 and ≤ 5.0 (this run: 3.0)",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("held-out exact match", 0.032), {"at_least": 0.9, "fmt": ".1%"}),
        (("loss", 1.5), {"at_most": 1.0}),
        (("level", -0.2), {"at_least": -0.05, "at_most": 0.05}),
        (("answer", "green"), {"equals": "yellow"}),
        (("the translation equals the reference", False), {}),
        (("a NaN never holds", float("nan")), {"at_least": 0.0}),
    ],
)
def test_a_claim_that_fails_raises_naming_the_claim_and_the_value(args, message, capsys):
    with pytest.raises(ClaimError, match="claim does not hold: " + args[0]) as error:
        claim(*args, **message)
    assert isinstance(error.value, AssertionError)  # nbval and nbgrader report it as a failed check
    shown = capsys.readouterr().out
    assert shown.startswith("✗ " + args[0])
    if isinstance(args[1], float) and not math.isnan(args[1]):
        assert f"this run: {args[1]:{message.get('fmt', '')}}" in str(error.value)
    if isinstance(args[1], str):
        assert "'green', not 'yellow'" in str(error.value)


@pytest.mark.parametrize(
    ("statement", "value", "bounds", "match"),
    [
        ("", 1.0, {"at_least": 0}, "statement must be a non-empty string"),
        (None, 1.0, {"at_least": 0}, "statement must be a non-empty string"),
        ("no bound", 1.0, {}, "has no bound"),
        ("a tensor", torch.ones(3), {"at_least": 0}, r"value must be one real number, got a tensor of shape \(3,\)"),
        ("a string", "0.9", {"at_least": 0}, "value must be a real number, got str"),
        ("bool bound", 1.0, {"at_least": True}, "at_least must be a real number, got bool"),
        ("crossed", 1.0, {"at_least": 2, "at_most": 1}, "at_least=2.0 is above at_most=1.0"),
        ("nan bound", 1.0, {"at_most": float("nan")}, "a bound is NaN"),
        ("yes/no", True, {"at_least": 0}, "a yes/no value takes no at_least"),
        ("both", "a", {"equals": "a", "at_least": 0}, "give equals or at_least/at_most, not both"),
        ("number equals", 1.0, {"equals": "1.0"}, "equals compares strings"),
        ("format", 1.0, {"at_least": 0, "fmt": "d"}, "fmt 'd' is not a number format"),
    ],
)
def test_a_malformed_claim_is_a_value_error_naming_it(statement, value, bounds, match):
    with pytest.raises(ValueError, match=match):
        claim(statement, value, **bounds)


@given(
    value=st.floats(allow_nan=False, allow_infinity=False, width=32),
    low=st.one_of(st.none(), st.floats(-1e6, 1e6)),
    high=st.one_of(st.none(), st.floats(-1e6, 1e6)),
)
def test_a_claim_holds_exactly_when_the_value_is_within_its_bounds(value, low, high):
    if low is None and high is None or (low is not None and high is not None and low > high):
        return
    within = (low is None or value >= low) and (high is None or value <= high)
    try:
        claim("value within bounds", value, at_least=low, at_most=high, fmt="g")
    except ClaimError:
        assert not within
    else:
        assert within


def test_claims_are_recorded_in_the_notebook_output_metadata():
    """In a kernel a claim is a display output carrying its record; recorded_claims reads a notebook's back."""
    checked = Claim("held-out exact match", 0.97, at_least=0.9, fmt=".1%", holds=True)
    data, metadata = checked._repr_mimebundle_()
    assert data["text/plain"] == "✓ held-out exact match ≥ 90.0% (this run: 97.0%)"
    # the book shows a paragraph that wraps like prose, marked pass or fail, its text escaped
    assert data["text/html"] == (
        "<p class='attn-claim attn-claim-pass'><span class='attn-claim-mark'>✓</span> "
        "held-out exact match ≥ 90.0% (this run: 97.0%)</p>"
    )
    failed = Claim("a <b> c", 0.5, at_least=0.9, fmt=".1f")._repr_html_()
    assert "attn-claim-fail" in failed and "✗" in failed and "&lt;b&gt;" in failed
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# x"), nbformat.v4.new_code_cell("claim(...)")]
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data=data, metadata=metadata),
                           nbformat.v4.new_output("stream", text="other")]  # fmt: skip
    assert recorded_claims(nb) == [{"cell": 1, **metadata[METADATA_KEY]}]
    assert metadata[METADATA_KEY]["value"] == 0.97 and metadata[METADATA_KEY]["holds"] is True
    assert Claim("nan", float("nan"), at_least=0.0).record()["value"] is None  # valid JSON


def test_a_claim_shows_its_null_beside_the_bound(capsys):
    claim("held-out exact match", 0.965, at_least=0.9, fmt=".1%", null=torch.tensor(0.031), control="untrained")
    claim("the model answers 'yellow'", "yellow", equals="yellow", null="green", control="shuffled story")
    claim("three hops beat one", True, null=False, control="one hop against itself")
    claim("matches torch's attention", True, no_null="exact: compared with a reference")
    assert capsys.readouterr().out.splitlines() == [
        "✓ held-out exact match ≥ 90.0% (this run: 96.5%; untrained: 3.1%)",
        "✓ the model answers 'yellow': 'yellow' (shuffled story: 'green')",
        "✓ three hops beat one (one hop against itself: no)",
        "✓ matches torch's attention",
    ]


@pytest.mark.parametrize(
    ("value", "bounds", "null"),
    [
        (0.2, {"at_most": 0.25}, 0.20),  # chapter 5's convolution: its ceiling already meets the bound
        (0.95, {"at_least": 0.5, "fmt": ".0%"}, 0.75),  # chance is above the bound
        (0.01, {"at_least": -0.03, "at_most": 0.03}, 0.013),  # "no difference": the control is inside it too
        ("yellow", {"equals": "yellow"}, "yellow"),
        (True, {}, True),
    ],
)
def test_a_claim_whose_null_meets_its_bound_fails(value, bounds, null, capsys):
    """A check that the control passes too cannot fail: it is a red cell, not a claim."""
    with pytest.raises(ClaimError, match="claim cannot fail: a measured claim") as error:
        claim("a measured claim", value, null=null, control="control", **bounds)
    assert "which meets the bound too: this check cannot fail" in str(error.value)
    assert capsys.readouterr().out.startswith("✗ a measured claim")


def test_a_claim_and_its_null_are_recorded():
    checked = Claim("a", 0.9, at_least=0.5, null=0.1, control="chance", holds=True)
    record = checked.record()
    assert (record["null"], record["control"], record["null_holds"], record["no_null"]) == (0.1, "chance", False, None)
    assert checked.passed and not Claim("a", 0.9, at_least=0.5, null=0.6, holds=True, null_holds=True).passed


@pytest.mark.parametrize(
    ("value", "kwargs", "match"),
    [
        (1.0, {"at_least": 0, "null": 0.1, "no_null": "exact"}, "give null .* or no_null .*, not both"),
        (1.0, {"at_least": 0, "no_null": " "}, "no_null must say why"),
        (1.0, {"at_least": 0, "null": -1.0, "control": ""}, "control must name the null's control"),
        (1.0, {"at_least": 0, "null": float("nan")}, "the null is NaN"),
        (1.0, {"at_least": 0, "null": torch.ones(2)}, "null must be one real number"),
        (1.0, {"at_least": 0, "null": "0.1"}, "null must be a real number, got str"),
        (True, {"null": 0.0}, "a yes/no claim's null is yes/no too"),
        ("a", {"equals": "a", "null": 1.0}, "a string claim's null is a string too"),
    ],
)
def test_a_malformed_null_is_a_value_error_naming_the_claim(value, kwargs, match):
    with pytest.raises(ValueError, match=match):
        claim("the claim", value, **kwargs)


@given(
    value=st.floats(-10, 10),
    null=st.floats(-10, 10),
    low=st.floats(-10, 10),
)
def test_a_claim_with_a_null_passes_exactly_when_the_value_meets_the_bound_and_the_null_does_not(value, null, low):
    try:
        claim("value above the bound, null below", value, at_least=low, null=null, fmt="g")
    except ClaimError:
        assert value < low or null >= low
    else:
        assert value >= low > null


def test_a_numpy_bool_or_a_bool_tensor_is_a_yes_no_claim(capsys):
    claim("numpy's yes", np.bool_(True))
    claim("a tensor's yes", torch.tensor(True), null=torch.tensor([False]), control="untrained")
    assert capsys.readouterr().out.splitlines() == ["✓ numpy's yes", "✓ a tensor's yes (untrained: no)"]
    with pytest.raises(ClaimError, match="claim does not hold: numpy's no"):
        claim("numpy's no", np.bool_(False))


def test_a_number_too_large_for_a_float_is_a_value_error():
    with pytest.raises(ValueError, match="value is too large to compare as a float"):
        claim("huge", 10**400, at_least=0)
    with pytest.raises(ValueError, match="at_most is too large to compare as a float"):
        claim("huge bound", 1.0, at_most=-(10**400))
