import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

# CI runs on 2 slow cores: no per-example deadline; a fixed number of examples.
settings.register_profile("book", deadline=None, max_examples=60, print_blob=True)
settings.load_profile("book")


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """The HTML book built once per session, offline, warnings as errors; returns the html folder."""
    out = tmp_path_factory.mktemp("book")
    jb = Path(sys.executable).parent / "jupyter-book"
    result = subprocess.run(
        [str(jb), "build", str(ROOT), "--path-output", str(out), "--builder", "html", "-W", "-n", "--keep-going"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return out / "_build" / "html"
