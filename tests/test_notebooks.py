"""Every chapter: committed executed, small, in the book, and its exercises work for teacher and student.

nbval (``make test``) re-executes each chapter and compares its outputs; these tests check the rest.
"""

import ast

import nbformat
import pytest
import yaml
from nbclient import NotebookClient
from notebook_utils import MODEL_MISSING, NOTEBOOKS, ROOT

from attn.grading import grade_cells, student_version

MAX_NOTEBOOK_BYTES = 700_000  # chapter 8 embeds two bertviz views (155 KB of its 650 KB)

pytestmark = pytest.mark.skipif(not NOTEBOOKS, reason="no chapter notebooks")


def ids(paths):
    return [p.stem for p in paths]


@pytest.fixture(scope="module", params=NOTEBOOKS, ids=ids(NOTEBOOKS))
def chapter(request):
    return request.param, nbformat.read(request.param, as_version=4)


def test_chapters_are_numbered_in_book_order():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    listed = [c["file"] for part in toc["parts"] for c in part["chapters"] if c["file"].startswith("notebooks/")]
    assert listed == [f"notebooks/{p.stem}" for p in NOTEBOOKS]
    assert [int(p.name[:2]) for p in NOTEBOOKS] == list(range(1, len(NOTEBOOKS) + 1))


def test_committed_executed_without_errors_and_small(chapter):
    path, nb = chapter
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.execution_count for c in code]
    assert all(counts), f"{path.name}: not executed in full (execution counts {counts})"
    assert counts == sorted(counts), f"{path.name}: cells executed out of order"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: committed with errors {[e.ename for e in errors]}"
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES, f"{path.name} is {path.stat().st_size} bytes"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")


def test_chapter_does_not_define_library_code(chapter):
    path, nb = chapter
    for cell in nb.cells:
        if cell.cell_type != "code" or "nbgrader" in cell.metadata:  # exercises define the student's function
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.parse(source).body:
            assert not isinstance(node, ast.FunctionDef | ast.ClassDef), (
                f"{path.name} defines {node.name}: library code belongs in attn/"
            )


def test_exercises_have_nbgrader_metadata(chapter):
    path, nb = chapter
    graded = grade_cells(nb)
    assert graded, f"{path.name} has no autograder cells"
    grade_ids = [c.metadata.nbgrader["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]
    assert len(grade_ids) == len(set(grade_ids)), f"duplicate grade_id in {path.name}"
    for cell in graded:
        assert cell.metadata.nbgrader["points"] > 0 and cell.metadata.nbgrader["locked"]
    solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert solutions
    for cell in solutions:
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source
        assert cell.source.lstrip().startswith("def "), "the answer must sit inside a function body"


def test_solution_version_passes_every_autograder_cell(chapter):
    path, nb = chapter
    for cell in grade_cells(nb):
        assert cell.outputs and not any(o.output_type == "error" for o in cell.outputs), cell.source[:80]


def test_student_version_fails_every_autograder_cell_with_not_implemented(chapter):
    path, nb = chapter
    if path.name == "08_bert_gpt.ipynb" and MODEL_MISSING:
        pytest.skip(MODEL_MISSING)
    student = student_version(nb)
    assert all(not c.get("outputs") for c in student.cells if c.cell_type == "code")
    assert "### BEGIN SOLUTION" not in "".join(c.source for c in student.cells)
    NotebookClient(student, timeout=300, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()  # fmt: skip
    for cell in grade_cells(student):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert [e.ename for e in errors] == ["NotImplementedError"], (cell.metadata.nbgrader["grade_id"], errors)
    for cell in student.cells:  # no other cell fails
        if cell.cell_type == "code" and cell not in grade_cells(student):
            assert not [o for o in cell.outputs if o.output_type == "error"], cell.source[:80]
