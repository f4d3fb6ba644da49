"""A class, end to end (issue 37): nbgrader's real classroom flow on chapter 1, through an exchange directory.

The instructor generates and releases the assignment; three students (each with a home directory of their own)
fetch it, answer it (all exercises, two of them, none) and submit; the instructor collects, autogrades, generates
and releases the feedback; each student fetches their feedback. This is what a course on one JupyterHub does with
nbgrader's default exchange (book/instructors.md, "A whole class").

What is simulated: the students are not operating-system accounts (the test cannot create users). nbgrader names
a submission after the OS user running it, so each student's nbgrader runs with that lookup answering the
student's name (``SHIM``); the exchange's files, folders and permissions are nbgrader's own."""

import csv
import os
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from notebook_utils import ROOT

NBGRADER = str(Path(sys.executable).with_name("nbgrader"))
# nbgrader's command line, with the OS user name it records replaced by $ATTN_STUDENT (for the students' runs)
SHIM = (
    "import os, sys; import nbgrader.utils as u\n"
    "if os.environ.get('ATTN_STUDENT'): u.get_osusername = lambda: os.environ['ATTN_STUDENT']\n"
    "from nbgrader.apps.nbgraderapp import main; sys.argv[0] = 'nbgrader'; sys.exit(main())"
)
CHAPTER = ROOT / "notebooks" / "01_softmax.ipynb"
COURSE = "attention"


def nbgrader(cwd: Path, *args: str, home: Path | None = None, user: str = "instructor") -> str:
    """Run nbgrader as ``user`` (their own HOME), from ``cwd``; fail the test with its output if it fails."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HOME": str(home or cwd)}
    env["ATTN_STUDENT"] = "" if user == "instructor" else user
    env["PATH"] = os.path.dirname(NBGRADER) + os.pathsep + os.environ.get("PATH", "")  # nbgrader runs alembic
    command = [sys.executable, "-c", SHIM, *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"{user}: nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture
def classroom(tmp_path):
    """The exchange (world-writable, as nbgrader's exchange must be), the instructor's course folder and its
    configuration: the book's, pointed at the exchange."""
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    exchange.chmod(stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO)
    course = tmp_path / "course"
    (course / "source" / "01").mkdir(parents=True)
    nbformat.write(nbformat.read(CHAPTER, as_version=4), course / "source" / "01" / CHAPTER.name)
    config = (ROOT / "book" / "nbgrader_config.py").read_text().replace('c.CourseDirectory.root = "."', "")
    (course / "nbgrader_config.py").write_text(config + f'\nc.Exchange.root = "{exchange}"\n')
    return tmp_path, exchange, course


def test_release_fetch_submit_collect_autograde_and_feedback_for_three_students(classroom):
    tmp_path, exchange, course = classroom
    source = nbformat.read(CHAPTER, as_version=4)
    solutions = {c.metadata.nbgrader["grade_id"]: c.source for c in source.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}  # fmt: skip
    points = {c.metadata.nbgrader["grade_id"].removesuffix("-tests"): c.metadata.nbgrader["points"]
              for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")}  # fmt: skip
    first_two = dict(list(solutions.items())[:2])
    students = {"ada": solutions, "ben": first_two, "cy": {}}

    nbgrader(course, "db", "assignment", "add", "01")
    for name in students:
        nbgrader(course, "db", "student", "add", name)
    nbgrader(course, "generate_assignment", "01")
    nbgrader(course, "release_assignment", "01")
    assert (exchange / COURSE / "outbound" / "01" / CHAPTER.name).is_file()

    for name, answers in students.items():
        home = tmp_path / "home" / name
        home.mkdir(parents=True)
        student = ["--course", COURSE, f"--Exchange.root={exchange}"]
        assert "01" in nbgrader(home, "list", *student, home=home, user=name)
        nbgrader(home, "fetch_assignment", "01", *student, home=home, user=name)
        fetched = home / "01" / CHAPTER.name
        nb = nbformat.read(fetched, as_version=4)
        assert "### BEGIN SOLUTION" not in "".join(c.source for c in nb.cells)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in answers:
                cell.source = answers[gid]
        nbformat.write(nb, fetched)
        nbgrader(home, "submit", "01", *student, home=home, user=name)

    nbgrader(course, "collect", "01")
    assert sorted(p.name for p in (course / "submitted").iterdir()) == sorted(students)
    nbgrader(course, "autograde", "01")
    nbgrader(course, "generate_feedback", "01")
    nbgrader(course, "release_feedback", "01")
    nbgrader(course, "export", "--to", str(tmp_path / "grades.csv"))
    with open(tmp_path / "grades.csv") as f:
        scores = {row["student_id"]: float(row["raw_score"]) for row in csv.DictReader(f)}
    total = sum(points.values())
    partial = sum(points[gid] for gid in first_two)
    assert scores == {"ada": total, "ben": partial, "cy": 0.0}, scores

    for name in students:
        home = tmp_path / "home" / name
        nbgrader(home, "fetch_feedback", "01", "--course", COURSE, f"--Exchange.root={exchange}", home=home, user=name)
        feedback = list((home / "01" / "feedback").glob(f"*/{CHAPTER.stem}.html"))
        assert len(feedback) == 1, f"{name}: feedback {feedback}"
        html = feedback[0].read_text()
        assert f"Score: {scores[name]:g}" in html or f"{scores[name]:g} / {total:g}" in html, name
