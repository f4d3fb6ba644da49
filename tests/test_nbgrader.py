"""nbgrader's real pipeline on chapter 1, as an instructor runs it: add the assignment to the gradebook, generate
the student version, autograde three submissions (the book's answers, a blank one, one that takes shortcuts and
edits a locked autograder cell) and export the scores.

The other chapters are graded the same way, with nbgrader's own ``determine_grade``, in
``tests/test_notebooks.py::test_student_version_on_a_second_numeric_path`` (one kernel per chapter)."""

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from notebook_utils import ROOT
from submissions import SHORTCUTS

CHAPTER = ROOT / "notebooks" / "01_softmax.ipynb"
NBGRADER = str(Path(sys.executable).with_name("nbgrader"))


def nbgrader(course: Path, *args: str) -> str:
    bin_ = os.path.dirname(NBGRADER)  # nbgrader runs alembic from PATH: as in an activated venv
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PATH": bin_ + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run([NBGRADER, *args], cwd=course, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def submission(released: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with the given solution cells (by grade_id) written in."""
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return nb


def test_nbgrader_grades_the_book_answers_full_a_blank_zero_and_shortcuts_zero(tmp_path):
    course = tmp_path / "course"
    (course / "source" / "ch01").mkdir(parents=True)
    shutil.copy(CHAPTER, course / "source" / "ch01" / CHAPTER.name)
    (course / "nbgrader_config.py").write_text(
        (ROOT / "book" / "nbgrader_config.py").read_text().replace('c.CourseDirectory.root = "."', "")
    )
    nbgrader(course, "db", "assignment", "add", "ch01")
    for student in ("book", "blank", "shortcut"):
        nbgrader(course, "db", "student", "add", student)
    nbgrader(course, "generate_assignment", "ch01")
    released = nbformat.read(course / "release" / "ch01" / CHAPTER.name, as_version=4)
    assert "### BEGIN SOLUTION" not in "".join(c.source for c in released.cells)

    source = nbformat.read(CHAPTER, as_version=4)
    solutions = {
        c.metadata.nbgrader["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    shortcut = submission(released, {**solutions, "ex1-stable-softmax": SHORTCUTS["ex1-stable-softmax"][0],
                                     "ex2-soft-lookup": SHORTCUTS["ex2-soft-lookup"][0]})  # fmt: skip
    for cell in shortcut.cells:  # and "fix" the first autograder cell: nbgrader restores it from its checksum
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "ex1-stable-softmax-tests":
            cell.source = 'print("Exercise 1: all checks passed")'
    for student, nb in (("book", submission(released, solutions)), ("blank", released), ("shortcut", shortcut)):
        folder = course / "submitted" / student / "ch01"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / CHAPTER.name)
    nbgrader(course, "autograde", "ch01")
    nbgrader(course, "export", "--to", str(tmp_path / "grades.csv"))
    with open(tmp_path / "grades.csv") as f:
        scores = {row["student_id"]: (float(row["raw_score"]), float(row["max_score"])) for row in csv.DictReader(f)}
    assert scores == {"book": (7.0, 7.0), "blank": (0.0, 7.0), "shortcut": (3.0, 7.0)}, scores
    nbgrader(course, "generate_feedback", "ch01")
    feedback = (course / "feedback" / "shortcut" / "ch01" / CHAPTER.with_suffix(".html").name).read_text()
    assert "write it yourself" in feedback, "the student is told why the shortcut scored nothing"
