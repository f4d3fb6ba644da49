import os
import subprocess
import sys
from datetime import datetime
from functools import cache
from pathlib import Path

import nbformat
import pytest
import torch
from filelock import FileLock
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

# CI runs on 2 slow cores: no per-example deadline; a fixed number of examples.
settings.register_profile("book", deadline=None, max_examples=60, print_blob=True)
settings.load_profile("book")


@pytest.fixture(scope="session")
def built_book(tmp_path_factory, worker_id):
    """The HTML book built once per test run (also with pytest-xdist workers), offline, warnings as errors;
    returns the html folder."""
    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    out = shared / "book"
    with FileLock(str(shared / "book.lock")):
        if not (out / "built").is_file():
            jb = Path(sys.executable).parent / "jupyter-book"
            command = [str(jb), "build", str(ROOT), "--path-output", str(out), "--builder", "html", "-W", "-n"]
            result = subprocess.run([*command, "--keep-going"], capture_output=True, text=True, timeout=600,
                                    env={**os.environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
            assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
            (out / "built").touch()
    return out / "_build" / "html"


@cache
def _seconds(path: Path) -> float:
    """How long the committed run of a chapter took (the cells' execution timestamps)."""
    stamps = [c.metadata.get("execution", {}) for c in nbformat.read(path, as_version=4).cells]
    times = [datetime.fromisoformat(s[k].replace("Z", "+00:00")) for s in stamps for k in s if k in (
        "iopub.execute_input", "shell.execute_reply")]  # fmt: skip
    return (max(times) - min(times)).total_seconds() if times else 60.0


def _unit(item: pytest.Item) -> tuple[str, float] | None:
    """The group of tests that must run in one worker, and its rough cost in seconds (None: any worker)."""
    if item.path.suffix == ".ipynb":  # nbval: a chapter's cells run in order in one kernel
        return f"nbval-{item.path.stem}", _seconds(item.path)
    if item.path.name == "test_notebooks.py" and item.originalname == "test_student_version_on_a_second_numeric_path":
        chapter = item.callspec.id
        return f"student-{chapter}", 1.4 * _seconds(ROOT / "notebooks" / f"{chapter}.ipynb")
    if item.path.name == "test_book.py" or "browser" in item.path.parts:  # one book build, one browser
        return "book", 150.0
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """With pytest-xdist (make test: ``-n auto --dist loadgroup``): keep each chapter's cells, each chapter's
    second-path run and the book's tests together, and hand out the longest groups first, so that the workers
    finish at about the same time."""
    if not getattr(config.option, "numprocesses", None):
        return
    units = {}
    for item in items:
        unit = _unit(item)
        if unit is not None:
            item.add_marker(pytest.mark.xdist_group(unit[0]))
            units[unit[0]] = unit[1]
    rank = {name: i for i, name in enumerate(sorted(units, key=lambda name: -units[name]))}
    items.sort(key=lambda item: rank.get((_unit(item) or ("", 0))[0], len(rank)))
