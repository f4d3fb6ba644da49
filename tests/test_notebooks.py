"""Every chapter: committed executed, small, in the book, its claims checked, and its exercises work for teacher
and student on a second numeric path.

nbval (``make test``) re-executes each chapter on this machine's kernels and compares the outputs of the
deterministic cells with the committed ones. Cells whose numbers come from training are tagged
``nbval-ignore-output`` and check in code, with ``attn.book.claims.claim``, every claim the prose makes. The student
version of each chapter runs here on a second numeric path (``attn.book.claims.SECOND_NUMERIC_PATH``: another CPU's
kernels, in effect): its claims must hold there too, and its deterministic outputs must equal the committed ones.
"""

import ast
import base64
import io
import os
import re

import nbformat
import pytest
import yaml
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbgrader.utils import determine_grade
from notebook_utils import (
    IGNORE_OUTPUT,
    MODEL_MISSING,
    NOTEBOOKS,
    ROOT,
    WIDGET,
    attention_views,
    comparable,
    rows_sum_to_one,
    sanitize_patterns,
    typed_constant_claims,
)
from PIL import Image
from submissions import ALSO_CORRECT, SHORTCUTS, by_cause, in_kernel

from attn.book.claims import SECOND_NUMERIC_PATH, recorded_claims
from attn.book.grading import grade_cells, student_version

MAX_NOTEBOOK_BYTES = 700_000  # the largest, chapter 11, embeds bertviz views and widget state (about 500 KB)
CALLS_CLAIM = re.compile(r"^\s*claim\(|[^.\w]claim\(", re.MULTILINE)

pytestmark = pytest.mark.skipif(not NOTEBOOKS, reason="no chapter notebooks")


def ids(paths):
    return [p.stem for p in paths]


@pytest.fixture(scope="module", params=NOTEBOOKS, ids=ids(NOTEBOOKS))
def chapter(request):
    return request.param, nbformat.read(request.param, as_version=4)


def code_cells(nb):
    return [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]


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


def test_committed_figures_are_shrunk(chapter):
    """Retina figures are committed as 256-colour PNGs (``make execute`` runs book/shrink_figures.py): a third of
    the bytes, so that the chapters and the book's pages stay small."""
    path, nb = chapter
    for i, cell in code_cells(nb):
        for output in cell.outputs:
            if "image/png" in output.get("data", {}):
                image = Image.open(io.BytesIO(base64.b64decode(output["data"]["image/png"])))
                assert image.mode == "P", f"{path.name} cell {i}: a full-colour PNG; run python book/shrink_figures.py"


def test_every_figure_has_alt_text(chapter):
    """Each PNG a chapter shows carries a text alternative in its cell's metadata (myst-nb's ``mystnb.image.alt``,
    the ``alt`` of the book's ``<img>``): a sentence or more, plain text, one that fits an HTML attribute."""
    path, nb = chapter
    for cell in nb.cells:
        if cell.cell_type != "code" or not any("image/png" in o.get("data", {}) for o in cell.outputs):
            continue
        alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
        where = f"{path.name}, cell {cell.get('id')}"
        assert len(alt) >= 40, f"{where}: a figure without alt text (metadata mystnb.image.alt)"
        assert '"' not in alt and "$" not in alt and not re.search(r"\.(png|jpe?g|svg)\b", alt), f"{where}: {alt!r}"


def test_every_figure_is_captioned(chapter):
    """One convention for every figure: the line right after it, in italics, starts with "Figure:" (a plot: the
    markdown cell after its code cell; a schematic: the paragraph after its image)."""
    path, nb = chapter
    for i, cell in enumerate(nb.cells):
        after = nb.cells[i + 1] if i + 1 < len(nb.cells) else None
        if cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.outputs):
            caption = after.source.strip() if after is not None and after.cell_type == "markdown" else ""
            assert caption.startswith("*Figure: ") and caption.endswith("*"), (
                f"{path.name}, cell {cell.get('id')}: a figure without its caption in the next cell"
            )
        if cell.cell_type == "markdown":
            for match in re.finditer(r"!\[[^\]]*\]\([^)]*\.svg\)\s*", cell.source):
                assert cell.source[match.end() :].startswith("*Figure: "), (
                    f"{path.name}, cell {cell.get('id')}: a schematic without its caption right after it"
                )


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


