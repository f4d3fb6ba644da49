"""The supported versions (issue 37): the pairs of Python and torch that ``make versions`` (.ci/versions) tests
agree with what the package declares and the book pins, so that the stated range is the tested one."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pairs() -> dict[str, tuple[str, str]]:
    """``{name: (python, torch)}`` from the PAIRS table of .ci/versions."""
    script = (ROOT / ".ci" / "versions").read_text()
    table = re.search(r"^PAIRS=\(\n(.*?)^\)", script, re.MULTILINE | re.DOTALL)
    assert table, ".ci/versions has no PAIRS=( ... ) table"
    rows = [line.strip().strip('"').split()[:3] for line in table[1].splitlines() if line.strip()]
    return {name: (python, torch) for name, python, torch in rows}


def version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def declared() -> tuple[str, str]:
    """(the oldest Python, the oldest torch) that pyproject.toml allows."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (torch,) = [d for d in project["dependencies"] if d.startswith("torch")]
    return project["requires-python"].removeprefix(">="), torch.removeprefix("torch>=")


def pinned_torch() -> str:
    (line,) = [x for x in (ROOT / "requirements.txt").read_text().splitlines() if x.startswith("torch==")]
    return line.removeprefix("torch==")


def test_the_floor_pair_is_the_oldest_torch_and_python_the_package_allows():
    python, torch = declared()
    assert pairs()["floor"] == (python, torch + ".0" if torch.count(".") == 1 else torch)


def test_the_pairs_cover_every_python_from_the_floor_to_313_and_a_torch_newer_than_the_pin():
    tested = pairs().values()
    assert {python for python, _ in tested} | {"3.11"} >= {"3.11", "3.12", "3.13"}
    assert max(version(torch) for _, torch in tested) > version(pinned_torch())


def test_the_readme_states_the_floor_the_package_declares():
    python, torch = declared()
    readme = (ROOT / "README.md").read_text()
    assert f"torch >= {torch} and Python >= {python}" in readme
    for name, (python, torch) in pairs().items():
        row = rf"\|\s*{re.escape(name)}\s*\|\s*{re.escape(python)}[.\d]*\s*\|\s*{re.escape(torch)}\b"
        assert re.search(row, readme), f"README's table of supported versions has no row for {name} ({python}, {torch})"
