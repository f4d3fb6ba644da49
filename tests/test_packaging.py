"""The package as a reader installs it (issue 50): ``pip install attn`` alone, on Colab, Binder or a laptop, must
bring everything ``attn`` imports. One test reads the imports and compares them with ``pyproject.toml``; the other
installs a wheel of ``attn`` into a fresh virtual environment that sees nothing else and imports every module."""

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from notebook_utils import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# import name -> the distribution that provides it, where the two differ
DISTRIBUTION = {"IPython": "ipython"}


def requirement_name(spec: str) -> str:
    return re.split(r"[\s<>=!~\[;]", spec, maxsplit=1)[0].lower()


def third_party_imports() -> dict[str, list[str]]:
    """Every top-level package attn's modules import (at the top or inside a function) -> where."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "attn").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "attn" and top not in sys.stdlib_module_names:
                    found.setdefault(top, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_package_attn_imports_is_declared():
    required = {requirement_name(spec) for spec in PROJECT["dependencies"]}
    optional = {requirement_name(s) for specs in PROJECT["optional-dependencies"].values() for s in specs}
    imports = third_party_imports()
    assert {"torch", "safetensors", "nbconvert"} <= imports.keys()  # the reader sees what it should
    missing = {
        name: places[:3]
        for name, places in imports.items()
        if DISTRIBUTION.get(name, name).lower() not in required | optional
    }
    assert not missing, f"imported by attn but not declared in pyproject.toml: {missing}"


def constraints(path: Path) -> Path:
    """The book's pins (requirements.txt) as pip constraints, so the fresh venv gets the same torch (the CPU wheel
    on this machine's disk, not a multi-GB build from the index) without being asked to install anything else."""
    pins = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if re.match(r"^[\w.-]+==", line)]
    path.write_text("\n".join(pins) + "\n")
    return path


IMPORT_EVERY_MODULE = """
import importlib, importlib.util, pkgutil, attn
names = [m.name for m in pkgutil.walk_packages(attn.__path__, "attn.")]
for name in names:
    importlib.import_module(name)
print(len(names), "modules", "nbgrader" if importlib.util.find_spec("nbgrader") else "no nbgrader")
"""


def test_attn_installed_alone_imports_every_module(tmp_path):
    project = tmp_path / "project"  # built from a copy: no build/ or egg-info in the repository
    shutil.copytree(ROOT / "attn", project / "attn", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    fresh = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(fresh)], check=True, timeout=300)
    python = fresh / "bin" / "python"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PIP_CONSTRAINT": str(constraints(tmp_path / "pins.txt"))}
    env.pop("PYTHONPATH", None)
    install = [str(python), "-m", "pip", "install", "--quiet", str(project)]
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = subprocess.run([str(python), "-c", IMPORT_EVERY_MODULE], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "no nbgrader" in done.stdout  # the optional parts stayed out, and every module still imported
    modules = int(done.stdout.split()[0])
    assert modules >= 60, done.stdout
