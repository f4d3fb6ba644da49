"""Shared helpers for the chapter tests: where the chapters are, and what of their outputs is compared."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from nbval.plugin import coalesce_streams, get_sanitize_patterns

from attn.pretrained import ModelNotInstalledError, model_dir

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"
IGNORE_OUTPUT = "nbval-ignore-output"
WIDGET = "application/vnd.jupyter.widget-view+json"
NOT_COMPARED = {"image/png", "image/jpeg", WIDGET}  # what nbval leaves out (images; widget model ids are random)


def _model_missing() -> str | None:
    """Why the pretrained model of chapter 11 cannot be used here, or None when it is installed."""
    try:
        model_dir()
    except ModelNotInstalledError as error:
        return f"chapter 11's pretrained model is not installed: {error}"
    return None


MODEL_MISSING = _model_missing()


def sanitize_patterns() -> list[tuple[str, str]]:
    """The replacements of ``nbval_sanitize.cfg``, in order, read as nbval reads them: what it treats as volatile."""
    return get_sanitize_patterns(SANITIZE.read_text())


def comparable(outputs: list, patterns: list[tuple[str, str]]) -> list:
    """A cell's outputs as nbval compares them: streams merged by nbval, every data field but images and widget
    ids, after the sanitizer's replacements; an error as its name."""

    def clean(text: str) -> str:
        for regex, replace in patterns:
            text = re.sub(regex, replace, text)
        return text

    seen = []
    for output in coalesce_streams(outputs):
        if output["output_type"] == "stream":
            seen.append((output["name"], clean(output["text"])))
        elif output["output_type"] == "error":
            seen.append(("error", output["ename"]))
        else:
            data = {k: v for k, v in output.get("data", {}).items() if k not in NOT_COMPARED}
            seen.append(sorted((k, clean(v) if isinstance(v, str) else v) for k, v in data.items()))
    return seen


VIEWER_DATA = re.compile(r"<script type='application/json' class='av-data'>(.*?)</script>", re.DOTALL)
BERTVIZ_DATA = re.compile(r"const params = (\{.*?\}); // HACK", re.DOTALL)


def attention_views(outputs: list) -> list[tuple[str, list[list[float]], int]]:
    """Every attention matrix an output shows (attn's viewer, bertviz's head view): (where, rows of weights,
    decimals it is rounded to: the viewer's own; for bertviz 2, the fewest a chapter passes it)."""
    found = []
    for output in outputs:
        data = output.get("data", {})
        for payload in VIEWER_DATA.findall(data.get("text/html", "")):
            view = json.loads(payload)
            if not view.get("distributions", True):  # usage, links: not attention, declared so
                continue
            for k, example in enumerate(view["examples"]):
                nq, nk = len(example["rows"]), len(example["cols"])
                weights = [w / view["scale"] for w in example["w"]]
                for m in range(len(weights) // (nq * nk)):
                    block = weights[m * nq * nk : (m + 1) * nq * nk]
                    rows = [block[i * nk : (i + 1) * nk] for i in range(nq)]
                    found.append((f"viewer {view['title']!r}, example {k}, matrix {m}", rows, view["decimals"]))
        for payload in BERTVIZ_DATA.findall(data.get("application/javascript", "")):
            for k, item in enumerate(json.loads(payload)["attention"]):
                for layer, heads in enumerate(item["attn"]):
                    for h, matrix in enumerate(heads):
                        found.append((f"bertviz view {k}, layer {layer}, head {h}", matrix, 2))
    return found


def rows_sum_to_one(rows: list[list[float]], decimals: int) -> bool:
    """Every row of weights sums to 1 (0 for a row with nothing to attend to), up to rounding at ``decimals``."""
    tolerance = len(rows[0]) * 0.5 * 10.0**-decimals + 1e-6
    return all(math.isclose(sum(row), 1.0, abs_tol=tolerance) or sum(row) == 0 for row in rows)
