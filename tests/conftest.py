import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from filelock import FileLock
from hypothesis import settings
from tiny_models import N_TEST, N_TRAIN

from attn.data.language import make_text_corpus

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

# CI runs on 2 slow cores: no per-example deadline; a fixed number of examples.
settings.register_profile("book", deadline=None, max_examples=60, print_blob=True)
settings.load_profile("book")


@pytest.fixture(scope="module")
def corpus():
    """The text corpus the tiny language models of tiny_models.py read (attn.data.language), one per test file; a
    file with a corpus of its own (a translation corpus) names it ``corpus`` too, and that one wins there."""
    return make_text_corpus(N_TRAIN, N_TEST, seed=0)


@pytest.fixture(scope="session")
def built_book(tmp_path_factory, worker_id):
    """The HTML book built once per test run (also with pytest-xdist workers), offline, warnings as errors;
    returns the html folder. Authors iterating on the browser tests may set ATTN_BUILT_BOOK to a book already
    built from this tree (its _build/html folder) to skip the build."""
    if os.environ.get("ATTN_BUILT_BOOK"):
        return Path(os.environ["ATTN_BUILT_BOOK"])
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
