"""The book to an expert's standard, checked on the committed chapters (nothing is executed): every claim knows
its null, and no exercise asks for code the chapter has already shown.

**A claim knows its null.** Each claim a chapter checks (``attn.book.claims.claim``) carries the same statistic
measured under a control that lacks what the claim is about (``null=``), or says why it has none (``no_null=``, an
exact comparison with a reference). ``claim`` itself fails when the null meets the bound; here each chapter's
recorded claims are read back and a claim with neither is named. Chapters still to be brought up (issues 46 and 47)
are expected failures, strictly.

**No exercise asks for code the chapter has already shown.**

An exercise whose answer sits printed a few cells above teaches transcription, not attention. Two checks, on the
committed chapters (nothing is executed):

- **A library twin printed earlier.** The autograder cell forbids the library's own versions of what the exercise
  asks for (``forbid("attn.analysis.occlusion", ...)``), and the solution's functions may share a name with one of
  ``attn``'s. ``forbid`` stops a student *calling* them, not copying them: if an earlier cell's output holds most
  of the lines of one of them (``inspect.getsource``, docstring left out), the exercise can be transcribed.
- **A near copy of an earlier cell.** The reference solution (between ``### BEGIN SOLUTION`` and ``### END
  SOLUTION``) is compared with each earlier code cell, its source and its printed output, as token shapes (every
  name outside Python's keywords and built-ins reads as one name, every number as one number): runs of eight or
  more tokens in common cover at least 60 % of the solution's tokens.

The fix is to ask for a variant the chapter has not shown, or to print the library's version after the exercise.
The chapters whose exercises are still to be rewritten (issues 46 and 47) are marked as expected failures, strictly,
so that a chapter fixed without its mark removed fails too.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import html
import importlib
import inspect
import io
import keyword
import pkgutil
import re
import textwrap
import tokenize
from functools import cache

import nbformat
import pytest
from notebook_utils import NOTEBOOKS

import attn
from attn.book.claims import recorded_claims

TWIN_SHARE = 0.5  # of a twin's code lines printed earlier
MIN_TWIN_LINES = 3
COPY_SHARE = 0.6  # of the solution's tokens found in runs of COPY_RUN tokens of one earlier cell
COPY_RUN = 8
MIN_LINE = 10  # characters, spaces removed: shorter lines ("return x", "else:") prove nothing
KEEP = set(keyword.kwlist) | set(dir(builtins))
LIBRARY_NAME = re.compile(r"attn(\.\w+)+")
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)
TAG = re.compile(r"<[^>]+>")

# Chapters whose claims get their nulls in later issues: their failure here is known and expected (strict).
NULLS_PENDING: dict[str, str] = {}
# Chapters whose exercises are rewritten by later issues: their failure here is known and expected (strict).
PENDING: dict[str, str] = {}


def pending(table: dict[str, str]) -> list:
    """Every chapter as a test parameter, the ones in ``table`` marked as expected failures (strict)."""
    return [
        pytest.param(p, marks=pytest.mark.xfail(reason=table[p.stem], strict=True)) if p.stem in table else p
        for p in NOTEBOOKS
    ]


def normalized(line: str) -> str:
    """A line with its comment and every space removed."""
    return re.sub(r"\s+", "", re.sub(r"#.*$", "", line))


def code_lines(source: str) -> list[str]:
    """The normalized lines of a function's or class's source that prove something: docstrings, signatures (an
    exercise states the signature it asks for) and short lines left out."""
    source = textwrap.dedent(source)
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and body:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            docstrings.update(range(start, body[0].lineno))  # decorators and the signature
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = source.splitlines()
    kept = (normalized(line) for n, line in enumerate(lines, 1) if n not in docstrings)
    return [line for line in kept if len(line) >= MIN_LINE]


def shown(cell: nbformat.NotebookNode) -> str:
    """What a code cell's outputs show as text (streams, plain text, HTML without its tags)."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        for kind, value in output.get("data", {}).items():
            if kind in ("text/plain", "text/markdown"):
                parts.append(value)
            elif kind == "text/html":
                parts.append(html.unescape(TAG.sub("", value)))
    return "\n".join(parts)