def test_training_cells_check_their_claims_instead_of_their_digits(chapter):
    """A cell whose output nbval does not compare is a kernel panel, checks claims or is an exercise's book answer
    (which may print what the exercise asks the student to look at; the student version has no such output); a cell
    that checks claims is not compared (its line shows this run's value); a chapter with claims takes its seed from
    ``SEED = 0``."""
    path, nb = chapter
    for i, cell in code_cells(nb):
        ignored = IGNORE_OUTPUT in cell.metadata.get("tags", [])
        claims = bool(CALLS_CLAIM.search(cell.source))
        panel = any(WIDGET in o.get("data", {}) for o in cell.outputs)
        answer = bool(cell.metadata.get("nbgrader", {}).get("solution"))
        if ignored:
            assert claims or panel or answer, (
                f"{path.name} cell {i}: output not compared, and no claim checked:\n{cell.source}"
            )
        if claims:
            assert ignored, f"{path.name} cell {i} checks claims: tag it {IGNORE_OUTPUT} (its values vary)"
            exercise = {"grade", "solution"} & {k for k, v in cell.metadata.get("nbgrader", {}).items() if v}
            assert not exercise, f"{path.name} cell {i}: claims do not belong in an exercise"
    if any(CALLS_CLAIM.search(c.source) for _, c in code_cells(nb)):
        first = code_cells(nb)[0][1].source
        assert re.search(r"^SEED = 0\b", first, re.MULTILINE), f"{path.name}: the first code cell must set SEED = 0"


def test_claims_compare_measured_values(chapter):
    """No claim checks a value typed into the chapter: what a claim compares must come from a computation (a
    model, a measurement), never only from literals (``read = {"hard": 3 * 6 * 6}``, then
    ``claim(..., read["hard"] < 1728)``), which would hold on every run whatever the code does."""
    path, nb = chapter
    source = "\n".join(
        line
        for _, cell in code_cells(nb)
        for line in cell.source.splitlines()
        if not line.lstrip().startswith(("%", "!"))
    )
    assert typed_constant_claims(source) == [], f"{path.name}: claims of typed constants"


@pytest.mark.parametrize(
    "source, found",
    [
        (
            'read = {"soft": 3 * 24 * 24, "hard": 3 * 6 * 6 + 2 * 3 * 36}\nclaim("fewer", read["hard"] < read["soft"])',
            1,
        ),
        ('claim("x", float(0.9), at_least=0.5)', 1),
        ("n = 3\nn += 4\nclaim('x', n, at_least=1)", 1),
        ("a, b = 1, 2\nclaim('x', a < b)", 1),
        ("acc = accuracy(model, scenes)\nclaim('x', acc, at_least=0.9)", 0),
        ("acc = {}\nacc['soft'] = accuracy(model, scenes)\nclaim('x', acc['soft'], at_least=0.9)", 0),
        ("for n in sizes:\n    claim('x', n, at_least=1)", 0),
        ("n = 3\nn += len(runs)\nclaim('x', n, at_least=1)", 0),
        ("claim('x', torch.equal(a, b))", 0),
        ("xs = []\nxs.append(model(x).item())\nclaim('x', max(xs), at_most=1)", 0),
    ],
)
def test_typed_constant_claims_are_found(source, found):
    assert len(typed_constant_claims(source)) == found


def test_committed_claims_hold(chapter):
    """Every claim checked in the committed run holds, and every cell that checks claims recorded them."""
    path, nb = chapter
    recorded = recorded_claims(nb)
    failed = [f"cell {c['cell']}: {c['statement']} (value {c['value']})" for c in recorded if not c["holds"]]
    assert not failed, f"{path.name}: {failed}"
    statements = [c["statement"] for c in recorded]
    assert len(statements) == len(set(statements)), f"{path.name}: two claims say the same thing"
    for i, cell in code_cells(nb):
        if CALLS_CLAIM.search(cell.source):
            assert any(c["cell"] == i for c in recorded), f"{path.name} cell {i} checks claims but recorded none"


def test_committed_attention_views_have_rows_summing_to_one(chapter):
    path, nb = chapter
    for i, cell in code_cells(nb):
        for where, rows, decimals in attention_views(cell.outputs):
            assert rows_sum_to_one(rows, decimals), f"{path.name} cell {i}, {where}: rows {[sum(r) for r in rows]}"


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


def execute(nb, folder, env=None, allow_errors=True):
    """Run a notebook in a fresh kernel (with extra environment variables) and return it."""
    client = NotebookClient(nb, timeout=300, allow_errors=allow_errors, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}})  # fmt: skip
    client.execute(env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})
    return nb


