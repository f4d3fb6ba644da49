"""nbgrader's real pipeline, as an instructor runs it, for every chapter: add the assignment to the gradebook,
generate the student version, autograde a perfect submission, a blank one and one submission per kind of shortcut
(issue 34: the library under another name, the library kept in a container, the grading machinery or a reference
rebound, an equivalent torch operator, numbers instead of a measurement, a near miss), export the scores and
generate the feedback.

Each shortcut submission puts a shortcut of its kind into every exercise that has one on file
(``tests/submissions.py``) and the book's answer into the others, so the export must show full marks for every
exercise but the targeted ones, which score 0. The rebinding submission also edits a locked chapter cell to patch
torch: nbgrader restores it from its checksum.

``make test`` runs chapter 1 (the rest in the same kernel-per-chapter grading of ``tests/test_notebooks.py``, and
here with ``ATTN_ALL_CHAPTERS=1``, ``make grading-test``: about an hour on two cores). Each run prints one line per
chapter: points per submission and the autograde time per submission."""

import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from notebook_utils import MODEL_MISSING, NOTEBOOKS, ROOT
from submissions import by_cause

from attn.book.tampering import bound_names, free_names

NBGRADER = str(Path(sys.executable).with_name("nbgrader"))
IN_MAKE_TEST = {"01_softmax.ipynb"}
PATCH = "\ntorch.allclose = lambda *a, **k: True  # a locked cell, edited\n"


def nbgrader(course: Path, *args: str) -> str:
    bin_ = os.path.dirname(NBGRADER)  # nbgrader runs alembic from PATH: as in an activated venv
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PATH": bin_ + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run([NBGRADER, *args], cwd=course, env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def with_answers(released: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with the given solution cells (by grade_id) written in."""
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return nb


def depends(source: nbformat.NotebookNode) -> dict[str, set[str]]:
    """For each exercise, the exercises whose solutions its solution or autograder cell reads (transitively):
    a shortcut that breaks exercise 1's function also costs exercise 2 when exercise 2 calls it."""
    cells = [c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id")]
    binds = {c.metadata.nbgrader["grade_id"]: bound_names(c.source) for c in cells
             if c.metadata.nbgrader.get("solution")}  # fmt: skip
    reads: dict[str, set[str]] = {}
    for c in cells:
        gid = c.metadata.nbgrader["grade_id"].removesuffix("-tests")
        reads.setdefault(gid, set()).update(free_names(c.source))
    needs = {gid: {other for other, names in binds.items() if other != gid and names & reads.get(gid, set())}
             for gid in binds}  # fmt: skip
    changed = True
    while changed:
        changed = False
        for gid, mine in needs.items():
            more = set().union(*(needs[other] for other in mine)) - mine - {gid}
            changed |= bool(more)
            mine |= more
    return needs


def submissions(source: nbformat.NotebookNode) -> tuple[dict[str, dict[str, str]], dict[str, set[str]]]:
    """Each student's answers (by grade_id) and the exercises their shortcuts cost: those targeted and those
    that use a targeted exercise's solution."""
    book = {c.metadata.nbgrader["grade_id"]: c.source for c in source.cells
            if c.metadata.get("nbgrader", {}).get("solution")}  # fmt: skip
    needs = depends(source)
    students, targeted = {"perfect": dict(book)}, {"perfect": set()}
    for cause, table in by_cause().items():
        mine = {gid: table[gid] for gid in book if gid in table}
        if not mine:
            continue
        student = cause.replace(" ", "-")
        # the variants of a cause (list, dict, class, object; forbid off, forbid rebound, reference replaced)
        # take turns over the chapter's exercises
        students[student] = {**book, **{gid: s[i % len(s)] for i, (gid, s) in enumerate(mine.items())}}
        targeted[student] = set(mine) | {gid for gid in book if needs[gid] & set(mine)}
    return students, targeted


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_nbgrader_grades_perfect_full_blank_zero_and_every_shortcut_zero(path, tmp_path):
    if path.name not in IN_MAKE_TEST and not os.environ.get("ATTN_ALL_CHAPTERS"):
        pytest.skip("make test grades chapter 1 this way; make grading-test (ATTN_ALL_CHAPTERS=1) grades them all")
    if path.name == "11_pretrained.ipynb" and MODEL_MISSING:
        pytest.skip(MODEL_MISSING)
    course, assignment = tmp_path / "course", path.stem[:2]
    (course / "source" / assignment).mkdir(parents=True)
    shutil.copy(path, course / "source" / assignment / path.name)
    config = (ROOT / "book" / "nbgrader_config.py").read_text().replace('c.CourseDirectory.root = "."', "")
    (course / "nbgrader_config.py").write_text(config)
    nbgrader(course, "db", "assignment", "add", assignment)
    source = nbformat.read(path, as_version=4)
    answers, targeted = submissions(source)
    for student in [*answers, "blank"]:
        nbgrader(course, "db", "student", "add", student)
    nbgrader(course, "generate_assignment", assignment)
    released = nbformat.read(course / "release" / assignment / path.name, as_version=4)
    assert "### BEGIN SOLUTION" not in "".join(c.source for c in released.cells)
    assert "### BEGIN HIDDEN TESTS" not in "".join(c.source for c in released.cells)
    notebooks = {student: with_answers(released, mine) for student, mine in answers.items()}
    notebooks["blank"] = released
    first_code = next(c for c in notebooks["rebinding"].cells if c.cell_type == "code")
    assert first_code.metadata.nbgrader["locked"]
    first_code.source += PATCH
    for student, nb in notebooks.items():
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / path.name)
    start = time.perf_counter()
    nbgrader(course, "autograde", assignment)
    seconds = (time.perf_counter() - start) / len(notebooks)
    nbgrader(course, "export", "--to", str(tmp_path / "grades.csv"))
    with open(tmp_path / "grades.csv") as f:
        scores = {row["student_id"]: float(row["raw_score"]) for row in csv.DictReader(f)}
    points = {c.metadata.nbgrader["grade_id"].removesuffix("-tests"): c.metadata.nbgrader["points"]
              for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")}  # fmt: skip
    total = sum(points.values())
    expected = {student: total - sum(points[gid] for gid in gids) for student, gids in targeted.items()}
    expected["blank"] = 0.0
    row = ", ".join(f"{s} {scores[s]:g}/{total:g}" for s in notebooks)
    line = f"{path.name}: {row}; autograde {seconds:.1f} s per submission"
    print(f"\n{line}")
    if os.environ.get("ATTN_ALL_CHAPTERS"):  # make grading-test prints these lines at the end
        (ROOT / "_build" / "grading").mkdir(parents=True, exist_ok=True)
        (ROOT / "_build" / "grading" / f"{path.stem}.txt").write_text(line + "\n")
    assert scores == expected, f"{path.name}: scores {scores}, expected {expected}"
    nbgrader(course, "generate_feedback", assignment)
    feedback = (course / "feedback" / "library" / assignment / path.with_suffix(".html").name).read_text()
    assert "write it yourself" in feedback, "the student is told why the shortcut scored nothing"
    refused = (course / "feedback" / "rebinding" / assignment / path.with_suffix(".html").name).read_text()
    assert "not run by the autograder" in refused, "the student is told why the cell was not run"
