"""nbgrader preprocessors for the book's course (``book/nbgrader_config.py`` adds them to ``nbgrader autograde``)."""

from __future__ import annotations

import builtins

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from attn.book.tampering import bound_names, free_names, import_bindings, ipython_lines, refusals

__all__ = ["RefuseTampering"]


def _nbgrader(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _student_cell(cell: dict) -> bool:
    """A cell the student may change: a solution cell or one the student added (locked cells are restored by
    nbgrader from its checksum)."""
    meta = _nbgrader(cell)
    return cell.get("cell_type") == "code" and (meta.get("solution") or not (meta.get("locked") or meta.get("grade")))


def _refused_cell(problems: list[str]) -> str:
    listed = "; ".join(problems)
    return f"raise AssertionError({('this cell was not run by the autograder: ' + listed)!r})\n"


class RefuseTampering(Preprocessor):
    """An nbgrader sanitize preprocessor: a student's cell that breaks the rules of :func:`refusals` is not run.

    Its code is replaced with an ``AssertionError`` that says why, so the exercises that depend on it score 0 and
    the feedback tells the student what was refused. Add it after nbgrader's own sanitizing preprocessors (the
    book's ``nbgrader_config.py`` does)."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when it is enabled").tag(config=True)

    def preprocess(self, nb, resources):  # noqa: ANN001, ANN201 (nbconvert's signature)
        chapter = [c for c in nb.cells if c.cell_type == "code" and not _student_cell(c)]
        chapter_names: set[str] = set(vars(builtins))
        read: set[str] = set()
        same: dict[str, set[str]] = {}
        for cell in chapter:
            chapter_names |= bound_names(ipython_lines(cell.source))
            if _nbgrader(cell).get("grade"):
                read |= free_names(cell.source)
            for name, what in import_bindings(cell.source).items():
                same.setdefault(name, set()).update(what)
        # what the checks read from the notebook: a student cell that binds it again could change their verdict
        reserved = chapter_names & read
        for cell in nb.cells:
            if _student_cell(cell):
                modules = chapter_names - set(vars(builtins))
                problems = refusals(cell.source, reserved, imported=modules, same_imports=same)
                if problems:
                    self.log.warning("refused a cell: %s", "; ".join(problems))
                    cell.source = _refused_cell(problems)
        return nb, resources