def exercises(nb):
    """(solution cell, its autograder cell) pairs of a notebook, in order."""
    pairs = []
    for i, cell in enumerate(nb.cells):
        if cell.metadata.get("nbgrader", {}).get("solution"):
            pairs.append((cell, next(c for c in nb.cells[i + 1 :] if c.metadata.get("nbgrader", {}).get("grade"))))
    return pairs


def submit(nb, student):
    """Append to the student version, after the whole chapter, each shortcut, each other right answer and the
    book's own answer to every exercise, each followed by a copy of the exercise's autograder cell.

    Returns ``(kind, grade_id, autograder cell copy)`` triples to score with nbgrader's ``determine_grade``."""
    graded = []
    for solution, grade in exercises(nb):
        gid = solution.metadata.nbgrader["grade_id"]
        submissions = [("shortcut", s) for s in in_kernel().get(gid, [])]
        submissions += [("also correct", s) for s in ALSO_CORRECT.get(gid, [])] + [("book", solution.source)]
        for kind, source in submissions:
            check = nbformat.from_dict({**grade, "outputs": [], "execution_count": None})
            student.cells += [nbformat.v4.new_code_cell(source), check]
            graded.append((kind, gid, check))
    return graded


def test_every_chapter_has_an_exercise_a_shortcut_cannot_pass(chapter):
    """Each chapter has exercises whose autograder forbids the library's ready-made answer (named in ``forbid``), a
    shortcut that uses the library is on file for each of them (tests/submissions.py), every exercise has some
    shortcut on file, and every exercise on file exists."""
    path, nb = chapter
    ids = [s.metadata.nbgrader["grade_id"] for s, _ in exercises(nb)]
    forbidding = [s.metadata.nbgrader["grade_id"] for s, g in exercises(nb) if re.search(r"forbid\(\s*[*\"]", g.source)]
    assert forbidding, f"{path.name}: no exercise forbids a ready-made answer"
    missing = set(forbidding) - set(SHORTCUTS)
    assert not missing, f"{path.name}: no shortcut that uses the library on file for {missing}"
    without = set(ids) - set().union(*by_cause().values())
    assert not without, f"{path.name}: no shortcut of any kind on file for {without}"
    for solution, grade in exercises(nb):
        names = re.findall(r"^def (\w+)", solution.source, re.MULTILINE)
        checked = any(f"solution={name}" in grade.source for name in names)
        assert "forbid(" not in grade.source or checked, f"{path.name}: forbid(..., solution=) for one of {names}"
    assert ids, path.name


def _calls_outside_forbid(source: str, names: set[str]) -> list[int]:
    """Lines of ``source`` that call one of ``names`` outside a ``with forbid(...)`` block."""
    found = []

    def visit(node: ast.AST, inside: bool) -> None:
        if isinstance(node, ast.With):
            opens = any(isinstance(i.context_expr, ast.Call) and getattr(i.context_expr.func, "id", "") == "forbid"
                        for i in node.items)  # fmt: skip
            inside = inside or opens
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names and not inside:
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(ast.parse(source), False)
    return found


def test_autograder_cells_call_the_solution_only_inside_forbid(chapter):
    """Issue 34, cause 3: every call of the student's functions in an autograder cell, hidden tests included, runs
    inside ``with forbid(...)``, where the library is checked before and after and the ready-made answers are
    blocked; every autograder cell imports ``forbid`` itself (a solution cell that rebinds the name changes
    nothing) and has hidden tests whose inputs are drawn at grading time."""
    path, nb = chapter
    for solution, grade in exercises(nb):
        names = set(re.findall(r"^def (\w+)", solution.source, re.MULTILINE))
        outside = _calls_outside_forbid(grade.source, names)
        assert not outside, f"{path.name} {grade.metadata.nbgrader['grade_id']}: lines {outside} call {names}"
        assert "from attn.book.grading import forbid, fresh_generator" in grade.source, grade.source[:200]
        hidden = grade.source.split("### BEGIN HIDDEN TESTS")[-1]
        assert "### BEGIN HIDDEN TESTS" in grade.source and "fresh_generator()" in hidden, grade.source[:200]


@pytest.mark.parametrize(
    ("source", "outside"),
    [
        ("with forbid(solution=f):\n    f(1)\nf(2)", [3]),
        ("def g():\n    with forbid('x', solution=f):\n        return f(1)\ng()", []),
        ("with torch.no_grad(), forbid(solution=f):\n    y = [f(i) for i in range(3)]", []),
        ("with torch.no_grad():\n    f(1)", [2]),
    ],
)
def test_calls_outside_forbid_are_found(source, outside):
    assert _calls_outside_forbid(source, {"f"}) == outside


