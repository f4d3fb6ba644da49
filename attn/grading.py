"""Classroom exercises: write the student version of a chapter with nbgrader's own preprocessors.

A chapter holds exercises in nbgrader format: a solution cell whose answer sits between
``### BEGIN SOLUTION`` and ``### END SOLUTION`` inside a function body, then an autograder cell of
``assert``s with nbgrader metadata (``grade_id``, ``points``). The student version replaces each answer
with ``raise NotImplementedError()`` and clears all outputs, so every autograder cell fails with
``NotImplementedError`` until the student writes the function.

    python -m attn.grading notebooks _build/assignments [--force]
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat

__all__ = ["forbid", "student_version", "write_assignments", "grade_cells"]


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    raise ValueError(f"cannot import {dotted!r}")


def _caller_globals() -> dict:
    """The global namespace of the code that entered :func:`forbid` (a notebook's, in an autograder cell)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in (__name__, "contextlib"):
        frame = frame.f_back
    return frame.f_globals if frame is not None else {}


@contextmanager
def forbid(*names: str) -> Iterator[None]:
    """Inside the block, calling any of the named functions (``"torch.softmax"``) fails the exercise.

    For autograder cells of exercises that ask for a mechanism to be written from scratch. Each function is
    replaced where it is defined and, in the namespace of the code that enters the block (the notebook's), under
    any other name bound to it (``from attn import softmax``, ``sm = torch.softmax``), since a solution may call
    it by that name. A function hidden elsewhere (a default argument, a closure, an attribute of an object) is not
    found: what the autograder cell checks about the answer's behaviour remains the real test.
    """
    patched = []
    namespace = _caller_globals()
    aliased = []
    try:
        for name in names:
            owner_name, attr = name.rsplit(".", 1)
            owner = _resolve(owner_name)
            own = not isinstance(owner, type) or attr in vars(owner)  # a class may inherit it

            def blocked(*args: object, _name: str = name, **kwargs: object) -> None:
                raise AssertionError(f"{_name} is not allowed in this exercise: write it yourself")

            original = getattr(owner, attr)
            patched.append((owner, attr, original, own))
            setattr(owner, attr, blocked)
            for key, value in list(namespace.items()):
                if value is original:
                    aliased.append((key, value))
                    namespace[key] = blocked
        yield
    finally:
        for key, value in reversed(aliased):
            namespace[key] = value
        for owner, attr, original, own in reversed(patched):
            if own:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)


def grade_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The autograder cells of a notebook (nbgrader ``grade: true`` code cells)."""
    return [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]


def student_version(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return the student version of a solution notebook (the input is not modified)."""
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearHiddenTests,
        ClearMarkScheme,
        ClearOutput,
        ClearSolutions,
        ComputeChecksums,
        LockCells,
    )

    nb = nbformat.from_dict(nb)  # a deep copy
    resources: dict = {}
    for pre in (CheckCellMetadata(), LockCells(), ClearSolutions(), ClearOutput(), ClearHiddenTests(),
                ClearMarkScheme(), ComputeChecksums(), CheckCellMetadata()):  # fmt: skip
        nb, resources = pre.preprocess(nb, resources)
    nb.metadata.pop("widgets", None)  # the saved widget state shows the instructor's run
    return nb


def write_assignments(source: Path, target: Path, force: bool = False) -> list[Path]:
    """Write the student version of every notebook with exercises in ``source`` into ``target``.

    Refuses to overwrite an existing file (an instructor may have edited it) unless ``force``.
    """
    source, target = Path(source), Path(target)
    if source.resolve() == target.resolve():
        raise ValueError(f"target {target} is the source folder: it would overwrite the solutions")
    notebooks = [(p, nbformat.read(p, as_version=4)) for p in sorted(source.glob("*.ipynb"))]
    notebooks = [(p, nb) for p, nb in notebooks if grade_cells(nb)]
    existing = [target / p.name for p, _ in notebooks if (target / p.name).exists()]
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise FileExistsError(f"{names} already exist(s); pass --force (make assignments FORCE=1) to overwrite")
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for path, nb in notebooks:
        out = target / path.name
        nbformat.write(student_version(nb), out)
        written.append(out)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attn.grading", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="folder of solution notebooks (e.g. notebooks)")
    parser.add_argument("target", type=Path, help="folder for the student versions")
    parser.add_argument("--force", action="store_true", help="overwrite student versions that exist")
    args = parser.parse_args(argv)
    try:
        written = write_assignments(args.source, args.target, force=args.force)
    except (FileExistsError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
