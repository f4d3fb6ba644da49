"""How ``make test`` spreads the tests over the cores (pytest-xdist), for every run inside this repository
(``pytest notebooks --nbval -n 2`` too): a chapter's cells stay in one worker, in order, and the longest groups go
first."""

import os
from datetime import datetime
from functools import cache
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent
# No progress bars in the chapters run here (attn/training/progress.py): nbval compares their outputs with the
# saved ones.
os.environ.setdefault("ATTN_PROGRESS", "0")


@cache
def _seconds(path: Path) -> float:
    """How long the committed run of a chapter took (the cells' execution timestamps)."""
    stamps = [c.metadata.get("execution", {}) for c in nbformat.read(path, as_version=4).cells]
    times = [datetime.fromisoformat(s[k].replace("Z", "+00:00")) for s in stamps for k in s if k in (
        "iopub.execute_input", "shell.execute_reply")]  # fmt: skip
    return (max(times) - min(times)).total_seconds() if times else 60.0


STUDENT_RUN = "tests/test_notebooks.py::test_student_version_on_a_second_numeric_path["


def group(nodeid: str) -> tuple[str, float]:
    """The group of tests that must run in one worker, and its rough cost in seconds (0: unknown, small)."""
    path = nodeid.partition("::")[0]
    if path.endswith(".ipynb"):  # nbval: a chapter's cells run in order, in one kernel
        return path, _seconds(ROOT / path)
    if nodeid.startswith(STUDENT_RUN):  # a chapter's run on the second numeric path: one test, on its own
        chapter = nodeid[len(STUDENT_RUN) :].split("]")[0]
        return nodeid, 1.4 * _seconds(ROOT / "notebooks" / f"{chapter}.ipynb")
    if path == "tests/test_nbgrader.py":  # nbgrader's pipeline: chapter 1 autograded three times
        return path, 60.0
    if path == "tests/test_packaging.py":  # attn installed alone into a fresh venv
        return path, 45.0
    if path == "tests/test_book.py" or path.startswith("tests/browser/"):  # one book build, one browser, JupyterLab
        return "book", 420.0
    return path, 0.0  # a module's tests share its module-scoped fixtures


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``make test`` (``-n auto --dist loadgroup``) hands out the groups of :func:`group`, longest first (the
    order of the collection, see below). Our own scheduler, because pytest-xdist 3.8 marks its groups by renaming
    node ids, which pytest 9.2 no longer allows: its ``xdist_group`` marks are silently ignored there."""
    if config.getvalue("dist") not in ("load", "loadgroup"):  # load: plain -n N, which would split a chapter
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group(nodeid)[0]

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """The longest groups first (chapters and their second-path runs), so that the workers finish at about the
    same time; a group's tests keep their order (a chapter's cells run in order)."""
    cost: dict[str, float] = {}
    for item in items:
        name, seconds = group(item.nodeid)
        cost[name] = max(cost.get(name, 0.0), seconds)
    items.sort(key=lambda item: -cost[group(item.nodeid)[0]])