def test_every_submission_on_file_names_an_exercise():
    ids = {s.metadata.nbgrader["grade_id"] for path in NOTEBOOKS for s, _ in exercises(nbformat.read(path, 4))}
    on_file = set(ALSO_CORRECT).union(*by_cause().values())
    assert on_file <= ids, on_file - ids


def test_student_version_on_a_second_numeric_path(chapter):
    """The student version, executed with another CPU's kernels: every autograder cell fails with
    NotImplementedError and no other cell fails (every claim holds there too); every compared output equals the
    committed one, as nbval would see it; every attention view keeps rows that sum to 1.

    Then, in the same kernel, it is graded as nbgrader's autograde grades (``determine_grade``): the blank version
    scores 0, every shortcut 0 (refused by the exercise's check, not by accident), every other right answer and the
    book's answer full marks."""
    path, nb = chapter
    if path.name == "11_pretrained.ipynb" and MODEL_MISSING:
        pytest.skip(MODEL_MISSING)
    student = student_version(nb)
    assert all(not c.get("outputs") for c in student.cells if c.cell_type == "code")
    assert "### BEGIN SOLUTION" not in "".join(c.source for c in student.cells)
    assert len(student.cells) == len(nb.cells)
    chapter_cells = len(student.cells)
    student.cells.append(nbformat.v4.new_code_cell("import torch\nprint(torch.backends.cpu.get_cpu_capability())"))
    submitted = submit(nb, student)
    execute(student, path.parent, SECOND_NUMERIC_PATH)
    assert student.cells[chapter_cells].outputs[0]["text"].strip() == "DEFAULT", (
        "the second numeric path was not in effect"
    )
    graded = {id(c) for c in grade_cells(student)}
    for cell in grade_cells(student)[: len(exercises(nb))]:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert [e.ename for e in errors] == ["NotImplementedError"], (cell.metadata.nbgrader["grade_id"], errors)
        assert determine_grade(cell)[0] == 0
    for kind, gid, cell in submitted:
        score, points = determine_grade(cell)
        errors = [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]
        if kind == "shortcut":
            # rejected by the check itself (forbid's "write it yourself", or a measured exercise's reference
            # check), not by accident: a NameError or a TypeError would score 0 too
            assert score == 0 and errors and all(e.startswith("AssertionError") for e in errors), (gid, cell.outputs)
        else:
            assert score == points, f"{path.name} {gid}: {kind} answer scored {score}/{points}: {cell.outputs}"
    patterns = sanitize_patterns()
    compared = 0
    for i, (committed, cell) in enumerate(zip(nb.cells, student.cells[:chapter_cells], strict=True)):
        if cell.cell_type != "code" or id(cell) in graded:
            continue
        errors = [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"{path.name} cell {i} fails on the second numeric path: {errors}\n{cell.source}"
        for where, rows, decimals in attention_views(cell.outputs):
            assert rows_sum_to_one(rows, decimals), f"{path.name} cell {i}, {where}: rows {[sum(r) for r in rows]}"
        if IGNORE_OUTPUT not in cell.metadata.get("tags", []):
            assert comparable(cell.outputs, patterns) == comparable(committed.outputs, patterns), (
                f"{path.name} cell {i}: output differs from the committed one on the second numeric path\n{cell.source}"
            )
            compared += bool(committed.outputs)
    assert compared, f"{path.name}: no output compared"


def test_a_broken_claim_is_caught_and_named():
    """Train chapter 2's model for 10 steps instead of 400: its first claim fails, naming itself and the value."""
    path = ROOT / "notebooks" / "02_alignment.ipynb"
    nb = nbformat.read(path, as_version=4)
    budget = "STEPS, LONGER = 400, 1_000"
    index = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and budget in c.source)
    # the budget's cell, or the first cell after it that checks claims (the training)
    trained = next(i for i in range(index, len(nb.cells)) if CALLS_CLAIM.search(nb.cells[i].source))
    nb.cells[index].source = nb.cells[index].source.replace(budget, "STEPS, LONGER = 10, 20")
    nb.cells = nb.cells[: trained + 1]
    with pytest.raises(CellExecutionError) as failure:
        execute(nb, path.parent, allow_errors=False)
    message = str(failure.value)
    assert "ClaimError" in message
    assert re.search(r"claim does not hold: held-out exact match \(1,000 sentences\) ≥ 90\.0% \(this run: \d+\.\d%"
                     r"(; untrained: \d+\.\d%)?\)", message), message[-2000:]  # fmt: skip