def token_shapes(text: str) -> list[str]:
    """The text's Python tokens, line by line, with every name (but keywords and built-ins) as "v" and every number
    as "0"; lines that do not tokenize (prose, tables) are skipped."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(line + "\n").readline))
        except (tokenize.TokenError, IndentationError, SyntaxError):
            continue
        for t in tokens:
            if t.type == tokenize.NAME:
                out.append(t.string if t.string in KEEP else "v")
            elif t.type == tokenize.NUMBER:
                out.append("0")
            elif t.type == tokenize.OP:
                out.append(t.string)
    return out


def copied_share(solution: list[str], earlier: list[str]) -> float:
    """The share of the solution's tokens that an earlier cell has in runs of at least COPY_RUN tokens."""
    matcher = difflib.SequenceMatcher(None, solution, earlier, autojunk=False)
    return sum(b.size for b in matcher.get_matching_blocks() if b.size >= COPY_RUN) / max(len(solution), 1)


@cache
def library_names() -> dict[str, list[str]]:
    """Every public function and class of attn by its short name, as dotted paths."""
    found: dict[str, list[str]] = {}
    for module in pkgutil.walk_packages(attn.__path__, "attn."):
        loaded = importlib.import_module(module.name)
        for name, obj in vars(loaded).items():
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", "") == module.name:
                found.setdefault(name, []).append(f"{module.name}.{name}")
    return found


