"""The launch-button path (issue 37): every chapter starts with a block that installs the book's library where it
is missing (Colab, Binder), pinned to the book's version, and does nothing where it is installed. Tested offline:
in a fresh virtual environment that sees the book's dependencies but not ``attn``, the block installs ``attn``
from a wheel built here (``ATTN_INSTALL``), and the chapter's own imports then work in the same kernel."""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import nbformat
from notebook_utils import NOTEBOOKS, ROOT

BLOCK = """\
# Colab or Binder: the first run installs the book's library (where it is
# installed, as in the book's own environment, nothing happens)
import importlib.util
import os

LIBRARY = os.environ.get(
    "ATTN_INSTALL",  # another source, e.g. a wheel
    "attn @ git+https://github.com/attention-interactively/"
    "attention-interactively@v0.1.0",  # the book's version
)
if importlib.util.find_spec("attn") is None:
    %pip install -q "{LIBRARY}"
    importlib.invalidate_caches()

"""


def first_code_cell(path: Path) -> str:
    return next(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


def test_every_chapter_starts_with_the_install_block_pinned_to_the_books_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert re.search(rf"@v{re.escape(version)}\"", BLOCK), f"the block must pin v{version} (pyproject.toml)"
    for path in NOTEBOOKS:
        assert first_code_cell(path).startswith(BLOCK), f"{path.name}: the first code cell must start with the block"


def ipython(python: Path, script: Path, **env: str) -> subprocess.CompletedProcess:
    command = [str(python), "-m", "IPython", "--quick", "--no-banner", "--colors=NoColor", str(script)]
    return subprocess.run(command, cwd=script.parent, env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def test_the_block_does_nothing_where_the_library_is_installed(tmp_path):
    script = tmp_path / "block.ipy"
    script.write_text(BLOCK + "import attn\nprint('imported from', attn.__file__)\n")
    done = ipython(Path(sys.executable), script, ATTN_INSTALL=str(tmp_path / "no-such.whl"))
    assert done.returncode == 0 and "imported from" in done.stdout, done.stdout + done.stderr
    assert "pip" not in done.stdout + done.stderr  # pip never ran (it would have failed on the missing wheel)


def test_the_block_installs_the_library_in_a_fresh_environment(tmp_path):
    wheels, project = tmp_path / "wheels", tmp_path / "project"  # built from a copy: no build/ in the repository
    shutil.copytree(ROOT / "attn", project / "attn", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels)]
    subprocess.run([*build, str(project)], check=True, capture_output=True, timeout=600)
    (wheel,) = wheels.glob("attn-*.whl")
    fresh = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(fresh)], check=True, timeout=300)
    python = fresh / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    # the book's dependencies (torch, IPython, ...) without attn: its editable install is not on this path
    (Path(site) / "book_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    script = tmp_path / "chapter.ipy"
    before = "import importlib.util\nprint('before:', importlib.util.find_spec('attn'))\n"
    after = "import attn\nfrom attn.viz import attention_viewer\nprint('imported from', attn.__file__)\n"
    script.write_text(before + BLOCK + after)
    done = ipython(python, script, ATTN_INSTALL=str(wheel))
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "before: None" in out, "attn was importable before the block ran: the test proves nothing"
    assert f"imported from {site}" in out, out
    again = ipython(python, script, ATTN_INSTALL=str(tmp_path / "no-such.whl"))
    assert again.returncode == 0 and "pip" not in again.stdout + again.stderr, "a second run must do nothing"