def resolve(dotted: str) -> object | None:
    """The object a dotted attn name names, or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute, None)
        return obj
    return None


def twins(solution_cell: str, grade_cell: str) -> list[str]:
    """The library versions of an exercise's answer: attn names its autograder forbids, and attn functions that
    share a name with a function the solution defines."""
    names = [
        node.value
        for node in ast.walk(ast.parse(grade_cell))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and LIBRARY_NAME.fullmatch(node.value)
    ]
    for node in ast.parse(solution_cell).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_"):
            names += library_names().get(node.name, [])
    return list(dict.fromkeys(names))


def exercises(nb: nbformat.NotebookNode) -> list[tuple[int, str, int]]:
    """(solution cell, its grade id, the autograder cell that follows it) for each exercise."""
    cells = nb.cells
    found = []
    for index, cell in enumerate(cells):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution") and SOLUTION.search(cell.source):
            grade = next(j for j in range(index + 1, len(cells)) if cells[j].metadata.get("nbgrader", {}).get("grade"))
            found.append((index, meta["grade_id"], grade))
    return found


def printed_code(nb: nbformat.NotebookNode) -> list[str]:
    """Every exercise that asks for code an earlier cell shows, with what shows it."""
    problems = []
    for index, grade_id, grade in exercises(nb):
        earlier = [c for c in nb.cells[:index] if c.cell_type == "code"]
        printed = "\n".join(normalized(line) for c in earlier for line in shown(c).splitlines())
        for dotted in twins(nb.cells[index].source, nb.cells[grade].source):
            try:
                lines = code_lines(inspect.getsource(inspect.unwrap(resolve(dotted))))
            except (TypeError, OSError):  # not found, or not Python source
                continue
            seen = sum(line in printed for line in lines)
            if lines and seen >= MIN_TWIN_LINES and seen / len(lines) >= TWIN_SHARE:
                problems.append(f"{grade_id} (cell {index}): {seen} of {dotted}'s {len(lines)} code lines shown above")
        solution = token_shapes(SOLUTION.search(nb.cells[index].source).group(1))
        for position, cell in enumerate(nb.cells[:index]):
            if cell.cell_type != "code":
                continue
            share = copied_share(solution, token_shapes(cell.source + "\n" + shown(cell)))
            if share >= COPY_SHARE:
                problems.append(f"{grade_id} (cell {index}): {share:.0%} of its solution is in cell {position}")
    return problems


@pytest.mark.parametrize("path", pending(PENDING), ids=[p.stem for p in NOTEBOOKS])
def test_no_exercise_asks_for_code_the_chapter_prints(path):
    problems = printed_code(nbformat.read(path, as_version=4))
    assert not problems, "exercises whose answer the chapter shows before them:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", pending(NULLS_PENDING), ids=[p.stem for p in NOTEBOOKS])
def test_every_claim_carries_a_measured_null_or_says_why_it_has_none(path):
    claims = recorded_claims(nbformat.read(path, as_version=4))
    bare = [f"cell {c['cell']}: {c['statement']}" for c in claims if c.get("null") is None and not c.get("no_null")]
    assert not bare, "claims with neither null= nor no_null=:\n" + "\n".join(bare)
    failing = [f"cell {c['cell']}: {c['statement']}" for c in claims if c.get("null_holds")]
    assert not failing, "claims whose null meets the bound:\n" + "\n".join(failing)


def notebook(cells: list[tuple[str, str, dict]]) -> nbformat.NotebookNode:
    """A small chapter: (kind, source, nbgrader metadata) per cell; a code cell's output is its source's print."""
    nb = nbformat.v4.new_notebook()
    for kind, source, meta in cells:
        cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
        if meta.get("output"):
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=meta.pop("output"))]
        cell.metadata["nbgrader"] = meta
        nb.cells.append(cell)
    return nb


SOLUTION_CELL = '''def my_softmax(x, dim=-1):
    """Softmax along dim."""
    ### BEGIN SOLUTION
    shifted = x - x.amax(dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim, keepdim=True)
    ### END SOLUTION
'''
GRADE_CELL = 'with forbid("attn.softmax", solution=my_softmax):\n    my_softmax(x)\n'


def test_the_check_finds_a_printed_library_twin():
    """attn.softmax's body printed above an exercise that forbids attn.softmax: found; printed after it: fine."""
    body = inspect.getsource(attn.softmax)
    printed = ("code", "print(inspect.getsource(attn.softmax))", {"output": body})
    exercise = [("code", SOLUTION_CELL, {"solution": True, "grade_id": "ex1"}),
                ("code", GRADE_CELL, {"grade": True, "grade_id": "ex1-tests"})]  # fmt: skip
    problems = printed_code(notebook([printed, *exercise]))
    assert len(problems) == 1 and "attn.functional.softmax" not in problems[0] and "attn.softmax's" in problems[0]
    assert printed_code(notebook([*exercise, printed])) == []


def test_the_check_finds_a_near_copy_of_an_earlier_cell_under_other_names():
    earlier = ("code", "z = s - s.amax(axis, keepdim=True)\nw = z.exp()\nprint(w / w.sum(axis, keepdim=True))\n", {})
    other = ("code", "loss = model(batch).logits.log_softmax(-1)\nprint(loss.mean())\n", {})
    exercise = [("code", SOLUTION_CELL, {"solution": True, "grade_id": "ex1"}),
                ("code", "assert my_softmax(x).sum() == 1\n", {"grade": True, "grade_id": "ex1-tests"})]  # fmt: skip
    found = printed_code(notebook([earlier, *exercise]))
    assert len(found) == 1 and "is in cell 0" in found[0]
    assert printed_code(notebook([other, *exercise])) == []


INTERNAL_ISSUE = re.compile(r"\b[Ii]ssues? \d+")


def test_reader_pages_say_what_changed_not_which_internal_issue():
    """The online book's readers never saw the project's issues: a page says what changed and when."""
    pages = [*(p for p in (NOTEBOOKS[0].parents[1] / "book").glob("*.md")), *NOTEBOOKS]
    found = []
    for page in pages:
        if page.suffix == ".ipynb":
            text = "\n".join(c.source for c in nbformat.read(page, as_version=4).cells if c.cell_type == "markdown")
        else:
            text = page.read_text()
        found += [f"{page.name}: {m.group(0)}" for m in INTERNAL_ISSUE.finditer(text)]
    assert not found, found
